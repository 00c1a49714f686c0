//! A Pod as the cluster view holds it ([`crate::ClusterView::pods_in`], the SidecarSet controller): only the
//! fields a webhook or controller reads from other pods. Decoding drops everything else as it goes, so a
//! cache of 10,000 pods never holds their full objects, not even while a LIST is decoded. Spec and status
//! keep `k8s_openapi`'s field names and shapes; labels and annotations are [`StrMap`]s beside the metadata
//! (a `BTreeMap` spends half a KiB on its first entry).
//!
//! Kept, and who reads it:
//! - `metadata`: `name`, `namespace`, `resourceVersion` (the cache's key and the watch's position),
//!   `deletionTimestamp` (active pods: deletion protection, SidecarSet status, PUB), `uid` and
//!   `ownerReferences` (the PUB's workload, its deny metric), `creationTimestamp` (the SidecarSet
//!   upgrade order);
//! - `labels` (selectors, the WorkloadSpread pod version) and the annotations of [`READ_ANNOTATIONS`];
//! - `spec.containers` and `spec.initContainers`: `name`, `image` (SidecarSet consistency and readiness,
//!   PUB consistency) and of `env` only `IS_INJECTED` (a SidecarSet's sidecar, PUB consistency) and
//!   `KRUISE_CONTAINER_BARRIER` with its ConfigMap key (the launch-priority barrier controller);
//!   and the Job sidecar terminator's three envs ([`TERMINATE_SIDECAR_ENV`], [`EXIT_IMAGE_ENV`],
//!   [`IGNORE_EXIT_CODE_ENV`]: which containers are sidecars, and how they are stopped);
//! - `spec.nodeName` (the SidecarSet upgrade order: unscheduled pods first; the sidecar terminator: the
//!   node whose `type` label says virtual-kubelet, and the CRR's node-name label);
//! - `spec.restartPolicy` (the sidecar terminator: only `Never` / `OnFailure` pods qualify);
//! - `spec.terminationGracePeriodSeconds`, and of `spec.containers` the `lifecycle.preStop` handler
//!   (`exec`, `httpGet`, `tcpSocket`) and, only where that handler is `httpGet`, the `ports` (the
//!   ContainerRecreateRequest webhook copies them into the CRR, docs/containerrecreaterequest-webhook.md §4);
//! - `status`: `phase`, the `conditions` of [`READ_CONDITIONS`] (`type`, `status`, `lastTransitionTime`;
//!   `message` of `SidecarSetUpgradable` only, `reason` of `PodScheduled` only: the WorkloadSpread
//!   controller's unschedulable pods), `containerStatuses` (`name`, `image`, `imageID`, `containerID`,
//!   `ready`, `restartCount`: also the WorkloadSpread controller's delete-first order; of `state` only
//!   `terminated.exitCode`: the sidecar terminator's finished containers).
//!
//! A capability that reads more of a cached pod adds it here first.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use super::intern::IStr;

