//! `jsonpatch.MergePatch` of github.com/evanphx/json-patch (the root package, v4 API, OpenKruise's `patchPodMetadata`
//! `MergePatchJson` calls, spec/sidecarset.md §4.5), byte for byte.
//!
//! The library keeps every value as its raw text until the merge has to look inside it (a "lazy node"): an
//! object the patch merges into, or a value the patch brings in (whose nulls are pruned), becomes a Go map and
//! is written back with its keys sorted; everything else is written as it came, only compacted. So untouched
//! parts of the annotation keep their key order and number spelling (`1.50` stays `1.50`), where a plain
//! parse-merge-print would sort and normalise the whole value. Output escapes `<`, `>`, `&`, U+2028 and U+2029
//! as Go's `json.Marshal` does.

use std::collections::BTreeMap;

use crate::gojson;

/// evanphx/json-patch's error for a document that is not JSON, or is `null`.
pub const BAD_DOCUMENT: &str = "Invalid JSON Document";
/// evanphx/json-patch's error for a patch that is not JSON, `null`, or neither an object nor an array.
pub const BAD_PATCH: &str = "Invalid JSON Patch";

/// A value as the library holds it: raw text (compacted on output), or an object or array it opened.
/// `None` in a map or array stands for JSON `null` (Go's nil `*lazyNode`).
enum Node<'a> {
    Raw(&'a str),
    Doc(Doc<'a>),
    Ary(Vec<Option<Node<'a>>>),
}

/// A Go `map[string]*lazyNode`: sorted when written, the last of repeated keys wins.
type Doc<'a> = BTreeMap<String, Option<Node<'a>>>;

/// What `json.Unmarshal` into a map makes of a text.
#[derive(PartialEq, Eq)]
enum Shape {
    Invalid,
    Null,
    Object,
    Array,
    Scalar,
}

fn shape(text: &str) -> Shape {
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return Shape::Invalid;
    }
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
    let (doc_shape, patch_shape) = (shape(doc), shape(patch));
    if doc_shape == Shape::Invalid {
        return Err(BAD_DOCUMENT);
    }
    if patch_shape == Shape::Invalid {
        return Err(BAD_PATCH);
    }
    if doc_shape == Shape::Null {
        return Err(BAD_DOCUMENT);
    }
    if patch_shape == Shape::Null {
        return Err(BAD_PATCH);
    }
    let out = match (doc_shape, patch_shape) {
        (Shape::Object, Shape::Object) => {
            let mut doc = open_object(doc);
            merge_docs(&mut doc, open_object(patch));
            Node::Doc(doc)
        }
        // Not a document on one side: the result is the patch itself, its nulls pruned.
        (_, Shape::Object) => {
            let mut patch = open_object(patch);
            prune_doc_nulls(&mut patch);
            Node::Doc(patch)
        }
        (_, Shape::Array) => {
            let mut patch = open_array(patch);
            prune_ary_nulls(&mut patch);
            Node::Ary(patch)
        }
        _ => return Err(BAD_PATCH),
    };
    let mut text = String::with_capacity(doc.len() + patch.len());
    write(Some(&out), &mut text);
    Ok(gojson::escape_like_go(&text))
}

fn merge_docs<'a>(doc: &mut Doc<'a>, patch: Doc<'a>) {
    for (key, value) in patch {
        let Some(mut value) = value else {
            doc.remove(&key);
            continue;
        };
        match doc.get_mut(&key) {
            Some(Some(current)) => {
                let taken = std::mem::replace(current, Node::Raw("null"));
                *current = merge(taken, value);
            }
            _ => {
                prune_nulls(&mut value);
                doc.insert(key, Some(value));
            }
        }
    }
}

/// The library's `merge(cur, patch)`: objects merge, anything else is replaced by the patch (pruned only
/// when the current value is not an object).
fn merge<'a>(mut current: Node<'a>, mut patch: Node<'a>) -> Node<'a> {
    if into_doc(&mut current).is_none() {
        prune_nulls(&mut patch);
        return patch;
    }
    let Some(patch_doc) = into_doc(&mut patch) else {
        return patch;
    };
    let patch_doc = std::mem::take(patch_doc);
    if let Some(doc) = into_doc(&mut current) {
        merge_docs(doc, patch_doc);
    }
    current
}

