//! A StatefulSet (native `apps/v1`, or Advanced `apps.kruise.io/v1beta1`) as the PersistentPodState
//! controller's cache holds it (docs/persistentpodstate.md §3.1, §4): name, namespace, uid, resourceVersion,
//! deletionTimestamp, of its annotations only the four PersistentPodState ones ([`READ_ANNOTATIONS`]),
//! `spec.replicas`, `spec.reserveOrdinals` (Advanced only) and `spec.ordinals.start`. Decoding drops the rest
//! as it goes (the pod template, the volume claim templates, the status).
//!
//! One type per kind ([`Flavor`]: [`Native`], [`Advanced`]), so that each is a resource of its own with a
//! store of its own (a native and an Advanced StatefulSet may share a name).

use std::fmt::Debug;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::de::Deserializer;
use serde::{Deserialize, Serialize};

use super::persistentpodstate::{
    AUTO_GENERATE_ANNOTATION, PERSISTENT_POD_ANNOTATIONS_ANNOTATION, PREFERRED_TOPOLOGY_ANNOTATION,
    REQUIRED_TOPOLOGY_ANNOTATION, TargetReference,
};
use super::pod::StrMap;
use crate::podunavailablebudget::related::api_group;

/// The annotations kept: those auto-generation reads.
pub const READ_ANNOTATIONS: &[&str] = &[
    AUTO_GENERATE_ANNOTATION,
    REQUIRED_TOPOLOGY_ANNOTATION,
    PREFERRED_TOPOLOGY_ANNOTATION,
    PERSISTENT_POD_ANNOTATIONS_ANNOTATION,
];

/// The StatefulSet kind a targetRef names, when it names one the controller follows: `apps` (native) or
/// `apps.kruise.io` (Advanced), kind `StatefulSet` (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatefulSetKind {
    /// `apps/v1` StatefulSet.
    Native,
    /// `apps.kruise.io` StatefulSet (Advanced StatefulSet).
    Advanced,
}

impl StatefulSetKind {
    /// The kind of a targetRef, when it is a StatefulSet of `apps` or `apps.kruise.io`.
    pub fn of(target: &TargetReference) -> Option<Self> {
        if target.kind != "StatefulSet" {
            return None;
        }
        match api_group(&target.api_version)? {
            "apps" => Some(Self::Native),
            "apps.kruise.io" => Some(Self::Advanced),
            _ => None,
        }
    }

    /// The apiVersion a generated PersistentPodState names it with (§4.2): OpenKruise's controller finder
    /// reads it at this version.
    pub fn api_version(self) -> &'static str {
        match self {
            Self::Native => "apps/v1",
            Self::Advanced => "apps.kruise.io/v1beta1",
        }
    }

    /// Its API group.
    pub fn group(self) -> &'static str {
        match self {
            Self::Native => "apps",
            Self::Advanced => "apps.kruise.io",
        }
    }
}

/// Which StatefulSet kind a [`SlimStatefulSet`] is.
pub trait Flavor: Debug + Clone + Default + PartialEq + Send + Sync + 'static {
    /// The kind, as a PersistentPodState's targetRef names it.
    const KIND: StatefulSetKind;
    /// `group/version` read.
    const API_VERSION: &'static str;
    /// The API group.
    const GROUP: &'static str;
    /// The version read.
    const VERSION: &'static str;
}

/// `apps/v1` StatefulSet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Native;

/// `apps.kruise.io/v1beta1` StatefulSet (Advanced StatefulSet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Advanced;

impl Flavor for Native {
    const KIND: StatefulSetKind = StatefulSetKind::Native;
    const API_VERSION: &'static str = "apps/v1";
    const GROUP: &'static str = "apps";
    const VERSION: &'static str = "v1";
}

impl Flavor for Advanced {
    const KIND: StatefulSetKind = StatefulSetKind::Advanced;
    const API_VERSION: &'static str = "apps.kruise.io/v1beta1";
    const GROUP: &'static str = "apps.kruise.io";
    const VERSION: &'static str = "v1beta1";
}

/// A StatefulSet with only the fields read (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    from = "wire::StatefulSet",
    into = "wire::StatefulSet",
    bound = "F: Flavor"
)]
pub struct SlimStatefulSet<F: Flavor> {
    /// `name`, `namespace`, `uid`, `resourceVersion`, `deletionTimestamp`; never annotations (they are
    /// [`SlimStatefulSet::annotations`]).
    pub metadata: ObjectMeta,
    /// `metadata.annotations`, only [`READ_ANNOTATIONS`].
    pub annotations: StrMap,
    /// `spec.replicas` (`None`: the API server's default, 1).
    pub replicas: Option<i32>,
    /// `spec.reserveOrdinals` (Advanced StatefulSet): integers and `"a-b"` ranges.
    pub reserve_ordinals: Vec<IntOrString>,
    /// `spec.ordinals.start`.
    pub start_ordinal: Option<i32>,
    /// The kind.
    pub flavor: PhantomData<F>,
}

