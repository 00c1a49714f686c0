//! The SidecarSet controller (spec/sidecarset.md §9): while this replica leads, keeps every SidecarSet's
//! ControllerRevisions and `status` current. The decisions are pure functions of
//! [`kruise_webhooks::sidecarset::status`]; this module reads the caches, executes the plan and writes.
//!
//! One [`reconcile`] of a SidecarSet:
//! 1. matching pods from the pod cache ([`status::matching_pods`]);
//! 2. ControllerRevisions in the Kruise namespace ([`status::plan_revisions`]): create the candidate
//!    (POST, `data` sent byte for byte; AlreadyExists with other data raises the collision count and
//!    renames, with the same data adopts the existing one), renumber a rolled-back revision, label the
//!    latest with `spec.customVersion`, delete old inactive revisions (NotFound is fine; failures are
//!    logged, as OpenKruise does);
//! 3. the status ([`status::desired_status`]), written only when it differs ([`status::status_changed`]):
//!    a merge PATCH of `/status` carrying the cached resourceVersion; on 409 Conflict the SidecarSet is
//!    re-read and the write retried on the fresh resourceVersion, at most 3 attempts in all (it stops early
//!    when the re-read object already reports the status). Like OpenKruise, the status computed from the
//!    cached object is what is retried; unlike it, `observedGeneration` stays the generation that status was
//!    computed from (OpenKruise writes the re-read object's generation).
//!
//! The loop ([`SidecarSetController`]) polls the caches every 2 s and reconciles a SidecarSet when what
//! it depends on changed (its resourceVersion, its revisions, the resourceVersions of the pods injected by
//! it), when its last reconcile failed and the backoff elapsed (1 s doubling to 5 min), and at least every
//! 60 s (namespace label changes are only seen then). Errors are logged and retried; a panic restarts the
//! loop. It works only while the leader watch says so, and only once the caches have synced.
//!
//! Not done yet: in-place sidecar upgrade of running pods (§9 "In-place update": hot-upgrade flips, the
//! `SidecarSetUpgradable` pod condition, `NotUpgradablePods` events), update expectations.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use kruise_webhooks::ClusterView;
use kruise_webhooks::api::sidecarset::{CUSTOM_VERSION_LABEL, SIDECARSET_NAME_LABEL, SidecarSet};
use kruise_webhooks::sidecarset::inject::INJECTED_LIST_ANNOTATION;
use kruise_webhooks::sidecarset::status::{self, NewRevision, RevisionOp};
use kruise_webhooks::view::SidecarSetView;

use crate::cache::{Cluster, LiveCache, SidecarSetCache};

/// Status writes per reconcile: the first and two retries after a conflict.
const STATUS_ATTEMPTS: usize = 3;
/// Names tried for one new revision before giving up (each collision raises the count by one).
const MAX_COLLISIONS: usize = 10;

/// What the controller reads: informer caches in a cluster, a [`Snapshot`] in tests.
pub trait SidecarSetSource: Send + Sync {
    /// True once every cache has its first list.
    fn synced(&self) -> bool;
    /// Every SidecarSet.
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>>;
    /// The ControllerRevisions of `namespace` labelled with the SidecarSet's name.
    fn revisions(&self, namespace: &str, set_name: &str) -> Vec<Arc<ControllerRevision>>;
    /// Every Pod.
    fn pods(&self) -> Vec<Arc<Pod>>;
    /// A Namespace's labels; `None` when it does not exist.
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>>;
}

/// The informer caches of the server (pods and namespaces of [`LiveCache`], SidecarSets and revisions of a
/// [`SidecarSetCache`]).
#[derive(Clone)]
pub struct LiveSource {
    cluster: Cluster,
    cache: LiveCache,
    sets: SidecarSetCache,
}

impl LiveSource {
    /// Reads pods and namespaces from `cache`, SidecarSets and revisions from `sets`.
    pub fn new(cache: LiveCache, sets: SidecarSetCache) -> Self {
        Self {
            cluster: Cluster::Live(cache.clone()),
            cache,
            sets,
        }
    }
}

