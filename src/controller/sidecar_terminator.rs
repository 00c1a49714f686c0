//! The Job sidecar terminator controller (spec/sidecar-terminator.md §3-§8; DECISIONS 1, 11): while this
//! replica leads, stops the sidecar containers of `Never` / `OnFailure` pods whose main containers have
//! finished. The decisions are pure functions of [`kruise_webhooks::sidecar_terminator`]; this module
//! reads the caches, writes, counts and records events.
//!
//! One [`reconcile`] of a pod:
//! 1. the pod from the shared pod store (not found: done); not qualifying (§4.3): done, logged at debug, or
//!    as a warning when the pod is malformed (an unknown restartPolicy, statuses that do not match the
//!    containers one to one): no action is taken on a guess;
//! 2. its Node from this controller's Node store; **missing from the cache: an error** (§5 step 2), logged
//!    by the runtime and retried with backoff, no action;
//! 3. the CRRs of its two kill sets from this controller's CRR store, and those this process created that
//!    the store has not shown yet (for up to [`CREATED_MEMORY`], after which the pod is looked at again;
//!    the watch brings them within a second);
//! 4. the actions of [`terminator::plan`], executed in order, the first error ending the reconcile
//!    (retried with backoff): a strategic-merge PATCH of the pod's containers' images (§6.2; they merge by
//!    name) and a Normal event; a CRR POST (§6.1, named per kill set with kruise-daemon's labels, DECISIONS
//!    11) and a Normal event; a DELETE of a CRR kruise-daemon finished while a sidecar of its set still runs
//!    (uid precondition; its deletion, seen by the CRR watch, brings the next reconcile, which creates it
//!    again); a strategic-merge PATCH of `pods/<name>/status` (§6.3). A pod gone meanwhile (404) ends the
//!    reconcile quietly.
//!
//! Nothing is written when nothing changed: every state the plan reads is cached, so a second reconcile of
//! a pod whose writes were seen makes no call at all (the in-place event is recorded only with a write,
//! not on every reconcile as upstream's quirk does).
//!
//! Nodes are a reflector of their own ([`SlimNode`]: the name and the `type` label only, a few dozen bytes
//! a Node), not a GET per pod: a GET per reconcile would be a call on every pod update of every job, and a
//! second reconcile would not be call-free. CRRs are watched whole (they are few and short-lived).
//!
//! Triggers, on the [controller runtime](super::runtime) over the pod store the webhooks read: a pod created
//! or updated into a qualifying state (§3: a pod that does not qualify queues nothing); a change of a CRR
//! named `sidecar-termination-…` (its pod, by `spec.podName`: a finished or deleted CRR is how a failed
//! kill is retried); a finished CRR waiting for its retry pause requeues itself. Every pod once when
//! leadership starts and after a relist (idempotent: what was done is in the caches). 3 reconciles at once
//! (`--sidecarterminator-workers`' default); failures retried after 1 s doubling to 5 min. Events are
//! recorded as `sidecarterminator-controller`.

use crate::cache::versions::{KruiseKind, ServedApi, Versions};
use kube::core::ApiResource;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;

use kruise_webhooks::api::containerrecreaterequest::ContainerRecreateRequest;
use kruise_webhooks::api::node::SlimNode;
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::sidecar_terminator::{self as terminator, Action, CrrState, KillSet, Means};

use super::failure::is_code;
use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use crate::cache::shared::{self, Shared};
use crate::events::{EventType, Recorder};
use crate::metrics::Metrics;

/// The component events are recorded as (OpenKruise's controller name).
pub const COMPONENT: &str = "sidecarterminator-controller";
/// How long a CRR this process created counts as there while the watch has not shown it yet.
pub const CREATED_MEMORY: Duration = Duration::from_secs(60);

/// The stores the controller reads and is triggered by.
#[derive(Clone)]
pub struct Inputs {
    /// Pods (the webhooks' store).
    pub pods: Shared<SlimPod>,
    /// Nodes, as far as read.
    pub nodes: Shared<SlimNode>,
    /// ContainerRecreateRequests (as `apps.kruise.io/v1beta1`, whichever version is served).
    pub crrs: Shared<ContainerRecreateRequest>,
}

