//! spec/sidecarset.md §11 scenarios of injection proper (revision choice and resources policy are tested
//! where they live). Expected values are written from the spec.

use super::*;
use crate::api::sidecarset::SidecarSet;
use serde_json::json;

const NOW: &str = "2026-11-21T10:00:00Z";

fn opts() -> InjectOptions<'static> {
    InjectOptions {
        now: NOW,
        sort_containers_by_name: false,
    }
}

fn no_resources(
    _: &SidecarContainer,
    _: &NameSet<'_>,
    _: PodContainers<'_>,
) -> Result<Option<Value>, String> {
    Err("resourcesPolicy must not be consulted here".into())
}

/// The base pod of §11.
fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "test-pod", "namespace": "default", "labels": {"app": "suxing-test"}, "creationTimestamp": null},
        "spec": {
            "initContainers": [{"name": "init-0", "image": "busybox"}],
            "containers": [{"name": "nginx", "image": "nginx:1.15.1",
                            "env": [{"name": "hello1", "value": "world1"}, {"name": "hello2", "value": "world2"}],
                            "volumeMounts": [{"name": "volume-a", "mountPath": "/a/b"}, {"name": "volume-b", "mountPath": "/e/f"}]}],
            "volumes": [{"name": "volume-a", "emptyDir": {}}, {"name": "volume-b", "emptyDir": {}}]
        }
    })
}

fn sidecar_set(name: &str, spec: Value) -> Arc<PreparedSidecarSet> {
    Arc::new(
        serde_json::from_value::<SidecarSet>(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": name, "annotations": {HASH_ANNOTATION: format!("{name}-hash"), HASH_WITHOUT_IMAGE_ANNOTATION: format!("{name}-wo")}},
            "spec": spec
        }))
        .unwrap()
        .into(),
    )
}

/// sidecarset1 of §11.
fn sidecarset1() -> Arc<PreparedSidecarSet> {
    sidecar_set(
        "sidecarset1",
        json!({
            "selector": {"matchLabels": {"app": "suxing-test"}},
            "initContainers": [
                {"name": "init-2", "image": "busybox:1.0.0", "podInjectPolicy": "AfterAppContainer", "shareVolumePolicy": {"type": "disabled"}},
                {"name": "init-1", "image": "busybox:1.0.0", "podInjectPolicy": "AfterAppContainer", "shareVolumePolicy": {"type": "disabled"}}],
            "containers": [
                {"name": "dns-f", "image": "dns-f-image:1.0", "podInjectPolicy": "BeforeAppContainer", "shareVolumePolicy": {"type": "disabled"}},
                {"name": "log-agent", "image": "log-agent-image:1.0", "podInjectPolicy": "AfterAppContainer", "shareVolumePolicy": {"type": "disabled"}}]
        }),
    )
}

fn run(pod: &mut Value, sets: &[Arc<PreparedSidecarSet>]) -> Result<bool, InjectError> {
    run_with(pod, sets, opts())
}

/// Injects into the pod parsed from its text, then applies the resulting patch to `pod`, so every test also
/// checks the patch against the pod as received.
fn run_with(
    pod: &mut Value,
    sets: &[Arc<PreparedSidecarSet>],
    options: InjectOptions<'_>,
) -> Result<bool, InjectError> {
    let text = pod.to_string();
    let mut doc = RawPod::parse_str(&text).unwrap();
    let changed = inject(&mut doc, sets, options, &no_resources)?;
    let expected = doc.to_value();
    let ops = doc.into_patch();
    assert_eq!(
        String::from_utf8(crate::json::patch::to_json(&ops)).unwrap(),
        serde_json::to_string(&crate::json::patch::operations(&ops).unwrap()).unwrap(),
        "containers written as text are the bytes serde_json writes for them as trees"
    );
    *pod = crate::json::patch::apply(pod, &ops).unwrap();
    assert_eq!(*pod, expected, "the patch gives the pod the steps built");
    Ok(changed)
}

fn names(pod: &Value, key: &str) -> Vec<String> {
    pod["spec"][key]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

fn container<'a>(pod: &'a Value, key: &str, name: &str) -> &'a Value {
    pod["spec"][key]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

fn ann<'a>(pod: &'a Value, key: &str) -> &'a str {
    pod["metadata"]["annotations"][key].as_str().unwrap()
}

#[test]
fn basic_injection_order_and_is_injected() {
    // §11 scenario 2.
    let mut p = pod();
    assert!(run(&mut p, &[sidecarset1()]).unwrap());
    assert_eq!(names(&p, "containers"), ["dns-f", "nginx", "log-agent"]);
    assert_eq!(names(&p, "initContainers"), ["init-0", "init-1", "init-2"]);
    for (key, name) in [
        ("containers", "dns-f"),
        ("containers", "log-agent"),
        ("initContainers", "init-1"),
        ("initContainers", "init-2"),
    ] {
        assert_eq!(
            container(&p, key, name)["env"],
            json!([{"name": "IS_INJECTED", "value": "true"}]),
            "{name}"
        );
        assert!(
            container(&p, key, name).get("podInjectPolicy").is_none(),
            "Kruise fields are not injected"
        );
    }
    assert!(container(&p, "containers", "nginx").get("env").is_some());
    assert_eq!(
        p["metadata"]["creationTimestamp"],
        Value::Null,
        "unknown and null fields survive"
    );
}

