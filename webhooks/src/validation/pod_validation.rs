//! The "fake pod" check of spec/sidecarset.md §8 rule 3.6: the SidecarSet's init containers, containers (or a
//! placeholder `test`/`busybox`) and volumes are put in a pod (`default/test`, restartPolicy Always, terminationGracePeriodSeconds 30) and go
//! through a subset of Kubernetes v1.32 `ValidatePodCreate`, with its paths and texts, in its order
//! (volumes, then containers, then init containers, then the image-whitespace check).
//!
//! Implemented:
//! - volumes: name required / DNS-1123 label / unique; exactly one volume source, checked in Go's order
//!   (`must specify a volume type`, `may not specify more than 1 volume type`, with Go's `cephFS` and
//!   `downwarAPI` spellings); required fields of hostPath (`path`, no `..`, `type` among the HostPathType
//!   values), secret (`secretName`), configMap (`name`), persistentVolumeClaim (`claimName`), nfs (`server`,
//!   absolute `path`), csi (`driver` required, at most 63 bytes, a DNS-1123 subdomain once lower-cased;
//!   `nodePublishSecretRef.name`); `defaultMode` of secret, configMap, downwardAPI and projected in 0..=0777;
//!   secret and configMap `items` (`validateKeyToPath`: key and path required, path relative, without `..`
//!   elements and not starting with `..`, `mode` in 0..=0777); downwardAPI items (path rules, exactly one of
//!   fieldRef (volume field paths) and resourceFieldRef (containerName required), `mode`; reported at the
//!   source's path without the item index, as Go does); projected sources (at most one source per entry,
//!   secret/configMap names and items, downwardAPI items, serviceAccountToken `expirationSeconds` in
//!   600..=2^32 and its `path` (reported at `projected.path`), duplicate paths); a negative emptyDir
//!   `sizeLimit`. A volume with errors is not available to mounts (as in Go);
//! - every container: name required / DNS-1123 label, image required, terminationMessagePolicy and
//!   imagePullPolicy required and supported, ports (name syntax and uniqueness, containerPort and hostPort
//!   1-65535, protocol TCP/UDP/SCTP, host port conflicts), env (names as C-identifier-like env names, the
//!   `valueFrom` source rules, fieldRef paths, `resourceFieldRef` resources (limits/requests of cpu, memory,
//!   ephemeral-storage, and `limits.hugepages-` / `requests.hugepages-` prefixes) and divisors,
//!   configMap/secret key refs), envFrom (prefix, exactly one source, names), volumeMounts (name required and
//!   `Not found`, mountPath required and unique, clashes with volumeDevices, relative subPath/subPathExpr
//!   without `..`, subPath and subPathExpr exclusive, `mountPropagation` values and Bidirectional only for
//!   privileged containers, `recursiveReadOnly` values, only with `readOnly` and without propagation),
//!   volumeDevices (`Not found`, PVC or ephemeral only, devicePath required / unique / no `..`, clashes with
//!   volumeMounts), resources (resource names, quantities non-negative, integer extended resources, requests
//!   not above limits, requests equal limits for hugepages and extended resources, hugepages need cpu or
//!   memory, claims must name pod resource claims, of which the fake pod has none), resizePolicy,
//!   securityContext (runAsUser and runAsGroup in 0..=2147483647, procMount `Default`/`Unmasked` and
//!   `Unmasked` refused since the fake pod uses host users, seccompProfile and appArmorProfile type and
//!   localhostProfile rules, `allowPrivilegeEscalation: false` with `privileged: true` or with
//!   `capabilities.add` CAP_SYS_ADMIN; privileged containers are allowed, as kruise-manager's
//!   `--allow-privileged` defaults to true), probes (exactly one handler, exec command, httpGet path, port
//!   (1-65535 or an IANA service name), scheme and header names, tcpSocket port, grpc port, non-negative
//!   numbers, successThreshold 1 for liveness and startup, terminationGracePeriodSeconds), lifecycle handlers
//!   (the same handler checks, and `sleep` seconds in 1..=30, the fake pod's grace period);
//! - containers: unique names, `restartPolicy` forbidden; init containers: names unique across both lists,
//!   `restartPolicy` only `Always`, probes and lifecycle only with `restartPolicy: Always`, no resizePolicy;
//! - images without leading or trailing whitespace.
//!
//! Not implemented: securityContext `windowsOptions` (and the Windows hostProcess pod rules), projected
//! `clusterTrustBundle` contents (it only counts as a source), image volumes' subPath rule, and the contents
//! of volume sources other than those listed above beyond the one-source rule. Their errors are therefore
//! not reported here. A value Go prints with `%#v` holding pointers (the whole securityContext, a seccomp
//! profile) is rendered with a placeholder address.
//!
//! Go's decoder refuses an unparsable quantity before validation; here it is a [`WebhookError::Decode`]
//! (answered 400) naming the field.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;

use crate::de::nullable;
use serde_json::{Map, Value};

use super::field_error::{BadValue, FieldError, FieldPath, go_quote};
use super::meta::validate_nonnegative;
use super::syntax::{
    is_dns1123_label, is_dns1123_subdomain, is_env_var_name, is_qualified_name, max_len_error,
    regex_error,
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
    #[serde(default)]
    security_context: Option<SecurityContext>,
}

/// `SecurityContext` (container level); `seLinuxOptions` and `windowsOptions` are only kept for rendering.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SecurityContext {
    #[serde(default)]
    capabilities: Option<Capabilities>,
    #[serde(default)]
    privileged: Option<bool>,
    #[serde(default)]
    se_linux_options: Option<Value>,
    #[serde(default)]
    windows_options: Option<Value>,
    #[serde(default)]
    run_as_user: Option<i64>,
    #[serde(default)]
    run_as_group: Option<i64>,
    #[serde(default)]
    run_as_non_root: Option<bool>,
    #[serde(default)]
    read_only_root_filesystem: Option<bool>,
    #[serde(default)]
    allow_privilege_escalation: Option<bool>,
    #[serde(default)]
    proc_mount: Option<String>,
    #[serde(default)]
    seccomp_profile: Option<Profile>,
    #[serde(default)]
    app_armor_profile: Option<Profile>,
}

#[derive(Debug, Default, Deserialize)]
struct Capabilities {
    #[serde(default, deserialize_with = "nullable")]
    add: Vec<String>,
}

/// `SeccompProfile` and `AppArmorProfile` have the same shape.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Profile {
    #[serde(default, rename = "type", deserialize_with = "nullable")]
    kind: String,
    #[serde(default)]
    localhost_profile: Option<String>,
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
    resource_field_ref: Option<ResourceFieldRef>,
    #[serde(default)]
    config_map_key_ref: Option<KeyRef>,
    #[serde(default)]
    secret_key_ref: Option<KeyRef>,
}

