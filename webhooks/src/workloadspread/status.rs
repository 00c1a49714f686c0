//! What the WorkloadSpread controller decides (spec/workloadspread.md §6), as pure functions of the
//! WorkloadSpread, its workload's pods and replicas, and `now`; the I/O is `src/controller/workloadspread.rs`.
//!
//! - [`group`]: the pods of each version (§2.3) by the subset their `apps.kruise.io/matched-workloadspread`
//!   annotation names (§6.2 step 2); a pod naming no subset of this WorkloadSpread (never admitted by it, a
//!   removed subset, an unreadable annotation) goes to the [`FAKE_SUBSET`] bucket, and one that names no
//!   subset of it at all is an orphan the controller may adopt ([`adoption`], [`Grouped::adopt`]);
//! - [`compute`]: the new status (§6.3): per subset `replicas`, `missingReplicas`, the webhook's
//!   `creatingPods` / `deletingPods` records kept until observed or expired (30 s / 15 s), the `Schedulable`
//!   conditions of the Adaptive strategy (§6.6), the events to record, the unschedulable pods to delete and
//!   when to look again;
//! - [`unchanged`]: whether a write is needed (timestamps at second precision, as they are stored);
//! - [`deletion_costs`]: the `controller.kubernetes.io/pod-deletion-cost` of each pod (§6.4), with the
//!   ReplicaSet controller's "delete first" order ([`delete_first`]).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::annotation::MatchedWorkloadSpread;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::api::pod::{SCHEDULED_CONDITION, SlimPod};
use crate::api::workloadspread::{
    MATCHED_WORKLOADSPREAD_ANNOTATION, SUBSET_SCHEDULABLE, VERSION_IGNORED, WorkloadSpread,
    WorkloadSpreadStatus, WorkloadSpreadSubset, WorkloadSpreadSubsetStatus,
};

pub mod adoption;
#[cfg(test)]
mod tests;

/// The internal bucket of pods that match no subset (never written anywhere).
pub const FAKE_SUBSET: &str = "kruise.io/workloadspread-fake-subset-name";
/// The pod annotation the controller writes for scale-down order.
pub const DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";
/// How long a webhook's creating record waits for its pod (`CreatPodTimeout`).
pub const CREATE_POD_TIMEOUT: SignedDuration = SignedDuration::from_secs(30);
/// How long a webhook's deleting record waits for its pod to go (`DeletePodTimeout`).
pub const DELETE_POD_TIMEOUT: SignedDuration = SignedDuration::from_secs(15);
/// How long an unschedulable subset stays so (`MaxScheduledFailedDuration`).
pub const MAX_SCHEDULED_FAILED_DURATION: SignedDuration = SignedDuration::from_secs(300);
/// The `Schedulable=False` reason.
pub const REASON_POD_UNSCHEDULABLE: &str = "PodUnschedulable";
/// The `Schedulable=True` reason.
pub const REASON_SUFFICIENT: &str = "Sufficient";
/// No `maxReplicas`: as many as fit in an int32.
const UNLIMITED: i32 = i32::MAX;

/// The pod's matched-workloadspread annotation ([`MatchedWorkloadSpread`], §3): `None` when absent or
/// empty.
///
/// # Errors
/// The annotation is not the JSON object of §3 (the caller logs it and treats the pod as not matched).
pub fn matched(pod: &SlimPod) -> Option<Result<MatchedWorkloadSpread, String>> {
    let text = pod
        .annotations
        .get(MATCHED_WORKLOADSPREAD_ANNOTATION)
        .filter(|t| !t.is_empty())?;
    Some(MatchedWorkloadSpread::read(text))
}

/// The WorkloadSpread a pod's annotation names, if it is readable.
pub fn matched_name(pod: &SlimPod) -> Option<String> {
    matched(pod).and_then(Result::ok).map(|m| m.name)
}

