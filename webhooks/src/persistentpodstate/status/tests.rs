use super::*;
use serde_json::{Value, json};

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

fn pps(spec_extra: Value, status: Value) -> PersistentPodState {
    let mut spec = json!({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
        "requiredPersistentTopology": {"keys": [ZONE]},
        "preferredPersistentTopology": [{"weight": 10, "preference": {"keys": [HOST]}}]});
    for (k, v) in spec_extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    serde_json::from_value(
        json!({"metadata": {"name": "web", "namespace": "ns", "generation": 2},
        "spec": spec, "status": status}),
    )
    .unwrap()
}

fn target(replicas: i32) -> Target {
    Target {
        replicas,
        uid: "sts-uid".into(),
        ..Target::default()
    }
}

/// A pod of the StatefulSet on `node` (`None`: not scheduled), ready or not.
fn pod(name: &str, node: Option<&str>, ready: bool) -> Arc<SlimPod> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                    "uid": "sts-uid", "controller": true}]},
            "spec": {"containers": [{"name": "app"}], "nodeName": node},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
        }))
        .unwrap(),
    )
}

/// Nodes `n1` (zone a), `n2` (zone b), `n3` (zone a, no hostname label).
fn node_labels(node: &str, keys: &BTreeSet<String>) -> Option<BTreeMap<String, String>> {
    let all: BTreeMap<&str, &str> = match node {
        "n1" => [(ZONE, "a"), (HOST, "n1"), ("rack", "r1")].into(),
        "n2" => [(ZONE, "b"), (HOST, "n2")].into(),
        "n3" => [(ZONE, "a")].into(),
        _ => return None,
    };
    Some(
        all.into_iter()
            .filter(|(k, _)| keys.contains(*k))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    )
}

fn run(
    pps: &PersistentPodState,
    target: Option<&Target>,
    pods: &[Arc<SlimPod>],
    annotations: &BTreeMap<String, BTreeMap<String, String>>,
) -> Computed {
    compute(
        pps,
        &Inputs {
            target,
            pods,
            node_labels: &node_labels,
            pod_annotations: annotations,
        },
    )
}

fn entry(node: &str, zone: &str) -> Value {
    json!({"nodeName": node, "nodeTopologyLabels": {ZONE: zone, HOST: node}})
}

fn states(computed: &Computed) -> Value {
    serde_json::to_value(&computed.status).unwrap()
}

#[test]
fn scenario_19_ready_pods_are_recorded_with_their_nodes_topology() {
    let pps = pps(json!({}), Value::Null);
    let pods = [
        pod("web-0", Some("n1"), true),
        pod("web-1", Some("n2"), true),
    ];
    let computed = run(&pps, Some(&target(2)), &pods, &BTreeMap::new());
    assert_eq!(
        states(&computed),
        json!({"observedGeneration": 2,
            "podStates": {"web-0": entry("n1", "a"), "web-1": entry("n2", "b")}})
    );
    assert!(!computed.missing_node);
    assert!(!unchanged(pps.status.as_ref(), &computed.status));
}

#[test]
fn scenario_20_an_entry_goes_with_its_pod_only_after_a_scale_down() {
    let status = json!({"observedGeneration": 2, "podStates": {
        "web-0": entry("n1", "a"), "web-1": entry("n2", "b"), "web-2": entry("n1", "a")}});
    let pps = pps(json!({}), status);
    // Replicas 3 → 2; web-2 gone, and web-1 gone too (deleted, to be re-created).
    let computed = run(
        &pps,
        Some(&target(2)),
        &[pod("web-0", Some("n1"), true)],
        &BTreeMap::new(),
    );
    assert_eq!(
        states(&computed),
        json!({"observedGeneration": 2,
            "podStates": {"web-0": entry("n1", "a"), "web-1": entry("n2", "b")}})
    );
    // web-2 still there (terminating pods are not among the target's pods): kept while it is.
    let computed = run(
        &pps,
        Some(&target(2)),
        &[
            pod("web-0", Some("n1"), true),
            pod("web-2", Some("n1"), true),
        ],
        &BTreeMap::new(),
    );
    assert!(computed.status.pod_states.contains_key("web-2"));
}

#[test]
fn scenario_21_when_deleted_keeps_the_entries_of_a_scale_down() {
    let status = json!({"observedGeneration": 2, "podStates": {"web-2": entry("n1", "a")}});
    let pps = pps(
        json!({"persistentPodStateRetentionPolicy": "WhenDeleted"}),
        status,
    );
    let computed = run(&pps, Some(&target(1)), &[], &BTreeMap::new());
    assert!(computed.status.pod_states.contains_key("web-2"));
    assert!(unchanged(pps.status.as_ref(), &computed.status));
}

