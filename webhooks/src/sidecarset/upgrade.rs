//! In-place sidecar upgrade of running pods (spec/sidecarset.md §9 "In-place update", §6.2; DECISIONS 12):
//! which pods a round touches, in which order, and what each pod update writes. Pure: the controller
//! (`src/controller/sidecarset.rs`) reads its caches, calls [`plan_round`], then edits each chosen pod's JSON
//! as the API server returned it with [`pod_edit::update_pod`] or [`pod_edit::flip_pod`] and sends it.
//!
//! Entry points:
//! - [`plan_round`]: the round after the status (§9 steps 2-8): [`Round::Stop`], [`Round::Flip`] or
//!   [`Round::Update`];
//! - [`order`]: the candidate order (§9 step 6), with `priorityStrategy` and `scatterStrategy`;
//! - [`upgrade_count`]: partition and maxUnavailable (§9 steps 7-8);
//! - [`pod_edit`]: the pod update, the hot-upgrade flip and the `SidecarSetUpgradable` condition patch.

pub mod order;
pub mod pod_edit;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::select::selector_error;
use super::status::{
    hot_upgrade_containers, is_pod_ready, is_pod_sidecar_updated, is_pod_state_consistent,
    pod_hash_of, sidecar_container_names,
};
use crate::api::pod::SlimPod;
use crate::api::sidecarset::{HASH_WITHOUT_IMAGE_ANNOTATION, SidecarContainer, SidecarSet};
use crate::selector;

/// `updateStrategy.type` that never updates running pods.
pub const NOT_UPDATE: &str = "NotUpdate";
/// Upgrade type of hot-upgrade sidecars.
pub const HOT_UPGRADE: &str = "HotUpgrade";
/// Reason of event and condition for pods whose without-image hash differs.
pub const UPDATE_IMMUTABLE_FIELD: &str = "UpdateImmutableField";
/// Reason of the condition when every SidecarSet can upgrade the pod.
pub const ALL_UPGRADABLE: &str = "AllSidecarsetUpgradable";

/// Why a round does nothing more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// `updateStrategy.type: NotUpdate`.
    NotUpdate,
    /// `updateStrategy.paused`.
    Paused,
    /// Every matched pod already records the SidecarSet's hash.
    AllUpdated,
    /// `partition` or `maxUnavailable` cannot be read (a value like `abc%`); nothing is updated rather than
    /// reading it as 0, which for a partition would update every pod.
    InvalidStrategy(String),
}

/// What one round does (§9 steps 2-8).
#[derive(Debug, Clone, PartialEq)]
pub enum Round {
    /// Nothing to do.
    Stop(Stop),
    /// Hot-upgrade pods whose idle copy should go back to the empty image (step 3); nothing else this round.
    Flip(Vec<Arc<SlimPod>>),
    /// Pods to update, in order, and the not-upgradable pods found on the way (step 5).
    Update(UpdateRound),
}

/// The pods of an update round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateRound {
    /// The pods to update now, in order.
    pub update: Vec<Arc<SlimPod>>,
    /// Pods whose without-image hash differs: condition `SidecarSetUpgradable` False, event
    /// `NotUpgradablePods`.
    pub not_upgradable: Vec<Arc<SlimPod>>,
    /// Candidates skipped because a ready sidecar is still being updated (inconsistent).
    pub in_progress: usize,
    /// Candidates held back by the partition.
    pub partitioned: usize,
    /// Candidates held back by maxUnavailable.
    pub budget_held: usize,
    /// An invalid `updateStrategy.selector`: no pod is selected (logged by the caller).
    pub selector_error: Option<String>,
}

pub(crate) fn is_hot(c: &SidecarContainer) -> bool {
    c.view.upgrade_strategy.upgrade_type == HOT_UPGRADE
}

/// The `NotUpgradablePods` event text (§9 step 5).
pub fn not_upgradable_message(count: usize) -> String {
    format!(
        "SidecarSet in-place update detected {count} not upgradable pod(s) in this round, will skip them."
    )
}

