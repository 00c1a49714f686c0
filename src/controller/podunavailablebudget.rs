//! The PodUnavailableBudget status controller (spec/podunavailablebudget.md §6): while this replica leads,
//! keeps every PUB's `status` (the pods it counts, the expected, desired and available counts, the budget
//! left, the disruptions not yet confirmed) current, and releases what the admission gate spent once the
//! disruption is seen through or has expired. The decisions are pure functions of
//! [`kruise_webhooks::podunavailablebudget::status`]; this module reads the caches, resolves workloads
//! ([`crate::workload`]), writes and records events.
//!
//! One [`reconcile`] of a PUB:
//! 0. not found or being deleted: the process-local copy is dropped, nothing else;
//! 1. its pods and expected count (§6.2): in targetRef mode the target's pods (by owner uid; a Deployment's
//!    through its ReplicaSets) and replicas; in selector mode the active pods it selects and, per distinct
//!    controller among them, the resolved workload's replicas (an unknown workload counts nothing, §10.4);
//!    replaced by `protectTotalReplicas` or its annotation (DECISIONS 5). A lookup error fails the
//!    reconcile (retried with backoff, no write);
//! 2. no pods: a Normal `NoPods` event on the PUB; otherwise every pod lacking `pub.kruise.io/related-pub`
//!    is stamped with both keys (strategic-merge PATCH; an error other than NotFound fails the reconcile);
//! 3. `desiredAvailable` (§6.3; an invalid percent is a Warning `CalculateExpectedPodCountFailed` and a
//!    failed reconcile);
//! 4. the status, computed from a base object: the newer (integer resourceVersion) of the informer copy and
//!    the copy this process last wrote. Equal to what the base reports (§6.5 step 4): no write. Otherwise a
//!    PUT of `/status` (the whole object, the base's resourceVersion); on Conflict the PUB is read afresh
//!    and the status **computed again from that object** before the next PUT, at most 3 attempts in all with
//!    a few tens of milliseconds between (DECISIONS 10). The admission gate spends budget by writing the same
//!    status (an entry in `disruptedPods` / `unavailablePods`, one less `unavailableAllowed`): computing
//!    from the very object the PUT carries the resourceVersion of is what keeps its entries; an entry it
//!    added after our read makes our PUT conflict, and the retry sees it. A written status is kept as the
//!    process-local copy, shared with the gate ([`crate::cache::budgets`]), and the status is computed and
//!    written under the PUB's lock the gate's spends take on this replica, so the two never conflict here; `NotDeleted` Warnings go to the pods whose disruption expired (after the write);
//! 5. it is reconciled again when its earliest kept entry expires (§6.4).
//!
//! Triggers (§6.1), on the [controller runtime](super::runtime) over the stores the webhooks read: a PUB
//! change; a change of a pod naming the PUB in its related-pub annotation (created, updated or deleted:
//! a superset of OpenKruise's readiness, consistency and deletion flips, coalesced, and writing nothing
//! when nothing differs); a Deployment, StatefulSet, CloneSet or Advanced StatefulSet created, deleted or
//! whose `spec.replicas` changed, mapped to the PUBs of its namespace whose targetRef names it or whose
//! selector matches its pod template (every such PUB, where OpenKruise takes the first). **A pod newly
//! marked for deletion is reconciled at once**, not 5 s later as OpenKruise does: the pod stops being
//! active at once, its entry is dropped and it is no longer counted, in one write either way, and the
//! runtime coalesces the changes of a burst. Every PUB once when leadership starts, after a relist, and 30
//! minutes after its last reconcile. 3 reconciles at once; failures retried after 1 s doubling to 5 min.
//! Events are recorded as `podunavailablebudget-controller`.

use crate::cache::versions::{KruiseKind, ServedApi, Versions};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tokio::sync::watch;

