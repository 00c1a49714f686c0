//! The status controller's decisions (spec/podunavailablebudget.md §6.2-6.5), as pure functions of the PUB,
//! the pods of its namespace, the workloads the I/O layer resolved and the time (`now` comes in).
//!
//! - which pods a PUB counts: [`selected_pods`] (selector mode), [`target_pods`] (targetRef mode, over the
//!   owner uids and replicas of the resolved workload);
//! - the expected count (`totalReplicas`): [`expected_from_workloads`] (selector mode: one count per
//!   distinct workload), the workload's replicas (targetRef mode), replaced by [`protect_total_replicas`]
//!   (DECISIONS 5: `spec.protectTotalReplicas`, else the annotation `pub.kruise.io/protect-total-replicas`);
//! - [`desired_available`] (§6.3: percents rounded up, Go's IntOrString error texts);
//! - [`compute`]: the pruned `disruptedPods` / `unavailablePods` (§6.4: 20 s / 10 s after the recorded time,
//!   the `NotDeleted` events to emit), `currentAvailable` (§4.1 available), `unavailableAllowed` =
//!   max(0, current − desired), the recheck time ([`requeue_after`]);
//! - [`unchanged`]: the write is skipped when the status is already this (§6.5 step 4);
//! - [`pods_to_stamp`]: pods that lack the related-pub annotation (§6.5 step 1).
//!
//! **§10.4, decided:** OpenKruise sums the −1 "unknown replicas" of a workload found only by existence
//! (§4.3 step 9: a Job, a DaemonSet, any kind without a `scale` subresource) into the selector-mode expected
//! count, so each such owner lowers the total by one. Here such a workload contributes nothing (nor does
//! any other negative count): [`expected_from_workloads`] sums only known replicas. In targetRef mode the
//! workload's −1 stays the expected count, as OpenKruise reports it (the spec's "unknown" total).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::pod::{is_consistent, is_ready};
use crate::api::pod::SlimPod;
use crate::api::podunavailablebudget::{
    PROTECT_TOTAL_REPLICAS_ANNOTATION, PodUnavailableBudget, PodUnavailableBudgetSpec,
    PodUnavailableBudgetStatus, RELATED_PUB_ANNOTATION,
};
use crate::json::go::go_quote;
use crate::selector;
use crate::validation::meta::selector_conversion_error;

/// `DeletionTimeout`: a `disruptedPods` entry whose pod is still active this long after its time is dropped
/// (with a `NotDeleted` event).
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(20);
/// `UpdatedDelayCheckTime`: an `unavailablePods` entry is dropped this long after its time.
pub const UPDATED_DELAY_CHECK_TIME: SignedDuration = SignedDuration::from_secs(10);
/// The replicas of a workload that exists but tells none (§4.3 step 9).
pub const UNKNOWN_REPLICAS: i32 = -1;
/// Reason of the Warning event on a pod whose disruption was recorded but that was not deleted.
pub const NOT_DELETED_REASON: &str = "NotDeleted";
/// Reason of the Normal event on a PUB that selects no pod.
pub const NO_PODS_REASON: &str = "NoPods";
/// Message of the [`NO_PODS_REASON`] event.
pub const NO_PODS_MESSAGE: &str = "No matching pods found";
/// Reason of the Warning event on a PUB whose desired count cannot be computed.
pub const CALCULATE_FAILED_REASON: &str = "CalculateExpectedPodCountFailed";

/// Message of the [`NOT_DELETED_REASON`] event.
pub fn not_deleted_message(namespace: &str, name: &str) -> String {
    format!("Pod was expected by PUB {namespace}/{name} to be deleted but it wasn't")
}

/// Message of the [`CALCULATE_FAILED_REASON`] event.
pub fn calculate_failed_message(error: &str) -> String {
    format!("Failed to calculate the number of expected pods: {error}")
}

