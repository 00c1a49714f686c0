//! Which revision of a SidecarSet a new pod gets (spec/sidecarset.md §4.4): the latest, or a historical one
//! restored from a ControllerRevision, by `injectionStrategy.revision` and its policy.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::prepared::PreparedSidecarSet;
use super::select::selector_error;
use crate::api::revision::SlimRevision;
use crate::api::sidecarset::{
    CUSTOM_VERSION_LABEL, HASH_ANNOTATION, HASH_WITHOUT_IMAGE_ANNOTATION, SIDECARSET_NAME_LABEL,
    SidecarSet, SidecarSetStatus,
};
use crate::selector;
pub use crate::view::SidecarSetView;

/// Restores `set` from a revision: the whole spec is replaced by the revision's `data.spec` (only what the
/// revision recorded survives), hashes come from the revision or are recomputed, `status.latestRevision`
/// names the revision.
///
/// # Errors
/// A revision whose data is not a SidecarSet spec.
pub fn restore(set: &SidecarSet, revision: &SlimRevision) -> Result<SidecarSet, String> {
    let name = revision.metadata.name.clone().unwrap_or_default();
    let data: Value = match revision.data.as_deref() {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| format!("ControllerRevision {name} holds no SidecarSet spec: {e}"))?,
        None => Value::Null,
    };
    let mut spec = data.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(obj) = spec.as_object_mut() {
        obj.remove("$patch");
    }
    let mut restored = set.clone();
    restored.spec = serde_json::from_value(if spec.is_null() {
        Value::Object(Default::default())
    } else {
        spec.clone()
    })
    .map_err(|e| format!("ControllerRevision {name} holds no SidecarSet spec: {e}"))?;
    let from_revision = |key: &str| {
        revision
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let hash =
        from_revision(HASH_ANNOTATION).unwrap_or_else(|| super::hash::sidecarset_hash(&spec));
    let without_image = from_revision(HASH_WITHOUT_IMAGE_ANNOTATION)
        .unwrap_or_else(|| super::hash::sidecarset_hash_without_image(&spec));
    let annotations = restored
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(HASH_ANNOTATION.into(), hash);
    annotations.insert(HASH_WITHOUT_IMAGE_ANNOTATION.into(), without_image);
    restored
        .status
        .get_or_insert_with(SidecarSetStatus::default)
        .latest_revision = Some(name);
    Ok(restored)
}

/// The historical SidecarSet named by `injectionStrategy.revision`, if any (§4.4 step 2).
///
/// # Errors
/// The NotFound text of a missing revision, or a revision that does not restore.
pub fn historical(
    set: &SidecarSet,
    view: &impl SidecarSetView,
    kruise_namespace: &str,
) -> Result<Option<SidecarSet>, String> {
    let Some(rev) = &set.spec.injection_strategy.revision else {
        return Ok(None);
    };
    let revision = if let Some(name) = &rev.revision_name {
        // The owner label is not checked: any revision of the Kruise namespace is accepted (§12).
        view.controller_revision(kruise_namespace, name)
            .ok_or_else(|| format!("controllerrevisions.apps \"{name}\" not found"))?
    } else if let Some(custom) = &rev.custom_version {
        let labels = BTreeMap::from([
            (SIDECARSET_NAME_LABEL.to_owned(), set.name().to_owned()),
            (CUSTOM_VERSION_LABEL.to_owned(), custom.clone()),
        ]);
        view.controller_revisions(kruise_namespace, &labels)
            .into_iter()
            // The last in Kubernetes' history order (SortControllerRevisions): by .revision, then
            // creationTimestamp (absent = Go's zero time, the earliest), then name.
            .max_by(|a, b| {
                a.revision
                    .cmp(&b.revision)
                    .then_with(|| {
                        (a.metadata.creation_timestamp.as_ref())
                            .cmp(&b.metadata.creation_timestamp.as_ref())
                    })
                    .then_with(|| a.metadata.name.cmp(&b.metadata.name))
            })
            .ok_or_else(|| format!("ControllerRevision.apps \"{}\" not found", set.name()))?
    } else {
        return Ok(None);
    };
    restore(set, &revision).map(Some)
}

/// Parses `"<float>%"` as Go's `ParsePercentage` does.
fn percentage(s: &str) -> Result<f64, String> {
    let number = s
        .strip_suffix('%')
        .ok_or_else(|| "invalid type: string is not a percentage".to_owned())?;
    number
        .parse::<f64>()
        .map(|v| v / 100.0)
        .map_err(|_| format!("strconv.ParseFloat: parsing {number:?}: invalid syntax"))
}

