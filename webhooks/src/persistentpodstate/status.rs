//! The status the PersistentPodState controller keeps (docs/persistentpodstate.md §3.2): one entry per pod of
//! the target StatefulSet that ran ready on a node, with the node's topology labels and the pod's persisted
//! annotations; entries of pods gone after a scale-down removed.
//!
//! Pure: the I/O layer hands in the target ([`Target`], `None` when it is not found or being deleted), its
//! pods ([`target_pods`]), the labels of a node by name, and the annotations it read for the pods
//! [`annotation_reads`] named; [`compute`] returns the status and whether a node was missing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::persistentpodstate::{
    PersistentPodState, PersistentPodStateStatus, PodState, RETENTION_WHEN_DELETED,
};
use crate::api::pod::SlimPod;
use crate::api::statefulset::{Flavor, SlimStatefulSet};

/// The target StatefulSet, as the status reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// `spec.replicas` (default 1).
    pub replicas: i32,
    /// `spec.reserveOrdinals` as given (Advanced StatefulSet).
    pub reserve_ordinals: Vec<IntOrString>,
    /// `spec.ordinals.start` (default 0).
    pub start_ordinal: i32,
    /// Its uid (the pods' owner reference).
    pub uid: String,
}

impl Target {
    /// The target a cached StatefulSet is; `None` while it is being deleted (§3.2 step 1).
    pub fn of<F: Flavor>(sts: &SlimStatefulSet<F>) -> Option<Self> {
        (!sts.deleting()).then(|| Self {
            replicas: sts.replicas.unwrap_or(1),
            reserve_ordinals: sts.reserve_ordinals.clone(),
            start_ordinal: sts.start_ordinal.unwrap_or(0),
            uid: sts.uid().to_owned(),
        })
    }

    /// Whether `ordinal` is one of the replica ordinals (§3.2 step 5): the first `replicas` integers from the
    /// start ordinal that are not reserved.
    pub fn has_replica_ordinal(&self, ordinal: i64) -> bool {
        let start = i64::from(self.start_ordinal);
        if ordinal < start || self.replicas <= 0 {
            return false;
        }
        let reserved = reserved_ranges(&self.reserve_ordinals);
        if reserved.iter().any(|&(a, b)| a <= ordinal && ordinal <= b) {
            return false;
        }
        // Reserved ordinals in [start, ordinal): the ordinal's rank among the replica ordinals is what
        // precedes it less those.
        let skipped: i64 = reserved
            .iter()
            .map(|&(a, b)| (b.min(ordinal - 1) - a.max(start) + 1).max(0))
            .sum();
        ordinal - start - skipped < i64::from(self.replicas)
    }
}

/// `GetReserveOrdinalIntSet` as merged, disjoint, sorted ranges: integers, and `"a-b"` strings (`a <= b`);
/// one string that is not such a range makes the whole set empty (OpenKruise returns nil).
fn reserved_ranges(values: &[IntOrString]) -> Vec<(i64, i64)> {
    let mut ranges = Vec::with_capacity(values.len());
    for value in values {
        match value {
            IntOrString::Int(i) => ranges.push((i64::from(*i), i64::from(*i))),
            IntOrString::String(s) => match parse_range(s) {
                Some(range) => ranges.push(range),
                None => return Vec::new(),
            },
        }
    }
    ranges.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// `ParseRange`: exactly two `strconv.Atoi` integers around one `-`, the first not above the second.
fn parse_range(s: &str) -> Option<(i64, i64)> {
    let mut parts = s.split('-');
    let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    let (a, b) = (atoi(a)?, atoi(b)?);
    (a <= b).then_some((a, b))
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, in range.
fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `parseStsPodIndex`: the integer after the last `-` of a pod name (the whole name without one).
pub fn ordinal_of(pod_name: &str) -> Option<i64> {
    atoi(
        pod_name
            .rsplit_once('-')
            .map_or(pod_name, |(_, suffix)| suffix),
    )
}

/// The target's pods among `pods` (its namespace's): active, with an ownerReference of the target's uid;
/// none at all when it has 0 replicas (OpenKruise's pod finder, §3.2 step 2).
pub fn target_pods(pods: &[Arc<SlimPod>], target: &Target) -> Vec<Arc<SlimPod>> {
    if target.replicas == 0 {
        return Vec::new();
    }
    pods.iter()
        .filter(|p| p.is_active())
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == target.uid)
        })
        .cloned()
        .collect()
}

