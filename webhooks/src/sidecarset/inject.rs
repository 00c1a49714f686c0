//! SidecarSet injection into a pod on CREATE (spec/sidecarset.md §4.5-4.8, §6.1; DECISIONS 12 and 13).
//!
//! Entry point: [`inject`]. It edits the pod of the request in place ([`RawPod`]: fields our types do not
//! know survive, and the pod's own containers are parsed only when a sidecar reads them), given the
//! SidecarSets already chosen (§4.3, §4.4) in their order, the time of the request and the gates. The caller
//! turns the result into the patch.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::prepared::{PreparedContainer, PreparedSidecarSet, PreparedVolumes};
use crate::api::RawObject;
use crate::api::sidecarset::{HASH_ANNOTATION, HASH_WITHOUT_IMAGE_ANNOTATION, SidecarContainer};
use crate::json::patch::Json;
use crate::json::rawpod::{Item, RawContainer, RawElement, RawList, RawPod, Section};
use crate::json::{go, merge_patch, write_string, write_value};

/// `kruise.io/sidecarset-injected-list`.
pub const INJECTED_LIST_ANNOTATION: &str = "kruise.io/sidecarset-injected-list";
/// `kruise.io/sidecarset-working-hotupgrade-container`.
pub const WORKING_HOT_UPGRADE_ANNOTATION: &str =
    "kruise.io/sidecarset-working-hotupgrade-container";
/// Env added to every injected container.
pub const IS_INJECTED: &str = "IS_INJECTED";

/// Why injection failed (the request is answered 500 with this text, §4.9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InjectError {
    /// A hash annotation on the pod that is neither the current nor the legacy shape (§4.6).
    #[error(
        "pod({namespace}/{name}) invalid annotations[{key}] value {value}, unmarshal failed: {reason}"
    )]
    InvalidHashAnnotation {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// The annotation.
        key: &'static str,
        /// Its raw value.
        value: String,
        /// The decoder's message.
        reason: String,
    },
    /// `MergePatchJson` on a value that is not JSON (§4.5).
    #[error("{0}")]
    MergePatch(String),
    /// `resourcesPolicy` could not be applied (§5).
    #[error("{0}")]
    ResourcesPolicy(String),
}

/// What injection needs besides the pod and the SidecarSets.
#[derive(Debug, Clone, Copy)]
pub struct InjectOptions<'a> {
    /// `updateTimestamp` of new hash entries: RFC 3339, UTC, seconds.
    pub now: &'a str,
    /// Gate `EnableSortSidecarContainerByName`.
    pub sort_containers_by_name: bool,
}

/// The pod's own containers as the request carried them.
#[derive(Debug, Clone, Copy)]
pub struct PodContainers<'p> {
    /// `spec.initContainers`.
    pub init_containers: &'p RawList<'p>,
    /// `spec.containers`.
    pub containers: &'p RawList<'p>,
}

/// The `resources` a sidecar container's `resourcesPolicy` (§5) gives it (`None`: no policy), given the names
/// of every container of every matched SidecarSet and the pod's containers. Supplied by the caller so this
/// module stays independent of the calculator.
pub type ResourcesPolicyFn<'a> =
    &'a dyn Fn(&SidecarContainer, &NameSet<'_>, PodContainers<'_>) -> Result<Option<Value>, String>;

/// A set of names, few: a sorted list without repeats, searched by bisection (a pod create runs no map code
/// for it). Names are borrowed, or owned where they were decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameSet<'a>(Vec<Cow<'a, str>>);

impl NameSet<'_> {
    /// Whether `name` is one of them.
    pub fn contains(&self, name: &str) -> bool {
        self.0.binary_search_by(|n| (**n).cmp(name)).is_ok()
    }

    /// The names, in byte order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|n| &**n)
    }

    /// The names in byte order, joined by `separator`.
    fn join(&self, separator: &str) -> String {
        self.0.join(separator)
    }
}

impl<'a> FromIterator<Cow<'a, str>> for NameSet<'a> {
    fn from_iter<I: IntoIterator<Item = Cow<'a, str>>>(names: I) -> Self {
        let mut names: Vec<Cow<'a, str>> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        Self(names)
    }
}

impl<'a> FromIterator<&'a str> for NameSet<'a> {
    fn from_iter<I: IntoIterator<Item = &'a str>>(names: I) -> Self {
        names.into_iter().map(Cow::Borrowed).collect()
    }
}

/// What building a sidecar reads of the pod: its metadata, and its container lists as received.
#[derive(Clone, Copy)]
struct Source<'p, 'a> {
    doc: &'p RawPod<'a>,
    init_containers: &'p RawList<'a>,
    containers: &'p RawList<'a>,
}

/// One entry of the pod's hash annotations (`UpgradeSpec`), fields in Go's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeSpec {
    /// When the entry was written (`null` for entries converted from the legacy shape).
    #[serde(default)]
    pub update_timestamp: Option<String>,
    /// The SidecarSet's hash.
    #[serde(default)]
    pub hash: String,
    /// The SidecarSet's name.
    #[serde(default)]
    pub sidecar_set_name: String,
    /// The injected container names, sorted.
    #[serde(default)]
    pub sidecar_list: Option<Vec<String>>,
    /// The SidecarSet's `status.latestRevision` (hash annotation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_revision: Option<String>,
}