/// `ObjectFieldSelector`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldRef {
    /// `apiVersion` (the fieldPath's schema version).
    #[serde(default, deserialize_with = "nullable")]
    pub api_version: String,
    /// `fieldPath`.
    #[serde(default, deserialize_with = "nullable")]
    pub field_path: String,
}

/// `ResourceFieldSelector`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceFieldRef {
    #[serde(default, deserialize_with = "nullable")]
    container_name: String,
    #[serde(default, deserialize_with = "nullable")]
    resource: String,
    #[serde(default)]
    divisor: Option<Value>,
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
    #[serde(default, deserialize_with = "nullable")]
    read_only: bool,
    #[serde(default)]
    mount_propagation: Option<String>,
    #[serde(default)]
    recursive_read_only: Option<String>,
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

/// Volume sources in the order Go's `validateVolumeSource` checks them (the second one found is reported),
/// with the child name Go's `may not specify more than 1 volume type` error uses (two of them misspelled).
const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// `supportedHostPathTypes`, sorted as `sets.List` prints them.
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// `validVolumeDownwardAPIFieldPathExpressions`, sorted.
const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// `validContainerResourceFieldPathExpressions`, sorted.
const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `validContainerResourceFieldPathPrefixesWithDownwardAPIHugePages`.
const HUGEPAGES_FIELD_PREFIXES: &[&str] = &["limits.hugepages-", "requests.hugepages-"];

/// The divisors Go accepts for memory, ephemeral storage and hugepages.
const BYTE_DIVISORS: &[&str] = &[
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];

/// The fake pod's `terminationGracePeriodSeconds` (`v1.DefaultTerminationGracePeriodSeconds`), which bounds
/// lifecycle `sleep` handlers.
const FAKE_POD_GRACE_PERIOD: i64 = 30;

/// `validation.InclusiveRangeError(0, math.MaxInt32)` of `IsValidUserID` / `IsValidGroupID`.
const ID_RANGE_ERROR: &str = "must be between 0 and 2147483647, inclusive";

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
    for (source, forbidden_name) in VOLUME_SOURCES {
        let Some(value) = obj.get(*source).filter(|v| !v.is_null()) else {
            continue;
        };
        if kind.is_some() {
            errs.push(FieldError::forbidden(
                &path.child(forbidden_name),
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
                } else {
                    if has_backsteps(p) {
                        errs.push(FieldError::invalid(
                            &sp.child("path"),
                            BadValue::str(p),
                            "must not contain '..'",
                        ));
                    }
                    if let Some(t) = opt_str(src, "type", &sp)?
                        && !HOST_PATH_TYPES.contains(&t)
                    {
                        errs.push(FieldError::not_supported(
                            &sp.child("type"),
                            BadValue::str(t),
                            HOST_PATH_TYPES,
                        ));
                    }
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
                validate_file_mode(src, "defaultMode", &sp, &mut errs)?;
                let items = sp.child("items");
                for (i, item) in list(src, "items", &sp)?.iter().enumerate() {
                    validate_key_to_path(item, &items.index(i), &mut errs)?;
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
            "downwardAPI" => {
                validate_file_mode(src, "defaultMode", &sp, &mut errs)?;
                // Go validates every item against the source's path, without the index (quirk kept).
                for item in list(src, "items", &sp)? {
                    validate_downward_api_file(item, &sp, &mut errs)?;
                }
            }
            "projected" => validate_projected(src, &sp, &mut errs)?,
            "csi" => validate_csi(src, &sp, &mut errs)?,
            _ => {}
        }
    }
    if kind.is_none() {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    Ok((kind, errs))
}

/// An empty object for JSON `null` (Go's zero value).
static EMPTY_OBJECT: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

fn decode_error(path: &FieldPath, what: &str) -> WebhookError {
    WebhookError::Decode(format!("decoding {path}: {what}"))
}

/// A JSON object as Go decodes it into a struct: `null` is the zero value, anything else but an object fails.
fn as_object<'a>(
    value: &'a Value,
    path: &FieldPath,
) -> Result<&'a Map<String, Value>, WebhookError> {
    match value {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(&*EMPTY_OBJECT),
        _ => Err(decode_error(path, "expected an object")),
    }
}

/// An optional string field of `obj` (at `path`).
fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &FieldPath,
) -> Result<Option<&'a str>, WebhookError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(decode_error(&path.child(key), "expected a string")),
    }
}

/// An optional integer field of `obj` (at `path`).
fn opt_int(
    obj: &Map<String, Value>,
    key: &str,
    path: &FieldPath,
) -> Result<Option<i64>, WebhookError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| decode_error(&path.child(key), "expected an integer")),
        Some(_) => Err(decode_error(&path.child(key), "expected an integer")),
    }
}

/// An optional list field of `obj` (at `path`); absent and `null` are empty.
fn list<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &FieldPath,
) -> Result<&'a [Value], WebhookError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(decode_error(&path.child(key), "expected a list")),
    }
}

/// A file mode (`defaultMode`, `mode`) in 0..=0777.
fn validate_file_mode(
    obj: &Map<String, Value>,
    key: &str,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    if let Some(mode) = opt_int(obj, key, path)?
        && !(0..=0o777).contains(&mode)
    {
        errs.push(FieldError::invalid(
            &path.child(key),
            BadValue::Int(mode),
            FILE_MODE_ERROR,
        ));
    }
    Ok(())
}

/// `validateKeyToPath` (secret, configMap and projected items); returns the item's `path`.
fn validate_key_to_path<'a>(
    item: &'a Value,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<&'a str, WebhookError> {
    let kp = as_object(item, path)?;
    if opt_str(kp, "key", path)?.unwrap_or("").is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    }
    let file = opt_str(kp, "path", path)?.unwrap_or("");
    if file.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    validate_local_non_reserved_path(file, &path.child("path"), errs);
    validate_file_mode(kp, "mode", path, errs)?;
    Ok(file)
}

