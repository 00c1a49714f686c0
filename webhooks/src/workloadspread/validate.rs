//! The WorkloadSpread validating webhook `/validate-apps-kruise-io-workloadspread` (spec/workloadspread.md §7;
//! §2.5 for the conversion; DECISIONS 14 for the codes).
//!
//! Entry point: [`validate`]. In OpenKruise's order:
//!
//! 1. gate `WorkloadSpread` off: every request is denied 403 `feature-gate WorkloadSpread is not enabled`;
//! 2. operations other than CREATE and UPDATE are allowed (the shipped rule sends none);
//! 3. the object (and on UPDATE the old object) is decoded; `request.resource.version` v1beta1 is read
//!    directly, any other version as v1alpha1 and converted ([`crate::conversion::convert_object`], §2.5), so
//!    field paths always use the v1beta1 names (`requiredNodeSelector`, `preferredNodeSelector`);
//! 4. the spec ([`spec_errors`]): targetRef (built-in kinds and the custom whitelist of §4.2), subsets (names,
//!    node selectors and tolerations with Kubernetes' validation, maxReplicas), scheduleStrategy,
//!    targetFilter; then the first conflict with another WorkloadSpread of the namespace (visited in name
//!    order, DECISIONS 12); on UPDATE the ObjectMeta update checks and targetRef immutability (a version
//!    change is allowed). The field errors are aggregated as `ErrorList.ToAggregate()` prints them.
//!
//! **Codes.** OpenKruise answers `Errored(400)` for an invalid WorkloadSpread; DECISIONS 14 makes it 422, with
//! OpenKruise's message. A malformed request stays 400: no object (`there is no content to decode`), an object
//! that does not decode or convert.
//!
//! **Facts.** The whitelist ConfigMap value and the other WorkloadSpreads of the namespace come from the I/O
//! layer ([`ValidateContext`]); a failure to read either is reported as OpenKruise reports it, inside the
//! aggregate (`spec.targetRef: Internal error: <err>`, `: Internal error: query other WorkloadSpread failed,
//! err: <err>`).
//!
//! **Not implemented**: the subset `patch` checks of §7.1 (see [`super`]).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_json::Value;

use super::GATE;
use super::whitelist::{self, WhitelistSource};
use crate::admission::{AdmissionRequest, Operation};
use crate::api::workloadspread::{
    ADAPTIVE, FIXED, TargetFilter, TargetReference, WorkloadSpread, WorkloadSpreadSpec,
    WorkloadSpreadSubset,
};
use crate::conversion::convert_object;
use crate::json::RawJson;
use crate::json::strategic_merge;
use crate::validation::field_error::{
    self, BadValue, FieldError, FieldPath, go_int_or_string, go_quote, go_string_slice,
};
use crate::validation::{meta, scheduling};
use crate::{Denial, FeatureGates, Verdict, WebhookError};

/// The version decoded directly; every other version is decoded as v1alpha1 and converted.
const V1BETA1: &str = "v1beta1";
/// The version every object is validated at: the storage version, the hub (§2).
const HUB_API_VERSION: &str = "apps.kruise.io/v1beta1";

/// The status code of an invalid WorkloadSpread: 422 (DECISIONS 14 overrides OpenKruise's `Errored(400)`).
pub const VIOLATION_CODE: u16 = 422;

/// The answer to every request while the gate is off (§7, code 403).
pub const GATE_OFF_MESSAGE: &str = "feature-gate WorkloadSpread is not enabled";

/// controller-runtime's decoder text for an absent object.
const NO_CONTENT: &str = "there is no content to decode";

/// `MaxScheduledFailedDuration` (300 s) less the 5 s OpenKruise keeps for reconcile cost (§7.1).
const RESCHEDULE_BUDGET_SECONDS: i32 = 295;

/// What the I/O layer fetched for one request.
#[derive(Debug, Clone, Copy)]
pub struct ValidateContext<'a> {
    /// Feature gates.
    pub gates: &'a FeatureGates,
    /// Key `WorkloadSpread_Watch_Custom_Workload_WhiteList` of ConfigMap `kruise-configuration` in the Kruise
    /// namespace (§4.2).
    pub custom_workloads: &'a WhitelistSource,
    /// The WorkloadSpreads of the object's namespace (v1beta1, any order), or why listing them failed.
    pub others: &'a Result<Vec<Arc<WorkloadSpread>>, String>,
    /// The target workload as the API server has it ([`template_target`] names it), `None` when it does not
    /// exist (or is not a built-in kind): the template of the subset patch checks (§7.1), skipped without.
    pub target: Option<&'a Value>,
}