impl UpgradeSpec {
    /// An entry read from the legacy shape of the annotation (a map of SidecarSet name to hash): its hash.
    pub(crate) fn legacy(hash: String, sidecar_set_name: String) -> Self {
        Self {
            update_timestamp: None,
            hash,
            sidecar_set_name,
            sidecar_list: None,
            controller_revision: None,
        }
    }
}

/// A hash annotation entry's text up to its timestamp: `"name":{"updateTimestamp":`.
fn entry_head(out: &mut String, name: &str) {
    write_string(out, name);
    out.push_str(":{\"updateTimestamp\":");
}

/// A hash annotation entry's text after its timestamp, to its closing `}`.
fn entry_tail(out: &mut String, spec: &UpgradeSpec) {
    out.push_str(",\"hash\":");
    write_string(out, &spec.hash);
    out.push_str(",\"sidecarSetName\":");
    write_string(out, &spec.sidecar_set_name);
    out.push_str(",\"sidecarList\":");
    match &spec.sidecar_list {
        Some(list) => {
            out.push('[');
            for (j, item) in list.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                write_string(out, item);
            }
            out.push(']');
        }
        None => out.push_str("null"),
    }
    if let Some(revision) = &spec.controller_revision {
        out.push_str(",\"controllerRevision\":");
        write_string(out, revision);
    }
    out.push('}');
}

/// A piece of annotation text as Go writes it, and as it stands inside the annotation's JSON string literal.
#[derive(Debug, Clone)]
struct Piece {
    plain: String,
    quoted: Box<str>,
}

impl Piece {
    fn of(written: String) -> Self {
        // Go's escapes: `written` holds whole strings, where the characters Go escapes can only be.
        let plain = go::go_escaped(written);
        let mut literal = String::with_capacity(plain.len() + plain.len() / 4 + 2);
        write_string(&mut literal, &plain);
        Self {
            // What the literal holds between its quotes.
            quoted: literal[1..literal.len() - 1].into(),
            plain,
        }
    }
}

/// A hash annotation (`go::to_string` of its map), text and JSON string literal written together.
struct AnnotationText {
    plain: String,
    quoted: String,
}

impl AnnotationText {
    fn new(capacity: usize) -> Self {
        let mut text = Self {
            plain: String::with_capacity(capacity),
            quoted: String::with_capacity(capacity + capacity / 4),
        };
        text.plain.push('{');
        text.quoted.push_str("\"{");
        text
    }

    fn push(&mut self, piece: &Piece) {
        self.plain.push_str(&piece.plain);
        self.quoted.push_str(&piece.quoted);
    }

    fn push_char(&mut self, c: char) {
        self.plain.push(c);
        self.quoted.push(c);
    }

    fn finish(mut self) -> (String, Box<str>) {
        self.plain.push('}');
        self.quoted.push_str("}\"");
        (self.plain, self.quoted.into())
    }
}

/// A SidecarSet's entries in the two hash annotations as its injection writes them, around their timestamp,
/// worked out once per prepared SidecarSet ([`PreparedSidecarSet::hash_entries`]): a pod create copies four
/// pieces per SidecarSet and annotation instead of writing a dozen and escaping the annotation again for
/// the patch.
#[derive(Debug, Clone)]
pub(crate) struct HashEntries {
    /// Per annotation: the entry's head and tail ([`entry_head`], [`entry_tail`]).
    pieces: [[Piece; 2]; 2],
}

/// What a SidecarSet's entries in the two hash annotations are written from, timestamps aside, borrowed
/// from the SidecarSet.
struct EntryKey<'s> {
    name: &'s str,
    /// The hash and the hash without image.
    hashes: [&'s str; 2],
    /// The injected container names, sorted.
    sidecar_list: &'s [&'s str],
    /// The SidecarSet's `status.latestRevision`, when not empty (hash annotation only).
    revision: Option<&'s str>,
}

impl EntryKey<'_> {
    /// The revision entry `which` (0: hash, 1: hash without image) records: only the hash annotation's.
    fn revision(&self, which: usize) -> Option<&str> {
        self.revision.filter(|_| which == 0)
    }

    /// The two entries (hash, hash without image), without timestamp.
    fn specs(&self) -> [UpgradeSpec; 2] {
        [0, 1].map(|which| UpgradeSpec {
            update_timestamp: None,
            hash: self.hashes[which].to_owned(),
            sidecar_set_name: self.name.to_owned(),
            sidecar_list: Some(self.sidecar_list.iter().map(|&n| n.to_owned()).collect()),
            controller_revision: self.revision(which).map(str::to_owned),
        })
    }
}

impl HashEntries {
    fn new(key: &EntryKey<'_>) -> Self {
        let specs = key.specs();
        let pieces = specs.each_ref().map(|spec| {
            let mut head = String::new();
            entry_head(&mut head, &spec.sidecar_set_name);
            let mut tail = String::new();
            entry_tail(&mut tail, spec);
            [Piece::of(head), Piece::of(tail)]
        });
        Self { pieces }
    }
}

/// An entry of a hash annotation as injection writes it back: one read from the pod, or that of a
/// SidecarSet injected now (an index into the fresh [`HashEntries`]), stamped with the request's time.
enum Entry {
    Read(UpgradeSpec),
    Fresh(usize),
}

/// A hash annotation's entries by SidecarSet name, in the order Go writes a map's keys (byte order of the
/// names): a sorted list without repeats, as a pod carries a few.
#[derive(Default)]
struct Entries<'s>(Vec<(Cow<'s, str>, Entry)>);

