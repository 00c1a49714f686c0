//! Step 8 on pods and PodProbeMarkers loaded as files (spec/pod-mutating-misc.md §9, §12 scenario 24).

use super::*;
use crate::fixture::FixtureCluster;
use serde_json::json;

fn marker(name: &str, selector: Value, probes: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"selector": selector, "probes": probes}})
}

fn probe(name: &str, container: &str, condition: &str) -> Value {
    json!({"name": name, "containerName": container, "podConditionType": condition,
           "probe": {"exec": {"command": ["/probe.sh", name]}, "periodSeconds": 10},
           "markerPolicy": [{"state": "Succeeded", "labels": {"ok": "true"}}]})
}

fn web() -> Value {
    json!({"matchLabels": {"app": "web"}})
}

fn cluster(objects: &[Value]) -> FixtureCluster {
    let mut c = FixtureCluster::default();
    for o in objects {
        c.insert(o.clone()).unwrap();
    }
    c
}

fn pod(annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"},
                        "annotations": annotations},
           "spec": {"containers": [{"name": "main", "image": "m"}],
                    "initContainers": [{"name": "native", "restartPolicy": "Always"},
                                       {"name": "setup"}]}})
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

/// The pod's annotations after the step; `None` when nothing was written.
fn run(pod: &Value, view: &impl PodProbeMarkerView) -> Result<Option<Value>, WebhookError> {
    let text = pod.to_string();
    let mut doc = RawPod::parse_str(&text).unwrap();
    mutate(&mut doc, "default", &labels(), Operation::Create, view)?;
    let patch = doc.into_patch();
    Ok((!patch.is_empty()).then(|| {
        crate::json::patch::apply(pod, &patch).unwrap()["metadata"]["annotations"].clone()
    }))
}

#[test]
fn only_probes_of_the_pods_containers_are_kept_without_their_marker_policy() {
    // Scenario 24.
    let view = cluster(&[marker(
        "ppm-1",
        web(),
        json!([{"name": "healthy", "containerName": "main", "podConditionType": "game.io/healthy",
                "probe": {"exec": {"command": ["bash", "/probe.sh"]}},
                "markerPolicy": [{"state": "Succeeded", "annotations": {"cost": "10"}}]},
               {"name": "x", "containerName": "missing", "podConditionType": "game.io/x",
                "probe": {"exec": {"command": ["x"]}}}]),
    )]);
    let out = run(&pod(json!({"keep": "me"})), &view).unwrap().unwrap();
    assert_eq!(
        out,
        json!({"keep": "me",
               PROBES_ANNOTATION: r#"[{"name":"healthy","containerName":"main","probe":{"exec":{"command":["bash","/probe.sh"]}},"podConditionType":"game.io/healthy"}]"#,
               LIST_ANNOTATION: "ppm-1"})
    );
}

#[test]
fn each_condition_and_each_container_probe_is_taken_once_across_markers_in_name_order() {
    let view = cluster(&[
        marker(
            "b",
            web(),
            json!([
                probe("ready", "main", "c/ready"),
                probe("other", "main", "c/dup")
            ]),
        ),
        marker(
            "a",
            web(),
            json!([
                probe("dup", "main", "c/dup"),
                probe("dup", "main", "c/again"),
                probe("none", "main", ""),
                probe("sidecar", "native", "c/sidecar"),
                probe("init", "setup", "c/init")
            ]),
        ),
        marker("c", web(), json!([probe("late", "main", "c/ready")])),
    ]);
    let out = run(&pod(json!({})), &view).unwrap().unwrap();
    let kept: Vec<Value> = serde_json::from_str(out[PROBES_ANNOTATION].as_str().unwrap()).unwrap();
    let names: Vec<&str> = kept.iter().map(|p| p["name"].as_str().unwrap()).collect();
    // a: dup (c/dup), sidecar (a restartable init container); b: ready. c's condition is taken.
    assert_eq!(names, ["dup", "sidecar", "ready"]);
    assert!(kept.iter().all(|p| p.get("markerPolicy").is_none()));
    assert_eq!(out[LIST_ANNOTATION], "a,b");
}

#[test]
fn markers_whose_selector_does_not_pick_the_pod_are_passed_over() {
    let view = cluster(&[
        marker(
            "db",
            json!({"matchLabels": {"app": "db"}}),
            json!([probe("a", "main", "c/a")]),
        ),
        marker("empty", json!({}), json!([probe("b", "main", "c/b")])),
        marker("unset", Value::Null, json!([probe("c", "main", "c/c")])),
        marker(
            "invalid",
            json!({"matchExpressions": [{"key": "app", "operator": "Like"}]}),
            json!([probe("d", "main", "c/d")]),
        ),
    ]);
    assert_eq!(run(&pod(json!({})), &view).unwrap(), None);
    assert_eq!(run(&pod(json!({})), &cluster(&[])).unwrap(), None);
}

#[test]
fn a_listed_pod_reads_the_markers_it_names_whatever_their_selectors() {
    let view = cluster(&[
        marker(
            "other",
            json!({"matchLabels": {"app": "db"}}),
            json!([probe("a", "main", "c/a")]),
        ),
        marker("web", web(), json!([probe("b", "main", "c/b")])),
    ]);
    // `gone` cannot be read: skipped. `web` is not named: not read.
    let out = run(&pod(json!({LIST_ANNOTATION: "gone,other"})), &view)
        .unwrap()
        .unwrap();
    let kept: Vec<Value> = serde_json::from_str(out[PROBES_ANNOTATION].as_str().unwrap()).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["name"], "a");
    assert_eq!(out[LIST_ANNOTATION], "other");
    // An empty list annotation is no list.
    let out = run(&pod(json!({LIST_ANNOTATION: ""})), &view)
        .unwrap()
        .unwrap();
    assert_eq!(out[LIST_ANNOTATION], "web");
}

#[test]
fn a_list_error_fails_the_pod_create_and_update_is_left_alone() {
    struct Failing;
    impl PodProbeMarkerView for Failing {
        fn pod_probe_markers_in(&self, _: &str) -> Result<Vec<Arc<PodProbeMarker>>, String> {
            Err("the server is unavailable".into())
        }
    }
    let err = run(&pod(json!({})), &Failing).unwrap_err();
    assert_eq!(err.http_code(), 500);
    assert_eq!(
        err.to_string(),
        "listing PodProbeMarkers in namespace default: the server is unavailable"
    );
    // A named marker that cannot be read is skipped, not an error.
    assert_eq!(
        run(&pod(json!({LIST_ANNOTATION: "a"})), &Failing).unwrap(),
        None
    );
    let view = cluster(&[marker("web", web(), json!([probe("b", "main", "c/b")]))]);
    let text = pod(json!({})).to_string();
    let mut doc = RawPod::parse_str(&text).unwrap();
    mutate(&mut doc, "default", &labels(), Operation::Update, &view).unwrap();
    assert!(doc.into_patch().is_empty());
}
