//! One admission: check the content type, read the body (bounded in size and time), decode the
//! AdmissionReview, fetch what the caches cannot answer, call the pure webhook (a panic becomes a 500 answer
//! for this request only), carry out side effects, count, log one line, encode the answer in the request's
//! AdmissionReview version.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::Poll;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::FutureExt;
use http_body_util::BodyExt;

use kruise_webhooks::admission::{self, AdmissionRequest, AdmissionResponse, Operation};
use kruise_webhooks::deletion_protection::{self, Facts};
use kruise_webhooks::pod::{PodContext, persistent_pod_state};
use kruise_webhooks::podunavailablebudget::gate::GateContext;
use kruise_webhooks::podunavailablebudget::related::WorkloadKey;
use kruise_webhooks::registry::{Handler, WebhookSpec};
use kruise_webhooks::sidecarset::validate::ValidateContext;
use kruise_webhooks::verdict::SideEffect;
use kruise_webhooks::workloadspread::SpreadFacts;
use kruise_webhooks::workloadspread::{self, whitelist::WhitelistSource};
use kruise_webhooks::{FeatureGates, Verdict, WebhookError};

use super::state::AppState;
use crate::cache::Cluster;
use crate::metrics::RouteMetrics;
use crate::random::random_unit;

/// The largest AdmissionReview accepted: controller-runtime's limit (7 MiB), which a review carrying an
/// object and its old object near etcd's size limit stays under.
pub const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;

/// What a decision may depend on besides the request and the cluster: configuration, the time of the
/// request and a random draw, both taken by the caller (the webhooks read no clock and draw nothing).
#[derive(Debug, Clone)]
pub struct Env<'a> {
    /// Feature gates.
    pub gates: &'a FeatureGates,
    /// Our namespace (ControllerRevisions, the Kruise configuration).
    pub kruise_namespace: &'a str,
    /// The request time, RFC 3339 UTC seconds.
    pub now: String,
    /// A uniform draw from [0, 1).
    pub random: f64,
}

impl<'a> Env<'a> {
    /// The current time and a fresh random draw.
    pub fn now(gates: &'a FeatureGates, kruise_namespace: &'a str) -> Self {
        Self {
            gates,
            kruise_namespace,
            now: rfc3339_now(),
            random: random_unit(),
        }
    }
}

