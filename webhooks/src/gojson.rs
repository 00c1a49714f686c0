//! JSON text as Go's `encoding/json` writes it where OpenKruise stores JSON inside annotations: compact,
//! object keys sorted, and `<`, `>`, `&`, U+2028, U+2029 escaped.

use serde::Serialize;

/// Escapes what Go escapes in JSON text; those characters only occur inside strings, so a plain
/// replacement on serde_json's compact output is exact.
pub fn escape_like_go(json: &str) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json.to_owned();
    }
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

/// Compact JSON of `value` as Go would marshal it (serde_json maps are sorted: no `preserve_order`).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    escape_like_go(&serde_json::to_string(value).unwrap_or_default())
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
}
