//! Structural reading of text known to be valid JSON (the [scanner](mod@super::scan) accepted it, or this crate
//! wrote it): where values start and end, in one pass, without building them ([`Cursor`]); the strings
//! they hold ([`string_value`]); and, where a caller needs one, the tree serde_json would build ([`tree`]).

use std::borrow::Cow;

use super::scan::{Ends, Stop, find, skip_space};

/// The entries of `ends` (of a whole text) for the value at `span` of it, with offsets from its start.
pub(crate) fn ends_within(ends: &[(usize, usize)], span: std::ops::Range<usize>) -> Ends {
    let first = ends.partition_point(|e| e.0 < span.start);
    let last = ends.partition_point(|e| e.0 < span.end);
    ends[first..last]
        .iter()
        .map(|&(open, close)| (open - span.start, close - span.start))
        .collect()
}

/// The tree of text known to be valid JSON: a value of a request the scanner accepted, or text this crate
/// wrote. The parse fails only where serde_json's does on valid JSON, past its 128 levels of nesting (no
/// Kubernetes object is that deep) or on a string that does not decode (a lone surrogate), and such a value
/// reads as `null`.
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
        j = find(b, j, Stop::Either(b'"', b'\\'));
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

/// Structural reading of text known to be valid JSON (the scanner accepted it): where values start and end,
/// in one pass, without building them.
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
    /// [`super::scan::scan`] records them: the first to open; or none).
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
        self.i = skip_space(self.bytes(), self.i);
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
    use crate::json::scan::tests::json_text;
    use crate::json::scan::{MAX_ENDS, scan};
    use proptest::prelude::*;

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
        let ends = scan(doc, MAX_ENDS).unwrap();
        assert_eq!(ends.len(), 10, "{ends:?}");
        for &(open, close) in &ends {
            assert!(matches!(&doc[open..open + 1], "{" | "["));
            assert!(matches!(&doc[close - 1..close], "}" | "]"));
            assert!(scan(&doc[open..close], 0).is_ok(), "{}", &doc[open..close]);
        }
        let (mut with, mut without) = (Vec::new(), Vec::new());
        members(Cursor::new(doc, &ends), &mut with);
        members(Cursor::new(doc, &[]), &mut without);
        assert_eq!(with, without);
        assert_eq!(with.len(), 5);
        // Past the bound, the first containers to open keep their ends and the cursor reads through the rest.
        for max_ends in 0..ends.len() {
            let first = scan(doc, max_ends).unwrap();
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
        assert!(scan(text, 0).is_ok(), "{text:?}");
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Any valid text of JSON's own characters: the tree is serde_json's.
        #[test]
        fn trees_agree_with_serde(text in json_text()) {
            if scan(&text, 0).is_ok() {
                assert_tree_as_serde(&text);
            }
        }
    }
}
