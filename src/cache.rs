//! The cluster view the webhooks read: kube-runtime reflector stores in a cluster, or YAML files standalone.
//! Also the one question the caches cannot answer: how many custom resources of a CRD exist (a live LIST).
//!
//! The stores hold what is read, not whole objects: pods as [`SlimPod`] and ControllerRevisions as
//! [`SlimRevision`] (decoded straight into what webhooks and the controller read, so a LIST of 10,000 pods
//! never exists as full objects), every other kind without managedFields. The controllers are driven by the
//! same stores ([`shared`]): one watch per kind for everything this replica does.

pub mod budgets;
pub mod change;
pub mod crds;
pub mod discovery;
pub mod group;
pub mod index;
pub mod intern;
pub mod shared;
pub mod sync;
pub mod versions;
pub mod workloads;
pub mod workloadspreads;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::time::Duration;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector;
use kube::runtime::watcher;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use kruise_webhooks::ClusterView;
use kruise_webhooks::api::persistentpodstate::PersistentPodState;
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::podprobemarker::PodProbeMarker;
use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;
use kruise_webhooks::api::revision::SlimRevision;
use kruise_webhooks::api::sidecarset::SidecarSet;
use kruise_webhooks::api::workloadspread::WorkloadSpread;
use kruise_webhooks::deletion_protection::{CustomResourceCount, CustomResourceQuery};
use kruise_webhooks::fixture::{FixtureCluster, FixtureError};
use kruise_webhooks::pod::persistent_pod_state::whitelist as pps_whitelist;
use kruise_webhooks::sidecarset::prepared::PreparedSidecarSet;
use kruise_webhooks::sidecarset::select::SidecarSetIndex;
use kruise_webhooks::sidecarset::validate::{CONFIG_MAP_NAME, WHITELIST_KEY, WhitelistSource};
use kruise_webhooks::verdict::BudgetDenialRecord;
use kruise_webhooks::view::{
    PersistentPodStateView, PodProbeMarkerView, PodUnavailableBudgetView, SidecarSetView,
};
use kruise_webhooks::workloadspread::whitelist as ws_whitelist;

use budgets::{BudgetCopies, SpreadCopies};
use kruise_webhooks::view::WorkloadSpreadView;
use kruise_webhooks::workloadspread::whitelist::CustomWorkload;
use shared::{Change, Shared};
use sync::SyncState;
use versions::{KruiseKind, Versions};
use workloads::{ServedKinds, WorkloadStores, Workloads};

/// How long the live custom-resource count may take before it counts as a list error.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// Where cluster state comes from.
#[derive(Clone)]
pub enum Cluster {
    /// Loaded from files (`--objects`, `review`).
    Fixture(Arc<FixtureCluster>),
    /// Informer caches of a real cluster.
    Live(LiveCache),
}

/// Why cluster state files could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file or directory that cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A document that is not a usable object.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
}

/// Loads every `.yaml`, `.yml` and `.json` file of the given files and directories (directories sorted, not
/// recursive into hidden entries).
///
/// # Errors
/// [`LoadError`] naming the file.
pub fn load_objects(paths: &[PathBuf]) -> Result<FixtureCluster, LoadError> {
    let mut cluster = FixtureCluster::default();
    for path in paths {
        load_path(&mut cluster, path, true)?;
    }
    Ok(cluster)
}

fn load_path(cluster: &mut FixtureCluster, path: &Path, explicit: bool) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                !p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
            })
            .collect();
        entries.sort();
        for entry in entries {
            load_path(cluster, &entry, false)?;
        }
        return Ok(());
    }
    let wanted = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    );
    if !explicit && !wanted {
        return Ok(());
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    cluster.load_str(&text, &path.display().to_string())?;
    Ok(())
}

/// Reflector stores of the kinds the webhooks read, shared with the controllers ([`shared`]). Cheap to
/// clone.
#[derive(Clone)]
pub struct LiveCache(Arc<LiveStores>);

