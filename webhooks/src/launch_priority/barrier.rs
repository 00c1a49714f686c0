//! The barrier controller's decisions (spec/container-launch-priority.md §4): which pods it looks at
//! ([`wants_reconcile`], §4.1) and what one reconcile does to a pod's barrier ConfigMap ([`step`], §4.2).
//! The controller (`src/controller/launch_priority.rs`) reads the pod and the ConfigMap and performs the
//! step; at most one key is added per reconcile, and a pod whose next level is already released is not
//! looked at again until a container of it becomes Ready (no work while a pod never becomes ready).

use std::collections::BTreeSet;

use super::{COMPLETED_ANNOTATION, barrier_key};
use crate::api::pod::{BARRIER_ENV, SlimContainer, SlimPod};

/// The priority a container's barrier env names (`GetContainerPriority`): the first
/// `KRUISE_CONTAINER_BARRIER` env, its key without the first 2 characters, parsed as an integer (0 when it
/// does not parse, as OpenKruise ignores the error). `None`: no barrier env, or one without a ConfigMap
/// key reference (it gates nothing).
pub fn container_priority(container: &SlimContainer) -> Option<i64> {
    let env = container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == BARRIER_ENV)?;
    let key = &env.value_from.as_ref()?.config_map_key_ref.as_ref()?.key;
    Some(key.get(2..).and_then(|p| p.parse().ok()).unwrap_or(0))
}

/// `findNextPriorities` (§4.1): the priorities of the containers not Ready yet that have a barrier env,
/// ascending, duplicates kept.
pub fn next_priorities(pod: &SlimPod) -> Vec<i64> {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[]);
    let mut next: Vec<i64> = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter(|c| !statuses.iter().any(|s| s.name == c.name && s.ready))
        .filter_map(container_priority)
        .collect();
    next.sort_unstable();
    next
}

fn completed(pod: &SlimPod) -> bool {
    pod.annotations.get(COMPLETED_ANNOTATION) == Some("true")
}

fn containers_ready(pod: &SlimPod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "ContainersReady" && c.status == "True")
}

/// A pod the controller may still have to act on: not completed, containers not all Ready, a barrier env
/// on a container not Ready yet (§4.1 conditions 1-3). Cheap enough to filter every pod change with.
pub fn gated(pod: &SlimPod) -> bool {
    !completed(pod) && !containers_ready(pod) && !next_priorities(pod).is_empty()
}

/// §4.1: a pod that is not completed, whose containers are not all Ready, with a level still gated, and
/// whose barrier (`barrier`: its keys, `None` when it cannot be read) lacks the key of the highest pending
/// level.
pub fn wants_reconcile(pod: &SlimPod, barrier: Option<&BTreeSet<String>>) -> bool {
    if !gated(pod) {
        return false;
    }
    let next = next_priorities(pod);
    let Some(highest) = next.last() else {
        return false;
    };
    barrier.is_none_or(|keys| !keys.contains(&barrier_key(*highest)))
}

/// What one reconcile does, once the barrier ConfigMap exists (§4.2 step 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Patch the pod `apps.kruise.io/container-launch-priority-completed: "true"`.
    Complete,
    /// Patch the barrier with this key (`"true"`), then, with `complete`, the pod as completed (only one
    /// level was left).
    Release {
        /// The key of the highest pending level.
        key: String,
        /// The level released is the last one.
        complete: bool,
    },
    /// The highest pending level is released and its containers are starting: nothing to do.
    Wait,
}

/// §4.2 step 3 for `pod` and the keys its barrier holds.
pub fn step(pod: &SlimPod, barrier: &BTreeSet<String>) -> Step {
    let next = next_priorities(pod);
    let (Some(lowest), Some(highest)) = (next.first(), next.last()) else {
        return Step::Complete;
    };
    if barrier.contains(&barrier_key(*lowest)) {
        return Step::Complete;
    }
    let key = barrier_key(*highest);
    if !barrier.contains(&key) {
        return Step::Release {
            key,
            complete: highest == lowest,
        };
    }
    // The highest key is there; were it the only level, its key would be the lowest's (handled above).
    Step::Wait
}

/// The completed pod patch (strategic merge).
pub fn completed_patch() -> serde_json::Value {
    serde_json::json!({"metadata": {"annotations": {COMPLETED_ANNOTATION: "true"}}})
}

/// The barrier patch releasing `key` (strategic merge).
pub fn release_patch(key: &str) -> serde_json::Value {
    serde_json::json!({"data": {key: "true"}})
}
