//! Tests of the hash encoding (spec/sidecarset.md §7.2). Every expected string is written by hand from the
//! Go declarations (k8s.io/api v0.32 `core/v1/types.go`, Kruise `sidecarset_types.go`), never produced by the
//! code under test.

use serde_json::{Value, json};

use super::*;

const GOLDEN_HASH: &str = "6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684";
const GOLDEN_HASH_WITHOUT_IMAGE: &str =
    "82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94";

/// The golden container of `sidecarset_mutating_test.go` after defaulting.
fn golden_spec() -> Value {
    json!({
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
        "updateStrategy": {"type": "RollingUpdate", "partition": 0, "maxUnavailable": 1},
        "revisionHistoryLimit": 10
    })
}

/// `{"containers":[<one container>]}` for a container's expected encoding.
fn wrapped(container: &str) -> String {
    format!(r#"{{"containers":[{container}]}}"#)
}

fn input_of(container: Value) -> String {
    hash_input(&json!({ "containers": [container] }))
}

#[test]
fn golden_vector_encodes_and_hashes_like_openkruise() {
    let spec = golden_spec();
    assert_eq!(
        hash_input(&spec),
        r#"{"containers":[{"name":"dns-f","image":"dns:1.0","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent","podInjectPolicy":"BeforeAppContainer","upgradeStrategy":{"upgradeType":"ColdUpgrade"},"shareVolumePolicy":{"type":"disabled"}}]}"#
    );
    assert_eq!(sidecarset_hash(&spec), GOLDEN_HASH);
    assert_eq!(
        sidecarset_hash_without_image(&spec),
        GOLDEN_HASH_WITHOUT_IMAGE
    );
}

#[test]
fn without_image_hash_is_the_hash_of_the_spec_without_images() {
    let mut spec = golden_spec();
    spec["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("image");
    assert_eq!(sidecarset_hash(&spec), GOLDEN_HASH_WITHOUT_IMAGE);
    // An empty image is Go's zero value: omitted, same hash.
    spec["containers"][0]["image"] = json!("");
    assert_eq!(sidecarset_hash(&spec), GOLDEN_HASH_WITHOUT_IMAGE);
    // Only the image is ignored.
    let mut other = golden_spec();
    other["containers"][0]["image"] = json!("dns:2.0");
    assert_eq!(
        sidecarset_hash_without_image(&other),
        GOLDEN_HASH_WITHOUT_IMAGE
    );
    assert_ne!(sidecarset_hash(&other), GOLDEN_HASH);
}

#[test]
fn every_field_kind_is_written_in_go_declaration_order() {
    // serde_json sorts these keys alphabetically; the encoder must not.
    let container = json!({
        "name": "full",
        "image": "img:1",
        "command": ["sh", "-c"],
        "args": ["echo"],
        "workingDir": "/w",
        "ports": [{"name": "http", "hostPort": 8080, "containerPort": 80, "protocol": "TCP", "hostIP": "1.2.3.4"}],
        "envFrom": [
            {"prefix": "P_", "configMapRef": {"name": "cm", "optional": false}},
            {"secretRef": {"name": "s"}}
        ],
        "env": [
            {"name": "A", "value": "1"},
            {"name": "B", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "C", "valueFrom": {"resourceFieldRef": {"containerName": "full", "resource": "limits.cpu"}}},
            {"name": "D", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": true}}},
            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ],
        "resources": {
            "requests": {"memory": "64Mi", "cpu": "100m"},
            "limits": {"memory": "128Mi", "cpu": "1"},
            "claims": [{"request": "r", "name": "gpu"}]
        },
        "resizePolicy": [{"restartPolicy": "NotRequired", "resourceName": "cpu"}],
        "restartPolicy": "Always",
        "volumeMounts": [{
            "subPathExpr": "", "mountPropagation": "None", "subPath": "s", "mountPath": "/v",
            "recursiveReadOnly": "Enabled", "readOnly": true, "name": "v"
        }],
        "volumeDevices": [{"devicePath": "/dev/d", "name": "d"}],
        "livenessProbe": {
            "terminationGracePeriodSeconds": 30, "failureThreshold": 3, "successThreshold": 1,
            "periodSeconds": 10, "timeoutSeconds": 1, "initialDelaySeconds": 5,
            "httpGet": {
                "httpHeaders": [{"value": "y", "name": "X"}], "scheme": "HTTP", "host": "h",
                "port": 8080, "path": "/h"
            }
        },
        "readinessProbe": {"timeoutSeconds": 2, "tcpSocket": {"host": "h", "port": "http"}},
        "startupProbe": {"grpc": {"port": 9000}},
        "lifecycle": {
            "preStop": {"sleep": {"seconds": 5}},
            "postStart": {"exec": {"command": ["a"]}, "httpGet": {"port": 80}, "tcpSocket": {"port": 81}}
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {
            "appArmorProfile": {"type": "RuntimeDefault"},
            "seccompProfile": {"localhostProfile": "p.json", "type": "Localhost"},
            "procMount": "Default",
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": false,
            "runAsNonRoot": true,
            "runAsGroup": 1,
            "runAsUser": 0,
            "windowsOptions": {"hostProcess": false, "runAsUserName": "w", "gmsaCredentialSpec": "s", "gmsaCredentialSpecName": "n"},
            "seLinuxOptions": {"level": "l", "type": "t", "role": "r", "user": "u"},
            "privileged": false,
            "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}
        },
        "stdin": true,
        "stdinOnce": true,
        "tty": true,
        "podInjectPolicy": "AfterAppContainer",
        "upgradeStrategy": {"hotUpgradeEmptyImage": "empty:1", "upgradeType": "HotUpgrade"},
        "shareVolumePolicy": {"type": "enabled"},
        "shareVolumeDevicePolicy": {"type": "enabled"},
        "transferEnv": [
            {"envName": "X", "sourceContainerName": "app"},
            {"envNames": ["A", "B"], "sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']", "apiVersion": "v1"}}}
        ],
        "resourcesPolicy": {
            "resourcesExpr": {"requests": {"cpu": "50m"}, "limits": {"memory": "200Mi", "cpu": "cpu*50%"}},
            "targetContainersNameRegex": ".*",
            "targetContainersMode": "sum"
        }
    });
    let expected = concat!(
        r#"{"name":"full","image":"img:1","command":["sh","-c"],"args":["echo"],"workingDir":"/w","#,
        r#""ports":[{"name":"http","hostPort":8080,"containerPort":80,"protocol":"TCP","hostIP":"1.2.3.4"}],"#,
        r#""envFrom":[{"prefix":"P_","configMapRef":{"name":"cm","optional":false}},{"secretRef":{"name":"s"}}],"#,
        r#""env":[{"name":"A","value":"1"},"#,
        r#"{"name":"B","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},"#,
        r#"{"name":"C","valueFrom":{"resourceFieldRef":{"containerName":"full","resource":"limits.cpu","divisor":"0"}}},"#,
        r#"{"name":"D","valueFrom":{"configMapKeyRef":{"name":"cm","key":"k","optional":true}}},"#,
        r#"{"name":"E","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],"#,
        r#""resources":{"limits":{"cpu":"1","memory":"128Mi"},"requests":{"cpu":"100m","memory":"64Mi"},"claims":[{"name":"gpu","request":"r"}]},"#,
        r#""resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"}],"#,
        r#""restartPolicy":"Always","#,
        r#""volumeMounts":[{"name":"v","readOnly":true,"recursiveReadOnly":"Enabled","mountPath":"/v","subPath":"s","mountPropagation":"None"}],"#,
        r#""volumeDevices":[{"name":"d","devicePath":"/dev/d"}],"#,
        r#""livenessProbe":{"httpGet":{"path":"/h","port":8080,"host":"h","scheme":"HTTP","httpHeaders":[{"name":"X","value":"y"}]},"#,
        r#""initialDelaySeconds":5,"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3,"terminationGracePeriodSeconds":30},"#,
        r#""readinessProbe":{"tcpSocket":{"port":"http","host":"h"},"timeoutSeconds":2},"#,
        r#""startupProbe":{"grpc":{"port":9000,"service":null}},"#,
        r#""lifecycle":{"postStart":{"exec":{"command":["a"]},"httpGet":{"port":80},"tcpSocket":{"port":81}},"preStop":{"sleep":{"seconds":5}}},"#,
        r#""terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent","#,
        r#""securityContext":{"capabilities":{"add":["NET_ADMIN"],"drop":["ALL"]},"privileged":false,"#,
        r#""seLinuxOptions":{"user":"u","role":"r","type":"t","level":"l"},"#,
        r#""windowsOptions":{"gmsaCredentialSpecName":"n","gmsaCredentialSpec":"s","runAsUserName":"w","hostProcess":false},"#,
        r#""runAsUser":0,"runAsGroup":1,"runAsNonRoot":true,"readOnlyRootFilesystem":false,"allowPrivilegeEscalation":false,"#,
        r#""procMount":"Default","seccompProfile":{"type":"Localhost","localhostProfile":"p.json"},"appArmorProfile":{"type":"RuntimeDefault"}},"#,
        r#""stdin":true,"stdinOnce":true,"tty":true,"#,
        r#""podInjectPolicy":"AfterAppContainer","upgradeStrategy":{"upgradeType":"HotUpgrade","hotUpgradeEmptyImage":"empty:1"},"#,
        r#""shareVolumePolicy":{"type":"enabled"},"shareVolumeDevicePolicy":{"type":"enabled"},"#,
        r#""transferEnv":[{"sourceContainerName":"app","envName":"X"},"#,
        r#"{"sourceContainerNameFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.labels['app']"}},"envNames":["A","B"]}],"#,
        r#""resourcesPolicy":{"targetContainersMode":"sum","targetContainersNameRegex":".*","#,
        r#""resourcesExpr":{"limits":{"cpu":"cpu*50%","memory":"200Mi"},"requests":{"cpu":"50m"}}}}"#,
    );
    assert_eq!(input_of(container.clone()), wrapped(expected));
    assert_eq!(encode_containers(&[container]), format!("[{expected}]"));
}

#[test]
fn zero_values_follow_go_omitempty() {
    // Non-pointer structs are always written; empty strings, zero numbers, false, empty lists and maps
    // and nil pointers are dropped.
    assert_eq!(
        input_of(json!({})),
        wrapped(r#"{"name":"","resources":{},"upgradeStrategy":{},"shareVolumePolicy":{}}"#)
    );
    assert_eq!(
        input_of(json!({
            "name": "x", "image": "", "command": [], "workingDir": "", "stdin": false, "tty": null,
            "securityContext": null, "resources": null, "env": [{"name": "E", "value": ""}],
            "ports": [{"containerPort": 0, "hostPort": 0}], "resizePolicy": [],
            "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": false, "subPath": ""}],
            "livenessProbe": {"exec": {}, "timeoutSeconds": 0},
            "upgradeStrategy": {"upgradeType": ""}, "transferEnv": []
        })),
        wrapped(concat!(
            r#"{"name":"x","ports":[{"containerPort":0}],"env":[{"name":"E"}],"resources":{},"#,
            r#""volumeMounts":[{"name":"v","mountPath":"/v"}],"livenessProbe":{"exec":{}},"#,
            r#""upgradeStrategy":{},"shareVolumePolicy":{}}"#
        ))
    );
    // Pointers are written whenever set, zero values included.
    assert_eq!(
        input_of(json!({
            "name": "p", "restartPolicy": "",
            "securityContext": {"runAsUser": 0, "privileged": false, "procMount": ""},
            "resources": {"limits": {}, "requests": null, "claims": []},
            "shareVolumeDevicePolicy": {}
        })),
        wrapped(concat!(
            r#"{"name":"p","resources":{},"restartPolicy":"","#,
            r#""securityContext":{"privileged":false,"runAsUser":0,"procMount":""},"#,
            r#""upgradeStrategy":{},"shareVolumePolicy":{},"shareVolumeDevicePolicy":{}}"#
        ))
    );
    // Fields without omitempty are written with Go's zero value when absent.
    assert_eq!(
        input_of(json!({
            "name": "z",
            "env": [{"name": "R", "valueFrom": {"resourceFieldRef": {}, "configMapKeyRef": {}}}],
            "volumeDevices": [{}],
            "readinessProbe": {"httpGet": {}, "grpc": {"service": ""}},
            "lifecycle": {"preStop": {"sleep": {}}},
            "securityContext": {"seccompProfile": {}}
        })),
        wrapped(concat!(
            r#"{"name":"z","env":[{"name":"R","valueFrom":{"resourceFieldRef":{"resource":"","divisor":"0"},"#,
            r#""configMapKeyRef":{"key":""}}}],"resources":{},"volumeDevices":[{"name":"","devicePath":""}],"#,
            r#""readinessProbe":{"httpGet":{"port":0},"grpc":{"port":0,"service":""}},"#,
            r#""lifecycle":{"preStop":{"sleep":{"seconds":0}}},"securityContext":{"seccompProfile":{"type":""}},"#,
            r#""upgradeStrategy":{},"shareVolumePolicy":{}}"#
        ))
    );
}

#[test]
fn nil_and_empty_container_lists_differ_like_go_slices() {
    assert_eq!(hash_input(&json!({})), r#"{"containers":null}"#);
    assert_eq!(
        hash_input(&json!({"containers": null})),
        r#"{"containers":null}"#
    );
    assert_eq!(
        hash_input(&json!({"containers": []})),
        r#"{"containers":[]}"#
    );
    // A null element is a zero SidecarContainer.
    assert_eq!(
        hash_input(&json!({"containers": [null]})),
        wrapped(r#"{"name":"","resources":{},"upgradeStrategy":{},"shareVolumePolicy":{}}"#)
    );
}

#[test]
fn strings_are_escaped_as_go_escapes_them() {
    let container = json!({
        "name": "a<b>&c\u{2028}d\u{2029}",
        "command": ["q\"b\\n\nt\tc\u{1}\u{8}\u{c}\r/é\u{7f}"]
    });
    assert_eq!(
        input_of(container),
        wrapped(concat!(
            r#"{"name":"a\u003cb\u003e\u0026c\u2028d\u2029","#,
            r#""command":["q\"b\\n\nt\tc\u0001\b\f\r/é"#,
            "\u{7f}",
            r#""],"resources":{},"upgradeStrategy":{},"shareVolumePolicy":{}}"#
        ))
    );
    // Map keys are escaped too.
    assert_eq!(
        input_of(json!({"name": "k", "resources": {"limits": {"a<b": "1"}}})),
        wrapped(
            r#"{"name":"k","resources":{"limits":{"a\u003cb":"1"}},"upgradeStrategy":{},"shareVolumePolicy":{}}"#
        )
    );
}

#[test]
fn init_containers_are_hashed_only_when_one_is_a_native_sidecar() {
    let plain = json!({"name": "init-plain"});
    let native = json!({"name": "init-native", "restartPolicy": "Always"});
    let c = r#"{"name":"c","resources":{},"upgradeStrategy":{},"shareVolumePolicy":{}}"#;
    let base = json!({"containers": [{"name": "c"}], "initContainers": [plain.clone()]});
    assert_eq!(hash_input(&base), format!(r#"{{"containers":[{c}]}}"#));
    // Not native: restartPolicy other than Always.
    let mut on_failure = base.clone();
    on_failure["initContainers"][0]["restartPolicy"] = json!("OnFailure");
    assert_eq!(
        hash_input(&on_failure),
        format!(r#"{{"containers":[{c}]}}"#)
    );

    // One native sidecar pulls in every init container, plain ones too, in their order (§12 quirk).
    let with_native = json!({"containers": [{"name": "c"}], "initContainers": [plain, native]});
    assert_eq!(
        hash_input(&with_native),
        format!(
            concat!(
                r#"{{"containers":[{}],"initContainers":[{{"name":"init-plain","resources":{{}},"upgradeStrategy":{{}},"shareVolumePolicy":{{}}}},"#,
                r#"{{"name":"init-native","resources":{{}},"restartPolicy":"Always","upgradeStrategy":{{}},"shareVolumePolicy":{{}}}}]}}"#
            ),
            c
        )
    );
    assert_ne!(sidecarset_hash(&with_native), sidecarset_hash(&base));

    // No containers at all: the key is still written, as a nil slice.
    let only_init = json!({"initContainers": [{"name": "i", "restartPolicy": "Always"}]});
    assert_eq!(
        hash_input(&only_init),
        r#"{"containers":null,"initContainers":[{"name":"i","resources":{},"restartPolicy":"Always","upgradeStrategy":{},"shareVolumePolicy":{}}]}"#
    );
    // The without-image hash clears init container images too.
    let mut imaged = only_init.clone();
    imaged["initContainers"][0]["image"] = json!("busybox:1.0");
    assert_ne!(sidecarset_hash(&imaged), sidecarset_hash(&only_init));
    assert_eq!(
        sidecarset_hash_without_image(&imaged),
        sidecarset_hash(&only_init)
    );
}

#[test]
fn fields_unknown_to_the_go_types_are_dropped() {
    let container = json!({
        "name": "u",
        "Name": "case-sensitive keys",
        "x-custom": {"a": 1},
        "restartPolicyRules": [{"action": "Restart"}],
        "ports": [{"containerPort": 80, "extra": true}],
        "env": [{"name": "F", "valueFrom": {"fileKeyRef": {"path": "p", "key": "k", "volumeName": "v"}}}],
        "lifecycle": {"stopSignal": "SIGTERM"},
        "upgradeStrategy": {"upgradeType": "ColdUpgrade", "future": "x"}
    });
    assert_eq!(
        input_of(container),
        wrapped(concat!(
            r#"{"name":"u","ports":[{"containerPort":80}],"env":[{"name":"F","valueFrom":{}}],"resources":{},"#,
            r#""lifecycle":{},"upgradeStrategy":{"upgradeType":"ColdUpgrade"},"shareVolumePolicy":{}}"#
        ))
    );
    // Unknown fields do not change the golden hash.
    let mut spec = golden_spec();
    spec["containers"][0]["x-unknown"] = json!("anything");
    spec["unknownSpecField"] = json!(1);
    assert_eq!(sidecarset_hash(&spec), GOLDEN_HASH);
}

#[test]
fn quantities_are_written_canonically_with_sorted_keys() {
    let container = json!({
        "name": "q",
        "env": [{"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024Ki"}}}],
        "resources": {"limits": {"memory": "1024Mi", "cpu": "0.5", "nvidia.com/gpu": 1}, "requests": {"cpu": null}}
    });
    assert_eq!(
        input_of(container),
        wrapped(concat!(
            r#"{"name":"q","env":[{"name":"M","valueFrom":{"resourceFieldRef":{"resource":"limits.memory","divisor":"1Mi"}}}],"#,
            r#""resources":{"limits":{"cpu":"500m","memory":"1Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"0"}},"#,
            r#""upgradeStrategy":{},"shareVolumePolicy":{}}"#
        ))
    );
}

#[test]
fn int_or_string_ports_keep_their_kind() {
    assert_eq!(
        input_of(
            json!({"name": "p", "readinessProbe": {"tcpSocket": {"port": "8080"}}, "livenessProbe": {"tcpSocket": {"port": 8080}}})
        ),
        wrapped(concat!(
            r#"{"name":"p","resources":{},"livenessProbe":{"tcpSocket":{"port":8080}},"#,
            r#""readinessProbe":{"tcpSocket":{"port":"8080"}},"upgradeStrategy":{},"shareVolumePolicy":{}}"#
        ))
    );
}

#[test]
fn check_reports_what_go_cannot_decode() {
    let err = |spec: Value| check_containers(&spec).unwrap_err().to_string();
    assert_eq!(
        err(json!({"containers": [{"name": "a", "stdin": "yes"}]})),
        "json: cannot unmarshal string into Go struct field SidecarContainer.spec.containers.stdin of type bool"
    );
    assert_eq!(
        err(json!({"initContainers": [{"name": "a", "ports": [{"containerPort": 1.5}]}]})),
        "json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.initContainers.ports.containerPort of type int32"
    );
    assert_eq!(
        err(
            json!({"containers": [{"name": "a", "ports": [{"containerPort": 4_294_967_296_i64}]}]})
        ),
        "json: cannot unmarshal number 4294967296 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    );
    assert_eq!(
        err(json!({"containers": {"name": "a"}})),
        "json: cannot unmarshal object into Go struct field SidecarSetSpec.spec.containers of type slice"
    );
    assert_eq!(
        err(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1x"}}}]})),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert!(check_containers(&golden_spec()).is_ok());
    assert!(check_containers(&json!({"containers": [null, {"name": null, "tty": null}]})).is_ok());
    // The hash treats what Go cannot decode as absent.
    assert_eq!(
        input_of(json!({"name": "a", "stdin": "yes", "ports": [{"containerPort": 1.5}]})),
        wrapped(
            r#"{"name":"a","ports":[{"containerPort":0}],"resources":{},"upgradeStrategy":{},"shareVolumePolicy":{}}"#
        )
    );
}
