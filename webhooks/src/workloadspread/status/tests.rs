//! The controller scenarios of spec/workloadspread.md §9 (29-38) on the pure computation; expected values
//! are written from the spec. Common setup: namespace `ns`, CloneSet `cs` (replicas 6), WorkloadSpread `ws`
//! with subsets `a` (max 2), `b` (max 3), `c` (unlimited), "now" = 2025-01-01T00:00:00Z.

use super::*;
use serde_json::{Value, json};

const NOW: &str = "2025-01-01T00:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

/// `now - secs` as RFC 3339.
fn ago(secs: i64) -> String {
    now()
        .checked_sub(SignedDuration::from_secs(secs))
        .unwrap()
        .to_string()
}

fn subsets() -> Value {
    json!([
        {"name": "a", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
         "tolerations": [{"key": "dedicated", "operator": "Exists"}], "maxReplicas": 2},
        {"name": "b", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]},
         "maxReplicas": 3},
        {"name": "c"}
    ])
}

fn ws(subsets: Value, status: Value) -> WorkloadSpread {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "ns", "generation": 3},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
                 "subsets": subsets},
        "status": status
    }))
    .unwrap()
}

fn pod(name: &str, subset: Option<&str>) -> SlimPod {
    let mut annotations = json!({});
    if let Some(s) = subset {
        annotations[MATCHED_WORKLOADSPREAD_ANNOTATION] =
            json!(format!(r#"{{"name":"ws","subset":"{s}"}}"#));
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": ago(3600),
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
                "uid": "cs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "app"}], "nodeName": "n1"},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ago(3000)}]}
    }))
    .unwrap()
}

fn computed(ws: &WorkloadSpread, pods: &[SlimPod], replicas: i32) -> Computed {
    let refs: Vec<&SlimPod> = pods.iter().collect();
    compute(ws, &group(ws, &refs), replicas, now())
}

fn status_json(c: &Computed) -> Value {
    serde_json::to_value(&c.status).unwrap()
}

#[test]
fn scaled_rounds_percentages_up_and_refuses_other_strings() {
    assert_eq!(scaled(&IntOrString::Int(2), 10), Ok(2));
    assert_eq!(scaled(&IntOrString::String("33%".into()), 10), Ok(4));
    assert_eq!(scaled(&IntOrString::String("67%".into()), 10), Ok(7));
    assert_eq!(scaled(&IntOrString::String("50%".into()), 0), Ok(0));
    assert!(scaled(&IntOrString::String("50".into()), 10).is_err());
    assert!(scaled(&IntOrString::String("x%".into()), 10).is_err());
}

#[test]
fn versions_follow_the_pod_template_hash_of_replica_set_pods_only() {
    let mut p: SlimPod = serde_json::from_value(json!({"metadata": {"name": "web-1",
        "labels": {"pod-template-hash": "5d8f", "controller-revision-hash": "web-7c9"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f",
            "uid": "u", "controller": true}]}}))
    .unwrap();
    assert_eq!(pod_version(&p), "5d8f");
    p = serde_json::from_value(json!({"metadata": {"name": "web-1",
        "labels": {"controller-revision-hash": "web-7c9"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f",
            "uid": "u", "controller": true}]}}))
    .unwrap();
    assert_eq!(pod_version(&p), "7c9");
    // A CloneSet's pod is not versioned whatever its labels.
    p = serde_json::from_value(json!({"metadata": {"name": "cs-1",
        "labels": {"pod-template-hash": "5d8f"},
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
            "uid": "u", "controller": true}]}}))
    .unwrap();
    assert_eq!(pod_version(&p), VERSION_IGNORED);
}

#[test]
fn replicas_paths_sum_and_fail_on_missing_paths() {
    let obj = json!({"spec": {"replicas": 2, "subsets": [{"replicas": 1}, {"replicas": 4}]}});
    assert_eq!(
        replicas_at_paths(
            &obj,
            &[
                "spec.replicas".into(),
                "spec.subsets.1.replicas".into(),
                String::new()
            ]
        ),
        Ok(6)
    );
    assert!(replicas_at_paths(&obj, &["spec.subsets.2.replicas".into()]).is_err());
    assert!(replicas_at_paths(&obj, &["spec.nothing".into()]).is_err());
    assert!(replicas_at_paths(&obj, &["spec.subsets".into()]).is_err());
    let huge = json!({"a": i64::MAX, "b": i64::MAX});
    assert!(
        replicas_at_paths(&huge, &["a".into(), "b".into()]).is_err(),
        "an overflow is an error, never a panic"
    );
}

