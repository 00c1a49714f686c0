//! The workload stores (spec/podunavailablebudget.md §4.3): the kinds a PUB usually protects, Deployment,
//! ReplicaSet, StatefulSet and, when the cluster serves them, CloneSet and Advanced StatefulSet, watched into
//! stores ([`WorkloadStores`]) of [`SlimWorkload`]s, a projection decoded straight from the wire (name,
//! namespace, uid, resourceVersion, deletionTimestamp, ownerReferences, labels, `spec.replicas`,
//! `spec.selector`, the pod template's labels), never whole objects; a store keeps of those only what its
//! kind is read for ([`WorkloadKind`]'s strip: a ReplicaSet neither its selector nor its template labels),
//! and its key carries the kind as one byte. Over loaded objects (`review`, the standalone server) the same
//! stores are built from the files.
//!
//! [`Workloads`] is the stores and where to read what they do not hold (the API server, with the discovery
//! answers remembered per process, or the loaded objects): the controller finder ([`crate::workload`])
//! resolves references through it. Only the state lives here; the finding is a layer above.

use super::versions::{KruiseKind, Version};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::Api;
use kube::core::{ApiResource, DynamicResourceScope};
use kube::runtime::reflector::ObjectRef;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use kruise_webhooks::api::pod::StrMap;
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::podunavailablebudget::related::api_group;
use kruise_webhooks::podunavailablebudget::status::Workload;

use super::shared::{self, Publisher, Shared};

/// A workload as cached: what the finder and the PUB controller read of it (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "wire::Workload", into = "wire::Workload")]
pub struct SlimWorkload {
    /// `name`, `namespace`, `uid`, `resourceVersion`, `deletionTimestamp`, `ownerReferences`.
    pub metadata: ObjectMeta,
    /// `metadata.labels`.
    pub labels: StrMap,
    /// `spec.replicas`.
    pub replicas: Option<i32>,
    /// `spec.selector`.
    pub selector: Option<LabelSelector>,
    /// `spec.template.metadata.labels`.
    pub template_labels: StrMap,
}

impl SlimWorkload {
    /// Its controller owner reference.
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
    }
}

/// The kind is the dynamic type: one byte in each store key (an `ApiResource` would be five strings).
impl kube::Resource for SlimWorkload {
    type DynamicType = WorkloadKind;
    type Scope = DynamicResourceScope;

