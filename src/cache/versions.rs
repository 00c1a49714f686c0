//! Which version of each Kruise kind this server reads, watches and writes (DECISIONS 25): the newest version
//! the cluster serves that it knows, `v1beta1` else `v1alpha1`. OpenKruise's releases up to 1.8 serve only
//! `v1alpha1` for SidecarSet, PodUnavailableBudget, WorkloadSpread, ContainerRecreateRequest and
//! PersistentPodState; its master serves both, `v1beta1` the storage version.
//!
//! The Rust types of the webhooks crate are each one version (`v1beta1`, PodProbeMarker `v1alpha1`): objects
//! of another version are converted in memory with the `/convert` rules ([`kruise_webhooks::conversion`]) as
//! they are read, and converted back before they are written ([`ServedApi`]).
//!
//! The version of each kind is decided from the CRDs ([`super::crds`]): the first version of
//! [`KruiseKind::known`] that the CRD serves, established and not being deleted.

use std::fmt::Debug;
use std::marker::PhantomData;

use kube::Client;
use kube::Resource;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A version of a Kruise kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// `v1alpha1`.
    V1alpha1,
    /// `v1beta1`.
    V1beta1,
}

impl Version {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1alpha1 => "v1alpha1",
            Self::V1beta1 => "v1beta1",
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Kruise kind this server reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KruiseKind {
    /// `apps.kruise.io` SidecarSet (cluster-scoped).
    SidecarSet,
    /// `policy.kruise.io` PodUnavailableBudget.
    PodUnavailableBudget,
    /// `apps.kruise.io` WorkloadSpread.
    WorkloadSpread,
    /// `apps.kruise.io` ContainerRecreateRequest.
    ContainerRecreateRequest,
    /// `apps.kruise.io` PersistentPodState.
    PersistentPodState,
    /// `apps.kruise.io` PodProbeMarker (`v1alpha1` only, in every release and on master).
    PodProbeMarker,
    /// `apps.kruise.io` CloneSet.
    CloneSet,
    /// `apps.kruise.io` StatefulSet (Advanced StatefulSet).
    AdvancedStatefulSet,
}

impl KruiseKind {
    /// Every kind, in the order of [`Versions`].
    pub const ALL: [Self; 8] = [
        Self::SidecarSet,
        Self::PodUnavailableBudget,
        Self::WorkloadSpread,
        Self::ContainerRecreateRequest,
        Self::PersistentPodState,
        Self::PodProbeMarker,
        Self::CloneSet,
        Self::AdvancedStatefulSet,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// Its API group.
    pub fn group(self) -> &'static str {
        match self {
            Self::PodUnavailableBudget => "policy.kruise.io",
            _ => "apps.kruise.io",
        }
    }

    /// Its kind.
    pub fn kind(self) -> &'static str {
        match self {
            Self::SidecarSet => "SidecarSet",
            Self::PodUnavailableBudget => "PodUnavailableBudget",
            Self::WorkloadSpread => "WorkloadSpread",
            Self::ContainerRecreateRequest => "ContainerRecreateRequest",
            Self::PersistentPodState => "PersistentPodState",
            Self::PodProbeMarker => "PodProbeMarker",
            Self::CloneSet => "CloneSet",
            Self::AdvancedStatefulSet => "StatefulSet",
        }
    }

    /// Its resource (plural).
    pub fn plural(self) -> &'static str {
        match self {
            Self::SidecarSet => "sidecarsets",
            Self::PodUnavailableBudget => "podunavailablebudgets",
            Self::WorkloadSpread => "workloadspreads",
            Self::ContainerRecreateRequest => "containerrecreaterequests",
            Self::PersistentPodState => "persistentpodstates",
            Self::PodProbeMarker => "podprobemarkers",
            Self::CloneSet => "clonesets",
            Self::AdvancedStatefulSet => "statefulsets",
        }
    }

    /// The name of its CRD (`<plural>.<group>`).
    pub fn crd_name(self) -> String {
        format!("{}.{}", self.plural(), self.group())
    }

    /// The versions this server knows, newest first. CloneSets and Advanced StatefulSets are read through a
    /// version-independent slim model ([`super::workloads`]): at the newest version served, which on
    /// OpenKruise master is the storage version (no conversion webhook call per LIST and watch event).
    pub fn known(self) -> &'static [Version] {
        match self {
            Self::PodProbeMarker => &[Version::V1alpha1],
            Self::AdvancedStatefulSet => &[Version::V1beta1],
            _ => &[Version::V1beta1, Version::V1alpha1],
        }
    }

    /// `group/version`.
    pub fn api_version(self, version: Version) -> String {
        format!("{}/{}", self.group(), version)
    }

    /// The resource at `version`.
    pub fn api_resource(self, version: Version) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group(), version.as_str(), self.kind()),
            self.plural(),
        )
    }
}

