//! The status decisions on the spec's common setup (§12): namespace `default`, pods `web-0..web-4` of
//! ReplicaSet `web-7d9` (Deployment `web`), all Running, Ready and consistent, labelled `app=web`; "now" is
//! `2026-03-01T10:00:00Z`.

use super::*;
use serde_json::{Value, json};

const NOW: &str = "2026-03-01T10:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn at(s: &str) -> Time {
    Time(s.parse().unwrap())
}

fn pod_json(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "labels": {"app": "web"},
            "annotations": {"pub.kruise.io/related-pub": "pub-web", "kruise.io/related-pub": "pub-web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "image": "nginx:1.25", "imageID": "docker-pullable://nginx@sha256:aa"}]}
    })
}

fn pod(value: Value) -> Arc<SlimPod> {
    Arc::new(serde_json::from_value(value).unwrap())
}

fn web_pods(n: usize) -> Vec<Arc<SlimPod>> {
    (0..n).map(|i| pod(pod_json(&format!("web-{i}")))).collect()
}

fn budget(spec: Value, status: Value) -> PodUnavailableBudget {
    serde_json::from_value(json!({
        "apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "generation": 2, "resourceVersion": "10"},
        "spec": spec, "status": status
    }))
    .unwrap()
}

fn max_unavailable(v: Value) -> PodUnavailableBudget {
    budget(
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": v}),
        Value::Null,
    )
}

fn desired(spec: Value, expected: i32) -> Result<i32, String> {
    desired_available(&serde_json::from_value(spec).unwrap(), expected)
}

#[test]
fn percent_max_unavailable_rounds_up() {
    // Scenario 1: 10 − ceil(2.5).
    assert_eq!(desired(json!({"maxUnavailable": "25%"}), 10), Ok(7));
    // Scenario 5: 15 − ceil(4.5).
    assert_eq!(desired(json!({"maxUnavailable": "30%"}), 15), Ok(10));
    assert_eq!(desired(json!({"maxUnavailable": 1}), 5), Ok(4));
    assert_eq!(
        desired(json!({"maxUnavailable": 8}), 5),
        Ok(0),
        "never below 0"
    );
    assert_eq!(desired(json!({"maxUnavailable": "100%"}), 5), Ok(0));
    // Scenario 4.
    assert_eq!(desired(json!({"maxUnavailable": 0}), 5), Ok(5));
}

#[test]
fn min_available_is_taken_as_is_or_as_a_percent_rounded_up() {
    // Scenario 2: ceil(2.5).
    assert_eq!(desired(json!({"minAvailable": "50%"}), 5), Ok(3));
    // Scenario 3: not clamped to the total.
    assert_eq!(desired(json!({"minAvailable": 8}), 5), Ok(8));
    assert_eq!(desired(json!({}), 5), Ok(0), "neither: 0");
    // maxUnavailable wins when both are set.
    assert_eq!(
        desired(json!({"maxUnavailable": 1, "minAvailable": 5}), 5),
        Ok(4)
    );
}