    fn kind(dt: &WorkloadKind) -> Cow<'_, str> {
        Cow::Borrowed(dt.kind())
    }
    fn group(dt: &WorkloadKind) -> Cow<'_, str> {
        Cow::Borrowed(dt.group())
    }
    fn version(dt: &WorkloadKind) -> Cow<'_, str> {
        Cow::Borrowed(dt.version())
    }
    fn api_version(dt: &WorkloadKind) -> Cow<'_, str> {
        Cow::Borrowed(dt.api_version())
    }
    fn plural(dt: &WorkloadKind) -> Cow<'_, str> {
        Cow::Borrowed(dt.plural())
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The shape of a workload on the wire, as far as [`SlimWorkload`] reads it.
mod wire {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[derive(Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uid: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deletion_timestamp: Option<Time>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner_references: Option<Vec<OwnerReference>>,
        #[serde(default, skip_serializing_if = "StrMap::is_empty")]
        labels: StrMap,
    }

    #[derive(Default, Serialize, Deserialize)]
    struct TemplateMeta {
        #[serde(default, skip_serializing_if = "StrMap::is_empty")]
        labels: StrMap,
    }

    #[derive(Default, Serialize, Deserialize)]
    struct Template {
        #[serde(default)]
        metadata: Option<TemplateMeta>,
    }

    #[derive(Default, Serialize, Deserialize)]
    struct Spec {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replicas: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<LabelSelector>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        template: Option<Template>,
    }

    #[derive(Default, Serialize, Deserialize)]
    pub(super) struct Workload {
        #[serde(default)]
        metadata: Option<Meta>,
        #[serde(default)]
        spec: Option<Spec>,
    }

    impl From<Workload> for SlimWorkload {
        fn from(w: Workload) -> Self {
            let meta = w.metadata.unwrap_or_default();
            let spec = w.spec.unwrap_or_default();
            SlimWorkload {
                metadata: ObjectMeta {
                    name: meta.name,
                    namespace: meta.namespace,
                    uid: meta.uid,
                    resource_version: meta.resource_version,
                    deletion_timestamp: meta.deletion_timestamp,
                    owner_references: meta.owner_references,
                    ..ObjectMeta::default()
                },
                labels: meta.labels,
                replicas: spec.replicas,
                selector: spec.selector,
                template_labels: spec
                    .template
                    .and_then(|t| t.metadata)
                    .map(|m| m.labels)
                    .unwrap_or_default(),
            }
        }
    }

    impl From<SlimWorkload> for Workload {
        fn from(w: SlimWorkload) -> Self {
            Workload {
                metadata: Some(Meta {
                    name: w.metadata.name,
                    namespace: w.metadata.namespace,
                    uid: w.metadata.uid,
                    resource_version: w.metadata.resource_version,
                    deletion_timestamp: w.metadata.deletion_timestamp,
                    owner_references: w.metadata.owner_references,
                    labels: w.labels,
                }),
                spec: Some(Spec {
                    replicas: w.replicas,
                    selector: w.selector,
                    template: Some(Template {
                        metadata: Some(TemplateMeta {
                            labels: w.template_labels,
                        }),
                    }),
                }),
            }
        }
    }
}

/// A workload kind read as a [`SlimWorkload`]: the five kept in stores ([`WorkloadKind::CACHED`]) and
/// ReplicationController, read one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// `apps` Deployment.
    Deployment,
    /// `apps` ReplicaSet.
    ReplicaSet,
    /// `apps` StatefulSet.
    StatefulSet,
    /// `apps.kruise.io` CloneSet.
    CloneSet,
    /// `apps.kruise.io` StatefulSet (Advanced StatefulSet).
    AdvancedStatefulSet,
    /// Core ReplicationController (not cached).
    ReplicationController,
}

impl WorkloadKind {
    /// The kinds kept in stores.
    pub const CACHED: [Self; 5] = [
        Self::Deployment,
        Self::ReplicaSet,
        Self::StatefulSet,
        Self::CloneSet,
        Self::AdvancedStatefulSet,
    ];

    /// The cached kind of an API group and kind (versions are not compared, §4.3).
    pub fn of(group: &str, kind: &str) -> Option<Self> {
        Self::CACHED
            .into_iter()
            .find(|k| k.group() == group && k.kind() == kind)
    }

    /// Its API group.
    pub fn group(self) -> &'static str {
        match self {
            Self::Deployment | Self::ReplicaSet | Self::StatefulSet => "apps",
            Self::CloneSet | Self::AdvancedStatefulSet => "apps.kruise.io",
            Self::ReplicationController => "",
        }
    }

    /// The version read: `apps/v1`, CloneSet `apps.kruise.io/v1alpha1`, Advanced StatefulSet
    /// `apps.kruise.io/v1beta1`, ReplicationController `v1`.
    pub fn version(self) -> &'static str {
        match self {
            Self::Deployment | Self::ReplicaSet | Self::StatefulSet => "v1",
            Self::CloneSet => "v1alpha1",
            Self::AdvancedStatefulSet => "v1beta1",
            Self::ReplicationController => "v1",
        }
    }

    /// Its apiVersion (group and version).
    pub fn api_version(self) -> &'static str {
        match self {
            Self::Deployment | Self::ReplicaSet | Self::StatefulSet => "apps/v1",
            Self::CloneSet => "apps.kruise.io/v1alpha1",
            Self::AdvancedStatefulSet => "apps.kruise.io/v1beta1",
            Self::ReplicationController => "v1",
        }
    }

    /// Its resource.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Deployment => "deployments",
            Self::ReplicaSet => "replicasets",
            Self::StatefulSet | Self::AdvancedStatefulSet => "statefulsets",
            Self::CloneSet => "clonesets",
            Self::ReplicationController => "replicationcontrollers",
        }
    }

    /// What a store of the kind drops from each object as it enters: owner references other than the
    /// controller; the selector but for Deployments (their ReplicaSets are matched with it); a
    /// ReplicaSet's template labels (it triggers nothing).
    fn strip(self) -> fn(&mut SlimWorkload) {
        fn controller_only(w: &mut SlimWorkload) {
            if let Some(refs) = &mut w.metadata.owner_references {
                refs.retain(|r| r.controller == Some(true));
                if refs.is_empty() {
                    w.metadata.owner_references = None;
                }
            }
        }
        fn deployment(w: &mut SlimWorkload) {
            controller_only(w);
        }
        fn replica_set(w: &mut SlimWorkload) {
            controller_only(w);
            w.selector = None;
            w.template_labels = StrMap::default();
        }
        fn other(w: &mut SlimWorkload) {
            controller_only(w);
            w.selector = None;
        }
        match self {
            Self::Deployment => deployment,
            Self::ReplicaSet => replica_set,
            _ => other,
        }
    }

    /// Its kind.
    pub fn kind(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::ReplicaSet => "ReplicaSet",
            Self::StatefulSet | Self::AdvancedStatefulSet => "StatefulSet",
            Self::CloneSet => "CloneSet",
            Self::ReplicationController => "ReplicationController",
        }
    }
}

