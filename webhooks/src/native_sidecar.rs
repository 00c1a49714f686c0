//! Opt-in conversion of Job sidecars into Kubernetes native sidecars at pod CREATE (DECISIONS 20,
//! spec/sidecar-terminator.md §11.2; not OpenKruise behaviour): a container marked
//! `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true` in a pod that runs to completion moves to the end of
//! `spec.initContainers` with `restartPolicy: Always`, so kubelet itself stops it once the main containers
//! finish — no ContainerRecreateRequest, no kruise-daemon, and its exit code never fails the Job.
//!
//! Off unless asked for: the feature gate `NativeSidecarConversion` (ours; `--feature-gates
//! NativeSidecarConversion=true`), or the annotation
//! [`ANNOTATION`] (`"true"` / `"false"`) on the pod, which wins, or on its namespace. The cluster must run
//! native sidecars (API server and nodes at Kubernetes 1.29 or later); where it does not, a converted sidecar
//! never exits and the pod hangs in initialisation, hence opt-in. Never on UPDATE.
//!
//! [`select`] decides (§11.2 steps 2-3) on the containers as the chain has them after SidecarSet injection
//! (an injected sidecar carrying the env is converted too); the chain (`crate::pod`) moves them with
//! [`as_native`] (step 4). The step runs
//! before container launch priority (step 7), whose containers it leaves alone.

use serde_json::Value;

/// The annotation that turns the conversion on or off for a pod or a namespace.
pub const ANNOTATION: &str = "kruise-webhook.io/native-sidecar-conversion";
/// The env marking a container as a sidecar to stop when the Job's main containers exit.
pub const WHEN_JOB_EXIT_ENV: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT";
/// Launch-priority envs: such a container takes part in ordering `spec.containers` and stays there.
const LAUNCH_PRIORITY_ENVS: &[&str] = &["KRUISE_CONTAINER_PRIORITY", "KRUISE_CONTAINER_BARRIER"];
/// Controllers that compare a pod's containers with their template for in-place updates: their pods keep
/// their containers where the template has them.
const IN_PLACE_OWNERS: &[(&str, &str)] = &[
    ("apps.kruise.io", "CloneSet"),
    ("apps.kruise.io", "StatefulSet"),
    ("apps.kruise.io", "DaemonSet"),
];

/// Whether the conversion applies: the pod's annotation, else its namespace's, else the server flag.
/// Anything but `true`/`false` (any case) in an annotation is not an answer and falls through.
pub fn enabled(
    pod_annotation: Option<&str>,
    namespace_annotation: Option<&str>,
    flag: bool,
) -> bool {
    let read = |v: Option<&str>| match v.map(str::to_ascii_lowercase).as_deref() {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    read(pod_annotation)
        .or_else(|| read(namespace_annotation))
        .unwrap_or(flag)
}

fn marked(container: &Value) -> bool {
    let env = container.get("env").and_then(Value::as_array);
    env.into_iter().flatten().any(|e| {
        e.get("name").and_then(Value::as_str) == Some(WHEN_JOB_EXIT_ENV)
            && e.get("value")
                .and_then(Value::as_str)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    })
}

fn in_launch_priority(container: &Value) -> bool {
    let env = container.get("env").and_then(Value::as_array);
    env.into_iter().flatten().any(|e| {
        e.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| LAUNCH_PRIORITY_ENVS.contains(&n))
    })
}

/// The pod runs to completion: `restartPolicy` `Never` or `OnFailure` (the terminator's scope).
pub fn runs_to_completion(restart_policy: Option<&str>) -> bool {
    matches!(restart_policy, Some("Never" | "OnFailure"))
}

/// The pod's controller updates containers in place against its template.
pub fn owned_by_in_place_workload(owner_references: Option<&Value>) -> bool {
    owner_references
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
        .any(|o| {
            let group = o
                .get("apiVersion")
                .and_then(Value::as_str)
                .and_then(|v| v.split_once('/'))
                .map_or("", |(g, _)| g);
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
            IN_PLACE_OWNERS.contains(&(group, kind))
        })
}

/// The indexes of `containers` to convert (§11.2 step 3): marked, not taking part in launch priority (the
/// pod's `Ordered` annotation makes every container take part), without `resizePolicy`; none when that
/// would leave `spec.containers` empty.
pub fn select(containers: &[Value], launch_priority_ordered: bool) -> Vec<usize> {
    if launch_priority_ordered {
        return Vec::new();
    }
    let chosen: Vec<usize> = containers
        .iter()
        .enumerate()
        .filter(|(_, c)| marked(c) && !in_launch_priority(c) && c.get("resizePolicy").is_none())
        .map(|(i, _)| i)
        .collect();
    if chosen.len() == containers.len() {
        return Vec::new();
    }
    chosen
}

