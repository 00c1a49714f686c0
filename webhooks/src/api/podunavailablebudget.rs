//! `policy.kruise.io/v1beta1` PodUnavailableBudget (spec/podunavailablebudget.md §2), as the PUB gate and
//! the PUB status controller read and write it.
//!
//! **Version.** v1beta1 is typed: it is the CRD's storage version, the version the status controller watches
//! and writes (spec §3: `policy.kruise.io/v1beta1 PodUnavailableBudget`), and the only one with
//! `protectOperations`, `protectTotalReplicas` and `ignoredPodSelector`. v1alpha1 carries the first two as
//! annotations ([`PROTECT_OPERATIONS_ANNOTATION`], [`PROTECT_TOTAL_REPLICAS_ANNOTATION`]); a v1alpha1
//! object (a validator request of that version) is converted first ([`crate::conversion`], spec §2.4).
//!
//! **Fields.** Every field of the v1beta1 schema, spec and status. Optional fields are `Option`s or empty
//! collections and are omitted when unset; the four counters of the status are always written, as
//! OpenKruise's Go type does, and `observedGeneration` is omitted when 0 (Go's `omitempty`). Fields the
//! schema does not define are ignored when decoding: the CRD's schema is structural, so the apiserver prunes
//! them and a stored object has none.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use crate::de::nullable;

/// Deprecated v1alpha1 carrier of `spec.protectOperations` on the PUB: comma-separated operations.
pub const PROTECT_OPERATIONS_ANNOTATION: &str = "kruise.io/pub-protect-operations";
/// Deprecated v1alpha1 carrier of `spec.protectTotalReplicas` on the PUB: a decimal int32.
pub const PROTECT_TOTAL_REPLICAS_ANNOTATION: &str = "pub.kruise.io/protect-total-replicas";
/// Pod annotation naming the PUB that guards the pod.
pub const RELATED_PUB_ANNOTATION: &str = "pub.kruise.io/related-pub";
/// Legacy twin of [`RELATED_PUB_ANNOTATION`], written with it and read as a fallback.
pub const DEPRECATED_RELATED_PUB_ANNOTATION: &str = "kruise.io/related-pub";
/// Pod annotation whose boolean-true value exempts the pod from every PUB (deprecated for
/// `spec.ignoredPodSelector`, still honoured).
pub const NO_PROTECT_ANNOTATION: &str = "pub.kruise.io/no-protect";
/// Prefix of the pod labels that make a pod count as unavailable even when Ready.
pub const UNAVAILABLE_POD_LABEL_PREFIX: &str = "unavailable-pod.kruise.io/";

/// `protectOperations` entry: pod deletion.
pub const OPERATION_DELETE: &str = "DELETE";
/// `protectOperations` entry: in-place update of the pod.
pub const OPERATION_UPDATE: &str = "UPDATE";
/// `protectOperations` entry: eviction.
pub const OPERATION_EVICT: &str = "EVICT";
/// `protectOperations` entry: in-place resize.
pub const OPERATION_RESIZE: &str = "RESIZE";

/// PodUnavailableBudget is the Schema for the podunavailablebudgets API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodUnavailableBudget {
    /// `apiVersion`: `policy.kruise.io/v1beta1`.
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    /// `kind`: `PodUnavailableBudget`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// PodUnavailableBudgetSpec defines the desired state of PodUnavailableBudget.
    #[serde(default)]
    pub spec: PodUnavailableBudgetSpec,
    /// PodUnavailableBudgetStatus defines the observed state of PodUnavailableBudget; `None` until the
    /// controller first writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodUnavailableBudgetStatus>,
}