impl<F: Flavor> SlimStatefulSet<F> {
    /// Its name (`""` when it has none).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }

    /// Its uid (`""` when it has none).
    pub fn uid(&self) -> &str {
        self.metadata.uid.as_deref().unwrap_or("")
    }

    /// Whether it is being deleted.
    pub fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

impl<F: Flavor> k8s_openapi::Resource for SlimStatefulSet<F> {
    const API_VERSION: &'static str = F::API_VERSION;
    const GROUP: &'static str = F::GROUP;
    const KIND: &'static str = "StatefulSet";
    const VERSION: &'static str = F::VERSION;
    const URL_PATH_SEGMENT: &'static str = "statefulsets";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl<F: Flavor> k8s_openapi::Metadata for SlimStatefulSet<F> {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

mod wire {
    use super::*;

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
        #[serde(
            default,
            skip_serializing_if = "StrMap::is_empty",
            deserialize_with = "read_annotations"
        )]
        annotations: StrMap,
    }

    fn read_annotations<'de, D: Deserializer<'de>>(deserializer: D) -> Result<StrMap, D::Error> {
        StrMap::decode(deserializer, |key| READ_ANNOTATIONS.contains(&key))
    }

    #[derive(Default, Serialize, Deserialize)]
    struct Ordinals {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<i32>,
    }

    #[derive(Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replicas: Option<i32>,
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            deserialize_with = "crate::de::nullable"
        )]
        reserve_ordinals: Vec<IntOrString>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ordinals: Option<Ordinals>,
    }

    #[derive(Default, Serialize, Deserialize)]
    pub(super) struct StatefulSet {
        #[serde(default)]
        metadata: Option<Meta>,
        #[serde(default)]
        spec: Option<Spec>,
    }

    impl<F: Flavor> From<StatefulSet> for SlimStatefulSet<F> {
        fn from(sts: StatefulSet) -> Self {
            let meta = sts.metadata.unwrap_or_default();
            let spec = sts.spec.unwrap_or_default();
            SlimStatefulSet {
                metadata: ObjectMeta {
                    name: meta.name,
                    namespace: meta.namespace,
                    uid: meta.uid,
                    resource_version: meta.resource_version,
                    deletion_timestamp: meta.deletion_timestamp,
                    ..ObjectMeta::default()
                },
                annotations: meta.annotations,
                replicas: spec.replicas,
                reserve_ordinals: spec.reserve_ordinals,
                start_ordinal: spec.ordinals.and_then(|o| o.start),
                flavor: PhantomData,
            }
        }
    }

    impl<F: Flavor> From<SlimStatefulSet<F>> for StatefulSet {
        fn from(sts: SlimStatefulSet<F>) -> Self {
            StatefulSet {
                metadata: Some(Meta {
                    name: sts.metadata.name,
                    namespace: sts.metadata.namespace,
                    uid: sts.metadata.uid,
                    resource_version: sts.metadata.resource_version,
                    deletion_timestamp: sts.metadata.deletion_timestamp,
                    annotations: sts.annotations,
                }),
                spec: Some(Spec {
                    replicas: sts.replicas,
                    reserve_ordinals: sts.reserve_ordinals,
                    ordinals: sts
                        .start_ordinal
                        .map(|start| Ordinals { start: Some(start) }),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decoding_keeps_what_the_controller_reads() {
        let sts: SlimStatefulSet<Advanced> = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                "generation": 2, "labels": {"app": "web"},
                "annotations": {"kruise.io/auto-generate-persistent-pod-state": "true",
                    "kruise.io/required-persistent-topology": "zone", "other": "x"}},
            "spec": {"replicas": 3, "reserveOrdinals": [1, "3-4"], "ordinals": {"start": 2},
                "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
            "status": {"replicas": 3}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&sts).unwrap(),
            json!({
                "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                    "annotations": {"kruise.io/auto-generate-persistent-pod-state": "true",
                        "kruise.io/required-persistent-topology": "zone"}},
                "spec": {"replicas": 3, "reserveOrdinals": [1, "3-4"], "ordinals": {"start": 2}}
            })
        );
        assert_eq!(sts.name(), "web");
        assert!(!sts.deleting());
        let empty: SlimStatefulSet<Native> =
            serde_json::from_value(json!({"metadata": null, "spec": {"reserveOrdinals": null}}))
                .unwrap();
        assert_eq!(empty, SlimStatefulSet::default());
        assert!(
            serde_json::from_value::<SlimStatefulSet<Native>>(json!({"spec": {"replicas": "x"}}))
                .is_err()
        );
    }

    #[test]
    fn each_kind_is_its_own_resource() {
        use k8s_openapi::Resource;
        assert_eq!(SlimStatefulSet::<Native>::API_VERSION, "apps/v1");
        assert_eq!(
            SlimStatefulSet::<Advanced>::API_VERSION,
            "apps.kruise.io/v1beta1"
        );
        assert_eq!(
            SlimStatefulSet::<Advanced>::URL_PATH_SEGMENT,
            "statefulsets"
        );
    }
}
