//! PodUnavailableBudget v1alpha1 ⇄ v1beta1 (spec/podunavailablebudget.md §2.2, §2.4).

use serde_json::{Map, Value};

use super::Direction;
use super::go_text;
use super::object::{self, ANNOTATIONS};

/// The v1alpha1 annotation carrying `spec.protectOperations` (comma-separated).
const PROTECT_OPERATIONS_ANNOTATION: &str = "kruise.io/pub-protect-operations";
/// The v1alpha1 annotation carrying `spec.protectTotalReplicas` (decimal int32).
const PROTECT_TOTAL_REPLICAS_ANNOTATION: &str = "pub.kruise.io/protect-total-replicas";
/// The operations the v1beta1 CRD enum accepts.
const OPERATIONS: [&str; 4] = ["DELETE", "UPDATE", "EVICT", "RESIZE"];

pub(super) fn convert(obj: &mut Map<String, Value>, direction: Direction) -> Result<(), String> {
    match direction {
        Direction::ToBeta => to_beta(obj),
        Direction::ToAlpha => {
            to_alpha(obj);
            Ok(())
        }
    }
}

fn to_beta(obj: &mut Map<String, Value>) -> Result<(), String> {
    let operations = match object::meta_str(obj, ANNOTATIONS, PROTECT_OPERATIONS_ANNOTATION) {
        Some(value) if !value.is_empty() => parse_operations(value)?,
        _ => Vec::new(),
    };
    let total_replicas = match object::meta_str(obj, ANNOTATIONS, PROTECT_TOTAL_REPLICAS_ANNOTATION)
    {
        Some(value) if !value.is_empty() => Some(go_text::parse_int32(value).map_err(|err| {
            format!("failed to parse {PROTECT_TOTAL_REPLICAS_ANNOTATION}: {err}")
        })?),
        _ => None,
    };
    // The annotations stay: they are ordinary metadata in v1beta1 too.
    if (!operations.is_empty() || total_replicas.is_some())
        && let Some(spec) = object::child_or_insert(obj, "spec")
    {
        if !operations.is_empty() {
            spec.insert("protectOperations".into(), Value::from(operations));
        }
        if let Some(total) = total_replicas {
            spec.insert("protectTotalReplicas".into(), Value::from(total));
        }
    }
    // v1beta1 omits observedGeneration when it is 0.
    if let Some(status) = object::child_mut(obj, "status")
        && status.get("observedGeneration").and_then(Value::as_i64) == Some(0)
    {
        status.remove("observedGeneration");
    }
    Ok(())
}

/// Split on `,`, trim, drop empties; anything but the four operations is an error in OpenKruise's words.
fn parse_operations(value: &str) -> Result<Vec<String>, String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|op| !op.is_empty())
        .map(|op| {
            if OPERATIONS.contains(&op) {
                Ok(op.to_owned())
            } else {
                Err(format!(
                    "invalid {PROTECT_OPERATIONS_ANNOTATION} value {}",
                    go_text::quote(op)
                ))
            }
        })
        .collect()
}

fn to_alpha(obj: &mut Map<String, Value>) {
    let (mut operations, mut total_replicas) = (None, None);
    if let Some(spec) = object::child_mut(obj, "spec") {
        operations = object::take(spec, "protectOperations").and_then(|ops| {
            let ops: Vec<&str> = ops.as_array()?.iter().filter_map(Value::as_str).collect();
            (!ops.is_empty()).then(|| ops.join(","))
        });
        total_replicas = object::take(spec, "protectTotalReplicas")
            .as_ref()
            .and_then(object::number_text);
        // No v1alpha1 carrier: lost (spec §2.4).
        spec.remove("ignoredPodSelector");
    }
    for (key, value) in [
        (PROTECT_OPERATIONS_ANNOTATION, operations),
        (PROTECT_TOTAL_REPLICAS_ANNOTATION, total_replicas),
    ] {
        match value {
            Some(value) => object::set_meta(obj, ANNOTATIONS, key, value),
            None => {
                object::remove_meta(obj, ANNOTATIONS, key);
            }
        }
    }
    // v1alpha1 always serialises observedGeneration.
    if let Some(status) = object::child_mut(obj, "status")
        && status.get("observedGeneration").is_none_or(Value::is_null)
    {
        status.insert("observedGeneration".into(), Value::from(0));
    }
}
