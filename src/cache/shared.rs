//! A reflector store the webhooks and the controllers share, with a feed of its changes: the webhooks read
//! the [`Store`], the controllers are driven by the feed (STYLE §2: events, not polls).
//!
//! One watch per kind fills a store ([`watch`]); what no one reads is stripped before an object enters it.
//! Each change is published after the store has it: [`Change::Applied`] with the store's own `Arc` (no
//! copy), [`Change::Deleted`] with the last state, [`Change::Relisted`] when a relist replaced the store
//! whole (objects may have come and gone without an event). Subscribers that fall more than [`FEED_CAPACITY`]
//! changes behind get a `Relisted` in place of what they missed, so "everything may have changed" is the
//! one answer to both. Publishing never waits for a subscriber and costs nothing without one (no
//! controller runs on a replica that does not lead), so a slow controller never holds back the webhooks'
//! view.
//!
//! A store may carry secondary indexes ([`super::index`], [`Shared::index`]): the publisher files each change
//! in them after the store has it and before it publishes it.
//!
//! kube-runtime's own shared stores (`store_shared`, behind `unstable-runtime-subscribe`) were not used:
//! they publish no deletions, and their writer waits for the slowest subscriber.
//!
//! Whether a store has its first list is [`Shared::ready`] / [`Shared::synced`], a flag of its own
//! ([`SyncState`], [`super::sync`]), never kube-runtime's `Store::wait_until_ready`: that future keeps one waker per store
//! (a oneshot receiver polled by every waiter), so of several tasks waiting on one store only the last to
//! poll is woken. The readiness task, the controllers and kube-runtime's `Controller` all waited on the pod
//! store at start-up; whenever a replica became leader before its first lists were in (a released Lease, a
//! fast certificate, many pods), `informer-caches-synced` never passed (issue 36). The same flag records
//! the watch's last error, for `/readyz?verbose`, the log and the `informer_synced` gauge.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{Lookup, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

pub use super::change::Change;
use super::index::{Index, Keys};
use super::sync::SyncState;

/// Changes a subscriber may fall behind by before it is told to start over ([`Change::Relisted`]).
pub const FEED_CAPACITY: usize = 1024;

/// A store and the feed of its changes (cheap to clone).
pub struct Shared<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    store: Store<K>,
    feed: broadcast::Sender<Change<K>>,
    indexes: Indexes<K>,
    sync: Arc<SyncState>,
    watching: Arc<Watching>,
}

/// The task of a store's watch, ended when the last handle of the store goes (a kind no longer served:
/// docs/startup-order.md), so that no watch outlives everything that reads it.
#[derive(Default)]
struct Watching(Mutex<Option<tokio::task::AbortHandle>>);

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(task) = self
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

/// The indexes of a store, by name (registered by readers, kept by the publisher).
type Indexes<K> = Arc<Mutex<Vec<(&'static str, Index<K>)>>>;

impl<K> Clone for Shared<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            feed: self.feed.clone(),
            indexes: self.indexes.clone(),
            sync: self.sync.clone(),
            watching: self.watching.clone(),
        }
    }
}

impl<K> Shared<K>
where
    K: Lookup + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    /// The store.
    pub fn store(&self) -> &Store<K> {
        &self.store
    }

    /// The store's index called `name`, filing each object under the keys `keys` gives: registered (and
    /// built from the store) by the first call, the same index for every later call of that name. It
    /// follows every change from then on ([`super::index`]).
    pub fn index(&self, name: &'static str, keys: Keys<K>) -> Index<K> {
        let mut indexes = self.indexes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, index)) = indexes.iter().find(|(n, _)| *n == name) {
            return index.clone();
        }
        // Built under the lock the publisher takes before changing the store: a change applied to the
        // store meanwhile is filed again by the publisher, and filing is idempotent.
        let index = Index::build(keys, &self.store);
        indexes.push((name, index.clone()));
        index
    }

    /// The objects of `namespace`, by name, through the store's namespace index (registered by the first
    /// call).
    pub fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.index(super::index::NAMESPACE_INDEX, super::index::by_namespace)
            .get(namespace)
    }

    /// Whether `namespace` holds an object (the namespace index, as [`Shared::in_namespace`]).
    pub fn has_in_namespace(&self, namespace: &str) -> bool {
        self.index(super::index::NAMESPACE_INDEX, super::index::by_namespace)
            .contains(namespace)
    }

    /// Resolves once the store has its first list (any number of waiters: module docs).
    pub fn ready(&self) -> impl Future<Output = ()> + Send + use<K> {
        self.sync.ready()
    }

    /// Whether the store has had its first list.
    pub fn synced(&self) -> bool {
        self.sync.synced()
    }

    /// Whether the store has its first list, and its watch's last error.
    pub fn sync_state(&self) -> &Arc<SyncState> {
        &self.sync
    }

    /// The changes from now on (a lagging subscriber gets [`Change::Relisted`] for what it missed). Ends
    /// when the store's [`Publisher`] is gone.
    pub fn changes(&self) -> impl Stream<Item = Change<K>> + Send + 'static {
        futures::stream::unfold(self.feed.subscribe(), |mut feed| async move {
            match feed.recv().await {
                Ok(change) => Some((change, feed)),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "a store subscriber fell behind: starting over");
                    Some((Change::Relisted, feed))
                }
                Err(broadcast::error::RecvError::Closed) => None,
            }
        })
    }
}