impl<'s> Entries<'s> {
    /// Sets the entry of `name`, replacing the one it had.
    fn insert(&mut self, name: Cow<'s, str>, entry: Entry) {
        match self.0.binary_search_by(|(have, _)| (**have).cmp(&*name)) {
            Ok(at) => self.0[at].1 = entry,
            Err(at) => self.0.insert(at, (name, entry)),
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn iter(&self) -> impl Iterator<Item = &(Cow<'s, str>, Entry)> {
        self.0.iter()
    }
}

impl<'s> FromIterator<(Cow<'s, str>, Entry)> for Entries<'s> {
    /// Entries in key order without repeats (as a map's), from any order; the last of a name stands.
    fn from_iter<I: IntoIterator<Item = (Cow<'s, str>, Entry)>>(entries: I) -> Self {
        let mut all = Self::default();
        for (name, entry) in entries {
            all.insert(name, entry);
        }
        all
    }
}

/// The two hash annotations' texts and JSON string literals. Entries of the SidecarSets injected now
/// (`fresh`, stamped `now`) are copied from their pieces; the others (a pod injected before) are written.
fn upgrade_specs_texts(
    specs: [&Entries<'_>; 2],
    fresh: &[&HashEntries],
    now: &str,
) -> [(String, Box<str>); 2] {
    let mut written = String::with_capacity(32);
    write_string(&mut written, now);
    let timestamp = Piece::of(written);
    [0, 1].map(|which| {
        let specs = specs[which];
        let mut text = AnnotationText::new(200 * specs.len());
        for (i, (name, entry)) in specs.iter().enumerate() {
            if i > 0 {
                text.push_char(',');
            }
            let spec = match entry {
                Entry::Fresh(at) => {
                    let [head, tail] = &fresh[*at].pieces[which];
                    text.push(head);
                    text.push(&timestamp);
                    text.push(tail);
                    continue;
                }
                Entry::Read(spec) => spec,
            };
            let mut written = String::with_capacity(200);
            entry_head(&mut written, name);
            match spec.update_timestamp.as_deref() {
                Some(t) => write_string(&mut written, t),
                None => written.push_str("null"),
            }
            entry_tail(&mut written, spec);
            text.push(&Piece::of(written));
        }
        text.finish()
    })
}

/// `go::to_string` of a hash annotation's map, as [`upgrade_specs_texts`] writes it without pieces.
#[cfg(test)]
fn upgrade_specs_json(specs: &BTreeMap<String, UpgradeSpec>) -> String {
    let entries: Entries<'_> = specs
        .iter()
        .map(|(name, spec)| (Cow::Borrowed(name.as_str()), Entry::Read(spec.clone())))
        .collect();
    let [(plain, _), _] = upgrade_specs_texts([&entries, &Entries::default()], &[], "");
    plain
}

/// Reads a hash annotation: the current shape, else the legacy map of name to hash (§4.6).
fn read_upgrade_specs(
    doc: &RawPod<'_>,
    key: &'static str,
) -> Result<Entries<'static>, InjectError> {
    // `null` decodes into Go's map without error, leaving it empty.
    let Some(raw) = doc
        .annotation(key)
        .filter(|v| !v.is_empty() && v.trim_matches([' ', '\t', '\r', '\n']) != "null")
    else {
        return Ok(Entries::default());
    };
    fn entries(specs: impl IntoIterator<Item = (String, UpgradeSpec)>) -> Entries<'static> {
        specs
            .into_iter()
            .map(|(name, spec)| (Cow::Owned(name), Entry::Read(spec)))
            .collect()
    }
    match serde_json::from_str::<BTreeMap<String, UpgradeSpec>>(raw) {
        Ok(specs) => Ok(entries(specs)),
        Err(current) => match serde_json::from_str::<BTreeMap<String, String>>(raw) {
            Ok(legacy) => Ok(entries(legacy.into_iter().map(|(name, hash)| {
                let spec = UpgradeSpec::legacy(hash, name.clone());
                (name, spec)
            }))),
            Err(_) => Err(InjectError::InvalidHashAnnotation {
                namespace: doc.metadata_str("namespace").to_owned(),
                name: doc.metadata_str("name").to_owned(),
                key,
                value: raw.to_owned(),
                // Go reports the legacy decode's error, in encoding/json's words.
                reason: go::unmarshal_string_map_error(raw).unwrap_or_else(|| current.to_string()),
            }),
        },
    }
}

/// `patchPodMetadata` (§4.5): returns whether any annotation changed.
///
/// # Errors
/// [`InjectError::MergePatch`] when `MergePatchJson` meets a value that is not JSON.
pub fn patch_pod_metadata(
    doc: &mut RawPod<'_>,
    matched: &[Arc<PreparedSidecarSet>],
) -> Result<bool, InjectError> {
    let entries: Vec<_> = matched
        .iter()
        .flat_map(|s| s.spec.patch_pod_metadata.iter())
        .collect();
    if entries.is_empty() {
        return Ok(false);
    }
    let mut written: Vec<&str> = Vec::new();
    for entry in entries {
        for (key, value) in &entry.annotations {
            let existing = doc.annotation(key).map(str::to_owned);
            let next = match entry.patch_policy.as_str() {
                "Overwrite" => value.clone(),
                "MergePatchJson" => match existing.filter(|e| !e.is_empty()) {
                    // evanphx/json-patch's MergePatch, its errors returned as they are.
                    Some(existing) => merge_patch(&existing, value)
                        .map_err(|e| InjectError::MergePatch(e.into()))?,
                    None => value.clone(),
                },
                "Retain" | "" => match existing {
                    Some(_) => continue,
                    None => value.clone(),
                },
                // Any other policy (validation only asks for one to be set) does nothing, as OpenKruise's
                // switch without a default.
                _ => continue,
            };
            doc.set_annotation(key.clone(), next);
            written.push(key);
        }
    }
    // Whether the pod changed: a value set back to what it was is no change.
    Ok(written
        .iter()
        .any(|key| doc.annotation(key) != doc.received_annotation(key)))
}

