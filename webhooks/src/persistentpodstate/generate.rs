//! Auto-generation (docs/persistentpodstate.md §4): the PersistentPodState a StatefulSet's annotations ask
//! for ([`desired`]), and what to do about the one of its name there is ([`plan`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::api::persistentpodstate::{
    API_VERSION, AUTO_GENERATE_ANNOTATION, NodeTopologyTerm, PERSISTENT_POD_ANNOTATIONS_ANNOTATION,
    PREFERRED_TOPOLOGY_ANNOTATION, PersistentPodAnnotation, PersistentPodState,
    PersistentPodStateSpec, PreferredTopologyTerm, REQUIRED_TOPOLOGY_ANNOTATION, TargetReference,
};
use crate::api::statefulset::{Flavor, SlimStatefulSet};

/// The weight of the one preferred term a generated PersistentPodState has.
pub const PREFERRED_WEIGHT: i32 = 100;

/// What to do about the PersistentPodState named after a StatefulSet.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Nothing to do.
    Nothing,
    /// The annotation is `true` but neither topology annotation is set: nothing (an existing one stays).
    Incomplete,
    /// A PersistentPodState of the name that the StatefulSet does not control is in the way: left alone.
    Foreign,
    /// Create this one.
    Create(PersistentPodState),
    /// Replace the spec of the existing one: this is it with the spec it should have.
    Update(PersistentPodState),
    /// Delete the one it controls (this uid).
    Delete {
        /// The uid of the PersistentPodState (the deletion's precondition).
        uid: String,
    },
}

/// Go's `strings.Split(value, ",")`: no trimming, empty items kept.
fn split(value: &str) -> Vec<String> {
    value.split(',').map(str::to_owned).collect()
}

/// A non-empty annotation of the StatefulSet.
fn annotation<'s, F: Flavor>(sts: &'s SlimStatefulSet<F>, key: &str) -> Option<&'s str> {
    sts.annotations.get(key).filter(|v| !v.is_empty())
}

/// Whether the StatefulSet asks for a generated PersistentPodState: the annotation is exactly `true`.
pub fn wanted<F: Flavor>(sts: &SlimStatefulSet<F>) -> bool {
    sts.annotations.get(AUTO_GENERATE_ANNOTATION) == Some("true")
}

