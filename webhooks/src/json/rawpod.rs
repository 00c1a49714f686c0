//! A pod as the request carries it, parsed for the mutating chain.
//!
//! Nothing of the pod is built as a tree up front:
//! - the members of the pod, of `metadata` and of `spec` are kept as text borrowed from the request, each
//!   built as a tree when a step first reads it ([`RawPod::get`]; those of [`TREE_FIELDS`] are built as the
//!   pod is read, so one that cannot be built is refused then). Steps read the others (labels,
//!   ownerReferences) from their text ([`RawPod::received`]), and write a member as a new value
//!   ([`RawPod::edit`], [`RawPod::object_mut`]);
//! - the elements of `spec.containers`, `spec.initContainers` and `spec.volumes` ([`RawList`]) stay raw
//!   JSON, split into members in the same pass, each member parsed when a step first reads it
//!   ([`RawList::iter`], [`RawContainer::get`]), or its elements read and copied as text
//!   ([`RawContainer::elements`]).
//!
//! So a pod create neither builds, clones, diffs nor frees what no step touches, which is most of a pod's
//! bytes. A step that changes a list says so with [`RawList::set`]: the new list as original elements (by
//! index) and new ones. The patch ([`RawPod::into_patch`]) holds, for each member a step wrote, what changed
//! from it as received, and per list, removals and insertions that leave untouched elements byte for byte
//! as they came, unknown fields included.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

use serde_json::{Map, Value};

use super::write::write_string;
use crate::admission::RawJson;
use crate::json::patch::{self, Json, Op, Step};
use crate::json::{Cursor, string_value, valid_tree};

/// How a container list appeared in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presence {
    /// No key (or no spec).
    Absent,
    /// `null`.
    Null,
    /// A list (an object for a section).
    Present,
}

impl Presence {
    /// The operation that writes `value` whole at `path`, where a value was as received in this way: an
    /// add where there was none, a replace of `null` or of what was there.
    fn write_whole(self, path: String, value: Json) -> Op {
        if self == Self::Absent {
            Op::Add { path, value }
        } else {
            Op::Replace { path, value }
        }
    }
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
        member(self.members, key)
            .is_some_and(|m| crate::json::scan::may_spell(m.text.as_bytes(), word.as_bytes()))
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
        let mut list = Self::new(key, Presence::Present);
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
        // The list keys are ours (`containers`, ...): nothing in them to encode.
        let mut out = String::with_capacity(32);
        out.push_str("/spec/");
        out.push_str(self.key);
        if let Some(i) = index {
            out.push('/');
            patch::push_index(&mut out, i);
        }
        out
    }

    /// Operations turning the list as received into the result (none when it was not set or is the same).
    fn into_ops(mut self, ops: &mut Vec<Op>) {
        let Some(items) = self.result.take() else {
            return;
        };
        let n = self.elements.len();
        let mut kept = vec![false; n];
        let mut last = None;
        let mut in_order = self.presence == Presence::Present;
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
            let mut text = String::with_capacity(1024);
            text.push('[');
            for (j, item) in items.iter().enumerate() {
                if j > 0 {
                    text.push(',');
                }
                match item {
                    Item::Original(i) => {
                        text.push_str(self.elements.get(*i).map_or("null", |e| e.text));
                    }
                    Item::New(v) => v.write(&mut text),
                }
            }
            text.push(']');
            let value = Json::Text(text.into());
            ops.push(self.presence.write_whole(self.pointer(None), value));
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
            (None, Presence::Present) => Some(Value::Array(
                self.elements.iter().map(|e| valid_tree(e.text)).collect(),
            )),
        }
    }
}

/// A part of the pod whose members [`RawPod`] reads and writes one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The pod object itself, but for `metadata` and `spec` (`apiVersion`, `kind`, `status`, …).
    Top,
    /// `metadata`.
    Metadata,
    /// `spec`, but for the lists kept raw ([`RawPod::containers`], …).
    Spec,
}

impl Section {
    /// Its key in the pod (`""` for the pod itself).
    fn key(self) -> &'static str {
        match self {
            Self::Top => "",
            Self::Metadata => "metadata",
            Self::Spec => "spec",
        }
    }
}