/// `version(pod)` (§2.3), as the pod webhooks read it.
pub fn pod_version(pod: &SlimPod) -> String {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.kind.as_str());
    super::workload::pod_version(owner, &|k: &str| pod.labels.get(k).map(str::to_owned))
}

/// `version(workload)` of a ReplicaSet (§2.3): its `pod-template-hash` label, when it is versioned.
pub fn replica_set_version(hash_label: Option<&str>) -> String {
    hash_label.map_or_else(|| VERSION_IGNORED.to_owned(), str::to_owned)
}

/// Go's `GetScaledValueFromIntOrPercent(value, total, roundUp=true)`.
///
/// # Errors
/// A string that is not `<integer>%`.
pub fn scaled(value: &IntOrString, total: i32) -> Result<i32, String> {
    match value {
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(s) => {
            let percent = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            let v = (percent as f64 * f64::from(total) / 100.0).ceil();
            Ok(v.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32)
        }
    }
}

/// A subset's max (`scaled(maxReplicas or unlimited, replicas)`).
///
/// # Errors
/// A malformed or negative `maxReplicas`.
pub fn subset_max(subset: &WorkloadSpreadSubset, replicas: i32) -> Result<i32, String> {
    let max = match &subset.max_replicas {
        None => return Ok(UNLIMITED),
        Some(m) => scaled(m, replicas)?,
    };
    if max < 0 {
        return Err(format!(
            "subset {}: maxReplicas {max} is negative",
            subset.name
        ));
    }
    Ok(max)
}

/// The sum of the integers at `paths` of `object` (§2.4 `replicasPathList`); an empty path is 0.
///
/// # Errors
/// A path that does not exist, indexes out of range, or holds no integer.
pub fn replicas_at_paths(object: &serde_json::Value, paths: &[String]) -> Result<i32, String> {
    let mut sum: i64 = 0;
    for path in paths {
        if path.is_empty() {
            continue;
        }
        let mut at = object;
        for segment in path.split('.') {
            at = match at {
                serde_json::Value::Array(items) => segment
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i))
                    .ok_or_else(|| format!("path {path:?}: no item {segment}"))?,
                serde_json::Value::Object(map) => map
                    .get(segment)
                    .ok_or_else(|| format!("path {path:?}: no field {segment}"))?,
                _ => return Err(format!("path {path:?}: {segment} is not in an object")),
            };
        }
        let value = at
            .as_i64()
            .ok_or_else(|| format!("path {path:?}: {at} is not an integer"))?;
        sum = sum.saturating_add(value);
    }
    i32::try_from(sum).map_err(|_| format!("replicas {sum} overflow"))
}

/// The pods of one version by subset name (or [`FAKE_SUBSET`]), each list sorted by pod name.
pub type BySubset<'p> = BTreeMap<String, Vec<&'p SlimPod>>;

/// The pods of a WorkloadSpread grouped by version (§2.3), then by subset (§6.2 step 2).
#[derive(Debug, Default)]
pub struct Grouped<'p> {
    /// Version → subset → pods.
    pub versions: BTreeMap<String, BySubset<'p>>,
    /// Pods whose annotation could not be read: (pod name, why). They are in the fake bucket.
    pub unreadable: Vec<(String, String)>,
    /// Scheduled pods whose annotation names no subset of this WorkloadSpread (created before it, or
    /// annotated for another): (version, pod), for adoption. They are in the fake bucket until adopted.
    pub orphans: Vec<(String, &'p SlimPod)>,
}

impl<'p> Grouped<'p> {
    /// The room left per subset in `version` before adoption (§6.2 step 2): a subset's max (unlimited:
    /// int32's) minus the pods of that version annotated into it, active or not.
    pub fn quotas(
        &self,
        ws: &WorkloadSpread,
        replicas: i32,
        version: &str,
    ) -> BTreeMap<String, i64> {
        let by_subset = self.versions.get(version);
        ws.spec
            .subsets
            .iter()
            .map(|s| {
                let max = subset_max(s, replicas).unwrap_or(0);
                let annotated = by_subset.and_then(|b| b.get(&s.name)).map_or(0, Vec::len);
                (s.name.clone(), i64::from(max) - annotated as i64)
            })
            .collect()
    }

