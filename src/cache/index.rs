//! Secondary indexes of a shared store ([`super::shared`]): the objects filed under a key each names (their
//! namespace, a label's value, the names listed in an annotation), so that a question about one key reads
//! that key's objects instead of scanning the store. The SidecarSet controller's "pods injected by this
//! SidecarSet" was a scan of every pod per SidecarSet: 50,000 SidecarSets over 10,000 pods never finished
//! their first pass.
//!
//! An index is registered on a [`super::shared::Shared`] store by name ([`super::shared::Shared::index`]),
//! built from the store then, and kept by the store's [`super::shared::Publisher`]: each change reaches the
//! index after the store and before any subscriber hears of it, so a controller triggered by a change
//! reads an index that has it. A bucket holds the store's own `Arc`s (8 bytes an entry), ordered by
//! namespace and name.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use kube::runtime::reflector::{Lookup, Store};

use super::change::Change;

/// The keys an object is filed under (duplicates are filed once).
pub type Keys<K> = fn(&K) -> Vec<String>;

/// An index of a store's objects by the keys [`Keys`] gives (cheap to clone; clones share the index).
pub struct Index<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    buckets: Arc<RwLock<Buckets<K>>>,
}

impl<K> Clone for Index<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    fn clone(&self) -> Self {
        Self {
            buckets: self.buckets.clone(),
        }
    }
}

struct Buckets<K> {
    keys: Keys<K>,
    by_key: HashMap<String, Vec<Arc<K>>>,
}

/// The order of a bucket: namespace, then name.
fn identity<K: Lookup>(object: &K) -> (String, String) {
    (
        object
            .namespace()
            .map(|n| n.into_owned())
            .unwrap_or_default(),
        object.name().map(|n| n.into_owned()).unwrap_or_default(),
    )
}

fn compare<K: Lookup>(a: &K, b: &(String, String)) -> std::cmp::Ordering {
    let namespace = a.namespace();
    let name = a.name();
    (
        namespace.as_deref().unwrap_or(""),
        name.as_deref().unwrap_or(""),
    )
        .cmp(&(b.0.as_str(), b.1.as_str()))
}

impl<K: Lookup> Buckets<K> {
    fn keys_of(&self, object: &K) -> Vec<String> {
        let mut keys = (self.keys)(object);
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    fn insert(&mut self, object: &Arc<K>) {
        let id = identity(&**object);
        for key in self.keys_of(object) {
            let bucket = self.by_key.entry(key).or_default();
            match bucket.binary_search_by(|o| compare(&**o, &id)) {
                Ok(at) => bucket[at] = object.clone(),
                Err(at) => bucket.insert(at, object.clone()),
            }
        }
    }

    fn remove(&mut self, object: &K) {
        let id = identity(object);
        for key in self.keys_of(object) {
            let Some(bucket) = self.by_key.get_mut(&key) else {
                continue;
            };
            if let Ok(at) = bucket.binary_search_by(|o| compare(&**o, &id)) {
                bucket.remove(at);
            }
            if bucket.is_empty() {
                self.by_key.remove(&key);
            }
        }
    }

    fn rebuild(&mut self, objects: Vec<Arc<K>>) {
        self.by_key.clear();
        for object in &objects {
            for key in self.keys_of(object) {
                self.by_key.entry(key).or_default().push(object.clone());
            }
        }
        for bucket in self.by_key.values_mut() {
            bucket.sort_by_cached_key(|o| identity(&**o));
        }
        self.by_key.shrink_to_fit();
    }
}

impl<K> Index<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    /// An index of `store` as it is now by `keys`.
    pub(super) fn build(keys: Keys<K>, store: &Store<K>) -> Self {
        let mut buckets = Buckets {
            keys,
            by_key: HashMap::new(),
        };
        buckets.rebuild(store.state());
        Self {
            buckets: Arc::new(RwLock::new(buckets)),
        }
    }

    /// Files a change the store made: `old` is the object's state in the store before it.
    pub(super) fn update(&self, old: Option<&Arc<K>>, change: &Change<K>, store: &Store<K>) {
        let mut buckets = self.buckets.write().unwrap_or_else(PoisonError::into_inner);
        match change {
            Change::Applied(new) => {
                if let Some(old) = old {
                    buckets.remove(old);
                }
                buckets.insert(new);
            }
            Change::Deleted(gone) => buckets.remove(old.map_or(&**gone, |o| &**o)),
            Change::Relisted => buckets.rebuild(store.state()),
        }
    }

    /// The objects filed under `key`, by namespace and name.
    pub fn get(&self, key: &str) -> Vec<Arc<K>> {
        self.buckets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .by_key
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    /// Whether an object is filed under `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.buckets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .by_key
            .contains_key(key)
    }
}