fn is_injected_sidecar(c: RawContainer<'_>) -> bool {
    c.may_contain("env", IS_INJECTED)
        && c.elements("env")
            .any(|e| e.str("name") == IS_INJECTED && e.str("value") == "true")
}

/// `$(NAME)` references of a subPathExpr.
fn subpath_vars(expr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = expr;
    // `$(` found by its `$`: a search for one byte, where one for two would set up a substring searcher
    // on every mount.
    while let Some(dollar) = rest.find('$') {
        let Some(after) = rest[dollar + 1..].strip_prefix('(') else {
            rest = &rest[dollar + 1..];
            continue;
        };
        let Some(end) = after.find(')') else { break };
        let name = &after[..end];
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || "-._".contains(c))
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
        if valid {
            out.push(name);
            rest = &after[end + 1..];
        } else {
            // As the regex does: no match here, so the next try starts at the next character (`$($(A))` holds
            // `$(A)`).
            rest = &rest[dollar + 1..];
        }
    }
    out
}

/// A mount of an app container, with its `mountPath`.
type SharedMount<'l> = (RawElement<'l>, Cow<'l, str>);

/// The mounts of the app containers to share, and the envs their subPathExprs reference (§4.6 step 5.3).
fn shared_mounts<'l>(containers: &'l RawList<'_>) -> (Vec<SharedMount<'l>>, Vec<RawElement<'l>>) {
    let mut mounts = Vec::new();
    let mut envs = Vec::new();
    for c in containers.iter().filter(|c| !is_injected_sidecar(*c)) {
        for m in c.elements("volumeMounts") {
            let [path, expr] = m.strs(["mountPath", "subPathExpr"]);
            mounts.push((m, path));
            for var in subpath_vars(&expr) {
                if let Some(e) = c.elements("env").find(|e| e.str("name") == var) {
                    envs.push(e);
                }
            }
        }
    }
    (mounts, envs)
}

/// The env vars to transfer into a sidecar (§4.6 step 5.4).
fn transfer_envs<'l>(
    sidecar: &SidecarContainer,
    doc: &RawPod<'_>,
    containers: &'l RawList<'_>,
) -> Vec<RawElement<'l>> {
    let mut out = Vec::new();
    for t in &sidecar.view.transfer_env {
        // In byte order, as OpenKruise's set of names gives them.
        let names: NameSet<'_> = t
            .env_names
            .iter()
            .chain(Some(&t.env_name).filter(|n| !n.is_empty()))
            .map(String::as_str)
            .collect();
        let source = match t
            .source_container_name_from
            .as_ref()
            .and_then(|f| f.field_ref.as_ref())
        {
            None => t.source_container_name.clone(),
            Some(field) => match field_ref_value(doc, &field.field_path) {
                Some(v) => v,
                // Any other fieldPath: the entry is skipped (and logged by OpenKruise).
                None => continue,
            },
        };
        for name in names.iter() {
            // OpenKruise looks the env up in a map keyed "<container>/<name>": a later definition of the
            // same name wins.
            let found = containers
                .iter()
                .filter(|c| c.name() == source && c.may_contain("env", name))
                .flat_map(|c| c.elements("env"))
                .filter(|e| e.str("name") == name)
                .last();
            if let Some(e) = found {
                out.push(e);
            }
        }
    }
    out
}

/// `metadata.annotations['k']` / `metadata.labels['k']` of the pod (`""` when absent); other paths: `None`.
fn field_ref_value(doc: &RawPod<'_>, path: &str) -> Option<String> {
    for (prefix, field) in [
        ("metadata.annotations['", "annotations"),
        ("metadata.labels['", "labels"),
    ] {
        if let Some(key) = path.strip_prefix(prefix).and_then(|k| k.strip_suffix("']")) {
            // The key as written (OpenKruise lower-cases it only to check it is a qualified name, which
            // validation already did).
            let value = if field == "annotations" {
                doc.annotation(key)
            } else {
                doc.get(Section::Metadata, field)
                    .and_then(|m| m.get(key))
                    .and_then(Value::as_str)
            };
            return Some(value.unwrap_or("").to_owned());
        }
    }
    None
}

fn dedup_by_name<'l>(first: Vec<RawElement<'l>>, then: Vec<RawElement<'l>>) -> Vec<RawElement<'l>> {
    let mut out: Vec<RawElement<'l>> = Vec::new();
    for e in first.into_iter().chain(then) {
        if !out.iter().any(|o| o.str("name") == e.str("name")) {
            out.push(e);
        }
    }
    out
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A container to inject: its name, its JSON, its `podInjectPolicy`.
struct Injected<'s> {
    /// The SidecarSet's, or a hot-upgrade copy's.
    name: Cow<'s, str>,
    container: Json,
    policy: &'s str,
}

