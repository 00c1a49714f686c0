//! The SidecarSet defaulting webhook `/mutate-apps-kruise-io-sidecarset` (spec/sidecarset.md §7, §7.1; §2
//! for the fields; DECISIONS 13 and 14).
//!
//! Entry point: [`mutate`]. On CREATE and UPDATE of a v1alpha1 or v1beta1 SidecarSet it applies OpenKruise's
//! `SetDefaultsSidecarSet` (which calls Kubernetes' container and volume defaulting) to the raw request
//! object, then writes the two hashes of §7.2 into `metadata.annotations`, and answers with a JSONPatch from
//! the raw object to the result. It edits the JSON tree, so fields our types do not know survive
//! (DECISIONS 13); unlike Go, which re-marshals its typed object, it adds nothing else (no `resources: {}`,
//! no `creationTimestamp: null`).
//!
//! Undecodable input is answered 400 as controller-runtime's decoder would: a value of the wrong JSON kind in
//! a container ([`hash::check_containers`]) or in a field defaulting touches, or an invalid quantity.
//!
//! Quantities in `resources.limits` / `resources.requests` are rounded up to milli units and written in
//! canonical form; `env[].valueFrom.resourceFieldRef.divisor`, when present, is written in canonical form
//! (both as Go's re-marshalling does). Quantities other than these are left as sent, as are quantities with
//! more digits than [`hash::quantity`] supports.

mod image;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

use crate::admission::{AdmissionRequest, Operation};
use crate::api::sidecarset::{HASH_ANNOTATION, HASH_WITHOUT_IMAGE_ANNOTATION};
use crate::json::patch;
use crate::quantity;
use crate::sidecarset::hash;
use crate::{Verdict, WebhookError};

pub use self::image::default_pull_policy;

/// The API versions the webhook decodes (`request.resource.version`).
pub const VERSIONS: [&str; 2] = ["v1alpha1", "v1beta1"];

/// Volume source fields of k8s.io/api v0.32 `VolumeSource`: a volume with none of them gets `emptyDir: {}`.
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// `0644`, the default mode of secret, configMap, downwardAPI and projected volumes.
const DEFAULT_MODE: i64 = 420;

/// Answers a SidecarSet admission request: allowed, with the defaulting patch (empty when nothing changed).
///
/// Operations other than CREATE and UPDATE are allowed untouched.
///
/// # Errors
/// [`WebhookError::UnsupportedVersion`] when `request.resource.version` is neither v1alpha1 nor v1beta1, and
/// [`WebhookError::Decode`] when the object is missing or Go's decoder would refuse it (both answered 400).
pub fn mutate(req: &AdmissionRequest) -> Result<Verdict, WebhookError> {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Ok(Verdict::allow());
    }
    let version = req.resource.version.as_str();
    if !VERSIONS.contains(&version) {
        return Err(WebhookError::UnsupportedVersion(version.to_owned()));
    }
    let raw = req
        .object
        .as_ref()
        .ok_or_else(|| WebhookError::decode("there is no content to decode"))?;
    let original: Value = serde_json::from_str(raw.get()).map_err(WebhookError::decode)?;
    let mut defaulted = original.clone();
    default_object(&mut defaulted)?;
    let mut verdict = Verdict::allow();
    verdict.patch = patch::diff(&original, &defaulted);
    Ok(verdict)
}

/// Defaults a SidecarSet object (v1alpha1 or v1beta1) in place and sets its hash annotations (§7.1, §7.2).
///
/// # Errors
/// [`WebhookError::Decode`] when the object is not one Go's decoder would accept.
pub fn default_object(obj: &mut Value) -> Result<(), WebhookError> {
    let Value::Object(obj) = obj else {
        return Err(type_error("SidecarSet", "v1beta1.SidecarSet", obj));
    };
    let spec = child_or_new(obj, "spec", "SidecarSet.spec")?;
    hash::check_containers(&Value::Object(spec.clone()))
        .map_err(|e| WebhookError::Decode(e.to_string()))?;
    default_spec(spec)?;
    let spec = Value::Object(spec.clone());
    let hash = hash::sidecarset_hash(&spec);
    let without_image = hash::sidecarset_hash_without_image(&spec);

    let meta = child_or_new(obj, "metadata", "SidecarSet.metadata")?;
    let annotations = child_or_new(meta, "annotations", "ObjectMeta.annotations")?;
    if let Some((_, bad)) = annotations
        .iter()
        .find(|(_, v)| !(v.is_string() || v.is_null()))
    {
        return Err(type_error("ObjectMeta.annotations", "string", bad));
    }
    annotations.insert(HASH_ANNOTATION.to_owned(), Value::String(hash));
    annotations.insert(
        HASH_WITHOUT_IMAGE_ANNOTATION.to_owned(),
        Value::String(without_image),
    );
    Ok(())
}

