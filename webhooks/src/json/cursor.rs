//! JSON text read without building values: a strict validator ([`validate`]) and a structural cursor over
//! text it accepted ([`Cursor`]). Admission requests are checked once, here, and their objects then read
//! in place (the raw pod, the split of a review in `admission`).

use std::borrow::Cow;

use crate::json::scan;

/// Where the containers of a valid text close: for each `{` and `[`, in the order they open, its offset and
/// the offset just past its matching `}` or `]`. A [`Cursor`] given them moves past a container in one step.
/// At most [`MAX_ENDS`] are recorded, the first to open; a cursor reads through the others.
pub(crate) type Ends = Vec<(usize, usize)>;

/// How many container ends [`validate`] records: far more than a pod has (one per env var, port, mount…),
/// and a bound on what a body of many small containers makes it allocate (1 MiB).
pub(crate) const MAX_ENDS: usize = 1 << 16;

/// How deep [`validate`] follows containers: far deeper than any Kubernetes object (serde_json builds a
/// `Value` 128 deep at most); a deeper text is not accepted, and callers fall back to serde, which skips
/// it with one byte per level.
pub(crate) const MAX_DEPTH: usize = 1024;

/// Whether [`validate`] accepts `text`.
#[cfg(test)]
pub(crate) fn is_valid(text: &str) -> bool {
    validate(text).is_some()
}

/// Checks that `text` is exactly one JSON value (RFC 8259) with whitespace around it, with at most
/// [`MAX_DEPTH`] containers around any value: as strict as serde_json when it skips a value (the checks behind
/// `serde_json::from_str::<IgnoredAny>`). Strings: no control character, escapes among
/// `\" \\ \/ \b \f \n \r \t \uXXXX`; numbers: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`; no trailing
/// comma; no recursion (the open containers are a stack). UTF-8 is given by `&str`. `Some` with where
/// its containers close when it is.
pub(crate) fn validate(text: &str) -> Option<Ends> {
    // Room for a container every 32 bytes, about what a pod has: one allocation, no regrowth (a larger
    // text grows it as it needs).
    let mut ends = Vec::with_capacity((text.len() / 32).min(1024));
    check(text.as_bytes(), &mut ends, MAX_ENDS).map(|()| ends)
}

fn check(b: &[u8], ends: &mut Ends, max_ends: usize) -> Option<()> {
    let mut stops = Stops::new(b);
    // The open containers, innermost last: whether it is an object, and its place in `ends` (`usize::MAX`
    // once `max_ends` are recorded: the rest are read through).
    let mut open: Vec<(bool, usize)> = Vec::with_capacity(16);
    let mut i = whitespace(b, 0);
    'value: loop {
        // A value starts at `i`.
        match *b.get(i)? {
            c @ (b'{' | b'[') => {
                let object = c == b'{';
                let at = if ends.len() < max_ends {
                    ends.push((i, 0));
                    ends.len() - 1
                } else {
                    usize::MAX
                };
                i = whitespace(b, i + 1);
                if b.get(i) == Some(if object { &b'}' } else { &b']' }) {
                    i += 1;
                    if let Some(end) = ends.get_mut(at) {
                        end.1 = i;
                    }
                } else {
                    if open.len() == MAX_DEPTH {
                        return None;
                    }
                    open.push((object, at));
                    if object {
                        i = key(b, i, &mut stops)?;
                    }
                    continue 'value;
                }
            }
            b'"' => i = stops.string(i)?,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(b, i)?,
            _ => return None,
        }
        // After a value: close containers until the next member or element, or the end.
        loop {
            i = whitespace(b, i);
            match (open.last(), b.get(i)) {
                (None, None) => return Some(()),
                (Some(&(object, _)), Some(b',')) => {
                    i = whitespace(b, i + 1);
                    if object {
                        i = key(b, i, &mut stops)?;
                    }
                    continue 'value;
                }
                (Some(&(true, at)), Some(b'}')) | (Some(&(false, at)), Some(b']')) => {
                    open.pop();
                    i += 1;
                    if let Some(end) = ends.get_mut(at) {
                        end.1 = i;
                    }
                }
                _ => return None,
            }
        }
    }
}

