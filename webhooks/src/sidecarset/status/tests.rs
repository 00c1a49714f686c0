use super::*;
use serde_json::json;

/// The SidecarSet of §7.2's golden vector, defaulted, with hash annotations `h1` / `w1`.
fn set_json() -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "sidecarset1", "uid": "uid-1", "generation": 2, "resourceVersion": "100",
            "labels": {"team": "a"},
            "annotations": {"kruise.io/sidecarset-hash": "h1", "kruise.io/sidecarset-hash-without-image": "w1"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "dns-f", "image": "dns:1.0", "imagePullPolicy": "IfNotPresent",
                "podInjectPolicy": "BeforeAppContainer", "shareVolumePolicy": {"type": "disabled"},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "upgradeStrategy": {"upgradeType": "ColdUpgrade"}}],
            "updateStrategy": {"type": "RollingUpdate"}
        }
    })
}

fn set_from(v: Value) -> SidecarSet {
    serde_json::from_value(v).unwrap()
}

fn set() -> SidecarSet {
    set_from(set_json())
}

/// `data` of [`set`], written by hand from §9: keys sorted at every level, the container as Go encodes it
/// (`resources: {}` added), missing lists as null.
const DATA: &str = r#"{"spec":{"$patch":"replace","containers":[{"image":"dns:1.0","imagePullPolicy":"IfNotPresent","name":"dns-f","podInjectPolicy":"BeforeAppContainer","resources":{},"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":null,"volumes":null}}"#;

// FNV-1 32 of DATA + "0", computed independently with Python:
//   h = 0x811c9dc5; for b in data: h = (h * 0x01000193) & 0xffffffff; h ^= b
// gives 3448237518; mapped digit by digit through "bcdfghjklmnpqrstvwxz2456789"[ord(c) % 27]: 788d67c95d.
// With "1" appended instead: 3448237519 -> 788d67c95f.
const NAME_0: &str = "sidecarset1-788d67c95d";
const NAME_1: &str = "sidecarset1-788d67c95f";

fn pod(v: Value) -> Arc<SlimPod> {
    Arc::new(serde_json::from_value(v).unwrap())
}

/// A running, ready pod injected by sidecarset1 at hash `h1`, recording revision `rev`.
fn injected_pod(name: &str, hash: &str, rev: &str) -> Value {
    let record = json!({"sidecarset1": {"updateTimestamp": "2025-01-02T03:04:05Z", "hash": hash,
        "sidecarSetName": "sidecarset1", "sidecarList": ["dns-f"], "controllerRevision": rev}});
    json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
            "annotations": {"kruise.io/sidecarset-injected-list": "sidecarset1",
                "kruise.io/sidecarset-hash": record.to_string()}},
        "spec": {"containers": [{"name": "dns-f", "image": "dns:1.0"}, {"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "dns-f", "image": "dns:1.0", "imageID": "docker-pullable://dns@sha256:aaaa", "ready": true, "restartCount": 0},
                {"name": "app", "image": "app:1", "imageID": "docker-pullable://app@sha256:bbbb", "ready": true, "restartCount": 0}]}
    })
}

fn stored_revision(
    name: &str,
    revision: i64,
    data: &str,
    extra_labels: Value,
) -> Arc<SlimRevision> {
    let mut labels = json!({"kruise.io/sidecarset-name": "sidecarset1", "controller.kubernetes.io/hash": name.rsplit('-').next().unwrap()});
    for (k, v) in extra_labels.as_object().unwrap() {
        labels[k] = v.clone();
    }
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": "kruise-system", "labels": labels,
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "name": "sidecarset1",
                    "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}]},
            "data": serde_json::from_str::<Value>(data).unwrap(),
            "revision": revision
        }))
        .unwrap(),
    )
}

fn other_data(image: &str) -> String {
    DATA.replace("dns:1.0", image)
}

