//! A pod as the request carries it, parsed for the mutating chain.
//!
//! Everything is a `serde_json::Value` except
//! - the elements of `spec.containers`, `spec.initContainers` and `spec.volumes` ([`RawList`]), which stay
//!   raw JSON borrowed from the request, split into members in the same pass, each member parsed when a
//!   step first reads it ([`RawList::iter`], [`RawContainer::get`]), or its elements read and copied as
//!   text ([`RawContainer::elements`]);
//! - the members of `metadata` and `spec` no step of the chain writes or reads as a tree: only those of
//!   [`METADATA_FIELDS`] and [`SPEC_FIELDS`] are in [`RawPod::pod`]; the others (managedFields, tolerations,
//!   affinity, labels, ownerReferences, scalars, …) are kept as text, untouched, read from it where a step
//!   needs them ([`RawPod::received`], [`RawPod::member`]), and come back in [`RawPod::to_value`]. A step
//!   that writes another field adds it to those lists.
//!
//! Those parts are most of a pod's bytes, and injection usually needs only the container and volume names,
//! so a pod create neither builds, clones, diffs nor frees them. A step that changes a list says so with
//! [`RawList::set`]: the new list as original elements (by index) and new ones. The patch
//! ([`RawPod::into_patch`]) is a diff of the rest of the pod plus, per list, removals and insertions that
//! leave untouched elements byte for byte as they came, unknown fields included.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

use serde_json::{Map, Value};

use crate::admission::RawJson;
use crate::json::{Cursor, string_value, valid_tree};
use crate::patch::{self, Json, Op, Step};

/// How a container list appeared in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presence {
    /// No key (or no spec).
    Absent,
    /// `null`.
    Null,
    /// A list.
    List,
}

/// One element of a list a step has rewritten.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// The element at this index of the list as received, unchanged.
    Original(usize),
    /// An element the step wrote.
    New(Json),
}

/// `spec.containers`, `spec.initContainers` or `spec.volumes` of the pod: a list of named objects.
#[derive(Debug)]
pub struct RawList<'a> {
    key: &'static str,
    presence: Presence,
    /// The elements as received.
    elements: Vec<Element<'a>>,
    /// Every element's members, in order: an element's are `members[element.members.clone()]`.
    members: Vec<Member<'a>>,
    result: Option<Vec<Item>>,
}

/// One element of a [`RawList`] as received.
#[derive(Debug)]
struct Element<'a> {
    /// Its text.
    text: &'a str,
    /// Where its members are in the list's `members`.
    members: Range<usize>,
    /// Its `name` member (`None` when absent or `null`).
    name: Option<Cow<'a, str>>,
}

/// A member of a container as received: its value's text, parsed on its first read, so a step that reads a
/// container's `env` does not build its probes, ports and image.
#[derive(Debug)]
struct Member<'a> {
    key: Cow<'a, str>,
    text: &'a str,
    value: OnceCell<Value>,
}

/// The member `key` of a container's members (the last one when the key is written twice, as decoding
/// does).
fn member<'m, 'a>(members: &'m [Member<'a>], key: &str) -> Option<&'m Member<'a>> {
    members.iter().rev().find(|m| m.key == key)
}

/// One element (a container, a volume) as received (see [`RawList::iter`]).
#[derive(Debug, Clone, Copy)]
pub struct RawContainer<'l> {
    name: &'l str,
    members: &'l [Member<'l>],
}

impl<'l> RawContainer<'l> {
    /// Its name as the list read it (`""` when it has none), without parsing the member again.
    pub fn name(self) -> &'l str {
        self.name
    }

    /// The member `key` (the last one when the key is written twice, as decoding does).
    pub fn get(self, key: &str) -> Option<&'l Value> {
        member(self.members, key).map(|m| m.value.get_or_init(|| valid_tree(m.text)))
    }

    /// Whether the member `key` may mention `word`: its text has it, or has an escape that could spell it.
    /// A test without parsing, so a step can skip members that cannot hold what it looks for.
    pub fn may_contain(self, key: &str, word: &str) -> bool {
        member(self.members, key).is_some_and(|m| m.text.contains(word) || m.text.contains('\\'))
    }

    /// The string member `key`, `""` when absent or not a string.
    pub fn str(self, key: &str) -> &'l str {
        self.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// The elements of the list member `key` as text (none when absent or not a list): read from the
    /// member's text, which is not parsed into a tree.
    pub fn elements(self, key: &str) -> impl Iterator<Item = RawElement<'l>> + use<'l> {
        elements_of(member(self.members, key).map_or("", |m| m.text))
    }

    /// The elements of the list member `key` (none when absent or not a list).
    pub fn list(self, key: &str) -> impl Iterator<Item = &'l Value> {
        self.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    }
}