#[test]
fn hash_annotations_have_openkruises_exact_shape() {
    // §11 scenarios 5, 6 and 22.
    let mut set = sidecarset1().sidecar_set().as_ref().clone();
    set.status = Some(crate::api::sidecarset::SidecarSetStatus {
        latest_revision: Some("sidecarset1-abc".into()),
        ..Default::default()
    });
    let plain_init_only = sidecar_set(
        "plain",
        json!({"selector": {"matchLabels": {"app": "x"}},
        "initContainers": [{"name": "init-x", "image": "busybox"}]}),
    );
    let mut p = pod();
    run(&mut p, &[Arc::new(set.into()), plain_init_only]).unwrap();
    assert_eq!(
        ann(&p, HASH_ANNOTATION),
        r#"{"plain":{"updateTimestamp":"2026-11-21T10:00:00Z","hash":"plain-hash","sidecarSetName":"plain","sidecarList":[]},"sidecarset1":{"updateTimestamp":"2026-11-21T10:00:00Z","hash":"sidecarset1-hash","sidecarSetName":"sidecarset1","sidecarList":["dns-f","log-agent"],"controllerRevision":"sidecarset1-abc"}}"#
    );
    assert_eq!(
        ann(&p, HASH_WITHOUT_IMAGE_ANNOTATION),
        r#"{"plain":{"updateTimestamp":"2026-11-21T10:00:00Z","hash":"plain-wo","sidecarSetName":"plain","sidecarList":[]},"sidecarset1":{"updateTimestamp":"2026-11-21T10:00:00Z","hash":"sidecarset1-wo","sidecarSetName":"sidecarset1","sidecarList":["dns-f","log-agent"]}}"#
    );
    assert_eq!(ann(&p, INJECTED_LIST_ANNOTATION), "plain,sidecarset1");
}

#[test]
fn legacy_hash_annotation_is_kept_in_the_new_shape() {
    // §11 scenario 7.
    let mut p = pod();
    p["metadata"]["annotations"] = json!({HASH_ANNOTATION: r#"{"sidecarset-test":"bv6d2fbw97"}"#});
    run(&mut p, &[sidecarset1()]).unwrap();
    let specs: Value = serde_json::from_str(ann(&p, HASH_ANNOTATION)).unwrap();
    assert_eq!(
        specs["sidecarset-test"],
        json!({"updateTimestamp": null, "hash": "bv6d2fbw97", "sidecarSetName": "sidecarset-test", "sidecarList": null})
    );
    assert!(specs.get("sidecarset1").is_some());
}

#[test]
fn corrupt_hash_annotation_fails_the_request() {
    // §11 scenario 8.
    let mut p = pod();
    p["metadata"]["annotations"] = json!({HASH_ANNOTATION: "not-json"});
    let err = run(&mut p, &[sidecarset1()]).unwrap_err().to_string();
    assert_eq!(
        err,
        "pod(default/test-pod) invalid annotations[kruise.io/sidecarset-hash] value not-json, unmarshal failed: invalid character 'o' in literal null (expecting 'u')"
    );
    // Neither shape: the legacy decode's type error, as Go words it.
    p["metadata"]["annotations"] = json!({HASH_ANNOTATION: r#"{"sidecarset1":1}"#});
    let err = run(&mut p, &[sidecarset1()]).unwrap_err().to_string();
    assert!(
        err.ends_with(r#"value {"sidecarset1":1}, unmarshal failed: json: cannot unmarshal number into Go value of type string"#),
        "{err}"
    );
    // `null` is an empty map to Go: injection goes on.
    p["metadata"]["annotations"] = json!({HASH_ANNOTATION: "null"});
    assert!(run(&mut p, &[sidecarset1()]).is_ok());
}

#[test]
fn image_pull_secrets_are_deduplicated_pod_first() {
    // §11 scenario 9.
    let secrets = |names: &[&str]| Value::Array(names.iter().map(|n| json!({"name": n})).collect());
    let set = |sidecar: &[&str]| {
        sidecar_set(
            "s",
            json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "c", "image": "i"}], "imagePullSecrets": secrets(sidecar)}),
        )
    };
    for (pod_secrets, sidecar, want) in [
        (
            Some(vec!["s2", "s3", "s3"]),
            vec!["s0", "s1", "s2"],
            vec!["s2", "s3", "s0", "s1"],
        ),
        (
            Some(vec!["s3", "s4", "s5"]),
            vec!["s0", "s1", "s2"],
            vec!["s3", "s4", "s5", "s0", "s1", "s2"],
        ),
        (None, vec!["s0", "s1", "s2"], vec!["s0", "s1", "s2"]),
        (Some(vec!["s3", "s4", "s5"]), vec![], vec!["s3", "s4", "s5"]),
    ] {
        let mut p = pod();
        if let Some(ps) = pod_secrets {
            p["spec"]["imagePullSecrets"] = secrets(&ps);
        }
        run(&mut p, &[set(&sidecar)]).unwrap();
        assert_eq!(p["spec"]["imagePullSecrets"], secrets(&want));
    }
}

#[test]
fn only_referenced_volumes_are_injected_and_the_pods_own_win() {
    // §11 scenarios 10, 11 and 12.
    let set = sidecar_set(
        "sidecarset2",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "initContainers": [{"name": "dns-e", "image": "i", "volumeMounts": [{"name": "volume-1", "mountPath": "/v1"}]}],
        "containers": [{"name": "dns-f", "image": "i", "volumeMounts": [{"name": "volume-1", "mountPath": "/v1"}, {"name": "volume-a", "mountPath": "/va"}],
                        "volumeDevices": [{"name": "disk0", "devicePath": "/dev/nvme1"}]}],
        "volumes": [{"name": "volume-1", "emptyDir": {}}, {"name": "volume-2", "emptyDir": {}}, {"name": "volume-a", "hostPath": {"path": "/x"}}]}),
    );
    let mut p = pod();
    run(&mut p, &[set]).unwrap();
    assert_eq!(names(&p, "volumes"), ["volume-a", "volume-b", "volume-1"]);
    assert_eq!(
        container(&p, "volumes", "volume-a"),
        &json!({"name": "volume-a", "emptyDir": {}}),
        "the pod's own volume wins"
    );
    assert_eq!(
        container(&p, "containers", "dns-f")["volumeDevices"],
        json!([{"name": "disk0", "devicePath": "/dev/nvme1"}])
    );
}

