//! A SidecarSet as injection uses it, prepared once: when it enters the index the pod webhook reads
//! ([`super::select::SidecarSetIndex::upsert`]), or when a historical revision is restored for a pod
//! ([`super::revision::choose`]). The SidecarSet itself stays the plain API type; what injection works out
//! from it alone lives here:
//! - each sidecar container as it is injected (its JSON without Kruise's own fields), written ahead as JSON
//!   text member by member ([`Written`]), so a pod create copies members instead of cloning and writing a
//!   tree;
//! - on first use, that container as injected into a pod that gives it nothing of its own, shared by every
//!   such pod's patch;
//! - on first use, the SidecarSet's entries in a pod's hash annotations, written as Go writes them
//!   ([`super::inject::HashEntries`]).
//!
//! A prepared SidecarSet is never edited (it is shared behind an `Arc`), so what it works out once holds
//! for as long as it lives; an update of the SidecarSet prepares a new one.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use super::inject::HashEntries;
use crate::api::RawObject;
use crate::api::sidecarset::{KRUISE_CONTAINER_FIELDS, SidecarContainer, SidecarSet};
use crate::json::{write_string, write_value};

/// A SidecarSet with what injection works out from it once. Reads as the SidecarSet it was prepared from.
#[derive(Debug)]
pub struct PreparedSidecarSet {
    set: Arc<SidecarSet>,
    /// One per container of `spec.initContainers`, then of `spec.containers`, in order.
    containers: Box<[WrittenContainer]>,
    /// The `name` of each of `spec.volumes`.
    volume_names: Box<[Box<str>]>,
    hash_entries: OnceLock<HashEntries>,
}

/// The volumes of a [`PreparedSidecarSet`] and their names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PreparedVolumes<'s> {
    names: &'s [Box<str>],
    volumes: &'s [RawObject],
}

impl<'s> PreparedVolumes<'s> {
    /// The last volume named `name` (as a map by name would keep it), with its name.
    pub(crate) fn named(&self, name: &str) -> Option<(&'s str, &'s RawObject)> {
        self.names
            .iter()
            .zip(self.volumes)
            .rev()
            .find(|(n, _)| &***n == name)
            .map(|(n, v)| (&**n, v))
    }
}

/// A sidecar container written ahead, and its text as injected into a pod that gives it nothing.
#[derive(Debug)]
struct WrittenContainer {
    written: Written,
    plain: OnceLock<Arc<str>>,
}

/// A sidecar container of a [`PreparedSidecarSet`]: as stored, and written ahead.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PreparedContainer<'s> {
    /// The container as stored.
    pub(crate) spec: &'s SidecarContainer,
    /// The container as it is injected, written as JSON text.
    pub(crate) written: &'s Written,
    /// The container as injected into a pod that gives it nothing of its own (no transferred envs, shared
    /// mounts or devices, resources policy, hot-upgrade copy): `written` with `IS_INJECTED` added, worked
    /// out on its first such injection.
    pub(crate) plain: &'s OnceLock<Arc<str>>,
}

impl PreparedSidecarSet {
    /// Prepares `set`: writes its sidecar containers ahead.
    pub fn new(set: Arc<SidecarSet>) -> Self {
        let containers = set
            .spec
            .init_containers
            .iter()
            .chain(&set.spec.containers)
            .map(|c| WrittenContainer {
                written: Written::of(&c.raw().to_map()),
                plain: OnceLock::new(),
            })
            .collect();
        let volume_names = set
            .spec
            .volumes
            .iter()
            .map(|v| v.str_member("name").into())
            .collect();
        Self {
            set,
            containers,
            volume_names,
            hash_entries: OnceLock::new(),
        }
    }

    /// `spec.volumes`, with their names.
    pub(crate) fn volumes(&self) -> PreparedVolumes<'_> {
        PreparedVolumes {
            names: &self.volume_names,
            volumes: &self.set.spec.volumes,
        }
    }

    /// The SidecarSet as stored.
    pub fn sidecar_set(&self) -> &Arc<SidecarSet> {
        &self.set
    }

    /// `spec.initContainers`, prepared.
    pub(crate) fn init_containers(&self) -> impl Iterator<Item = PreparedContainer<'_>> {
        self.prepared(&self.set.spec.init_containers, 0)
    }

    /// `spec.containers`, prepared.
    pub(crate) fn containers(&self) -> impl Iterator<Item = PreparedContainer<'_>> {
        self.prepared(
            &self.set.spec.containers,
            self.set.spec.init_containers.len(),
        )
    }

    fn prepared<'s>(
        &'s self,
        specs: &'s [SidecarContainer],
        first: usize,
    ) -> impl Iterator<Item = PreparedContainer<'s>> {
        specs
            .iter()
            .zip(&self.containers[first..])
            .map(|(spec, c)| PreparedContainer {
                spec,
                written: &c.written,
                plain: &c.plain,
            })
    }

    /// The SidecarSet's entries in a pod's hash annotations, worked out by `init` on first use: they depend
    /// on the SidecarSet alone (its name, hashes, containers and latest revision).
    pub(crate) fn hash_entries(&self, init: impl FnOnce() -> HashEntries) -> &HashEntries {
        self.hash_entries.get_or_init(init)
    }
}