impl SidecarSetSource for LiveSource {
    fn synced(&self) -> bool {
        self.cluster.synced() && self.sets.synced()
    }
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>> {
        self.sets.sidecar_sets()
    }
    fn revisions(&self, namespace: &str, set_name: &str) -> Vec<Arc<ControllerRevision>> {
        let labels = BTreeMap::from([(SIDECARSET_NAME_LABEL.to_owned(), set_name.to_owned())]);
        self.sets.controller_revisions(namespace, &labels)
    }
    fn pods(&self) -> Vec<Arc<Pod>> {
        self.cache.pods_all()
    }
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.cluster
            .namespace(name)
            .map(|ns| ns.metadata.labels.clone().unwrap_or_default())
    }
}

/// Cluster state held in memory (tests; always synced).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// SidecarSets.
    pub sidecar_sets: Vec<Arc<SidecarSet>>,
    /// ControllerRevisions (any namespace; filtered by namespace and name label on read).
    pub revisions: Vec<Arc<ControllerRevision>>,
    /// Pods.
    pub pods: Vec<Arc<Pod>>,
    /// Namespace name to labels.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl SidecarSetSource for Snapshot {
    fn synced(&self) -> bool {
        true
    }
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>> {
        self.sidecar_sets.clone()
    }
    fn revisions(&self, namespace: &str, set_name: &str) -> Vec<Arc<ControllerRevision>> {
        self.revisions
            .iter()
            .filter(|r| r.metadata.namespace.as_deref() == Some(namespace))
            .filter(|r| {
                r.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(SIDECARSET_NAME_LABEL))
                    .is_some_and(|n| n == set_name)
            })
            .cloned()
            .collect()
    }
    fn pods(&self) -> Vec<Arc<Pod>> {
        self.pods.clone()
    }
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces.get(name).cloned()
    }
}

/// Why a reconcile did not finish (logged; the SidecarSet is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// `spec.selector` or `spec.namespaceSelector` cannot be evaluated.
    #[error("SidecarSet {name}: {reason}")]
    Selector {
        /// The SidecarSet.
        name: String,
        /// The selector error.
        reason: String,
    },
    /// An API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done, naming the object.
        action: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Every name tried for a new revision was taken by a revision with other data.
    #[error("creating a ControllerRevision for SidecarSet {name}: {tries} names taken")]
    Collisions {
        /// The SidecarSet.
        name: String,
        /// Names tried.
        tries: usize,
    },
    /// The status write kept conflicting.
    #[error("writing the status of SidecarSet {name}: still conflicting after {attempts} attempts")]
    Conflict {
        /// The SidecarSet.
        name: String,
        /// Attempts made.
        attempts: usize,
    },
}

/// What one reconcile did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// `status.latestRevision`.
    pub latest_revision: String,
    /// ControllerRevision writes made (creates, renumbers, labels, deletes).
    pub revision_writes: usize,
    /// Whether the status was written.
    pub status_written: bool,
}

fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ReconcileError {
    let action = action.into();
    move |source| ReconcileError::Api { action, source }
}

fn is_code(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// POSTs the revision with its `data` byte for byte.
async fn post_revision(
    client: &Client,
    namespace: &str,
    new: &NewRevision,
) -> Result<ControllerRevision, kube::Error> {
    let request = http::Request::post(format!(
        "/apis/apps/v1/namespaces/{namespace}/controllerrevisions"
    ))
    .header(http::header::CONTENT_TYPE, "application/json")
    .body(new.body().into_bytes())
    .map_err(kube::Error::HttpError)?;
    client.request(request).await
}

/// Creates the revision; on AlreadyExists adopts an existing one with the same data, or retries under the
/// next collision count. Returns the latest revision and the collision count.
async fn create_revision(
    client: &Client,
    set: &SidecarSet,
    namespace: &str,
    new: &NewRevision,
    mut collision_count: i32,
    writes: &mut usize,
) -> Result<(ControllerRevision, i32), ReconcileError> {
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), namespace);
    let mut candidate = new.clone();
    for _ in 0..MAX_COLLISIONS {
        let name = candidate.name().to_owned();
        match post_revision(client, namespace, &candidate).await {
            Ok(created) => {
                *writes += 1;
                tracing::info!(sidecar_set = set.name(), revision = %name, "created ControllerRevision");
                return Ok((created, collision_count));
            }
            Err(e) if is_code(&e, 409) => {
                let existing = api.get(&name).await.map_err(api_error(format!(
                    "reading ControllerRevision {namespace}/{name}"
                )))?;
                if status::same_data(&existing, &candidate.data) {
                    return Ok((existing, collision_count));
                }
                collision_count += 1;
                tracing::info!(sidecar_set = set.name(), revision = %name, collision_count, "ControllerRevision name taken by other data");
                candidate = candidate.renamed(set.name(), collision_count);
            }
            Err(e) => {
                return Err(ReconcileError::Api {
                    action: format!("creating ControllerRevision {namespace}/{name}"),
                    source: e,
                });
            }
        }
    }
    Err(ReconcileError::Collisions {
        name: set.name().to_owned(),
        tries: MAX_COLLISIONS,
    })
}