/// The current UTC time as OpenKruise writes it into annotations: RFC 3339, whole seconds, `Z`.
pub fn rfc3339_now() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Runs one webhook on a request: the I/O it needs first, then the pure decision.
///
/// # Errors
/// The webhook's [`WebhookError`] when it cannot decide.
pub async fn decide(
    cluster: &Cluster,
    env: &Env<'_>,
    spec: &WebhookSpec,
    req: &AdmissionRequest,
) -> Result<Verdict, WebhookError> {
    match spec.handler {
        Handler::PodMutate | Handler::PodValidate => {
            let facts = PodFacts::fetch(cluster, env, spec, req).await;
            decide_now(cluster, env, spec, req, &facts)
        }
        Handler::SidecarSetDefault => kruise_webhooks::sidecarset::defaults::mutate(req),
        Handler::SidecarSetValidate => {
            let whitelist = cluster.patch_metadata_whitelist(env.kruise_namespace).await;
            let ctx = ValidateContext {
                gates: env.gates,
                kruise_namespace: env.kruise_namespace,
                patch_metadata_whitelist: &whitelist,
                validate_expression: &kruise_webhooks::sidecarset::resources::validate_expression,
            };
            kruise_webhooks::sidecarset::validate::validate(req, cluster, &ctx)
        }
        Handler::ContainerRecreateRequestMutate => {
            kruise_webhooks::containerrecreaterequest::mutate(req, cluster, env.gates)
        }
        Handler::PodUnavailableBudgetValidate => {
            kruise_webhooks::podunavailablebudget::validate::validate(req, cluster, env.gates)
        }
        Handler::WorkloadSpreadValidate => {
            // Nothing to fetch while the gate is off: the validator refuses every request (spec §7).
            let (custom_workloads, others) = if env.gates.enabled(workloadspread::GATE)
                && matches!(req.operation, Operation::Create | Operation::Update)
            {
                let namespace = req.namespace();
                let (whitelist, others) = futures::join!(
                    cluster.workload_spread_whitelist(env.kruise_namespace),
                    cluster.workload_spreads_in(namespace)
                );
                (whitelist, others)
            } else {
                (WhitelistSource::Missing, Ok(Vec::new()))
            };
            // The target workload, for the subset patch checks (§7.1): read only when it is a built-in
            // kind in its group; a failed read skips the checks (logged), as a missing workload does.
            let target = match req
                .object()
                .and_then(|o| serde_json::from_str::<serde_json::Value>(o.get()).ok())
                .as_ref()
                .and_then(workloadspread::validate::template_target)
            {
                Some((api_version, kind, name))
                    if env.gates.enabled(workloadspread::GATE)
                        && matches!(req.operation, Operation::Create | Operation::Update) =>
                {
                    match crate::workload::workloads_of(cluster) {
                        Some(workloads) => {
                            match workloads
                                .object(req.namespace(), api_version, kind, &name)
                                .await
                            {
                                Ok(found) => found,
                                Err(e) => {
                                    tracing::warn!(kind, name = %name, error = %e,
                                        "reading a WorkloadSpread's target failed: subset patch checks skipped");
                                    None
                                }
                            }
                        }
                        None => None,
                    }
                }
                _ => None,
            };
            let ctx = workloadspread::validate::ValidateContext {
                gates: env.gates,
                custom_workloads: &custom_workloads,
                others: &others,
                target: target.as_ref(),
            };
            workloadspread::validate::validate(req, &ctx)
        }
        Handler::PersistentPodStateValidate => {
            // Nothing to fetch for what the rule does not send (allowed as is).
            let (whitelist, others) =
                if matches!(req.operation, Operation::Create | Operation::Update) {
                    futures::join!(
                        cluster.persistent_pod_state_whitelist(env.kruise_namespace),
                        cluster.persistent_pod_states_listed(req.namespace())
                    )
                } else {
                    (WhitelistSource::Missing, Ok(Vec::new()))
                };
            let ctx = kruise_webhooks::persistentpodstate::validate::ValidateContext {
                whitelist: &whitelist,
                others: &others,
            };
            kruise_webhooks::persistentpodstate::validate::validate(req, &ctx)
        }
        handler => {
            let mut facts = Facts::default();
            if let Some(query) =
                deletion_protection::custom_resource_query(handler, req, env.gates)?
            {
                facts.custom_resources = Some(cluster.count_custom_resources(&query).await);
            }
            deletion_protection::validate(handler, req, cluster, env.gates, &facts)
        }
    }
}

/// What the pod webhooks read before deciding, besides the cluster view: fetched once per request, so
/// that a decision taken again after a conflict reads the same.
#[derive(Debug, Default)]
pub struct PodFacts {
    /// The pod's top workload, for the related-pub step.
    workload: Option<WorkloadKey>,
    /// The WorkloadSpread step's facts at CREATE.
    spreads: Option<SpreadFacts>,
    /// The replicas of the WorkloadSpread target a deleted pod names, for percentages.
    spread_replicas: Option<Result<i32, String>>,
    /// The PersistentPodState custom workload whitelist, when the PersistentPodState step needs it.
    pps_whitelist: Option<WhitelistSource>,
}

