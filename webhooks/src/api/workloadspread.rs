//! `apps.kruise.io/v1beta1` WorkloadSpread (spec/workloadspread.md §2), as the pod webhooks (subset choice,
//! deletion records) and the WorkloadSpread controller read and write it.
//!
//! **Version.** v1beta1 is typed: it is the CRD's storage version and the hub everything works on (spec §2:
//! webhooks, controller and cache). v1alpha1 differs in two subset field names (`requiredNodeSelectorTerm`,
//! `preferredNodeSelectorTerms`) and in its condition shape; a v1alpha1 object (a validator request of that
//! version) is converted first ([`crate::conversion`], spec §2.5).
//!
//! **Versioned status.** The status holds the subsets twice (spec §2.2, §2.3): `subsetStatuses`, the
//! aggregate over every pod version, written by the controller only, and `versionedSubsetStatuses`, one
//! list per pod version (`pod-template-hash`, or [`VERSION_IGNORED`]), which the pod webhook reads and
//! writes (its `creatingPods` / `deletingPods` records) and the controller recomputes. Both are typed here,
//! with the same element type.
//!
//! **Fields.** Every field of the v1beta1 schema, spec and status. Optional fields are `Option`s or empty
//! collections and are omitted when unset; what the schema requires (`subsets`, the `targetRef` fields, a
//! subset's `name`, a subset status's `name`, `replicas` and `missingReplicas`) is always written, as
//! OpenKruise's Go type does. Fields the schema does not define are ignored when decoding: the CRD's schema
//! is structural, so the apiserver prunes them and a stored object has none.
//!
//! **`patch`.** The one schemaless field, a subset's `patch` (`x-kubernetes-preserve-unknown-fields`, a
//! RawExtension), is kept as the JSON text it came as, a `Box<RawValue>` ([`WorkloadSpreadSubset::patch`]):
//! it is applied to pods as a whole, never read field by field, and its text is a fraction of the size of a
//! decoded tree in a cache of thousands of WorkloadSpreads. serde_json reads a `RawValue` from JSON text or
//! from a `Value`, not from serde's buffered content: no type on the way to it may use `#[serde(flatten)]`
//! (a catch-all `extra` map) or an untagged enum.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::de::nullable;

/// Pod annotation recording the WorkloadSpread and subset a pod was admitted into (compact JSON
/// `{"name":..,"subset":..[,"uid":..]}`).
pub const MATCHED_WORKLOADSPREAD_ANNOTATION: &str = "apps.kruise.io/matched-workloadspread";
/// The version of pods whose workload is not versioned (the key of their `versionedSubsetStatuses` list).
pub const VERSION_IGNORED: &str = "versionIgnored";
/// `scheduleStrategy.type` that reschedules pods stuck unschedulable in a subset.
pub const ADAPTIVE: &str = "Adaptive";
/// `scheduleStrategy.type` that never reschedules (also what `""` means).
pub const FIXED: &str = "Fixed";
/// The subset condition type of the Adaptive strategy.
pub const SUBSET_SCHEDULABLE: &str = "Schedulable";

/// WorkloadSpread is the Schema for the WorkloadSpread API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpread {
    /// `apiVersion`: `apps.kruise.io/v1beta1`.
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    /// `kind`: `WorkloadSpread`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// WorkloadSpreadSpec defines the desired state of WorkloadSpread.
    #[serde(default)]
    pub spec: WorkloadSpreadSpec,
    /// WorkloadSpreadStatus defines the observed state of WorkloadSpread; `None` until first written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkloadSpreadStatus>,
}

