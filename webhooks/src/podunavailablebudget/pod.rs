//! The pod predicates of spec/podunavailablebudget.md §4.1, on the pod as the cache holds it ([`SlimPod`]; a
//! request's pod is decoded into the same shape), and the PUB a pod names.
//!
//! The consistency check (§4.1 "consistent") follows OpenKruise's steps 1, 2 and 3a, 3b, 3c (container ids
//! and the resize), 3e. Not checked: the env-from-metadata hash of step 3c and the container hashes of step
//! 3d, which need kruise-daemon's hashing of the full container spec; a pod that only those would call
//! consistent is read by step 3e instead.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::api::pod::{SlimContainerStatus, SlimPod};
use crate::api::podunavailablebudget::{
    DEPRECATED_RELATED_PUB_ANNOTATION, NO_PROTECT_ANNOTATION, RELATED_PUB_ANNOTATION,
    UNAVAILABLE_POD_LABEL_PREFIX,
};

/// In-place update state written by CloneSet / Advanced StatefulSet (container-launch-priority.md §6.1).
pub const INPLACE_UPDATE_STATE_ANNOTATION: &str = "apps.kruise.io/inplace-update-state";
/// Legacy key of [`INPLACE_UPDATE_STATE_ANNOTATION`].
pub const INPLACE_UPDATE_STATE_LEGACY: &str = "inplace-update-state";
/// The pending update of an in-place update waiting for its grace period.
pub const INPLACE_UPDATE_GRACE_ANNOTATION: &str = "apps.kruise.io/inplace-update-grace";
/// Legacy key of [`INPLACE_UPDATE_GRACE_ANNOTATION`].
pub const INPLACE_UPDATE_GRACE_LEGACY: &str = "inplace-update-grace";
/// Container metadata written by kruise-daemon.
pub const RUNTIME_CONTAINERS_META_ANNOTATION: &str = "apps.kruise.io/runtime-containers-meta";
/// The SidecarSets whose sidecars a pod carries.
const SIDECARSET_INJECTED_LIST: &str = "kruise.io/sidecarset-injected-list";
/// The in-place sidecar upgrade records: SidecarSet name to the sidecars' last image ids.
const SIDECARSET_INPLACE_UPDATE_STATE: &str = "kruise.io/sidecarset-inplace-update-state";
/// `InPlaceWorkloadVerticalScaling`: in-place resource updates of workloads.
pub const IN_PLACE_WORKLOAD_VERTICAL_SCALING: &str = "InPlaceWorkloadVerticalScaling";

/// The PUB guarding the pod: `pub.kruise.io/related-pub`, else the legacy `kruise.io/related-pub`.
pub fn related_pub(pod: &SlimPod) -> Option<&str> {
    pod.annotations
        .get(RELATED_PUB_ANNOTATION)
        .or_else(|| pod.annotations.get(DEPRECATED_RELATED_PUB_ANNOTATION))
        .filter(|name| !name.is_empty())
}

/// Go's `strconv.ParseBool` true values.
pub fn is_go_true(value: &str) -> bool {
    matches!(value, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

/// `pub.kruise.io/no-protect` set to a boolean true: the pod is never gated.
pub fn is_no_protect(pod: &SlimPod) -> bool {
    pod.annotations
        .get(NO_PROTECT_ANNOTATION)
        .is_some_and(is_go_true)
}

/// Whether the pod carries a label with the prefix `unavailable-pod.kruise.io/`.
pub fn has_unavailable_label(pod: &SlimPod) -> bool {
    pod.labels
        .iter()
        .any(|(k, _)| k.starts_with(UNAVAILABLE_POD_LABEL_PREFIX))
}

/// Ready in the PUB sense: Running, condition Ready True, no deletionTimestamp, no unavailable label.
pub fn is_ready(pod: &SlimPod) -> bool {
    pod.is_running_and_ready() && !has_unavailable_label(pod)
}

/// The repository and digest of an image reference `repo@sha256:...`, if it is one.
fn digest_reference(image: &str) -> Option<(&str, &str)> {
    let (repo, digest) = image.split_once('@')?;
    (!repo.is_empty() && digest.contains(':')).then_some((repo, digest))
}

/// An imageID without its `scheme://` prefix (`docker-pullable://`, `docker://`).
fn strip_scheme(image_id: &str) -> &str {
    image_id
        .split_once("://")
        .map_or(image_id, |(_, rest)| rest)
}

fn status_of<'a>(pod: &'a SlimPod, name: &str) -> Option<&'a SlimContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .iter()
        .flatten()
        .find(|s| s.name == name)
}