#[test]
fn share_volume_policy_adds_the_app_mounts_once() {
    // §11 scenario 13.
    let mut p = pod();
    p["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "volume-a", "mountPath": "/a/b"}, {"name": "volume-b", "mountPath": "/e/f"}, {"name": "volume-s", "mountPath": "/staragent"}]);
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "initContainers": [{"name": "dns-e", "image": "i", "shareVolumePolicy": {"type": "enabled"},
            "volumeMounts": [{"name": "v1", "mountPath": "/g/h/i"}, {"name": "v2", "mountPath": "/j/k/l"}, {"name": "volume-s", "mountPath": "/staragent"}]}],
        "containers": [{"name": "dns-f", "image": "i", "shareVolumePolicy": {"type": "enabled"},
            "volumeMounts": [{"name": "v1", "mountPath": "/a/b/c"}, {"name": "v2", "mountPath": "/d/e/f"}, {"name": "volume-s", "mountPath": "/staragent"}]}]}),
    );
    run(&mut p, &[set]).unwrap();
    let paths = |key: &str, name: &str| -> Vec<String> {
        container(&p, key, name)["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["mountPath"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        paths("initContainers", "dns-e"),
        ["/g/h/i", "/j/k/l", "/staragent", "/a/b", "/e/f"]
    );
    assert_eq!(
        paths("containers", "dns-f"),
        ["/a/b/c", "/d/e/f", "/staragent", "/a/b", "/e/f"]
    );
}

#[test]
fn shared_subpath_expr_mounts_bring_their_envs() {
    // §11 scenario 14.
    let mut p = pod();
    let app = &mut p["spec"]["containers"][0];
    app["volumeMounts"].as_array_mut().unwrap().push(json!({"name": "volume-expansion", "mountPath": "/e/expansion", "subPathExpr": "foo/$(POD_NAME)/$(OD_NAME)/conf"}));
    app["env"] = json!([{"name": "POD_NAME", "value": "bar"}, {"name": "OD_NAME", "value": "od_name"}, {"name": "OTHER", "value": "x"}]);
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "dns-f", "image": "i", "shareVolumePolicy": {"type": "enabled"}}]}),
    );
    run(&mut p, &[set]).unwrap();
    let c = container(&p, "containers", "dns-f");
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mountPath"] == "/e/expansion")
    );
    assert_eq!(
        c["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "POD_NAME", "value": "bar"}, {"name": "OD_NAME", "value": "od_name"}])
    );
}

#[test]
fn transfer_env_copies_sorted_names_and_never_overrides() {
    // §11 scenarios 15, 16 and 17.
    let mut p = pod();
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "initContainers": [{"name": "dns-e", "image": "i", "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello2"}]}],
        "containers": [{"name": "dns-f", "image": "i", "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello2"}]}]}),
    );
    run(&mut p, &[set]).unwrap();
    for (key, name) in [("initContainers", "dns-e"), ("containers", "dns-f")] {
        assert_eq!(
            container(&p, key, name)["env"],
            json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "hello2", "value": "world2"}])
        );
    }

    let mut p = pod();
    p["metadata"]["labels"]["source"] = json!("nginx");
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "dns-f", "image": "i", "transferEnv": [{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['source']"}}, "envNames": ["hello2", "hello1"]}]}]}),
    );
    run(&mut p, &[set]).unwrap();
    assert_eq!(
        container(&p, "containers", "dns-f")["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "hello1", "value": "world1"}, {"name": "hello2", "value": "world2"}])
    );

    let mut p = pod();
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "dns-f", "image": "i", "env": [{"name": "hello2", "value": "mine"}], "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello2"}]}]}),
    );
    run(&mut p, &[set]).unwrap();
    assert_eq!(
        container(&p, "containers", "dns-f")["env"],
        json!([{"name": "hello2", "value": "mine"}, {"name": "IS_INJECTED", "value": "true"}])
    );
}

#[test]
fn merge_rule_replaces_in_place_and_places_by_policy() {
    // §11 scenarios 18 and 38.
    let injected = || {
        [
            (json!({"name": "new-sidecar-1"}), "BeforeAppContainer"),
            (
                json!({"name": "sidecar-1", "image": "new"}),
                "AfterAppContainer",
            ),
            (json!({"name": "sidecar-2"}), "AfterAppContainer"),
        ]
        .map(|(c, policy)| Injected {
            name: c["name"].as_str().unwrap().to_owned().into(),
            container: Json::Text(c.to_string().into()),
            policy,
        })
        .into()
    };
    let merge = |existing: Value| {
        let text = json!({"spec": {"containers": existing}}).to_string();
        let mut doc = RawPod::parse_str(&text).unwrap();
        let merged = merge_containers(&doc.containers, injected());
        doc.containers.set(merged);
        doc.to_value()["spec"]["containers"]
            .as_array()
            .unwrap()
            .clone()
    };
    let names = |v: Vec<Value>| {
        v.iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let merged = merge(json!([
        {"name": "sidecar-1", "image": "old"},
        {"name": "app-container"},
        {"name": "sidecar-2"},
    ]));
    assert_eq!(merged[1]["image"], "new", "replaced in place");
    assert_eq!(
        names(merged),
        ["new-sidecar-1", "sidecar-1", "app-container", "sidecar-2"]
    );
    assert_eq!(
        names(merge(json!([{"name": "app-container"}]))),
        ["new-sidecar-1", "app-container", "sidecar-1", "sidecar-2"]
    );
}

#[test]
fn init_containers_are_sorted_then_placed_by_policy() {
    // §11 scenario 19.
    let mut p = pod();
    p["spec"]["initContainers"] = json!([{"name": "app1-init"}, {"name": "app2-init"}]);
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "initContainers": [{"name": "a-init", "image": "i", "podInjectPolicy": "AfterAppContainer"},
                           {"name": "c-init", "image": "i", "podInjectPolicy": "BeforeAppContainer"},
                           {"name": "b-init", "image": "i", "podInjectPolicy": "BeforeAppContainer"}]}),
    );
    run(&mut p, &[set]).unwrap();
    assert_eq!(
        names(&p, "initContainers"),
        ["b-init", "c-init", "app1-init", "app2-init", "a-init"]
    );
}