/// The entries of `ends` (of a whole text) for the value at `span` of it, with offsets from its start.
pub(crate) fn ends_within(ends: &[(usize, usize)], span: std::ops::Range<usize>) -> Ends {
    let first = ends.partition_point(|e| e.0 < span.start);
    let last = ends.partition_point(|e| e.0 < span.end);
    ends[first..last]
        .iter()
        .map(|&(open, close)| (open - span.start, close - span.start))
        .collect()
}

#[inline(always)]
fn whitespace(b: &[u8], mut i: usize) -> usize {
    // Most JSON an apiserver sends has none: one test.
    while let Some(&c) = b.get(i)
        && c <= b' '
        && matches!(c, b' ' | b'\n' | b'\r' | b'\t')
    {
        i += 1;
    }
    i
}

/// A member's key at `i` and its `:`: the index of the value after it.
#[inline(always)]
fn key(b: &[u8], i: usize, stops: &mut Stops<'_>) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let i = whitespace(b, stops.string(i)?);
    (b.get(i) == Some(&b':')).then(|| whitespace(b, i + 1))
}

/// Where the strings of a text stop (a `"`, a `\`, a control character), found from the bit mask of their
/// 64-byte block: the validator moves forward, so each block's mask is computed once for all its strings.
struct Stops<'b> {
    b: &'b [u8],
    /// The block whose mask is held (`usize::MAX` before the first).
    block: usize,
    mask: u64,
}

impl<'b> Stops<'b> {
    fn new(b: &'b [u8]) -> Self {
        Self {
            b,
            block: usize::MAX,
            mask: 0,
        }
    }

    /// The first stop at or after `j` (`b.len()` when none).
    #[inline(always)]
    fn next(&mut self, mut j: usize) -> usize {
        loop {
            let block = j / 64;
            if block != self.block {
                if j >= self.b.len() {
                    return self.b.len();
                }
                self.mask = scan::json_escapes_in_block(self.b, block * 64);
                self.block = block;
            }
            let ahead = self.mask >> (j % 64);
            if ahead != 0 {
                return j + ahead.trailing_zeros() as usize;
            }
            j = (block + 1) * 64;
        }
    }

    /// The index just past the valid string whose opening quote is at `open`.
    #[inline(always)]
    fn string(&mut self, open: usize) -> Option<usize> {
        let mut j = open + 1;
        loop {
            j = self.next(j);
            if *self.b.get(j)? == b'"' {
                return Some(j + 1);
            }
            j = escape(self.b, j)?;
        }
    }
}

/// Past the escape (or control character: `None`) at `j` in a string.
#[inline(never)]
fn escape(b: &[u8], j: usize) -> Option<usize> {
    if b[j] != b'\\' {
        return None; // a control character
    }
    match *b.get(j + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(j + 2),
        b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => Some(j + 6),
        _ => None,
    }
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

fn digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// One or more digits from `i`: the index after them.
fn some_digits(b: &[u8], i: usize) -> Option<usize> {
    let end = digits(b, i);
    (end > i).then_some(end)
}

fn number(b: &[u8], mut i: usize) -> Option<usize> {
    if b[i] == b'-' {
        i += 1;
    }
    i = match *b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(b, i),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = some_digits(b, i + 1)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = some_digits(b, i)?;
    }
    Some(i)
}

/// The tree of text known to be valid JSON: a value of a request [`validate`] accepted, or text this crate
/// wrote. The parse fails only where serde_json's does on valid JSON, past its 128 levels of nesting (no
/// Kubernetes object is that deep; `validate` follows [`MAX_DEPTH`]) or on a string that does not decode (a
/// lone surrogate), and such a value reads as `null`.
pub(crate) fn valid_tree(text: &str) -> serde_json::Value {
    tree(text).unwrap_or(serde_json::Value::Null)
}

/// serde_json's recursion limit: a container that brings it to zero is refused (127 levels are built).
const TREE_DEPTH: usize = 128;

/// The depth left inside a container opened with `depth` left, unless the limit refuses it.
fn deeper(depth: usize) -> Option<usize> {
    depth.checked_sub(1).filter(|&left| left > 0)
}

/// The tree of valid JSON text, as `serde_json::from_str` builds it (the last of a repeated key stands,
/// numbers as serde_json reads them), built with the [`Cursor`]: no serde deserializer runs. `None` where
/// serde_json fails on valid JSON: nesting past its limit, a string that does not decode.
pub(crate) fn tree(text: &str) -> Option<serde_json::Value> {
    let mut c = Cursor::new(text, &[]);
    tree_at(&mut c, TREE_DEPTH)
}

