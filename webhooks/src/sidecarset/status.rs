//! The SidecarSet controller's planning (spec/sidecarset.md §9, §6.2; DECISIONS 12): which pods a SidecarSet
//! matches, the status it should report, and what to do with its ControllerRevisions. Pure: the I/O layer
//! (`src/controller/sidecarset.rs` in the binary) reads caches, calls these functions and executes the plan.
//!
//! Entry points:
//! - [`matching_pods`]: the active, injected, consistent pods a SidecarSet selects;
//! - [`plan_revisions`]: the ControllerRevision operations ([`RevisionOp`]) and the resulting
//!   `latestRevision` / `collisionCount`; [`NewRevision::renamed`] and [`same_data`] resolve a create that
//!   meets an existing name;
//! - [`desired_status`] and [`status_changed`]: the status to write, and whether it needs writing.
//!
//! In-place sidecar upgrade of running pods (§9 "In-place update", §6.2 hot-upgrade flips) is planned in
//! [`super::upgrade`], over these predicates.

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::hash::encode_containers;
use super::inject::{INJECTED_LIST_ANNOTATION, UpgradeSpec, WORKING_HOT_UPGRADE_ANNOTATION};
use super::select::selector_error;
use crate::api::RawObject;
use crate::api::pod::{SlimContainer, SlimPod};
use crate::api::revision::SlimRevision;
use crate::api::sidecarset::{
    CUSTOM_VERSION_LABEL, HASH_ANNOTATION, SIDECARSET_NAME_LABEL, SidecarContainer, SidecarSet,
    SidecarSetStatus,
};
use crate::json::go;
use crate::selector;

/// `kruise.io/sidecarset-inplace-update-state` (pod, written by in-place updates).
pub const INPLACE_UPDATE_STATE_ANNOTATION: &str = "kruise.io/sidecarset-inplace-update-state";
/// The revision hash label the Kubernetes history helper sets on every ControllerRevision.
pub const REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";
/// `revisionHistoryLimit` when unset.
pub const DEFAULT_REVISION_HISTORY_LIMIT: usize = 10;
/// Longest name prefix of a ControllerRevision (`history.ControllerRevisionName`).
const MAX_REVISION_PREFIX: usize = 223;
/// `rand.SafeEncodeString`'s alphabet (the same as the SidecarSet hash, §7.2).
const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";
/// Upgrade type of hot-upgrade sidecars.
const HOT_UPGRADE: &str = "HotUpgrade";

// ---------------------------------------------------------------------------------------------------------
// Pod predicates (pkg/control/sidecarcontrol)
// ---------------------------------------------------------------------------------------------------------

fn annotation<'a>(pod: &'a SlimPod, key: &str) -> Option<&'a str> {
    pod.annotations.get(key)
}

fn containers(pod: &SlimPod) -> &[SlimContainer] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

/// The pod's `kruise.io/sidecarset-injected-list` names the SidecarSet (`IsPodInjectedSidecarSet`).
pub fn is_pod_injected(pod: &SlimPod, set_name: &str) -> bool {
    annotation(pod, INJECTED_LIST_ANNOTATION)
        .is_some_and(|list| list.split(',').any(|n| n == set_name))
}

fn is_hot_upgrade(c: &SidecarContainer) -> bool {
    c.view.upgrade_strategy.upgrade_type == HOT_UPGRADE
}

/// The pod's `kruise.io/sidecarset-working-hotupgrade-container` map; unreadable reads as empty.
fn working_hot_upgrade(pod: &SlimPod) -> BTreeMap<String, String> {
    annotation(pod, WORKING_HOT_UPGRADE_ANNOTATION)
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

/// `(working, empty)` copies of hot-upgrade sidecar `name` in the pod (`GetPodHotUpgradeContainers`): the
/// working one is what the work map names when that is `<name>-1`, else `<name>-2`.
pub fn hot_upgrade_containers(pod: &SlimPod, name: &str) -> (String, String) {
    let (one, two) = (format!("{name}-1"), format!("{name}-2"));
    if working_hot_upgrade(pod).get(name) == Some(&one) {
        (one, two)
    } else {
        (two, one)
    }
}

/// Every container the SidecarSet puts in a pod: `spec.containers` names, both copies of hot-upgrade ones
/// (`GetSidecarContainersInPod`).
pub fn sidecar_container_names(set: &SidecarSet) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for c in &set.spec.containers {
        if is_hot_upgrade(c) {
            names.insert(format!("{}-1", c.view.name));
            names.insert(format!("{}-2", c.view.name));
        } else {
            names.insert(c.view.name.clone());
        }
    }
    names
}

