//! The WorkloadSpread controller (spec/workloadspread.md §6): while this replica leads, keeps every
//! WorkloadSpread's status current from the live pods of its workload, expires the pod webhook's
//! `creatingPods` / `deletingPods` records on OpenKruise's timings, writes the pods' deletion costs and,
//! under the Adaptive strategy, deletes pods that stay unschedulable. The decisions are pure functions of
//! [`kruise_webhooks::workloadspread::status`]; this module reads the caches, resolves the workload
//! ([`crate::workload`]), writes and records events (as `workloadspread-controller`).
//!
//! One [`reconcile`] of a WorkloadSpread (§6.2):
//! 0. not found or being deleted: the process-local copy is dropped, nothing else; no `targetRef`: nothing;
//! 1. the workload's pods and replicas: a Job's pods (its selector and uid), a ReplicaSet's, a
//!    Deployment's (through its ReplicaSets, old ones included), a StatefulSet's or CloneSet's (owner uid),
//!    another kind's through its scale subresource (owner uid, else the scale's selector); a missing or
//!    deleting workload, or 0 replicas, means no pods. `targetFilter.replicasPathList` replaces the replicas,
//!    else the `replicasPath` the custom workload whitelist (§4.2, ConfigMap `kruise-configuration`, read for
//!    custom kinds only) gives the target's kind; both are read on the whole object (a path that does not
//!    hold an integer fails the reconcile). `targetFilter.selector` keeps the pods it matches; an invalid one
//!    is logged and the WorkloadSpread skipped (no write);
//! 2. the pods grouped by version and by the subset their `apps.kruise.io/matched-workloadspread` names; an
//!    unreadable annotation is logged and its pod counted in no subset (never a panic, never a record lost);
//!    a scheduled pod naming no subset of this WorkloadSpread (created before it) is adopted: its Node and
//!    the whole pod are read (GETs: the caches keep neither), the best matching subset chosen
//!    ([`status::adoption`]) and the pod's metadata patched (the subset patch's `metadata` and the
//!    annotation); a pod no subset matches is not tried again until it or the WorkloadSpread's spec changes;
//! 3. a `maxReplicas` that cannot be evaluated (negative, or a string that is no percent) is logged and
//!    the WorkloadSpread skipped: OpenKruise would write empty subset lists and so drop the webhook's
//!    records; for ReplicaSet, Deployment and CloneSet targets, the deletion cost of each active pod: a
//!    strategic-merge PATCH only where the pod's annotation differs (a failure is a Warning
//!    `PatchPodDeletionCostFailed` and a failed reconcile);
//! 4. the status: computed from the newer (integer resourceVersion) of the informer copy and the copy this
//!    process last wrote; equal to it: no write. Otherwise one PUT of `/status` with that resourceVersion (a
//!    conflict fails the reconcile, retried with backoff as OpenKruise does); the events of the computation
//!    (`CreatePodFailed`, `DeletePodFailed`, `RecoverSchedulable`) are recorded after the write;
//! 5. the unschedulable pods of the Adaptive strategy are deleted (a failure: Warning `DeletePodFailed` and
//!    a failed reconcile);
//! 6. it is reconciled again when the earliest record, young unschedulable pod or unschedulable subset is
//!    due (requeue-after, never a poll).
//!
//! Triggers (§6.1), on the [controller runtime](super::runtime) over shared stores: any WorkloadSpread
//! change; a change of a pod naming the WorkloadSpread in its annotation (a superset of OpenKruise's
//! filter, coalesced, and writing nothing when nothing differs); a Deployment, ReplicaSet or CloneSet
//! created, deleted or whose `spec.replicas` changed, mapped to the WorkloadSpreads whose targetRef names it
//! (a ReplicaSet also to those naming its Deployment). StatefulSets are not watched (§6.1), Jobs neither:
//! their pods' changes trigger. Every WorkloadSpread once when leadership starts, after a relist, and 30
//! minutes after its last reconcile. 3 reconciles at once (`--workloadspread-workers`); failures retried
//! after 1 s doubling to 5 min.

use crate::cache::versions::{KruiseKind, ServedApi, Versions};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::workloadspread::{
    MATCHED_WORKLOADSPREAD_ANNOTATION, TargetReference, VERSION_IGNORED, WorkloadSpread,
};
use kruise_webhooks::podunavailablebudget::related::api_group;
use kruise_webhooks::workloadspread::status::{
    self, DELETION_COST_ANNOTATION, StatusEvent, Unschedulable,
};
use kruise_webhooks::workloadspread::whitelist::{self, WhitelistSource};

use super::failure::is_code;
use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use crate::cache::shared::{Change, Shared};
use crate::events::{EventType, Recorder};
use crate::metrics::Metrics;
use crate::workload::{
    CONFIGURATION, FindError, Options, Reference, SlimWorkload, WorkloadKind, Workloads,
};

