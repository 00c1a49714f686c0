//! The WorkloadSpread step of `/mutate-pod` at pod CREATE (spec/workloadspread.md §5.1-§5.6): the pod
//! filter, the WorkloadSpread that manages the pod, its subset, the pod mutation and the status record.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use super::SpreadFacts;
use super::annotation::MatchedWorkloadSpread;
use super::subset::{self, Choice, Placing};
use super::workload::{ChainEnd, WorkloadKinds, api_group, pod_version};
use crate::api::workloadspread::WorkloadSpread;
use crate::verdict::{SpreadRecord, StatusIntent};
use crate::view::WorkloadSpreadView;

/// What the step did to a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    /// The pod after the subset's mutation (`None`: unchanged).
    pub pod: Option<Value>,
    /// The status record the answer depends on.
    pub intent: Option<StatusIntent>,
    /// The WorkloadSpread that matched but had no room (DECISIONS 18): namespace and name.
    pub full: Option<(String, String)>,
}

impl Created {
    fn unchanged() -> Self {
        Self {
            pod: None,
            intent: None,
            full: None,
        }
    }
}

/// The warning of a pod admitted without a subset because every subset was full (DECISIONS 18).
pub fn full_warning(namespace: &str, name: &str) -> String {
    format!(
        "WorkloadSpread {namespace}/{name} manages this pod but every subset is full or unschedulable: the pod was admitted without a subset"
    )
}

/// The pod's controller owner reference: apiVersion, kind, name.
pub fn controller_of(pod: &Value) -> Option<(&str, &str, &str)> {
    pod.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            (text("apiVersion"), text("kind"), text("name"))
        })
}

/// Whether the pod is active: not being deleted, not `Succeeded` or `Failed`.
pub fn is_active(pod: &Value) -> bool {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    phase != "Succeeded"
        && phase != "Failed"
        && pod
            .pointer("/metadata/deletionTimestamp")
            .is_none_or(Value::is_null)
}

/// Whether the step looks further at the pod (§5.2): active, with a controller of a workload kind.
pub fn wants(pod: &Value, kinds: WorkloadKinds<'_>) -> bool {
    is_active(pod)
        && controller_of(pod).is_some_and(|(api_version, kind, _)| {
            api_group(api_version).is_some_and(|group| kinds.contains(group, kind))
        })
}

fn labels_of(pod: &Value) -> BTreeMap<String, String> {
    pod.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}

/// The WorkloadSpreads that may manage a pod of `facts`' owner chain: those whose target is in the chain,
/// or, when an owner is missing, every one of the namespace (those that could own it through that owner are
/// looked at, §5.3 step 4). In name order.
fn candidates(
    namespace: &str,
    view: &impl WorkloadSpreadView,
    facts: &SpreadFacts,
) -> Vec<Arc<WorkloadSpread>> {
    if matches!(facts.chain.end, ChainEnd::NotFound(_)) {
        return view.workload_spreads(namespace);
    }
    let mut candidates: Vec<Arc<WorkloadSpread>> = Vec::new();
    for link in &facts.chain.links {
        candidates.extend(view.workload_spreads_targeting(namespace, &link.kind, &link.name));
    }
    if facts.chain.links.len() > 1 {
        candidates.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        candidates.dedup_by(|a, b| a.metadata.name == b.metadata.name);
    }
    candidates
}

/// Some WorkloadSpread of the namespace may manage a pod of the owner chain ([`may_manage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MayManage {
    /// Whether no subset of those WorkloadSpreads patches with a directive (`$patch`, `$retainKeys`,
    /// `$setElementOrder`, …; read on the text, so a `"$` anywhere counts): without one, a patch changes
    /// only the members it names, and the step may run on part of the pod.
    pub plain_patches: bool,
}

/// Whether any WorkloadSpread may manage a pod of `facts`' owner chain in `namespace`, and how their subsets
/// patch: `None` when none may, the step then has nothing to look at in the pod (the common case of a
/// namespace with WorkloadSpreads for other workloads), and the caller need not build the pod's tree.
pub fn may_manage(
    namespace: &str,
    view: &impl WorkloadSpreadView,
    facts: &SpreadFacts,
) -> Option<MayManage> {
    let kinds = WorkloadKinds {
        custom: &facts.custom,
    };
    let candidates = candidates(namespace, view, facts);
    subset::may_match(&candidates, &facts.chain, kinds).then(|| MayManage {
        plain_patches: candidates.iter().all(|ws| {
            ws.spec
                .subsets
                .iter()
                .all(|s| s.patch_text().is_none_or(|text| !text.contains("\"$")))
        }),
    })
}

