//! The PersistentPodState validating webhook `/validate-apps-kruise-io-persistentpodstate`
//! (docs/persistentpodstate.md §2; DECISIONS 14 for the code).
//!
//! Entry point: [`validate`]. CREATE and UPDATE (the shipped rule sends nothing else; anything else is
//! allowed). The object (and on UPDATE the old object) is decoded at the request's `resource.version`: v1beta1
//! as is, v1alpha1 converted first, another version refused (400). Then, in OpenKruise's order: the whitelist
//! (V0: a failure to read it is the only error), the spec (V1 empty targetRef, V2 kind, V3 topology), on UPDATE
//! targetRef immutability (V4), and the first conflict with another PersistentPodState of the namespace (V5).
//! The field errors are aggregated as `ErrorList.ToAggregate()` prints them and answered 422.
//!
//! **Facts.** The whitelist ConfigMap value and the PersistentPodStates of the namespace come from the I/O
//! layer ([`ValidateContext`]).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::same_target;
use crate::admission::{AdmissionRequest, Operation};
use crate::api::persistentpodstate::{
    API_VERSION, PersistentPodAnnotation, PersistentPodState, PersistentPodStateSpec,
    TargetReference,
};
use crate::conversion::convert_object;
use crate::json::RawJson;
use crate::pod::persistent_pod_state::whitelist::{self, WhitelistSource};
use crate::podunavailablebudget::related::api_group;
use crate::validation::field_error::{self, BadValue, FieldError, FieldPath, go_quote};
use crate::{Verdict, WebhookError};

/// The version decoded directly; `v1alpha1` is converted, any other refused.
const V1BETA1: &str = "v1beta1";
/// The other version served.
const V1ALPHA1: &str = "v1alpha1";

/// The status code of an invalid PersistentPodState: 422 (DECISIONS 14; OpenKruise answers 400).
pub const VIOLATION_CODE: u16 = 422;

/// controller-runtime's decoder text for an absent object.
const NO_CONTENT: &str = "there is no content to decode";

/// What the I/O layer fetched for one request.
#[derive(Debug, Clone, Copy)]
pub struct ValidateContext<'a> {
    /// Key `PPS_Watch_Custom_Workload_WhiteList` of ConfigMap `kruise-configuration` in the Kruise namespace.
    pub whitelist: &'a WhitelistSource,
    /// The PersistentPodStates of the object's namespace (v1beta1, any order), or why listing them failed.
    pub others: &'a Result<Vec<Arc<PersistentPodState>>, String>,
}

/// An object of the request, as v1beta1, and whether its v1beta1 JSON had each list present and empty (Go
/// prints an empty slice `{}` and a nil one `(nil)`; a v1alpha1 object converts empty lists to nil).
struct Decoded {
    object: PersistentPodState,
    empty_lists: EmptyLists,
}

/// Which lists of the spec are present and empty (not absent, not `null`).
#[derive(Debug, Clone, Copy, Default)]
struct EmptyLists {
    annotations: bool,
    preferred: bool,
}

/// Answers a PersistentPodState validating admission request (§2).
///
/// # Errors
/// [`WebhookError::Decode`] when the object (or, on UPDATE, the old object) is missing or does not decode
/// (400); [`WebhookError::UnsupportedVersion`] for a version other than v1alpha1 and v1beta1 (400).
pub fn validate(
    req: &AdmissionRequest,
    ctx: &ValidateContext<'_>,
) -> Result<Verdict, WebhookError> {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Ok(Verdict::allow());
    }
    let version = req.resource.version.as_str();
    let new = decode(req.object(), version)?;
    let old = match req.operation {
        Operation::Update => Some(decode(req.old_object(), version)?.object),
        _ => None,
    };
    let errs = errors(&new, old.as_ref(), ctx, req.namespace());
    Ok(field_error::verdict(&errs, VIOLATION_CODE))
}

/// An object of the request as v1beta1. Go decodes into the typed object of the request's version first, so
/// a field of the wrong type is refused before any conversion.
fn decode(raw: Option<&RawJson>, version: &str) -> Result<Decoded, WebhookError> {
    if version != V1BETA1 && version != V1ALPHA1 {
        return Err(WebhookError::UnsupportedVersion(version.to_owned()));
    }
    let raw = raw.ok_or_else(|| WebhookError::decode(NO_CONTENT))?;
    let value: Value = serde_json::from_str(raw.get()).map_err(WebhookError::decode)?;
    let typed = PersistentPodState::deserialize(&value).map_err(WebhookError::decode)?;
    if version == V1BETA1 {
        let empty = |key: &str| {
            value
                .pointer(&format!("/spec/{key}"))
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
        };
        return Ok(Decoded {
            object: typed,
            empty_lists: EmptyLists {
                annotations: empty("persistentPodAnnotations"),
                preferred: empty("preferredPersistentTopology"),
            },
        });
    }
    let converted = convert_object(&value, API_VERSION).map_err(WebhookError::decode)?;
    Ok(Decoded {
        object: PersistentPodState::deserialize(&converted).map_err(WebhookError::decode)?,
        empty_lists: EmptyLists::default(),
    })
}