#[test]
fn sort_by_name_gate_orders_containers() {
    // §11 scenario 20.
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "zeta", "image": "i", "podInjectPolicy": "BeforeAppContainer"}, {"name": "alpha", "image": "i", "podInjectPolicy": "BeforeAppContainer"}]}),
    );
    let mut p = pod();
    run(&mut p, std::slice::from_ref(&set)).unwrap();
    assert_eq!(names(&p, "containers"), ["zeta", "alpha", "nginx"]);
    let mut p = pod();
    run_with(
        &mut p,
        &[set],
        InjectOptions {
            sort_containers_by_name: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(names(&p, "containers"), ["alpha", "zeta", "nginx"]);
}

#[test]
fn native_sidecars_and_hot_upgrade_init_containers() {
    // §11 scenario 21.
    let s1 = sidecar_set(
        "sidecarset-1",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "initContainers": [{"name": "init-1", "image": "i", "restartPolicy": "Always"}]}),
    );
    let s2 = sidecar_set(
        "sidecarset-2",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "initContainers": [{"name": "hot-init", "image": "hot:v1", "restartPolicy": "Always",
                            "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:v1"}}]}),
    );
    let mut p = pod();
    run(&mut p, &[s1, s2]).unwrap();
    assert_eq!(
        names(&p, "initContainers"),
        ["init-0", "hot-init-1", "hot-init-2", "init-1"]
    );
    let hashes: Value = serde_json::from_str(ann(&p, HASH_ANNOTATION)).unwrap();
    assert_eq!(hashes["sidecarset-1"]["sidecarList"], json!(["init-1"]));
    assert_eq!(hashes["sidecarset-2"]["sidecarList"], json!(["hot-init"]));
    assert_eq!(
        ann(&p, WORKING_HOT_UPGRADE_ANNOTATION),
        r#"{"hot-init":"hot-init-1"}"#
    );
    for (k, v) in [
        ("version.sidecarset.kruise.io/hot-init-1", "1"),
        ("versionalt.sidecarset.kruise.io/hot-init-1", "0"),
        ("version.sidecarset.kruise.io/hot-init-2", "0"),
        ("versionalt.sidecarset.kruise.io/hot-init-2", "1"),
    ] {
        assert_eq!(ann(&p, k), v, "{k}");
    }
    assert_eq!(
        ann(&p, INJECTED_LIST_ANNOTATION),
        "sidecarset-1,sidecarset-2"
    );
    assert_eq!(
        container(&p, "initContainers", "hot-init-2")["image"],
        "empty:v1"
    );
    assert_eq!(
        container(&p, "initContainers", "hot-init-1")["image"],
        "hot:v1"
    );
}