#[test]
fn scenario_22_pods_not_ready_or_not_scheduled_are_not_recorded_and_keep_their_entry() {
    let status = json!({"observedGeneration": 2, "podStates": {"web-1": entry("n2", "b")}});
    let pps = pps(json!({}), status);
    let pods = [
        pod("web-0", Some("n1"), false),
        pod("web-1", Some("n1"), false),
        pod("web-2", None, true),
    ];
    let computed = run(&pps, Some(&target(3)), &pods, &BTreeMap::new());
    assert_eq!(
        states(&computed),
        json!({"observedGeneration": 2, "podStates": {"web-1": entry("n2", "b")}})
    );
}

#[test]
fn scenario_23_without_a_target_every_entry_goes() {
    let status = json!({"observedGeneration": 1, "podStates": {"web-0": entry("n1", "a")}});
    let pps = pps(
        json!({"persistentPodStateRetentionPolicy": "WhenDeleted"}),
        status,
    );
    let computed = run(
        &pps,
        None,
        &[pod("web-0", Some("n1"), true)],
        &BTreeMap::new(),
    );
    assert_eq!(states(&computed), json!({"observedGeneration": 2}));
}

#[test]
fn scenarios_24_25_a_moved_pod_is_rewritten_an_entry_up_to_date_is_not() {
    let status = json!({"observedGeneration": 2, "podStates": {
        "web-0": entry("n1", "a"), "web-1": entry("n1", "a")}});
    let pps = pps(json!({}), status);
    let pods = [
        pod("web-0", Some("n1"), true),
        pod("web-1", Some("n2"), true),
    ];
    let computed = run(&pps, Some(&target(2)), &pods, &BTreeMap::new());
    assert_eq!(
        states(&computed)["podStates"],
        json!({"web-0": entry("n1", "a"), "web-1": entry("n2", "b")})
    );
    let again = pps.clone();
    let mut again = again;
    again.status = Some(computed.status.clone());
    let computed = run(&again, Some(&target(2)), &pods, &BTreeMap::new());
    assert!(unchanged(again.status.as_ref(), &computed.status));
}

#[test]
fn a_node_without_a_key_is_read_again_and_gives_the_same_entry() {
    // n3 has no hostname label: the recorded keys never equal the wanted ones, the entry is recomputed from
    // the cache each time, and comes out the same.
    let status = json!({"observedGeneration": 2, "podStates": {
        "web-0": {"nodeName": "n3", "nodeTopologyLabels": {ZONE: "a"}}}});
    let pps = pps(json!({}), status);
    let computed = run(
        &pps,
        Some(&target(1)),
        &[pod("web-0", Some("n3"), true)],
        &BTreeMap::new(),
    );
    assert!(unchanged(pps.status.as_ref(), &computed.status));
}

#[test]
fn scenario_26_a_node_not_in_the_cache_leaves_the_entry_and_asks_again() {
    let status = json!({"observedGeneration": 2, "podStates": {"web-0": entry("n1", "a")}});
    let pps = pps(json!({}), status);
    let pods = [
        pod("web-0", Some("n9"), true),
        pod("web-1", Some("n9"), true),
    ];
    let computed = run(&pps, Some(&target(2)), &pods, &BTreeMap::new());
    assert!(computed.missing_node);
    assert_eq!(
        states(&computed)["podStates"],
        json!({"web-0": entry("n1", "a")})
    );
}

