//! The one scanner of the JSON layer: whether a text is exactly one JSON value, as Go's `encoding/json`
//! scanner decides it (RFC 8259, whitespace around, at most [`MAX_NESTING`] containers open at once), what
//! is wrong with it in that scanner's words ([`SyntaxError`]), and where its containers open and close
//! ([`Ends`], which let a [`Cursor`](super::Cursor) step over a container at once).
//!
//! Go's scanner and serde_json accept the same texts up to nesting (both refuse control characters in
//! strings, unknown escapes, leading zeros, trailing commas; both take lone surrogates in `\u` escapes), so
//! admission reviews are checked here too: what this refuses, serde reads and words.
//!
//! Also the one byte search over JSON text ([`find`]) that the scanner, the cursor and the writer share. It
//! is the layer's one use of SIMD (SSE2 through `safe_arch`, sixteen bytes a step), kept for a measured
//! goal: the `/mutate-pod` load bench and the SidecarSet injection bench within 10 % of what they were
//! before this layer was gathered (issue 24). Searched byte by byte, a pod create's strings (nine bytes on
//! average, read by the scanner, then by the cursor as the raw pod is read) cost about 2 µs more per
//! review: the load bench lost 13 % of its rate and the injection bench's median rose 14 %.

use std::fmt;

/// Where the containers of a valid text open and close: for each `{` and `[`, in the order they open, its
/// offset and the offset just past its matching `}` or `]`. At most as many as [`scan`] is asked to record,
/// the first to open; a cursor reads through the others.
pub(crate) type Ends = Vec<(usize, usize)>;

/// Go's `maxNestingDepth`: a text with more containers open at once is refused ("exceeded max depth").
pub(crate) const MAX_NESTING: usize = 10_000;

/// How many container ends an admission review's check records: far more than a pod has (one per env var,
/// port, mount…), and a bound on what a body of many small containers makes it allocate (1 MiB).
pub(crate) const MAX_ENDS: usize = 1 << 16;

/// What a [`find`] stops at.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    /// Either of two bytes.
    Either(u8, u8),
    /// What ends or interrupts a string: `"`, `\`, a control character (refused in a string by the
    /// scanner, escaped by the writer).
    InString,
}

impl Stop {
    #[inline(always)]
    fn matches(self, c: u8) -> bool {
        match self {
            Self::Either(x, y) => c == x || c == y,
            Self::InString => c == b'"' || c == b'\\' || c < 0x20,
        }
    }

    /// The lanes of sixteen bytes that are stops: the test of [`Stop::matches`], in SSE2.
    #[cfg(target_feature = "sse2")]
    #[inline(always)]
    fn lanes(self, v: safe_arch::m128i) -> safe_arch::m128i {
        use safe_arch::{bitor_m128i, cmp_eq_mask_i8_m128i, max_u8_m128i, set_splat_i8_m128i};
        let equal = |c: u8| cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(c as i8));
        match self {
            Self::Either(x, y) => bitor_m128i(equal(x), equal(y)),
            Self::InString => {
                // Below 0x20 (unsigned): the lanes whose maximum with 0x1F is 0x1F.
                let limit = set_splat_i8_m128i(0x1F);
                let control = cmp_eq_mask_i8_m128i(max_u8_m128i(v, limit), limit);
                bitor_m128i(bitor_m128i(equal(b'"'), equal(b'\\')), control)
            }
        }
    }
}

/// The index of the first byte of `b` at or after `from` that is a `stop` (`b.len()` when none): sixteen
/// bytes a step where SSE2 is built in (all of x86_64), then byte by byte. The one search over JSON text:
/// the scanner's and the cursor's strings, the writer's escapes, pointers, [`may_spell`].
#[inline]
pub(crate) fn find(b: &[u8], from: usize, stop: Stop) -> usize {
    let mut i = from;
    #[cfg(target_feature = "sse2")]
    while let Some(block) = b.get(i..i + 16) {
        let block = safe_arch::load_unaligned_m128i(block.try_into().expect("sixteen bytes"));
        let hits = safe_arch::move_mask_i8_m128i(stop.lanes(block));
        if hits != 0 {
            return i + hits.trailing_zeros() as usize;
        }
        i += 16;
    }
    let rest = b.get(i..).unwrap_or_default();
    rest.iter()
        .position(|&c| stop.matches(c))
        .map_or(b.len(), |p| i + p)
}