/// The elements of the list whose text is `text`, valid JSON (none when it is not a list).
pub fn elements_of(text: &str) -> impl Iterator<Item = RawElement<'_>> {
    let mut c = Cursor::new(text, &[]);
    let list = c.peek() == Some(b'[');
    c.i += 1;
    std::iter::from_fn(move || {
        if !list || c.peek().is_none_or(|b| b == b']') {
            return None;
        }
        let text = c.value();
        c.separator();
        Some(RawElement { text })
    })
}

/// An element of a container's list member as received (an env var, a mount, a device): its text, whose
/// string members are read from it on demand, without building a tree ([`RawContainer::elements`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawElement<'l> {
    text: &'l str,
}

impl<'l> RawElement<'l> {
    /// Its text, as received.
    pub fn text(self) -> &'l str {
        self.text
    }

    /// Its string member `key` (the last one when the key is written twice, as decoding does), `""` when
    /// absent, not a string, or when the element is not an object: as `Value::get` then `as_str` reads it.
    pub fn str(self, key: &str) -> Cow<'l, str> {
        let [value] = self.strs([key]);
        value
    }

    /// Its string members `keys`, each as [`RawElement::str`] reads it, in one pass over the text.
    pub fn strs<const N: usize>(self, keys: [&str; N]) -> [Cow<'l, str>; N] {
        self.members(keys)
            .map(|value| value.and_then(string_value).unwrap_or_default())
    }

    /// The texts of its members `keys` (the last one when a key is written twice), in one pass: `None` for
    /// one that is absent, and for all when the element is not an object.
    pub fn members<const N: usize>(self, keys: [&str; N]) -> [Option<&'l str>; N] {
        let mut found = [None; N];
        let _ = Cursor::new(self.text, &[]).object(|c, k| {
            let value = c.value();
            if let Some(i) = keys.iter().position(|key| *key == k) {
                found[i] = Some(value);
            }
            Ok(())
        });
        found
    }
}

/// A container's name from the text of its `name` member: a string, or `null` for none.
fn name_of(text: &str) -> Result<Option<Cow<'_, str>>, ()> {
    match text.as_bytes().first() {
        Some(b'"') => string_value(text).map(Some).ok_or(()),
        Some(b'n') => Ok(None),
        _ => Err(()),
    }
}

impl<'a> RawList<'a> {
    fn new(key: &'static str, presence: Presence) -> Self {
        Self {
            key,
            presence,
            elements: Vec::new(),
            members: Vec::new(),
            result: None,
        }
    }

    /// Reads the list at the cursor in one pass: each element's text, members and name.
    fn read(key: &'static str, c: &mut Cursor<'a>) -> Result<Self, String> {
        if c.null() {
            return Ok(Self::new(key, Presence::Null));
        }
        if c.peek() != Some(b'[') {
            return Err(format!("spec.{key}: expected a list of objects"));
        }
        c.i += 1;
        let mut list = Self::new(key, Presence::List);
        // Room for a few containers of a dozen members each: no regrowth on a usual pod.
        list.elements.reserve(4);
        list.members.reserve(32);
        while c.peek().is_some_and(|b| b != b']') {
            let index = list.elements.len();
            let (start, first) = (c.i, list.members.len());
            let members = &mut list.members;
            c.object(|c, key| {
                let text = c.value();
                members.push(Member {
                    key,
                    text,
                    value: OnceCell::new(),
                });
                Ok(())
            })
            .ok_or_else(|| format!("spec.{key}[{index}]: expected an object"))??;
            let span = first..list.members.len();
            let name = match member(&list.members[span.clone()], "name") {
                Some(m) => name_of(m.text)
                    .map_err(|()| format!("spec.{key}[{index}].name: expected a string"))?,
                None => None,
            };
            list.elements.push(Element {
                text: &c.text[start..c.i],
                members: span,
                name,
            });
            c.separator();
        }
        c.i += 1; // the `]`
        Ok(list)
    }

