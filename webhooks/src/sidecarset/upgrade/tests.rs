use super::order::{active_pods_cmp, sort};
use super::pod_edit::{
    EditError, flip_pod, hot_upgrade_target, update_pod, upgradable_condition_patch,
};
use super::*;
use serde_json::{Value, json};

/// sidecarset1 after an image change: `dns-f` moves from `dns:1.0` (hash `h1`) to `dns:2.0` (hash `h2`);
/// the without-image hash stays `w1`.
fn set_json() -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "sidecarset1", "resourceVersion": "200",
            "annotations": {"kruise.io/sidecarset-hash": "h2", "kruise.io/sidecarset-hash-without-image": "w1"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "dns-f", "image": "dns:2.0", "podInjectPolicy": "BeforeAppContainer",
                "shareVolumePolicy": {"type": "disabled"}, "upgradeStrategy": {"upgradeType": "ColdUpgrade"}}],
            "updateStrategy": {"type": "RollingUpdate"}
        },
        "status": {"latestRevision": "sidecarset1-rev2"}
    })
}

fn set_with(edit: impl FnOnce(&mut Value)) -> SidecarSet {
    let mut v = set_json();
    edit(&mut v);
    serde_json::from_value(v).unwrap()
}

fn set() -> SidecarSet {
    set_with(|_| {})
}

fn record(hash: &str) -> String {
    json!({"sidecarset1": {"updateTimestamp": "2025-01-02T03:04:05Z", "hash": hash,
        "sidecarSetName": "sidecarset1", "sidecarList": ["dns-f"], "controllerRevision": "sidecarset1-rev1"}})
    .to_string()
}

/// A running pod injected by sidecarset1, at `h2` with `dns:2.0` when `updated`, else at `h1` with `dns:1.0`.
fn pod_json(name: &str, updated: bool, ready: bool) -> Value {
    let (hash, image) = if updated {
        ("h2", "dns:2.0")
    } else {
        ("h1", "dns:1.0")
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "5", "labels": {"app": "web"},
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "annotations": {"kruise.io/sidecarset-injected-list": "sidecarset1",
                "kruise.io/sidecarset-hash": record(hash),
                "kruise.io/sidecarset-hash-without-image": record("w1"),
                "other.io/keep": "yes"}},
        "spec": {"nodeName": "n1", "containers": [
            {"name": "dns-f", "image": image, "env": [{"name": "IS_INJECTED", "value": "true"}], "futureField": 1},
            {"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                "lastTransitionTime": "2025-01-01T00:01:00Z"}],
            "containerStatuses": [
                {"name": "dns-f", "image": image, "imageID": format!("docker-pullable://{image}@sha256:aa"), "ready": ready},
                {"name": "app", "image": "app:1", "imageID": "docker-pullable://app@sha256:bb", "ready": ready}]}
    })
}

fn slim(v: Value) -> Arc<SlimPod> {
    Arc::new(serde_json::from_value(v).unwrap())
}

/// `total` pods: the first `updated` updated (of which the first `updated_ready` ready), the rest not
/// updated and ready.
fn population(total: usize, updated: usize, updated_ready: usize) -> Vec<Arc<SlimPod>> {
    (0..total)
        .map(|i| {
            let is_updated = i < updated;
            let ready = !is_updated || i < updated_ready;
            slim(pod_json(&format!("pod-{i:04}"), is_updated, ready))
        })
        .collect()
}

fn update_count(set: &SidecarSet, pods: &[Arc<SlimPod>]) -> usize {
    match plan_round(set, pods) {
        Round::Update(r) => r.update.len(),
        other => panic!("expected an update round, got {other:?}"),
    }
}

fn strategy(partition: Value, max_unavailable: Value) -> SidecarSet {
    set_with(|v| {
        v["spec"]["updateStrategy"]["partition"] = partition;
        v["spec"]["updateStrategy"]["maxUnavailable"] = max_unavailable;
    })
}

