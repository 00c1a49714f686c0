//! What an in-place update writes on one pod (spec/sidecarset.md §9 step 9, §6.2), edited on the pod's JSON
//! as the API server returned it: fields our types do not know are kept (DECISIONS 13).
//!
//! Only container `image`s change. OpenKruise also recomputes each sidecar's merged mounts and envs, but
//! copies nothing but the image into the pod container (`UpdateSidecarContainerToLatest`), so that
//! recomputation has no effect on what is sent and is not repeated here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::{ALL_UPGRADABLE, UPDATE_IMMUTABLE_FIELD, is_hot, without_image_hash_matches};
use crate::api::pod::{SlimPod, UPGRADABLE_CONDITION};
use crate::api::sidecarset::{HASH_ANNOTATION, SidecarContainer, SidecarSet};
use crate::json::{go, merge_patch};
use crate::sidecarset::inject::{
    INJECTED_LIST_ANNOTATION, UpgradeSpec, WORKING_HOT_UPGRADE_ANNOTATION,
};
use crate::sidecarset::status::{
    INPLACE_UPDATE_STATE_ANNOTATION, hot_upgrade_containers, is_pod_sidecar_updated,
    is_pod_state_consistent,
};

/// `version.sidecarset.kruise.io/<container>`.
pub fn version_annotation(container: &str) -> String {
    format!("version.sidecarset.kruise.io/{container}")
}

/// `versionalt.sidecarset.kruise.io/<container>`.
pub fn version_alt_annotation(container: &str) -> String {
    format!("versionalt.sidecarset.kruise.io/{container}")
}

/// Why a pod is left as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The object is not a pod the edit can read.
    #[error("pod is not readable: {0}")]
    Shape(String),
    /// An annotation the update rewrites does not parse; writing over it would lose what it records.
    #[error("invalid annotations[{key}] value {value}: {reason}")]
    Corrupt {
        /// The annotation.
        key: &'static str,
        /// Its value.
        value: String,
        /// The decoder's message.
        reason: String,
    },
    /// The pod already records the SidecarSet's hash (someone updated it since the plan).
    #[error("pod already runs sidecarset {0}'s revision")]
    AlreadyUpdated(String),
    /// The pod's without-image hash differs: only a recreate brings it up to date.
    #[error("pod is not upgradable: a field other than an image changed in sidecarset {0}")]
    NotUpgradable(String),
    /// `patchPodMetadata` with `MergePatchJson` over a value that is not JSON.
    #[error("patchPodMetadata: {0}")]
    MergePatch(String),
}

fn slim(pod: &Value) -> Result<SlimPod, EditError> {
    serde_json::from_value(pod.clone()).map_err(|e| EditError::Shape(e.to_string()))
}

fn annotations(pod: &Value) -> Option<&Map<String, Value>> {
    pod.get("metadata")?.get("annotations")?.as_object()
}

fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    annotations(pod)?.get(key)?.as_str()
}

fn annotations_mut(pod: &mut Value) -> Result<&mut Map<String, Value>, EditError> {
    let meta = pod
        .as_object_mut()
        .ok_or_else(|| EditError::Shape("not an object".into()))?
        .entry("metadata")
        .or_insert_with(|| json!({}));
    if meta.get("annotations").is_none_or(Value::is_null) {
        meta.as_object_mut()
            .ok_or_else(|| EditError::Shape("metadata is not an object".into()))?
            .insert("annotations".into(), json!({}));
    }
    meta["annotations"]
        .as_object_mut()
        .ok_or_else(|| EditError::Shape("metadata.annotations is not an object".into()))
}

fn set_annotation(pod: &mut Value, key: &str, value: String) -> Result<(), EditError> {
    annotations_mut(pod)?.insert(key.to_owned(), Value::String(value));
    Ok(())
}