/// `IsPodConsistentWithSidecarSet` (§6.2): every hot-upgrade sidecar has a work-map entry and both copies,
/// every other sidecar of `spec.containers` exists in the pod (as a container or init container).
pub fn is_pod_consistent_with_sidecarset(pod: &SlimPod, set: &SidecarSet) -> bool {
    let working = working_hot_upgrade(pod);
    set.spec.containers.iter().all(|c| {
        let name = &c.view.name;
        if is_hot_upgrade(c) {
            working.contains_key(name)
                && pod.container(&format!("{name}-1")).is_some()
                && pod.container(&format!("{name}-2")).is_some()
        } else {
            pod.container(name).is_some()
        }
    })
}

/// An image reference split as `reference.Parse` does: `(repository, tag, digest)`; `None` when it does
/// not parse (upper case in the repository, an empty name, a digest that is not `algorithm:hex`).
fn parse_image(image: &str) -> Option<(&str, &str, &str)> {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, digest),
        None => (image, ""),
    };
    if !digest.is_empty() {
        let (algorithm, hex) = digest.split_once(':')?;
        let algorithm_ok = algorithm
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && algorithm
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '.'));
        if !algorithm_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
    }
    // A tag is what follows the last ':' after the last '/' (a ':' before it is a registry port).
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], &name[last_slash + i + 1..]),
        None => (name, ""),
    };
    if repo.is_empty() || repo.chars().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    Some((repo, tag, digest))
}

/// `util.IsImageDigest`: the image names a digest (`repo@sha256:…`).
pub fn is_image_digest(image: &str) -> bool {
    parse_image(image).is_some_and(|(_, _, digest)| !digest.is_empty())
}

/// `util.IsContainerImageEqual`: repository and digest when both are digests, else repository and tag.
fn is_container_image_equal(a: &str, b: &str) -> bool {
    match (parse_image(a), parse_image(b)) {
        (Some((ra, ta, da)), Some((rb, tb, db))) => {
            if !da.is_empty() && !db.is_empty() {
                ra == rb && da == db
            } else {
                ra == rb && ta == tb
            }
        }
        _ => false,
    }
}

/// `util.IsPodContainerDigestEqual` for one container: its status imageID (with any `scheme://` removed)
/// names the same digest as its spec image.
fn container_digest_matches(pod: &SlimPod, container: &SlimContainer) -> bool {
    let image = container.image.as_deref().unwrap_or("");
    if !is_image_digest(image) {
        return false;
    }
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    let Some(status) = statuses
        .into_iter()
        .flatten()
        .find(|s| s.name == container.name)
    else {
        return false;
    };
    let image_id = match status.image_id.split_once("://") {
        Some((_, rest)) => rest,
        None => status.image_id.as_str(),
    };
    is_container_image_equal(image, image_id)
}

/// `IsSidecarContainerUpdateCompleted`: with no in-place update state on the pod, true; with an unreadable
/// one, false; otherwise every listed container whose pre-update imageID was recorded (by one of
/// `set_names`) must show a different imageID now, unless its spec image already equals its status image.
pub fn is_sidecar_container_update_completed(
    pod: &SlimPod,
    set_names: &BTreeSet<String>,
    container_names: &BTreeSet<String>,
) -> bool {
    #[derive(serde::Deserialize)]
    struct LastStatus {
        #[serde(default, rename = "imageID")]
        image_id: String,
    }
    #[derive(serde::Deserialize)]
    struct State {
        #[serde(default, rename = "lastContainerStatuses")]
        last_container_statuses: Option<BTreeMap<String, LastStatus>>,
    }
    let Some(raw) = annotation(pod, INPLACE_UPDATE_STATE_ANNOTATION) else {
        return true;
    };
    let Ok(states) = serde_json::from_str::<BTreeMap<String, Option<State>>>(raw) else {
        return false;
    };
    let mut last: BTreeMap<&str, &str> = BTreeMap::new();
    for name in set_names {
        if let Some(Some(state)) = states.get(name) {
            for (container, status) in state.last_container_statuses.iter().flatten() {
                last.insert(container, &status.image_id);
            }
        }
    }
    let spec_images: BTreeMap<&str, &str> = containers(pod)
        .iter()
        .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or("")))
        .collect();
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    statuses
        .into_iter()
        .flatten()
        .filter(|cs| container_names.contains(cs.name.as_str()))
        .all(|cs| match last.get(cs.name.as_str()) {
            Some(old) => {
                !(*old == cs.image_id
                    && spec_images.get(cs.name.as_str()).copied().unwrap_or("") != cs.image)
            }
            None => true,
        })
}