/// What one SidecarSet contributes.
#[derive(Default)]
struct Built<'s> {
    init_containers: Vec<Injected<'s>>,
    containers: Vec<Injected<'s>>,
    /// SidecarSet volumes the sidecars use (name, volume), in order, repeats included.
    volumes: Vec<(&'s str, &'s RawObject)>,
    secrets: Vec<Value>,
    hot_annotations: BTreeMap<String, String>,
    work_map: BTreeMap<String, String>,
}

/// `{"name":"IS_INJECTED","value":"true"}`, the env every injected container gets.
const IS_INJECTED_ENV: &str = r#"{"name":"IS_INJECTED","value":"true"}"#;

/// A sidecar as injected (§4.6 steps 4.3-4.8 / 5.3-5.7): the SidecarSet's container, whose members were
/// written as text when the SidecarSet was prepared, with what injection adds to it. Written as text
/// ([`Sidecar::write`]) without building the container as a tree: members are copied, lists extended.
struct Sidecar<'s, 'p> {
    base: PreparedContainer<'s>,
    /// `resources` as the resources policy gives them (§5): they replace the container's own.
    resources: Option<Value>,
    /// Appended to `env` after `IS_INJECTED`: transferred envs, then those shared subPathExprs reference,
    /// copied as the pod has them.
    env: Vec<RawElement<'p>>,
    /// Appended to `volumeMounts`: the app containers' mounts to share, as the pod has them.
    mounts: Vec<RawElement<'p>>,
    /// Appended to `volumeDevices`: the app containers' devices to share, as the pod has them.
    devices: Vec<RawElement<'p>>,
}

/// What a copy of a sidecar changes (the hot-upgrade pair, §6.1).
#[derive(Default, Clone, Copy)]
struct Variant<'x> {
    name: Option<&'x str>,
    image: Option<&'x str>,
    /// Appended to `env` last.
    env: &'x [Value],
}

/// Mount and device paths already taken: few, so a list searched in order (one instantiation less of the
/// map code a pod create runs through).
#[derive(Default)]
struct Paths<'p>(Vec<Cow<'p, str>>);

impl<'p> Paths<'p> {
    /// Adds `path`; whether it was not there yet.
    fn insert(&mut self, path: Cow<'p, str>) -> bool {
        let new = !self.0.contains(&path);
        if new {
            self.0.push(path);
        }
        new
    }
}

impl<'p> FromIterator<Cow<'p, str>> for Paths<'p> {
    fn from_iter<I: IntoIterator<Item = Cow<'p, str>>>(paths: I) -> Self {
        let mut all = Self::default();
        for path in paths {
            all.insert(path);
        }
        all
    }
}

/// Builds one sidecar (§4.6 steps 4.3-4.8 / 5.3-5.7): mounts, envs, devices; adds the SidecarSet volumes its
/// own mounts and devices name to `injected_volumes`.
fn build_container<'s, 'p>(
    prepared: PreparedContainer<'s>,
    source: Source<'p, '_>,
    volumes: PreparedVolumes<'s>,
    injected_volumes: &mut Vec<(&'s str, &'s RawObject)>,
    (resources_policy, all_sidecar_names): (ResourcesPolicyFn<'_>, &NameSet<'_>),
) -> Result<Sidecar<'s, 'p>, InjectError> {
    let sidecar = prepared.spec;
    // The mounts, devices and envs read here are the container's as decoded beside its JSON.
    let c = &sidecar.view;
    let resources = if sidecar.view.resources_policy.is_some() {
        let containers = PodContainers {
            init_containers: source.init_containers,
            containers: source.containers,
        };
        resources_policy(sidecar, all_sidecar_names, containers)
            .map_err(InjectError::ResourcesPolicy)?
    } else {
        None
    };
    let (shared, subpath_envs) = if sidecar.view.share_volume_policy.enabled() {
        shared_mounts(source.containers)
    } else {
        (Vec::new(), Vec::new())
    };
    let transfer = if sidecar.view.transfer_env.is_empty() {
        Vec::new()
    } else {
        transfer_envs(sidecar, source.doc, source.containers)
    };
    let transfer = dedup_by_name(transfer, subpath_envs);

    // Names missing from spec.volumes are skipped (OpenKruise logs a warning).
    let own_volumes = c
        .volume_mounts
        .iter()
        .map(|m| m.name.as_str())
        .chain(c.volume_devices.iter().map(|d| d.name.as_str()));
    injected_volumes.extend(own_volumes.filter_map(|name| volumes.named(name)));
    let mut built = Sidecar {
        base: prepared,
        resources,
        env: Vec::new(),
        mounts: Vec::new(),
        devices: Vec::new(),
    };
    let share_devices = sidecar
        .view
        .share_volume_device_policy
        .as_ref()
        .is_some_and(|p| p.enabled());
    if transfer.is_empty() && shared.is_empty() && !share_devices {
        // Nothing of the pod's goes into it.
        return Ok(built);
    }

    // Paths the sidecar's own mounts and devices take; shared mounts on them are left out.
    let mut used = Paths::default();
    if !shared.is_empty() || share_devices {
        for m in &c.volume_mounts {
            used.insert(m.mount_path.as_str().into());
        }
        for d in &c.volume_devices {
            used.insert(d.device_path.as_str().into());
        }
    }
    let mounts: Vec<SharedMount<'_>> = shared
        .into_iter()
        .filter(|(_, path)| used.insert(path.clone()))
        .collect();

    // After IS_INJECTED, the envs whose names the container does not have yet.
    let mut env_names: Vec<Cow<'_, str>> = c.env.iter().map(|e| e.name.as_str().into()).collect();
    env_names.push(IS_INJECTED.into());
    built.env.reserve(transfer.len());
    for e in transfer {
        let name = e.str("name");
        if !env_names.contains(&name) {
            env_names.push(name);
            built.env.push(e);
        }
    }

    if share_devices {
        let mut used: Paths<'_> = c
            .volume_devices
            .iter()
            .map(|d| d.device_path.as_str())
            .chain(c.volume_mounts.iter().map(|m| m.mount_path.as_str()))
            .map(Cow::Borrowed)
            .chain(mounts.iter().map(|(_, path)| path.clone()))
            .collect();
        for d in source
            .containers
            .iter()
            .filter(|c| !is_injected_sidecar(*c))
            .flat_map(|c| c.elements("volumeDevices"))
        {
            if used.insert(d.str("devicePath")) {
                built.devices.push(d);
            }
        }
    }
    built.mounts = mounts.into_iter().map(|(m, _)| m).collect();
    Ok(built)
}