/// The hash annotation's entries, strictly: the current shape, else the legacy map; neither is an error.
fn hash_entries(pod: &Value) -> Result<BTreeMap<String, UpgradeSpec>, EditError> {
    let Some(raw) = annotation(pod, HASH_ANNOTATION).filter(|v| !v.is_empty()) else {
        return Ok(BTreeMap::new());
    };
    match serde_json::from_str::<BTreeMap<String, UpgradeSpec>>(raw) {
        Ok(specs) => Ok(specs),
        Err(e) => serde_json::from_str::<BTreeMap<String, String>>(raw)
            .map(|legacy| {
                legacy
                    .into_iter()
                    .map(|(name, hash)| {
                        let spec = UpgradeSpec::legacy(hash, name.clone());
                        (name, spec)
                    })
                    .collect()
            })
            .map_err(|_| EditError::Corrupt {
                key: HASH_ANNOTATION,
                value: raw.to_owned(),
                reason: e.to_string(),
            }),
    }
}

/// The in-place update state annotation, strictly (absent is empty).
fn inplace_states(pod: &Value) -> Result<Map<String, Value>, EditError> {
    let Some(raw) = annotation(pod, INPLACE_UPDATE_STATE_ANNOTATION).filter(|v| !v.is_empty())
    else {
        return Ok(Map::new());
    };
    serde_json::from_str::<Map<String, Value>>(raw).map_err(|e| EditError::Corrupt {
        key: INPLACE_UPDATE_STATE_ANNOTATION,
        value: raw.to_owned(),
        reason: e.to_string(),
    })
}

fn image_of(c: &SidecarContainer) -> String {
    c.raw()
        .to_value()
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn containers_mut(pod: &mut Value) -> Result<&mut Vec<Value>, EditError> {
    pod.get_mut("spec")
        .and_then(|s| s.get_mut("containers"))
        .and_then(Value::as_array_mut)
        .ok_or_else(|| EditError::Shape("spec.containers is not a list".into()))
}

fn pod_image<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    pod.get("spec")?
        .get("containers")?
        .as_array()?
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name))?
        .get("image")?
        .as_str()
}

fn set_image(pod: &mut Value, name: &str, image: &str) -> Result<bool, EditError> {
    let containers = containers_mut(pod)?;
    let Some(c) = containers
        .iter_mut()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
    else {
        return Ok(false);
    };
    match c.as_object_mut() {
        Some(obj) => {
            obj.insert("image".into(), Value::String(image.to_owned()));
            Ok(true)
        }
        None => Err(EditError::Shape(format!(
            "container {name} is not an object"
        ))),
    }
}

fn status_image_id<'a>(pod: &'a SlimPod, name: &str) -> &'a str {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .find(|s| s.name == name)
        .map_or("", |s| s.image_id.as_str())
}

fn container_ready(pod: &SlimPod, name: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .any(|s| s.name == name && s.ready)
}

/// Which copy of hot-upgrade sidecar `c` takes the new image (§6.2): `(upgrade, other)`. The copy running
/// the empty image; else the only copy that is not ready and consistent; else the idle copy.
pub fn hot_upgrade_target(
    set: &SidecarSet,
    pod: &SlimPod,
    c: &SidecarContainer,
) -> (String, String) {
    let name = &c.view.name;
    let (one, two) = (format!("{name}-1"), format!("{name}-2"));
    let image = |n: &str| {
        pod.spec
            .as_ref()
            .and_then(|s| s.containers.iter().find(|pc| pc.name == n))
            .and_then(|pc| pc.image.clone())
            .unwrap_or_default()
    };
    let empty = &c.view.upgrade_strategy.hot_upgrade_empty_image;
    if image(&one) == *empty {
        return (one, two);
    }
    if image(&two) == *empty {
        return (two, one);
    }
    let ok = |n: &str| {
        container_ready(pod, n)
            && is_pod_state_consistent(pod, set, Some(&BTreeSet::from([n.to_owned()])))
    };
    match (ok(&one), ok(&two)) {
        (true, false) => return (two, one),
        (false, true) => return (one, two),
        _ => {}
    }
    let (working, idle) = hot_upgrade_containers(pod, name);
    (idle, working)
}

