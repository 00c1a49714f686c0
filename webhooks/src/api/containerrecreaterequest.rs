//! ContainerRecreateRequest (`apps.kruise.io/v1beta1`, shared/crds): what the Job sidecar terminator creates
//! and reads back (spec/sidecar-terminator.md §6.1). The fields it reads are typed; every other field of
//! the object, its spec, its containers and its status is kept as received (`extra`), so a CRR decoded and
//! encoded again loses nothing.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The CRR API version the terminator writes and watches (OpenKruise master, §6.1).
pub const API_VERSION: &str = "apps.kruise.io/v1beta1";
/// Label kruise-daemon selects its node's CRRs on (`crr.apps.kruise.io/node-name=<node>`).
pub const NODE_NAME_LABEL: &str = "crr.apps.kruise.io/node-name";
/// Label kruise-daemon selects active CRRs on (`crr.apps.kruise.io/active=true`).
pub const ACTIVE_LABEL: &str = "crr.apps.kruise.io/active";
/// Label kruise-daemon groups a pod's CRRs by (`crr.apps.kruise.io/pod-name=<pod>`).
pub const POD_NAME_LABEL: &str = "crr.apps.kruise.io/pod-name";
/// Label kruise-daemon reads the pod uid from (`crr.apps.kruise.io/pod-uid=<uid>`).
pub const POD_UID_LABEL: &str = "crr.apps.kruise.io/pod-uid";
/// v1alpha1 annotation recording when the pod was forced not-ready for `unreadyGracePeriodSeconds` (immutable
/// once set; in v1beta1 the condition `status.conditions[PodUnreadyAcquired]`).
pub const UNREADY_ACQUIRED_ANNOTATION: &str = "crr.apps.kruise.io/unready-acquired";
/// `status.phase` once kruise-daemon (or the manager's deadline) finished with the CRR.
pub const PHASE_COMPLETED: &str = "Completed";

/// A ContainerRecreateRequest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequest {
    /// `apiVersion`.
    #[serde(default)]
    pub api_version: String,
    /// `kind`.
    #[serde(default)]
    pub kind: String,
    /// `metadata`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default)]
    pub spec: ContainerRecreateRequestSpec,
    /// `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ContainerRecreateRequestStatus>,
}

/// `spec`: the pod and its containers to recreate; the rest kept as received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestSpec {
    /// `podName`.
    #[serde(default)]
    pub pod_name: String,
    /// `containers`.
    #[serde(default)]
    pub containers: Vec<ContainerRecreateRequestContainer>,
    /// `strategy`, `activeDeadlineSeconds`, `ttlSecondsAfterFinished` and anything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One container to recreate: its `name`; `statusContext`, `preStop`, `ports` kept as received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerRecreateRequestContainer {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// The other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `status`: the phase and completion time; the rest kept as received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStatus {
    /// `phase`: Pending, Recreating, Completed (Succeeded and Failed are container phases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// `completionTime` (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    /// `containerRecreateStates`, `message`, `conditions` and anything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ContainerRecreateRequest {
    /// Whether kruise-daemon is done with it: `status.phase` `Completed` or a `completionTime`.
    pub fn is_finished(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.phase.as_deref() == Some(PHASE_COMPLETED) || s.completion_time.is_some()
        })
    }
}

resource!(
    ContainerRecreateRequest,
    "apps.kruise.io/v1beta1",
    "apps.kruise.io",
    "v1beta1",
    "ContainerRecreateRequest",
    "containerrecreaterequests",
    NamespaceResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let raw = json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "c", "namespace": "jobs", "labels": {"crr.apps.kruise.io/active": "true"}},
            "spec": {"podName": "p", "containers": [{"name": "s", "statusContext": {"containerID": "x://1", "restartCount": 0}}],
                "strategy": {"forceRecreate": true, "failurePolicy": "Ignore"}, "ttlSecondsAfterFinished": 5},
            "status": {"phase": "Completed", "completionTime": "2026-01-01T00:00:00Z",
                "containerRecreateStates": [{"name": "s", "phase": "Failed"}], "message": "m"}
        });
        let crr: ContainerRecreateRequest = serde_json::from_value(raw.clone()).unwrap();
        assert!(crr.is_finished());
        assert_eq!(serde_json::to_value(&crr).unwrap(), raw);
    }

    #[test]
    fn finished_means_completed_or_a_completion_time() {
        let with = |status: Value| -> ContainerRecreateRequest {
            serde_json::from_value(
                json!({"metadata": {"name": "c"}, "spec": {"podName": "p"}, "status": status}),
            )
            .unwrap()
        };
        assert!(!with(json!(null)).is_finished());
        assert!(!with(json!({"phase": "Recreating"})).is_finished());
        assert!(with(json!({"phase": "Completed"})).is_finished());
        assert!(with(json!({"completionTime": "2026-01-01T00:00:00Z"})).is_finished());
    }
}
