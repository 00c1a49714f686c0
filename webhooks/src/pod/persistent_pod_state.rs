//! Step 6 of the pod chain: a re-created pod of a workload that a PersistentPodState follows goes back to
//! the topology (zone, node, …) it ran on before (spec/pod-mutating-misc.md §7).
//!
//! Entry points: [`needs_whitelist`] tells the I/O layer whether to read the custom workload whitelist
//! ([`whitelist`]) for a request; the chain calls the step with what was read. The whitelist is read only
//! when it can change the answer: a PersistentPodState of the namespace targets the pod's controller, and
//! that controller is not a StatefulSet (always followed). OpenKruise reads it on every pod create (from its
//! informer cache), so an unreadable or invalid whitelist fails every pod create there; here it fails only
//! the pod creates it concerns, and the common pod create costs one map lookup.

pub mod whitelist;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::owner::{self, Controller};
use crate::WebhookError;
use crate::admission::{AdmissionRequest, Operation};
use crate::api::persistentpodstate::{
    INJECTED_ANNOTATION, PersistentPodState, PersistentPodStateSpec, PodState, TargetReference,
};
use crate::json::rawpod::{RawPod, Section};
use crate::podunavailablebudget::related::{api_group, controller_ref};
use crate::sidecarset::validate::CONFIG_MAP_NAME;
use crate::view::PersistentPodStateView;
use whitelist::WhitelistSource;

/// Whether a PersistentPodState targets the workload `group`/`kind`/`name` (`util.IsReferenceEqual`: the
/// apiVersions' groups are compared, not their versions; one that does not parse matches nothing).
fn targets(target: &TargetReference, group: &str, kind: &str, name: &str) -> bool {
    target.kind == kind && target.name == name && api_group(&target.api_version) == Some(group)
}

/// The first PersistentPodState of `states` (name order) not being deleted that targets the workload.
fn following<'s>(
    states: &'s [std::sync::Arc<PersistentPodState>],
    group: &str,
    kind: &str,
    name: &str,
) -> Option<&'s PersistentPodState> {
    states
        .iter()
        .map(|s| &**s)
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .find(|s| targets(&s.spec.target_ref, group, kind, name))
}

/// Whether the chain needs the whitelist for `req` (module docs): a pod CREATE whose controller is not a
/// StatefulSet, in a namespace (the request's, which the API server fills from the pod's and the other way
/// round) where a PersistentPodState targets that controller.
pub fn needs_whitelist(req: &AdmissionRequest, view: &impl PersistentPodStateView) -> bool {
    if req.operation != Operation::Create
        || !req.sub_resource.is_empty()
        || req.resource.resource != "pods"
    {
        return false;
    }
    let namespace = Some(req.namespace())
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let states = match view.persistent_pod_states_in(namespace) {
        Ok(states) if !states.is_empty() => states,
        _ => return false,
    };
    let Some(owner) = req.object().and_then(controller_ref) else {
        return false;
    };
    let Some(group) = api_group(&owner.api_version) else {
        return false;
    };
    !whitelist::default_support(group, &owner.kind)
        && following(&states, group, &owner.kind, &owner.name).is_some()
}

/// The node selector and the preferred scheduling terms that put a pod back on its recorded topology
/// (§7.2 steps 3-4). A preferred term is built even when none of its keys was recorded: its preference
/// then has no expressions (quirk, as OpenKruise's `createNodeAffinity`).
fn node_affinity(
    spec: &PersistentPodStateSpec,
    state: &PodState,
) -> (BTreeMap<String, String>, Vec<Value>) {
    let labels = &state.node_topology_labels;
    let selector = spec
        .required_persistent_topology
        .iter()
        .flat_map(|t| &t.keys)
        .filter_map(|k| Some((k.clone(), labels.get(k)?.clone())))
        .collect();
    let preferred = spec
        .preferred_persistent_topology
        .iter()
        .map(|term| {
            let expressions: Vec<Value> = term
                .preference
                .keys
                .iter()
                .filter_map(|k| {
                    let value = labels.get(k)?;
                    Some(json!({"key": k, "operator": "In", "values": [value]}))
                })
                .collect();
            // Go's NodeSelectorTerm omits empty matchExpressions.
            let preference = if expressions.is_empty() {
                json!({})
            } else {
                json!({ "matchExpressions": expressions })
            };
            json!({"weight": term.weight, "preference": preference})
        })
        .collect();
    (selector, preferred)
}

/// The object member `key` of `map` to write into: made an empty object when absent or `null`.
///
/// # Errors
/// A decode error naming `path` when it is something else (decoding into a Pod would have failed).
fn object_in<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'m mut Map<String, Value>, WebhookError> {
    let member = map.entry(key).or_insert(Value::Null);
    if member.is_null() {
        *member = Value::Object(Map::new());
    }
    member
        .as_object_mut()
        .ok_or_else(|| WebhookError::Decode(format!("{path}: expected an object")))
}