use k8s_openapi::api::core::v1::{ContainerPort, ExecAction, HTTPGetAction, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// The annotations of other pods that something reads (the SidecarSet status and upgrade: the injected list,
/// the hash records (with and without image), the hot-upgrade work map, the in-place update state; the PUB gate and status: the related PUB,
/// the opt-out, the in-place update records its consistency check reads); the others are dropped when
/// decoded.
pub const READ_ANNOTATIONS: &[&str] = &[
    "kruise.io/sidecarset-injected-list",
    "kruise.io/sidecarset-hash",
    "kruise.io/sidecarset-hash-without-image",
    "kruise.io/sidecarset-working-hotupgrade-container",
    "kruise.io/sidecarset-inplace-update-state",
    "pub.kruise.io/related-pub",
    "kruise.io/related-pub",
    "pub.kruise.io/no-protect",
    "apps.kruise.io/inplace-update-state",
    "inplace-update-state",
    "apps.kruise.io/inplace-update-grace",
    "inplace-update-grace",
    "apps.kruise.io/runtime-containers-meta",
    "apps.kruise.io/container-launch-priority-completed",
    // WorkloadSpread: the subset a pod was admitted into (its deletion record, spec/workloadspread.md §5.9,
    // and the controller), and the deletion cost the controller keeps.
    "apps.kruise.io/matched-workloadspread",
    "controller.kubernetes.io/pod-deletion-cost",
];

/// The container env var a SidecarSet's sidecar carries (`IS_INJECTED=true`).
pub const INJECTED_ENV: &str = "IS_INJECTED";
/// The container env var of a launch priority (spec/container-launch-priority.md §4.1: its ConfigMap key).
pub const BARRIER_ENV: &str = "KRUISE_CONTAINER_BARRIER";
/// The container env var marking a Job sidecar the terminator stops (spec/sidecar-terminator.md §2).
pub const TERMINATE_SIDECAR_ENV: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT";
/// The container env var naming the exit image of a Job sidecar on a virtual-kubelet node (§2).
pub const EXIT_IMAGE_ENV: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE";
/// The container env var asking the terminator to set the phase from the main containers (§2, §6.3).
pub const IGNORE_EXIT_CODE_ENV: &str = "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE";
/// The container env vars something reads ([`INJECTED_ENV`], [`BARRIER_ENV`], the sidecar terminator's
/// three); the others are dropped when decoded.
pub const READ_ENV: &[&str] = &[
    INJECTED_ENV,
    BARRIER_ENV,
    TERMINATE_SIDECAR_ENV,
    EXIT_IMAGE_ENV,
    IGNORE_EXIT_CODE_ENV,
];

/// The pod conditions something reads (`Ready`: the SidecarSet status counts ready pods, its upgrade orders
/// them by time ready; `ContainersReady`: the launch-priority barrier controller leaves such pods alone;
/// `SidecarSetUpgradable`: the SidecarSet upgrade writes it only when it changes; `PodScheduled`: the
/// WorkloadSpread controller's Adaptive strategy finds unschedulable pods by it and its reason;
/// `KruisePodReady`: the pod-readiness controller, with its not-ready keys in the message;
/// `SidecarTerminated`: the ContainerRecreateRequest webhook admits a CRR for a pod the Job sidecar
/// terminator finished); the others are dropped when decoded.
pub const READ_CONDITIONS: &[&str] = &[
    "Ready",
    "ContainersReady",
    UPGRADABLE_CONDITION,
    SCHEDULED_CONDITION,
    KRUISE_POD_READY,
    SIDECAR_TERMINATED_CONDITION,
];

/// The pod condition the Job sidecar terminator writes with the phase it sets (spec/sidecar-terminator.md
/// §6.3).
pub const SIDECAR_TERMINATED_CONDITION: &str = "SidecarTerminated";

/// The pod condition the scheduler writes (its reason `Unschedulable` when no node fits).
pub const SCHEDULED_CONDITION: &str = "PodScheduled";

/// The pod condition the SidecarSet controller writes (spec/sidecarset.md §3).
pub const UPGRADABLE_CONDITION: &str = "SidecarSetUpgradable";

/// A Pod with only the fields read from the cluster view (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "wire::Pod", into = "wire::Pod")]
pub struct SlimPod {
    /// `name`, `namespace`, `uid`, `resourceVersion`, `deletionTimestamp` and `ownerReferences`; never
    /// labels or annotations (they are [`SlimPod::labels`] and [`SlimPod::annotations`]).
    pub metadata: ObjectMeta,
    /// `metadata.labels`.
    pub labels: StrMap,
    /// `metadata.annotations`, those of [`READ_ANNOTATIONS`].
    pub annotations: StrMap,
    /// The containers' names and images.
    pub spec: Option<SlimPodSpec>,
    /// Phase, conditions and container images as running.
    pub status: Option<SlimPodStatus>,
}

impl SlimPod {
    /// Points the strings pods of one workload share (labels, annotations, container names and images,
    /// image IDs, condition types and statuses) at the copies `shared` gives.
    pub fn share_strings(&mut self, shared: &mut dyn FnMut(&str) -> Arc<str>) {
        self.labels.share(shared);
        self.annotations.share(shared);
        if let Some(spec) = &mut self.spec {
            let init = spec.init_containers.iter_mut().flatten();
            for c in spec.containers.iter_mut().chain(init) {
                c.name.share(shared);
                if let Some(image) = &mut c.image {
                    image.share(shared);
                }
            }
        }
        if let Some(status) = &mut self.status {
            for c in status.conditions.iter_mut().flatten() {
                c.type_.share(shared);
                c.status.share(shared);
            }
            for c in status.container_statuses.iter_mut().flatten() {
                c.name.share(shared);
                c.image.share(shared);
                c.image_id.share(shared);
            }
        }
    }

    /// Kubernetes' `IsPodActive`: phase neither `Succeeded` nor `Failed`, not being deleted.
    pub fn is_active(&self) -> bool {
        let phase = self.status.as_ref().and_then(|s| s.phase.as_deref());
        !matches!(phase, Some("Succeeded" | "Failed")) && self.metadata.deletion_timestamp.is_none()
    }

    /// OpenKruise's `util.GetContainer`: the init container or container of that name, init containers first.
    pub fn container(&self, name: &str) -> Option<&SlimContainer> {
        let spec = self.spec.as_ref()?;
        spec.init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .find(|c| c.name == name)
    }

    /// Kubernetes' `IsRunningAndReady`: phase `Running`, condition `Ready=True`, not being deleted.
    pub fn is_running_and_ready(&self) -> bool {
        let Some(status) = &self.status else {
            return false;
        };
        status.phase.as_deref() == Some("Running")
            && status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
            && self.metadata.deletion_timestamp.is_none()
    }
}

/// `spec`, as far as it is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodSpec {
    /// `containers`.
    #[serde(default, deserialize_with = "read_containers")]
    pub containers: Vec<SlimContainer>,
    /// `initContainers` (without `lifecycle` and `ports`: nothing reads them there).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_init_containers"
    )]
    pub init_containers: Option<Vec<SlimContainer>>,
    /// `nodeName`: empty until scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// `restartPolicy`: `Always`, `OnFailure` or `Never` (Kubernetes' values borrowed, not allocated per pod).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_restart_policy"
    )]
    pub restart_policy: Option<Cow<'static, str>>,
    /// Whether `readinessGates` holds `KruisePodReady` (the pod-readiness controller, docs/pod-readiness.md);
    /// the other gates are dropped when decoded.
    #[serde(
        default,
        rename = "readinessGates",
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "read_kruise_gate",
        serialize_with = "write_kruise_gate"
    )]
    pub kruise_pod_ready_gate: bool,
    /// `terminationGracePeriodSeconds` (the apiserver defaults it to 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
}

