//! `apps.kruise.io/v1beta1` PersistentPodState (shared/crds), as the pod chain's node-affinity step reads it
//! (spec/pod-mutating-misc.md §7).
//!
//! **Version.** v1beta1, the CRD's storage version, is typed; a v1alpha1 object (`nodeTopologyKeys` where
//! v1beta1 has `keys`) is converted first ([`crate::conversion::convert_object`]).
//!
//! **Fields.** Every field of the v1beta1 schema. Optional fields are `Option`s or empty collections and are
//! omitted when unset; `null` reads as the zero value, as Go's `encoding/json` reads it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::de::nullable;

/// The API version the type models.
pub const API_VERSION: &str = "apps.kruise.io/v1beta1";
/// Pod annotation naming the PersistentPodState whose topology was injected.
pub const INJECTED_ANNOTATION: &str = "kruise.io/injected-persistent-pod-state";
/// StatefulSet annotation: `true` asks for a PersistentPodState named after it (docs/persistentpodstate.md §4).
pub const AUTO_GENERATE_ANNOTATION: &str = "kruise.io/auto-generate-persistent-pod-state";
/// StatefulSet annotation: the required topology keys of the generated PersistentPodState, comma-separated.
pub const REQUIRED_TOPOLOGY_ANNOTATION: &str = "kruise.io/required-persistent-topology";
/// StatefulSet annotation: the preferred topology keys (one term, weight 100), comma-separated.
pub const PREFERRED_TOPOLOGY_ANNOTATION: &str = "kruise.io/preferred-persistent-topology";
/// StatefulSet annotation: the pod annotation keys to persist, comma-separated.
pub const PERSISTENT_POD_ANNOTATIONS_ANNOTATION: &str = "kruise.io/persistent-pod-annotations";
/// `persistentPodStateRetentionPolicy` that keeps entries until the target goes.
pub const RETENTION_WHEN_DELETED: &str = "WhenDeleted";

/// PersistentPodState is the Schema for the PersistentPodState API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PersistentPodState {
    /// `apiVersion`: `apps.kruise.io/v1beta1`.
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    /// `kind`: `PersistentPodState`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "nullable")]
    pub spec: PersistentPodStateSpec,
    /// `status`; `None` until the controller first writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PersistentPodStateStatus>,
}

/// `spec`: PersistentPodStateSpec defines the desired state of PersistentPodState.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodStateSpec {
    /// The workload whose pods' states are kept (only StatefulSet-like kinds).
    #[serde(default, deserialize_with = "nullable")]
    pub target_ref: TargetReference,
    /// Node label keys a re-created pod must be scheduled with again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_persistent_topology: Option<NodeTopologyTerm>,
    /// Node label keys a re-created pod prefers, each with a weight.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub preferred_persistent_topology: Vec<PreferredTopologyTerm>,
    /// Pod annotations to persist.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub persistent_pod_annotations: Vec<PersistentPodAnnotation>,
    /// `WhenScaled` or `WhenDeleted`: when a pod's state is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_pod_state_retention_policy: Option<String>,
}

/// `spec.targetRef`: the workload, by apiVersion (only its group is compared), kind and name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// API version of the referent.
    #[serde(default, deserialize_with = "nullable")]
    pub api_version: String,
    /// Kind of the referent.
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    /// Name of the referent.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

/// `requiredPersistentTopology`, and the `preference` of a preferred term: node label keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeTopologyTerm {
    /// A list of node label keys used for topology persistence.
    #[serde(default, deserialize_with = "nullable")]
    pub keys: Vec<String>,
}

/// One `preferredPersistentTopology` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreferredTopologyTerm {
    /// Weight of the node affinity term it becomes.
    #[serde(default, deserialize_with = "nullable")]
    pub weight: i32,
    /// The node label keys.
    #[serde(default, deserialize_with = "nullable")]
    pub preference: NodeTopologyTerm,
}

/// One `persistentPodAnnotations` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistentPodAnnotation {
    /// The annotation key.
    #[serde(default, deserialize_with = "nullable")]
    pub key: String,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodStateStatus {
    /// The most recent generation observed (always written, as Go's type has no omitempty).
    #[serde(default, deserialize_with = "nullable")]
    pub observed_generation: i64,
    /// The state of each pod, by pod name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub pod_states: BTreeMap<String, PodState>,
}

/// `status.podStates[name]`: what was recorded of a pod while it ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    /// `pod.spec.nodeName`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub node_name: String,
    /// The node's topology labels (`kubernetes.io/hostname=node-1`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub node_topology_labels: BTreeMap<String, String>,
    /// The pod's persisted annotations (not restored by the webhook).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub annotations: BTreeMap<String, String>,
}

impl PersistentPodState {
    /// Its name (`""` when it has none).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
}

resource!(
    PersistentPodState,
    "apps.kruise.io/v1beta1",
    "apps.kruise.io",
    "v1beta1",
    "PersistentPodState",
    "persistentpodstates",
    NamespaceResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn full() -> Value {
        json!({
            "apiVersion": API_VERSION, "kind": "PersistentPodState",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"},
                "requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]},
                "preferredPersistentTopology": [{"weight": 10, "preference": {"keys": ["kubernetes.io/hostname"]}}],
                "persistentPodAnnotations": [{"key": "ip"}],
                "persistentPodStateRetentionPolicy": "WhenScaled"
            },
            "status": {
                "observedGeneration": 2,
                "podStates": {"web-0": {"nodeName": "n1",
                    "nodeTopologyLabels": {"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "a"},
                    "annotations": {"ip": "10.0.0.1"}}}
            }
        })
    }

    #[test]
    fn the_example_fills_every_field_of_the_v1beta1_schema() {
        let crd = include_str!("../../../deploy/base/crds/apps.kruise.io_persistentpodstates.yaml");
        let missing = crate::api::crd_schema::unexercised(crd, "v1beta1", &full());
        assert!(missing.is_empty(), "not in the example: {missing:?}");
    }

    #[test]
    fn every_field_of_the_crd_survives_a_round_trip() {
        let stored = full();
        let pps: PersistentPodState = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(pps.spec.target_ref.kind, "StatefulSet");
        assert_eq!(pps.spec.preferred_persistent_topology[0].weight, 10);
        assert_eq!(serde_json::to_value(&pps).unwrap(), stored);
    }

    #[test]
    fn nulls_read_as_go_zero_values() {
        let pps: PersistentPodState = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"targetRef": null, "preferredPersistentTopology": null,
                     "requiredPersistentTopology": {"keys": null}},
            "status": {"podStates": {"p-0": {"nodeTopologyLabels": null}}}
        }))
        .unwrap();
        assert_eq!(pps.spec.target_ref, TargetReference::default());
        assert_eq!(
            pps.spec.required_persistent_topology,
            Some(NodeTopologyTerm::default())
        );
        assert!(
            pps.status.unwrap().pod_states["p-0"]
                .node_topology_labels
                .is_empty()
        );
    }
}
