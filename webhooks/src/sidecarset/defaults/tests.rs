//! Tests of SidecarSet defaulting (spec/sidecarset.md §7, §7.1; §11 scenario 43). Expected objects are
//! written by hand from the spec.

use assert_json_diff::assert_json_eq;
use serde_json::{Value, json};

use super::*;
use crate::admission::AdmissionRequest;

const GOLDEN_HASH: &str = "6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684";
const GOLDEN_HASH_WITHOUT_IMAGE: &str =
    "82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94";

fn request(operation: &str, version: &str, object: Option<&Value>) -> AdmissionRequest {
    let mut req = json!({
        "uid": "u1",
        "kind": {"group": "apps.kruise.io", "version": version, "kind": "SidecarSet"},
        "resource": {"group": "apps.kruise.io", "version": version, "resource": "sidecarsets"},
        "name": "sidecarset-test",
        "operation": operation,
        "userInfo": {"username": "alice"}
    });
    if let Some(object) = object {
        req["object"] = object.clone();
    }
    // RawValue fields need the text deserializer.
    serde_json::from_str(&req.to_string()).unwrap()
}

/// Scenario 43's SidecarSet.
fn scenario_43(version: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"),
        "kind": "SidecarSet",
        "metadata": {"name": "sidecarset-test"},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "containers": [{"name": "dns-f", "image": "dns:1.0"}],
            "patchPodMetadata": [{"annotations": {"key1": "value1"}}],
            "injectionStrategy": {"revision": {"customVersion": "1"}}
        }
    })
}

/// Scenario 43's SidecarSet as the webhook must leave it.
fn scenario_43_defaulted(version: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"),
        "kind": "SidecarSet",
        "metadata": {
            "name": "sidecarset-test",
            "annotations": {
                "kruise.io/sidecarset-hash": GOLDEN_HASH,
                "kruise.io/sidecarset-hash-without-image": GOLDEN_HASH_WITHOUT_IMAGE
            }
        },
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "containers": [{
                "name": "dns-f",
                "image": "dns:1.0",
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "podInjectPolicy": "BeforeAppContainer",
                "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
                "shareVolumePolicy": {"type": "disabled"}
            }],
            "patchPodMetadata": [{"annotations": {"key1": "value1"}, "patchPolicy": "Retain"}],
            "injectionStrategy": {"revision": {"customVersion": "1", "policy": "Always"}},
            "updateStrategy": {"type": "RollingUpdate", "partition": 0, "maxUnavailable": 1},
            "revisionHistoryLimit": 10
        }
    })
}

/// Runs the webhook and applies its patch to the raw object.
fn patched(version: &str, object: &Value) -> Value {
    let verdict = mutate(&request("CREATE", version, Some(object))).unwrap();
    assert!(verdict.is_allowed());
    patch::apply(object, &verdict.patch).unwrap()
}

/// The defaulted spec of a SidecarSet with `spec`.
fn defaulted_spec(spec: Value) -> Value {
    let object = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": "s"}, "spec": spec});
    patched("v1beta1", &object)["spec"].clone()
}

/// The defaulted form of one container.
fn defaulted_container(container: Value) -> Value {
    defaulted_spec(json!({"containers": [container]}))["containers"][0].clone()
}

#[test]
fn scenario_43_defaults_and_golden_hashes_for_both_versions() {
    for version in ["v1beta1", "v1alpha1"] {
        let object = scenario_43(version);
        assert_json_eq!(patched(version, &object), scenario_43_defaulted(version));
    }
}

#[test]
fn defaulting_a_defaulted_object_changes_nothing() {
    for operation in ["CREATE", "UPDATE"] {
        let object = scenario_43_defaulted("v1beta1");
        let verdict = mutate(&request(operation, "v1beta1", Some(&object))).unwrap();
        assert!(verdict.is_allowed());
        assert!(verdict.patch.is_empty(), "{:?}", verdict.patch);
    }
}

