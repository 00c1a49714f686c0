//! The in-place sidecar upgrade's I/O (spec/sidecarset.md §9 "In-place update", §6.2): the plan is
//! [`kruise_webhooks::sidecarset::upgrade::plan_round`]; this module waits for the cache to show its own
//! earlier writes ([`Expectations`]), then edits each chosen pod's JSON as the API server returns it and
//! sends it back with optimistic concurrency (GET, edit, PUT on that resourceVersion; a 409 re-reads,
//! at most 3 attempts in all, DECISIONS 10), and records the `SidecarSetUpgradable` condition with a status
//! strategic-merge patch.
//!
//! A PUT the PodUnavailableBudget gate refuses (403 from our `/validate-pod`: `admission webhook "vpod.kb.io"
//! denied the request`) ends the round: it is retried after [`BUDGET_RETRY`] (or at the next pod change),
//! never forced. Any other 403 (RBAC) is an error, reported as such.

use crate::cache::versions::{KruiseKind, Versions};
use kube::core::ApiResource;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Request;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::Value;

use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::sidecarset::SidecarSet;
use kruise_webhooks::sidecarset::upgrade::pod_edit::{
    EditError, flip_pod, update_pod, upgradable_condition_patch,
};
use kruise_webhooks::sidecarset::upgrade::{self, Round, Stop};

use super::error::ReconcileError;
use crate::controller::failure::{is_admission_denial, is_code};
use crate::events::{EventType, Recorder};
use crate::metrics::Metrics;

/// Pod writes per pod: the first and two retries after a conflict (DECISIONS 10).
const POD_ATTEMPTS: usize = 3;
/// How soon a round refused by a PodUnavailableBudget is tried again (a pod change retries it sooner).
pub const BUDGET_RETRY: Duration = Duration::from_secs(5);
/// How soon a reconcile waiting for the cache to show its own writes looks again (§9 step 1).
pub const EXPECTATIONS_RETRY: Duration = Duration::from_secs(1);
/// The event recorder's component (OpenKruise's `sidecarset-controller`).
pub const COMPONENT: &str = "sidecarset-controller";

/// The pod writes of each SidecarSet that the pod cache has not shown yet: pod `namespace/name` to the
/// resourceVersion our write produced. A pod that is gone, or cached at that resourceVersion or a later
/// one, satisfies its expectation.
#[derive(Debug, Default)]
pub struct Expectations(Mutex<HashMap<String, BTreeMap<String, String>>>);

fn pod_key(pod: &SlimPod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or("")
    )
}

/// `cached` shows `expected` or a later write: equal, or (resourceVersions being etcd revisions in
/// practice) numerically greater.
fn seen(cached: &str, expected: &str) -> bool {
    cached == expected
        || matches!((cached.parse::<u64>(), expected.parse::<u64>()), (Ok(c), Ok(e)) if c > e)
}

impl Expectations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeMap<String, String>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that our write left `pod` of `set` at `resource_version`.
    pub fn expect(&self, set: &str, pod: String, resource_version: String) {
        self.lock()
            .entry(set.to_owned())
            .or_default()
            .insert(pod, resource_version);
    }

    /// Drops what the cache now shows; true when nothing of `set` is still awaited. `pods` are the pods the
    /// cache holds that the SidecarSet injected.
    pub fn satisfied(&self, set: &str, pods: &[Arc<SlimPod>]) -> bool {
        let mut all = self.lock();
        let Some(waiting) = all.get_mut(set) else {
            return true;
        };
        let cached: HashMap<String, &str> = pods
            .iter()
            .map(|p| {
                (
                    pod_key(p),
                    p.metadata.resource_version.as_deref().unwrap_or(""),
                )
            })
            .collect();
        waiting.retain(|key, expected| cached.get(key).is_some_and(|rv| !seen(rv, expected)));
        let done = waiting.is_empty();
        if done {
            all.remove(set);
        }
        done
    }

    /// Forgets a SidecarSet (deleted).
    pub fn forget(&self, set: &str) {
        self.lock().remove(set);
    }
}

/// What the upgrade needs beyond the client: events, expectations, counters and the clock.
#[derive(Clone)]
pub struct UpgradeContext {
    /// Events as `sidecarset-controller`.
    pub recorder: Recorder,
    /// Writes not yet seen in the cache.
    pub expectations: Arc<Expectations>,
    /// `sidecarset_upgrade_pods_total{result}`.
    pub metrics: Metrics,
    /// The time of hash entries and in-place update states.
    pub clock: Arc<dyn Fn() -> Timestamp + Send + Sync>,
    /// The served SidecarSet resource: its status is written and its events name it at that version
    /// (DECISIONS 25).
    pub sidecar_sets: ApiResource,
}

impl UpgradeContext {
    /// A context recording events through `client` and reading the system clock.
    pub fn new(client: Client, metrics: Metrics) -> Self {
        Self {
            recorder: Recorder::new(client, COMPONENT),
            expectations: Arc::default(),
            metrics,
            clock: Arc::new(Timestamp::now),
            sidecar_sets: Versions::newest().resource_or_newest(KruiseKind::SidecarSet),
        }
    }