use kruise_webhooks::FeatureGates;
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::podunavailablebudget::{
    DEPRECATED_RELATED_PUB_ANNOTATION, PodUnavailableBudget, RELATED_PUB_ANNOTATION,
    TargetReference,
};
use kruise_webhooks::podunavailablebudget::pod::{IN_PLACE_WORKLOAD_VERTICAL_SCALING, related_pub};
use kruise_webhooks::podunavailablebudget::related::{self, WorkloadKey, api_group};
use kruise_webhooks::podunavailablebudget::status::{self, TargetWorkload};

use super::failure::is_code;
use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use crate::cache::budgets::BudgetCopies;
use crate::cache::shared::{Change, Shared};
use crate::events::{EventType, Recorder};
use crate::metrics::Metrics;
use crate::workload::{
    FindError, Finder, Options, Reference, SlimWorkload, WorkloadKind, Workloads,
};

/// The component events are recorded as (OpenKruise's recorder name).
pub const COMPONENT: &str = "podunavailablebudget-controller";
/// Status writes per reconcile: the first and two retries after a conflict (DECISIONS 10).
const STATUS_ATTEMPTS: usize = 3;

/// The stores the controller reads and is triggered by (those of the webhooks, [`crate::cache`]), and the
/// workload finder.
#[derive(Clone)]
pub struct Inputs {
    /// PodUnavailableBudgets.
    pub budgets: Shared<PodUnavailableBudget>,
    /// Pods.
    pub pods: Shared<SlimPod>,
    /// The workloads PUBs protect.
    pub workloads: Workloads,
}

impl Inputs {
    fn budget(&self, namespace: &str, name: &str) -> Option<Arc<PodUnavailableBudget>> {
        self.budgets
            .store()
            .get(&ObjectRef::new(name).within(namespace))
    }

    fn pods_in(&self, namespace: &str) -> Vec<Arc<SlimPod>> {
        self.pods.in_namespace(namespace)
    }

    /// The PUBs of a namespace, by name.
    fn budgets_in(&self, namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
        self.budgets.in_namespace(namespace)
    }
}

/// What the controller keeps between reconciles and writes with.
pub struct Context {
    client: Client,
    recorder: Recorder,
    gates: FeatureGates,
    /// The PUBs this process last wrote or read fresh (§6.5 step 3), and a lock per PUB: shared with the
    /// admission gate's spends in a server ([`crate::cache::budgets`]).
    copies: BudgetCopies,
    /// Failed reconciles: counted and told on the PUB.
    report: FailureReport,
    /// The version PUBs are written at (DECISIONS 25).
    versions: Versions,
}

impl Context {
    /// The context of a controller writing with `client`; `gates` gives `InPlaceWorkloadVerticalScaling`
    /// (the consistency check).
    pub fn new(client: Client, gates: FeatureGates) -> Self {
        Self::sharing(client, gates, BudgetCopies::default())
    }

    /// The same, deciding on and writing under the PUB copies and locks of `copies` (the server's, shared
    /// with the admission gate).
    pub fn sharing(client: Client, gates: FeatureGates, copies: BudgetCopies) -> Self {
        let recorder = Recorder::new(client.clone(), COMPONENT);
        Self {
            report: FailureReport {
                metrics: Metrics::new(),
                recorder: recorder.clone(),
            },
            recorder,
            client,
            gates,
            copies,
            versions: Versions::newest(),
        }
    }

    /// Writes PUBs at the version `versions` gives (default: the newest, as OpenKruise master serves).
    #[must_use]
    pub fn at(mut self, versions: Versions) -> Self {
        self.versions = versions;
        self
    }

