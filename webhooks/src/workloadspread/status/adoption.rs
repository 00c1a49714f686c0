//! Adoption of pods created before their WorkloadSpread (spec/workloadspread.md §6.2 step 2): a scheduled pod
//! whose annotation names no subset of this WorkloadSpread is placed in the matching subset with the
//! strictly highest score, and annotated so (with the subset patch's `metadata`).
//!
//! A subset *matches* a pod on its node when every taint of the node (all effects) is tolerated by the pod's
//! and the subset's tolerations together, and, if the subset has a required term, the node matches the pod's
//! required terms with the subset's expressions and fields ANDed into each (the subset's term alone when the
//! pod has none). Its *score* is `100 × (weights of its preferred terms the node matches) + 10 × (its patch
//! changes nothing of the pod's spec and labels) + (1 if it has room left)`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration,
};
use serde_json::{Value, json};

use crate::api::workloadspread::{MATCHED_WORKLOADSPREAD_ANNOTATION, WorkloadSpread};
use crate::json::strategic_merge::{self, POD};

/// The WorkloadSpread annotation that stops copying the subset patch's metadata onto adopted pods.
pub const IGNORE_PATCH_EXISTING_PODS_METADATA: &str =
    "workloadspread.kruise.io/ignore-patch-existing-pods-metadata";

/// Kubernetes' `Toleration.ToleratesTaint`.
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if toleration
        .effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    if toleration
        .key
        .as_deref()
        .is_some_and(|k| !k.is_empty() && k != taint.key)
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// One node-selector requirement against a value (`None`: the label is absent).
fn requirement(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), [bound]) = (value.and_then(number), values) else {
                return false;
            };
            let Some(bound) = number(bound) else {
                return false;
            };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// Whether `node` matches one term (an empty term matches nothing, as in Kubernetes).
fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node.metadata.labels.as_ref();
    let name = node.metadata.name.as_deref();
    exprs
        .iter()
        .all(|r| requirement(r, labels.and_then(|l| l.get(&r.key)).map(String::as_str)))
        && fields.iter().all(|r| {
            r.key == "metadata.name"
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && requirement(r, name)
        })
}

fn decode<T: serde::de::DeserializeOwned + Default>(value: Option<&Value>) -> T {
    value
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Whether the subset's patch leaves the pod's spec and labels as they are (the pod already has it).
fn patch_already_applied(patch: &str, pod: &Value) -> bool {
    let Ok(patch) = serde_json::from_str::<Value>(patch) else {
        return false;
    };
    let Ok(patched) = strategic_merge::apply(pod.clone(), patch, POD) else {
        return false;
    };
    patched.get("spec") == pod.get("spec")
        && patched.pointer("/metadata/labels") == pod.pointer("/metadata/labels")
}

/// The subset to adopt `pod` (its whole JSON) into on `node`, given the room left per subset (`quotas`),
/// or `None` when no subset matches.
pub fn choose_subset(
    ws: &WorkloadSpread,
    pod: &Value,
    node: &Node,
    quotas: &BTreeMap<String, i64>,
) -> Option<String> {
    let pod_tolerations: Vec<Toleration> = decode(pod.pointer("/spec/tolerations"));
    let pod_terms: Vec<NodeSelectorTerm> = decode(pod.pointer(
        "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
    ));
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    let mut best: Option<(i64, &str)> = None;
    for subset in &ws.spec.subsets {
        let tolerated = taints.iter().all(|taint| {
            pod_tolerations
                .iter()
                .chain(&subset.tolerations)
                .any(|t| tolerates(t, taint))
        });
        if !tolerated {
            continue;
        }
        if let Some(required) = &subset.required_node_selector {
            let terms: Vec<NodeSelectorTerm> = if pod_terms.is_empty() {
                vec![required.clone()]
            } else {
                pod_terms
                    .iter()
                    .map(|t| {
                        let mut t = t.clone();
                        let and =
                            |a: &mut Option<Vec<NodeSelectorRequirement>>,
                             b: &Option<Vec<NodeSelectorRequirement>>| {
                                if let Some(b) = b {
                                    a.get_or_insert_with(Vec::new).extend(b.iter().cloned());
                                }
                            };
                        and(&mut t.match_expressions, &required.match_expressions);
                        and(&mut t.match_fields, &required.match_fields);
                        t
                    })
                    .collect()
            };
            if !terms.iter().any(|t| term_matches(t, node)) {
                continue;
            }
        }
        let preferred: i64 = subset
            .preferred_node_selector
            .iter()
            .filter(|p| p.weight != 0 && term_matches(&p.preference, node))
            .map(|p| i64::from(p.weight))
            .sum();
        let patched = subset
            .patch_text()
            .is_some_and(|p| patch_already_applied(p, pod));
        let room = quotas.get(&subset.name).is_some_and(|q| *q > 0);
        let score = preferred * 100 + if patched { 10 } else { 0 } + i64::from(room);
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, &subset.name));
        }
    }
    best.map(|(_, name)| name.to_owned())
}