/// Which optional workload kinds the cluster serves (from the CRDs, [`super::crds::Kinds`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServedKinds {
    /// `apps.kruise.io/v1alpha1` clonesets.
    pub clone_sets: bool,
    /// `apps.kruise.io/v1beta1` statefulsets.
    pub advanced_stateful_sets: bool,
}

/// The workload stores (module docs). Cheap to clone.
#[derive(Clone)]
pub struct WorkloadStores {
    /// Deployments.
    pub deployments: Shared<SlimWorkload>,
    /// ReplicaSets.
    pub replica_sets: Shared<SlimWorkload>,
    /// StatefulSets.
    pub stateful_sets: Shared<SlimWorkload>,
    /// CloneSets, when served.
    pub clone_sets: Option<Shared<SlimWorkload>>,
    /// Advanced StatefulSets, when served.
    pub advanced_stateful_sets: Option<Shared<SlimWorkload>>,
}

impl WorkloadStores {
    /// Watches the kinds (the optional ones as `served` says), listing in pages.
    pub fn start(client: &Client, served: ServedKinds) -> Self {
        Self::start_at(
            client,
            served,
            &KruiseKind::CloneSet.api_resource(Version::V1alpha1),
        )
    }

    /// [`WorkloadStores::start`] with CloneSets listed and watched at the served `clone_sets` resource (its
    /// objects read the same at every version: [`SlimWorkload`] reads metadata, replicas, selector and
    /// template labels only).
    pub fn start_at(client: &Client, served: ServedKinds, clone_sets: &ApiResource) -> Self {
        let watch = |kind: WorkloadKind| {
            shared::watch(
                Api::<SlimWorkload>::all_with(client.clone(), &kind),
                kind,
                shared::paged_lists(),
                kind.strip(),
                |_, _| {},
            )
        };
        Self {
            deployments: watch(WorkloadKind::Deployment),
            replica_sets: watch(WorkloadKind::ReplicaSet),
            stateful_sets: watch(WorkloadKind::StatefulSet),
            clone_sets: served.clone_sets.then(|| {
                let kind = WorkloadKind::CloneSet;
                shared::watch_decoded(
                    client,
                    None,
                    clone_sets,
                    kind,
                    |value| serde_json::from_value(value).map_err(|e| e.to_string()),
                    shared::paged_lists(),
                    kind.strip(),
                    |_, _| {},
                )
            }),
            advanced_stateful_sets: served
                .advanced_stateful_sets
                .then(|| watch(WorkloadKind::AdvancedStatefulSet)),
        }
    }