/// The readiness gate and condition type `KruisePodReady` (docs/pod-readiness.md).
pub const KRUISE_POD_READY: &str = "KruisePodReady";

fn read_kruise_gate<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Gate {
        #[serde(default)]
        condition_type: Option<String>,
    }
    let gates = Option::<Vec<Gate>>::deserialize(deserializer)?;
    Ok(gates
        .into_iter()
        .flatten()
        .any(|g| g.condition_type.as_deref() == Some(KRUISE_POD_READY)))
}

fn write_kruise_gate<S: Serializer>(gate: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = serializer.serialize_seq(Some(usize::from(*gate)))?;
    if *gate {
        seq.serialize_element(&serde_json::json!({"conditionType": KRUISE_POD_READY}))?;
    }
    seq.end()
}

/// `restartPolicy`, Kubernetes' three values as static strings (every pod has one: no allocation each).
fn read_restart_policy<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'static, str>>, D::Error> {
    let policy = Option::<String>::deserialize(deserializer)?;
    Ok(policy.map(|p| match p.as_str() {
        "Always" => Cow::Borrowed("Always"),
        "OnFailure" => Cow::Borrowed("OnFailure"),
        "Never" => Cow::Borrowed("Never"),
        _ => Cow::Owned(p),
    }))
}

/// The containers of `spec.containers`, each without its `ports` unless its preStop handler is `httpGet`
/// (the only case they are copied into a ContainerRecreateRequest).
fn read_containers<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<SlimContainer>, D::Error> {
    let mut containers =
        Option::<Vec<SlimContainer>>::deserialize(deserializer)?.unwrap_or_default();
    for c in &mut containers {
        if c.pre_stop().is_none_or(|h| h.http_get.is_none()) {
            c.ports = None;
        }
    }
    Ok(containers)
}