#[test]
fn hot_upgrade_container_gets_two_copies_with_version_envs() {
    // §11 scenario 23.
    let mut set = sidecarset1().sidecar_set().as_ref().clone();
    set.spec.init_containers.clear();
    let mut dns: Value = serde_json::to_value(&set.spec.containers[0]).unwrap();
    dns["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busy:hotupgrade-empty"});
    set.spec.containers[0] = serde_json::from_value(dns).unwrap();
    let mut p = pod();
    run(&mut p, &[Arc::new(set.into())]).unwrap();
    assert_eq!(
        names(&p, "containers"),
        ["dns-f-1", "dns-f-2", "nginx", "log-agent"]
    );
    assert_eq!(
        container(&p, "containers", "dns-f-1")["image"],
        "dns-f-image:1.0"
    );
    assert_eq!(
        container(&p, "containers", "dns-f-2")["image"],
        "busy:hotupgrade-empty"
    );
    assert_eq!(
        container(&p, "containers", "dns-f-1")["env"],
        json!([{"name": "IS_INJECTED", "value": "true"},
               {"name": "SIDECARSET_VERSION", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['version.sidecarset.kruise.io/dns-f-1']"}}},
               {"name": "SIDECARSET_VERSION_ALT", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['versionalt.sidecarset.kruise.io/dns-f-1']"}}}])
    );
    let hashes: Value = serde_json::from_str(ann(&p, HASH_ANNOTATION)).unwrap();
    assert_eq!(hashes["sidecarset1"]["hash"], "sidecarset1-hash");
    assert_eq!(
        hashes["sidecarset1"]["sidecarList"],
        json!(["dns-f", "log-agent"])
    );
    assert_eq!(
        ann(&p, WORKING_HOT_UPGRADE_ANNOTATION),
        r#"{"dns-f":"dns-f-1"}"#
    );
}

/// [`patch_pod_metadata`] on the pod parsed from its text; `pod` becomes the result.
fn patch_metadata(pod: &mut Value, sets: &[Arc<PreparedSidecarSet>]) -> Result<bool, InjectError> {
    let text = pod.to_string();
    let mut doc = RawPod::parse_str(&text).unwrap();
    let changed = patch_pod_metadata(&mut doc, sets)?;
    *pod = doc.to_value();
    Ok(changed)
}

#[test]
fn patch_pod_metadata_policies() {
    // §11 scenarios 24, 25 and 26.
    let with_patches = |name: &str, patches: Value| {
        sidecar_set(
            name,
            json!({"selector": {"matchLabels": {"app": "suxing-test"}}, "patchPodMetadata": patches}),
        )
    };
    let mut p = pod();
    let changed = patch_metadata(&mut p, &[
        with_patches("sidecarset1", json!([{"annotations": {"key1": "{\"log-agent\":1}"}, "patchPolicy": "MergePatchJson"},
                                           {"annotations": {"key": "envoy=1,log=2"}, "patchPolicy": "Retain"}])),
        with_patches("sidecarset2", json!([{"annotations": {"key1": "{\"envoy\":2}"}, "patchPolicy": "MergePatchJson"}])),
    ]).unwrap();
    assert!(changed);
    assert_eq!(ann(&p, "key1"), r#"{"envoy":2,"log-agent":1}"#);
    assert_eq!(ann(&p, "key"), "envoy=1,log=2");

    let mut p = pod();
    p["metadata"]["annotations"] = json!({"key1": "old", "key2": "old"});
    patch_metadata(&mut p, &[with_patches("s", json!([{"annotations": {"key1": "value1"}, "patchPolicy": "Retain"},
                                                          {"annotations": {"key2": "value2"}, "patchPolicy": "Overwrite"}]))]).unwrap();
    assert_eq!((ann(&p, "key1"), ann(&p, "key2")), ("old", "value2"));

    let mut p = pod();
    p["metadata"]["annotations"] = json!({"key1": "{\"log-agent\":1}"});
    let changed = patch_metadata(&mut p, &[with_patches("s", json!([{"annotations": {"key1": "{\"log-agent\":1}"}, "patchPolicy": "MergePatchJson"}]))]).unwrap();
    assert!(!changed);

    let mut p = pod();
    p["metadata"]["annotations"] = json!({"key1": "not json"});
    assert!(
        patch_metadata(
            &mut p,
            &[with_patches(
                "s",
                json!([{"annotations": {"key1": "{}"}, "patchPolicy": "MergePatchJson"}])
            )]
        )
        .is_err()
    );
}

#[test]
fn metadata_only_change_is_returned_without_containers() {
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}}, "patchPodMetadata": [{"annotations": {"k": "v"}}]}),
    );
    let mut p = pod();
    assert!(run(&mut p, &[set]).unwrap());
    assert_eq!(ann(&p, "k"), "v");
    assert!(
        p["metadata"]["annotations"]
            .get(INJECTED_LIST_ANNOTATION)
            .is_none(),
        "nothing injected, no injection annotations"
    );
}

#[test]
fn injecting_twice_changes_nothing_more() {
    let mut once = pod();
    run(&mut once, &[sidecarset1()]).unwrap();
    let mut twice = once.clone();
    run(&mut twice, &[sidecarset1()]).unwrap();
    assert_eq!(names(&twice, "containers"), names(&once, "containers"));
    assert_eq!(
        names(&twice, "initContainers"),
        names(&once, "initContainers")
    );
    assert_eq!(
        twice["metadata"]["annotations"],
        once["metadata"]["annotations"]
    );
}

#[test]
fn hash_annotations_are_written_as_go_marshals_the_map() {
    let spec = |name: &str,
                timestamp: Option<&str>,
                list: Option<Vec<&str>>,
                revision: Option<&str>| UpgradeSpec {
        update_timestamp: timestamp.map(str::to_owned),
        hash: format!("h<{name}>&\"x\""),
        sidecar_set_name: name.to_owned(),
        sidecar_list: list.map(|l| l.into_iter().map(str::to_owned).collect()),
        controller_revision: revision.map(str::to_owned),
    };
    let mut specs = BTreeMap::new();
    assert_eq!(upgrade_specs_json(&specs), go::to_string(&specs));
    specs.insert(
        "b".to_owned(),
        spec(
            "b",
            Some("2026-11-21T10:00:00Z"),
            Some(vec!["c1", "c\u{2028}2"]),
            Some("rev-1"),
        ),
    );
    specs.insert("a\\".to_owned(), spec("a\\", None, None, None));
    specs.insert("e".to_owned(), spec("e", Some(""), Some(vec![]), Some("")));
    assert_eq!(upgrade_specs_json(&specs), go::to_string(&specs));
}

#[test]
fn written_containers_extend_lists_and_replace_members_in_key_order() {
    // Members before, between and after the ones injection writes; `env` null (made a list), no
    // `volumeMounts` (added) and no `volumeDevices` (added for the shared device).
    let mut p = pod();
    p["spec"]["containers"][0]["volumeDevices"] = json!([{"name": "dev", "devicePath": "/dev/x"}]);
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "side", "image": "i", "args": ["a"], "env": null, "imagePullPolicy": "Always",
            "ports": [{"containerPort": 1}], "securityContext": {}, "workingDir": "/w", "x-unknown": {"k": [1]},
            "shareVolumePolicy": {"type": "enabled"}, "shareVolumeDevicePolicy": {"type": "enabled"},
            "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello1"}],
            "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}]}),
    );
    run(&mut p, &[set]).unwrap();
    let version_env = |copy: &str| {
        json!([
            {"name": "SIDECARSET_VERSION", "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.annotations['version.sidecarset.kruise.io/{copy}']")}}},
            {"name": "SIDECARSET_VERSION_ALT", "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.annotations['versionalt.sidecarset.kruise.io/{copy}']")}}}
        ])
    };
    for (copy, image) in [("side-1", "i"), ("side-2", "empty:1")] {
        let mut env = json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "hello1", "value": "world1"}]);
        env.as_array_mut()
            .unwrap()
            .extend(version_env(copy).as_array().unwrap().iter().cloned());
        assert_eq!(
            container(&p, "containers", copy),
            &json!({"name": copy, "image": image, "args": ["a"], "env": env, "imagePullPolicy": "Always",
                "ports": [{"containerPort": 1}], "securityContext": {}, "workingDir": "/w", "x-unknown": {"k": [1]},
                "volumeMounts": [{"name": "volume-a", "mountPath": "/a/b"}, {"name": "volume-b", "mountPath": "/e/f"}],
                "volumeDevices": [{"name": "dev", "devicePath": "/dev/x"}]}),
            "{copy}"
        );
    }
}

