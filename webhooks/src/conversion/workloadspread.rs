//! WorkloadSpread v1alpha1 ⇄ v1beta1 (spec/workloadspread.md §2.1, §2.2, §2.5).

use serde_json::{Map, Value};

use super::Direction;
use super::object;

/// (v1alpha1 name, v1beta1 name) of the renamed subset fields.
const SUBSET_RENAMES: [(&str, &str); 2] = [
    ("requiredNodeSelectorTerm", "requiredNodeSelector"),
    ("preferredNodeSelectorTerms", "preferredNodeSelector"),
];
/// The reason an alpha condition without one gets (metav1.Condition requires a non-empty reason).
const DEFAULT_REASON: &str = "Unknown";

pub(super) fn convert(obj: &mut Map<String, Value>, direction: Direction) -> Result<(), String> {
    if let Some(spec) = object::child_mut(obj, "spec") {
        for subset in object::objects_in_array(spec, "subsets") {
            for (alpha, beta) in SUBSET_RENAMES {
                match direction {
                    Direction::ToBeta => object::rename(subset, alpha, beta),
                    Direction::ToAlpha => object::rename(subset, beta, alpha),
                }
            }
        }
    }
    let convert_condition = match direction {
        Direction::ToBeta => condition_to_beta,
        Direction::ToAlpha => condition_to_alpha,
    };
    if let Some(status) = object::child_mut(obj, "status") {
        for subset_status in object::objects_in_array(status, "subsetStatuses") {
            object::objects_in_array(subset_status, "conditions").for_each(convert_condition);
        }
        // The versioned lists hold the same subset-status type, conditions included.
        if let Some(versioned) = object::child_mut(status, "versionedSubsetStatuses") {
            for list in versioned.values_mut().filter_map(Value::as_array_mut) {
                for subset_status in list.iter_mut().filter_map(Value::as_object_mut) {
                    object::objects_in_array(subset_status, "conditions")
                        .for_each(convert_condition);
                }
            }
        }
    }
    Ok(())
}

/// Alpha `{type, status, lastTransitionTime?, reason?, message?}` to a metav1.Condition.
fn condition_to_beta(condition: &mut Map<String, Value>) {
    if !matches!(condition.get("reason"), Some(Value::String(r)) if !r.is_empty()) {
        condition.insert("reason".into(), Value::String(DEFAULT_REASON.into()));
    }
    // observedGeneration = 0, which metav1.Condition omits.
    condition.remove("observedGeneration");
    // metav1.Condition always serialises message (required in the v1beta1 schema).
    if condition.get("message").is_none_or(Value::is_null) {
        condition.insert("message".into(), Value::String(String::new()));
    }
}

/// A metav1.Condition to the alpha shape: no observedGeneration, message omitted when empty.
fn condition_to_alpha(condition: &mut Map<String, Value>) {
    condition.remove("observedGeneration");
    if matches!(condition.get("message"), Some(Value::String(m)) if m.is_empty()) {
        condition.remove("message");
    }
}