/// The workload whose pod template the subset patches are checked against (§7.1): a built-in target in its
/// group, read as (apiVersion to GET, kind, name); a StatefulSet as `apps/v1` whatever its group, as
/// OpenKruise reads it. `None` for anything else, or an object without a readable targetRef.
pub fn template_target(object: &Value) -> Option<(&'static str, &'static str, String)> {
    let target = object.get("spec")?.get("targetRef")?;
    let api_version = target.get("apiVersion")?.as_str()?;
    let name = target.get("name")?.as_str().filter(|n| !n.is_empty())?;
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let (get, kind) = match (target.get("kind")?.as_str()?, group) {
        ("CloneSet", "apps.kruise.io") => ("apps.kruise.io/v1alpha1", "CloneSet"),
        ("Deployment", "apps") => ("apps/v1", "Deployment"),
        ("ReplicaSet", "apps") => ("apps/v1", "ReplicaSet"),
        ("Job", "batch") => ("batch/v1", "Job"),
        ("StatefulSet", "apps" | "apps.kruise.io") => ("apps/v1", "StatefulSet"),
        _ => return None,
    };
    Some((get, kind, name.to_owned()))
}

/// The pod the subset patches apply to: the workload's template (metadata and spec), with one volume per
/// `volumeClaimTemplates` entry (CloneSet, StatefulSet) as the pods get them. `None` without a template.
fn template_pod(workload: &Value) -> Option<Value> {
    let template = workload.get("spec")?.get("template")?;
    let mut spec = template.get("spec").cloned().unwrap_or(Value::Null);
    let claims = workload["spec"]["volumeClaimTemplates"].as_array();
    if let Some(claims) = claims.filter(|c| !c.is_empty()) {
        if !spec.is_object() {
            spec = Value::Object(serde_json::Map::new());
        }
        if !spec["volumes"].is_array() {
            spec["volumes"] = Value::Array(Vec::new());
        }
        if let Some(volumes) = spec["volumes"].as_array_mut() {
            for claim in claims {
                let name = claim["metadata"]["name"].clone();
                volumes.push(
                    serde_json::json!({"name": name, "persistentVolumeClaim": {"claimName": name}}),
                );
            }
        }
    }
    Some(serde_json::json!({
        "metadata": template.get("metadata").cloned().unwrap_or(Value::Null),
        "spec": spec,
    }))
}