/// The component events are recorded as (OpenKruise's controller name).
pub const COMPONENT: &str = "workloadspread-controller";

/// The stores the controller reads and is triggered by, and the workload finder.
#[derive(Clone)]
pub struct Inputs {
    /// WorkloadSpreads (v1beta1).
    pub spreads: Shared<WorkloadSpread>,
    /// Pods.
    pub pods: Shared<SlimPod>,
    /// The workloads WorkloadSpreads target.
    pub workloads: Workloads,
}

impl Inputs {
    fn spread(&self, namespace: &str, name: &str) -> Option<Arc<WorkloadSpread>> {
        self.spreads
            .store()
            .get(&ObjectRef::new(name).within(namespace))
    }

    fn pods_in(&self, namespace: &str) -> Vec<Arc<SlimPod>> {
        self.pods.in_namespace(namespace)
    }

    /// The WorkloadSpreads of `namespace` whose targetRef names `(group, kind, name)`.
    fn targeting(
        &self,
        namespace: &str,
        group: &str,
        kind: &str,
        name: &str,
    ) -> Vec<ObjectRef<WorkloadSpread>> {
        self.spreads
            .in_namespace(namespace)
            .iter()
            .filter(|w| {
                w.spec.target_ref.as_ref().is_some_and(|t| {
                    t.kind == kind && t.name == name && api_group(&t.api_version) == Some(group)
                })
            })
            .map(|w| ObjectRef::from_obj(&**w))
            .collect()
    }
}

type Key = (String, String);
/// Orphan pods no subset matched: pod uid → (pod resourceVersion, WorkloadSpread generation).
type Unadoptable = HashMap<String, (String, i64)>;

/// What the controller keeps between reconciles and writes with.
pub struct Context {
    client: Client,
    /// Where ConfigMap `kruise-configuration` lives (the custom workload whitelist, §4.2).
    kruise_namespace: String,
    recorder: Recorder,
    metrics: Metrics,
    /// Failed reconciles: counted and told on the WorkloadSpread.
    report: FailureReport,
    /// The WorkloadSpreads this process last wrote (§5.7 local cache).
    copies: Mutex<HashMap<Key, Arc<WorkloadSpread>>>,
    /// Per WorkloadSpread, the orphan pods no subset matched: pod uid → (pod resourceVersion, WorkloadSpread
    /// generation) when last tried; not tried again (two GETs) until one of them changes.
    unadoptable: Mutex<HashMap<Key, Unadoptable>>,
    /// The version WorkloadSpreads are read and written at (DECISIONS 25).
    versions: Versions,
}