fn tree_at(c: &mut Cursor<'_>, depth: usize) -> Option<serde_json::Value> {
    use serde_json::Value;
    Some(match c.peek()? {
        b'{' => {
            let depth = deeper(depth)?;
            // The members are read here, not with `Cursor::object`: that one reads a key that does not
            // decode as `""`, where the tree must fail as serde does.
            c.i += 1;
            let mut map = serde_json::Map::new();
            while c.peek() == Some(b'"') {
                let key = c.string()??;
                c.peek();
                c.i += 1; // the `:`
                let value = tree_at(c, depth)?;
                map.insert(key.into_owned(), value);
                c.separator();
            }
            c.i += 1; // the `}`
            Value::Object(map)
        }
        b'[' => {
            let depth = deeper(depth)?;
            c.i += 1;
            let mut items = Vec::new();
            while c.peek().is_some_and(|b| b != b']') {
                items.push(tree_at(c, depth)?);
                c.separator();
            }
            c.i += 1; // the `]`
            Value::Array(items)
        }
        b'"' => Value::String(c.string()??.into_owned()),
        b't' | b'f' | b'n' => match c.value() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::Null,
        },
        _ => Value::Number(c.value().parse().ok()?),
    })
}

/// The index just past the string whose opening quote is at `open`, and whether it has an escape.
#[inline]
pub(crate) fn string_end(b: &[u8], open: usize) -> (usize, bool) {
    let mut j = open + 1;
    let mut escaped = false;
    loop {
        j = scan::quote_or_backslash(b, j);
        match b.get(j) {
            Some(b'\\') => {
                escaped = true;
                j += 2;
            }
            Some(_) => return (j + 1, escaped),
            None => return (b.len(), escaped),
        }
    }
}

/// The text of a JSON string literal: borrowed when it has no escape, decoded otherwise (`None` when it is
/// not a string literal).
pub(crate) fn unquote(literal: &str, escaped: bool) -> Option<Cow<'_, str>> {
    match literal.get(1..literal.len().saturating_sub(1)) {
        Some(inner) if !escaped && literal.starts_with('"') => Some(Cow::Borrowed(inner)),
        _ => serde_json::from_str(literal).ok().map(Cow::Owned),
    }
}

/// The string a value's text (valid JSON) holds: `None` when the value is not a string, or is one that
/// cannot be decoded (a lone surrogate).
pub(crate) fn string_value(text: &str) -> Option<Cow<'_, str>> {
    if text.starts_with('"') {
        unquote(text, text.contains('\\'))
    } else {
        None
    }
}

/// What [`Cursor::object`] calls for each member: the cursor at its value, and its key.
type Member<'f, 'a> = dyn FnMut(&mut Cursor<'a>, Cow<'a, str>) -> Result<(), String> + 'f;