/// The containers of `spec.initContainers`, without `lifecycle` and `ports`.
fn read_init_containers<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<SlimContainer>>, D::Error> {
    let mut containers = Option::<Vec<SlimContainer>>::deserialize(deserializer)?;
    for c in containers.iter_mut().flatten() {
        c.lifecycle = None;
        c.ports = None;
    }
    Ok(containers)
}

/// A container's `name`, `image`, its env vars of [`READ_ENV`], its preStop handler and (with an `httpGet`
/// preStop handler) its ports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlimContainer {
    /// `name`.
    #[serde(default)]
    pub name: IStr,
    /// `image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<IStr>,
    /// `env`, only the variables of [`READ_ENV`] (absent when the container has none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_env"
    )]
    pub env: Option<Vec<SlimEnvVar>>,
    /// `lifecycle`, only its `preStop` (absent without one).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_lifecycle"
    )]
    pub lifecycle: Option<Box<SlimLifecycle>>,
    /// `ports`, kept only when the preStop handler is `httpGet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ContainerPort>>,
}

/// A container's `lifecycle`, as far as it is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimLifecycle {
    /// `preStop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<SlimPreStop>,
}

/// A preStop handler's `exec`, `httpGet` and `tcpSocket` (`sleep` is not read: a handler with only that
/// decodes as one with none of the three).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPreStop {
    /// `exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    /// `httpGet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HTTPGetAction>,
    /// `tcpSocket`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TCPSocketAction>,
}

/// `lifecycle` kept only when it has a `preStop` (a `postStart` alone is read by no one).
fn read_lifecycle<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<SlimLifecycle>>, D::Error> {
    let lifecycle = Option::<SlimLifecycle>::deserialize(deserializer)?;
    Ok(lifecycle.filter(|l| l.pre_stop.is_some()).map(Box::new))
}

impl SlimContainer {
    /// The container's preStop handler, if it has one.
    pub fn pre_stop(&self) -> Option<&SlimPreStop> {
        self.lifecycle.as_ref()?.pre_stop.as_ref()
    }

    /// Whether the container is a sidecar a SidecarSet injected: env `IS_INJECTED=true`.
    pub fn is_injected(&self) -> bool {
        self.env
            .iter()
            .flatten()
            .any(|e| e.name == INJECTED_ENV && e.value.as_deref() == Some("true"))
    }
}

/// An env var's `name` and `value`, and of `valueFrom` the ConfigMap key a launch barrier reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimEnvVar {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `valueFrom`: its `configMapKeyRef` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<SlimEnvSource>,
}

/// `valueFrom` of an env var, as far as it is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimEnvSource {
    /// `configMapKeyRef`: `name` and `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<SlimKeyRef>,
}

/// A ConfigMap key reference's `name` and `key`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlimKeyRef {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `key`.
    #[serde(default)]
    pub key: String,
}

fn read_env<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<SlimEnvVar>>, D::Error> {
    /// An env var as listed: of `valueFrom` only `configMapKeyRef`, the rest skipped unread.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Listed {
        #[serde(default)]
        name: String,
        #[serde(default)]
        value: Option<String>,
        #[serde(default)]
        value_from: Option<SlimEnvSource>,
    }
    let listed = Option::<Vec<Listed>>::deserialize(deserializer)?;
    let kept: Vec<SlimEnvVar> = listed
        .into_iter()
        .flatten()
        .filter(|e| READ_ENV.contains(&e.name.as_str()))
        .map(|e| SlimEnvVar {
            value_from: if e.name == BARRIER_ENV {
                e.value_from
            } else {
                None
            },
            name: e.name,
            value: e.value,
        })
        .collect();
    Ok((!kept.is_empty()).then_some(kept))
}