/// A resourceVersion as an integer (unparsable: 0), to tell the newer of two copies.
fn version_of(ws: &WorkloadSpread) -> u64 {
    ws.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl Context {
    /// The context of a controller writing with `client`, counting in `metrics`.
    pub fn new(client: Client, metrics: Metrics) -> Self {
        let recorder = Recorder::new(client.clone(), COMPONENT);
        Self {
            report: FailureReport {
                metrics: metrics.clone(),
                recorder: recorder.clone(),
            },
            recorder,
            client,
            kruise_namespace: "kruise-system".into(),
            metrics,
            copies: Mutex::default(),
            unadoptable: Mutex::default(),
            versions: Versions::newest(),
        }
    }

    /// Writes WorkloadSpreads at the version `versions` gives (default: the newest, as OpenKruise master
    /// serves).
    #[must_use]
    pub fn at(mut self, versions: Versions) -> Self {
        self.versions = versions;
        self
    }

    /// The served WorkloadSpread resource.
    fn resource(&self) -> kube::core::ApiResource {
        self.versions.resource_or_newest(KruiseKind::WorkloadSpread)
    }

    /// The same, reading the custom workload whitelist in `namespace` (the Kruise namespace).
    #[must_use]
    pub fn with_kruise_namespace(mut self, namespace: &str) -> Self {
        self.kruise_namespace = namespace.to_owned();
        self
    }

    fn copies(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<WorkloadSpread>>> {
        self.copies.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The newer of the informer copy and the last copy this process wrote (ties: the local one).
    fn base(&self, cached: &Arc<WorkloadSpread>, key: &Key) -> Arc<WorkloadSpread> {
        match self.copies().get(key) {
            Some(local) if version_of(local) >= version_of(cached) => local.clone(),
            _ => cached.clone(),
        }
    }

    fn remember(&self, key: Key, written: WorkloadSpread) {
        self.copies().insert(key, Arc::new(written));
    }

    fn forget(&self, key: &Key) {
        self.copies().remove(key);
        self.unadoptable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    async fn event_on_spread(
        &self,
        ws: &WorkloadSpread,
        type_: EventType,
        reason: &str,
        message: &str,
    ) {
        let regarding = ObjectReference {
            api_version: Some(self.resource().api_version),
            kind: Some("WorkloadSpread".into()),
            namespace: ws.metadata.namespace.clone(),
            name: ws.metadata.name.clone(),
            uid: ws.metadata.uid.clone(),
            resource_version: ws.metadata.resource_version.clone(),
            ..ObjectReference::default()
        };
        self.recorder
            .record(regarding, type_, reason, message)
            .await;
    }
}

/// Why a reconcile did not finish (logged; the WorkloadSpread is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The target workload could not be resolved.
    #[error("WorkloadSpread {namespace}/{name}: {source}")]
    Workload {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// What failed.
        #[source]
        source: FindError,
    },
    /// The workload's replicas could not be read (`replicasPathList`, §2.4), or its latest version is
    /// unknown (§2.3: a Deployment without its current ReplicaSet yet): retried.
    #[error("WorkloadSpread {namespace}/{name}: {reason}")]
    Replicas {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Why.
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
}

/// What one reconcile did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Pods adopted into a subset.
    pub adopted: usize,
    /// Pods whose deletion cost was written.
    pub costs_written: usize,
    /// Whether the status was written.
    pub status_written: bool,
    /// Unschedulable pods deleted.
    pub pods_deleted: usize,
    /// When to reconcile again.
    pub requeue_after: Option<Duration>,
}

/// The workload's pods and replicas (§6.2 step 1), before the target filter.
#[derive(Default)]
struct Target {
    /// The uids its pods are controlled by.
    owners: Vec<String>,
    /// A selector its pods must match as well (a Job's).
    selector: Option<LabelSelector>,
    /// The pods it has when it controls none (a scale subresource's selector).
    fallback: Option<LabelSelector>,
    replicas: i32,
}

fn controller_uid(pod: &SlimPod) -> Option<&str> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// Resolves the target of `target_ref` of WorkloadSpread `ws` (None: missing or deleting).
async fn target(
    inputs: &Inputs,
    client: &Client,
    namespace: &str,
    ws: &str,
    target_ref: &TargetReference,
) -> Result<Option<Target>, ReconcileError> {
    let Some(group) = api_group(&target_ref.api_version) else {
        return Ok(None);
    };
    let workload_error = |source| ReconcileError::Workload {
        namespace: namespace.to_owned(),
        name: ws.to_owned(),
        source,
    };
    let single = |uid: Option<String>, replicas: i32| Target {
        owners: uid.into_iter().collect(),
        replicas,
        ..Target::default()
    };
    let stores = inputs.workloads.stores();
    match (group, target_ref.kind.as_str()) {
        ("batch", "Job") => {
            let api: Api<Job> = Api::namespaced(client.clone(), namespace);
            let job =
                api.get_opt(&target_ref.name)
                    .await
                    .map_err(|source| ReconcileError::Api {
                        action: format!("reading Job {namespace}/{}", target_ref.name),
                        source,
                    })?;
            Ok(job
                .filter(|j| j.metadata.deletion_timestamp.is_none())
                .map(|j| {
                    let spec = j.spec.unwrap_or_default();
                    Target {
                        owners: j.metadata.uid.into_iter().collect(),
                        selector: Some(spec.selector.unwrap_or_default()),
                        fallback: None,
                        replicas: spec.parallelism.unwrap_or(1),
                    }
                }))
        }
        ("apps", "ReplicaSet") => Ok(stores
            .get(WorkloadKind::ReplicaSet, namespace, &target_ref.name)
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .map(|rs| single(rs.metadata.uid.clone(), rs.replicas.unwrap_or(1)))),
        _ => {
            let finder = inputs.workloads.finder(Options {
                existence: false,
                confirm_misses: false,
            });
            let reference = Reference {
                api_version: &target_ref.api_version,
                kind: &target_ref.kind,
                name: &target_ref.name,
            };
            let Some(found) = finder
                .find(namespace, reference, None)
                .await
                .map_err(workload_error)?
                .filter(|w| !w.deleting)
            else {
                return Ok(None);
            };
            if group == "apps" && target_ref.kind == "Deployment" {
                let owners = stores
                    .replica_sets_of(namespace, &found)
                    .iter()
                    .filter_map(|rs| rs.metadata.uid.clone())
                    .collect();
                return Ok(Some(Target {
                    owners,
                    replicas: found.replicas,
                    ..Target::default()
                }));
            }
            let cached = WorkloadKind::of(group, &target_ref.kind).is_some();
            Ok(Some(Target {
                owners: vec![found.uid],
                selector: None,
                fallback: found.selector.filter(|_| !cached),
                replicas: found.replicas,
            }))
        }
    }
}

/// Whether `(group, kind)` is a built-in workload (§4.1).
fn built_in(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet")
            | ("batch", "Job")
            | ("apps.kruise.io", "CloneSet" | "StatefulSet")
    )
}

/// The `replicasPath` the custom workload whitelist gives `(group, kind)` (§4.2, §6.2 step 1): `None` when it
/// lists no such kind or gives no path.
async fn whitelist_replicas_path(
    ctx: &Context,
    group: &str,
    kind: &str,
) -> Result<Option<String>, ReconcileError> {
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.kruise_namespace);
    let config = api
        .get_opt(CONFIGURATION)
        .await
        .map_err(|source| ReconcileError::Api {
            action: format!("reading ConfigMap {}/{CONFIGURATION}", ctx.kruise_namespace),
            source,
        })?;
    let source = match config.and_then(|c| c.data?.remove(whitelist::WHITELIST_KEY)) {
        Some(text) => WhitelistSource::Present(text),
        None => WhitelistSource::Missing,
    };
    let list = whitelist::parse(&source).map_err(|reason| ReconcileError::Replicas {
        namespace: ctx.kruise_namespace.clone(),
        name: CONFIGURATION.into(),
        reason: format!("{}: {reason}", whitelist::WHITELIST_KEY),
    })?;
    Ok(list
        .into_iter()
        .find(|w| w.workload.group == group && w.workload.kind == kind)
        .map(|w| w.replicas_path)
        .filter(|p| !p.is_empty()))
}

/// The pods of `target` among `pods` (none when it wants 0 replicas, §6.2).
fn target_pods(pods: &[Arc<SlimPod>], target: &Target) -> Vec<Arc<SlimPod>> {
    if target.replicas == 0 {
        return Vec::new();
    }
    let matches = |selector: &LabelSelector, p: &SlimPod| {
        kruise_webhooks::selector::matches(selector, &p.labels)
    };
    let owned: Vec<Arc<SlimPod>> = pods
        .iter()
        .filter(|p| {
            controller_uid(p).is_some_and(|u| target.owners.iter().any(|o| o == u))
                && target.selector.as_ref().is_none_or(|s| matches(s, p))
        })
        .cloned()
        .collect();
    match &target.fallback {
        Some(selector) if owned.is_empty() => pods
            .iter()
            .filter(|p| matches(selector, p))
            .cloned()
            .collect(),
        _ => owned,
    }
}

/// `version(workload)` (§2.3) of the target, for the deletion costs.
async fn latest_version(
    inputs: &Inputs,
    client: &Client,
    namespace: &str,
    target_ref: &TargetReference,
) -> Result<String, String> {
    match target_ref.kind.as_str() {
        "ReplicaSet" => Ok(inputs
            .workloads
            .stores()
            .get(WorkloadKind::ReplicaSet, namespace, &target_ref.name)
            .map_or_else(
                || VERSION_IGNORED.to_owned(),
                |rs| status::replica_set_version(rs.labels.get("pod-template-hash")),
            )),
        "Deployment" => deployment_version(client, namespace, &target_ref.name).await,
        _ => Ok(VERSION_IGNORED.to_owned()),
    }
}

/// The `pod-template-hash` of the Deployment's current ReplicaSet: not being deleted, controlled by it,
/// whose template equals the Deployment's but for that label.
async fn deployment_version(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<String, String> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let Some(deployment) = deployments
        .get_opt(name)
        .await
        .map_err(|e| format!("reading Deployment {namespace}/{name}: {e}"))?
    else {
        return Ok(VERSION_IGNORED.to_owned());
    };
    let spec = deployment.spec.unwrap_or_default();
    let selector = spec
        .selector
        .match_labels
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
    let listed = replica_sets
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| format!("listing the ReplicaSets of Deployment {namespace}/{name}: {e}"))?;
    let uid = deployment.metadata.uid.unwrap_or_default();
    let want = serde_json::to_value(&spec.template).unwrap_or_default();
    let mut items = listed.items;
    items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for rs in items {
        let controlled = rs
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.controller == Some(true) && r.uid == uid);
        if !controlled || rs.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let hash = rs
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pod-template-hash"))
            .cloned();
        let mut template = rs.spec.and_then(|s| s.template).unwrap_or_default();
        if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.remove("pod-template-hash");
        }
        if serde_json::to_value(&template).unwrap_or_default() == want {
            return Ok(status::replica_set_version(hash.as_deref()));
        }
    }
    Err(format!(
        "no current ReplicaSet of Deployment {namespace}/{name} yet"
    ))
}