/// A workload as the controller finder resolved it (§4.3).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    /// `apiVersion` of the object found (a ReplicaSet's Deployment, not the ReplicaSet).
    pub api_version: String,
    /// `kind` of the object found.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
    /// `spec.replicas` (or the scale's), [`UNKNOWN_REPLICAS`] when the object tells none.
    pub replicas: i32,
    /// Its pod selector, when it has one (a scale subresource's `status.selector`, a Deployment's).
    pub selector: Option<LabelSelector>,
    /// It has a deletionTimestamp.
    pub deleting: bool,
}

/// Go's `strconv.Atoi` with its error texts.
fn go_atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// `intstr.GetScaledValueFromIntOrPercent`: an int as it is, `"<p>%"` as `p × total / 100` rounded up or
/// down.
///
/// # Errors
/// Go's texts: `invalid value for IntOrString: invalid type: string is not a percentage`, or
/// `invalid value for IntOrString: invalid value "<s>": <strconv.Atoi error>`.
pub fn scaled_value(value: &IntOrString, total: i32, round_up: bool) -> Result<i64, String> {
    match value {
        IntOrString::Int(i) => Ok(i64::from(*i)),
        IntOrString::String(s) => {
            let Some(number) = s.strip_suffix('%') else {
                return Err(
                    "invalid value for IntOrString: invalid type: string is not a percentage"
                        .into(),
                );
            };
            let percent = go_atoi(number).map_err(|e| {
                format!(
                    "invalid value for IntOrString: invalid value {}: {e}",
                    go_quote(s)
                )
            })?;
            let scaled = percent as f64 * f64::from(total) / 100.0;
            Ok(if round_up {
                scaled.ceil()
            } else {
                scaled.floor()
            } as i64)
        }
    }
}

/// `desiredAvailable` (§6.3): `maxUnavailable` first (expected − it, at least 0), else `minAvailable` (an int
/// as it is, not clamped; a percent of expected), else 0. Percents round up. Go's int32 conversions wrap.
///
/// # Errors
/// A percent string that is not one ([`scaled_value`]'s texts).
pub fn desired_available(spec: &PodUnavailableBudgetSpec, expected: i32) -> Result<i32, String> {
    if let Some(max) = &spec.max_unavailable {
        let unavailable = scaled_value(max, expected, true)? as i32;
        Ok(expected.wrapping_sub(unavailable).max(0))
    } else if let Some(min) = &spec.min_available {
        match min {
            IntOrString::Int(i) => Ok(*i),
            IntOrString::String(_) => Ok(scaled_value(min, expected, true)? as i32),
        }
    } else {
        Ok(0)
    }
}

/// The expected count a PUB sets itself (DECISIONS 5): `spec.protectTotalReplicas`, else the deprecated
/// annotation `pub.kruise.io/protect-total-replicas` when it is an int32 (the validator refuses other
/// values; one that slipped past is ignored).
pub fn protect_total_replicas(budget: &PodUnavailableBudget) -> Option<i32> {
    budget.spec.protect_total_replicas.or_else(|| {
        budget
            .metadata
            .annotations
            .as_ref()?
            .get(PROTECT_TOTAL_REPLICAS_ANNOTATION)?
            .parse()
            .ok()
    })
}

/// Selector mode: the active pods `selector` matches (§6.2). No selector selects none; an empty one selects
/// every pod (the status controller's listing, §4.2 note).
///
/// # Errors
/// Why the selector does not convert (`metav1.LabelSelectorAsSelector`'s text).
pub fn selected_pods(
    pods: &[Arc<SlimPod>],
    selector: Option<&LabelSelector>,
) -> Result<Vec<Arc<SlimPod>>, String> {
    let Some(selector) = selector else {
        return Ok(Vec::new());
    };
    if let Some(error) = selector_conversion_error(selector) {
        return Err(error);
    }
    Ok(pods
        .iter()
        .filter(|p| p.is_active() && selector::matches(selector, &p.labels))
        .cloned()
        .collect())
}