/// `IsPodStateConsistent(pod, containers)`: as many container statuses as containers; then every listed
/// sidecar (all of the SidecarSet's when `only` is `None`), in the pod's container order, uses a digest image
/// matching its status imageID; at the first one that does not use a digest the comparison stops and the
/// in-place update must be complete instead (§9, `IsPodStateConsistent`).
pub fn is_pod_state_consistent(
    pod: &SlimPod,
    set: &SidecarSet,
    only: Option<&BTreeSet<String>>,
) -> bool {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, Vec::len);
    if containers(pod).len() != statuses {
        return false;
    }
    let all;
    let names = match only {
        Some(names) if !names.is_empty() => names,
        _ => {
            all = sidecar_container_names(set);
            &all
        }
    };
    let mut all_digest = true;
    for container in containers(pod)
        .iter()
        .filter(|c| names.contains(c.name.as_str()))
    {
        if !is_image_digest(container.image.as_deref().unwrap_or("")) {
            // OpenKruise stops at the first sidecar without a digest: later digests are not compared.
            all_digest = false;
            break;
        }
        if !container_digest_matches(pod, container) {
            return false;
        }
    }
    all_digest
        || is_sidecar_container_update_completed(
            pod,
            &BTreeSet::from([set.name().to_owned()]),
            names,
        )
}

/// `IsPodReady` of the SidecarSet control: running and ready, and every hot-upgrade empty copy uses its
/// `hotUpgradeEmptyImage` (when one is set).
pub fn is_pod_ready(pod: &SlimPod, set: &SidecarSet) -> bool {
    let mut empty_images: BTreeMap<String, &str> = BTreeMap::new();
    for c in set.spec.containers.iter().filter(|c| is_hot_upgrade(c)) {
        let (_, empty) = hot_upgrade_containers(pod, &c.view.name);
        empty_images.insert(empty, &c.view.upgrade_strategy.hot_upgrade_empty_image);
    }
    let empty_ok = containers(pod)
        .iter()
        .all(|c| match empty_images.get(c.name.as_str()) {
            Some(empty) if !empty.is_empty() => c.image.as_deref() == Some(*empty),
            _ => true,
        });
    empty_ok && pod.is_running_and_ready()
}

/// The pod's `kruise.io/sidecarset-hash` entries: the current shape, else the legacy name-to-hash map; an
/// unreadable annotation has none.
fn pod_upgrade_specs(pod: &SlimPod) -> BTreeMap<String, UpgradeSpec> {
    pod_upgrade_specs_of(pod, HASH_ANNOTATION)
}

/// The entries of the pod's hash annotation `key` (with or without image), read as [`pod_upgrade_specs`].
pub(crate) fn pod_upgrade_specs_of(pod: &SlimPod, key: &str) -> BTreeMap<String, UpgradeSpec> {
    let Some(raw) = annotation(pod, key).filter(|v| !v.is_empty()) else {
        return BTreeMap::new();
    };
    if let Ok(specs) = serde_json::from_str::<BTreeMap<String, UpgradeSpec>>(raw) {
        return specs;
    }
    serde_json::from_str::<BTreeMap<String, String>>(raw)
        .map(|legacy| {
            legacy
                .into_iter()
                .map(|(name, hash)| (name, UpgradeSpec::legacy(hash, String::new())))
                .collect()
        })
        .unwrap_or_default()
}

/// The hash the pod records for the SidecarSet (`GetPodSidecarSetRevision`), `""` when none.
pub fn pod_sidecarset_hash(pod: &SlimPod, set_name: &str) -> String {
    pod_hash_of(pod, HASH_ANNOTATION, set_name)
}

/// An entry of a hash annotation as far as its hash is read: the field types of [`UpgradeSpec`] (so
/// exactly the annotations that decode as [`pod_upgrade_specs_of`] reads them decode here), borrowed from
/// the text instead of copied. The controller reads one entry of every matched pod per round.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // every field is decoded for its type check; only `hash` is read
struct BorrowedSpec<'a> {
    #[serde(default, borrow)]
    update_timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    hash: Cow<'a, str>,
    #[serde(default, borrow)]
    sidecar_set_name: Cow<'a, str>,
    #[serde(default, borrow)]
    sidecar_list: Option<Vec<Cow<'a, str>>>,
    #[serde(default, borrow)]
    controller_revision: Option<Cow<'a, str>>,
}

