//! Which pod UPDATEs disrupt (spec/podunavailablebudget.md §7.2): a change of the spec, or an unavailable
//! label added; and which of those are in-place resizes (cpu or memory of regular containers, no restart).
//! Read on the pods' JSON as received, so every field of the spec counts, known to our types or not.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::api::podunavailablebudget::UNAVAILABLE_POD_LABEL_PREFIX;
use crate::quantity::Quantity;

/// A pod of the request as JSON.
pub type PodJson = Map<String, Value>;

fn labels(pod: &PodJson) -> impl Iterator<Item = &String> {
    pod.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|l| l.keys())
}

fn has_unavailable_label(pod: &PodJson) -> bool {
    labels(pod).any(|k| k.starts_with(UNAVAILABLE_POD_LABEL_PREFIX))
}

/// An unavailable label was added (none before, one now).
pub fn unavailable_label_added(old: &PodJson, new: &PodJson) -> bool {
    !has_unavailable_label(old) && has_unavailable_label(new)
}

fn spec(pod: &PodJson) -> &Value {
    pod.get("spec").unwrap_or(&Value::Null)
}

/// `unavailableChanged`: the spec differs, or an unavailable label was added. Metadata-only changes are
/// never gated.
pub fn unavailable_changed(old: &PodJson, new: &PodJson) -> bool {
    spec(old) != spec(new) || unavailable_label_added(old, new)
}

fn containers(pod: &PodJson) -> &[Value] {
    spec(pod)
        .get("containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn init_containers(pod: &PodJson) -> &[Value] {
    spec(pod)
        .get("initContainers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The spec with the `resources` of every regular container removed (init containers keep theirs).
fn spec_without_resources(pod: &PodJson) -> Value {
    let mut spec = spec(pod).clone();
    if let Some(list) = spec.get_mut("containers").and_then(Value::as_array_mut) {
        for container in list.iter_mut().filter_map(Value::as_object_mut) {
            container.remove("resources");
        }
    }
    spec
}

fn is_static(pod: &PodJson) -> bool {
    pod.get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get("kubernetes.io/config.source"))
        .and_then(Value::as_str)
        .is_some_and(|source| source != "api")
}

/// A container's `resources.<list>` (`requests` or `limits`), resource name to quantity; a value that is
/// not a quantity is kept as `None` (compared as text by the caller's equality).
fn resource_list(container: &Value, list: &str) -> Vec<(String, Option<Quantity>, Value)> {
    container
        .get("resources")
        .and_then(|r| r.get(list))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, v)| (name.clone(), Quantity::from_json(v).ok(), v.clone()))
        .collect()
}