/// `spec`: PodUnavailableBudgetSpec defines the desired state of PodUnavailableBudget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetSpec {
    /// Selector label query over pods managed by the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// TargetReference contains enough information to let you identify a workload for
    /// PodUnavailableBudget. Selector and TargetReference are mutually exclusive, TargetReference is
    /// priority to take effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<TargetReference>,
    /// Delete pod, evict pod or update pod specification is allowed if at most "maxUnavailable" pods
    /// selected by "selector" or "targetRef" are unavailable after the above operation for pod.
    /// MaxUnavailable and MinAvailable are mutually exclusive, MaxUnavailable is priority to take effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Delete pod, evict pod or update pod specification is allowed if at least "minAvailable" pods
    /// selected by "selector" or "targetRef" will still be available after the above operation for pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// ProtectOperations declares which voluntary disruption operations are protected by this PUB
    /// (`DELETE`, `UPDATE`, `EVICT`, `RESIZE`: the `OPERATION_*` constants). When empty, DELETE, UPDATE and
    /// EVICT are protected by default. Kept as text: an operation a newer CRD adds must not make the whole
    /// object undecodable (and with it the cache's list).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub protect_operations: Vec<String>,
    /// ProtectTotalReplicas overrides the expected workload replicas when pods do not have workload
    /// management or the workload does not expose the scale subresource (minimum 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect_total_replicas: Option<i32>,
    /// IgnoredPodSelector selects pods that should always bypass PUB protection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored_pod_selector: Option<LabelSelector>,
}

/// `spec.targetRef`: TargetReference contains enough information to let you identify a workload for
/// PodUnavailableBudget. Every field is optional in the schema and omitted when empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of the referent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name of the referent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `status`: PodUnavailableBudgetStatus defines the observed state of PodUnavailableBudget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetStatus {
    /// Most recent generation observed when updating this PUB status. UnavailableAllowed and other status
    /// information is valid only if observedGeneration equals to PUB's object generation. Omitted when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
    /// DisruptedPods contains information about pods whose eviction or deletion was processed by the API
    /// handler but has not yet been observed by the PodUnavailableBudget (pod name to admission time).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub disrupted_pods: BTreeMap<String, Time>,
    /// UnavailablePods contains information about pods whose specification changed (inplace-update pod),
    /// once pod is available (consistent and ready) again, it will be removed from the list.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub unavailable_pods: BTreeMap<String, Time>,
    /// UnavailableAllowed number of pod unavailable that are currently allowed.
    #[serde(default)]
    pub unavailable_allowed: i32,
    /// CurrentAvailable current number of available pods.
    #[serde(default)]
    pub current_available: i32,
    /// DesiredAvailable minimum desired number of available pods.
    #[serde(default)]
    pub desired_available: i32,
    /// TotalReplicas total number of pods counted by this unavailable budget.
    #[serde(default)]
    pub total_replicas: i32,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