#[test]
fn scenario_29_creating_record_observed() {
    let ws = ws(
        subsets(),
        json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-aaaaa": ago(5)}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}}),
    );
    let c = computed(&ws, &[pod("cs-aaaaa", Some("a"))], 6);
    let list = json!([
        {"name": "a", "replicas": 1, "missingReplicas": 1},
        {"name": "b", "replicas": 0, "missingReplicas": 3},
        {"name": "c", "replicas": 0, "missingReplicas": -1}]);
    assert_eq!(
        status_json(&c),
        json!({"observedGeneration": 3, "subsetStatuses": list,
               "versionedSubsetStatuses": {"versionIgnored": list}})
    );
    assert_eq!(c.events, []);
    assert_eq!(c.requeue_after, None);
}

#[test]
fn scenario_30_creating_record_expires_after_30s() {
    let old = |at: String| {
        json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"ghost": at}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}})
    };
    let expired = computed(&ws(subsets(), old(ago(31))), &[], 6);
    assert_eq!(
        expired.events,
        [StatusEvent::CreatePodFailed {
            pod: "ghost".into()
        }]
    );
    assert_eq!(
        expired.events[0].message("ns", "ws"),
        "Pod ns/ghost was expected to be created but it wasn't"
    );
    // No pods and no record left: the version list goes.
    assert_eq!(
        status_json(&expired),
        json!({"observedGeneration": 3, "subsetStatuses": [
            {"name": "a", "replicas": 0, "missingReplicas": 2},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]})
    );
    let kept = computed(&ws(subsets(), old(ago(20))), &[], 6);
    assert_eq!(kept.events, []);
    assert_eq!(
        status_json(&kept)["versionedSubsetStatuses"]["versionIgnored"][0],
        json!({"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"ghost": ago(20)}})
    );
    assert_eq!(kept.requeue_after, Some(Duration::from_secs(10)));
}

#[test]
fn scenario_31_deleting_record_kept_then_dropped() {
    let old = |at: String| {
        json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 2, "missingReplicas": 1, "deletingPods": {"cs-aaaaa": at}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}})
    };
    let pods = [pod("cs-aaaaa", Some("a")), pod("cs-bbbbb", Some("a"))];
    let kept = computed(&ws(subsets(), old(ago(5))), &pods, 6);
    assert_eq!(
        status_json(&kept)["versionedSubsetStatuses"]["versionIgnored"][0],
        json!({"name": "a", "replicas": 2, "missingReplicas": 1, "deletingPods": {"cs-aaaaa": ago(5)}})
    );
    assert_eq!(kept.requeue_after, Some(Duration::from_secs(10)));
    assert_eq!(kept.events, []);
    let dropped = computed(&ws(subsets(), old(ago(16))), &pods, 6);
    assert_eq!(
        status_json(&dropped)["versionedSubsetStatuses"]["versionIgnored"][0],
        json!({"name": "a", "replicas": 2, "missingReplicas": 0})
    );
    assert_eq!(
        dropped.events,
        [StatusEvent::DeletePodFailed {
            pod: "cs-aaaaa".into()
        }]
    );
    assert_eq!(
        dropped.events[0].message("ns", "ws"),
        "Pod ns/cs-aaaaa was expected to be deleted but it wasn't"
    );
    assert_eq!(dropped.requeue_after, None);
}

