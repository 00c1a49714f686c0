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
//! [`SidecarSetController`] runs on the [controller runtime](super::runtime) while this replica leads, over
//! the stores the pod webhook reads ([`Inputs`]). A SidecarSet is reconciled when it changes; when a pod
//! it injected (named in the pod's `kruise.io/sidecarset-injected-list`) is created, changes or goes; when
//! one of its ControllerRevisions changes; and, if it has a `namespaceSelector`, when any Namespace
//! changes (its labels may now select or drop pods). Every SidecarSet once when leadership starts, after
//! a relist, and 30 minutes after its last reconcile if nothing triggered it before. Requests coalesce,
//! 3 reconciles run at once, failures are retried with backoff (1 s doubling to 5 min). OpenKruise reacts
//! to a SidecarSet update only when its generation changed and to a pod update only when certain fields
//! flipped (§9); reconciling on every change is a superset of that, and writes nothing when nothing differs.
//!
//! After the status, [`upgrade`] rolls the SidecarSet's sidecars out to the running pods in place (§9
//! "In-place update", §6.2 hot-upgrade flips): [`reconcile_and_upgrade`].

use crate::cache::versions::{KruiseKind, ServedApi, Versions};
use kube::core::ApiResource;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tokio::sync::watch;

use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::revision::SlimRevision;
use kruise_webhooks::api::sidecarset::{CUSTOM_VERSION_LABEL, SIDECARSET_NAME_LABEL, SidecarSet};
use kruise_webhooks::sidecarset::inject::INJECTED_LIST_ANNOTATION;
use kruise_webhooks::sidecarset::status::{self, NewRevision, RevisionOp};

use super::failure::is_code;
use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use crate::cache::shared::Shared;

mod error;
pub mod upgrade;
pub use error::ReconcileError;
pub use upgrade::{Expectations, UpgradeContext, Upgraded};

/// Status writes per reconcile: the first and two retries after a conflict.
const STATUS_ATTEMPTS: usize = 3;
/// Names tried for one new revision before giving up (each collision raises the count by one).
const MAX_COLLISIONS: usize = 10;

/// What a reconcile reads: the shared stores in a cluster ([`Inputs`]), a [`Snapshot`] in tests.
pub trait SidecarSetSource: Send + Sync {
    /// The ControllerRevisions of `namespace` labelled with the SidecarSet's name.
    fn revisions(&self, namespace: &str, set_name: &str) -> Vec<Arc<SlimRevision>>;
    /// The Pods whose injected list names the SidecarSet (only those can match it, §9 "Matching pods").
    fn pods_injected_by(&self, set_name: &str) -> Vec<Arc<SlimPod>>;
    /// A Namespace's labels; `None` when it does not exist.
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>>;
}

/// The stores the controller reads and is triggered by (those of the pod webhook, [`crate::cache`]).
#[derive(Clone)]
pub struct Inputs {
    /// SidecarSets.
    pub sidecar_sets: Shared<SidecarSet>,
    /// ControllerRevisions of the Kruise namespace.
    pub revisions: Shared<SlimRevision>,
    /// Pods.
    pub pods: Shared<SlimPod>,
    /// Namespaces.
    pub namespaces: Shared<Namespace>,
}

/// The index of pods by the SidecarSets their `kruise.io/sidecarset-injected-list` names.
const INJECTED_BY_INDEX: &str = "sidecarset-injected-list";
/// The index of ControllerRevisions by their `kruise.io/sidecarset-name` label.
const REVISIONS_OF_INDEX: &str = "sidecarset-name";

/// The names a pod's injected list holds ([`status::is_pod_injected`] reads the same list).
fn injected_names(pod: &SlimPod) -> Vec<String> {
    pod.annotations
        .get(INJECTED_LIST_ANNOTATION)
        .map(|list| list.split(',').map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The SidecarSet a ControllerRevision is labelled with.
fn revision_owner(revision: &SlimRevision) -> Vec<String> {
    revision
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SIDECARSET_NAME_LABEL))
        .map(|name| vec![name.clone()])
        .unwrap_or_default()
}