/// The stores of a [`LiveCache`].
pub struct LiveStores {
    client: Client,
    namespaces: Shared<Namespace>,
    pods: Shared<SlimPod>,
    claims: Shared<PersistentVolumeClaim>,
    sidecars: Option<SidecarSetCache>,
    budgets: Option<Shared<PodUnavailableBudget>>,
    workloads: Option<Workloads>,
    /// The PUBs this replica wrote or read fresh, and a lock per PUB: shared by the gate's spends and the
    /// PUB status controller ([`budgets`]).
    budget_copies: BudgetCopies,
    /// The WorkloadSpreads (v1beta1), when watched (gate WorkloadSpread on and the CRD served).
    spreads: Option<Shared<WorkloadSpread>>,
    /// The WorkloadSpreads this replica wrote or read fresh, and a lock per WorkloadSpread: shared by the
    /// pod webhooks' status records and the WorkloadSpread status controller (spec/workloadspread.md §5.7).
    spread_copies: SpreadCopies,
    /// The custom workload whitelist, read once per process on the first pod create that needs it
    /// (spec/workloadspread.md §4.2 [quirk]); a read error is not kept.
    spread_whitelist: tokio::sync::OnceCell<Vec<CustomWorkload>>,
    /// The PersistentPodStates the pod chain's node-affinity step reads (spec/pod-mutating-misc.md §7), as
    /// v1beta1: a store of the version the cluster serves, v1alpha1 objects converted with
    /// `kruise_webhooks::conversion::convert_object`. `None` while not watched: the step then finds none
    /// and skips (the PersistentPodState controller then watches them itself).
    persistent_pod_states: Option<Shared<PersistentPodState>>,
    /// The PodProbeMarkers (v1alpha1, their only version) the pod chain's serverless step reads
    /// (spec/pod-mutating-misc.md §9, gate EnablePodProbeMarkerOnServerless). `None` while not watched: the
    /// step then finds none. No constructor starts this watch yet (see `persistent_pod_states`).
    probe_markers: Option<Shared<PodProbeMarker>>,
    /// Events of the PUB gate (`pub-controller`, as OpenKruise's webhook records them).
    budget_events: crate::events::Recorder,
    /// The version each Kruise kind is read and written at.
    versions: Versions,
}

impl std::ops::Deref for LiveCache {
    type Target = LiveStores;
    fn deref(&self) -> &LiveStores {
        &self.0
    }
}

/// A shared store of every `K` in the cluster, without managedFields, listing as `config` says.
fn watch_all<K>(client: &Client, config: watcher::Config) -> Shared<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    shared::watch(
        Api::all(client.clone()),
        (),
        config,
        shared::strip_unread_metadata,
        |_, _| {},
    )
}

/// A shared store of every object of a Kruise kind `K` at the served `resource`, converted to `K`, without
/// managedFields.
pub fn watch_kruise<K>(client: &Client, resource: &ApiResource) -> Shared<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    shared::watch_served(
        client,
        None,
        resource,
        shared::whole_lists(),
        shared::strip_unread_metadata,
        |_, _| {},
    )
}

impl LiveCache {
    /// Starts the reflectors (SidecarSets and their ControllerRevisions in `sidecar_sets_in` when the pod
    /// webhook is served, PodUnavailableBudgets with `budgets`); [`Cluster::synced`] turns true once every
    /// store has its first list.
    pub fn start(client: Client, sidecar_sets_in: Option<&str>, budgets: bool) -> Self {
        Self::start_with(client, sidecar_sets_in, budgets, None)
    }

    /// [`LiveCache::start`], and with `workloads` the workloads PUBs protect (spec/podunavailablebudget.md
    /// §4.3: which optional kinds are served, and the namespace of the Kruise configuration).
    pub fn start_with(
        client: Client,
        sidecar_sets_in: Option<&str>,
        budgets: bool,
        workloads: Option<(ServedKinds, &str)>,
    ) -> Self {
        Self::start_all(client, sidecar_sets_in, budgets, false, workloads)
    }

    /// [`LiveCache::start_with`], and with `spreads` the WorkloadSpreads the pod webhooks read
    /// (spec/workloadspread.md §5); their owner chains are walked through the `workloads` stores. The Kruise
    /// kinds are read at `v1beta1`, CloneSets at `v1alpha1` (the stand-in API server's collections); a
    /// cluster's versions: [`LiveCache::start_at`].
    pub fn start_all(
        client: Client,
        sidecar_sets_in: Option<&str>,
        budgets: bool,
        spreads: bool,
        workloads: Option<(ServedKinds, &str)>,
    ) -> Self {
        Self::start_at(
            client,
            Versions::newest().with(KruiseKind::CloneSet, Some(versions::Version::V1alpha1)),
            sidecar_sets_in,
            budgets,
            spreads,
            workloads,
            false,
        )
    }