impl Sidecar<'_, '_> {
    /// The container as JSON text, members in key order (as a tree of it would be written): the SidecarSet's
    /// members copied as written, `env` / `volumeMounts` / `volumeDevices` extended (made lists when absent
    /// or not lists), `resources`, `name` and `image` replaced where this sidecar or `variant` says.
    fn write(&self, variant: Variant<'_>) -> Box<str> {
        // The members injection writes, in key order; `env` always (IS_INJECTED).
        let changed = [
            ("env", true),
            ("image", variant.image.is_some()),
            ("name", variant.name.is_some()),
            ("resources", self.resources.is_some()),
            ("volumeDevices", !self.devices.is_empty()),
            ("volumeMounts", !self.mounts.is_empty()),
        ];
        let mut changed = changed
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(key, _)| key)
            .peekable();
        let written = self.base.written;
        // Room for the pod's elements copied in, and for what else is written (env, resources, name): one
        // allocation.
        let copied: usize = [&self.env, &self.mounts, &self.devices]
            .into_iter()
            .flatten()
            .map(|e| e.text().len() + 1)
            .sum();
        let mut out = String::with_capacity(written.len() + copied + 256);
        out.push('{');
        let comma = |out: &mut String| {
            if out.len() > 1 {
                out.push(',');
            }
        };
        for m in written.members() {
            while let Some(key) = changed.next_if(|key| *key < &*m.key) {
                comma(&mut out);
                self.write_changed(&mut out, key, None, variant);
            }
            comma(&mut out);
            if let Some(key) = changed.next_if(|key| *key == &*m.key) {
                self.write_changed(&mut out, key, Some(m.value), variant);
            } else {
                out.push_str(m.head);
                out.push_str(m.value);
            }
        }
        for key in changed {
            comma(&mut out);
            self.write_changed(&mut out, key, None, variant);
        }
        out.push('}');
        out.into()
    }

    /// Writes the member `key` injection changes; `base` is the SidecarSet's value, as text.
    fn write_changed(&self, out: &mut String, key: &str, base: Option<&str>, variant: Variant<'_>) {
        write_string(out, key);
        out.push(':');
        // The pod's elements are copied as received; a hot-upgrade copy's envs are written after them.
        let (copied, written): (&[RawElement<'_>], &[Value]) = match key {
            "name" => return write_string(out, variant.name.unwrap_or_default()),
            "image" => return write_string(out, variant.image.unwrap_or_default()),
            "resources" => {
                return write_value(out, self.resources.as_ref().unwrap_or(&Value::Null));
            }
            "env" => (&self.env, variant.env),
            "volumeDevices" => (&self.devices, &[]),
            _ => (&self.mounts, &[]),
        };
        // The list as the SidecarSet has it (a value that is not a list is replaced by one), then the rest.
        let elements = base
            .and_then(|t| t.strip_prefix('['))
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or("");
        out.push('[');
        out.push_str(elements);
        let mut first = elements.is_empty();
        let mut separate = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
        };
        if key == "env" {
            separate(out);
            out.push_str(IS_INJECTED_ENV);
        }
        for element in copied {
            separate(out);
            out.push_str(element.text());
        }
        for value in written {
            separate(out);
            write_value(out, value);
        }
        out.push(']');
    }
}