#[test]
fn stale_hash_annotations_are_replaced_and_other_annotations_kept() {
    let mut object = scenario_43_defaulted("v1beta1");
    object["metadata"]["annotations"]["kruise.io/sidecarset-hash"] = json!("stale");
    object["metadata"]["annotations"]["team"] = json!("a");
    let mut expected = scenario_43_defaulted("v1beta1");
    expected["metadata"]["annotations"]["team"] = json!("a");
    assert_json_eq!(patched("v1beta1", &object), expected);
}

#[test]
fn fields_unknown_to_our_types_survive_and_do_not_change_the_hash() {
    let mut object = scenario_43("v1beta1");
    object["metadata"]["x-meta"] = json!({"keep": true});
    object["metadata"]["creationTimestamp"] = Value::Null;
    object["spec"]["futureField"] = json!([1, 2]);
    object["spec"]["containers"][0]["futureContainerField"] = json!("x");
    object["status"] = json!({"matchedPods": 3, "futureStatus": "y"});
    let mut expected = scenario_43_defaulted("v1beta1");
    expected["metadata"]["x-meta"] = json!({"keep": true});
    expected["metadata"]["creationTimestamp"] = Value::Null;
    expected["spec"]["futureField"] = json!([1, 2]);
    expected["spec"]["containers"][0]["futureContainerField"] = json!("x");
    expected["status"] = json!({"matchedPods": 3, "futureStatus": "y"});
    assert_json_eq!(patched("v1beta1", &object), expected);
}

#[test]
fn other_operations_are_allowed_untouched() {
    for operation in ["DELETE", "CONNECT"] {
        let verdict = mutate(&request(operation, "v1", None)).unwrap();
        assert!(verdict.is_allowed());
        assert!(verdict.patch.is_empty());
    }
}

#[test]
fn unsupported_versions_are_answered_400() {
    let object = scenario_43("v1beta1");
    let err = mutate(&request("CREATE", "v1", Some(&object))).unwrap_err();
    assert!(matches!(err, WebhookError::UnsupportedVersion(_)));
    assert_eq!(err.http_code(), 400);
    assert_eq!(err.to_string(), "unsupported version: v1");
}