/// The hash of `set_name`'s entry in the pod's hash annotation `key`: [`pod_upgrade_specs_of`]'s reading
/// (the current shape, else the legacy name-to-hash map, else none), without copying the other entries.
pub(crate) fn pod_hash_of(pod: &SlimPod, key: &str, set_name: &str) -> String {
    let Some(raw) = annotation(pod, key).filter(|v| !v.is_empty()) else {
        return String::new();
    };
    if let Ok(specs) = serde_json::from_str::<BTreeMap<Cow<'_, str>, BorrowedSpec<'_>>>(raw) {
        return specs
            .get(set_name)
            .map(|s| s.hash.clone().into_owned())
            .unwrap_or_default();
    }
    serde_json::from_str::<BTreeMap<Cow<'_, str>, Cow<'_, str>>>(raw)
        .ok()
        .and_then(|legacy| legacy.get(set_name).map(|h| h.clone().into_owned()))
        .unwrap_or_default()
}

/// The ControllerRevision the pod records for the SidecarSet (`GetPodSidecarSetControllerRevision`).
pub fn pod_controller_revision(pod: &SlimPod, set_name: &str) -> Option<String> {
    pod_upgrade_specs(pod)
        .remove(set_name)
        .and_then(|s| s.controller_revision)
        .filter(|r| !r.is_empty())
}

/// Updated: the pod's recorded hash equals the SidecarSet's hash annotation (`IsPodSidecarUpdated`; both
/// empty counts as updated).
pub fn is_pod_sidecar_updated(set: &SidecarSet, pod: &SlimPod) -> bool {
    set.annotation(HASH_ANNOTATION).unwrap_or("") == pod_sidecarset_hash(pod, set.name())
}

// ---------------------------------------------------------------------------------------------------------
// Matching pods
// ---------------------------------------------------------------------------------------------------------

/// How the controller reads a selector (`util.ValidatedLabelSelectorAsSelector`): `None` selects nothing,
/// an empty selector everything (unlike injection, §4.3), an invalid one is an error.
fn controller_selects(
    sel: Option<&LabelSelector>,
    labels: &impl selector::Labels,
) -> Result<bool, String> {
    let Some(sel) = sel else {
        return Ok(false);
    };
    if let Some(e) = selector_error(sel) {
        return Err(e);
    }
    Ok(selector::matches(sel, labels))
}

/// The pods the SidecarSet's status counts (§9 "Matching pods"): selected by `spec.selector`, in a namespace
/// `namespaceSelector` selects (every namespace when it is unset; `namespace_labels` answers `None` for a
/// namespace that does not exist), active, injected by this SidecarSet and consistent with it. Sorted by
/// namespace and name (DECISIONS 12).
///
/// # Errors
/// The text of an invalid `selector` or `namespaceSelector`.
pub fn matching_pods<'a, F>(
    set: &SidecarSet,
    pods: impl IntoIterator<Item = &'a Arc<SlimPod>>,
    namespace_labels: F,
) -> Result<Vec<Arc<SlimPod>>, String>
where
    F: Fn(&str) -> Option<BTreeMap<String, String>>,
{
    if let Some(sel) = &set.spec.selector
        && let Some(e) = selector_error(sel)
    {
        return Err(format!("spec.selector: {e}"));
    }
    if let Some(sel) = &set.spec.namespace_selector
        && let Some(e) = selector_error(sel)
    {
        return Err(format!("spec.namespaceSelector: {e}"));
    }
    let mut namespaces: BTreeMap<String, bool> = BTreeMap::new();
    let mut out = Vec::new();
    for pod in pods {
        if !controller_selects(set.spec.selector.as_ref(), &pod.labels)? {
            continue;
        }
        if let Some(ns_sel) = &set.spec.namespace_selector {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let selected = match namespaces.get(&ns) {
                Some(s) => *s,
                None => {
                    let s = match namespace_labels(&ns) {
                        Some(labels) => controller_selects(Some(ns_sel), &labels)?,
                        None => false,
                    };
                    namespaces.insert(ns, s);
                    s
                }
            };
            if !selected {
                continue;
            }
        }
        if pod.is_active()
            && is_pod_injected(pod, set.name())
            && is_pod_consistent_with_sidecarset(pod, set)
        {
            out.push(pod.clone());
        }
    }
    out.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    Ok(out)
}

