//! Text as OpenKruise's Go code writes it: JSON as `encoding/json` marshals it (compact, object keys sorted,
//! `<`, `>`, `&`, U+2028, U+2029 escaped; [`to_string`], and [`marshal_decoded`] for what it decoded into
//! `interface{}`), strings quoted as `strconv.Quote` (`%q`), and the errors `json.Unmarshal` returns
//! ([`syntax_error`], [`unmarshal_string_map_error`]).

use serde::Serialize;
use serde_json::Value;

use super::write::{Spelling, write_tree};

pub use super::quote::go_quote;

/// Escapes what Go escapes in JSON text; those characters only occur inside strings, so a plain
/// replacement on serde_json's compact output is exact.
pub fn escape_like_go(json: &str) -> String {
    go_escaped(json.to_owned())
}

/// [`escape_like_go`] of text we own: returned as is in the usual case of nothing to escape.
pub(crate) fn go_escaped(json: String) -> String {
    if needs_go_escape(&json) {
        escape_slow(&json)
    } else {
        json
    }
}

/// `<`, `>`, `&`, or a byte that may start U+2028 / U+2029.
fn needs_go_escape(json: &str) -> bool {
    json.bytes().any(|b| matches!(b, b'<' | b'>' | b'&' | 0xE2))
}

fn escape_slow(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    for ch in json.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// What `json.Unmarshal` calls a JSON value's kind in `cannot unmarshal <kind> into Go struct field ...`.
pub fn unmarshal_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Compact JSON of `value` as Go would marshal it (serde_json maps are sorted: no `preserve_order`).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    go_escaped(serde_json::to_string(value).unwrap_or_default())
}

/// `v` as Go's `json.Marshal` writes an `interface{}` that `json.Unmarshal` decoded: compact, keys sorted at
/// every level, numbers as float64, HTML characters escaped.
pub fn marshal_decoded(v: &Value) -> String {
    let go = Spelling {
        // Go decoded the document into interface{}: every number is a float64.
        number: |out, n| out.push_str(&go_float(n.as_f64().unwrap_or(0.0))),
        string: |out, s| out.push_str(&to_string(s)),
    };
    let mut out = String::new();
    write_tree(&mut out, v, &go);
    out
}

/// A float64 as Go's `encoding/json` prints it: shortest round-trip digits, `'e'` notation below 1e-6 and
/// from 1e21 on (`1e+21`, `1.5e-7`).
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => text,
        }
    } else {
        format!("{f}")
    }
}

/// The error `json.Unmarshal` returns for `text` into a Go `map[string]string`, `None` when it succeeds: a
/// syntax error first (the whole text is checked before decoding), else the first type mismatch. `null`
/// members and a `null` document are no error in Go.
pub fn unmarshal_string_map_error(text: &str) -> Option<String> {
    if let Some(e) = syntax_error(text) {
        return Some(e);
    }
    match kind(text.trim_start()) {
        "null" => None,
        "object" => {
            let mut found = None;
            let _ = super::cursor::Cursor::new(text, &[]).object(|c, _| {
                let member = kind(c.value());
                if found.is_none() && !matches!(member, "string" | "null") {
                    found = Some(member);
                }
                Ok(())
            });
            found
                .map(|found| format!("json: cannot unmarshal {found} into Go value of type string"))
        }
        other => Some(format!(
            "json: cannot unmarshal {other} into Go value of type map[string]string"
        )),
    }
}

/// The kind `encoding/json` names in an `UnmarshalTypeError` for the value text (valid JSON) `value`.
fn kind(value: &str) -> &'static str {
    match value.as_bytes().first() {
        Some(b'"') => "string",
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b't' | b'f') => "bool",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// The message of the `*json.SyntaxError` Go's scanner reports for `text`, `None` for valid JSON.
pub fn syntax_error(text: &str) -> Option<String> {
    super::scan::scan(text, 0).err().map(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_html_characters_and_sorts_keys() {
        assert_eq!(
            to_string(&json!({"b": "<a&b>", "a": 1})),
            r#"{"a":1,"b":"\u003ca\u0026b\u003e"}"#
        );
        assert_eq!(to_string(&json!({"k": "\u{2028}"})), r#"{"k":"\u2028"}"#);
    }

    #[test]
    fn canonical_json_prints_like_go() {
        let v = json!({"b": [1, 2.5, 0.000_000_1, 1e21, -0.0], "a": {"z": "<&>", "y": null}});
        assert_eq!(
            marshal_decoded(&v),
            r#"{"a":{"y":null,"z":"\u003c\u0026\u003e"},"b":[1,2.5,1e-7,1e+21,-0]}"#
        );
    }

    #[test]
    fn type_errors_into_a_string_map_read_as_go() {
        assert_eq!(unmarshal_string_map_error(r#"{"a":"x","b":null}"#), None);
        assert_eq!(unmarshal_string_map_error("null"), None);
        assert_eq!(
            unmarshal_string_map_error(r#"{"b":"x","z":[1],"a":1}"#).as_deref(),
            Some("json: cannot unmarshal array into Go value of type string"),
            "the first in document order"
        );
        assert_eq!(
            unmarshal_string_map_error(r#"{"a":{"hash":"h"}}"#).as_deref(),
            Some("json: cannot unmarshal object into Go value of type string")
        );
        assert_eq!(
            unmarshal_string_map_error("[1]").as_deref(),
            Some("json: cannot unmarshal array into Go value of type map[string]string")
        );
        assert_eq!(
            unmarshal_string_map_error("\"h1\"").as_deref(),
            Some("json: cannot unmarshal string into Go value of type map[string]string")
        );
        assert_eq!(
            unmarshal_string_map_error("not-json").as_deref(),
            Some("invalid character 'o' in literal null (expecting 'u')")
        );
    }
}