    /// [`LiveCache::start_all`] with the Kruise kinds read at `versions` (DECISIONS 25): every store of a
    /// Kruise kind watches its served version and holds the objects converted to the webhooks' types.
    ///
    /// With the pod webhook (`sidecar_sets_in`), PersistentPodStates are watched when served, PodProbeMarkers
    /// when served and `probe_markers` (the gate `EnablePodProbeMarkerOnServerless`).
    pub fn start_at(
        client: Client,
        versions: Versions,
        sidecar_sets_in: Option<&str>,
        budgets: bool,
        spreads: bool,
        workloads: Option<(ServedKinds, &str)>,
        probe_markers: bool,
    ) -> Self {
        let served_at = |kind: KruiseKind| versions.resource_or_newest(kind);
        let cache = Self(Arc::new(LiveStores {
            namespaces: watch_all(&client, shared::whole_lists()),
            pods: shared::watch(
                Api::all(client.clone()),
                (),
                shared::paged_lists(),
                intern::strip_and_share,
                |_, _| {},
            ),
            claims: watch_all(&client, shared::paged_lists()),
            sidecars: sidecar_sets_in
                .map(|ns| SidecarSetCache::start(&client, &served_at(KruiseKind::SidecarSet), ns)),
            budgets: budgets
                .then(|| watch_kruise(&client, &served_at(KruiseKind::PodUnavailableBudget))),
            workloads: workloads.map(|(served, kruise_namespace)| {
                Workloads::new(
                    WorkloadStores::start_at(&client, served, &served_at(KruiseKind::CloneSet)),
                    client.clone(),
                    kruise_namespace,
                )
            }),
            budget_copies: BudgetCopies::default(),
            spreads: spreads.then(|| watch_kruise(&client, &served_at(KruiseKind::WorkloadSpread))),
            spread_copies: SpreadCopies::default(),
            spread_whitelist: tokio::sync::OnceCell::new(),
            // The pod webhook's steps 6 and 8, with the pod webhook.
            persistent_pod_states: (sidecar_sets_in.is_some()
                && versions.serves(KruiseKind::PersistentPodState))
            .then(|| watch_kruise(&client, &served_at(KruiseKind::PersistentPodState))),
            probe_markers: (sidecar_sets_in.is_some()
                && probe_markers
                && versions.serves(KruiseKind::PodProbeMarker))
            .then(|| watch_kruise(&client, &served_at(KruiseKind::PodProbeMarker))),
            budget_events: crate::events::Recorder::new(client.clone(), "pub-controller"),
            client,
            versions,
        }));
        sync::report(&cache.sync_states());
        cache
    }

    /// Resolves once every cache readiness waits for is synced ([`Cluster::synced`]), without polling.
    pub fn ready(&self) -> impl Future<Output = ()> + Send + use<> {
        let stores: Vec<_> = self.sync_states().iter().map(|s| s.ready()).collect();
        let stores = futures::future::join_all(stores);
        let sidecars = self.sidecars.as_ref().map(SidecarSetCache::ready);
        async move {
            stores.await;
            if let Some(sidecars) = sidecars {
                sidecars.await;
            }
        }
    }

    /// The sync state of every store readiness waits for: namespaces, pods, claims, and the SidecarSets,
    /// their ControllerRevisions, PUBs, WorkloadSpreads, PersistentPodStates, PodProbeMarkers and workloads
    /// where watched.
    pub fn sync_states(&self) -> Vec<Arc<SyncState>> {
        let mut states = vec![
            self.namespaces.sync_state().clone(),
            self.pods.sync_state().clone(),
            self.claims.sync_state().clone(),
        ];
        if let Some(sidecars) = &self.sidecars {
            states.push(sidecars.sets.sync_state().clone());
            states.push(sidecars.revisions.sync_state().clone());
        }
        states.extend(self.budgets.iter().map(|b| b.sync_state().clone()));
        states.extend(self.spreads.iter().map(|s| s.sync_state().clone()));
        states.extend(
            self.persistent_pod_states
                .iter()
                .map(|s| s.sync_state().clone()),
        );
        states.extend(self.probe_markers.iter().map(|s| s.sync_state().clone()));
        if let Some(workloads) = &self.workloads {
            states.extend(
                workloads
                    .stores()
                    .all()
                    .map(|(_, s)| s.sync_state().clone()),
            );
        }
        states
    }

    /// The Pods (the SidecarSet controller matches pods in all namespaces).
    pub fn pod_store(&self) -> &Shared<SlimPod> {
        &self.pods
    }

    /// The Namespaces.
    pub fn namespace_store(&self) -> &Shared<Namespace> {
        &self.namespaces
    }

