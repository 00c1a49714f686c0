//! CRD conversion (`/convert`) for the Kruise kinds whose CRDs serve more than one version (DECISIONS 16).
//!
//! Entry points: [`review`] answers a whole `ConversionReview` (`apiextensions.k8s.io/v1` or `v1beta1`),
//! [`convert_object`] converts one object. Everything works on the raw [`serde_json::Value`], so fields this
//! crate does not know survive untouched (DECISIONS 13); only the fields a rule below names are moved, and
//! metadata changes only where a rule says so (a label or annotation that carries a field in v1alpha1).
//!
//! Every converted kind serves `v1alpha1` and `v1beta1` (storage). Rules per kind, and where they come from:
//!
//! - **SidecarSet** (`apps.kruise.io`), spec/sidecarset.md §2. alpha→beta: a non-empty `spec.namespace`
//!   becomes `spec.namespaceSelector = {matchLabels: {kubernetes.io/metadata.name: <ns>}}` and wins over an
//!   alpha `namespaceSelector`; `spec.namespace` is dropped; the label `apps.kruise.io/sidecarset-custom-version`
//!   moves to `spec.customVersion` and is deleted. beta→alpha: `namespaceSelector` is kept as is, a non-empty
//!   `spec.customVersion` becomes that label.
//! - **WorkloadSpread** (`apps.kruise.io`), spec/workloadspread.md §2.1, §2.2, §2.5. In every
//!   `spec.subsets[*]`: `requiredNodeSelectorTerm` ⇄ `requiredNodeSelector`, `preferredNodeSelectorTerms` ⇄
//!   `preferredNodeSelector`. Conditions (in `status.subsetStatuses[*]` and in every list of
//!   `status.versionedSubsetStatuses`) alpha→beta: an empty or missing `reason` becomes `Unknown`,
//!   `observedGeneration` is 0 (omitted) and a missing `message` becomes `""` (metav1.Condition always has
//!   one); beta→alpha: `observedGeneration` is dropped and an empty `message` omitted.
//! - **PodUnavailableBudget** (`policy.kruise.io`), spec/podunavailablebudget.md §2.2, §2.4. alpha→beta: the
//!   annotation `kruise.io/pub-protect-operations` (split on `,`, trimmed, empties dropped, each one of
//!   `DELETE`, `UPDATE`, `EVICT`, `RESIZE`) fills `spec.protectOperations`, `pub.kruise.io/protect-total-replicas`
//!   (base-10 int32) fills `spec.protectTotalReplicas`; the annotations are kept; errors carry OpenKruise's texts.
//!   beta→alpha: the fields are written back to the annotations (deleted when unset), `ignoredPodSelector` is
//!   lost. `status.observedGeneration` is omitted when 0 in v1beta1 and always present in v1alpha1.
//! - **CloneSet** (`apps.kruise.io`): no spec text; from the v1alpha1/v1beta1 schemas in shared/crds and
//!   `openkruise/kruise: apis/apps/v1alpha1/cloneset_conversion.go`. v1alpha1 `updateStrategy` is flat,
//!   v1beta1 nests it: alpha `type` `ReCreate` (or empty/unknown), `InPlaceIfPossible`, `InPlaceOnly` become beta
//!   `type: RollingUpdate` with `rollingUpdate.podUpdatePolicy` of that value, and the other alpha
//!   `updateStrategy` fields move into `rollingUpdate`; alpha `OnDelete` becomes beta `OnDelete` without
//!   `rollingUpdate` (its fields are dropped, as upstream does). The image pre-download annotations
//!   `apps.kruise.io/image-predownload-{parallelism,timeout-seconds,min-updated-ready-pods}` fill
//!   `rollingUpdate.inPlaceUpdateStrategy` (annotation wins; an unparsable number drops the field) and are
//!   kept; beta→alpha writes them back from the fields. `scaleStrategy.disablePVCReuse` (alpha) is the
//!   negation of `enablePVCReuse` (beta, always written); the label
//!   `apps.kruise.io/cloneset-scaling-exclude-preparing-delete: "true"` sets beta
//!   `scaleStrategy.excludePreparingDelete`, and beta→alpha writes that label when the field is true (upstream
//!   drops the field, which the v1alpha1 schema does not have). Status is identical in both versions.
//! - **ContainerRecreateRequest** (`apps.kruise.io`): from the schemas and
//!   `openkruise/kruise: apis/apps/v1alpha1/containerrecreaterequest_conversion.go`. alpha→beta: the annotation
//!   `crr.apps.kruise.io/sync-container-statuses` (a JSON list) becomes `status.containerStatusSnapshot`, and
//!   `crr.apps.kruise.io/unready-acquired` (RFC 3339) becomes the single condition `PodUnreadyAcquired`; both
//!   annotations are kept, unparsable ones are ignored. beta→alpha: the snapshot is marshalled back into the
//!   annotation, the first true `PodUnreadyAcquired` condition's time into the other one, and
//!   `status.conditions` / `status.containerStatusSnapshot` are dropped. The rest (spec, phase enums) is identical.
//! - **PersistentPodState** (`apps.kruise.io`): from the schemas and
//!   `openkruise/kruise: apis/apps/v1alpha1/persistent_pod_state_conversion.go`. `nodeTopologyKeys` (alpha) ⇄
//!   `keys` (beta) in `spec.requiredPersistentTopology` and in every
//!   `spec.preferredPersistentTopology[*].preference`; nothing else differs.
//!
//! Any other kind or group, or a desired version the kind does not serve, is a [`ConversionError`], answered
//! as a `Failure` result naming the kind and the versions.