/// A SidecarSet's entry in the hash annotations: name, hash, hash without image, revision, sidecar list.
type Entry<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, &'a [&'a str]);

/// The hash annotations a pod gets, built by hand: `entries` stamped `now`, beside the pod's own `kept`
/// entries; each map as Go marshals it.
fn expected_hash_annotations(entries: &[Entry<'_>], kept: &[(&str, UpgradeSpec)]) -> [String; 2] {
    [0, 1].map(|which| {
        let mut map: BTreeMap<String, UpgradeSpec> = kept
            .iter()
            .map(|(name, spec)| ((*name).to_owned(), spec.clone()))
            .collect();
        for &(name, hash, without_image, revision, list) in entries {
            map.insert(
                name.to_owned(),
                UpgradeSpec {
                    update_timestamp: Some(NOW.to_owned()),
                    hash: [hash, without_image][which].to_owned(),
                    sidecar_set_name: name.to_owned(),
                    sidecar_list: Some(list.iter().map(|s| (*s).to_owned()).collect()),
                    controller_revision: revision.filter(|_| which == 0).map(str::to_owned),
                },
            );
        }
        go::to_string(&map)
    })
}

#[test]
fn hash_annotation_entries_written_ahead_are_the_entries_as_go_marshals_them() {
    // Names, hashes and a revision with what JSON and Go escape, beside an entry the pod already had (written
    // as it is read) and a plain SidecarSet; `run` checks the patch's text against serde_json's.
    let odd: Arc<PreparedSidecarSet> = Arc::new(
        serde_json::from_value::<SidecarSet>(json!({
            "metadata": {"name": "odd", "annotations": {
                HASH_ANNOTATION: "h<\"1\">&\\\u{1}\u{2028}", HASH_WITHOUT_IMAGE_ANNOTATION: "w\"\u{7f}é"}},
            "spec": {"selector": {"matchLabels": {"app": "suxing-test"}},
                     "initContainers": [{"name": "native\"", "image": "i", "restartPolicy": "Always"}],
                     "containers": [{"name": "c<2>", "image": "i"}, {"name": "a&1", "image": "i"}]},
            "status": {"latestRevision": "odd-\"rev\""}
        }))
        .unwrap()
        .into(),
    );
    let old = UpgradeSpec {
        update_timestamp: None,
        hash: "old\"hash".into(),
        sidecar_set_name: "before".into(),
        sidecar_list: None,
        controller_revision: None,
    };
    let mut p = pod();
    p["metadata"]["annotations"] = json!({
        HASH_ANNOTATION: go::to_string(&BTreeMap::from([("before", &old)])),
        HASH_WITHOUT_IMAGE_ANNOTATION: go::to_string(&BTreeMap::from([("before", &old)])),
    });
    run(&mut p, &[odd.clone(), sidecarset1()]).unwrap();
    let expected = expected_hash_annotations(
        &[
            (
                "odd",
                "h<\"1\">&\\\u{1}\u{2028}",
                "w\"\u{7f}é",
                Some("odd-\"rev\""),
                &["a&1", "c<2>", "native\""],
            ),
            (
                "sidecarset1",
                "sidecarset1-hash",
                "sidecarset1-wo",
                None,
                &["dns-f", "log-agent"],
            ),
        ],
        &[("before", old.clone())],
    );
    assert_eq!(ann(&p, HASH_ANNOTATION), expected[0]);
    assert_eq!(ann(&p, HASH_WITHOUT_IMAGE_ANNOTATION), expected[1]);
    // The same again, into a pod without annotations (the patch adds them as one object), from the entries
    // the first injection kept with the SidecarSet.
    let mut p = pod();
    run(&mut p, &[odd]).unwrap();
    let expected = expected_hash_annotations(
        &[(
            "odd",
            "h<\"1\">&\\\u{1}\u{2028}",
            "w\"\u{7f}é",
            Some("odd-\"rev\""),
            &["a&1", "c<2>", "native\""],
        )],
        &[],
    );
    assert_eq!(ann(&p, HASH_ANNOTATION), expected[0]);
    assert_eq!(ann(&p, HASH_WITHOUT_IMAGE_ANNOTATION), expected[1]);
}

#[test]
fn a_sidecar_set_edited_after_an_injection_is_written_from_its_fields_as_they_are() {
    // Injected alone into a fresh pod, `set` writes these hash annotation entries.
    let written_as = |set: SidecarSet, (hash, revision, list): (&str, Option<&str>, &[&str])| {
        let mut p = pod();
        run(&mut p, &[Arc::new(set.into())]).unwrap();
        let expected = expected_hash_annotations(
            &[("sidecarset1", hash, "sidecarset1-wo", revision, list)],
            &[],
        );
        assert_eq!(ann(&p, HASH_ANNOTATION), expected[0]);
        assert_eq!(ann(&p, HASH_WITHOUT_IMAGE_ANNOTATION), expected[1]);
    };
    let set = sidecarset1();
    run(&mut pod(), std::slice::from_ref(&set)).unwrap();
    // Edited (its prepared entries were written by the first injection), and edited in a clone.
    let mut edited = set.sidecar_set().as_ref().clone();
    edited
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(HASH_ANNOTATION.into(), "edited".into());
    edited.status = Some(crate::api::sidecarset::SidecarSetStatus {
        latest_revision: Some("rev-2".into()),
        ..Default::default()
    });
    let mut cloned = edited.clone();
    cloned.spec.containers.pop();
    written_as(edited, ("edited", Some("rev-2"), &["dns-f", "log-agent"]));
    written_as(cloned, ("edited", Some("rev-2"), &["dns-f"]));
    // Only its containers edited: the sidecar list alone tells the entries apart.
    let set = sidecarset1();
    run(&mut pod(), std::slice::from_ref(&set)).unwrap();
    let mut edited = set.sidecar_set().as_ref().clone();
    edited.spec.containers.pop();
    written_as(edited, ("sidecarset1-hash", None, &["dns-f"]));
}

/// Mounts and envs taken from the app containers are copied into the sidecar as the request has them: member
/// order, spacing, escapes and fields no type knows.
#[test]
fn shared_mounts_and_transferred_envs_are_copied_as_received() {
    let mount = r#"{"mountPath": "/data","name":"data", "x-unknown":{"k":[1]}}"#;
    let env = r#"{"value":"v\u00e9","name":"E"}"#;
    let text = format!(
        r#"{{"metadata":{{"name":"p","namespace":"default","labels":{{"app":"suxing-test"}}}},
        "spec":{{"containers":[{{"name":"nginx","image":"nginx","env":[{env}],"volumeMounts":[{mount}]}}],
        "volumes":[{{"name":"data","emptyDir":{{}}}}]}}}}"#
    );
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "dns-f", "image": "i", "shareVolumePolicy": {"type": "enabled"},
            "transferEnv": [{"sourceContainerName": "nginx", "envName": "E"}]}]}),
    );
    let mut doc = RawPod::parse_str(&text).unwrap();
    assert!(inject(&mut doc, &[set], opts(), &no_resources).unwrap());
    let expected = doc.to_value();
    let ops = doc.into_patch();
    let patch = String::from_utf8(crate::json::patch::to_json(&ops)).unwrap();
    assert!(patch.contains(&format!("[{mount}]")), "{patch}");
    assert!(
        patch.contains(&format!(
            r#"{{"name":"IS_INJECTED","value":"true"}},{env}]"#
        )),
        "{patch}"
    );
    let pod: Value = serde_json::from_str(&text).unwrap();
    let patched = crate::json::patch::apply(&pod, &ops).unwrap();
    assert_eq!(patched, expected);
    let sidecar = container(&patched, "containers", "dns-f");
    assert_eq!(
        sidecar["volumeMounts"],
        json!([{"name": "data", "mountPath": "/data", "x-unknown": {"k": [1]}}])
    );
    assert_eq!(
        sidecar["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "E", "value": "vé"}])
    );
}