#[test]
fn fnv32_is_fnv1_not_fnv1a() {
    assert_eq!(fnv32(b""), 2_166_136_261);
    // FNV-1 of "a" is 0x050c5d7e (FNV-1a would be 0xe40c292c).
    assert_eq!(fnv32(b"a"), 0x050c_5d7e);
}

#[test]
fn revision_data_is_canonical_go_json() {
    assert_eq!(revision_data(&set()), DATA);
}

#[test]
fn revision_hash_appends_collision_count_and_maps_digits() {
    assert_eq!(revision_hash(DATA, Some(0)), "788d67c95d");
    assert_eq!(revision_hash(DATA, Some(1)), "788d67c95f");
    // Without a probe: 692883658.
    assert_eq!(revision_hash(DATA, None), "bf6dd7b9d");
    assert_eq!(
        revision_name(&"x".repeat(300), "4"),
        format!("{}-4", "x".repeat(223))
    );
}

#[test]
fn candidate_revision_carries_labels_annotations_owner_and_exact_data() {
    let mut v = set_json();
    v["spec"]["customVersion"] = json!("v7");
    let candidate = candidate_revision(&set_from(v), "kruise-system", 3, 0);
    assert_eq!(candidate.name(), NAME_0);
    assert_eq!(candidate.data, DATA);
    let body: Value = serde_json::from_str(&candidate.body()).unwrap();
    assert_eq!(
        body,
        json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": NAME_0, "namespace": "kruise-system",
                "labels": {"team": "a", "controller.kubernetes.io/hash": "788d67c95d",
                    "kruise.io/sidecarset-name": "sidecarset1", "apps.kruise.io/sidecarset-custom-version": "v7"},
                "annotations": {"kruise.io/sidecarset-hash": "h1", "kruise.io/sidecarset-hash-without-image": "w1"},
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "name": "sidecarset1",
                    "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}]},
            "data": serde_json::from_str::<Value>(DATA).unwrap(),
            "revision": 3
        })
    );
    assert!(
        candidate.body().ends_with(&format!(",\"data\":{DATA}}}")),
        "data is sent byte for byte"
    );
}

#[test]
fn first_reconcile_creates_revision_one() {
    let plan = plan_revisions(&set(), &[], &[], "kruise-system", 0);
    assert_eq!(plan.latest_revision, NAME_0);
    assert_eq!(plan.collision_count, 0);
    assert_eq!(plan.ops.len(), 1);
    let RevisionOp::Create(new) = &plan.ops[0] else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(new.revision.revision, 1);
    assert_eq!(new.name(), NAME_0);
    assert!(plan.history_error.is_none());
}

#[test]
fn unchanged_sidecarset_reuses_the_newest_revision() {
    let revisions = [
        stored_revision("sidecarset1-old", 1, &other_data("dns:0.9"), json!({})),
        stored_revision(NAME_0, 2, DATA, json!({})),
    ];
    let plan = plan_revisions(&set(), &revisions, &[], "kruise-system", 0);
    assert_eq!(plan.latest_revision, NAME_0);
    assert!(plan.ops.is_empty(), "{:?}", plan.ops);
}

#[test]
fn stored_data_written_by_go_compares_equal() {
    // Go escapes HTML characters; the stored data is compared after re-encoding.
    let mut v = set_json();
    v["spec"]["containers"][0]["image"] = json!("dns:<1>");
    let s = set_from(v);
    let go_text = DATA.replace("dns:1.0", r"dns:\u003c1\u003e");
    let stored = stored_revision("sidecarset1-x", 1, &go_text, json!({}));
    assert!(same_data(&stored, &revision_data(&s)));
    assert!(
        plan_revisions(&s, &[stored], &[], "kruise-system", 0)
            .ops
            .is_empty()
    );
}

#[test]
fn reverting_to_an_older_spec_renumbers_that_revision() {
    let revisions = [
        stored_revision(NAME_0, 1, DATA, json!({})),
        stored_revision("sidecarset1-v2", 2, &other_data("dns:2.0"), json!({})),
    ];
    let plan = plan_revisions(&set(), &revisions, &[], "kruise-system", 0);
    assert_eq!(plan.latest_revision, NAME_0);
    assert_eq!(
        plan.ops,
        vec![RevisionOp::Renumber {
            name: NAME_0.into(),
            revision: 3
        }]
    );
}

