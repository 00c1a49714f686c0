//! The container rules, through whole pod specs (`spec.containers`, `spec.initContainers`).

use serde_json::json;

use crate::validation::testing::{c, check, pod_spec_errors, with};

#[test]
fn missing_image_and_duplicate_names_across_lists() {
    let init = json!([{"name": "x", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]);
    assert_eq!(
        check(init, json!([]), json!([])),
        ["spec.initContainers[0].image: Required value"]
    );
    assert_eq!(
        check(json!([c("dup")]), json!([c("dup")]), json!([])),
        ["spec.initContainers[0].name: Duplicate value: \"dup\""]
    );
    assert_eq!(
        check(json!([]), json!([c("a"), c("a")]), json!([])),
        ["spec.containers[1].name: Duplicate value: \"a\""]
    );
    assert_eq!(
        check(
            json!([]),
            json!([{"name": "Bad_Name", "image": "i"}]),
            json!([])
        ),
        [
            "spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.containers[0].terminationMessagePolicy: Required value",
            "spec.containers[0].imagePullPolicy: Required value",
        ]
    );
}

#[test]
fn mounts_must_name_a_valid_volume_and_devices_a_claim() {
    assert_eq!(
        check(
            json!([]),
            json!([with(
                c("a"),
                json!({"volumeMounts": [{"name": "nope", "mountPath": "/x"}]})
            )]),
            json!([])
        ),
        ["spec.containers[0].volumeMounts[0].name: Not found: \"nope\""]
    );
    assert_eq!(
        check(
            json!([]),
            json!([with(c("a"), json!({"volumeMounts": [{"name": "v"}]}))]),
            json!([{"name": "v"}])
        ),
        [
            "spec.volumes[0]: Required value: must specify a volume type",
            "spec.containers[0].volumeMounts[0].name: Not found: \"v\"",
            "spec.containers[0].volumeMounts[0].mountPath: Required value",
        ],
        "an invalid volume cannot be mounted"
    );
    let pvc = json!([{"name": "disk0", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "v", "emptyDir": {}}]);
    assert!(
        check(
            json!([]),
            json!([with(
                c("a"),
                json!({"volumeDevices": [{"name": "disk0", "devicePath": "/dev/nvme1"}]})
            )]),
            pvc.clone()
        )
        .is_empty()
    );
    assert_eq!(
        check(
            json!([]),
            json!([with(
                c("a"),
                json!({"volumeDevices": [{"name": "disk0", "devicePath": "/dev/x"}], "volumeMounts": [{"name": "v", "mountPath": "/dev/x"}]})
            )]),
            pvc
        ),
        [
            "spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/dev/x\": must not already exist as a path in volumeDevices",
            "spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/dev/x\": must not already exist as a path in volumeMounts",
        ]
    );
    assert_eq!(
        check(
            json!([]),
            json!([with(
                c("a"),
                json!({"volumeDevices": [{"name": "v", "devicePath": "/dev/x"}]})
            )]),
            json!([{"name": "v", "hostPath": {"path": "/h"}, "emptyDir": {}}])
        ),
        [
            "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
            "spec.containers[0].volumeDevices[0].name: Not found: \"v\"",
        ]
    );
}

#[test]
fn env_ports_and_resources() {
    let bad = with(
        c("a"),
        json!({
            "env": [{"name": "1x"}, {"name": "ok", "value": "v", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            "ports": [{"containerPort": 70000, "protocol": "TCP"}, {"protocol": "ICMP", "containerPort": 1}],
            "resources": {"limits": {"cpu": "100m"}, "requests": {"cpu": "200m", "gpu": "1"}}
        }),
    );
    let errs = check(json!([]), json!([bad]), json!([]));
    assert_eq!(
        errs,
        [
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.containers[0].env[0].name: Invalid value: \"1x\": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')",
            "spec.containers[0].env[1].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
            "spec.containers[0].resources.requests: Invalid value: \"200m\": must be less than or equal to cpu limit of 100m",
            "spec.containers[0].resources.requests[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
        ]
    );
    let e = pod_spec_errors(
        json!([]),
        json!([with(
            c("a"),
            json!({"resources": {"limits": {"cpu": "lots"}}})
        )]),
        json!([]),
    )
    .unwrap_err();
    assert_eq!(
        e.http_code(),
        400,
        "an unparsable quantity is a decode error"
    );
}

#[test]
fn init_container_rules() {
    let errs = check(
        json!([with(
            c("i"),
            json!({"restartPolicy": "OnFailure", "readinessProbe": {"exec": {"command": ["x"]}}})
        )]),
        json!([with(c("m"), json!({"restartPolicy": "Always"}))]),
        json!([]),
    );
    assert_eq!(
        errs,
        [
            "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
        ]
    );
}

#[test]
fn mount_propagation_and_recursive_read_only() {
    let a = with(
        c("a"),
        json!({"volumeMounts": [
            {"name": "v", "mountPath": "/a", "mountPropagation": "Bidirectional"},
            {"name": "v", "mountPath": "/b", "mountPropagation": "Sideways"},
            {"name": "v", "mountPath": "/c", "recursiveReadOnly": "Enabled", "mountPropagation": "HostToContainer"},
            {"name": "v", "mountPath": "/d", "recursiveReadOnly": "Maybe"},
            {"name": "v", "mountPath": "/e", "readOnly": true, "recursiveReadOnly": "Enabled", "mountPropagation": "None"},
            {"name": "v", "mountPath": "/f", "recursiveReadOnly": "Disabled"}
        ]}),
    );
    assert_eq!(
        check(
            json!([]),
            json!([a]),
            json!([{"name": "v", "emptyDir": {}}])
        ),
        [
            "spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
            "spec.containers[0].volumeMounts.mountPropagation: Unsupported value: \"Sideways\": supported values: \"Bidirectional\", \"HostToContainer\", \"None\"",
            "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
            "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified",
            "spec.containers[0].volumeMounts.recursiveReadOnly: Unsupported value: \"Maybe\": supported values: \"Disabled\", \"Enabled\", \"IfPossible\"",
        ]
    );
}