/// A decode error in Go's words.
fn type_error(field: &str, go_type: &str, found: &Value) -> WebhookError {
    WebhookError::Decode(format!(
        "json: cannot unmarshal {} into Go struct field {field} of type {go_type}",
        crate::json::go::unmarshal_kind(found)
    ))
}

fn is_unset(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// The object under `key`, `None` when absent or `null` (a nil pointer).
fn child<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<&'a mut Map<String, Value>>, WebhookError> {
    match parent.get_mut(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(type_error(field, "struct", other)),
    }
}

/// The object under `key`, created when absent or `null` (a Go struct value, or a pointer defaulting
/// allocates).
fn child_or_new<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<&'a mut Map<String, Value>, WebhookError> {
    let slot = parent
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(m) => Ok(m),
        other => Err(type_error(field, "struct", other)),
    }
}

/// The objects of the list under `key` (absent or `null`: none). A `null` element is Go's zero struct, so it
/// becomes `{}` and is defaulted like the others.
fn objects<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Vec<&'a mut Map<String, Value>>, WebhookError> {
    match parent.get_mut(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items.iter_mut() {
                if item.is_null() {
                    *item = Value::Object(Map::new());
                }
                match item {
                    Value::Object(m) => out.push(m),
                    other => return Err(type_error(field, "struct", other)),
                }
            }
            Ok(out)
        }
        Some(other) => Err(type_error(field, "slice", other)),
    }
}

/// A string field: `value` when absent, `null` or `""`.
fn default_str(
    obj: &mut Map<String, Value>,
    key: &str,
    value: &str,
    field: &str,
) -> Result<(), WebhookError> {
    match obj.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() => {}
        Some(Value::String(_)) => return Ok(()),
        Some(other) => return Err(type_error(field, "string", other)),
    }
    obj.insert(key.to_owned(), Value::String(value.to_owned()));
    Ok(())
}

fn is_integer(v: &Value) -> bool {
    v.as_i64().is_some()
}

fn is_int_or_string(v: &Value) -> bool {
    v.is_string() || v.as_i64().is_some_and(|n| i32::try_from(n).is_ok())
}

/// A pointer field: `value` when absent or `null` (nil); any present value of the right kind stays.
fn default_nil(
    obj: &mut Map<String, Value>,
    key: &str,
    value: Value,
    (field, go_type, valid): (&str, &str, fn(&Value) -> bool),
) -> Result<(), WebhookError> {
    match obj.get(key) {
        None | Some(Value::Null) => {
            obj.insert(key.to_owned(), value);
            Ok(())
        }
        Some(v) if valid(v) => Ok(()),
        Some(other) => Err(type_error(field, go_type, other)),
    }
}

/// An `int32` field: `value` when absent, `null` or `0`.
fn default_int(
    obj: &mut Map<String, Value>,
    key: &str,
    value: i64,
    field: &str,
) -> Result<(), WebhookError> {
    match obj.get(key) {
        None | Some(Value::Null) => {}
        Some(v) if v.as_i64() == Some(0) => {}
        Some(v) if is_integer(v) => return Ok(()),
        Some(other) => return Err(type_error(field, "int32", other)),
    }
    obj.insert(key.to_owned(), json!(value));
    Ok(())
}

/// `ObjectFieldSelector.apiVersion` defaults to `v1`.
fn default_field_ref(parent: &mut Map<String, Value>) -> Result<(), WebhookError> {
    if let Some(field_ref) = child(parent, "fieldRef", "fieldRef")? {
        default_str(
            field_ref,
            "apiVersion",
            "v1",
            "ObjectFieldSelector.apiVersion",
        )?;
    }
    Ok(())
}