#[test]
fn changed_sidecarset_creates_the_next_revision() {
    let revisions = [stored_revision(
        "sidecarset1-v2",
        4,
        &other_data("dns:2.0"),
        json!({}),
    )];
    let plan = plan_revisions(&set(), &revisions, &[], "kruise-system", 0);
    let [RevisionOp::Create(new)] = plan.ops.as_slice() else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(new.revision.revision, 5);
    assert_eq!(plan.latest_revision, NAME_0);
}

#[test]
fn a_name_collision_renames_with_the_next_collision_count() {
    let RevisionOp::Create(new) = plan_revisions(&set(), &[], &[], "kruise-system", 0)
        .ops
        .remove(0)
    else {
        panic!()
    };
    let taken = stored_revision(NAME_0, 1, &other_data("dns:9"), json!({}));
    assert!(!same_data(&taken, &new.data));
    let renamed = new.renamed("sidecarset1", 1);
    assert_eq!(renamed.name(), NAME_1);
    assert_eq!(
        renamed.revision.metadata.labels.as_ref().unwrap()[REVISION_HASH_LABEL],
        "788d67c95d",
        "Go renames only; the hash label keeps the first hash"
    );
    // Planning with the raised count names the candidate the same way.
    assert_eq!(
        plan_revisions(&set(), &[], &[], "kruise-system", 1).latest_revision,
        NAME_1
    );
}

#[test]
fn custom_version_label_is_patched_onto_the_reused_revision() {
    let mut v = set_json();
    v["spec"]["customVersion"] = json!("v7");
    let revisions = [stored_revision(NAME_0, 1, DATA, json!({}))];
    let plan = plan_revisions(&set_from(v.clone()), &revisions, &[], "kruise-system", 0);
    assert_eq!(
        plan.ops,
        vec![RevisionOp::PatchCustomVersion {
            name: NAME_0.into(),
            custom_version: "v7".into()
        }]
    );
    let labelled = [stored_revision(
        NAME_0,
        1,
        DATA,
        json!({"apps.kruise.io/sidecarset-custom-version": "v7"}),
    )];
    assert!(
        plan_revisions(&set_from(v), &labelled, &[], "kruise-system", 0)
            .ops
            .is_empty()
    );
}

#[test]
fn history_keeps_active_revisions_and_the_latest() {
    let mut v = set_json();
    v["spec"]["revisionHistoryLimit"] = json!(2);
    v["spec"]["injectionStrategy"] = json!({"revision": {"revisionName": "sidecarset1-r2"}});
    let revisions = [
        stored_revision("sidecarset1-r1", 1, &other_data("a:1"), json!({})),
        stored_revision("sidecarset1-r2", 2, &other_data("a:2"), json!({})),
        stored_revision("sidecarset1-r3", 3, &other_data("a:3"), json!({})),
        stored_revision("sidecarset1-r4", 4, &other_data("a:4"), json!({})),
    ];
    // r3 is recorded by a matched pod, r2 is pinned; the new revision makes 5, 3 must go: only r1 and r4
    // are inactive.
    let pods = [pod(injected_pod("p1", "h0", "sidecarset1-r3"))];
    let plan = plan_revisions(&set_from(v), &revisions, &pods, "kruise-system", 0);
    let deletes: Vec<&RevisionOp> = plan
        .ops
        .iter()
        .filter(|o| matches!(o, RevisionOp::Delete { .. }))
        .collect();
    assert_eq!(
        deletes,
        [
            &RevisionOp::Delete {
                name: "sidecarset1-r1".into()
            },
            &RevisionOp::Delete {
                name: "sidecarset1-r4".into()
            }
        ]
    );
    assert_eq!(
        plan.history_error.as_deref(),
        Some(
            "failed to limit the number of stored revisions, limited: 2, actual: 3, name: sidecarset1"
        )
    );
}