#[test]
fn strings_that_are_not_percents_are_errors_with_go_texts() {
    assert_eq!(
        desired(json!({"maxUnavailable": "3"}), 5),
        Err("invalid value for IntOrString: invalid type: string is not a percentage".into())
    );
    assert_eq!(
        desired(json!({"minAvailable": "abc%"}), 5),
        Err(r#"invalid value for IntOrString: invalid value "abc%": strconv.Atoi: parsing "abc": invalid syntax"#.into())
    );
    assert_eq!(
        desired(json!({"maxUnavailable": "%"}), 5),
        Err(r#"invalid value for IntOrString: invalid value "%": strconv.Atoi: parsing "": invalid syntax"#.into())
    );
    assert_eq!(
        desired(json!({"maxUnavailable": "99999999999999999999%"}), 5),
        Err(r#"invalid value for IntOrString: invalid value "99999999999999999999%": strconv.Atoi: parsing "99999999999999999999": value out of range"#.into())
    );
    // A sign is accepted, as by Atoi.
    assert_eq!(desired(json!({"maxUnavailable": "+20%"}), 10), Ok(8));
    assert_eq!(desired(json!({"minAvailable": "-20%"}), 10), Ok(-2));
}

#[test]
fn protect_total_replicas_comes_from_the_spec_then_the_annotation() {
    let mut b = max_unavailable(json!(1));
    assert_eq!(protect_total_replicas(&b), None);
    b.metadata.annotations =
        Some([("pub.kruise.io/protect-total-replicas".into(), "7".into())].into());
    assert_eq!(protect_total_replicas(&b), Some(7));
    b.spec.protect_total_replicas = Some(15);
    assert_eq!(protect_total_replicas(&b), Some(15), "the spec wins");
    b.spec.protect_total_replicas = None;
    b.metadata.annotations =
        Some([("pub.kruise.io/protect-total-replicas".into(), "many".into())].into());
    assert_eq!(protect_total_replicas(&b), None, "unparsable: ignored");
}

#[test]
fn selector_mode_keeps_active_matching_pods() {
    let mut pods = web_pods(2);
    let mut other = pod_json("db-0");
    other["metadata"]["labels"] = json!({"app": "db"});
    pods.push(pod(other));
    let mut done = pod_json("web-9");
    done["status"]["phase"] = json!("Succeeded");
    pods.push(pod(done));
    let sel: LabelSelector =
        serde_json::from_value(json!({"matchLabels": {"app": "web"}})).unwrap();
    let names = |pods: Vec<Arc<SlimPod>>| -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    };
    assert_eq!(
        names(selected_pods(&pods, Some(&sel)).unwrap()),
        ["web-0", "web-1"]
    );
    assert!(selected_pods(&pods, None).unwrap().is_empty(), "nil: none");
    assert_eq!(
        selected_pods(&pods, Some(&LabelSelector::default()))
            .unwrap()
            .len(),
        3,
        "empty: every active pod"
    );
    let bad: LabelSelector = serde_json::from_value(
        json!({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}),
    )
    .unwrap();
    assert_eq!(
        selected_pods(&pods, Some(&bad)).unwrap_err(),
        "\"Near\" is not a valid label selector operator"
    );
}

fn workload(uid: &str, replicas: i32) -> Workload {
    Workload {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: uid.into(),
        uid: uid.into(),
        replicas,
        selector: None,
        deleting: false,
    }
}

#[test]
fn selector_mode_counts_each_workload_once_and_unknown_replicas_as_nothing() {
    let web = workload("web", 5);
    // Two ReplicaSets of one Deployment resolve to it twice: counted once.
    assert_eq!(expected_from_workloads([&web, &web]), 5);
    let job = Workload {
        kind: "Job".into(),
        replicas: UNKNOWN_REPLICAS,
        ..workload("job", 0)
    };
    // §10.4: OpenKruise would give 4.
    assert_eq!(expected_from_workloads([&web, &job]), 5);
    let going = Workload {
        deleting: true,
        ..workload("old", 3)
    };
    assert_eq!(expected_from_workloads([&web, &going]), 5);
    assert_eq!(expected_from_workloads([]), 0);
}

#[test]
fn distinct_controllers_skip_bare_pods() {
    let mut pods = web_pods(3);
    let mut bare = pod_json("tool");
    bare["metadata"]["ownerReferences"] = Value::Null;
    pods.push(pod(bare));
    let mut other = pod_json("web-x");
    other["metadata"]["ownerReferences"][0]["uid"] = json!("rs-old");
    other["metadata"]["ownerReferences"][0]["name"] = json!("web-6c5");
    pods.push(pod(other));
    let controllers = distinct_controllers(&pods);
    let uids: Vec<&str> = controllers.iter().map(|r| r.uid.as_str()).collect();
    assert_eq!(uids, ["rs-old", "rs-uid"]);
}

#[test]
fn target_mode_takes_owned_pods_then_the_selector() {
    let pods = web_pods(3);
    let target = TargetWorkload {
        owner_uids: ["rs-uid".to_owned()].into(),
        replicas: 3,
        selector: None,
    };
    let (found, expected) = target_pods(&pods, Some(&target));
    assert_eq!((found.len(), expected), (3, 3));
    assert_eq!(target_pods(&pods, None).1, 0, "not found: expected 0");
    let scaled_down = TargetWorkload {
        replicas: 0,
        ..target.clone()
    };
    assert_eq!(
        target_pods(&pods, Some(&scaled_down)),
        (Vec::new(), 0),
        "zero replicas: no pods even though some exist"
    );
    let other_owner = TargetWorkload {
        owner_uids: ["gs-uid".to_owned()].into(),
        replicas: 4,
        selector: Some(serde_json::from_value(json!({"matchLabels": {"app": "web"}})).unwrap()),
    };
    let (found, expected) = target_pods(&pods, Some(&other_owner));
    assert_eq!(
        (found.len(), expected),
        (3, 4),
        "none owned: the scale selector"
    );
    let no_selector = TargetWorkload {
        selector: None,
        ..other_owner
    };
    assert_eq!(target_pods(&pods, Some(&no_selector)), (Vec::new(), 4));
}

fn computed(b: &PodUnavailableBudget, pods: &[Arc<SlimPod>], expected: i32) -> Computed {
    let desired = desired_available(&b.spec, expected).unwrap();
    compute(b, pods, expected, desired, now(), false)
}

#[test]
fn all_available_leaves_the_max_unavailable_as_budget() {
    // Scenario 1.
    let b = max_unavailable(json!("25%"));
    let c = computed(&b, &web_pods(10), 10);
    assert_eq!(
        serde_json::to_value(&c.status).unwrap(),
        json!({"observedGeneration": 2, "unavailableAllowed": 3, "currentAvailable": 10,
               "desiredAvailable": 7, "totalReplicas": 10})
    );
    assert_eq!((c.not_deleted.len(), c.recheck), (0, None));
}

#[test]
fn a_not_ready_pod_is_not_available() {
    // Scenario 2.
    let mut pods = web_pods(3);
    let mut unready = pod_json("web-3");
    unready["status"]["conditions"][0]["status"] = json!("False");
    pods.push(pod(unready));
    pods.push(pod(pod_json("web-4")));
    let b = budget(
        json!({"selector": {"matchLabels": {"app": "web"}}, "minAvailable": "50%"}),
        Value::Null,
    );
    let c = computed(&b, &pods, 5);
    assert_eq!(
        (
            c.status.desired_available,
            c.status.current_available,
            c.status.unavailable_allowed
        ),
        (3, 4, 1)
    );
}

#[test]
fn an_unavailable_label_makes_a_ready_pod_unavailable() {
    // Scenario 12.
    let mut pods = web_pods(5);
    let mut labelled = pod_json("web-3");
    labelled["metadata"]["labels"]["unavailable-pod.kruise.io/drain"] = json!("true");
    pods[3] = pod(labelled);
    let c = computed(&max_unavailable(json!(1)), &pods, 5);
    assert_eq!(
        (c.status.current_available, c.status.unavailable_allowed),
        (4, 0)
    );
}

#[test]
fn bare_pods_count_as_available_but_not_as_expected() {
    // Scenario 14: total 5 from the Deployment, current 6.
    let mut pods = web_pods(5);
    let mut bare = pod_json("tool");
    bare["metadata"]["ownerReferences"] = Value::Null;
    pods.push(pod(bare));
    assert_eq!(
        distinct_controllers(&pods).len(),
        1,
        "the bare pod has none"
    );
    let expected = expected_from_workloads([&workload("web", 5)]);
    let c = computed(&max_unavailable(json!(1)), &pods, expected);
    assert_eq!(
        (
            c.status.total_replicas,
            c.status.desired_available,
            c.status.current_available,
            c.status.unavailable_allowed
        ),
        (5, 4, 6, 2)
    );
}

#[test]
fn an_expired_disruption_is_dropped_with_an_event_and_the_pod_counts_again() {
    // Scenario 7.
    let b = budget(
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        json!({"disruptedPods": {"web-1": "2026-03-01T09:59:35Z"}, "unavailableAllowed": 0,
               "currentAvailable": 4, "desiredAvailable": 4, "totalReplicas": 5}),
    );
    let c = computed(&b, &web_pods(5), 5);
    assert!(c.status.disrupted_pods.is_empty());
    assert_eq!(c.not_deleted, ["web-1"]);
    assert_eq!(
        (c.status.current_available, c.status.unavailable_allowed),
        (5, 1)
    );
    assert_eq!(c.recheck, None);
    assert_eq!(
        not_deleted_message("default", "pub-web"),
        "Pod was expected by PUB default/pub-web to be deleted but it wasn't"
    );
}

#[test]
fn a_fresh_disruption_is_kept_and_rechecked_when_it_expires() {
    // Scenario 8.
    let b = budget(
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        json!({"disruptedPods": {"web-1": "2026-03-01T09:59:55Z"}, "unavailableAllowed": 0,
               "currentAvailable": 4, "desiredAvailable": 4, "totalReplicas": 5}),
    );
    let c = computed(&b, &web_pods(5), 5);
    assert_eq!(
        c.status.disrupted_pods,
        [("web-1".to_owned(), at("2026-03-01T09:59:55Z"))].into()
    );
    assert!(c.not_deleted.is_empty());
    assert_eq!(
        (c.status.current_available, c.status.unavailable_allowed),
        (4, 0)
    );
    assert_eq!(
        requeue_after(c.recheck, now()),
        Some(Duration::from_secs(15))
    );
}

#[test]
fn an_unavailable_entry_is_kept_for_ten_seconds_then_dropped_silently() {
    // Scenario 9.
    let b = budget(
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        json!({"unavailablePods": {"web-2": "2026-03-01T09:59:57Z"}}),
    );
    let mut pods = web_pods(5);
    let mut unready = pod_json("web-2");
    unready["status"]["conditions"][0]["status"] = json!("False");
    pods[2] = pod(unready);
    let c = computed(&b, &pods, 5);
    assert_eq!(c.status.unavailable_pods.len(), 1);
    assert_eq!(
        requeue_after(c.recheck, now()),
        Some(Duration::from_secs(7))
    );
    let later: Timestamp = "2026-03-01T10:00:08Z".parse().unwrap();
    let c = compute(&b, &pods, 5, 4, later, false);
    assert!(c.status.unavailable_pods.is_empty());
    assert!(c.not_deleted.is_empty(), "no event for unavailable pods");
    assert_eq!(c.status.current_available, 4, "web-2 counts only if ready");
}

#[test]
fn an_entry_at_its_very_expiry_is_kept_and_looked_at_just_after() {
    let b = budget(
        json!({"maxUnavailable": 1}),
        json!({"disruptedPods": {"web-0": "2026-03-01T09:59:40Z"}}),
    );
    let c = computed(&b, &web_pods(1), 1);
    assert_eq!(c.status.disrupted_pods.len(), 1, "not before now: kept");
    assert_eq!(
        requeue_after(c.recheck, now()),
        Some(Duration::from_millis(100))
    );
}

#[test]
fn entries_of_pods_gone_or_being_deleted_are_dropped_silently() {
    // Scenario 10: web-4 has a deletionTimestamp; ghost is gone.
    let b = budget(
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        json!({"disruptedPods": {"web-4": "2026-03-01T09:59:59Z", "ghost": "2026-03-01T09:59:59Z"},
               "unavailablePods": {"gone": "2026-03-01T09:59:59Z"}}),
    );
    let mut pods = web_pods(4);
    let mut deleting = pod_json("web-4");
    deleting["metadata"]["deletionTimestamp"] = json!("2026-03-01T09:59:59Z");
    pods.push(pod(deleting));
    let c = computed(&b, &pods, 5);
    assert!(c.status.disrupted_pods.is_empty() && c.status.unavailable_pods.is_empty());
    assert!(c.not_deleted.is_empty());
    assert_eq!(c.status.current_available, 4, "web-4 is not counted");
    assert_eq!(c.recheck, None);
}

#[test]
fn an_entry_the_gate_added_to_the_base_is_kept() {
    let b = budget(
        json!({"maxUnavailable": 2}),
        json!({"disruptedPods": {"web-3": "2026-03-01T10:00:00Z"}, "unavailableAllowed": 1}),
    );
    let c = computed(&b, &web_pods(5), 5);
    assert!(c.status.disrupted_pods.contains_key("web-3"));
    assert_eq!(
        (c.status.current_available, c.status.unavailable_allowed),
        (4, 1)
    );
}

#[test]
fn a_time_too_far_out_never_expires() {
    let mut b = budget(json!({"maxUnavailable": 1}), json!({}));
    if let Some(status) = &mut b.status {
        status
            .disrupted_pods
            .insert("web-0".into(), Time(Timestamp::MAX));
    }
    let c = computed(&b, &web_pods(1), 1);
    assert_eq!(c.status.disrupted_pods.len(), 1);
    assert_eq!(c.recheck, None);
}

#[test]
fn unchanged_compares_counters_generation_and_maps_as_instants() {
    // Scenario 11.
    let b = budget(
        json!({"maxUnavailable": 1}),
        json!({"observedGeneration": 2, "disruptedPods": {"web-1": "2026-03-01T11:59:55+02:00"},
               "unavailablePods": null, "unavailableAllowed": 0, "currentAvailable": 4,
               "desiredAvailable": 4, "totalReplicas": 5}),
    );
    let c = computed(&b, &web_pods(5), 5);
    assert!(unchanged(b.status.as_ref(), &c.status));
    let mut older = b.clone();
    older.metadata.generation = Some(3);
    let c = computed(&older, &web_pods(5), 5);
    assert!(
        !unchanged(older.status.as_ref(), &c.status),
        "a newer generation is written"
    );
    assert!(unchanged(None, &PodUnavailableBudgetStatus::default()));
    let c = computed(&max_unavailable(json!(1)), &[], 0);
    assert!(
        !unchanged(None, &c.status),
        "observedGeneration 2 is news to a PUB without status"
    );
}

#[test]
fn pods_lacking_the_annotation_are_stamped() {
    // Scenario 13.
    let mut pods = web_pods(2);
    let mut new = pod_json("web-5");
    new["metadata"]["annotations"] = json!({});
    pods.push(pod(new));
    let mut legacy = pod_json("web-6");
    legacy["metadata"]["annotations"] = json!({"kruise.io/related-pub": "pub-web"});
    pods.push(pod(legacy));
    let names: Vec<String> = pods_to_stamp(&pods)
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["web-5", "web-6"]);
}
