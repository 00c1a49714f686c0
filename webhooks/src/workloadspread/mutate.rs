//! The pod mutation of a chosen subset (spec/workloadspread.md §5.5), on the pod as a JSON tree so that
//! every field the request carried survives (DECISIONS 13).

use serde_json::{Map, Value, json};

use super::annotation::{ANNOTATION, MatchedWorkloadSpread};
use crate::api::workloadspread::WorkloadSpreadSubset;
use crate::json::strategic_merge::{self, POD};

/// The object at `key` of `map`, made an empty object first when absent or not an object.
fn object_at<'m>(map: &'m mut Map<String, Value>, key: &str) -> &'m mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("made an object above")
}

/// The list at `key` of `map`, made an empty list first when absent or not a list.
fn list_at<'m>(map: &'m mut Map<String, Value>, key: &str) -> &'m mut Vec<Value> {
    let slot = map.entry(key).or_insert_with(|| json!([]));
    if !slot.is_array() {
        *slot = json!([]);
    }
    slot.as_array_mut().expect("made a list above")
}

fn to_values<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect()
}

/// Applies `subset` to `pod` (steps 1-6 of §5.5) and stamps the annotation `matched`.
///
/// # Errors
/// Why the subset's `patch` does not apply to the pod (the pod create then fails with 500, as OpenKruise).
pub fn apply(
    pod: Value,
    subset: &WorkloadSpreadSubset,
    matched: &MatchedWorkloadSpread,
) -> Result<Value, String> {
    let mut pod = match pod {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let spec = object_at(&mut pod, "spec");
    // 1. Tolerations, appended without de-duplication.
    if !subset.tolerations.is_empty() {
        list_at(spec, "tolerations").extend(to_values(&subset.tolerations));
    }
    // 2. affinity.nodeAffinity always exists afterwards.
    let node_affinity = object_at(object_at(spec, "affinity"), "nodeAffinity");
    // 3. Preferred terms appended.
    if !subset.preferred_node_selector.is_empty() {
        list_at(
            node_affinity,
            "preferredDuringSchedulingIgnoredDuringExecution",
        )
        .extend(to_values(&subset.preferred_node_selector));
    }
    // 4. The required term ANDed into every existing term, or the only term.
    if let Some(required) = &subset.required_node_selector {
        let selector = object_at(
            node_affinity,
            "requiredDuringSchedulingIgnoredDuringExecution",
        );
        let terms = selector
            .get_mut("nodeSelectorTerms")
            .and_then(Value::as_array_mut)
            .filter(|t| !t.is_empty());
        match terms {
            None => {
                let term = serde_json::to_value(required).unwrap_or_else(|_| json!({}));
                selector.insert("nodeSelectorTerms".into(), json!([term]));
            }
            Some(terms) => {
                let expressions =
                    to_values(required.match_expressions.as_deref().unwrap_or_default());
                let fields = to_values(required.match_fields.as_deref().unwrap_or_default());
                for term in terms {
                    if !term.is_object() {
                        *term = json!({});
                    }
                    let term = term.as_object_mut().expect("made an object above");
                    // Go appends to nil and leaves nil nil: no key for nothing added.
                    if !expressions.is_empty() {
                        list_at(term, "matchExpressions").extend(expressions.iter().cloned());
                    }
                    if !fields.is_empty() {
                        list_at(term, "matchFields").extend(fields.iter().cloned());
                    }
                }
            }
        }
    }
    // 5. The patch, as a strategic merge patch on the Pod schema; a new priorityClassName clears priority.
    let mut pod = Value::Object(pod);
    if let Some(text) = subset.patch_text() {
        let patch: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let class_before = pod.pointer("/spec/priorityClassName").cloned();
        pod = strategic_merge::apply(pod, patch, POD).map_err(|e| e.to_string())?;
        if pod.pointer("/spec/priorityClassName").cloned() != class_before
            && let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.remove("priority");
        }
    }
    // 6. Labels and annotations exist; the annotation is set last, so no patch overrides it.
    let Value::Object(map) = &mut pod else {
        return Err("the patched pod is not an object".into());
    };
    let metadata = object_at(map, "metadata");
    object_at(metadata, "labels");
    object_at(metadata, "annotations").insert(ANNOTATION.into(), Value::String(matched.to_json()));
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn subset(value: Value) -> WorkloadSpreadSubset {
        serde_json::from_value(value).unwrap()
    }

    fn matched(subset: &str) -> MatchedWorkloadSpread {
        MatchedWorkloadSpread {
            name: "ws".into(),
            subset: subset.into(),
            uid: None,
        }
    }

    #[test]
    fn scenario_1_toleration_required_term_and_annotation() {
        let a = subset(json!({"name": "a",
            "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}], "maxReplicas": 2}));
        let pod = json!({"metadata": {"name": "cs-aaaaa", "x-unknown": 1},
            "spec": {"containers": [{"name": "app", "image": "nginx", "x-extra": true}],
                     "tolerations": [{"key": "t", "operator": "Exists"}]}});
        let out = apply(pod, &a, &matched("a")).unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "cs-aaaaa", "x-unknown": 1, "labels": {},
                    "annotations": {"apps.kruise.io/matched-workloadspread": "{\"name\":\"ws\",\"subset\":\"a\"}"}},
                "spec": {"containers": [{"name": "app", "image": "nginx", "x-extra": true}],
                    "tolerations": [{"key": "t", "operator": "Exists"}, {"key": "dedicated", "operator": "Exists"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]}}}}})
        );
    }

    #[test]
    fn scenario_11_required_expressions_are_anded_into_each_term() {
        let b = subset(json!({"name": "b",
            "requiredNodeSelector": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["p1"]}]},
            "preferredNodeSelector": [{"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]}));
        let zone = |z: &str| json!({"key": "zone", "operator": "In", "values": [z]});
        let pool = json!({"key": "pool", "operator": "In", "values": ["p1"]});
        let pod = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [zone("z1")]}, {"matchExpressions": [zone("z3")]}]}}}}});
        let out = apply(pod, &b, &matched("b")).unwrap();
        assert_eq!(
            out["spec"]["affinity"]["nodeAffinity"],
            json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [zone("z1"), pool.clone()]},
                    {"matchExpressions": [zone("z3"), pool]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]})
        );
    }

    #[test]
    fn scenario_12_an_empty_node_affinity_is_materialised() {
        let c = subset(json!({"name": "c"}));
        let out = apply(json!({"spec": {"containers": []}}), &c, &matched("c")).unwrap();
        assert_eq!(out["spec"]["affinity"], json!({"nodeAffinity": {}}));
    }

    /// Scenario 13. The spec's text lists the env as `[X=1, ZONE=z1]`; Kubernetes' strategic merge (and so
    /// OpenKruise, which calls `strategicpatch.StrategicMergePatch`) orders a merged list with
    /// `normalizeElementOrder` / `mergeSortedSlice`: an element only the patch has is placed before the
    /// original-only elements it meets, because `less` is true only when both are in the original. So the
    /// real result is `[ZONE=z1, X=1]`: the same set, the patch's element first.
    #[test]
    fn scenario_13_patch_merges_labels_and_env_by_name() {
        let a = subset(
            json!({"name": "a", "patch": {"metadata": {"labels": {"subset": "a"}},
            "spec": {"containers": [{"name": "app", "env": [{"name": "ZONE", "value": "z1"}]}]}}}),
        );
        let pod = json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "env": [{"name": "X", "value": "1"}]},
                                    {"name": "log", "image": "busybox"}]}});
        let out = apply(pod, &a, &matched("a")).unwrap();
        assert_eq!(
            out["metadata"]["labels"],
            json!({"app": "web", "subset": "a"})
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "app", "env": [{"name": "ZONE", "value": "z1"}, {"name": "X", "value": "1"}]},
                   {"name": "log", "image": "busybox"}])
        );
    }

    #[test]
    fn scenario_14_a_new_priority_class_clears_priority_the_same_keeps_it() {
        let low = subset(json!({"name": "a", "patch": {"spec": {"priorityClassName": "low"}}}));
        let pod = json!({"spec": {"priorityClassName": "high", "priority": 10000}});
        let out = apply(pod.clone(), &low, &matched("a")).unwrap();
        assert_eq!(out["spec"]["priorityClassName"], "low");
        assert!(out["spec"].get("priority").is_none());
        let same = subset(json!({"name": "a", "patch": {"spec": {"priorityClassName": "high"}}}));
        let out = apply(pod, &same, &matched("a")).unwrap();
        assert_eq!(out["spec"]["priority"], 10000);
    }

    #[test]
    fn patch_merge_rules_on_pod_lists() {
        // volumes by name, volumeMounts by mountPath, tolerations (no strategy) replaced, null deletes.
        let p = subset(json!({"name": "a", "patch": {
            "metadata": {"annotations": {"drop": null}},
            "spec": {"volumes": [{"name": "data", "emptyDir": {"medium": "Memory"}}],
                     "containers": [{"name": "app", "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}],
                     "nodeSelector": {"pool": "p1"}}}}));
        let pod = json!({"metadata": {"annotations": {"drop": "x", "keep": "y"}},
            "spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}],
                     "containers": [{"name": "app", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}});
        let out = apply(pod, &p, &matched("a")).unwrap();
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name": "data", "emptyDir": {"medium": "Memory"}}, {"name": "cfg", "configMap": {"name": "c"}}])
        );
        assert_eq!(
            out["spec"]["containers"][0]["volumeMounts"],
            json!([{"name": "data", "mountPath": "/data", "readOnly": true}])
        );
        assert_eq!(out["spec"]["nodeSelector"], json!({"pool": "p1"}));
        assert_eq!(
            out["metadata"]["annotations"],
            json!({"keep": "y", "apps.kruise.io/matched-workloadspread": "{\"name\":\"ws\",\"subset\":\"a\"}"})
        );
    }

    #[test]
    fn patch_merges_init_containers_by_name_and_replaces_lists_without_merge_key() {
        // spec §5.5 step 5: initContainers merge by name; tolerations, a container's command and the
        // affinity term lists have no patch strategy and are replaced whole.
        let p = subset(json!({"name": "a",
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "patch": {"spec": {
                "initContainers": [{"name": "init", "command": ["sh", "-c", "true"]}, {"name": "setup", "image": "busybox"}],
                "tolerations": [{"key": "gpu", "operator": "Exists"}]}}}));
        let pod = json!({"spec": {
            "initContainers": [{"name": "init", "image": "alpine", "command": ["echo", "hi"]}],
            "tolerations": [{"key": "old", "operator": "Exists"}]}});
        let out = apply(pod, &p, &matched("a")).unwrap();
        assert_eq!(
            out["spec"]["initContainers"],
            json!([{"name": "init", "image": "alpine", "command": ["sh", "-c", "true"]},
                   {"name": "setup", "image": "busybox"}])
        );
        // The subset's tolerations were appended first (step 1); the patch then replaces the list (step 5).
        assert_eq!(
            out["spec"]["tolerations"],
            json!([{"key": "gpu", "operator": "Exists"}])
        );
    }

    #[test]
    fn scenario_15_an_invalid_patch_is_an_error_not_a_panic() {
        let bad = subset(json!({"name": "a", "patch": {"spec": {"containers": "x"}}}));
        let err = apply(
            json!({"spec": {"containers": [{"name": "app"}]}}),
            &bad,
            &matched("a"),
        )
        .unwrap_err();
        assert!(err.contains("spec.containers"), "{err}");
        let not_object = subset(json!({"name": "a", "patch": [1, 2]}));
        assert!(apply(json!({}), &not_object, &matched("a")).is_err());
    }

    #[test]
    fn a_patch_cannot_override_the_annotation() {
        let p = subset(json!({"name": "a", "patch": {"metadata": {"annotations": {
            "apps.kruise.io/matched-workloadspread": "forged"}}}}));
        let out = apply(json!({}), &p, &matched("a")).unwrap();
        assert_eq!(
            out["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"],
            "{\"name\":\"ws\",\"subset\":\"a\"}"
        );
    }
}