/// `status`, as far as it is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodStatus {
    /// `phase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// `conditions` of [`READ_CONDITIONS`]: `type` and `status`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_conditions"
    )]
    pub conditions: Option<Vec<SlimPodCondition>>,
    /// `containerStatuses`: `name`, `image`, `imageID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_statuses: Option<Vec<SlimContainerStatus>>,
}

fn read_conditions<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<SlimPodCondition>>, D::Error> {
    let mut conditions = Option::<Vec<SlimPodCondition>>::deserialize(deserializer)?;
    if let Some(list) = &mut conditions {
        list.retain(|c| READ_CONDITIONS.contains(&c.type_.as_str()));
        for c in list.iter_mut() {
            // Only the upgrade condition's message and KruisePodReady's (its not-ready keys) are read (Ready's
            // can be long).
            if c.type_ != UPGRADABLE_CONDITION && c.type_ != KRUISE_POD_READY {
                c.message = None;
            }
            // Only the scheduled condition's reason is read.
            if c.type_ != SCHEDULED_CONDITION {
                c.reason = None;
            }
        }
        list.shrink_to_fit();
    }
    Ok(conditions)
}

/// A pod condition's `type`, `status`, `lastTransitionTime`, the `message` of `SidecarSetUpgradable` and
/// `KruisePodReady`, and `PodScheduled`'s `reason`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodCondition {
    /// `type`.
    #[serde(default, rename = "type")]
    pub type_: IStr,
    /// `status`: `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: IStr,
    /// `lastTransitionTime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// `message` (kept for `SidecarSetUpgradable` and `KruisePodReady` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `reason` (kept for `PodScheduled` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A container status's `name`, `image`, `imageID` and `containerID`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlimContainerStatus {
    /// `name`.
    #[serde(default)]
    pub name: IStr,
    /// `image`, as the runtime reports it.
    #[serde(default)]
    pub image: IStr,
    /// `imageID`.
    #[serde(default, rename = "imageID")]
    pub image_id: IStr,
    /// `containerID` (`<runtime>://<id>`), absent until the container was created.
    #[serde(
        default,
        rename = "containerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_id: Option<String>,
    /// `ready`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ready: bool,
    /// `restartCount`.
    #[serde(default, rename = "restartCount", skip_serializing_if = "is_zero")]
    pub restart_count: i32,
    /// `state`, kept only when it is `terminated` (and of that only `exitCode`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_state"
    )]
    pub state: Option<SlimContainerState>,
}

impl SlimContainerStatus {
    /// The exit code, when the container's current state is `terminated`.
    pub fn exit_code(&self) -> Option<i32> {
        self.state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code)
    }
}

/// A container status's `state`, as far as it is read: `terminated`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlimContainerState {
    /// `terminated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminated: Option<SlimTerminated>,
}

/// A terminated container state's `exitCode`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimTerminated {
    /// `exitCode`.
    #[serde(default)]
    pub exit_code: i32,
}