/// Whether JSON text `b` may spell `word`: it has it, or has a `\` (an escape could spell any of it). A
/// test before decoding, for texts that rarely hold the word.
pub(crate) fn may_spell(b: &[u8], word: &[u8]) -> bool {
    let Some((&first, rest)) = word.split_first() else {
        return true;
    };
    let mut i = 0;
    loop {
        i = find(b, i, Stop::Either(first, b'\\'));
        match b.get(i) {
            None => return false,
            Some(b'\\') => return true,
            Some(_) if b[i + 1..].starts_with(rest) => return true,
            Some(_) => i += 1,
        }
    }
}

/// Whether Go's scanner (and RFC 8259) takes `c` as whitespace.
#[inline]
pub(crate) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// The first index at or after `i` that is not whitespace.
#[inline]
pub(crate) fn skip_space(b: &[u8], mut i: usize) -> usize {
    // Most JSON an apiserver sends has none: one test.
    while b.get(i).is_some_and(|&c| is_space(c)) {
        i += 1;
    }
    i
}

/// Why Go's scanner refuses a text: the byte it stopped at (none at the end of the text) and what it was
/// reading. Displayed as Go's `*json.SyntaxError` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    found: Option<u8>,
    reading: Reading,
}

/// What the scanner was reading where it stopped: the context of Go's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    ValueStart,
    KeyStart,
    AfterKey,
    AfterMember,
    AfterElement,
    AfterTop,
    String,
    Escape,
    HexEscape,
    Number,
    Fraction,
    Exponent,
    /// A literal (`true`, `false`, `null`) and the byte it expected.
    Literal(&'static str, u8),
    TooDeep,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(c) = self.found else {
            return f.write_str("unexpected end of JSON input");
        };
        let context = match self.reading {
            Reading::ValueStart => "looking for beginning of value",
            Reading::KeyStart => "looking for beginning of object key string",
            Reading::AfterKey => "after object key",
            Reading::AfterMember => "after object key:value pair",
            Reading::AfterElement => "after array element",
            Reading::AfterTop => "after top-level value",
            Reading::String => "in string literal",
            Reading::Escape => "in string escape code",
            Reading::HexEscape => "in \\u hexadecimal character escape",
            Reading::Number => "in numeric literal",
            Reading::Fraction => "after decimal point in numeric literal",
            Reading::Exponent => "in exponent of numeric literal",
            Reading::Literal(name, expected) => {
                let expected = super::quote::quote_char(expected);
                let c = super::quote::quote_char(c);
                return write!(
                    f,
                    "invalid character {c} in literal {name} (expecting {expected})"
                );
            }
            Reading::TooDeep => "exceeded max depth",
        };
        write!(
            f,
            "invalid character {} {context}",
            super::quote::quote_char(c)
        )
    }
}

/// The error at index `i` of `b` while reading `reading` (the end of the text when `i` is past it).
fn error<T>(b: &[u8], i: usize, reading: Reading) -> Result<T, SyntaxError> {
    Err(SyntaxError {
        found: b.get(i).copied(),
        reading,
    })
}