    /// Number of elements as received.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    /// Whether the list as received is empty (or absent).
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// The name of the element at `index` as received (`""` when it has none).
    pub fn name(&self, index: usize) -> &str {
        self.elements
            .get(index)
            .and_then(|e| e.name.as_deref())
            .unwrap_or("")
    }

    /// The elements as received, in order.
    pub fn iter(&self) -> impl Iterator<Item = RawContainer<'_>> + '_ {
        self.elements.iter().map(|e| RawContainer {
            name: e.name.as_deref().unwrap_or(""),
            members: &self.members[e.members.clone()],
        })
    }

    /// The element at `index` as received, parsed whole (`null` past the end).
    pub fn value(&self, index: usize) -> Value {
        self.elements
            .get(index)
            .map_or(Value::Null, |e| valid_tree(e.text))
    }

    /// Replaces the list: `items` refer to elements as received by index, or are new.
    pub fn set(&mut self, items: Vec<Item>) {
        self.result = Some(items);
    }

    fn value_of(&self, item: &Item) -> Value {
        match item {
            Item::Original(i) => self.value(*i),
            Item::New(v) => v.to_value(),
        }
    }

    fn pointer(&self, index: Option<usize>) -> String {
        let list = [Step::Key("spec"), Step::Key(self.key)];
        patch::pointer(list.into_iter().chain(index.map(Step::Index)))
    }

    /// Operations turning the list as received into the result (none when it was not set or is the same).
    fn into_ops(mut self, ops: &mut Vec<Op>) {
        let Some(items) = self.result.take() else {
            return;
        };
        let n = self.elements.len();
        let mut kept = vec![false; n];
        let mut last = None;
        let mut in_order = self.presence == Presence::List;
        for item in &items {
            if let Item::Original(i) = *item {
                in_order &= i < n && last.is_none_or(|l| l < i);
                last = Some(i);
                if i < n {
                    kept[i] = true;
                }
            }
        }
        if !in_order {
            // The whole list as text: original elements byte for byte as received, new ones as written.
            let mut text = Vec::with_capacity(1024);
            text.push(b'[');
            for (j, item) in items.iter().enumerate() {
                if j > 0 {
                    text.push(b',');
                }
                match item {
                    Item::Original(i) => {
                        let element = self.elements.get(*i).map_or("null", |e| e.text);
                        text.extend_from_slice(element.as_bytes());
                    }
                    Item::New(v) => v.write(&mut text),
                }
            }
            text.push(b']');
            let value = Json::Text(patch::written_text(text));
            let path = self.pointer(None);
            ops.push(if self.presence == Presence::Absent {
                Op::Add { path, value }
            } else {
                Op::Replace { path, value }
            });
            return;
        }
        // Removed originals from the back, then new elements at their final index in ascending order: each
        // add lands after every element before it is already in place.
        for i in (0..n).rev().filter(|&i| !kept[i]) {
            ops.push(Op::Remove {
                path: self.pointer(Some(i)),
            });
        }
        for (p, item) in items.into_iter().enumerate() {
            if let Item::New(value) = item {
                ops.push(Op::Add {
                    path: self.pointer(Some(p)),
                    value,
                });
            }
        }
    }

    fn current(&self) -> Option<Value> {
        match (&self.result, self.presence) {
            (Some(items), _) => Some(Value::Array(
                items.iter().map(|i| self.value_of(i)).collect(),
            )),
            (None, Presence::Absent) => None,
            (None, Presence::Null) => Some(Value::Null),
            (None, Presence::List) => Some(Value::Array(
                self.elements.iter().map(|e| valid_tree(e.text)).collect(),
            )),
        }
    }
}

/// The member at `path` (keys from the root) of a JSON value. `Value::pointer` without its cost: it unescapes
/// every token of a pointer into two fresh strings.
pub fn at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// The metadata fields the chain's steps write or read as trees, so the ones [`RawPod::pod`] holds. A field
/// steps only read may stay text and be read from it ([`RawPod::received`], [`RawPod::member`]):
/// `ownerReferences` and `labels`, which would otherwise be built, copied, compared and freed on every pod
/// create. A step that writes one of them adds it here.
pub const METADATA_FIELDS: &[&str] = &["name", "namespace", "annotations", "deletionTimestamp"];

/// The spec fields the chain's steps read or write (besides the lists kept raw), so the ones
/// [`RawPod::pod`] holds.
pub const SPEC_FIELDS: &[&str] = &["imagePullSecrets", "readinessGates"];