#[test]
fn undecodable_objects_are_answered_400() {
    let cases = [
        None,
        Some(json!([])),
        Some(
            json!({"kind": "SidecarSet", "spec": {"containers": [{"name": "a", "stdin": "yes"}]}}),
        ),
        Some(
            json!({"kind": "SidecarSet", "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "one"}}}]}}),
        ),
        Some(json!({"kind": "SidecarSet", "spec": {"updateStrategy": {"partition": true}}})),
        Some(json!({"kind": "SidecarSet", "spec": {"volumes": [{"name": "v", "secret": "s"}]}})),
        Some(json!({"kind": "SidecarSet", "spec": "nope"})),
        Some(json!({"kind": "SidecarSet", "metadata": {"annotations": {"a": 1}}})),
    ];
    for object in cases {
        let err = mutate(&request("CREATE", "v1beta1", object.as_ref())).unwrap_err();
        assert!(matches!(err, WebhookError::Decode(_)), "{object:?}: {err}");
        assert_eq!(err.http_code(), 400);
    }
    let err = mutate(&request(
        "UPDATE",
        "v1beta1",
        Some(&json!({"spec": {"initContainers": [{"name": "i", "tty": "no"}]}})),
    ))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "json: cannot unmarshal string into Go struct field SidecarContainer.spec.initContainers.tty of type bool"
    );
}

#[test]
fn update_strategy_defaults_keep_what_is_set() {
    assert_json_eq!(
        defaulted_spec(json!({}))["updateStrategy"],
        json!({"type": "RollingUpdate", "maxUnavailable": 1, "partition": 0})
    );
    assert_json_eq!(
        defaulted_spec(
            json!({"updateStrategy": {"type": "NotUpdate", "partition": "10%", "maxUnavailable": null, "paused": true}})
        )["updateStrategy"],
        json!({"type": "NotUpdate", "partition": "10%", "maxUnavailable": 1, "paused": true})
    );
    assert_json_eq!(
        defaulted_spec(
            json!({"updateStrategy": {"type": "", "partition": 0, "maxUnavailable": "50%"}})
        )["updateStrategy"],
        json!({"type": "RollingUpdate", "partition": 0, "maxUnavailable": "50%"})
    );
}

#[test]
fn spec_level_defaults() {
    let spec = defaulted_spec(json!({
        "revisionHistoryLimit": 5,
        "patchPodMetadata": [{"annotations": {"a": "1"}, "patchPolicy": "Overwrite"}, {"annotations": {"b": "2"}, "patchPolicy": ""}],
        "injectionStrategy": {"paused": true}
    }));
    assert_eq!(spec["revisionHistoryLimit"], json!(5));
    assert_json_eq!(
        spec["patchPodMetadata"],
        json!([{"annotations": {"a": "1"}, "patchPolicy": "Overwrite"}, {"annotations": {"b": "2"}, "patchPolicy": "Retain"}])
    );
    // No revision: no policy.
    assert_json_eq!(spec["injectionStrategy"], json!({"paused": true}));
    let spec = defaulted_spec(
        json!({"injectionStrategy": {"revision": {"revisionName": "r", "policy": "Partial"}}}),
    );
    assert_json_eq!(
        spec["injectionStrategy"],
        json!({"revision": {"revisionName": "r", "policy": "Partial"}})
    );
    let spec = defaulted_spec(json!({"injectionStrategy": {"revision": {}}}));
    assert_json_eq!(
        spec["injectionStrategy"],
        json!({"revision": {"policy": "Always"}})
    );
    assert_eq!(
        defaulted_spec(json!({"revisionHistoryLimit": null}))["revisionHistoryLimit"],
        json!(10)
    );
}

#[test]
fn container_and_init_container_policies() {
    let spec = defaulted_spec(json!({
        "initContainers": [{"name": "i", "image": "busybox:1.0"}],
        "containers": [
            {"name": "c", "image": "busybox:1.0", "podInjectPolicy": "AfterAppContainer",
             "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"},
             "shareVolumePolicy": {"type": "enabled"}}
        ]
    }));
    assert_json_eq!(
        spec["initContainers"][0],
        json!({
            "name": "i", "image": "busybox:1.0", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "podInjectPolicy": "AfterAppContainer",
            "upgradeStrategy": {"upgradeType": "ColdUpgrade"}, "shareVolumePolicy": {"type": "disabled"}
        })
    );
    assert_json_eq!(
        spec["containers"][0],
        json!({
            "name": "c", "image": "busybox:1.0", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "podInjectPolicy": "AfterAppContainer",
            "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"},
            "shareVolumePolicy": {"type": "enabled"}
        })
    );
    // shareVolumeDevicePolicy stays nil (§7.1).
    assert!(
        spec["containers"][0]
            .get("shareVolumeDevicePolicy")
            .is_none()
    );
}

#[test]
fn image_pull_policy_follows_the_tag() {
    for (image, policy) in [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("host:5000/img", "Always"),
        ("host:5000/img:1.2", "IfNotPresent"),
        (
            "img@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "IfNotPresent",
        ),
        ("dns:1.0", "IfNotPresent"),
    ] {
        let c = defaulted_container(json!({"name": "c", "image": image}));
        assert_eq!(c["imagePullPolicy"], json!(policy), "{image}");
    }
    // No image at all: not a parsable reference.
    assert_eq!(
        defaulted_container(json!({"name": "c"}))["imagePullPolicy"],
        json!("IfNotPresent")
    );
    let kept = defaulted_container(
        json!({"name": "c", "image": "nginx", "imagePullPolicy": "Never",
        "terminationMessagePath": "/tmp/t", "terminationMessagePolicy": "FallbackToLogsOnError"}),
    );
    assert_eq!(kept["imagePullPolicy"], json!("Never"));
    assert_eq!(kept["terminationMessagePath"], json!("/tmp/t"));
    assert_eq!(
        kept["terminationMessagePolicy"],
        json!("FallbackToLogsOnError")
    );
}