/// The two hot-upgrade copies of a sidecar (§6.1) and their annotations.
fn hot_upgrade<'s>(sidecar: &Sidecar<'s, '_>, built: &mut Built<'s>) -> [(String, Json); 2] {
    let view = &sidecar.base.spec.view;
    let name = &view.name;
    let copy = |suffix: &str, image: Option<&str>| {
        let copy_name = format!("{name}{suffix}");
        let env = [
            ("SIDECARSET_VERSION", "version"),
            ("SIDECARSET_VERSION_ALT", "versionalt"),
        ]
        .map(|(var, prefix)| {
            json!({"name": var, "valueFrom": {"fieldRef": {
                "fieldPath": format!("metadata.annotations['{prefix}.sidecarset.kruise.io/{copy_name}']")}}})
        });
        let container = sidecar.write(Variant {
            name: Some(&copy_name),
            image,
            env: &env,
        });
        (copy_name, Json::Text(container))
    };
    let first = copy("-1", None);
    let second = copy("-2", Some(&view.upgrade_strategy.hot_upgrade_empty_image));
    for (copy_name, version, alt) in [(&first.0, "1", "0"), (&second.0, "0", "1")] {
        built.hot_annotations.insert(
            format!("version.sidecarset.kruise.io/{copy_name}"),
            version.into(),
        );
        built.hot_annotations.insert(
            format!("versionalt.sidecarset.kruise.io/{copy_name}"),
            alt.into(),
        );
    }
    built.work_map.insert(name.clone(), format!("{name}-1"));
    [first, second]
}

fn is_hot(sidecar: &SidecarContainer) -> bool {
    sidecar.view.upgrade_strategy.upgrade_type == "HotUpgrade"
}

/// Which list of the pod a sidecar goes into.
#[derive(Clone, Copy)]
enum Destination {
    InitContainers,
    Containers,
}

impl<'s> Built<'s> {
    fn list(&mut self, into: Destination) -> &mut Vec<Injected<'s>> {
        match into {
            Destination::InitContainers => &mut self.init_containers,
            Destination::Containers => &mut self.containers,
        }
    }
}

/// Writes a built sidecar (or its hot-upgrade pair) into the list it goes into.
fn push_injected<'s>(
    built: &mut Built<'s>,
    into: Destination,
    sidecar: &Sidecar<'s, '_>,
    hot: bool,
) {
    let policy = sidecar.base.spec.view.pod_inject_policy.as_str();
    if hot {
        let pair = hot_upgrade(sidecar, built).map(|(name, container)| Injected {
            name: Cow::Owned(name),
            container,
            policy,
        });
        built.list(into).extend(pair);
    } else {
        let plain = sidecar.resources.is_none()
            && sidecar.env.is_empty()
            && sidecar.mounts.is_empty()
            && sidecar.devices.is_empty();
        let container = if plain {
            // As the SidecarSet has it: written once.
            let text = sidecar
                .base
                .plain
                .get_or_init(|| sidecar.write(Variant::default()).into());
            Json::Shared(Arc::clone(text))
        } else {
            Json::Text(sidecar.write(Variant::default()))
        };
        built.list(into).push(Injected {
            name: Cow::Borrowed(&sidecar.base.spec.view.name),
            container,
            policy,
        });
    }
}

/// Injects `matched` (already chosen revisions, in order) into the raw pod (§4.5-4.8). Returns whether the
/// pod changed.
///
/// # Errors
/// [`InjectError`] for a corrupt hash annotation, a merge patch on non-JSON, or a resources policy failure.
pub fn inject(
    doc: &mut RawPod<'_>,
    matched: &[Arc<PreparedSidecarSet>],
    options: InjectOptions<'_>,
    resources_policy: ResourcesPolicyFn<'_>,
) -> Result<bool, InjectError> {
    if matched.is_empty() {
        return Ok(false);
    }
    let metadata_changed = patch_pod_metadata(doc, matched)?;
    let mut hashes = read_upgrade_specs(doc, HASH_ANNOTATION)?;
    let mut hashes_without_image = read_upgrade_specs(doc, HASH_WITHOUT_IMAGE_ANNOTATION)?;
    // The injected list: the names it had, and those of `matched`.
    let names: NameSet<'_> = doc
        .annotation(INJECTED_LIST_ANNOTATION)
        .filter(|v| !v.is_empty())
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(|name| Cow::Owned(name.to_owned()))
        .chain(matched.iter().map(|set| Cow::Borrowed(set.name())))
        .collect();
    let all_sidecar_names: NameSet<'_> = matched
        .iter()
        .flat_map(|s| s.spec.init_containers.iter().chain(&s.spec.containers))
        .map(|c| c.view.name.as_str())
        .collect();

    let source = Source {
        doc,
        init_containers: &doc.init_containers,
        containers: &doc.containers,
    };
    let mut built = Built::default();
    let mut fresh: Vec<&HashEntries> = Vec::with_capacity(matched.len());
    for set in matched {
        let mut sidecar_list: Vec<&str> = Vec::new();
        let mut injected_any = false;
        for ic in set.init_containers() {
            let native = ic.spec.is_native_sidecar();
            if native {
                sidecar_list.push(&ic.spec.view.name);
            }
            let c = build_container(
                ic,
                source,
                set.volumes(),
                &mut built.volumes,
                (resources_policy, &all_sidecar_names),
            )?;
            injected_any = true;
            let hot = native && is_hot(ic.spec);
            push_injected(&mut built, Destination::InitContainers, &c, hot);
        }
        built
            .secrets
            .extend(set.spec.image_pull_secrets.iter().map(|s| json!(s)));
        for sc in set.containers() {
            sidecar_list.push(&sc.spec.view.name);
            let c = build_container(
                sc,
                source,
                set.volumes(),
                &mut built.volumes,
                (resources_policy, &all_sidecar_names),
            )?;
            injected_any = true;
            push_injected(&mut built, Destination::Containers, &c, is_hot(sc.spec));
        }
        if injected_any {
            sidecar_list.sort();
            fresh.push(set.hash_entries(|| {
                HashEntries::new(&EntryKey {
                    name: set.name(),
                    hashes: [HASH_ANNOTATION, HASH_WITHOUT_IMAGE_ANNOTATION]
                        .map(|annotation| set.annotation(annotation).unwrap_or("")),
                    sidecar_list: &sidecar_list,
                    revision: set
                        .status
                        .as_ref()
                        .and_then(|s| s.latest_revision.as_deref())
                        .filter(|r| !r.is_empty()),
                })
            }));
            let at = fresh.len() - 1;
            hashes.insert(Cow::Borrowed(set.name()), Entry::Fresh(at));
            hashes_without_image.insert(Cow::Borrowed(set.name()), Entry::Fresh(at));
        }
    }
    if built.init_containers.is_empty() && built.containers.is_empty() {
        return Ok(metadata_changed);
    }
    // The work map is written only when a hot-upgrade sidecar went in (§6.1): the pod's entries, then ours.
    let work_map = if built.work_map.is_empty() {
        BTreeMap::new()
    } else {
        let mut map: BTreeMap<String, String> = doc
            .annotation(WORKING_HOT_UPGRADE_ANNOTATION)
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default();
        map.extend(std::mem::take(&mut built.work_map));
        map
    };
    let annotations = upgrade_specs_texts([&hashes, &hashes_without_image], &fresh, options.now);
    apply(doc, built, options, annotations, work_map, names);
    Ok(true)
}