#[test]
fn scenario_32_version_without_pods_lives_while_it_has_records() {
    let old = |at: String| {
        json!({"versionedSubsetStatuses": {"v2": [
            {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"web-v2-x": at}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}})
    };
    let pods = [pod("cs-aaaaa", Some("a"))];
    let young = computed(&ws(subsets(), old(ago(10))), &pods, 6);
    let v2 = &status_json(&young)["versionedSubsetStatuses"]["v2"];
    assert_eq!(
        v2[0],
        json!({"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"web-v2-x": ago(10)}})
    );
    assert_eq!(young.requeue_after, Some(Duration::from_secs(20)));
    let expired = computed(&ws(subsets(), old(ago(31))), &pods, 6);
    let versions = status_json(&expired)["versionedSubsetStatuses"].clone();
    assert_eq!(
        versions.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["versionIgnored"]
    );
}

#[test]
fn a_creating_record_keyed_by_generated_uid_is_cleared_by_its_pod() {
    let ws = ws(
        subsets(),
        json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"0b1c-uid": ago(3)}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}}),
    );
    let mut p = pod("cs-zzzzz", Some("a"));
    let annotated: SlimPod = serde_json::from_value(json!({"metadata": {"annotations": {
        MATCHED_WORKLOADSPREAD_ANNOTATION: r#"{"name":"ws","subset":"a","uid":"0b1c-uid"}"#}}}))
    .unwrap();
    p.annotations = annotated.annotations;
    let c = computed(&ws, &[p], 6);
    assert_eq!(
        status_json(&c)["versionedSubsetStatuses"]["versionIgnored"][0],
        json!({"name": "a", "replicas": 1, "missingReplicas": 1})
    );
}

#[test]
fn a_corrupt_annotation_puts_the_pod_in_the_fake_bucket_and_keeps_the_records() {
    let ws = ws(
        subsets(),
        json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-aaaaa": ago(5)}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}}),
    );
    let mut p = pod("cs-aaaaa", None);
    let corrupt: SlimPod = serde_json::from_value(json!({"metadata": {"annotations": {
        MATCHED_WORKLOADSPREAD_ANNOTATION: "{\"name\":"}}}))
    .unwrap();
    p.annotations = corrupt.annotations;
    let refs = [&p];
    let grouped = group(&ws, &refs);
    assert_eq!(grouped.unreadable.len(), 1);
    assert_eq!(grouped.unreadable[0].0, "cs-aaaaa");
    let c = compute(&ws, &grouped, 6, now());
    // Not observed in `a`: the record stays (it is young) and still holds its place.
    assert_eq!(
        status_json(&c)["versionedSubsetStatuses"]["versionIgnored"][0],
        json!({"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-aaaaa": ago(5)}})
    );
    assert_eq!(
        deletion_costs(&ws, &grouped, 6, VERSION_IGNORED).unwrap(),
        BTreeMap::from([("cs-aaaaa".to_owned(), -400)])
    );
}

#[test]
fn a_malformed_max_replicas_empties_the_lists() {
    let ws = ws(
        json!([{"name": "a", "maxReplicas": "2x"}, {"name": "c"}]),
        json!(null),
    );
    assert!(invalid_max_replicas(&ws, 6).is_some());
    let c = computed(&ws, &[pod("cs-aaaaa", Some("a"))], 6);
    assert_eq!(
        status_json(&c),
        json!({"observedGeneration": 3, "versionedSubsetStatuses": {"versionIgnored": []}})
    );
    let refs = [];
    assert!(deletion_costs(&ws, &group(&ws, &refs), 6, VERSION_IGNORED).is_ok());
}

#[test]
fn scenario_34_deletion_cost_latest_version() {
    let ws = ws(subsets(), json!(null));
    let mut not_ready = pod("cs-a2", Some("a"));
    not_ready.status.as_mut().unwrap().conditions = Some(Vec::new());
    let pods = [
        pod("cs-a1", Some("a")),
        not_ready,
        pod("cs-a3", Some("a")),
        pod("cs-b1", Some("b")),
        pod("cs-b2", Some("b")),
        pod("cs-c1", Some("c")),
        pod("cs-x1", None),
    ];
    let refs: Vec<&SlimPod> = pods.iter().collect();
    let costs = deletion_costs(&ws, &group(&ws, &refs), 6, VERSION_IGNORED).unwrap();
    let want: BTreeMap<String, i64> = [
        ("cs-a1", 300),
        ("cs-a2", -100),
        ("cs-a3", 300),
        ("cs-b1", 200),
        ("cs-b2", 200),
        ("cs-c1", 100),
        ("cs-x1", -400),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(costs, want);
}

fn rs_pod(name: &str, hash: &str, subset: &str) -> SlimPod {
    let mut p = pod(name, None);
    let v: SlimPod = serde_json::from_value(json!({"metadata": {
        "labels": {"pod-template-hash": hash},
        "annotations": {MATCHED_WORKLOADSPREAD_ANNOTATION: format!(r#"{{"name":"ws","subset":"{subset}"}}"#)},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("web-{hash}"),
            "uid": format!("rs-{hash}"), "controller": true}]}}))
    .unwrap();
    p.labels = v.labels;
    p.annotations = v.annotations;
    p.metadata.owner_references = v.metadata.owner_references;
    p
}

#[test]
fn scenario_35_deletion_cost_old_version_reversed() {
    let ws = ws(
        json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
        json!(null),
    );
    let pods = [
        rs_pod("web-v1-a1", "v1", "a"),
        rs_pod("web-v1-a2", "v1", "a"),
        rs_pod("web-v1-c1", "v1", "c"),
        rs_pod("web-v2-a1", "v2", "a"),
        rs_pod("web-v2-c1", "v2", "c"),
    ];
    let refs: Vec<&SlimPod> = pods.iter().collect();
    let costs = deletion_costs(&ws, &group(&ws, &refs), 4, "v2").unwrap();
    let want: BTreeMap<String, i64> = [
        ("web-v1-a1", 100),
        ("web-v1-a2", 100),
        ("web-v1-c1", 200),
        ("web-v2-a1", 200),
        ("web-v2-c1", 100),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(costs, want);
}

#[test]
fn delete_first_order_is_the_replica_set_controllers() {
    let mut unscheduled = pod("p1", None);
    unscheduled.spec.as_mut().unwrap().node_name = None;
    let mut pending = pod("p2", None);
    pending.status.as_mut().unwrap().phase = Some("Pending".into());
    let mut not_ready = pod("p3", None);
    not_ready.status.as_mut().unwrap().conditions = Some(Vec::new());
    let ready = pod("p4", None);
    assert_eq!(delete_first(&unscheduled, &ready), Ordering::Less);
    assert_eq!(delete_first(&pending, &ready), Ordering::Less);
    assert_eq!(delete_first(&not_ready, &ready), Ordering::Less);
    assert_eq!(delete_first(&ready, &not_ready), Ordering::Greater);
    // Both ready: the more recently ready first.
    let mut recent = pod("p5", None);
    recent.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time =
        Some(Time(now()));
    assert_eq!(delete_first(&recent, &ready), Ordering::Less);
    // Same readiness: more restarts first, then newer first.
    let mut restarted: SlimPod = pod("p6", None);
    restarted.status.as_mut().unwrap().container_statuses = Some(vec![
        serde_json::from_value(
            json!({"name": "app", "image": "x", "imageID": "", "restartCount": 3}),
        )
        .unwrap(),
    ]);
    assert_eq!(delete_first(&restarted, &ready), Ordering::Less);
    let mut newer = pod("p7", None);
    newer.metadata.creation_timestamp = Some(Time(now()));
    assert_eq!(delete_first(&newer, &ready), Ordering::Less);
    assert_eq!(delete_first(&ready, &pod("p8", None)), Ordering::Equal);
}

fn adaptive_ws(status: Value) -> WorkloadSpread {
    let mut w = ws(
        json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
        status,
    );
    w.spec.schedule_strategy = serde_json::from_value(
        json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}),
    )
    .unwrap();
    w
}

fn unschedulable_pod(name: &str, created_secs_ago: i64) -> SlimPod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": ago(created_secs_ago),
            "annotations": {MATCHED_WORKLOADSPREAD_ANNOTATION: r#"{"name":"ws","subset":"a"}"#},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
                "uid": "cs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "app"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "lastTransitionTime": ago(created_secs_ago)}]}
    }))
    .unwrap()
}

