//! The Job sidecar terminator's decisions (spec/sidecar-terminator.md §4-§8; DECISIONS 1, 11): which pods
//! qualify ([`qualify`]), the action sets of their sidecar containers ([`action_sets`]) and, given the
//! node kind and the ContainerRecreateRequests already there, the ordered actions of one reconcile
//! ([`plan`]). Pure: the controller (`src/controller/sidecar_terminator.rs`) reads its caches, passes the
//! time in, and executes the actions in order, stopping at the first error.
//!
//! Where we differ from OpenKruise, on purpose:
//! - one CRR per pod **and action set** (DECISIONS 11): the normal set's is named
//!   `sidecar-termination-<uid>` as upstream, the ignore-exit-code set's
//!   `sidecar-termination-<uid>-ignore-exit-code`, so the quirk of §7 (the second kill finds the name taken
//!   and the ignore-exit-code sidecar is never killed) does not happen;
//! - the CRR carries the labels kruise-daemon selects on (DECISIONS 11: `crr.apps.kruise.io/node-name`,
//!   `crr.apps.kruise.io/active=true`, and `crr.apps.kruise.io/pod-name`, `crr.apps.kruise.io/pod-uid`, which
//!   the daemon groups and reads the pod by), so the kill works without OpenKruise's CRR webhook;
//! - a failed action is retried (DECISIONS 11): a CRR kruise-daemon finished ([`CrrState::Finished`]) while a
//!   sidecar of its set still runs is deleted [`RETRY_AFTER_SECONDS`] after its completion (time for kubelet
//!   to report a kill that worked, and a pace for a daemon that keeps failing), and created again when its
//!   deletion is seen; a missing CRR is created whenever its set has a running sidecar;
//! - a reconcile that changes nothing makes no call: the in-place replacement records its event only when
//!   it replaced an image (upstream repeats it on every reconcile, §6.2 quirk, scenario 17).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use crate::api::containerrecreaterequest::{
    self as crr, ContainerRecreateRequest, ContainerRecreateRequestContainer,
    ContainerRecreateRequestSpec,
};
use crate::api::pod::{
    EXIT_IMAGE_ENV, IGNORE_EXIT_CODE_ENV, SlimContainer, SlimPod, TERMINATE_SIDECAR_ENV,
};
use crate::features::Gate;

#[cfg(test)]
mod tests;

/// The feature gate (on by default, DECISIONS 1).
pub const GATE: Gate = "SidecarTerminator";
/// The prefix of the CRR names: `sidecar-termination-<pod uid>` (§2).
pub const CRR_NAME_PREFIX: &str = "sidecar-termination-";
/// The suffix of the ignore-exit-code set's CRR name (DECISIONS 11).
pub const IGNORE_EXIT_CODE_CRR_SUFFIX: &str = "-ignore-exit-code";
/// The pod condition the status patch writes (§6.3).
pub const CONDITION_TYPE: &str = crate::api::pod::SIDECAR_TERMINATED_CONDITION;
/// Its message.
pub const CONDITION_MESSAGE: &str = "Terminated by Sidecar Terminator";
/// The reason of the Normal events on the pod (§2).
pub const EVENT_REASON: &str = "SidecarTerminator";
/// How long after a CRR finished with a sidecar of its set still running it is deleted to be retried.
pub const RETRY_AFTER_SECONDS: i64 = 30;

/// Whether `container` has env `name` with the literal value `true`, in any case (§2: `valueFrom` is not
/// set). The last entry of a repeated name wins, as in Kubernetes.
fn env_true(container: &SlimContainer, name: &str) -> bool {
    env_value(container, name).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn env_value<'a>(container: &'a SlimContainer, name: &str) -> Option<&'a str> {
    container
        .env
        .iter()
        .flatten()
        .rev()
        .find(|e| e.name == name)
        .and_then(|e| e.value.as_deref())
}

/// The exit image of `container`: a non-empty literal `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE`.
pub fn exit_image(container: &SlimContainer) -> Option<&str> {
    env_value(container, EXIT_IMAGE_ENV).filter(|v| !v.is_empty())
}