/// The members the chain's steps read or write as trees, per section: built when the pod is read, so one
/// whose tree cannot be built is refused then, with serde_json's message, as decoding the pod would. Others
/// are built only when a step reads them ([`RawPod::get`]). A step that reads or writes another member adds
/// it here. `metadata.annotations` is read as a map of strings instead ([`RawPod::annotation`]).
pub const TREE_FIELDS: [(Section, &[&str]); 3] = [
    (Section::Top, &["status"]),
    (
        Section::Metadata,
        &["name", "namespace", "deletionTimestamp"],
    ),
    (Section::Spec, &["imagePullSecrets", "readinessGates"]),
];

/// A member of the pod, `metadata` or `spec` as received: its text, its tree built on first read.
#[derive(Debug)]
struct Field<'a> {
    key: Cow<'a, str>,
    /// Owned only for a member filled in before any step ran ([`RawPod::fill_namespace`]).
    text: Cow<'a, str>,
    tree: OnceCell<Value>,
}

impl<'a> Field<'a> {
    fn new(key: Cow<'a, str>, text: &'a str) -> Self {
        Self {
            key,
            text: Cow::Borrowed(text),
            tree: OnceCell::new(),
        }
    }

    fn tree(&self) -> &Value {
        self.tree.get_or_init(|| valid_tree(&self.text))
    }
}

/// The members of a section as received.
#[derive(Debug)]
struct Part<'a> {
    presence: Presence,
    fields: Vec<Field<'a>>,
}

impl<'a> Part<'a> {
    fn new(presence: Presence) -> Self {
        Self {
            presence,
            fields: Vec::new(),
        }
    }

    /// The member `key` (the last one when the key is written twice, as decoding does).
    fn field(&self, key: &str) -> Option<&Field<'a>> {
        self.fields.iter().rev().find(|f| f.key == key)
    }
}

/// A member a step wrote: its new value, `None` when the step removed it.
#[derive(Debug)]
struct Edit {
    section: Section,
    key: &'static str,
    value: Option<Value>,
}

impl Edit {
    /// Its top-level key in the pod: where its operations go in the patch.
    fn top_key(&self) -> &'static str {
        match self.section {
            Section::Top => self.key,
            section => section.key(),
        }
    }
}

/// The entries of a map of strings as received, in order.
type Entries<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

/// `metadata.annotations` as received: whether it was there, and its entries.
type Annotations<'a> = (Presence, Entries<'a>);

/// An annotation a step set: its value, and the value's JSON string literal when the step wrote one (a hash
/// annotation is JSON text, with a quote every few bytes: the patch copies the literal instead of escaping
/// the value again).
#[derive(Debug)]
struct SetAnnotation {
    key: Cow<'static, str>,
    value: String,
    literal: Option<Box<str>>,
}

/// The pod of a request, every part of it as received text: the members of the pod, `metadata` and
/// `spec` each read as a tree when a step first reads it, and written by steps as new values
/// ([`RawPod::edit`]); the annotations as a list of strings ([`RawPod::annotation`],
/// [`RawPod::set_annotation`]); the three lists as [`RawList`]s.
#[derive(Debug)]
pub struct RawPod<'a> {
    top: Part<'a>,
    metadata: Part<'a>,
    spec: Part<'a>,
    /// The members steps wrote, in the order they first wrote them.
    edits: Vec<Edit>,
    /// Whether `metadata.annotations` was received, and its entries as received, in order.
    annotations: Annotations<'a>,
    /// The annotations steps set, in order (the last of a key stands).
    set_annotations: Vec<SetAnnotation>,
    /// `spec.initContainers`.
    pub init_containers: RawList<'a>,
    /// `spec.containers`.
    pub containers: RawList<'a>,
    /// `spec.volumes`.
    pub volumes: RawList<'a>,
}

