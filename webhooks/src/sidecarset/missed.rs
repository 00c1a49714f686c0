//! Pods that missed their sidecars (docs/missed-sidecars.md §1): the SidecarSets the pod webhook would inject
//! into a pod now that the pod does not carry. Pure; the SidecarSet controller reports them.

use std::sync::Arc;

use crate::api::pod::SlimPod;
use crate::selector::Labels;

use super::prepared::PreparedSidecarSet;
use super::select;
use super::status::is_pod_injected;

/// The names of the SidecarSets among `candidates` (the index's candidates for the pod, in its order) that
/// the pod missed: it is active, its namespace is not one of `excluded_namespaces` (those the pod webhook is
/// never called for), the webhook's matching picks the set (paused sets and the bases of matching canaries
/// left out), and the pod's injected list does not name it. `namespace_labels` are the labels of the pod's
/// Namespace, `None` when it is not known (then a set with a namespaceSelector does not match, as at
/// injection).
///
/// # Errors
/// A candidate's selector that cannot be evaluated (its text).
pub fn missed(
    pod: &SlimPod,
    candidates: &[Arc<PreparedSidecarSet>],
    namespace_labels: Option<&impl Labels>,
    excluded_namespaces: &[&str],
) -> Result<Vec<String>, String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    if !pod.is_active() || excluded_namespaces.contains(&namespace) {
        return Ok(Vec::new());
    }
    let labels = pod.labels.to_btree();
    let matched = select::matching(candidates, &labels, namespace_labels, |set, _| {
        Ok(set.clone())
    })?;
    Ok(matched
        .iter()
        .filter(|set| !is_pod_injected(pod, set.name()))
        .map(|set| set.name().to_owned())
        .collect())
}

/// The reason of the Warning event on a pod that missed a SidecarSet (§2).
pub const POD_REASON: &str = "SidecarSetNotInjected";
/// The reason of the Warning event on a SidecarSet whose count of pods that missed it grew (§2).
pub const SET_REASON: &str = "PodsNotInjected";
/// The component both events are recorded as.
pub const COMPONENT: &str = "sidecarset-controller";
/// Pods named in the SidecarSet's event, at most.
const NAMED_IN_SET_EVENT: usize = 3;
/// The longest object name the API server takes (a DNS subdomain).
const MAX_NAME: usize = 253;

/// The message of the pod's event (§2): `sets` are the SidecarSets it missed when told.
pub fn pod_message(sets: &[String]) -> String {
    if let [set] = sets {
        return format!(
            "pod was created without the sidecars of SidecarSet {set} (its selector matches the pod now); recreate the pod to inject them"
        );
    }
    format!(
        "pod was created without the sidecars of SidecarSets {} (their selectors match the pod now); recreate the pod to inject them",
        sets.join(", ")
    )
}

/// The message of the SidecarSet's event: `count` pods missed it, `first` some of them (`<ns>/<pod>`, in
/// order; at most three are named).
pub fn set_message(count: usize, first: &[String]) -> String {
    let mut named = first
        .iter()
        .take(NAMED_IN_SET_EVENT)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if count == 1 {
        return format!(
            "1 pod matched by this SidecarSet was created without its sidecars: {named}; recreate it"
        );
    }
    if count > NAMED_IN_SET_EVENT.min(first.len()) {
        named.push_str(", ...");
    }
    format!(
        "{count} pods matched by this SidecarSet were created without its sidecars (first: {named}); recreate them"
    )
}

/// `<prefix>.<suffix>`, the prefix cut so that the whole is a valid object name.
fn event_name(prefix: &str, suffix: &str) -> String {
    let room = MAX_NAME.saturating_sub(suffix.len() + 1);
    let mut cut = prefix.len().min(room);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}.{suffix}", prefix[..cut].trim_end_matches(['.', '-']))
}