/// The marker of an orphan's last failed adoption: its resourceVersion and the WorkloadSpread's generation.
fn adoption_marker(pod: &SlimPod, ws: &WorkloadSpread) -> (String, i64) {
    (
        pod.metadata.resource_version.clone().unwrap_or_default(),
        ws.metadata.generation.unwrap_or_default(),
    )
}

/// Adopts the orphans of `grouped` (§6.2 step 2): reads each one's node and whole pod, chooses a subset and
/// patches the pod's metadata; an adopted pod moves into its subset. Returns how many were adopted.
async fn adopt<'p>(
    ctx: &Context,
    ws: &WorkloadSpread,
    grouped: &mut status::Grouped<'p>,
    replicas: i32,
    key: &Key,
) -> Result<usize, ReconcileError> {
    let namespace = key.0.as_str();
    let orphans = grouped.orphans.clone();
    let previous = ctx
        .unadoptable
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(key)
        .unwrap_or_default();
    let mut unadoptable = Unadoptable::new();
    let mut nodes: HashMap<String, Option<Node>> = HashMap::new();
    let mut quotas: HashMap<String, BTreeMap<String, i64>> = HashMap::new();
    let pod_api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let node_api: Api<Node> = Api::all(ctx.client.clone());
    let api_error = |action: String| move |source| ReconcileError::Api { action, source };
    let mut adopted = 0;
    for (version, pod) in orphans {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let marker = adoption_marker(pod, ws);
        if previous.get(&uid) == Some(&marker) {
            unadoptable.insert(uid, marker);
            continue;
        }
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let node_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        if !nodes.contains_key(&node_name) {
            let node = node_api
                .get_opt(&node_name)
                .await
                .map_err(api_error(format!("reading Node {node_name}")))?;
            nodes.insert(node_name.clone(), node);
        }
        let Some(node) = nodes.get(&node_name).and_then(Option::as_ref) else {
            unadoptable.insert(uid, marker);
            continue;
        };
        let Some(whole) = pod_api
            .get_opt(&pod_name)
            .await
            .map_err(api_error(format!("reading pod {namespace}/{pod_name}")))?
        else {
            continue;
        };
        let whole = serde_json::to_value(&whole).unwrap_or_default();
        // The cache lagged: the pod was annotated into this WorkloadSpread meanwhile.
        let fresh = whole
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(MATCHED_WORKLOADSPREAD_ANNOTATION))
            .and_then(Value::as_str)
            .and_then(kruise_webhooks::workloadspread::annotation::MatchedWorkloadSpread::parse);
        if fresh.is_some_and(|m| Some(m.name.as_str()) == ws.metadata.name.as_deref()) {
            continue;
        }
        let quota = quotas
            .entry(version.clone())
            .or_insert_with(|| grouped.quotas(ws, replicas, &version));
        let Some(subset) = status::adoption::choose_subset(ws, &whole, node, quota) else {
            unadoptable.insert(uid, marker);
            continue;
        };
        let patch = status::adoption::adoption_patch(ws, &subset);
        match pod_api
            .patch(
                &pod_name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if is_code(&e, 404) => continue,
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: format!("adopting pod {namespace}/{pod_name} into subset {subset}"),
                    source,
                });
            }
        }
        tracing::info!(
            namespace,
            workload_spread = key.1.as_str(),
            pod = pod_name,
            subset,
            "adopted a pod created before its WorkloadSpread"
        );
        if let Some(q) = quota.get_mut(&subset) {
            *q -= 1;
        }
        grouped.adopt(&version, pod, &subset);
        adopted += 1;
    }
    ctx.unadoptable
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key.clone(), unadoptable);
    Ok(adopted)
}