/// Records the pre-update imageIDs of `changed` under the SidecarSet in the in-place update state: an
/// entry for the same revision is extended, any other replaced.
fn record_inplace_state(
    pod: &mut Value,
    slim: &SlimPod,
    set: &SidecarSet,
    changed: &[String],
    now: &str,
) -> Result<(), EditError> {
    if changed.is_empty() {
        return Ok(());
    }
    let mut states = inplace_states(pod)?;
    let revision = set.annotation(HASH_ANNOTATION).unwrap_or("");
    let entry = states
        .entry(set.name().to_owned())
        .or_insert_with(|| json!({}));
    if entry.get("revision").and_then(Value::as_str) != Some(revision) || !entry.is_object() {
        *entry = json!({"revision": revision, "updateTimestamp": now, "lastContainerStatuses": {}});
    }
    let obj = entry.as_object_mut().expect("an object, set just above");
    let last = obj
        .entry("lastContainerStatuses")
        .or_insert_with(|| json!({}));
    if !last.is_object() {
        *last = json!({});
    }
    let last = last.as_object_mut().expect("an object, set just above");
    for name in changed {
        if !last.contains_key(name) {
            let id = status_image_id(slim, name);
            let status = if id.is_empty() {
                json!({})
            } else {
                json!({"imageID": id})
            };
            last.insert(name.clone(), status);
        }
    }
    set_annotation(pod, INPLACE_UPDATE_STATE_ANNOTATION, go::to_string(&states))
}

/// Re-applies `patchPodMetadata` (§4.5) on the pod's annotations.
fn patch_pod_metadata(pod: &mut Value, set: &SidecarSet) -> Result<(), EditError> {
    for entry in &set.spec.patch_pod_metadata {
        for (key, value) in &entry.annotations {
            let existing = annotation(pod, key).map(str::to_owned);
            let next = match entry.patch_policy.as_str() {
                "Overwrite" => value.clone(),
                "MergePatchJson" => match existing.filter(|e| !e.is_empty()) {
                    Some(existing) => merge_patch(&existing, value)
                        .map_err(|e| EditError::MergePatch(e.to_owned()))?,
                    None => value.clone(),
                },
                "Retain" | "" => match existing {
                    Some(_) => continue,
                    None => value.clone(),
                },
                _ => continue,
            };
            set_annotation(pod, key, next)?;
        }
    }
    Ok(())
}

/// Updates the pod to the SidecarSet's latest revision (§9 step 9, §6.2): images of its sidecars (for hot
/// upgrade, on the copy [`hot_upgrade_target`] picks, with the work map and version annotations), the hash
/// entry, the in-place update state, the injected list when missing, and patchPodMetadata. Returns the
/// containers whose image changed.
///
/// # Errors
/// [`EditError`]: the pod is left as it is (an error leaves `pod` partly edited: do not send it).
pub fn update_pod(pod: &mut Value, set: &SidecarSet, now: &str) -> Result<Vec<String>, EditError> {
    let slim = slim(pod)?;
    let mut specs = hash_entries(pod)?;
    inplace_states(pod)?;
    if is_pod_sidecar_updated(set, &slim) {
        return Err(EditError::AlreadyUpdated(set.name().to_owned()));
    }
    if !without_image_hash_matches(set, &slim) {
        return Err(EditError::NotUpgradable(set.name().to_owned()));
    }
    let mut changed = Vec::new();
    let mut work: BTreeMap<String, String> = annotation(pod, WORKING_HOT_UPGRADE_ANNOTATION)
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default();
    let mut versions: Vec<(String, String)> = Vec::new();
    let set_version = set.metadata.resource_version.clone().unwrap_or_default();
    for c in &set.spec.containers {
        let image = image_of(c);
        if is_hot(c) {
            let (working, _) = hot_upgrade_containers(&slim, &c.view.name);
            if pod_image(pod, &working) == Some(image.as_str()) {
                continue;
            }
            let (target, other) = hot_upgrade_target(set, &slim, c);
            if set_image(pod, &target, &image)? {
                changed.push(target.clone());
                let other_version = annotation(pod, &version_annotation(&other))
                    .unwrap_or("")
                    .to_owned();
                work.insert(c.view.name.clone(), target.clone());
                versions.push((version_annotation(&target), set_version.clone()));
                versions.push((version_alt_annotation(&target), other_version));
                versions.push((version_alt_annotation(&other), set_version.clone()));
            }
        } else if pod_image(pod, &c.view.name).is_some_and(|i| i != image)
            && set_image(pod, &c.view.name, &image)?
        {
            changed.push(c.view.name.clone());
        }
    }
    if set.spec.containers.iter().any(is_hot) {
        set_annotation(pod, WORKING_HOT_UPGRADE_ANNOTATION, go::to_string(&work))?;
    }
    for (key, value) in versions {
        set_annotation(pod, &key, value)?;
    }
    let mut list: Vec<String> = set
        .spec
        .init_containers
        .iter()
        .filter(|c| c.is_native_sidecar())
        .chain(&set.spec.containers)
        .map(|c| c.view.name.clone())
        .collect();
    list.sort();
    specs.insert(
        set.name().to_owned(),
        UpgradeSpec {
            update_timestamp: Some(now.to_owned()),
            hash: set.annotation(HASH_ANNOTATION).unwrap_or("").to_owned(),
            sidecar_set_name: set.name().to_owned(),
            sidecar_list: Some(list),
            controller_revision: set
                .status
                .as_ref()
                .and_then(|s| s.latest_revision.clone())
                .filter(|r| !r.is_empty()),
        },
    );
    set_annotation(pod, HASH_ANNOTATION, go::to_string(&specs))?;
    record_inplace_state(pod, &slim, set, &changed, now)?;
    if annotation(pod, INJECTED_LIST_ANNOTATION).is_none_or(str::is_empty) {
        set_annotation(pod, INJECTED_LIST_ANNOTATION, set.name().to_owned())?;
    }
    patch_pod_metadata(pod, set)?;
    Ok(changed)
}