/// The version each Kruise kind is served at, `None` for a kind not served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Versions([Option<Version>; 8]);

impl Versions {
    /// The newest known version of every kind: a cluster with OpenKruise master's CRDs (and the stand-in API
    /// server of the tests).
    pub fn newest() -> Self {
        Self(KruiseKind::ALL.map(|k| Some(k.known()[0])))
    }

    /// Every kind at `v1alpha1` where it has one: a cluster with OpenKruise 1.8's CRDs.
    pub fn released() -> Self {
        Self(KruiseKind::ALL.map(|k| {
            Some(if k.known().contains(&Version::V1alpha1) {
                Version::V1alpha1
            } else {
                k.known()[0]
            })
        }))
    }

    /// The version `kind` is served at.
    pub fn of(&self, kind: KruiseKind) -> Option<Version> {
        self.0[kind.index()]
    }

    /// Whether `kind` is served.
    pub fn serves(&self, kind: KruiseKind) -> bool {
        self.of(kind).is_some()
    }

    /// `self` with `kind` served at `version`.
    #[must_use]
    pub fn with(mut self, kind: KruiseKind, version: Option<Version>) -> Self {
        self.0[kind.index()] = version;
        self
    }

    /// The served resource of `kind`.
    pub fn resource(&self, kind: KruiseKind) -> Option<ApiResource> {
        self.of(kind).map(|v| kind.api_resource(v))
    }

    /// The served resource of `kind`, else its newest known version (for a caller that runs only when the
    /// kind is served; a request at the newest version then answers 404 and says so).
    pub fn resource_or_newest(&self, kind: KruiseKind) -> ApiResource {
        kind.api_resource(self.of(kind).unwrap_or(kind.known()[0]))
    }

    /// Each served kind as `plural.group/version`, for a log line.
    pub fn describe(&self) -> Vec<String> {
        KruiseKind::ALL
            .iter()
            .filter_map(|&k| {
                self.of(k)
                    .map(|v| format!("{}.{}/{v}", k.plural(), k.group()))
            })
            .collect()
    }
}

/// `object` (any served version of `K`'s kind) as `K`, converted to `K`'s version first.
///
/// # Errors
/// A message naming the object when it does not convert or decode.
pub fn decode<K>(mut object: Value, resource: &ApiResource) -> Result<K, String>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    // Items of a LIST and watch events carry apiVersion and kind; a bare object may not.
    if let Value::Object(map) = &mut object {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(resource.api_version.clone()));
        map.entry("kind")
            .or_insert_with(|| Value::String(resource.kind.clone()));
    }
    let name = object_name(&object);
    let home = K::api_version(&());
    let converted = if object.get("apiVersion").and_then(Value::as_str) == Some(&*home) {
        object
    } else {
        kruise_webhooks::conversion::convert_object(&object, &home)
            .map_err(|e| format!("{} {name}: converting to {home}: {e}", resource.kind))?
    };
    serde_json::from_value(converted).map_err(|e| format!("{} {name}: {e}", resource.kind))
}

/// `object` (`K`'s version) as JSON of the served `resource`'s version.
///
/// # Errors
/// A message naming the object when it does not convert.
pub fn encode<K>(object: &K, resource: &ApiResource) -> Result<Value, String>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    let mut value =
        serde_json::to_value(object).map_err(|e| format!("{}: encoding: {e}", resource.kind))?;
    if let Value::Object(map) = &mut value {
        map.insert(
            "apiVersion".into(),
            Value::String(K::api_version(&()).into()),
        );
        map.insert("kind".into(), Value::String(K::kind(&()).into()));
    }
    if K::api_version(&()) == resource.api_version {
        return Ok(value);
    }
    let name = object_name(&value);
    kruise_webhooks::conversion::convert_object(&value, &resource.api_version).map_err(|e| {
        format!(
            "{} {name}: converting to {}: {e}",
            resource.kind, resource.api_version
        )
    })
}