/// A member of `metadata` or `spec` outside [`METADATA_FIELDS`] / [`SPEC_FIELDS`], as text.
#[derive(Debug)]
struct Kept<'a> {
    section: &'static str,
    key: Cow<'a, str>,
    text: &'a str,
}

/// The pod of a request: [`RawPod::pod`] holds everything but the three lists and the members of `metadata`
/// and `spec` outside [`METADATA_FIELDS`] and [`SPEC_FIELDS`].
#[derive(Debug)]
pub struct RawPod<'a> {
    /// The pod without `spec.containers`, `spec.initContainers`, `spec.volumes`, and the members of
    /// `metadata` and `spec` outside [`METADATA_FIELDS`] and [`SPEC_FIELDS`].
    pub pod: Value,
    /// The members of `metadata` and `spec` outside [`METADATA_FIELDS`] and [`SPEC_FIELDS`], in order.
    kept: Vec<Kept<'a>>,
    /// `spec.initContainers`.
    pub init_containers: RawList<'a>,
    /// `spec.containers`.
    pub containers: RawList<'a>,
    /// `spec.volumes`.
    pub volumes: RawList<'a>,
    /// String values a step wrote together with their JSON string literal ([`RawPod::string_literal`]).
    literals: Vec<(String, Box<str>)>,
}

/// The tree of a member of the pod (valid JSON); where it cannot be built, serde_json's message.
fn value(text: &str) -> Result<Value, String> {
    crate::json::tree(text).ok_or_else(|| match serde_json::from_str::<Value>(text) {
        Err(e) => e.to_string(),
        Ok(_) => "invalid JSON value".to_owned(),
    })
}

impl<'a> RawPod<'a> {
    /// Reads the pod of a request (a [`RawJson`], so known to be valid JSON).
    ///
    /// # Errors
    /// A message when it is not an object, its spec is neither an object nor null, or a container list is
    /// not a list of objects with string names.
    pub fn parse(raw: &'a RawJson) -> Result<Self, String> {
        Self::parse_valid(raw.cursor())
    }

    /// [`RawPod::parse`] of text [`crate::json::validate`] accepted.
    fn parse_valid(mut cursor: Cursor<'a>) -> Result<Self, String> {
        let mut top = Map::new();
        let absent = || {
            ["initContainers", "containers", "volumes"].map(|k| RawList::new(k, Presence::Absent))
        };
        let mut lists = absent();
        let mut kept: Vec<Kept<'a>> = Vec::with_capacity(16);
        cursor
            .object(|c, key| {
                let (section, fields): (&'static str, &[&str]) = match &*key {
                    "metadata" => ("metadata", METADATA_FIELDS),
                    "spec" => ("spec", SPEC_FIELDS),
                    _ => {
                        top.insert(key.into_owned(), value(c.value())?);
                        return Ok(());
                    }
                };
                // A section written twice: the last one stands, as when decoding.
                kept.retain(|k| k.section != section);
                if section == "spec" {
                    lists = absent();
                }
                if c.null() {
                    top.insert(section.into(), Value::Null);
                    return Ok(());
                }
                let mut parsed = Map::new();
                c.object(|c, key| {
                    let list = lists.iter_mut().find(|l| section == "spec" && l.key == key);
                    if let Some(list) = list {
                        *list = RawList::read(list.key, c)?;
                    } else if fields.contains(&&*key) {
                        parsed.insert(key.into_owned(), value(c.value())?);
                    } else {
                        let text = c.value();
                        kept.push(Kept { section, key, text });
                    }
                    Ok(())
                })
                .ok_or_else(|| format!("{section}: expected an object"))??;
                top.insert(section.into(), Value::Object(parsed));
                Ok(())
            })
            .ok_or(
                "json: cannot unmarshal into Go value of type v1.Pod: expected a pod object",
            )??;
        let [init_containers, containers, volumes] = lists;
        Ok(Self {
            pod: Value::Object(top),
            kept,
            init_containers,
            containers,
            volumes,
            literals: Vec::new(),
        })
    }