    /// Counts failed reconciles in `metrics` (`controller_errors_total`; a fresh registry otherwise).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.report.metrics = metrics;
        self
    }

    /// The base to compute on: the newer of the informer copy and the last copy this process wrote or read.
    fn base(
        &self,
        cached: &Arc<PodUnavailableBudget>,
        key: &(String, String),
    ) -> Arc<PodUnavailableBudget> {
        self.copies
            .newest(key, Some(cached.clone()))
            .unwrap_or_else(|| cached.clone())
    }

    fn forget(&self, key: &(String, String)) {
        self.copies.forget(key);
    }

    async fn event_on_budget(
        &self,
        budget: &PodUnavailableBudget,
        type_: EventType,
        reason: &str,
        message: &str,
    ) {
        let regarding = ObjectReference {
            api_version: Some(
                self.versions
                    .resource_or_newest(KruiseKind::PodUnavailableBudget)
                    .api_version,
            ),
            kind: Some("PodUnavailableBudget".into()),
            namespace: budget.metadata.namespace.clone(),
            name: budget.metadata.name.clone(),
            uid: budget.metadata.uid.clone(),
            resource_version: budget.metadata.resource_version.clone(),
            ..ObjectReference::default()
        };
        self.recorder
            .record(regarding, type_, reason, message)
            .await;
    }
}

/// Why a reconcile did not finish (logged; the PUB is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// `spec.selector` does not convert.
    #[error("PodUnavailableBudget {namespace}/{name}: spec.selector: {reason}")]
    Selector {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The conversion error.
        reason: String,
    },
    /// A workload could not be resolved.
    #[error("PodUnavailableBudget {namespace}/{name}: {source}")]
    Workload {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// What failed.
        #[source]
        source: FindError,
    },
    /// `maxUnavailable` / `minAvailable` is a string that is not a percent.
    #[error("PodUnavailableBudget {namespace}/{name}: {reason}")]
    Desired {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Go's IntOrString text.
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
    /// The status write kept conflicting.
    #[error(
        "writing the status of PodUnavailableBudget {namespace}/{name}: still conflicting after {attempts} attempts"
    )]
    Conflict {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Attempts made.
        attempts: usize,
    },
}

/// What one reconcile did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Pods stamped with the related-pub annotations.
    pub stamped: usize,
    /// Whether the status was written.
    pub status_written: bool,
    /// When to reconcile again (the earliest kept entry's expiry).
    pub requeue_after: Option<Duration>,
}

/// A short jittered pause before re-reading after a conflict (tens of milliseconds, DECISIONS 10).
async fn conflict_pause() {
    let jitter = crate::random::random_unit();
    tokio::time::sleep(Duration::from_millis(10 + (jitter * 30.0) as u64)).await;
}

/// TargetRef mode (§6.2): the target's owner uids, replicas and fallback selector; `None` when it is not
/// found or being deleted.
async fn target_workload(
    finder: &Finder<'_>,
    namespace: &str,
    target: &TargetReference,
) -> Result<Option<TargetWorkload>, FindError> {
    let Some(group) = api_group(&target.api_version) else {
        return Ok(None);
    };
    let reference = Reference {
        api_version: &target.api_version,
        kind: &target.kind,
        name: &target.name,
    };
    let single = |uid: String, replicas: i32, selector: Option<LabelSelector>| TargetWorkload {
        owner_uids: BTreeSet::from([uid]),
        replicas,
        selector,
    };
    Ok(match target.kind.as_str() {
        // The ReplicaSet itself, never its Deployment; only in the apps group.
        "ReplicaSet" => {
            if group != "apps" {
                return Ok(None);
            }
            finder
                .stores()
                .get(WorkloadKind::ReplicaSet, namespace, &target.name)
                .filter(|rs| rs.metadata.deletion_timestamp.is_none())
                .map(|rs| {
                    single(
                        rs.metadata.uid.clone().unwrap_or_default(),
                        rs.replicas.unwrap_or(1),
                        None,
                    )
                })
        }
        "Deployment" => {
            let Some(deployment) = finder
                .find(namespace, reference, None)
                .await?
                .filter(|d| !d.deleting)
            else {
                return Ok(None);
            };
            let replica_sets = finder.stores().replica_sets_of(namespace, &deployment);
            let owner_uids = if replica_sets.is_empty() {
                BTreeSet::from([deployment.uid.clone()])
            } else {
                replica_sets
                    .iter()
                    .filter_map(|rs| rs.metadata.uid.clone())
                    .collect()
            };
            Some(TargetWorkload {
                owner_uids,
                replicas: deployment.replicas,
                selector: None,
            })
        }
        kind => finder
            .find(namespace, reference, None)
            .await?
            .filter(|w| !w.deleting)
            .map(|w| {
                // Only the kinds found by scale subresource fall back to its selector.
                let fallback =
                    !matches!(kind, "StatefulSet" | "ReplicationController" | "CloneSet");
                single(w.uid, w.replicas, w.selector.filter(|_| fallback))
            }),
    })
}