/// Structural reading of text known to be valid JSON ([`validate`] accepted it): where values start and
/// end, in one pass, without building them.
pub(crate) struct Cursor<'a> {
    pub(crate) text: &'a str,
    pub(crate) i: usize,
    /// Where its containers close (or none known: containers are then read through).
    ends: &'a [(usize, usize)],
    /// The first entry of `ends` that may be at or after the cursor.
    next_end: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`, which must be valid JSON, with where its containers close (as
    /// [`validate`] records them: the first to open, up to [`MAX_ENDS`]; or none).
    pub(crate) fn new(text: &'a str, ends: &'a [(usize, usize)]) -> Self {
        Self {
            text,
            i: 0,
            ends,
            next_end: 0,
        }
    }

    /// A cursor at offset `i` of `text` (valid JSON), with where its containers close as [`Cursor::new`]
    /// takes them: the entries before `i` are passed over at once.
    pub(crate) fn at(text: &'a str, ends: &'a [(usize, usize)], i: usize) -> Self {
        Self {
            text,
            i,
            ends,
            next_end: ends.partition_point(|e| e.0 < i),
        }
    }

    /// Where the container opening at `start` closes, when known.
    fn end_of(&mut self, start: usize) -> Option<usize> {
        while self.ends.get(self.next_end).is_some_and(|e| e.0 < start) {
            self.next_end += 1;
        }
        self.ends
            .get(self.next_end)
            .filter(|e| e.0 == start)
            .map(|e| e.1)
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace (the cursor moves to it).
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.i = whitespace(self.bytes(), self.i);
        self.bytes().get(self.i).copied()
    }

    /// Moves past one value and returns its text.
    pub(crate) fn value(&mut self) -> &'a str {
        self.peek();
        let b = self.bytes();
        let start = self.i;
        let mut i = start;
        match b.get(i) {
            Some(b'"') => i = string_end(b, i).0,
            Some(b'{' | b'[') if let Some(end) = self.end_of(start) => i = end,
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(&c) = b.get(i) {
                    match c {
                        b'"' => {
                            i = string_end(b, i).0;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => {
                while b.get(i).is_some_and(|c| {
                    !matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
                }) {
                    i += 1;
                }
            }
        }
        self.i = i;
        &self.text[start..i]
    }

    /// The string at the cursor, decoded, the cursor past it: `None`, with nothing consumed, when the value
    /// there is not a string; `Some(None)` when it is one that cannot be decoded (a lone surrogate).
    pub(crate) fn string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i;
        let (end, escaped) = string_end(self.bytes(), start);
        self.i = end;
        Some(unquote(&self.text[start..end], escaped))
    }

    /// Consumes a `null` if that is what comes next.
    pub(crate) fn null(&mut self) -> bool {
        let is_null = self.peek() == Some(b'n');
        if is_null {
            self.value();
        }
        is_null
    }

    /// After a member or an element: past the `,`.
    pub(crate) fn separator(&mut self) {
        if self.peek() == Some(b',') {
            self.i += 1;
        }
    }

    /// Calls `each(self, key)`, which consumes the value, for every member of the object at the cursor;
    /// `None` (nothing consumed) when it is not an object.
    pub(crate) fn object(
        &mut self,
        mut each: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), String>,
    ) -> Option<Result<(), String>> {
        self.object_with(&mut each)
    }

    /// [`Cursor::object`] compiled once for every caller (a review's decoding and a pod's steps read objects
    /// at a dozen places): the caller's code is called through a pointer, so the member loop, with the
    /// string and whitespace scans it inlines, stays one piece of code that the first reader brings into
    /// the instruction cache for the others.
    #[inline(never)]
    fn object_with(&mut self, each: &mut Member<'_, 'a>) -> Option<Result<(), String>> {
        if self.peek() != Some(b'{') {
            return None;
        }
        self.i += 1;
        while self.peek() == Some(b'"') {
            let start = self.i;
            let (end, escaped) = string_end(self.bytes(), start);
            self.i = end;
            let key = if escaped {
                unquote(&self.text[start..end], true).unwrap_or_default()
            } else {
                Cow::Borrowed(&self.text[start + 1..end - 1])
            };
            self.peek();
            self.i += 1; // the `:`
            if let Err(e) = each(self, key) {
                return Some(Err(e));
            }
            self.separator();
        }
        self.i += 1; // the `}`
        Some(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::de::IgnoredAny;

    fn serde_accepts(text: &str) -> bool {
        serde_json::from_str::<IgnoredAny>(text).is_ok()
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
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        // The innermost `[]` holds no value: MAX_DEPTH containers are around the deepest one.
        assert_eq!(
            validate(&nested(MAX_DEPTH + 1)).map(|e| e.len()),
            Some(MAX_DEPTH + 1)
        );
        assert!(serde_accepts(&nested(MAX_DEPTH + 2)));
        assert!(!is_valid(&nested(MAX_DEPTH + 2)), "deeper: left to serde");
        let wide = format!("[{}[]]", "{},".repeat(MAX_ENDS + 10));
        assert_eq!(
            validate(&wide).map(|e| e.len()),
            Some(MAX_ENDS),
            "recording stops"
        );
    }

    /// The members of the object at the cursor, as (key, value text).
    fn members(mut c: Cursor<'_>, out: &mut Vec<(String, String)>) {
        c.object(|c, key| {
            let value = c.value();
            out.push((key.into_owned(), value.to_owned()));
            Ok(())
        });
    }

    #[test]
    fn a_cursor_given_the_ends_reads_what_a_cursor_reading_through_reads() {
        let doc = r#" { "a" : [1, {"b": "}]"}, []] , "c":{"d":{"e":[[{}]]}}, "f":"x\"{", "g": {} ,"h":null} "#;
        let ends = validate(doc).unwrap();
        assert_eq!(ends.len(), 10, "{ends:?}");
        for &(open, close) in &ends {
            assert!(matches!(&doc[open..open + 1], "{" | "["));
            assert!(matches!(&doc[close - 1..close], "}" | "]"));
            assert!(is_valid(&doc[open..close]), "{}", &doc[open..close]);
        }
        let (mut with, mut without) = (Vec::new(), Vec::new());
        members(Cursor::new(doc, &ends), &mut with);
        members(Cursor::new(doc, &[]), &mut without);
        assert_eq!(with, without);
        assert_eq!(with.len(), 5);
        // Past the bound, the first containers to open keep their ends and the cursor reads through the rest.
        for max_ends in 0..ends.len() {
            let mut first = Vec::new();
            check(doc.as_bytes(), &mut first, max_ends).unwrap();
            assert_eq!(first, ends[..max_ends], "{max_ends}");
            let mut bounded = Vec::new();
            members(Cursor::new(doc, &first), &mut bounded);
            assert_eq!(bounded, without, "{max_ends}");
        }
        // A value cut out keeps the ends inside it, from its own start.
        let span = doc.find(r#"{"d""#).unwrap()..doc.find(r#", "f""#).unwrap();
        let inner = ends_within(&ends, span.clone());
        assert_eq!(inner.len(), 5);
        let (mut with, mut without) = (Vec::new(), Vec::new());
        members(Cursor::new(&doc[span.clone()], &inner), &mut with);
        members(Cursor::new(&doc[span], &[]), &mut without);
        assert_eq!(with, without);
        assert_eq!(with, [("d".to_owned(), r#"{"e":[[{}]]}"#.to_owned())]);
    }

    /// The tree built with the cursor is serde_json's, value for value; where serde_json fails on valid JSON
    /// (nesting, lone surrogates), it fails too.
    fn assert_tree_as_serde(text: &str) {
        assert!(is_valid(text), "{text:?}");
        let serde: Option<serde_json::Value> = serde_json::from_str(text).ok();
        assert_eq!(tree(text), serde, "{text:?}");
    }

    #[test]
    fn trees_are_serdes() {
        for text in [
            "null",
            " true ",
            "false",
            "0",
            "-0",
            "-12",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "1.5",
            "-1.5e3",
            "1E+400",
            "5e-324",
            "0.1000000000000000055511151231257827",
            r#""""#,
            r#""x\"y\u00e9\n\ud83d\ude00""#,
            r#""\ud800""#,
            r#""\udc00x""#,
            "{}",
            "[]",
            r#"{"a":1,"b":[true,null,{"c":"d"}],"a":2}"#,
            r#" { "k\u0041" : [ 1 , { } , [ ] ] , "z" : "" } "#,
            r#"{"\ud800":1}"#,
            r#"[{"a":[{"b":{}}]},"s",-0.0]"#,
        ] {
            assert_tree_as_serde(text);
        }
        for depth in [126, 127, 128, 129, 200] {
            let arrays = "[".repeat(depth) + &"]".repeat(depth);
            assert_tree_as_serde(&arrays);
            let objects = r#"{"a":"#.repeat(depth) + "1" + &"}".repeat(depth);
            assert_tree_as_serde(&objects);
        }
    }

    fn json_text() -> impl Strategy<Value = String> {
        let token = prop::sample::select(vec![
            "{", "}", "[", "]", ",", ":", "\"", "\"k\"", "\"v\"", "\\", "\\u00e9", "\\n", "0", "1",
            "-", ".", "e", "+", "true", "null", "fa", "lse", " ", "\n", "\t", "\u{1}", "é",
            "\"a\":", "[1,2]", "{}",
        ]);
        prop::collection::vec(token, 0..24).prop_map(|t| t.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Random texts over JSON's own characters: the validator agrees with serde on each.
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
                assert_tree_as_serde(&damaged);
            }
        }

        /// Any valid text of JSON's own characters: the tree is serde_json's.
        #[test]
        fn trees_agree_with_serde(text in json_text()) {
            if is_valid(&text) {
                assert_tree_as_serde(&text);
            }
        }
    }
}