/// The pod's controller owner reference.
pub fn controller_of(pod: &SlimPod) -> Option<&OwnerReference> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// Selector mode: the distinct controllers (by uid) of `pods`, in uid order; pods without one contribute
/// nothing.
pub fn distinct_controllers(pods: &[Arc<SlimPod>]) -> Vec<OwnerReference> {
    let mut by_uid: BTreeMap<&str, &OwnerReference> = BTreeMap::new();
    for reference in pods.iter().filter_map(|p| controller_of(p)) {
        by_uid.entry(&reference.uid).or_insert(reference);
    }
    by_uid.into_values().cloned().collect()
}

/// Selector mode: the expected count from the workloads the pods' controllers resolved to, each workload
/// (by uid) counted once (several ReplicaSets of a Deployment count the Deployment once); a workload being
/// deleted counts nothing, nor does one of unknown replicas (module docs, §10.4).
pub fn expected_from_workloads<'a>(workloads: impl IntoIterator<Item = &'a Workload>) -> i32 {
    let mut by_uid: BTreeMap<&str, i32> = BTreeMap::new();
    for workload in workloads.into_iter().filter(|w| !w.deleting) {
        by_uid.insert(&workload.uid, workload.replicas);
    }
    by_uid
        .values()
        .filter(|r| **r >= 0)
        .fold(0i32, |sum, r| sum.saturating_add(*r))
}

/// TargetRef mode: what the I/O layer found of the target (§6.2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetWorkload {
    /// The uids whose pods are the PUB's: the ReplicaSets of a Deployment (the Deployment itself when it has
    /// none), else the workload.
    pub owner_uids: BTreeSet<String>,
    /// The workload's replicas: the expected count.
    pub replicas: i32,
    /// A selector to fall back to when no pod is owned by those uids (a scale subresource's).
    pub selector: Option<LabelSelector>,
}

/// TargetRef mode: the active pods of the target and the expected count (§6.2). No target (not found, or
/// being deleted) or zero replicas: no pods, expected 0. Pods are those owned (any owner reference) by one
/// of the owner uids; when there are none and the target has a selector, those it matches.
pub fn target_pods(
    pods: &[Arc<SlimPod>],
    target: Option<&TargetWorkload>,
) -> (Vec<Arc<SlimPod>>, i32) {
    let Some(target) = target else {
        return (Vec::new(), 0);
    };
    if target.replicas == 0 {
        return (Vec::new(), 0);
    }
    let owned: Vec<Arc<SlimPod>> = pods
        .iter()
        .filter(|p| p.is_active())
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| target.owner_uids.contains(&r.uid))
        })
        .cloned()
        .collect();
    if !owned.is_empty() {
        return (owned, target.replicas);
    }
    let by_selector = match &target.selector {
        Some(selector) if selector_conversion_error(selector).is_none() => pods
            .iter()
            .filter(|p| p.is_active() && selector::matches(selector, &p.labels))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    (by_selector, target.replicas)
}

/// The status computed against a base object ([`compute`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Computed {
    /// The whole status to write.
    pub status: PodUnavailableBudgetStatus,
    /// Pods whose `disruptedPods` entry expired while they are still active: a `NotDeleted` event each.
    pub not_deleted: Vec<String>,
    /// The earliest time a kept entry expires: reconcile again then.
    pub recheck: Option<Timestamp>,
}

/// Whether an entry recorded at `at` has expired `after` later, at `now` (strictly before `now`, as Go's
/// `Before`), and when it will otherwise. A time too far out to add to never expires.
fn expiry(at: &Time, after: SignedDuration, now: Timestamp) -> (bool, Option<Timestamp>) {
    match at.0.checked_add(after) {
        Ok(expires) => (expires < now, Some(expires)),
        Err(_) => (false, None),
    }
}