    /// [`RawPod::parse`] of text that may not be JSON.
    ///
    /// # Errors
    /// The JSON error, or those of [`RawPod::parse`].
    pub fn parse_str(text: &'a str) -> Result<Self, String> {
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| e.to_string())?;
        Self::parse_valid(Cursor::new(text, &[]))
    }

    /// The whole pod as it stands, lists and kept members included.
    pub fn to_value(&self) -> Value {
        let mut pod = self.pod.clone();
        let lists = [&self.init_containers, &self.containers, &self.volumes]
            .map(|l| ("spec", l.key, l.current()));
        // Reversed: with a key written twice, the last one wins, as when reading JSON into a map.
        let kept = self
            .kept
            .iter()
            .rev()
            .map(|k| (k.section, &*k.key, Some(valid_tree(k.text))));
        for (section, key, value) in kept.chain(lists) {
            let Some(value) = value else { continue };
            if let Some(section) = pod.as_object_mut().map(|p| {
                p.entry(section)
                    .or_insert_with(|| Value::Object(Map::new()))
            }) {
                if section.is_null() {
                    *section = Value::Object(Map::new());
                }
                if let Some(section) = section.as_object_mut() {
                    // A kept member a step wrote anyway: the step's value stands.
                    section.entry(key).or_insert(value);
                }
            }
        }
        pod
    }

    /// The text of the member `key` of `section` (`metadata`, `spec`) as received, when it is one of those
    /// kept as text (outside [`METADATA_FIELDS`] / [`SPEC_FIELDS`]; the last one when written twice).
    pub fn received(&self, section: &str, key: &str) -> Option<&'a str> {
        self.kept
            .iter()
            .rev()
            .find(|k| k.section == section && k.key == key)
            .map(|k| k.text)
    }

    /// The member `key` of `section` as it stands: as a step wrote it into [`RawPod::pod`], or else as
    /// received, built from its text when it is kept as text.
    pub fn member(&self, section: &str, key: &str) -> Option<Cow<'_, Value>> {
        match self.pod.get(section).and_then(|s| s.get(key)) {
            Some(value) => Some(Cow::Borrowed(value)),
            None => self
                .received(section, key)
                .map(|text| Cow::Owned(valid_tree(text))),
        }
    }

    /// Records that a step set a string value `plain` whose JSON string literal (quotes included, as
    /// [`patch::write_str`] writes it) it wrote too: an operation whose value is or holds that string copies the
    /// literal instead of escaping the string again (a hash annotation is JSON text, with a quote every few
    /// bytes).
    pub(crate) fn string_literal(&mut self, plain: String, literal: Box<str>) {
        self.literals.push((plain, literal));
    }

    /// The patch from the pod as received (`original` is [`RawPod::pod`] as it was then) to this pod.
    pub fn into_patch(self, original: &Value) -> Vec<Op> {
        // A step that wrote a member kept as text is diffed against that member as received. Steps
        // rarely do: the sections are searched only when one holds a member outside its fields.
        let sections =
            [("metadata", METADATA_FIELDS), ("spec", SPEC_FIELDS)].map(|(name, fields)| {
                let section = self.pod.get(name).and_then(Value::as_object);
                (
                    name,
                    section.filter(|s| s.keys().any(|k| !fields.contains(&k.as_str()))),
                )
            });
        let written = |k: &&Kept<'_>| {
            sections.iter().any(|(name, section)| {
                *name == k.section && section.is_some_and(|s| s.contains_key(&*k.key))
            })
        };
        let mut ops = if !self.kept.iter().any(|k| written(&k)) {
            patch::diff_owned(original, self.pod)
        } else {
            let mut original = original.clone();
            for k in self.kept.iter().filter(written) {
                if let Some(section) = original.get_mut(k.section).and_then(Value::as_object_mut) {
                    section.insert(k.key.clone().into_owned(), valid_tree(k.text));
                }
            }
            patch::diff_owned(&original, self.pod)
        };
        if !self.literals.is_empty() {
            with_literals(&mut ops, &self.literals);
        }
        self.init_containers.into_ops(&mut ops);
        self.containers.into_ops(&mut ops);
        self.volumes.into_ops(&mut ops);
        ops
    }
}

