//! The ContainerRecreateRequest mutating webhook `mcontainerrecreaterequest.kb.io`
//! (`/mutate-apps-kruise-io-containerrecreaterequest`; docs/containerrecreaterequest-webhook.md; DECISIONS 13,
//! 14).
//!
//! Entry point: [`mutate`]. On CREATE of a v1alpha1 or v1beta1 CRR it checks the CRR's own fields, reads the
//! pod it names from the [`ClusterView`], and fills in what kruise-daemon needs to execute it: the labels
//! `crr.apps.kruise.io/active`, `node-name` and `pod-uid`, the strategy's defaults, and each container's
//! `statusContext` (with `preStop` and `ports` copied from the pod). On UPDATE it refuses a changed spec and
//! changed immutable labels (and, in v1alpha1, annotation). Both versions have the same labels and spec, the
//! only fields read or written here, so the request object is read and patched in the version it came in;
//! the patch is the diff of the raw request object and its edited copy, so fields our types do not model
//! survive (§2).
//!
//! Messages are OpenKruise's; codes follow DECISIONS 14 (§6.1): 422 for the CRR's own fields, 403 for what
//! depends on the pod, 400 for a request that does not decode.

mod go_spec;

#[cfg(test)]
mod tests;

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{Map, Value};

use self::go_spec::{Container, Object};
use crate::admission::{AdmissionRequest, Operation};
use crate::api::containerrecreaterequest::{
    ACTIVE_LABEL, NODE_NAME_LABEL, POD_UID_LABEL, UNREADY_ACQUIRED_ANNOTATION,
};
use crate::api::pod::{SIDECAR_TERMINATED_CONDITION, SlimPod};
use crate::features::{FeatureGates, Gate};
use crate::json::go::unmarshal_kind;
use crate::json::{RawJson, patch};
use crate::{ClusterView, Denial, Verdict, WebhookError};

/// The gate without which every request is refused (OpenKruise's `KruiseDaemon`, on by default).
pub const GATE: Gate = "KruiseDaemon";
/// The answer to every request while [`GATE`] is off (403, OpenKruise's).
pub const GATE_OFF_MESSAGE: &str = "feature-gate KruiseDaemon is not enabled";
/// The API versions the webhook reads (`request.resource.version`).
pub const VERSIONS: [&str; 2] = [V1ALPHA1, V1BETA1];
const V1ALPHA1: &str = "v1alpha1";
const V1BETA1: &str = "v1beta1";

/// The code of a refusal about the CRR's own fields: an invalid custom resource (DECISIONS 14; OpenKruise
/// answers 400 on CREATE, 403 on UPDATE).
pub const INVALID_CODE: u16 = 422;
/// The code of a refusal that depends on the pod (DECISIONS 14; OpenKruise answers 400).
pub const POD_CODE: u16 = 403;

/// The smallest `activeDeadlineSeconds` accepted.
const MIN_DEADLINE_SECONDS: i64 = 3;
const FAILURE_POLICY_FAIL: &str = "Fail";
const FAILURE_POLICY_IGNORE: &str = "Ignore";
const NO_CONTENT: &str = "there is no content to decode";

/// Answers a ContainerRecreateRequest admission request (docs/containerrecreaterequest-webhook.md §3-§5).
///
/// # Errors
/// [`WebhookError::UnsupportedVersion`] when `request.resource.version` is neither v1alpha1 nor v1beta1, and
/// [`WebhookError::Decode`] when the object (or, on UPDATE, the old object) is missing or does not decode as
/// Go's typed object would (both answered 400).
pub fn mutate(
    req: &AdmissionRequest,
    view: &impl ClusterView,
    gates: &FeatureGates,
) -> Result<Verdict, WebhookError> {
    if !gates.enabled(GATE) {
        return Ok(Verdict::deny(Denial::forbidden(GATE_OFF_MESSAGE)));
    }
    let version = req.resource.version.as_str();
    if !VERSIONS.contains(&version) {
        return Err(WebhookError::UnsupportedVersion(version.to_owned()));
    }
    match req.operation {
        Operation::Create => create(req, view),
        Operation::Update => update(req, version == V1ALPHA1),
        Operation::Delete | Operation::Connect => Ok(Verdict::allow()),
    }
}

/// The object as JSON and as Go's typed decode sees it.
fn decode(raw: Option<&RawJson>) -> Result<(Value, Object), WebhookError> {
    let raw = raw.ok_or_else(|| WebhookError::decode(NO_CONTENT))?;
    let value: Value = serde_json::from_str(raw.get()).map_err(WebhookError::decode)?;
    if !value.is_object() {
        return Err(WebhookError::Decode(format!(
            "cannot unmarshal {} into a ContainerRecreateRequest",
            unmarshal_kind(&value)
        )));
    }
    let typed = Object::deserialize(&value).map_err(WebhookError::decode)?;
    Ok((value, typed))
}