// ---------------------------------------------------------------------------------------------------------
// Status
// ---------------------------------------------------------------------------------------------------------

/// The status the SidecarSet should report (`calculateStatus`, §9 "Status"): counts over `matched` (from
/// [`matching_pods`]), `observedGeneration = metadata.generation`, and the revision outcome of
/// [`plan_revisions`].
pub fn desired_status(
    set: &SidecarSet,
    matched: &[Arc<SlimPod>],
    latest_revision: &str,
    collision_count: i32,
) -> SidecarSetStatus {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let (mut updated, mut ready, mut updated_ready) = (0, 0, 0);
    let names = sidecar_container_names(set);
    for pod in matched {
        let is_updated = is_pod_sidecar_updated(set, pod);
        if is_updated {
            updated += 1;
        }
        if is_pod_state_consistent(pod, set, Some(&names)) && is_pod_ready(pod, set) {
            ready += 1;
            if is_updated {
                updated_ready += 1;
            }
        }
    }
    SidecarSetStatus {
        observed_generation: Some(set.metadata.generation.unwrap_or(0)),
        matched_pods: count(matched.len()),
        updated_pods: count(updated),
        ready_pods: count(ready),
        updated_ready_pods: count(updated_ready),
        latest_revision: Some(latest_revision.to_owned()).filter(|r| !r.is_empty()),
        collision_count: Some(collision_count),
    }
}

/// Whether `desired` must be written over `current` (`inconsistentStatus`): a newer observedGeneration, or
/// any count, the latest revision or the collision count differs.
pub fn status_changed(current: Option<&SidecarSetStatus>, desired: &SidecarSetStatus) -> bool {
    let empty = SidecarSetStatus::default();
    let current = current.unwrap_or(&empty);
    desired.observed_generation.unwrap_or(0) > current.observed_generation.unwrap_or(0)
        || desired.matched_pods != current.matched_pods
        || desired.updated_pods != current.updated_pods
        || desired.ready_pods != current.ready_pods
        || desired.updated_ready_pods != current.updated_ready_pods
        || desired.latest_revision.as_deref().unwrap_or("")
            != current.latest_revision.as_deref().unwrap_or("")
        || desired.collision_count != current.collision_count
}

// ---------------------------------------------------------------------------------------------------------
// Revisions
// ---------------------------------------------------------------------------------------------------------

/// A `[]SidecarContainer` field as Go encodes it into the revision (`null` when empty).
fn containers_value(list: &[SidecarContainer]) -> Value {
    if list.is_empty() {
        return Value::Null;
    }
    let raw: Vec<Value> = list.iter().map(|c| c.raw().to_value()).collect();
    serde_json::from_str(&encode_containers(&raw)).unwrap_or(Value::Null)
}

/// The ControllerRevision `data` of the SidecarSet (§9 "Revisions"):
/// `{"spec":{"$patch":"replace","containers":…,"imagePullSecrets":…,"initContainers":…,"patchPodMetadata":…,"volumes":…}}`,
/// as Go marshals what it decoded ([`go::marshal_decoded`]), with what Go omits (empty lists) as `null`. Containers go through the Go
/// encoder of the hash (§7.2); volumes are recorded as stored (Go would re-encode them through
/// `corev1.Volume`: a stored form that differs from Go's only costs one extra revision after a swap, §12).
pub fn revision_data(set: &SidecarSet) -> String {
    let spec = &set.spec;
    let or_null = |v: Vec<Value>| {
        if v.is_empty() {
            Value::Null
        } else {
            Value::Array(v)
        }
    };
    let secrets = spec
        .image_pull_secrets
        .iter()
        .map(|s| {
            if s.name.is_empty() {
                json!({})
            } else {
                json!({"name": s.name})
            }
        })
        .collect();
    let patch_pod_metadata = spec
        .patch_pod_metadata
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .collect();
    let data = json!({"spec": {
        "$patch": "replace",
        "containers": containers_value(&spec.containers),
        "imagePullSecrets": or_null(secrets),
        "initContainers": containers_value(&spec.init_containers),
        "patchPodMetadata": or_null(patch_pod_metadata),
        "volumes": or_null(spec.volumes.iter().map(RawObject::to_value).collect()),
    }});
    go::marshal_decoded(&data)
}