impl PodFacts {
    /// Reads what the pod webhook at `spec` needs for `req`.
    pub async fn fetch(
        cluster: &Cluster,
        env: &Env<'_>,
        spec: &WebhookSpec,
        req: &AdmissionRequest,
    ) -> Self {
        match spec.handler {
            Handler::PodMutate => {
                // Only when a PUB of the namespace has a targetRef and the pod a controller (related-pub
                // step); only when a WorkloadSpread of the namespace may manage the pod (WorkloadSpread step).
                // Only when a PersistentPodState of the namespace targets the pod's controller, a kind
                // other than StatefulSet (PersistentPodState step).
                let pps_whitelist = async {
                    if !persistent_pod_state::needs_whitelist(req, cluster) {
                        return None;
                    }
                    Some(
                        cluster
                            .persistent_pod_state_whitelist(env.kruise_namespace)
                            .await,
                    )
                };
                let (workload, spreads, pps_whitelist) = futures::join!(
                    crate::workload::top_workload(cluster, env.gates, req),
                    crate::spread_facts::for_create_within(
                        cluster,
                        env.gates,
                        env.kruise_namespace,
                        req
                    ),
                    pps_whitelist
                );
                Self {
                    workload,
                    spreads,
                    spread_replicas: None,
                    pps_whitelist,
                }
            }
            Handler::PodValidate => Self {
                spread_replicas: crate::spread_facts::for_delete(
                    cluster,
                    env.gates,
                    env.kruise_namespace,
                    req,
                )
                .await,
                ..Self::default()
            },
            _ => Self::default(),
        }
    }
}

/// The webhooks that decide on the cluster view and facts read before ([`PodFacts`]): those whose verdicts
/// carry status intents, which are decided again after a conflict ([`crate::status::commit`]).
///
/// # Errors
/// The webhook's [`WebhookError`] when it cannot decide.
pub fn decide_now(
    cluster: &Cluster,
    env: &Env<'_>,
    spec: &WebhookSpec,
    req: &AdmissionRequest,
    facts: &PodFacts,
) -> Result<Verdict, WebhookError> {
    match spec.handler {
        Handler::PodMutate => {
            let ctx = PodContext {
                gates: env.gates,
                now: &env.now,
                random: env.random,
                kruise_namespace: env.kruise_namespace,
                workload: facts.workload.as_ref(),
                spreads: facts.spreads.as_ref(),
                pps_whitelist: facts.pps_whitelist.as_ref(),
            };
            kruise_webhooks::pod::mutate(req, cluster, &ctx)
        }
        Handler::PodValidate => {
            let ctx = GateContext {
                gates: env.gates,
                now: &env.now,
            };
            kruise_webhooks::pod::validate(req, cluster, &ctx, facts.spread_replicas.as_ref())
        }
        other => Err(WebhookError::Internal(format!(
            "{other:?} does not decide without fetching"
        ))),
    }
}

/// Decides, then commits the verdict's status intents (a spend is allowed only once written).
///
/// # Errors
/// The webhook's [`WebhookError`] when it cannot decide.
pub async fn decide_and_commit(
    state: &AppState,
    env: &Env<'_>,
    spec: &WebhookSpec,
    req: &AdmissionRequest,
) -> Result<Verdict, WebhookError> {
    if !matches!(spec.handler, Handler::PodMutate | Handler::PodValidate) {
        return decide(&state.cluster, env, spec, req).await;
    }
    let facts = PodFacts::fetch(&state.cluster, env, spec, req).await;
    let verdict = decide_now(&state.cluster, env, spec, req, &facts)?;
    if verdict.intents.is_empty() {
        return Ok(verdict);
    }
    crate::status::commit(&state.cluster, &state.metrics, verdict, || {
        decide_now(&state.cluster, env, spec, req, &facts)
    })
    .await
}

/// A refusal before any webhook ran: HTTP status and message.
struct Early {
    status: StatusCode,
    message: String,
}

impl Early {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

fn check_content_type(headers: &HeaderMap) -> Result<(), Early> {
    let value = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // controller-runtime wants exactly application/json; we also accept parameters (`; charset=utf-8`).
    let media = value.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(Early::new(
            StatusCode::BAD_REQUEST,
            format!("contentType={value}, expected application/json"),
        ))
    }
}