impl SidecarSetSource for Inputs {
    fn revisions(&self, namespace: &str, set_name: &str) -> Vec<Arc<SlimRevision>> {
        // An index, not a scan: one reconcile per SidecarSet, so a scan per reconcile is quadratic.
        let mut revisions = self
            .revisions
            .index(REVISIONS_OF_INDEX, revision_owner)
            .get(set_name);
        revisions.retain(|r| r.metadata.namespace.as_deref() == Some(namespace));
        revisions
    }
    fn pods_injected_by(&self, set_name: &str) -> Vec<Arc<SlimPod>> {
        self.pods
            .index(INJECTED_BY_INDEX, injected_names)
            .get(set_name)
    }
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces
            .store()
            .get(&ObjectRef::new(name))
            .map(|ns| ns.metadata.labels.clone().unwrap_or_default())
    }
}

/// Cluster state held in memory (tests).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// SidecarSets.
    pub sidecar_sets: Vec<Arc<SidecarSet>>,
    /// ControllerRevisions (any namespace; filtered by namespace and name label on read).
    pub revisions: Vec<Arc<SlimRevision>>,
    /// Pods.
    pub pods: Vec<Arc<SlimPod>>,
    /// Namespace name to labels.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl SidecarSetSource for Snapshot {
    fn revisions(&self, namespace: &str, set_name: &str) -> Vec<Arc<SlimRevision>> {
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
    fn pods_injected_by(&self, set_name: &str) -> Vec<Arc<SlimPod>> {
        self.pods
            .iter()
            .filter(|p| status::is_pod_injected(p, set_name))
            .cloned()
            .collect()
    }
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces.get(name).cloned()
    }
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