#[test]
fn worked_example_100_pods_30_updated_26_ready_max_unavailable_10_updates_6() {
    let pods = population(100, 30, 26);
    assert_eq!(update_count(&strategy(json!(0), json!(10)), &pods), 6);
}

#[test]
fn worked_example_partition_180_max_unavailable_100_updates_20() {
    let pods = population(1000, 800, 760);
    assert_eq!(update_count(&strategy(json!(180), json!(100)), &pods), 20);
    // §11 scenario 65: with partition 100 it updates 60.
    assert_eq!(update_count(&strategy(json!(100), json!(100)), &pods), 60);
}

#[test]
fn worked_example_partition_18_percent_updates_20() {
    let pods = population(1000, 800, 760);
    assert_eq!(update_count(&strategy(json!("18%"), json!(100)), &pods), 20);
}

#[test]
fn worked_example_max_unavailable_5_percent_with_50_unavailable_updates_none() {
    let pods = population(1000, 300, 250);
    assert_eq!(update_count(&strategy(json!(0), json!("5%")), &pods), 0);
}

#[test]
fn partition_int_percent_and_the_count_minus_one_cap() {
    assert_eq!(partition(&strategy(json!(3), json!(1)), 10), Ok(3));
    assert_eq!(partition(&strategy(json!("25%"), json!(1)), 10), Ok(3));
    // 99% of 10 rounds up to 10, capped at 9; 100% is not capped; a single pod is not capped.
    assert_eq!(partition(&strategy(json!("99%"), json!(1)), 10), Ok(9));
    assert_eq!(partition(&strategy(json!("100%"), json!(1)), 10), Ok(10));
    assert_eq!(partition(&strategy(json!("50%"), json!(1)), 1), Ok(1));
    assert!(partition(&strategy(json!("abc%"), json!(1)), 10).is_err());
    // A huge percent neither overflows nor panics.
    assert_eq!(
        partition(&strategy(json!("9223372036854775807%"), json!(1)), 10),
        Ok(usize::MAX.div_ceil(100))
    );
    assert_eq!(
        max_unavailable(&strategy(json!(0), json!("-5%")), 10),
        Ok(0)
    );
    assert_eq!(max_unavailable(&set(), 10), Ok(1));
    assert_eq!(
        max_unavailable(&strategy(json!(0), json!("15%")), 10),
        Ok(2)
    );
}

#[test]
fn an_unreadable_partition_stops_the_round_instead_of_updating_everything() {
    let pods = population(10, 0, 0);
    assert!(matches!(
        plan_round(&strategy(json!("abc%"), json!(1)), &pods),
        Round::Stop(Stop::InvalidStrategy(_))
    ));
}

#[test]
fn upgrade_count_always_takes_not_ready_pods() {
    // Not-ready candidates are taken although the budget is spent; the walk stops at the first ready one
    // over budget (as OpenKruise's loop breaks), so a not-ready pod behind it waits.
    assert_eq!(upgrade_count(&[false, false, true], 0, 1, 5), vec![0, 1]);
    assert_eq!(upgrade_count(&[true, false], 0, 1, 1), Vec::<usize>::new());
    assert_eq!(upgrade_count(&[true, true, true], 0, 2, 0), vec![0, 1]);
    assert_eq!(upgrade_count(&[true, true, true], 2, 5, 0), vec![0]);
    assert_eq!(upgrade_count(&[true], 3, 5, 0), Vec::<usize>::new());
}

#[test]
fn paused_and_not_update_stop_before_anything() {
    let pods = population(3, 0, 0);
    let paused = set_with(|v| v["spec"]["updateStrategy"]["paused"] = json!(true));
    assert_eq!(plan_round(&paused, &pods), Round::Stop(Stop::Paused));
    let not_update = set_with(|v| v["spec"]["updateStrategy"]["type"] = json!("NotUpdate"));
    assert_eq!(plan_round(&not_update, &pods), Round::Stop(Stop::NotUpdate));
    assert_eq!(
        plan_round(&set(), &population(3, 3, 3)),
        Round::Stop(Stop::AllUpdated)
    );
}