/// Executes the revision plan; returns `(latest revision, collision count)`.
async fn apply_revision_plan(
    client: &Client,
    set: &SidecarSet,
    namespace: &str,
    plan: status::RevisionPlan,
    writes: &mut usize,
) -> Result<(String, i32), ReconcileError> {
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), namespace);
    let mut latest = plan.latest_revision.clone();
    let mut collision_count = plan.collision_count;
    let mut ops = std::collections::VecDeque::from(plan.ops);
    while let Some(op) = ops.pop_front() {
        match op {
            RevisionOp::Create(new) => {
                let (revision, count) =
                    create_revision(client, set, namespace, &new, collision_count, writes).await?;
                latest = revision.metadata.name.clone().unwrap_or_default();
                collision_count = count;
                // An adopted revision may lack the custom-version label a fresh one carries.
                if let Some(op) = status::custom_version_op(set, &revision) {
                    ops.push_front(op);
                }
            }
            RevisionOp::Renumber { name, revision } => {
                api.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"revision": revision})),
                )
                .await
                .map_err(api_error(format!(
                    "renumbering ControllerRevision {namespace}/{name}"
                )))?;
                *writes += 1;
                tracing::info!(sidecar_set = set.name(), revision = %name, number = revision, "rolled back to an earlier ControllerRevision");
            }
            RevisionOp::PatchCustomVersion {
                name,
                custom_version,
            } => {
                let patch = json!({"metadata": {"labels": {CUSTOM_VERSION_LABEL: custom_version}}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map_err(api_error(format!(
                        "labelling ControllerRevision {namespace}/{name}"
                    )))?;
                *writes += 1;
            }
            RevisionOp::Delete { name } => {
                match api.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {
                        *writes += 1;
                        tracing::info!(sidecar_set = set.name(), revision = %name, "deleted old ControllerRevision");
                    }
                    Err(e) if is_code(&e, 404) => {}
                    // Truncation failures are logged, not fatal (OpenKruise's truncateHistory).
                    Err(e) => {
                        tracing::warn!(sidecar_set = set.name(), revision = %name, error = %e, "deleting old ControllerRevision failed");
                    }
                }
            }
        }
    }
    if let Some(e) = plan.history_error {
        tracing::warn!(sidecar_set = set.name(), error = %e, "revision history above its limit");
    }
    Ok((latest, collision_count))
}

/// Writes `desired` unless the SidecarSet already reports it; true when written.
async fn write_status(
    client: &Client,
    set: &SidecarSet,
    desired: &kruise_webhooks::api::sidecarset::SidecarSetStatus,
) -> Result<bool, ReconcileError> {
    let api: Api<SidecarSet> = Api::all(client.clone());
    let name = set.name();
    let mut resource_version = set.metadata.resource_version.clone();
    for attempt in 1..=STATUS_ATTEMPTS {
        let body = json!({"metadata": {"resourceVersion": resource_version}, "status": desired});
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(_) => {
                tracing::info!(
                    sidecar_set = name,
                    matched = desired.matched_pods,
                    updated = desired.updated_pods,
                    ready = desired.ready_pods,
                    updated_ready = desired.updated_ready_pods,
                    "updated SidecarSet status"
                );
                return Ok(true);
            }
            Err(e) if is_code(&e, 409) && attempt < STATUS_ATTEMPTS => {
                tracing::debug!(
                    sidecar_set = name,
                    attempt,
                    "status write conflicted; re-reading"
                );
                let fresh = api
                    .get(name)
                    .await
                    .map_err(api_error(format!("reading SidecarSet {name}")))?;
                if !status::status_changed(fresh.status.as_ref(), desired) {
                    return Ok(false);
                }
                resource_version = fresh.metadata.resource_version;
            }
            Err(e) if is_code(&e, 409) => break,
            Err(e) => {
                return Err(ReconcileError::Api {
                    action: format!("writing the status of SidecarSet {name}"),
                    source: e,
                });
            }
        }
    }
    Err(ReconcileError::Conflict {
        name: name.to_owned(),
        attempts: STATUS_ATTEMPTS,
    })
}