#[test]
fn ports_env_and_transfer_env_defaults() {
    let c = defaulted_container(json!({
        "name": "c", "image": "i:1",
        "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
        "env": [
            {"name": "A", "value": "a"},
            {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "C", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}}},
            {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1000m"}}}
        ],
        "transferEnv": [
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}, "envNames": ["X"]},
            {"sourceContainerName": "app", "envName": "Y"}
        ]
    }));
    assert_json_eq!(
        c["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}])
    );
    assert_json_eq!(
        c["env"],
        json!([
            {"name": "A", "value": "a"},
            {"name": "B", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "C", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}}},
            {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1"}}}
        ])
    );
    assert_json_eq!(
        c["transferEnv"],
        json!([
            {"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}}, "envNames": ["X"]},
            {"sourceContainerName": "app", "envName": "Y"}
        ])
    );
}

#[test]
fn resource_quantities_are_rounded_up_to_milli_and_canonical() {
    let c = defaulted_container(json!({
        "name": "c", "image": "i:1",
        "resources": {
            "limits": {"cpu": "1500u", "memory": "1024Mi", "ephemeral-storage": 2},
            "requests": {"cpu": "0.5", "memory": "128974848", "example.com/dev": "1000"}
        }
    }));
    assert_json_eq!(
        c["resources"],
        json!({
            "limits": {"cpu": "2m", "memory": "1Gi", "ephemeral-storage": "2"},
            "requests": {"cpu": "500m", "memory": "128974848", "example.com/dev": "1k"}
        })
    );
}

#[test]
fn liveness_and_readiness_probes_and_lifecycle_hooks_are_defaulted_startup_is_not() {
    let c = defaulted_container(json!({
        "name": "c", "image": "i:1",
        "livenessProbe": {"httpGet": {"port": 8080}},
        "readinessProbe": {"tcpSocket": {"port": 80}, "timeoutSeconds": 5, "periodSeconds": 0, "failureThreshold": 1},
        "startupProbe": {"httpGet": {"port": 8080}},
        "lifecycle": {
            "postStart": {"httpGet": {"port": 80, "path": "/start", "scheme": "HTTPS"}},
            "preStop": {"httpGet": {"port": "http"}}
        }
    }));
    assert_json_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_json_eq!(
        c["readinessProbe"],
        json!({"tcpSocket": {"port": 80}, "timeoutSeconds": 5, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 1})
    );
    assert_json_eq!(c["startupProbe"], json!({"httpGet": {"port": 8080}}));
    assert_json_eq!(
        c["lifecycle"],
        json!({
            "postStart": {"httpGet": {"port": 80, "path": "/start", "scheme": "HTTPS"}},
            "preStop": {"httpGet": {"port": "http", "path": "/", "scheme": "HTTP"}}
        })
    );
}

#[test]
fn volume_defaults() {
    let spec = defaulted_spec(json!({"volumes": [
        {"name": "none"},
        {"name": "host", "hostPath": {"path": "/var/log"}},
        {"name": "host-typed", "hostPath": {"path": "/d", "type": "Directory"}},
        {"name": "secret", "secret": {"secretName": "s"}},
        {"name": "cm", "configMap": {"name": "c", "defaultMode": 256}},
        {"name": "down", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"name": "proj", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token"}},
            {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"configMap": {"name": "c"}}
        ]}},
        {"name": "pvc", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "iscsi", "iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0}},
        {"name": "rbd", "rbd": {"monitors": ["m"], "image": "i"}},
        {"name": "azure", "azureDisk": {"diskName": "d", "diskURI": "u"}},
        {"name": "sio", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}}
    ]}));
    assert_json_eq!(
        spec["volumes"],
        json!([
            {"name": "none", "emptyDir": {}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": ""}},
            {"name": "host-typed", "hostPath": {"path": "/d", "type": "Directory"}},
            {"name": "secret", "secret": {"secretName": "s", "defaultMode": 420}},
            {"name": "cm", "configMap": {"name": "c", "defaultMode": 256}},
            {"name": "down", "downwardAPI": {"defaultMode": 420, "items": [{"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
            {"name": "proj", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}},
                {"configMap": {"name": "c"}}
            ]}},
            {"name": "pvc", "persistentVolumeClaim": {"claimName": "data"}},
            // OpenKruise's SetDefaultPodVolumes leaves these sources as they are.
            {"name": "iscsi", "iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0}},
            {"name": "rbd", "rbd": {"monitors": ["m"], "image": "i"}},
            {"name": "azure", "azureDisk": {"diskName": "d", "diskURI": "u"}},
            {"name": "sio", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}}
        ])
    );
}