/// The pods a PUB counts and the expected count (§6.2), before the override.
async fn pods_and_expected(
    inputs: &Inputs,
    budget: &PodUnavailableBudget,
    namespace: &str,
    name: &str,
) -> Result<(Vec<Arc<SlimPod>>, i32), ReconcileError> {
    let pods = inputs.pods_in(namespace);
    let workload_error = |source| ReconcileError::Workload {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        source,
    };
    if let Some(target) = &budget.spec.target_ref {
        let finder = inputs.workloads.finder(Options {
            existence: true,
            confirm_misses: false,
        });
        let target = target_workload(&finder, namespace, target)
            .await
            .map_err(workload_error)?;
        return Ok(status::target_pods(&pods, target.as_ref()));
    }
    let selected =
        status::selected_pods(&pods, budget.spec.selector.as_ref()).map_err(|reason| {
            ReconcileError::Selector {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                reason,
            }
        })?;
    // An existing workload of unknown replicas counts nothing (§10.4): step 9 is not needed here.
    let finder = inputs.workloads.finder(Options {
        existence: false,
        confirm_misses: false,
    });
    let mut workloads = Vec::new();
    for owner in status::distinct_controllers(&selected) {
        if let Some(workload) = finder
            .find(namespace, Reference::from(&owner), Some(&owner.uid))
            .await
            .map_err(workload_error)?
        {
            workloads.push(workload);
        }
    }
    Ok((selected, status::expected_from_workloads(&workloads)))
}

/// Stamps both related-pub annotations on `pods` (§6.5 step 1); a pod gone meanwhile is skipped.
async fn stamp(
    client: &Client,
    pods: &[Arc<SlimPod>],
    namespace: &str,
    budget_name: &str,
) -> Result<usize, ReconcileError> {
    let api: Api<SlimPod> = Api::namespaced(client.clone(), namespace);
    let patch = json!({"metadata": {"annotations": {
        RELATED_PUB_ANNOTATION: budget_name, DEPRECATED_RELATED_PUB_ANNOTATION: budget_name}}});
    let mut stamped = 0;
    for pod in pods {
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        match api
            .patch(pod_name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            Ok(_) => stamped += 1,
            Err(e) if is_code(&e, 404) => {}
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: format!(
                        "annotating pod {namespace}/{pod_name} with its PodUnavailableBudget"
                    ),
                    source,
                });
            }
        }
    }
    Ok(stamped)
}

