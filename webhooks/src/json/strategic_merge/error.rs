//! Why a strategic-merge patch could not be applied ([`SmpError`]), and the messages of what
//! `StrategicMergePatch` refuses, in Go's words (values written briefly: scalars as JSON, objects as their
//! keys).

use serde_json::{Map, Value};

use super::depth::MAX_DEPTH;

/// Why a strategic-merge patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmpError {
    /// The original or the patch is not a JSON object (or `null`): apimachinery's `ErrBadJSONDoc`.
    #[error("invalid JSON document")]
    BadDocument,
    /// What `StrategicMergePatch` itself refuses, in its words.
    #[error("{0}")]
    Merge(String),
    /// A directive this module does not implement.
    #[error("{0} is not supported by this strategic-merge patch")]
    Unsupported(&'static str),
    /// The patch is nested deeper than [`MAX_DEPTH`].
    #[error("the patch is nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// The patched object does not have the Pod's shape where the schema knows it (where decoding into a
    /// `v1.Pod` fails).
    #[error("{path}: expected {expected}, found {found}")]
    Shape {
        /// Where, as `spec.containers[0].env`.
        path: String,
        /// `an object` or `a list`.
        expected: &'static str,
        /// The JSON type found there.
        found: &'static str,
    },
}

pub(super) fn merge_error(message: impl Into<String>) -> SmpError {
    SmpError::Merge(message.into())
}

/// A value for an error message: scalars as JSON, objects as their keys (never a deep walk).
pub(super) fn brief(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            format!("map[{}]", keys.join(" "))
        }
        Value::Array(list) => format!("[{} elements]", list.len()),
        scalar => scalar.to_string(),
    }
}

pub(super) fn no_merge_key(map: &Map<String, Value>, key: &str) -> SmpError {
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    merge_error(format!(
        "map: map[{}] does not contain declared merge key: {key}",
        keys.join(" ")
    ))
}

pub(super) fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> SmpError {
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    let directive = match directive {
        Value::String(s) => s.clone(),
        other => brief(other),
    };
    merge_error(format!(
        "unknown patch type: {directive} in map: map[{}]",
        keys.join(" ")
    ))
}