/// The pod's QoS class (Kubernetes' `ComputePodQOS` over containers and init containers, cpu and memory).
pub fn qos_class(pod: &PodJson) -> &'static str {
    let supported = |name: &str| name == "cpu" || name == "memory";
    let mut requests: std::collections::BTreeMap<String, Quantity> = Default::default();
    let mut limits: std::collections::BTreeMap<String, Quantity> = Default::default();
    let mut guaranteed = true;
    for container in containers(pod).iter().chain(init_containers(pod)) {
        for (name, quantity, _) in resource_list(container, "requests") {
            if let Some(q) = quantity.filter(|q| supported(&name) && q.sign() > 0) {
                requests
                    .entry(name)
                    .and_modify(|sum| sum.add(&q))
                    .or_insert(q);
            }
        }
        let mut found = BTreeSet::new();
        for (name, quantity, _) in resource_list(container, "limits") {
            if let Some(q) = quantity.filter(|q| supported(&name) && q.sign() > 0) {
                found.insert(name.clone());
                limits
                    .entry(name)
                    .and_modify(|sum| sum.add(&q))
                    .or_insert(q);
            }
        }
        if !(found.contains("cpu") && found.contains("memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests
            .iter()
            .all(|(name, request)| limits.get(name) == Some(request))
        && requests.len() == limits.len()
    {
        return "Guaranteed";
    }
    "Burstable"
}

/// `resizeOK`: the update only changes cpu or memory of regular containers whose resize policy needs no
/// restart (absent, or `NotRequired`), and keeps the pod's QoS class; static pods never resize.
pub fn is_resize(old: &PodJson, new: &PodJson) -> bool {
    if unavailable_label_added(old, new)
        || spec_without_resources(old) != spec_without_resources(new)
        || is_static(old)
        || is_static(new)
        || qos_class(old) != qos_class(new)
    {
        return false;
    }
    let (old_containers, new_containers) = (containers(old), containers(new));
    if old_containers.len() != new_containers.len() {
        return false;
    }
    let name = |c: &Value| c.get("name").and_then(Value::as_str).map(str::to_owned);
    for new_container in new_containers {
        let Some(old_container) = old_containers
            .iter()
            .find(|c| name(c) == name(new_container))
        else {
            return false;
        };
        for list in ["requests", "limits"] {
            let before = resource_list(old_container, list);
            let after = resource_list(new_container, list);
            let names: BTreeSet<&String> = before.iter().chain(&after).map(|(n, _, _)| n).collect();
            for resource in names {
                let value = |l: &[(String, Option<Quantity>, Value)]| {
                    l.iter()
                        .find(|(n, _, _)| n == resource)
                        .map(|(_, q, raw)| (q.clone(), raw.clone()))
                };
                let changed = match (value(&before), value(&after)) {
                    (None, None) => false,
                    (Some((Some(a), _)), Some((Some(b), _))) => a != b,
                    (Some((_, a)), Some((_, b))) => a != b,
                    _ => true,
                };
                if changed && !resizes_in_place(new_container, resource) {
                    return false;
                }
            }
        }
    }
    true
}

/// Whether a change of `resource` on `container` is an in-place resize: cpu or memory, with a resize
/// policy for it that is absent, empty or `NotRequired`.
fn resizes_in_place(container: &Value, resource: &str) -> bool {
    if resource != "cpu" && resource != "memory" {
        return false;
    }
    let policy = container
        .get("resizePolicy")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("resourceName").and_then(Value::as_str) == Some(resource))
        .and_then(|p| p.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    policy.is_empty() || policy == "NotRequired"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: Value) -> PodJson {
        v.as_object().unwrap().clone()
    }

    fn with_resources(resources: Value) -> PodJson {
        pod(json!({"metadata": {"name": "p", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "a:1", "resources": resources}],
                     "initContainers": [{"name": "init", "image": "i:1"}]}}))
    }

    #[test]
    fn only_spec_changes_and_added_unavailable_labels_disrupt() {
        let old = with_resources(json!({}));
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"]["tier"] = json!("fe");
        assert!(!unavailable_changed(&old, &relabelled));
        let mut drained = old.clone();
        drained["metadata"]["labels"]["unavailable-pod.kruise.io/x"] = json!("1");
        assert!(unavailable_changed(&old, &drained));
        // Already carrying one: another is not an addition.
        let mut again = drained.clone();
        again["metadata"]["labels"]["unavailable-pod.kruise.io/y"] = json!("1");
        assert!(!unavailable_changed(&drained, &again));
        let mut image = old.clone();
        image["spec"]["containers"][0]["image"] = json!("a:2");
        assert!(unavailable_changed(&old, &image));
        assert!(!is_resize(&old, &image));
    }

    #[test]
    fn a_cpu_request_change_without_restart_is_a_resize() {
        let old = with_resources(json!({"requests": {"cpu": "100m"}}));
        let new = with_resources(json!({"requests": {"cpu": "200m"}}));
        assert_eq!(
            (qos_class(&old), qos_class(&new)),
            ("Burstable", "Burstable")
        );
        assert!(is_resize(&old, &new));
        // The same value spelt differently is no change.
        let same = with_resources(json!({"requests": {"cpu": "0.1"}}));
        assert!(is_resize(&old, &same));
    }

    #[test]
    fn restart_policies_qos_changes_and_other_resources_are_updates() {
        let old = with_resources(json!({"limits": {"memory": "1Gi"}}));
        let mut new = with_resources(json!({"limits": {"memory": "2Gi"}}));
        assert!(is_resize(&old, &new));
        new["spec"]["containers"][0]["resizePolicy"] =
            json!([{"resourceName": "memory", "restartPolicy": "RestartContainer"}]);
        let mut old_with_policy = old.clone();
        old_with_policy["spec"]["containers"][0]["resizePolicy"] =
            new["spec"]["containers"][0]["resizePolicy"].clone();
        assert!(!is_resize(&old_with_policy, &new));
        // BestEffort to Burstable.
        let none = with_resources(json!({}));
        let some = with_resources(json!({"requests": {"cpu": "100m"}}));
        assert!(!is_resize(&none, &some));
        // Not cpu or memory.
        let a = with_resources(json!({"requests": {"ephemeral-storage": "1Gi", "cpu": "1"}}));
        let b = with_resources(json!({"requests": {"ephemeral-storage": "2Gi", "cpu": "1"}}));
        assert!(!is_resize(&a, &b));
        // Static pods.
        let mut static_old = with_resources(json!({"requests": {"cpu": "100m"}}));
        static_old["metadata"]["annotations"] = json!({"kubernetes.io/config.source": "file"});
        let mut static_new = with_resources(json!({"requests": {"cpu": "200m"}}));
        static_new["metadata"]["annotations"] = static_old["metadata"]["annotations"].clone();
        assert!(!is_resize(&static_old, &static_new));
    }

    #[test]
    fn init_container_resources_are_not_blanked() {
        let mut old = with_resources(json!({"requests": {"cpu": "100m"}}));
        let mut new = old.clone();
        old["spec"]["initContainers"][0]["resources"] = json!({"requests": {"cpu": "1"}});
        new["spec"]["initContainers"][0]["resources"] = json!({"requests": {"cpu": "2"}});
        assert!(!is_resize(&old, &new));
    }

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(&with_resources(json!({}))), "BestEffort");
        let guaranteed = pod(json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}}));
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
        let burstable = pod(json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}}));
        assert_eq!(qos_class(&burstable), "Burstable");
    }
}