/// `spec`: WorkloadSpreadSpec defines the desired state of WorkloadSpread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSpec {
    /// TargetReference is the target workload that WorkloadSpread want to control (required by the
    /// schema; `None` only in an object the validator rejects, and then omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<TargetReference>,
    /// TargetFilter allows WorkloadSpread to manage only a portion of the Pods in the TargetReference: by
    /// specifying the criteria for the Pods to be managed through a label selector, and by specifying how to
    /// obtain the total number of these selected Pods from the workload using replicasPaths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_filter: Option<TargetFilter>,
    /// Subsets describes the pods distribution details between each of subsets (merge key `name`).
    #[serde(default, deserialize_with = "nullable")]
    pub subsets: Vec<WorkloadSpreadSubset>,
    /// ScheduleStrategy indicates the strategy the WorkloadSpread used to perform the schedule between each
    /// of subsets. Omitted when it says nothing (no type, no adaptive parameters).
    #[serde(
        default,
        skip_serializing_if = "WorkloadSpreadScheduleStrategy::is_unset",
        deserialize_with = "nullable"
    )]
    pub schedule_strategy: WorkloadSpreadScheduleStrategy,
}

/// `spec.targetRef`: the target workload, in the WorkloadSpread's namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// API version of the referent.
    #[serde(default)]
    pub api_version: String,
    /// Kind of the referent.
    #[serde(default)]
    pub kind: String,
    /// Name of the referent.
    #[serde(default)]
    pub name: String,
}

/// `spec.targetFilter`: which of the target's pods are managed, and how many there should be (spec §2.4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetFilter {
    /// Selector is used to filter the Pods to be managed (a missing selector means no pod for the webhook,
    /// no filtering for the controller: spec §2.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// ReplicasPathList is a list of resource paths used to specify how to determine the total number of
    /// replicas of the target workload after filtering: the sum of the integers at these dot-separated paths
    /// of the workload (numbers index arrays, like "subsets.1.replicas").
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub replicas_path_list: Vec<String>,
}

/// `spec.scheduleStrategy`: WorkloadSpreadScheduleStrategy defines the schedule performance of
/// WorkloadSpread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadScheduleStrategy {
    /// Type indicates the type of the WorkloadSpreadScheduleStrategy: [`ADAPTIVE`], [`FIXED`] or `""`.
    /// Default is Fixed.
    #[serde(
        default,
        rename = "type",
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub type_: String,
    /// Adaptive is used to communicate parameters when Type is Adaptive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveWorkloadSpreadStrategy>,
}

impl WorkloadSpreadScheduleStrategy {
    /// No type and no adaptive parameters: what an absent `scheduleStrategy` means.
    pub fn is_unset(&self) -> bool {
        self.type_.is_empty() && self.adaptive.is_none()
    }

    /// `type` is [`ADAPTIVE`].
    pub fn is_adaptive(&self) -> bool {
        self.type_ == ADAPTIVE
    }
}

/// `spec.scheduleStrategy.adaptive`: parameters of the Adaptive strategy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveWorkloadSpreadStrategy {
    /// DisableSimulationSchedule indicates whether to disable the feature of simulation schedule. Default
    /// is false. (Accepted, but no OpenKruise version implements simulation scheduling: spec §2.1.)
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "nullable"
    )]
    pub disable_simulation_schedule: bool,
    /// RescheduleCriticalSeconds indicates how long controller will reschedule a schedule failed Pod to the
    /// subset that has redundant capacity after the subset where the Pod lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_critical_seconds: Option<i32>,
}

/// One `spec.subsets` entry: WorkloadSpreadSubset defines the details of a subset.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubset {
    /// Name should be unique between all of the subsets under one WorkloadSpread.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// Indicates the node required selector to form the subset (v1alpha1: `requiredNodeSelectorTerm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_node_selector: Option<NodeSelectorTerm>,
    /// Indicates the node preferred selector to form the subset (v1alpha1: `preferredNodeSelectorTerms`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub preferred_node_selector: Vec<PreferredSchedulingTerm>,
    /// Indicates the tolerations the pods under this subset have.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub tolerations: Vec<Toleration>,
    /// MaxReplicas indicates the desired max replicas of this subset: a count or a percentage of the
    /// workload's replicas; `None` is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<IntOrString>,
    /// Patch indicates patching podTemplate to the Pod: schemaless JSON (a strategic merge patch), kept as
    /// the text it was decoded from. Decode it from a `serde_json` text or `Value` (as the watch and the
    /// fixture cluster do); a `RawValue` cannot be read from other formats (YAML) directly. A JSON `null`
    /// reads as `None`, as Go's RawExtension does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Box<RawValue>>,
}