/// The SidecarSet (revision) to inject into a pod with `pod_labels` (§4.4 steps 1, 3, 4). `random` is a
/// uniform draw from [0, 1) supplied by the caller (the webhook draws no randomness itself).
///
/// # Errors
/// A missing revision, an invalid `updateStrategy.selector`, or a partition that is not a percentage.
pub fn choose(
    set: &Arc<PreparedSidecarSet>,
    pod_labels: &BTreeMap<String, String>,
    view: &impl SidecarSetView,
    kruise_namespace: &str,
    random: f64,
) -> Result<Arc<PreparedSidecarSet>, String> {
    let Some(historical) = historical(set, view, kruise_namespace)? else {
        return Ok(set.clone());
    };
    let historical = Arc::new(PreparedSidecarSet::from(historical));
    let strategy = &set.spec.update_strategy;
    if strategy.paused {
        return Ok(historical);
    }
    let policy = set
        .spec
        .injection_strategy
        .revision
        .as_ref()
        .map(|r| r.policy.as_str())
        .unwrap_or("");
    if policy != "Partial" {
        return Ok(historical);
    }
    if let Some(sel) = &strategy.selector {
        if let Some(e) = selector_error(sel) {
            return Err(e);
        }
        if !selector::matches(sel, pod_labels) {
            return Ok(historical);
        }
    }
    match &strategy.partition {
        None | Some(IntOrString::Int(_)) => Ok(set.clone()),
        Some(IntOrString::String(s)) => Ok(if random <= percentage(s)? {
            historical
        } else {
            set.clone()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::FixtureCluster;
    use serde_json::json;

    fn revision(name: &str, number: i64, custom: &str, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": "kruise-system",
                         "labels": {SIDECARSET_NAME_LABEL: "sidecarset1", CUSTOM_VERSION_LABEL: custom},
                         "annotations": {HASH_ANNOTATION: format!("{name}-hash")}},
            "revision": number,
            "data": {"spec": {"$patch": "replace", "containers": [{"name": "dns-f", "image": image}]}}
        })
    }

    fn set(revision: Value, strategy: Value) -> Arc<PreparedSidecarSet> {
        Arc::new(PreparedSidecarSet::from(serde_json::from_value::<SidecarSet>(json!({"metadata": {"name": "sidecarset1", "annotations": {HASH_ANNOTATION: "latest"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "dns-f", "image": "sidecar-image:canary"}, {"name": "log-agent", "image": "l"}],
                     "injectionStrategy": {"revision": revision}, "updateStrategy": strategy}})).unwrap()))
    }

    fn image(s: &SidecarSet) -> String {
        s.spec.containers[0].raw().str_member("image")
    }

    fn view() -> FixtureCluster {
        let mut view = FixtureCluster::default();
        for r in [
            revision("sidecarset1-1", 1, "v1", "sidecar-image:old"),
            revision("sidecarset1-2", 2, "v1", "sidecar-image:stable"),
        ] {
            view.insert(r).unwrap();
        }
        view
    }

    #[test]
    fn custom_version_restores_the_highest_revision_whole() {
        // §11 scenario 27: the restored spec holds only what the revision recorded.
        let chosen = choose(
            &set(
                json!({"customVersion": "v1", "policy": "Always"}),
                json!({}),
            ),
            &BTreeMap::new(),
            &view(),
            "kruise-system",
            0.5,
        )
        .unwrap();
        assert_eq!(image(&chosen), "sidecar-image:stable");
        assert_eq!(chosen.spec.containers.len(), 1);
        assert!(chosen.spec.selector.is_none());
        assert_eq!(
            chosen.annotation(HASH_ANNOTATION),
            Some("sidecarset1-2-hash")
        );
        assert_eq!(
            chosen.status.as_ref().unwrap().latest_revision.as_deref(),
            Some("sidecarset1-2")
        );
    }

    #[test]
    fn equal_revision_numbers_are_ordered_as_kubernetes_history() {
        // SortControllerRevisions: by .revision, then creationTimestamp, then name; the last one is taken.
        let pick = |revisions: Vec<Value>| {
            let mut view = FixtureCluster::default();
            for r in revisions {
                view.insert(r).unwrap();
            }
            let chosen = choose(
                &set(json!({"customVersion": "v1"}), json!({})),
                &BTreeMap::new(),
                &view,
                "kruise-system",
                0.5,
            )
            .unwrap();
            image(&chosen).to_owned()
        };
        let at = |mut r: Value, time: &str| {
            r["metadata"]["creationTimestamp"] = json!(time);
            r
        };
        assert_eq!(
            pick(vec![
                revision("sidecarset1-b", 3, "v1", "img:bbb"),
                revision("sidecarset1-a", 3, "v1", "img:aaa"),
            ]),
            "img:bbb",
            "same number and time: the greater name"
        );
        assert_eq!(
            pick(vec![
                at(
                    revision("sidecarset1-b", 3, "v1", "img:bbb"),
                    "2026-01-01T00:00:00Z"
                ),
                at(
                    revision("sidecarset1-a", 3, "v1", "img:aaa"),
                    "2026-02-01T00:00:00Z"
                ),
            ]),
            "img:aaa",
            "same number: the later creation"
        );
        assert_eq!(
            pick(vec![
                at(
                    revision("sidecarset1-z", 2, "v1", "img:zzz"),
                    "2026-03-01T00:00:00Z"
                ),
                revision("sidecarset1-a", 3, "v1", "img:aaa"),
            ]),
            "img:aaa",
            "the highest number first"
        );
    }

    #[test]
    fn a_missing_revision_rejects_with_the_not_found_text() {
        // §11 scenario 28.
        let err = choose(
            &set(json!({"customVersion": "nope"}), json!({})),
            &BTreeMap::new(),
            &view(),
            "kruise-system",
            0.5,
        )
        .unwrap_err();
        assert_eq!(err, "ControllerRevision.apps \"sidecarset1\" not found");
        let err = choose(
            &set(json!({"revisionName": "gone"}), json!({})),
            &BTreeMap::new(),
            &view(),
            "kruise-system",
            0.5,
        )
        .unwrap_err();
        assert_eq!(err, "controllerrevisions.apps \"gone\" not found");
        let by_name = choose(
            &set(json!({"revisionName": "sidecarset1-1"}), json!({})),
            &BTreeMap::new(),
            &view(),
            "kruise-system",
            0.5,
        )
        .unwrap();
        assert_eq!(
            image(&by_name),
            "sidecar-image:old",
            "revisionName wins over customVersion"
        );
    }

    #[test]
    fn partial_policy_follows_selector_and_partition() {
        // §11 scenarios 29-33.
        let canary: BTreeMap<String, String> = [("canary".to_owned(), "true".to_owned())].into();
        let plain = BTreeMap::new();
        let partial = json!({"customVersion": "v1", "policy": "Partial"});
        let sel = json!({"matchLabels": {"canary": "true"}});
        let pick = |strategy: Value, labels: &BTreeMap<String, String>, r: f64| {
            choose(
                &set(partial.clone(), strategy),
                labels,
                &view(),
                "kruise-system",
                r,
            )
            .map(|s| image(&s).to_owned())
        };
        assert_eq!(
            pick(json!({"selector": sel}), &plain, 0.5).unwrap(),
            "sidecar-image:stable"
        );
        assert_eq!(
            pick(json!({"selector": sel}), &canary, 0.5).unwrap(),
            "sidecar-image:canary"
        );
        assert_eq!(
            pick(json!({"selector": sel, "partition": 0}), &canary, 0.5).unwrap(),
            "sidecar-image:canary"
        );
        assert_eq!(
            pick(
                json!({"selector": sel, "partition": "100%"}),
                &canary,
                0.999
            )
            .unwrap(),
            "sidecar-image:stable"
        );
        assert_eq!(
            pick(json!({"selector": sel, "partition": "0%"}), &canary, 0.001).unwrap(),
            "sidecar-image:canary"
        );
        assert!(pick(json!({"selector": sel, "partition": "abc%"}), &canary, 0.5).is_err());
        assert_eq!(
            pick(json!({"selector": sel, "partition": "50"}), &canary, 0.5).unwrap_err(),
            "invalid type: string is not a percentage"
        );
        assert_eq!(
            pick(
                json!({"selector": {"matchExpressions": [{"key": "a", "operator": "badOp"}]}}),
                &canary,
                0.5
            )
            .unwrap_err(),
            "\"badOp\" is not a valid pod selector operator"
        );
        // Only the operators are checked (Kruise's ValidatedLabelSelectorAsSelector): `In` without values
        // selects no pod, so the pod gets the historical revision; it is no error.
        assert_eq!(
            pick(
                json!({"selector": {"matchExpressions": [{"key": "canary", "operator": "In", "values": []}]}}),
                &canary,
                0.5
            )
            .unwrap(),
            "sidecar-image:stable"
        );
        assert_eq!(
            pick(
                json!({"selector": sel, "partition": "0%", "paused": true}),
                &canary,
                0.5
            )
            .unwrap(),
            "sidecar-image:stable"
        );
    }

    #[test]
    fn no_revision_means_the_latest() {
        let s = set(json!(null), json!({}));
        assert!(Arc::ptr_eq(
            &choose(&s, &BTreeMap::new(), &view(), "kruise-system", 0.5).unwrap(),
            &s
        ));
    }
}
