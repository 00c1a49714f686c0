//! The controller finder (spec/podunavailablebudget.md §4.3): a workload reference (apiVersion, kind, name,
//! optional uid) resolved to its uid, replicas, selector and whether it is being deleted, for the PUB status
//! controller and the related-pub step of `/mutate-pod`.
//!
//! **Caches and GETs.** The kinds a PUB usually protects, Deployment, ReplicaSet, StatefulSet and, when the
//! cluster serves them, CloneSet and Advanced StatefulSet, are watched into stores ([`WorkloadStores`], in
//! the store layer: [`crate::cache::workloads`]): the status controller must be triggered by their replica
//! changes anyway (§6.1), and a selector-mode PUB resolves one workload per distinct pod owner on every
//! reconcile. The stores hold [`SlimWorkload`]s, a
//! projection decoded straight from the wire (name, namespace, uid, resourceVersion, deletionTimestamp,
//! ownerReferences, labels, `spec.replicas`, `spec.selector`, the pod template's labels), never whole
//! objects; a store keeps of those only what its kind is read for ([`WorkloadKind`]'s strip: a ReplicaSet
//! neither its selector nor its template labels), and its key carries the kind as one byte. Measured with
//! dhat over 10,000 objects: about 1.1 KB of live heap per ReplicaSet, 1.7 KB per Deployment. Everything else is a live GET, bounded by the
//! caller's timeout: ReplicationControllers, the whitelisted custom kinds (§4.3 step 7, with the whitelist
//! read once per [`Finder`]), the `scale` subresource of any other kind (§4.3 step 8, the kind mapped to its
//! resource through discovery, remembered per process) and the existence GET of step 9 (metadata only).
//!
//! **Admission.** [`top_workload`] resolves the top workload of a new pod for the related-pub step only when
//! a PUB of its namespace has a `targetRef`, within [`RESOLVE_TIMEOUT`]; any error or timeout is an unknown
//! workload (§5 step 1), never a failed pod create. A cached kind missing from its cache is confirmed with a
//! GET there (a pod is often created a moment after its ReplicaSet, before the watch brings it).
//!
//! **Files.** Over loaded objects (`review`, the standalone server) the same stores are built from the
//! files, and another kind is found among them: with `spec.replicas` it reads as scalable (its
//! `status.selector` as the scale's), without as existing with unknown replicas.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use serde_json::Value;

use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::{AdmissionRequest, Operation};
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::pod::persistent_pod_state::whitelist::{
    self as pps_whitelist, GroupKind, WHITELIST_KEY, WhitelistSource,
};
use kruise_webhooks::podunavailablebudget::related::{self, WorkloadKey, api_group};
use kruise_webhooks::podunavailablebudget::status::{UNKNOWN_REPLICAS, Workload};
use kruise_webhooks::view::PodUnavailableBudgetView;

use crate::cache::Cluster;
use crate::cache::shared::Change;
use crate::cache::workloads::{KindInfo, KindInfos, Lookup};

/// The stores this finder reads, kept in the store layer ([`crate::cache::workloads`]); named here too, where
/// the controllers and tests have always found them.
pub use crate::cache::workloads::{
    ServedKinds, SlimWorkload, WorkloadKind, WorkloadStores, Workloads,
};

/// How long the related-pub step may spend resolving a pod's workload before it counts as unknown.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);
/// The ConfigMap (in the Kruise namespace) holding the custom workload whitelist.
pub const CONFIGURATION: &str = "kruise-configuration";

impl SlimWorkload {
    /// What the finder reports, for an object of `kind`; replicas default to 1 as the apiserver defaults
    /// them for the built-in and Kruise workloads.
    fn resolved(&self, kind: WorkloadKind) -> Workload {
        Workload {
            api_version: kind.api_version().to_owned(),
            kind: kind.kind().to_owned(),
            name: self.metadata.name.clone().unwrap_or_default(),
            uid: self.metadata.uid.clone().unwrap_or_default(),
            replicas: self.replicas.unwrap_or(1),
            selector: self.selector.clone(),
            deleting: self.metadata.deletion_timestamp.is_some(),
        }
    }
}

