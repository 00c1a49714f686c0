//! SidecarSet hashes (spec/sidecarset.md §7.2, §12): `kruise.io/sidecarset-hash` and
//! `kruise.io/sidecarset-hash-without-image`, byte-exact with OpenKruise's `sidecarcontrol.SidecarSetHash`.
//!
//! The hash input is `{"containers":[…]}` (plus `"initContainers":[…]`, all of them, as soon as one init
//! container has `restartPolicy: Always`), encoded as Go's `encoding/json` encodes k8s.io/api v0.32
//! `[]SidecarContainer`:
//! - fields in Go declaration order (the tables in `hash/go_types.rs` cite their sources);
//! - Go's `omitempty` rules: non-pointer structs such as `resources` and `upgradeStrategy` are always
//!   written, nil pointers are omitted, a pointer to `false` or `0` is written, fields without `omitempty`
//!   are written with their zero value (`"divisor":"0"`, `"service":null`);
//! - map keys sorted, quantities in canonical form ([`crate::quantity`]; already canonical text is kept as is);
//! - `<`, `>`, `&`, U+2028, U+2029 escaped as `\u003c`…;
//! - fields the Go types do not have dropped, as Go's decoder drops them (unknown keys, and fields newer
//!   than k8s.io/api v0.32).
//!
//! The SHA-256 hex digest is then mapped character by character through `bcdfghjklmnpqrstvwxz2456789`.
//!
//! Entry points: [`sidecarset_hash`], [`sidecarset_hash_without_image`], [`hash_input`] (the exact text
//! hashed), [`encode_containers`], and [`check_containers`], which reports what Go's decoder would refuse.
//!
//! Values Go could not decode (a string where Go has a `bool`, an invalid quantity…) make the defaulting
//! webhook answer 400 before any hash is computed ([`check_containers`]). The hash functions themselves are
//! total: they treat such a value as absent. A quantity given as a JSON number is read from serde_json's
//! number (Go reads the literal text: `1e3` would print as `1e3` in Go and `1k` here); quantities are
//! strings in practice.

mod go_types;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::quantity;

use self::go_types::{Field, How, SIDECAR_CONTAINERS, Struct, Ty};

/// What Go's decoder would refuse in a container (the defaulting webhook answers it with 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoDecodeError {
    /// A JSON value of the wrong kind for the Go field.
    #[error(
        "json: cannot unmarshal {found} into Go struct field {go_struct}.{field} of type {go_type}"
    )]
    Type {
        /// The JSON kind found (`string`, `number 1.5`, `object`, …).
        found: String,
        /// The Go struct holding the field.
        go_struct: &'static str,
        /// The JSON path of the field from the SidecarSet (`spec.containers.stdin`).
        field: String,
        /// The Go type expected.
        go_type: &'static str,
    },
    /// A quantity Go's `resource.ParseQuantity` refuses (apimachinery's message).
    #[error("{source}")]
    Quantity {
        /// The JSON path of the quantity.
        field: String,
        /// Why it is not a quantity.
        #[source]
        source: quantity::QuantityError,
    },
}

/// `rand.SafeEncodeString`'s alphabet: no vowels, no confusable characters.
const ALPHANUMS: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

fn go_type_name(ty: &Ty) -> &'static str {
    match ty {
        Ty::Str => "string",
        Ty::I32 => "int32",
        Ty::I64 => "int64",
        Ty::Bool => "bool",
        Ty::Quantity => "resource.Quantity",
        Ty::IntOrString => "intstr.IntOrString",
        Ty::StrSlice => "[]string",
        Ty::ResourceList => "v1.ResourceList",
        Ty::Slice(_) => "slice",
        Ty::Struct(s) => s.go_name,
    }
}

fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => "bool".to_owned(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".to_owned(),
        Value::Array(_) => "array".to_owned(),
        Value::Object(_) => "object".to_owned(),
    }
}

/// Appends `s` as Go's `encoding/json` writes a string (HTML-safe escaping).
fn push_go_string(out: &mut String, s: &str) {
    out.push_str(&crate::json::go::to_string(s));
}

/// The number as Go prints an integer field, when `n` is one Go's decoder accepts for `ty`.
fn go_integer(n: &serde_json::Number, ty: &Ty) -> Option<String> {
    let v = n.as_i64()?;
    match ty {
        Ty::I32 | Ty::IntOrString if i32::try_from(v).is_err() => None,
        _ => Some(v.to_string()),
    }
}

/// The encoder: a walk of the Go type tables over a JSON value.
struct Encoder {
    out: String,
    /// Report the first undecodable value instead of treating it as absent.
    strict: bool,
    /// JSON field names from the SidecarSet down to the current value.
    path: Vec<&'static str>,
    /// The Go struct whose field is being read (named in decode errors).
    go_struct: &'static str,
}

type Step = Result<(), GoDecodeError>;