    /// The PodUnavailableBudgets, when watched (a PUB gate is on and the CRD is served).
    pub fn budget_store(&self) -> Option<&Shared<PodUnavailableBudget>> {
        self.budgets.as_ref()
    }

    /// The PersistentPodStates (v1beta1), when watched (the pod webhook runs and the CRD is served): the
    /// PersistentPodState controller reads the same store.
    pub fn persistent_pod_state_store(&self) -> Option<&Shared<PersistentPodState>> {
        self.persistent_pod_states.as_ref()
    }

    /// The workloads PUBs protect (their stores, and the API for other kinds), when PUBs are watched.
    pub fn workloads(&self) -> Option<&Workloads> {
        self.workloads.as_ref()
    }

    /// The version each Kruise kind is read and written at.
    pub fn versions(&self) -> Versions {
        self.versions
    }

    /// The requests of a Kruise kind `K` in `namespace` (cluster-scoped: `None`), at its served version.
    pub fn served_api<K>(&self, kind: KruiseKind, namespace: Option<&str>) -> versions::ServedApi<K>
    where
        K: Resource<DynamicType = ()> + serde::Serialize + DeserializeOwned + std::fmt::Debug,
    {
        let resource = self.versions.resource_or_newest(kind);
        match namespace {
            Some(ns) => versions::ServedApi::namespaced(self.client.clone(), ns, &resource),
            None => versions::ServedApi::all(self.client.clone(), &resource),
        }
    }

    /// The client the caches watch with (status commits, events).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Records the Warning event of a disruption refused by a PUB on the pod, in the background: the
    /// answer does not wait for it, and a failure is logged.
    pub fn record_budget_denial_event(&self, record: &BudgetDenialRecord) {
        let recorder = self.budget_events.clone();
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(record.pod.clone()),
            namespace: Some(record.namespace.clone()),
            uid: record.pod_uid.clone(),
            ..ObjectReference::default()
        };
        tokio::spawn(async move {
            recorder
                .record(
                    reference,
                    crate::events::EventType::Warning,
                    BudgetDenialRecord::EVENT_REASON,
                    BudgetDenialRecord::EVENT_MESSAGE,
                )
                .await;
        });
    }

    /// The PUB copies and locks the gate and the PUB status controller share.
    pub fn budget_copies(&self) -> &BudgetCopies {
        &self.budget_copies
    }

    /// The newest PUB this replica knows: the informer's, or the copy kept, whichever is newer.
    fn newest_budget(&self, namespace: &str, name: &str) -> Option<Arc<PodUnavailableBudget>> {
        let cached = self
            .budgets
            .as_ref()?
            .store()
            .get(&reflector::ObjectRef::new(name).within(namespace));
        self.budget_copies
            .newest(&(namespace.to_owned(), name.to_owned()), cached)
    }

    /// The WorkloadSpreads, when watched.
    pub fn spread_store(&self) -> Option<&Shared<WorkloadSpread>> {
        self.spreads.as_ref()
    }

    /// The WorkloadSpread copies and locks the pod webhooks and the WorkloadSpread status controller share.
    pub fn spread_copies(&self) -> &SpreadCopies {
        &self.spread_copies
    }

    /// The custom workload whitelist of the WorkloadSpread pod steps, read once per process.
    ///
    /// # Errors
    /// Why the ConfigMap could not be read or its value parsed (tried again next time).
    pub async fn spread_whitelist(
        &self,
        kruise_namespace: &str,
    ) -> Result<Vec<CustomWorkload>, String> {
        self.spread_whitelist
            .get_or_try_init(|| async {
                let source = Cluster::Live(self.clone())
                    .workload_spread_whitelist(kruise_namespace)
                    .await;
                ws_whitelist::parse(&source)
            })
            .await
            .cloned()
    }

    /// The WorkloadSpreads of a namespace that `keep` keeps, each the newest this replica knows, in name
    /// order (DECISIONS 12). Only those are cloned out of the store.
    fn newest_spreads(
        &self,
        namespace: &str,
        keep: impl Fn(&WorkloadSpread) -> bool,
    ) -> Vec<Arc<WorkloadSpread>> {
        let Some(store) = self.spreads.as_ref() else {
            return Vec::new();
        };
        // By name: the namespace index's order.
        store
            .in_namespace(namespace)
            .into_iter()
            .filter(|w| keep(w))
            .filter_map(|w| {
                let name = w.metadata.name.clone().unwrap_or_default();
                self.spread_copies
                    .newest(&(namespace.to_owned(), name), Some(w))
            })
            .collect()
    }

    /// The newest WorkloadSpread this replica knows: the informer's, or the copy kept, whichever is newer.
    fn newest_spread(&self, namespace: &str, name: &str) -> Option<Arc<WorkloadSpread>> {
        let cached = self
            .spreads
            .as_ref()?
            .store()
            .get(&reflector::ObjectRef::new(name).within(namespace));
        self.spread_copies
            .newest(&(namespace.to_owned(), name.to_owned()), cached)
    }

    /// The SidecarSet and ControllerRevision caches, when started (the pod webhook is served).
    pub fn sidecar_set_cache(&self) -> Option<&SidecarSetCache> {
        self.sidecars.as_ref()
    }

    async fn count_custom_resources(
        &self,
        q: &CustomResourceQuery,
    ) -> Result<CustomResourceCount, String> {
        let gvk = GroupVersionKind::gvk(&q.group, &q.version, &q.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, &q.plural);
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let mut count = CustomResourceCount::default();
        let mut params = ListParams::default().limit(500);
        loop {
            let page = tokio::time::timeout(LIST_TIMEOUT, api.list_metadata(&params))
                .await
                .map_err(|_| format!("timed out after {}s", LIST_TIMEOUT.as_secs()))?
                .map_err(|e| e.to_string())?;
            count.total += page.items.len();
            count.terminating += page
                .items
                .iter()
                .filter(|o| o.metadata.deletion_timestamp.is_some())
                .count();
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(count),
            }
        }
    }
}