/// Why a workload could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// An API call failed (other than NotFound).
    #[error("{action}: {source}")]
    Api {
        /// What was being read.
        action: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The custom workload whitelist does not parse.
    #[error("invalid {WHITELIST_KEY} in ConfigMap {CONFIGURATION}: {0}")]
    Whitelist(String),
}

/// How far a resolution goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Run §4.3 step 9 (an existing object of unknown replicas). Selector-mode counting skips it: such a
    /// workload contributes nothing to the expected count anyway (status.rs, §10.4).
    pub existence: bool,
    /// GET a cached kind that its store does not hold (admission: the watch may not have brought a new
    /// ReplicaSet yet).
    pub confirm_misses: bool,
}

impl Workloads {
    /// A finder for one reconcile or one admission (the whitelist is read at most once by it).
    pub fn finder(&self, options: Options) -> Finder<'_> {
        Finder {
            workloads: self,
            options,
            whitelist: tokio::sync::OnceCell::new(),
        }
    }
}

/// A workload reference to resolve.
#[derive(Debug, Clone, Copy)]
pub struct Reference<'a> {
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `kind`.
    pub kind: &'a str,
    /// `name`.
    pub name: &'a str,
}

impl<'a> From<&'a OwnerReference> for Reference<'a> {
    fn from(r: &'a OwnerReference) -> Self {
        Self {
            api_version: &r.api_version,
            kind: &r.kind,
            name: &r.name,
        }
    }
}

fn api_error(action: String) -> impl FnOnce(kube::Error) -> FindError {
    move |source| FindError::Api { action, source }
}

/// Whether a client error is a 404.
fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// Resolves workload references (§4.3) for one reconcile or admission.
pub struct Finder<'w> {
    workloads: &'w Workloads,
    options: Options,
    whitelist: tokio::sync::OnceCell<Vec<GroupKind>>,
}