impl Encoder {
    fn new(strict: bool, root: &'static str) -> Self {
        Self {
            out: String::new(),
            strict,
            path: vec!["spec", root],
            go_struct: "SidecarSetSpec",
        }
    }

    fn type_error(&self, found: &Value, ty: &Ty) -> GoDecodeError {
        GoDecodeError::Type {
            found: json_kind(found),
            go_struct: self.go_struct,
            field: self.path.join("."),
            go_type: go_type_name(ty),
        }
    }

    /// `v` when Go's decoder accepts it for `ty`; `None` for absent and `null` (Go's zero value), and for
    /// undecodable values when not strict.
    fn accept<'v>(
        &self,
        ty: &Ty,
        v: Option<&'v Value>,
    ) -> Result<Option<&'v Value>, GoDecodeError> {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let ok = match (ty, v) {
            (Ty::Str, Value::String(_)) | (Ty::Bool, Value::Bool(_)) => true,
            (Ty::I32 | Ty::I64, Value::Number(n)) => go_integer(n, ty).is_some(),
            (Ty::IntOrString, Value::String(_)) => true,
            (Ty::IntOrString, Value::Number(n)) => go_integer(n, ty).is_some(),
            (Ty::Quantity, Value::String(s)) => {
                return self.accept_quantity(v, s.trim());
            }
            (Ty::Quantity, Value::Number(n)) => return self.accept_quantity(v, &n.to_string()),
            (Ty::StrSlice | Ty::Slice(_), Value::Array(_)) => true,
            (Ty::ResourceList | Ty::Struct(_), Value::Object(_)) => true,
            _ => false,
        };
        if ok {
            Ok(Some(v))
        } else if self.strict {
            Err(self.type_error(v, ty))
        } else {
            Ok(None)
        }
    }

    fn accept_quantity<'v>(
        &self,
        v: &'v Value,
        text: &str,
    ) -> Result<Option<&'v Value>, GoDecodeError> {
        match quantity::Quantity::parse(text) {
            Ok(_) => Ok(Some(v)),
            // Valid for Go but beyond our arithmetic: hash the text as given.
            Err(quantity::QuantityError::TooPrecise(_)) => Ok(Some(v)),
            Err(source) if self.strict => Err(GoDecodeError::Quantity {
                field: self.path.join("."),
                source,
            }),
            Err(_) => Ok(None),
        }
    }

    /// Writes the value of a field (or slice element) of type `ty`; `v` is `None` for Go's zero value.
    fn value(&mut self, ty: &Ty, v: Option<&Value>) -> Step {
        match (ty, v) {
            (Ty::Struct(s), v) => return self.structure(s, v.and_then(Value::as_object)),
            (Ty::Str, Some(Value::String(s))) => push_go_string(&mut self.out, s),
            (Ty::Str, _) => self.out.push_str("\"\""),
            (Ty::Bool, Some(Value::Bool(true))) => self.out.push_str("true"),
            (Ty::Bool, _) => self.out.push_str("false"),
            (Ty::I32 | Ty::I64 | Ty::IntOrString, Some(Value::Number(n))) => {
                self.out
                    .push_str(&go_integer(n, ty).unwrap_or_else(|| "0".to_owned()));
            }
            (Ty::IntOrString, Some(Value::String(s))) => push_go_string(&mut self.out, s),
            (Ty::I32 | Ty::I64 | Ty::IntOrString, _) => self.out.push('0'),
            (Ty::Quantity, Some(v)) => self.quantity(v),
            (Ty::Quantity, None) => self.out.push_str("\"0\""),
            (Ty::StrSlice, Some(Value::Array(items))) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let item = self.accept(&Ty::Str, Some(item))?;
                    self.value(&Ty::Str, item)?;
                }
                self.out.push(']');
            }
            (Ty::Slice(elem), Some(Value::Array(items))) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let item = self.accept(elem, Some(item))?;
                    self.value(elem, item)?;
                }
                self.out.push(']');
            }
            (Ty::ResourceList, Some(Value::Object(map))) => {
                // Go sorts map keys; do not rely on serde_json's map order.
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                self.out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    push_go_string(&mut self.out, key);
                    self.out.push(':');
                    let item = self.accept(&Ty::Quantity, map.get(key))?;
                    self.value(&Ty::Quantity, item)?;
                }
                self.out.push('}');
            }
            (Ty::StrSlice | Ty::Slice(_) | Ty::ResourceList, _) => self.out.push_str("null"),
        }
        Ok(())
    }

    fn quantity(&mut self, v: &Value) {
        let text = match v {
            Value::String(s) => s.trim().to_owned(),
            other => other.to_string(),
        };
        let canonical = quantity::canonical(&text).unwrap_or(text);
        push_go_string(&mut self.out, &canonical);
    }

    /// Whether Go's `omitempty` drops this (already accepted) value.
    fn is_empty(ty: &Ty, v: Option<&Value>) -> bool {
        match (ty, v) {
            // Structs, Quantity and IntOrString are never "empty" for encoding/json.
            (Ty::Struct(_) | Ty::Quantity | Ty::IntOrString, _) => false,
            (_, None) => true,
            (_, Some(Value::String(s))) => s.is_empty(),
            (_, Some(Value::Number(n))) => n.as_i64() == Some(0),
            (_, Some(Value::Bool(b))) => !b,
            (_, Some(Value::Array(a))) => a.is_empty(),
            (_, Some(Value::Object(m))) => m.is_empty(),
            (_, Some(Value::Null)) => true,
        }
    }

    fn structure(&mut self, s: &'static Struct, obj: Option<&Map<String, Value>>) -> Step {
        self.out.push('{');
        let outer = std::mem::replace(&mut self.go_struct, s.go_name);
        let mut first = true;
        for field in s.fields {
            let Field { json, ty, how } = field;
            self.path.push(*json);
            let v = self.accept(ty, obj.and_then(|o| o.get(*json)))?;
            let write = match how {
                How::Value | How::PtrAlways => true,
                How::OmitEmpty => !Self::is_empty(ty, v),
                How::Ptr => v.is_some(),
            };
            if write {
                if !first {
                    self.out.push(',');
                }
                first = false;
                push_go_string(&mut self.out, json);
                self.out.push(':');
                if *how == How::PtrAlways && v.is_none() {
                    self.out.push_str("null");
                } else {
                    self.value(ty, v)?;
                }
            }
            self.path.pop();
        }
        self.go_struct = outer;
        self.out.push('}');
        Ok(())
    }

    /// A `[]SidecarContainer` field of the spec: `null` when absent (a nil slice), else the list.
    fn containers(&mut self, list: Option<&Value>) -> Step {
        let list = self.accept(&SIDECAR_CONTAINERS, list)?;
        self.value(&SIDECAR_CONTAINERS, list)
    }
}

