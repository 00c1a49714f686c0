//! RFC 6902 patches: our own operation type ([`Op`]), the diff between two JSON trees ([`diff()`]), the
//! patch's JSON text ([`to_json`]) and applying it ([`apply`]). Output is deterministic.
//!
//! An operation's value is a JSON tree or JSON text written ahead ([`Json::Text`]): a sidecar container is
//! written once from its SidecarSet's pre-written members, and copied into the patch as it stands, neither
//! built as a tree nor written again.

use json_patch::PatchOperation;
use serde_json::Value;

use super::write::write_string;

mod diff;
mod op;

pub(crate) use diff::diff_at;
pub use diff::{diff, diff_owned};
pub use op::{Json, Op};
pub(crate) use op::{Step, pointer, push_index};

/// The operations as json-patch's type.
///
/// # Errors
/// As [`Op::to_operation`].
pub fn operations(ops: &[Op]) -> Result<Vec<PatchOperation>, String> {
    ops.iter().map(Op::to_operation).collect()
}

/// Operations from their JSON form (`add`, `remove` and `replace` only): tests and benches write patches so.
///
/// # Errors
/// Not a patch, or an operation of another kind.
pub fn from_json(value: Value) -> Result<Vec<Op>, String> {
    let ops: Vec<PatchOperation> = serde_json::from_value(value).map_err(|e| e.to_string())?;
    ops.into_iter()
        .map(|op| Op::from_operation(op).ok_or_else(|| "only add, remove and replace".to_owned()))
        .collect()
}

/// The patch as JSON bytes.
///
/// The bytes are those serde_json writes for the operations (as json-patch's type); text values are copied
/// as they stand.
pub fn to_json(ops: &[Op]) -> Vec<u8> {
    // Room for a pod create's patch (a few sidecars): no regrowth copies on the common path.
    let mut out = String::with_capacity(8 * 1024);
    out.push('[');
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"op\":\"");
        out.push_str(op.name());
        out.push_str("\",\"path\":");
        write_string(&mut out, op.path());
        if let Some(value) = op.value() {
            out.push_str(",\"value\":");
            value.write(&mut out);
        }
        out.push('}');
    }
    out.push(']');
    out.into_bytes()
}

/// Applies operations to a copy of `doc`.
///
/// # Errors
/// The json-patch error (or a path that is not a JSON pointer) when an operation does not apply.
pub fn apply(doc: &Value, ops: &[Op]) -> Result<Value, String> {
    let mut out = doc.clone();
    json_patch::patch(&mut out, &operations(ops)?).map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use json_patch::jsonptr::PointerBuf;
    use serde_json::json;

    #[test]
    fn pointers_encode_tilde_and_slash_and_write_indexes() {
        let p = pointer([
            Step::Key("metadata"),
            Step::Key("annotations"),
            Step::Key("a/b~c"),
            Step::Index(12),
        ]);
        assert_eq!(p, "/metadata/annotations/a~1b~0c/12");
        let tokens: Vec<String> = PointerBuf::parse(p)
            .unwrap()
            .tokens()
            .map(|t| t.decoded().into_owned())
            .collect();
        assert_eq!(tokens, ["metadata", "annotations", "a/b~c", "12"]);
        assert_eq!(pointer([]), "");
        assert_eq!(
            pointer([
                Step::Key("~kruise.io/sidecarset-hash-without-image~/"),
                Step::Key("")
            ]),
            "/~0kruise.io~1sidecarset-hash-without-image~0~1/"
        );
        assert_eq!(
            pointer([Step::Index(0), Step::Index(10), Step::Index(usize::MAX)]),
            "/0/10/18446744073709551615"
        );
    }

    #[test]
    fn the_patch_is_written_as_serde_json_writes_it() {
        let mut ops = from_json(json!([
            {"op": "add", "path": "/a~1b/c~0d/0", "value": {"s": "q\"b\\c\u{1}\u{7f}é\n", "n": [1, -2, 1.5, 1e300, 18446744073709551615u64], "t": true, "f": false, "z": null, "e": {}, "l": []}},
            {"op": "remove", "path": "/x"},
            {"op": "replace", "path": "/\"q", "value": "v"},
        ]))
        .unwrap();
        // Text is copied as it stands.
        ops.push(Op::Add {
            path: "/t".into(),
            value: Json::Text(r#"{"a":[1,"x"]}"#.into()),
        });
        assert_eq!(
            String::from_utf8(to_json(&ops)).unwrap(),
            serde_json::to_string(&operations(&ops).unwrap()).unwrap()
        );
        assert!(
            from_json(json!([{"op": "move", "from": "/a", "path": "/b"}])).is_err(),
            "we never answer move"
        );
        assert_eq!(to_json(&[]), b"[]");
    }
}