/// A conversion failure as a client-side error (no request was sent, or its answer was not used).
fn convert_error(message: String) -> kube::Error {
    kube::Error::Service(message.into())
}

fn object_name(object: &Value) -> String {
    let meta = &object["metadata"];
    match (meta["namespace"].as_str(), meta["name"].as_str()) {
        (Some(ns), Some(name)) if !ns.is_empty() => format!("{ns}/{name}"),
        (_, Some(name)) => name.to_owned(),
        _ => String::from("(unnamed)"),
    }
}

/// The requests this server makes of a Kruise kind `K`, at the version the cluster serves: objects are
/// converted to the served version before they are sent and back to `K`'s version when they come back.
pub struct ServedApi<K> {
    api: Api<DynamicObject>,
    resource: ApiResource,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for ServedApi<K> {
    fn clone(&self) -> Self {
        Self {
            api: self.api.clone(),
            resource: self.resource.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K> ServedApi<K>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Debug,
{
    /// `K` in `namespace`, at `resource`'s version.
    pub fn namespaced(client: Client, namespace: &str, resource: &ApiResource) -> Self {
        Self {
            api: Api::namespaced_with(client, namespace, resource),
            resource: resource.clone(),
            _kind: PhantomData,
        }
    }

    /// Every `K` (or the cluster-scoped kind), at `resource`'s version.
    pub fn all(client: Client, resource: &ApiResource) -> Self {
        Self {
            api: Api::all_with(client, resource),
            resource: resource.clone(),
            _kind: PhantomData,
        }
    }

    /// The served resource.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    fn back(&self, object: DynamicObject) -> kube::Result<K> {
        let value = serde_json::to_value(object).map_err(|e| convert_error(e.to_string()))?;
        decode(value, &self.resource).map_err(convert_error)
    }

    fn body(&self, object: &K) -> kube::Result<DynamicObject> {
        let value = encode(object, &self.resource).map_err(convert_error)?;
        serde_json::from_value(value).map_err(|e| convert_error(e.to_string()))
    }

    /// GET `name`.
    ///
    /// # Errors
    /// The API server's error; an object that does not convert as [`kube::Error::Service`] naming it.
    pub async fn get(&self, name: &str) -> kube::Result<K> {
        let object = self.api.get(name).await?;
        self.back(object)
    }

    /// GET `name`, `None` when it is not found.
    ///
    /// # Errors
    /// The API server's error; an object that does not convert as [`kube::Error::Service`] naming it.
    pub async fn get_opt(&self, name: &str) -> kube::Result<Option<K>> {
        match self.api.get_opt(name).await? {
            Some(object) => self.back(object).map(Some),
            None => Ok(None),
        }
    }

    /// PUT the status of `name` (optimistic concurrency on `object`'s resourceVersion).
    ///
    /// # Errors
    /// The API server's error; an object that does not convert as [`kube::Error::Service`] naming it.
    pub async fn replace_status(
        &self,
        name: &str,
        params: &PostParams,
        object: &K,
    ) -> kube::Result<K> {
        let body = self.body(object)?;
        let object = self.api.replace_status(name, params, &body).await?;
        self.back(object)
    }

    /// PUT of the whole object `name` (its spec; the status subresource is not written), sent at the served
    /// version and answered as `K`.
    ///
    /// # Errors
    /// The API error (a 409 on a stale resourceVersion), or a conversion error.
    pub async fn replace(&self, name: &str, params: &PostParams, object: &K) -> kube::Result<K> {
        let body = self.body(object)?;
        let object = self.api.replace(name, params, &body).await?;
        self.back(object)
    }

    /// DELETE of `name` (the answer, the object or a Status, is not read).
    ///
    /// # Errors
    /// The API error (404 when it is gone, 409 when a precondition fails).
    pub async fn delete(&self, name: &str, params: &DeleteParams) -> kube::Result<()> {
        self.api.delete(name, params).await.map(|_| ())
    }

    /// POST `object`.
    ///
    /// # Errors
    /// The API server's error; an object that does not convert as [`kube::Error::Service`] naming it.
    pub async fn create(&self, params: &PostParams, object: &K) -> kube::Result<K> {
        let object = self.api.create(params, &self.body(object)?).await?;
        self.back(object)
    }

    /// The underlying API at the served version, for requests whose body is version-independent (a merge
    /// or strategic patch of status fields both versions have).
    pub fn raw(&self) -> &Api<DynamicObject> {
        &self.api
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;
    use serde_json::json;

    #[test]
    fn resources_name_group_version_and_plural() {
        let r = KruiseKind::PodUnavailableBudget.api_resource(Version::V1alpha1);
        assert_eq!(r.api_version, "policy.kruise.io/v1alpha1");
        assert_eq!(r.plural, "podunavailablebudgets");
        assert_eq!(
            KruiseKind::AdvancedStatefulSet.crd_name(),
            "statefulsets.apps.kruise.io"
        );
        let released = Versions::released();
        assert_eq!(released.of(KruiseKind::SidecarSet), Some(Version::V1alpha1));
        assert_eq!(
            released.of(KruiseKind::AdvancedStatefulSet),
            Some(Version::V1beta1)
        );
        assert_eq!(
            Versions::newest().of(KruiseKind::WorkloadSpread),
            Some(Version::V1beta1)
        );
        assert!(!Versions::default().serves(KruiseKind::SidecarSet));
    }

    #[test]
    fn a_v1alpha1_budget_is_read_as_v1beta1_and_written_back_as_v1alpha1() {
        let alpha = KruiseKind::PodUnavailableBudget.api_resource(Version::V1alpha1);
        let stored = json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub", "namespace": "ns", "resourceVersion": "7",
                "annotations": {"kruise.io/pub-protect-operations": "EVICT,DELETE"}},
            "spec": {"maxUnavailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"observedGeneration": 0, "unavailableAllowed": 1, "currentAvailable": 3,
                "desiredAvailable": 2, "totalReplicas": 3}
        });
        let budget: PodUnavailableBudget = decode(stored, &alpha).unwrap();
        let body = encode(&budget, &alpha).unwrap();
        assert_eq!(body["apiVersion"], "policy.kruise.io/v1alpha1");
        assert_eq!(body["metadata"]["resourceVersion"], "7");
        assert_eq!(
            body["metadata"]["annotations"]["kruise.io/pub-protect-operations"],
            "EVICT,DELETE"
        );
        assert_eq!(body["status"]["unavailableAllowed"], 1);
        // v1beta1-only fields are not sent to a v1alpha1 resource.
        assert!(body["spec"].get("protectOperations").is_none());
        // At v1beta1: the object as it is.
        let beta = KruiseKind::PodUnavailableBudget.api_resource(Version::V1beta1);
        let same = encode(&budget, &beta).unwrap();
        assert_eq!(same["apiVersion"], "policy.kruise.io/v1beta1");
        assert_eq!(
            same["spec"]["protectOperations"],
            json!(["EVICT", "DELETE"])
        );
    }

    #[test]
    fn a_v1alpha1_sidecarset_is_read_with_its_namespace_as_a_selector() {
        use kruise_webhooks::api::sidecarset::SidecarSet;
        let alpha = KruiseKind::SidecarSet.api_resource(Version::V1alpha1);
        let stored = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "agent", "labels": {"apps.kruise.io/sidecarset-custom-version": "v2"}},
            "spec": {"namespace": "shop", "selector": {"matchLabels": {"app": "web"}},
                "containers": [{"name": "agent", "image": "agent:1"}]}});
        let set: SidecarSet = decode(stored, &alpha).unwrap();
        let selector = set.spec.namespace_selector.as_ref().unwrap();
        assert_eq!(
            selector.match_labels.as_ref().unwrap()["kubernetes.io/metadata.name"],
            "shop"
        );
        assert_eq!(set.spec.custom_version.as_deref(), Some("v2"));
        // Written back at v1alpha1: the custom version as its label again.
        let body = encode(&set, &alpha).unwrap();
        assert_eq!(body["apiVersion"], "apps.kruise.io/v1alpha1");
        assert_eq!(
            body["metadata"]["labels"]["apps.kruise.io/sidecarset-custom-version"],
            "v2"
        );
        assert!(body["spec"].get("customVersion").is_none());
    }

    #[test]
    fn a_crr_is_created_at_v1alpha1_with_its_fields() {
        use kruise_webhooks::api::containerrecreaterequest::ContainerRecreateRequest;
        let crr: ContainerRecreateRequest = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "job-0-sidecars", "namespace": "batch",
                "labels": {"crr.apps.kruise.io/node-name": "node-1"}},
            "spec": {"podName": "job-0", "containers": [{"name": "agent"}],
                "strategy": {"forceRecreate": true}}}))
        .unwrap();
        let alpha = KruiseKind::ContainerRecreateRequest.api_resource(Version::V1alpha1);
        let body = encode(&crr, &alpha).unwrap();
        assert_eq!(body["apiVersion"], "apps.kruise.io/v1alpha1");
        assert_eq!(body["spec"]["podName"], "job-0");
        assert_eq!(body["spec"]["strategy"]["forceRecreate"], true);
        assert_eq!(
            body["metadata"]["labels"]["crr.apps.kruise.io/node-name"],
            "node-1"
        );
        // What the API server answers (v1alpha1, kruise-daemon's status annotation) reads as v1beta1.
        let mut answered = body.clone();
        answered["metadata"]["annotations"] = json!({
            "crr.apps.kruise.io/sync-container-statuses": r#"[{"name":"agent","restartCount":1}]"#});
        answered["status"] = json!({"phase": "Completed"});
        let back: ContainerRecreateRequest = decode(answered, &alpha).unwrap();
        assert!(back.is_finished());
        assert_eq!(back.spec.pod_name, "job-0");
    }

    #[test]
    fn a_v1alpha1_workloadspread_status_is_written_with_its_conditions_fields() {
        use kruise_webhooks::api::workloadspread::WorkloadSpread;
        let alpha = KruiseKind::WorkloadSpread.api_resource(Version::V1alpha1);
        let stored = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "ns"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "subsets": [{"name": "a", "requiredNodeSelectorTerm": {"matchExpressions":
                    [{"key": "zone", "operator": "In", "values": ["z1"]}]}, "maxReplicas": 2}]},
            "status": {"observedGeneration": 1, "subsetStatuses": [{"name": "a", "replicas": 1,
                "missingReplicas": 1, "conditions": [{"type": "SchedulingFailed", "status": "False",
                    "lastTransitionTime": "2026-12-01T00:00:00Z"}]}]}});
        let ws: WorkloadSpread = decode(stored, &alpha).unwrap();
        assert!(ws.spec.subsets[0].required_node_selector.is_some());
        let body = encode(&ws, &alpha).unwrap();
        let subset = &body["spec"]["subsets"][0];
        assert!(
            subset.get("requiredNodeSelectorTerm").is_some()
                && subset.get("requiredNodeSelector").is_none()
        );
        let condition = &body["status"]["subsetStatuses"][0]["conditions"][0];
        assert!(condition.get("observedGeneration").is_none(), "{condition}");
    }

    #[test]
    fn an_object_that_does_not_convert_is_named() {
        let alpha = KruiseKind::PodUnavailableBudget.api_resource(Version::V1alpha1);
        let bad = json!({"metadata": {"name": "pub", "namespace": "ns",
            "annotations": {"kruise.io/pub-protect-operations": "FOO"}}, "spec": {}});
        let e = decode::<PodUnavailableBudget>(bad, &alpha).unwrap_err();
        assert!(
            e.starts_with("PodUnavailableBudget ns/pub: converting to policy.kruise.io/v1beta1:"),
            "{e}"
        );
        let wrong = json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub"}, "spec": 3});
        assert!(
            decode::<PodUnavailableBudget>(wrong, &alpha)
                .unwrap_err()
                .starts_with("PodUnavailableBudget pub:")
        );
    }
}