/// `apps.kruise.io/inplace-update-state`, as far as the check reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InPlaceUpdateState {
    #[serde(default)]
    last_container_statuses: Option<BTreeMap<String, LastContainerStatus>>,
    #[serde(default)]
    update_env_from_metadata: bool,
    #[serde(default)]
    update_resources: bool,
    #[serde(default)]
    next_container_images: Option<BTreeMap<String, String>>,
    #[serde(default)]
    next_container_ref_metadata: Option<BTreeMap<String, serde::de::IgnoredAny>>,
    #[serde(default)]
    next_container_resources: Option<BTreeMap<String, serde::de::IgnoredAny>>,
}

#[derive(Debug, Default, Deserialize)]
struct LastContainerStatus {
    #[serde(default, rename = "imageID")]
    image_id: String,
}

/// `apps.kruise.io/runtime-containers-meta`, as far as the check reads it.
#[derive(Debug, Default, Deserialize)]
struct RuntimeContainersMeta {
    #[serde(default)]
    containers: Vec<RuntimeContainerMeta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuntimeContainerMeta {
    #[serde(default)]
    name: String,
    #[serde(default, rename = "containerID")]
    container_id: String,
}

/// The sidecar in-place upgrade records: SidecarSet name to its state.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SidecarSetUpgradeState {
    #[serde(default)]
    last_container_statuses: BTreeMap<String, LastContainerStatus>,
}

/// Whether the pod's spec and status agree after in-place updates (§4.1 "consistent"; see the module docs
/// for what is not checked). `vertical_scaling` is the `InPlaceWorkloadVerticalScaling` gate: with it on, a
/// state recording a resource update needs the resize done; the cache does not hold the pod's resize
/// status, so such a pod reads as inconsistent while its state records the update.
pub fn is_consistent(pod: &SlimPod, vertical_scaling: bool) -> bool {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    // 1. Digest images must be running that digest.
    let mut all_digest = !containers.is_empty();
    for container in containers {
        match container.image.as_deref().and_then(digest_reference) {
            Some((repo, digest)) => {
                let Some(status) = status_of(pod, &container.name) else {
                    return false;
                };
                match digest_reference(strip_scheme(&status.image_id)) {
                    Some((status_repo, status_digest))
                        if status_repo == repo && status_digest == digest => {}
                    _ => return false,
                }
            }
            None => all_digest = false,
        }
    }
    if all_digest {
        return true;
    }
    // 2. Sidecars of an in-place sidecar upgrade still running the old image.
    if pod
        .annotations
        .get(SIDECARSET_INJECTED_LIST)
        .is_some_and(|l| !l.is_empty())
        && containers.iter().any(|c| c.is_injected())
        && let Some(text) = pod.annotations.get(SIDECARSET_INPLACE_UPDATE_STATE)
    {
        let Ok(states) = serde_json::from_str::<BTreeMap<String, SidecarSetUpgradeState>>(text)
        else {
            return false;
        };
        for container in containers.iter().filter(|c| c.is_injected()) {
            let Some(status) = status_of(pod, &container.name) else {
                continue;
            };
            let stale = states.values().any(|state| {
                state
                    .last_container_statuses
                    .get(container.name.as_str())
                    .is_some_and(|last| {
                        last.image_id == status.image_id
                            && Some(status.image.as_str()) != container.image.as_deref()
                    })
            });
            if stale {
                return false;
            }
        }
    }
    in_place_update_completed(pod, containers, vertical_scaling)
}