use serde_json::{Map, Value, json};

mod cloneset;
mod container_recreate_request;
mod go_text;
mod object;
mod persistent_pod_state;
mod pod_unavailable_budget;
mod sidecarset;
mod workloadspread;

#[cfg(test)]
mod tests;

/// The versions every converted kind serves; `v1beta1` is the storage version.
const SERVED_VERSIONS: [&str; 2] = [V1ALPHA1, V1BETA1];
const V1ALPHA1: &str = "v1alpha1";
const V1BETA1: &str = "v1beta1";

/// The `ConversionReview` versions the apiserver may send (`conversionReviewVersions: [v1, v1beta1]`).
const REVIEW_API_VERSIONS: [&str; 2] = ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"];
const REVIEW_KIND: &str = "ConversionReview";

/// Which way an object is converted (there are only two served versions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    /// v1alpha1 to v1beta1 (the hub).
    ToBeta,
    /// v1beta1 to v1alpha1.
    ToAlpha,
}

/// Edits a cloned object in place; `Err` is the reason, in OpenKruise's words where it has some.
type Converter = fn(&mut Map<String, Value>, Direction) -> Result<(), String>;

/// One convertible kind.
struct ConvertibleKind {
    group: &'static str,
    kind: &'static str,
    convert: Converter,
}

/// The kinds whose shipped CRDs serve v1alpha1 and v1beta1 (shared/crds).
const KINDS: [ConvertibleKind; 6] = [
    ConvertibleKind {
        group: "apps.kruise.io",
        kind: "CloneSet",
        convert: cloneset::convert,
    },
    ConvertibleKind {
        group: "apps.kruise.io",
        kind: "ContainerRecreateRequest",
        convert: container_recreate_request::convert,
    },
    ConvertibleKind {
        group: "apps.kruise.io",
        kind: "PersistentPodState",
        convert: persistent_pod_state::convert,
    },
    ConvertibleKind {
        group: "apps.kruise.io",
        kind: "SidecarSet",
        convert: sidecarset::convert,
    },
    ConvertibleKind {
        group: "apps.kruise.io",
        kind: "WorkloadSpread",
        convert: workloadspread::convert,
    },
    ConvertibleKind {
        group: "policy.kruise.io",
        kind: "PodUnavailableBudget",
        convert: pod_unavailable_budget::convert,
    },
];