/// FNV-1 32-bit (Go's `hash/fnv.New32`, not `New32a`): multiply, then xor.
pub fn fnv32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        h.wrapping_mul(0x0100_0193) ^ u32::from(*b)
    })
}

/// `history.HashControllerRevision`: FNV-32 of `data` then the collision count as decimal text, printed in
/// decimal with every digit mapped through the safe alphabet (`0→4 … 5→9, 6→b, 7→c, 8→d, 9→f`).
pub fn revision_hash(data: &str, collision_count: Option<i32>) -> String {
    let mut bytes = data.as_bytes().to_vec();
    if let Some(n) = collision_count {
        bytes.extend_from_slice(n.to_string().as_bytes());
    }
    fnv32(&bytes)
        .to_string()
        .bytes()
        .map(|c| char::from(SAFE_ALPHABET[usize::from(c) % SAFE_ALPHABET.len()]))
        .collect()
}

/// `history.ControllerRevisionName`: `<prefix cut to 223 characters>-<hash>`.
pub fn revision_name(set_name: &str, hash: &str) -> String {
    let prefix: String = set_name.chars().take(MAX_REVISION_PREFIX).collect();
    format!("{prefix}-{hash}")
}

/// A ControllerRevision to create, with its `data` as the exact text to send and compare.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRevision {
    /// The object (its `data` is [`NewRevision::data`], parsed).
    pub revision: ControllerRevision,
    /// The canonical `data` text ([`revision_data`]).
    pub data: String,
}

impl NewRevision {
    /// The revision's name.
    pub fn name(&self) -> &str {
        self.revision.metadata.name.as_deref().unwrap_or("")
    }

    /// The same revision under the name a higher collision count gives (`CreateControllerRevision`'s loop:
    /// only the name changes, the hash label keeps the first hash).
    pub fn renamed(&self, set_name: &str, collision_count: i32) -> Self {
        let mut next = self.clone();
        next.revision.metadata.name = Some(revision_name(
            set_name,
            &revision_hash(&self.data, Some(collision_count)),
        ));
        next
    }

    /// The revision as the cache will hold it once created.
    pub fn stored(&self) -> SlimRevision {
        SlimRevision {
            metadata: self.revision.metadata.clone(),
            data: RawValue::from_string(self.data.clone()).ok(),
            revision: self.revision.revision,
        }
    }

    /// The JSON body of the create request, with `data` byte for byte as [`NewRevision::data`].
    pub fn body(&self) -> String {
        let mut without_data = self.revision.clone();
        without_data.data = None;
        let mut text = serde_json::to_string(&without_data).unwrap_or_else(|_| "{}".to_owned());
        // The object always has apiVersion and kind, so it is a non-empty JSON object.
        text.pop();
        let _ = write!(text, ",\"data\":{}}}", self.data);
        text
    }
}