    /// Moves an adopted orphan from the fake bucket of its version into `subset`.
    pub fn adopt(&mut self, version: &str, pod: &'p SlimPod, subset: &str) {
        let Some(by_subset) = self.versions.get_mut(version) else {
            return;
        };
        if let Some(fake) = by_subset.get_mut(FAKE_SUBSET) {
            fake.retain(|p| !std::ptr::eq(*p, pod));
            if fake.is_empty() {
                by_subset.remove(FAKE_SUBSET);
            }
        }
        let pods = by_subset.entry(subset.to_owned()).or_default();
        pods.push(pod);
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    }

    /// Every version merged (the aggregate status's input).
    pub fn all(&self) -> BySubset<'p> {
        let mut all: BySubset<'p> = BTreeMap::new();
        for by_subset in self.versions.values() {
            for (subset, pods) in by_subset {
                all.entry(subset.clone()).or_default().extend(pods);
            }
        }
        for pods in all.values_mut() {
            pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        }
        all
    }
}

/// Groups `pods` (those of the WorkloadSpread's workload, already filtered) by version and subset.
pub fn group<'p>(ws: &WorkloadSpread, pods: &[&'p SlimPod]) -> Grouped<'p> {
    let ws_name = ws.metadata.name.as_deref().unwrap_or_default();
    let subsets: BTreeSet<&str> = ws.spec.subsets.iter().map(|s| s.name.as_str()).collect();
    let mut grouped = Grouped::default();
    let mut sorted: Vec<&'p SlimPod> = pods.to_vec();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for pod in sorted {
        let version = pod_version(pod);
        let orphan = match matched(pod) {
            Some(Ok(m)) if m.name == ws_name && !m.subset.is_empty() => {
                if subsets.contains(m.subset.as_str()) {
                    grouped
                        .versions
                        .entry(version)
                        .or_default()
                        .entry(m.subset)
                        .or_default()
                        .push(pod);
                    continue;
                }
                // A subset removed from the spec: not adopted again.
                false
            }
            Some(Err(e)) => {
                let name = pod.metadata.name.clone().unwrap_or_default();
                grouped.unreadable.push((name, e));
                true
            }
            _ => true,
        };
        let scheduled = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if orphan && scheduled {
            grouped.orphans.push((version.clone(), pod));
        }
        let subset = FAKE_SUBSET.to_owned();
        grouped
            .versions
            .entry(version)
            .or_default()
            .entry(subset)
            .or_default()
            .push(pod);
    }
    grouped
}

/// An event the status computation asks for (§6.3, §6.6), recorded on the WorkloadSpread.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum StatusEvent {
    /// A creating record expired: its pod never showed up (Warning).
    CreatePodFailed {
        /// The record's key (pod name or generated UID).
        pod: String,
    },
    /// A deleting record expired: its pod is still there (Warning).
    DeletePodFailed {
        /// The pod name.
        pod: String,
    },
    /// A subset became schedulable again (Normal).
    RecoverSchedulable {
        /// The subset.
        subset: String,
    },
}

impl StatusEvent {
    /// Whether it is a Warning (else Normal).
    pub fn is_warning(&self) -> bool {
        !matches!(self, Self::RecoverSchedulable { .. })
    }

