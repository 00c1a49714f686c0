//! Cross-SidecarSet conflicts (spec/sidecarset.md §8 rule 6; §12 "The Exists overlap rule is asymmetric";
//! DECISIONS 12).
//!
//! [`selectors_overlap`] is Kruise's `IsSelectorOverlapping`: two selectors overlap unless
//! [`is_disjoint`]`(a, b)` or `is_disjoint(b, a)`. The "others" are every other SidecarSet (by name) that is
//! not this canary's base and overlaps in namespace and in pod selector. They are visited in name order.
//!
//! Where Go keeps one SidecarSet per name in a map filled in informer order (effectively random), this
//! implementation is deterministic and reports a conflict when **any** overlapping SidecarSet conflicts,
//! naming the first one by name: a container or init container name used by another, a volume name with a
//! different definition (both defaulted as §7.1, then compared as typed `Volume`s, so JSON spelling does not
//! matter), an annotation key patched by another's non-Retain entry where either side is `Overwrite`.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Volume;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Value, json};

use super::model::Subject;
use crate::api::sidecarset::{PatchPodMetadata, SidecarSet};
use crate::sidecarset::defaults::default_object;
use crate::validation::field_error::{BadValue, FieldError, FieldPath};

/// `isDisjoint(a, b)`: built from `a`'s matchLabels (`[v]`), `In` expressions (values appended) and `Exists`
/// (`["ALL"]`), true when one of `b`'s requirements cannot hold together with them. `b Exists k` with `k`
/// absent from `a` counts as disjoint (quirk, §12).
pub(super) fn is_disjoint(a: &LabelSelector, b: &LabelSelector) -> bool {
    const ALL: &str = "ALL";
    let mut vals: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (k, v) in a.match_labels.iter().flatten() {
        vals.insert(k, vec![v]);
    }
    for req in a.match_expressions.iter().flatten() {
        match req.operator.as_str() {
            "In" => vals
                .entry(&req.key)
                .or_default()
                .extend(req.values.iter().flatten().map(String::as_str)),
            "Exists" => {
                vals.insert(&req.key, vec![ALL]);
            }
            _ => {}
        }
    }
    for (k, v) in b.match_labels.iter().flatten() {
        if let Some(values) = vals.get(k.as_str())
            && !values.contains(&ALL)
            && !values.contains(&v.as_str())
        {
            return true;
        }
    }
    for req in b.match_expressions.iter().flatten() {
        let values = vals.get(req.key.as_str());
        let req_values: Vec<&str> = req.values.iter().flatten().map(String::as_str).collect();
        let disjoint = match req.operator.as_str() {
            "In" => values
                .is_some_and(|vs| !vs.contains(&ALL) && !vs.iter().any(|v| req_values.contains(v))),
            "NotIn" => values.is_some_and(|vs| vs.iter().all(|v| req_values.contains(v))),
            "Exists" => values.is_none(),
            "DoesNotExist" => values.is_some(),
            _ => false,
        };
        if disjoint {
            return true;
        }
    }
    false
}

/// `IsSelectorOverlapping`. A missing selector reads as the empty selector (Go would dereference nil).
pub(super) fn selectors_overlap(a: Option<&LabelSelector>, b: Option<&LabelSelector>) -> bool {
    let empty = LabelSelector::default();
    let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    !(is_disjoint(a, b) || is_disjoint(b, a))
}

/// Namespace overlap: either namespaceSelector is nil, or the two overlap.
fn namespaces_overlap(a: Option<&LabelSelector>, b: Option<&LabelSelector>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => selectors_overlap(Some(a), Some(b)),
        _ => true,
    }
}

/// A volume after §7.1 defaulting, as a typed `Volume` when it decodes (else its defaulted JSON).
#[derive(PartialEq)]
enum Defaulted {
    Typed(Box<Volume>),
    Json(Value),
}

fn defaulted(volume: &Value) -> Defaulted {
    let mut holder = json!({"spec": {"volumes": [volume]}});
    let v = match default_object(&mut holder) {
        Ok(()) => holder
            .pointer("/spec/volumes/0")
            .cloned()
            .unwrap_or(Value::Null),
        Err(_) => volume.clone(),
    };
    match serde_json::from_value::<Volume>(v.clone()) {
        Ok(typed) => Defaulted::Typed(Box::new(typed)),
        Err(_) => Defaulted::Json(v),
    }
}

fn volume_name(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or("")
}

fn annotation_keys(patches: &[PatchPodMetadata]) -> impl Iterator<Item = (&str, &str)> {
    patches
        .iter()
        .filter(|p| p.patch_policy != "Retain")
        .flat_map(|p| {
            p.annotations
                .keys()
                .map(move |k| (k.as_str(), p.patch_policy.as_str()))
        })
}

/// The conflicts of §8 rule 6 with `all` (every SidecarSet in the cluster, in name order).
pub(super) fn conflicts(subject: &Subject, all: &[Arc<SidecarSet>]) -> Vec<FieldError> {
    let spec = &subject.spec;
    let base = subject.canary_base();
    let mut others: Vec<&SidecarSet> = all
        .iter()
        .map(Arc::as_ref)
        .filter(|o| o.name() != subject.name())
        .filter(|o| base != Some(o.name()))
        .filter(|o| {
            namespaces_overlap(
                spec.namespace_selector.as_ref(),
                o.spec.namespace_selector.as_ref(),
            ) && selectors_overlap(spec.selector.as_ref(), o.spec.selector.as_ref())
        })
        .collect();
    others.sort_by(|a, b| a.name().cmp(b.name()));

    let path = FieldPath::new("spec");
    let mut errs = Vec::new();
    let container_conflict = |name: &str, other: &SidecarSet| {
        FieldError::invalid(
            &path.child("containers"),
            BadValue::str(name),
            format!("container {name} already exist in {}", other.name()),
        )
    };
    for c in &spec.init_containers {
        let name = c.view.name.as_str();
        if let Some(other) = others
            .iter()
            .find(|o| o.spec.init_containers.iter().any(|oc| oc.view.name == name))
        {
            errs.push(container_conflict(name, other));
        }
    }
    for c in &spec.containers {
        let name = c.view.name.as_str();
        if let Some(other) = others
            .iter()
            .find(|o| o.spec.containers.iter().any(|oc| oc.view.name == name))
        {
            errs.push(container_conflict(name, other));
        }
    }
    for volume in &spec.volumes {
        let name = volume_name(volume);
        let mine = std::cell::OnceCell::new();
        let conflicting = others.iter().find(|o| {
            o.spec
                .volumes
                .iter()
                .find(|ov| ov.str_member("name") == name)
                .is_some_and(|ov| {
                    *mine.get_or_init(|| defaulted(volume)) != defaulted(&ov.to_value())
                })
        });
        if let Some(other) = conflicting {
            errs.push(FieldError::invalid(
                &path.child("volumes"),
                BadValue::str(name),
                format!(
                    "volume {name} is in conflict with sidecarset {}",
                    other.name()
                ),
            ));
        }
    }
    for (key, policy) in annotation_keys(&spec.patch_pod_metadata) {
        let conflicting = others.iter().find(|o| {
            annotation_keys(&o.spec.patch_pod_metadata).any(|(other_key, other_policy)| {
                other_key == key && (policy == "Overwrite" || other_policy == "Overwrite")
            })
        });
        if let Some(other) = conflicting {
            errs.push(FieldError::invalid(
                &path.child("patchPodMetadata"),
                BadValue::str(key),
                format!(
                    "annotation {key} is in conflict with sidecarset {}",
                    other.name()
                ),
            ));
        }
    }
    errs
}