/// Writes the deletion costs that differ (§6.4).
async fn write_costs(
    ctx: &Context,
    ws: &WorkloadSpread,
    pods: &[Arc<SlimPod>],
    costs: &BTreeMap<String, i64>,
    namespace: &str,
) -> Result<usize, ReconcileError> {
    let api: Api<SlimPod> = Api::namespaced(ctx.client.clone(), namespace);
    let ws_name = ws.metadata.name.as_deref().unwrap_or_default();
    let by_name: HashMap<&str, &SlimPod> = pods
        .iter()
        .filter_map(|p| Some((p.metadata.name.as_deref()?, &**p)))
        .collect();
    let mut written = 0;
    for (pod_name, cost) in costs {
        let value = cost.to_string();
        let Some(pod) = by_name.get(pod_name.as_str()) else {
            continue;
        };
        if pod.annotations.get(DELETION_COST_ANNOTATION) == Some(value.as_str()) {
            continue;
        }
        let patch = json!({"metadata": {"annotations": {DELETION_COST_ANNOTATION: value}}});
        match api
            .patch(pod_name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            Ok(_) => {
                ctx.metrics.record_workloadspread_cost_patch("written");
                written += 1;
            }
            Err(e) if is_code(&e, 404) => {}
            Err(source) => {
                ctx.metrics.record_workloadspread_cost_patch("error");
                let message =
                    status::patch_cost_failed_message(namespace, ws_name, pod_name, *cost);
                ctx.event_on_spread(
                    ws,
                    EventType::Warning,
                    "PatchPodDeletionCostFailed",
                    &message,
                )
                .await;
                return Err(ReconcileError::Api {
                    action: format!("writing the deletion cost of pod {namespace}/{pod_name}"),
                    source,
                });
            }
        }
    }
    Ok(written)
}