/// Why a review or an object could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// The body is not a `ConversionReview` this endpoint can answer (the server replies 400, not a review).
    #[error("malformed ConversionReview: {reason}")]
    Malformed {
        /// What is wrong with the body.
        reason: String,
    },
    /// An object in the review is not a Kubernetes object (not a JSON object, or no apiVersion or kind).
    #[error("cannot convert object: {reason}")]
    InvalidObject {
        /// What is missing or wrong.
        reason: String,
    },
    /// The object's kind (or group) is not one kruise-webhook converts.
    #[error(
        "cannot convert {kind} {name} ({api_version}): kruise-webhook converts only CloneSet, \
         ContainerRecreateRequest, PersistentPodState, SidecarSet, WorkloadSpread (apps.kruise.io) and \
         PodUnavailableBudget (policy.kruise.io)"
    )]
    UnsupportedKind {
        /// The object's kind.
        kind: String,
        /// The object's apiVersion.
        api_version: String,
        /// `namespace/name` or `name` of the object.
        name: String,
    },
    /// The object's version or the desired version is not served by the kind (or is in another group).
    #[error(
        "cannot convert {kind} {name} from {from} to {to}: {kind} is served as {group}/v1alpha1 and {group}/v1beta1"
    )]
    UnsupportedVersion {
        /// The object's kind.
        kind: String,
        /// `namespace/name` or `name` of the object.
        name: String,
        /// The object's apiVersion.
        from: String,
        /// The desired apiVersion.
        to: String,
        /// The kind's API group.
        group: &'static str,
    },
    /// A field (or the label/annotation carrying it) cannot be converted; `reason` is OpenKruise's text.
    #[error("converting {kind} {name} to {to}: {reason}")]
    InvalidField {
        /// The object's kind.
        kind: String,
        /// `namespace/name` or `name` of the object.
        name: String,
        /// The desired apiVersion.
        to: String,
        /// Why, e.g. `invalid kruise.io/pub-protect-operations value "FOO"`.
        reason: String,
    },
}

impl ConversionError {
    fn malformed(reason: impl Into<String>) -> Self {
        Self::Malformed {
            reason: reason.into(),
        }
    }
}

/// Converts one object to `desired_api_version` (e.g. "apps.kruise.io/v1beta1").
///
/// An object already at the desired version is returned unchanged. The result keeps the object's metadata
/// (only labels/annotations that carry a field change) and every field no rule names.
///
/// # Errors
/// [`ConversionError::InvalidObject`] when `obj` is not an object with apiVersion and kind,
/// [`ConversionError::UnsupportedKind`] / [`ConversionError::UnsupportedVersion`] for a kind or version this
/// endpoint does not convert, [`ConversionError::InvalidField`] when a carrier annotation does not parse.
pub fn convert_object(obj: &Value, desired_api_version: &str) -> Result<Value, ConversionError> {
    let map = obj
        .as_object()
        .ok_or_else(|| ConversionError::InvalidObject {
            reason: format!("expected a JSON object, got {}", object::type_name(obj)),
        })?;
    let api_version =
        non_empty_str(map, "apiVersion").ok_or_else(|| ConversionError::InvalidObject {
            reason: "the object has no apiVersion".into(),
        })?;
    let kind = non_empty_str(map, "kind").ok_or_else(|| ConversionError::InvalidObject {
        reason: format!("the {api_version} object has no kind"),
    })?;
    let name = object::display_name(map);
    let (group, version) = split_api_version(api_version);
    let Some(entry) = KINDS.iter().find(|k| k.group == group && k.kind == kind) else {
        return Err(ConversionError::UnsupportedKind {
            kind: kind.to_owned(),
            api_version: api_version.to_owned(),
            name,
        });
    };
    let (desired_group, desired_version) = split_api_version(desired_api_version);
    let served = |v: &str| SERVED_VERSIONS.contains(&v);
    if desired_group != entry.group || !served(desired_version) || !served(version) {
        return Err(ConversionError::UnsupportedVersion {
            kind: kind.to_owned(),
            name,
            from: api_version.to_owned(),
            to: desired_api_version.to_owned(),
            group: entry.group,
        });
    }
    if version == desired_version {
        return Ok(obj.clone());
    }
    let direction = if desired_version == V1BETA1 {
        Direction::ToBeta
    } else {
        Direction::ToAlpha
    };
    let mut converted = map.clone();
    (entry.convert)(&mut converted, direction).map_err(|reason| ConversionError::InvalidField {
        kind: kind.to_owned(),
        name,
        to: desired_api_version.to_owned(),
        reason,
    })?;
    converted.insert(
        "apiVersion".into(),
        Value::String(desired_api_version.to_owned()),
    );
    Ok(Value::Object(converted))
}