/// Rewrites a quantity with `format` (canonical, or rounded up to milli then canonical).
fn rewrite_quantity(
    v: &mut Value,
    field: &str,
    format: fn(&str) -> Result<String, quantity::QuantityError>,
) -> Result<(), WebhookError> {
    let text = match v {
        // Go reads null as the zero quantity.
        Value::Null => "0".to_owned(),
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        other => return Err(type_error(field, "resource.Quantity", other)),
    };
    match format(&text) {
        Ok(canonical) => *v = Value::String(canonical),
        Err(quantity::QuantityError::TooPrecise(_)) => {}
        Err(e) => return Err(WebhookError::Decode(e.to_string())),
    }
    Ok(())
}

/// `SetDefaults_HTTPGetAction`.
fn default_http_get(parent: &mut Map<String, Value>, field: &str) -> Result<(), WebhookError> {
    if let Some(get) = child(parent, "httpGet", field)? {
        default_str(get, "path", "/", "HTTPGetAction.path")?;
        default_str(get, "scheme", "HTTP", "HTTPGetAction.scheme")?;
    }
    Ok(())
}

/// OpenKruise's `setDefaultSidecarContainer` and `setDefaultContainer` (which apply Kubernetes'
/// `SetDefaults_Container` and friends). Startup probes are not defaulted (§7.1 quirk).
fn default_container(c: &mut Map<String, Value>, inject_policy: &str) -> Result<(), WebhookError> {
    const F: &str = "SidecarContainer";
    default_str(c, "podInjectPolicy", inject_policy, F)?;
    let upgrade = child_or_new(c, "upgradeStrategy", F)?;
    default_str(upgrade, "upgradeType", "ColdUpgrade", F)?;
    let share = child_or_new(c, "shareVolumePolicy", F)?;
    default_str(share, "type", "disabled", F)?;
    // shareVolumeDevicePolicy stays nil: existing hashes must not change (§7.1).

    let unset_policy = match c.get("imagePullPolicy") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(other) => return Err(type_error(F, "string", other)),
    };
    if unset_policy {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = default_pull_policy(image);
        c.insert("imagePullPolicy".to_owned(), json!(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log", F)?;
    default_str(c, "terminationMessagePolicy", "File", F)?;

    for port in objects(c, "ports", F)? {
        default_str(port, "protocol", "TCP", "ContainerPort.protocol")?;
    }
    for transfer in objects(c, "transferEnv", F)? {
        // Go dereferences fieldRef without a nil check; a nil one is left alone here.
        if let Some(from) = child(transfer, "sourceContainerNameFrom", F)? {
            default_field_ref(from)?;
        }
    }
    for env in objects(c, "env", F)? {
        if let Some(from) = child(env, "valueFrom", "EnvVar.valueFrom")? {
            default_field_ref(from)?;
            if let Some(resource_ref) = child(from, "resourceFieldRef", "EnvVarSource")?
                && let Some(divisor) = resource_ref.get_mut("divisor")
                && !divisor.is_null()
            {
                rewrite_quantity(
                    divisor,
                    "ResourceFieldSelector.divisor",
                    quantity::canonical,
                )?;
            }
        }
    }
    if let Some(resources) = child(c, "resources", F)? {
        for key in ["limits", "requests"] {
            if let Some(list) = child(resources, key, "ResourceRequirements")? {
                for q in list.values_mut() {
                    rewrite_quantity(q, "ResourceRequirements", quantity::canonical_milli)?;
                }
            }
        }
    }
    for probe_key in ["livenessProbe", "readinessProbe"] {
        if let Some(probe) = child(c, probe_key, F)? {
            default_int(probe, "timeoutSeconds", 1, "Probe.timeoutSeconds")?;
            default_int(probe, "periodSeconds", 10, "Probe.periodSeconds")?;
            default_int(probe, "successThreshold", 1, "Probe.successThreshold")?;
            default_int(probe, "failureThreshold", 3, "Probe.failureThreshold")?;
            default_http_get(probe, "Probe.httpGet")?;
        }
    }
    if let Some(lifecycle) = child(c, "lifecycle", F)? {
        for hook in ["postStart", "preStop"] {
            if let Some(handler) = child(lifecycle, hook, "Lifecycle")? {
                default_http_get(handler, "LifecycleHandler.httpGet")?;
            }
        }
    }
    Ok(())
}

/// OpenKruise's `SetDefaultPodVolumes` for one volume: Kubernetes' defaulting of the volume itself and of its
/// hostPath, secret, downwardAPI, configMap and projected sources only (not iscsi, rbd, azureDisk or scaleIO,
/// whose Kubernetes defaults OpenKruise does not call).
fn default_volume(v: &mut Map<String, Value>) -> Result<(), WebhookError> {
    if VOLUME_SOURCES.iter().all(|k| is_unset(v.get(*k))) {
        v.insert("emptyDir".to_owned(), json!({}));
    }
    let mode = ("defaultMode", "int32", is_integer as fn(&Value) -> bool);
    if let Some(host_path) = child(v, "hostPath", "Volume.hostPath")? {
        default_nil(
            host_path,
            "type",
            json!(""),
            ("HostPathVolumeSource.type", "string", Value::is_string),
        )?;
    }
    for key in ["secret", "configMap"] {
        if let Some(source) = child(v, key, "Volume")? {
            default_nil(source, "defaultMode", json!(DEFAULT_MODE), mode)?;
        }
    }
    if let Some(downward) = child(v, "downwardAPI", "Volume.downwardAPI")? {
        default_nil(downward, "defaultMode", json!(DEFAULT_MODE), mode)?;
        for item in objects(downward, "items", "DownwardAPIVolumeSource.items")? {
            default_field_ref(item)?;
        }
    }
    if let Some(projected) = child(v, "projected", "Volume.projected")? {
        default_nil(projected, "defaultMode", json!(DEFAULT_MODE), mode)?;
        for source in objects(projected, "sources", "ProjectedVolumeSource.sources")? {
            if let Some(downward) = child(source, "downwardAPI", "VolumeProjection")? {
                for item in objects(downward, "items", "DownwardAPIProjection.items")? {
                    default_field_ref(item)?;
                }
            }
            if let Some(token) = child(source, "serviceAccountToken", "VolumeProjection")? {
                default_nil(
                    token,
                    "expirationSeconds",
                    json!(3600),
                    ("ServiceAccountTokenProjection", "int64", is_integer),
                )?;
            }
        }
    }
    Ok(())
}

/// OpenKruise's `SetDefaultsSidecarSet` on the spec (§7.1).
fn default_spec(spec: &mut Map<String, Value>) -> Result<(), WebhookError> {
    const F: &str = "SidecarSetSpec";
    let strategy = child_or_new(spec, "updateStrategy", F)?;
    default_str(
        strategy,
        "type",
        "RollingUpdate",
        "SidecarSetUpdateStrategy.type",
    )?;
    let int_or_string = (
        "SidecarSetUpdateStrategy",
        "intstr.IntOrString",
        is_int_or_string as fn(&Value) -> bool,
    );
    default_nil(strategy, "maxUnavailable", json!(1), int_or_string)?;
    default_nil(strategy, "partition", json!(0), int_or_string)?;
    for c in objects(spec, "initContainers", F)? {
        default_container(c, "AfterAppContainer")?;
    }
    for c in objects(spec, "containers", F)? {
        default_container(c, "BeforeAppContainer")?;
    }
    for volume in objects(spec, "volumes", "SidecarSetSpec.volumes")? {
        default_volume(volume)?;
    }
    default_nil(
        spec,
        "revisionHistoryLimit",
        json!(10),
        ("SidecarSetSpec.revisionHistoryLimit", "int32", is_integer),
    )?;
    for meta in objects(spec, "patchPodMetadata", "SidecarSetSpec.patchPodMetadata")? {
        default_str(meta, "patchPolicy", "Retain", "SidecarSetPatchPodMetadata")?;
    }
    if let Some(injection) = child(spec, "injectionStrategy", F)?
        && let Some(revision) = child(injection, "revision", "SidecarSetInjectionStrategy")?
    {
        default_str(
            revision,
            "policy",
            "Always",
            "SidecarSetInjectRevision.policy",
        )?;
    }
    Ok(())
}