/// A refusal about the CRR's own fields.
fn invalid(message: impl Into<String>) -> Denial {
    Denial {
        code: INVALID_CODE,
        reason: None,
        message: message.into(),
    }
}

/// A refusal that depends on the pod.
fn refused_by_pod(message: impl Into<String>) -> Denial {
    Denial {
        code: POD_CODE,
        reason: None,
        message: message.into(),
    }
}

/// §5: the spec, the pod-uid and node-name labels and (v1alpha1) the unready-acquired annotation are
/// immutable; nothing is patched.
fn update(req: &AdmissionRequest, v1alpha1: bool) -> Result<Verdict, WebhookError> {
    let (_, new) = decode(req.object.as_ref())?;
    let (_, old) = decode(req.old_object.as_ref())?;
    if new.spec != old.spec {
        return Ok(Verdict::deny(invalid(
            "spec of ContainerRecreateRequest is immutable",
        )));
    }
    for label in [POD_UID_LABEL, NODE_NAME_LABEL] {
        if new.metadata.label(label) != old.metadata.label(label) {
            return Ok(Verdict::deny(invalid(format!(
                "not allowed to update immutable label {label}"
            ))));
        }
    }
    let acquired = old.metadata.annotation(UNREADY_ACQUIRED_ANNOTATION);
    if v1alpha1
        && !acquired.is_empty()
        && new.metadata.annotation(UNREADY_ACQUIRED_ANNOTATION) != acquired
    {
        return Ok(Verdict::deny(invalid(format!(
            "not allowed to update immutable annotation {UNREADY_ACQUIRED_ANNOTATION}"
        ))));
    }
    Ok(Verdict::allow())
}

/// §4: checks in OpenKruise's order, each edit made on a copy of the raw object; the patch is the diff.
fn create(req: &AdmissionRequest, view: &impl ClusterView) -> Result<Verdict, WebhookError> {
    let (original, crr) = decode(req.object.as_ref())?;
    let spec = &crr.spec;
    if spec.pod_name.is_empty() {
        return Ok(Verdict::deny(invalid("podName can not be empty")));
    }
    let containers = spec.containers.as_deref().unwrap_or_default();
    if containers.is_empty() {
        return Ok(Verdict::deny(invalid("containers list can not be null")));
    }
    if let Some(deadline) = spec.active_deadline_seconds
        && deadline < MIN_DEADLINE_SECONDS
    {
        return Ok(Verdict::deny(invalid(format!(
            "activeDeadlineSeconds can not be less than {MIN_DEADLINE_SECONDS}s"
        ))));
    }
    let strategy = spec.strategy.as_ref();
    let grace = strategy.and_then(|s| s.termination_grace_period_seconds);
    if grace.is_some_and(|g| g < 0) {
        return Ok(Verdict::deny(invalid(
            "terminationGracePeriodSeconds must be non-negative integer",
        )));
    }
    if strategy
        .and_then(|s| s.unready_grace_period_seconds)
        .is_some_and(|g| g < 0)
    {
        return Ok(Verdict::deny(invalid(
            "unreadyGracePeriodSeconds must be non-negative integer",
        )));
    }
    let failure_policy = strategy.map_or("", |s| s.failure_policy.as_str());
    if !["", FAILURE_POLICY_FAIL, FAILURE_POLICY_IGNORE].contains(&failure_policy) {
        return Ok(Verdict::deny(invalid(format!(
            "unknown failurePolicy {failure_policy}"
        ))));
    }

    let namespace = if crr.metadata.namespace.is_empty() {
        req.namespace()
    } else {
        &crr.metadata.namespace
    };
    let Some(pod) = view.pod(namespace, &spec.pod_name) else {
        return Ok(Verdict::deny(refused_by_pod(format!(
            "no found Pod named {}",
            spec.pod_name
        ))));
    };
    if !pod.is_active() && !terminated_by_sidecar_terminator(&pod) {
        return Ok(Verdict::deny(refused_by_pod(
            "not allowed to recreate containers in an inactive Pod",
        )));
    }
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default();
    if node.is_empty() {
        return Ok(Verdict::deny(refused_by_pod(
            "not allowed to recreate containers in a pending Pod",
        )));
    }

    // Every check that can refuse on the containers comes before any edit of them is needed; the edits are
    // collected first, so that a refusal leaves nothing half done.
    let mut filled = Vec::with_capacity(containers.len());
    let mut seen = HashSet::with_capacity(containers.len());
    for container in containers {
        match fill(container, &pod, &mut seen) {
            Ok(fields) => filled.push(fields),
            Err(refusal) => return Ok(Verdict::deny(refusal)),
        }
    }

    let mut edited = original.clone();
    let Some(obj) = edited.as_object_mut() else {
        return Err(WebhookError::Internal(
            "decoded object is not an object".into(),
        ));
    };
    let labels = child_object(child_object(obj, "metadata")?, "labels")?;
    labels.insert(ACTIVE_LABEL.into(), Value::String("true".into()));
    labels.insert(NODE_NAME_LABEL.into(), Value::String(node.to_owned()));
    labels.insert(
        POD_UID_LABEL.into(),
        Value::String(pod.metadata.uid.clone().unwrap_or_default()),
    );
    let spec = child_object(obj, "spec")?;
    let strategy = child_object(spec, "strategy")?;
    if failure_policy.is_empty() {
        strategy.insert(
            "failurePolicy".into(),
            Value::String(FAILURE_POLICY_FAIL.into()),
        );
    }
    if grace.is_none()
        && let Some(pod_grace) = pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
    {
        strategy.insert(
            "terminationGracePeriodSeconds".into(),
            Value::from(pod_grace),
        );
    }
    let Some(Value::Array(list)) = spec.get_mut("containers") else {
        return Err(WebhookError::Internal(
            "decoded containers are not a list".into(),
        ));
    };
    for (entry, fields) in list.iter_mut().zip(filled) {
        let Value::Object(entry) = entry else {
            return Err(not_an_object("container", entry));
        };
        entry.extend(fields);
    }
    let mut verdict = Verdict::allow();
    verdict.patch = patch::diff_owned(&original, edited);
    Ok(verdict)
}

