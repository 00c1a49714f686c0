//! CloneSet v1alpha1 ⇄ v1beta1 (shared/crds schemas; `openkruise/kruise: apis/apps/v1alpha1/cloneset_conversion.go`).
//!
//! v1alpha1 `spec.updateStrategy` is flat (`type` ∈ ReCreate | InPlaceIfPossible | InPlaceOnly | OnDelete plus
//! the rolling fields); v1beta1 has `type` ∈ RollingUpdate | OnDelete and the rolling fields, with
//! `podUpdatePolicy`, under `rollingUpdate`. Image pre-download settings are annotations in v1alpha1 and
//! `rollingUpdate.inPlaceUpdateStrategy` fields in v1beta1. PVC reuse is negated between the versions.

use serde_json::{Map, Value};

use super::Direction;
use super::go_text;
use super::object::{self, ANNOTATIONS, LABELS};

/// v1alpha1 label that turns on `scaleStrategy.excludePreparingDelete`.
const EXCLUDE_PREPARING_DELETE_LABEL: &str =
    "apps.kruise.io/cloneset-scaling-exclude-preparing-delete";
const PARALLELISM_ANNOTATION: &str = "apps.kruise.io/image-predownload-parallelism";
const TIMEOUT_SECONDS_ANNOTATION: &str = "apps.kruise.io/image-predownload-timeout-seconds";
const MIN_UPDATED_READY_PODS_ANNOTATION: &str =
    "apps.kruise.io/image-predownload-min-updated-ready-pods";
const PARALLELISM_FIELD: &str = "imagePreDownloadParallelism";
const TIMEOUT_SECONDS_FIELD: &str = "imagePreDownloadTimeoutSeconds";
const MIN_UPDATED_READY_PODS_FIELD: &str = "imagePreDownloadMinUpdatedReadyPods";

const ON_DELETE: &str = "OnDelete";
const ROLLING_UPDATE: &str = "RollingUpdate";
const RECREATE: &str = "ReCreate";
const IN_PLACE_IF_POSSIBLE: &str = "InPlaceIfPossible";
const IN_PLACE_ONLY: &str = "InPlaceOnly";

pub(super) fn convert(obj: &mut Map<String, Value>, direction: Direction) -> Result<(), String> {
    match direction {
        Direction::ToBeta => to_beta(obj),
        Direction::ToAlpha => to_alpha(obj),
    }
    Ok(())
}

/// The non-empty image pre-download annotations of a v1alpha1 object.
struct PreDownloadAnnotations {
    parallelism: Option<String>,
    timeout_seconds: Option<String>,
    min_updated_ready_pods: Option<String>,
}

impl PreDownloadAnnotations {
    fn read(obj: &Map<String, Value>) -> Self {
        let get = |key| {
            object::meta_str(obj, ANNOTATIONS, key)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        Self {
            parallelism: get(PARALLELISM_ANNOTATION),
            timeout_seconds: get(TIMEOUT_SECONDS_ANNOTATION),
            min_updated_ready_pods: get(MIN_UPDATED_READY_PODS_ANNOTATION),
        }
    }

    fn any(&self) -> bool {
        self.parallelism.is_some()
            || self.timeout_seconds.is_some()
            || self.min_updated_ready_pods.is_some()
    }
}

fn to_beta(obj: &mut Map<String, Value>) {
    let exclude_preparing_delete =
        object::meta_str(obj, LABELS, EXCLUDE_PREPARING_DELETE_LABEL) == Some("true");
    let annotations = PreDownloadAnnotations::read(obj);
    let Some(spec) = object::child_mut(obj, "spec") else {
        return;
    };

    if let Some(scale) = object::child_or_insert(spec, "scaleStrategy") {
        let disable = object::take(scale, "disablePVCReuse")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        // Always written: the v1beta1 CRD defaults a missing enablePVCReuse to false.
        scale.insert("enablePVCReuse".into(), Value::Bool(!disable));
        if exclude_preparing_delete {
            scale.insert("excludePreparingDelete".into(), Value::Bool(true));
        }
    }

    let Some(update) = object::child_or_insert(spec, "updateStrategy") else {
        return;
    };
    let (beta_type, pod_update_policy) =
        match update.get("type").and_then(Value::as_str).unwrap_or("") {
            ON_DELETE => (ON_DELETE, None),
            IN_PLACE_IF_POSSIBLE => (ROLLING_UPDATE, Some(IN_PLACE_IF_POSSIBLE)),
            IN_PLACE_ONLY => (ROLLING_UPDATE, Some(IN_PLACE_ONLY)),
            // ReCreate, empty and unknown types all mean ReCreate.
            _ => (ROLLING_UPDATE, Some(RECREATE)),
        };
    // Every alpha field but `type` belongs to rollingUpdate; with OnDelete there is none and they are
    // dropped, as upstream does.
    let mut rolling = std::mem::take(update);
    rolling.remove("type");
    rolling.remove("rollingUpdate");
    update.insert("type".into(), Value::String(beta_type.into()));
    if let Some(policy) = pod_update_policy {
        rolling.insert("podUpdatePolicy".into(), Value::String(policy.into()));
        in_place_to_beta(&mut rolling, &annotations);
        update.insert("rollingUpdate".into(), Value::Object(rolling));
    }
}

/// Annotations win over the alpha spec fields; an annotation that does not parse drops the field.
fn in_place_to_beta(rolling: &mut Map<String, Value>, annotations: &PreDownloadAnnotations) {
    let mut strategy = match rolling.remove("inPlaceUpdateStrategy") {
        None | Some(Value::Null) if !annotations.any() => return,
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(strategy)) => strategy,
        Some(other) => {
            rolling.insert("inPlaceUpdateStrategy".into(), other);
            return;
        }
    };
    if let Some(parallelism) = &annotations.parallelism {
        strategy.insert(PARALLELISM_FIELD.into(), go_text::intstr_parse(parallelism));
    }
    for (annotation, field) in [
        (&annotations.timeout_seconds, TIMEOUT_SECONDS_FIELD),
        (
            &annotations.min_updated_ready_pods,
            MIN_UPDATED_READY_PODS_FIELD,
        ),
    ] {
        if let Some(text) = annotation {
            match go_text::parse_int32(text) {
                Ok(n) => strategy.insert(field.into(), Value::from(n)),
                Err(_) => strategy.remove(field),
            };
        }
    }
    rolling.insert("inPlaceUpdateStrategy".into(), Value::Object(strategy));
}

