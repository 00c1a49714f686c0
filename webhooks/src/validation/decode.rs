//! Raw JSON fields read the way Go's decoder fills a struct: absent and `null` are the zero value, a value of
//! the wrong JSON type is a [`WebhookError::Decode`] naming the field (answered 400: the apiserver would not
//! have decoded the object). The pod sections read volume sources and probe handlers this way, where no typed
//! model is kept.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::field_error::FieldPath;
use crate::WebhookError;

/// A string field of `obj`; `""` when absent, `null` or not a string.
pub(super) fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An empty object for JSON `null` (Go's zero value).
static EMPTY_OBJECT: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

/// The decode error at `path`.
pub(super) fn decode_error(path: &FieldPath, what: &str) -> WebhookError {
    WebhookError::Decode(format!("decoding {path}: {what}"))
}

/// A JSON object as Go decodes it into a struct: `null` is the zero value, anything else but an object fails.
pub(super) fn as_object<'a>(
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
pub(super) fn opt_str<'a>(
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
pub(super) fn opt_int(
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
pub(super) fn list<'a>(
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
