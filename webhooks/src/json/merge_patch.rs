//! `jsonpatch.MergePatch` of github.com/evanphx/json-patch (the root package, v4 API, OpenKruise's `patchPodMetadata`
//! `MergePatchJson` calls, spec/sidecarset.md §4.5), byte for byte.
//!
//! The library keeps every value as its raw text until the merge has to look inside it (a "lazy node"): an
//! object the patch merges into, or a value the patch brings in (whose nulls are pruned), becomes a Go map and
//! is written back with its keys sorted; everything else is written as it came, only compacted. So untouched
//! parts of the annotation keep their key order and number spelling (`1.50` stays `1.50`), where a plain
//! parse-merge-print would sort and normalise the whole value. Output escapes `<`, `>`, `&`, U+2028 and U+2029
//! as Go's `json.Marshal` does.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::cursor::{Cursor, string_end};
use super::go;
use super::scan::scan;

/// evanphx/json-patch's error for a document that is not JSON, or is `null`.
pub const BAD_DOCUMENT: &str = "Invalid JSON Document";
/// evanphx/json-patch's error for a patch that is not JSON, `null`, or neither an object nor an array.
pub const BAD_PATCH: &str = "Invalid JSON Patch";

/// A text the merge reads (the document or the patch) and where its containers close, so that opening a
/// value never reads through the values inside it: opening every level of a deep value reads it once.
#[derive(Clone, Copy)]
struct Source<'a> {
    text: &'a str,
    ends: &'a [(usize, usize)],
}

/// A value as the library holds it: raw text (compacted on output), or an object or array it opened, whose
/// members are other nodes of the [`Tree`]. `None` stands for JSON `null` (Go's nil `*lazyNode`).
enum Node<'a> {
    /// The value at `start..end` of `source`.
    Raw {
        source: Source<'a>,
        start: usize,
        end: usize,
    },
    /// A Go `map[string]*lazyNode`: sorted when written, the last of repeated keys wins.
    Doc(BTreeMap<Cow<'a, str>, Option<usize>>),
    Ary(Vec<Option<usize>>),
}

/// The nodes, by index. Every walk over them keeps its own stack, so no nesting Go accepts (10,000 levels)
/// can exhaust the thread's stack.
struct Tree<'a> {
    nodes: Vec<Node<'a>>,
}

impl<'a> Tree<'a> {
    /// A node for the value a cursor on `source` reads next; `None` for `null`.
    fn read(&mut self, source: Source<'a>, c: &mut Cursor<'a>) -> Option<usize> {
        c.peek();
        let start = c.i;
        (c.value() != "null").then(|| {
            self.nodes.push(Node::Raw {
                source,
                start,
                end: c.i,
            });
            self.nodes.len() - 1
        })
    }

    /// The node of a whole source, which is not `null`.
    fn top(&mut self, source: Source<'a>) -> usize {
        let node = self.read(source, &mut Cursor::new(source.text, source.ends));
        node.expect("null is refused before")
    }

    /// A cursor at raw node `i` when it is a container opening with `open`.
    fn cursor(&self, i: usize, open: u8) -> Option<(Source<'a>, Cursor<'a>)> {
        match self.nodes[i] {
            Node::Raw { source, start, .. } if source.text.as_bytes()[start] == open => {
                Some((source, Cursor::at(source.text, source.ends, start)))
            }
            _ => None,
        }
    }

    /// `lazyNode.intoDoc`: opens raw object text into a map; false when the value is not an object.
    fn open_doc(&mut self, i: usize) -> bool {
        if let Some((source, mut c)) = self.cursor(i, b'{') {
            let mut doc = BTreeMap::new();
            let _ = c.object(|c, key| {
                let value = self.read(source, c);
                doc.insert(key, value);
                Ok(())
            });
            self.nodes[i] = Node::Doc(doc);
        }
        matches!(self.nodes[i], Node::Doc(_))
    }

    /// `lazyNode.intoAry`.
    fn open_ary(&mut self, i: usize) -> bool {
        if let Some((source, mut c)) = self.cursor(i, b'[') {
            c.i += 1;
            let mut ary = Vec::new();
            while c.peek().is_some_and(|b| b != b']') {
                ary.push(self.read(source, &mut c));
                c.separator();
            }
            self.nodes[i] = Node::Ary(ary);
        }
        matches!(self.nodes[i], Node::Ary(_))
    }