/// Step 3: the in-place update of a CloneSet / Advanced StatefulSet pod is complete.
fn in_place_update_completed(
    pod: &SlimPod,
    containers: &[crate::api::pod::SlimContainer],
    vertical_scaling: bool,
) -> bool {
    let annotation = |key: &str, legacy: &str| {
        pod.annotations
            .get(key)
            .or_else(|| pod.annotations.get(legacy))
    };
    // a. A pending update waiting for its grace period.
    if annotation(INPLACE_UPDATE_GRACE_ANNOTATION, INPLACE_UPDATE_GRACE_LEGACY).is_some() {
        return false;
    }
    // b. The state.
    let Some(text) = annotation(INPLACE_UPDATE_STATE_ANNOTATION, INPLACE_UPDATE_STATE_LEGACY)
    else {
        return true;
    };
    let Ok(state) = serde_json::from_str::<InPlaceUpdateState>(text) else {
        return false;
    };
    let non_empty = |m: Option<usize>| m.is_some_and(|n| n > 0);
    if non_empty(state.next_container_images.as_ref().map(BTreeMap::len))
        || non_empty(
            state
                .next_container_ref_metadata
                .as_ref()
                .map(BTreeMap::len),
        )
        || non_empty(state.next_container_resources.as_ref().map(BTreeMap::len))
    {
        return false;
    }
    // c. The runtime's container metadata.
    let meta = match pod.annotations.get(RUNTIME_CONTAINERS_META_ANNOTATION) {
        None => None,
        Some(text) => match serde_json::from_str::<RuntimeContainersMeta>(text) {
            Ok(meta) => Some(meta),
            Err(_) => return false,
        },
    };
    if state.update_env_from_metadata {
        let Some(meta) = &meta else {
            return false;
        };
        for container in containers {
            let Some(status) = status_of(pod, &container.name) else {
                return false;
            };
            let same_container = meta.containers.iter().any(|m| {
                m.name == container.name
                    && Some(m.container_id.as_str()) == status.container_id.as_deref()
            });
            if !same_container {
                return false;
            }
        }
    }
    if vertical_scaling && state.update_resources {
        // The resize's completion is not held in the cache: not complete while the state records it.
        return false;
    }
    // e. Every recorded container now runs another image, or its spec image is what runs.
    let last = state.last_container_statuses.unwrap_or_default();
    for (name, recorded) in &last {
        let Some(status) = status_of(pod, name) else {
            return false;
        };
        let spec_image = containers
            .iter()
            .find(|c| &c.name == name)
            .and_then(|c| c.image.as_deref())
            .unwrap_or_default();
        let spec_image = if spec_image.contains(':') {
            spec_image.to_owned()
        } else {
            format!("{spec_image}:latest")
        };
        if recorded.image_id == status.image_id && spec_image != status.image {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: serde_json::Value) -> SlimPod {
        serde_json::from_value(value).unwrap()
    }

    fn running(extra_meta: serde_json::Value) -> serde_json::Value {
        let mut meta = json!({"name": "web-0", "namespace": "default", "labels": {"app": "web"}});
        if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
            m.extend(extra.clone());
        }
        json!({
            "metadata": meta,
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "app", "image": "nginx:1.25", "imageID": "docker-pullable://nginx@sha256:aa"}]}
        })
    }

    #[test]
    fn ready_needs_running_ready_no_deletion_and_no_unavailable_label() {
        assert!(is_ready(&pod(running(json!({})))));
        let mut not_ready = running(json!({}));
        not_ready["status"]["conditions"][0]["status"] = json!("False");
        assert!(!is_ready(&pod(not_ready)));
        let mut pending = running(json!({}));
        pending["status"]["phase"] = json!("Pending");
        assert!(!is_ready(&pod(pending)));
        assert!(!is_ready(&pod(running(
            json!({"deletionTimestamp": "2026-03-01T10:00:00Z"})
        ))));
        assert!(!is_ready(&pod(running(
            json!({"labels": {"app": "web", "unavailable-pod.kruise.io/drain": "true"}})
        ))));
        assert!(!is_ready(&pod(json!({"metadata": {"name": "x"}}))));
    }

    #[test]
    fn active_excludes_finished_and_deleted_pods() {
        assert!(pod(running(json!({}))).is_active());
        let mut done = running(json!({}));
        done["status"]["phase"] = json!("Succeeded");
        assert!(!pod(done).is_active());
        assert!(
            !pod(running(
                json!({"deletionTimestamp": "2026-03-01T10:00:00Z"})
            ))
            .is_active()
        );
    }

    #[test]
    fn related_pub_prefers_the_new_key_and_no_protect_parses_go_booleans() {
        let p = pod(running(
            json!({"annotations": {"kruise.io/related-pub": "old"}}),
        ));
        assert_eq!(related_pub(&p), Some("old"));
        let p = pod(running(
            json!({"annotations": {"kruise.io/related-pub": "old", "pub.kruise.io/related-pub": "new"}}),
        ));
        assert_eq!(related_pub(&p), Some("new"));
        for (value, expected) in [("True", true), ("1", true), ("yes", false), ("", false)] {
            let p = pod(running(
                json!({"annotations": {"pub.kruise.io/no-protect": value}}),
            ));
            assert_eq!(is_no_protect(&p), expected, "{value}");
        }
    }

    #[test]
    fn digest_images_must_run_their_digest() {
        let mut p = running(json!({}));
        p["spec"]["containers"][0]["image"] = json!("nginx@sha256:aa");
        assert!(is_consistent(&pod(p.clone()), false));
        p["status"]["containerStatuses"][0]["imageID"] = json!("docker-pullable://nginx@sha256:bb");
        assert!(!is_consistent(&pod(p.clone()), false));
        p["status"]["containerStatuses"] = json!([]);
        assert!(!is_consistent(&pod(p), false));
    }

    #[test]
    fn in_place_update_states() {
        assert!(is_consistent(&pod(running(json!({}))), false));
        let with = |annotations: serde_json::Value| {
            is_consistent(&pod(running(json!({"annotations": annotations}))), false)
        };
        assert!(!with(json!({"apps.kruise.io/inplace-update-grace": "{}"})));
        assert!(!with(json!({"inplace-update-state": "not json"})));
        assert!(!with(
            json!({"apps.kruise.io/inplace-update-state": r#"{"nextContainerImages":{"app":"nginx:2"}}"#})
        ));
        // The recorded image id still runs, reported as the old image, while the spec asks for another:
        // not done; once the status reports the spec's image, done.
        let state = json!({"apps.kruise.io/inplace-update-state":
            r#"{"revision":"r2","lastContainerStatuses":{"app":{"imageID":"docker-pullable://nginx@sha256:aa"}}}"#});
        let mut updating = running(json!({"annotations": state}));
        updating["status"]["containerStatuses"][0]["image"] = json!("nginx:1.24");
        assert!(!is_consistent(&pod(updating), false));
        assert!(with(state.clone()));
        // `:latest` is implied on a spec image without a tag.
        let mut untagged = running(json!({"annotations": state}));
        untagged["spec"]["containers"][0]["image"] = json!("nginx");
        untagged["status"]["containerStatuses"][0]["image"] = json!("nginx:latest");
        assert!(is_consistent(&pod(untagged), false));
        // The image changed: done.
        assert!(with(json!({"apps.kruise.io/inplace-update-state":
            r#"{"revision":"r2","lastContainerStatuses":{"app":{"imageID":"docker-pullable://nginx@sha256:00"}}}"#})));
        // A recorded container without a status.
        assert!(!with(json!({"apps.kruise.io/inplace-update-state":
            r#"{"lastContainerStatuses":{"gone":{"imageID":"x"}}}"#})));
        assert!(with(
            json!({"apps.kruise.io/inplace-update-state": r#"{"lastContainerStatuses":null}"#})
        ));
        assert!(!with(
            json!({"apps.kruise.io/inplace-update-state": r#"{"updateEnvFromMetadata":true}"#})
        ));
        assert!(!with(json!({"apps.kruise.io/inplace-update-state": "{}",
            "apps.kruise.io/runtime-containers-meta": "[broken"})));
    }

    #[test]
    fn a_sidecar_still_on_its_old_image_is_inconsistent() {
        let mut p = running(json!({"annotations": {
            "kruise.io/sidecarset-injected-list": "log",
            "kruise.io/sidecarset-inplace-update-state":
                r#"{"log":{"revision":"r","updateTimestamp":"2026-03-01T10:00:00Z","lastContainerStatuses":{"sidecar":{"imageID":"docker://s@sha256:11"}}}}"#
        }}));
        p["spec"]["containers"] = json!([{"name": "app", "image": "nginx:1.25"},
            {"name": "sidecar", "image": "s:2", "env": [{"name": "IS_INJECTED", "value": "true"}]}]);
        p["status"]["containerStatuses"] = json!([
            {"name": "app", "image": "nginx:1.25", "imageID": "docker-pullable://nginx@sha256:aa"},
            {"name": "sidecar", "image": "s:1", "imageID": "docker://s@sha256:11"}]);
        assert!(!is_consistent(&pod(p.clone()), false));
        p["status"]["containerStatuses"][1] =
            json!({"name": "sidecar", "image": "s:2", "imageID": "docker://s@sha256:22"});
        assert!(is_consistent(&pod(p.clone()), false));
        p["metadata"]["annotations"]["kruise.io/sidecarset-inplace-update-state"] = json!("{");
        assert!(!is_consistent(&pod(p), false));
    }
}