impl WorkloadSpreadSubset {
    /// The text of `patch` (`None` when absent).
    pub fn patch_text(&self) -> Option<&str> {
        self.patch.as_deref().map(RawValue::get)
    }
}

/// Equal when every field is, `patch` compared as text (the same patch spelled differently differs).
impl PartialEq for WorkloadSpreadSubset {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.required_node_selector == other.required_node_selector
            && self.preferred_node_selector == other.preferred_node_selector
            && self.tolerations == other.tolerations
            && self.max_replicas == other.max_replicas
            && self.patch_text() == other.patch_text()
    }
}

/// `status`: WorkloadSpreadStatus defines the observed state of WorkloadSpread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadStatus {
    /// ObservedGeneration is the most recent generation observed for this WorkloadSpread. It corresponds to
    /// the WorkloadSpread's generation, which is updated on mutation by the API Server. Omitted when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
    /// Contains the status of each subset, in spec order: the aggregate over all pod versions, written by
    /// the controller only.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub subset_statuses: Vec<WorkloadSpreadSubsetStatus>,
    /// VersionedSubsetStatuses is to solve rolling-update problems, where the creation of new-version pod
    /// may be earlier than deletion of old-version pod: the pod subset distribution for each version (pod
    /// version to subset statuses), read and written by the pod webhook and the controller.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub versioned_subset_statuses: BTreeMap<String, Vec<WorkloadSpreadSubsetStatus>>,
}

/// WorkloadSpreadSubsetStatus defines the observed state of subset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubsetStatus {
    /// Name should be unique between all of the subsets under one WorkloadSpread.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// Replicas is the most recently observed number of active replicas for subset.
    #[serde(default, deserialize_with = "nullable")]
    pub replicas: i32,
    /// Conditions is an array of current observed subset conditions (a list map keyed by `type`; only
    /// [`SUBSET_SCHEDULABLE`] is written, under the Adaptive strategy).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub conditions: Vec<Condition>,
    /// MissingReplicas is the number of active replicas belong to this subset not be found: > 0 the subset
    /// is still missing that many pods, 0 it has enough, -1 its MaxReplicas is not set (no limit).
    #[serde(default, deserialize_with = "nullable")]
    pub missing_replicas: i32,
    /// CreatingPods contains information about pods whose creation was processed by the webhook handler but
    /// not yet been observed by the WorkloadSpread controller: pod name (or the generated UID of a pod that
    /// had no name) to the time the webhook processed the creation. Expired by the controller after a while.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub creating_pods: BTreeMap<String, Time>,
    /// DeletingPods is similar with CreatingPods and it contains information about pod deletion.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub deleting_pods: BTreeMap<String, Time>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