/// Whether `container` is a sidecar for grouping (§4.1): `…_WHEN_JOB_EXIT=true` or an exit image.
pub fn is_sidecar(container: &SlimContainer) -> bool {
    env_true(container, TERMINATE_SIDECAR_ENV) || exit_image(container).is_some()
}

fn containers(pod: &SlimPod) -> &[SlimContainer] {
    pod.spec.as_ref().map_or(&[], |s| &s.containers)
}

/// `status.containerStatuses` (empty when absent).
fn statuses(pod: &SlimPod) -> &[crate::api::pod::SlimContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[])
}

/// Whether the counts of containers and container statuses match (§4.2's length rule).
fn statuses_complete(pod: &SlimPod) -> bool {
    containers(pod).len() == statuses(pod).len()
}

/// `all_terminated(set)` (§4.2): lengths match and every status named in `set` is `terminated`.
pub fn all_terminated(pod: &SlimPod, set: &[String]) -> bool {
    statuses_complete(pod)
        && statuses(pod)
            .iter()
            .filter(|s| set.iter().any(|n| *n == s.name))
            .all(|s| s.exit_code().is_some())
}

/// `all_succeeded(set)` (§4.2): lengths match and every status named in `set` terminated with code 0.
pub fn all_succeeded(pod: &SlimPod, set: &[String]) -> bool {
    statuses_complete(pod)
        && statuses(pod)
            .iter()
            .filter(|s| set.iter().any(|n| *n == s.name))
            .all(|s| s.exit_code() == Some(0))
}

/// `uncompleted(set)` (§4.2): the names of `set` (in its order) whose status is missing or not terminated.
pub fn uncompleted(pod: &SlimPod, set: &[String]) -> Vec<String> {
    set.iter()
        .filter(|name| {
            !statuses(pod)
                .iter()
                .any(|s| &s.name == *name && s.exit_code().is_some())
        })
        .cloned()
        .collect()
}

/// Why a pod does not qualify (§4.3), for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotQualifying {
    /// `metadata.deletionTimestamp` is set.
    #[error("being deleted")]
    Deleting,
    /// `status.phase` is `Pending` (or there is no status).
    #[error("pending")]
    Pending,
    /// `spec.restartPolicy` is `Always` or empty.
    #[error("restartPolicy {0:?} restarts containers")]
    Restarting(String),
    /// `spec.restartPolicy` is none of Kubernetes' values.
    #[error("unknown restartPolicy {0:?}")]
    UnknownRestartPolicy(String),
    /// No container carries a terminator env.
    #[error("no sidecar container")]
    NoSidecar,
    /// Fewer or more container statuses than containers.
    #[error("{statuses} container statuses for {containers} containers")]
    StatusesIncomplete {
        /// `spec.containers` count.
        containers: usize,
        /// `status.containerStatuses` count.
        statuses: usize,
    },
    /// A container status names no container, or two statuses name one container.
    #[error("container statuses do not match the containers one to one")]
    StatusesMismatched,
    /// Every sidecar has already terminated.
    #[error("every sidecar has terminated")]
    SidecarsDone,
    /// `Never`: a main container has not terminated; `OnFailure`: one has not succeeded.
    #[error("main containers not finished")]
    MainsRunning,
}

impl NotQualifying {
    /// Whether the pod is malformed (worth a warning), rather than simply not (yet) concerned.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::UnknownRestartPolicy(_) | Self::StatusesMismatched
        )
    }
}

/// The pod's `restartPolicy` as far as the terminator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    /// `Never`: the main containers must have terminated.
    Never,
    /// `OnFailure`: the main containers must have succeeded.
    OnFailure,
}

/// The sidecar and main container names of a pod (§4.1), in `spec.containers` order.
fn grouped(pod: &SlimPod) -> (Vec<String>, Vec<String>) {
    let (sidecars, mains): (Vec<&SlimContainer>, Vec<&SlimContainer>) =
        containers(pod).iter().partition(|c| is_sidecar(c));
    let names = |list: Vec<&SlimContainer>| list.into_iter().map(|c| c.name.to_string()).collect();
    (names(sidecars), names(mains))
}