impl Finder<'_> {
    /// The stores.
    pub fn stores(&self) -> &WorkloadStores {
        &self.workloads.stores
    }

    /// Resolves `reference` in `namespace` (§4.3): the cached kinds from their stores (a ReplicaSet
    /// controlled by a Deployment resolves to that Deployment), a ReplicationController, a whitelisted kind,
    /// another kind's scale subresource, then (with [`Options::existence`]) any object that exists, with
    /// unknown replicas. With `uid`, an object of another uid is not it. `None`: nothing found.
    ///
    /// # Errors
    /// A failed API call other than NotFound, or an unreadable whitelist.
    pub async fn find(
        &self,
        namespace: &str,
        reference: Reference<'_>,
        uid: Option<&str>,
    ) -> Result<Option<Workload>, FindError> {
        let Some(group) = api_group(reference.api_version) else {
            return Ok(None);
        };
        let same_uid = |w: &Workload| uid.is_none_or(|u| u == w.uid);
        if let Some(kind) = WorkloadKind::of(group, reference.kind) {
            let Some(found) = self.cached(kind, namespace, reference.name).await? else {
                return Ok(None);
            };
            // The uid names the object referenced (a ReplicaSet, not the Deployment it resolves to).
            if uid.is_some_and(|u| found.metadata.uid.as_deref() != Some(u)) {
                return Ok(None);
            }
            if kind == WorkloadKind::ReplicaSet
                && let Some(owner) = found.controller().filter(|c| c.kind == "Deployment")
            {
                let deployment = WorkloadKind::Deployment;
                // A ReplicaSet's Deployment is resolved by name and uid (OpenKruise's getPodReplicaSet).
                return Ok(self
                    .cached(deployment, namespace, &owner.name)
                    .await?
                    .map(|d| d.resolved(deployment))
                    .filter(|d| d.uid == owner.uid));
            }
            return Ok(Some(found.resolved(kind)));
        }
        let found = if group.is_empty() && reference.kind == "ReplicationController" {
            self.replication_controller(namespace, reference.name)
                .await?
        } else {
            self.other(namespace, group, reference).await?
        };
        Ok(found.filter(same_uid))
    }

    /// A cached kind from its store, confirmed with a GET when missing and [`Options::confirm_misses`].
    async fn cached(
        &self,
        kind: WorkloadKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<SlimWorkload>>, FindError> {
        if let Some(found) = self.stores().get(kind, namespace, name) {
            return Ok(Some(found));
        }
        match &self.workloads.lookup {
            Lookup::Api { client, .. }
                if self.options.confirm_misses && self.stores().store(kind).is_some() =>
            {
                let api = Api::<SlimWorkload>::namespaced_with(client.clone(), namespace, &kind);
                api.get_opt(name)
                    .await
                    .map(|o| o.map(Arc::new))
                    .map_err(api_error(format!(
                        "reading {} {namespace}/{name}",
                        kind.kind()
                    )))
            }
            _ => Ok(None),
        }
    }

    /// The whole object `reference` names in `namespace`, as JSON (the WorkloadSpread controller reads
    /// `targetFilter.replicasPathList` on it, spec/workloadspread.md §2.4): a GET of the kind's resource
    /// found through discovery. `None`: no such kind or object.
    ///
    /// # Errors
    /// A failed API call other than NotFound.
    pub async fn object(
        &self,
        namespace: &str,
        reference: Reference<'_>,
    ) -> Result<Option<Value>, FindError> {
        self.workloads
            .object(
                namespace,
                reference.api_version,
                reference.kind,
                reference.name,
            )
            .await
    }

    /// §4.3 step 1.
    async fn replication_controller(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Workload>, FindError> {
        let kind = WorkloadKind::ReplicationController;
        match &self.workloads.lookup {
            Lookup::Api { client, .. } => {
                let api = Api::<SlimWorkload>::namespaced_with(client.clone(), namespace, &kind);
                let found = api.get_opt(name).await.map_err(api_error(format!(
                    "reading ReplicationController {namespace}/{name}"
                )))?;
                Ok(found.map(|rc| rc.resolved(kind)))
            }
            Lookup::Objects(cluster) => Ok(cluster
                .object("", "ReplicationController", namespace, name)
                .and_then(|o| serde_json::from_value::<SlimWorkload>(o.clone()).ok())
                .map(|rc| rc.resolved(kind))),
        }
    }

    /// §4.3 steps 7-9 for a kind that is not built in.
    async fn other(
        &self,
        namespace: &str,
        group: &str,
        reference: Reference<'_>,
    ) -> Result<Option<Workload>, FindError> {
        let (client, kruise_namespace, kinds) = match &self.workloads.lookup {
            Lookup::Objects(cluster) => {
                return Ok(other_in_objects(
                    cluster,
                    namespace,
                    group,
                    reference,
                    self.options,
                ));
            }
            Lookup::Api {
                client,
                kruise_namespace,
                kinds,
            } => (client, kruise_namespace, kinds),
        };
        let version = reference
            .api_version
            .split_once('/')
            .map_or(reference.api_version, |(_, v)| v);
        let Some(info) = kind_info(client, kinds, group, version, reference.kind).await? else {
            return Ok(None);
        };
        let name = reference.name;
        let dynamic = if info.namespaced {
            Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &info.resource)
        } else {
            Api::<DynamicObject>::all_with(client.clone(), &info.resource)
        };
        let what = format!("{} {namespace}/{name}", reference.kind);
        // 7. A whitelisted StatefulSet-like kind: spec.replicas, else 0.
        if self
            .whitelisted(client, kruise_namespace, group, reference.kind)
            .await?
        {
            let found = dynamic
                .get_opt(name)
                .await
                .map_err(api_error(format!("reading {what}")))?;
            if let Some(object) = found {
                let replicas = object
                    .data
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .map_or(0, |r| r as i32);
                return Ok(Some(Workload {
                    api_version: info.resource.api_version.clone(),
                    kind: reference.kind.to_owned(),
                    name: name.to_owned(),
                    uid: object.metadata.uid.unwrap_or_default(),
                    replicas,
                    selector: None,
                    deleting: object.metadata.deletion_timestamp.is_some(),
                }));
            }
        }
        // 8. The scale subresource.
        if info.scale {
            match dynamic.get_scale(name).await {
                Ok(scale) => {
                    return Ok(Some(Workload {
                        api_version: info.resource.api_version.clone(),
                        kind: reference.kind.to_owned(),
                        name: name.to_owned(),
                        uid: scale.metadata.uid.unwrap_or_default(),
                        replicas: scale.spec.and_then(|s| s.replicas).unwrap_or(0),
                        selector: scale_selector(
                            scale.status.and_then(|s| s.selector).as_deref(),
                            &what,
                        ),
                        deleting: scale.metadata.deletion_timestamp.is_some(),
                    }));
                }
                Err(e) if not_found(&e) => {}
                Err(e) => return Err(api_error(format!("reading the scale of {what}"))(e)),
            }
        }
        // 9. Any object that exists, of unknown replicas.
        if self.options.existence {
            let found = dynamic
                .get_metadata_opt(name)
                .await
                .map_err(api_error(format!("reading {what}")))?;
            if let Some(object) = found {
                return Ok(Some(Workload {
                    api_version: info.resource.api_version.clone(),
                    kind: reference.kind.to_owned(),
                    name: name.to_owned(),
                    uid: object.metadata.uid.unwrap_or_default(),
                    replicas: UNKNOWN_REPLICAS,
                    selector: None,
                    deleting: object.metadata.deletion_timestamp.is_some(),
                }));
            }
        }
        Ok(None)
    }

    /// Whether the custom workload whitelist lists the group and kind (the ConfigMap read once per finder;
    /// missing ConfigMap or key: empty).
    async fn whitelisted(
        &self,
        client: &Client,
        kruise_namespace: &str,
        group: &str,
        kind: &str,
    ) -> Result<bool, FindError> {
        let list = self
            .whitelist
            .get_or_try_init(|| async {
                let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
                    Api::namespaced(client.clone(), kruise_namespace);
                let config = api.get_opt(CONFIGURATION).await.map_err(api_error(format!(
                    "reading ConfigMap {kruise_namespace}/{CONFIGURATION}"
                )))?;
                let source = match config.and_then(|c| c.data?.remove(WHITELIST_KEY)) {
                    None => WhitelistSource::Missing,
                    Some(text) => WhitelistSource::Present(text),
                };
                pps_whitelist::parse(&source).map_err(FindError::Whitelist)
            })
            .await?;
        Ok(list.iter().any(|w| w.group == group && w.kind == kind))
    }
}