fn to_alpha(obj: &mut Map<String, Value>) {
    let mut exclude_preparing_delete = false;
    let mut annotations = Vec::new();
    if let Some(spec) = object::child_mut(obj, "spec") {
        let mut scale_is_empty = false;
        if let Some(scale) = object::child_or_insert(spec, "scaleStrategy") {
            let enable = object::take(scale, "enablePVCReuse")
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            if enable {
                scale.remove("disablePVCReuse");
            } else {
                scale.insert("disablePVCReuse".into(), Value::Bool(true));
            }
            exclude_preparing_delete = object::take(scale, "excludePreparingDelete")
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            scale_is_empty = scale.is_empty();
        }
        // An empty alpha scaleStrategy means the defaults, like an absent one.
        if scale_is_empty {
            spec.remove("scaleStrategy");
        }

        if let Some(update) = object::child_or_insert(spec, "updateStrategy") {
            let beta_type = object::take(update, "type");
            let rolling = match update.remove("rollingUpdate") {
                Some(Value::Object(rolling)) => Some(rolling),
                _ => None,
            };
            let alpha_type = if beta_type.as_ref().and_then(Value::as_str) == Some(ON_DELETE) {
                ON_DELETE
            } else {
                match rolling
                    .as_ref()
                    .and_then(|r| r.get("podUpdatePolicy"))
                    .and_then(Value::as_str)
                {
                    Some(IN_PLACE_IF_POSSIBLE) => IN_PLACE_IF_POSSIBLE,
                    Some(IN_PLACE_ONLY) => IN_PLACE_ONLY,
                    _ => RECREATE,
                }
            };
            if let Some(mut rolling) = rolling {
                rolling.remove("podUpdatePolicy");
                annotations = in_place_to_alpha(&mut rolling);
                update.extend(rolling);
            }
            update.insert("type".into(), Value::String(alpha_type.into()));
        }
    }
    for (key, value) in annotations {
        object::set_meta(obj, ANNOTATIONS, key, value);
    }
    // v1alpha1 has no field for it, only the label (upstream drops the field here).
    if exclude_preparing_delete {
        object::set_meta(obj, LABELS, EXCLUDE_PREPARING_DELETE_LABEL, "true".into());
    }
}

/// Moves the three pre-download fields out to annotations; keeps the rest of the strategy unless it is
/// empty (gracePeriodSeconds 0 is omitted, as Go's `omitempty` does).
fn in_place_to_alpha(rolling: &mut Map<String, Value>) -> Vec<(&'static str, String)> {
    let mut strategy = match rolling.remove("inPlaceUpdateStrategy") {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Object(strategy)) => strategy,
        Some(other) => {
            rolling.insert("inPlaceUpdateStrategy".into(), other);
            return Vec::new();
        }
    };
    let parallelism = object::take(&mut strategy, PARALLELISM_FIELD);
    let timeout_seconds = object::take(&mut strategy, TIMEOUT_SECONDS_FIELD);
    let min_updated_ready_pods = object::take(&mut strategy, MIN_UPDATED_READY_PODS_FIELD);
    if strategy.get("gracePeriodSeconds").and_then(Value::as_i64) == Some(0) {
        strategy.remove("gracePeriodSeconds");
    }
    let moved =
        parallelism.is_some() || timeout_seconds.is_some() || min_updated_ready_pods.is_some();
    if moved || !strategy.is_empty() {
        rolling.insert("inPlaceUpdateStrategy".into(), Value::Object(strategy));
    }
    let intstr_text = |v: Value| match v {
        Value::String(s) => Some(s),
        other => object::number_text(&other),
    };
    [
        (PARALLELISM_ANNOTATION, parallelism.and_then(intstr_text)),
        (
            TIMEOUT_SECONDS_ANNOTATION,
            timeout_seconds.as_ref().and_then(object::number_text),
        ),
        (
            MIN_UPDATED_READY_PODS_ANNOTATION,
            min_updated_ready_pods
                .as_ref()
                .and_then(object::number_text),
        ),
    ]
    .into_iter()
    .filter_map(|(key, value)| Some((key, value?)))
    .collect()
}