/// The candidate revision of the SidecarSet (`NewRevision`, §9): in `namespace`, named by the hash of its
/// data and `collision_count`; the SidecarSet's labels plus the hash, name and custom-version labels; all
/// of its annotations; a controller owner reference to it; `.revision = revision`.
pub fn candidate_revision(
    set: &SidecarSet,
    namespace: &str,
    revision: i64,
    collision_count: i32,
) -> NewRevision {
    let data = revision_data(set);
    let hash = revision_hash(&data, Some(collision_count));
    let mut labels = set.metadata.labels.clone().unwrap_or_default();
    labels.insert(REVISION_HASH_LABEL.to_owned(), hash.clone());
    if let Some(custom) = set.spec.custom_version.as_deref().filter(|c| !c.is_empty()) {
        labels.insert(CUSTOM_VERSION_LABEL.to_owned(), custom.to_owned());
    }
    labels.insert(SIDECARSET_NAME_LABEL.to_owned(), set.name().to_owned());
    let annotations = set.metadata.annotations.clone().filter(|a| !a.is_empty());
    let owner = OwnerReference {
        api_version: "apps.kruise.io/v1beta1".to_owned(),
        kind: "SidecarSet".to_owned(),
        name: set.name().to_owned(),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let parsed = serde_json::from_str(&data).unwrap_or(Value::Null);
    NewRevision {
        revision: ControllerRevision {
            metadata: ObjectMeta {
                name: Some(revision_name(set.name(), &hash)),
                namespace: Some(namespace.to_owned()),
                labels: Some(labels),
                annotations,
                owner_references: Some(vec![owner]),
                ..ObjectMeta::default()
            },
            data: Some(RawExtension(parsed)),
            revision,
        },
        data,
    }
}

/// The canonical text of a stored revision's `data` (`""` without data; data that is not JSON as it is).
fn stored_data(r: &SlimRevision) -> String {
    match r.data.as_deref() {
        None => String::new(),
        Some(raw) => serde_json::from_str::<Value>(raw.get())
            .map_or_else(|_| raw.get().to_owned(), |v| go::marshal_decoded(&v)),
    }
}

/// Whether a stored revision records exactly `data` (the byte comparison of `CreateControllerRevision`).
pub fn same_data(existing: &SlimRevision, data: &str) -> bool {
    stored_data(existing) == data
}

/// The hash label read as Go's `strconv.ParseInt(…, 10, 32)` does (it only parses when every mapped digit
/// happens to be a decimal digit).
fn hash_label_number(meta: &ObjectMeta) -> Option<u32> {
    let label = meta.labels.as_ref()?.get(REVISION_HASH_LABEL)?;
    label.parse::<i32>().ok().map(|n| n.cast_unsigned())
}

/// `history.EqualRevision`: hash labels, when both parse as numbers, must agree; then the data must be equal.
fn equal_revision(stored: &SlimRevision, candidate: &NewRevision) -> bool {
    if let (Some(a), Some(b)) = (
        hash_label_number(&stored.metadata),
        hash_label_number(&candidate.revision.metadata),
    ) && a != b
    {
        return false;
    }
    stored_data(stored) == candidate.data
}

/// `history.SortControllerRevisions` order: `.revision`, then creation time, then name.
fn revision_order(a: &SlimRevision, b: &SlimRevision) -> Ordering {
    a.revision
        .cmp(&b.revision)
        .then_with(|| {
            let time = |r: &SlimRevision| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
            time(a).cmp(&time(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The SidecarSet's revisions (`ListControllerRevisions`): those labelled with its name whose controller is
/// this SidecarSet (by uid) or that have no controller, sorted ([`revision_order`]).
pub fn owned_revisions(
    set: &SidecarSet,
    revisions: &[Arc<SlimRevision>],
) -> Vec<Arc<SlimRevision>> {
    let uid = set.metadata.uid.as_deref().unwrap_or("");
    let mut owned: Vec<Arc<SlimRevision>> = revisions
        .iter()
        .filter(|r| {
            r.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SIDECARSET_NAME_LABEL))
                .is_some_and(|n| n == set.name())
        })
        .filter(|r| {
            r.metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .is_none_or(|o| o.uid == uid)
        })
        .cloned()
        .collect();
    owned.sort_by(|a, b| revision_order(a, b));
    owned
}

/// One ControllerRevision write.
#[derive(Debug, Clone, PartialEq)]
pub enum RevisionOp {
    /// Create the candidate (the SidecarSet changed). On AlreadyExists: [`same_data`] adopts the existing
    /// one, otherwise the collision count goes up and [`NewRevision::renamed`] is tried.
    Create(Box<NewRevision>),
    /// Give an older equal revision the next `.revision` (a rollback).
    Renumber {
        /// The revision.
        name: String,
        /// Its new `.revision`.
        revision: i64,
    },
    /// Set `apps.kruise.io/sidecarset-custom-version` on the latest revision.
    PatchCustomVersion {
        /// The revision.
        name: String,
        /// `spec.customVersion`.
        custom_version: String,
    },
    /// Delete an old, inactive revision (history truncation; NotFound is fine).
    Delete {
        /// The revision.
        name: String,
    },
}

/// What [`plan_revisions`] decided.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionPlan {
    /// `status.latestRevision` once the operations are done (a create that collides changes it).
    pub latest_revision: String,
    /// `status.collisionCount` (a create that collides raises it).
    pub collision_count: i32,
    /// The writes, in order.
    pub ops: Vec<RevisionOp>,
    /// History could not be cut to the limit because too many revisions are in use: the text to log.
    pub history_error: Option<String>,
}

/// The label patch the latest revision needs when `spec.customVersion` is set and differs from its label
/// (`updateCustomVersionLabel`).
pub fn custom_version_op(set: &SidecarSet, latest: &SlimRevision) -> Option<RevisionOp> {
    let custom = set
        .spec
        .custom_version
        .as_deref()
        .filter(|c| !c.is_empty())?;
    let current = latest
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CUSTOM_VERSION_LABEL));
    (current.map(String::as_str) != Some(custom)).then(|| RevisionOp::PatchCustomVersion {
        name: latest.metadata.name.clone().unwrap_or_default(),
        custom_version: custom.to_owned(),
    })
}

/// Revisions still in use (`filterActiveRevisions`): recorded by a matched pod, named by
/// `injectionStrategy.revision.revisionName`, or the newest carrying `injectionStrategy.revision.customVersion`.
fn active_revisions(
    set: &SidecarSet,
    matched: &[Arc<SlimPod>],
    revisions: &[SlimRevision],
) -> BTreeSet<String> {
    let mut active: BTreeSet<String> = matched
        .iter()
        .filter_map(|p| pod_controller_revision(p, set.name()))
        .collect();
    if let Some(pin) = &set.spec.injection_strategy.revision {
        if let Some(name) = &pin.revision_name {
            active.insert(name.clone());
        }
        if let Some(custom) = &pin.custom_version {
            let newest = revisions
                .iter()
                .filter(|r| {
                    r.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(CUSTOM_VERSION_LABEL))
                        == Some(custom)
                })
                .max_by(|a, b| revision_order(a, b));
            if let Some(r) = newest {
                active.insert(r.metadata.name.clone().unwrap_or_default());
            }
        }
    }
    active
}