/// `podutil.IsPodReady`: condition `Ready` is `True`.
pub fn is_ready(pod: &SlimPod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The node of a pod that is recorded: ready and scheduled.
fn recorded_node(pod: &SlimPod) -> Option<&str> {
    let node = pod.spec.as_ref()?.node_name.as_deref()?;
    (!node.is_empty() && is_ready(pod)).then_some(node)
}

/// The topology keys (required ∪ preferred) and the annotation keys of a PersistentPodState (§3.2 step 3).
pub fn keys(pps: &PersistentPodState) -> (BTreeSet<String>, BTreeSet<String>) {
    let spec = &pps.spec;
    let topology = spec
        .required_persistent_topology
        .iter()
        .flat_map(|t| &t.keys)
        .chain(
            spec.preferred_persistent_topology
                .iter()
                .flat_map(|t| &t.preference.keys),
        )
        .cloned()
        .collect();
    let annotations = spec
        .persistent_pod_annotations
        .iter()
        .map(|a| a.key.clone())
        .collect();
    (topology, annotations)
}

/// Whether the annotations recorded for a pod on `node` are up to date (§3.2 step 4): same node, and no spec
/// change since the status was written.
fn annotations_current(pps: &PersistentPodState, entry: Option<&PodState>, node: &str) -> bool {
    let seen = pps
        .status
        .as_ref()
        .is_some_and(|s| s.observed_generation == pps.metadata.generation.unwrap_or(0));
    seen && entry.is_some_and(|e| e.node_name == node)
}

/// The pods whose annotations must be read for [`compute`] (the pod cache does not hold them): ready and
/// scheduled pods whose annotations are not up to date, when the PersistentPodState lists annotation keys.
pub fn annotation_reads(pps: &PersistentPodState, pods: &[Arc<SlimPod>]) -> Vec<String> {
    if pps.spec.persistent_pod_annotations.is_empty() {
        return Vec::new();
    }
    let entries = pps.status.as_ref().map(|s| &s.pod_states);
    pods.iter()
        .filter_map(|pod| {
            let name = pod.metadata.name.as_deref()?;
            let node = recorded_node(pod)?;
            let entry = entries.and_then(|e| e.get(name));
            (!annotations_current(pps, entry, node)).then(|| name.to_owned())
        })
        .collect()
}

/// The labels among the keys asked of a Node by name; `None` when the Node is not known.
pub type NodeLabels<'a> = &'a dyn Fn(&str, &BTreeSet<String>) -> Option<BTreeMap<String, String>>;

/// What [`compute`] reads besides the PersistentPodState.
pub struct Inputs<'a> {
    /// The target, `None` when it is not found or being deleted.
    pub target: Option<&'a Target>,
    /// Its pods ([`target_pods`]).
    pub pods: &'a [Arc<SlimPod>],
    /// The labels of a Node among the keys asked, `None` when the Node is not known.
    pub node_labels: NodeLabels<'a>,
    /// The annotations of the pods [`annotation_reads`] named, as read; a pod missing here (gone) keeps
    /// its entry.
    pub pod_annotations: &'a BTreeMap<String, BTreeMap<String, String>>,
}

/// The status computed, and whether an entry waits for a Node the cache does not know yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Computed {
    /// The status to have.
    pub status: PersistentPodStateStatus,
    /// A ready pod's Node was not found: reconcile again shortly (§3.2 step 4).
    pub missing_node: bool,
}

/// The status of `pps` (§3.2 steps 1-6).
pub fn compute(pps: &PersistentPodState, inputs: &Inputs<'_>) -> Computed {
    let observed_generation = pps.metadata.generation.unwrap_or(0);
    let Some(target) = inputs.target else {
        return Computed {
            status: PersistentPodStateStatus {
                observed_generation,
                pod_states: BTreeMap::new(),
            },
            missing_node: false,
        };
    };
    let mut pod_states = pps
        .status
        .as_ref()
        .map(|s| s.pod_states.clone())
        .unwrap_or_default();
    let (topology_keys, annotation_keys) = keys(pps);
    let mut missing_node = false;
    for pod in inputs.pods {
        let (Some(name), Some(node)) = (pod.metadata.name.as_deref(), recorded_node(pod)) else {
            continue;
        };
        let entry = pod_states.get(name);
        let same_node = entry.is_some_and(|e| e.node_name == node);
        let topology_current = same_node
            && entry.is_some_and(|e| {
                e.node_topology_labels.len() == topology_keys.len()
                    && e.node_topology_labels
                        .keys()
                        .all(|k| topology_keys.contains(k))
            });
        let annotations_current = annotations_current(pps, entry, node);
        if topology_current && annotations_current {
            continue;
        }
        let annotations = match entry {
            Some(e) if annotations_current => e.annotations.clone(),
            _ if annotation_keys.is_empty() => BTreeMap::new(),
            _ => match inputs.pod_annotations.get(name) {
                Some(read) => read
                    .iter()
                    .filter(|(k, _)| annotation_keys.contains(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                None => continue,
            },
        };
        let node_topology_labels = match entry {
            Some(e) if topology_current => e.node_topology_labels.clone(),
            _ => match (inputs.node_labels)(node, &topology_keys) {
                Some(labels) => labels,
                None => {
                    missing_node = true;
                    continue;
                }
            },
        };
        pod_states.insert(
            name.to_owned(),
            PodState {
                node_name: node.to_owned(),
                node_topology_labels,
                annotations,
            },
        );
    }
    let retention = pps.spec.persistent_pod_state_retention_policy.as_deref();
    if retention != Some(RETENTION_WHEN_DELETED) {
        let present: BTreeSet<&str> = inputs
            .pods
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .collect();
        pod_states.retain(|name, _| match ordinal_of(name) {
            None => true,
            Some(ordinal) => target.has_replica_ordinal(ordinal) || present.contains(name.as_str()),
        });
    }
    Computed {
        status: PersistentPodStateStatus {
            observed_generation,
            pod_states,
        },
        missing_node,
    }
}

/// Whether `computed` is what the PersistentPodState reports already (no status: generation 0, no entry).
pub fn unchanged(
    current: Option<&PersistentPodStateStatus>,
    computed: &PersistentPodStateStatus,
) -> bool {
    current.cloned().unwrap_or_default() == *computed
}

#[cfg(test)]
mod tests;