fn prune_nulls(node: &mut Node<'_>) {
    if let Some(doc) = into_doc(node) {
        prune_doc_nulls(doc);
    } else if let Some(ary) = into_ary(node) {
        prune_ary_nulls(ary);
    }
}

fn prune_doc_nulls(doc: &mut Doc<'_>) {
    doc.retain(|_, v| v.is_some());
    for value in doc.values_mut().flatten() {
        prune_nulls(value);
    }
}

/// Nulls are dropped from arrays too (the v4 API OpenKruise imports; the library's v5 module keeps them).
fn prune_ary_nulls(ary: &mut Vec<Option<Node<'_>>>) {
    ary.retain(Option::is_some);
    for value in ary.iter_mut().flatten() {
        prune_nulls(value);
    }
}

/// `lazyNode.intoDoc`: opens raw object text into a map; `None` when the value is not an object.
fn into_doc<'n, 'a>(node: &'n mut Node<'a>) -> Option<&'n mut Doc<'a>> {
    if let Node::Raw(text) = node
        && text.starts_with('{')
    {
        *node = Node::Doc(open_object(text));
    }
    match node {
        Node::Doc(doc) => Some(doc),
        _ => None,
    }
}

/// `lazyNode.intoAry`.
fn into_ary<'n, 'a>(node: &'n mut Node<'a>) -> Option<&'n mut Vec<Option<Node<'a>>>> {
    if let Node::Raw(text) = node
        && text.starts_with('[')
    {
        *node = Node::Ary(open_array(text));
    }
    match node {
        Node::Ary(ary) => Some(ary),
        _ => None,
    }
}

fn raw_node(text: &str) -> Option<Node<'_>> {
    (text != "null").then_some(Node::Raw(text))
}

/// The members of valid JSON object text (surrounding whitespace allowed), values as raw text.
fn open_object(text: &str) -> Doc<'_> {
    let b = text.as_bytes();
    let mut doc = Doc::new();
    let mut i = skip_ws(b, 0) + 1;
    loop {
        i = skip_ws(b, i);
        if i >= b.len() || b[i] == b'}' {
            return doc;
        }
        let key_end = value_end(b, i);
        let key: String = serde_json::from_str(&text[i..key_end]).unwrap_or_default();
        i = skip_ws(b, key_end) + 1; // the colon
        i = skip_ws(b, i);
        let end = value_end(b, i);
        doc.insert(key, raw_node(&text[i..end]));
        i = skip_ws(b, end);
        if i < b.len() && b[i] == b',' {
            i += 1;
        }
    }
}

/// The elements of valid JSON array text, as raw text.
fn open_array(text: &str) -> Vec<Option<Node<'_>>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = skip_ws(b, 0) + 1;
    loop {
        i = skip_ws(b, i);
        if i >= b.len() || b[i] == b']' {
            return out;
        }
        let end = value_end(b, i);
        out.push(raw_node(&text[i..end]));
        i = skip_ws(b, end);
        if i < b.len() && b[i] == b',' {
            i += 1;
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The end of the valid JSON value starting at `i`.
fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            j
        }
    }
}

/// The index after the closing quote of the string opening at `i`.
fn string_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    j
}

/// Go's `json.Marshal` of a node: maps with sorted keys, raw text compacted.
fn write(node: Option<&Node<'_>>, out: &mut String) {
    match node {
        None => out.push_str("null"),
        Some(Node::Raw(text)) => compact(text, out),
        Some(Node::Doc(doc)) => {
            out.push('{');
            for (n, (key, value)) in doc.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&gojson::to_string(key));
                out.push(':');
                write(value.as_ref(), out);
            }
            out.push('}');
        }
        Some(Node::Ary(ary)) => {
            out.push('[');
            for (n, value) in ary.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write(value.as_ref(), out);
            }
            out.push(']');
        }
    }
}

/// Valid JSON text without the whitespace between tokens (`json.Compact`).
fn compact(text: &str, out: &mut String) {
    let b = text.as_bytes();
    let mut i = 0;
    let mut from = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = string_end(b, i),
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
