//! Text as OpenKruise's Go code writes it: JSON inside annotations as `encoding/json` marshals it (compact,
//! object keys sorted, `<`, `>`, `&`, U+2028, U+2029 escaped), and strings quoted as `strconv.Quote` (`%q`).

use std::fmt::Write as _;

use serde::Serialize;

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
    crate::json::scan::any(json.as_bytes(), |b| matches!(b, b'<' | b'>' | b'&' | 0xE2))
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

/// Compact JSON of `value` as Go would marshal it (serde_json maps are sorted: no `preserve_order`).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    go_escaped(serde_json::to_string(value).unwrap_or_default())
}

/// Go's `strconv.Quote` (what `%q` prints for a string).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`: no controls, no spaces but U+0020, no format characters.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
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
            let _ = crate::json::Cursor::new(text, &[]).object(|c, _| {
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

/// What Go's JSON scanner expects next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scan {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// A literal: the bytes still expected and the literal's name.
    Literal(&'static [u8], &'static str),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's `quoteChar`: the byte as a rune, quoted with single quotes.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        c => {
            let quoted = go_quote(&char::from(c).to_string());
            format!("'{}'", &quoted[1..quoted.len() - 1])
        }
    }
}

/// The message of the `*json.SyntaxError` Go's scanner reports for `text`, `None` for valid JSON.
pub fn syntax_error(text: &str) -> Option<String> {
    scan(text, None)
}

/// Where every container of `text` opens and closes (offsets of its first byte and just past its last, in
/// the order they open, as [`crate::json::Cursor`] reads them), when Go's scanner accepts `text`.
///
/// # Errors
/// The scanner's message ([`syntax_error`]).
pub(crate) fn container_ends(text: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut ends = Vec::new();
    scan(text, Some(&mut ends)).map_or(Ok(ends), Err)
}