/// Sets each of `selector` in `spec.nodeSelector` (created when absent, existing keys overwritten).
fn write_node_selector(
    doc: &mut RawPod<'_>,
    selector: BTreeMap<String, String>,
) -> Result<(), WebhookError> {
    if !matches!(
        doc.get(Section::Spec, "nodeSelector"),
        None | Some(Value::Null | Value::Object(_))
    ) {
        return Err(WebhookError::Decode(
            "spec.nodeSelector: expected a map of strings".into(),
        ));
    }
    let map = doc.object_mut(Section::Spec, "nodeSelector");
    for (key, value) in selector {
        map.insert(key, Value::String(value));
    }
    Ok(())
}

/// Appends `terms` to `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`,
/// creating what is absent; the required terms are not touched.
fn append_preferred(doc: &mut RawPod<'_>, terms: Vec<Value>) -> Result<(), WebhookError> {
    const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";
    let affinity = doc.edit(Section::Spec, "affinity");
    if affinity.as_ref().is_none_or(Value::is_null) {
        *affinity = Some(Value::Object(Map::new()));
    }
    let affinity = affinity
        .as_mut()
        .and_then(Value::as_object_mut)
        .ok_or_else(|| WebhookError::Decode("spec.affinity: expected an object".into()))?;
    let node = object_in(affinity, "nodeAffinity", "spec.affinity.nodeAffinity")?;
    let list = node.entry(PREFERRED).or_insert(Value::Null);
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    list.as_array_mut()
        .ok_or_else(|| {
            WebhookError::Decode(format!(
                "spec.affinity.nodeAffinity.{PREFERRED}: expected a list"
            ))
        })?
        .extend(terms);
    Ok(())
}

/// Step 6 on a pod CREATE (§7): with the PersistentPodState of `namespace` (the pod's) that follows the
/// pod's controller and a recorded state of this pod (by its name, as earlier steps left it), writes the
/// node selector and the preferred terms of its topology and the annotation naming the PersistentPodState.
/// `whitelist`: what the I/O layer read ([`needs_whitelist`]), `None` when it was not needed;
/// `kruise_namespace` names the ConfigMap in errors.
///
/// # Errors
/// [`WebhookError::Failed`] (500) when the whitelist could not be read or is not valid JSON (§7.1);
/// [`WebhookError::Decode`] (400) when a member it writes has a shape no Pod has.
pub fn mutate(
    doc: &mut RawPod<'_>,
    namespace: &str,
    operation: Operation,
    view: &impl PersistentPodStateView,
    whitelist: Option<&WhitelistSource>,
    kruise_namespace: &str,
) -> Result<(), WebhookError> {
    if operation != Operation::Create {
        return Ok(());
    }
    let custom = match whitelist {
        None => Vec::new(),
        Some(WhitelistSource::ReadError(e)) => {
            return Err(WebhookError::Failed(format!(
                "reading ConfigMap {kruise_namespace}/{CONFIG_MAP_NAME}: {e}"
            )));
        }
        Some(source) => whitelist::parse(source).map_err(|e| {
            WebhookError::Failed(format!(
                "invalid {} in ConfigMap {kruise_namespace}/{CONFIG_MAP_NAME}: {e}",
                whitelist::WHITELIST_KEY
            ))
        })?,
    };
    let Some(Controller {
        api_version,
        kind,
        name,
    }) = owner::controller(doc)
    else {
        return Ok(());
    };
    let Some(group) = api_group(&api_version) else {
        return Ok(());
    };
    if !whitelist::allows(&custom, group, &kind) {
        return Ok(());
    }
    // §7.1: a list that fails is no PersistentPodState (OpenKruise logs it and goes on).
    let Ok(states) = view.persistent_pod_states_in(namespace) else {
        return Ok(());
    };
    let Some(state) = following(&states, group, &kind, &name) else {
        return Ok(());
    };
    // No entry, or no topology recorded: the pod's first creation (§7.2 steps 1-2).
    let Some(pod_state) = state
        .status
        .as_ref()
        .and_then(|s| s.pod_states.get(doc.metadata_str("name")))
        .filter(|s| !s.node_topology_labels.is_empty())
    else {
        return Ok(());
    };
    let (selector, preferred) = node_affinity(&state.spec, pod_state);
    if selector.is_empty() && preferred.is_empty() {
        return Ok(());
    }
    let pps_name = state.name().to_owned();
    if !selector.is_empty() {
        write_node_selector(doc, selector)?;
    }
    if !preferred.is_empty() {
        append_preferred(doc, preferred)?;
    }
    doc.set_annotation(INJECTED_ANNOTATION, pps_name);
    Ok(())
}

#[cfg(test)]
mod tests;