/// Whether the pod qualifies (§4.3), and under which restart policy.
///
/// # Errors
/// Why it does not.
pub fn qualify(pod: &SlimPod) -> Result<RestartPolicy, NotQualifying> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Err(NotQualifying::Deleting);
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, None | Some("Pending")) {
        return Err(NotQualifying::Pending);
    }
    let policy = match pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) {
        Some("Never") => RestartPolicy::Never,
        Some("OnFailure") => RestartPolicy::OnFailure,
        Some(p @ ("Always" | "")) => return Err(NotQualifying::Restarting(p.to_owned())),
        None => return Err(NotQualifying::Restarting(String::new())),
        Some(other) => return Err(NotQualifying::UnknownRestartPolicy(other.to_owned())),
    };
    let (sidecars, mains) = grouped(pod);
    if sidecars.is_empty() {
        return Err(NotQualifying::NoSidecar);
    }
    if !statuses_complete(pod) {
        return Err(NotQualifying::StatusesIncomplete {
            containers: containers(pod).len(),
            statuses: statuses(pod).len(),
        });
    }
    // Equal counts but not one status per container: upstream's rules would read a missing status as
    // finished; we refuse to act on such a pod.
    let one_to_one = containers(pod)
        .iter()
        .all(|c| statuses(pod).iter().filter(|s| s.name == c.name).count() == 1);
    if !one_to_one {
        return Err(NotQualifying::StatusesMismatched);
    }
    if all_terminated(pod, &sidecars) {
        return Err(NotQualifying::SidecarsDone);
    }
    let mains_done = match policy {
        RestartPolicy::Never => all_terminated(pod, &mains),
        RestartPolicy::OnFailure => all_succeeded(pod, &mains),
    };
    if !mains_done {
        return Err(NotQualifying::MainsRunning);
    }
    Ok(policy)
}

/// The three action sets of a pod on a node (§4.1), each in `spec.containers` order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionSets {
    /// Virtual-kubelet node and an exit image: the image is replaced.
    pub in_place: Vec<String>,
    /// Ordinary node, `…_WHEN_JOB_EXIT=true` and `…_IGNORE_EXIT_CODE=true`: phase patch, then a CRR.
    pub ignore_exit_code: Vec<String>,
    /// Ordinary node, `…_WHEN_JOB_EXIT=true`: a CRR.
    pub normal: Vec<String>,
    /// The main containers.
    pub mains: Vec<String>,
}

/// The action sets of `pod` when its node is (`virtual_kubelet`) or is not a virtual-kubelet node (§4.1).
pub fn action_sets(pod: &SlimPod, virtual_kubelet: bool) -> ActionSets {
    let mut sets = ActionSets::default();
    for c in containers(pod) {
        let name = c.name.to_string();
        if !is_sidecar(c) {
            sets.mains.push(name);
        } else if virtual_kubelet {
            if exit_image(c).is_some() {
                sets.in_place.push(name);
            }
        } else if env_true(c, TERMINATE_SIDECAR_ENV) {
            if env_true(c, IGNORE_EXIT_CODE_ENV) {
                sets.ignore_exit_code.push(name);
            } else {
                sets.normal.push(name);
            }
        }
    }
    sets
}

/// Which CRR of a pod: one per action set that kills (DECISIONS 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KillSet {
    /// The normal set: `sidecar-termination-<uid>`.
    Normal,
    /// The ignore-exit-code set: `sidecar-termination-<uid>-ignore-exit-code`.
    IgnoreExitCode,
}

impl KillSet {
    /// A label value for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::IgnoreExitCode => "ignore-exit-code",
        }
    }
}

/// The name of the CRR of `set` for the pod of `uid`.
pub fn crr_name(uid: &str, set: KillSet) -> String {
    match set {
        KillSet::Normal => format!("{CRR_NAME_PREFIX}{uid}"),
        KillSet::IgnoreExitCode => format!("{CRR_NAME_PREFIX}{uid}{IGNORE_EXIT_CODE_CRR_SUFFIX}"),
    }
}

/// The pod a terminator CRR belongs to (`namespace`, `spec.podName`), when it is one of ours by name.
pub fn pod_of_crr(crr: &ContainerRecreateRequest) -> Option<(&str, &str)> {
    let name = crr.metadata.name.as_deref()?;
    if !name.starts_with(CRR_NAME_PREFIX) || crr.spec.pod_name.is_empty() {
        return None;
    }
    Some((crr.metadata.namespace.as_deref()?, &crr.spec.pod_name))
}