/// `validateDownwardAPIVolumeFile`; returns the item's `path`.
fn validate_downward_api_file<'a>(
    item: &'a Value,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<&'a str, WebhookError> {
    let file = as_object(item, path)?;
    let p = opt_str(file, "path", path)?.unwrap_or("");
    if p.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    validate_local_non_reserved_path(p, &path.child("path"), errs);
    let field_ref = file.get("fieldRef").filter(|v| !v.is_null());
    let resource_ref = file.get("resourceFieldRef").filter(|v| !v.is_null());
    if let Some(fr) = field_ref {
        let fp = path.child("fieldRef");
        let fr = FieldRef::deserialize(fr).map_err(|e| decode_error(&fp, &e.to_string()))?;
        validate_object_field_selector(&fr, convert_pod_field_label, VOLUME_FIELD_PATHS, &fp, errs);
        if resource_ref.is_some() {
            errs.push(FieldError::invalid(
                path,
                BadValue::str("resource"),
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(rr) = resource_ref {
        let rp = path.child("resourceFieldRef");
        let rr =
            ResourceFieldRef::deserialize(rr).map_err(|e| decode_error(&rp, &e.to_string()))?;
        validate_resource_field_selector(&rr, true, &rp, errs)?;
    } else {
        errs.push(FieldError::required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    validate_file_mode(file, "mode", path, errs)?;
    Ok(p)
}

/// `validateProjectedVolumeSource` and `validateProjectionSources` (clusterTrustBundle only counts as a
/// source: its own rules are not implemented).
fn validate_projected(
    src: &Map<String, Value>,
    sp: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    validate_file_mode(src, "defaultMode", sp, errs)?;
    let mut all_paths = BTreeSet::new();
    for (i, source) in list(src, "sources", sp)?.iter().enumerate() {
        let src_path = sp.child("sources").index(i);
        let source = as_object(source, &src_path)?;
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let Some(v) = source.get(kind).filter(|v| !v.is_null()) else {
                continue;
            };
            count += 1;
            let pp = src_path.child(kind);
            let proj = as_object(v, &pp)?;
            let name = opt_str(proj, "name", &pp)?.unwrap_or("");
            if name.is_empty() {
                errs.push(FieldError::required(&pp.child("name"), ""));
            }
            let items = pp.child("items");
            for (j, item) in list(proj, "items", &pp)?.iter().enumerate() {
                let file = validate_key_to_path(item, &items.index(j), errs)?;
                if !file.is_empty() && !all_paths.insert(file) {
                    errs.push(FieldError::invalid(
                        sp,
                        BadValue::str(name),
                        "conflicting duplicate paths",
                    ));
                }
            }
        }
        if let Some(v) = source.get("downwardAPI").filter(|v| !v.is_null()) {
            count += 1;
            let pp = src_path.child("downwardAPI");
            let proj = as_object(v, &pp)?;
            for item in list(proj, "items", &pp)? {
                let file = validate_downward_api_file(item, &pp, errs)?;
                if !file.is_empty() && !all_paths.insert(file) {
                    errs.push(FieldError::invalid(
                        sp,
                        BadValue::str(file),
                        "conflicting duplicate paths",
                    ));
                }
            }
        }
        if let Some(v) = source.get("serviceAccountToken").filter(|v| !v.is_null()) {
            count += 1;
            let pp = src_path.child("serviceAccountToken");
            let token = as_object(v, &pp)?;
            let expiration = opt_int(token, "expirationSeconds", &pp)?.unwrap_or(0);
            if expiration < 10 * 60 {
                errs.push(FieldError::invalid(
                    &pp.child("expirationSeconds"),
                    BadValue::Int(expiration),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if expiration > 1 << 32 {
                errs.push(FieldError::invalid(
                    &pp.child("expirationSeconds"),
                    BadValue::Int(expiration),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            // Go reports the token path against the projected source itself (quirk kept).
            let p = opt_str(token, "path", &pp)?.unwrap_or("");
            if p.is_empty() {
                errs.push(FieldError::required(&sp.child("path"), ""));
            } else {
                validate_local_non_reserved_path(p, &sp.child("path"), errs);
            }
        }
        if source
            .get("clusterTrustBundle")
            .is_some_and(|v| !v.is_null())
        {
            count += 1;
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                &src_path,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    Ok(())
}

/// `validateCSIVolumeSource`.
fn validate_csi(
    src: &Map<String, Value>,
    sp: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let driver = opt_str(src, "driver", sp)?.unwrap_or("");
    let dp = sp.child("driver");
    if driver.is_empty() {
        errs.push(FieldError::required(&dp, ""));
    }
    if driver.len() > 63 {
        errs.push(FieldError::too_long(&dp, 63));
    }
    for msg in is_dns1123_subdomain(&driver.to_lowercase()) {
        errs.push(FieldError::invalid(&dp, BadValue::str(driver), msg));
    }
    if let Some(r) = src.get("nodePublishSecretRef").filter(|v| !v.is_null()) {
        let rp = sp.child("nodePublishSecretRef");
        let name = opt_str(as_object(r, &rp)?, "name", &rp)?.unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(&rp.child("name"), ""));
        } else {
            // Go reports a bad secret name at `csi.name` (quirk kept).
            for msg in is_dns1123_subdomain(name) {
                errs.push(FieldError::invalid(
                    &sp.child("name"),
                    BadValue::str(name),
                    msg,
                ));
            }
        }
    }
    Ok(())
}

/// `validatePathNoBacksteps`: Go splits on `/` only (`filepath.ToSlash` is a no-op on Linux).
fn has_backsteps(p: &str) -> bool {
    p.split('/').any(|part| part == "..")
}

/// `ValidateLocalNonReservedPath`.
fn validate_local_non_reserved_path(p: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    validate_local_descending_path(p, path, errs);
    if p.starts_with("..") && !p.starts_with("../") {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(p),
            "must not start with '..'",
        ));
    }
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
            validate_lifecycle(lifecycle, &p.child("lifecycle"), errs)?;
        }
        validate_probe(c.liveness_probe.as_ref(), ProbeKind::Liveness, &p, errs)?;
        validate_probe(c.readiness_probe.as_ref(), ProbeKind::Readiness, &p, errs)?;
        validate_probe(c.startup_probe.as_ref(), ProbeKind::Startup, &p, errs)?;
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
                validate_lifecycle(lifecycle, &p.child("lifecycle"), errs)?;
            }
            validate_probe(c.liveness_probe.as_ref(), ProbeKind::Liveness, &p, errs)?;
            validate_probe(c.readiness_probe.as_ref(), ProbeKind::Readiness, &p, errs)?;
            validate_probe(c.startup_probe.as_ref(), ProbeKind::Startup, &p, errs)?;
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
    validate_env(&c.env, &p.child("env"), errs)?;
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
    if let Some(sc) = &c.security_context {
        validate_security_context(sc, &p.child("securityContext"), errs);
    }
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
        errs.push(max_len_error(15));
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
pub fn split_subscripted_path(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, subscript) = s.split_once("['")?;
    (!path.is_empty()).then_some((path, subscript))
}

/// `validateObjectFieldSelector`, with the label converter and the accepted unsubscripted paths of the caller.
pub fn validate_object_field_selector(
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
        errs.push(max_len_error(253));
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

fn validate_env(
    env: &[Env],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
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
        if let Some(r) = &from.resource_field_ref {
            sources += 1;
            validate_resource_field_selector(r, false, &vp.child("resourceFieldRef"), errs)?;
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
    Ok(())
}

/// `validateContainerResourceFieldSelector` with the downward API hugepages prefixes, then
/// `validateContainerResourceDivisor`.
fn validate_resource_field_selector(
    fs: &ResourceFieldRef,
    volume: bool,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let resource = fs.resource.as_str();
    if volume && fs.container_name.is_empty() {
        errs.push(FieldError::required(&path.child("containerName"), ""));
    } else if resource.is_empty() {
        errs.push(FieldError::required(&path.child("resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !HUGEPAGES_FIELD_PREFIXES
            .iter()
            .any(|prefix| resource.starts_with(prefix))
    {
        errs.push(FieldError::not_supported(
            &path.child("resource"),
            BadValue::str(resource),
            RESOURCE_FIELD_PATHS,
        ));
    }
    let Some(divisor) = fs.divisor.as_ref().filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let divisor = quantity(divisor, &path.child("divisor"))?;
    if divisor.value.is_zero() {
        return Ok(());
    }
    let bytes = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the";
    let mut bad = |detail: String| {
        errs.push(FieldError::invalid(
            &path.child("divisor"),
            BadValue::str(resource),
            detail,
        ));
    };
    let text = divisor.text.as_str();
    match resource {
        "limits.cpu" | "requests.cpu" if !["1m", "1"].contains(&text) => {
            bad("only divisor's values 1m and 1 are supported with the cpu resource".into());
        }
        "limits.memory" | "requests.memory" if !BYTE_DIVISORS.contains(&text) => {
            bad(format!("{bytes} memory resource"));
        }
        "limits.ephemeral-storage" | "requests.ephemeral-storage"
            if !BYTE_DIVISORS.contains(&text) =>
        {
            bad(format!("{bytes} local ephemeral storage resource"));
        }
        _ => {}
    }
    if HUGEPAGES_FIELD_PREFIXES
        .iter()
        .any(|prefix| resource.starts_with(prefix))
        && !BYTE_DIVISORS.contains(&text)
    {
        bad(format!("{bytes} hugepages resource"));
    }
    Ok(())
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
        // Go passes the list path for these two as well (quirk kept).
        if let Some(propagation) = &m.mount_propagation {
            validate_mount_propagation(propagation, c, &path.child("mountPropagation"), errs);
        }
        validate_recursive_read_only(m, &path.child("recursiveReadOnly"), errs);
    }
}

/// `validateMountPropagation`.
fn validate_mount_propagation(
    propagation: &str,
    c: &PodContainer,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    const SUPPORTED: &[&str] = &["Bidirectional", "HostToContainer", "None"];
    if !SUPPORTED.contains(&propagation) {
        errs.push(FieldError::not_supported(
            path,
            BadValue::str(propagation),
            SUPPORTED,
        ));
    }
    let privileged = c
        .security_context
        .as_ref()
        .and_then(|sc| sc.privileged)
        .unwrap_or(false);
    if propagation == "Bidirectional" && !privileged {
        errs.push(FieldError::forbidden(
            path,
            "Bidirectional mount propagation is available only to privileged containers",
        ));
    }
}

/// `validateMountRecursiveReadOnly`.
fn validate_recursive_read_only(m: &Mount, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let Some(rro) = &m.recursive_read_only else {
        return;
    };
    match rro.as_str() {
        "Disabled" => {}
        "Enabled" | "IfPossible" => {
            if !m.read_only {
                errs.push(FieldError::forbidden(
                    path,
                    "may only be specified when readOnly is true",
                ));
            }
            if m.mount_propagation.as_deref().is_some_and(|p| p != "None") {
                errs.push(FieldError::forbidden(
                    path,
                    "may only be specified when mountPropagation is None or not specified",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            path,
            BadValue::str(other),
            &["Disabled", "Enabled", "IfPossible"],
        )),
    }
}

/// `ValidateSecurityContext` for the fake pod: `hostUsers` is true (no pod security context) and privileged
/// containers are allowed (kruise-manager's `--allow-privileged` defaults to true). `windowsOptions` is not
/// checked.
fn validate_security_context(sc: &SecurityContext, path: &FieldPath, errs: &mut Vec<FieldError>) {
    for (id, field) in [
        (sc.run_as_user, "runAsUser"),
        (sc.run_as_group, "runAsGroup"),
    ] {
        if let Some(id) = id
            && !(0..=i64::from(i32::MAX)).contains(&id)
        {
            errs.push(FieldError::invalid(
                &path.child(field),
                BadValue::Int(id),
                ID_RANGE_ERROR,
            ));
        }
    }
    if let Some(proc_mount) = &sc.proc_mount {
        let pp = path.child("procMount");
        if proc_mount != "Default" && proc_mount != "Unmasked" {
            errs.push(FieldError::not_supported(
                &pp,
                BadValue::str(proc_mount),
                &["Default", "Unmasked"],
            ));
        }
        if proc_mount == "Unmasked" {
            errs.push(FieldError::invalid(
                &pp,
                BadValue::str(proc_mount),
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    if let Some(profile) = &sc.seccomp_profile {
        validate_seccomp_profile(profile, &path.child("seccompProfile"), errs);
    }
    if sc.allow_privilege_escalation == Some(false) {
        if sc.privileged == Some(true) {
            errs.push(FieldError::invalid(
                path,
                BadValue::Raw(render_security_context(sc)),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        if let Some(caps) = &sc.capabilities {
            for cap in &caps.add {
                if cap == "CAP_SYS_ADMIN" {
                    errs.push(FieldError::invalid(
                        path,
                        BadValue::Raw(render_security_context(sc)),
                        "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                    ));
                }
            }
        }
    }
    if let Some(profile) = &sc.app_armor_profile {
        validate_app_armor_profile(profile, &path.child("appArmorProfile"), errs);
    }
}

const PROFILE_TYPES: &[&str] = &["Localhost", "RuntimeDefault", "Unconfined"];

/// `validateSeccompProfileField`.
fn validate_seccomp_profile(sp: &Profile, path: &FieldPath, errs: &mut Vec<FieldError>) {
    match sp.kind.as_str() {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            BadValue::str(other),
            PROFILE_TYPES,
        )),
    }
    let lp = path.child("localhostProfile");
    if sp.kind == "Localhost" {
        match &sp.localhost_profile {
            None => errs.push(FieldError::required(
                &lp,
                "must be set when seccomp type is Localhost",
            )),
            Some(profile) => validate_local_descending_path(profile, &lp, errs),
        }
    } else if sp.localhost_profile.is_some() {
        let rendered = format!(
            "core.SeccompProfile{{Type:{}, LocalhostProfile:{}}}",
            go_quote(&sp.kind),
            go_pointer("string", true)
        );
        errs.push(FieldError::invalid(
            &lp,
            BadValue::Raw(rendered),
            "can only be set when seccomp type is Localhost",
        ));
    }
}

/// `ValidateAppArmorProfileField`.
fn validate_app_armor_profile(profile: &Profile, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let lp = path.child("localhostProfile");
    match profile.kind.as_str() {
        "Localhost" => match &profile.localhost_profile {
            None => errs.push(FieldError::required(
                &lp,
                "must be set when AppArmor type is Localhost",
            )),
            Some(local) => {
                let trimmed = local.trim();
                if trimmed != local {
                    errs.push(FieldError::invalid(
                        &lp,
                        BadValue::str(local),
                        "must not be padded with whitespace",
                    ));
                } else if trimmed.is_empty() {
                    errs.push(FieldError::required(
                        &lp,
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if local.len() > 4095 {
                    errs.push(FieldError::too_long(&lp, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(local) = &profile.localhost_profile {
                errs.push(FieldError::invalid(
                    &lp,
                    BadValue::str(local),
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            BadValue::str(other),
            PROFILE_TYPES,
        )),
    }
}

/// A Go pointer as `%#v` prints it. A set pointer prints its address, which cannot be reproduced; a fixed
/// placeholder stands for it.
fn go_pointer(ty: &str, set: bool) -> String {
    if set {
        format!("(*{ty})(0xc000000000)")
    } else {
        format!("(*{ty})(nil)")
    }
}

/// `%#v` of a `core.SecurityContext` (best effort: pointers cannot be printed as Go does).
fn render_security_context(sc: &SecurityContext) -> String {
    let fields = [
        (
            "Capabilities",
            "core.Capabilities",
            sc.capabilities.is_some(),
        ),
        ("Privileged", "bool", sc.privileged.is_some()),
        (
            "SELinuxOptions",
            "core.SELinuxOptions",
            sc.se_linux_options.is_some(),
        ),
        (
            "WindowsOptions",
            "core.WindowsSecurityContextOptions",
            sc.windows_options.is_some(),
        ),
        ("RunAsUser", "int64", sc.run_as_user.is_some()),
        ("RunAsGroup", "int64", sc.run_as_group.is_some()),
        ("RunAsNonRoot", "bool", sc.run_as_non_root.is_some()),
        (
            "ReadOnlyRootFilesystem",
            "bool",
            sc.read_only_root_filesystem.is_some(),
        ),
        (
            "AllowPrivilegeEscalation",
            "bool",
            sc.allow_privilege_escalation.is_some(),
        ),
        ("ProcMount", "core.ProcMountType", sc.proc_mount.is_some()),
        (
            "SeccompProfile",
            "core.SeccompProfile",
            sc.seccomp_profile.is_some(),
        ),
        (
            "AppArmorProfile",
            "core.AppArmorProfile",
            sc.app_armor_profile.is_some(),
        ),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(name, ty, set)| format!("{name}:{}", go_pointer(ty, *set)))
        .collect();
    format!("core.SecurityContext{{{}}}", body.join(", "))
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

/// `validateHandler`: exactly one handler, each checked as Go's `validate<Kind>Action` does.
fn validate_handler(
    handler: &Map<String, Value>,
    kinds: &[&str],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let mut found = false;
    for kind in kinds {
        let Some(h) = handler.get(*kind).filter(|v| !v.is_null()) else {
            continue;
        };
        let hp = path.child(kind);
        if found {
            errs.push(FieldError::forbidden(
                &hp,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        found = true;
        let h = as_object(h, &hp)?;
        match *kind {
            "exec"
                if h.get("command")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty) =>
            {
                errs.push(FieldError::required(&hp.child("command"), ""));
            }
            "httpGet" => {
                if opt_str(h, "path", &hp)?.unwrap_or("").is_empty() {
                    errs.push(FieldError::required(&hp.child("path"), ""));
                }
                validate_port_num_or_name(h.get("port"), &hp.child("port"), errs)?;
                let scheme = opt_str(h, "scheme", &hp)?.unwrap_or("");
                if scheme != "HTTP" && scheme != "HTTPS" {
                    errs.push(FieldError::not_supported(
                        &hp.child("scheme"),
                        BadValue::str(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
                let headers = hp.child("httpHeaders");
                for header in list(h, "httpHeaders", &hp)? {
                    let name =
                        opt_str(as_object(header, &headers)?, "name", &headers)?.unwrap_or("");
                    if name.is_empty()
                        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    {
                        errs.push(FieldError::invalid(
                            &headers,
                            BadValue::str(name),
                            regex_error(
                                "a valid HTTP header must consist of alphanumeric characters or '-'",
                                "[-A-Za-z0-9]+",
                                &["X-Header-Name"],
                            ),
                        ));
                    }
                }
            }
            "tcpSocket" => validate_port_num_or_name(h.get("port"), &hp.child("port"), errs)?,
            "grpc" => {
                // An int32 field: Go's decoder refuses a string here.
                let port = opt_int(h, "port", &hp)?.unwrap_or(0);
                let port = i32::try_from(port)
                    .map_err(|_| decode_error(&hp.child("port"), "expected an int32"))?;
                if !is_valid_port_num(port) {
                    errs.push(FieldError::invalid(
                        &hp.child("port"),
                        BadValue::Int(port.into()),
                        PORT_NUM_ERROR,
                    ));
                }
            }
            "sleep" => {
                let seconds = opt_int(h, "seconds", &hp)?.unwrap_or(0);
                if seconds <= 0 || seconds > FAKE_POD_GRACE_PERIOD {
                    errs.push(FieldError::invalid(
                        &hp,
                        BadValue::Int(seconds),
                        format!(
                            "must be greater than 0 and less than terminationGracePeriodSeconds ({FAKE_POD_GRACE_PERIOD}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if !found {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    Ok(())
}

/// `ValidatePortNumOrName` of an `IntOrString` port: a JSON number is an int (absent and `null` are 0), a
/// JSON string a port name.
fn validate_port_num_or_name(
    port: Option<&Value>,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    match port {
        None | Some(Value::Null) => {
            errs.push(FieldError::invalid(path, BadValue::Int(0), PORT_NUM_ERROR))
        }
        Some(Value::Number(n)) => {
            let n = n
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| decode_error(path, "expected an int32 or a string"))?;
            if !is_valid_port_num(n) {
                errs.push(FieldError::invalid(
                    path,
                    BadValue::Int(n.into()),
                    PORT_NUM_ERROR,
                ));
            }
        }
        Some(Value::String(name)) => {
            for msg in port_name_errors(name) {
                errs.push(FieldError::invalid(path, BadValue::str(name), msg));
            }
        }
        Some(_) => return Err(decode_error(path, "expected an int32 or a string")),
    }
    Ok(())
}

fn validate_lifecycle(
    l: &Lifecycle,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    for (h, name) in [(&l.post_start, "postStart"), (&l.pre_stop, "preStop")] {
        if let Some(h) = h {
            validate_handler(
                h,
                &["exec", "httpGet", "tcpSocket", "sleep"],
                &path.child(name),
                errs,
            )?;
        }
    }
    Ok(())
}

fn validate_probe(
    probe: Option<&Probe>,
    kind: ProbeKind,
    container: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let Some(probe) = probe else { return Ok(()) };
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
    )?;
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
    Ok(())
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

    /// `field: detail` of each error, for values Go prints with `%#v` (not reproducible byte for byte).
    fn details(init: Value, main: Value, volumes: Value) -> Vec<String> {
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
        .map(|e| format!("{}: {}", e.field, e.detail))
        .collect()
    }

    fn decode_fails(main: Value, volumes: Value) -> bool {
        let main = containers(main);
        let volumes: Vec<Value> = serde_json::from_value(volumes).unwrap();
        validate_fake_pod(&FakePod {
            init_containers: &[],
            containers: &main,
            volumes: &volumes,
        })
        .is_err_and(|e| e.http_code() == 400)
    }

    /// A sidecar as the defaulting webhook leaves it, using every rule added for probes, security
    /// contexts, the downward API, mounts and volume items.
    #[test]
    fn a_realistic_sidecar_with_named_probe_ports_and_downward_api_passes() {
        let sidecar = with(
            c("sidecar"),
            json!({
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
                    {"name": "MEM", "valueFrom": {"resourceFieldRef": {"containerName": "sidecar", "resource": "requests.memory", "divisor": "1Mi"}}},
                    {"name": "HUGE", "valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages-2Mi"}}}
                ],
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "volumeMounts": [
                    {"name": "podinfo", "mountPath": "/etc/podinfo", "readOnly": true, "recursiveReadOnly": "IfPossible"},
                    {"name": "token", "mountPath": "/var/run/token", "mountPropagation": "None"},
                    {"name": "conf", "mountPath": "/etc/conf", "subPath": "app.conf"},
                    {"name": "host", "mountPath": "/host", "mountPropagation": "HostToContainer"}
                ],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP",
                    "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
                    "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"tcpSocket": {"port": 8080}, "successThreshold": 1},
                "startupProbe": {"grpc": {"port": 9090}, "successThreshold": 1},
                "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "true"]}},
                    "preStop": {"sleep": {"seconds": 5}}},
                "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": true,
                    "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "procMount": "Default",
                    "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                    "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-sidecar"}}
            }),
        );
        let privileged = with(
            c("agent"),
            json!({
                "securityContext": {"privileged": true, "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/agent.json"}},
                "volumeMounts": [{"name": "host", "mountPath": "/host", "mountPropagation": "Bidirectional"}],
                "lifecycle": {"preStop": {"httpGet": {"path": "/stop", "port": 8081, "scheme": "HTTPS"}}}
            }),
        );
        let init = with(
            c("proxy-init"),
            json!({"restartPolicy": "Always",
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 15021, "scheme": "HTTP"}}}),
        );
        let volumes = json!([
            {"name": "podinfo", "downwardAPI": {"defaultMode": 420, "items": [
                {"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}},
                {"path": "annotation", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.annotations['a']"}},
                {"path": "cpu_limit", "resourceFieldRef": {"containerName": "sidecar", "resource": "limits.cpu", "divisor": "1m"}, "mode": 420}
            ]}},
            {"name": "token", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600, "audience": "api"}},
                {"configMap": {"name": "ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"secret": {"name": "tls", "items": [{"key": "tls.crt", "path": "certs/tls.crt", "mode": 384}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]}},
            {"name": "conf", "configMap": {"name": "conf", "defaultMode": 420, "items": [{"key": "app.conf", "path": "app.conf", "mode": 420}]}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": "DirectoryOrCreate"}},
            {"name": "unset-type", "hostPath": {"path": "/tmp", "type": ""}},
            {"name": "certs", "secret": {"secretName": "certs", "items": [{"key": "tls.key", "path": "keys/..data"}]}},
            {"name": "store", "csi": {"driver": "secrets-store.csi.k8s.io", "nodePublishSecretRef": {"name": "creds"}}}
        ]);
        assert_eq!(
            check(json!([init]), json!([sidecar, privileged]), volumes),
            Vec::<String>::new()
        );
    }

    #[test]
    fn probe_and_lifecycle_handler_ports_paths_and_sleep() {
        let bad = with(
            c("a"),
            json!({
                "lifecycle": {
                    "postStart": {"sleep": {"seconds": 0}},
                    "preStop": {"httpGet": {"port": "8080"}}
                },
                "livenessProbe": {"httpGet": {"path": "/", "port": 70000, "scheme": "HTTP",
                    "httpHeaders": [{"name": "bad header", "value": "x"}]}, "successThreshold": 1},
                "readinessProbe": {"tcpSocket": {"port": "bad_name!"}},
                "startupProbe": {"grpc": {"port": 0}, "successThreshold": 1}
            }),
        );
        assert_eq!(
            check(json!([]), json!([bad]), json!([])),
            [
                "spec.containers[0].lifecycle.postStart.sleep: Invalid value: 0: must be greater than 0 and less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.",
                "spec.containers[0].lifecycle.preStop.httpGet.path: Required value",
                "spec.containers[0].lifecycle.preStop.httpGet.port: Invalid value: \"8080\": must contain at least one letter (a-z)",
                "spec.containers[0].lifecycle.preStop.httpGet.scheme: Unsupported value: \"\": supported values: \"HTTP\", \"HTTPS\"",
                "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].livenessProbe.httpGet.httpHeaders: Invalid value: \"bad header\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
                "spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: \"bad_name!\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].startupProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
        // An absent port is Go's zero IntOrString (the int 0); a sleep longer than the grace period fails.
        let init = with(
            c("i"),
            json!({"restartPolicy": "Always",
                "livenessProbe": {"tcpSocket": {}, "successThreshold": 1},
                "lifecycle": {"preStop": {"sleep": {"seconds": 31}}}}),
        );
        assert_eq!(
            check(json!([init]), json!([]), json!([])),
            [
                "spec.initContainers[0].lifecycle.preStop.sleep: Invalid value: 31: must be greater than 0 and less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.",
                "spec.initContainers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
    }

    #[test]
    fn container_security_context_rules() {
        let a = with(
            c("a"),
            json!({"securityContext": {"privileged": true, "allowPrivilegeEscalation": false,
                "runAsUser": -1, "runAsGroup": 2_147_483_648_i64, "procMount": "Weird",
                "capabilities": {"add": ["CAP_SYS_ADMIN"]}}}),
        );
        let b = with(
            c("b"),
            json!({"securityContext": {"procMount": "Unmasked", "seccompProfile": {"type": "Localhost"},
                "appArmorProfile": {"type": "Localhost", "localhostProfile": " padded"}}}),
        );
        let d = with(
            c("d"),
            json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x"},
                "appArmorProfile": {"type": "Unconfined", "localhostProfile": "p"}}}),
        );
        let e = with(
            c("e"),
            json!({"securityContext": {"seccompProfile": {}, "appArmorProfile": {"type": "Bogus"}}}),
        );
        let f = with(
            c("f"),
            json!({"securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "/abs/../x"},
                "appArmorProfile": {}}}),
        );
        assert_eq!(
            details(json!([]), json!([a, b, d, e, f]), json!([])),
            [
                "spec.containers[0].securityContext.runAsUser: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].securityContext.runAsGroup: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].securityContext.procMount: supported values: \"Default\", \"Unmasked\"",
                "spec.containers[0].securityContext: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
                "spec.containers[0].securityContext: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                "spec.containers[1].securityContext.procMount: `hostUsers` must be false to use `Unmasked`",
                "spec.containers[1].securityContext.seccompProfile.localhostProfile: must be set when seccomp type is Localhost",
                "spec.containers[1].securityContext.appArmorProfile.localhostProfile: must not be padded with whitespace",
                "spec.containers[2].securityContext.seccompProfile.localhostProfile: can only be set when seccomp type is Localhost",
                "spec.containers[2].securityContext.appArmorProfile.localhostProfile: can only be set when AppArmor type is Localhost",
                "spec.containers[3].securityContext.seccompProfile.type: type is required when seccompProfile is set",
                "spec.containers[3].securityContext.appArmorProfile.type: supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
                "spec.containers[4].securityContext.seccompProfile.localhostProfile: must be a relative path",
                "spec.containers[4].securityContext.seccompProfile.localhostProfile: must not contain '..'",
                "spec.containers[4].securityContext.appArmorProfile.type: type is required when appArmorProfile is set",
            ]
        );
        let full = check(
            json!([]),
            json!([with(
                c("g"),
                json!({"securityContext": {"runAsUser": -1, "procMount": "Unmasked", "seccompProfile": {"type": "Bogus"}}})
            )]),
            json!([]),
        );
        assert_eq!(
            full,
            [
                "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
                "spec.containers[0].securityContext.seccompProfile.type: Unsupported value: \"Bogus\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
            ]
        );
        let escalation = check(
            json!([]),
            json!([with(
                c("h"),
                json!({"securityContext": {"privileged": true, "allowPrivilegeEscalation": false}})
            )]),
            json!([]),
        );
        assert_eq!(escalation.len(), 1);
        assert!(
            escalation[0].starts_with("spec.containers[0].securityContext: Invalid value: core.SecurityContext{Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0x")
                && escalation[0].ends_with("}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
            "{escalation:?}"
        );
    }

    #[test]
    fn env_resource_field_refs() {
        let a = with(
            c("a"),
            json!({"env": [
                {"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.foo"}}},
                {"name": "B", "valueFrom": {"resourceFieldRef": {"resource": "requests.hugepages-1Gi"}}},
                {"name": "C", "valueFrom": {"resourceFieldRef": {}}},
                {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1Mi"}}},
                {"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "3"}}},
                {"name": "F", "valueFrom": {"resourceFieldRef": {"resource": "requests.ephemeral-storage", "divisor": "1m"}}},
                {"name": "G", "valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages-2Mi", "divisor": "2Mi"}}},
                {"name": "H", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Gi"}}}
            ]}),
        );
        let bytes = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the";
        assert_eq!(
            check(json!([]), json!([a]), json!([])),
            [
                "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.foo\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"".to_owned(),
                "spec.containers[0].env[2].valueFrom.resourceFieldRef.resource: Required value".to_owned(),
                "spec.containers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource".to_owned(),
                format!("spec.containers[0].env[4].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.memory\": {bytes} memory resource"),
                format!("spec.containers[0].env[5].valueFrom.resourceFieldRef.divisor: Invalid value: \"requests.ephemeral-storage\": {bytes} local ephemeral storage resource"),
                format!("spec.containers[0].env[6].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.hugepages-2Mi\": {bytes} hugepages resource"),
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

    #[test]
    fn volume_items_host_path_type_downward_api_and_csi() {
        let volumes = json!([
            {"name": "s", "secret": {"secretName": "s", "items": [
                {"key": "", "path": "/abs", "mode": 512},
                {"key": "k", "path": "..x"},
                {"key": "k", "path": "a/../b"},
                {"key": "k"}
            ]}},
            {"name": "c", "configMap": {"name": "c", "items": [{"key": "k", "path": "../x", "mode": -1}]}},
            {"name": "h", "hostPath": {"path": "/x", "type": "Foo"}},
            {"name": "d", "downwardAPI": {"defaultMode": 1000, "items": [
                {"path": "/abs", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                {"path": "p"},
                {"path": "q", "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
                {"path": "r", "resourceFieldRef": {"resource": "limits.cpu"}},
                {"path": "t", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}, "resourceFieldRef": {"containerName": "a", "resource": "limits.cpu"}}
            ]}},
            {"name": "x", "csi": {"driver": ""}},
            {"name": "y", "csi": {"driver": "Bad_Driver", "nodePublishSecretRef": {"name": "Bad_Name"}}},
            {"name": "z", "csi": {"driver": "d", "nodePublishSecretRef": {}}}
        ]);
        let subdomain = is_dns1123_subdomain("")[0].clone();
        assert_eq!(
            check(json!([]), json!([]), volumes),
            [
                "spec.volumes[0].secret.items[0].key: Required value".to_owned(),
                "spec.volumes[0].secret.items[0].path: Invalid value: \"/abs\": must be a relative path".to_owned(),
                "spec.volumes[0].secret.items[0].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive".to_owned(),
                "spec.volumes[0].secret.items[1].path: Invalid value: \"..x\": must not start with '..'".to_owned(),
                "spec.volumes[0].secret.items[2].path: Invalid value: \"a/../b\": must not contain '..'".to_owned(),
                "spec.volumes[0].secret.items[3].path: Required value".to_owned(),
                "spec.volumes[1].configMap.items[0].path: Invalid value: \"../x\": must not contain '..'".to_owned(),
                "spec.volumes[1].configMap.items[0].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive".to_owned(),
                "spec.volumes[2].hostPath.type: Unsupported value: \"Foo\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"".to_owned(),
                "spec.volumes[3].downwardAPI.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive".to_owned(),
                "spec.volumes[3].downwardAPI.path: Invalid value: \"/abs\": must be a relative path".to_owned(),
                "spec.volumes[3].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required".to_owned(),
                "spec.volumes[3].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"".to_owned(),
                "spec.volumes[3].downwardAPI.resourceFieldRef.containerName: Required value".to_owned(),
                "spec.volumes[3].downwardAPI: Invalid value: \"resource\": fieldRef and resourceFieldRef can not be specified simultaneously".to_owned(),
                "spec.volumes[4].csi.driver: Required value".to_owned(),
                format!("spec.volumes[4].csi.driver: Invalid value: \"\": {subdomain}"),
                format!("spec.volumes[5].csi.driver: Invalid value: \"Bad_Driver\": {subdomain}"),
                format!("spec.volumes[5].csi.name: Invalid value: \"Bad_Name\": {subdomain}"),
                "spec.volumes[6].csi.nodePublishSecretRef.name: Required value".to_owned(),
            ]
        );
        let long = "d".repeat(64);
        assert_eq!(
            check(
                json!([]),
                json!([]),
                json!([{"name": "l", "csi": {"driver": long}}])
            ),
            ["spec.volumes[0].csi.driver: Too long: may not be more than 63 bytes"]
        );
    }

    #[test]
    fn projected_sources() {
        let volumes = json!([{"name": "p", "projected": {"defaultMode": -1, "sources": [
            {"secret": {"name": "s"}, "configMap": {"name": "c"}},
            {"serviceAccountToken": {"path": "t", "expirationSeconds": 60}},
            {"serviceAccountToken": {"expirationSeconds": 4_294_967_297_i64}},
            {"serviceAccountToken": {"path": "/t", "expirationSeconds": 4_294_967_296_i64}},
            {"secret": {"items": [{"key": "a", "path": "dup"}]}},
            {"configMap": {"name": "c", "items": [{"key": "b", "path": "dup"}]}},
            {"downwardAPI": {"items": [{"path": "dup", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}, {"path": ".."}]}},
            {}
        ]}}]);
        assert_eq!(
            check(json!([]), json!([]), volumes),
            [
                "spec.volumes[0].projected.defaultMode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive",
                "spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
                "spec.volumes[0].projected.sources[1].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.volumes[0].projected.sources[2].serviceAccountToken.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds",
                "spec.volumes[0].projected.path: Required value",
                "spec.volumes[0].projected.path: Invalid value: \"/t\": must be a relative path",
                "spec.volumes[0].projected.sources[4].secret.name: Required value",
                "spec.volumes[0].projected: Invalid value: \"c\": conflicting duplicate paths",
                "spec.volumes[0].projected: Invalid value: \"dup\": conflicting duplicate paths",
                "spec.volumes[0].projected.sources[6].downwardAPI.path: Invalid value: \"..\": must not contain '..'",
                "spec.volumes[0].projected.sources[6].downwardAPI.path: Invalid value: \"..\": must not start with '..'",
                "spec.volumes[0].projected.sources[6].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
            ]
        );
    }

    #[test]
    fn volume_sources_are_checked_in_go_order_with_go_spellings() {
        assert_eq!(
            check(
                json!([]),
                json!([]),
                json!([
                    {"name": "a", "emptyDir": {}, "cephfs": {"monitors": ["m"]}},
                    {"name": "b", "cephfs": {"monitors": ["m"]}, "downwardAPI": {}},
                    {"name": "c", "configMap": {"name": "c"}, "storageos": {}}
                ])
            ),
            [
                "spec.volumes[0].cephFS: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[1].downwarAPI: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[2].storageos: Forbidden: may not specify more than 1 volume type",
            ]
        );
        // `\` is not a path separator for Go on Linux.
        assert!(
            check(
                json!([]),
                json!([]),
                json!([{"name": "h", "hostPath": {"path": "/a\\..\\b"}}])
            )
            .is_empty()
        );
    }

    #[test]
    fn wrongly_typed_fields_are_decode_errors_not_panics() {
        let cases = [
            (
                json!({"livenessProbe": {"httpGet": "x", "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"livenessProbe": {"httpGet": {"path": "/", "port": true}, "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"livenessProbe": {"httpGet": {"path": "/", "port": 1.5}, "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"livenessProbe": {"tcpSocket": {"port": 5_000_000_000_i64}}, "successThreshold": 1}),
                json!([]),
            ),
            (
                json!({"startupProbe": {"grpc": {"port": "http"}, "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"lifecycle": {"preStop": {"sleep": {"seconds": "5"}}}}),
                json!([]),
            ),
            (
                json!({"lifecycle": {"preStop": {"httpGet": {"path": "/", "port": 80, "httpHeaders": "x"}}}}),
                json!([]),
            ),
            (json!({"securityContext": {"runAsUser": "root"}}), json!([])),
            (
                json!({"securityContext": {"capabilities": {"add": "CAP_SYS_ADMIN"}}}),
                json!([]),
            ),
            (
                json!({"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "lots"}}}]}),
                json!([]),
            ),
            (
                json!({"volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": "yes"}]}),
                json!([]),
            ),
            (
                json!({}),
                json!([{"name": "v", "secret": {"secretName": "s", "items": "x"}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "secret": {"secretName": "s", "items": [5]}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "p", "mode": "0644"}]}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "hostPath": {"path": "/x", "type": 3}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "downwardAPI": {"items": [{"path": "p", "fieldRef": "x"}]}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "projected": {"sources": 5}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 1e3}}]}}]),
            ),
            (json!({}), json!([{"name": "v", "csi": {"driver": ["d"]}}])),
        ];
        for (extra, volumes) in cases {
            let main = json!([with(c("a"), extra.clone())]);
            assert!(decode_fails(main, volumes.clone()), "{extra} {volumes}");
        }
        // Nulls are Go's zero values, never a failure.
        let nulls = with(
            c("a"),
            json!({"securityContext": null, "livenessProbe": {"httpGet": {"path": "/", "port": null, "scheme": "HTTP", "httpHeaders": null}, "successThreshold": 1},
                "volumeMounts": [{"name": "v", "mountPath": "/v", "mountPropagation": null, "recursiveReadOnly": null, "readOnly": null}]}),
        );
        assert_eq!(
            check(
                json!([]),
                json!([nulls]),
                json!([{"name": "v", "projected": {"sources": [null, {"secret": {"name": "s", "items": [null]}}]}}])
            ),
            [
                "spec.volumes[0].projected.sources[1].secret.items[0].key: Required value",
                "spec.volumes[0].projected.sources[1].secret.items[0].path: Required value",
                "spec.containers[0].volumeMounts[0].name: Not found: \"v\"",
                "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
    }
}