    /// Writes SidecarSets at the version `versions` gives (default: the newest).
    #[must_use]
    pub fn at(mut self, versions: Versions) -> Self {
        self.sidecar_sets = versions.resource_or_newest(KruiseKind::SidecarSet);
        self
    }

    fn now(&self) -> String {
        (self.clock)().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    fn count(&self, result: &str) {
        self.metrics.record_sidecarset_upgrade(result);
    }
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upgraded {
    /// Pods whose sidecars were updated.
    pub updated: usize,
    /// Pods whose idle hot-upgrade copy went back to the empty image.
    pub flipped: usize,
    /// Pods found not upgradable.
    pub not_upgradable: usize,
    /// Pods left as they were (corrupt annotations, updated meanwhile, gone).
    pub skipped: usize,
    /// Ask for another round after this long (expectations pending, or a budget refusal).
    pub requeue: Option<Duration>,
}

fn pod_path(namespace: &str, name: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/pods/{name}")
}

pub(crate) fn pod_reference(pod: &SlimPod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

pub(crate) fn set_reference(set: &SidecarSet, served: &ApiResource) -> ObjectReference {
    ObjectReference {
        api_version: Some(served.api_version.clone()),
        kind: Some("SidecarSet".into()),
        name: set.metadata.name.clone(),
        uid: set.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

async fn get_pod(client: &Client, namespace: &str, name: &str) -> Result<Value, kube::Error> {
    let request = Request::get(pod_path(namespace, name))
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    client.request(request).await
}

async fn put_pod(
    client: &Client,
    namespace: &str,
    name: &str,
    pod: &Value,
) -> Result<Value, kube::Error> {
    let body = serde_json::to_vec(pod).map_err(kube::Error::SerdeError)?;
    let request = Request::put(pod_path(namespace, name))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(kube::Error::HttpError)?;
    client.request(request).await
}

/// How one pod write ended.
enum Written {
    /// Sent; the pod as the API server answered it.
    Done(Value),
    /// Nothing to send (the edit declined, or nothing changed).
    Skipped(Option<EditError>),
    /// The PodUnavailableBudget gate refused it.
    Refused(String),
}

/// GET, edit, PUT on that resourceVersion; a conflict re-reads, at most [`POD_ATTEMPTS`] in all.
async fn write_pod(
    client: &Client,
    pod: &SlimPod,
    edit: impl Fn(&mut Value) -> Result<bool, EditError>,
) -> Result<Written, ReconcileError> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    for attempt in 1..=POD_ATTEMPTS {
        let mut fresh = match get_pod(client, namespace, name).await {
            Ok(v) => v,
            Err(e) if is_code(&e, 404) => return Ok(Written::Skipped(None)),
            Err(e) => {
                return Err(ReconcileError::Api {
                    action: format!("reading pod {namespace}/{name}"),
                    source: e,
                });
            }
        };
        match edit(&mut fresh) {
            Ok(true) => {}
            Ok(false) => return Ok(Written::Skipped(None)),
            Err(e) => return Ok(Written::Skipped(Some(e))),
        }
        match put_pod(client, namespace, name, &fresh).await {
            Ok(answer) => return Ok(Written::Done(answer)),
            Err(e) if is_code(&e, 409) && attempt < POD_ATTEMPTS => {
                tracing::debug!(pod = %format!("{namespace}/{name}"), attempt, "pod update conflicted; re-reading");
            }
            Err(e) if is_code(&e, 403) && is_admission_denial(&e) => {
                let message = match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    _ => e.to_string(),
                };
                return Ok(Written::Refused(message));
            }
            Err(e) if is_code(&e, 404) => return Ok(Written::Skipped(None)),
            Err(e) if is_code(&e, 409) => {
                return Err(ReconcileError::PodConflict {
                    pod: format!("{namespace}/{name}"),
                    attempts: POD_ATTEMPTS,
                });
            }
            Err(e) => {
                return Err(ReconcileError::Api {
                    action: format!("updating pod {namespace}/{name}"),
                    source: e,
                });
            }
        }
    }
    Err(ReconcileError::PodConflict {
        pod: format!("{namespace}/{name}"),
        attempts: POD_ATTEMPTS,
    })
}

/// Writes the `SidecarSetUpgradable` condition when it changes (logged, not fatal, when it fails: the
/// pod update it follows stands).
async fn write_condition(
    client: &Client,
    pod: &SlimPod,
    set_name: &str,
    upgradable: bool,
    now: &str,
) {
    let Some(patch) = upgradable_condition_patch(pod, set_name, upgradable, now) else {
        return;
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let api: Api<SlimPod> = Api::namespaced(client.clone(), namespace);
    if let Err(e) = api
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
    {
        tracing::warn!(pod = %format!("{namespace}/{name}"), sidecar_set = set_name, error = %e,
            "writing the SidecarSetUpgradable condition failed");
    }
}

fn record_written(ctx: &UpgradeContext, set: &SidecarSet, answer: &Value) -> Option<SlimPod> {
    let pod: SlimPod = serde_json::from_value(answer.clone()).ok()?;
    if let Some(rv) = pod.metadata.resource_version.clone() {
        ctx.expectations.expect(set.name(), pod_key(&pod), rv);
    }
    Some(pod)
}

/// Runs one round of the in-place update for `set` over its `matched` pods (§9 steps 1-9).
///
/// # Errors
/// A failed API call on a pod, or conflicts that outlast the retries.
pub async fn upgrade(
    client: &Client,
    ctx: &UpgradeContext,
    set: &SidecarSet,
    matched: &[Arc<SlimPod>],
    injected: &[Arc<SlimPod>],
) -> Result<Upgraded, ReconcileError> {
    let mut done = Upgraded::default();
    if !ctx.expectations.satisfied(set.name(), injected) {
        tracing::debug!(
            sidecar_set = set.name(),
            "waiting for the pod cache to show our updates"
        );
        done.requeue = Some(EXPECTATIONS_RETRY);
        return Ok(done);
    }
    match upgrade::plan_round(set, matched) {
        Round::Stop(Stop::InvalidStrategy(reason)) => {
            tracing::warn!(sidecar_set = set.name(), %reason, "in-place update skipped: invalid update strategy");
        }
        Round::Stop(stop) => {
            tracing::debug!(
                sidecar_set = set.name(),
                ?stop,
                "no in-place update this round"
            );
        }
        Round::Flip(pods) => {
            for pod in pods {
                let now = ctx.now();
                let written = write_pod(client, &pod, |v| {
                    flip_pod(v, set, &now).map(|changed| !changed.is_empty())
                })
                .await;
                match written {
                    Ok(Written::Done(answer)) => {
                        record_written(ctx, set, &answer);
                        done.flipped += 1;
                        ctx.count("flipped");
                        ctx.recorder
                            .record(
                                pod_reference(&pod),
                                EventType::Normal,
                                "ResetContainerSucceed",
                                "reset sidecar container image empty successfully",
                            )
                            .await;
                    }
                    Ok(Written::Skipped(reason)) => {
                        done.skipped += 1;
                        ctx.count("skipped");
                        if let Some(e) = reason {
                            tracing::warn!(pod = %pod_key(&pod), sidecar_set = set.name(), error = %e, "hot-upgrade flip skipped");
                        }
                    }
                    Ok(Written::Refused(message)) => {
                        ctx.count("budget_denied");
                        tracing::info!(pod = %pod_key(&pod), sidecar_set = set.name(), %message, "hot-upgrade flip refused by a PodUnavailableBudget; retrying later");
                        done.requeue = Some(BUDGET_RETRY);
                        return Ok(done);
                    }
                    Err(e) => {
                        ctx.count("error");
                        ctx.recorder
                            .record(
                                pod_reference(&pod),
                                EventType::Warning,
                                "ResetContainerFailed",
                                &format!("reset sidecarset hot upgrade container failed, err:{e}"),
                            )
                            .await;
                        return Err(e);
                    }
                }
            }
        }
        Round::Update(round) => {
            if let Some(e) = &round.selector_error {
                tracing::warn!(sidecar_set = set.name(), error = %e, "invalid updateStrategy.selector: no pod selected");
            }
            for pod in &round.not_upgradable {
                write_condition(client, pod, set.name(), false, &ctx.now()).await;
                ctx.count("not_upgradable");
            }
            done.not_upgradable = round.not_upgradable.len();
            if done.not_upgradable > 0 {
                ctx.recorder
                    .record(
                        set_reference(set, &ctx.sidecar_sets),
                        EventType::Normal,
                        "NotUpgradablePods",
                        &upgrade::not_upgradable_message(done.not_upgradable),
                    )
                    .await;
            }
            for pod in &round.update {
                let now = ctx.now();
                let written = write_pod(client, pod, |v| update_pod(v, set, &now).map(|_| true))
                    .await
                    .inspect_err(|_| ctx.count("error"))?;
                match written {
                    Written::Done(answer) => {
                        done.updated += 1;
                        ctx.count("updated");
                        tracing::info!(pod = %pod_key(pod), sidecar_set = set.name(), "sidecars updated in place");
                        if let Some(fresh) = record_written(ctx, set, &answer) {
                            write_condition(client, &fresh, set.name(), true, &now).await;
                        }
                    }
                    Written::Skipped(reason) => {
                        done.skipped += 1;
                        ctx.count("skipped");
                        match reason {
                            Some(e @ EditError::NotUpgradable(_)) => {
                                tracing::info!(pod = %pod_key(pod), error = %e, "pod not upgradable")
                            }
                            Some(EditError::AlreadyUpdated(_)) | None => {}
                            Some(e) => {
                                tracing::warn!(pod = %pod_key(pod), sidecar_set = set.name(), error = %e, "pod skipped")
                            }
                        }
                    }
                    Written::Refused(message) => {
                        ctx.count("budget_denied");
                        tracing::info!(pod = %pod_key(pod), sidecar_set = set.name(), %message,
                            "pod update refused by a PodUnavailableBudget; retrying later");
                        done.requeue = Some(BUDGET_RETRY);
                        return Ok(done);
                    }
                }
            }
        }
    }
    Ok(done)
}