/// A scale's `status.selector`; an empty or unreadable one is no selector (an empty text would select every
/// pod of the namespace).
fn scale_selector(text: Option<&str>, what: &str) -> Option<LabelSelector> {
    let text = text.filter(|t| !t.trim().is_empty())?;
    match kruise_webhooks::selector::parse(text) {
        Ok(selector) => Some(selector),
        Err(error) => {
            tracing::warn!(workload = what, %error, "scale status.selector does not parse; ignored");
            None
        }
    }
}

/// The resource, scope and scale subresource of a kind, from discovery (remembered); `None` when the
/// group/version is not served or does not have the kind.
async fn kind_info(
    client: &Client,
    kinds: &Mutex<KindInfos>,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Option<KindInfo>, FindError> {
    let key = (group.to_owned(), version.to_owned(), kind.to_owned());
    if let Some(info) = kinds.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(Some(info.clone()));
    }
    let gvk = GroupVersionKind::gvk(group, version, kind);
    match kube::discovery::pinned_kind(client, &gvk).await {
        Ok((resource, capabilities)) => {
            let info = KindInfo {
                resource,
                namespaced: capabilities.scope == Scope::Namespaced,
                scale: capabilities
                    .subresources
                    .iter()
                    .any(|(sub, _)| sub.plural == "scale"),
            };
            kinds
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key, info.clone());
            Ok(Some(info))
        }
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) if not_found(&e) => Ok(None),
        Err(e) => Err(api_error(format!(
            "discovering {}",
            gvk.api_version() + " " + kind
        ))(e)),
    }
}