/// The writing side of a [`Shared`] store: applies watcher events, then publishes the change.
pub struct Publisher<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    writer: Writer<K>,
    reader: Store<K>,
    feed: broadcast::Sender<Change<K>>,
    indexes: Indexes<K>,
    sync: Arc<SyncState>,
    dyntype: K::DynamicType,
}

impl<K> Publisher<K>
where
    K: Lookup + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    /// An empty store (not ready until its first [`watcher::Event::InitDone`]) and its publisher.
    pub fn new(dyntype: K::DynamicType) -> (Self, Shared<K>) {
        let writer = Writer::new(dyntype.clone());
        let reader = writer.as_reader();
        let (feed, _) = broadcast::channel(FEED_CAPACITY);
        let indexes = Indexes::default();
        let sync = Arc::new(SyncState::new(resource_name::<K>(&dyntype)));
        let shared = Shared {
            store: reader.clone(),
            feed: feed.clone(),
            indexes: indexes.clone(),
            sync: sync.clone(),
            watching: Arc::default(),
        };
        let publisher = Self {
            writer,
            reader,
            feed,
            indexes,
            sync,
            dyntype,
        };
        (publisher, shared)
    }

    /// The store's sync state (its watch records errors in it).
    pub fn sync_state(&self) -> &Arc<SyncState> {
        &self.sync
    }

    /// A store holding `objects`, ready (a first list done), and its publisher.
    pub fn listed(
        dyntype: K::DynamicType,
        objects: impl IntoIterator<Item = K>,
    ) -> (Self, Shared<K>) {
        let (mut publisher, shared) = Self::new(dyntype);
        publisher.apply(watcher::Event::Init);
        for object in objects {
            publisher.apply(watcher::Event::InitApply(object));
        }
        publisher.apply(watcher::Event::InitDone);
        (publisher, shared)
    }

    /// Applies `event` to the store and its indexes; returns the change it made, which subscribers also
    /// get.
    pub fn apply(&mut self, event: watcher::Event<K>) -> Option<Change<K>> {
        let indexes = self.indexes.lock().unwrap_or_else(PoisonError::into_inner);
        // What the indexes filed the object under before: its state in the store.
        let old = match &event {
            watcher::Event::Apply(object) | watcher::Event::Delete(object)
                if !indexes.is_empty() =>
            {
                self.reader
                    .get(&ObjectRef::from_obj_with(object, self.dyntype.clone()))
            }
            _ => None,
        };
        self.writer.apply_watcher_event(&event);
        let change = match event {
            watcher::Event::Apply(object) => {
                let key = ObjectRef::from_obj_with(&object, self.dyntype.clone());
                Change::Applied(self.reader.get(&key).unwrap_or_else(|| Arc::new(object)))
            }
            watcher::Event::Delete(object) => Change::Deleted(Arc::new(object)),
            watcher::Event::InitDone => Change::Relisted,
            watcher::Event::Init | watcher::Event::InitApply(_) => return None,
        };
        for (_, index) in indexes.iter() {
            index.update(old.as_ref(), &change, &self.reader);
        }
        drop(indexes);
        // After the store and its indexes have the list: whoever waits reads a listed store.
        if matches!(change, Change::Relisted) {
            self.sync.mark_listed();
        }
        if self.feed.receiver_count() > 0 {
            // No receiver left in between is fine: the change is simply not needed.
            let _ = self.feed.send(change.clone());
        }
        Some(change)
    }
}

