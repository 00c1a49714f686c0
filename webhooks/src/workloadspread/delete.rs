//! The WorkloadSpread step of `/validate-pod` at pod DELETE and eviction (spec/workloadspread.md §5.8,
//! §5.9): the pending deletion recorded in the WorkloadSpread's versioned status, so that the subset's room
//! is counted back before the controller sees the pod go.
//!
//! Differences from OpenKruise: a dry run records nothing, whether flagged on the request, in the options or
//! in the eviction's `deleteOptions` (DECISIONS 4); an eviction of a pod missing from the cache is allowed
//! with a warning instead of OpenKruise's 400 (DECISIONS 9).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;
use serde_json::Value;

use super::annotation::{ANNOTATION, MatchedWorkloadSpread};
use super::subset;
use super::workload::pod_version;
use crate::admission::{AdmissionRequest, Operation};
use crate::api::pod::SlimPod;
use crate::api::workloadspread::{WorkloadSpread, WorkloadSpreadStatus};
use crate::verdict::{Denial, SpreadRecord, StatusIntent};
use crate::view::WorkloadSpreadView;
use crate::{ClusterView, Verdict};

/// A deletion the step records (or looks at).
#[derive(Debug, Clone)]
pub struct Deletion {
    /// The pod as it was before the deletion.
    pub pod: Arc<SlimPod>,
    /// `DELETE` or `EVICT`.
    pub operation: &'static str,
}

/// `dryRun` of the options.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    #[serde(default)]
    dry_run: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Eviction {
    #[serde(default)]
    delete_options: Option<Options>,
}

fn dry(options: Option<&Options>) -> bool {
    options
        .and_then(|o| o.dry_run.as_ref())
        .is_some_and(|d| !d.is_empty())
}

fn bad_request(message: String) -> Box<Verdict> {
    Box::new(Verdict::deny(Denial {
        code: 400,
        reason: None,
        message,
    }))
}

/// What the step decides on, from a request (§5.8): `Ok(None)` when there is nothing to record (another
/// operation, a dry run, no old object); `Err` with the answer when the request is refused or allowed
/// with a warning as it stands.
pub fn classify(
    req: &AdmissionRequest,
    view: &(impl ClusterView + WorkloadSpreadView),
) -> Result<Option<Deletion>, Box<Verdict>> {
    if !req.resource.group.is_empty() || req.resource.resource != "pods" {
        return Ok(None);
    }
    match (req.operation, req.sub_resource.as_str()) {
        (Operation::Delete, "") => {
            let Some(old) = req.old_object() else {
                return Ok(None);
            };
            let pod: SlimPod = serde_json::from_str(old.get())
                .map_err(|e| bad_request(format!("decoding the pod: {e}")))?;
            let options = match &req.options {
                Some(raw) if raw.get().trim() != "null" => Some(
                    serde_json::from_str::<Options>(raw.get())
                        .map_err(|e| bad_request(format!("decoding the request options: {e}")))?,
                ),
                _ => None,
            };
            if req.dry_run == Some(true) || dry(options.as_ref()) {
                return Ok(None);
            }
            Ok(Some(Deletion {
                pod: Arc::new(pod),
                operation: "DELETE",
            }))
        }
        (Operation::Create, "eviction") => {
            let Some(raw) = req.object() else {
                return Err(bad_request("there is no content to decode".into()));
            };
            let eviction: Eviction = serde_json::from_str(raw.get())
                .map_err(|e| bad_request(format!("decoding the Eviction: {e}")))?;
            if req.is_dry_run() || dry(eviction.delete_options.as_ref()) {
                return Ok(None);
            }
            let namespace = req.namespace();
            let Some(pod) = view.pod(namespace, &req.name) else {
                // Said only where a WorkloadSpread could have recorded the pod.
                if view.workload_spreads(namespace).is_empty() {
                    return Ok(None);
                }
                let mut verdict = Verdict::allow();
                verdict.warnings.push(format!(
                    "Pod {:?} not found in namespace {namespace:?}: its eviction was not recorded in a WorkloadSpread (the controller reconciles it)",
                    req.name
                ));
                return Err(Box::new(verdict));
            };
            Ok(Some(Deletion {
                pod,
                operation: "EVICT",
            }))
        }
        _ => Ok(None),
    }
}

