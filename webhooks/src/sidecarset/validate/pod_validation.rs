//! The "fake pod" check of spec/sidecarset.md §8 rule 3.6: the SidecarSet's init containers, containers (or a
//! placeholder `test`/`busybox`) and volumes are put in a pod (`default/test`, restartPolicy Always) and go
//! through a subset of Kubernetes v1.32 `ValidatePodCreate`, with its paths and texts, in its order
//! (volumes, then containers, then init containers, then the image-whitespace check).
//!
//! Implemented:
//! - volumes: name required / DNS-1123 label / unique; exactly one volume source (`must specify a volume
//!   type`, `may not specify more than 1 volume type`); required fields of hostPath (`path`, no `..`),
//!   secret (`secretName`), configMap (`name`), persistentVolumeClaim (`claimName`), nfs (`server`, absolute
//!   `path`); `defaultMode` of secret and configMap in 0..=0777; a negative emptyDir `sizeLimit`. A volume
//!   with errors is not available to mounts (as in Go);
//! - every container: name required / DNS-1123 label, image required, terminationMessagePolicy and
//!   imagePullPolicy required and supported, ports (name syntax and uniqueness, containerPort and hostPort
//!   1-65535, protocol TCP/UDP/SCTP, host port conflicts), env (names as C-identifier-like env names, the
//!   `valueFrom` source rules, fieldRef paths, configMap/secret key refs), envFrom (prefix, exactly one source,
//!   names), volumeMounts (name required and `Not found`, mountPath required and unique, clashes with
//!   volumeDevices, relative subPath/subPathExpr without `..`, subPath and subPathExpr exclusive),
//!   volumeDevices (`Not found`, PVC or ephemeral only, devicePath required / unique / no `..`, clashes with
//!   volumeMounts), resources (resource names, quantities non-negative, integer extended resources, requests
//!   not above limits, requests equal limits for hugepages and extended resources, hugepages need cpu or
//!   memory, claims must name pod resource claims, of which the fake pod has none), resizePolicy, probes
//!   (exactly one handler, exec command, non-negative numbers, successThreshold 1 for liveness and startup,
//!   terminationGracePeriodSeconds), lifecycle handlers;
//! - containers: unique names, `restartPolicy` forbidden; init containers: names unique across both lists,
//!   `restartPolicy` only `Always`, probes and lifecycle only with `restartPolicy: Always`, no resizePolicy;
//! - images without leading or trailing whitespace.
//!
//! Not implemented: securityContext, probe and lifecycle handler details (httpGet/tcpSocket ports, grpc,
//! sleep durations against the grace period), `resourceFieldRef` paths, volume sources other than the six
//! above beyond the one-source rule, secret/configMap `items`, projected and downwardAPI volume contents,
//! mountPropagation and recursiveReadOnly. Their errors are therefore not reported here.
//!
//! Go's decoder refuses an unparsable quantity before validation; here it is a [`WebhookError::Decode`]
//! (answered 400) naming the field.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::de::nullable;
use serde_json::{Map, Value};

use super::field_error::{BadValue, FieldError, FieldPath, go_quote};
use super::meta::{
    is_dns1123_label, is_dns1123_subdomain, is_env_var_name, is_qualified_name, regex_error,
    validate_nonnegative,
};
use crate::WebhookError;
use crate::quantity::Quantity;