/// A sidecar that takes nothing from the pod is written once per SidecarSet and shared by every pod's patch;
/// one that takes something (here a transferred env, present in one pod only) is written per pod, and as the
/// shared one when the pod gives it nothing.
#[test]
fn a_sidecar_taking_nothing_from_the_pod_is_written_once_and_shared() {
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [
            {"name": "plain", "image": "i", "shareVolumePolicy": {"type": "disabled"}, "env": [{"name": "A", "value": "1"}]},
            {"name": "takes", "image": "i", "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello1"}]}]}),
    );
    let inject_into = |pod: &Value| {
        let text = pod.to_string();
        let mut doc = RawPod::parse_str(&text).unwrap();
        inject(&mut doc, std::slice::from_ref(&set), opts(), &no_resources).unwrap();
        let ops = doc.into_patch();
        let added = |name: &str| {
            ops.iter()
                .filter_map(crate::json::patch::Op::value)
                .find(|v| v.to_value()["name"] == name)
                .cloned()
                .unwrap()
        };
        (added("plain"), added("takes"))
    };
    let with_env = pod();
    let mut without_env = pod();
    without_env["spec"]["containers"][0]["env"] = json!([]);
    let (plain_1, takes_1) = inject_into(&with_env);
    let (plain_2, takes_2) = inject_into(&without_env);
    let (Json::Shared(a), Json::Shared(b)) = (&plain_1, &plain_2) else {
        panic!("written once and shared: {plain_1:?} {plain_2:?}")
    };
    assert!(Arc::ptr_eq(a, b));
    assert_eq!(
        plain_1.to_value(),
        json!({"name": "plain", "image": "i", "env": [{"name": "A", "value": "1"}, {"name": "IS_INJECTED", "value": "true"}]})
    );
    assert!(matches!(takes_1, Json::Text(_)), "{takes_1:?}");
    assert_eq!(
        takes_1.to_value()["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "hello1", "value": "world1"}])
    );
    assert!(matches!(takes_2, Json::Shared(_)), "{takes_2:?}");
    assert_eq!(
        takes_2.to_value()["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}])
    );
}

/// `$(NAME)` references are read wherever they stand; a `$` without `(`, an unclosed `$(` and an invalid
/// name are not references.
#[test]
fn subpath_vars_reads_each_reference() {
    for (expr, vars) in [
        (
            "foo/$(POD_NAME)/$(OD_NAME)/conf",
            &["POD_NAME", "OD_NAME"][..],
        ),
        ("$$(A)", &["A"]),
        ("$A/$(B)", &["B"]),
        ("$(a.b-c_d)x", &["a.b-c_d"]),
        ("$(1bad)/$(ok1)", &["ok1"]),
        // A failed try resumes at the next character, as the regex does.
        ("$($(A))/$(POD)", &["A", "POD"]),
        ("$(a$(B))", &["B"]),
        ("$(x y)$(Z)", &["Z"]),
        ("$()/$(-x)", &["-x"]),
        ("$(A", &[]),
        ("$(A)$(", &["A"]),
        ("$", &[]),
        ("", &[]),
        ("plain/path", &[]),
    ] {
        assert_eq!(subpath_vars(expr), vars, "{expr:?}");
    }
}

#[test]
fn transfer_env_source_key_is_read_as_written() {
    // OpenKruise reads labels[key] / annotations[key] with the key as written; lower-casing is only its
    // qualified-name check.
    let transfer = |path: &str| {
        sidecar_set(
            "s",
            json!({"selector": {"matchLabels": {"app": "suxing-test"}},
            "containers": [{"name": "dns-f", "image": "i", "transferEnv": [{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": path}}, "envName": "hello2"}]}]}),
        )
    };
    let env = |p: &Value| container(p, "containers", "dns-f")["env"].clone();
    let injected_only = json!([{"name": "IS_INJECTED", "value": "true"}]);
    let transferred =
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "hello2", "value": "world2"}]);

    let mut p = pod();
    p["metadata"]["labels"]["src"] = json!("nginx");
    run(&mut p, &[transfer("metadata.labels['SRC']")]).unwrap();
    assert_eq!(env(&p), injected_only, "label SRC is absent");

    let mut p = pod();
    p["metadata"]["annotations"] = json!({"Src": "nginx", "src": "other"});
    run(&mut p, &[transfer("metadata.annotations['Src']")]).unwrap();
    assert_eq!(env(&p), transferred, "annotation Src names nginx");

    let mut p = pod();
    p["metadata"]["annotations"] = json!({"src": "nginx"});
    run(&mut p, &[transfer("metadata.annotations['Src']")]).unwrap();
    assert_eq!(env(&p), injected_only, "annotation Src is absent");
}

#[test]
fn transfer_env_takes_the_last_definition_of_a_repeated_name() {
    // OpenKruise's "<container>/<name>" map keeps the last definition.
    let mut p = pod();
    p["spec"]["containers"][0]["env"] =
        json!([{"name": "hello", "value": "first"}, {"name": "hello", "value": "second"}]);
    let set = sidecar_set(
        "s",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
        "containers": [{"name": "dns-f", "image": "i", "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello"}]}]}),
    );
    run(&mut p, &[set]).unwrap();
    assert_eq!(
        container(&p, "containers", "dns-f")["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "hello", "value": "second"}])
    );
}

#[test]
fn patch_pod_metadata_ignores_unknown_policies_and_reports_merge_patch_errors_as_go() {
    let with_patches = |patches: Value| {
        sidecar_set(
            "s",
            json!({"selector": {"matchLabels": {"app": "suxing-test"}}, "patchPodMetadata": patches}),
        )
    };
    // Validation asks only for a policy to be set; an unknown one does nothing (Go's switch has no default).
    let mut p = pod();
    let changed = patch_metadata(
        &mut p,
        &[with_patches(
            json!([{"annotations": {"k1": "v"}, "patchPolicy": "overwrite"}]),
        )],
    )
    .unwrap();
    assert!(!changed);
    assert!(p["metadata"]["annotations"].get("k1").is_none());

    // evanphx/json-patch's errors, as OpenKruise returns them.
    for (existing, patch, message) in [
        ("not json", r#"{"c":1}"#, "Invalid JSON Document"),
        ("null", r#"{"c":1}"#, "Invalid JSON Document"),
        (r#"{"a":1}"#, "not json", "Invalid JSON Patch"),
        (r#"{"a":1}"#, "5", "Invalid JSON Patch"),
    ] {
        let mut p = pod();
        p["metadata"]["annotations"] = json!({"k1": existing});
        let err = patch_metadata(
            &mut p,
            &[with_patches(
                json!([{"annotations": {"k1": patch}, "patchPolicy": "MergePatchJson"}]),
            )],
        )
        .unwrap_err();
        assert_eq!(err.to_string(), message, "{existing} + {patch}");
    }
}

#[test]
fn work_map_is_written_only_when_a_hot_upgrade_sidecar_goes_in() {
    // The pod's map as another writer spaced it stays untouched when nothing hot-upgrades.
    let mut p = pod();
    let spaced = r#"{ "envoy": "envoy-2" }"#;
    p["metadata"]["annotations"] = json!({WORKING_HOT_UPGRADE_ANNOTATION: spaced});
    run(&mut p, &[sidecarset1()]).unwrap();
    assert_eq!(ann(&p, WORKING_HOT_UPGRADE_ANNOTATION), spaced);

    // With one, the pod's entries are kept beside the new one.
    let mut set = sidecarset1().sidecar_set().as_ref().clone();
    let mut dns: Value = serde_json::to_value(&set.spec.containers[0]).unwrap();
    dns["upgradeStrategy"] = json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "e:1"});
    set.spec.containers[0] = serde_json::from_value(dns).unwrap();
    let mut p = pod();
    p["metadata"]["annotations"] = json!({WORKING_HOT_UPGRADE_ANNOTATION: spaced});
    run(&mut p, &[Arc::new(set.into())]).unwrap();
    assert_eq!(
        ann(&p, WORKING_HOT_UPGRADE_ANNOTATION),
        r#"{"dns-f":"dns-f-1","envoy":"envoy-2"}"#
    );
}