/// POSTs the revision with its `data` byte for byte.
async fn post_revision(
    client: &Client,
    namespace: &str,
    new: &NewRevision,
) -> Result<SlimRevision, kube::Error> {
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
) -> Result<(SlimRevision, i32), ReconcileError> {
    let api: Api<SlimRevision> = Api::namespaced(client.clone(), namespace);
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
    let api: Api<SlimRevision> = Api::namespaced(client.clone(), namespace);
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
/// The status is the same in both versions: a merge patch of it at the served version (`served`).
async fn write_status(
    client: &Client,
    served: &ApiResource,
    set: &SidecarSet,
    desired: &kruise_webhooks::api::sidecarset::SidecarSetStatus,
) -> Result<bool, ReconcileError> {
    let api: ServedApi<SidecarSet> = ServedApi::all(client.clone(), served);
    let name = set.name();
    let mut resource_version = set.metadata.resource_version.clone();
    for attempt in 1..=STATUS_ATTEMPTS {
        let body = json!({"metadata": {"resourceVersion": resource_version}, "status": desired});
        match api
            .raw()
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
    let pods = source.pods_injected_by(set.name());
    let served = Versions::newest().resource_or_newest(KruiseKind::SidecarSet);
    reconcile_status(client, source, set, kruise_namespace, &pods, &served)
        .await
        .map(|(done, _)| done)
}

/// [`reconcile`], then one round of the in-place update ([`upgrade::upgrade`]) over the matched pods.
///
/// # Errors
/// As [`reconcile`] and [`upgrade::upgrade`].
pub async fn reconcile_and_upgrade(
    client: &Client,
    source: &dyn SidecarSetSource,
    set: &SidecarSet,
    kruise_namespace: &str,
    ctx: &UpgradeContext,
) -> Result<(Reconciled, Upgraded), ReconcileError> {
    let pods = source.pods_injected_by(set.name());
    let (done, matched) = reconcile_status(
        client,
        source,
        set,
        kruise_namespace,
        &pods,
        &ctx.sidecar_sets,
    )
    .await?;
    // The pods updated now record the revision just registered (OpenKruise sets `sidecarSet.Status` to the
    // status it wrote before the update round), not the one the cached object still shows.
    let recorded = set
        .status
        .as_ref()
        .and_then(|s| s.latest_revision.as_deref());
    let fresh;
    let set = if recorded == Some(done.latest_revision.as_str()) || done.latest_revision.is_empty()
    {
        set
    } else {
        let mut copy = set.clone();
        copy.status.get_or_insert_default().latest_revision = Some(done.latest_revision.clone());
        fresh = copy;
        &fresh
    };
    let upgraded = upgrade::upgrade(client, ctx, set, &matched, &pods).await?;
    Ok((done, upgraded))
}

async fn reconcile_status(
    client: &Client,
    source: &dyn SidecarSetSource,
    set: &SidecarSet,
    kruise_namespace: &str,
    pods: &[Arc<SlimPod>],
    served: &ApiResource,
) -> Result<(Reconciled, Vec<Arc<SlimPod>>), ReconcileError> {
    let matched =
        status::matching_pods(set, pods, |ns| source.namespace_labels(ns)).map_err(|reason| {
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
        write_status(client, served, set, &desired).await?
    } else {
        false
    };
    Ok((
        Reconciled {
            latest_revision: latest,
            revision_writes,
            status_written,
        },
        matched,
    ))
}

/// The SidecarSet controller ([`super::runtime::Reconciler`]): what it reads and writes with.
pub struct SidecarSetController {
    client: Client,
    inputs: Inputs,
    kruise_namespace: String,
    upgrade: UpgradeContext,
    /// Failed reconciles: counted and told on the SidecarSet.
    report: FailureReport,
}

impl SidecarSetController {
    /// Starts the controller on `inputs`; it reconciles only while `leader` is true. `kruise_namespace`
    /// holds the revisions; `upgrade` records events, counts and expectations of the in-place update.
    pub fn start(
        client: Client,
        inputs: Inputs,
        kruise_namespace: String,
        upgrade: UpgradeContext,
        leader: watch::Receiver<bool>,
        settings: Settings,
    ) -> Running {
        let controller = Arc::new(Self {
            report: FailureReport {
                metrics: upgrade.metrics.clone(),
                recorder: upgrade.recorder.clone(),
            },
            client,
            inputs,
            kruise_namespace,
            upgrade,
        });
        runtime::start(controller, leader, settings)
    }
}

/// The SidecarSets a pod's `kruise.io/sidecarset-injected-list` names.
fn injected_by(pod: &SlimPod) -> Vec<ObjectRef<SidecarSet>> {
    injected_names(pod)
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| ObjectRef::new(n))
        .collect()
}

impl Reconciler for SidecarSetController {
    type Object = SidecarSet;
    type Error = ReconcileError;

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let i = &self.inputs;
        let waits = (
            i.sidecar_sets.ready(),
            i.revisions.ready(),
            i.pods.ready(),
            i.namespaces.ready(),
        );
        async move {
            futures::join!(waits.0, waits.1, waits.2, waits.3);
        }
        .boxed()
    }

    fn triggers(&self) -> Triggers<SidecarSet> {
        let sets = self.inputs.sidecar_sets.store().clone();
        Triggers::new(&self.inputs.sidecar_sets)
            .watches(&self.inputs.pods, injected_by)
            .watches(&self.inputs.revisions, |r: &SlimRevision| {
                r.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(SIDECARSET_NAME_LABEL))
                    .map(|name| ObjectRef::new(name))
                    .into_iter()
                    .collect()
            })
            // A Namespace's labels decide which pods a namespaceSelector selects.
            .watches(&self.inputs.namespaces, move |_: &Namespace| {
                sets.state()
                    .iter()
                    .filter(|s| s.spec.namespace_selector.is_some())
                    .map(|s| ObjectRef::from_obj(&**s))
                    .collect()
            })
    }

    fn reconcile(
        self: Arc<Self>,
        set: Arc<SidecarSet>,
    ) -> BoxFuture<'static, Result<Option<Duration>, ReconcileError>> {
        async move {
            let (done, upgraded) = reconcile_and_upgrade(
                &self.client,
                &self.inputs,
                &set,
                &self.kruise_namespace,
                &self.upgrade,
            )
            .await?;
            tracing::debug!(sidecar_set = set.name(), latest = %done.latest_revision,
                revision_writes = done.revision_writes, status_written = done.status_written,
                updated = upgraded.updated, flipped = upgraded.flipped, "reconciled");
            Ok(upgraded.requeue)
        }
        .boxed()
    }
}