/// How a store lists: whole, at any resourceVersion, from the apiserver's watch cache (the cheapest list for
/// the apiserver). For kinds whose LIST is small.
pub fn whole_lists() -> watcher::Config {
    watcher::Config::default().any_semantic()
}

/// How a store of a kind with many objects lists: in pages of 500, a consistent read. The apiserver answers a
/// `resourceVersion=0` LIST whole whatever the limit, and a whole LIST of 10,000 pods is about 45 MB of text,
/// held two or three times over while it is received and decoded; pages keep that to a few MB.
pub fn paged_lists() -> watcher::Config {
    watcher::Config::default().page_size(500)
}

/// Watches every `K` that `api` reaches into a shared store, listing as `config` says: `strip` removes
/// what no webhook or controller reads before an object enters it, `on_change` runs after each change
/// reached the store (an index kept beside it). Watch errors are logged and retried with backoff, forever.
pub fn watch<K>(
    api: Api<K>,
    dyntype: K::DynamicType,
    config: watcher::Config,
    strip: fn(&mut K),
    on_change: impl FnMut(&Change<K>, &Store<K>) + Send + 'static,
) -> Shared<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let events = watcher(api, config).default_backoff().modify(strip);
    drive(events, dyntype, on_change)
}

/// [`watch`] for a Kruise kind `K` served at another version than `K`'s own (DECISIONS 25,
/// [`super::versions`]): the objects of the served `resource` are converted to `K` as they arrive. An object
/// that does not convert or decode is left out of the store with a WARN naming it (one bad object does not
/// keep the whole store from its list, as a typed watch would).
pub fn watch_served<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    resource: &ApiResource,
    config: watcher::Config,
    strip: fn(&mut K),
    on_change: impl FnMut(&Change<K>, &Store<K>) + Send + 'static,
) -> Shared<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let decoding = resource.clone();
    watch_decoded(
        client,
        namespace,
        resource,
        (),
        move |value| super::versions::decode::<K>(value, &decoding),
        config,
        strip,
        on_change,
    )
}

/// [`watch`] of the objects of `resource` (any group, version and kind), each made a `K` by `decode` (its
/// error names the object) before `strip`; an object `decode` refuses is left out with a WARN.
#[allow(clippy::too_many_arguments)]
pub fn watch_decoded<K>(
    client: &kube::Client,
    namespace: Option<&str>,
    resource: &ApiResource,
    dyntype: K::DynamicType,
    decode: impl Fn(serde_json::Value) -> Result<K, String> + Send + 'static,
    config: watcher::Config,
    strip: fn(&mut K),
    on_change: impl FnMut(&Change<K>, &Store<K>) + Send + 'static,
) -> Shared<K>
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let plural = resource.plural.clone();
    let decode = move |object: DynamicObject| -> Option<K> {
        let decoded = serde_json::to_value(object)
            .map_err(|e| e.to_string())
            .and_then(&decode);
        match decoded {
            Ok(mut object) => {
                strip(&mut object);
                Some(object)
            }
            Err(error) => {
                tracing::warn!(resource = %plural, %error, "object left out of the cache");
                None
            }
        }
    };
    let events = watcher(api, config)
        .default_backoff()
        .filter_map(move |event| {
            let event = match event {
                Ok(watcher::Event::Apply(o)) => decode(o).map(|o| Ok(watcher::Event::Apply(o))),
                Ok(watcher::Event::InitApply(o)) => {
                    decode(o).map(|o| Ok(watcher::Event::InitApply(o)))
                }
                Ok(watcher::Event::Delete(o)) => decode(o).map(|o| Ok(watcher::Event::Delete(o))),
                Ok(watcher::Event::Init) => Some(Ok(watcher::Event::Init)),
                Ok(watcher::Event::InitDone) => Some(Ok(watcher::Event::InitDone)),
                Err(e) => Some(Err(e)),
            };
            std::future::ready(event)
        });
    drive(events, dyntype, on_change)
}