/// What the cache says of the CRR of one kill set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrrState {
    /// No such CRR.
    Missing,
    /// There, not finished: kruise-daemon is on it.
    Active,
    /// Being deleted: its deletion will trigger the next reconcile.
    Deleting,
    /// kruise-daemon finished with it.
    Finished {
        /// Its uid (the deletion's precondition).
        uid: Option<String>,
        /// `status.completionTime`, when given and valid.
        completed_at: Option<Timestamp>,
    },
}

impl CrrState {
    /// The state of `crr` (`None`: missing).
    pub fn of(crr: Option<&ContainerRecreateRequest>) -> Self {
        match crr {
            None => Self::Missing,
            Some(c) if c.metadata.deletion_timestamp.is_some() => Self::Deleting,
            Some(c) if c.is_finished() => Self::Finished {
                uid: c.metadata.uid.clone(),
                completed_at: c
                    .status
                    .as_ref()
                    .and_then(|s| s.completion_time.as_deref())
                    .and_then(|t| t.parse().ok()),
            },
            Some(_) => Self::Active,
        }
    }
}

/// The terminal phase the status patch writes (§6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Every main container exited 0.
    Succeeded,
    /// One did not.
    Failed,
}

impl Phase {
    /// The phase's text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
        }
    }
}

/// One action of a reconcile, executed in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Replace these containers' images by their exit images (§6.2): `(container, image)`.
    ReplaceImages(Vec<(String, String)>),
    /// Create the CRR of `set` listing `containers` (§6.1).
    CreateCrr {
        /// Which set.
        set: KillSet,
        /// The uncompleted sidecars of the set.
        containers: Vec<String>,
    },
    /// Delete the finished CRR of `set` so that it is created again (DECISIONS 11).
    DeleteCrr {
        /// Which set.
        set: KillSet,
        /// Its uid (precondition).
        uid: Option<String>,
    },
    /// Patch the pod's status: this phase and the `SidecarTerminated` condition (§6.3).
    PatchPhase(Phase),
}

/// What one reconcile does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The actions, in order.
    pub actions: Vec<Action>,
    /// Reconcile again after this long even without a change (a finished CRR waiting for its retry).
    pub requeue_after: Option<SignedDuration>,
}

/// What [`plan`] reads besides the pod.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The pod's node is a virtual-kubelet node.
    pub virtual_kubelet: bool,
    /// The normal set's CRR.
    pub normal_crr: CrrState,
    /// The ignore-exit-code set's CRR.
    pub ignore_exit_code_crr: CrrState,
    /// The time.
    pub now: Timestamp,
}

/// The actions of one reconcile of a pod that qualifies (§5 steps 3-8; DECISIONS 11).
pub fn plan(pod: &SlimPod, observed: &Observed) -> Plan {
    let sets = action_sets(pod, observed.virtual_kubelet);
    let mut plan = Plan::default();
    // Step 4: in-place, only where the image differs.
    let replace: Vec<(String, String)> = uncompleted(pod, &sets.in_place)
        .into_iter()
        .filter_map(|name| {
            let c = containers(pod).iter().find(|c| c.name == name)?;
            let image = exit_image(c)?;
            (c.image.as_deref() != Some(image)).then(|| (name, image.to_owned()))
        })
        .collect();
    if !replace.is_empty() {
        plan.actions.push(Action::ReplaceImages(replace));
    }
    // Step 5.
    kill(
        &mut plan,
        KillSet::Normal,
        uncompleted(pod, &sets.normal),
        &observed.normal_crr,
        observed.now,
    );
    // Step 6.
    if sets.ignore_exit_code.is_empty()
        || !all_terminated(pod, &sets.normal)
        || !all_terminated(pod, &sets.in_place)
    {
        return plan;
    }
    // Step 7: skipped once the phase is terminal.
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if !matches!(phase, Some("Succeeded" | "Failed")) {
        plan.actions
            .push(Action::PatchPhase(if all_succeeded(pod, &sets.mains) {
                Phase::Succeeded
            } else {
                Phase::Failed
            }));
    }
    // Step 8.
    kill(
        &mut plan,
        KillSet::IgnoreExitCode,
        uncompleted(pod, &sets.ignore_exit_code),
        &observed.ignore_exit_code_crr,
        observed.now,
    );
    plan
}