    /// The event's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::CreatePodFailed { .. } => "CreatePodFailed",
            Self::DeletePodFailed { .. } => "DeletePodFailed",
            Self::RecoverSchedulable { .. } => "RecoverSchedulable",
        }
    }

    /// OpenKruise's message, for the WorkloadSpread `namespace/ws`.
    pub fn message(&self, namespace: &str, ws: &str) -> String {
        match self {
            Self::CreatePodFailed { pod } => {
                format!("Pod {namespace}/{pod} was expected to be created but it wasn't")
            }
            Self::DeletePodFailed { pod } => {
                format!("Pod {namespace}/{pod} was expected to be deleted but it wasn't")
            }
            Self::RecoverSchedulable { subset } => format!(
                "Subset {subset} of WorkloadSpread {namespace}/{ws} is recovered from unschedulable to schedulable"
            ),
        }
    }
}

/// A pod the Adaptive strategy deletes (§6.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unschedulable {
    /// The pod name.
    pub pod: String,
    /// Its subset.
    pub subset: String,
}

/// The outcome of [`compute`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Computed {
    /// The status to have.
    pub status: WorkloadSpreadStatus,
    /// Events to record (sorted, each once).
    pub events: Vec<StatusEvent>,
    /// The unschedulable pods of the aggregate computation, to delete after the write.
    pub unschedulable: Vec<Unschedulable>,
    /// When a record or condition is due to change: reconcile again then.
    pub requeue_after: Option<Duration>,
}

/// The Adaptive strategy's critical seconds `T`, when it is active (§6.6).
fn adaptive_seconds(ws: &WorkloadSpread) -> Option<i64> {
    let strategy = &ws.spec.schedule_strategy;
    if !strategy.is_adaptive() {
        return None;
    }
    strategy
        .adaptive
        .as_ref()
        .and_then(|a| a.reschedule_critical_seconds)
        .filter(|t| *t > 0)
        .map(i64::from)
}

/// What one list's computation accumulates besides the list.
struct Pass {
    now: Timestamp,
    events: BTreeSet<StatusEvent>,
    unschedulable: Vec<Unschedulable>,
    requeue: Option<SignedDuration>,
}

impl Pass {
    /// Asks for a reconcile at `at`, something kept until then; at `now` exactly (kept, since it is not
    /// yet before now), one second later.
    fn requeue_at(&mut self, at: Timestamp) {
        let after = at
            .duration_since(self.now)
            .max(SignedDuration::from_secs(1));
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }
}

fn is_unschedulable(pod: &SlimPod) -> bool {
    let status = pod.status.as_ref();
    pod.metadata.deletion_timestamp.is_none()
        && status.and_then(|s| s.phase.as_deref()) == Some("Pending")
        && pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_none_or(str::is_empty)
        && status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| {
                c.type_ == SCHEDULED_CONDITION
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            })
}

/// Sets the `Schedulable` condition as OpenKruise's `setWorkloadSpreadSubsetCondition` does.
fn set_schedulable(conditions: &mut Vec<Condition>, status: &str, reason: &str, now: Timestamp) {
    if let Some(existing) = conditions
        .iter_mut()
        .find(|c| c.type_ == SUBSET_SCHEDULABLE)
    {
        if existing.status == status {
            if existing.reason != reason {
                existing.reason = reason.to_owned();
                existing.message = String::new();
            }
            return;
        }
        *existing = schedulable(status, reason, now);
        return;
    }
    conditions.push(schedulable(status, reason, now));
}

fn schedulable(status: &str, reason: &str, now: Timestamp) -> Condition {
    Condition {
        type_: SUBSET_SCHEDULABLE.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: String::new(),
        last_transition_time: Time(now),
        observed_generation: None,
    }
}