#[test]
fn defaulted_native_sidecar_is_hashed_with_all_init_containers() {
    let object = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": "s"},
        "spec": {
            "updateStrategy": {"type": "NotUpdate"},
            "containers": [{"name": "c", "image": "c:1"}],
            "initContainers": [{"name": "plain", "image": "p:1"}, {"name": "native", "image": "n:1", "restartPolicy": "Always"}]
        }
    });
    let out = patched("v1beta1", &object);
    let container = |name: &str, image: &str, extra: &str| {
        format!(
            concat!(
                r#"{{"name":"{}","image":"{}","resources":{{}},{}"terminationMessagePath":"/dev/termination-log","#,
                r#""terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent","podInjectPolicy":"{}","#,
                r#""upgradeStrategy":{{"upgradeType":"ColdUpgrade"}},"shareVolumePolicy":{{"type":"disabled"}}}}"#
            ),
            name,
            image,
            extra,
            if name == "c" {
                "BeforeAppContainer"
            } else {
                "AfterAppContainer"
            }
        )
    };
    let expected_input = format!(
        r#"{{"containers":[{}],"initContainers":[{},{}]}}"#,
        container("c", "c:1", ""),
        container("plain", "p:1", ""),
        container("native", "n:1", r#""restartPolicy":"Always","#)
    );
    assert_eq!(hash::hash_input(&out["spec"]), expected_input);
    assert_eq!(
        out["metadata"]["annotations"]["kruise.io/sidecarset-hash"],
        json!(hash::sidecarset_hash(&out["spec"]))
    );
}

#[test]
fn default_object_is_what_mutate_applies() {
    let mut object = scenario_43("v1beta1");
    default_object(&mut object).unwrap();
    assert_json_eq!(object, scenario_43_defaulted("v1beta1"));
}

#[test]
fn every_default_is_idempotent() {
    let object = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": "s"},
        "spec": {
            "updateStrategy": {"maxUnavailable": "20%"},
            "injectionStrategy": {"revision": {"customVersion": "v2"}},
            "patchPodMetadata": [null, {"annotations": {"a": "b"}}],
            "initContainers": [{"name": "i", "image": "i", "restartPolicy": "Always",
                "readinessProbe": {"httpGet": {"port": 1}}}],
            "containers": [{
                "name": "c", "image": "reg:5000/c@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                "ports": [{"containerPort": 1}],
                "env": [{"name": "e", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "transferEnv": [{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.annotations['x']"}}}],
                "resources": {"limits": {"cpu": "0.25", "memory": "0.5Gi"}},
                "livenessProbe": {"exec": {"command": ["true"]}},
                "lifecycle": {"preStop": {"httpGet": {"port": 2}}}
            }],
            "volumes": [
                {"name": "a"}, {"name": "b", "hostPath": {"path": "/b"}}, {"name": "c", "secret": {}},
                {"name": "d", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                {"name": "e", "downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "metadata.uid"}}]}}
            ]
        }
    });
    let once = patched("v1alpha1", &object);
    assert_ne!(once, object);
    assert_eq!(
        once["spec"]["containers"][0]["imagePullPolicy"],
        json!("IfNotPresent")
    );
    assert_json_eq!(
        once["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "250m", "memory": "512Mi"}})
    );
    assert_json_eq!(
        once["spec"]["patchPodMetadata"],
        json!([{"patchPolicy": "Retain"}, {"annotations": {"a": "b"}, "patchPolicy": "Retain"}])
    );
    let verdict = mutate(&request("UPDATE", "v1alpha1", Some(&once))).unwrap();
    assert!(verdict.patch.is_empty(), "{:?}", verdict.patch);
}