#[test]
fn revisions_of_another_owner_are_ignored() {
    let mut foreign = (*stored_revision(NAME_0, 1, DATA, json!({}))).clone();
    foreign.metadata.owner_references.as_mut().unwrap()[0].uid = "uid-old".into();
    let plan = plan_revisions(&set(), &[Arc::new(foreign)], &[], "kruise-system", 0);
    assert!(matches!(plan.ops.as_slice(), [RevisionOp::Create(_)]));
}

#[test]
fn matching_pods_are_selected_active_injected_and_consistent() {
    let mut v = set_json();
    v["spec"]["namespaceSelector"] = json!({"matchLabels": {"env": "prod"}});
    let s = set_from(v);
    let ok = injected_pod("ok", "h1", "r");
    let mut unselected = injected_pod("unselected", "h1", "r");
    unselected["metadata"]["labels"] = json!({"app": "other"});
    let mut other_ns = injected_pod("other-ns", "h1", "r");
    other_ns["metadata"]["namespace"] = json!("dev");
    let mut missing_ns = injected_pod("missing-ns", "h1", "r");
    missing_ns["metadata"]["namespace"] = json!("gone");
    let mut finished = injected_pod("finished", "h1", "r");
    finished["status"]["phase"] = json!("Succeeded");
    let mut deleting = injected_pod("deleting", "h1", "r");
    deleting["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    let mut not_injected = injected_pod("not-injected", "h1", "r");
    not_injected["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"] =
        json!("sidecarset10,other");
    let mut inconsistent = injected_pod("inconsistent", "h1", "r");
    inconsistent["spec"]["containers"] = json!([{"name": "app", "image": "app:1"}]);
    let mut as_init = injected_pod("as-init", "h1", "r");
    as_init["spec"]["initContainers"] = json!([{"name": "dns-f", "image": "dns:1.0"}]);
    as_init["spec"]["containers"] = json!([{"name": "app", "image": "app:1"}]);
    let pods: Vec<Arc<SlimPod>> = [
        inconsistent,
        ok,
        unselected,
        other_ns,
        missing_ns,
        finished,
        deleting,
        not_injected,
        as_init,
    ]
    .into_iter()
    .map(pod)
    .collect();
    let ns = |name: &str| match name {
        "default" => Some(BTreeMap::from([("env".to_owned(), "prod".to_owned())])),
        "dev" => Some(BTreeMap::from([("env".to_owned(), "dev".to_owned())])),
        _ => None,
    };
    let matched = matching_pods(&s, &pods, ns).unwrap();
    let names: Vec<&str> = matched
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, ["as-init", "ok"]);
}

#[test]
fn hot_upgrade_consistency_needs_the_work_map_and_both_copies() {
    let mut v = set_json();
    v["spec"]["containers"][0]["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"});
    let s = set_from(v);
    let mut p = injected_pod("p", "h1", "r");
    p["spec"]["containers"] = json!([{"name": "dns-f-1", "image": "dns:1.0"}, {"name": "dns-f-2", "image": "empty:1"}, {"name": "app", "image": "app:1"}]);
    assert!(!is_pod_consistent_with_sidecarset(&pod(p.clone()), &s));
    p["metadata"]["annotations"]["kruise.io/sidecarset-working-hotupgrade-container"] =
        json!(r#"{"dns-f":"dns-f-1"}"#);
    assert!(is_pod_consistent_with_sidecarset(&pod(p.clone()), &s));
    assert_eq!(
        hot_upgrade_containers(&pod(p), "dns-f"),
        ("dns-f-1".into(), "dns-f-2".into())
    );
}

#[test]
fn an_invalid_selector_is_an_error() {
    let mut v = set_json();
    v["spec"]["selector"] =
        json!({"matchExpressions": [{"key": "a", "operator": "badOp", "values": ["x"]}]});
    assert!(matching_pods(&set_from(v), &[], |_| None).is_err());
}