/// `validatingPersistentPodStateFn`: V0 to V5 (module docs).
fn errors(
    new: &Decoded,
    old: Option<&PersistentPodState>,
    ctx: &ValidateContext<'_>,
    request_namespace: &str,
) -> Vec<FieldError> {
    let custom = match whitelist::parse(ctx.whitelist) {
        Ok(custom) => custom,
        Err(e) => {
            return vec![FieldError::internal(
                &FieldPath::new(""),
                format!("failed to get persistent pod state config white list, error: {e}"),
            )];
        }
    };
    let spec_path = FieldPath::new("spec");
    let mut errs = spec_errors(&new.object.spec, new.empty_lists, &custom, &spec_path);
    if let Some(old) = old
        && new.object.spec.target_ref != old.spec.target_ref
    {
        errs.push(FieldError::forbidden(
            &spec_path.child("targetRef"),
            "targetRef is immutable",
        ));
    }
    match ctx.others {
        Err(e) => errs.push(FieldError::internal(
            &FieldPath::new(""),
            format!("query other PersistentPodState failed, err: {e}"),
        )),
        Ok(all) => {
            let namespace = new
                .object
                .metadata
                .namespace
                .as_deref()
                .filter(|ns| !ns.is_empty())
                .unwrap_or(request_namespace);
            let mut others: Vec<&PersistentPodState> = all
                .iter()
                .map(Arc::as_ref)
                .filter(|o| o.metadata.namespace.as_deref().unwrap_or(namespace) == namespace)
                .collect();
            others.sort_by(|a, b| a.name().cmp(b.name()));
            errs.extend(conflict(&new.object, &others, &spec_path));
        }
    }
    errs
}

/// `validatePersistentPodStateSpec`: V1, V2 and V3.
fn spec_errors(
    spec: &PersistentPodStateSpec,
    empty_lists: EmptyLists,
    custom: &[whitelist::GroupKind],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let target = &spec.target_ref;
    let target_path = path.child("targetRef");
    if target.api_version.is_empty() || target.name.is_empty() || target.kind.is_empty() {
        errs.push(FieldError::invalid(
            &target_path,
            BadValue::Raw(render_target_reference(target)),
            "empty targetRef is not valid for PersistentPodState.",
        ));
    }
    let supported = api_group(&target.api_version)
        .is_some_and(|group| whitelist::allows(custom, group, &target.kind));
    if !supported {
        errs.push(FieldError::invalid(
            &target_path,
            BadValue::Raw(render_target_reference(target)),
            "targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList",
        ));
    }
    if spec.required_persistent_topology.is_none() && spec.preferred_persistent_topology.is_empty()
    {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw(render_spec_without_topology(spec, empty_lists)),
            "TopologyConstraint and TopologyPreference cannot be empty at the same time",
        ));
    }
    errs
}

/// `validatePerConflict`: the first other PersistentPodState (name order) targeting the same workload.
fn conflict(
    pps: &PersistentPodState,
    others: &[&PersistentPodState],
    path: &FieldPath,
) -> Option<FieldError> {
    let mine = &pps.spec.target_ref;
    others
        .iter()
        .filter(|other| other.name() != pps.name())
        .find(|other| same_target(mine, &other.spec.target_ref))
        .map(|other| {
            FieldError::invalid(
                &path.child("targetRef"),
                BadValue::Raw(render_target_reference(mine)),
                format!(
                    "targetRef is in conflict with other PersistentPodState {}",
                    other.name()
                ),
            )
        })
}

/// Go's `%#v` of a `v1beta1.TargetReference`.
fn render_target_reference(target: &TargetReference) -> String {
    format!(
        "v1beta1.TargetReference{{APIVersion:{}, Kind:{}, Name:{}}}",
        go_quote(&target.api_version),
        go_quote(&target.kind),
        go_quote(&target.name)
    )
}

/// Go's `%#v` of a `v1beta1.PersistentPodStateSpec` as V3 sees it: no required term, no preferred term (nil,
/// or present and empty per `empty_lists`).
fn render_spec_without_topology(spec: &PersistentPodStateSpec, empty_lists: EmptyLists) -> String {
    let annotations = match (
        &spec.persistent_pod_annotations[..],
        empty_lists.annotations,
    ) {
        ([], false) => "[]v1beta1.PersistentPodAnnotation(nil)".to_owned(),
        (items, _) => {
            let items: Vec<String> = items.iter().map(render_annotation).collect();
            format!("[]v1beta1.PersistentPodAnnotation{{{}}}", items.join(", "))
        }
    };
    let preferred = if empty_lists.preferred {
        "[]v1beta1.PreferredTopologyTerm{}"
    } else {
        "[]v1beta1.PreferredTopologyTerm(nil)"
    };
    format!(
        "v1beta1.PersistentPodStateSpec{{TargetReference:{}, PersistentPodAnnotations:{annotations}, \
         RequiredPersistentTopology:(*v1beta1.NodeTopologyTerm)(nil), PreferredPersistentTopology:{preferred}, \
         PersistentPodStateRetentionPolicy:{}}}",
        render_target_reference(&spec.target_ref),
        go_quote(
            spec.persistent_pod_state_retention_policy
                .as_deref()
                .unwrap_or("")
        )
    )
}

fn render_annotation(annotation: &PersistentPodAnnotation) -> String {
    format!(
        "v1beta1.PersistentPodAnnotation{{Key:{}}}",
        go_quote(&annotation.key)
    )
}

#[cfg(test)]
mod tests;