/// §4.7 merge rule: same-name pod containers are replaced in place; others go before (BeforeAppContainer)
/// or after (anything else) the pod's own.
fn merge_containers(existing: &RawList<'_>, injected: Vec<Injected<'_>>) -> Vec<Item> {
    let mut slots: Vec<Item> = (0..existing.len()).map(Item::Original).collect();
    let mut before = Vec::new();
    let mut after = Vec::new();
    for c in injected {
        if let Some(slot) = (0..existing.len()).find(|&i| existing.name(i) == c.name) {
            // The same container again (a pod injected before) stays as it came.
            slots[slot] = if existing.value(slot) == c.container.to_value() {
                Item::Original(slot)
            } else {
                Item::New(c.container)
            };
        } else if c.policy == "BeforeAppContainer" {
            before.push(Item::New(c.container));
        } else {
            after.push(Item::New(c.container));
        }
    }
    before.into_iter().chain(slots).chain(after).collect()
}

/// §4.7 step 4: the pod's volumes, then each SidecarSet volume unless the pod (or an earlier SidecarSet) has
/// one of its name; `None` when nothing is added.
fn merge_volumes(existing: &RawList<'_>, injected: Vec<(&str, &RawObject)>) -> Option<Vec<Item>> {
    if injected.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = existing.iter().map(RawContainer::name).collect();
    let mut merged: Vec<Item> = (0..existing.len()).map(Item::Original).collect();
    for (name, volume) in injected {
        if !names.contains(&name) {
            names.push(name);
            // Its text is what the patch carries (written as serde_json writes the tree).
            merged.push(Item::New(Json::Text(volume.text().into())));
        }
    }
    (merged.len() > existing.len()).then_some(merged)
}

fn apply(
    doc: &mut RawPod<'_>,
    built: Built<'_>,
    options: InjectOptions<'_>,
    [hashes, hashes_without_image]: [(String, Box<str>); 2],
    work_map: BTreeMap<String, String>,
    names: NameSet<'_>,
) {
    let Built {
        mut init_containers,
        mut containers,
        volumes,
        secrets,
        hot_annotations,
        ..
    } = built;
    init_containers.sort_by(|a, b| a.name.cmp(&b.name));
    if !init_containers.is_empty() {
        let merged = merge_containers(&doc.init_containers, init_containers);
        doc.init_containers.set(merged);
    }
    if options.sort_containers_by_name {
        containers.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if !containers.is_empty() {
        let merged = merge_containers(&doc.containers, containers);
        doc.containers.set(merged);
    }
    if let Some(merged) = merge_volumes(&doc.volumes, volumes) {
        doc.volumes.set(merged);
    }
    // The pod's secrets, then the SidecarSets', the first of each name (checked to be a list of objects, or
    // null, by the chain).
    let received = match doc.get(Section::Spec, "imagePullSecrets") {
        Some(Value::Array(list)) => list.as_slice(),
        _ => &[],
    };
    if !(received.is_empty() && secrets.is_empty()) {
        let mut all_secrets: Vec<Value> = Vec::with_capacity(received.len() + secrets.len());
        for s in received.iter().cloned().chain(secrets) {
            if !all_secrets
                .iter()
                .any(|o| str_field(o, "name") == str_field(&s, "name"))
            {
                all_secrets.push(s);
            }
        }
        *doc.edit(Section::Spec, "imagePullSecrets") = Some(Value::Array(all_secrets));
    }

    for (key, (text, literal)) in [
        (HASH_ANNOTATION, hashes),
        (HASH_WITHOUT_IMAGE_ANNOTATION, hashes_without_image),
    ] {
        doc.set_annotation_literal(key, text, literal);
    }
    doc.set_annotation(INJECTED_LIST_ANNOTATION, names.join(","));
    if !work_map.is_empty() {
        doc.set_annotation(WORKING_HOT_UPGRADE_ANNOTATION, go::to_string(&work_map));
    }
    for (k, v) in hot_annotations {
        doc.set_annotation(k, v);
    }
}

#[cfg(test)]
mod tests;