#[test]
fn scenario_36_adaptive_marks_the_subset_and_names_the_pod() {
    let ws = adaptive_ws(json!(null));
    let c = computed(&ws, &[unschedulable_pod("cs-p1", 40)], 6);
    let list = json!([
        {"name": "a", "replicas": 1, "missingReplicas": 1, "conditions": [{"type": "Schedulable",
            "status": "False", "reason": "PodUnschedulable", "message": "", "lastTransitionTime": NOW}]},
        {"name": "c", "replicas": 0, "missingReplicas": -1, "conditions": [{"type": "Schedulable",
            "status": "True", "reason": "Sufficient", "message": "", "lastTransitionTime": NOW}]}]);
    assert_eq!(
        status_json(&c),
        json!({"observedGeneration": 3, "subsetStatuses": list,
               "versionedSubsetStatuses": {"versionIgnored": list}})
    );
    assert_eq!(
        c.unschedulable,
        [Unschedulable {
            pod: "cs-p1".into(),
            subset: "a".into()
        }]
    );
    // A younger one: not yet, look again when it turns 30 s old.
    let young = computed(&ws, &[unschedulable_pod("cs-p1", 10)], 6);
    assert_eq!(young.unschedulable, []);
    assert_eq!(
        status_json(&young)["subsetStatuses"][0]["conditions"][0]["status"],
        "True"
    );
    assert_eq!(young.requeue_after, Some(Duration::from_secs(20)));
}