    /// Stores listing the workloads among `objects` (any version of a cached kind), ready; their
    /// publishers are dropped (nothing changes them).
    pub fn listed(objects: &[Arc<Value>]) -> Self {
        let of = |kind: WorkloadKind| {
            let items = objects.iter().filter(|o| {
                let api_version = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
                api_group(api_version) == Some(kind.group())
                    && o.get("kind").and_then(Value::as_str) == Some(kind.kind())
            });
            let slim = items.filter_map(|o| {
                let mut w: SlimWorkload = serde_json::from_value((**o).clone()).ok()?;
                // As the apiserver does for namespaced objects of a file without a namespace.
                w.metadata.namespace.get_or_insert_with(|| "default".into());
                kind.strip()(&mut w);
                Some(w)
            });
            Publisher::listed(kind, slim).1
        };
        Self {
            deployments: of(WorkloadKind::Deployment),
            replica_sets: of(WorkloadKind::ReplicaSet),
            stateful_sets: of(WorkloadKind::StatefulSet),
            clone_sets: Some(of(WorkloadKind::CloneSet)),
            advanced_stateful_sets: Some(of(WorkloadKind::AdvancedStatefulSet)),
        }
    }

    /// The store of `kind`, when watched.
    pub fn store(&self, kind: WorkloadKind) -> Option<&Shared<SlimWorkload>> {
        match kind {
            WorkloadKind::Deployment => Some(&self.deployments),
            WorkloadKind::ReplicaSet => Some(&self.replica_sets),
            WorkloadKind::StatefulSet => Some(&self.stateful_sets),
            WorkloadKind::CloneSet => self.clone_sets.as_ref(),
            WorkloadKind::AdvancedStatefulSet => self.advanced_stateful_sets.as_ref(),
            WorkloadKind::ReplicationController => None,
        }
    }

    /// Every store, with its kind.
    pub fn all(&self) -> impl Iterator<Item = (WorkloadKind, &Shared<SlimWorkload>)> {
        WorkloadKind::CACHED
            .into_iter()
            .filter_map(|k| self.store(k).map(|s| (k, s)))
    }

    /// Resolves once every store has its first list.
    pub fn ready(&self) -> impl Future<Output = ()> + Send + 'static {
        let waits: Vec<_> = self.all().map(|(_, s)| s.ready()).collect();
        async move {
            futures::future::join_all(waits).await;
        }
    }

    /// A cached workload by namespace and name.
    pub fn get(
        &self,
        kind: WorkloadKind,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<SlimWorkload>> {
        self.store(kind)?
            .store()
            .get(&ObjectRef::new_with(name, kind).within(namespace))
    }

    /// The ReplicaSets of a Deployment (§6.2): in its namespace, matching its selector, not being deleted,
    /// controlled by its uid. None when it has no valid selector.
    pub fn replica_sets_of(
        &self,
        namespace: &str,
        deployment: &Workload,
    ) -> Vec<Arc<SlimWorkload>> {
        let Some(selector) = deployment
            .selector
            .as_ref()
            .filter(|s| kruise_webhooks::validation::meta::selector_conversion_error(s).is_none())
        else {
            return Vec::new();
        };
        self.replica_sets.store().state_filter(|rs| {
            rs.metadata.namespace.as_deref() == Some(namespace)
                && rs.metadata.deletion_timestamp.is_none()
                && rs.controller().is_some_and(|c| c.uid == deployment.uid)
                && kruise_webhooks::selector::matches(selector, &rs.labels)
        })
    }
}

/// What discovery says of a kind: its resource, scope and whether it has a `scale` subresource.
#[derive(Debug, Clone)]
pub(crate) struct KindInfo {
    /// The kind's resource.
    pub(crate) resource: ApiResource,
    /// Whether it is namespaced.
    pub(crate) namespaced: bool,
    /// Whether it has a `scale` subresource.
    pub(crate) scale: bool,
}

/// Discovery answers, per group, version and kind.
pub(crate) type KindInfos = HashMap<(String, String, String), KindInfo>;