/// Plans the SidecarSet's revisions (`registerLatestRevision` and `truncateHistory`, §9 "Revisions"), from
/// the revisions in `namespace` (any order; [`owned_revisions`] picks the SidecarSet's), its matched pods and
/// its current collision count (`status.collisionCount`, 0 when unset):
/// - an equal revision that is the newest is reused; an older equal one is renumbered to the next
///   `.revision`; otherwise the candidate is created;
/// - the latest revision gets the custom-version label when `spec.customVersion` differs from it;
/// - the oldest inactive revisions beyond `revisionHistoryLimit` (10 when unset, at least 1) are deleted,
///   never the latest.
pub fn plan_revisions(
    set: &SidecarSet,
    revisions: &[Arc<SlimRevision>],
    matched: &[Arc<SlimPod>],
    namespace: &str,
    collision_count: i32,
) -> RevisionPlan {
    let owned = owned_revisions(set, revisions);
    let next = owned.last().map_or(1, |r| r.revision + 1);
    let candidate = candidate_revision(set, namespace, next, collision_count);
    let equal: Vec<&SlimRevision> = owned
        .iter()
        .map(|r| &**r)
        .filter(|r| equal_revision(r, &candidate))
        .collect();
    let mut history: Vec<SlimRevision> = owned.iter().map(|r| (**r).clone()).collect();
    let mut ops = Vec::new();
    let latest = match equal.last() {
        Some(eq)
            if owned
                .last()
                .is_some_and(|l| l.metadata.name == eq.metadata.name) =>
        {
            (*eq).clone()
        }
        Some(eq) => {
            let mut renumbered = (*eq).clone();
            renumbered.revision = next;
            ops.push(RevisionOp::Renumber {
                name: renumbered.metadata.name.clone().unwrap_or_default(),
                revision: next,
            });
            // replaceRevision: the renumbered revision moves to the end.
            history.retain(|r| r.metadata.name != renumbered.metadata.name);
            history.push(renumbered.clone());
            renumbered
        }
        None => {
            let created = candidate.stored();
            ops.push(RevisionOp::Create(Box::new(candidate)));
            history.push(created.clone());
            created
        }
    };
    ops.extend(custom_version_op(set, &latest));

    let limit = set
        .spec
        .revision_history_limit
        .map_or(DEFAULT_REVISION_HISTORY_LIMIT, |l| {
            usize::try_from(l.max(1)).unwrap_or(1)
        });
    let mut history_error = None;
    if history.len() > limit {
        let mut to_delete = history.len() - limit;
        let active = active_revisions(set, matched, &history);
        for r in &history[..history.len() - 1] {
            if to_delete == 0 {
                break;
            }
            let name = r.metadata.name.clone().unwrap_or_default();
            if !active.contains(&name) {
                ops.push(RevisionOp::Delete { name });
                to_delete -= 1;
            }
        }
        if to_delete > 0 {
            history_error = Some(format!(
                "failed to limit the number of stored revisions, limited: {limit}, actual: {}, name: {}",
                limit + to_delete,
                set.name()
            ));
        }
    }
    RevisionPlan {
        latest_revision: latest.metadata.name.unwrap_or_default(),
        collision_count,
        ops,
        history_error,
    }
}
