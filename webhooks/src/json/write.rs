//! The JSON writer: strings and trees as serde_json writes them (compact), so text this crate writes by
//! hand (a patch, a sidecar, an annotation) is byte for byte what serialising the same values would give;
//! and base64, as Go marshals a `[]byte`. Go's own escaping of `<`, `>`, `&` is [`super::go`]'s.

use std::fmt::Write as _;

use base64::Engine;
use serde_json::{Number, Value};

use super::scan::{Stop, find};

/// For each byte: 0 when serde_json writes it as is, else the letter of its escape (`u` for `\u00xx`).
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x0C] = b'f';
    table[b'\n' as usize] = b'n';
    table[b'\r' as usize] = b'r';
    table[b'\t' as usize] = b't';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends `s` as a JSON string, as serde_json writes it: `\"`, `\\`, the short escapes of backspace, form
/// feed, newline, carriage return and tab, `\u00xx` (lower-case hex) for other control characters. Runs
/// without escapes are copied whole.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    loop {
        // Escapes are ASCII: every cut is a char boundary.
        let at = find(bytes, start, Stop::InString);
        out.push_str(&s[start..at]);
        let Some(&b) = bytes.get(at) else { break };
        let escape = ESCAPE[usize::from(b)];
        out.push('\\');
        out.push(char::from(escape));
        if escape == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xF)]));
        }
        start = at + 1;
    }
    out.push('"');
}

/// How [`write_tree`] spells a tree's numbers and strings: as serde_json does ([`write_value`]), or as Go's
/// `json.Marshal` does ([`super::go::marshal_decoded`]).
pub(super) struct Spelling {
    /// Appends a number.
    pub(super) number: fn(&mut String, &Number),
    /// Appends a string, quoted and escaped.
    pub(super) string: fn(&mut String, &str),
}

/// serde_json's spelling: numbers as `Number` displays them (as serde_json writes them), strings by
/// [`write_string`].
const SERDE: Spelling = Spelling {
    number: |out, n| {
        // Writing into a String cannot fail.
        let _ = write!(out, "{n}");
    },
    string: write_string,
};

/// Appends `value` as compact JSON, as serde_json writes it.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    write_tree(out, value, &SERDE);
}

/// Appends `value` as compact JSON, numbers and strings as `spelling` says, object members in the map's
/// order: by key, as both serde_json (built without `preserve_order`) and Go's encoder write them.
pub(super) fn write_tree(out: &mut String, value: &Value, spelling: &Spelling) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => (spelling.number)(out, n),
        Value::String(s) => (spelling.string)(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_tree(out, item, spelling);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                (spelling.string)(out, k);
                out.push(':');
                write_tree(out, v, spelling);
            }
            out.push('}');
        }
    }
}

/// Appends `bytes` in standard base64 with padding (RFC 4648 §4), as Go's JSON encoding writes a `[]byte`.
pub(crate) fn write_base64(out: &mut String, bytes: &[u8]) {
    base64::engine::general_purpose::STANDARD.encode_string(bytes, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn string(s: &str) -> String {
        let mut out = String::new();
        write_string(&mut out, s);
        out
    }

    #[test]
    fn strings_and_trees_are_written_as_serde_json_writes_them() {
        let value = json!({"s": "q\"b\\c\u{1}\u{7f}é\n", "n": [1, -2, 1.5, 1e300, 18446744073709551615u64], "t": true, "f": false, "z": null, "e": {}, "l": []});
        let mut out = String::new();
        write_value(&mut out, &value);
        assert_eq!(out, serde_json::to_string(&value).unwrap());
        let every_byte: String = (0u8..=0x7F).map(char::from).chain("é€😀".chars()).collect();
        let long = format!("{}\"{}", "a".repeat(70), "b".repeat(70));
        for s in [
            every_byte.as_str(),
            "",
            "\"",
            "a\\",
            "\u{1f}x",
            &long,
            &long[..70],
        ] {
            assert_eq!(string(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn every_escape_at_every_offset_is_written_as_serde_json_writes_it() {
        for b in 0u8..=0x7F {
            for len in 1..20 {
                for at in 0..len {
                    let s: String = (0..len)
                        .map(|i| {
                            if i == at {
                                char::from(b)
                            } else {
                                ['a', 'é', ' '][i % 3]
                            }
                        })
                        .collect();
                    assert_eq!(string(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn base64_is_rfc_4648_with_padding_appended() {
        // RFC 4648 §10.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut out = "x".to_owned();
            write_base64(&mut out, plain.as_bytes());
            assert_eq!(out, format!("x{encoded}"));
        }
    }
}