/// An IntOrString scaled against `total` (`GetScaledValueFromIntOrPercent`, rounded up). `Err` for a
/// string that is not `<int>%`.
fn scaled(value: &IntOrString, total: usize) -> Result<(usize, Option<i64>), String> {
    match value {
        IntOrString::Int(n) => Ok((usize::try_from(*n).unwrap_or(0), None)),
        IntOrString::String(s) => {
            let pct: i64 = s
                .strip_suffix('%')
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            let pct_clamped = usize::try_from(pct.max(0)).unwrap_or(0);
            Ok((pct_clamped.saturating_mul(total).div_ceil(100), Some(pct)))
        }
    }
}

/// Partition `p` (§9 step 7): an int, or a percentage of `total` rounded up, capped at `total - 1` when the
/// percentage is below 100% and there is more than one pod.
///
/// # Errors
/// A string that is not a percentage.
pub fn partition(set: &SidecarSet, total: usize) -> Result<usize, String> {
    let Some(value) = &set.spec.update_strategy.partition else {
        return Ok(0);
    };
    let (p, pct) = scaled(value, total).map_err(|e| format!("partition: {e}"))?;
    Ok(match pct {
        Some(pct) if pct < 100 && total > 1 => p.min(total - 1),
        _ => p,
    })
}

/// maxUnavailable `m` (§9 step 8): an int or a percentage of `total` rounded up; 1 when unset.
///
/// # Errors
/// A string that is not a percentage.
pub fn max_unavailable(set: &SidecarSet, total: usize) -> Result<usize, String> {
    match &set.spec.update_strategy.max_unavailable {
        None => Ok(1),
        Some(v) => scaled(v, total)
            .map(|(m, _)| m)
            .map_err(|e| format!("maxUnavailable: {e}")),
    }
}

/// How many of the ordered `candidates` to update now (§9 steps 7-8): drop the last `partition`, then take
/// not-ready ones always and ready ones while the unavailable count `unavailable` stays below `max`; the walk
/// ends at the first ready one over budget (`calculateUpgradeCount` breaks there).
/// `ready[i]` says whether `candidates[i]` is ready. Returns the indexes taken, in order.
pub fn upgrade_count(
    ready: &[bool],
    partition: usize,
    max: usize,
    unavailable: usize,
) -> Vec<usize> {
    let keep = ready.len().saturating_sub(partition);
    let mut u = unavailable;
    let mut taken = Vec::new();
    for (i, r) in ready.iter().take(keep).enumerate() {
        if !r {
            taken.push(i);
            continue;
        }
        if u >= max {
            break;
        }
        u += 1;
        taken.push(i);
    }
    taken
}

/// The pod's without-image hash for the SidecarSet equals the SidecarSet's (else the pod is not
/// upgradable: a field other than an image changed).
pub fn without_image_hash_matches(set: &SidecarSet, pod: &SlimPod) -> bool {
    let pod_hash = pod_hash_of(pod, HASH_WITHOUT_IMAGE_ANNOTATION, set.name());
    pod_hash == set.annotation(HASH_WITHOUT_IMAGE_ANNOTATION).unwrap_or("")
}

/// A ready sidecar container of the SidecarSet whose spec and status differ: a previous update is still
/// running (`IsSidecarSetUpgradable`'s second test).
pub fn update_in_progress(set: &SidecarSet, pod: &SlimPod) -> bool {
    update_in_progress_of(set, pod, &sidecar_container_names(set))
}

/// [`update_in_progress`] with the SidecarSet's sidecar names read once for a round.
fn update_in_progress_of(set: &SidecarSet, pod: &SlimPod, names: &BTreeSet<String>) -> bool {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    names.iter().any(|name| {
        let ready = statuses
            .into_iter()
            .flatten()
            .any(|s| &s.name == name && s.ready);
        ready && !is_pod_state_consistent(pod, set, Some(&BTreeSet::from([name.clone()])))
    })
}