#[test]
fn update_strategy_selector_limits_candidates_and_an_invalid_one_selects_none() {
    let mut pods = population(3, 0, 0);
    let mut canary = pod_json("pod-0001", false, true);
    canary["metadata"]["labels"]["canary"] = json!("true");
    pods[1] = slim(canary);
    let selected = set_with(|v| {
        v["spec"]["updateStrategy"]["selector"] = json!({"matchLabels": {"canary": "true"}});
        v["spec"]["updateStrategy"]["maxUnavailable"] = json!(3);
    });
    let Round::Update(round) = plan_round(&selected, &pods) else {
        panic!()
    };
    let names: Vec<_> = round
        .update
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["pod-0001"]);
    let invalid = set_with(|v| {
        v["spec"]["updateStrategy"]["selector"] =
            json!({"matchExpressions": [{"key": "a", "operator": "badOp", "values": ["x"]}]});
    });
    let Round::Update(round) = plan_round(&invalid, &pods) else {
        panic!()
    };
    assert!(round.update.is_empty());
    assert!(round.selector_error.is_some());
}

#[test]
fn a_pod_whose_without_image_hash_differs_is_not_upgradable() {
    let mut pods = population(3, 0, 0);
    let mut changed = pod_json("pod-0000", false, true);
    changed["metadata"]["annotations"]["kruise.io/sidecarset-hash-without-image"] =
        json!(record("w0"));
    pods[0] = slim(changed);
    let Round::Update(round) = plan_round(&strategy(json!(0), json!(5)), &pods) else {
        panic!()
    };
    assert_eq!(round.not_upgradable.len(), 1);
    assert_eq!(
        round.not_upgradable[0].metadata.name.as_deref(),
        Some("pod-0000")
    );
    assert_eq!(round.update.len(), 2);
    assert_eq!(
        not_upgradable_message(1),
        "SidecarSet in-place update detected 1 not upgradable pod(s) in this round, will skip them."
    );
}

#[test]
fn a_ready_sidecar_still_being_updated_is_skipped() {
    let mut v = pod_json("pod-0000", false, true);
    // The spec says dns:1.0 but the status still runs dns:0.9 with the recorded imageID: in progress.
    v["status"]["containerStatuses"][0]["image"] = json!("dns:0.9");
    v["metadata"]["annotations"]["kruise.io/sidecarset-inplace-update-state"] = json!(
        r#"{"sidecarset1":{"revision":"h1","updateTimestamp":"2025-01-01T00:00:00Z","lastContainerStatuses":{"dns-f":{"imageID":"docker-pullable://dns:1.0@sha256:aa"}}}}"#
    );
    let pods = vec![slim(v), slim(pod_json("pod-0001", false, true))];
    let Round::Update(round) = plan_round(&strategy(json!(0), json!(5)), &pods) else {
        panic!()
    };
    assert_eq!(round.in_progress, 1);
    assert_eq!(round.update.len(), 1);
}