/// The container fields pod validation reads; Go's zero values stand for absent fields.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodContainer {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    image: String,
    #[serde(default, deserialize_with = "nullable")]
    ports: Vec<Port>,
    #[serde(default, deserialize_with = "nullable")]
    env: Vec<Env>,
    #[serde(default, deserialize_with = "nullable")]
    env_from: Vec<EnvFrom>,
    #[serde(default, deserialize_with = "nullable")]
    volume_mounts: Vec<Mount>,
    #[serde(default, deserialize_with = "nullable")]
    volume_devices: Vec<Device>,
    #[serde(default, deserialize_with = "nullable")]
    resources: Resources,
    #[serde(default, deserialize_with = "nullable")]
    image_pull_policy: String,
    #[serde(default, deserialize_with = "nullable")]
    termination_message_policy: String,
    #[serde(default)]
    restart_policy: Option<String>,
    #[serde(default)]
    lifecycle: Option<Lifecycle>,
    #[serde(default)]
    liveness_probe: Option<Probe>,
    #[serde(default)]
    readiness_probe: Option<Probe>,
    #[serde(default)]
    startup_probe: Option<Probe>,
    #[serde(default, deserialize_with = "nullable")]
    resize_policy: Vec<ResizePolicy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Port {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    container_port: i32,
    #[serde(default, deserialize_with = "nullable")]
    host_port: i32,
    #[serde(default, rename = "hostIP", deserialize_with = "nullable")]
    host_ip: String,
    #[serde(default, deserialize_with = "nullable")]
    protocol: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Env {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    value: String,
    #[serde(default)]
    value_from: Option<EnvSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvSource {
    #[serde(default)]
    field_ref: Option<FieldRef>,
    #[serde(default)]
    resource_field_ref: Option<Value>,
    #[serde(default)]
    config_map_key_ref: Option<KeyRef>,
    #[serde(default)]
    secret_key_ref: Option<KeyRef>,
}

/// `ObjectFieldSelector`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FieldRef {
    #[serde(default, deserialize_with = "nullable")]
    pub(super) api_version: String,
    #[serde(default, deserialize_with = "nullable")]
    pub(super) field_path: String,
}

#[derive(Debug, Default, Deserialize)]
struct KeyRef {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    key: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvFrom {
    #[serde(default, deserialize_with = "nullable")]
    prefix: String,
    #[serde(default)]
    config_map_ref: Option<NameRef>,
    #[serde(default)]
    secret_ref: Option<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
struct NameRef {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Mount {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    mount_path: String,
    #[serde(default, deserialize_with = "nullable")]
    sub_path: String,
    #[serde(default, deserialize_with = "nullable")]
    sub_path_expr: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Device {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    device_path: String,
}

#[derive(Debug, Default, Deserialize)]
struct Resources {
    #[serde(default, deserialize_with = "nullable")]
    limits: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    requests: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    claims: Vec<NameRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    #[serde(flatten)]
    handler: Map<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    initial_delay_seconds: i32,
    #[serde(default, deserialize_with = "nullable")]
    timeout_seconds: i32,
    #[serde(default, deserialize_with = "nullable")]
    period_seconds: i32,
    #[serde(default, deserialize_with = "nullable")]
    success_threshold: i32,
    #[serde(default, deserialize_with = "nullable")]
    failure_threshold: i32,
    #[serde(default)]
    termination_grace_period_seconds: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lifecycle {
    #[serde(default)]
    post_start: Option<Map<String, Value>>,
    #[serde(default)]
    pre_stop: Option<Map<String, Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResizePolicy {
    #[serde(default, deserialize_with = "nullable")]
    resource_name: String,
    #[serde(default, deserialize_with = "nullable")]
    restart_policy: String,
}

/// Volume sources in the order Go's `validateVolumeSource` checks them (the second one found is reported).
const VOLUME_SOURCES: &[&str] = &[
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "quobyte",
    "flexVolume",
    "cinder",
    "cephfs",
    "downwardAPI",
    "fc",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "configMap",
    "scaleIO",
    "projected",
    "csi",
    "ephemeral",
    "image",
];

/// `fileModeErrorMsg`.
const FILE_MODE_ERROR: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// Env `fieldRef` paths Kubernetes accepts without a subscript (`validEnvDownwardAPIFieldPathExpressions`).
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The checked volumes: name → source kind, for mounts and devices (`vols` in Go).
type Volumes = BTreeMap<String, &'static str>;

/// What the fake pod holds: the SidecarSet's init containers and containers (raw JSON) and volumes.
pub struct FakePod<'a> {
    /// `spec.initContainers` of the SidecarSet.
    pub init_containers: &'a [Map<String, Value>],
    /// `spec.containers` of the SidecarSet; empty means the placeholder `test`/`busybox`.
    pub containers: &'a [Map<String, Value>],
    /// `spec.volumes` of the SidecarSet.
    pub volumes: &'a [Value],
}

/// Validates the fake pod (§8 rule 3.6, last step), returning Kubernetes' field errors.
///
/// # Errors
/// [`WebhookError::Decode`] when a container or volume holds a value Go's decoder refuses (a wrong JSON
/// type, an unparsable quantity).
pub fn validate_fake_pod(pod: &FakePod<'_>) -> Result<Vec<FieldError>, WebhookError> {
    let spec = FieldPath::new("spec");
    let decode = |list: &[Map<String, Value>],
                  what: &str|
     -> Result<Vec<PodContainer>, WebhookError> {
        list.iter()
            .enumerate()
            .map(|(i, raw)| {
                PodContainer::deserialize(&Value::Object(raw.clone()))
                    .map_err(|e| WebhookError::Decode(format!("decoding spec.{what}[{i}]: {e}")))
            })
            .collect()
    };
    let init = decode(pod.init_containers, "initContainers")?;
    let mut containers = decode(pod.containers, "containers")?;
    if containers.is_empty() {
        containers.push(PodContainer {
            name: "test".into(),
            image: "busybox".into(),
            image_pull_policy: "IfNotPresent".into(),
            termination_message_policy: "File".into(),
            ..Default::default()
        });
    }
    let mut errs = Vec::new();
    let volumes = validate_volumes(pod.volumes, &spec.child("volumes"), &mut errs)?;
    validate_containers(&containers, &volumes, &spec.child("containers"), &mut errs)?;
    validate_init_containers(
        &init,
        &containers,
        &volumes,
        &spec.child("initContainers"),
        &mut errs,
    )?;
    for (list, name) in [(&containers, "containers"), (&init, "initContainers")] {
        for (i, c) in list.iter().enumerate() {
            if c.image.len() != c.image.trim().len() {
                errs.push(FieldError::invalid(
                    &spec.child(name).index(i).child("image"),
                    BadValue::str(&c.image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    Ok(errs)
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

fn validate_volumes(
    volumes: &[Value],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<Volumes, WebhookError> {
    let mut valid = Volumes::new();
    let mut names = BTreeSet::new();
    for (i, volume) in volumes.iter().enumerate() {
        let p = path.index(i);
        let empty = Map::new();
        let obj = match volume {
            Value::Object(m) => m,
            Value::Null => &empty,
            _ => {
                return Err(WebhookError::Decode(format!(
                    "decoding spec.volumes[{i}]: expected an object"
                )));
            }
        };
        let name = match obj.get("name") {
            None | Some(Value::Null) => "",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => {
                return Err(WebhookError::Decode(format!(
                    "decoding spec.volumes[{i}].name: expected a string"
                )));
            }
        };
        let (kind, mut el) = validate_volume_source(obj, &p)?;
        if name.is_empty() {
            el.push(FieldError::required(&p.child("name"), ""));
        } else {
            for msg in is_dns1123_label(name) {
                el.push(FieldError::invalid(
                    &p.child("name"),
                    BadValue::str(name),
                    msg,
                ));
            }
        }
        if names.contains(name) {
            el.push(FieldError::duplicate(&p.child("name"), BadValue::str(name)));
        }
        if el.is_empty() {
            names.insert(name.to_owned());
            valid.insert(name.to_owned(), kind.unwrap_or(""));
        } else {
            errs.extend(el);
        }
    }
    Ok(valid)
}

/// `validateVolumeSource` (the subset of the module docs): the source kind and the errors.
fn validate_volume_source(
    obj: &Map<String, Value>,
    path: &FieldPath,
) -> Result<(Option<&'static str>, Vec<FieldError>), WebhookError> {
    let mut errs = Vec::new();
    let mut kind = None;
    for source in VOLUME_SOURCES {
        let Some(value) = obj.get(*source).filter(|v| !v.is_null()) else {
            continue;
        };
        if kind.is_some() {
            errs.push(FieldError::forbidden(
                &path.child(source),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        kind = Some(*source);
        let Value::Object(src) = value else {
            return Err(WebhookError::Decode(format!(
                "decoding {path}.{source}: expected an object"
            )));
        };
        let sp = path.child(source);
        match *source {
            "hostPath" => {
                let p = str_field(src, "path");
                if p.is_empty() {
                    errs.push(FieldError::required(&sp.child("path"), ""));
                } else if has_backsteps(p) {
                    errs.push(FieldError::invalid(
                        &sp.child("path"),
                        BadValue::str(p),
                        "must not contain '..'",
                    ));
                }
            }
            "emptyDir" => {
                if let Some(limit) = src.get("sizeLimit").filter(|v| !v.is_null()) {
                    let q = quantity(limit, &sp.child("sizeLimit"))?;
                    if q.negative() {
                        errs.push(FieldError::forbidden(
                            &sp.child("sizeLimit"),
                            "SizeLimit field must be a valid resource quantity",
                        ));
                    }
                }
            }
            "secret" | "configMap" => {
                let key = if *source == "secret" {
                    "secretName"
                } else {
                    "name"
                };
                if str_field(src, key).is_empty() {
                    errs.push(FieldError::required(&sp.child(key), ""));
                }
                if let Some(mode) = src.get("defaultMode").and_then(Value::as_i64)
                    && !(0..=0o777).contains(&mode)
                {
                    errs.push(FieldError::invalid(
                        &sp.child("defaultMode"),
                        BadValue::Int(mode),
                        FILE_MODE_ERROR,
                    ));
                }
            }
            "persistentVolumeClaim" if str_field(src, "claimName").is_empty() => {
                errs.push(FieldError::required(&sp.child("claimName"), ""));
            }
            "nfs" => {
                if str_field(src, "server").is_empty() {
                    errs.push(FieldError::required(&sp.child("server"), ""));
                }
                let p = str_field(src, "path");
                if p.is_empty() {
                    errs.push(FieldError::required(&sp.child("path"), ""));
                } else if !p.starts_with('/') {
                    errs.push(FieldError::invalid(
                        &sp.child("path"),
                        BadValue::str(p),
                        "must be an absolute path",
                    ));
                }
            }
            _ => {}
        }
    }
    if kind.is_none() {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    Ok((kind, errs))
}

fn has_backsteps(p: &str) -> bool {
    p.split(['/', '\\']).any(|part| part == "..")
}

/// `validateLocalDescendingPath`.
fn validate_local_descending_path(p: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if p.starts_with('/') {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(p),
            "must be a relative path",
        ));
    }
    if has_backsteps(p) {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(p),
            "must not contain '..'",
        ));
    }
}

fn validate_containers(
    containers: &[PodContainer],
    volumes: &Volumes,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        validate_container_common(c, volumes, &p, errs)?;
        if !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(
                &p.child("name"),
                BadValue::str(&c.name),
            ));
        }
        if let Some(lifecycle) = &c.lifecycle {
            validate_lifecycle(lifecycle, &p.child("lifecycle"), errs);
        }
        validate_probe(c.liveness_probe.as_ref(), ProbeKind::Liveness, &p, errs);
        validate_probe(c.readiness_probe.as_ref(), ProbeKind::Readiness, &p, errs);
        validate_probe(c.startup_probe.as_ref(), ProbeKind::Startup, &p, errs);
        if c.restart_policy.is_some() {
            errs.push(FieldError::forbidden(
                &p.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    check_host_ports(containers.iter().enumerate(), path, errs);
    Ok(())
}

fn validate_init_containers(
    init: &[PodContainer],
    containers: &[PodContainer],
    volumes: &Volumes,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let mut names: BTreeSet<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    for (i, c) in init.iter().enumerate() {
        let p = path.index(i);
        validate_container_common(c, volumes, &p, errs)?;
        let mut restart_always = false;
        if let Some(policy) = &c.restart_policy {
            if policy != "Always" {
                errs.push(FieldError::not_supported(
                    &p.child("restartPolicy"),
                    BadValue::str(policy),
                    &["Always"],
                ));
            }
            restart_always = policy == "Always";
        }
        if names.contains(c.name.as_str()) {
            errs.push(FieldError::duplicate(
                &p.child("name"),
                BadValue::str(&c.name),
            ));
        } else if !c.name.is_empty() {
            names.insert(c.name.as_str());
        }
        // Go checks each init container's host ports on its own, with the list's path and index 0.
        check_host_ports(std::iter::once((0, c)), path, errs);
        if restart_always {
            if let Some(lifecycle) = &c.lifecycle {
                validate_lifecycle(lifecycle, &p.child("lifecycle"), errs);
            }
            validate_probe(c.liveness_probe.as_ref(), ProbeKind::Liveness, &p, errs);
            validate_probe(c.readiness_probe.as_ref(), ProbeKind::Readiness, &p, errs);
            validate_probe(c.startup_probe.as_ref(), ProbeKind::Startup, &p, errs);
        } else {
            let forbidden = "may not be set for init containers without restartPolicy=Always";
            for (set, field) in [
                (c.lifecycle.is_some(), "lifecycle"),
                (c.liveness_probe.is_some(), "livenessProbe"),
                (c.readiness_probe.is_some(), "readinessProbe"),
                (c.startup_probe.is_some(), "startupProbe"),
            ] {
                if set {
                    errs.push(FieldError::forbidden(&p.child(field), forbidden));
                }
            }
        }
        if !c.resize_policy.is_empty() {
            errs.push(FieldError::invalid(
                &p.child("resizePolicy"),
                BadValue::Raw(render_resize_policy(&c.resize_policy)),
                "must not be set for init containers",
            ));
        }
    }
    Ok(())
}

fn render_resize_policy(list: &[ResizePolicy]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|r| {
            format!(
                "core.ContainerResizePolicy{{ResourceName:{}, RestartPolicy:{}}}",
                go_quote(&r.resource_name),
                go_quote(&r.restart_policy)
            )
        })
        .collect();
    format!("[]core.ContainerResizePolicy{{{}}}", items.join(", "))
}

/// `validateContainerCommon`.
fn validate_container_common(
    c: &PodContainer,
    volumes: &Volumes,
    p: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let name_path = p.child("name");
    if c.name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        for msg in is_dns1123_label(&c.name) {
            errs.push(FieldError::invalid(&name_path, BadValue::str(&c.name), msg));
        }
    }
    if c.image.is_empty() {
        errs.push(FieldError::required(&p.child("image"), ""));
    }
    match c.termination_message_policy.as_str() {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(FieldError::required(
            &p.child("terminationMessagePolicy"),
            "",
        )),
        other => errs.push(FieldError::not_supported(
            &p.child("terminationMessagePolicy"),
            BadValue::str(other),
            &["File", "FallbackToLogsOnError"],
        )),
    }
    validate_ports(&c.ports, &p.child("ports"), errs);
    validate_env(&c.env, &p.child("env"), errs);
    validate_env_from(&c.env_from, &p.child("envFrom"), errs);
    validate_mounts(c, volumes, &p.child("volumeMounts"), errs);
    validate_devices(c, volumes, &p.child("volumeDevices"), errs);
    match c.image_pull_policy.as_str() {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push(FieldError::required(&p.child("imagePullPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            &p.child("imagePullPolicy"),
            BadValue::str(other),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
    validate_resources(&c.resources, &p.child("resources"), errs)?;
    validate_resize_policy(&c.resize_policy, &p.child("resizePolicy"), errs);
    Ok(())
}

fn is_valid_port_num(n: i32) -> bool {
    (1..=65535).contains(&n)
}

const PORT_NUM_ERROR: &str = "must be between 1 and 65535, inclusive";

/// `validation.IsValidPortName`.
fn port_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push(super::meta::max_len_error(15));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || name.is_empty()
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

fn validate_ports(ports: &[Port], path: &FieldPath, errs: &mut Vec<FieldError>) {
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        if !port.name.is_empty() {
            let msgs = port_name_errors(&port.name);
            if !msgs.is_empty() {
                for msg in msgs {
                    errs.push(FieldError::invalid(
                        &p.child("name"),
                        BadValue::str(&port.name),
                        msg,
                    ));
                }
            } else if !names.insert(port.name.as_str()) {
                errs.push(FieldError::duplicate(
                    &p.child("name"),
                    BadValue::str(&port.name),
                ));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(&p.child("containerPort"), ""));
        } else if !is_valid_port_num(port.container_port) {
            errs.push(FieldError::invalid(
                &p.child("containerPort"),
                BadValue::Int(port.container_port.into()),
                PORT_NUM_ERROR,
            ));
        }
        if port.host_port != 0 && !is_valid_port_num(port.host_port) {
            errs.push(FieldError::invalid(
                &p.child("hostPort"),
                BadValue::Int(port.host_port.into()),
                PORT_NUM_ERROR,
            ));
        }
        match port.protocol.as_str() {
            "" => errs.push(FieldError::required(&p.child("protocol"), "")),
            "TCP" | "UDP" | "SCTP" => {}
            other => errs.push(FieldError::not_supported(
                &p.child("protocol"),
                BadValue::str(other),
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
}

/// `AccumulateUniqueHostPorts`.
fn check_host_ports<'a>(
    containers: impl Iterator<Item = (usize, &'a PodContainer)>,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let mut seen = BTreeSet::new();
    for (ci, c) in containers {
        for (pi, port) in c.ports.iter().enumerate() {
            if port.host_port == 0 {
                continue;
            }
            let key = format!("{}/{}/{}", port.host_ip, port.protocol, port.host_port);
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(
                    &path.index(ci).child("ports").index(pi).child("hostPort"),
                    BadValue::Str(key),
                ));
            } else {
                seen.insert(key);
            }
        }
    }
}

/// Kubernetes' `ConvertDownwardAPIFieldLabel` for pods (env `fieldRef`).
fn convert_pod_field_label(api_version: &str, label: &str) -> Result<String, String> {
    if api_version != "v1" {
        return Err(format!("unsupported pod version: {api_version}"));
    }
    if let Some((path, _)) = split_subscripted_path(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label.to_owned()),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label.to_owned()),
        "spec.host" => Ok("spec.nodeName".to_owned()),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['k']` → (`metadata.labels`, `k`).
pub(super) fn split_subscripted_path(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, subscript) = s.split_once("['")?;
    (!path.is_empty()).then_some((path, subscript))
}

/// `validateObjectFieldSelector`, with the label converter and the accepted unsubscripted paths of the caller.
pub(super) fn validate_object_field_selector(
    fs: &FieldRef,
    convert: fn(&str, &str) -> Result<String, String>,
    expressions: &[&str],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if fs.api_version.is_empty() {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
        return;
    }
    if fs.field_path.is_empty() {
        errs.push(FieldError::required(&path.child("fieldPath"), ""));
        return;
    }
    let internal = match convert(&fs.api_version, &fs.field_path) {
        Ok(p) => p,
        Err(e) => {
            errs.push(FieldError::invalid(
                &path.child("fieldPath"),
                BadValue::str(&fs.field_path),
                format!("error converting fieldPath: {e}"),
            ));
            return;
        }
    };
    if let Some((p, subscript)) = split_subscripted_path(&internal) {
        let key = match p {
            "metadata.annotations" => subscript.to_lowercase(),
            "metadata.labels" => subscript.to_owned(),
            _ => {
                errs.push(FieldError::invalid(
                    path,
                    BadValue::str(p),
                    "does not support subscript",
                ));
                return;
            }
        };
        for msg in is_qualified_name(&key) {
            errs.push(FieldError::invalid(path, BadValue::Str(key.clone()), msg));
        }
    } else if !expressions.contains(&internal.as_str()) {
        errs.push(FieldError::not_supported(
            &path.child("fieldPath"),
            BadValue::Str(internal),
            expressions,
        ));
    }
}

/// `validation.IsConfigMapKey`.
fn config_map_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push(super::meta::max_len_error(253));
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if key == "." {
        errs.push("must not be '.'".into());
    } else if key == ".." {
        errs.push("must not be '..'".into());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

fn validate_key_ref(r: &KeyRef, path: &FieldPath, errs: &mut Vec<FieldError>) {
    for msg in is_dns1123_subdomain(&r.name) {
        errs.push(FieldError::invalid(
            &path.child("name"),
            BadValue::str(&r.name),
            msg,
        ));
    }
    if r.key.is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    } else {
        for msg in config_map_key_errors(&r.key) {
            errs.push(FieldError::invalid(
                &path.child("key"),
                BadValue::str(&r.key),
                msg,
            ));
        }
    }
}

fn validate_env(env: &[Env], path: &FieldPath, errs: &mut Vec<FieldError>) {
    for (i, e) in env.iter().enumerate() {
        let p = path.index(i);
        if e.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else {
            for msg in is_env_var_name(&e.name) {
                errs.push(FieldError::invalid(
                    &p.child("name"),
                    BadValue::str(&e.name),
                    msg,
                ));
            }
        }
        let Some(from) = &e.value_from else {
            continue;
        };
        let vp = p.child("valueFrom");
        let mut sources = 0;
        if let Some(fr) = &from.field_ref {
            sources += 1;
            validate_object_field_selector(
                fr,
                convert_pod_field_label,
                ENV_FIELD_PATHS,
                &vp.child("fieldRef"),
                errs,
            );
        }
        if from.resource_field_ref.is_some() {
            sources += 1;
        }
        if let Some(r) = &from.config_map_key_ref {
            sources += 1;
            validate_key_ref(r, &vp.child("configMapKeyRef"), errs);
        }
        if let Some(r) = &from.secret_key_ref {
            sources += 1;
            validate_key_ref(r, &vp.child("secretKeyRef"), errs);
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                &vp,
                BadValue::str(""),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !e.value.is_empty() {
            errs.push(FieldError::invalid(
                &vp,
                BadValue::str(""),
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                &vp,
                BadValue::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
}

fn validate_env_from(list: &[EnvFrom], path: &FieldPath, errs: &mut Vec<FieldError>) {
    for (i, e) in list.iter().enumerate() {
        let p = path.index(i);
        if !e.prefix.is_empty() {
            for msg in is_env_var_name(&e.prefix) {
                errs.push(FieldError::invalid(
                    &p.child("prefix"),
                    BadValue::str(&e.prefix),
                    msg,
                ));
            }
        }
        let mut sources = 0;
        for (r, field) in [
            (&e.config_map_ref, "configMapRef"),
            (&e.secret_ref, "secretRef"),
        ] {
            let Some(r) = r else { continue };
            sources += 1;
            let np = p.child(field).child("name");
            if r.name.is_empty() {
                errs.push(FieldError::required(&np, ""));
            } else {
                // NameIsDNSSubdomain with prefix = true: a trailing '-' is allowed.
                let masked = match r.name.strip_suffix('-') {
                    Some(rest) => format!("{rest}a"),
                    None => r.name.clone(),
                };
                for msg in is_dns1123_subdomain(&masked) {
                    errs.push(FieldError::invalid(&np, BadValue::str(&r.name), msg));
                }
            }
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(""),
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
}

fn validate_mounts(
    c: &PodContainer,
    volumes: &Volumes,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let devices: BTreeMap<&str, &str> = c
        .volume_devices
        .iter()
        .map(|d| (d.name.as_str(), d.device_path.as_str()))
        .collect();
    let mut mount_points = BTreeSet::new();
    for (i, m) in c.volume_mounts.iter().enumerate() {
        let p = path.index(i);
        if m.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if !volumes.contains_key(&m.name) {
            errs.push(FieldError::not_found(
                &p.child("name"),
                BadValue::str(&m.name),
            ));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                BadValue::str(&m.mount_path),
                "must be unique",
            ));
        }
        if devices.contains_key(m.name.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&m.name),
                "must not already exist in volumeDevices",
            ));
        }
        if devices.values().any(|d| *d == m.mount_path) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                BadValue::str(&m.mount_path),
                "must not already exist as a path in volumeDevices",
            ));
        }
        // Go passes the list path, not the item path, for these two (quirk kept).
        if !m.sub_path.is_empty() {
            validate_local_descending_path(&m.sub_path, &path.child("subPath"), errs);
        }
        if !m.sub_path_expr.is_empty() {
            if !m.sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPathExpr"),
                    BadValue::str(&m.sub_path_expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            validate_local_descending_path(&m.sub_path_expr, &path.child("subPathExpr"), errs);
        }
    }
}

fn validate_devices(
    c: &PodContainer,
    volumes: &Volumes,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let mounts: BTreeMap<&str, &str> = c
        .volume_mounts
        .iter()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    let mut device_paths = BTreeSet::new();
    let mut device_names = BTreeSet::new();
    for (i, d) in c.volume_devices.iter().enumerate() {
        let p = path.index(i);
        let kind = volumes.get(&d.name);
        let is_pvc = matches!(kind, Some(&("persistentVolumeClaim" | "ephemeral")));
        if d.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if device_names.contains(d.name.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&d.name),
                "must be unique",
            ));
        }
        if kind.is_some() && !is_pvc {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&d.name),
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            ));
        }
        if kind.is_none() {
            errs.push(FieldError::not_found(
                &p.child("name"),
                BadValue::str(&d.name),
            ));
        }
        if d.device_path.is_empty() {
            errs.push(FieldError::required(&p.child("devicePath"), ""));
        }
        if device_paths.contains(d.device_path.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                BadValue::str(&d.device_path),
                "must be unique",
            ));
        }
        if !d.device_path.is_empty() && has_backsteps(&d.device_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                BadValue::str(&d.device_path),
                "can not contain backsteps ('..')",
            ));
        } else {
            device_paths.insert(d.device_path.as_str());
        }
        if mounts.contains_key(d.name.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&d.name),
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.values().any(|m| *m == d.device_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                BadValue::str(&d.device_path),
                "must not already exist as a path in volumeMounts",
            ));
        }
        device_names.insert(d.name.as_str());
    }
}

/// A parsed quantity and its text as Go prints it in messages.
#[derive(Debug, Clone)]
struct Qty {
    text: String,
    value: Quantity,
}

impl Qty {
    fn negative(&self) -> bool {
        self.value.sign() < 0
    }

    /// `MilliValue() % 1000 == 0`, Kubernetes' test for whole units of extended resources.
    fn is_integer(&self) -> bool {
        self.value.milli_value() % 1000 == 0
    }

    fn cmp(&self, other: &Self) -> Ordering {
        self.value.cmp(&other.value)
    }
}

/// Parses a quantity as Go's `Quantity.UnmarshalJSON` does (a string or a number; `null` is zero).
fn quantity(value: &Value, path: &FieldPath) -> Result<Qty, WebhookError> {
    let text = match value {
        Value::Null => "0".to_owned(),
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => {
            return Err(WebhookError::Decode(format!(
                "decoding {path}: a quantity must be a string or a number"
            )));
        }
    };
    let q = Quantity::parse(&text)
        .map_err(|e| WebhookError::Decode(format!("decoding {path}: {e}")))?;
    Ok(Qty {
        text: q.to_string(),
        value: q,
    })
}

const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

/// `validateContainerResourceName`.
fn validate_resource_name(name: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(name);
    if !msgs.is_empty() {
        for msg in msgs {
            errs.push(FieldError::invalid(path, BadValue::str(name), msg));
        }
        return;
    }
    if !name.contains('/') {
        if !(STANDARD_RESOURCES.contains(&name) || is_hugepages(name)) {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(name),
                "must be a standard resource type or fully qualified",
            ));
            return;
        }
        if !(STANDARD_CONTAINER_RESOURCES.contains(&name) || is_hugepages(name)) {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(name),
            "doesn't follow extended resource name standard",
        ));
    }
}

fn validate_quantity_value(name: &str, q: &Qty, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if q.negative() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(&q.text),
            "must be greater than or equal to 0",
        ));
    }
    if is_extended(name) && !q.is_integer() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(&q.text),
            "must be an integer",
        ));
    }
}

/// `ValidateContainerResourceRequirements` (resource names in key order).
fn validate_resources(
    r: &Resources,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let mut limits = BTreeMap::new();
    let (mut cpu_or_memory, mut hugepages) = (false, false);
    for (name, value) in &r.limits {
        let p = lim_path.key(name);
        let q = quantity(value, &p)?;
        validate_resource_name(name, &p, errs);
        validate_quantity_value(name, &q, &p, errs);
        hugepages |= is_hugepages(name);
        cpu_or_memory |= name == "cpu" || name == "memory";
        limits.insert(name.as_str(), q);
    }
    for (name, value) in &r.requests {
        let p = req_path.key(name);
        let q = quantity(value, &p)?;
        validate_resource_name(name, &p, errs);
        validate_quantity_value(name, &q, &p, errs);
        match limits.get(name.as_str()) {
            Some(limit) => {
                let order = q.cmp(limit);
                if order != Ordering::Equal && !overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        &req_path,
                        BadValue::str(&q.text),
                        format!("must be equal to {name} limit of {}", limit.text),
                    ));
                } else if order == Ordering::Greater {
                    errs.push(FieldError::invalid(
                        &req_path,
                        BadValue::str(&q.text),
                        format!(
                            "must be less than or equal to {name} limit of {}",
                            limit.text
                        ),
                    ));
                }
            }
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        hugepages |= is_hugepages(name);
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    if hugepages && !cpu_or_memory {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    let claims_path = path.child("claims");
    let mut names = BTreeSet::new();
    for (i, claim) in r.claims.iter().enumerate() {
        let p = claims_path.index(i);
        if claim.name.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if !names.insert(claim.name.as_str()) {
            errs.push(FieldError::duplicate(&p, BadValue::str(&claim.name)));
        }
        let mut e = FieldError::not_found(&p, BadValue::str(&claim.name));
        e.detail = "must be one of the names in pod.spec.resourceClaims which is empty".into();
        errs.push(e);
    }
    Ok(())
}

fn validate_resize_policy(list: &[ResizePolicy], path: &FieldPath, errs: &mut Vec<FieldError>) {
    let mut seen = BTreeSet::new();
    for (i, r) in list.iter().enumerate() {
        if !seen.insert(r.resource_name.as_str()) {
            errs.push(FieldError::duplicate(
                &path.index(i),
                BadValue::str(&r.resource_name),
            ));
        }
        match r.resource_name.as_str() {
            "cpu" | "memory" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(
                path,
                BadValue::str(other),
                &["cpu", "memory"],
            )),
        }
        match r.restart_policy.as_str() {
            "NotRequired" | "RestartContainer" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(
                path,
                BadValue::str(other),
                &["NotRequired", "RestartContainer"],
            )),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

/// `validateHandler`: exactly one handler; an exec handler needs a command.
fn validate_handler(
    handler: &Map<String, Value>,
    kinds: &[&str],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let mut found = false;
    for kind in kinds {
        let Some(h) = handler.get(*kind).filter(|v| !v.is_null()) else {
            continue;
        };
        if found {
            errs.push(FieldError::forbidden(
                &path.child(kind),
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        found = true;
        if *kind == "exec"
            && h.get("command")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
        {
            errs.push(FieldError::required(
                &path.child("exec").child("command"),
                "",
            ));
        }
    }
    if !found {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
}

fn validate_lifecycle(l: &Lifecycle, path: &FieldPath, errs: &mut Vec<FieldError>) {
    for (h, name) in [(&l.post_start, "postStart"), (&l.pre_stop, "preStop")] {
        if let Some(h) = h {
            validate_handler(
                h,
                &["exec", "httpGet", "tcpSocket", "sleep"],
                &path.child(name),
                errs,
            );
        }
    }
}

fn validate_probe(
    probe: Option<&Probe>,
    kind: ProbeKind,
    container: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(probe) = probe else { return };
    let path = container.child(match kind {
        ProbeKind::Liveness => "livenessProbe",
        ProbeKind::Readiness => "readinessProbe",
        ProbeKind::Startup => "startupProbe",
    });
    validate_handler(
        &probe.handler,
        &["exec", "httpGet", "tcpSocket", "grpc"],
        &path,
        errs,
    );
    for (value, field) in [
        (probe.initial_delay_seconds, "initialDelaySeconds"),
        (probe.timeout_seconds, "timeoutSeconds"),
        (probe.period_seconds, "periodSeconds"),
        (probe.success_threshold, "successThreshold"),
        (probe.failure_threshold, "failureThreshold"),
    ] {
        errs.extend(validate_nonnegative(value.into(), &path.child(field)));
    }
    if let Some(grace) = probe.termination_grace_period_seconds
        && grace <= 0
    {
        errs.push(FieldError::invalid(
            &path.child("terminationGracePeriodSeconds"),
            BadValue::Int(grace),
            "must be greater than 0",
        ));
    }
    match kind {
        ProbeKind::Liveness | ProbeKind::Startup if probe.success_threshold != 1 => {
            errs.push(FieldError::invalid(
                &path.child("successThreshold"),
                BadValue::Int(probe.success_threshold.into()),
                "must be 1",
            ));
        }
        ProbeKind::Readiness if probe.termination_grace_period_seconds.is_some() => {
            errs.push(FieldError::invalid(
                &path.child("terminationGracePeriodSeconds"),
                BadValue::Int(probe.termination_grace_period_seconds.unwrap_or_default()),
                "must not be set for readinessProbes",
            ));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn containers(v: Value) -> Vec<Map<String, Value>> {
        serde_json::from_value(v).unwrap()
    }

    fn check(init: Value, main: Value, volumes: Value) -> Vec<String> {
        let init = containers(init);
        let main = containers(main);
        let volumes: Vec<Value> = serde_json::from_value(volumes).unwrap();
        validate_fake_pod(&FakePod {
            init_containers: &init,
            containers: &main,
            volumes: &volumes,
        })
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    fn c(name: &str) -> Value {
        json!({"name": name, "image": "img", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"})
    }

    fn with(mut base: Value, extra: Value) -> Value {
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        base
    }

    #[test]
    fn a_valid_pod_and_the_placeholder_container_give_no_errors() {
        assert!(check(json!([]), json!([]), json!([])).is_empty());
        assert!(
            check(
                json!([with(c("init"), json!({"restartPolicy": "Always", "livenessProbe": {"exec": {"command": ["x"]}, "successThreshold": 1}}))]),
                json!([with(c("main"), json!({"volumeMounts": [{"name": "v", "mountPath": "/v"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}}}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1024Mi"}}}))]),
                json!([{"name": "v", "emptyDir": {}}])
            )
            .is_empty()
        );
    }

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
        let e = validate_fake_pod(&FakePod {
            init_containers: &[],
            containers: &containers(json!([with(
                c("a"),
                json!({"resources": {"limits": {"cpu": "lots"}}})
            )])),
            volumes: &[],
        })
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
    fn quantities_compare_exactly_across_suffixes() {
        let q = |s: &str| quantity(&json!(s), &FieldPath::new("q")).unwrap();
        assert_eq!(q("1Gi").cmp(&q("1024Mi")), Ordering::Equal);
        assert_eq!(q("1G").cmp(&q("1Gi")), Ordering::Less);
        assert_eq!(q("0.5").cmp(&q("500m")), Ordering::Equal);
        assert_eq!(q("1e3").cmp(&q("1k")), Ordering::Equal);
        assert_eq!(q("2E").cmp(&q("1n")), Ordering::Greater);
        assert!(q("-1").negative());
        assert!(q("2").is_integer() && !q("1500m").is_integer() && q("2000m").is_integer());
    }
}