/// `state` kept only when it holds `terminated` (a running or waiting state is read by no one).
fn read_state<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SlimContainerState>, D::Error> {
    let state = Option::<SlimContainerState>::deserialize(deserializer)?;
    Ok(state.filter(|s| s.terminated.is_some()))
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// A small map of strings in one allocation: the pairs, sorted by key (reference-counted, so that the caches
/// can point equal ones of many objects at one copy: [`StrMap::share`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StrMap(Box<[(Arc<str>, Arc<str>)]>);

impl StrMap {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        // A pod's labels and kept annotations are a handful, and their keys share long prefixes
        // (`kruise.io/sidecarset-…`): comparing lengths first skips almost every byte comparison, where a
        // binary search compares the common prefix at each step.
        if self.0.len() <= 8 {
            return self
                .0
                .iter()
                .find(|(k, _)| k.len() == key.len() && **k == *key)
                .map(|(_, v)| &**v);
        }
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    /// The pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// No pairs.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Points every key and value at the copy `shared` gives for it.
    pub fn share(&mut self, shared: &mut dyn FnMut(&str) -> Arc<str>) {
        for (k, v) in &mut *self.0 {
            *k = shared(k);
            *v = shared(v);
        }
    }

    /// The pairs as a `BTreeMap`.
    pub fn to_btree(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// Decodes a JSON object of strings (or `null`), keeping the keys `keep` accepts; other values are
    /// skipped unread, whatever they hold.
    pub(crate) fn decode<'de, D: Deserializer<'de>>(
        deserializer: D,
        keep: fn(&str) -> bool,
    ) -> Result<Self, D::Error> {
        struct Kept(fn(&str) -> bool);
        impl<'de> Visitor<'de> for Kept {
            type Value = StrMap;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<StrMap, E> {
                Ok(StrMap::default())
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<StrMap, E> {
                Ok(StrMap::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<StrMap, D::Error> {
                d.deserialize_map(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrMap, A::Error> {
                let mut kept = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if (self.0)(&key) {
                        kept.push((key, map.next_value::<String>()?));
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(kept.into_iter().collect())
            }
        }
        deserializer.deserialize_option(Kept(keep))
    }
}

impl FromIterator<(String, String)> for StrMap {
    /// A key given twice keeps its last value, as a map decoded from JSON does.
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        let map: BTreeMap<String, String> = pairs.into_iter().collect();
        Self(
            map.into_iter()
                .map(|(k, v)| (Arc::from(k), Arc::from(v)))
                .collect(),
        )
    }
}

impl Serialize for StrMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::decode(deserializer, |_| true)
    }
}

/// The shape of a Pod on the wire, as far as [`SlimPod`] reads it.
mod wire {
    use super::*;

    #[derive(Serialize, Deserialize)]
    pub(super) struct Pod {
        #[serde(default)]
        metadata: Option<Meta>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spec: Option<SlimPodSpec>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<SlimPodStatus>,
    }

    #[derive(Serialize, Deserialize)]
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
        owner_references: Option<Vec<OwnerReference>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        creation_timestamp: Option<Time>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deletion_timestamp: Option<Time>,
        #[serde(default, skip_serializing_if = "StrMap::is_empty")]
        labels: StrMap,
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

    impl From<Pod> for SlimPod {
        fn from(pod: Pod) -> Self {
            let meta = pod.metadata.unwrap_or(Meta {
                name: None,
                namespace: None,
                uid: None,
                resource_version: None,
                owner_references: None,
                creation_timestamp: None,
                deletion_timestamp: None,
                labels: StrMap::default(),
                annotations: StrMap::default(),
            });
            SlimPod {
                metadata: ObjectMeta {
                    name: meta.name,
                    namespace: meta.namespace,
                    uid: meta.uid,
                    resource_version: meta.resource_version,
                    owner_references: meta.owner_references,
                    creation_timestamp: meta.creation_timestamp,
                    deletion_timestamp: meta.deletion_timestamp,
                    ..ObjectMeta::default()
                },
                labels: meta.labels,
                annotations: meta.annotations,
                spec: pod.spec,
                status: pod.status,
            }
        }
    }

    impl From<SlimPod> for Pod {
        fn from(pod: SlimPod) -> Self {
            Pod {
                metadata: Some(Meta {
                    name: pod.metadata.name,
                    namespace: pod.metadata.namespace,
                    uid: pod.metadata.uid,
                    resource_version: pod.metadata.resource_version,
                    owner_references: pod.metadata.owner_references,
                    creation_timestamp: pod.metadata.creation_timestamp,
                    deletion_timestamp: pod.metadata.deletion_timestamp,
                    labels: pod.labels,
                    annotations: pod.annotations,
                }),
                spec: pod.spec,
                status: pod.status,
            }
        }
    }
}

resource!(
    SlimPod,
    "v1",
    "",
    "v1",
    "Pod",
    "pods",
    NamespaceResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full_pod() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
                "generateName": "web-", "creationTimestamp": "2025-01-02T03:04:05Z",
                "deletionTimestamp": "2025-01-02T03:05:05Z",
                "labels": {"app": "web"},
                "annotations": {"kruise.io/sidecarset-injected-list": "s1", "kruise.io/sidecarset-hash": "{}",
                    "kruise.io/sidecarset-hash-without-image": "{}", "kubectl.kubernetes.io/restartedAt": "now"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "r"}],
                "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:phase": {}}}}]},
            "spec": {"containers": [{"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}],
                    "resources": {"requests": {"cpu": "100m"}}},
                {"name": "sidecar", "image": "s:1", "env": [{"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
                    {"name": "IS_INJECTED", "value": "true"}]}],
                "initContainers": [{"name": "init", "image": "init:1", "restartPolicy": "Always"}],
                "nodeName": "n1", "volumes": [{"name": "v", "emptyDir": {}}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1",
                "conditions": [{"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-02T03:04:05Z"}],
                "containerStatuses": [{"name": "app", "image": "app:1", "imageID": "docker://app@sha256:aa",
                    "containerID": "containerd://c1", "ready": true, "restartCount": 2, "state": {"running": {"startedAt": "2025-01-02T03:04:05Z"}}}]}
        })
    }

    #[test]
    fn decoding_keeps_what_is_read_and_drops_the_rest() {
        let pod: SlimPod = serde_json::from_value(full_pod()).unwrap();
        assert_eq!(
            serde_json::to_value(&pod).unwrap(),
            json!({
                "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "r"}],
                    "creationTimestamp": "2025-01-02T03:04:05Z",
                    "deletionTimestamp": "2025-01-02T03:05:05Z", "labels": {"app": "web"},
                    "annotations": {"kruise.io/sidecarset-hash": "{}",
                        "kruise.io/sidecarset-hash-without-image": "{}", "kruise.io/sidecarset-injected-list": "s1"}},
                "spec": {"containers": [{"name": "app", "image": "app:1"},
                        {"name": "sidecar", "image": "s:1", "env": [{"name": "IS_INJECTED", "value": "true"}]}],
                    "initContainers": [{"name": "init", "image": "init:1"}], "nodeName": "n1"},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                        "lastTransitionTime": "2025-01-02T03:04:05Z"}],
                    "containerStatuses": [{"name": "app", "image": "app:1", "imageID": "docker://app@sha256:aa",
                        "containerID": "containerd://c1", "ready": true, "restartCount": 2}]}
            })
        );
    }

    #[test]
    fn the_sidecar_terminator_fields_are_kept() {
        let pod: SlimPod = serde_json::from_value(json!({
            "metadata": {"name": "pi", "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "j"}]},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "containers": [
                {"name": "main", "env": [{"name": "OTHER", "value": "x"}]},
                {"name": "sidecar", "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"},
                    {"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE", "value": "exit:1"},
                    {"name": "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "value": "TRUE",
                     "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "main", "image": "m", "imageID": "", "state": {"terminated": {"exitCode": 2, "reason": "Error",
                    "startedAt": "2025-01-02T03:04:05Z"}}, "lastState": {"terminated": {"exitCode": 1}}},
                {"name": "sidecar", "image": "s", "imageID": "", "state": {"running": {"startedAt": "2025-01-02T03:04:05Z"}}}]}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&pod).unwrap(),
            json!({
                "metadata": {"name": "pi", "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "j"}]},
                "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "containers": [{"name": "main"},
                    {"name": "sidecar", "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"},
                        {"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE", "value": "exit:1"},
                        {"name": "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "value": "TRUE"}]}]},
                "status": {"phase": "Running", "containerStatuses": [
                    {"name": "main", "image": "m", "imageID": "", "state": {"terminated": {"exitCode": 2}}},
                    {"name": "sidecar", "image": "s", "imageID": ""}]}
            })
        );
        assert!(matches!(
            pod.spec.as_ref().unwrap().restart_policy,
            Some(Cow::Borrowed("Never"))
        ));
        let statuses = pod.status.unwrap().container_statuses.unwrap();
        assert_eq!(
            (statuses[0].exit_code(), statuses[1].exit_code()),
            (Some(2), None)
        );
    }

    #[test]
    fn the_prestop_handler_is_kept_and_ports_only_beside_an_http_get() {
        let pod: SlimPod = serde_json::from_value(json!({
            "spec": {"containers": [
                {"name": "web", "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                 "lifecycle": {"preStop": {"httpGet": {"path": "/quit", "port": "http"}},
                               "postStart": {"exec": {"command": ["true"]}}}},
                {"name": "exec", "ports": [{"containerPort": 9090}],
                 "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}}},
                {"name": "sleep", "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}},
                {"name": "post", "ports": [{"containerPort": 1}], "lifecycle": {"postStart": {"exec": {"command": ["x"]}}}}],
             "initContainers": [{"name": "init", "ports": [{"containerPort": 2}],
                 "lifecycle": {"preStop": {"httpGet": {"port": 2}}}}]}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&pod).unwrap(),
            json!({
                "metadata": {},
                "spec": {"containers": [
                    {"name": "web", "lifecycle": {"preStop": {"httpGet": {"path": "/quit", "port": "http"}}},
                     "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]},
                    {"name": "exec", "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}}},
                    {"name": "sleep", "lifecycle": {"preStop": {}}},
                    {"name": "post"}],
                 "initContainers": [{"name": "init"}]}
            })
        );
    }

    #[test]
    fn the_sidecar_terminated_condition_is_kept() {
        let pod: SlimPod = serde_json::from_value(json!({
            "status": {"phase": "Succeeded", "conditions": [
                {"type": "SidecarTerminated", "status": "True", "message": "Terminated by Sidecar Terminator"},
                {"type": "Initialized", "status": "True"}]}
        }))
        .unwrap();
        let conditions = pod.status.unwrap().conditions.unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].type_, SIDECAR_TERMINATED_CONDITION);
    }

    #[test]
    fn null_and_missing_fields_decode_as_absent() {
        let pod: SlimPod = serde_json::from_value(json!({
            "metadata": {"name": "p", "labels": null, "annotations": null}, "spec": null, "status": null
        }))
        .unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
        assert_eq!(
            (pod.metadata.labels, pod.metadata.annotations),
            (None, None)
        );
        assert_eq!((pod.spec, pod.status), (None, None));
        let empty: SlimPod = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty, SlimPod::default());
    }

    #[test]
    fn a_kept_field_of_the_wrong_type_is_an_error() {
        for bad in [
            json!({"metadata": {"annotations": {"kruise.io/sidecarset-hash": 3}}}),
            json!({"metadata": {"labels": {"a": 3}}}),
            json!({"metadata": {"annotations": []}}),
            json!({"spec": 3}),
            json!({"status": {"conditions": [{"type": 1}]}}),
        ] {
            assert!(
                serde_json::from_value::<SlimPod>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        // A value of an annotation nothing reads is skipped unread, whatever it holds.
        let pod: SlimPod =
            serde_json::from_value(json!({"metadata": {"annotations": {"other/a": {"x": [1]}}}}))
                .unwrap();
        assert!(pod.annotations.is_empty());
    }

    #[test]
    fn a_str_map_is_sorted_and_keeps_the_last_of_a_repeated_key() {
        let map: StrMap = serde_json::from_str(r#"{"b": "1", "a": "2", "b": "3"}"#).unwrap();
        assert_eq!(map.iter().collect::<Vec<_>>(), [("a", "2"), ("b", "3")]);
        assert_eq!((map.get("b"), map.get("c")), (Some("3"), None));
        assert_eq!(serde_json::to_string(&map).unwrap(), r#"{"a":"2","b":"3"}"#);
        assert_eq!(map.to_btree()["a"], "2");
    }
}