fn too_large() -> Early {
    Early::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request entity is too large; limit is {MAX_REVIEW_BYTES} bytes"),
    )
}

/// How much of a body over [`MAX_REVIEW_BYTES`] is still read (and dropped) so that the 413 review can be
/// answered to a complete request. Over HTTP/2 a request whose body is left unread is reset, and clients
/// (nghttp2's curl among them) then report a stream error instead of the answer; over HTTP/1.1 the
/// connection survives. A body larger than this is cut off without an answer it could read.
const MAX_DRAINED_BYTES: u64 = 4 * MAX_REVIEW_BYTES as u64;

/// A request body as read so far: the chunks while within [`MAX_REVIEW_BYTES`], the count beyond.
#[derive(Default)]
struct Received {
    chunks: Vec<Bytes>,
    total: u64,
}

impl Received {
    fn too_large(&self) -> bool {
        self.total > MAX_REVIEW_BYTES as u64
    }

    /// Reads the body to its end, keeping it while within the limit and dropping it beyond, up to
    /// [`MAX_DRAINED_BYTES`].
    async fn read(&mut self, mut body: Body) -> Result<(), Early> {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                Early::new(
                    StatusCode::BAD_REQUEST,
                    format!("reading request body: {e}"),
                )
            })?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            self.total += data.len() as u64;
            if self.too_large() {
                self.chunks = Vec::new();
                if self.total > MAX_DRAINED_BYTES {
                    return Err(too_large());
                }
            } else {
                self.chunks.push(data);
            }
        }
        Ok(())
    }

    fn into_bytes(mut self) -> Result<Bytes, Early> {
        if self.too_large() {
            return Err(too_large());
        }
        Ok(match self.chunks.len() {
            0 => Bytes::new(),
            1 => self.chunks.pop().unwrap_or_default(),
            _ => Bytes::from(self.chunks.concat()),
        })
    }
}

async fn read_body(headers: &HeaderMap, body: Body, timeout: Duration) -> Result<Bytes, Early> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_DRAINED_BYTES) {
        return Err(too_large());
    }
    let mut received = Received::default();
    let outcome = {
        let mut read = std::pin::pin!(received.read(body));
        // A body that came in with its head (most: the apiserver writes a review whole) is read at once,
        // without arming a timer; only one still arriving is given `timeout` to finish.
        match std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await {
            Poll::Ready(outcome) => Some(outcome),
            Poll::Pending => tokio::time::timeout(timeout, read).await.ok(),
        }
    };
    match outcome {
        Some(Ok(())) => received.into_bytes(),
        Some(Err(early)) => Err(early),
        None if received.too_large() => Err(too_large()),
        None => Err(Early::new(
            StatusCode::REQUEST_TIMEOUT,
            format!("request body not received within {}s", timeout.as_secs()),
        )),
    }
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Serves one admission request for `spec`, counted in its path's metrics (the path is the label, as
/// controller-runtime); with `--max-in-flight` requests already in flight, sheds it at once with HTTP 429
/// (src/server/limit.rs).
pub async fn admit(
    state: &AppState,
    spec: &'static WebhookSpec,
    metrics: &RouteMetrics,
    request: Request,
) -> Response {
    let started = Instant::now();
    let path = metrics.path();
    // Held until the answer is built; none left means shed at once, body unread (src/server/limit.rs).
    let Some(_permit) = state.limit.try_admit() else {
        metrics.shed.inc();
        metrics.count(429);
        tracing::debug!(
            webhook = spec.name,
            path,
            max_in_flight = state.limit.max(),
            "overloaded: admission request shed with 429"
        );
        return state.limit.shed_response();
    };
    metrics.in_flight.inc();
    let (parts, body) = request.into_parts();
    let (status, response_body, code) = match admit_body(state, spec, &parts.headers, body, started)
        .await
    {
        Ok((bytes, code)) => (StatusCode::OK, bytes, code),
        Err(early) => {
            tracing::info!(webhook = spec.name, path, code = early.status.as_u16(), reason = %early.message, "admission request refused before decoding");
            let body = admission::encode_review(
                None,
                &AdmissionResponse::errored("", early.status.as_u16(), early.message),
            );
            // As controller-runtime: HTTP 200, the refusal and its code in the review's response.
            (StatusCode::OK, body, early.status.as_u16())
        }
    };
    metrics.in_flight.dec();
    metrics.count(code);
    metrics.latency.observe(started.elapsed().as_secs_f64());
    json(status, response_body)
}