/// The first 16 hex digits of the SHA-256 of `parts` joined by `/`.
fn short_hash(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(parts.join("/").as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The name of the pod's event: the same for the same pod (by uid), so that a second report (a restart, a
/// new leader, a relist, another SidecarSet) answers AlreadyExists and records nothing (§2).
pub fn pod_event_name(pod: &str, pod_uid: &str) -> String {
    event_name(pod, &format!("missed-sidecars-{}", short_hash(&[pod_uid])))
}

/// The name of the SidecarSet's event for `count` pods: the same for the same SidecarSet (by uid) and
/// count, so that a new leader that finds the count it was already told records nothing.
pub fn set_event_name(set: &str, set_uid: &str, count: usize) -> String {
    event_name(
        set,
        &format!(
            "not-injected-{}",
            short_hash(&[set_uid, &count.to_string()])
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::api::sidecarset::SidecarSet;
    use crate::sidecarset::select::SidecarSetIndex;

    const EXCLUDED: &[&str] = &["kube-system", "kruise-system"];

    fn set(name: &str, extra: Value) -> Arc<SidecarSet> {
        let mut set = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "containers": [{"name": format!("{name}-agent"), "image": "agent:1"}]}});
        if let (Some(spec), Some(more)) = (set["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(more.clone());
        }
        Arc::new(serde_json::from_value(set).unwrap())
    }

    fn pod(namespace: &str, app: &str, injected: Option<&str>) -> SlimPod {
        let mut pod = json!({"metadata": {"name": "web-0", "namespace": namespace,
                "labels": {"app": app}},
            "spec": {"containers": [{"name": "app", "image": "app:1"}]},
            "status": {"phase": "Running"}});
        if let Some(list) = injected {
            pod["metadata"]["annotations"] = json!({"kruise.io/sidecarset-injected-list": list});
        }
        serde_json::from_value(pod).unwrap()
    }

    fn missed_of(
        pod: &SlimPod,
        sets: &[Arc<SidecarSet>],
        ns_labels: &[(&str, &str)],
    ) -> Vec<String> {
        let mut index = SidecarSetIndex::default();
        for s in sets {
            index.upsert(s.clone());
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let candidates = index.candidates_for(namespace, &pod.labels.to_btree());
        let labels: BTreeMap<String, String> = ns_labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        missed(pod, &candidates, Some(&labels), EXCLUDED).unwrap()
    }

    #[test]
    fn scenario_1_created_while_the_webhook_was_not_called() {
        assert_eq!(
            missed_of(&pod("shop", "web", None), &[set("log", json!({}))], &[]),
            ["log"]
        );
    }

    #[test]
    fn scenarios_2_and_3_the_injected_list_decides() {
        let sets = [set("log", json!({}))];
        assert!(missed_of(&pod("shop", "web", Some("log")), &sets, &[]).is_empty());
        assert!(missed_of(&pod("shop", "web", Some("other,log")), &sets, &[]).is_empty());
        assert_eq!(
            missed_of(&pod("shop", "web", Some("other")), &sets, &[]),
            ["log"]
        );
    }

    #[test]
    fn scenario_4_a_paused_set_is_not_reported() {
        let paused = set("log", json!({"injectionStrategy": {"paused": true}}));
        assert!(missed_of(&pod("shop", "web", None), &[paused], &[]).is_empty());
    }

    #[test]
    fn scenarios_5_and_6_selectors_that_miss() {
        assert!(missed_of(&pod("shop", "db", None), &[set("log", json!({}))], &[]).is_empty());
        let pinned = set(
            "log",
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}),
        );
        assert!(
            missed_of(
                &pod("shop", "web", None),
                std::slice::from_ref(&pinned),
                &[("team", "b")]
            )
            .is_empty()
        );
        assert_eq!(
            missed_of(&pod("shop", "web", None), &[pinned], &[("team", "a")]),
            ["log"]
        );
    }

    #[test]
    fn scenario_7_namespaces_the_webhook_never_sees_are_not_counted() {
        for namespace in EXCLUDED {
            assert!(
                missed_of(&pod(namespace, "web", None), &[set("log", json!({}))], &[]).is_empty()
            );
        }
    }

    #[test]
    fn scenario_8_finished_or_deleting_pods_are_not_counted() {
        let sets = [set("log", json!({}))];
        let mut done = pod("shop", "web", None);
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert!(missed_of(&done, &sets, &[]).is_empty());
        let mut deleting = pod("shop", "web", None);
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        assert!(missed_of(&deleting, &sets, &[]).is_empty());
    }

    #[test]
    fn scenario_9_only_the_canary_of_a_matching_pair() {
        let base = set("log", json!({}));
        let mut canary = serde_json::to_value(&*set("log-canary", json!({}))).unwrap();
        canary["metadata"]["annotations"] = json!({"apps.kruise.io/sidecarset-canary": "true",
            "apps.kruise.io/sidecarset-base": "log"});
        let canary: Arc<SidecarSet> = Arc::new(serde_json::from_value(canary).unwrap());
        assert_eq!(canary.canary_base(), Some("log"));
        assert_eq!(
            missed_of(&pod("shop", "web", None), &[base, canary], &[]),
            ["log-canary"]
        );
    }

    #[test]
    fn event_names_are_stable_per_pod_and_always_valid() {
        let a = pod_event_name("web-0", "uid-1");
        assert_eq!(a, pod_event_name("web-0", "uid-1"));
        assert!(a.starts_with("web-0.missed-sidecars-"), "{a}");
        assert_eq!(a.len(), "web-0.missed-sidecars-".len() + 16);
        assert_ne!(a, pod_event_name("web-0", "uid-2"), "a recreated pod");
        let long = "p".repeat(253);
        let name = pod_event_name(&long, "uid-1");
        assert_eq!(name.len(), 253);
        assert!(name.ends_with(&a["web-0".len()..]));
        let set = set_event_name("log", "uid-s", 3);
        assert!(set.starts_with("log.not-injected-"), "{set}");
        assert_ne!(set, set_event_name("log", "uid-s", 4));
    }

    #[test]
    fn the_set_message_names_the_first_three() {
        let pods: Vec<String> = (0..5).map(|i| format!("shop/web-{i}")).collect();
        assert_eq!(
            set_message(5, &pods[..3]),
            "5 pods matched by this SidecarSet were created without its sidecars (first: shop/web-0, shop/web-1, shop/web-2, ...); recreate them"
        );
        assert_eq!(
            set_message(1, &pods[..1]),
            "1 pod matched by this SidecarSet was created without its sidecars: shop/web-0; recreate it"
        );
        assert_eq!(
            pod_message(&["log".to_owned()]),
            "pod was created without the sidecars of SidecarSet log (its selector matches the pod now); recreate the pod to inject them"
        );
        assert_eq!(
            pod_message(&["log".to_owned(), "mesh".to_owned()]),
            "pod was created without the sidecars of SidecarSets log, mesh (their selectors match the pod now); recreate the pod to inject them"
        );
    }

    #[test]
    fn scenario_10_several_sets() {
        let sets = [set("log", json!({})), set("mesh", json!({}))];
        assert_eq!(
            missed_of(&pod("shop", "web", Some("mesh")), &sets, &[]),
            ["log"]
        );
        assert_eq!(
            missed_of(&pod("shop", "web", None), &sets, &[]),
            ["log", "mesh"]
        );
    }
}