/// Steps 7-9 over loaded objects (module docs).
fn other_in_objects(
    cluster: &FixtureCluster,
    namespace: &str,
    group: &str,
    reference: Reference<'_>,
    options: Options,
) -> Option<Workload> {
    let found = cluster.object(group, reference.kind, namespace, reference.name)?;
    let replicas = found.pointer("/spec/replicas").and_then(Value::as_i64);
    if replicas.is_none() && !options.existence {
        return None;
    }
    let text = |pointer: &str| found.pointer(pointer).and_then(Value::as_str);
    Some(Workload {
        api_version: text("/apiVersion").unwrap_or_default().to_owned(),
        kind: reference.kind.to_owned(),
        name: reference.name.to_owned(),
        uid: text("/metadata/uid").unwrap_or_default().to_owned(),
        replicas: replicas.map_or(UNKNOWN_REPLICAS, |r| r as i32),
        selector: replicas.and(scale_selector(text("/status/selector"), reference.name)),
        deleting: found
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null()),
    })
}

/// Reads for the WorkloadSpread pod steps (spec/workloadspread.md §4.3, §5.4 (c) 3): an owner of a pod or
/// the target of a WorkloadSpread, by reference.
impl Workloads {
    /// A cached kind from its store, GET when the store misses it (a pod is often created a moment after
    /// its ReplicaSet, before the watch brings it).
    ///
    /// # Errors
    /// A failed API call other than NotFound.
    pub async fn cached_object(
        &self,
        kind: WorkloadKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<SlimWorkload>>, FindError> {
        self.finder(Options {
            existence: false,
            confirm_misses: true,
        })
        .cached(kind, namespace, name)
        .await
    }

    /// Any namespaced object by group, version, kind and name, whole: a GET (the kind's resource from
    /// discovery) in a cluster, the loaded objects standalone. `None`: not found, or the kind is not served.
    ///
    /// # Errors
    /// A failed API call other than NotFound.
    pub async fn object(
        &self,
        namespace: &str,
        api_version: &str,
        kind: &str,
        name: &str,
    ) -> Result<Option<Value>, FindError> {
        let Some(group) = api_group(api_version) else {
            return Ok(None);
        };
        match &self.lookup {
            Lookup::Objects(cluster) => Ok(cluster.object(group, kind, namespace, name).cloned()),
            Lookup::Api { client, kinds, .. } => {
                let version = api_version.split_once('/').map_or(api_version, |(_, v)| v);
                let Some(info) = kind_info(client, kinds, group, version, kind).await? else {
                    return Ok(None);
                };
                let api = if info.namespaced {
                    Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &info.resource)
                } else {
                    Api::<DynamicObject>::all_with(client.clone(), &info.resource)
                };
                let found = api
                    .get_opt(name)
                    .await
                    .map_err(api_error(format!("reading {kind} {namespace}/{name}")))?;
                Ok(found.and_then(|o| serde_json::to_value(o).ok()))
            }
        }
    }
}

/// The workloads of the cluster: the live stores and API, or the loaded objects.
pub fn workloads_of(cluster: &Cluster) -> Option<Workloads> {
    match cluster {
        Cluster::Fixture(f) => Some(listed_once(f)),
        Cluster::Live(c) => c.workloads().cloned(),
    }
}