/// One subset's status (§6.3 steps 1-6).
#[allow(clippy::too_many_arguments)]
fn subset_status(
    subset: &WorkloadSpreadSubset,
    max: i32,
    unlimited: bool,
    old: Option<&WorkloadSpreadSubsetStatus>,
    pods: &[&SlimPod],
    last: bool,
    adaptive: Option<i64>,
    aggregate: bool,
    pass: &mut Pass,
) -> WorkloadSpreadSubsetStatus {
    let max = if unlimited { -1 } else { max };
    let mut status = WorkloadSpreadSubsetStatus {
        name: subset.name.clone(),
        missing_replicas: max,
        ..WorkloadSpreadSubsetStatus::default()
    };
    let mut creating = old.map(|o| o.creating_pods.clone()).unwrap_or_default();
    let deleting = old.map(|o| &o.deleting_pods);
    let mut active = 0;
    let mut unschedulable = false;
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let key = matched(pod)
            .and_then(Result::ok)
            .and_then(|m| m.uid)
            .unwrap_or_else(|| name.clone());
        creating.remove(&key);
        if !pod.is_active() {
            continue;
        }
        active += 1;
        if status.missing_replicas > 0 {
            status.missing_replicas -= 1;
        }
        if let Some(at) = deleting.and_then(|d| d.get(&name)) {
            let expected = at.0.saturating_add(DELETE_POD_TIMEOUT).unwrap_or(at.0);
            if expected < pass.now {
                pass.events
                    .insert(StatusEvent::DeletePodFailed { pod: name.clone() });
            } else {
                status.deleting_pods.insert(name.clone(), at.clone());
                if status.missing_replicas < max {
                    status.missing_replicas += 1;
                }
                pass.requeue_at(expected);
            }
        }
        if let Some(t) = adaptive
            && !last
            && is_unschedulable(pod)
        {
            let created = pod
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(Timestamp::UNIX_EPOCH, |c| c.0);
            let critical = created
                .saturating_add(SignedDuration::from_secs(t))
                .unwrap_or(created);
            if critical < pass.now {
                unschedulable = true;
                if aggregate {
                    pass.unschedulable.push(Unschedulable {
                        pod: name.clone(),
                        subset: subset.name.clone(),
                    });
                }
            } else {
                pass.requeue_at(critical);
            }
        }
    }
    status.replicas = active;
    for (key, at) in creating {
        let expected = at.0.saturating_add(CREATE_POD_TIMEOUT).unwrap_or(at.0);
        if expected < pass.now {
            pass.events
                .insert(StatusEvent::CreatePodFailed { pod: key });
        } else {
            status.creating_pods.insert(key, at);
            if status.missing_replicas > 0 {
                status.missing_replicas -= 1;
            }
            pass.requeue_at(expected);
        }
    }
    // §6.6.
    if adaptive.is_none() {
        return status;
    }
    status.conditions = old.map(|o| o.conditions.clone()).unwrap_or_default();
    if last {
        set_schedulable(&mut status.conditions, "True", REASON_SUFFICIENT, pass.now);
        return status;
    }
    let previous = status
        .conditions
        .iter()
        .find(|c| c.type_ == SUBSET_SCHEDULABLE)
        .cloned();
    if unschedulable {
        set_schedulable(
            &mut status.conditions,
            "False",
            REASON_POD_UNSCHEDULABLE,
            pass.now,
        );
    } else {
        match previous {
            Some(c) if c.status == "False" => {
                let until = c
                    .last_transition_time
                    .0
                    .saturating_add(MAX_SCHEDULED_FAILED_DURATION)
                    .unwrap_or(c.last_transition_time.0);
                if until < pass.now {
                    set_schedulable(&mut status.conditions, "True", REASON_SUFFICIENT, pass.now);
                    pass.events.insert(StatusEvent::RecoverSchedulable {
                        subset: subset.name.clone(),
                    });
                } else {
                    pass.requeue_at(until);
                }
            }
            _ => set_schedulable(&mut status.conditions, "True", REASON_SUFFICIENT, pass.now),
        }
    }
    status
}