impl Inputs {
    /// The webhooks' `pods`, and a Node and a CRR watch of the controller's own, CRRs at the served
    /// version (`crrs_served`).
    pub fn watch(client: &Client, pods: Shared<SlimPod>, crrs_served: &ApiResource) -> Self {
        Self {
            pods,
            nodes: shared::watch(
                Api::all(client.clone()),
                (),
                shared::whole_lists(),
                // SlimNode decodes only what is read.
                |_| {},
                |_, _| {},
            ),
            crrs: shared::watch_served(
                client,
                None,
                crrs_served,
                shared::paged_lists(),
                shared::strip_unread_metadata,
                |_, _| {},
            ),
        }
    }
}

/// What the controller writes with and keeps between reconciles.
pub struct Context {
    client: Client,
    recorder: Recorder,
    metrics: Metrics,
    /// Failed reconciles: counted and told on the pod.
    report: FailureReport,
    /// CRRs created by this process and not yet seen in the store: (namespace, name) → when.
    created: Mutex<HashMap<(String, String), Instant>>,
    /// The served CRR resource, created and deleted at that version (DECISIONS 25).
    crrs: ApiResource,
}

impl Context {
    /// A context writing with `client`, counting into `metrics`.
    pub fn new(client: Client, metrics: Metrics) -> Self {
        let recorder = Recorder::new(client.clone(), COMPONENT);
        Self {
            report: FailureReport {
                metrics: metrics.clone(),
                recorder: recorder.clone(),
            },
            recorder,
            client,
            metrics,
            created: Mutex::default(),
            crrs: Versions::newest().resource_or_newest(KruiseKind::ContainerRecreateRequest),
        }
    }

    /// Writes CRRs at the version `versions` gives (default: the newest).
    #[must_use]
    pub fn at(mut self, versions: Versions) -> Self {
        self.crrs = versions.resource_or_newest(KruiseKind::ContainerRecreateRequest);
        self
    }

