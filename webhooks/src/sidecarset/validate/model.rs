//! The SidecarSet as the validator reads it (spec/sidecarset.md §2, §8): a lenient decode of the v1beta1
//! object in which every absent or `null` field is Go's zero value, so that a missing field becomes a field
//! error (`Required value`) rather than a decode failure. A value of the wrong JSON type is still a decode
//! failure, as it is for Go's decoder (answered 400).
//!
//! Containers keep their raw JSON beside the few fields the Kruise rules read: pod validation decodes the
//! raw JSON itself ([`crate::validation::pod`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Deserializer};

use crate::de::nullable;
use serde_json::{Map, Value};

use crate::api::sidecarset::{
    BASE_ANNOTATION, CANARY_ANNOTATION, InjectionStrategy, PatchPodMetadata,
};

/// A decoded SidecarSet.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Subject {
    #[serde(default, deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "nullable")]
    pub spec: Spec,
}

/// `spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Spec {
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    #[serde(default)]
    pub namespace_selector: Option<LabelSelector>,
    #[serde(default, deserialize_with = "nullable")]
    pub init_containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    pub containers: Vec<Container>,
    #[serde(default, deserialize_with = "nullable")]
    pub volumes: Vec<Value>,
    #[serde(default, deserialize_with = "nullable")]
    pub update_strategy: UpdateStrategy,
    #[serde(default, deserialize_with = "nullable")]
    pub injection_strategy: InjectionStrategy,
    #[serde(default, deserialize_with = "nullable")]
    pub patch_pod_metadata: Vec<PatchPodMetadata>,
}

/// `spec.updateStrategy`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UpdateStrategy {
    #[serde(default, rename = "type", deserialize_with = "nullable")]
    pub type_: String,
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    #[serde(default)]
    pub partition: Option<IntOrString>,
    #[serde(default)]
    pub max_unavailable: Option<IntOrString>,
    #[serde(default)]
    pub priority_strategy: Option<PriorityStrategy>,
    #[serde(default, deserialize_with = "nullable")]
    pub scatter_strategy: Vec<ScatterTerm>,
}

/// `updateStrategy.priorityStrategy`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PriorityStrategy {
    #[serde(default, deserialize_with = "nullable")]
    pub weight_priority: Vec<WeightTerm>,
    #[serde(default, deserialize_with = "nullable")]
    pub order_priority: Vec<OrderTerm>,
}

/// One `weightPriority` term.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WeightTerm {
    #[serde(default, deserialize_with = "nullable")]
    pub weight: i32,
    #[serde(default, deserialize_with = "nullable")]
    pub match_selector: LabelSelector,
}

/// One `orderPriority` term.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct OrderTerm {
    #[serde(default, deserialize_with = "nullable")]
    pub ordered_key: String,
}

/// One `scatterStrategy` term.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ScatterTerm {
    #[serde(default, deserialize_with = "nullable")]
    pub key: String,
    #[serde(default, deserialize_with = "nullable")]
    pub value: String,
}

/// A sidecar container: its raw JSON and the Kruise fields the rules read.
#[derive(Debug, Clone, Default)]
pub(super) struct Container {
    pub raw: Map<String, Value>,
    pub view: ContainerView,
}

impl<'de> Deserialize<'de> for Container {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Option::<Map<String, Value>>::deserialize(d)?.unwrap_or_default();
        let view = ContainerView::deserialize(&Value::Object(raw.clone()))
            .map_err(serde::de::Error::custom)?;
        Ok(Self { raw, view })
    }
}

/// The Kruise fields of a sidecar container.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ContainerView {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default)]
    pub restart_policy: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub pod_inject_policy: String,
    #[serde(default, deserialize_with = "nullable")]
    pub share_volume_policy: SharePolicy,
    #[serde(default, deserialize_with = "nullable")]
    pub upgrade_strategy: UpgradeStrategy,
    #[serde(default, deserialize_with = "nullable")]
    pub transfer_env: Vec<TransferEnv>,
    #[serde(default)]
    pub resources_policy: Option<ResourcesPolicy>,
    #[serde(default, deserialize_with = "nullable")]
    pub resources: Resources,
}

/// `shareVolumePolicy`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct SharePolicy {
    #[serde(default, rename = "type", deserialize_with = "nullable")]
    pub type_: String,
}

/// `upgradeStrategy`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UpgradeStrategy {
    #[serde(default, deserialize_with = "nullable")]
    pub upgrade_type: String,
}

/// One `transferEnv` entry (only the field validation reads).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TransferEnv {
    #[serde(default)]
    pub source_container_name_from: Option<SourceFrom>,
}

/// `transferEnv[].sourceContainerNameFrom`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SourceFrom {
    #[serde(default)]
    pub field_ref: Option<crate::validation::downward_api::FieldRef>,
}

/// `resourcesPolicy` (§5).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourcesPolicy {
    #[serde(default, deserialize_with = "nullable")]
    pub target_containers_name_regex: String,
    #[serde(default, deserialize_with = "nullable")]
    pub resources_expr: ResourcesExpr,
}

/// `resourcesPolicy.resourcesExpr`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ResourcesExpr {
    #[serde(default)]
    pub limits: Option<Exprs>,
    #[serde(default)]
    pub requests: Option<Exprs>,
}

/// `limits` / `requests` expressions.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Exprs {
    #[serde(default, deserialize_with = "nullable")]
    pub cpu: String,
    #[serde(default, deserialize_with = "nullable")]
    pub memory: String,
}

/// The container's `resources` (only whether limits / requests are set).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Resources {
    #[serde(default, deserialize_with = "nullable")]
    pub limits: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    pub requests: BTreeMap<String, Value>,
}

impl Subject {
    /// The object's name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }

    /// An annotation's value (`""` when absent).
    pub fn annotation(&self, key: &str) -> &str {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map_or("", String::as_str)
    }

    /// The base's name when canary (§2): canary annotation exactly `"true"` and a non-empty base.
    pub fn canary_base(&self) -> Option<&str> {
        let base = self.annotation(BASE_ANNOTATION);
        (self.annotation(CANARY_ANNOTATION) == "true" && !base.is_empty()).then_some(base)
    }
}