/// Go's scanner over `text`: its error message, if any; with `ends`, records where containers open and close.
fn scan(text: &str, mut ends: Option<&mut Vec<(usize, usize)>>) -> Option<String> {
    let invalid =
        |c: u8, context: &str| Some(format!("invalid character {} {context}", quote_char(c)));
    let mut stack: Vec<Parse> = Vec::new();
    // The places in `ends` of the open containers, innermost last.
    let mut opened: Vec<usize> = Vec::new();
    let mut step = Scan::BeginValue;
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    for (at, &c) in text.as_bytes().iter().enumerate() {
        // A byte may be re-examined by the state it ends in (Go's `return stateX(s, c)`).
        let mut state = step;
        loop {
            match state {
                Scan::BeginValueOrEmpty if c == b']' => {
                    state = Scan::EndValue;
                    continue;
                }
                Scan::BeginValue | Scan::BeginValueOrEmpty => {
                    if is_space(c) {
                        break;
                    }
                    if matches!(c, b'{' | b'[')
                        && let Some(ends) = ends.as_deref_mut()
                    {
                        opened.push(ends.len());
                        ends.push((at, at));
                    }
                    step = match c {
                        b'{' => {
                            stack.push(Parse::ObjectKey);
                            Scan::BeginStringOrEmpty
                        }
                        b'[' => {
                            stack.push(Parse::ArrayValue);
                            Scan::BeginValueOrEmpty
                        }
                        b'"' => Scan::InString,
                        b'-' => Scan::Neg,
                        b'0' => Scan::Zero,
                        b'1'..=b'9' => Scan::One,
                        b't' => Scan::Literal(b"rue", "true"),
                        b'f' => Scan::Literal(b"alse", "false"),
                        b'n' => Scan::Literal(b"ull", "null"),
                        _ => return invalid(c, "looking for beginning of value"),
                    };
                }
                Scan::BeginStringOrEmpty if c == b'}' => {
                    if let Some(top) = stack.last_mut() {
                        *top = Parse::ObjectValue;
                    }
                    state = Scan::EndValue;
                    continue;
                }
                Scan::BeginStringOrEmpty | Scan::BeginString => {
                    if is_space(c) {
                        break;
                    }
                    if c != b'"' {
                        return invalid(c, "looking for beginning of object key string");
                    }
                    step = Scan::InString;
                }
                Scan::EndValue => {
                    let Some(&top) = stack.last() else {
                        state = Scan::EndTop;
                        continue;
                    };
                    if is_space(c) {
                        step = Scan::EndValue;
                        break;
                    }
                    step = match (top, c) {
                        (Parse::ObjectKey, b':') => {
                            *stack.last_mut()? = Parse::ObjectValue;
                            Scan::BeginValue
                        }
                        (Parse::ObjectKey, _) => return invalid(c, "after object key"),
                        (Parse::ObjectValue, b',') => {
                            *stack.last_mut()? = Parse::ObjectKey;
                            Scan::BeginString
                        }
                        (Parse::ObjectValue | Parse::ArrayValue, b'}' | b']')
                            if (top == Parse::ObjectValue) == (c == b'}') =>
                        {
                            stack.pop();
                            if let (Some(ends), Some(k)) = (ends.as_deref_mut(), opened.pop()) {
                                ends[k].1 = at + 1;
                            }
                            Scan::EndValue
                        }
                        (Parse::ObjectValue, _) => {
                            return invalid(c, "after object key:value pair");
                        }
                        (Parse::ArrayValue, b',') => Scan::BeginValue,
                        (Parse::ArrayValue, _) => return invalid(c, "after array element"),
                    };
                }
                Scan::EndTop => {
                    if !is_space(c) {
                        return invalid(c, "after top-level value");
                    }
                    step = Scan::EndTop;
                }
                Scan::InString => {
                    step = match c {
                        b'"' => Scan::EndValue,
                        b'\\' => Scan::InStringEsc,
                        c if c < 0x20 => return invalid(c, "in string literal"),
                        _ => Scan::InString,
                    };
                }
                Scan::InStringEsc => {
                    step = match c {
                        b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Scan::InString,
                        b'u' => Scan::InStringEscU(0),
                        _ => return invalid(c, "in string escape code"),
                    };
                }
                Scan::InStringEscU(n) => {
                    if !c.is_ascii_hexdigit() {
                        return invalid(c, "in \\u hexadecimal character escape");
                    }
                    step = if n == 3 {
                        Scan::InString
                    } else {
                        Scan::InStringEscU(n + 1)
                    };
                }
                Scan::Neg => {
                    step = match c {
                        b'0' => Scan::Zero,
                        b'1'..=b'9' => Scan::One,
                        _ => return invalid(c, "in numeric literal"),
                    };
                }
                Scan::One if c.is_ascii_digit() => step = Scan::One,
                Scan::One | Scan::Zero => match c {
                    b'.' => step = Scan::Dot,
                    b'e' | b'E' => step = Scan::E,
                    _ => {
                        state = Scan::EndValue;
                        continue;
                    }
                },
                Scan::Dot => {
                    if !c.is_ascii_digit() {
                        return invalid(c, "after decimal point in numeric literal");
                    }
                    step = Scan::Dot0;
                }
                Scan::Dot0 => match c {
                    b'0'..=b'9' => step = Scan::Dot0,
                    b'e' | b'E' => step = Scan::E,
                    _ => {
                        state = Scan::EndValue;
                        continue;
                    }
                },
                Scan::E if matches!(c, b'+' | b'-') => step = Scan::ESign,
                Scan::E | Scan::ESign => {
                    if !c.is_ascii_digit() {
                        return invalid(c, "in exponent of numeric literal");
                    }
                    step = Scan::E0;
                }
                Scan::E0 => {
                    if c.is_ascii_digit() {
                        step = Scan::E0;
                    } else {
                        state = Scan::EndValue;
                        continue;
                    }
                }
                Scan::Literal(rest, name) => {
                    if c != rest[0] {
                        let context =
                            format!("in literal {name} (expecting {})", quote_char(rest[0]));
                        return invalid(c, &context);
                    }
                    step = if rest.len() == 1 {
                        Scan::EndValue
                    } else {
                        Scan::Literal(&rest[1..], name)
                    };
                }
            }
            break;
        }
        if stack.len() > 10000 {
            return invalid(c, "exceeded max depth");
        }
    }
    // End of input: only a finished top-level value (a number may end here) is complete.
    let complete = stack.is_empty()
        && matches!(
            step,
            Scan::EndValue | Scan::EndTop | Scan::One | Scan::Zero | Scan::Dot0 | Scan::E0
        );
    (!complete).then(|| "unexpected end of JSON input".to_owned())
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
    fn syntax_errors_read_as_go_scanner_errors() {
        let cases = [
            (
                "not-json",
                "invalid character 'o' in literal null (expecting 'u')",
            ),
            ("x", "invalid character 'x' looking for beginning of value"),
            ("", "unexpected end of JSON input"),
            ("{\"a\":", "unexpected end of JSON input"),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 2}",
                "invalid character '2' after object key:value pair",
            ),
            (
                "{\"a\":\"b\",}",
                "invalid character '}' looking for beginning of object key string",
            ),
            (
                "{a:1}",
                "invalid character 'a' looking for beginning of object key string",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            ("{} x", "invalid character 'x' after top-level value"),
            (
                "{\"a\":\"\\q\"}",
                "invalid character 'q' in string escape code",
            ),
            (
                "{\"a\":\"\\u12x4\"}",
                "invalid character 'x' in \\u hexadecimal character escape",
            ),
            ("\"a\nb\"", "invalid character '\\n' in string literal"),
            ("-x", "invalid character 'x' in numeric literal"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            ("1e+", "unexpected end of JSON input"),
            (
                "1ex",
                "invalid character 'x' in exponent of numeric literal",
            ),
            ("01", "invalid character '1' after top-level value"),
            ("tru", "unexpected end of JSON input"),
            (
                "fals3",
                "invalid character '3' in literal false (expecting 'e')",
            ),
            (
                "{'a':1}",
                "invalid character '\\'' looking for beginning of object key string",
            ),
            ("[\"a\"}", "invalid character '}' after array element"),
        ];
        for (text, want) in cases {
            assert_eq!(syntax_error(text).as_deref(), Some(want), "{text:?}");
        }
        for valid in [
            "{}",
            "[]",
            " [ 1 , -0.5e+3 , \"\\u00e9\" , true , null ] ",
            "0",
            "{\"a\":{\"b\":[]}}",
        ] {
            assert_eq!(syntax_error(valid), None, "{valid:?}");
            assert!(serde_json::from_str::<serde_json::Value>(valid).is_ok());
        }
    }

    #[test]
    fn container_ends_are_recorded_in_opening_order() {
        assert_eq!(
            container_ends(r#" {"a":[1,{}],"b":{"c":[]}} "#),
            Ok(vec![(1, 26), (6, 12), (9, 11), (17, 25), (22, 24)])
        );
        assert_eq!(container_ends("1"), Ok(vec![]));
        assert_eq!(
            container_ends("[1"),
            Err("unexpected end of JSON input".to_owned())
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
