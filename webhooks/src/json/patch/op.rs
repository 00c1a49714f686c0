//! One RFC 6902 operation as this crate answers it ([`Op`]), the value it carries ([`Json`]: a tree, or JSON
//! text written ahead) and the JSON pointers of its paths ([`pointer`]): what the diff ([`super::diff`])
//! and the patch's text ([`super::to_json`]) are made of, in a module of their own below both.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::Value;

use crate::json::cursor::valid_tree;
use crate::json::scan;
use crate::json::write::write_value;

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