/// The patch rule of §7.1 for one subset: the template pod strategic-merge-patched, then Kubernetes' pod
/// spec validation under `<subset>.patch`.
fn patch_errors(
    pod: &Value,
    patch: &serde_json::value::RawValue,
    path: &FieldPath,
) -> Vec<FieldError> {
    let here = path.child("patch");
    let invalid = |detail: String| {
        vec![FieldError::invalid(
            &here,
            BadValue::str(patch.get()),
            detail,
        )]
    };
    let parsed: Value = match serde_json::from_str(patch.get()) {
        Ok(v) => v,
        Err(e) => return invalid(format!("failed to merge patch: {e}")),
    };
    let patched = match strategic_merge::apply(pod.clone(), parsed, strategic_merge::POD) {
        Ok(p) => p,
        Err(e) => return invalid(format!("failed to merge patch: {e}")),
    };
    let spec = &patched["spec"];
    let objects = |key: &str| -> Result<Vec<serde_json::Map<String, Value>>, String> {
        match &spec[key] {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items
                .iter()
                .map(|c| {
                    c.as_object()
                        .cloned()
                        .ok_or_else(|| format!("spec.{key}: expected an object"))
                })
                .collect(),
            _ => Err(format!("spec.{key}: expected a list")),
        }
    };
    let (init, containers) = match (objects("initContainers"), objects("containers")) {
        (Ok(i), Ok(c)) => (i, c),
        (Err(e), _) | (_, Err(e)) => return invalid(format!("failed to unmarshal: {e}")),
    };
    let volumes = spec["volumes"].as_array().cloned().unwrap_or_default();
    let grace = spec["terminationGracePeriodSeconds"]
        .as_i64()
        .unwrap_or(crate::validation::pod::DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
    let pod_spec = crate::validation::pod::PodSpec {
        init_containers: &init,
        containers: &containers,
        volumes: &volumes,
        termination_grace_period_seconds: grace,
    };
    match crate::validation::pod::validate_pod_spec(&pod_spec, &here) {
        Ok(errs) => errs,
        Err(e) => invalid(format!("Convert_v1_Pod_To_core_Pod failed: {e}")),
    }
}

/// Answers a WorkloadSpread validating admission request (§7).
///
/// A valid WorkloadSpread is allowed; an invalid one is denied with code 422 and OpenKruise's message; with the
/// gate off every request is denied with code 403.
///
/// # Errors
/// [`WebhookError::Decode`] when the object (or, on UPDATE, the old object) is missing, does not decode as a
/// WorkloadSpread, or (not v1beta1) does not convert (answered 400).
pub fn validate(
    req: &AdmissionRequest,
    ctx: &ValidateContext<'_>,
) -> Result<Verdict, WebhookError> {
    if !ctx.gates.enabled(GATE) {
        return Ok(Verdict::deny(Denial {
            code: 403,
            reason: None,
            message: GATE_OFF_MESSAGE.to_owned(),
        }));
    }
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Ok(Verdict::allow());
    }
    let version = req.resource.version.as_str();
    let new = decode(req.object.as_ref(), version)?;
    let old = match req.operation {
        Operation::Update => Some(decode(req.old_object.as_ref(), version)?),
        _ => None,
    };
    let namespace = new
        .metadata
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| req.namespace());
    let template = ctx.target.and_then(template_pod);
    let mut errs = spec_errors(&new, ctx.custom_workloads, template.as_ref());
    match ctx.others {
        Err(e) => errs.push(FieldError::internal(
            &FieldPath::new(""),
            format!("query other WorkloadSpread failed, err: {e}"),
        )),
        Ok(all) => {
            let mut others: Vec<&WorkloadSpread> = all
                .iter()
                .map(Arc::as_ref)
                .filter(|o| o.metadata.namespace.as_deref().unwrap_or(namespace) == namespace)
                .collect();
            others.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            errs.extend(conflict(&new, &others));
        }
    }
    if let Some(old) = &old {
        errs.extend(meta::validate_object_meta_update(
            &new.metadata,
            &old.metadata,
            &FieldPath::new("metadata"),
        ));
        errs.extend(target_ref_update(&new.spec, &old.spec));
    }
    Ok(field_error::verdict(&errs, VIOLATION_CODE))
}

/// An object of the request as the v1beta1 type. Go decodes into its typed object first, so a field of the
/// wrong type is refused before any conversion; a v1alpha1 object is then converted and read again.
fn decode(raw: Option<&RawJson>, version: &str) -> Result<WorkloadSpread, WebhookError> {
    let raw = raw.ok_or_else(|| WebhookError::decode(NO_CONTENT))?;
    let value: Value = serde_json::from_str(raw.get()).map_err(WebhookError::decode)?;
    let typed = WorkloadSpread::deserialize(&value).map_err(WebhookError::decode)?;
    if version == V1BETA1 {
        return Ok(typed);
    }
    let converted = convert_object(&value, HUB_API_VERSION).map_err(WebhookError::decode)?;
    WorkloadSpread::deserialize(&converted).map_err(WebhookError::decode)
}

/// `schema.ParseGroupVersion` reduced to the group: `""` and `"/"` have the empty group, no `/` is a core
/// version, one `/` separates group and version, more is an error.
fn parse_group(api_version: &str) -> Result<&str, ()> {
    if api_version.is_empty() || api_version == "/" {
        return Ok("");
    }
    match api_version.split_once('/') {
        None => Ok(""),
        Some((_, version)) if version.contains('/') => Err(()),
        Some((group, _)) => Ok(group),
    }
}

/// The group of a targetRef; an unparsable apiVersion has the empty group, as Go ignores the error there.
fn group_of(target: &TargetReference) -> &str {
    parse_group(&target.api_version).unwrap_or("")
}

/// `verifyGroupKind`: the kind is `kind` and the apiVersion parses to one of `groups`.
fn verify_group_kind(target: &TargetReference, kind: &str, groups: &[&str]) -> bool {
    parse_group(&target.api_version).is_ok_and(|g| target.kind == kind && groups.contains(&g))
}