/// Deletes the unschedulable pods of the Adaptive strategy (§6.6).
async fn delete_unschedulable(
    ctx: &Context,
    ws: &WorkloadSpread,
    pods: &[Unschedulable],
    namespace: &str,
) -> Result<usize, ReconcileError> {
    let api: Api<SlimPod> = Api::namespaced(ctx.client.clone(), namespace);
    let ws_name = ws.metadata.name.as_deref().unwrap_or_default();
    let mut deleted = 0;
    for Unschedulable { pod, subset } in pods {
        match api.delete(pod, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(
                    namespace,
                    workload_spread = ws_name,
                    pod,
                    subset,
                    "deleted an unschedulable pod: its workload recreates it in another subset"
                );
                ctx.metrics.record_workloadspread_reschedule("deleted");
                deleted += 1;
            }
            Err(e) if is_code(&e, 404) => {}
            Err(source) => {
                ctx.metrics.record_workloadspread_reschedule("error");
                let message = status::delete_failed_message(namespace, ws_name, pod, subset);
                ctx.event_on_spread(ws, EventType::Warning, "DeletePodFailed", &message)
                    .await;
                return Err(ReconcileError::Api {
                    action: format!("deleting unschedulable pod {namespace}/{pod}"),
                    source,
                });
            }
        }
    }
    Ok(deleted)
}