/// Computes the status from the base object's maps (§6.4-6.5): only entries of the given active pods
/// survive, `disruptedPods` for 20 s and `unavailablePods` for 10 s after their time; `currentAvailable`
/// counts the pods that are active, ready and consistent (`vertical_scaling`: the
/// `InPlaceWorkloadVerticalScaling` gate) and in neither map; `observedGeneration` is the base's generation.
/// An entry another writer (the admission gate) added to the base is kept like any other.
pub fn compute(
    base: &PodUnavailableBudget,
    pods: &[Arc<SlimPod>],
    expected: i32,
    desired: i32,
    now: Timestamp,
    vertical_scaling: bool,
) -> Computed {
    let empty = PodUnavailableBudgetStatus::default();
    let old = base.status.as_ref().unwrap_or(&empty);
    let mut disrupted = BTreeMap::new();
    let mut unavailable = BTreeMap::new();
    let mut not_deleted = Vec::new();
    let mut recheck: Option<Timestamp> = None;
    let mut earliest = |at: Option<Timestamp>| {
        if let Some(at) = at {
            recheck = Some(recheck.map_or(at, |r| r.min(at)));
        }
    };
    for pod in pods.iter().filter(|p| p.is_active()) {
        let Some(name) = pod.metadata.name.as_deref() else {
            continue;
        };
        if let Some(at) = old.disrupted_pods.get(name) {
            match expiry(at, DELETION_TIMEOUT, now) {
                (true, _) => not_deleted.push(name.to_owned()),
                (false, expires) => {
                    disrupted.insert(name.to_owned(), at.clone());
                    earliest(expires);
                }
            }
        }
        if let Some(at) = old.unavailable_pods.get(name) {
            // Dropped silently once expired, ready again or not.
            if let (false, expires) = expiry(at, UPDATED_DELAY_CHECK_TIME, now) {
                unavailable.insert(name.to_owned(), at.clone());
                earliest(expires);
            }
        }
    }
    let current = pods
        .iter()
        .filter(|p| p.is_active() && is_ready(p) && is_consistent(p, vertical_scaling))
        .filter(|p| {
            p.metadata
                .name
                .as_deref()
                .is_none_or(|n| !disrupted.contains_key(n) && !unavailable.contains_key(n))
        })
        .count();
    let current = i32::try_from(current).unwrap_or(i32::MAX);
    let status = PodUnavailableBudgetStatus {
        observed_generation: base.metadata.generation.unwrap_or(0),
        disrupted_pods: disrupted,
        unavailable_pods: unavailable,
        unavailable_allowed: current.saturating_sub(desired).max(0),
        current_available: current,
        desired_available: desired,
        total_replicas: expected,
    };
    Computed {
        status,
        not_deleted,
        recheck,
    }
}

/// How long until `recheck` from `now`; at least 100 ms, so an entry expiring this very instant is looked
/// at again just after (it expires strictly after its time).
pub fn requeue_after(recheck: Option<Timestamp>, now: Timestamp) -> Option<Duration> {
    let left = recheck?.duration_since(now);
    let left = Duration::try_from(left).unwrap_or(Duration::ZERO);
    Some(left.max(Duration::from_millis(100)))
}

/// Whether the PUB already reports `computed` (§6.5 step 4): the four counters, `observedGeneration` and
/// both maps, absent maps equal to empty ones and times compared as instants. No status at all is the
/// zero status.
pub fn unchanged(
    current: Option<&PodUnavailableBudgetStatus>,
    computed: &PodUnavailableBudgetStatus,
) -> bool {
    match current {
        Some(status) => status == computed,
        None => *computed == PodUnavailableBudgetStatus::default(),
    }
}

/// Pods lacking `pub.kruise.io/related-pub` (§6.5 step 1: the controller stamps both keys on them).
pub fn pods_to_stamp(pods: &[Arc<SlimPod>]) -> Vec<Arc<SlimPod>> {
    pods.iter()
        .filter(|p| {
            p.annotations
                .get(RELATED_PUB_ANNOTATION)
                .is_none_or(str::is_empty)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