/// Go's `%#v` of a `v1beta1.TargetReference` (the value of targetRef errors).
fn render_target_reference(target: &TargetReference) -> String {
    format!(
        "v1beta1.TargetReference{{APIVersion:{}, Kind:{}, Name:{}}}",
        go_quote(&target.api_version),
        go_quote(&target.kind),
        go_quote(&target.name)
    )
}

/// Go's `%#v` of a `v1beta1.TargetFilter`, best effort: Go prints the selector pointer as an address, here as
/// the selector it points to.
fn render_target_filter(filter: &TargetFilter) -> String {
    let selector = filter.selector.as_ref().map_or_else(
        || "(*v1.LabelSelector)(nil)".to_owned(),
        |s| format!("&{}", meta::render_label_selector(s)),
    );
    format!(
        "v1beta1.TargetFilter{{Selector:{selector}, ReplicasPathList:{}}}",
        go_string_slice(&filter.replicas_path_list)
    )
}

/// `validateWorkloadSpreadSpec`: targetRef, subsets, scheduleStrategy, targetFilter.
fn spec_errors(
    ws: &WorkloadSpread,
    custom_workloads: &WhitelistSource,
    template: Option<&Value>,
) -> Vec<FieldError> {
    let spec = &ws.spec;
    let path = FieldPath::new("spec");
    let mut errs = target_ref_errors(spec, custom_workloads, &path);
    errs.extend(subset_errors(spec, &path.child("subsets"), template));
    errs.extend(schedule_strategy_errors(
        spec,
        &path.child("scheduleStrategy"),
    ));
    if let Some(filter) = &spec.target_filter
        && let Some(reason) = filter
            .selector
            .as_ref()
            .and_then(meta::selector_conversion_error)
    {
        errs.push(FieldError::invalid(
            &path.child("targetFilter"),
            BadValue::Raw(render_target_filter(filter)),
            reason,
        ));
    }
    errs
}

/// The targetRef rules of §7.1: present, no empty field, a built-in kind in its group(s), or a top-level entry
/// of the custom whitelist.
fn target_ref_errors(
    spec: &WorkloadSpreadSpec,
    custom_workloads: &WhitelistSource,
    path: &FieldPath,
) -> Vec<FieldError> {
    let path = path.child("targetRef");
    let Some(target) = &spec.target_ref else {
        return vec![FieldError::required(
            &path,
            "no targetRef defined in WorkloadSpread",
        )];
    };
    let invalid = |detail: &str| {
        FieldError::invalid(
            &path,
            BadValue::Raw(render_target_reference(target)),
            detail,
        )
    };
    if target.api_version.is_empty() || target.name.is_empty() || target.kind.is_empty() {
        return vec![invalid(
            "empty TargetReference is not valid for WorkloadSpread.",
        )];
    }
    let built_in: Option<&[&str]> = match target.kind.as_str() {
        "CloneSet" => Some(&["apps.kruise.io"]),
        "Deployment" | "ReplicaSet" => Some(&["apps"]),
        "Job" => Some(&["batch"]),
        "StatefulSet" => Some(&["apps", "apps.kruise.io"]),
        _ => None,
    };
    if let Some(groups) = built_in {
        return if verify_group_kind(target, &target.kind, groups) {
            Vec::new()
        } else {
            vec![invalid(&format!(
                "TargetReference is not valid for {}.",
                target.kind
            ))]
        };
    }
    let mut errs = Vec::new();
    // Go goes on with the (empty) whitelist after reporting why it could not be read.
    let workloads = whitelist::parse(custom_workloads).unwrap_or_else(|e| {
        errs.push(FieldError::internal(&path, e));
        Vec::new()
    });
    let permitted = workloads
        .iter()
        .any(|w| verify_group_kind(target, &w.workload.kind, &[w.workload.group.as_str()]));
    if !permitted {
        errs.push(invalid("TargetReference's GroupKind is not permitted."));
    }
    errs
}

