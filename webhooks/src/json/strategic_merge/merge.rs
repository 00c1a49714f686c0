//! The merge itself, recursive along the patch: two objects (`mergeMap`, [`merge_map`]) and two lists of a
//! field with `patchStrategy: merge` (`mergeSlice`), whose elements merge as objects again.

use serde_json::{Map, Value};

use super::directives::{
    DELETE_FROM_PRIMITIVE_LIST, DIRECTIVE, SET_ELEMENT_ORDER, apply_retain_keys, discard_nulls,
    remove_directives, special_elements,
};
use super::elements::{
    deduplicate_scalars, delete_from_list, normalize_order, partition, position,
};
use super::error::{SmpError, bad_patch_type, merge_error, no_merge_key};
use super::schema::{ListMeta, Schema};
use super::value::{go_equal, kind};

/// `mergeMap` with `MergeParallelList` and `IgnoreUnmatchedNulls` (what `StrategicMergePatch` sets).
pub(super) fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema,
) -> Result<Map<String, Value>, SmpError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    if patch.keys().any(|k| k.starts_with(SET_ELEMENT_ORDER)) {
        return Err(SmpError::Unsupported("$setElementOrder"));
    }
    for (key, patch_value) in patch {
        let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            // extractKey: "$deleteFromPrimitiveList/<key>", split at the first '/'.
            Some(rest) => match rest.strip_prefix('/') {
                Some(name) => (name.to_owned(), true),
                None => return Err(merge_error("invalid patch format of primitive list")),
            },
            None => (key, false),
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let current = match original.get_mut(&key) {
            Some(current) if kind(current) == kind(&patch_value) => current,
            _ => {
                // Absent, or of another type: the patch's value, cleaned (not for a deletion list).
                if !delete_list {
                    match remove_directives(discard_nulls(patch_value)) {
                        Some(value) => original.insert(key, value),
                        None => original.remove(&key),
                    };
                }
                continue;
            }
        };
        match patch_value {
            Value::Object(patch_map) => {
                let below = schema.object(&key)?;
                let Value::Object(current_map) = std::mem::take(current) else {
                    unreachable!("same kind")
                };
                *current = Value::Object(merge_map(current_map, patch_map, below)?);
            }
            Value::Array(patch_list) => {
                let meta = schema.list(&key)?;
                if meta.merge || delete_list {
                    let Value::Array(current_list) = std::mem::take(current) else {
                        unreachable!("same kind")
                    };
                    *current =
                        Value::Array(merge_list(current_list, patch_list, &meta, delete_list)?);
                } else {
                    *current = Value::Array(patch_list);
                }
            }
            scalar => *current = scalar,
        }
    }
    Ok(original)
}

/// `sliceElementType`: the one JSON type of every element of both lists.
fn element_kind(original: &[Value], patch: &[Value]) -> Result<&'static str, SmpError> {
    let mut elements = original.iter().chain(patch);
    let Some(first) = elements.next() else {
        return Err(merge_error("no elements in any of the given slices"));
    };
    let first = kind(first);
    if first == "list" {
        return Err(merge_error("lists of lists are not supported"));
    }
    if first == "null" || elements.any(|e| kind(e) != first) {
        return Err(merge_error(format!(
            "list element types are not identical: {} and {} elements",
            original.len(),
            patch.len()
        )));
    }
    Ok(first)
}

/// `mergeSlice`: two lists of a field with `patchStrategy: merge` (or a deletion list).
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: &ListMeta,
    delete_list: bool,
) -> Result<Vec<Value>, SmpError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    if element_kind(&original, &patch)? != "object" {
        if delete_list {
            return delete_from_list(original, &patch);
        }
        let server_order = original.clone();
        let mut both = original;
        both.extend(patch.iter().cloned());
        let merged = deduplicate_scalars(both)?;
        let (ours, server_only) = partition(merged, |v| position(&patch, v))?;
        return normalize_order(ours, server_only, &patch, &server_order, |order, v| {
            position(order, v)
        });
    }
    if meta.key.is_empty() {
        let name = match meta.elements {
            Schema::NotStruct(kind) => kind,
            _ => "struct",
        };
        return Err(merge_error(format!(
            "cannot merge lists without merge key for {name}"
        )));
    }
    let key = meta.key;
    let (original, patch) = special_elements(original, patch, key)?;
    // The original's merge-key values after the deletions: the order the original's elements keep.
    let server_order = original
        .iter()
        .map(|e| key_value(e, key).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let patch_order = patch
        .iter()
        .map(|e| key_value(e, key).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let merged = merge_elements(original, patch, key, meta.elements)?;
    let (ours, server_only) = partition(merged, |e| position(&patch_order, key_value(e, key)?))?;
    normalize_order(
        ours,
        server_only,
        &patch_order,
        &server_order,
        |order, e| position(order, key_value(e, key)?),
    )
}

/// An element's merge-key value; an element that is not an object, or lacks it, is an error.
fn key_value<'v>(element: &'v Value, key: &str) -> Result<&'v Value, SmpError> {
    match element {
        Value::Object(map) => map.get(key).ok_or_else(|| no_merge_key(map, key)),
        other => Err(merge_error(format!(
            "expected a map[string]interface {{}}, but received a {}",
            kind(other)
        ))),
    }
}

/// `mergeSliceWithoutSpecialElements`: each patch element merged into the original element with its
/// merge-key value, or appended as it stands.
fn merge_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    schema: Schema,
) -> Result<Vec<Value>, SmpError> {
    for element in patch {
        let value = key_value(&element, key)?;
        let mut found = None;
        for (i, e) in original.iter().enumerate() {
            if let Value::Object(m) = e
                && let Some(v) = m.get(key)
                && go_equal(v, value)?
            {
                found = Some(i);
                break;
            }
        }
        let Value::Object(patch_map) = element else {
            unreachable!("every element is an object")
        };
        match found {
            Some(i) => {
                let Value::Object(current) = std::mem::take(&mut original[i]) else {
                    unreachable!("every element is an object")
                };
                original[i] = Value::Object(merge_map(current, patch_map, schema)?);
            }
            None => original.push(Value::Object(patch_map)),
        }
    }
    Ok(original)
}