/// A selected container as a native sidecar: every field kept, `restartPolicy: Always` set.
pub fn as_native(mut container: Value) -> Value {
    if let Some(obj) = container.as_object_mut() {
        obj.insert("restartPolicy".into(), Value::String("Always".into()));
    }
    container
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(name: &str, env: Value) -> Value {
        json!({"name": name, "image": format!("{name}:1"), "env": env})
    }

    #[test]
    fn opt_in_pod_annotation_wins_over_namespace_over_flag() {
        assert!(!enabled(None, None, false));
        assert!(enabled(None, None, true));
        assert!(enabled(None, Some("true"), false));
        assert!(!enabled(None, Some("false"), true));
        assert!(enabled(Some("TRUE"), Some("false"), false));
        assert!(!enabled(Some("false"), Some("true"), true));
        // Not an answer: falls through.
        assert!(enabled(Some("yes"), Some("true"), false));
        assert!(!enabled(Some(""), None, false));
    }

    #[test]
    fn only_pods_that_run_to_completion() {
        assert!(runs_to_completion(Some("Never")));
        assert!(runs_to_completion(Some("OnFailure")));
        assert!(!runs_to_completion(Some("Always")));
        assert!(!runs_to_completion(None));
        assert!(!runs_to_completion(Some("never")));
    }

    #[test]
    fn in_place_workloads_keep_their_containers() {
        let owner = |v: &str, k: &str, controller: bool| json!([{"apiVersion": v, "kind": k, "name": "x", "uid": "u", "controller": controller}]);
        assert!(owned_by_in_place_workload(Some(&owner(
            "apps.kruise.io/v1alpha1",
            "CloneSet",
            true
        ))));
        assert!(owned_by_in_place_workload(Some(&owner(
            "apps.kruise.io/v1beta1",
            "StatefulSet",
            true
        ))));
        assert!(!owned_by_in_place_workload(Some(&owner(
            "apps/v1",
            "StatefulSet",
            true
        ))));
        assert!(!owned_by_in_place_workload(Some(&owner(
            "batch/v1", "Job", true
        ))));
        assert!(!owned_by_in_place_workload(Some(&owner(
            "apps.kruise.io/v1alpha1",
            "CloneSet",
            false
        ))));
        assert!(!owned_by_in_place_workload(None));
        assert!(!owned_by_in_place_workload(Some(&json!("not a list"))));
    }

    #[test]
    fn marked_containers_are_selected_with_the_exceptions() {
        let mark = json!([{"name": WHEN_JOB_EXIT_ENV, "value": "True"}]);
        let containers = vec![
            c("main", json!([])),
            c("log", mark.clone()),
            // Not "true": not a sidecar for the terminator either.
            c(
                "off",
                json!([{"name": WHEN_JOB_EXIT_ENV, "value": "false"}]),
            ),
            c(
                "from",
                json!([{"name": WHEN_JOB_EXIT_ENV, "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]),
            ),
            // Only the exit image: left alone.
            c(
                "vk",
                json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE", "value": "exit:1"}]),
            ),
            // Launch priority: stays in spec.containers.
            c(
                "prio",
                json!([{"name": WHEN_JOB_EXIT_ENV, "value": "true"}, {"name": "KRUISE_CONTAINER_PRIORITY", "value": "1"}]),
            ),
            // resizePolicy is refused on init containers.
            json!({"name": "rp", "env": mark.clone(), "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}),
            c("mesh", mark.clone()),
        ];
        assert_eq!(select(&containers, false), [1, 7]);
        assert_eq!(
            select(&containers, true),
            Vec::<usize>::new(),
            "Ordered: every container takes part"
        );
        // Every container marked: converting would leave spec.containers empty.
        assert_eq!(
            select(&[c("a", mark.clone()), c("b", mark)], false),
            Vec::<usize>::new()
        );
        assert_eq!(select(&[], false), Vec::<usize>::new());
    }

    #[test]
    fn a_native_sidecar_keeps_every_field() {
        let before = json!({"name": "log", "image": "log:1", "env": [{"name": WHEN_JOB_EXIT_ENV, "value": "true"}],
            "ports": [{"containerPort": 9}], "x-unknown": {"kept": 1}});
        let mut expected = before.clone();
        expected["restartPolicy"] = json!("Always");
        assert_eq!(as_native(before), expected);
    }
}
