//! RFC 6902 helpers: diffs between raw JSON documents and the base64 wire form. Output is deterministic.

use base64::Engine;
use json_patch::PatchOperation;
use serde_json::Value;

/// The operations that turn `from` into `to` (deterministic for the same inputs).
pub fn diff(from: &Value, to: &Value) -> Vec<PatchOperation> {
    json_patch::diff(from, to).0
}

/// The patch as JSON bytes.
pub fn to_json(ops: &[PatchOperation]) -> Vec<u8> {
    serde_json::to_vec(ops).unwrap_or_else(|_| b"[]".to_vec())
}

/// The patch as the base64 string AdmissionResponse carries.
pub fn encode_base64(ops: &[PatchOperation]) -> String {
    base64::engine::general_purpose::STANDARD.encode(to_json(ops))
}

/// Applies operations to a copy of `doc`.
///
/// # Errors
/// The json-patch error when an operation does not apply.
pub fn apply(doc: &Value, ops: &[PatchOperation]) -> Result<Value, json_patch::PatchError> {
    let mut out = doc.clone();
    json_patch::patch(&mut out, ops)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_then_apply_round_trips_and_keeps_unknown_fields() {
        let from = json!({"metadata": {"name": "p", "creationTimestamp": null, "x-unknown": 1}, "spec": {"a": [1, 2]}});
        let to = json!({"metadata": {"name": "p", "creationTimestamp": null, "x-unknown": 1, "labels": {"k": "v"}}, "spec": {"a": [1, 2, 3]}});
        let ops = diff(&from, &to);
        assert_eq!(apply(&from, &ops).unwrap(), to);
        assert_eq!(diff(&from, &to), ops, "same input, same operations");
    }
}