#[test]
fn status_counts_updated_ready_and_both() {
    let s = set();
    let updated_ready = injected_pod("a", "h1", "r");
    let old_ready = injected_pod("b", "h0", "r");
    let mut updated_not_ready = injected_pod("c", "h1", "r");
    updated_not_ready["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
    let mut updated_pending = injected_pod("d", "h1", "r");
    updated_pending["status"]["phase"] = json!("Pending");
    let mut statuses_missing = injected_pod("e", "h1", "r");
    statuses_missing["status"]["containerStatuses"]
        .as_array_mut()
        .unwrap()
        .pop();
    let pods: Vec<Arc<SlimPod>> = [
        updated_ready,
        old_ready,
        updated_not_ready,
        updated_pending,
        statuses_missing,
    ]
    .into_iter()
    .map(pod)
    .collect();
    let status = desired_status(&s, &pods, NAME_0, 0);
    assert_eq!(
        status,
        SidecarSetStatus {
            observed_generation: Some(2),
            matched_pods: 5,
            updated_pods: 4,
            ready_pods: 2,
            updated_ready_pods: 1,
            latest_revision: Some(NAME_0.into()),
            collision_count: Some(0),
        }
    );
}

#[test]
fn a_pending_in_place_update_is_not_ready() {
    let s = set();
    let mut p = injected_pod("p", "h1", "r");
    // The image changed in the spec but the kubelet still runs the recorded imageID.
    p["spec"]["containers"][0]["image"] = json!("dns:2.0");
    p["metadata"]["annotations"]["kruise.io/sidecarset-inplace-update-state"] = json!(
        r#"{"sidecarset1":{"revision":"h1","updateTimestamp":"2025-01-01T00:00:00Z","lastContainerStatuses":{"dns-f":{"imageID":"docker-pullable://dns@sha256:aaaa"}}}}"#
    );
    assert!(!is_pod_state_consistent(&pod(p.clone()), &s, None));
    // Once the imageID changes, the update is complete.
    p["status"]["containerStatuses"][0]["imageID"] = json!("docker-pullable://dns@sha256:cccc");
    assert!(is_pod_state_consistent(&pod(p.clone()), &s, None));
    // An unreadable state is never complete.
    p["metadata"]["annotations"]["kruise.io/sidecarset-inplace-update-state"] = json!("nope");
    assert!(!is_pod_state_consistent(&pod(p), &s, None));
}

#[test]
fn digest_images_compare_with_the_status_image_id() {
    let digest = format!("dns@sha256:{}", "a".repeat(64));
    let mut v = set_json();
    v["spec"]["containers"][0]["image"] = json!(digest);
    let s = set_from(v);
    let mut p = injected_pod("p", "h1", "r");
    p["spec"]["containers"][0]["image"] = json!(digest);
    p["status"]["containerStatuses"][0]["imageID"] = json!(format!("docker-pullable://{digest}"));
    // An unreadable in-place state would make it inconsistent, but all sidecars use digests.
    p["metadata"]["annotations"]["kruise.io/sidecarset-inplace-update-state"] = json!("nope");
    assert!(is_pod_state_consistent(&pod(p.clone()), &s, None));
    p["status"]["containerStatuses"][0]["imageID"] =
        json!(format!("docker-pullable://dns@sha256:{}", "b".repeat(64)));
    assert!(!is_pod_state_consistent(&pod(p), &s, None));
    assert!(is_image_digest(&digest));
    assert!(!is_image_digest("dns:1.0"));
    assert!(!is_image_digest("dns@sha256:short"));
    assert!(is_container_image_equal(
        "registry:5000/dns:1.0",
        "registry:5000/dns:1.0"
    ));
    assert!(!is_container_image_equal("dns:1.0", "dns:1.1"));
}

#[test]
fn digests_after_the_first_tagged_sidecar_are_not_compared() {
    let digest = format!("envoy@sha256:{}", "a".repeat(64));
    let mut v = set_json();
    v["spec"]["containers"] = json!([
        {"name": "log", "image": "fluent-bit:2.1"},
        {"name": "dns-f", "image": digest}
    ]);
    let s = set_from(v);
    let mut p = injected_pod("p", "h1", "r");
    p["spec"]["containers"] = json!([
        {"name": "log", "image": "fluent-bit:2.1"},
        {"name": "dns-f", "image": digest},
        {"name": "app", "image": "app:1"}
    ]);
    // The runtime reports the digest under another repository spelling: no match.
    p["status"]["containerStatuses"] = json!([
        {"name": "log", "image": "fluent-bit:2.1", "imageID": "docker-pullable://fluent-bit@sha256:cccc"},
        {"name": "dns-f", "image": digest, "imageID": format!("docker.io/library/{digest}")},
        {"name": "app", "image": "app:1", "imageID": "docker-pullable://app@sha256:bbbb"}
    ]);
    // `log` comes first and has no digest: the comparison stops there, and with no in-place update under
    // way the pod is consistent (OpenKruise's `break`).
    assert!(is_pod_state_consistent(&pod(p.clone()), &s, None));
    // With the digest sidecar first, it is compared, and the mismatch counts.
    let containers = p["spec"]["containers"].as_array_mut().unwrap();
    containers.swap(0, 1);
    let statuses = p["status"]["containerStatuses"].as_array_mut().unwrap();
    statuses.swap(0, 1);
    assert!(!is_pod_state_consistent(&pod(p), &s, None));
}

#[test]
fn hot_upgrade_pod_is_ready_only_with_the_empty_image_on_the_idle_copy() {
    let mut v = set_json();
    v["spec"]["containers"][0]["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"});
    let s = set_from(v);
    let mut p = injected_pod("p", "h1", "r");
    p["metadata"]["annotations"]["kruise.io/sidecarset-working-hotupgrade-container"] =
        json!(r#"{"dns-f":"dns-f-1"}"#);
    p["spec"]["containers"] =
        json!([{"name": "dns-f-1", "image": "dns:1.0"}, {"name": "dns-f-2", "image": "empty:1"}]);
    assert!(is_pod_ready(&pod(p.clone()), &s));
    p["spec"]["containers"][1]["image"] = json!("dns:0.9");
    assert!(!is_pod_ready(&pod(p), &s));
}

#[test]
fn legacy_hash_annotation_is_read() {
    let mut p = injected_pod("p", "h1", "r");
    p["metadata"]["annotations"]["kruise.io/sidecarset-hash"] = json!(r#"{"sidecarset1":"h1"}"#);
    let p = pod(p);
    assert!(is_pod_sidecar_updated(&set(), &p));
    assert_eq!(pod_controller_revision(&p, "sidecarset1"), None);
}

#[test]
fn status_is_written_only_when_something_changed() {
    let desired = desired_status(&set(), &[], NAME_0, 0);
    assert!(status_changed(None, &desired));
    assert!(!status_changed(Some(&desired.clone()), &desired));
    let mut older = desired.clone();
    older.observed_generation = Some(1);
    assert!(status_changed(Some(&older), &desired));
    let mut newer = desired.clone();
    newer.observed_generation = Some(3);
    assert!(
        !status_changed(Some(&newer), &desired),
        "only a newer generation counts"
    );
    let mut no_count = desired.clone();
    no_count.collision_count = None;
    assert!(status_changed(Some(&no_count), &desired));
}

#[test]
fn every_pod_annotation_read_here_is_kept_by_the_pod_cache() {
    for key in [
        INJECTED_LIST_ANNOTATION,
        HASH_ANNOTATION,
        WORKING_HOT_UPGRADE_ANNOTATION,
        INPLACE_UPDATE_STATE_ANNOTATION,
    ] {
        assert!(
            crate::api::pod::READ_ANNOTATIONS.contains(&key),
            "{key} is read from cached pods but dropped when they are decoded"
        );
    }
    // is_running_and_ready reads the Ready condition.
    assert!(crate::api::pod::READ_CONDITIONS.contains(&"Ready"));
}
