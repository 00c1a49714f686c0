//! The pod-readiness controller's decisions (docs/pod-readiness.md): whether a pod's `KruisePodReady` condition
//! needs a write, and the status patch that makes it. Pure: the controller (`src/controller/pod_readiness.rs`)
//! reads the pod from the cache and sends the patch.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::pod::{KRUISE_POD_READY, SlimPod, SlimPodCondition};

/// A not-ready key another writer recorded in the condition's message (OpenKruise's `podreadiness.Message`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotReadyKey {
    /// Who recorded it (e.g. `ContainerRecreateRequest`, `Lifecycle`).
    #[serde(default)]
    pub user_agent: String,
    /// What it is about.
    #[serde(default)]
    pub key: String,
}

/// The not-ready keys of a condition message: none for an empty or unparsable one (as Go ignores the
/// `Unmarshal` error).
pub fn keys(message: Option<&str>) -> Vec<NotReadyKey> {
    message
        .filter(|m| !m.is_empty())
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_default()
}

/// What the controller writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// The condition is missing: add it `True` (§4.1).
    Initialise,
    /// The condition is `True` while keys are recorded: make it `False`, its message kept (§4.3).
    MarkNotReady,
}

/// The pod's `KruisePodReady` condition, if it has one.
pub fn condition(pod: &SlimPod) -> Option<&SlimPodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == KRUISE_POD_READY)
}

/// Whether the pod carries the readiness gate `KruisePodReady`.
pub fn has_gate(pod: &SlimPod) -> bool {
    pod.spec.as_ref().is_some_and(|s| s.kruise_pod_ready_gate)
}

/// What `pod` needs written, if anything (§4): nothing without the gate or while it is being deleted.
pub fn decide(pod: &SlimPod) -> Option<Write> {
    if !has_gate(pod) || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    match condition(pod) {
        None => Some(Write::Initialise),
        Some(c) if c.status == "True" && !keys(c.message.as_deref()).is_empty() => {
            Some(Write::MarkNotReady)
        }
        Some(_) => None,
    }
}

/// The strategic-merge patch of the status subresource for `write`, on the pod's `resource_version` (a pod
/// changed since answers 409, §4.2), at time `now` (RFC 3339, seconds).
pub fn status_patch(write: Write, resource_version: Option<&str>, now: &str) -> Value {
    let status = match write {
        Write::Initialise => "True",
        Write::MarkNotReady => "False",
    };
    let mut patch = json!({"status": {"conditions": [
        {"type": KRUISE_POD_READY, "status": status, "lastTransitionTime": now}]}});
    if let Some(rv) = resource_version {
        patch["metadata"] = json!({"resourceVersion": rv});
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(gate: bool, condition: Option<Value>) -> SlimPod {
        let mut pod = json!({"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"containers": [{"name": "app"}],
                "readinessGates": [{"conditionType": "Other"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        if gate {
            pod["spec"]["readinessGates"]
                .as_array_mut()
                .unwrap()
                .push(json!({"conditionType": "KruisePodReady"}));
        }
        if let Some(c) = condition {
            pod["status"]["conditions"].as_array_mut().unwrap().push(c);
        }
        serde_json::from_value(pod).unwrap()
    }

    const KEYED: &str = r#"[{"userAgent":"ContainerRecreateRequest","key":"ns/crr-1"}]"#;

    #[test]
    fn scenario_1_the_first_condition_is_true() {
        let p = pod(true, None);
        assert!(has_gate(&p));
        assert_eq!(decide(&p), Some(Write::Initialise));
        assert_eq!(
            status_patch(Write::Initialise, Some("7"), "2026-12-06T00:00:00Z"),
            json!({"metadata": {"resourceVersion": "7"}, "status": {"conditions": [{"type": "KruisePodReady",
                "status": "True", "lastTransitionTime": "2026-12-06T00:00:00Z"}]}})
        );
    }

    #[test]
    fn scenario_2_no_gate_nothing() {
        assert!(!has_gate(&pod(false, None)));
        assert_eq!(decide(&pod(false, None)), None);
        let keyed = json!({"type": "KruisePodReady", "status": "True", "message": KEYED});
        assert_eq!(decide(&pod(false, Some(keyed))), None);
    }

    #[test]
    fn scenario_3_a_condition_with_its_key_is_left_to_its_writer() {
        let c = json!({"type": "KruisePodReady", "status": "False", "message": KEYED});
        assert_eq!(decide(&pod(true, Some(c))), None);
        // Created by a writer adding a key: no status yet.
        let c = json!({"type": "KruisePodReady", "message": KEYED});
        assert_eq!(decide(&pod(true, Some(c))), None);
    }

    #[test]
    fn scenario_4_true_with_a_key_is_repaired() {
        let c = json!({"type": "KruisePodReady", "status": "True", "message": KEYED});
        let p = pod(true, Some(c));
        assert_eq!(
            keys(condition(&p).unwrap().message.as_deref()),
            [NotReadyKey {
                user_agent: "ContainerRecreateRequest".into(),
                key: "ns/crr-1".into()
            }]
        );
        assert_eq!(decide(&p), Some(Write::MarkNotReady));
        let patch = status_patch(Write::MarkNotReady, Some("7"), "2026-12-06T00:00:00Z");
        assert_eq!(patch["status"]["conditions"][0]["status"], "False");
        // The message is not in the patch: the strategic merge keeps it.
        assert!(patch["status"]["conditions"][0].get("message").is_none());
    }

    #[test]
    fn scenario_5_emptied_by_its_writer_nothing() {
        for message in ["[]", "", "not json"] {
            let c = json!({"type": "KruisePodReady", "status": "True", "message": message});
            assert_eq!(decide(&pod(true, Some(c))), None, "{message:?}");
        }
        let c = json!({"type": "KruisePodReady", "status": "False", "message": "[]"});
        assert_eq!(decide(&pod(true, Some(c))), None);
    }

    #[test]
    fn scenario_6_being_deleted_nothing() {
        let mut p = pod(true, None);
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        assert_eq!(decide(&p), None);
    }

    #[test]
    fn the_gate_survives_a_round_trip_of_the_slim_pod() {
        let p = pod(true, None);
        let back: SlimPod = serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert!(has_gate(&back));
        let none = pod(false, None);
        let text = serde_json::to_value(&none).unwrap();
        assert!(text["spec"].get("readinessGates").is_none(), "{text}");
    }
}