#[test]
fn scenario_37_adaptive_recovers_after_300s() {
    let old = |since: String| {
        let list = json!([
            {"name": "a", "replicas": 0, "missingReplicas": 2, "conditions": [{"type": "Schedulable",
                "status": "False", "reason": "PodUnschedulable", "message": "", "lastTransitionTime": since}]},
            {"name": "c", "replicas": 0, "missingReplicas": -1, "conditions": [{"type": "Schedulable",
                "status": "True", "reason": "Sufficient", "message": "", "lastTransitionTime": ago(1000)}]}]);
        json!({"subsetStatuses": list})
    };
    let recovered = computed(&adaptive_ws(old(ago(301))), &[], 6);
    assert_eq!(
        status_json(&recovered)["subsetStatuses"][0]["conditions"],
        json!([{"type": "Schedulable", "status": "True", "reason": "Sufficient", "message": "",
                "lastTransitionTime": NOW}])
    );
    assert_eq!(
        recovered.events,
        [StatusEvent::RecoverSchedulable { subset: "a".into() }]
    );
    assert_eq!(
        recovered.events[0].message("ns", "ws"),
        "Subset a of WorkloadSpread ns/ws is recovered from unschedulable to schedulable"
    );
    let held = computed(&adaptive_ws(old(ago(200))), &[], 6);
    assert_eq!(
        status_json(&held)["subsetStatuses"][0]["conditions"][0]["status"],
        "False"
    );
    assert_eq!(held.events, []);
    assert_eq!(held.requeue_after, Some(Duration::from_secs(100)));
}

#[test]
fn scenario_38_fixed_strategy_removes_conditions() {
    let list = json!([
        {"name": "a", "replicas": 0, "missingReplicas": 2, "conditions": [{"type": "Schedulable",
            "status": "False", "reason": "PodUnschedulable", "message": "", "lastTransitionTime": ago(10)}]},
        {"name": "c", "replicas": 0, "missingReplicas": -1}]);
    let w = ws(
        json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
        json!({"subsetStatuses": list}),
    );
    let c = computed(&w, &[], 6);
    assert_eq!(
        status_json(&c),
        json!({"observedGeneration": 3, "subsetStatuses": [
            {"name": "a", "replicas": 0, "missingReplicas": 2},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]})
    );
}

#[test]
fn a_second_computation_of_the_written_status_is_unchanged() {
    let w = ws(
        subsets(),
        json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"ghost": ago(20)}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}}),
    );
    let first = computed(&w, &[pod("cs-b1", Some("b"))], 6);
    assert!(!unchanged(w.status.as_ref(), &first.status));
    let mut written = w.clone();
    written.status = Some(first.status.clone());
    let second = computed(&written, &[pod("cs-b1", Some("b"))], 6);
    assert!(unchanged(written.status.as_ref(), &second.status));
}

#[test]
fn messages_are_openkruises() {
    assert_eq!(
        patch_cost_failed_message("ns", "ws", "cs-a1", 200),
        "WorkloadSpread ns/ws failed to patch deletion-cost annotation to %!d(string=200) for Pod ns/cs-a1"
    );
    assert_eq!(
        delete_failed_message("ns", "ws", "cs-p1", "a"),
        "Failed to delete unschedulabe Pod ns/cs-p1 in Subset a of WorkloadSpread ns/ws"
    );
}