/// Reconciles one SidecarSet (see the module docs): revisions in `kruise_namespace`, then the status.
///
/// # Errors
/// An invalid selector, a failed API call (other than deleting old revisions), or conflicts that outlast
/// the retries.
pub async fn reconcile(
    client: &Client,
    source: &dyn SidecarSetSource,
    set: &SidecarSet,
    kruise_namespace: &str,
) -> Result<Reconciled, ReconcileError> {
    let pods = source.pods();
    let matched =
        status::matching_pods(set, &pods, |ns| source.namespace_labels(ns)).map_err(|reason| {
            ReconcileError::Selector {
                name: set.name().to_owned(),
                reason,
            }
        })?;
    let revisions = source.revisions(kruise_namespace, set.name());
    let collision_count = set
        .status
        .as_ref()
        .and_then(|s| s.collision_count)
        .unwrap_or(0);
    let plan = status::plan_revisions(set, &revisions, &matched, kruise_namespace, collision_count);
    let mut revision_writes = 0;
    let (latest, collision_count) =
        apply_revision_plan(client, set, kruise_namespace, plan, &mut revision_writes).await?;
    let desired = status::desired_status(set, &matched, &latest, collision_count);
    let status_written = if status::status_changed(set.status.as_ref(), &desired) {
        write_status(client, set, &desired).await?
    } else {
        false
    };
    Ok(Reconciled {
        latest_revision: latest,
        revision_writes,
        status_written,
    })
}

/// Timing of the controller loop.
#[derive(Debug, Clone, Copy)]
pub struct LoopSettings {
    /// How often the caches are checked for changes (the debounce).
    pub poll: Duration,
    /// Every SidecarSet is reconciled at least this often.
    pub resync: Duration,
    /// First retry delay after a failure; doubles per failure.
    pub min_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
    /// Longest time one reconcile may take.
    pub reconcile_timeout: Duration,
}

impl Default for LoopSettings {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(2),
            resync: Duration::from_secs(60),
            min_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            reconcile_timeout: Duration::from_secs(60),
        }
    }
}

/// Per-SidecarSet bookkeeping of the loop.
#[derive(Debug, Default)]
struct SetState {
    /// Inputs at the last successful reconcile.
    fingerprint: Option<u64>,
    /// When it last succeeded.
    last_ok: Option<Instant>,
    /// Failures in a row.
    failures: u32,
    /// When to retry after a failure.
    retry_at: Option<Instant>,
}

fn hash_of(parts: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// What each SidecarSet's reconcile depends on, as one number per SidecarSet: its own resourceVersion, its
/// revisions' and the pods' it injected (summed, so cache order does not matter).
fn fingerprints(
    source: &dyn SidecarSetSource,
    sets: &[Arc<SidecarSet>],
    namespace: &str,
) -> HashMap<String, u64> {
    let mut out: HashMap<String, u64> = sets
        .iter()
        .map(|s| {
            let revisions = source
                .revisions(namespace, s.name())
                .iter()
                .map(|r| hash_of((&r.metadata.name, &r.metadata.resource_version)))
                .fold(0u64, u64::wrapping_add);
            let own = hash_of((&s.metadata.uid, &s.metadata.resource_version));
            (s.name().to_owned(), own.wrapping_add(revisions))
        })
        .collect();
    for pod in source.pods() {
        let Some(list) = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(INJECTED_LIST_ANNOTATION))
        else {
            continue;
        };
        let h = hash_of((
            &pod.metadata.namespace,
            &pod.metadata.name,
            &pod.metadata.resource_version,
        ));
        for name in list.split(',') {
            if let Some(v) = out.get_mut(name) {
                *v = v.wrapping_add(h);
            }
        }
    }
    out
}

/// Sleeps for `period`, or less when `stop` or `leader` changes; true when stopping.
async fn wait(
    period: Duration,
    stop: &mut watch::Receiver<bool>,
    leader: &mut watch::Receiver<bool>,
) -> bool {
    tokio::select! {
        () = tokio::time::sleep(period) => {}
        r = stop.changed() => if r.is_err() { return true },
        r = leader.changed(), if leader.has_changed().is_ok() => { let _ = r; }
    }
    *stop.borrow()
}