/// The annotation of a pod, when it names a WorkloadSpread (§5.9 step 1).
pub fn matched(pod: &SlimPod) -> Option<MatchedWorkloadSpread> {
    MatchedWorkloadSpread::parse(pod.annotations.get(ANNOTATION)?)
}

/// The WorkloadSpread a deletion would be recorded in, if any (§5.9 steps 1-4).
pub fn spread_for(
    deletion: &Deletion,
    view: &impl WorkloadSpreadView,
) -> Option<(Arc<WorkloadSpread>, MatchedWorkloadSpread)> {
    let pod = &*deletion.pod;
    let matched = matched(pod)?;
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("");
    let active =
        pod.metadata.deletion_timestamp.is_none() && phase != "Succeeded" && phase != "Failed";
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    if !active || controller.is_none() {
        return None;
    }
    let namespace = pod
        .metadata
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    // Not found: nothing to record (DECISIONS 7).
    let ws = view.workload_spread(namespace, &matched.name)?;
    // Short-cuts of creation: one unlimited subset, StatefulSet targets.
    if let [only] = ws.spec.subsets.as_slice()
        && only.max_replicas.is_none()
    {
        return None;
    }
    if ws
        .spec
        .target_ref
        .as_ref()
        .is_some_and(|t| t.kind == "StatefulSet")
    {
        return None;
    }
    Some((ws, matched))
}

/// The record of a deletion (§5.9 step 5), decided on the WorkloadSpread the view holds. `replicas`: the
/// target workload's replicas when the pod's version list must be initialised with percentages.
///
/// # Errors
/// Why the list cannot be initialised (a `maxReplicas` that cannot be evaluated, replicas unreadable).
pub fn record(
    deletion: &Deletion,
    view: &impl WorkloadSpreadView,
    replicas: Option<&Result<i32, String>>,
    now: &str,
) -> Result<Option<StatusIntent>, String> {
    let Some((ws, matched)) = spread_for(deletion, view) else {
        return Ok(None);
    };
    let pod = &*deletion.pod;
    let controller_kind = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.kind.as_str());
    let version = pod_version(controller_kind, &|k: &str| {
        pod.labels.get(k).map(str::to_owned)
    });
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut written = (*ws).clone();
    let status = written
        .status
        .get_or_insert_with(WorkloadSpreadStatus::default);
    if status
        .versioned_subset_statuses
        .get(&version)
        .is_none_or(Vec::is_empty)
    {
        let replicas = match replicas {
            Some(Ok(r)) => *r,
            Some(Err(e)) if subset::needs_replicas(&ws) => return Err(e.clone()),
            _ => 0,
        };
        let list = subset::initial_list(&ws, replicas)?;
        status
            .versioned_subset_statuses
            .insert(version.clone(), list);
    }
    let Some(list) = status.versioned_subset_statuses.get_mut(&version) else {
        return Ok(None);
    };
    if list
        .iter()
        .any(|s| s.creating_pods.contains_key(&name) || s.deleting_pods.contains_key(&name))
    {
        return Ok(None);
    }
    let Some(element) = list.iter_mut().find(|s| s.name == matched.subset) else {
        return Ok(None);
    };
    if element.missing_replicas == -1 {
        return Ok(None);
    }
    let now: Time = serde_json::from_value(Value::String(now.to_owned()))
        .map_err(|e| format!("request time {now:?}: {e}"))?;
    element.deleting_pods.insert(name.clone(), now);
    element.missing_replicas += 1;
    Ok(Some(StatusIntent::SpreadRecord(SpreadRecord {
        spread: written,
        pod: name,
        operation: deletion.operation,
        failure_code: 400,
    })))
}