async fn admit_body(
    state: &AppState,
    spec: &'static WebhookSpec,
    headers: &HeaderMap,
    body: Body,
    started: Instant,
) -> Result<(Vec<u8>, u16), Early> {
    check_content_type(headers)?;
    let bytes = read_body(headers, body, state.config.body_timeout).await?;
    let review = admission::decode_review(&bytes)
        .map_err(|e| Early::new(StatusCode::BAD_REQUEST, e.to_string()))?;
    let req = &review.request;
    tracing::debug!(uid = %req.uid, object = ?req.object, old_object = ?req.old_object, "admission request");
    let outcome = AssertUnwindSafe(async {
        if let Some(hook) = &state.before_decide {
            // A hook may block (tests hold requests in it): on a multi-thread runtime its worker hands its
            // queue to another thread meanwhile, so no task (the one that would release it) waits behind it
            // in a queue no other worker may take from.
            match tokio::runtime::Handle::current().runtime_flavor() {
                tokio::runtime::RuntimeFlavor::MultiThread => {
                    tokio::task::block_in_place(|| hook(req));
                }
                _ => hook(req),
            }
        }
        let env = Env::now(&state.config.gates, &state.config.namespace);
        decide_and_commit(state, &env, spec, req).await
    })
    .catch_unwind()
    .await;
    let response = match outcome {
        Ok(Ok(verdict)) => {
            apply_side_effects(state, &verdict);
            AdmissionResponse::from_verdict(&req.uid, &verdict)
        }
        Ok(Err(err)) => {
            tracing::warn!(uid = %req.uid, webhook = spec.name, error = %err, "webhook could not decide");
            AdmissionResponse::from_error(&req.uid, &err)
        }
        Err(payload) => {
            state.metrics.panics.inc();
            let message = panic_message(payload.as_ref());
            tracing::error!(uid = %req.uid, webhook = spec.name, panic = %message, "webhook panicked; answered 500");
            AdmissionResponse::errored(&req.uid, 500, format!("panic: {message} [recovered]"))
        }
    };
    let code = response.status.as_ref().map_or(200, |s| s.code);
    tracing::info!(
        uid = %req.uid,
        kind = %req.kind.kind,
        namespace = req.namespace(),
        name = %req.name,
        operation = req.operation.as_str(),
        webhook = spec.name,
        allowed = response.allowed,
        code,
        patch = response.patch.is_some(),
        latency_us = started.elapsed().as_micros() as u64,
        "admission"
    );
    Ok((
        admission::encode_review(Some(review.api_version), &response),
        code,
    ))
}

fn apply_side_effects(state: &AppState, verdict: &Verdict) {
    for effect in &verdict.side_effects {
        match effect {
            SideEffect::DeletionProtected(record) => {
                state.metrics.record_protection(record);
                state.audit.write(&record.audit_line());
            }
            SideEffect::SpreadFull { namespace, name } => {
                state.metrics.record_spread_full(namespace, name);
            }
            SideEffect::BudgetDenied(record) => {
                state.metrics.record_budget_denial(record);
                state.audit.write(&record.audit_line());
                // An event is an API write: none for a dry run (`sideEffects: NoneOnDryRun`).
                if !record.dry_run
                    && let Cluster::Live(cache) = &state.cluster
                {
                    cache.record_budget_denial_event(record);
                }
            }
        }
    }
}