/// The entries, in order, of the metadata member `key` (labels, annotations) from its text: a map of
/// strings, or `null` (`None`), as decoding into a Pod requires; a message naming the member otherwise.
pub(crate) fn string_map<'t>(text: &'t str, key: &str) -> Result<Option<Entries<'t>>, String> {
    let bad = || format!("metadata.{key}: expected a map of strings");
    let mut cursor = Cursor::new(text, &[]);
    if cursor.null() {
        return Ok(None);
    }
    let mut entries = Vec::new();
    cursor
        .object(|c, key| {
            // Not a string, or one that does not decode (a lone surrogate, which serde refuses too).
            let value = c.string().flatten().ok_or_else(bad)?;
            entries.push((key, value));
            Ok(())
        })
        .unwrap_or_else(|| Err(bad()))?;
    Ok(Some(entries))
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
    /// A message when it is not an object, its metadata or spec is neither an object nor null, a container
    /// list is not a list of objects with string names, or a member of [`TREE_FIELDS`] has no tree.
    pub fn parse(raw: &'a RawJson) -> Result<Self, String> {
        Self::parse_valid(raw.cursor())
    }

    /// [`RawPod::parse`] of text [`crate::json::scan`] accepted.
    fn parse_valid(mut cursor: Cursor<'a>) -> Result<Self, String> {
        let absent = || {
            ["initContainers", "containers", "volumes"].map(|k| RawList::new(k, Presence::Absent))
        };
        let mut lists = absent();
        let mut top = Part::new(Presence::Present);
        top.fields.reserve(4);
        let mut sections = [Part::new(Presence::Absent), Part::new(Presence::Absent)];
        // The text of `metadata.annotations` (the last one when written twice).
        let mut annotations = None;
        cursor
            .object(|c, key| {
                let section = match &*key {
                    "metadata" => Section::Metadata,
                    "spec" => Section::Spec,
                    _ => {
                        top.fields.push(Field::new(key, c.value()));
                        return Ok(());
                    }
                };
                // A section written twice: the last one stands, as when decoding.
                let part = &mut sections[usize::from(section == Section::Spec)];
                if section == Section::Spec {
                    lists = absent();
                } else {
                    annotations = None;
                }
                if c.null() {
                    *part = Part::new(Presence::Null);
                    return Ok(());
                }
                *part = Part::new(Presence::Present);
                part.fields.reserve(16);
                c.object(|c, key| {
                    let list = lists
                        .iter_mut()
                        .find(|l| section == Section::Spec && l.key == key);
                    if let Some(list) = list {
                        *list = RawList::read(list.key, c)?;
                    } else {
                        let text = c.value();
                        if section == Section::Metadata && key == "annotations" {
                            annotations = Some(text);
                        }
                        part.fields.push(Field::new(key, text));
                    }
                    Ok(())
                })
                .ok_or_else(|| format!("{}: expected an object", section.key()))??;
                Ok(())
            })
            .ok_or(
                "json: cannot unmarshal into Go value of type v1.Pod: expected a pod object",
            )??;
        let [metadata, spec] = sections;
        let annotations = match annotations {
            Some(text) => match string_map(text, ANNOTATIONS)? {
                Some(entries) => (Presence::Present, entries),
                None => (Presence::Null, Vec::new()),
            },
            None => (Presence::Absent, Vec::new()),
        };
        let [init_containers, containers, volumes] = lists;
        let doc = Self {
            top,
            metadata,
            spec,
            edits: Vec::new(),
            annotations,
            set_annotations: Vec::new(),
            init_containers,
            containers,
            volumes,
        };
        for (section, keys) in TREE_FIELDS {
            for field in doc.part(section).fields.iter() {
                if keys.contains(&&*field.key) {
                    // Not built before: this is the member's first read.
                    let _ = field.tree.set(value(&field.text)?);
                }
            }
        }
        Ok(doc)
    }

    /// [`RawPod::parse`] of text that may not be JSON.
    ///
    /// # Errors
    /// The JSON error, or those of [`RawPod::parse`].
    pub fn parse_str(text: &'a str) -> Result<Self, String> {
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| e.to_string())?;
        Self::parse_valid(Cursor::new(text, &[]))
    }

    fn part(&self, section: Section) -> &Part<'a> {
        match section {
            Section::Top => &self.top,
            Section::Metadata => &self.metadata,
            Section::Spec => &self.spec,
        }
    }

    /// The text of the member `key` of `section` as received (the last one when written twice), whatever
    /// steps wrote since. The lists kept raw are not members here.
    pub fn received(&self, section: Section, key: &str) -> Option<&str> {
        self.part(section).field(key).map(|f| &*f.text)
    }

    /// The tree of the member `key` of `section` as received.
    fn received_tree(&self, section: Section, key: &str) -> Option<&Value> {
        self.part(section).field(key).map(Field::tree)
    }

    /// The member `key` of `section` as it stands: as a step wrote it, or else as received (its tree
    /// built on this first read). Not for `metadata.annotations` ([`RawPod::annotation`]).
    pub fn get(&self, section: Section, key: &str) -> Option<&Value> {
        debug_assert!(
            !is_annotations(section, key),
            "read with RawPod::annotation"
        );
        match self
            .edits
            .iter()
            .find(|e| e.section == section && e.key == key)
        {
            Some(edit) => edit.value.as_ref(),
            None => self.received_tree(section, key),
        }
    }

    /// The member `key` of `section` to write: `None` when absent (set it to add it, take it to remove
    /// it). The patch carries what changed from the member as received. Not for `metadata.annotations`
    /// ([`RawPod::set_annotation`]).
    pub fn edit(&mut self, section: Section, key: &'static str) -> &mut Option<Value> {
        debug_assert!(
            !is_annotations(section, key),
            "set with RawPod::set_annotation"
        );
        debug_assert!(
            !(section == Section::Top && matches!(key, "metadata" | "spec")),
            "sections are written member by member"
        );
        let at = match self
            .edits
            .iter()
            .position(|e| e.section == section && e.key == key)
        {
            Some(at) => at,
            None => {
                let value = self.received_tree(section, key).cloned();
                self.edits.push(Edit {
                    section,
                    key,
                    value,
                });
                self.edits.len() - 1
            }
        };
        &mut self.edits[at].value
    }

    /// The member `key` of `section` as an object to write into: made an empty one first when it is absent,
    /// or is not an object.
    pub fn object_mut(&mut self, section: Section, key: &'static str) -> &mut Map<String, Value> {
        let member = self.edit(section, key);
        if !matches!(member, Some(Value::Object(_))) {
            *member = Some(Value::Object(Map::new()));
        }
        member
            .as_mut()
            .and_then(Value::as_object_mut)
            .expect("made an object above")
    }

    /// Fills in `metadata.namespace` as if the request had carried it (the chain does before any step, so it
    /// never appears in the patch).
    pub fn fill_namespace(&mut self, namespace: &str) {
        let mut text = String::with_capacity(namespace.len() + 2);
        write_string(&mut text, namespace);
        self.metadata.fields.push(Field {
            key: Cow::Borrowed("namespace"),
            text: Cow::Owned(text),
            tree: OnceCell::from(Value::String(namespace.to_owned())),
        });
    }

    /// The whole pod as it stands, lists included.
    pub fn to_value(&self) -> Value {
        let mut pod = Map::new();
        let section = |part: &Part<'_>, lists: &[&RawList<'_>]| {
            let mut map = Map::new();
            for field in &part.fields {
                map.insert(field.key.clone().into_owned(), field.tree().clone());
            }
            for list in lists {
                if let Some(value) = list.current() {
                    map.insert(list.key.to_owned(), value);
                }
            }
            map
        };
        pod.extend(section(&self.top, &[]));
        let sections = [
            (Section::Metadata, section(&self.metadata, &[])),
            (
                Section::Spec,
                section(
                    &self.spec,
                    &[&self.init_containers, &self.containers, &self.volumes],
                ),
            ),
        ];
        for (name, mut map) in sections {
            if name == Section::Metadata && !self.set_annotations.is_empty() {
                let annotations = map
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Map::new()));
                if !annotations.is_object() {
                    *annotations = Value::Object(Map::new());
                }
                if let Some(annotations) = annotations.as_object_mut() {
                    for set in &self.set_annotations {
                        annotations.insert(set.key.to_string(), Value::String(set.value.clone()));
                    }
                }
            }
            let written = self
                .edits
                .iter()
                .any(|e| e.section == name && e.value.is_some());
            let value = match self.part(name).presence {
                Presence::Absent if map.is_empty() && !written => continue,
                Presence::Null if map.is_empty() && !written => Value::Null,
                _ => Value::Object(map),
            };
            pod.insert(name.key().to_owned(), value);
        }
        for edit in &self.edits {
            let map = match edit.section {
                Section::Top => Some(&mut pod),
                section => pod.get_mut(section.key()).and_then(Value::as_object_mut),
            };
            if let Some(map) = map {
                match &edit.value {
                    Some(value) => map.insert(edit.key.to_owned(), value.clone()),
                    None => map.remove(edit.key),
                };
            }
        }
        Value::Object(pod)
    }

    /// The string member `key` of `metadata` as it stands (`""` when absent or not a string).
    pub fn metadata_str(&self, key: &str) -> &str {
        self.get(Section::Metadata, key)
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The annotation `key` as it stands: as a step set it, or else as received.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        match self.set_annotations.iter().rev().find(|s| s.key == key) {
            Some(set) => Some(&set.value),
            None => self.received_annotation(key),
        }
    }

    /// The annotation `key` as received, whatever steps set since.
    pub fn received_annotation(&self, key: &str) -> Option<&str> {
        let mut entries = self.annotations.1.iter().rev();
        entries.find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// Sets the annotation `key` (added when absent, with `metadata.annotations` when that is absent).
    pub fn set_annotation(&mut self, key: impl Into<Cow<'static, str>>, value: String) {
        self.set_annotations.push(SetAnnotation {
            key: key.into(),
            value,
            literal: None,
        });
    }

    /// [`RawPod::set_annotation`] with the value's JSON string literal (quotes included, as
    /// [`write_string`] writes it), which the patch copies instead of escaping the value again.
    pub(crate) fn set_annotation_literal(
        &mut self,
        key: impl Into<Cow<'static, str>>,
        value: String,
        literal: Box<str>,
    ) {
        self.set_annotations.push(SetAnnotation {
            key: key.into(),
            value,
            literal: Some(literal),
        });
    }

    /// The annotations steps set that change the pod, one per key (the last set), in key order.
    fn annotation_changes(&mut self) -> Vec<SetAnnotation> {
        let mut sets = std::mem::take(&mut self.set_annotations);
        // Stable: the last set of a key is the last of its run.
        sets.sort_by(|a, b| a.key.cmp(&b.key));
        let mut changes: Vec<SetAnnotation> = Vec::with_capacity(sets.len());
        for set in sets {
            match changes.last_mut() {
                Some(last) if last.key == set.key => *last = set,
                _ => changes.push(set),
            }
        }
        changes.retain(|s| self.received_annotation(&s.key) != Some(&*s.value));
        changes
    }

    /// The patch from the pod as received (with what was filled in) to this pod: for each member a step
    /// wrote, what changed in it, in the pod's key order (a section absent or null is added whole), then the
    /// changes to the lists.
    pub fn into_patch(mut self) -> Vec<Op> {
        let mut annotations = self.annotation_changes();
        // One operation per edit and annotation, and a few per list: one allocation for most pods.
        let mut ops = Vec::with_capacity(self.edits.len() + annotations.len() + 8);
        let mut edits = std::mem::take(&mut self.edits);
        if !annotations.is_empty() {
            // In its place among the members steps wrote: the annotations' edit, whose operations come
            // from `annotations`.
            edits.push(Edit {
                section: Section::Metadata,
                key: ANNOTATIONS,
                value: None,
            });
        }
        edits.sort_by(|a, b| (a.top_key(), a.key).cmp(&(b.top_key(), b.key)));
        let mut edits = edits.into_iter().peekable();
        // Lists set in a spec that is not there: the spec is added first, in its place among the edits.
        let mut spec_missing = self.spec.presence != Presence::Present && self.lists_set();
        loop {
            if spec_missing && edits.peek().is_none_or(|e| e.top_key() > "spec") {
                self.whole_section(&mut ops, Section::Spec, Vec::new(), &mut annotations);
                spec_missing = false;
            }
            let Some(edit) = edits.next() else { break };
            let section = edit.section;
            if section == Section::Top || self.part(section).presence == Presence::Present {
                if is_annotations(section, edit.key) {
                    self.annotation_ops(&mut ops, std::mem::take(&mut annotations));
                } else {
                    self.member_ops(&mut ops, edit);
                }
                continue;
            }
            let mut group = vec![edit];
            group.extend(std::iter::from_fn(|| {
                edits.next_if(|e| e.section == section)
            }));
            spec_missing &= section != Section::Spec;
            self.whole_section(&mut ops, section, group, &mut annotations);
        }
        self.init_containers.into_ops(&mut ops);
        self.containers.into_ops(&mut ops);
        self.volumes.into_ops(&mut ops);
        ops
    }

    /// The operations of the annotations steps set (`changes`), in metadata as received: one per
    /// annotation, or the annotations whole when they were absent or null.
    fn annotation_ops(&self, ops: &mut Vec<Op>, changes: Vec<SetAnnotation>) {
        let at = [Step::Key("metadata"), Step::Key(ANNOTATIONS)];
        let presence = self.annotations.0;
        if presence != Presence::Present {
            let value = Json::Text(annotations_text(changes));
            ops.push(presence.write_whole(patch::pointer(at), value));
            return;
        }
        for set in changes {
            let path = patch::pointer(at.into_iter().chain([Step::Key(&set.key)]));
            let value = match set.literal {
                Some(literal) => Json::Text(literal),
                None => Json::Value(Value::String(set.value)),
            };
            ops.push(if self.received_annotation(&set.key).is_some() {
                Op::Replace { path, value }
            } else {
                Op::Add { path, value }
            });
        }
    }

    /// Whether a step set one of the lists.
    fn lists_set(&self) -> bool {
        [&self.init_containers, &self.containers, &self.volumes]
            .iter()
            .any(|l| l.result.is_some())
    }

    /// A section absent or null as received, written whole with the members steps wrote `edits` (and the
    /// annotations set, `annotations`, when the annotations' edit is among them); nothing when there is
    /// nothing to write.
    fn whole_section(
        &self,
        ops: &mut Vec<Op>,
        section: Section,
        edits: Vec<Edit>,
        annotations: &mut Vec<SetAnnotation>,
    ) {
        let presence = self.part(section).presence;
        let mut map = Map::new();
        for edit in edits {
            if is_annotations(section, edit.key) {
                let sets = std::mem::take(annotations).into_iter();
                let sets = sets.map(|s| (s.key.into_owned(), Value::String(s.value)));
                map.insert(ANNOTATIONS.to_owned(), Value::Object(sets.collect()));
            } else if let Some(value) = edit.value {
                map.insert(edit.key.to_owned(), value);
            }
        }
        if map.is_empty() && !(section == Section::Spec && self.lists_set()) {
            return;
        }
        let path = patch::pointer([Step::Key(section.key())]);
        ops.push(presence.write_whole(path, Json::Value(Value::Object(map))));
    }

    /// The operations of one member a step wrote, in a section as received.
    fn member_ops(&self, ops: &mut Vec<Op>, edit: Edit) {
        let mut at = Vec::with_capacity(2);
        if edit.section != Section::Top {
            at.push(Step::Key(edit.section.key()));
        }
        at.push(Step::Key(edit.key));
        match (self.received_tree(edit.section, edit.key), edit.value) {
            (None, None) => {}
            (None, Some(value)) => ops.push(Op::Add {
                path: patch::pointer(at),
                value: Json::Value(value),
            }),
            (Some(_), None) => ops.push(Op::Remove {
                path: patch::pointer(at),
            }),
            (Some(from), Some(to)) => patch::diff_at(ops, &at, from, to),
        }
    }
}