/// The pod is in a hot upgrade that is ready to flip (§6.2 "Flip to empty"): some idle copy does not run
/// the empty image, the pod is consistent apart from the idle copies, and it is running and ready or every
/// container but the idle copies is Ready.
pub fn needs_flip(set: &SidecarSet, pod: &SlimPod) -> bool {
    let containers = pod.spec.as_ref().map_or(&[][..], |s| &s.containers[..]);
    let mut idle = BTreeSet::new();
    let mut in_upgrade = false;
    for c in set.spec.containers.iter().filter(|c| is_hot(c)) {
        let (_, empty) = hot_upgrade_containers(pod, &c.view.name);
        let image = containers
            .iter()
            .find(|pc| pc.name == empty)
            .and_then(|pc| pc.image.as_deref());
        let empty_image = &c.view.upgrade_strategy.hot_upgrade_empty_image;
        if image.is_some_and(|i| i != empty_image) {
            in_upgrade = true;
        }
        idle.insert(empty);
    }
    if !in_upgrade {
        return false;
    }
    let others: BTreeSet<String> = sidecar_container_names(set)
        .into_iter()
        .filter(|n| !idle.contains(n))
        .collect();
    if !others.is_empty() && !is_pod_state_consistent(pod, set, Some(&others)) {
        return false;
    }
    if pod.is_running_and_ready() {
        return true;
    }
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    statuses
        .into_iter()
        .flatten()
        .filter(|s| !idle.contains(s.name.as_str()))
        .all(|s| s.ready)
}

/// Plans one round of the in-place update (§9 steps 2-8) over the `matched` pods (from
/// [`super::status::matching_pods`], sorted by name), given the status just computed for them.
pub fn plan_round(set: &SidecarSet, matched: &[Arc<SlimPod>]) -> Round {
    let strategy = &set.spec.update_strategy;
    if strategy.type_ == NOT_UPDATE {
        return Round::Stop(Stop::NotUpdate);
    }
    if strategy.paused {
        return Round::Stop(Stop::Paused);
    }
    if set.spec.containers.iter().any(is_hot) {
        let flips: Vec<_> = matched
            .iter()
            .filter(|p| needs_flip(set, p))
            .cloned()
            .collect();
        if !flips.is_empty() {
            return Round::Flip(flips);
        }
    }
    let updated: Vec<bool> = matched
        .iter()
        .map(|p| is_pod_sidecar_updated(set, p))
        .collect();
    if updated.iter().all(|u| *u) {
        return Round::Stop(Stop::AllUpdated);
    }
    let total = matched.len();
    let (p, m) = match (partition(set, total), max_unavailable(set, total)) {
        (Ok(p), Ok(m)) => (p, m),
        (Err(e), _) | (_, Err(e)) => return Round::Stop(Stop::InvalidStrategy(e)),
    };
    let mut round = UpdateRound::default();
    let selector = match &strategy.selector {
        Some(sel) => match selector_error(sel) {
            Some(e) => {
                round.selector_error = Some(format!("updateStrategy.selector: {e}"));
                None
            }
            None => Some(Some(sel)),
        },
        None => Some(None),
    };
    let names = sidecar_container_names(set);
    let mut candidates = Vec::new();
    if let Some(sel) = selector {
        for (pod, is_updated) in matched.iter().zip(&updated) {
            if *is_updated || !sel.is_none_or(|s| selector::matches(s, &pod.labels)) {
                continue;
            }
            if !without_image_hash_matches(set, pod) {
                round.not_upgradable.push(pod.clone());
            } else if update_in_progress_of(set, pod, &names) {
                round.in_progress += 1;
            } else {
                candidates.push(pod.clone());
            }
        }
    }
    let candidates = order::sort(set, candidates, matched);
    // OpenKruise counts only updated pods that are unavailable; a pod that is unavailable for another
    // reason is out just the same, and the issue asks that a rollout never takes more than maxUnavailable
    // pods out counting those already out: every matched pod that is not ready or not consistent counts.
    // Readiness of every matched pod, read once (by address: candidates are clones of these Arcs).
    let ready_by_pod: std::collections::HashMap<*const SlimPod, bool> = matched
        .iter()
        .map(|p| (Arc::as_ptr(p), is_pod_ready(p, set)))
        .collect();
    let is_ready = |p: &Arc<SlimPod>| ready_by_pod.get(&Arc::as_ptr(p)).copied().unwrap_or(false);
    let unavailable = matched
        .iter()
        .filter(|pod| !is_ready(pod) || !is_pod_state_consistent(pod, set, Some(&names)))
        .count();
    let ready: Vec<bool> = candidates.iter().map(is_ready).collect();
    let taken = upgrade_count(&ready, p, m, unavailable);
    round.partitioned = p.min(candidates.len());
    round.budget_held = candidates.len() - round.partitioned - taken.len();
    round.update = taken.into_iter().map(|i| candidates[i].clone()).collect();
    Round::Update(round)
}