    fn doc(&mut self, i: usize) -> &mut BTreeMap<Cow<'a, str>, Option<usize>> {
        match &mut self.nodes[i] {
            Node::Doc(doc) => doc,
            _ => unreachable!("opened by into_doc"),
        }
    }

    /// `mergeDocs(doc, patch)` for two opened objects, and the `merge` of every pair of objects under the
    /// same key below them. A value the patch brings in, or one that replaces a non-object, is pruned; a
    /// non-object patch replacing an object is taken as it is.
    fn merge_docs(&mut self, doc: usize, patch: usize) {
        let mut pairs = vec![(doc, patch)];
        while let Some((doc, patch)) = pairs.pop() {
            for (key, value) in std::mem::take(self.doc(patch)) {
                let Some(value) = value else {
                    self.doc(doc).remove(&key);
                    continue;
                };
                match self.doc(doc).get(&key).copied().flatten() {
                    Some(current) if self.open_doc(current) => {
                        if self.open_doc(value) {
                            pairs.push((current, value));
                            continue;
                        }
                    }
                    _ => self.prune_nulls(value),
                }
                self.doc(doc).insert(key, Some(value));
            }
        }
    }

    /// `pruneNulls`: every object and array under `i` opened, their nulls dropped (arrays too, in the v4 API
    /// OpenKruise imports; the library's v5 module keeps them).
    fn prune_nulls(&mut self, i: usize) {
        let mut open = vec![i];
        while let Some(i) = open.pop() {
            if self.open_doc(i) {
                let doc = self.doc(i);
                doc.retain(|_, v| v.is_some());
                open.extend(doc.values().flatten());
            } else if self.open_ary(i)
                && let Node::Ary(ary) = &mut self.nodes[i]
            {
                ary.retain(Option::is_some);
                open.extend(ary.iter().flatten());
            }
        }
    }

    /// Go's `json.Marshal` of node `root`: maps with sorted keys, raw text compacted.
    fn write(&self, root: usize, out: &mut String) {
        enum Part<'t> {
            Node(Option<usize>),
            Text(Cow<'t, str>),
        }
        let mut parts = vec![Part::Node(Some(root))];
        while let Some(part) = parts.pop() {
            let node = match part {
                Part::Text(text) => {
                    out.push_str(&text);
                    continue;
                }
                Part::Node(None) => {
                    out.push_str("null");
                    continue;
                }
                Part::Node(Some(i)) => &self.nodes[i],
            };
            match node {
                Node::Raw { source, start, end } => compact(&source.text[*start..*end], out),
                Node::Doc(doc) => {
                    out.push('{');
                    parts.push(Part::Text("}".into()));
                    for (n, (key, value)) in doc.iter().enumerate().rev() {
                        parts.push(Part::Node(*value));
                        parts.push(Part::Text(format!("{}:", go::to_string(key)).into()));
                        if n > 0 {
                            parts.push(Part::Text(",".into()));
                        }
                    }
                }
                Node::Ary(ary) => {
                    out.push('[');
                    parts.push(Part::Text("]".into()));
                    for (n, value) in ary.iter().enumerate().rev() {
                        parts.push(Part::Node(*value));
                        if n > 0 {
                            parts.push(Part::Text(",".into()));
                        }
                    }
                }
            }
        }
    }
}

/// What `json.Unmarshal` into a map makes of a text Go's `checkValid` accepted.
#[derive(PartialEq, Eq)]
enum Shape {
    Null,
    Object,
    Array,
    Scalar,
}

fn shape(text: &str) -> Shape {
    match text.trim_start().as_bytes().first() {
        Some(b'n') => Shape::Null,
        Some(b'{') => Shape::Object,
        Some(b'[') => Shape::Array,
        _ => Shape::Scalar,
    }
}