fn named(pods: &[Arc<SlimPod>]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

#[test]
fn active_pods_order_unscheduled_pending_not_ready_short_ready_restarts_newer() {
    let base = || pod_json("p", false, true);
    let mut unscheduled = base();
    unscheduled["spec"]["nodeName"] = json!("");
    let mut pending = base();
    pending["status"]["phase"] = json!("Pending");
    let not_ready = pod_json("p", false, false);
    let mut recently_ready = base();
    recently_ready["status"]["conditions"][0]["lastTransitionTime"] = json!("2025-01-01T00:05:00Z");
    let mut restarted = base();
    restarted["status"]["containerStatuses"][1]["restartCount"] = json!(3);
    let mut newer = base();
    newer["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:30Z");
    let order = [
        unscheduled,
        pending,
        not_ready,
        recently_ready,
        restarted,
        newer,
        base(),
    ];
    let pods: Vec<SlimPod> = order
        .iter()
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .collect();
    for i in 0..pods.len() {
        for j in i + 1..pods.len() {
            assert_eq!(
                active_pods_cmp(&pods[i], &pods[j]),
                std::cmp::Ordering::Less,
                "{i} before {j}"
            );
            assert_eq!(
                active_pods_cmp(&pods[j], &pods[i]),
                std::cmp::Ordering::Greater,
                "{j} after {i}"
            );
        }
    }
}

fn labelled(name: &str, labels: Value) -> Arc<SlimPod> {
    let mut v = pod_json(name, false, true);
    for (k, val) in labels.as_object().unwrap() {
        v["metadata"]["labels"][k] = val.clone();
    }
    slim(v)
}

#[test]
fn priority_weights_add_up_and_higher_goes_first() {
    let set = set_with(|v| {
        v["spec"]["updateStrategy"]["priorityStrategy"] = json!({"weightPriority": [
            {"weight": 50, "matchSelector": {"matchLabels": {"key": "a"}}},
            {"weight": 30, "matchSelector": {"matchLabels": {"tier": "x"}}}]});
    });
    let pods = vec![
        labelled("p0", json!({})),
        labelled("p1", json!({"tier": "x"})),
        labelled("p2", json!({"key": "a"})),
        labelled("p3", json!({"key": "a", "tier": "x"})),
    ];
    assert_eq!(
        named(&sort(&set, pods.clone(), &pods)),
        ["p3", "p2", "p1", "p0"]
    );
}

#[test]
fn priority_ordered_key_uses_the_integer_suffix() {
    let set = set_with(|v| {
        v["spec"]["updateStrategy"]["priorityStrategy"] =
            json!({"orderPriority": [{"orderedKey": "rank"}, {"orderedKey": "other"}]});
    });
    let pods = vec![
        labelled("p0", json!({"rank": "x"})),
        labelled("p1", json!({"rank": "node-2"})),
        labelled("p2", json!({"rank": "node-10"})),
        labelled("p3", json!({"other": "7"})),
    ];
    assert_eq!(
        named(&sort(&set, pods.clone(), &pods)),
        ["p2", "p3", "p1", "p0"]
    );
}

#[test]
fn scatter_spreads_matching_pods_and_keeps_the_last_one_at_the_end() {
    let set = set_with(|v| {
        v["spec"]["updateStrategy"]["scatterStrategy"] = json!([{"key": "zone", "value": "a"}]);
    });
    let zone = |z: &str| json!({"zone": z});
    let pods = vec![
        labelled("p0", zone("a")),
        labelled("p1", zone("a")),
        labelled("p2", zone("a")),
        labelled("p3", zone("b")),
        labelled("p4", zone("b")),
        labelled("p5", zone("b")),
        labelled("p6", zone("b")),
        labelled("p7", zone("b")),
    ];
    // Groups of 1 matched and round(5/2) = 3 unmatched, the last matched one kept for the end.
    assert_eq!(
        named(&sort(&set, pods.clone(), &pods)),
        ["p0", "p3", "p4", "p5", "p1", "p6", "p7", "p2"]
    );
    // `*` expands to every value found: zone=b (5 pods) first, then zone=a (3 pods).
    let star = set_with(|v| {
        v["spec"]["updateStrategy"]["scatterStrategy"] = json!([{"key": "zone", "value": "*"}]);
    });
    let sorted = named(&sort(&star, pods.clone(), &pods));
    assert_eq!(sorted.len(), 8);
    assert_ne!(sorted, named(&pods));
}

#[test]
fn update_pod_edits_only_images_and_annotations_and_keeps_unknown_fields() {
    let set = set_with(|v| {
        v["spec"]["patchPodMetadata"] =
            json!([{"annotations": {"patched": "1"}, "patchPolicy": "Retain"}]);
    });
    let mut pod = pod_json("pod-0000", false, true);
    let before = pod.clone();
    let changed = update_pod(&mut pod, &set, "2026-01-01T00:00:00Z").unwrap();
    assert_eq!(changed, ["dns-f"]);
    let mut expected = before;
    expected["spec"]["containers"][0]["image"] = json!("dns:2.0");
    let ann = &mut expected["metadata"]["annotations"];
    ann["kruise.io/sidecarset-hash"] = json!(
        r#"{"sidecarset1":{"updateTimestamp":"2026-01-01T00:00:00Z","hash":"h2","sidecarSetName":"sidecarset1","sidecarList":["dns-f"],"controllerRevision":"sidecarset1-rev2"}}"#
    );
    ann["kruise.io/sidecarset-inplace-update-state"] = json!(
        r#"{"sidecarset1":{"lastContainerStatuses":{"dns-f":{"imageID":"docker-pullable://dns:1.0@sha256:aa"}},"revision":"h2","updateTimestamp":"2026-01-01T00:00:00Z"}}"#
    );
    ann["patched"] = json!("1");
    assert_eq!(pod, expected);
}

#[test]
fn update_pod_adds_a_missing_injected_list_and_reads_the_legacy_hash() {
    let mut pod = pod_json("pod-0000", false, true);
    let ann = pod["metadata"]["annotations"].as_object_mut().unwrap();
    ann.remove("kruise.io/sidecarset-injected-list");
    ann.insert(
        "kruise.io/sidecarset-hash".into(),
        json!(r#"{"sidecarset1":"h1","other":"x"}"#),
    );
    update_pod(&mut pod, &set(), "2026-01-01T00:00:00Z").unwrap();
    let ann = &pod["metadata"]["annotations"];
    assert_eq!(ann["kruise.io/sidecarset-injected-list"], "sidecarset1");
    assert_eq!(
        ann["kruise.io/sidecarset-hash"],
        r#"{"other":{"updateTimestamp":null,"hash":"x","sidecarSetName":"other","sidecarList":null},"sidecarset1":{"updateTimestamp":"2026-01-01T00:00:00Z","hash":"h2","sidecarSetName":"sidecarset1","sidecarList":["dns-f"],"controllerRevision":"sidecarset1-rev2"}}"#
    );
}

#[test]
fn update_pod_refuses_corrupt_annotations_and_leaves_the_image() {
    for (key, value) in [
        ("kruise.io/sidecarset-hash", "not-json"),
        ("kruise.io/sidecarset-inplace-update-state", "{broken"),
    ] {
        let mut pod = pod_json("pod-0000", false, true);
        pod["metadata"]["annotations"][key] = json!(value);
        let err = update_pod(&mut pod, &set(), "now").unwrap_err();
        assert!(matches!(err, EditError::Corrupt { .. }), "{key}: {err:?}");
        assert_eq!(pod["spec"]["containers"][0]["image"], "dns:1.0");
    }
    let mut updated = pod_json("pod-0000", true, true);
    assert!(matches!(
        update_pod(&mut updated, &set(), "now"),
        Err(EditError::AlreadyUpdated(_))
    ));
    let mut not_a_pod = json!([1, 2]);
    assert!(update_pod(&mut not_a_pod, &set(), "now").is_err());
}

fn hot_set() -> SidecarSet {
    set_with(|v| {
        v["spec"]["containers"][0]["upgradeStrategy"] =
            json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"});
    })
}

/// A hot-upgrade pod: `dns-f-1` working on `dns:1.0`, `dns-f-2` idle on the empty image, both ready.
fn hot_pod() -> Value {
    json!({
        "metadata": {"name": "hot", "namespace": "default", "labels": {"app": "web"},
            "annotations": {"kruise.io/sidecarset-injected-list": "sidecarset1",
                "kruise.io/sidecarset-hash": record("h1"),
                "kruise.io/sidecarset-hash-without-image": record("w1"),
                "kruise.io/sidecarset-working-hotupgrade-container": r#"{"dns-f":"dns-f-1"}"#,
                "version.sidecarset.kruise.io/dns-f-1": "1", "versionalt.sidecarset.kruise.io/dns-f-1": "0",
                "version.sidecarset.kruise.io/dns-f-2": "0", "versionalt.sidecarset.kruise.io/dns-f-2": "1"}},
        "spec": {"nodeName": "n1", "containers": [
            {"name": "dns-f-1", "image": "dns:1.0"}, {"name": "dns-f-2", "image": "empty:1"},
            {"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "dns-f-1", "image": "dns:1.0", "imageID": "i-dns1", "ready": true},
                {"name": "dns-f-2", "image": "empty:1", "imageID": "i-empty", "ready": true},
                {"name": "app", "image": "app:1", "imageID": "i-app", "ready": true}]}
    })
}

fn set_status(pod: &mut Value, name: &str, image: &str, image_id: &str, ready: bool) {
    for s in pod["status"]["containerStatuses"].as_array_mut().unwrap() {
        if s["name"] == name {
            s["image"] = json!(image);
            s["imageID"] = json!(image_id);
            s["ready"] = json!(ready);
        }
    }
}

#[test]
fn hot_upgrade_target_prefers_the_empty_copy_then_the_unready_one_then_the_idle_one() {
    let set = hot_set();
    let c = &set.spec.containers[0];
    let pod = hot_pod();
    let s = |v: &Value| -> SlimPod { serde_json::from_value(v.clone()).unwrap() };
    assert_eq!(
        hot_upgrade_target(&set, &s(&pod), c),
        ("dns-f-2".into(), "dns-f-1".into())
    );
    let mut both = pod.clone();
    both["spec"]["containers"][1]["image"] = json!("dns:0.9");
    set_status(&mut both, "dns-f-2", "dns:0.9", "i-old", true);
    assert_eq!(
        hot_upgrade_target(&set, &s(&both), c),
        ("dns-f-2".into(), "dns-f-1".into())
    );
    set_status(&mut both, "dns-f-1", "dns:1.0", "i-dns1", false);
    assert_eq!(
        hot_upgrade_target(&set, &s(&both), c),
        ("dns-f-1".into(), "dns-f-2".into())
    );
}

#[test]
fn hot_upgrade_updates_the_idle_copy_then_flips_the_old_one_to_empty() {
    let set = hot_set();
    let mut pod = hot_pod();
    let changed = update_pod(&mut pod, &set, "t1").unwrap();
    assert_eq!(changed, ["dns-f-2"]);
    let ann = &pod["metadata"]["annotations"];
    assert_eq!(
        pod["spec"]["containers"][0]["image"], "dns:1.0",
        "the old copy keeps working"
    );
    assert_eq!(pod["spec"]["containers"][1]["image"], "dns:2.0");
    assert_eq!(
        ann["kruise.io/sidecarset-working-hotupgrade-container"],
        r#"{"dns-f":"dns-f-2"}"#
    );
    assert_eq!(ann["version.sidecarset.kruise.io/dns-f-2"], "200");
    assert_eq!(ann["versionalt.sidecarset.kruise.io/dns-f-2"], "1");
    assert_eq!(ann["versionalt.sidecarset.kruise.io/dns-f-1"], "200");
    assert_eq!(ann["version.sidecarset.kruise.io/dns-f-1"], "1");

    // Not yet: the new copy has not restarted on its image.
    let s = |v: &Value| -> SlimPod { serde_json::from_value(v.clone()).unwrap() };
    assert!(!needs_flip(&set, &s(&pod)));
    set_status(&mut pod, "dns-f-2", "dns:2.0", "i-dns2", true);
    assert!(needs_flip(&set, &s(&pod)));
    assert_eq!(
        plan_round(&set, &[Arc::new(s(&pod))]),
        Round::Flip(vec![Arc::new(s(&pod))])
    );

    let flipped = flip_pod(&mut pod, &set, "t2").unwrap();
    assert_eq!(flipped, ["dns-f-1"]);
    assert_eq!(pod["spec"]["containers"][0]["image"], "empty:1");
    assert_eq!(pod["spec"]["containers"][1]["image"], "dns:2.0");
    let ann = &pod["metadata"]["annotations"];
    assert_eq!(ann["version.sidecarset.kruise.io/dns-f-1"], "0");
    assert_eq!(ann["versionalt.sidecarset.kruise.io/dns-f-2"], "0");
    assert_eq!(
        ann["kruise.io/sidecarset-inplace-update-state"],
        r#"{"sidecarset1":{"lastContainerStatuses":{"dns-f-1":{"imageID":"i-dns1"},"dns-f-2":{"imageID":"i-empty"}},"revision":"h2","updateTimestamp":"t1"}}"#
    );
    // Once flipped, nothing more to flip.
    set_status(&mut pod, "dns-f-1", "empty:1", "i-empty", true);
    assert!(!needs_flip(&set, &s(&pod)));
    assert!(flip_pod(&mut pod.clone(), &set, "t3").unwrap().is_empty());
}

#[test]
fn a_flip_waits_for_the_working_copy_to_be_ready() {
    let set = hot_set();
    let mut pod = hot_pod();
    update_pod(&mut pod, &set, "t1").unwrap();
    set_status(&mut pod, "dns-f-2", "dns:2.0", "i-dns2", false);
    pod["status"]["conditions"][0]["status"] = json!("False");
    let s: SlimPod = serde_json::from_value(pod).unwrap();
    assert!(!needs_flip(&set, &s));
}

#[test]
fn upgradable_condition_is_written_only_when_it_changes() {
    let pod: SlimPod = serde_json::from_value(pod_json("p", false, true)).unwrap();
    let patch = upgradable_condition_patch(&pod, "sidecarset1", true, "now").unwrap();
    assert_eq!(
        patch,
        json!({"status": {"conditions": [{"type": "SidecarSetUpgradable", "status": "True",
            "lastTransitionTime": "now", "reason": "AllSidecarsetUpgradable", "message": "{\"sidecarset1\":true}"}]}})
    );
    let mut with = pod_json("p", false, true);
    with["status"]["conditions"].as_array_mut().unwrap().push(json!({"type": "SidecarSetUpgradable",
        "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z", "message": "{\"other\":true,\"sidecarset1\":true}"}));
    let pod: SlimPod = serde_json::from_value(with).unwrap();
    assert_eq!(
        upgradable_condition_patch(&pod, "sidecarset1", true, "now"),
        None
    );
    let patch = upgradable_condition_patch(&pod, "sidecarset1", false, "now").unwrap();
    assert_eq!(
        patch["status"]["conditions"][0],
        json!({"type": "SidecarSetUpgradable", "status": "False", "lastTransitionTime": "now",
            "reason": "UpdateImmutableField", "message": "{\"other\":true,\"sidecarset1\":false}"})
    );
}

/// Unavailable for the rollout: not ready, or a sidecar not yet running what its spec says.
fn unavailable(set: &SidecarSet, pods: &[Value]) -> usize {
    pods.iter()
        .map(|v| slim(v.clone()))
        .filter(|p| {
            !crate::sidecarset::status::is_pod_state_consistent(p, set, None)
                || !crate::sidecarset::status::is_pod_ready(p, set)
        })
        .count()
}

/// The kubelet restarts the updated sidecar: not ready, still on the old image.
fn restarting(pod: &mut Value) {
    pod["status"]["conditions"][0]["status"] = json!("False");
    pod["status"]["containerStatuses"][0]["ready"] = json!(false);
}

/// The kubelet is done: the status runs the spec image, with a new imageID, and the pod is ready again.
fn restarted(pod: &mut Value) {
    let image = pod["spec"]["containers"][0]["image"].clone();
    pod["status"]["containerStatuses"][0]["image"] = image.clone();
    pod["status"]["containerStatuses"][0]["imageID"] = json!(format!(
        "docker-pullable://{}@sha256:new",
        image.as_str().unwrap()
    ));
    pod["status"]["containerStatuses"][0]["ready"] = json!(true);
    pod["status"]["conditions"][0]["status"] = json!("True");
}

#[test]
fn a_rollout_of_100_pods_with_partition_20_and_max_unavailable_10_stops_at_80() {
    let set = strategy(json!(20), json!(10));
    let mut pods: Vec<Value> = (0..100)
        .map(|i| pod_json(&format!("pod-{i:03}"), false, true))
        .collect();
    // Three pods are already out (not ready) when the rollout starts.
    for pod in &mut pods[40..43] {
        restarting(pod);
    }
    let mut rounds = 0;
    loop {
        let snapshot: Vec<Arc<SlimPod>> = pods.iter().map(|v| slim(v.clone())).collect();
        let Round::Update(round) = plan_round(&set, &snapshot) else {
            break;
        };
        if round.update.is_empty() {
            // Nothing to do until the kubelet reports: bring every restarting pod back, one status change
            // at a time; when none is restarting, the rollout is over.
            let Some(pod) = pods
                .iter_mut()
                .find(|p| p["status"]["conditions"][0]["status"] == "False")
            else {
                break;
            };
            restarted(pod);
            continue;
        }
        rounds += 1;
        assert!(rounds < 100, "the rollout does not converge");
        for chosen in &round.update {
            let pod = pods
                .iter_mut()
                .find(|p| p["metadata"]["name"] == chosen.metadata.name.as_deref().unwrap())
                .unwrap();
            update_pod(pod, &set, "now").unwrap();
            restarting(pod);
            let out = unavailable(&set, &pods);
            assert!(out <= 10, "{out} pods unavailable in round {rounds}");
        }
    }
    let on_new = pods
        .iter()
        .filter(|p| p["spec"]["containers"][0]["image"] == "dns:2.0")
        .count();
    assert_eq!(on_new, 80);
    assert!(rounds >= 8, "at most 10 at a time: {rounds} rounds");
    // The same state planned again updates nothing.
    let snapshot: Vec<Arc<SlimPod>> = pods.iter().map(|v| slim(v.clone())).collect();
    match plan_round(&set, &snapshot) {
        Round::Update(round) => assert!(round.update.is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hot_upgrade_never_leaves_the_pod_without_a_ready_working_copy() {
    let set = hot_set();
    let mut pod = hot_pod();
    // Some copy of dns-f runs a real image, as its spec says, and is ready.
    let working_ready = |pod: &Value| {
        ["dns-f-1", "dns-f-2"].iter().any(|name| {
            let spec = pod["spec"]["containers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == *name)
                .unwrap();
            let status = pod["status"]["containerStatuses"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == *name)
                .unwrap();
            spec["image"] != "empty:1"
                && status["image"] == spec["image"]
                && status["ready"] == true
        })
    };
    let mut steps = vec![];
    let plan = |pod: &Value| plan_round(&set, &[slim(pod.clone())]);
    assert!(matches!(plan(&pod), Round::Update(r) if r.update.len() == 1));
    update_pod(&mut pod, &set, "t1").unwrap();
    steps.push(pod.clone());
    // The new copy starts on its image; until it is ready, the old copy keeps its image and no flip comes.
    set_status(&mut pod, "dns-f-2", "dns:2.0", "i-dns2", false);
    pod["status"]["conditions"][0]["status"] = json!("False");
    steps.push(pod.clone());
    assert_eq!(pod["spec"]["containers"][0]["image"], "dns:1.0");
    assert_eq!(plan(&pod), Round::Stop(Stop::AllUpdated));
    set_status(&mut pod, "dns-f-2", "dns:2.0", "i-dns2", true);
    pod["status"]["conditions"][0]["status"] = json!("True");
    steps.push(pod.clone());
    let Round::Flip(flips) = plan(&pod) else {
        panic!("the flip comes once the new copy is ready")
    };
    assert_eq!(flips.len(), 1);
    flip_pod(&mut pod, &set, "t2").unwrap();
    steps.push(pod.clone());
    set_status(&mut pod, "dns-f-1", "empty:1", "i-empty2", true);
    steps.push(pod.clone());
    for (i, step) in steps.iter().enumerate() {
        assert!(working_ready(step), "step {i}: no ready working copy");
    }
    // Done: the new copy works on dns:2.0, the old one idles on the empty image, nothing more to do.
    assert_eq!(pod["spec"]["containers"][1]["image"], "dns:2.0");
    assert_eq!(pod["spec"]["containers"][0]["image"], "empty:1");
    assert_eq!(plan(&pod), Round::Stop(Stop::AllUpdated));
}