/// One status list (§6.3) for `pods` by subset, from `old`; empty when a `maxReplicas` cannot be evaluated.
fn list(
    ws: &WorkloadSpread,
    old: &[WorkloadSpreadSubsetStatus],
    pods: &BySubset<'_>,
    replicas: i32,
    aggregate: bool,
    pass: &mut Pass,
) -> Vec<WorkloadSpreadSubsetStatus> {
    let adaptive = adaptive_seconds(ws);
    let n = ws.spec.subsets.len();
    let mut out = Vec::with_capacity(n);
    for (i, subset) in ws.spec.subsets.iter().enumerate() {
        let Ok(max) = subset_max(subset, replicas) else {
            return Vec::new();
        };
        let old = old.iter().find(|o| o.name == subset.name);
        let subset_pods = pods.get(&subset.name).map(Vec::as_slice).unwrap_or(&[]);
        out.push(subset_status(
            subset,
            max,
            subset.max_replicas.is_none(),
            old,
            subset_pods,
            i + 1 == n,
            adaptive,
            aggregate,
            pass,
        ));
    }
    out
}

/// The first subset whose `maxReplicas` cannot be evaluated, and why (logged by the caller: the lists
/// computed then are empty, §6.3).
pub fn invalid_max_replicas(ws: &WorkloadSpread, replicas: i32) -> Option<String> {
    ws.spec
        .subsets
        .iter()
        .find_map(|s| subset_max(s, replicas).err())
}

/// The new status of `ws` (§6.3) from its grouped pods and the workload's `replicas`, at `now`.
pub fn compute(
    ws: &WorkloadSpread,
    grouped: &Grouped<'_>,
    replicas: i32,
    now: Timestamp,
) -> Computed {
    let empty = WorkloadSpreadStatus::default();
    let old = ws.status.as_ref().unwrap_or(&empty);
    let mut pass = Pass {
        now,
        events: BTreeSet::new(),
        unschedulable: Vec::new(),
        requeue: None,
    };
    let mut status = WorkloadSpreadStatus {
        observed_generation: ws.metadata.generation.unwrap_or_default(),
        subset_statuses: list(
            ws,
            &old.subset_statuses,
            &grouped.all(),
            replicas,
            true,
            &mut pass,
        ),
        versioned_subset_statuses: BTreeMap::new(),
    };
    let no_pods = BySubset::new();
    let versions: BTreeSet<&String> = grouped
        .versions
        .keys()
        .chain(old.versioned_subset_statuses.keys())
        .collect();
    for version in versions {
        let old_list = old
            .versioned_subset_statuses
            .get(version)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let (pods, has_pods) = match grouped.versions.get(version) {
            Some(p) => (p, true),
            None => (&no_pods, false),
        };
        let computed = list(ws, old_list, pods, replicas, false, &mut pass);
        let keep = has_pods
            || computed
                .iter()
                .map(|s| {
                    i64::from(s.replicas)
                        + s.creating_pods.len() as i64
                        + s.deleting_pods.len() as i64
                })
                .sum::<i64>()
                > 0;
        if keep {
            status
                .versioned_subset_statuses
                .insert(version.clone(), computed);
        }
    }
    Computed {
        status,
        events: pass.events.into_iter().collect(),
        unschedulable: pass.unschedulable,
        requeue_after: pass
            .requeue
            .and_then(|d| Duration::try_from(d).ok())
            .filter(|d| !d.is_zero()),
    }
}

/// Whether `new` says what `old` says (JSON equality: timestamps at second precision, as stored).
pub fn unchanged(old: Option<&WorkloadSpreadStatus>, new: &WorkloadSpreadStatus) -> bool {
    let empty = WorkloadSpreadStatus::default();
    let old = old.unwrap_or(&empty);
    serde_json::to_value(old).ok() == serde_json::to_value(new).ok()
}

/// Whether the deletion cost is kept for a target of `kind` (§6.4: ReplicaSet, Deployment, CloneSet).
pub fn keeps_deletion_cost(kind: &str) -> bool {
    matches!(kind, "ReplicaSet" | "Deployment" | "CloneSet")
}