/// `[]SidecarContainer` as Go's `json.Marshal` writes it (the hash encoding; see the module docs). Values Go
/// could not decode are treated as absent.
pub fn encode_containers(containers: &[Value]) -> String {
    let mut enc = Encoder::new(false, "containers");
    // Not strict: cannot fail.
    let _ = enc.value(
        &SIDECAR_CONTAINERS,
        Some(&Value::Array(containers.to_vec())),
    );
    enc.out
}

/// Checks `spec.containers` and `spec.initContainers` the way Go's decoder reads them into
/// `[]SidecarContainer`.
///
/// # Errors
/// The first value Go's decoder would refuse, with Go's wording.
pub fn check_containers(spec: &Value) -> Result<(), GoDecodeError> {
    for key in ["containers", "initContainers"] {
        let mut enc = Encoder::new(true, key);
        enc.containers(spec.get(key))?;
    }
    Ok(())
}

fn is_native_sidecar(container: &Value) -> bool {
    container.get("restartPolicy").and_then(Value::as_str) == Some("Always")
}

/// The exact text hashed for `spec` (a SidecarSet `spec`, v1alpha1 or v1beta1): `{"containers":…}`, plus
/// `"initContainers"` (all of them) when any init container is a native sidecar (§7.2, §12).
pub fn hash_input(spec: &Value) -> String {
    let mut enc = Encoder::new(false, "containers");
    enc.out.push_str("{\"containers\":");
    let _ = enc.containers(spec.get("containers"));
    let inits = spec.get("initContainers").and_then(Value::as_array);
    if inits.is_some_and(|list| list.iter().any(is_native_sidecar)) {
        enc.path = vec!["spec", "initContainers"];
        enc.out.push_str(",\"initContainers\":");
        let _ = enc.containers(spec.get("initContainers"));
    }
    enc.out.push('}');
    enc.out
}

/// `rand.SafeEncodeString(fmt.Sprintf("%x", sha256.Sum256(data)))`.
fn safe_encoded_sha256(data: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    Sha256::digest(data.as_bytes())
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0x0f)]])
        .map(|c| char::from(ALPHANUMS[usize::from(c) % ALPHANUMS.len()]))
        .collect()
}

/// `kruise.io/sidecarset-hash` of a SidecarSet `spec` (§7.2).
pub fn sidecarset_hash(spec: &Value) -> String {
    safe_encoded_sha256(&hash_input(spec))
}

/// `kruise.io/sidecarset-hash-without-image`: the hash with every container's and init container's `image`
/// cleared (so omitted) (§7.2).
pub fn sidecarset_hash_without_image(spec: &Value) -> String {
    let mut spec = spec.clone();
    for key in ["containers", "initContainers"] {
        if let Some(list) = spec.get_mut(key).and_then(Value::as_array_mut) {
            for c in list.iter_mut().filter_map(Value::as_object_mut) {
                c.remove("image");
            }
        }
    }
    sidecarset_hash(&spec)
}