resource!(
    PodUnavailableBudget,
    "policy.kruise.io/v1beta1",
    "policy.kruise.io",
    "v1beta1",
    "PodUnavailableBudget",
    "podunavailablebudgets",
    NamespaceResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::{Value, json};

    fn full() -> Value {
        json!({
            "apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "web", "namespace": "ns", "generation": 3,
                         "annotations": {PROTECT_TOTAL_REPLICAS_ANNOTATION: "9"}},
            "spec": {
                "selector": {"matchLabels": {"app": "web"},
                             "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxUnavailable": "25%",
                "minAvailable": 2,
                "protectOperations": ["DELETE", "EVICT", "RESIZE", "UPDATE"],
                "protectTotalReplicas": 10,
                "ignoredPodSelector": {"matchLabels": {"canary": "true"},
                                       "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["stable"]}]}
            },
            "status": {
                "observedGeneration": 3,
                "disruptedPods": {"web-1": "2025-01-02T03:04:05Z", "web-2": "2025-01-02T03:04:06Z"},
                "unavailablePods": {"web-3": "2025-01-02T03:04:07Z"},
                "unavailableAllowed": 1, "currentAvailable": 8, "desiredAvailable": 7, "totalReplicas": 10
            }
        })
    }

    #[test]
    fn the_example_fills_every_field_of_the_v1beta1_schema() {
        let crd =
            include_str!("../../../deploy/base/crds/policy.kruise.io_podunavailablebudgets.yaml");
        let missing = crate::api::crd_schema::unexercised(crd, "v1beta1", &full());
        assert!(missing.is_empty(), "not in the example: {missing:?}");
    }

    #[test]
    fn every_field_of_the_crd_survives_a_round_trip() {
        let stored = full();
        let budget: PodUnavailableBudget = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(
            budget.spec.target_ref.as_ref().map(|t| t.kind.as_str()),
            Some("Deployment")
        );
        assert_eq!(budget.spec.protect_operations.len(), 4);
        assert_eq!(budget.spec.protect_total_replicas, Some(10));
        assert_eq!(serde_json::to_value(&budget).unwrap(), stored);
        // The same from text, as the watch decodes it.
        let from_text: PodUnavailableBudget = serde_json::from_str(&stored.to_string()).unwrap();
        assert_eq!(from_text, budget);
    }

    #[test]
    fn max_unavailable_and_min_available_are_int_or_string() {
        let spec = |v: Value| -> PodUnavailableBudgetSpec { serde_json::from_value(v).unwrap() };
        let ints = spec(json!({"maxUnavailable": 1, "minAvailable": 0}));
        assert_eq!(ints.max_unavailable, Some(IntOrString::Int(1)));
        assert_eq!(ints.min_available, Some(IntOrString::Int(0)));
        let percents = spec(json!({"maxUnavailable": "50%", "minAvailable": "100%"}));
        assert_eq!(
            percents.max_unavailable,
            Some(IntOrString::String("50%".into()))
        );
        assert_eq!(
            percents.min_available,
            Some(IntOrString::String("100%".into()))
        );
        // A string that is a number stays a string (the gate parses it as Go's intstr does).
        let text = spec(json!({"maxUnavailable": "3"}));
        assert_eq!(text.max_unavailable, Some(IntOrString::String("3".into())));
        assert_eq!(
            serde_json::to_value(&text).unwrap(),
            json!({"maxUnavailable": "3"})
        );
    }

    #[test]
    fn missing_fields_take_their_zero_values() {
        let budget: PodUnavailableBudget =
            serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "ns"}}))
                .unwrap();
        assert_eq!(budget.spec, PodUnavailableBudgetSpec::default());
        assert_eq!(budget.status, None);
        assert!(budget.spec.protect_operations.is_empty());
        // Nulls read as the zero value, as Go's encoding/json does.
        let status: PodUnavailableBudgetStatus = serde_json::from_value(
            json!({"disruptedPods": null, "unavailablePods": null, "unavailableAllowed": 2}),
        )
        .unwrap();
        assert!(status.disrupted_pods.is_empty() && status.unavailable_pods.is_empty());
        assert_eq!(
            (status.observed_generation, status.unavailable_allowed),
            (0, 2)
        );
    }

    #[test]
    fn status_writes_the_counters_always_and_omits_what_is_empty() {
        let status = PodUnavailableBudgetStatus::default();
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"unavailableAllowed": 0, "currentAvailable": 0, "desiredAvailable": 0, "totalReplicas": 0})
        );
    }

    #[test]
    fn pod_maps_hold_timestamps() {
        let budget: PodUnavailableBudget = serde_json::from_value(full()).unwrap();
        let status = budget.status.unwrap();
        let at = |s: &str| Time(s.parse::<Timestamp>().unwrap());
        assert_eq!(status.disrupted_pods["web-2"], at("2025-01-02T03:04:06Z"));
        assert_eq!(status.unavailable_pods["web-3"], at("2025-01-02T03:04:07Z"));
        // Written back as Go writes metav1.Time: UTC, whole seconds.
        let other: PodUnavailableBudgetStatus = serde_json::from_value(
            json!({"disruptedPods": {"p": "2025-01-02T05:04:05.750+02:00"}}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&other).unwrap()["disruptedPods"],
            json!({"p": "2025-01-02T03:04:05Z"})
        );
        let bad = serde_json::from_value::<PodUnavailableBudgetStatus>(
            json!({"disruptedPods": {"p": "yesterday"}}),
        );
        assert!(bad.is_err());
    }

    #[test]
    fn fields_the_schema_does_not_define_are_ignored() {
        let mut stored = full();
        stored["futureTopLevel"] = json!(1);
        stored["spec"]["futureSpecField"] = json!({"x": [1, 2]});
        stored["spec"]["targetRef"]["futureRefField"] = json!("y");
        stored["status"]["futureStatusField"] = json!(true);
        let budget: PodUnavailableBudget = serde_json::from_value(stored).unwrap();
        assert_eq!(serde_json::to_value(&budget).unwrap(), full());
    }
}