/// Sends the idle copy of each hot-upgrade sidecar back to the empty image (§6.2 "Flip to empty"):
/// `version.<idle> = "0"`, `versionalt.<working> = "0"`, the in-place update state recorded. Returns the
/// flipped containers (none: nothing to do).
///
/// # Errors
/// [`EditError`]: the pod is left as it is.
pub fn flip_pod(pod: &mut Value, set: &SidecarSet, now: &str) -> Result<Vec<String>, EditError> {
    let slim = slim(pod)?;
    inplace_states(pod)?;
    let mut changed = Vec::new();
    for c in set.spec.containers.iter().filter(|c| is_hot(c)) {
        let empty = &c.view.upgrade_strategy.hot_upgrade_empty_image;
        let (working, idle) = hot_upgrade_containers(&slim, &c.view.name);
        if empty.is_empty() || pod_image(pod, &idle).is_none_or(|i| i == empty) {
            continue;
        }
        if set_image(pod, &idle, empty)? {
            set_annotation(pod, &version_annotation(&idle), "0".into())?;
            set_annotation(pod, &version_alt_annotation(&working), "0".into())?;
            changed.push(idle);
        }
    }
    record_inplace_state(pod, &slim, set, &changed, now)?;
    Ok(changed)
}

/// The status strategic-merge patch that records `upgradable` for the SidecarSet in the pod's
/// `SidecarSetUpgradable` condition (§9 step 9); `None` when the condition already says so.
pub fn upgradable_condition_patch(
    pod: &SlimPod,
    set_name: &str,
    upgradable: bool,
    now: &str,
) -> Option<Value> {
    let current = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == UPGRADABLE_CONDITION);
    let mut map: BTreeMap<String, bool> = current
        .and_then(|c| c.message.as_deref())
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_default();
    if map.get(set_name) == Some(&upgradable) {
        return None;
    }
    map.insert(set_name.to_owned(), upgradable);
    let (status, reason) = if map.values().all(|v| *v) {
        ("True", ALL_UPGRADABLE)
    } else {
        ("False", UPDATE_IMMUTABLE_FIELD)
    };
    let transition = match current {
        Some(c) if c.status == status => c
            .last_transition_time
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| now.to_owned()),
        _ => now.to_owned(),
    };
    Some(json!({"status": {"conditions": [{
        "type": UPGRADABLE_CONDITION,
        "status": status,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": go::to_string(&map),
    }]}}))
}
