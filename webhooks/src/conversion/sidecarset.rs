//! SidecarSet v1alpha1 ⇄ v1beta1 (spec/sidecarset.md §2).

use serde_json::{Map, Value, json};

use super::Direction;
use super::object::{self, LABELS};

/// The v1alpha1 label that carries v1beta1 `spec.customVersion`.
const CUSTOM_VERSION_LABEL: &str = "apps.kruise.io/sidecarset-custom-version";
/// The namespace-name label a v1alpha1 `spec.namespace` is turned into.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

pub(super) fn convert(obj: &mut Map<String, Value>, direction: Direction) -> Result<(), String> {
    match direction {
        Direction::ToBeta => to_beta(obj),
        Direction::ToAlpha => to_alpha(obj),
    }
    Ok(())
}

fn to_beta(obj: &mut Map<String, Value>) {
    let custom_version = object::remove_meta(obj, LABELS, CUSTOM_VERSION_LABEL);
    let spec = if custom_version.is_some() {
        object::child_or_insert(obj, "spec")
    } else {
        object::child_mut(obj, "spec")
    };
    let Some(spec) = spec else { return };
    // spec.namespace wins over an alpha namespaceSelector; an empty one leaves the selector as it is.
    if let Some(Value::String(namespace)) = spec.remove("namespace")
        && !namespace.is_empty()
    {
        spec.insert(
            "namespaceSelector".into(),
            json!({"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}),
        );
    }
    if let Some(version) = custom_version {
        match version {
            Value::String(v) if !v.is_empty() => {
                spec.insert("customVersion".into(), Value::String(v));
            }
            _ => {
                spec.remove("customVersion");
            }
        }
    }
}

fn to_alpha(obj: &mut Map<String, Value>) {
    let Some(spec) = object::child_mut(obj, "spec") else {
        return;
    };
    // namespaceSelector is copied as is; spec.namespace stays empty.
    if let Some(Value::String(version)) = spec.remove("customVersion")
        && !version.is_empty()
    {
        object::set_meta(obj, LABELS, CUSTOM_VERSION_LABEL, version);
    }
}