#[test]
fn scenario_27_annotations_are_read_when_first_recorded_and_after_a_spec_change() {
    let spec = json!({"persistentPodAnnotations": [{"key": "ip"}, {"key": "absent"}]});
    let pps_new = pps(spec.clone(), Value::Null);
    let pods = [
        pod("web-0", Some("n1"), true),
        pod("web-1", Some("n2"), false),
    ];
    assert_eq!(annotation_reads(&pps_new, &pods), ["web-0"]);
    let read = BTreeMap::from([(
        "web-0".to_owned(),
        BTreeMap::from([
            ("ip".to_owned(), "10.0.0.7".to_owned()),
            ("other".to_owned(), "x".to_owned()),
        ]),
    )]);
    let computed = run(&pps_new, Some(&target(2)), &pods, &read);
    assert_eq!(
        states(&computed)["podStates"]["web-0"]["annotations"],
        json!({"ip": "10.0.0.7"})
    );
    // Recorded at this generation: not read again, kept as recorded.
    let mut recorded = pps_new.clone();
    recorded.status = Some(computed.status.clone());
    assert!(annotation_reads(&recorded, &pods).is_empty());
    let computed = run(&recorded, Some(&target(2)), &pods, &BTreeMap::new());
    assert!(unchanged(recorded.status.as_ref(), &computed.status));
    // A spec change (generation 3): read again.
    recorded.metadata.generation = Some(3);
    assert_eq!(annotation_reads(&recorded, &pods), ["web-0"]);
    // A pod gone before it was read keeps its entry as it was.
    let computed = run(&recorded, Some(&target(2)), &pods, &BTreeMap::new());
    assert_eq!(
        computed.status.pod_states["web-0"],
        recorded.status.as_ref().unwrap().pod_states["web-0"]
    );
    assert_eq!(computed.status.observed_generation, 3);
    // No annotation key: nothing to read, none recorded.
    assert!(annotation_reads(&pps(json!({}), Value::Null), &pods).is_empty());
}

#[test]
fn scenario_28_reserved_ordinals_and_the_start_ordinal_shape_the_replicas() {
    let advanced = Target {
        replicas: 3,
        reserve_ordinals: vec![IntOrString::Int(1), IntOrString::String("3-4".into())],
        start_ordinal: 0,
        uid: "u".into(),
    };
    // 0, 2, 5.
    let ordinals: Vec<i64> = (0..8)
        .filter(|&i| advanced.has_replica_ordinal(i))
        .collect();
    assert_eq!(ordinals, [0, 2, 5]);
    let started = Target {
        start_ordinal: 2,
        ..advanced.clone()
    };
    // From 2: 2, 5, 6.
    let ordinals: Vec<i64> = (0..9).filter(|&i| started.has_replica_ordinal(i)).collect();
    assert_eq!(ordinals, [2, 5, 6]);
    // An invalid range: nothing is reserved.
    let invalid = Target {
        reserve_ordinals: vec![IntOrString::Int(1), IntOrString::String("4-3".into())],
        ..advanced
    };
    let ordinals: Vec<i64> = (0..5).filter(|&i| invalid.has_replica_ordinal(i)).collect();
    assert_eq!(ordinals, [0, 1, 2]);
    assert!(!target(-1).has_replica_ordinal(0));
}

#[test]
fn scenario_29_no_replicas_count_no_pods_and_keep_no_ordinal_entry() {
    let status = json!({"observedGeneration": 2, "podStates": {
        "web-0": entry("n1", "a"), "standalone": entry("n1", "a")}});
    let pps = pps(json!({}), status);
    let pods = target_pods(&[pod("web-0", Some("n1"), true)], &target(0));
    assert!(pods.is_empty());
    let computed = run(&pps, Some(&target(0)), &pods, &BTreeMap::new());
    assert_eq!(
        states(&computed)["podStates"],
        json!({"standalone": entry("n1", "a")})
    );
}

#[test]
fn the_targets_pods_are_its_active_owned_ones() {
    let mut done: SlimPod = (*pod("web-0", Some("n1"), false)).clone();
    if let Some(s) = done.status.as_mut() {
        s.phase = Some("Succeeded".into());
    }
    let mut deleting: SlimPod = (*pod("web-1", Some("n1"), true)).clone();
    deleting.metadata.deletion_timestamp =
        Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
    let mut other: SlimPod = (*pod("db-0", Some("n1"), true)).clone();
    if let Some(refs) = other.metadata.owner_references.as_mut() {
        refs[0].uid = "db-uid".into();
    }
    let kept = pod("web-2", Some("n1"), true);
    let pods = [
        Arc::new(done),
        Arc::new(deleting),
        Arc::new(other),
        kept.clone(),
    ];
    let names: Vec<_> = target_pods(&pods, &target(3))
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["web-2"]);
}

#[test]
fn ordinals_are_read_as_go_reads_them() {
    assert_eq!(ordinal_of("web-12"), Some(12));
    assert_eq!(ordinal_of("web-+3"), Some(3));
    assert_eq!(ordinal_of("web-007"), Some(7));
    assert_eq!(ordinal_of("7"), Some(7));
    assert_eq!(ordinal_of("web-"), None);
    assert_eq!(ordinal_of("web-a1"), None);
    assert_eq!(ordinal_of("web-99999999999999999999"), None);
}
