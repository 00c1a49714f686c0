//! RFC 6902 patches: our own operation type ([`Op`]), the diff between two JSON trees ([`diff()`]), the
//! patch's JSON text ([`to_json`]) and applying it ([`apply`]). Output is deterministic.
//!
//! An operation's value is a JSON tree or JSON text written ahead ([`Json::Text`]): a sidecar container is
//! written once from its SidecarSet's pre-written members, and copied into the patch as it stands, neither
//! built as a tree nor written again.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::Value;

use super::cursor::valid_tree;
use super::scan;
use super::write::{write_string, write_value};

mod diff;

pub(crate) use diff::diff_at;
pub use diff::{diff, diff_owned};

/// One step of a path.
#[derive(Clone, Copy)]
pub(crate) enum Step<'a> {
    /// An object member (not encoded).
    Key(&'a str),
    /// A list element.
    Index(usize),
}

/// A value an operation carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// A JSON tree.
    Value(Value),
    /// Valid JSON text, copied as it stands: written by this crate as serde_json writes (a sidecar), or an
    /// element of the request as received.
    Text(Box<str>),
    /// Valid JSON text as [`Json::Text`], shared with the object it was written for (a sidecar injected as
    /// its SidecarSet has it): each patch holds it without a copy.
    Shared(std::sync::Arc<str>),
}

impl Json {
    /// The value as a tree (text is parsed).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Value(v) => v.clone(),
            Self::Text(t) => valid_tree(t),
            Self::Shared(t) => valid_tree(t),
        }
    }

    /// Appends the value as JSON (a tree compact, as serde_json writes it; text as it stands).
    pub(crate) fn write(&self, out: &mut String) {
        match self {
            Self::Value(v) => write_value(out, v),
            Self::Text(t) => out.push_str(t),
            Self::Shared(t) => out.push_str(t),
        }
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

/// One RFC 6902 operation: the three kinds our webhooks answer with. Paths are JSON pointers, encoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `add`.
    Add {
        /// Where.
        path: String,
        /// What.
        value: Json,
    },
    /// `remove`.
    Remove {
        /// Where.
        path: String,
    },
    /// `replace`.
    Replace {
        /// Where.
        path: String,
        /// What.
        value: Json,
    },
}

impl Op {
    /// `op`: `add`, `remove` or `replace`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Add { .. } => "add",
            Self::Remove { .. } => "remove",
            Self::Replace { .. } => "replace",
        }
    }

    /// `path`.
    pub fn path(&self) -> &str {
        match self {
            Self::Add { path, .. } | Self::Remove { path } | Self::Replace { path, .. } => path,
        }
    }

    /// `value` (none for `remove`).
    pub fn value(&self) -> Option<&Json> {
        match self {
            Self::Add { value, .. } | Self::Replace { value, .. } => Some(value),
            Self::Remove { .. } => None,
        }
    }

    /// The operation as json-patch's type (text values parsed), to apply it.
    ///
    /// # Errors
    /// A path that is not a JSON pointer (every path this crate writes is one).
    pub fn to_operation(&self) -> Result<PatchOperation, String> {
        let path = PointerBuf::parse(self.path().to_owned()).map_err(|e| e.to_string())?;
        Ok(match self {
            Self::Add { value, .. } => PatchOperation::Add(AddOperation {
                path,
                value: value.to_value(),
            }),
            Self::Remove { .. } => PatchOperation::Remove(RemoveOperation { path }),
            Self::Replace { value, .. } => PatchOperation::Replace(ReplaceOperation {
                path,
                value: value.to_value(),
            }),
        })
    }

    /// An operation from json-patch's type; `None` for `move`, `copy` and `test`, which we never answer.
    pub fn from_operation(op: PatchOperation) -> Option<Self> {
        match op {
            PatchOperation::Add(o) => Some(Self::Add {
                path: o.path.as_str().to_owned(),
                value: Json::Value(o.value),
            }),
            PatchOperation::Remove(o) => Some(Self::Remove {
                path: o.path.as_str().to_owned(),
            }),
            PatchOperation::Replace(o) => Some(Self::Replace {
                path: o.path.as_str().to_owned(),
                value: Json::Value(o.value),
            }),
            PatchOperation::Move(_) | PatchOperation::Copy(_) | PatchOperation::Test(_) => None,
        }
    }
}

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

/// The JSON pointer of `steps`, written in one string (keys encoded per RFC 6901 §3: `~` as `~0`, `/` as
/// `~1`).
pub(crate) fn pointer<'s>(steps: impl IntoIterator<Item = Step<'s>>) -> String {
    let mut out = String::with_capacity(64);
    for step in steps {
        out.push('/');
        match step {
            Step::Key(k) => {
                // Copied in runs between the two special bytes, found eight at a time (ASCII, so every cut
                // is a char boundary).
                let b = k.as_bytes();
                let mut start = 0;
                loop {
                    let i = scan::find(b, start, scan::Stop::Either(b'~', b'/'));
                    out.push_str(&k[start..i]);
                    match b.get(i) {
                        Some(b'~') => out.push_str("~0"),
                        Some(_) => out.push_str("~1"),
                        None => break,
                    }
                    start = i + 1;
                }
            }
            Step::Index(i) => push_index(&mut out, i),
        }
    }
    out
}

/// Appends the decimal digits of `i`, without the formatting machinery (a pointer per injected element).
pub(crate) fn push_index(out: &mut String, i: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
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