const ANNOTATIONS: &str = "annotations";

/// Whether the member `key` of `section` is `metadata.annotations`.
fn is_annotations(section: Section, key: &str) -> bool {
    section == Section::Metadata && key == ANNOTATIONS
}

/// The annotations `sets` (in key order, one per key) as a JSON map, each value's literal copied when the
/// step wrote one.
fn annotations_text(sets: Vec<SetAnnotation>) -> Box<str> {
    let mut text =
        String::with_capacity(sets.iter().map(|s| s.key.len() + s.value.len() + 8).sum());
    text.push('{');
    for (i, set) in sets.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        write_string(&mut text, &set.key);
        text.push(':');
        match &set.literal {
            Some(literal) => text.push_str(literal),
            None => write_string(&mut text, &set.value),
        }
    }
    text.push('}');
    text.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each operation as its name and path.
    fn op_paths(ops: &[Op]) -> Vec<String> {
        ops.iter()
            .map(|op| format!("{} {}", op.name(), op.path()))
            .collect()
    }

    fn round_trip(pod: &Value, edit: impl FnOnce(&mut RawPod<'_>)) -> (Value, Vec<Op>) {
        let text = pod.to_string();
        let mut doc = RawPod::parse_str(&text).unwrap();
        edit(&mut doc);
        let expected = doc.to_value();
        let ops = doc.into_patch();
        assert_eq!(patch::apply(pod, &ops).unwrap(), expected, "{ops:?}");
        (expected, ops)
    }

    #[test]
    fn untouched_lists_stay_raw_and_give_no_operations() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "x-unknown": {"k": 1}}], "nodeName": "n"}});
        let text = pod.to_string();
        let doc = RawPod::parse_str(&text).unwrap();
        assert!(
            doc.metadata.fields[0].tree.get().is_some(),
            "the name is built"
        );
        assert!(doc.spec.fields[0].tree.get().is_none(), "nodeName is not");
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
        assert_eq!(
            op_paths(&ops),
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
        let built = |part: &Part<'_>| -> Vec<String> {
            let built = part.fields.iter().filter(|f| f.tree.get().is_some());
            built.map(|f| f.key.to_string()).collect()
        };
        assert_eq!(built(&doc.metadata), ["name"]);
        assert_eq!(built(&doc.spec), ["readinessGates"]);
        assert_eq!(doc.volumes.name(0), "v");
        assert_eq!(doc.to_value(), pod);
        let (result, ops) = round_trip(&pod, |doc| {
            *doc.edit(Section::Spec, "nodeName") = Some(json!("m"));
            *doc.edit(Section::Metadata, "uid") = Some(json!("w"));
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
            doc.received(Section::Metadata, "labels"),
            Some(r#"{"b": "\u0032"}"#)
        );
        assert_eq!(
            doc.get(Section::Metadata, "labels"),
            Some(&json!({"b": "2"}))
        );
        assert_eq!(doc.get(Section::Metadata, "missing"), None);
        assert_eq!(doc.get(Section::Spec, "labels"), None);
        doc.object_mut(Section::Metadata, "labels")
            .insert("c".into(), json!("3"));
        assert_eq!(
            doc.get(Section::Metadata, "labels"),
            Some(&json!({"b": "2", "c": "3"}))
        );
        assert_eq!(
            doc.received(Section::Metadata, "labels"),
            Some(r#"{"b": "\u0032"}"#),
            "as received still"
        );
        *doc.edit(Section::Metadata, "ownerReferences") = None;
        assert_eq!(doc.get(Section::Metadata, "ownerReferences"), None);
        assert_eq!(
            doc.to_value(),
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}}),
            "the step's values stand"
        );
        assert_eq!(
            serde_json::from_slice::<Value>(&patch::to_json(&doc.into_patch())).unwrap(),
            json!([
                {"op": "add", "path": "/metadata/labels/c", "value": "3"},
                {"op": "remove", "path": "/metadata/ownerReferences"}
            ])
        );
    }

    /// Members written into a section absent or null as received add it whole; lists set in a spec that is
    /// not there add the spec first; edits come in the pod's key order, each once.
    #[test]
    fn sections_not_received_are_added_whole_in_key_order() {
        for (pod, op) in [
            (json!({"kind": "Pod"}), "add"),
            (json!({"metadata": null, "spec": null}), "replace"),
        ] {
            let (result, ops) = round_trip(&pod, |doc| {
                doc.set_annotation("a", "1".into());
                *doc.edit(Section::Top, "status") = Some(json!({"phase": "Pending"}));
                *doc.edit(Section::Top, "apiVersion") = Some(json!("v1"));
                *doc.edit(Section::Metadata, "uid") = None;
                doc.containers
                    .set(vec![Item::New(json!({"name": "c"}).into())]);
            });
            assert_eq!(result["metadata"], json!({"annotations": {"a": "1"}}));
            assert_eq!(result["spec"], json!({"containers": [{"name": "c"}]}));
            assert_eq!(
                op_paths(&ops),
                [
                    "add /apiVersion".to_owned(),
                    format!("{op} /metadata"),
                    format!("{op} /spec"),
                    "add /status".to_owned(),
                    "add /spec/containers".to_owned(),
                ],
                "{pod}"
            );
        }
        // Nothing written, nothing set: no operation, even for an absent section a step read.
        let (_, ops) = round_trip(&json!({"spec": {}}), |doc| {
            assert_eq!(doc.get(Section::Metadata, "labels"), None);
            *doc.edit(Section::Metadata, "labels") = None;
        });
        assert!(ops.is_empty(), "{ops:?}");
    }

    /// Annotations read as received until set; the patch sets each changed one (replace, or add with its
    /// key escaped), or adds (replaces) the map whole when absent (null); an unchanged value, or one set
    /// back, gives nothing; a written literal is copied as it stands.
    #[test]
    fn annotations_are_set_one_by_one_or_whole() {
        let pod = json!({"metadata": {"annotations": {"a": "1", "b/c": "2"}}});
        let (result, ops) = round_trip(&pod, |doc| {
            assert_eq!(doc.annotation("b/c"), Some("2"));
            doc.set_annotation("a", "x".into());
            doc.set_annotation("a", "1".into());
            doc.set_annotation("b/c", "3".into());
            doc.set_annotation_literal("d~e", "q\"".into(), r#""q\"""#.into());
            doc.set_annotation("f", "4".into());
            assert_eq!(doc.annotation("a"), Some("1"));
            assert_eq!(doc.annotation("b/c"), Some("3"));
            assert_eq!(doc.received_annotation("b/c"), Some("2"));
        });
        assert_eq!(
            result["metadata"]["annotations"],
            json!({"a": "1", "b/c": "3", "d~e": "q\"", "f": "4"})
        );
        assert_eq!(
            serde_json::from_slice::<Value>(&patch::to_json(&ops)).unwrap(),
            json!([
                {"op": "replace", "path": "/metadata/annotations/b~1c", "value": "3"},
                {"op": "add", "path": "/metadata/annotations/d~0e", "value": "q\""},
                {"op": "add", "path": "/metadata/annotations/f", "value": "4"}
            ])
        );
        for (pod, op) in [
            (json!({"metadata": {"name": "p"}}), "add"),
            (json!({"metadata": {"annotations": null}}), "replace"),
        ] {
            let (result, ops) = round_trip(&pod, |doc| {
                doc.set_annotation_literal("k", "v".into(), r#""v""#.into());
                doc.set_annotation("j", "w".into());
            });
            assert_eq!(
                result["metadata"]["annotations"],
                json!({"j": "w", "k": "v"})
            );
            assert_eq!(
                String::from_utf8(patch::to_json(&ops)).unwrap(),
                format!(
                    r#"[{{"op":"{op}","path":"/metadata/annotations","value":{{"j":"w","k":"v"}}}}]"#
                )
            );
        }
        // A key written twice reads as its last value.
        let doc = RawPod::parse_str(r#"{"metadata": {"annotations": {"a": "1", "a": "\u0032"}}}"#)
            .unwrap();
        assert_eq!(doc.annotation("a"), Some("2"));
        for bad in [r#"{"a": 1}"#, "[]", r#"{"a": "\ud800"}"#, r#""x""#] {
            let text = format!(r#"{{"metadata": {{"annotations": {bad}}}}}"#);
            assert_eq!(
                RawPod::parse_str(&text).unwrap_err(),
                "metadata.annotations: expected a map of strings",
                "{bad}"
            );
        }
    }

    /// The namespace filled in reads as received: it is in the pod, never in the patch, and a pod without
    /// metadata gets its written members as a new metadata, which applies to the pod as received.
    #[test]
    fn a_filled_namespace_reads_as_received_and_stays_out_of_the_patch() {
        for pod in [json!({"metadata": {"name": "p"}}), json!({"spec": {}})] {
            let text = pod.to_string();
            let mut doc = RawPod::parse_str(&text).unwrap();
            doc.fill_namespace("team-\"a\"");
            assert_eq!(
                doc.get(Section::Metadata, "namespace"),
                Some(&json!("team-\"a\""))
            );
            assert_eq!(
                doc.received(Section::Metadata, "namespace"),
                Some(r#""team-\"a\"""#)
            );
            doc.set_annotation("a", "1".into());
            let ops = doc.into_patch();
            let patched = patch::apply(&pod, &ops).unwrap();
            assert_eq!(
                patched["metadata"]["annotations"],
                json!({"a": "1"}),
                "{pod}"
            );
            assert_eq!(patched["metadata"].get("namespace"), None, "{pod}");
        }
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
