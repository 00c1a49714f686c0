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

use serde_json::{Map, Value};

use super::RawJson;
use super::cursor::{Cursor, tree, valid_tree};
use super::write::write_string;

mod changes;
mod list;
mod presence;

pub use list::{Item, RawContainer, RawElement, RawList, elements_of};
use presence::Presence;

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
    tree(text).ok_or_else(|| match serde_json::from_str::<Value>(text) {
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

    /// [`RawPod::parse`] of text [`crate::json::scan()`] accepted.
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
        self.build_value(None)
    }

    /// The pod as it stands, but for `spec`: only its members named in `spec_members`, and none of its
    /// lists. For a step that reads and writes nothing else of the spec: the lists, most of a pod's bytes,
    /// are neither built nor compared.
    pub fn to_value_with_spec(&self, spec_members: &[&str]) -> Value {
        self.build_value(Some(spec_members))
    }

    /// [`RawPod::to_value`], with `spec` limited to `spec_members` when given.
    fn build_value(&self, spec_members: Option<&[&str]>) -> Value {
        let kept = |section: Section, key: &str| {
            section != Section::Spec || spec_members.is_none_or(|keep| keep.contains(&key))
        };
        let mut pod = Map::new();
        let section = |name: Section, part: &Part<'_>, lists: &[&RawList<'_>]| {
            let mut map = Map::new();
            for field in part.fields.iter().filter(|f| kept(name, &f.key)) {
                map.insert(field.key.clone().into_owned(), field.tree().clone());
            }
            for list in lists {
                if let Some(value) = list.current() {
                    map.insert(list.key.to_owned(), value);
                }
            }
            map
        };
        let lists = [&self.init_containers, &self.containers, &self.volumes];
        pod.extend(section(Section::Top, &self.top, &[]));
        let sections = [
            (
                Section::Metadata,
                section(Section::Metadata, &self.metadata, &[]),
            ),
            (
                Section::Spec,
                section(
                    Section::Spec,
                    &self.spec,
                    if spec_members.is_some() {
                        &lists[..0]
                    } else {
                        &lists
                    },
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
                .any(|e| e.section == name && e.value.is_some() && kept(name, e.key));
            let value = match self.part(name).presence {
                Presence::Absent if map.is_empty() && !written => continue,
                Presence::Null if map.is_empty() && !written => Value::Null,
                _ => Value::Object(map),
            };
            pod.insert(name.key().to_owned(), value);
        }
        for edit in self.edits.iter().filter(|e| kept(e.section, e.key)) {
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
}

const ANNOTATIONS: &str = "annotations";

/// Whether the member `key` of `section` is `metadata.annotations`.
fn is_annotations(section: Section, key: &str) -> bool {
    section == Section::Metadata && key == ANNOTATIONS
}

#[cfg(test)]
mod tests;