/// The fields a container of the CRR gets from the pod (§4 rules 15-21), or the refusal.
fn fill<'a>(
    container: &'a Container,
    pod: &SlimPod,
    seen: &mut HashSet<&'a str>,
) -> Result<Map<String, Value>, Denial> {
    let name = container.name.as_str();
    if seen.contains(name) {
        return Err(invalid(format!("can not recreate {name} multi times")));
    }
    if container.has_read_only_fields() {
        return Err(invalid(
            "preStop, ports, statusContext in container are ready-only fields",
        ));
    }
    let Some(pod_container) = pod.container(name) else {
        return Err(refused_by_pod(format!("container {name} not found in Pod")));
    };
    let Some(status) = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|list| list.iter().find(|s| s.name == name))
    else {
        return Err(refused_by_pod(format!(
            "not found {name} containerStatus in Pod Status"
        )));
    };
    let container_id = status.container_id.as_deref().unwrap_or_default();
    if container_id.is_empty() {
        return Err(refused_by_pod(format!(
            "no containerID in {name} containerStatus, maybe the container has not been initialized"
        )));
    }
    let mut fields = Map::new();
    if let Some(pre_stop) = pod_container.pre_stop() {
        fields.insert("preStop".into(), to_value(pre_stop));
        // Go's `omitempty` drops an empty list.
        if pre_stop.http_get.is_some()
            && let Some(ports) = pod_container.ports.as_ref().filter(|p| !p.is_empty())
        {
            fields.insert("ports".into(), to_value(ports));
        }
    }
    let mut context = Map::new();
    context.insert("containerID".into(), Value::String(container_id.to_owned()));
    context.insert("restartCount".into(), Value::from(status.restart_count));
    fields.insert("statusContext".into(), Value::Object(context));
    seen.insert(name);
    Ok(fields)
}

/// Whether the pod carries the condition the Job sidecar terminator sets with the phase (any status).
fn terminated_by_sidecar_terminator(pod: &SlimPod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|list| list.iter().any(|c| c.type_ == SIDECAR_TERMINATED_CONDITION))
}

/// `obj[key]` as an object, made one when absent or null.
///
/// # Errors
/// [`WebhookError::Decode`] for any other value: serde's typed decode reads a struct from a JSON array too,
/// where Go's refuses it.
fn child_object<'m>(
    obj: &'m mut Map<String, Value>,
    key: &str,
) -> Result<&'m mut Map<String, Value>, WebhookError> {
    let slot = obj.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(map) => Ok(map),
        other => Err(not_an_object(key, other)),
    }
}

fn not_an_object(what: &str, value: &Value) -> WebhookError {
    WebhookError::Decode(format!(
        "cannot unmarshal {} into the ContainerRecreateRequest's {what}, an object",
        unmarshal_kind(value)
    ))
}

/// A value our own types serialise: cannot fail (no maps with non-string keys).
fn to_value(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