/// Feeds `events` into a new shared store (the task ends when the last [`Shared`] is dropped).
fn drive<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    dyntype: K::DynamicType,
    mut on_change: impl FnMut(&Change<K>, &Store<K>) + Send + 'static,
) -> Shared<K>
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let (mut publisher, shared) = Publisher::new(dyntype);
    let task = tokio::spawn(async move {
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    if let Some(change) = publisher.apply(event) {
                        on_change(&change, &publisher.reader);
                    }
                }
                // A watch whose resourceVersion the API server no longer has (410 Expired: after a
                // compaction, or a CRD change that restarts its storage) is routine: the watcher lists
                // again. Not an error to warn of or to show.
                Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                    tracing::debug!(resource = %publisher.sync_state().resource(), message = %status.message,
                        "watch expired; listing again");
                }
                Err(e) => {
                    let sync = publisher.sync_state();
                    let message = watch_error_message(&e);
                    tracing::warn!(resource = %sync.resource(), error = %message, "watch failed; retrying");
                    sync.record_error(message);
                }
            }
        }
    });
    *shared
        .watching
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(task.abort_handle());
    shared
}

/// What a failed list or watch says: `list: <the API server's message> (<reason> <code>)` when it
/// answered, else the client's error with each cause not already in its text (a refused connection, a
/// timeout).
pub fn watch_error_message(e: &watcher::Error) -> String {
    let status = |what: &str, s: &kube::core::Status| {
        format!("{what}: {} ({} {})", s.message, s.reason, s.code)
    };
    let (what, client) = match e {
        watcher::Error::InitialListFailed(c) => ("list", c),
        watcher::Error::WatchStartFailed(c) | watcher::Error::WatchFailed(c) => ("watch", c),
        watcher::Error::WatchError(s) => return status("watch", s),
        other => return error_chain(other),
    };
    match client {
        kube::Error::Api(s) => status(what, s),
        other => format!("{what}: {}", error_chain(other)),
    }
}

/// An error and each cause not already in its text.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `plural` or `plural.group`, as kubectl names a resource.
pub fn resource_name<K: Lookup>(dyntype: &K::DynamicType) -> String {
    let plural = K::plural(dyntype);
    let group = K::group(dyntype);
    if group.is_empty() {
        plural.into_owned()
    } else {
        format!("{plural}.{group}")
    }
}

/// kubectl's copy of what it last applied: an annotation as large as the object's spec, never read.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `strip` for kinds whose every field may be read: only the metadata nothing reads, managedFields and
/// [`LAST_APPLIED_ANNOTATION`] (together often larger than the rest of the object).
pub fn strip_unread_metadata<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = &mut meta.annotations {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        // An emptied BTreeMap keeps its node (about half a KiB).
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Namespace;

    use super::*;

    #[test]
    fn unread_metadata_is_stripped_and_the_rest_kept() {
        let mut ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "shop", "labels": {"policy.kruise.io/delete-protection": "Always"},
                "annotations": {LAST_APPLIED_ANNOTATION: "{\"apiVersion\":\"v1\"}", "team": "web"},
                "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:metadata": {}}}]}
        }))
        .unwrap();
        strip_unread_metadata(&mut ns);
        assert_eq!(
            serde_json::to_value(&ns.metadata).unwrap(),
            serde_json::json!({"name": "shop", "labels": {"policy.kruise.io/delete-protection": "Always"},
                               "annotations": {"team": "web"}})
        );
        let mut ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "shop", "annotations": {LAST_APPLIED_ANNOTATION: "{}"}}
        }))
        .unwrap();
        strip_unread_metadata(&mut ns);
        assert_eq!(ns.metadata.annotations, None, "an emptied map is dropped");
    }

    #[test]
    fn an_api_server_answer_is_its_message_reason_and_code() {
        let status = kube::core::Status::failure(
            "pods is forbidden: User \"system:serviceaccount:kruise-system:kruise-webhook\" cannot list resource \"pods\"",
            "Forbidden",
        )
        .with_code(403);
        assert_eq!(
            watch_error_message(&watcher::Error::InitialListFailed(kube::Error::Api(
                Box::new(status.clone())
            ))),
            "list: pods is forbidden: User \"system:serviceaccount:kruise-system:kruise-webhook\" cannot list resource \"pods\" (Forbidden 403)"
        );
        assert_eq!(
            watch_error_message(&watcher::Error::WatchError(Box::new(
                kube::core::Status::failure("too old resource version: 1 (5)", "Expired")
                    .with_code(410)
            ))),
            "watch: too old resource version: 1 (5) (Expired 410)"
        );
        assert_eq!(
            watch_error_message(&watcher::Error::NoResourceVersion),
            "no metadata.resourceVersion in watch result (does resource support watch?)"
        );
    }
}