    fn created(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Instant>> {
        self.created.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state of CRR `namespace/name`: the store's, else created here within [`CREATED_MEMORY`]; and
    /// when the state is only remembered, how long it is remembered for (the pod is looked at again then,
    /// in case the CRR went before the watch ever showed it).
    fn crr_state(
        &self,
        inputs: &Inputs,
        namespace: &str,
        name: &str,
    ) -> (CrrState, Option<Duration>) {
        let key = (namespace.to_owned(), name.to_owned());
        let cached = inputs
            .crrs
            .store()
            .get(&ObjectRef::new(name).within(namespace));
        let mut created = self.created();
        if let Some(crr) = cached {
            created.remove(&key);
            return (CrrState::of(Some(&crr)), None);
        }
        match created.get(&key).map(Instant::elapsed) {
            Some(age) if age < CREATED_MEMORY => (CrrState::Active, Some(CREATED_MEMORY - age)),
            Some(_) => {
                created.remove(&key);
                (CrrState::Missing, None)
            }
            None => (CrrState::Missing, None),
        }
    }

    async fn event(&self, pod: &SlimPod, message: &str) {
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            resource_version: pod.metadata.resource_version.clone(),
            ..ObjectReference::default()
        };
        self.recorder
            .record(
                regarding,
                EventType::Normal,
                terminator::EVENT_REASON,
                message,
            )
            .await;
    }
}

/// Why a reconcile did not finish (logged; the pod is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The pod's node is not in the Node cache (§5 step 2).
    #[error("pod {namespace}/{name}: node {node:?} not found in the cache")]
    NodeMissing {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// `spec.nodeName`.
        node: String,
    },
    /// The status patch failed (§5 step 7's text).
    #[error("pod {namespace}/{name}: failed to patch pod status: {source}")]
    StatusPatch {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Another API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done, naming the object.
        action: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

/// What one reconcile did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// The actions carried out, in order.
    pub done: Vec<Action>,
    /// When to reconcile again without a change (a finished CRR waiting for its retry).
    pub requeue_after: Option<Duration>,
}

/// Reconciles pod `namespace/name` at `now` (see the module docs).
///
/// # Errors
/// The pod's node missing from the cache, or an API call that failed.
pub async fn reconcile(
    ctx: &Context,
    inputs: &Inputs,
    namespace: &str,
    name: &str,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let mut outcome = Reconciled::default();
    let Some(pod) = inputs
        .pods
        .store()
        .get(&ObjectRef::new(name).within(namespace))
    else {
        return Ok(outcome);
    };
    if let Err(why) = terminator::qualify(&pod) {
        if why.is_bad_input() {
            tracing::warn!(namespace, pod = name, reason = %why, "sidecar terminator: pod skipped");
        } else {
            tracing::debug!(namespace, pod = name, reason = %why, "sidecar terminator: not qualifying");
        }
        return Ok(outcome);
    }
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    let Some(node) = inputs.nodes.store().get(&ObjectRef::new(&node_name)) else {
        return Err(ReconcileError::NodeMissing {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            node: node_name,
        });
    };
    let Some(uid) = pod.metadata.uid.clone().filter(|u| !u.is_empty()) else {
        tracing::warn!(
            namespace,
            pod = name,
            "sidecar terminator: pod skipped: no uid to name its ContainerRecreateRequest by"
        );
        return Ok(outcome);
    };
    let crr_name = |set| terminator::crr_name(&uid, set);
    let (normal_crr, normal_remembered) =
        ctx.crr_state(inputs, namespace, &crr_name(KillSet::Normal));
    let (ignore_exit_code_crr, ignore_remembered) =
        ctx.crr_state(inputs, namespace, &crr_name(KillSet::IgnoreExitCode));
    let observed = terminator::Observed {
        virtual_kubelet: node.is_virtual_kubelet(),
        normal_crr,
        ignore_exit_code_crr,
        now,
    };
    let plan = terminator::plan(&pod, &observed);
    outcome.requeue_after = [
        plan.requeue_after.and_then(|d| Duration::try_from(d).ok()),
        normal_remembered,
        ignore_remembered,
    ]
    .into_iter()
    .flatten()
    .min();
    let pods: Api<SlimPod> = Api::namespaced(ctx.client.clone(), namespace);
    let crrs: ServedApi<ContainerRecreateRequest> =
        ServedApi::namespaced(ctx.client.clone(), namespace, &ctx.crrs);
    let api_error = |action: String| move |source| ReconcileError::Api { action, source };
    for action in plan.actions {
        match &action {
            Action::ReplaceImages(images) => {
                let patch = terminator::image_patch(images);
                let result = pods
                    .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await;
                ctx.metrics
                    .record_sidecar_terminator_action("image_replace", result.is_ok());
                match result {
                    Ok(_) => {}
                    Err(e) if is_code(&e, 404) => return Ok(outcome),
                    Err(e) => {
                        return Err(api_error(format!(
                            "replacing the sidecar images of pod {namespace}/{name}"
                        ))(e));
                    }
                }
                let names: Vec<String> = images.iter().map(|(c, _)| c.clone()).collect();
                tracing::info!(namespace, pod = name, sidecars = ?names, "sidecar images replaced by their exit images");
                ctx.event(
                    &pod,
                    &terminator::event_message(&names, Means::InPlaceUpdate),
                )
                .await;
            }
            Action::CreateCrr { set, containers } => {
                let Some(body) = terminator::container_recreate_request(&pod, *set, containers)
                else {
                    tracing::warn!(
                        namespace,
                        pod = name,
                        "sidecar terminator: pod skipped: no name, namespace or uid"
                    );
                    return Ok(outcome);
                };
                let crr = crr_name(*set);
                let result = crrs.create(&PostParams::default(), &body).await;
                ctx.metrics
                    .record_sidecar_terminator_action("crr_create", result.is_ok());
                // AlreadyExists included: the retry finds it in the store (§10 scenario 7).
                result.map_err(api_error(format!(
                    "creating ContainerRecreateRequest {namespace}/{crr}"
                )))?;
                ctx.created()
                    .insert((namespace.to_owned(), crr.clone()), Instant::now());
                tracing::info!(namespace, pod = name, container_recreate_request = %crr, set = set.as_str(),
                    sidecars = ?containers, "sidecar kill requested");
                ctx.event(&pod, &terminator::event_message(containers, Means::Crr))
                    .await;
            }
            Action::DeleteCrr { set, uid } => {
                let crr = crr_name(*set);
                let params = DeleteParams {
                    preconditions: uid.clone().map(|uid| Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                let result = crrs.raw().delete(&crr, &params).await;
                ctx.metrics
                    .record_sidecar_terminator_action("crr_delete", result.is_ok());
                ctx.created().remove(&(namespace.to_owned(), crr.clone()));
                match result {
                    // Gone, or replaced by another (the precondition): the next change decides.
                    Ok(_) => {}
                    Err(e) if is_code(&e, 404) || is_code(&e, 409) => {}
                    Err(e) => {
                        return Err(api_error(format!(
                            "deleting the finished ContainerRecreateRequest {namespace}/{crr}"
                        ))(e));
                    }
                }
                tracing::info!(namespace, pod = name, container_recreate_request = %crr,
                    "a sidecar outlived its finished ContainerRecreateRequest: deleted, to be created again");
            }
            Action::PatchPhase(phase) => {
                let patch = terminator::status_patch(*phase, now);
                let result = pods
                    .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await;
                ctx.metrics
                    .record_sidecar_terminator_action("status_patch", result.is_ok());
                match result {
                    Ok(_) => {}
                    Err(e) if is_code(&e, 404) => return Ok(outcome),
                    Err(source) => {
                        return Err(ReconcileError::StatusPatch {
                            namespace: namespace.to_owned(),
                            name: name.to_owned(),
                            source,
                        });
                    }
                }
                tracing::info!(
                    namespace,
                    pod = name,
                    phase = phase.as_str(),
                    "pod phase set from its main containers"
                );
            }
        }
        outcome.done.push(action);
    }
    Ok(outcome)
}

/// The time a reconcile computes at.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The Job sidecar terminator ([`super::runtime::Reconciler`]).
pub struct SidecarTerminatorController {
    ctx: Context,
    inputs: Inputs,
    clock: Clock,
}

impl SidecarTerminatorController {
    /// Starts the controller on `inputs`; it reconciles only while `leader` is true.
    pub fn start(
        ctx: Context,
        inputs: Inputs,
        clock: Clock,
        leader: watch::Receiver<bool>,
        settings: Settings,
    ) -> Running {
        runtime::start(Arc::new(Self { ctx, inputs, clock }), leader, settings)
    }
}

/// The pod of a terminator CRR.
fn pod_of(crr: &ContainerRecreateRequest) -> Vec<ObjectRef<SlimPod>> {
    terminator::pod_of_crr(crr)
        .map(|(namespace, pod)| ObjectRef::new(pod).within(namespace))
        .into_iter()
        .collect()
}

impl Reconciler for SidecarTerminatorController {
    type Object = SlimPod;
    type Error = ReconcileError;

    fn name() -> String {
        "SidecarTerminator".to_owned()
    }

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.ctx.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let waits = (
            self.inputs.pods.ready(),
            self.inputs.nodes.ready(),
            self.inputs.crrs.ready(),
        );
        async move {
            futures::join!(waits.0, waits.1, waits.2);
        }
        .boxed()
    }

    fn triggers(&self) -> Triggers<SlimPod> {
        Triggers::when(&self.inputs.pods, |pod| terminator::qualify(pod).is_ok())
            .watches(&self.inputs.crrs, pod_of)
    }

    fn reconcile(
        self: Arc<Self>,
        pod: Arc<SlimPod>,
    ) -> BoxFuture<'static, Result<Option<Duration>, ReconcileError>> {
        async move {
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            let now = (self.clock)();
            let done = reconcile(&self.ctx, &self.inputs, &namespace, &name, now).await?;
            Ok(done.requeue_after)
        }
        .boxed()
    }
}
