//! The patch's directives: `$patch` on an object (read by the merge) and on a list element
//! ([`special_elements`]), `$retainKeys` ([`apply_retain_keys`]), `$deleteFromPrimitiveList/<key>` and
//! `$setElementOrder` (refused); and how a value the patch brings in sheds its nulls and directives
//! ([`discard_nulls`], [`remove_directives`]).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::error::{SmpError, bad_patch_type, merge_error, no_merge_key};
use super::value::go_equal;

pub(super) const DIRECTIVE: &str = "$patch";
pub(super) const RETAIN_KEYS: &str = "$retainKeys";
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// `applyRetainKeysDirective` (with `MergeParallelList`).
pub(super) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(merge_error("invalid patch format of retainKeys"));
    };
    let keep: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !keep.contains(key.as_str()) {
            return Err(merge_error("invalid patch format of retainKeys"));
        }
    }
    original.retain(|key, _| keep.contains(key.as_str()));
    Ok(())
}

/// `discardNullValuesFromPatch`: nulls out of every object (not out of lists).
pub(super) fn discard_nulls(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|_, v| !v.is_null());
                map.values_mut().for_each(walk);
            }
            Value::Array(list) => list.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// `removeDirectives`: `None` for an object with `$patch`, and every such object dropped below.
pub(super) fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                map.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(list) => Some(Value::Array(
            list.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// `mergeSliceWithSpecialElements`: applies the patch's `$patch` elements; gives the original and the
/// patch's other elements (the original is those elements, and the patch empty, after a `replace`).
pub(super) fn special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut rest = Vec::with_capacity(patch.len());
    let mut replace = false;
    for element in patch {
        let Value::Object(map) = &element else {
            unreachable!("every element is an object")
        };
        let Some(directive) = map.get(DIRECTIVE) else {
            rest.push(element);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let value = map.get(key).ok_or_else(|| no_merge_key(map, key))?;
                let mut kept = Vec::with_capacity(original.len());
                for e in original {
                    let matches = match &e {
                        Value::Object(m) => match m.get(key) {
                            Some(v) => go_equal(v, value)?,
                            None => false,
                        },
                        _ => unreachable!("every element is an object"),
                    };
                    if !matches {
                        kept.push(e);
                    }
                }
                original = kept;
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(merge_error(
                    "merging lists cannot yet be specified in the patch",
                ));
            }
            _ => return Err(bad_patch_type(directive, map)),
        }
    }
    Ok(if replace {
        (rest, Vec::new())
    } else {
        (original, rest)
    })
}