impl Deref for PreparedSidecarSet {
    type Target = SidecarSet;

    fn deref(&self) -> &SidecarSet {
        &self.set
    }
}

impl From<SidecarSet> for PreparedSidecarSet {
    fn from(set: SidecarSet) -> Self {
        Self::new(Arc::new(set))
    }
}

/// A sidecar container written as JSON text (as serde_json writes it, members in key order): one text, and
/// where each member's `"key":` and value start and end in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Written {
    text: Box<str>,
    /// Per member: where its `"key":` starts, where its value starts, where it ends.
    members: Box<[(usize, usize, usize)]>,
}

/// A member of a [`Written`] container.
pub(crate) struct WrittenMember<'a> {
    /// The key.
    pub key: Cow<'a, str>,
    /// `"key":`, escaped.
    pub head: &'a str,
    /// The value.
    pub value: &'a str,
}

impl Written {
    /// `raw` without [`KRUISE_CONTAINER_FIELDS`].
    fn of(raw: &Map<String, Value>) -> Self {
        let mut text = String::new();
        let mut members = Vec::with_capacity(raw.len());
        let injected = raw
            .iter()
            .filter(|(key, _)| !KRUISE_CONTAINER_FIELDS.contains(&key.as_str()));
        for (key, value) in injected {
            let head = text.len();
            write_string(&mut text, key);
            text.push(':');
            let start = text.len();
            write_value(&mut text, value);
            members.push((head, start, text.len()));
        }
        Self {
            text: text.into(),
            members: members.into(),
        }
    }

    /// The members, in key order.
    pub(crate) fn members(&self) -> impl Iterator<Item = WrittenMember<'_>> {
        self.members.iter().map(|&(head, start, end)| {
            let head = &self.text[head..start];
            // `"key":`; a key written with escapes is read back (it is rare).
            let quoted = &head[..head.len() - 1];
            let key = match quoted.get(1..quoted.len() - 1) {
                Some(key) if !key.contains('\\') => Cow::Borrowed(key),
                _ => Cow::Owned(serde_json::from_str(quoted).unwrap_or_default()),
            };
            WrittenMember {
                key,
                head,
                value: &self.text[start..end],
            }
        })
    }

    /// The length of the members' text (no commas or braces).
    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(container: Value) -> Written {
        let c: SidecarContainer = serde_json::from_value(container).unwrap();
        Written::of(&c.raw().to_map())
    }

    #[test]
    fn a_container_is_written_member_by_member_as_serde_json_writes_it() {
        let c = written(json!({"name": "s", "image": "i",
            "a\"b": 1, "x\u{1}": [true, null], "env": [{"name": "E", "value": "é"}], "transferEnv": []}));
        let members: Vec<_> = c.members().collect();
        let keys: Vec<&str> = members.iter().map(|m| &*m.key).collect();
        assert_eq!(
            keys,
            ["a\"b", "env", "image", "name", "x\u{1}"],
            "Kruise's own fields left out"
        );
        let joined: Vec<String> = members
            .iter()
            .map(|m| format!("{}{}", m.head, m.value))
            .collect();
        assert_eq!(
            format!("{{{}}}", joined.join(",")),
            r#"{"a\"b":1,"env":[{"name":"E","value":"é"}],"image":"i","name":"s","x\u0001":[true,null]}"#
        );
    }

    #[test]
    fn unknown_container_fields_are_injected_and_kruise_fields_are_not() {
        let injected: Vec<_> = written(
            json!({"name": "c", "image": "i", "podInjectPolicy": "AfterAppContainer",
            "shareVolumePolicy": {"type": "enabled"}, "futureContainerField": {"x": 1},
            "transferEnv": [{"sourceContainerName": "app", "envNames": ["A", "B"]}]}),
        )
        .members()
        .map(|m| m.key.into_owned())
        .collect();
        assert!(
            injected.iter().any(|k| k == "futureContainerField")
                && !injected.iter().any(|k| k == "transferEnv")
        );
    }

    #[test]
    fn init_containers_and_containers_are_prepared_in_order() {
        let set: SidecarSet = serde_json::from_value(json!({"metadata": {"name": "s"},
            "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "c1"}]}}))
        .unwrap();
        let prepared = PreparedSidecarSet::from(set);
        let names = |c: PreparedContainer<'_>| {
            let name = c.written.members().find(|m| m.key == "name").unwrap();
            (c.spec.view.name.clone(), name.value.to_owned())
        };
        let init: Vec<_> = prepared.init_containers().map(names).collect();
        let plain: Vec<_> = prepared.containers().map(names).collect();
        assert_eq!(
            init,
            [
                ("i1".into(), "\"i1\"".into()),
                ("i2".into(), "\"i2\"".into())
            ]
        );
        assert_eq!(plain, [("c1".to_owned(), "\"c1\"".to_owned())]);
        assert_eq!(prepared.name(), "s", "reads as the SidecarSet");
    }
}