/// The strategic-merge patch that adopts a pod into `subset`: the subset patch's `metadata` (unless the
/// WorkloadSpread says [`IGNORE_PATCH_EXISTING_PODS_METADATA`]) and the matched-workloadspread annotation
/// (no `uid`).
pub fn adoption_patch(ws: &WorkloadSpread, subset: &str) -> Value {
    let ignore = ws
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(IGNORE_PATCH_EXISTING_PODS_METADATA))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let mut metadata = if ignore {
        json!({})
    } else {
        ws.spec
            .subsets
            .iter()
            .find(|s| s.name == subset)
            .and_then(|s| s.patch_text())
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| p.get("metadata").cloned())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}))
    };
    let name = ws.metadata.name.as_deref().unwrap_or_default();
    // Compact JSON, keys in this order (§3).
    let value = format!(
        "{{\"name\":{},\"subset\":{}}}",
        Value::from(name),
        Value::from(subset)
    );
    if !metadata.get("annotations").is_some_and(Value::is_object) {
        metadata["annotations"] = json!({});
    }
    metadata["annotations"][MATCHED_WORKLOADSPREAD_ANNOTATION] = Value::from(value);
    json!({ "metadata": metadata })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(extra: Value) -> WorkloadSpread {
        let mut v = json!({"metadata": {"name": "ws", "namespace": "ns"},
            "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
            "subsets": [
                {"name": "a", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                 "tolerations": [{"key": "dedicated", "operator": "Exists"}], "maxReplicas": 2},
                {"name": "b", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]},
                 "maxReplicas": 3},
                {"name": "c"}]}});
        for (k, val) in extra.as_object().into_iter().flatten() {
            v[k] = val.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    fn node(labels: Value, taints: Value) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": "n1", "labels": labels}, "spec": {"taints": taints}}),
        )
        .unwrap()
    }

    fn pod() -> Value {
        json!({"metadata": {"name": "cs-old", "labels": {"app": "cs"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx"}]}})
    }

    fn quotas(a: i64, b: i64, c: i64) -> BTreeMap<String, i64> {
        [("a", a), ("b", b), ("c", c)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    #[test]
    fn scenario_33_the_earlier_of_two_equal_scores_wins() {
        // b: quota 1; c: quota 1; a: zone z1 does not match.
        let n = node(json!({"zone": "z2"}), json!([]));
        assert_eq!(
            choose_subset(
                &ws(json!({})),
                &pod(),
                &n,
                &quotas(2, 3, i64::from(i32::MAX))
            ),
            Some("b".into())
        );
        // b full: c has room, b does not.
        assert_eq!(
            choose_subset(&ws(json!({})), &pod(), &n, &quotas(2, 0, 5)),
            Some("c".into())
        );
    }

    #[test]
    fn a_tainted_node_needs_the_subsets_or_the_pods_toleration() {
        let n = node(
            json!({"zone": "z1"}),
            json!([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        );
        // Only a tolerates the taint.
        assert_eq!(
            choose_subset(&ws(json!({})), &pod(), &n, &quotas(0, 0, 0)),
            Some("a".into())
        );
        let n = node(
            json!({"zone": "z2"}),
            json!([{"key": "other", "effect": "NoExecute"}]),
        );
        assert_eq!(
            choose_subset(&ws(json!({})), &pod(), &n, &quotas(1, 1, 1)),
            None
        );
        let mut tolerant = pod();
        tolerant["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        assert_eq!(
            choose_subset(&ws(json!({})), &tolerant, &n, &quotas(1, 1, 1)),
            Some("b".into())
        );
    }

    #[test]
    fn the_pods_required_terms_are_anded_with_the_subsets() {
        let mut p = pod();
        p["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["p9"]}]}]}}});
        let n = node(json!({"zone": "z2", "pool": "p1"}), json!([]));
        // b's zone matches but the pod's pool term does not: only c (no required term) matches.
        assert_eq!(
            choose_subset(&ws(json!({})), &p, &n, &quotas(1, 1, 0)),
            Some("c".into())
        );
    }

    #[test]
    fn preferred_weights_and_an_applied_patch_score() {
        let w = ws(
            json!({"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "subsets": [
                {"name": "x", "maxReplicas": 5},
                {"name": "y", "patch": {"metadata": {"labels": {"app": "cs"}}}},
                {"name": "z", "preferredNodeSelector": [{"weight": 1, "preference":
                    {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}]}}),
        );
        let n = node(json!({"zone": "z2"}), json!([]));
        let q: BTreeMap<String, i64> = [("x", 5), ("y", 5), ("z", 0)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        // x: 1, y: 10 + 1, z: 100.
        assert_eq!(choose_subset(&w, &pod(), &n, &q), Some("z".into()));
        let n = node(json!({}), json!([]));
        assert_eq!(choose_subset(&w, &pod(), &n, &q), Some("y".into()));
    }

    #[test]
    fn gt_lt_and_match_fields() {
        let r = |op: &str, v: &str| NodeSelectorRequirement {
            key: "k".into(),
            operator: op.into(),
            values: Some(vec![v.into()]),
        };
        assert!(requirement(&r("Gt", "3"), Some("4")));
        assert!(!requirement(&r("Gt", "3"), Some("3")));
        assert!(requirement(&r("Lt", "3"), Some("2")));
        assert!(!requirement(&r("Lt", "x"), Some("2")));
        let n = node(json!({}), json!([]));
        let by_name: NodeSelectorTerm = serde_json::from_value(json!({"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}))
        .unwrap();
        assert!(term_matches(&by_name, &n));
        assert!(!term_matches(&NodeSelectorTerm::default(), &n));
    }

    #[test]
    fn the_adoption_patch_carries_the_subset_metadata_unless_ignored() {
        let w = ws(
            json!({"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "subsets": [{"name": "b", "patch": {"metadata": {"labels": {"subset": "b"},
                "annotations": {"team": "x"}}, "spec": {"priorityClassName": "low"}}}]}}),
        );
        assert_eq!(
            adoption_patch(&w, "b"),
            json!({"metadata": {"labels": {"subset": "b"}, "annotations": {"team": "x",
                MATCHED_WORKLOADSPREAD_ANNOTATION: "{\"name\":\"ws\",\"subset\":\"b\"}"}}})
        );
        let mut ignored = w.clone();
        ignored.metadata.annotations = Some(
            [(
                IGNORE_PATCH_EXISTING_PODS_METADATA.to_owned(),
                "True".to_owned(),
            )]
            .into(),
        );
        assert_eq!(
            adoption_patch(&ignored, "b"),
            json!({"metadata": {"annotations": {
                MATCHED_WORKLOADSPREAD_ANNOTATION: "{\"name\":\"ws\",\"subset\":\"b\"}"}}})
        );
    }
}