/// Whether `pps` is controlled by the StatefulSet of uid `uid` (its controller ownerReference).
pub fn controlled_by(pps: &PersistentPodState, uid: &str) -> bool {
    !uid.is_empty()
        && pps
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// The PersistentPodState of §4.2 for a StatefulSet whose annotations ask for one with a topology; `None`
/// otherwise.
pub fn desired<F: Flavor>(sts: &SlimStatefulSet<F>) -> Option<PersistentPodState> {
    if !wanted(sts) {
        return None;
    }
    let required = annotation(sts, REQUIRED_TOPOLOGY_ANNOTATION);
    let preferred = annotation(sts, PREFERRED_TOPOLOGY_ANNOTATION);
    if required.is_none() && preferred.is_none() {
        return None;
    }
    let api_version = F::KIND.api_version();
    let name = sts.name().to_owned();
    Some(PersistentPodState {
        api_version: API_VERSION.to_owned(),
        kind: "PersistentPodState".to_owned(),
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: sts.metadata.namespace.clone(),
            owner_references: Some(vec![OwnerReference {
                api_version: api_version.to_owned(),
                kind: "StatefulSet".to_owned(),
                name: name.clone(),
                uid: sts.uid().to_owned(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        spec: PersistentPodStateSpec {
            target_ref: TargetReference {
                api_version: api_version.to_owned(),
                kind: "StatefulSet".to_owned(),
                name,
            },
            required_persistent_topology: required.map(|v| NodeTopologyTerm { keys: split(v) }),
            preferred_persistent_topology: preferred
                .map(|v| PreferredTopologyTerm {
                    weight: PREFERRED_WEIGHT,
                    preference: NodeTopologyTerm { keys: split(v) },
                })
                .into_iter()
                .collect(),
            persistent_pod_annotations: annotation(sts, PERSISTENT_POD_ANNOTATIONS_ANNOTATION)
                .map(|v| {
                    split(v)
                        .into_iter()
                        .map(|key| PersistentPodAnnotation { key })
                        .collect()
                })
                .unwrap_or_default(),
            persistent_pod_state_retention_policy: None,
        },
        status: None,
    })
}

/// What to do for a StatefulSet, given the PersistentPodState of its name in its namespace (§4.3).
pub fn plan<F: Flavor>(sts: &SlimStatefulSet<F>, existing: Option<&PersistentPodState>) -> Plan {
    if sts.deleting() {
        return Plan::Nothing;
    }
    let ours = existing.filter(|pps| controlled_by(pps, sts.uid()));
    if !wanted(sts) {
        return match ours.and_then(|pps| pps.metadata.uid.clone()) {
            Some(uid) => Plan::Delete { uid },
            None => Plan::Nothing,
        };
    }
    let Some(desired) = desired(sts) else {
        return Plan::Incomplete;
    };
    match (existing, ours) {
        (None, _) => Plan::Create(desired),
        (Some(_), None) => Plan::Foreign,
        (Some(_), Some(pps)) if pps.spec == desired.spec => Plan::Nothing,
        (Some(_), Some(pps)) => {
            let mut updated = pps.clone();
            updated.spec = desired.spec;
            Plan::Update(updated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::statefulset::{Advanced, Native};
    use serde_json::{Value, json};

    fn statefulset<F: Flavor>(annotations: Value) -> SlimStatefulSet<F> {
        serde_json::from_value(
            json!({"metadata": {"name": "web", "namespace": "ns", "uid": "sts-uid",
            "annotations": annotations}, "spec": {"replicas": 3}}),
        )
        .unwrap()
    }

    fn auto(extra: Value) -> Value {
        let mut a = json!({AUTO_GENERATE_ANNOTATION: "true"});
        for (k, v) in extra.as_object().into_iter().flatten() {
            a[k] = v.clone();
        }
        a
    }

    #[test]
    fn scenario_30_the_annotations_make_the_generated_state() {
        let sts = statefulset::<Native>(auto(json!({
            REQUIRED_TOPOLOGY_ANNOTATION: "topology.kubernetes.io/zone",
            PREFERRED_TOPOLOGY_ANNOTATION: "kubernetes.io/hostname,rack",
            PERSISTENT_POD_ANNOTATIONS_ANNOTATION: "ip"})));
        let Plan::Create(pps) = plan(&sts, None) else {
            panic!("a create")
        };
        assert_eq!(
            serde_json::to_value(&pps).unwrap(),
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
                "metadata": {"name": "web", "namespace": "ns", "ownerReferences": [{"apiVersion": "apps/v1",
                    "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": true}]},
                "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
                    "requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]},
                    "preferredPersistentTopology": [{"weight": 100,
                        "preference": {"keys": ["kubernetes.io/hostname", "rack"]}}],
                    "persistentPodAnnotations": [{"key": "ip"}]}})
        );
    }

    #[test]
    fn scenario_35_an_advanced_statefulset_is_named_at_v1beta1() {
        let sts = statefulset::<Advanced>(auto(json!({PREFERRED_TOPOLOGY_ANNOTATION: "zone"})));
        let pps = desired(&sts).unwrap();
        assert_eq!(pps.spec.target_ref.api_version, "apps.kruise.io/v1beta1");
        assert_eq!(
            pps.metadata.owner_references.unwrap()[0].api_version,
            "apps.kruise.io/v1beta1"
        );
        assert!(pps.spec.required_persistent_topology.is_none());
    }

    #[test]
    fn scenario_36_values_split_as_go_does() {
        let sts = statefulset::<Native>(auto(json!({REQUIRED_TOPOLOGY_ANNOTATION: "a,,b "})));
        assert_eq!(
            desired(&sts).unwrap().spec.required_persistent_topology,
            Some(NodeTopologyTerm {
                keys: vec!["a".into(), "".into(), "b ".into()]
            })
        );
    }

    #[test]
    fn scenario_32_no_topology_generates_nothing_and_keeps_what_is_there() {
        let sts = statefulset::<Native>(auto(json!({PERSISTENT_POD_ANNOTATIONS_ANNOTATION: "ip"})));
        assert_eq!(plan(&sts, None), Plan::Incomplete);
        let mut existing = desired(&statefulset::<Native>(auto(
            json!({REQUIRED_TOPOLOGY_ANNOTATION: "zone"}),
        )))
        .unwrap();
        existing.metadata.uid = Some("pps-uid".into());
        assert_eq!(plan(&sts, Some(&existing)), Plan::Incomplete);
        // "True" is not "true".
        let sts = statefulset::<Native>(json!({AUTO_GENERATE_ANNOTATION: "True",
            REQUIRED_TOPOLOGY_ANNOTATION: "zone"}));
        assert_eq!(plan(&sts, None), Plan::Nothing);
    }

    #[test]
    fn scenarios_31_33_34_the_state_it_controls_follows_the_annotations_a_foreign_one_is_left() {
        let zone = statefulset::<Native>(auto(json!({REQUIRED_TOPOLOGY_ANNOTATION: "zone"})));
        let mut ours = desired(&zone).unwrap();
        ours.metadata.uid = Some("pps-uid".into());
        ours.metadata.resource_version = Some("9".into());
        assert_eq!(plan(&zone, Some(&ours)), Plan::Nothing);
        // 33: the required keys changed.
        let host = statefulset::<Native>(auto(json!({REQUIRED_TOPOLOGY_ANNOTATION: "zone,host"})));
        let Plan::Update(updated) = plan(&host, Some(&ours)) else {
            panic!("an update")
        };
        assert_eq!(
            updated.metadata, ours.metadata,
            "same object, same resourceVersion"
        );
        assert_eq!(
            updated.spec.required_persistent_topology.unwrap().keys,
            ["zone", "host"]
        );
        // 31: the annotation removed.
        let off = statefulset::<Native>(json!({REQUIRED_TOPOLOGY_ANNOTATION: "zone"}));
        assert_eq!(
            plan(&off, Some(&ours)),
            Plan::Delete {
                uid: "pps-uid".into()
            }
        );
        assert_eq!(plan(&off, None), Plan::Nothing);
        // 34: a user's own state of that name.
        let mut foreign = ours.clone();
        foreign.metadata.owner_references = None;
        assert_eq!(plan(&host, Some(&foreign)), Plan::Foreign);
        assert_eq!(plan(&off, Some(&foreign)), Plan::Nothing);
        // Another StatefulSet of that name before (another uid) is not this one.
        foreign.metadata.owner_references = ours.metadata.owner_references.clone();
        if let Some(refs) = foreign.metadata.owner_references.as_mut() {
            refs[0].uid = "old-uid".into();
        }
        assert_eq!(plan(&off, Some(&foreign)), Plan::Nothing);
    }

    #[test]
    fn scenario_37_a_statefulset_being_deleted_is_left_to_the_garbage_collector() {
        let mut sts = statefulset::<Native>(json!({}));
        sts.metadata.deletion_timestamp =
            Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
        let mut ours = desired(&statefulset::<Native>(auto(
            json!({REQUIRED_TOPOLOGY_ANNOTATION: "z"}),
        )))
        .unwrap();
        ours.metadata.uid = Some("pps-uid".into());
        assert_eq!(plan(&sts, Some(&ours)), Plan::Nothing);
    }
}