/// `validateWorkloadSpreadSubsets`: at least one subset; per subset the name (not empty, not repeated), the
/// required and preferred node selectors and the tolerations (Kubernetes' validation), then maxReplicas
/// ([`max_replicas_error`], whose first error ends the subset checks); after the loop, percentages that do
/// not reach 100 % while the last subset is limited.
fn subset_errors(
    spec: &WorkloadSpreadSpec,
    path: &FieldPath,
    template: Option<&Value>,
) -> Vec<FieldError> {
    let subsets = &spec.subsets;
    if subsets.is_empty() {
        return vec![FieldError::required(
            path,
            "subsets number must >= 1 in WorkloadSpread",
        )];
    }
    let is_stateful_set = spec
        .target_ref
        .as_ref()
        .is_some_and(|t| t.kind == "StatefulSet");
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut first_is_percent: Option<bool> = None;
    let mut percent_sum: i64 = 0;
    for (i, subset) in subsets.iter().enumerate() {
        let here = path.index(i);
        errs.extend(name_errors(subset, &mut names, &here));
        if let Some(term) = &subset.required_node_selector {
            errs.extend(scheduling::validate_node_selector_term(
                term,
                &here.child("requiredNodeSelector"),
            ));
        }
        errs.extend(scheduling::validate_preferred_scheduling_terms(
            &subset.preferred_node_selector,
            &here.child("preferredNodeSelector"),
        ));
        errs.extend(scheduling::validate_tolerations(
            &subset.tolerations,
            &here.child("tolerations"),
        ));
        if let (Some(pod), Some(patch)) = (template, &subset.patch)
            && patch.get() != "null"
        {
            errs.extend(patch_errors(pod, patch, &here));
        }
        if let Some(max) = &subset.max_replicas
            && let Err(detail) = max_replicas_error(
                max,
                &mut first_is_percent,
                is_stateful_set,
                &mut percent_sum,
            )
        {
            errs.push(FieldError::invalid(
                &here.child("maxReplicas"),
                BadValue::Raw(go_int_or_string(max)),
                detail,
            ));
            return errs;
        }
    }
    if first_is_percent == Some(true)
        && percent_sum < 100
        && let Some(last) = subsets.last()
        && last.max_replicas.is_some()
    {
        let first = subsets[0]
            .max_replicas
            .as_ref()
            .map_or(BadValue::Null, |m| BadValue::Raw(go_int_or_string(m)));
        errs.push(FieldError::invalid(
            &path.index(0).child("maxReplicas"),
            first,
            "maxReplicas sum of all subsets must equal 100% when type is specified as percent",
        ));
    }
    errs
}

/// The name rules: not empty (an Invalid without detail), not a repeat.
fn name_errors<'a>(
    subset: &'a WorkloadSpreadSubset,
    names: &mut Vec<&'a str>,
    path: &FieldPath,
) -> Option<FieldError> {
    let name = subset.name.as_str();
    let path = path.child("name");
    if name.is_empty() {
        return Some(FieldError::invalid(&path, BadValue::str(""), ""));
    }
    if names.contains(&name) {
        return Some(FieldError::invalid(
            &path,
            BadValue::str(name),
            format!("duplicated subset name {name}"),
        ));
    }
    names.push(name);
    None
}

/// One subset's maxReplicas, in Go's order: the same type as the first subset that has one, an integer for a
/// StatefulSet target, a value `intstr.GetValueFromIntOrPercent` reads (`<int>%` for a string) and not
/// negative, and a running percent sum of at most 100. `Err`: the detail of the first rule broken.
fn max_replicas_error(
    max: &IntOrString,
    first_is_percent: &mut Option<bool>,
    is_stateful_set: bool,
    percent_sum: &mut i64,
) -> Result<(), &'static str> {
    let is_percent = matches!(max, IntOrString::String(_));
    match *first_is_percent {
        None => *first_is_percent = Some(is_percent),
        Some(first) if first != is_percent => {
            return Err("the maxReplicas type of all subsets must be the same");
        }
        Some(_) => {}
    }
    if is_stateful_set && is_percent {
        return Err("the maxReplicas type must be Int for StatefulSet");
    }
    let value = match max {
        IntOrString::Int(n) => i64::from(*n),
        // Go's `strconv.Atoi` of the text before the `%` (an optional sign, decimal digits); the percentage of
        // 100 rounded up is the percentage itself.
        IntOrString::String(s) => match s.strip_suffix('%').map(str::parse::<i64>) {
            Some(Ok(v)) => v,
            _ => return Err("maxReplicas is not valid for subset"),
        },
    };
    if value < 0 {
        return Err("maxReplicas is not valid for subset");
    }
    if is_percent {
        *percent_sum = percent_sum.saturating_add(value);
        if *percent_sum > 100 {
            return Err("the sum of all subset's maxReplicas exceeds 100% is no permitted");
        }
    }
    Ok(())
}