/// Checks that `text` is one JSON value with whitespace around it, as Go's scanner does (the first error it
/// meets, in its words), and records where the first `max_ends` of its containers open and close. No
/// recursion: the open containers are a stack. UTF-8 is given by `&str`.
///
/// A text that ends early is "unexpected end of JSON input" wherever it ends.
///
/// # Errors
/// [`SyntaxError`] where the text stops being JSON.
pub(crate) fn scan(text: &str, max_ends: usize) -> Result<Ends, SyntaxError> {
    let b = text.as_bytes();
    // Room for a container every 32 bytes, about what a pod has: one allocation for most texts.
    let mut ends = Vec::with_capacity((b.len() / 32).min(1024).min(max_ends));
    // The open containers, innermost last: whether it is an object, and its place in `ends` (`usize::MAX`
    // once `max_ends` are recorded).
    let mut open: Vec<(bool, usize)> = Vec::with_capacity(16);
    let mut i = skip_space(b, 0);
    'value: loop {
        // A value starts at `i`.
        match b.get(i) {
            Some(&c @ (b'{' | b'[')) => {
                if open.len() == MAX_NESTING {
                    return error(b, i, Reading::TooDeep);
                }
                let place = if ends.len() < max_ends {
                    ends.push((i, i));
                    ends.len() - 1
                } else {
                    usize::MAX
                };
                let object = c == b'{';
                open.push((object, place));
                i = skip_space(b, i + 1);
                let empty = b.get(i) == Some(if object { &b'}' } else { &b']' });
                if !empty {
                    if object {
                        i = key(b, i)?;
                    }
                    continue 'value;
                }
            }
            Some(b'"') => i = string(b, i)?,
            Some(b't') => i = literal(b, i, "true")?,
            Some(b'f') => i = literal(b, i, "false")?,
            Some(b'n') => i = literal(b, i, "null")?,
            Some(b'-' | b'0'..=b'9') => i = number(b, i)?,
            _ => return error(b, i, Reading::ValueStart),
        }
        // After a value: close containers until the next member or element, or the end.
        loop {
            i = skip_space(b, i);
            let Some(&(object, place)) = open.last() else {
                return match b.get(i) {
                    None => Ok(ends),
                    Some(_) => error(b, i, Reading::AfterTop),
                };
            };
            match (object, b.get(i)) {
                (_, Some(b',')) => {
                    i = skip_space(b, i + 1);
                    if object {
                        i = key(b, i)?;
                    }
                    continue 'value;
                }
                (true, Some(b'}')) | (false, Some(b']')) => {
                    open.pop();
                    i += 1;
                    if let Some(end) = ends.get_mut(place) {
                        end.1 = i;
                    }
                }
                (true, _) => return error(b, i, Reading::AfterMember),
                (false, _) => return error(b, i, Reading::AfterElement),
            }
        }
    }
}

/// A member's key at `i` and its `:`: the index of the value after it.
fn key(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    if b.get(i) != Some(&b'"') {
        return error(b, i, Reading::KeyStart);
    }
    let i = skip_space(b, string(b, i)?);
    match b.get(i) {
        Some(b':') => Ok(skip_space(b, i + 1)),
        _ => error(b, i, Reading::AfterKey),
    }
}

/// The index just past the string whose opening quote is at `open`.
fn string(b: &[u8], open: usize) -> Result<usize, SyntaxError> {
    let mut i = open + 1;
    loop {
        i = find(b, i, Stop::InString);
        match b.get(i) {
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => i = escape(b, i + 1)?,
            _ => return error(b, i, Reading::String),
        }
    }
}

/// Past the escape whose letter is at `i` (after its `\`).
fn escape(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    match b.get(i) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 1),
        Some(b'u') => {
            for at in i + 1..i + 5 {
                if !b.get(at).is_some_and(u8::is_ascii_hexdigit) {
                    return error(b, at, Reading::HexEscape);
                }
            }
            Ok(i + 5)
        }
        _ => error(b, i, Reading::Escape),
    }
}

/// Past the literal `word` starting at `i`, each byte checked as Go's scanner checks it.
fn literal(b: &[u8], i: usize, word: &'static str) -> Result<usize, SyntaxError> {
    for (at, expected) in (i..).zip(word.bytes()).skip(1) {
        if b.get(at) != Some(&expected) {
            return error(b, at, Reading::Literal(word, expected));
        }
    }
    Ok(i + word.len())
}

/// The index after the digits from `i`.
fn digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// One or more digits from `i` (the number so far read as `reading`): the index after them.
fn some_digits(b: &[u8], i: usize, reading: Reading) -> Result<usize, SyntaxError> {
    match b.get(i) {
        Some(c) if c.is_ascii_digit() => Ok(digits(b, i)),
        _ => error(b, i, reading),
    }
}