/// Reconciles the WorkloadSpread `namespace/name` at `now` (see the module docs).
///
/// # Errors
/// A workload lookup or API call that failed, a status write that conflicted.
pub async fn reconcile(
    ctx: &Context,
    inputs: &Inputs,
    namespace: &str,
    name: &str,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let key = (namespace.to_owned(), name.to_owned());
    let Some(cached) = inputs
        .spread(namespace, name)
        .filter(|w| w.metadata.deletion_timestamp.is_none())
    else {
        ctx.forget(&key);
        return Ok(Reconciled::default());
    };
    let Some(target_ref) = cached.spec.target_ref.clone() else {
        return Ok(Reconciled::default());
    };
    let filter = cached.spec.target_filter.clone();
    if let Some(selector) = filter.as_ref().and_then(|f| f.selector.as_ref())
        && let Some(reason) = kruise_webhooks::validation::meta::selector_conversion_error(selector)
    {
        tracing::warn!(namespace, workload_spread = name, reason = %reason,
            "skipped: spec.targetFilter.selector is invalid");
        return Ok(Reconciled::default());
    }
    let resolved = target(inputs, &ctx.client, namespace, name, &target_ref).await?;
    let mut replicas = resolved.as_ref().map_or(0, |t| t.replicas);
    let mut pods = resolved
        .as_ref()
        .map(|t| target_pods(&inputs.pods_in(namespace), t))
        .unwrap_or_default();
    // The replicas of §6.2 step 1's last rule: replicasPathList, else a whitelisted kind's replicasPath.
    let mut paths = filter
        .as_ref()
        .map(|f| f.replicas_path_list.clone())
        .unwrap_or_default();
    let group = api_group(&target_ref.api_version).unwrap_or_default();
    if paths.is_empty()
        && resolved.is_some()
        && !built_in(group, &target_ref.kind)
        && let Some(path) = whitelist_replicas_path(ctx, group, &target_ref.kind).await?
    {
        paths.push(path);
    }
    if !paths.is_empty() && resolved.is_some() {
        let finder = inputs.workloads.finder(Options {
            existence: false,
            confirm_misses: false,
        });
        let reference = Reference {
            api_version: &target_ref.api_version,
            kind: &target_ref.kind,
            name: &target_ref.name,
        };
        let object = finder
            .object(namespace, reference)
            .await
            .map_err(|source| ReconcileError::Workload {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                source,
            })?
            .unwrap_or_default();
        replicas = status::replicas_at_paths(&object, &paths).map_err(|reason| {
            ReconcileError::Replicas {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                reason: format!(
                    "the replicas of {} {}: {reason}",
                    target_ref.kind, target_ref.name
                ),
            }
        })?;
    }
    if let Some(selector) = filter.as_ref().and_then(|f| f.selector.as_ref()) {
        pods.retain(|p| kruise_webhooks::selector::matches(selector, &p.labels));
    }
    let refs: Vec<&SlimPod> = pods.iter().map(|p| &**p).collect();
    let mut grouped = status::group(&cached, &refs);
    for (pod, reason) in &grouped.unreadable {
        tracing::warn!(namespace, workload_spread = name, pod, reason = %reason,
            "pod annotation apps.kruise.io/matched-workloadspread does not parse: counted in no subset");
    }
    // OpenKruise would write empty subset lists, dropping the webhook's records: skip instead.
    if let Some(reason) = status::invalid_max_replicas(&cached, replicas) {
        tracing::warn!(namespace, workload_spread = name, reason = %reason,
            "skipped: a subset's maxReplicas cannot be evaluated");
        return Ok(Reconciled::default());
    }
    let mut done = Reconciled {
        adopted: adopt(ctx, &cached, &mut grouped, replicas, &key).await?,
        ..Reconciled::default()
    };
    if status::keeps_deletion_cost(&target_ref.kind) {
        let latest = latest_version(inputs, &ctx.client, namespace, &target_ref)
            .await
            .map_err(|reason| ReconcileError::Replicas {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                reason,
            })?;
        // Cannot fail here: every maxReplicas was just evaluated.
        let costs =
            status::deletion_costs(&cached, &grouped, replicas, &latest).unwrap_or_default();
        done.costs_written = write_costs(ctx, &cached, &pods, &costs, namespace).await?;
    }
    let base = ctx.base(&cached, &key);
    let computed = status::compute(&base, &grouped, replicas, now);
    done.requeue_after = computed.requeue_after;
    if !status::unchanged(base.status.as_ref(), &computed.status) {
        let mut body = (*base).clone();
        body.status = Some(computed.status.clone());
        let api: ServedApi<WorkloadSpread> =
            ServedApi::namespaced(ctx.client.clone(), namespace, &ctx.resource());
        match api
            .replace_status(name, &PostParams::default(), &body)
            .await
        {
            Ok(written) => {
                ctx.metrics.record_workloadspread_status_write("written");
                tracing::info!(
                    namespace,
                    workload_spread = name,
                    subsets = computed.status.subset_statuses.len(),
                    versions = computed.status.versioned_subset_statuses.len(),
                    "updated WorkloadSpread status"
                );
                ctx.remember(key, written);
                done.status_written = true;
            }
            Err(e) if is_code(&e, 404) => {
                ctx.forget(&key);
                return Ok(done);
            }
            Err(source) => {
                let result = if is_code(&source, 409) {
                    "conflict"
                } else {
                    "error"
                };
                ctx.metrics.record_workloadspread_status_write(result);
                return Err(ReconcileError::Api {
                    action: format!("writing the status of WorkloadSpread {namespace}/{name}"),
                    source,
                });
            }
        }
    }
    for event in &computed.events {
        let type_ = if event.is_warning() {
            EventType::Warning
        } else {
            EventType::Normal
        };
        let message = event.message(namespace, name);
        ctx.event_on_spread(&cached, type_, event.reason(), &message)
            .await;
        if let StatusEvent::RecoverSchedulable { subset } = event {
            tracing::info!(
                namespace,
                workload_spread = name,
                subset,
                "subset schedulable again"
            );
        }
    }
    done.pods_deleted =
        delete_unschedulable(ctx, &cached, &computed.unschedulable, namespace).await?;
    Ok(done)
}

/// The time a reconcile computes at.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The WorkloadSpread controller ([`super::runtime::Reconciler`]).
pub struct WorkloadSpreadController {
    ctx: Context,
    inputs: Inputs,
    clock: Clock,
}

impl WorkloadSpreadController {
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

/// The WorkloadSpread a pod names in its annotation.
fn spread_of(pod: &SlimPod) -> Vec<ObjectRef<WorkloadSpread>> {
    match (status::matched_name(pod), pod.metadata.namespace.as_deref()) {
        (Some(name), Some(namespace)) if !name.is_empty() => {
            vec![ObjectRef::new(&name).within(namespace)]
        }
        _ => Vec::new(),
    }
}

/// Maps changes of a workload kind to the WorkloadSpreads they concern (§6.1): created, deleted, or
/// `spec.replicas` changed (the last replicas seen per uid are remembered; a relist forgets them).
fn workload_trigger(
    inputs: &Inputs,
    kind: WorkloadKind,
) -> impl Fn(&Change<SlimWorkload>) -> Vec<ObjectRef<WorkloadSpread>> + Send + Sync + 'static {
    let seen = crate::workload::ReplicasSeen::default();
    let inputs = inputs.clone();
    move |change| {
        let Some(workload) = seen.changed(change) else {
            return Vec::new();
        };
        let Some(namespace) = workload.metadata.namespace.as_deref() else {
            return Vec::new();
        };
        let name = workload.metadata.name.as_deref().unwrap_or_default();
        let mut refs = inputs.targeting(namespace, kind.group(), kind.kind(), name);
        if kind == WorkloadKind::ReplicaSet
            && let Some(owner) = workload.controller().filter(|c| c.kind == "Deployment")
        {
            refs.extend(inputs.targeting(namespace, "apps", "Deployment", &owner.name));
        }
        refs
    }
}