/// The most `rescheduleCriticalSeconds` may be with `n` subsets: unbounded (int32) for one, else
/// `295 / (n - 1)` (integer division).
pub fn max_reschedule_critical_seconds(n: usize) -> i32 {
    if n > 1 {
        let others = i32::try_from(n - 1).unwrap_or(i32::MAX);
        RESCHEDULE_BUDGET_SECONDS / others
    } else {
        i32::MAX
    }
}

/// The scheduleStrategy rules of §7.1. The adaptive checks run only when `adaptive` is present.
fn schedule_strategy_errors(spec: &WorkloadSpreadSpec, path: &FieldPath) -> Vec<FieldError> {
    let strategy = &spec.schedule_strategy;
    let mut errs = Vec::new();
    let type_ = strategy.type_.as_str();
    if !type_.is_empty() && type_ != FIXED && type_ != ADAPTIVE {
        errs.push(FieldError::invalid(
            &path.child("type"),
            BadValue::str(type_),
            "ScheduleStrategy's type is not valid",
        ));
    }
    let Some(adaptive) = &strategy.adaptive else {
        return errs;
    };
    let seconds = adaptive.reschedule_critical_seconds;
    let shown = || seconds.map_or(BadValue::Null, |s| BadValue::Int(s.into()));
    if type_ != ADAPTIVE {
        errs.push(FieldError::invalid(
            &path.child("type"),
            shown(),
            "the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy",
        ));
    }
    let n = spec.subsets.len();
    if n > 1 && spec.subsets[n - 1].max_replicas.is_some() {
        errs.push(FieldError::invalid(
            &path.child("adaptive"),
            shown(),
            "the last subset's maxReplicas must be not specified when using adaptive scheduleStrategy",
        ));
    }
    let allowed = max_reschedule_critical_seconds(n);
    if let Some(s) = seconds
        && (s < 0 || s > allowed)
    {
        errs.push(FieldError::invalid(
            &path.child("adaptive").child("rescheduleCriticalSeconds"),
            BadValue::Int(s.into()),
            format!(
                "rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > {allowed} is not permitted"
            ),
        ));
    }
    errs
}

/// `validateWorkloadSpreadConflict`: the first other WorkloadSpread (by name, skipping this one's own name)
/// whose targetRef has the same group, kind and name.
fn conflict(ws: &WorkloadSpread, others: &[&WorkloadSpread]) -> Option<FieldError> {
    let mine = ws.spec.target_ref.as_ref()?;
    let name = ws.metadata.name.as_deref().unwrap_or("");
    others.iter().find_map(|other| {
        let other_name = other.metadata.name.as_deref().unwrap_or("");
        let theirs = other.spec.target_ref.as_ref()?;
        (other_name != name
            && group_of(mine) == group_of(theirs)
            && mine.kind == theirs.kind
            && mine.name == theirs.name)
            .then(|| {
                FieldError::invalid(
                    &FieldPath::new("spec").child("targetRef"),
                    BadValue::Raw(render_target_reference(mine)),
                    format!(
                        "ws.spec.targetRef is in conflict with other WorkloadSpread {other_name}"
                    ),
                )
            })
    })
}

/// `validateWorkloadSpreadTargetRefUpdate`: group, kind and name of the targetRef are immutable (the version
/// may change); nothing is compared when either object has none.
fn target_ref_update(new: &WorkloadSpreadSpec, old: &WorkloadSpreadSpec) -> Option<FieldError> {
    let (target, before) = (new.target_ref.as_ref()?, old.target_ref.as_ref()?);
    (group_of(target) != group_of(before)
        || target.kind != before.kind
        || target.name != before.name)
        .then(|| {
            FieldError::invalid(
                &FieldPath::new("spec").child("targetRef"),
                BadValue::Raw(render_target_reference(target)),
                "change TargetReference is not permitted for WorkloadSpread",
            )
        })
}

#[cfg(test)]
mod tests;