impl Cluster {
    /// True when every cache has synced (always for files).
    pub fn synced(&self) -> bool {
        match self {
            Self::Fixture(_) => true,
            Self::Live(c) => {
                c.sync_states().iter().all(|s| s.synced())
                    && c.sidecars.as_ref().is_none_or(SidecarSetCache::synced)
            }
        }
    }

    /// The sync state of every informer store readiness waits for (none standalone).
    pub fn sync_states(&self) -> Vec<Arc<SyncState>> {
        match self {
            Self::Fixture(_) => Vec::new(),
            Self::Live(c) => c.sync_states(),
        }
    }

    /// The SidecarSet patchPodMetadata whitelist from ConfigMap `kruise-configuration` in our namespace
    /// (spec/sidecarset.md §8.1): a live GET in a cluster (SidecarSet writes are rare), the loaded objects
    /// standalone.
    pub async fn patch_metadata_whitelist(&self, namespace: &str) -> WhitelistSource {
        self.kruise_configuration(namespace, WHITELIST_KEY).await
    }

    /// The WorkloadSpread custom workload whitelist from ConfigMap `kruise-configuration` in our namespace
    /// (spec/workloadspread.md §4.2), read as [`Cluster::patch_metadata_whitelist`] reads its key.
    pub async fn workload_spread_whitelist(&self, namespace: &str) -> WhitelistSource {
        self.kruise_configuration(namespace, ws_whitelist::WHITELIST_KEY)
            .await
    }

    /// The PersistentPodState custom workload whitelist from ConfigMap `kruise-configuration` in our
    /// namespace (spec/pod-mutating-misc.md §7.1), read as [`Cluster::patch_metadata_whitelist`] reads its
    /// key: on each pod create that needs it
    /// ([`kruise_webhooks::pod::persistent_pod_state::needs_whitelist`]), as OpenKruise reads it on each.
    pub async fn persistent_pod_state_whitelist(&self, namespace: &str) -> WhitelistSource {
        self.kruise_configuration(namespace, pps_whitelist::WHITELIST_KEY)
            .await
    }

    /// One key of ConfigMap `kruise-configuration` in `namespace`: a live GET in a cluster, the loaded
    /// objects standalone.
    async fn kruise_configuration(&self, namespace: &str, key: &str) -> WhitelistSource {
        let from_data =
            |data: Option<&BTreeMap<String, String>>| match data.and_then(|d| d.get(key)) {
                Some(v) => WhitelistSource::Present(v.clone()),
                None => WhitelistSource::Missing,
            };
        match self {
            Self::Fixture(f) => {
                let config_map = f.objects().iter().find(|o| {
                    o.get("kind").and_then(serde_json::Value::as_str) == Some("ConfigMap")
                        && o.pointer("/metadata/name")
                            .and_then(serde_json::Value::as_str)
                            == Some(CONFIG_MAP_NAME)
                        && o.pointer("/metadata/namespace")
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or("default")
                            == namespace
                });
                let data = config_map.and_then(|c| {
                    serde_json::from_value::<BTreeMap<String, String>>(c.get("data")?.clone()).ok()
                });
                from_data(data.as_ref())
            }
            Self::Live(c) => {
                let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
                    Api::namespaced(c.client.clone(), namespace);
                match tokio::time::timeout(LIST_TIMEOUT, api.get_opt(CONFIG_MAP_NAME)).await {
                    Err(_) => WhitelistSource::ReadError(format!(
                        "timed out after {}s",
                        LIST_TIMEOUT.as_secs()
                    )),
                    Ok(Err(e)) => WhitelistSource::ReadError(e.to_string()),
                    Ok(Ok(None)) => WhitelistSource::Missing,
                    Ok(Ok(Some(cm))) => from_data(cm.data.as_ref()),
                }
            }
        }
    }

