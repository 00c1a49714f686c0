//! Step 8 of the pod chain, gate `EnablePodProbeMarkerOnServerless` (spec/pod-mutating-misc.md §9): the
//! probes of the PodProbeMarkers that pick a pod are written into it (`kruise.io/podprobe`), for pods on
//! serverless nodes that kruise-daemon does not reach, with the markers' names
//! (`kruise.io/podprobemarker-list`).
//!
//! The markers: those the pod's `kruise.io/podprobemarker-list` names (each read by name; one that cannot
//! be read is skipped), else those of the namespace whose selector picks the pod ([`selector::picks`]), in
//! name order (DECISIONS 12). Each probe is kept once per pod condition and per `<container>/<name>`, for a
//! container of the pod (or a restartable init container), without its `markerPolicy`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::WebhookError;
use crate::admission::Operation;
use crate::api::podprobemarker::{LIST_ANNOTATION, PROBES_ANNOTATION, PodProbeMarker};
use crate::json::rawpod::{Item, RawList, RawPod};
use crate::selector;
use crate::view::PodProbeMarkerView;

/// The names of the elements of `list` as the steps so far left it, with their `restartPolicy`.
fn names_and_policies(list: &RawList<'_>) -> Vec<(String, String)> {
    list.items()
        .iter()
        .map(|item| match item {
            Item::Original(at) => list.element(*at).map_or_else(Default::default, |c| {
                (c.name().to_owned(), c.str("restartPolicy").to_owned())
            }),
            other => {
                let value = list.value_of(other);
                let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("");
                (text("name").to_owned(), text("restartPolicy").to_owned())
            }
        })
        .collect()
}

/// The containers a probe may run in: every container, and the init containers with
/// `restartPolicy: Always` (native sidecars), as earlier steps left them.
fn allowed_containers(doc: &RawPod<'_>) -> HashSet<String> {
    let containers = names_and_policies(&doc.containers)
        .into_iter()
        .map(|(name, _)| name);
    let sidecars = names_and_policies(&doc.init_containers)
        .into_iter()
        .filter(|(_, policy)| policy == "Always")
        .map(|(name, _)| name);
    containers.chain(sidecars).collect()
}

/// The markers for the pod (module docs).
///
/// # Errors
/// The view's error when the namespace's markers cannot be listed.
fn markers_for(
    doc: &RawPod<'_>,
    labels: &BTreeMap<String, String>,
    namespace: &str,
    view: &impl PodProbeMarkerView,
) -> Result<Vec<Arc<PodProbeMarker>>, String> {
    match doc.annotation(LIST_ANNOTATION).filter(|l| !l.is_empty()) {
        Some(list) => Ok(list
            .split(',')
            .filter_map(|name| view.pod_probe_marker(namespace, name))
            .collect()),
        None => Ok(view
            .pod_probe_markers_in(namespace)?
            .into_iter()
            .filter(|m| selector::picks(m.spec.selector.as_ref(), labels))
            .collect()),
    }
}

/// Step 8 on a pod CREATE; the caller checks the gate. `namespace` and `labels`: the pod's, as the chain
/// has them.
///
/// # Errors
/// [`WebhookError::Failed`] (500) when the namespace's PodProbeMarkers cannot be listed (§9).
pub fn mutate(
    doc: &mut RawPod<'_>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    operation: Operation,
    view: &impl PodProbeMarkerView,
) -> Result<(), WebhookError> {
    if operation != Operation::Create {
        return Ok(());
    }
    let markers = markers_for(doc, labels, namespace, view).map_err(|e| {
        WebhookError::Failed(format!(
            "listing PodProbeMarkers in namespace {namespace}: {e}"
        ))
    })?;
    if markers.is_empty() {
        return Ok(());
    }
    let allowed = allowed_containers(doc);
    let mut conditions = HashSet::new();
    let mut keys = HashSet::new();
    let mut contributors = BTreeSet::new();
    let mut kept = Vec::new();
    for marker in &markers {
        for probe in &marker.spec.probes {
            let key = format!("{}/{}", probe.container_name, probe.name);
            if probe.pod_condition_type.is_empty()
                || conditions.contains(&probe.pod_condition_type)
                || keys.contains(&key)
                || !allowed.contains(&probe.container_name)
            {
                continue;
            }
            conditions.insert(probe.pod_condition_type.clone());
            keys.insert(key);
            contributors.insert(marker.name());
            let mut probe = probe.clone();
            probe.marker_policy.clear();
            kept.push(probe);
        }
    }
    if kept.is_empty() {
        return Ok(());
    }
    let list = contributors.into_iter().collect::<Vec<_>>().join(",");
    doc.set_annotation(PROBES_ANNOTATION, crate::json::go::to_string(&kept));
    doc.set_annotation(LIST_ANNOTATION, list);
    Ok(())
}

#[cfg(test)]
mod tests;