/// Resolves when `leader` turns false (never when the elector is gone: shutdown comes through `stop`).
async fn leadership_lost(leader: &mut watch::Receiver<bool>) {
    if leader.wait_for(|leading| !*leading).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn run(
    client: Client,
    source: Arc<dyn SidecarSetSource>,
    namespace: String,
    mut leader: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
    settings: LoopSettings,
) {
    let mut states: BTreeMap<String, SetState> = BTreeMap::new();
    loop {
        if *stop.borrow() {
            return;
        }
        if !*leader.borrow_and_update() {
            // Not leading: forget everything, so the next leadership reconciles every SidecarSet.
            states.clear();
            if wait(settings.resync, &mut stop, &mut leader).await {
                return;
            }
            continue;
        }
        if source.synced() {
            let mut sets = source.sidecar_sets();
            sets.sort_by(|a, b| a.name().cmp(b.name()));
            let prints = fingerprints(&*source, &sets, &namespace);
            states.retain(|name, _| prints.contains_key(name));
            for set in &sets {
                if *stop.borrow() || !*leader.borrow() {
                    break;
                }
                let now = Instant::now();
                let print = prints.get(set.name()).copied().unwrap_or_default();
                let state = states.entry(set.name().to_owned()).or_default();
                let due = match state.retry_at {
                    Some(at) => now >= at,
                    None => {
                        state.fingerprint != Some(print)
                            || state.last_ok.is_none_or(|t| now >= t + settings.resync)
                    }
                };
                if !due {
                    continue;
                }
                let outcome = tokio::select! {
                    r = tokio::time::timeout(settings.reconcile_timeout, reconcile(&client, &*source, set, &namespace)) => r,
                    _ = stop.changed() => return,
                    () = leadership_lost(&mut leader) => {
                        tracing::warn!(sidecar_set = set.name(), "leadership lost: reconcile abandoned");
                        break;
                    }
                };
                let error = match outcome {
                    Ok(Ok(done)) => {
                        tracing::debug!(sidecar_set = set.name(), latest = %done.latest_revision,
                            revision_writes = done.revision_writes, status_written = done.status_written, "reconciled");
                        *state = SetState {
                            fingerprint: Some(print),
                            last_ok: Some(now),
                            failures: 0,
                            retry_at: None,
                        };
                        continue;
                    }
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => format!("timed out after {}s", settings.reconcile_timeout.as_secs()),
                };
                state.failures = state.failures.saturating_add(1);
                let delay = settings
                    .min_backoff
                    .saturating_mul(1 << state.failures.min(16).saturating_sub(1))
                    .min(settings.max_backoff);
                state.retry_at = Some(now + delay);
                tracing::warn!(sidecar_set = set.name(), error = %error, failures = state.failures,
                    retry_in_s = delay.as_secs_f64(), "reconciling SidecarSet failed");
            }
        }
        if wait(settings.poll, &mut stop, &mut leader).await {
            return;
        }
    }
}

/// The running SidecarSet controller.
pub struct SidecarSetController {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl SidecarSetController {
    /// Starts the loop; it reconciles only while `leader` is true. `kruise_namespace` holds the revisions.
    pub fn start(
        client: Client,
        source: Arc<dyn SidecarSetSource>,
        kruise_namespace: String,
        leader: watch::Receiver<bool>,
        settings: LoopSettings,
    ) -> Self {
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                let attempt = tokio::spawn(run(
                    client.clone(),
                    source.clone(),
                    kruise_namespace.clone(),
                    leader.clone(),
                    stop_rx.clone(),
                    settings,
                ));
                match attempt.await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::error!(error = %e, "the SidecarSet controller loop died; restarting it");
                        let mut stop = stop_rx.clone();
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(5)) => {}
                            _ = stop.changed() => {}
                        }
                        if *stop.borrow() {
                            return;
                        }
                    }
                }
            }
        });
        Self { stop, task }
    }

    /// Stops the loop (an in-flight reconcile is abandoned).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .is_err()
        {
            tracing::warn!("the SidecarSet controller did not stop within 5 s");
        }
    }
}