/// The workloads of loaded objects, built once per set of objects (the standalone server asks for them on
/// every pod create a PUB or WorkloadSpread may concern; building them decodes every workload loaded).
fn listed_once(cluster: &Arc<FixtureCluster>) -> Workloads {
    type Listed = Option<(std::sync::Weak<FixtureCluster>, Workloads)>;
    static LISTED: std::sync::Mutex<Listed> = std::sync::Mutex::new(None);
    let mut listed = LISTED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((of, workloads)) = &*listed
        && of.upgrade().is_some_and(|c| Arc::ptr_eq(&c, cluster))
    {
        return workloads.clone();
    }
    let workloads = Workloads::from_objects(cluster.clone());
    *listed = Some((Arc::downgrade(cluster), workloads.clone()));
    workloads
}

/// The top workload of a pod being created, for the related-pub step (§5 step 1): asked only when either
/// PUB gate is on and a PUB of the pod's namespace has a `targetRef`, and the pod has a controller; `None`
/// also when it is not found, or cannot be resolved within [`RESOLVE_TIMEOUT`] (logged).
pub async fn top_workload(
    cluster: &Cluster,
    gates: &FeatureGates,
    req: &AdmissionRequest,
) -> Option<WorkloadKey> {
    if req.operation != Operation::Create
        || !req.sub_resource.is_empty()
        || req.resource.resource != "pods"
        || !kruise_webhooks::podunavailablebudget::enabled(gates)
    {
        return None;
    }
    let namespace = Some(req.namespace())
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    if !related::wants_workload(&cluster.pod_unavailable_budgets_in(namespace)) {
        return None;
    }
    let owner = related::controller_ref(req.object()?)?;
    let workloads = workloads_of(cluster)?;
    let finder = workloads.finder(Options {
        existence: true,
        confirm_misses: true,
    });
    let resolve = finder.find(namespace, Reference::from(&owner), None);
    match tokio::time::timeout(RESOLVE_TIMEOUT, resolve).await {
        Ok(Ok(found)) => found.map(|w| WorkloadKey {
            api_version: w.api_version,
            kind: w.kind,
            name: w.name,
        }),
        Ok(Err(error)) => {
            tracing::warn!(namespace, owner = %owner.name, kind = %owner.kind, %error,
                "resolving the pod's workload failed: matching PUBs by selector only");
            None
        }
        Err(_) => {
            tracing::warn!(namespace, owner = %owner.name, kind = %owner.kind,
                timeout_s = RESOLVE_TIMEOUT.as_secs(), "resolving the pod's workload timed out: matching PUBs by selector only");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(yaml: &str) -> Arc<FixtureCluster> {
        let mut c = FixtureCluster::default();
        c.load_str(yaml, "test").unwrap();
        Arc::new(c)
    }

    const OBJECTS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, uid: dep}
spec: {replicas: 5, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-7d9
  namespace: default
  uid: rs
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: dep, controller: true}]
spec: {replicas: 5, selector: {matchLabels: {app: web}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: orphan
  namespace: default
  uid: orphan
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: other, controller: true}]
spec: {replicas: 2}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default, uid: job}
---
apiVersion: game.io/v1
kind: GameServerSet
metadata: {name: gs, namespace: default, uid: gs}
spec: {replicas: 4}
status: {selector: "game=gs"}
"#;

    fn reference<'a>(api_version: &'a str, kind: &'a str, name: &'a str) -> Reference<'a> {
        Reference {
            api_version,
            kind,
            name,
        }
    }

    async fn find(f: &Finder<'_>, r: Reference<'_>, uid: Option<&str>) -> Option<Workload> {
        f.find("default", r, uid).await.unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn objects_resolve_through_the_finder_steps() {
        let workloads = Workloads::from_objects(cluster(OBJECTS));
        let full = workloads.finder(Options {
            existence: true,
            confirm_misses: true,
        });
        // A ReplicaSet of a Deployment is the Deployment.
        let web = find(&full, reference("apps/v1", "ReplicaSet", "web-7d9"), None)
            .await
            .unwrap();
        assert_eq!(
            (
                web.kind.as_str(),
                web.name.as_str(),
                web.uid.as_str(),
                web.replicas
            ),
            ("Deployment", "web", "dep", 5)
        );
        // ... with the uid its reference names, or nothing.
        assert_eq!(
            find(&full, reference("apps/v1", "ReplicaSet", "orphan"), None).await,
            None
        );
        assert_eq!(
            find(
                &full,
                reference("apps/v1", "ReplicaSet", "web-7d9"),
                Some("rs")
            )
            .await
            .map(|w| w.uid),
            Some("dep".into()),
            "the uid names the ReplicaSet"
        );
        assert_eq!(
            find(
                &full,
                reference("apps/v1", "ReplicaSet", "web-7d9"),
                Some("dep")
            )
            .await,
            None
        );
        assert_eq!(
            find(
                &full,
                reference("apps/v1beta1", "Deployment", "web"),
                Some("dep")
            )
            .await
            .map(|w| w.uid),
            Some("dep".into()),
            "versions are not compared"
        );
        assert_eq!(
            find(&full, reference("apps/v1", "Deployment", "web"), Some("x")).await,
            None
        );
        assert_eq!(
            find(&full, reference("apps/v1", "Deployment", "gone"), None).await,
            None
        );
        // Another kind: scalable with spec.replicas, else existing with unknown replicas.
        let gs = find(&full, reference("game.io/v1", "GameServerSet", "gs"), None)
            .await
            .unwrap();
        assert_eq!(gs.replicas, 4);
        assert!(gs.selector.is_some());
        let job = find(&full, reference("batch/v1", "Job", "migrate"), None)
            .await
            .unwrap();
        assert_eq!((job.replicas, job.uid.as_str()), (UNKNOWN_REPLICAS, "job"));
        let counting = workloads.finder(Options {
            existence: false,
            confirm_misses: false,
        });
        assert_eq!(
            find(&counting, reference("batch/v1", "Job", "migrate"), None).await,
            None
        );
        assert_eq!(
            find(&full, reference("a/b/c", "Job", "migrate"), None).await,
            None
        );
    }

    #[test]
    fn a_deployment_has_the_replica_sets_it_controls_and_selects() {
        let workloads = Workloads::from_objects(cluster(OBJECTS));
        let deployment = Workload {
            uid: "dep".into(),
            selector: serde_json::from_value(json!({"matchLabels": {"app": "web"}})).unwrap(),
            ..Workload::default()
        };
        let names: Vec<String> = workloads
            .stores()
            .replica_sets_of("default", &deployment)
            .iter()
            .map(|r| r.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["web-7d9"]);
        let unselected = Workload {
            selector: None,
            ..deployment
        };
        assert!(
            workloads
                .stores()
                .replica_sets_of("default", &unselected)
                .is_empty()
        );
    }
}

/// What the controllers' workload triggers remember (PUB and WorkloadSpread status, §6.1 of each): the last
/// `spec.replicas` seen per workload uid, so that only a creation, a deletion or a replicas change
/// triggers; a relist forgets them.
#[derive(Debug, Default)]
pub struct ReplicasSeen(Mutex<std::collections::HashMap<String, Option<i32>>>);

impl ReplicasSeen {
    /// The workload of `change` when it is created, deleted or its replicas changed; `None` otherwise (an
    /// update that left the replicas alone, a relist).
    pub fn changed<'c>(&self, change: &'c Change<SlimWorkload>) -> Option<&'c Arc<SlimWorkload>> {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match change {
            Change::Relisted => {
                seen.clear();
                None
            }
            Change::Applied(w) => {
                let uid = w.metadata.uid.clone().unwrap_or_default();
                (seen.insert(uid, w.replicas) != Some(w.replicas)).then_some(w)
            }
            Change::Deleted(w) => {
                seen.remove(w.metadata.uid.as_deref().unwrap_or_default());
                Some(w)
            }
        }
    }
}