/// The kill action of one set (§6.1; DECISIONS 11: a finished CRR with a sidecar still running is retried).
fn kill(plan: &mut Plan, set: KillSet, running: Vec<String>, crr: &CrrState, now: Timestamp) {
    if running.is_empty() {
        return;
    }
    match crr {
        CrrState::Missing => plan.actions.push(Action::CreateCrr {
            set,
            containers: running,
        }),
        CrrState::Active | CrrState::Deleting => {}
        CrrState::Finished { uid, completed_at } => {
            let pause = SignedDuration::from_secs(RETRY_AFTER_SECONDS);
            let retry_at = completed_at.map(|t| t.saturating_add(pause).unwrap_or(t));
            match retry_at {
                Some(at) if at > now => {
                    let wait = at.duration_since(now);
                    plan.requeue_after = Some(match plan.requeue_after {
                        Some(other) => other.min(wait),
                        None => wait,
                    });
                }
                _ => plan.actions.push(Action::DeleteCrr {
                    set,
                    uid: uid.clone(),
                }),
            }
        }
    }
}

/// The CRR of `set` killing `containers` of `pod` (§6.1, with DECISIONS 11's labels); `None` when the pod
/// has no name, namespace or uid to name it by.
pub fn container_recreate_request(
    pod: &SlimPod,
    set: KillSet,
    containers: &[String],
) -> Option<ContainerRecreateRequest> {
    let name = pod.metadata.name.clone()?;
    let namespace = pod.metadata.namespace.clone()?;
    let uid = pod.metadata.uid.clone().filter(|u| !u.is_empty())?;
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    let labels = [
        (crr::ACTIVE_LABEL, "true".to_owned()),
        (crr::NODE_NAME_LABEL, node),
        (crr::POD_NAME_LABEL, name.clone()),
        (crr::POD_UID_LABEL, uid.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut extra = Map::new();
    extra.insert(
        "strategy".into(),
        json!({"forceRecreate": true, "failurePolicy": "Ignore"}),
    );
    Some(ContainerRecreateRequest {
        api_version: crr::API_VERSION.into(),
        kind: "ContainerRecreateRequest".into(),
        metadata: ObjectMeta {
            name: Some(crr_name(&uid, set)),
            namespace: Some(namespace),
            labels: Some(labels),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: name.clone(),
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: ContainerRecreateRequestSpec {
            pod_name: name,
            containers: containers
                .iter()
                .map(|c| ContainerRecreateRequestContainer {
                    name: c.clone(),
                    extra: Map::new(),
                })
                .collect(),
            extra,
        },
        status: None,
    })
}

/// The strategic-merge patch of the pod's `status` subresource (§6.3).
pub fn status_patch(phase: Phase, now: Timestamp) -> Value {
    json!({"status": {
        "phase": phase.as_str(),
        "conditions": [{"type": CONDITION_TYPE, "status": "True",
                        "lastTransitionTime": Time(now), "message": CONDITION_MESSAGE}]
    }})
}

/// The strategic-merge patch of the pod replacing `images` (`(container, image)`, §6.2): containers merge
/// by name, so no index can point at the wrong one.
pub fn image_patch(images: &[(String, String)]) -> Value {
    let containers: Vec<Value> = images
        .iter()
        .map(|(name, image)| json!({"name": name, "image": image}))
        .collect();
    json!({"spec": {"containers": containers}})
}

/// How the event says the sidecars are stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Means {
    /// A ContainerRecreateRequest.
    Crr,
    /// The in-place image replacement.
    InPlaceUpdate,
}

/// The Normal event's message (§2): `<names>` rendered as Go prints a string list, `[a b]`.
pub fn event_message(names: &[String], means: Means) -> String {
    let how = match means {
        Means::Crr => "crr",
        Means::InPlaceUpdate => "in-place update",
    };
    format!(
        "Kruise SidecarTerminator is trying to terminate sidecar [{}] using {how}",
        names.join(" ")
    )
}