/// Past the number starting at `i`: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn number(b: &[u8], mut i: usize) -> Result<usize, SyntaxError> {
    if b[i] == b'-' {
        i += 1;
    }
    i = match b.get(i) {
        Some(b'0') => i + 1,
        Some(b'1'..=b'9') => digits(b, i),
        _ => return error(b, i, Reading::Number),
    };
    if b.get(i) == Some(&b'.') {
        i = some_digits(b, i + 1, Reading::Fraction)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = some_digits(b, i, Reading::Exponent)?;
    }
    Ok(i)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::de::IgnoredAny;

    fn serde_accepts(text: &str) -> bool {
        serde_json::from_str::<IgnoredAny>(text).is_ok()
    }

    fn is_valid(text: &str) -> bool {
        scan(text, MAX_ENDS).is_ok()
    }

    /// Go's message for `text`, `None` when it is JSON.
    fn syntax_error(text: &str) -> Option<String> {
        scan(text, 0).err().map(|e| e.to_string())
    }

    #[test]
    fn accepts_and_refuses_what_serde_does() {
        let cases = [
            "null",
            " true ",
            "false",
            "nul",
            "nulll",
            "0",
            "-0",
            "01",
            "-",
            "1.",
            "1.5",
            ".5",
            "1e5",
            "1E+5",
            "1e-",
            "1e",
            "-1.25e-7",
            "1.5e400",
            r#""""#,
            r#""a\"b""#,
            r#""\u00e9\/\b\f\n\r\t\\""#,
            r#""\u00g9""#,
            r#""\u00e""#,
            r#""\x""#,
            "\"tab\there\"",
            "\"unterminated",
            r#""\"#,
            "{}",
            "[]",
            "{ }",
            "[ ]",
            r#"{"a":1}"#,
            r#"{"a":1,}"#,
            r#"{"a" : [1, 2 , {"b":null}] }"#,
            r#"{"a":1 "b":2}"#,
            r#"{a:1}"#,
            r#"{"a"}"#,
            r#"{"a":}"#,
            "[1,]",
            "[,1]",
            "[1 2]",
            "[1,2]]",
            "[[[]]]",
            "[[[]]",
            "{]",
            "[}",
            "",
            "   ",
            "1 2",
            r#"{"a":1}x"#,
            "\u{feff}{}",
            "{\"k\":\"é\"}",
            "[\u{0c}]",
        ];
        for case in cases {
            assert_eq!(is_valid(case), serde_accepts(case), "{case:?}");
        }
        // Go's limit counts every container open at once, the innermost (empty) one too.
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        assert_eq!(
            scan(&nested(MAX_NESTING), MAX_ENDS).map(|e| e.len()),
            Ok(MAX_NESTING)
        );
        assert!(serde_accepts(&nested(MAX_NESTING + 1)));
        assert!(!is_valid(&nested(MAX_NESTING + 1)), "deeper: left to serde");
        let wide = format!("[{}[]]", "{},".repeat(MAX_ENDS + 10));
        assert_eq!(
            scan(&wide, MAX_ENDS).map(|e| e.len()),
            Ok(MAX_ENDS),
            "recording stops"
        );
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
        let deep = "[".repeat(MAX_NESTING + 1);
        assert_eq!(
            syntax_error(&deep).as_deref(),
            Some("invalid character '[' exceeded max depth")
        );
    }

    #[test]
    fn container_ends_are_recorded_in_opening_order() {
        let all = |text: &str| scan(text, usize::MAX).map_err(|e| e.to_string());
        assert_eq!(
            all(r#" {"a":[1,{}],"b":{"c":[]}} "#),
            Ok(vec![(1, 26), (6, 12), (9, 11), (17, 25), (22, 24)])
        );
        assert_eq!(all("1"), Ok(vec![]));
        assert_eq!(all("[1"), Err("unexpected end of JSON input".to_owned()));
    }

    /// `may_spell` finds the word at every offset and in overlapping near misses, says yes to any backslash,
    /// and no otherwise (a first byte alone, a word cut at the end).
    #[test]
    fn may_spell_finds_the_word_or_an_escape() {
        let word = b"kruise";
        for len in 0..40 {
            for at in 0..=len {
                let mut text = vec![b'k'; len];
                assert!(!may_spell(&text, word), "{len} bytes of k");
                if at + word.len() <= len {
                    text[at..at + word.len()].copy_from_slice(word);
                    assert!(may_spell(&text, word), "at {at} of {len}");
                }
                let mut text = vec![b'x'; len];
                if at < len {
                    text[at] = b'\\';
                    assert!(may_spell(&text, word), "backslash at {at} of {len}");
                }
            }
        }
        for (text, found) in [
            (&b"kruis"[..], false),
            (b"krkruise", true),
            (b"kruisekruis", true),
            (b"KRUISE", false),
            (b"", false),
        ] {
            assert_eq!(
                may_spell(text, word),
                found,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        assert!(may_spell(b"", b""), "the empty word is everywhere");
    }

    /// Every search, on texts of every length below 40 (the sixteen-byte steps and the bytes after them)
    /// with one stop at every offset, from every start: the bytes before the stop are near misses (one bit
    /// off a stop, 0x20, 0x7F, non-ASCII).
    #[test]
    fn stops_are_found_at_every_offset_and_near_misses_are_not_stops() {
        let cases: [(Stop, &[u8], &[u8]); 3] = [
            (
                Stop::InString,
                b"\"\\\x00\x01\x08\x0a\x1f",
                b"#] \x7f\xe2\xa2\x80\xff\x5d\x9f",
            ),
            (
                Stop::Either(b'"', b'\\'),
                b"\"\\",
                b"#]\x02\x1f\xe2\xa2\x5d",
            ),
            (
                Stop::Either(b'~', b'/'),
                b"~/",
                b".\x7f\x7c\xfe\x3e\x6e\x2d\x6f\xaf\x0f\x3f",
            ),
        ];
        for (stop, stops, near) in cases {
            for &byte in stops {
                for len in 0..40 {
                    for at in 0..=len {
                        let mut text: Vec<u8> = (0..len).map(|i| near[i % near.len()]).collect();
                        if at < len {
                            text[at] = byte;
                        }
                        for from in 0..=at {
                            assert_eq!(find(&text, from, stop), at, "{text:?} from {from}");
                        }
                    }
                }
            }
            assert_eq!(find(b"ab", 5, stop), 2, "a start past the end");
        }
    }

    /// Texts of JSON's own characters, valid or not.
    pub(crate) fn json_text() -> impl Strategy<Value = String> {
        let token = prop::sample::select(vec![
            "{", "}", "[", "]", ",", ":", "\"", "\"k\"", "\"v\"", "\\", "\\u00e9", "\\n", "0", "1",
            "-", ".", "e", "+", "true", "null", "fa", "lse", " ", "\n", "\t", "\u{1}", "é",
            "\"a\":", "[1,2]", "{}",
        ]);
        prop::collection::vec(token, 0..24).prop_map(|t| t.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Random texts over JSON's own characters: the scanner agrees with serde on each.
        #[test]
        fn agrees_with_serde_on_any_text(text in json_text()) {
            prop_assert_eq!(is_valid(&text), serde_accepts(&text), "{:?}", text);
        }

        /// Valid documents cut at any byte or with a byte replaced: still in agreement.
        #[test]
        fn agrees_with_serde_on_damaged_documents(cut in 0usize..200, at in 0usize..200, with in 0u8..128) {
            let doc = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p\u00e9","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","ports":[{"containerPort":80}],"x":-1.5e3,"y":[true,false,null]}]}}"#;
            let cut = &doc[..cut.min(doc.len())];
            prop_assert_eq!(is_valid(cut), serde_accepts(cut), "{:?}", cut);
            let mut bytes = doc.as_bytes().to_vec();
            let at = at % bytes.len();
            bytes[at] = with;
            let damaged = String::from_utf8(bytes).expect("ASCII stays UTF-8");
            prop_assert_eq!(is_valid(&damaged), serde_accepts(&damaged), "{:?}", damaged);
            if is_valid(&damaged) {
                let serde: Option<serde_json::Value> = serde_json::from_str(&damaged).ok();
                prop_assert_eq!(crate::json::cursor::tree(&damaged), serde, "{:?}", damaged);
            }
        }
    }
}