resource!(
    WorkloadSpread,
    "apps.kruise.io/v1beta1",
    "apps.kruise.io",
    "v1beta1",
    "WorkloadSpread",
    "workloadspreads",
    NamespaceResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::{Value, json};

    fn subset_status(name: &str, replicas: i32, missing: i32) -> Value {
        json!({
            "name": name, "replicas": replicas, "missingReplicas": missing,
            "conditions": [{"type": SUBSET_SCHEDULABLE, "status": "False", "observedGeneration": 4,
                            "lastTransitionTime": "2025-01-02T03:00:00Z", "reason": "PodUnschedulable",
                            "message": "no node fits"}],
            "creatingPods": {"web-a": "2025-01-02T03:04:05Z", "0b1c2d3e-uid": "2025-01-02T03:04:06Z"},
            "deletingPods": {"web-b": "2025-01-02T03:04:07Z"}
        })
    }

    fn full() -> Value {
        json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
            "metadata": {"name": "spread", "namespace": "ns", "generation": 4},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "targetFilter": {
                    "selector": {"matchLabels": {"role": "worker"},
                                 "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]},
                    "replicasPathList": ["spec.tfReplicaSpecs.Worker.replicas", "spec.subsets.1.replicas"]
                },
                "subsets": [
                    {
                        "name": "zone-a",
                        "requiredNodeSelector": {
                            "matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}],
                            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]
                        },
                        "preferredNodeSelector": [
                            {"weight": 10, "preference": {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}},
                            {"weight": 90, "preference": {
                                "matchExpressions": [{"key": "cpu", "operator": "Gt", "values": ["8"]}],
                                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}}
                        ],
                        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web",
                                         "effect": "NoExecute", "tolerationSeconds": 60}],
                        "maxReplicas": 3,
                        "patch": {"metadata": {"labels": {"zone": "a"}},
                                  "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "1"}}}]}}
                    },
                    {"name": "zone-b", "maxReplicas": "50%"},
                    {"name": "elastic"}
                ],
                "scheduleStrategy": {"type": "Adaptive",
                                     "adaptive": {"disableSimulationSchedule": true, "rescheduleCriticalSeconds": 30}}
            },
            "status": {
                "observedGeneration": 4,
                "subsetStatuses": [subset_status("zone-a", 3, 0), {"name": "zone-b", "replicas": 1, "missingReplicas": 2}],
                "versionedSubsetStatuses": {
                    "7d9f8c6b5": [subset_status("zone-a", 2, 1)],
                    VERSION_IGNORED: [{"name": "elastic", "replicas": 0, "missingReplicas": -1}]
                }
            }
        })
    }

    #[test]
    fn the_example_fills_every_field_of_the_v1beta1_schema() {
        let crd = include_str!("../../../deploy/base/crds/apps.kruise.io_workloadspreads.yaml");
        let missing = crate::api::crd_schema::unexercised(crd, "v1beta1", &full());
        assert!(missing.is_empty(), "not in the example: {missing:?}");
    }

    #[test]
    fn every_field_of_the_crd_survives_a_round_trip() {
        let stored = full();
        let spread: WorkloadSpread = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(
            spread.spec.target_ref.as_ref().map(|t| t.name.as_str()),
            Some("web")
        );
        assert!(spread.spec.schedule_strategy.is_adaptive());
        let status = spread.status.as_ref().unwrap();
        assert_eq!(status.versioned_subset_statuses.len(), 2);
        assert_eq!(
            status.subset_statuses[0].conditions[0].reason,
            "PodUnschedulable"
        );
        assert_eq!(serde_json::to_value(&spread).unwrap(), stored);
        // The same from text, as the watch decodes it.
        let from_text: WorkloadSpread = serde_json::from_str(&stored.to_string()).unwrap();
        assert_eq!(from_text, spread);
        assert_eq!(serde_json::to_value(&from_text).unwrap(), stored);
    }

    #[test]
    fn max_replicas_is_a_count_or_a_percentage() {
        let spread: WorkloadSpread = serde_json::from_value(full()).unwrap();
        let max: Vec<_> = spread
            .spec
            .subsets
            .iter()
            .map(|s| s.max_replicas.clone())
            .collect();
        assert_eq!(
            max,
            [
                Some(IntOrString::Int(3)),
                Some(IntOrString::String("50%".into())),
                None
            ]
        );
    }

    #[test]
    fn patch_keeps_its_text_and_every_field_in_it() {
        let text = r#"{"targetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"subsets":[{"name":"a","patch":{ "metadata" : {"labels":{"x":"y"}}, "futureField": [1, 2.50] }},{"name":"b","patch":null}]}"#;
        let spec: WorkloadSpreadSpec = serde_json::from_str(text).unwrap();
        assert_eq!(
            spec.subsets[0].patch_text(),
            Some(r#"{ "metadata" : {"labels":{"x":"y"}}, "futureField": [1, 2.50] }"#)
        );
        assert_eq!(spec.subsets[1].patch_text(), None);
        let written = serde_json::to_string(&spec).unwrap();
        assert!(written.contains(
            r#""patch":{ "metadata" : {"labels":{"x":"y"}}, "futureField": [1, 2.50] }"#
        ));
        // From a Value (the fixture cluster's path), the text is the Value written compactly.
        let tree: Value = serde_json::from_str(text).unwrap();
        let from_value: WorkloadSpreadSpec = serde_json::from_value(tree.clone()).unwrap();
        let patch = from_value.subsets[0].patch_text().unwrap();
        assert!(!patch.contains(' '));
        assert_eq!(
            serde_json::from_str::<Value>(patch).unwrap(),
            tree["subsets"][0]["patch"]
        );
        // Compared as text.
        assert_ne!(from_value.subsets[0], spec.subsets[0]);
        assert_eq!(from_value.subsets[1], spec.subsets[1]);
    }

    #[test]
    fn missing_fields_take_their_zero_values() {
        let spread: WorkloadSpread =
            serde_json::from_value(json!({"metadata": {"name": "s", "namespace": "ns"}})).unwrap();
        assert_eq!(spread.spec, WorkloadSpreadSpec::default());
        assert_eq!(spread.status, None);
        assert!(spread.spec.schedule_strategy.is_unset());
        assert!(!spread.spec.schedule_strategy.is_adaptive());
        // What the schema requires is written, the rest omitted.
        assert_eq!(
            serde_json::to_value(&spread.spec).unwrap(),
            json!({"subsets": []})
        );
        let subset: WorkloadSpreadSubset = serde_json::from_value(json!({"name": "a"})).unwrap();
        assert_eq!(
            (
                subset.required_node_selector.is_none(),
                subset.preferred_node_selector.is_empty(),
                subset.tolerations.is_empty(),
                subset.max_replicas.is_none(),
                subset.patch.is_none()
            ),
            (true, true, true, true, true)
        );
        let status: WorkloadSpreadSubsetStatus =
            serde_json::from_value(json!({"name": "a"})).unwrap();
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"name": "a", "replicas": 0, "missingReplicas": 0})
        );
        // Nulls read as the zero value, as Go's encoding/json does.
        let nulls: WorkloadSpreadStatus = serde_json::from_value(json!({
            "subsetStatuses": null, "versionedSubsetStatuses": null,
        }))
        .unwrap();
        assert_eq!(nulls, WorkloadSpreadStatus::default());
        assert_eq!(serde_json::to_value(&nulls).unwrap(), json!({}));
        let strategy: WorkloadSpreadSpec =
            serde_json::from_value(json!({"subsets": null, "scheduleStrategy": {"type": "Fixed"}}))
                .unwrap();
        assert!(strategy.subsets.is_empty() && !strategy.schedule_strategy.is_unset());
    }

    #[test]
    fn pod_maps_hold_timestamps_per_version() {
        let spread: WorkloadSpread = serde_json::from_value(full()).unwrap();
        let status = spread.status.unwrap();
        let at = |s: &str| Time(s.parse::<Timestamp>().unwrap());
        let versioned = &status.versioned_subset_statuses["7d9f8c6b5"][0];
        assert_eq!(
            versioned.creating_pods["0b1c2d3e-uid"],
            at("2025-01-02T03:04:06Z")
        );
        assert_eq!(versioned.deleting_pods["web-b"], at("2025-01-02T03:04:07Z"));
        assert_eq!(
            status.versioned_subset_statuses[VERSION_IGNORED][0].missing_replicas,
            -1
        );
        // An empty map is omitted, as Go's omitempty does (the mock and old controllers write `{}`).
        let empty: WorkloadSpreadSubsetStatus = serde_json::from_value(
            json!({"name": "a", "replicas": 1, "missingReplicas": 0, "creatingPods": {}, "deletingPods": {}}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&empty).unwrap(),
            json!({"name": "a", "replicas": 1, "missingReplicas": 0})
        );
    }

    #[test]
    fn fields_the_schema_does_not_define_are_ignored() {
        let mut stored = full();
        stored["spec"]["futureSpecField"] = json!({"x": 1});
        stored["spec"]["targetRef"]["uid"] = json!("u");
        stored["spec"]["subsets"][0]["futureSubsetField"] = json!([1]);
        stored["spec"]["scheduleStrategy"]["adaptive"]["future"] = json!(2);
        stored["status"]["futureStatusField"] = json!("z");
        stored["status"]["versionedSubsetStatuses"][VERSION_IGNORED][0]["future"] = json!(null);
        let spread: WorkloadSpread = serde_json::from_str(&stored.to_string()).unwrap();
        assert_eq!(serde_json::to_value(&spread).unwrap(), full());
    }
}
