//! Values as Go tells apart and compares what `encoding/json` decoded into `interface{}`: their JSON type
//! ([`kind`]) and Go's `==` ([`go_equal`]), numbers as `float64`.

use serde_json::Value;

use super::error::{SmpError, merge_error};

/// The JSON type of a value, as Go's `reflect.TypeOf` of what `encoding/json` decodes tells them apart.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Go's `==` on two decoded `interface{}` values; objects or lists on both sides are not comparable (Go
/// panics there).
pub(super) fn go_equal(a: &Value, b: &Value) -> Result<bool, SmpError> {
    Ok(match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)) => {
            return Err(merge_error(format!(
                "cannot compare two {}s as merge-key values or list elements",
                kind(a)
            )));
        }
        _ => a == b,
    })
}