    /// The WorkloadSpreads of `namespace` as v1beta1 (the WorkloadSpread validator's conflict check,
    /// spec/workloadspread.md §7.1): a live LIST in a cluster (WorkloadSpread writes are rare, and no cache
    /// of them is kept: [`workloadspreads::list`]), the loaded objects standalone (v1alpha1 ones converted).
    /// A list error is returned as text for the validator's message.
    pub async fn workload_spreads_in(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<WorkloadSpread>>, String> {
        match self {
            Self::Fixture(f) => f
                .objects()
                .iter()
                .filter(|o| {
                    o.get("kind").and_then(serde_json::Value::as_str) == Some("WorkloadSpread")
                        && o.get("apiVersion")
                            .and_then(serde_json::Value::as_str)
                            .is_some_and(|v| v.starts_with("apps.kruise.io/"))
                        && o.pointer("/metadata/namespace")
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or("default")
                            == namespace
                })
                .map(|o| workloadspreads::decode(o))
                .collect(),
            Self::Live(c) => {
                let resource = c.versions.resource_or_newest(KruiseKind::WorkloadSpread);
                workloadspreads::list(&c.client, &resource, namespace, LIST_TIMEOUT).await
            }
        }
    }

    /// The PersistentPodStates of `namespace` as v1beta1 (the PersistentPodState validator's conflict check,
    /// docs/persistentpodstate.md §2.3): a live LIST at the served version in a cluster (fresher than the
    /// cache, and the validator runs whether the cache is kept or not), the loaded objects standalone. A list
    /// error is returned as text for the validator's message.
    pub async fn persistent_pod_states_listed(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<PersistentPodState>>, String> {
        match self {
            Self::Fixture(f) => f.persistent_pod_states_in(namespace),
            Self::Live(c) => {
                let resource = c
                    .versions
                    .resource_or_newest(KruiseKind::PersistentPodState);
                workloadspreads::list(&c.client, &resource, namespace, LIST_TIMEOUT).await
            }
        }
    }

    /// Counts the custom resources of a CRD: a live LIST in a cluster, the loaded objects standalone.
    /// A list error is returned as text for the deny message.
    pub async fn count_custom_resources(
        &self,
        q: &CustomResourceQuery,
    ) -> Result<CustomResourceCount, String> {
        match self {
            Self::Fixture(f) => Ok(f.count_custom_resources(q)),
            Self::Live(c) => c.count_custom_resources(q).await,
        }
    }
}

impl SidecarSetView for Cluster {
    fn sidecar_set_candidates(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<PreparedSidecarSet>> {
        match self {
            Self::Fixture(f) => f.sidecar_set_candidates(namespace, labels),
            Self::Live(c) => c
                .sidecars
                .as_ref()
                .map(|s| s.sidecar_set_candidates(namespace, labels))
                .unwrap_or_default(),
        }
    }
    fn sidecar_set(&self, name: &str) -> Option<Arc<SidecarSet>> {
        match self {
            Self::Fixture(f) => f.sidecar_set(name),
            Self::Live(c) => c.sidecars.as_ref().and_then(|s| s.sidecar_set(name)),
        }
    }
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>> {
        match self {
            Self::Fixture(f) => f.sidecar_sets(),
            Self::Live(c) => c
                .sidecars
                .as_ref()
                .map(|s| s.sidecar_sets())
                .unwrap_or_default(),
        }
    }
    fn controller_revision(&self, namespace: &str, name: &str) -> Option<Arc<SlimRevision>> {
        match self {
            Self::Fixture(f) => f.controller_revision(namespace, name),
            Self::Live(c) => c
                .sidecars
                .as_ref()
                .and_then(|s| s.controller_revision(namespace, name)),
        }
    }
    fn controller_revisions(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<SlimRevision>> {
        match self {
            Self::Fixture(f) => f.controller_revisions(namespace, labels),
            Self::Live(c) => c
                .sidecars
                .as_ref()
                .map(|s| s.controller_revisions(namespace, labels))
                .unwrap_or_default(),
        }
    }
}

impl ClusterView for Cluster {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        match self {
            Self::Fixture(f) => f.namespace(name),
            Self::Live(c) => c.namespaces.store().get(&reflector::ObjectRef::new(name)),
        }
    }
    fn pods_in(&self, namespace: &str) -> Vec<Arc<SlimPod>> {
        match self {
            Self::Fixture(f) => f.pods_in(namespace),
            Self::Live(c) => c.pods.in_namespace(namespace),
        }
    }
    fn persistent_volume_claims_in(&self, namespace: &str) -> Vec<Arc<PersistentVolumeClaim>> {
        match self {
            Self::Fixture(f) => f.persistent_volume_claims_in(namespace),
            Self::Live(c) => c.claims.in_namespace(namespace),
        }
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<SlimPod>> {
        match self {
            Self::Fixture(f) => f.pod(namespace, name),
            Self::Live(c) => c
                .pods
                .store()
                .get(&reflector::ObjectRef::new(name).within(namespace)),
        }
    }
}

impl WorkloadSpreadView for Cluster {
    fn workload_spreads(&self, namespace: &str) -> Vec<Arc<WorkloadSpread>> {
        match self {
            Self::Fixture(f) => f.workload_spreads(namespace),
            Self::Live(c) => c.newest_spreads(namespace, |_| true),
        }
    }
    fn has_workload_spreads(&self, namespace: &str) -> bool {
        match self {
            Self::Fixture(f) => f.has_workload_spreads(namespace),
            Self::Live(c) => c
                .spreads
                .as_ref()
                .is_some_and(|s| s.has_in_namespace(namespace)),
        }
    }
    fn workload_spreads_targeting(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
    ) -> Vec<Arc<WorkloadSpread>> {
        match self {
            Self::Fixture(f) => f.workload_spreads_targeting(namespace, kind, name),
            Self::Live(c) => {
                c.newest_spreads(namespace, |w| kruise_webhooks::view::targets(w, kind, name))
            }
        }
    }
    fn workload_spread(&self, namespace: &str, name: &str) -> Option<Arc<WorkloadSpread>> {
        match self {
            Self::Fixture(f) => f.workload_spread(namespace, name),
            Self::Live(c) => c.newest_spread(namespace, name),
        }
    }
}

impl PodUnavailableBudgetView for Cluster {
    fn pod_unavailable_budget(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<PodUnavailableBudget>> {
        match self {
            Self::Fixture(f) => f.pod_unavailable_budget(namespace, name),
            Self::Live(c) => c.newest_budget(namespace, name),
        }
    }
    fn pod_unavailable_budgets_in(&self, namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
        match self {
            Self::Fixture(f) => f.pod_unavailable_budgets_in(namespace),
            // By name: the namespace index's order.
            Self::Live(c) => c
                .budgets
                .as_ref()
                .map(|b| b.in_namespace(namespace))
                .unwrap_or_default(),
        }
    }
}

impl PersistentPodStateView for Cluster {
    fn persistent_pod_states_in(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<PersistentPodState>>, String> {
        match self {
            Self::Fixture(f) => f.persistent_pod_states_in(namespace),
            // By name: the namespace index's order. Not watched: none.
            Self::Live(c) => Ok(c
                .persistent_pod_states
                .as_ref()
                .map(|s| s.in_namespace(namespace))
                .unwrap_or_default()),
        }
    }
}

impl PodProbeMarkerView for Cluster {
    fn pod_probe_markers_in(&self, namespace: &str) -> Result<Vec<Arc<PodProbeMarker>>, String> {
        match self {
            Self::Fixture(f) => f.pod_probe_markers_in(namespace),
            // By name: the namespace index's order. Not watched: none.
            Self::Live(c) => Ok(c
                .probe_markers
                .as_ref()
                .map(|s| s.in_namespace(namespace))
                .unwrap_or_default()),
        }
    }
    fn pod_probe_marker(&self, namespace: &str, name: &str) -> Option<Arc<PodProbeMarker>> {
        match self {
            Self::Fixture(f) => f.pod_probe_marker(namespace, name),
            Self::Live(c) => c
                .probe_markers
                .as_ref()?
                .store()
                .get(&reflector::ObjectRef::new(name).within(namespace)),
        }
    }
}

/// SidecarSets (in the candidate index the pod webhook reads, beside the store the controller reads; both
/// hold the same `Arc`s) and the ControllerRevisions of the Kruise namespace that historical-revision
/// injection restores from.
#[derive(Clone)]
pub struct SidecarSetCache {
    index: Arc<std::sync::RwLock<SidecarSetIndex>>,
    sets: Shared<SidecarSet>,
    revisions: Shared<SlimRevision>,
    /// True once the candidate index is built from the first list of SidecarSets (after the store has it).
    index_listed: tokio::sync::watch::Receiver<bool>,
}

impl SidecarSetCache {
    /// Watches every SidecarSet (at the `served` version) and the ControllerRevisions of `kruise_namespace`.
    pub fn start(client: &Client, served: &ApiResource, kruise_namespace: &str) -> Self {
        let index = Arc::new(std::sync::RwLock::new(SidecarSetIndex::default()));
        let (index_synced, index_listed) = tokio::sync::watch::channel(false);
        let writer_index = index.clone();
        let sets = shared::watch_served(
            client,
            None,
            served,
            shared::whole_lists(),
            shared::strip_unread_metadata,
            move |change: &Change<SidecarSet>, store: &reflector::Store<SidecarSet>| {
                let mut index = writer_index.write().unwrap_or_else(|p| p.into_inner());
                match change {
                    Change::Applied(set) => index.upsert(set.clone()),
                    Change::Deleted(set) => index.remove(set.name()),
                    // A relist: a fresh index from the new list, swapped in whole, so readers never see
                    // half a list.
                    Change::Relisted => {
                        let mut fresh = SidecarSetIndex::default();
                        for set in store.state() {
                            fresh.upsert(set);
                        }
                        *index = fresh;
                        index_synced.send_replace(true);
                    }
                }
            },
        );
        // Every revision of the namespace, not only those labelled kruise.io/sidecarset-name: `revisionName`
        // injection reads any revision there by name, as OpenKruise's GET does (§4.4).
        let revisions = shared::watch(
            Api::<SlimRevision>::namespaced(client.clone(), kruise_namespace),
            (),
            shared::whole_lists(),
            shared::strip_unread_metadata,
            |_, _| {},
        );
        Self {
            index,
            sets,
            revisions,
            index_listed,
        }
    }

    /// The SidecarSets, as the controller reads them.
    pub fn set_store(&self) -> &Shared<SidecarSet> {
        &self.sets
    }

    /// The ControllerRevisions of the Kruise namespace.
    pub fn revision_store(&self) -> &Shared<SlimRevision> {
        &self.revisions
    }

    /// The index, read-locked (a writer that panicked leaves a usable index: every update is one upsert).
    fn read_index(&self) -> std::sync::RwLockReadGuard<'_, SidecarSetIndex> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    /// True once SidecarSets (their candidate index built) and ControllerRevisions are listed.
    pub fn synced(&self) -> bool {
        self.revisions.synced() && *self.index_listed.borrow()
    }

    /// Resolves once [`SidecarSetCache::synced`] is true (pending for good if the watch is gone).
    pub fn ready(&self) -> impl Future<Output = ()> + Send + use<> {
        let (revisions, mut index_listed) = (self.revisions.ready(), self.index_listed.clone());
        async move {
            let index = async move {
                if index_listed.wait_for(|listed| *listed).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            futures::join!(revisions, index);
        }
    }
}

impl SidecarSetView for SidecarSetCache {
    fn sidecar_set_candidates(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<PreparedSidecarSet>> {
        self.read_index().candidates_for(namespace, labels)
    }
    fn sidecar_set(&self, name: &str) -> Option<Arc<SidecarSet>> {
        self.read_index().get(name).cloned()
    }
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>> {
        self.read_index().all()
    }
    fn controller_revision(&self, namespace: &str, name: &str) -> Option<Arc<SlimRevision>> {
        self.revisions
            .store()
            .get(&reflector::ObjectRef::new(name).within(namespace))
    }
    fn controller_revisions(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<SlimRevision>> {
        self.revisions
            .store()
            .state()
            .into_iter()
            .filter(|r| r.metadata.namespace.as_deref() == Some(namespace))
            .filter(|r| kruise_webhooks::selector::has_labels(r.metadata.labels.as_ref(), labels))
            .collect()
    }
}
