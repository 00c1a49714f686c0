//! Raw-JSON editing helpers shared by the per-kind rules: child objects, renames, labels and annotations.
//!
//! They are lenient on purpose: the apiserver validated the object against its version's schema before
//! sending it, so a child of the wrong type is left alone rather than reported.

use serde_json::{Map, Value};

/// `metadata.labels`.
pub(super) const LABELS: &str = "labels";
/// `metadata.annotations`.
pub(super) const ANNOTATIONS: &str = "annotations";

/// The child object at `key`, if it is an object.
pub(super) fn child_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key)?.as_object_mut()
}

/// The child object at `key`, created when missing or null; `None` when it holds something else.
pub(super) fn child_or_insert<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

/// Every element of the array at `key` that is an object.
pub(super) fn objects_in_array<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// Moves the value at `from` to `to` (replacing what `to` held); nothing happens when `from` is absent.
pub(super) fn rename(map: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = map.remove(from) {
        map.insert(to.to_owned(), value);
    }
}

/// Removes `key` and returns it unless it was absent or null.
pub(super) fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.remove(key).filter(|v| !v.is_null())
}

/// `metadata.<field>[key]` when it is a string.
pub(super) fn meta_str<'a>(obj: &'a Map<String, Value>, field: &str, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.get(key)?.as_str()
}

/// Sets `metadata.<field>[key] = value`, creating metadata and the map as needed.
pub(super) fn set_meta(obj: &mut Map<String, Value>, field: &str, key: &str, value: String) {
    if let Some(map) =
        child_or_insert(obj, "metadata").and_then(|meta| child_or_insert(meta, field))
    {
        map.insert(key.to_owned(), Value::String(value));
    }
}

/// Removes `metadata.<field>[key]`; an emptied map is removed too (Go's `omitempty` on ObjectMeta maps).
pub(super) fn remove_meta(obj: &mut Map<String, Value>, field: &str, key: &str) -> Option<Value> {
    let meta = child_mut(obj, "metadata")?;
    let map = child_mut(meta, field)?;
    let removed = map.remove(key);
    if map.is_empty() {
        meta.remove(field);
    }
    removed
}

/// `namespace/name`, or `name` for cluster-scoped objects, for error messages.
pub(super) fn display_name(obj: &Map<String, Value>) -> String {
    let meta = obj.get("metadata");
    let field = |key: &str| {
        meta.and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let name = match (field("name"), field("generateName")) {
        ("", "") => "<unnamed>".to_owned(),
        ("", prefix) => format!("{prefix}<generated>"),
        (name, _) => name.to_owned(),
    };
    match field("namespace") {
        "" => name,
        namespace => format!("{namespace}/{name}"),
    }
}

/// A JSON type name for error messages.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON number as Go's `strconv.FormatInt` / `intstr.String()` print it (integers without a fraction).
pub(super) fn number_text(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) => Some(n.as_i64().map_or_else(|| n.to_string(), |i| i.to_string())),
        _ => None,
    }
}