/// The step on a request: an allow with the record to write, an allow without one, or a refusal (400)
/// when the record cannot be decided.
pub fn validate(
    req: &AdmissionRequest,
    view: &(impl ClusterView + WorkloadSpreadView),
    replicas: Option<&Result<i32, String>>,
    now: &str,
) -> Verdict {
    let deletion = match classify(req, view) {
        Ok(Some(deletion)) => deletion,
        Ok(None) => return Verdict::allow(),
        Err(answer) => return *answer,
    };
    match record(&deletion, view, replicas, now) {
        Ok(intent) => {
            let mut verdict = Verdict::allow();
            verdict.intents.extend(intent);
            verdict
        }
        Err(message) => *bad_request(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::FixtureCluster;
    use serde_json::json;

    const NOW: &str = "2025-01-01T00:00:00Z";

    fn cluster(status: Value, subsets: Value) -> FixtureCluster {
        let mut c = FixtureCluster::default();
        c.insert(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "ns", "resourceVersion": "10"},
            "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
                     "subsets": subsets},
            "status": status}))
            .unwrap();
        c
    }

    fn deletion(annotation: &str, phase: &str) -> Deletion {
        let pod: SlimPod = serde_json::from_value(json!({"metadata": {"name": "cs-aaaaa", "namespace": "ns",
            "annotations": {ANNOTATION: annotation},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
                "uid": "u", "controller": true}]},
            "status": {"phase": phase}}))
        .unwrap();
        Deletion {
            pod: Arc::new(pod),
            operation: "DELETE",
        }
    }

    fn written(intent: Option<StatusIntent>) -> Value {
        match intent {
            Some(StatusIntent::SpreadRecord(r)) => {
                assert_eq!(r.failure_code, 400);
                serde_json::to_value(&r.spread.status.unwrap().versioned_subset_statuses).unwrap()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_delete_adds_a_deleting_record_and_room() {
        let c = cluster(
            json!({"versionedSubsetStatuses": {"versionIgnored": [
                {"name": "a", "replicas": 2, "missingReplicas": 0}, {"name": "b", "replicas": 0, "missingReplicas": -1}]}}),
            json!([{"name": "a", "maxReplicas": 2}, {"name": "b"}]),
        );
        let intent = record(
            &deletion(r#"{"name":"ws","subset":"a"}"#, "Running"),
            &c,
            None,
            NOW,
        )
        .unwrap();
        assert_eq!(
            written(intent),
            json!({"versionIgnored": [
                {"name": "a", "replicas": 2, "missingReplicas": 1, "deletingPods": {"cs-aaaaa": NOW}},
                {"name": "b", "replicas": 0, "missingReplicas": -1}]})
        );
        // Unlimited subset, inactive pod, corrupt annotation, unknown WorkloadSpread: nothing.
        for (annotation, phase) in [
            (r#"{"name":"ws","subset":"b"}"#, "Running"),
            (r#"{"name":"ws","subset":"a"}"#, "Failed"),
            ("{corrupt", "Running"),
            (r#"{"name":"gone","subset":"a"}"#, "Running"),
        ] {
            assert_eq!(
                record(&deletion(annotation, phase), &c, None, NOW),
                Ok(None),
                "{annotation} {phase}"
            );
        }
    }

    #[test]
    fn an_empty_version_list_is_initialised_and_a_bad_percentage_is_a_clear_error() {
        let c = cluster(
            json!({}),
            json!([{"name": "a", "maxReplicas": "50%"}, {"name": "b"}]),
        );
        let intent = record(
            &deletion(r#"{"name":"ws","subset":"a"}"#, "Running"),
            &c,
            Some(&Ok(4)),
            NOW,
        )
        .unwrap();
        assert_eq!(
            written(intent),
            json!({"versionIgnored": [
                {"name": "a", "replicas": 0, "missingReplicas": 3, "deletingPods": {"cs-aaaaa": NOW}},
                {"name": "b", "replicas": 0, "missingReplicas": -1}]})
        );
        let bad = cluster(
            json!({}),
            json!([{"name": "a", "maxReplicas": "x%"}, {"name": "b"}]),
        );
        let err = record(
            &deletion(r#"{"name":"ws","subset":"a"}"#, "Running"),
            &bad,
            Some(&Ok(4)),
            NOW,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "WorkloadSpread ns/ws subset a: subset replicas (x%) should be correct percentage integer: strconv.ParseInt: parsing \"x\": invalid syntax"
        );
    }
}
