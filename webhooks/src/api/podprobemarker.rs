//! `apps.kruise.io/v1alpha1` PodProbeMarker (its only version), as the pod chain's serverless step reads it
//! (spec/pod-mutating-misc.md §9).
//!
//! **Fields.** Every field of the v1alpha1 schema (OpenKruise's CRD; we do not ship it). A probe
//! ([`PodContainerProbe`]) is written as Go's `json.Marshal` writes it: fields in Go's declaration order
//! (`name`, `containerName`, `probe`, `markerPolicy`, `podConditionType`) with its omitempty rules, so a list
//! of probes encoded with [`crate::json::go::to_string`] is the `kruise.io/podprobe` annotation, byte for
//! byte. `null` reads as the zero value, unknown fields are dropped, as Go's `encoding/json` does.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};

use super::probe::Probe;
use crate::de::nullable;

/// The API version the type models.
pub const API_VERSION: &str = "apps.kruise.io/v1alpha1";
/// Pod annotation holding the probes to run (for serverless pods, which kruise-daemon does not reach).
pub const PROBES_ANNOTATION: &str = "kruise.io/podprobe";
/// Pod annotation naming the PodProbeMarkers whose probes the pod carries, comma-separated.
pub const LIST_ANNOTATION: &str = "kruise.io/podprobemarker-list";

/// PodProbeMarker is the Schema for the PodProbeMarker API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodProbeMarker {
    /// `apiVersion`: `apps.kruise.io/v1alpha1`.
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    /// `kind`: `PodProbeMarker`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "nullable")]
    pub spec: PodProbeMarkerSpec,
    /// `status`; `None` until the controller first writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodProbeMarkerStatus>,
}

/// `spec`: PodProbeMarkerSpec defines the desired state of PodProbeMarker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodProbeMarkerSpec {
    /// The pods whose containers get the probes; nil or empty selects none.
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    /// The probes.
    #[serde(default, deserialize_with = "nullable")]
    pub probes: Vec<PodContainerProbe>,
}

/// One probe of a container (fields in Go's order, see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodContainerProbe {
    /// The probe's name, unique within the pod.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// The container it runs in.
    #[serde(default, deserialize_with = "nullable")]
    pub container_name: String,
    /// The probe (Go's `ContainerProbeSpec`, a `v1.Probe` inline): always written.
    #[serde(default, deserialize_with = "nullable")]
    pub probe: Probe,
    /// What to patch on the pod by the probe's result (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub marker_policy: Vec<ProbeMarkerPolicy>,
    /// The pod condition the result is recorded in (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub pod_condition_type: String,
}

/// One `markerPolicy` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeMarkerPolicy {
    /// `Succeeded` or `Failed`.
    #[serde(default, deserialize_with = "nullable")]
    pub state: String,
    /// Labels to patch (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations to patch (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub annotations: BTreeMap<String, String>,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeMarkerStatus {
    /// The most recent generation observed (always written).
    #[serde(default, deserialize_with = "nullable")]
    pub observed_generation: i64,
    /// How many pods match (omitted when 0).
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "nullable"
    )]
    pub matched_pods: i64,
}

impl PodProbeMarker {
    /// Its name (`""` when it has none).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

resource!(
    PodProbeMarker,
    "apps.kruise.io/v1alpha1",
    "apps.kruise.io",
    "v1alpha1",
    "PodProbeMarker",
    "podprobemarkers",
    NamespaceResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn full() -> Value {
        json!({
            "apiVersion": API_VERSION, "kind": "PodProbeMarker",
            "metadata": {"name": "game", "namespace": "ns"},
            "spec": {
                "selector": {"matchLabels": {"app": "game"},
                             "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
                "probes": [{
                    "name": "healthy", "containerName": "main",
                    "probe": {"exec": {"command": ["bash", "/probe.sh"]}, "initialDelaySeconds": 10,
                              "timeoutSeconds": 3, "periodSeconds": 10, "successThreshold": 1,
                              "failureThreshold": 3},
                    "markerPolicy": [{"state": "Succeeded", "labels": {"ready": "true"},
                                      "annotations": {"controller.kubernetes.io/pod-deletion-cost": "10"}}],
                    "podConditionType": "game.kruise.io/healthy"
                }]
            },
            "status": {"observedGeneration": 1, "matchedPods": 2}
        })
    }

    #[test]
    fn every_field_survives_a_round_trip() {
        let stored = full();
        let marker: PodProbeMarker = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(marker.spec.probes[0].marker_policy[0].state, "Succeeded");
        assert_eq!(serde_json::to_value(&marker).unwrap(), stored);
    }

    #[test]
    fn a_probe_is_written_in_go_order_and_an_empty_policy_is_omitted() {
        let mut probe: PodContainerProbe = serde_json::from_value(json!({
            "podConditionType": "game.io/healthy",
            "probe": {"exec": {"command": ["ok"]}},
            "containerName": "main", "name": "healthy",
            "markerPolicy": [{"state": "Failed"}]
        }))
        .unwrap();
        assert_eq!(
            crate::json::go::to_string(&probe),
            r#"{"name":"healthy","containerName":"main","probe":{"exec":{"command":["ok"]}},"markerPolicy":[{"state":"Failed"}],"podConditionType":"game.io/healthy"}"#
        );
        probe.marker_policy.clear();
        assert_eq!(
            crate::json::go::to_string(&probe),
            r#"{"name":"healthy","containerName":"main","probe":{"exec":{"command":["ok"]}},"podConditionType":"game.io/healthy"}"#
        );
        assert_eq!(
            crate::json::go::to_string(&PodContainerProbe::default()),
            r#"{"name":"","containerName":"","probe":{}}"#
        );
    }
}