/// Reconciles the PUB `namespace/name` at `now` (see the module docs).
///
/// # Errors
/// An invalid selector or percent, a workload lookup or API call that failed, or conflicts that outlast
/// the retries.
pub async fn reconcile(
    ctx: &Context,
    inputs: &Inputs,
    namespace: &str,
    name: &str,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let key = (namespace.to_owned(), name.to_owned());
    let Some(cached) = inputs
        .budget(namespace, name)
        .filter(|b| b.metadata.deletion_timestamp.is_none())
    else {
        ctx.forget(&key);
        return Ok(Reconciled::default());
    };
    let (pods, expected) = pods_and_expected(inputs, &cached, namespace, name).await?;
    let expected = status::protect_total_replicas(&cached).unwrap_or(expected);
    let mut done = Reconciled::default();
    if pods.is_empty() {
        ctx.event_on_budget(
            &cached,
            EventType::Normal,
            status::NO_PODS_REASON,
            status::NO_PODS_MESSAGE,
        )
        .await;
    } else {
        done.stamped = stamp(&ctx.client, &status::pods_to_stamp(&pods), namespace, name).await?;
    }
    let desired = match status::desired_available(&cached.spec, expected) {
        Ok(desired) => desired,
        Err(reason) => {
            let message = status::calculate_failed_message(&reason);
            ctx.event_on_budget(
                &cached,
                EventType::Warning,
                status::CALCULATE_FAILED_REASON,
                &message,
            )
            .await;
            return Err(ReconcileError::Desired {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                reason,
            });
        }
    };
    let vertical_scaling = ctx.gates.enabled(IN_PLACE_WORKLOAD_VERTICAL_SCALING);
    let api: ServedApi<PodUnavailableBudget> = ServedApi::namespaced(
        ctx.client.clone(),
        namespace,
        &ctx.versions
            .resource_or_newest(KruiseKind::PodUnavailableBudget),
    );
    // The gate's spends of this PUB on this replica wait while the status is computed and written, so
    // the base below is not overtaken by one of them.
    let lock = ctx.copies.lock(&key);
    let _held = lock.lock().await;
    let mut base = ctx.base(&cached, &key);
    for attempt in 1..=STATUS_ATTEMPTS {
        // Always from the object whose resourceVersion the PUT carries: entries the gate added stay.
        let computed = status::compute(&base, &pods, expected, desired, now, vertical_scaling);
        done.requeue_after = status::requeue_after(computed.recheck, now);
        if status::unchanged(base.status.as_ref(), &computed.status) {
            return Ok(done);
        }
        let mut body = (*base).clone();
        body.status = Some(computed.status.clone());
        match api
            .replace_status(name, &PostParams::default(), &body)
            .await
        {
            Ok(written) => {
                tracing::info!(
                    namespace,
                    pod_unavailable_budget = name,
                    total = computed.status.total_replicas,
                    desired = computed.status.desired_available,
                    current = computed.status.current_available,
                    allowed = computed.status.unavailable_allowed,
                    disrupted = computed.status.disrupted_pods.len(),
                    unavailable = computed.status.unavailable_pods.len(),
                    "updated PodUnavailableBudget status"
                );
                ctx.copies.remember(written);
                done.status_written = true;
                for pod_name in &computed.not_deleted {
                    let Some(pod) = pods
                        .iter()
                        .find(|p| p.metadata.name.as_deref() == Some(pod_name))
                    else {
                        continue;
                    };
                    let regarding = ObjectReference {
                        api_version: Some("v1".into()),
                        kind: Some("Pod".into()),
                        namespace: Some(namespace.to_owned()),
                        name: Some(pod_name.clone()),
                        uid: pod.metadata.uid.clone(),
                        resource_version: pod.metadata.resource_version.clone(),
                        ..ObjectReference::default()
                    };
                    let message = status::not_deleted_message(namespace, name);
                    ctx.recorder
                        .record(
                            regarding,
                            EventType::Warning,
                            status::NOT_DELETED_REASON,
                            &message,
                        )
                        .await;
                }
                return Ok(done);
            }
            Err(e) if is_code(&e, 409) && attempt < STATUS_ATTEMPTS => {
                tracing::debug!(
                    namespace,
                    pod_unavailable_budget = name,
                    attempt,
                    "status write conflicted; re-reading"
                );
                conflict_pause().await;
                let fresh = api
                    .get_opt(name)
                    .await
                    .map_err(|source| ReconcileError::Api {
                        action: format!("reading PodUnavailableBudget {namespace}/{name}"),
                        source,
                    })?;
                match fresh.filter(|b| b.metadata.deletion_timestamp.is_none()) {
                    Some(fresh) => {
                        ctx.copies.remember(fresh.clone());
                        base = Arc::new(fresh);
                    }
                    None => {
                        ctx.forget(&key);
                        return Ok(done);
                    }
                }
            }
            Err(e) if is_code(&e, 409) => break,
            Err(e) if is_code(&e, 404) => {
                ctx.forget(&key);
                return Ok(done);
            }
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: format!(
                        "writing the status of PodUnavailableBudget {namespace}/{name}"
                    ),
                    source,
                });
            }
        }
    }
    Err(ReconcileError::Conflict {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        attempts: STATUS_ATTEMPTS,
    })
}