#[test]
fn scenario_33_orphans_are_listed_with_their_quotas_and_move_when_adopted() {
    let ws = ws(subsets(), json!(null));
    let pods = [pod("cs-a1", Some("a")), pod("cs-old", None), {
        let mut unscheduled = pod("cs-new", None);
        unscheduled.spec.as_mut().unwrap().node_name = None;
        unscheduled
    }];
    let refs: Vec<&SlimPod> = pods.iter().collect();
    let mut grouped = group(&ws, &refs);
    let orphans: Vec<&str> = grouped
        .orphans
        .iter()
        .map(|(_, p)| p.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(orphans, ["cs-old"], "only a scheduled pod can be adopted");
    let quotas = grouped.quotas(&ws, 6, VERSION_IGNORED);
    assert_eq!(
        quotas,
        BTreeMap::from([
            ("a".to_owned(), 1),
            ("b".to_owned(), 3),
            ("c".to_owned(), i64::from(i32::MAX))
        ])
    );
    let (version, orphan) = grouped.orphans[0].clone();
    grouped.adopt(&version, orphan, "b");
    let c = compute(&ws, &grouped, 6, now());
    assert_eq!(
        status_json(&c)["subsetStatuses"],
        json!([
            element_json("a", 1, 1),
            element_json("b", 1, 2),
            element_json("c", 0, -1)
        ])
    );
    // cs-new stays in no subset.
    assert_eq!(
        deletion_costs(&ws, &grouped, 6, VERSION_IGNORED).unwrap()["cs-new"],
        -400
    );
}

fn element_json(name: &str, replicas: i32, missing: i32) -> Value {
    json!({"name": name, "replicas": replicas, "missingReplicas": missing})
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A `maxReplicas`: none, an int (negative too), a percent, or a malformed string.
    fn max_replicas() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            (-2i64..6).prop_map(Value::from),
            (0i64..150).prop_map(|p| Value::from(format!("{p}%"))),
            "[0-9x%]{0,4}".prop_map(Value::from),
        ]
    }

    /// An annotation value: this WorkloadSpread's subsets, another's, or garbage.
    fn annotation() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            prop::sample::select(vec!["a", "b", "c", "gone", ""])
                .prop_map(|s| Some(format!(r#"{{"name":"ws","subset":"{s}"}}"#))),
            Just(Some(r#"{"name":"other","subset":"a"}"#.to_owned())),
            "[{}a-z\":,]{0,12}".prop_map(Some),
        ]
    }

    fn phase() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["Running", "Pending", "Succeeded", "Failed", "Unknown"])
    }

    proptest! {
        #[test]
        fn no_input_panics_and_a_computed_status_is_a_fixed_point(
            maxes in prop::collection::vec(max_replicas(), 3),
            adaptive in any::<bool>(),
            pods in prop::collection::vec((annotation(), phase(), any::<bool>(), 0i64..100), 0..8),
            records in prop::collection::vec((prop::sample::select(vec!["a", "b", "c"]), "[a-z]{1,3}", 0i64..60, any::<bool>()), 0..6),
            replicas in 0i32..20,
        ) {
            let subsets: Vec<Value> = ["a", "b", "c"].iter().zip(&maxes).map(|(name, max)| {
                let mut s = json!({"name": name});
                if !max.is_null() { s["maxReplicas"] = max.clone(); }
                s
            }).collect();
            let mut list: Vec<Value> = ["a", "b", "c"].iter().map(|n| element_json(n, 0, 0)).collect();
            for (subset, key, age, deleting) in &records {
                let i = ["a", "b", "c"].iter().position(|s| s == subset).unwrap();
                let map = if *deleting { "deletingPods" } else { "creatingPods" };
                list[i][map][key.as_str()] = json!(ago(*age));
            }
            let mut w = ws(json!(subsets), json!({"versionedSubsetStatuses": {"versionIgnored": list}}));
            if adaptive {
                w.spec.schedule_strategy = serde_json::from_value(
                    json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}})).unwrap();
            }
            let pods: Vec<SlimPod> = pods.iter().enumerate().map(|(i, (annotation, phase, scheduled, age))| {
                let mut p = json!({"metadata": {"name": format!("p{i}"), "namespace": "ns",
                    "creationTimestamp": ago(*age), "annotations": {}},
                    "spec": {"containers": [{"name": "app"}]},
                    "status": {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "False",
                        "reason": "Unschedulable"}]}});
                if let Some(a) = annotation { p["metadata"]["annotations"][MATCHED_WORKLOADSPREAD_ANNOTATION] = json!(a); }
                if *scheduled { p["spec"]["nodeName"] = json!("n1"); }
                serde_json::from_value(p).unwrap()
            }).collect();
            let refs: Vec<&SlimPod> = pods.iter().collect();
            let grouped = group(&w, &refs);
            let first = compute(&w, &grouped, replicas, now());
            let _ = deletion_costs(&w, &grouped, replicas, VERSION_IGNORED);
            let mut written = w.clone();
            written.status = Some(first.status.clone());
            let second = compute(&written, &grouped, replicas, now());
            prop_assert!(unchanged(written.status.as_ref(), &second.status));
            prop_assert!(second.events.is_empty(), "events once: {:?}", second.events);
        }
    }
}