impl Reconciler for WorkloadSpreadController {
    type Object = WorkloadSpread;
    type Error = ReconcileError;

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.ctx.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let waits = (
            self.inputs.spreads.ready(),
            self.inputs.pods.ready(),
            self.inputs.workloads.stores().ready(),
        );
        async move {
            futures::join!(waits.0, waits.1, waits.2);
        }
        .boxed()
    }

    fn triggers(&self) -> Triggers<WorkloadSpread> {
        let mut triggers =
            Triggers::new(&self.inputs.spreads).watches(&self.inputs.pods, spread_of);
        // StatefulSets are not a trigger (§6.1).
        for (kind, store) in self.inputs.workloads.stores().all() {
            if matches!(
                kind,
                WorkloadKind::Deployment | WorkloadKind::ReplicaSet | WorkloadKind::CloneSet
            ) {
                triggers = triggers.watches_changes(store, workload_trigger(&self.inputs, kind));
            }
        }
        triggers
    }

    fn reconcile(
        self: Arc<Self>,
        ws: Arc<WorkloadSpread>,
    ) -> BoxFuture<'static, Result<Option<Duration>, ReconcileError>> {
        async move {
            let namespace = ws.metadata.namespace.clone().unwrap_or_default();
            let name = ws.metadata.name.clone().unwrap_or_default();
            let now = (self.clock)();
            let done = reconcile(&self.ctx, &self.inputs, &namespace, &name, now).await?;
            tracing::debug!(
                namespace,
                workload_spread = name,
                adopted = done.adopted,
                costs_written = done.costs_written,
                status_written = done.status_written,
                pods_deleted = done.pods_deleted,
                "reconciled"
            );
            Ok(done.requeue_after)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, owner_uid: &str, app: &str) -> Arc<SlimPod> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns",
                "labels": {"app": app},
                "ownerReferences": [{"apiVersion": "x/v1", "kind": "X", "name": "x", "uid": owner_uid,
                    "controller": true}]}}))
            .unwrap(),
        )
    }

    fn names(pods: &[Arc<SlimPod>]) -> Vec<&str> {
        pods.iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect()
    }

    fn selector(app: &str) -> Option<LabelSelector> {
        serde_json::from_value(json!({"matchLabels": {"app": app}})).ok()
    }

    #[test]
    fn the_scale_selector_is_a_fallback_for_a_workload_owning_no_pod() {
        let pods = [
            pod("p1", "w", "web"),
            pod("p2", "other", "web"),
            pod("p3", "other", "db"),
        ];
        let owning = Target {
            owners: vec!["w".into()],
            fallback: selector("web"),
            replicas: 2,
            ..Target::default()
        };
        assert_eq!(names(&target_pods(&pods, &owning)), ["p1"]);
        let owning_none = Target {
            owners: vec!["gone".into()],
            ..owning
        };
        assert_eq!(names(&target_pods(&pods, &owning_none)), ["p1", "p2"]);
    }

    #[test]
    fn a_workload_of_zero_replicas_has_no_pods() {
        let pods = [pod("p1", "w", "web")];
        let scaled_down = Target {
            owners: vec!["w".into()],
            replicas: 0,
            ..Target::default()
        };
        assert!(target_pods(&pods, &scaled_down).is_empty());
    }

    #[test]
    fn built_in_kinds_are_those_of_section_4_1() {
        assert!(built_in("apps", "Deployment"));
        assert!(built_in("apps.kruise.io", "StatefulSet"));
        assert!(built_in("batch", "Job"));
        assert!(!built_in("apps", "CloneSet"));
        assert!(!built_in("kubeflow.org", "TFJob"));
    }

    #[test]
    fn a_pod_triggers_the_spread_its_annotation_names() {
        let mut p = (*pod("p1", "w", "web")).clone();
        assert!(spread_of(&p).is_empty());
        let annotated: SlimPod = serde_json::from_value(json!({"metadata": {"annotations": {
            MATCHED_WORKLOADSPREAD_ANNOTATION: r#"{"name":"ws","subset":"a"}"#}}}))
        .unwrap();
        p.annotations = annotated.annotations.clone();
        assert_eq!(spread_of(&p), [ObjectRef::new("ws").within("ns")]);
        let corrupt: SlimPod = serde_json::from_value(json!({"metadata": {"annotations": {
            MATCHED_WORKLOADSPREAD_ANNOTATION: "{"}}}))
        .unwrap();
        p.annotations = corrupt.annotations;
        assert!(
            spread_of(&p).is_empty(),
            "logged by the reconcile, never a panic"
        );
    }
}