/// Writes as text the values of `ops` that are or hold one of the strings of `literals`, copying their
/// literals.
fn with_literals(ops: &mut [Op], literals: &[(String, Box<str>)]) {
    fn find<'l>(literals: &'l [(String, Box<str>)], s: &str) -> Option<&'l str> {
        literals
            .iter()
            .find(|(plain, _)| plain == s)
            .map(|(_, literal)| &**literal)
    }
    let literal = |s: &str| find(literals, s);
    fn holds<'l>(value: &Value, literal: &impl Fn(&str) -> Option<&'l str>) -> bool {
        match value {
            Value::String(s) => literal(s).is_some(),
            Value::Object(map) => map.values().any(|v| holds(v, literal)),
            _ => false,
        }
    }
    for op in ops {
        if let Op::Add { value, .. } | Op::Replace { value, .. } = op
            && let Json::Value(tree) = value
            && holds(tree, &literal)
        {
            let mut text = Vec::with_capacity(1024);
            patch::write_value_with(&mut text, tree, &literal);
            *value = Json::Text(patch::written_text(text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(pod: &Value, edit: impl FnOnce(&mut RawPod<'_>)) -> (Value, Vec<Op>) {
        let text = pod.to_string();
        let mut doc = RawPod::parse_str(&text).unwrap();
        let original = doc.pod.clone();
        edit(&mut doc);
        let expected = doc.to_value();
        let ops = doc.into_patch(&original);
        assert_eq!(patch::apply(pod, &ops).unwrap(), expected, "{ops:?}");
        (expected, ops)
    }

    #[test]
    fn untouched_lists_stay_raw_and_give_no_operations() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "x-unknown": {"k": 1}}], "nodeName": "n"}});
        let text = pod.to_string();
        let doc = RawPod::parse_str(&text).unwrap();
        assert_eq!(doc.pod, json!({"metadata": {"name": "p"}, "spec": {}}));
        assert_eq!(doc.containers.len(), 1);
        assert_eq!(doc.containers.name(0), "a");
        assert_eq!(doc.to_value(), pod);
        let (_, ops) = round_trip(&pod, |_| {});
        assert!(ops.is_empty());
    }

    #[test]
    fn insertions_and_replacements_keep_originals_untouched() {
        let pod = json!({"spec": {"containers": [{"name": "a", "unknown": 1}, {"name": "b"}, {"name": "c"}]}});
        let (result, ops) = round_trip(&pod, |doc| {
            doc.containers.set(vec![
                Item::New(json!({"name": "s0"}).into()),
                Item::Original(0),
                Item::New(json!({"name": "b", "image": "new"}).into()),
                Item::Original(2),
                Item::New(json!({"name": "s1"}).into()),
            ]);
        });
        assert_eq!(
            result["spec"]["containers"],
            json!([{"name": "s0"}, {"name": "a", "unknown": 1}, {"name": "b", "image": "new"}, {"name": "c"}, {"name": "s1"}])
        );
        let paths: Vec<String> = ops
            .iter()
            .map(|op| format!("{} {}", op.name(), op.path()))
            .collect();
        assert_eq!(
            paths,
            [
                "remove /spec/containers/1",
                "add /spec/containers/0",
                "add /spec/containers/2",
                "add /spec/containers/4"
            ]
        );
    }

    #[test]
    fn absent_null_and_reordered_lists_are_written_whole() {
        for pod in [
            json!({"metadata": {}}),
            json!({"spec": null}),
            json!({"spec": {"initContainers": null}}),
            json!({"spec": {"initContainers": []}}),
        ] {
            let (result, _) = round_trip(&pod, |doc| {
                if doc.pod.get("spec").is_none_or(Value::is_null) {
                    doc.pod["spec"] = json!({});
                }
                doc.init_containers
                    .set(vec![Item::New(json!({"name": "i"}).into())]);
            });
            assert_eq!(
                result["spec"]["initContainers"],
                json!([{"name": "i"}]),
                "{pod}"
            );
        }
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let (result, ops) = round_trip(&pod, |doc| {
            doc.containers
                .set(vec![Item::Original(1), Item::Original(0)]);
        });
        assert_eq!(
            result["spec"]["containers"],
            json!([{"name": "b"}, {"name": "a"}])
        );
        assert_eq!(ops.len(), 1);
    }

    #[test]
    fn names_are_read_in_any_layout() {
        let text = r#"{"spec": {"containers": [{"name":"plain","image":"i"}, {"image": "i", "name": "later"},
            {"name":"esc\"aped"}, {"name":"x\u0041"}, { "name" : "spaced" }, {"image": "nameless"}, {"name": null}]}}"#;
        let doc = RawPod::parse_str(text).unwrap();
        let names: Vec<&str> = (0..doc.containers.len())
            .map(|i| doc.containers.name(i))
            .collect();
        assert_eq!(
            names,
            ["plain", "later", "esc\"aped", "xA", "spaced", "", ""]
        );
        assert!(
            matches!(doc.containers.elements[0].name, Some(Cow::Borrowed(_))),
            "a plain name is borrowed"
        );
        let text = r#"{"spec": {"containers": [{"name": "first", "name": "last"}]}}"#;
        assert_eq!(RawPod::parse_str(text).unwrap().containers.name(0), "last");
    }

    #[test]
    fn fields_no_step_reads_stay_text_and_written_ones_diff_against_the_request() {
        let pod = json!({
            "metadata": {"name": "p", "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}], "uid": "u"},
            "spec": {"tolerations": [{"key": "k"}], "readinessGates": [], "nodeName": "n", "volumes": [{"name": "v"}]},
        });
        let text = pod.to_string();
        let doc = RawPod::parse_str(&text).unwrap();
        assert_eq!(
            doc.pod,
            json!({"metadata": {"name": "p"}, "spec": {"readinessGates": []}})
        );
        assert_eq!(doc.volumes.name(0), "v");
        assert_eq!(doc.to_value(), pod);
        let (result, ops) = round_trip(&pod, |doc| {
            doc.pod["spec"]["nodeName"] = json!("m");
            doc.pod["metadata"]["uid"] = json!("w");
        });
        assert_eq!(result["spec"]["nodeName"], "m");
        assert_eq!(result["spec"]["tolerations"], json!([{"key": "k"}]));
        assert_eq!(
            result["metadata"]["managedFields"],
            pod["metadata"]["managedFields"]
        );
        assert_eq!(
            serde_json::from_slice::<Value>(&patch::to_json(&ops)).unwrap(),
            json!([
                {"op": "replace", "path": "/metadata/uid", "value": "w"},
                {"op": "replace", "path": "/spec/nodeName", "value": "m"}
            ])
        );
    }

    #[test]
    fn a_section_written_twice_reads_as_its_last_value() {
        let text = r#"{"metadata": {"uid": "a", "name": "a"}, "spec": {"nodeName": "a", "volumes": [{"name": "a"}]},
            "metadata": {"generateName": "b-"}, "spec": {"hostname": "b"}}"#;
        let doc = RawPod::parse_str(text).unwrap();
        assert_eq!(
            doc.to_value(),
            json!({"metadata": {"generateName": "b-"}, "spec": {"hostname": "b"}})
        );
        assert!(doc.volumes.is_empty());
    }

    #[test]
    fn lists_are_parsed_only_when_read() {
        let pod =
            json!({"spec": {"containers": [{"name": "a", "env": [{"name": "E", "value": "1"}]}]}});
        let text = pod.to_string();
        let doc = RawPod::parse_str(&text).unwrap();
        assert!(
            doc.containers
                .members
                .iter()
                .all(|m| m.value.get().is_none())
        );
        let container = doc.containers.iter().next().unwrap();
        assert_eq!(container.list("env").next().unwrap()["value"], "1");
        let name = doc
            .containers
            .members
            .iter()
            .find(|m| m.key == "name")
            .unwrap();
        assert!(name.value.get().is_none(), "the name is not parsed");
        assert_eq!(doc.containers.value(0), pod["spec"]["containers"][0]);
    }

    #[test]
    fn may_contain_never_misses_a_word_spelled_with_escapes() {
        let text = r#"{"spec": {"containers": [{"name": "a", "env": [{"name": "IS_INJECTED"}]},
            {"name": "b", "env": [{"name": "IS\u005fINJECTED"}]}, {"name": "c", "env": [{"name": "OTHER"}]}]}}"#;
        let doc = RawPod::parse_str(text).unwrap();
        let found: Vec<bool> = doc
            .containers
            .iter()
            .map(|c| c.may_contain("env", "IS_INJECTED"))
            .collect();
        assert_eq!(found, [true, true, false]);
        let second = doc.containers.iter().nth(1).unwrap();
        assert_eq!(second.list("env").next().unwrap()["name"], "IS_INJECTED");
        assert!(!second.may_contain("missing", "IS_INJECTED"));
    }

    #[test]
    fn a_member_written_twice_reads_as_its_last_value() {
        let text = r#"{"spec": {"containers": [{"name": "a", "env": [1], "x": {"env": 2}, "env": [{"name": "E"}]}]}}"#;
        let doc = RawPod::parse_str(text).unwrap();
        let container = doc.containers.iter().next().unwrap();
        assert_eq!(container.get("env"), Some(&json!([{"name": "E"}])));
        assert_eq!(container.str("name"), "a");
        assert_eq!(container.get("missing"), None);
        assert_eq!(container.str("x"), "", "not a string");
        assert_eq!(container.list("name").count(), 0, "not a list");
    }

    /// Elements read as text give what the tree of the same list gives: every element, and each string
    /// member as `get` then `as_str` reads it, whatever the layout, escapes or repeats.
    #[test]
    fn elements_read_as_text_agree_with_the_tree() {
        let text = r#"{"spec": {"containers": [{"name": "a", "env": [ {"name" : "A", "value": "x\"y\u00e9"} ,
            {"n\u0061me": "B", "name": "C", "value": 7, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            "not an object", null, [1, {"name": "D"}], {"name": null}, {} ],
            "volumeMounts": [], "volumeDevices": {"name": "x"}, "ports": "none"}]}}"#;
        let doc = RawPod::parse_str(text).unwrap();
        let c = doc.containers.iter().next().unwrap();
        for key in [
            "env",
            "volumeMounts",
            "volumeDevices",
            "ports",
            "name",
            "missing",
        ] {
            let texts: Vec<Value> = c
                .elements(key)
                .map(|e| serde_json::from_str(e.text()).unwrap())
                .collect();
            let tree: Vec<Value> = c.list(key).cloned().collect();
            assert_eq!(texts, tree, "{key}");
            for (element, tree) in c.elements(key).zip(c.list(key)) {
                let members = ["name", "value", "valueFrom", "missing"];
                assert_eq!(element.strs(members), members.map(|m| element.str(m)));
                for member in members {
                    assert_eq!(
                        element.str(member),
                        tree.get(member).and_then(Value::as_str).unwrap_or(""),
                        "{key} {member} of {}",
                        element.text()
                    );
                }
            }
        }
        let env: Vec<RawElement<'_>> = c.elements("env").collect();
        assert_eq!(env.len(), 7);
        assert_eq!(
            env[0].text(),
            r#"{"name" : "A", "value": "x\"y\u00e9"}"#,
            "as received"
        );
        assert_eq!(env[0].str("value"), "x\"y\u{e9}");
        assert_eq!(
            env[1].str("name"),
            "C",
            "the last of a repeated key, escaped or not"
        );
    }

    /// A member kept as text reads as received until a step writes it; then it reads as written.
    #[test]
    fn a_member_reads_as_received_until_a_step_writes_it() {
        let text = r#"{"metadata": {"labels": {"a": "1"}, "ownerReferences": [], "labels": {"b": "\u0032"}}}"#;
        let mut doc = RawPod::parse_str(text).unwrap();
        assert_eq!(
            doc.received("metadata", "labels"),
            Some(r#"{"b": "\u0032"}"#)
        );
        assert_eq!(
            doc.member("metadata", "labels").as_deref(),
            Some(&json!({"b": "2"}))
        );
        assert_eq!(doc.member("metadata", "missing"), None);
        assert_eq!(doc.member("spec", "labels"), None);
        doc.pod["metadata"]["labels"] = json!({"c": "3"});
        assert_eq!(
            doc.member("metadata", "labels").as_deref(),
            Some(&json!({"c": "3"}))
        );
        assert_eq!(
            doc.to_value()["metadata"]["labels"],
            json!({"c": "3"}),
            "the step's value stands"
        );
    }

    #[test]
    fn malformed_pods_are_refused_with_the_place() {
        for (text, wanted) in [
            ("[]", "expected a pod object"),
            (r#"{"spec": 1}"#, "spec: expected an object"),
            (
                r#"{"spec": {"containers": {}}}"#,
                "spec.containers: expected a list of objects",
            ),
            (
                r#"{"spec": {"containers": [{"name": "a"}], "x": }}"#,
                "expected value",
            ),
            (
                r#"{"spec": {"containers": [1]}}"#,
                "spec.containers[0]: expected an object",
            ),
            (
                r#"{"spec": {"initContainers": [{"name": 3}]}}"#,
                "spec.initContainers[0].name: expected a string",
            ),
            (
                r#"{"spec": {"volumes": [{"name": "a"}, []]}}"#,
                "spec.volumes[1]: expected an object",
            ),
            (r#"{"metadata": []}"#, "metadata: expected an object"),
            (r#"{"spec": {"containers": [{"name": "a"}]"#, "EOF"),
        ] {
            let err = RawPod::parse_str(text).unwrap_err();
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }
}