/// The WorkloadSpread that manages the pod, if any (§5.2, §5.3).
///
/// # Errors
/// OpenKruise's NotFound text for a missing owner ([`subset::find`]).
pub fn spread_for(
    pod: &Value,
    namespace: &str,
    view: &impl WorkloadSpreadView,
    facts: &SpreadFacts,
) -> Result<Option<Arc<WorkloadSpread>>, String> {
    let kinds = WorkloadKinds {
        custom: &facts.custom,
    };
    if !wants(pod, kinds) {
        return Ok(None);
    }
    let spreads = candidates(namespace, view, facts);
    if spreads.is_empty() {
        return Ok(None);
    }
    subset::find(&spreads, &facts.chain, kinds, &labels_of(pod))
}

/// Runs the step on the pod (already past readiness-gate injection).
///
/// # Errors
/// A text for a 500 answer: a missing owner (§5.3 step 4), a `maxReplicas` that cannot be evaluated, the
/// workload's replicas that cannot be read, a subset `patch` that does not apply.
pub fn on_create(
    pod: &Value,
    namespace: &str,
    view: &impl WorkloadSpreadView,
    facts: &SpreadFacts,
    now: &str,
) -> Result<Created, String> {
    let Some(ws) = spread_for(pod, namespace, view, facts)? else {
        return Ok(Created::unchanged());
    };
    let ws_name = ws.metadata.name.clone().unwrap_or_default();
    let controller_kind = controller_of(pod).map(|(_, kind, _)| kind);
    let labels = labels_of(pod);
    let version = pod_version(controller_kind, &|k: &str| labels.get(k).cloned());
    let replicas = match &facts.replicas {
        Some(Ok(r)) => *r,
        Some(Err(e)) if subset::needs_replicas(&ws) => return Err(e.clone()),
        _ => 0,
    };
    let now_time: Time = serde_json::from_value(Value::String(now.to_owned()))
        .map_err(|e| format!("request time {now:?}: {e}"))?;
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let choice = subset::choose(
        &ws,
        Placing {
            name,
            version: &version,
            generated_uid: &facts.generated_uid,
            replicas,
            now: &now_time,
        },
    )?;
    let (subset_name, uid, write) = match choice {
        Choice::NoSubset { full } => {
            return Ok(Created {
                full: full.then(|| (namespace.to_owned(), ws_name)),
                ..Created::unchanged()
            });
        }
        Choice::Subset { subset, uid, write } => (subset, uid, write),
    };
    let intent = write.map(|spread| {
        StatusIntent::SpreadRecord(SpreadRecord {
            spread: *spread,
            pod: uid.clone().unwrap_or_else(|| name.to_owned()),
            operation: "CREATE",
            failure_code: 500,
        })
    });
    // The subset may have left the spec since the status was written: no mutation, no error.
    let Some(subset) = ws.spec.subsets.iter().find(|s| s.name == subset_name) else {
        return Ok(Created {
            intent,
            ..Created::unchanged()
        });
    };
    let matched = MatchedWorkloadSpread {
        name: ws_name,
        subset: subset_name,
        uid,
    };
    let mutated = super::mutate::apply(pod.clone(), subset, &matched)?;
    Ok(Created {
        pod: Some(mutated),
        intent,
        full: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_active_pods_with_a_workload_controller_are_looked_at() {
        let kinds = WorkloadKinds { custom: &[] };
        let owned = |api_version: &str, kind: &str| {
            json!({"metadata": {"ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": "n"},
                {"apiVersion": api_version, "kind": kind, "name": "x", "controller": true}]}})
        };
        assert!(wants(&owned("apps/v1", "ReplicaSet"), kinds));
        assert!(wants(
            &owned("apps.kruise.io/v1beta1", "StatefulSet"),
            kinds
        ));
        assert!(wants(&owned("batch/v1", "Job"), kinds));
        assert!(!wants(&owned("apps/v1", "DaemonSet"), kinds));
        assert!(!wants(&owned("apps/v1/x", "ReplicaSet"), kinds));
        assert!(!wants(&json!({"metadata": {}}), kinds));
        let mut done = owned("apps/v1", "ReplicaSet");
        done["status"] = json!({"phase": "Succeeded"});
        assert!(!wants(&done, kinds));
        let mut deleting = owned("apps/v1", "ReplicaSet");
        deleting["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        assert!(!wants(&deleting, kinds));
    }
}