/// Where the finder reads what the stores do not hold.
#[derive(Clone)]
pub(crate) enum Lookup {
    /// The API server.
    Api {
        /// The client.
        client: Client,
        /// Where the whitelist ConfigMap lives.
        kruise_namespace: Arc<str>,
        /// Discovery answers, per group/version/kind.
        kinds: Arc<Mutex<KindInfos>>,
    },
    /// Loaded objects.
    Objects(Arc<FixtureCluster>),
}

/// The stores and where to read the rest: what the finder ([`crate::workload::Finder`]) reads through. Cheap
/// to clone.
#[derive(Clone)]
pub struct Workloads {
    /// The stores.
    pub(crate) stores: WorkloadStores,
    /// Where to read what they do not hold.
    pub(crate) lookup: Lookup,
}

impl Workloads {
    /// Over the stores, reading the rest from the API server; the whitelist ConfigMap lives in
    /// `kruise_namespace`.
    pub fn new(stores: WorkloadStores, client: Client, kruise_namespace: &str) -> Self {
        Self {
            stores,
            lookup: Lookup::Api {
                client,
                kruise_namespace: kruise_namespace.into(),
                kinds: Arc::default(),
            },
        }
    }

    /// Over loaded objects (module docs).
    pub fn from_objects(cluster: Arc<FixtureCluster>) -> Self {
        Self {
            stores: WorkloadStores::listed(cluster.objects()),
            lookup: Lookup::Objects(cluster),
        }
    }

    /// The stores.
    pub fn stores(&self) -> &WorkloadStores {
        &self.stores
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_workload_decodes_into_its_projection() {
        let w: SlimWorkload = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-7d9", "namespace": "default", "uid": "rs", "resourceVersion": "3",
                "generation": 4, "labels": {"app": "web"}, "annotations": {"big": "x"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d", "controller": true}],
                "managedFields": [{"manager": "kube"}]},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
            "status": {"replicas": 3}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&w).unwrap(),
            json!({
                "metadata": {"name": "web-7d9", "namespace": "default", "uid": "rs", "resourceVersion": "3",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d", "controller": true}],
                    "labels": {"app": "web"}},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}}}}
            })
        );
        assert_eq!(w.controller().map(|c| c.name.as_str()), Some("web"));
        let empty: SlimWorkload = serde_json::from_value(json!({"spec": null})).unwrap();
        assert_eq!(empty, SlimWorkload::default());
        assert!(
            serde_json::from_value::<SlimWorkload>(json!({"spec": {"replicas": "x"}})).is_err()
        );
    }

    #[test]
    fn stores_keep_only_what_their_kind_is_read_for() {
        let object = json!({"metadata": {"name": "x", "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "n"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d", "controller": true}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}}}});
        let stripped = |kind: WorkloadKind| {
            let mut w: SlimWorkload = serde_json::from_value(object.clone()).unwrap();
            kind.strip()(&mut w);
            w
        };
        let rs = stripped(WorkloadKind::ReplicaSet);
        assert_eq!(rs.metadata.owner_references.as_ref().map(Vec::len), Some(1));
        assert!(rs.selector.is_none() && rs.template_labels.is_empty());
        let deployment = stripped(WorkloadKind::Deployment);
        assert!(deployment.selector.is_some() && !deployment.template_labels.is_empty());
        let sts = stripped(WorkloadKind::StatefulSet);
        assert!(sts.selector.is_none() && !sts.template_labels.is_empty());
    }

    #[test]
    fn cached_kinds_are_matched_by_group_and_kind() {
        assert_eq!(
            WorkloadKind::of("apps", "StatefulSet"),
            Some(WorkloadKind::StatefulSet)
        );
        assert_eq!(
            WorkloadKind::of("apps.kruise.io", "StatefulSet"),
            Some(WorkloadKind::AdvancedStatefulSet)
        );
        assert_eq!(WorkloadKind::of("extensions", "Deployment"), None);
        assert_eq!(
            WorkloadKind::AdvancedStatefulSet.api_version(),
            "apps.kruise.io/v1beta1"
        );
        assert_eq!(WorkloadKind::CloneSet.plural(), "clonesets");
        assert_eq!(
            WorkloadKind::of("", "ReplicationController"),
            None,
            "not cached"
        );
    }
}