/// The name of the index by namespace ([`by_namespace`]).
pub const NAMESPACE_INDEX: &str = "namespace";

/// [`Keys`] of namespaced objects: their namespace.
pub fn by_namespace<K: Lookup>(object: &K) -> Vec<String> {
    object
        .namespace()
        .map(|n| vec![n.into_owned()])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::cache::shared::Publisher;

    /// A ConfigMap whose `teams` label lists the keys it is filed under.
    fn config_map(namespace: &str, name: &str, teams: &str) -> ConfigMap {
        ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                labels: Some(BTreeMap::from([("teams".into(), teams.into())])),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn teams(c: &ConfigMap) -> Vec<String> {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("teams"))
            .map(|t| {
                t.split('.')
                    .filter(|t| !t.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn names(objects: &[Arc<ConfigMap>]) -> Vec<String> {
        objects
            .iter()
            .map(|o| format!("{}/{}", o.namespace().unwrap(), o.name().unwrap()))
            .collect()
    }

    /// What a scan of the store finds under `key`, in the index's order.
    fn scanned(key: &str, store: &Store<ConfigMap>) -> Vec<String> {
        let mut found: Vec<Arc<ConfigMap>> = store
            .state()
            .into_iter()
            .filter(|o| teams(o).iter().any(|t| t == key))
            .collect();
        found.sort_by_key(|o| identity(&**o));
        names(&found)
    }

    #[test]
    fn an_index_follows_every_change_before_subscribers_hear_of_it() {
        let (mut publisher, shared) = Publisher::listed(
            (),
            [
                config_map("b", "one", "web.api"),
                config_map("a", "two", "web"),
                config_map("a", "one", "api.api"),
            ],
        );
        // Registered after the list: built from the store.
        let index = shared.index("teams", teams);
        assert_eq!(names(&index.get("web")), ["a/two", "b/one"]);
        assert_eq!(
            names(&index.get("api")),
            ["a/one", "b/one"],
            "a key named twice files once"
        );
        assert!(index.get("db").is_empty() && !index.contains("db"));
        // The same name gives the same index.
        assert_eq!(
            names(&shared.index("teams", teams).get("web")),
            ["a/two", "b/one"]
        );

        // An update moves the object between keys.
        publisher.apply(Event::Apply(config_map("b", "one", "db")));
        assert_eq!(names(&index.get("web")), ["a/two"]);
        assert_eq!(names(&index.get("api")), ["a/one"]);
        assert_eq!(names(&index.get("db")), ["b/one"]);
        // The bucket holds the store's current object.
        let filed = index.get("db");
        assert!(Arc::ptr_eq(
            &filed[0],
            &shared
                .store()
                .get(&kube::runtime::reflector::ObjectRef::new("one").within("b"))
                .unwrap()
        ));
        // A deletion empties its keys.
        publisher.apply(Event::Delete(config_map("b", "one", "db")));
        assert!(!index.contains("db"));
        // A new object, in order.
        publisher.apply(Event::Apply(config_map("a", "three", "web")));
        assert_eq!(names(&index.get("web")), ["a/three", "a/two"]);
        for key in ["web", "api", "db"] {
            assert_eq!(
                names(&index.get(key)),
                scanned(key, shared.store()),
                "{key}"
            );
        }

        // A relist replaces it whole.
        publisher.apply(Event::Init);
        publisher.apply(Event::InitApply(config_map("c", "four", "db.web")));
        assert_eq!(
            names(&index.get("web")),
            ["a/three", "a/two"],
            "not before the list is done"
        );
        publisher.apply(Event::InitDone);
        assert_eq!(names(&index.get("web")), ["c/four"]);
        assert_eq!(names(&index.get("db")), ["c/four"]);
        assert!(!index.contains("api"));
    }

    #[tokio::test]
    async fn a_subscriber_triggered_by_a_change_finds_it_in_the_index() {
        use futures::StreamExt;
        let (mut publisher, shared) = Publisher::listed((), Vec::<ConfigMap>::new());
        let index = shared.index("teams", teams);
        let mut changes = Box::pin(shared.changes());
        publisher.apply(Event::Apply(config_map("a", "one", "web")));
        let change = changes.next().await.expect("a change");
        assert!(change.object().is_some());
        assert_eq!(names(&index.get("web")), ["a/one"]);
    }

    #[test]
    fn namespaced_objects_are_filed_by_namespace() {
        let (_publisher, shared) = Publisher::listed(
            (),
            [
                config_map("b", "x", ""),
                config_map("a", "y", ""),
                config_map("a", "x", ""),
            ],
        );
        let index = shared.index("namespace", by_namespace);
        assert_eq!(names(&index.get("a")), ["a/x", "a/y"]);
        assert_eq!(names(&index.get("b")), ["b/x"]);
    }
}