/// Answers a whole ConversionReview body (already parsed JSON); never panics.
///
/// The answer has the request's apiVersion and kind, and `response.uid` = `request.uid`. If every object
/// converts, `response.convertedObjects` holds them in request order with `result.status: Success`; otherwise
/// the first failure is answered as `result: {status: Failure, message}` without `convertedObjects`.
///
/// # Errors
/// [`ConversionError::Malformed`] when the body is not a `ConversionReview` (`apiextensions.k8s.io/v1` or
/// `v1beta1`) with a `request` holding a string `uid`, a non-empty `desiredAPIVersion` and an `objects` array.
pub fn review(body: &Value) -> Result<Value, ConversionError> {
    let body = body.as_object().ok_or_else(|| {
        ConversionError::malformed(format!(
            "expected a JSON object, got {}",
            object::type_name(body)
        ))
    })?;
    let api_version = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| ConversionError::malformed("apiVersion is missing"))?;
    if !REVIEW_API_VERSIONS.contains(&api_version) {
        return Err(ConversionError::malformed(format!(
            "apiVersion {api_version:?} is not apiextensions.k8s.io/v1 or apiextensions.k8s.io/v1beta1"
        )));
    }
    match body.get("kind").and_then(Value::as_str) {
        Some(REVIEW_KIND) => {}
        other => {
            return Err(ConversionError::malformed(format!(
                "kind is {}, expected ConversionReview",
                other.map_or_else(|| "missing".to_owned(), |k| format!("{k:?}"))
            )));
        }
    }
    let request = body
        .get("request")
        .and_then(Value::as_object)
        .ok_or_else(|| ConversionError::malformed("request is missing or not an object"))?;
    let uid = request
        .get("uid")
        .and_then(Value::as_str)
        .ok_or_else(|| ConversionError::malformed("request.uid is missing or not a string"))?;
    let desired = non_empty_str(request, "desiredAPIVersion").ok_or_else(|| {
        ConversionError::malformed("request.desiredAPIVersion is missing or empty")
    })?;
    let objects = request
        .get("objects")
        .and_then(Value::as_array)
        .ok_or_else(|| ConversionError::malformed("request.objects is missing or not an array"))?;

    let converted: Result<Vec<Value>, ConversionError> = objects
        .iter()
        .map(|obj| convert_object(obj, desired))
        .collect();
    let response = match converted {
        Ok(converted) => json!({
            "uid": uid,
            "convertedObjects": converted,
            "result": {"status": "Success"},
        }),
        Err(err) => json!({
            "uid": uid,
            "result": {"status": "Failure", "message": err.to_string()},
        }),
    };
    Ok(json!({"apiVersion": api_version, "kind": REVIEW_KIND, "response": response}))
}

/// `group/version` split; a core apiVersion (`v1`) has the empty group.
fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

fn non_empty_str<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}