fn phase_ordinal(pod: &SlimPod) -> u8 {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

fn ready_since(pod: &SlimPod) -> Option<Option<Timestamp>> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")
        .map(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

fn max_restarts(pod: &SlimPod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
}

/// Go's `afterOrZero`: a zero time first, else the later first.
fn after_or_zero(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

/// The ReplicaSet controller's "delete first" order (`ActivePods.Less`): `Less` first.
pub fn delete_first(a: &SlimPod, b: &SlimPod) -> Ordering {
    let node = |p: &SlimPod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default()
    };
    let (na, nb) = (node(a), node(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    let by_phase = phase_ordinal(a).cmp(&phase_ordinal(b));
    if by_phase != Ordering::Equal {
        return by_phase;
    }
    let (ra, rb) = (ready_since(a), ready_since(b));
    if ra.is_some() != rb.is_some() {
        return if ra.is_none() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if let (Some(ta), Some(tb)) = (ra, rb)
        && ta != tb
    {
        return after_or_zero(ta, tb);
    }
    let by_restarts = max_restarts(b).cmp(&max_restarts(a));
    if by_restarts != Ordering::Equal {
        return by_restarts;
    }
    let created = |p: &SlimPod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    after_or_zero(created(a), created(b))
}

/// The deletion cost of every active pod of `grouped` (§6.4): pod name → value. `latest` is
/// `version(workload)`.
///
/// # Errors
/// A `maxReplicas` that cannot be evaluated.
pub fn deletion_costs(
    ws: &WorkloadSpread,
    grouped: &Grouped<'_>,
    replicas: i32,
    latest: &str,
) -> Result<BTreeMap<String, i64>, String> {
    let n = ws.spec.subsets.len() as i64;
    let mut costs = BTreeMap::new();
    for (version, by_subset) in &grouped.versions {
        let reverse = version != latest;
        for (i, subset) in ws.spec.subsets.iter().enumerate() {
            let i = if reverse { n - 1 - i as i64 } else { i as i64 };
            let positive = 100 * (n - i);
            let negative = -100 * (i + 1);
            let mut active: Vec<&SlimPod> = by_subset
                .get(&subset.name)
                .into_iter()
                .flatten()
                .copied()
                .filter(|p| p.is_active())
                .collect();
            let overflow = match subset.max_replicas {
                None => 0,
                Some(_) => {
                    let max = subset_max(subset, replicas)?;
                    active
                        .len()
                        .saturating_sub(usize::try_from(max).unwrap_or(0))
                }
            };
            if overflow > 0 {
                active.sort_by(|a, b| delete_first(a, b));
            }
            for (k, pod) in active.iter().enumerate() {
                let cost = if k < overflow { negative } else { positive };
                costs.insert(pod.metadata.name.clone().unwrap_or_default(), cost);
            }
        }
        for pod in by_subset.get(FAKE_SUBSET).into_iter().flatten() {
            if pod.is_active() {
                costs.insert(
                    pod.metadata.name.clone().unwrap_or_default(),
                    -100 * (n + 1),
                );
            }
        }
    }
    Ok(costs)
}

/// The Warning text when a deletion cost cannot be written (§6.4 quirk: Go's `%d` of a string).
pub fn patch_cost_failed_message(namespace: &str, ws: &str, pod: &str, cost: i64) -> String {
    format!(
        "WorkloadSpread {namespace}/{ws} failed to patch deletion-cost annotation to %!d(string={cost}) for Pod {namespace}/{pod}"
    )
}

/// The Warning text when an unschedulable pod cannot be deleted (§6.6, "unschedulabe" sic).
pub fn delete_failed_message(namespace: &str, ws: &str, pod: &str, subset: &str) -> String {
    format!(
        "Failed to delete unschedulabe Pod {namespace}/{pod} in Subset {subset} of WorkloadSpread {namespace}/{ws}"
    )
}