/// The time a reconcile computes at.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The PUB status controller ([`super::runtime::Reconciler`]).
pub struct PodUnavailableBudgetController {
    ctx: Context,
    inputs: Inputs,
    clock: Clock,
}

impl PodUnavailableBudgetController {
    /// Starts the controller on `inputs`; it reconciles only while `leader` is true. `clock` is the time
    /// (the system clock in the server, a fixed one in tests).
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

/// The PUB a pod names in its related-pub annotation.
fn budget_of(pod: &SlimPod) -> Vec<ObjectRef<PodUnavailableBudget>> {
    match (related_pub(pod), pod.metadata.namespace.as_deref()) {
        (Some(name), Some(namespace)) => vec![ObjectRef::new(name).within(namespace)],
        _ => Vec::new(),
    }
}

/// Maps changes of a workload kind to the PUBs they concern (§6.1): created, deleted, or `spec.replicas`
/// changed (the last replicas seen per uid are remembered; a relist forgets them).
fn workload_trigger(
    inputs: &Inputs,
    kind: WorkloadKind,
) -> impl Fn(&Change<SlimWorkload>) -> Vec<ObjectRef<PodUnavailableBudget>> + Send + Sync + 'static
{
    let seen = crate::workload::ReplicasSeen::default();
    let inputs = inputs.clone();
    move |change| {
        let Some(workload) = seen.changed(change) else {
            return Vec::new();
        };
        let Some(namespace) = workload.metadata.namespace.as_deref() else {
            return Vec::new();
        };
        let key = WorkloadKey {
            api_version: kind.api_version().to_owned(),
            kind: kind.kind().to_owned(),
            name: workload.metadata.name.clone().unwrap_or_default(),
        };
        let budgets = inputs.budgets_in(namespace);
        related::budgets_for_workload(&budgets, &key, &workload.template_labels)
            .into_iter()
            .map(ObjectRef::from_obj)
            .collect()
    }
}

impl Reconciler for PodUnavailableBudgetController {
    type Object = PodUnavailableBudget;
    type Error = ReconcileError;

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.ctx.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let waits = (
            self.inputs.budgets.ready(),
            self.inputs.pods.ready(),
            self.inputs.workloads.stores().ready(),
        );
        async move {
            futures::join!(waits.0, waits.1, waits.2);
        }
        .boxed()
    }

    fn triggers(&self) -> Triggers<PodUnavailableBudget> {
        let mut triggers =
            Triggers::new(&self.inputs.budgets).watches(&self.inputs.pods, budget_of);
        // ReplicaSets are not a trigger: their pods are.
        for (kind, store) in self.inputs.workloads.stores().all() {
            if kind != WorkloadKind::ReplicaSet {
                triggers = triggers.watches_changes(store, workload_trigger(&self.inputs, kind));
            }
        }
        triggers
    }

    fn reconcile(
        self: Arc<Self>,
        budget: Arc<PodUnavailableBudget>,
    ) -> BoxFuture<'static, Result<Option<Duration>, ReconcileError>> {
        async move {
            let namespace = budget.metadata.namespace.clone().unwrap_or_default();
            let name = budget.metadata.name.clone().unwrap_or_default();
            let now = (self.clock)();
            let done = reconcile(&self.ctx, &self.inputs, &namespace, &name, now).await?;
            tracing::debug!(
                namespace,
                pod_unavailable_budget = name,
                stamped = done.stamped,
                status_written = done.status_written,
                "reconciled"
            );
            Ok(done.requeue_after)
        }
        .boxed()
    }
}