/// Applies the merge patch `patch` to `doc` (both JSON texts) as `jsonpatch.MergePatch` does.
///
/// # Errors
/// [`BAD_DOCUMENT`] or [`BAD_PATCH`], checked in the library's order.
pub fn merge_patch(doc: &str, patch: &str) -> Result<String, &'static str> {
    // Go's `checkValid` runs first: its syntax rules and its 10,000 levels of nesting.
    let doc_ends = scan(doc, usize::MAX).map_err(|_| BAD_DOCUMENT)?;
    let patch_ends = scan(patch, usize::MAX).map_err(|_| BAD_PATCH)?;
    let (doc_shape, patch_shape) = (shape(doc), shape(patch));
    if doc_shape == Shape::Null {
        return Err(BAD_DOCUMENT);
    }
    if patch_shape == Shape::Null {
        return Err(BAD_PATCH);
    }
    let doc_source = Source {
        text: doc,
        ends: &doc_ends,
    };
    let patch_source = Source {
        text: patch,
        ends: &patch_ends,
    };
    let mut tree = Tree { nodes: Vec::new() };
    let root = match (doc_shape, patch_shape) {
        (Shape::Object, Shape::Object) => {
            let (doc, patch) = (tree.top(doc_source), tree.top(patch_source));
            tree.open_doc(doc);
            tree.open_doc(patch);
            tree.merge_docs(doc, patch);
            doc
        }
        // Not a document on one side: the result is the patch itself, its nulls pruned.
        (_, Shape::Object | Shape::Array) => {
            let patch = tree.top(patch_source);
            tree.prune_nulls(patch);
            patch
        }
        _ => return Err(BAD_PATCH),
    };
    let mut text = String::with_capacity(doc.len() + patch.len());
    tree.write(root, &mut text);
    Ok(go::escape_like_go(&text))
}

