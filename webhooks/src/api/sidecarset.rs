//! `apps.kruise.io/v1beta1` SidecarSet (spec/sidecarset.md §2), as the webhooks read it.
//!
//! Containers and volumes keep their whole JSON, as text ([`RawObject`]): injection copies them into the pod,
//! so fields our types do not know survive (DECISIONS 13). The fields the logic reads are decoded beside it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EnvVar, LocalObjectReference, ObjectFieldSelector, VolumeDevice, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::api::RawObject;
use crate::de::nullable;
use serde_json::Value;

/// `kruise.io/sidecarset-hash`.
pub const HASH_ANNOTATION: &str = "kruise.io/sidecarset-hash";
/// `kruise.io/sidecarset-hash-without-image`.
pub const HASH_WITHOUT_IMAGE_ANNOTATION: &str = "kruise.io/sidecarset-hash-without-image";
/// `apps.kruise.io/sidecarset-canary`.
pub const CANARY_ANNOTATION: &str = "apps.kruise.io/sidecarset-canary";
/// `apps.kruise.io/sidecarset-base`.
pub const BASE_ANNOTATION: &str = "apps.kruise.io/sidecarset-base";
/// ControllerRevision label naming its SidecarSet.
pub const SIDECARSET_NAME_LABEL: &str = "kruise.io/sidecarset-name";
/// ControllerRevision label carrying the custom version.
pub const CUSTOM_VERSION_LABEL: &str = "apps.kruise.io/sidecarset-custom-version";
/// The Container fields Kruise adds to a SidecarContainer (stripped when a container is injected).
pub const KRUISE_CONTAINER_FIELDS: &[&str] = &[
    "podInjectPolicy",
    "upgradeStrategy",
    "shareVolumePolicy",
    "shareVolumeDevicePolicy",
    "transferEnv",
    "resourcesPolicy",
];

/// A SidecarSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SidecarSet {
    /// `apiVersion`.
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    /// `kind`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: SidecarSetSpec,
    /// Status, as the controller wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SidecarSetStatus>,
}

/// `spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// Selects pods; `None` selects nothing, and an empty selector counts as no match (§4.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Selects the namespaces of pods; `None` means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Init containers to inject (native sidecars have `restartPolicy: Always`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub init_containers: Vec<SidecarContainer>,
    /// Containers to inject.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub containers: Vec<SidecarContainer>,
    /// Volumes that injected containers may reference (raw, injected verbatim).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub volumes: Vec<RawObject>,
    /// `updateStrategy`.
    #[serde(default, deserialize_with = "nullable")]
    pub update_strategy: UpdateStrategy,
    /// `injectionStrategy`.
    #[serde(default, deserialize_with = "nullable")]
    pub injection_strategy: InjectionStrategy,
    /// Image pull secrets added to injected pods.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// `revisionHistoryLimit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// `patchPodMetadata`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub patch_pod_metadata: Vec<PatchPodMetadata>,
    /// `customVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_version: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `spec.updateStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// `RollingUpdate` or `NotUpdate`.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Paused rollouts inject the pinned revision (§4.4 step 3).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Pods selected here get the latest revision under policy `Partial`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Int or percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Int or percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Fields not modelled here (priorityStrategy, scatterStrategy, ...).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `spec.injectionStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InjectionStrategy {
    /// No injection at all while set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Historical revision to inject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<InjectionRevision>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `spec.injectionStrategy.revision`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InjectionRevision {
    /// Custom version label of the revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_version: Option<String>,
    /// ControllerRevision name (wins over customVersion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_name: Option<String>,
    /// `Always` (default) or `Partial`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub policy: String,
}

/// One `spec.patchPodMetadata` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchPodMetadata {
    /// Annotations to write.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub annotations: BTreeMap<String, String>,
    /// `Retain` (default), `Overwrite` or `MergePatchJson`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub patch_policy: String,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetStatus {
    /// `observedGeneration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `matchedPods`.
    #[serde(default)]
    pub matched_pods: i32,
    /// `updatedPods`.
    #[serde(default)]
    pub updated_pods: i32,
    /// `readyPods`.
    #[serde(default)]
    pub ready_pods: i32,
    /// `updatedReadyPods`.
    #[serde(default)]
    pub updated_ready_pods: i32,
    /// `latestRevision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_revision: Option<String>,
    /// `collisionCount`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
}

/// A sidecar container: its raw JSON (a Container plus Kruise's fields), and the fields the logic reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SidecarContainer {
    /// The container exactly as stored.
    raw: RawObject,
    /// The fields injection reads.
    pub view: SidecarContainerView,
}

/// The fields of a SidecarContainer that selection and injection read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarContainerView {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// `Always` makes an init container a native sidecar.
    #[serde(default)]
    pub restart_policy: Option<String>,
    /// `BeforeAppContainer` or `AfterAppContainer`.
    #[serde(default)]
    pub pod_inject_policy: String,
    /// Env of the container.
    #[serde(default, deserialize_with = "nullable")]
    pub env: Vec<EnvVar>,
    /// Mounts.
    #[serde(default, deserialize_with = "nullable")]
    pub volume_mounts: Vec<VolumeMount>,
    /// Devices.
    #[serde(default, deserialize_with = "nullable")]
    pub volume_devices: Vec<VolumeDevice>,
    /// `upgradeStrategy`.
    #[serde(default, deserialize_with = "nullable")]
    pub upgrade_strategy: SidecarUpgradeStrategy,
    /// `shareVolumePolicy.type`.
    #[serde(default, deserialize_with = "nullable")]
    pub share_volume_policy: SharePolicy,
    /// `shareVolumeDevicePolicy` (a pointer in Go: `None` is not `disabled`).
    #[serde(default)]
    pub share_volume_device_policy: Option<SharePolicy>,
    /// `transferEnv`.
    #[serde(default, deserialize_with = "nullable")]
    pub transfer_env: Vec<TransferEnv>,
    /// `resourcesPolicy`, raw (§5).
    #[serde(default)]
    pub resources_policy: Option<Value>,
}