/// Valid JSON text without the whitespace between tokens (`json.Compact`).
fn compact(text: &str, out: &mut String) {
    let b = text.as_bytes();
    let mut i = 0;
    let mut from = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = string_end(b, i).0,
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push_str(&text[from..i]);
                i += 1;
                from = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[from..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untouched_values_keep_their_text_and_merged_objects_are_sorted() {
        assert_eq!(
            merge_patch(r#"{"b":{"z":1,"a":2},"c":1}"#, r#"{"c":2}"#).unwrap(),
            r#"{"b":{"z":1,"a":2},"c":2}"#
        );
        assert_eq!(
            merge_patch(r#"{"r":1.50,"x":1e2}"#, r#"{"y":1}"#).unwrap(),
            r#"{"r":1.50,"x":1e2,"y":1}"#
        );
        // The top level is a Go map: sorted.
        assert_eq!(
            merge_patch(r#"{"z":1,"a":{"q":[3, 1]}}"#, r#"{"m":true}"#).unwrap(),
            r#"{"a":{"q":[3,1]},"m":true,"z":1}"#
        );
        // An object merged into is opened and sorted; its untouched members keep their text.
        assert_eq!(
            merge_patch(
                r#"{"b":{"z":{"y":1,"x":2},"a":1}}"#,
                r#"{"b":{"m":null,"a":3}}"#
            )
            .unwrap(),
            r#"{"b":{"a":3,"z":{"y":1,"x":2}}}"#
        );
    }

    #[test]
    fn values_the_patch_brings_in_are_opened_and_their_nulls_pruned() {
        assert_eq!(
            merge_patch(
                r#"{"a":1}"#,
                r#"{"n":{"z":{"k":null,"j":1},"y":null},"l":[{"b":null,"a":1},null]}"#
            )
            .unwrap(),
            r#"{"a":1,"l":[{"a":1}],"n":{"z":{"j":1}}}"#
        );
        // A scalar replaced by an object: the patch is pruned too.
        assert_eq!(
            merge_patch(r#"{"a":1}"#, r#"{"a":{"x":null,"y":2}}"#).unwrap(),
            r#"{"a":{"y":2}}"#
        );
        // An object replaced by a scalar or an array: as the patch says.
        assert_eq!(
            merge_patch(r#"{"a":{"x":1}}"#, r#"{"a":[1, {"k":null}]}"#).unwrap(),
            r#"{"a":[1,{"k":null}]}"#
        );
        // null removes a key, also one whose value was null.
        assert_eq!(
            merge_patch(r#"{"a":null,"b":1}"#, r#"{"a":null,"b":null}"#).unwrap(),
            "{}"
        );
        // A null current value is as absent.
        assert_eq!(
            merge_patch(r#"{"a":null}"#, r#"{"a":{"b":{"c":null}}}"#).unwrap(),
            r#"{"a":{"b":{}}}"#
        );
    }

    #[test]
    fn a_document_that_is_not_an_object_gives_way_to_the_patch() {
        assert_eq!(
            merge_patch("[1,2]", r#"{"b":null,"a":1}"#).unwrap(),
            r#"{"a":1}"#
        );
        assert_eq!(
            merge_patch(r#""text""#, r#"[ {"a":null} , null ]"#).unwrap(),
            r#"[{}]"#
        );
        assert_eq!(
            merge_patch(r#"{"a":1}"#, r#"[1]"#).unwrap(),
            "[1]",
            "an array patch replaces a document"
        );
    }

    #[test]
    fn nesting_as_deep_as_go_allows_is_merged_without_recursion() {
        // Go's scanner allows 10,000 levels. Every walk here keeps its own stack: this runs on a test
        // thread's 2 MiB stack.
        let nested = |depth: usize, leaf: &str| {
            format!("{}{leaf}{}", "{\"k\":".repeat(depth), "}".repeat(depth))
        };
        // 10,000 levels in the document; the patch meets it at level 9,998 and brings in an array.
        let doc = nested(9_999, "{\"x\":1}");
        let patch = nested(9_997, "{\"y\":null,\"z\":[null,{\"n\":null}]}");
        assert_eq!(
            merge_patch(&doc, &patch).unwrap(),
            nested(9_997, "{\"k\":{\"k\":{\"x\":1}},\"z\":[{}]}")
        );
        // A value 9,999 levels deep brought in whole, its innermost null pruned.
        let brought_in = format!("{{\"new\":{}}}", nested(9_998, "null"));
        assert_eq!(
            merge_patch("{}", &brought_in).unwrap(),
            format!("{{\"new\":{}}}", nested(9_997, "{}"))
        );
        assert_eq!(merge_patch(&nested(10_001, "1"), "{}"), Err(BAD_DOCUMENT));
        assert_eq!(merge_patch("{}", &nested(10_001, "1")), Err(BAD_PATCH));
    }

    #[test]
    fn errors_in_the_library_order() {
        assert_eq!(merge_patch("{", "{}"), Err(BAD_DOCUMENT));
        assert_eq!(merge_patch("{}", "{"), Err(BAD_PATCH));
        assert_eq!(
            merge_patch("null", "{"),
            Err(BAD_PATCH),
            "patch syntax first"
        );
        assert_eq!(merge_patch("null", "{}"), Err(BAD_DOCUMENT));
        assert_eq!(merge_patch("{}", "null"), Err(BAD_PATCH));
        assert_eq!(merge_patch("{}", "5"), Err(BAD_PATCH));
        assert_eq!(merge_patch(r#"{"a":1} x"#, "{}"), Err(BAD_DOCUMENT));
    }

    #[test]
    fn text_is_compacted_and_escaped_as_go_marshals() {
        assert_eq!(
            merge_patch(
                "{ \"html\" : \"<a href='x'>&</a>\",\n \"s\": \"a b\\\"} c\" }",
                r#"{"k<":"\u2028"}"#
            )
            .unwrap(),
            r#"{"html":"\u003ca href='x'\u003e\u0026\u003c/a\u003e","k\u003c":"\u2028","s":"a b\"} c"}"#
        );
        // Escapes in untouched strings stay as written.
        assert_eq!(
            merge_patch(r#"{"e":"\u00e9\/"}"#, r#"{"f":"é"}"#).unwrap(),
            r#"{"e":"\u00e9\/","f":"é"}"#
        );
        // Repeated keys: the last wins.
        assert_eq!(
            merge_patch(r#"{"a":1,"a":2}"#, r#"{"b":1}"#).unwrap(),
            r#"{"a":2,"b":1}"#
        );
    }
}