/// `upgradeStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarUpgradeStrategy {
    /// `ColdUpgrade` or `HotUpgrade`.
    #[serde(default)]
    pub upgrade_type: String,
    /// Image of the idle hot-upgrade container.
    #[serde(default)]
    pub hot_upgrade_empty_image: String,
}

/// `shareVolumePolicy` / `shareVolumeDevicePolicy`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SharePolicy {
    /// `enabled` or `disabled`.
    #[serde(default, rename = "type")]
    pub type_: String,
}

impl SharePolicy {
    /// `type == enabled`.
    pub fn enabled(&self) -> bool {
        self.type_ == "enabled"
    }
}

/// One `transferEnv` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransferEnv {
    /// The app container to copy from.
    #[serde(default)]
    pub source_container_name: String,
    /// Or: read that name from a pod label or annotation.
    #[serde(default)]
    pub source_container_name_from: Option<SourceContainerNameFrom>,
    /// One env name.
    #[serde(default)]
    pub env_name: String,
    /// More env names.
    #[serde(default, deserialize_with = "nullable")]
    pub env_names: Vec<String>,
}

/// `transferEnv[].sourceContainerNameFrom`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceContainerNameFrom {
    /// `metadata.labels['k']` or `metadata.annotations['k']`.
    #[serde(default)]
    pub field_ref: Option<ObjectFieldSelector>,
}

impl<'de> Deserialize<'de> for SidecarContainer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Value::Object(serde_json::Map::<String, Value>::deserialize(d)?);
        let view = SidecarContainerView::deserialize(&raw).map_err(serde::de::Error::custom)?;
        let Value::Object(raw) = raw else {
            unreachable!("built as an object above")
        };
        Ok(Self {
            raw: RawObject::from_map(&raw),
            view,
        })
    }
}

impl Serialize for SidecarContainer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl SidecarContainer {
    /// The container exactly as stored (a Container plus Kruise's fields).
    pub fn raw(&self) -> &RawObject {
        &self.raw
    }

    /// A native sidecar (init container with `restartPolicy: Always`).
    pub fn is_native_sidecar(&self) -> bool {
        self.view.restart_policy.as_deref() == Some("Always")
    }
}

impl SidecarSet {
    /// The object's name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }

    /// An annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    /// Canary when `apps.kruise.io/sidecarset-canary` is exactly `"true"` and a base is named (§2).
    pub fn canary_base(&self) -> Option<&str> {
        (self.annotation(CANARY_ANNOTATION) == Some("true"))
            .then(|| self.annotation(BASE_ANNOTATION))
            .flatten()
            .filter(|b| !b.is_empty())
    }
}

resource!(
    SidecarSet,
    "apps.kruise.io/v1beta1",
    "apps.kruise.io",
    "v1beta1",
    "SidecarSet",
    "sidecarsets",
    ClusterResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_field_of_the_crd_survives_a_round_trip() {
        let stored = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "s", "annotations": {CANARY_ANNOTATION: "true", BASE_ANNOTATION: "base"}},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}]},
                "containers": [{"name": "c", "image": "i", "podInjectPolicy": "AfterAppContainer",
                                "shareVolumePolicy": {"type": "enabled"}, "futureContainerField": {"x": 1},
                                "transferEnv": [{"sourceContainerName": "app", "envNames": ["A", "B"]}]}],
                "initContainers": [{"name": "n", "image": "i", "restartPolicy": "Always"}],
                "volumes": [{"name": "v", "emptyDir": {}, "futureVolumeField": true}],
                "updateStrategy": {"type": "RollingUpdate", "partition": "10%", "maxUnavailable": 1,
                                   "scatterStrategy": [{"key": "k", "value": "v"}], "priorityStrategy": {"weightPriority": []}},
                "injectionStrategy": {"paused": true, "revision": {"revisionName": "s-1", "policy": "Partial"}},
                "imagePullSecrets": [{"name": "p"}], "revisionHistoryLimit": 5,
                "patchPodMetadata": [{"annotations": {"a": "b"}, "patchPolicy": "Overwrite"}],
                "customVersion": "v2", "futureSpecField": "kept"
            },
            "status": {"observedGeneration": 2, "matchedPods": 3, "updatedPods": 1, "readyPods": 3, "updatedReadyPods": 1, "latestRevision": "s-1"}
        });
        let set: SidecarSet = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(set.canary_base(), Some("base"));
        assert!(set.spec.init_containers[0].is_native_sidecar());
        assert!(set.spec.containers[0].view.share_volume_policy.enabled());
        assert_eq!(
            set.spec.containers[0].view.transfer_env[0].env_names,
            ["A", "B"]
        );
        assert_eq!(serde_json::to_value(&set).unwrap(), stored);
    }

    #[test]
    fn canary_needs_exactly_true_and_a_base() {
        let with = |canary: &str, base: &str| SidecarSet {
            metadata: ObjectMeta {
                annotations: Some(
                    [
                        (CANARY_ANNOTATION.to_string(), canary.to_string()),
                        (BASE_ANNOTATION.to_string(), base.to_string()),
                    ]
                    .into(),
                ),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(with("true", "b").canary_base(), Some("b"));
        assert_eq!(with("True", "b").canary_base(), None);
        assert_eq!(with("true", "").canary_base(), None);
    }
}
