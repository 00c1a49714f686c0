//! The PodUnavailableBudget validating webhook `/validate-policy-kruise-io-podunavailablebudget`
//! (spec/podunavailablebudget.md §8; §2.4 for the conversion; DECISIONS 14 for the codes).
//!
//! Entry point: [`validate`]. In OpenKruise's order:
//!
//! 1. both PUB gates off: every request is answered 400 with [`GATES_OFF_MESSAGE`];
//! 2. `request.resource.version` other than v1alpha1 and v1beta1: 400 `unsupported version: <v>`;
//! 3. operations other than CREATE and UPDATE are allowed (the shipped rule sends none);
//! 4. the object (and on UPDATE the old object) is decoded; a v1alpha1 one is then converted to v1beta1
//!    ([`crate::conversion::convert_object`], §2.4);
//! 5. every rule of the §8 table is checked and the field errors aggregated (`ErrorList.ToAggregate()`):
//!    the `protect-total-replicas` annotation, selector or targetRef, maxUnavailable or minAvailable,
//!    protectOperations, ignoredPodSelector, on UPDATE selector and targetRef unchanged, and the first
//!    conflict with another PUB of the namespace (visited in name order, DECISIONS 12).
//!
//! **Codes.** OpenKruise answers `Errored(400)` for everything. DECISIONS 14 makes an invalid custom resource
//! 422, with OpenKruise's message: the aggregated field errors, and a v1alpha1 object whose carrier
//! annotations do not convert (`failed to convert v1alpha1 PUB to v1beta1: <err>`: the same bad annotation
//! in a v1beta1 object is a field error of rule 1, so both answer alike). A malformed request stays 400: no
//! object (`there is no content to decode`), an object that does not decode, an unsupported version. The
//! gates-off answer stays 400 as the spec gives it: the request is fine, the server is configured off.
//!
//! Listing the other PUBs reads a cache and cannot fail, so the `Internal error` of rule 18 never occurs.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_json::Value;

use crate::admission::{AdmissionRequest, Operation};
use crate::api::podunavailablebudget::{
    OPERATION_DELETE, OPERATION_EVICT, OPERATION_RESIZE, OPERATION_UPDATE,
    PROTECT_TOTAL_REPLICAS_ANNOTATION, PodUnavailableBudget, PodUnavailableBudgetSpec,
    TargetReference,
};
use crate::conversion::{ConversionError, convert_object};
use crate::json::RawJson;
use crate::validation::apps::{is_not_more_than_100_percent, validate_positive_int_or_percent};
use crate::validation::field_error::{self, BadValue, FieldError, FieldPath, go_quote};
use crate::validation::meta;
use crate::view::PodUnavailableBudgetView;
use crate::{Denial, FeatureGates, Verdict, WebhookError};

/// The API versions the webhook decodes (`request.resource.version`).
pub const VERSIONS: [&str; 2] = [V1ALPHA1, V1BETA1];
const V1ALPHA1: &str = "v1alpha1";
const V1BETA1: &str = "v1beta1";
/// The version every object is validated at: the storage version, the one the cache holds.
const HUB_API_VERSION: &str = "policy.kruise.io/v1beta1";

/// The status code of an invalid PUB: 422 (DECISIONS 14 overrides OpenKruise's `Errored(400)`). The
/// message stays OpenKruise's.
pub const VIOLATION_CODE: u16 = 422;

/// The answer to every request while both PUB gates are off (§8 rule 1, code 400).
pub const GATES_OFF_MESSAGE: &str = "feature PodUnavailableBudget is invalid, please open via feature-gate(PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate)";

/// controller-runtime's decoder text for an absent object.
const NO_CONTENT: &str = "there is no content to decode";

/// The operations `spec.protectOperations` accepts, in OpenKruise's order.
const OPERATIONS: [&str; 4] = [
    OPERATION_DELETE,
    OPERATION_UPDATE,
    OPERATION_EVICT,
    OPERATION_RESIZE,
];

/// Answers a PodUnavailableBudget validating admission request (§8).
///
/// A valid PUB is allowed (`code: 200`, no message). An invalid one is denied with code 422 and
/// OpenKruise's message; with both PUB gates off every request is denied with code 400.
///
/// # Errors
/// [`WebhookError::UnsupportedVersion`] when `request.resource.version` is neither v1alpha1 nor v1beta1, and
/// [`WebhookError::Decode`] when the object (or, on UPDATE, the old object) is missing or does not decode as a
/// PodUnavailableBudget (both answered 400).
pub fn validate(
    req: &AdmissionRequest,
    view: &impl PodUnavailableBudgetView,
    gates: &FeatureGates,
) -> Result<Verdict, WebhookError> {
    if !super::enabled(gates) {
        return Ok(Verdict::deny(Denial {
            code: 400,
            reason: None,
            message: GATES_OFF_MESSAGE.to_owned(),
        }));
    }
    let version = req.resource.version.as_str();
    if !VERSIONS.contains(&version) {
        return Err(WebhookError::UnsupportedVersion(version.to_owned()));
    }
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Ok(Verdict::allow());
    }
    let new = decode(req.object.as_ref())?;
    let old = match req.operation {
        Operation::Update => Some(decode(req.old_object.as_ref())?),
        _ => None,
    };
    // Both decoded before either is converted, as Go does.
    let hub = |(value, typed): (Value, PodUnavailableBudget), what: &str| match version {
        V1ALPHA1 => to_v1beta1(&value, what),
        _ => Ok(Ok(typed)),
    };
    let new = match hub(new, "v1alpha1 PUB")? {
        Ok(budget) => budget,
        Err(denial) => return Ok(Verdict::deny(denial)),
    };
    let old = match old.map(|old| hub(old, "old v1alpha1 PUB")).transpose()? {
        Some(Err(denial)) => return Ok(Verdict::deny(denial)),
        Some(Ok(budget)) => Some(budget),
        None => None,
    };
    let namespace = new
        .metadata
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| req.namespace());
    let others = view.pod_unavailable_budgets_in(namespace);
    let errors = violations(&new, old.as_ref(), &others);
    Ok(field_error::verdict(&errors, VIOLATION_CODE))
}

fn violation(message: String) -> Denial {
    Denial {
        code: VIOLATION_CODE,
        reason: None,
        message,
    }
}

/// An object of the request as JSON and as the v1beta1 type. Go decodes into its typed object first, so a
/// field of the wrong type is refused here, before any conversion; the v1alpha1 fields have the v1beta1
/// types, so the v1beta1 type checks both versions.
fn decode(raw: Option<&RawJson>) -> Result<(Value, PodUnavailableBudget), WebhookError> {
    let raw = raw.ok_or_else(|| WebhookError::decode(NO_CONTENT))?;
    let value: Value = serde_json::from_str(raw.get()).map_err(WebhookError::decode)?;
    let typed = PodUnavailableBudget::deserialize(&value).map_err(WebhookError::decode)?;
    Ok((value, typed))
}

/// Converts a v1alpha1 object to v1beta1 (§2.4). `Ok(Err(denial))`: a carrier annotation does not convert,
/// answered 422 with `failed to convert <what> to v1beta1: <err>`.
///
/// # Errors
/// [`WebhookError::Decode`] when the object is not a PodUnavailableBudget the conversion knows (no apiVersion
/// or kind, another group or version).
fn to_v1beta1(
    value: &Value,
    what: &str,
) -> Result<Result<PodUnavailableBudget, Denial>, WebhookError> {
    let converted = match convert_object(value, HUB_API_VERSION) {
        Ok(converted) => converted,
        Err(ConversionError::InvalidField { reason, .. }) => {
            return Ok(Err(violation(format!(
                "failed to convert {what} to v1beta1: {reason}"
            ))));
        }
        Err(other) => return Err(WebhookError::decode(other)),
    };
    PodUnavailableBudget::deserialize(&converted)
        .map(Ok)
        .map_err(WebhookError::decode)
}

/// Every rule of the §8 table in OpenKruise's order; empty when the PUB is valid.
fn violations(
    budget: &PodUnavailableBudget,
    old: Option<&PodUnavailableBudget>,
    others: &[Arc<PodUnavailableBudget>],
) -> Vec<FieldError> {
    let spec_path = FieldPath::new("spec");
    let mut errs = annotation_errors(budget);
    errs.extend(spec_errors(&budget.spec, &spec_path));
    // Rule 16 (Go's reflect.DeepEqual: an absent list and an empty one differ, as `None` and `Some([])` do).
    if let Some(old) = old
        && (old.spec.selector != budget.spec.selector
            || old.spec.target_ref != budget.spec.target_ref)
    {
        errs.push(FieldError::required(
            &spec_path.child("selector, targetRef"),
            "selector and targetRef cannot be modified",
        ));
    }
    errs.extend(conflict(budget, others, &spec_path));
    errs
}

/// Rules 1 and 2: the deprecated `pub.kruise.io/protect-total-replicas` annotation is an int32 (Go's
/// `ParseInt(v, 10, 32)`, which Rust's `i32` parser matches: optional sign, ASCII digits) and, when the spec
/// field is set too, the same text as the field printed in base 10.
fn annotation_errors(budget: &PodUnavailableBudget) -> Vec<FieldError> {
    let Some(value) = budget
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROTECT_TOTAL_REPLICAS_ANNOTATION))
    else {
        return Vec::new();
    };
    let path = FieldPath::new("metadata")
        .child("annotations")
        .key(PROTECT_TOTAL_REPLICAS_ANNOTATION);
    let detail = match value.parse::<i32>() {
        Err(_) => "must be a valid int32",
        Ok(_)
            if budget
                .spec
                .protect_total_replicas
                .is_some_and(|total| total.to_string() != *value) =>
        {
            "must match spec.protectTotalReplicas when both are set"
        }
        Ok(_) => return Vec::new(),
    };
    vec![FieldError::invalid(&path, BadValue::str(value), detail)]
}

/// Rules 3 to 15b.
fn spec_errors(spec: &PodUnavailableBudgetSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let either = path.child("selector, targetRef");
    match (&spec.selector, &spec.target_ref) {
        (None, None) => errs.push(FieldError::required(
            &either,
            "no selector or targetRef defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::required(
            &either,
            "selector and targetRef are mutually exclusive",
        )),
        (None, Some(target)) => {
            let target_path = path.child("targetRef");
            let rendered = || BadValue::Raw(render_target_reference(target));
            if target.api_version.is_empty() || target.name.is_empty() || target.kind.is_empty() {
                errs.push(FieldError::invalid(
                    &target_path,
                    rendered(),
                    "empty targetRef is not valid for PodUnavailableBudget",
                ));
            }
            if let Err(e) = parse_group_version(&target.api_version) {
                errs.push(FieldError::invalid(&target_path, rendered(), e));
            }
        }
        (Some(selector), None) => {
            let selector_path = path.child("selector");
            let rendered = || BadValue::Raw(meta::render_label_selector(selector));
            errs.extend(meta::validate_label_selector(selector, &selector_path));
            if meta::is_empty_selector(selector) {
                errs.push(FieldError::invalid(
                    &selector_path,
                    rendered(),
                    "empty selector is not valid for PodUnavailableBudget.",
                ));
            }
            if meta::selector_conversion_error(selector).is_some() {
                errs.push(FieldError::invalid(&selector_path, rendered(), ""));
            }
        }
    }

    let either = path.child("maxUnavailable, minAvailable");
    match (&spec.max_unavailable, &spec.min_available) {
        (None, None) => errs.push(FieldError::required(
            &either,
            "no maxUnavailable or minAvailable defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::required(
            &either,
            "maxUnavailable and minAvailable are mutually exclusive",
        )),
        (Some(max), None) => errs.extend(int_or_percent_errors(max, &path.child("maxUnavailable"))),
        (None, Some(min)) => errs.extend(int_or_percent_errors(min, &path.child("minAvailable"))),
    }

    for (i, operation) in spec.protect_operations.iter().enumerate() {
        if !OPERATIONS.contains(&operation.as_str()) {
            errs.push(FieldError::not_supported(
                &path.child("protectOperations").index(i),
                BadValue::str(operation),
                &OPERATIONS,
            ));
        }
    }

    if let Some(ignored) = &spec.ignored_pod_selector {
        let ignored_path = path.child("ignoredPodSelector");
        errs.extend(meta::validate_label_selector(ignored, &ignored_path));
        if meta::is_empty_selector(ignored) {
            errs.push(FieldError::invalid(
                &ignored_path,
                BadValue::Raw(meta::render_label_selector(ignored)),
                "empty ignoredPodSelector is not valid for PodUnavailableBudget",
            ));
        }
    }
    errs
}

/// Rules 11 to 13: an integer is not negative; a string is a percent (`[0-9]+%`) of at most 100.
fn int_or_percent_errors(value: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = validate_positive_int_or_percent(value, path);
    errs.extend(is_not_more_than_100_percent(value, path));
    errs
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

/// `schema.ParseGroupVersion`: `""` and `"/"` are the empty group version, no `/` is a core version, one
/// `/` separates group and version, more is an error.
fn parse_group_version(api_version: &str) -> Result<(&str, &str), String> {
    if api_version.is_empty() || api_version == "/" {
        return Ok(("", ""));
    }
    match api_version.matches('/').count() {
        0 => Ok(("", api_version)),
        1 => Ok(api_version.split_once('/').unwrap_or(("", api_version))),
        _ => Err(format!("unexpected GroupVersion string: {api_version}")),
    }
}

/// The API group of a targetRef; an unparsable apiVersion has the empty group, as Go ignores the error
/// (only an object that bypassed this validator has one).
fn api_group(target: &TargetReference) -> &str {
    parse_group_version(&target.api_version).map_or("", |(group, _)| group)
}

/// Rule 17: the first other PUB (by name, skipping this one's own name) that conflicts. Two targetRefs
/// conflict when group, kind and name are the same; otherwise two selectors conflict when they loosely
/// overlap ([`loosely_overlap`]). Go's `else if`: two PUBs that both have a targetRef never compare
/// selectors, and a selector PUB never conflicts with a targetRef PUB.
fn conflict(
    budget: &PodUnavailableBudget,
    others: &[Arc<PodUnavailableBudget>],
    path: &FieldPath,
) -> Option<FieldError> {
    let name = budget.metadata.name.as_deref().unwrap_or("");
    for other in others {
        let other_name = other.metadata.name.as_deref().unwrap_or("");
        if other_name == name {
            continue;
        }
        let spec = &budget.spec;
        if let (Some(mine), Some(theirs)) = (&spec.target_ref, &other.spec.target_ref) {
            if api_group(mine) == api_group(theirs)
                && mine.kind == theirs.kind
                && mine.name == theirs.name
            {
                return Some(FieldError::invalid(
                    &path.child("targetReference"),
                    BadValue::Raw(render_target_reference(mine)),
                    format!(
                        "pub.spec.targetReference is in conflict with other PodUnavailableBudget {other_name}"
                    ),
                ));
            }
        } else if let (Some(mine), Some(theirs)) = (&spec.selector, &other.spec.selector)
            && loosely_overlap(mine, theirs)
        {
            return Some(FieldError::invalid(
                &path.child("selector"),
                BadValue::Raw(meta::render_label_selector(mine)),
                format!(
                    "pub.spec.selector is in conflict with other PodUnavailableBudget {other_name}"
                ),
            ));
        }
    }
    None
}

/// One key's requirement of a selector, as `convertSelectorToMatchExpressions` keeps it.
#[derive(Debug, Clone, Copy)]
struct Requirement<'a> {
    operator: &'a str,
    values: &'a [String],
}

/// `convertSelectorToMatchExpressions`: every key's requirement; a later expression on a key replaces an
/// earlier one, and `matchLabels` `k: v` becomes `k In [v]` over any expression on `k`.
fn requirements(selector: &LabelSelector) -> BTreeMap<&str, Requirement<'_>> {
    let mut by_key = BTreeMap::new();
    for expr in selector.match_expressions.iter().flatten() {
        by_key.insert(
            expr.key.as_str(),
            Requirement {
                operator: expr.operator.as_str(),
                values: expr.values.as_deref().unwrap_or_default(),
            },
        );
    }
    for (key, value) in selector.match_labels.iter().flatten() {
        by_key.insert(
            key.as_str(),
            Requirement {
                operator: "In",
                values: std::slice::from_ref(value),
            },
        );
    }
    by_key
}

/// Kruise's `IsSelectorLooseOverlap` (§8 rule 17): the two selectors constrain exactly the same keys, and on
/// every key each requirement overlaps the other ([`requirement_overlaps`], both ways). So `{app: web}` and
/// `{app: web, tier: fe}` do not overlap, and two empty selectors do.
fn loosely_overlap(a: &LabelSelector, b: &LabelSelector) -> bool {
    let (a, b) = (requirements(a), requirements(b));
    a.len() == b.len()
        && a.iter().all(|(key, ra)| {
            b.get(key)
                .is_some_and(|rb| requirement_overlaps(ra, rb) && requirement_overlaps(rb, ra))
        })
}

/// Kruise's `isMatchExpOverlap(r1, r2)`: In×In share a value; In×Exists; In(a)×NotIn(b) unless b holds all
/// of a; Exists×{In, NotIn, Exists}; NotIn×{Exists, DoesNotExist, NotIn}; NotIn(a)×In(b) unless a holds all
/// of b; DoesNotExist×{DoesNotExist, NotIn}. Anything else (an unknown operator too) does not overlap.
fn requirement_overlaps(r1: &Requirement<'_>, r2: &Requirement<'_>) -> bool {
    let shares_value = || r2.values.iter().any(|v| r1.values.contains(v));
    // `sliceContains(a, b)`: every value of `b` is in `a`.
    let holds_all = |a: &[String], b: &[String]| b.iter().all(|v| a.contains(v));
    match (r1.operator, r2.operator) {
        ("In", "Exists") => true,
        ("In", "In") => shares_value(),
        ("In", "NotIn") => !holds_all(r2.values, r1.values),
        ("Exists", "In" | "NotIn" | "Exists") => true,
        ("NotIn", "Exists" | "DoesNotExist" | "NotIn") => true,
        ("NotIn", "In") => !holds_all(r1.values, r2.values),
        ("DoesNotExist", "DoesNotExist" | "NotIn") => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EMPTY_SELECTOR: &str = "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";

    /// The other PUBs of a namespace, in name order.
    #[derive(Default)]
    struct Budgets(Vec<Arc<PodUnavailableBudget>>);

    impl Budgets {
        fn of(docs: &[Value]) -> Self {
            let mut all: Vec<Arc<PodUnavailableBudget>> = docs
                .iter()
                .map(|d| Arc::new(serde_json::from_value(d.clone()).unwrap()))
                .collect();
            all.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            Self(all)
        }
    }

    impl PodUnavailableBudgetView for Budgets {
        fn pod_unavailable_budget(
            &self,
            ns: &str,
            name: &str,
        ) -> Option<Arc<PodUnavailableBudget>> {
            self.pod_unavailable_budgets_in(ns)
                .into_iter()
                .find(|b| b.metadata.name.as_deref() == Some(name))
        }
        fn pod_unavailable_budgets_in(&self, ns: &str) -> Vec<Arc<PodUnavailableBudget>> {
            self.0
                .iter()
                .filter(|b| b.metadata.namespace.as_deref() == Some(ns))
                .cloned()
                .collect()
        }
    }

    fn budget(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
               "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    }

    fn request(
        version: &str,
        operation: &str,
        object: Value,
        old: Option<Value>,
    ) -> AdmissionRequest {
        serde_json::from_value(json!({
            "uid": "u", "operation": operation, "name": object["metadata"]["name"], "namespace": "default",
            "kind": {"group": "policy.kruise.io", "version": version, "kind": "PodUnavailableBudget"},
            "resource": {"group": "policy.kruise.io", "version": version, "resource": "podunavailablebudgets"},
            "userInfo": {"username": "alice"}, "object": object, "oldObject": old
        }))
        .unwrap()
    }

    fn answer(
        req: &AdmissionRequest,
        others: &Budgets,
        gates: &str,
    ) -> Result<Verdict, WebhookError> {
        validate(req, others, &FeatureGates::parse(gates).unwrap())
    }

    /// The denial of a v1beta1 CREATE of `spec` as `pub-new`, among `others`: (code, message), or None.
    fn create(spec: Value, others: &[Value]) -> Option<(u16, String)> {
        let req = request("v1beta1", "CREATE", budget("pub-new", spec), None);
        let verdict = answer(&req, &Budgets::of(others), "").unwrap();
        verdict.denial().map(|d| (d.code, d.message.clone()))
    }

    fn message(spec: Value) -> String {
        create(spec, &[]).expect("denied").1
    }

    #[test]
    fn a_valid_budget_is_allowed_without_a_message() {
        for spec in [
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "minAvailable": "100%"}),
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxUnavailable": "0%",
                   "protectOperations": ["DELETE", "UPDATE", "EVICT", "RESIZE"], "protectTotalReplicas": 5,
                   "ignoredPodSelector": {"matchLabels": {"canary": "true"}}}),
            json!({"targetRef": {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc"}, "minAvailable": 0}),
        ] {
            let req = request("v1beta1", "CREATE", budget("pub-new", spec.clone()), None);
            let verdict = answer(&req, &Budgets::default(), "").unwrap();
            assert_eq!(verdict, Verdict::allow(), "{spec}");
        }
    }

    #[test]
    fn both_gates_off_refuses_everything_with_400() {
        let req = request("v1beta1", "CREATE", budget("p", json!({})), None);
        let gates = "PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=false";
        let denial = answer(&req, &Budgets::default(), gates)
            .unwrap()
            .denial()
            .cloned()
            .unwrap();
        assert_eq!((denial.code, denial.reason), (400, None));
        assert_eq!(denial.message, GATES_OFF_MESSAGE);
        // Before the version is even looked at.
        let other = request("v2", "DELETE", budget("p", json!({})), None);
        assert_eq!(
            answer(&other, &Budgets::default(), gates).unwrap().denial(),
            Some(&denial)
        );
        // One gate is enough.
        let valid = json!({"selector": {"matchLabels": {"a": "b"}}, "maxUnavailable": 1});
        let req = request("v1beta1", "CREATE", budget("p", valid), None);
        for one in [
            "PodUnavailableBudgetDeleteGate=false",
            "PodUnavailableBudgetUpdateGate=false",
        ] {
            assert!(
                answer(&req, &Budgets::default(), one).unwrap().is_allowed(),
                "{one}"
            );
        }
    }

    #[test]
    fn versions_and_malformed_objects_are_request_errors() {
        let req = request("v1", "CREATE", budget("p", json!({})), None);
        let err = answer(&req, &Budgets::default(), "").unwrap_err();
        assert_eq!(
            (err.http_code(), err.to_string()),
            (400, "unsupported version: v1".to_owned())
        );

        let mut req = request("v1beta1", "CREATE", budget("p", json!({})), None);
        req.object = None;
        let err = answer(&req, &Budgets::default(), "").unwrap_err();
        assert_eq!(
            (err.http_code(), err.to_string()),
            (400, "there is no content to decode".to_owned())
        );

        let valid = budget(
            "p",
            json!({"selector": {"matchLabels": {"a": "b"}}, "maxUnavailable": 1}),
        );
        let req = request("v1beta1", "UPDATE", valid.clone(), None);
        let err = answer(&req, &Budgets::default(), "").unwrap_err();
        assert_eq!(
            (err.http_code(), err.to_string()),
            (400, "there is no content to decode".to_owned())
        );

        for bad in [
            json!({"metadata": {"name": "p"}, "spec": 3}),
            json!({"spec": {"maxUnavailable": 2147483648_i64}}),
            json!({"spec": {"maxUnavailable": 1.5}}),
            json!({"spec": {"protectTotalReplicas": "5"}}),
            json!({"spec": {"protectOperations": "DELETE"}}),
            json!({"spec": {"selector": {"matchLabels": ["a"]}}}),
            json!([1, 2]),
            json!("text"),
        ] {
            for version in VERSIONS {
                let req = request(version, "CREATE", bad.clone(), None);
                let err = answer(&req, &Budgets::default(), "").unwrap_err();
                assert_eq!(err.http_code(), 400, "{version} {bad}: {err}");
            }
        }
    }

    #[test]
    fn other_operations_are_allowed() {
        let req = request("v1beta1", "DELETE", budget("p", json!({})), None);
        assert!(answer(&req, &Budgets::default(), "").unwrap().is_allowed());
    }

    #[test]
    fn every_rule_has_openkruises_text() {
        let sel = json!({"matchLabels": {"app": "web"}});
        assert_eq!(
            message(
                json!({"selector": {"matchLabels": {"app": "x"}}, "maxUnavailable": 1,
                           "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}})
            ),
            "spec.selector, targetRef: Required value: selector and targetRef are mutually exclusive"
        );
        assert_eq!(
            message(json!({})),
            "[spec.selector, targetRef: Required value: no selector or targetRef defined in PodUnavailableBudget, \
             spec.maxUnavailable, minAvailable: Required value: no maxUnavailable or minAvailable defined in PodUnavailableBudget]"
        );
        assert_eq!(
            message(json!({"selector": sel, "maxUnavailable": 1, "minAvailable": 1})),
            "spec.maxUnavailable, minAvailable: Required value: maxUnavailable and minAvailable are mutually exclusive"
        );
        assert_eq!(
            message(
                json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment"}, "maxUnavailable": 1})
            ),
            "spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"apps/v1\", Kind:\"Deployment\", Name:\"\"}: \
             empty targetRef is not valid for PodUnavailableBudget"
        );
        assert_eq!(
            message(
                json!({"targetRef": {"apiVersion": "a/b/c", "kind": "K", "name": "n"}, "maxUnavailable": 1})
            ),
            "spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"a/b/c\", Kind:\"K\", Name:\"n\"}: \
             unexpected GroupVersion string: a/b/c"
        );
        assert_eq!(
            message(
                json!({"targetRef": {"apiVersion": "a/b/c", "kind": "K"}, "maxUnavailable": 1})
            ),
            "[spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"a/b/c\", Kind:\"K\", Name:\"\"}: \
             empty targetRef is not valid for PodUnavailableBudget, \
             spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"a/b/c\", Kind:\"K\", Name:\"\"}: \
             unexpected GroupVersion string: a/b/c]"
        );
        assert_eq!(
            message(json!({"selector": {}, "maxUnavailable": 1})),
            format!(
                "spec.selector: Invalid value: {EMPTY_SELECTOR}: empty selector is not valid for PodUnavailableBudget."
            )
        );
        assert_eq!(
            message(json!({"selector": {"matchLabels": {}}, "maxUnavailable": 1})),
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, \
             MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is not valid for PodUnavailableBudget."
        );
        // Rule 7: the label-selector error, then the conversion failure with an empty detail.
        let bad =
            message(json!({"selector": {"matchLabels": {"app": "web-"}}, "maxUnavailable": 1}));
        assert!(
            bad.starts_with(
                "[spec.selector.matchLabels: Invalid value: \"web-\": a valid label must be"
            ),
            "{bad}"
        );
        assert!(
            bad.ends_with(", spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web-\"}, \
                           MatchExpressions:[]v1.LabelSelectorRequirement(nil)}]"),
            "{bad}"
        );
        assert_eq!(
            message(
                json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}, "maxUnavailable": 1})
            ),
            "[spec.selector.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator, \
             spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), \
             MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"app\", Operator:\"Near\", \
             Values:[]string(nil)}}}]"
        );
        assert_eq!(
            message(json!({"selector": sel, "maxUnavailable": -1})),
            "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            message(json!({"selector": sel, "minAvailable": "5"})),
            "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"5\"}: a valid percent string \
             must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
        );
        assert_eq!(
            message(json!({"selector": sel, "maxUnavailable": "150%"})),
            "spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%"
        );
        assert_eq!(
            message(
                json!({"selector": sel, "maxUnavailable": 1, "protectOperations": ["DELETE", "FOO", "delete"]})
            ),
            "[spec.protectOperations[1]: Unsupported value: \"FOO\": supported values: \"DELETE\", \"UPDATE\", \"EVICT\", \"RESIZE\", \
             spec.protectOperations[2]: Unsupported value: \"delete\": supported values: \"DELETE\", \"UPDATE\", \"EVICT\", \"RESIZE\"]"
        );
        assert_eq!(
            message(json!({"selector": sel, "maxUnavailable": 1,
                           "ignoredPodSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}})),
            "spec.ignoredPodSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        );
        assert_eq!(
            message(json!({"selector": sel, "maxUnavailable": 1, "ignoredPodSelector": {}})),
            format!(
                "spec.ignoredPodSelector: Invalid value: {EMPTY_SELECTOR}: empty ignoredPodSelector is not valid for PodUnavailableBudget"
            )
        );
    }

    fn with_total_replicas_annotation(value: &str, total: Option<i32>) -> Option<(u16, String)> {
        let mut obj = budget(
            "p",
            json!({"selector": {"matchLabels": {"a": "b"}}, "maxUnavailable": 1}),
        );
        obj["metadata"]["annotations"] = json!({PROTECT_TOTAL_REPLICAS_ANNOTATION: value});
        if let Some(total) = total {
            obj["spec"]["protectTotalReplicas"] = json!(total);
        }
        let req = request("v1beta1", "CREATE", obj, None);
        let verdict = answer(&req, &Budgets::default(), "").unwrap();
        verdict.denial().map(|d| (d.code, d.message.clone()))
    }

    #[test]
    fn the_total_replicas_annotation_is_an_int32_matching_the_spec() {
        for ok in [
            ("5", None),
            ("5", Some(5)),
            ("-3", None),
            ("2147483647", Some(i32::MAX)),
            ("+7", None),
        ] {
            assert_eq!(with_total_replicas_annotation(ok.0, ok.1), None, "{ok:?}");
        }
        for bad in ["", "abc", "2147483648", "1_000", " 5", "5.0", "0x10", "+"] {
            assert_eq!(
                with_total_replicas_annotation(bad, Some(5)),
                Some((
                    422,
                    format!(
                        "metadata.annotations[pub.kruise.io/protect-total-replicas]: Invalid value: {}: must be a valid int32",
                        go_quote(bad)
                    )
                )),
                "{bad:?}"
            );
        }
        // Compared as text, as Go does: "05" and "+5" are not "5".
        for differs in [("5", 6), ("05", 5), ("+5", 5)] {
            assert_eq!(
                with_total_replicas_annotation(differs.0, Some(differs.1)),
                Some((
                    422,
                    format!(
                        "metadata.annotations[pub.kruise.io/protect-total-replicas]: Invalid value: \"{}\": \
                     must match spec.protectTotalReplicas when both are set",
                        differs.0
                    )
                )),
                "{differs:?}"
            );
        }
    }

    fn alpha(name: &str, spec: Value, annotations: Value) -> Value {
        json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
               "metadata": {"name": name, "namespace": "default", "annotations": annotations}, "spec": spec})
    }

    #[test]
    fn v1alpha1_is_converted_then_validated_as_v1beta1() {
        let spec = json!({"selector": {"matchLabels": {"a": "b"}}, "maxUnavailable": 1});
        let ops = "kruise.io/pub-protect-operations";
        let ok = alpha(
            "p",
            spec.clone(),
            json!({ops: "DELETE, EVICT", PROTECT_TOTAL_REPLICAS_ANNOTATION: "4"}),
        );
        let req = request("v1alpha1", "CREATE", ok.clone(), None);
        assert!(answer(&req, &Budgets::default(), "").unwrap().is_allowed());

        let denied = |req: &AdmissionRequest| {
            answer(req, &Budgets::default(), "")
                .unwrap()
                .denial()
                .cloned()
                .unwrap()
        };
        let bad = alpha("p", spec.clone(), json!({ops: "DELETE,FOO"}));
        let d = denied(&request("v1alpha1", "CREATE", bad.clone(), None));
        assert_eq!(
            (d.code, d.message.as_str()),
            (
                422,
                "failed to convert v1alpha1 PUB to v1beta1: invalid kruise.io/pub-protect-operations value \"FOO\""
            )
        );
        let d = denied(&request("v1alpha1", "UPDATE", ok.clone(), Some(bad)));
        assert_eq!(
            (d.code, d.message.as_str()),
            (
                422,
                "failed to convert old v1alpha1 PUB to v1beta1: invalid kruise.io/pub-protect-operations value \"FOO\""
            )
        );
        let d = denied(&request(
            "v1alpha1",
            "CREATE",
            alpha(
                "p",
                spec.clone(),
                json!({PROTECT_TOTAL_REPLICAS_ANNOTATION: "x"}),
            ),
            None,
        ));
        assert!(
            d.message.starts_with("failed to convert v1alpha1 PUB to v1beta1: failed to parse pub.kruise.io/protect-total-replicas: "),
            "{}",
            d.message
        );
        // The field rules see the converted object.
        let d = denied(&request(
            "v1alpha1",
            "CREATE",
            alpha(
                "p",
                json!({"selector": {"matchLabels": {"a": "b"}}}),
                json!({}),
            ),
            None,
        ));
        assert_eq!(
            d.message,
            "spec.maxUnavailable, minAvailable: Required value: no maxUnavailable or minAvailable defined in PodUnavailableBudget"
        );
        // Not a PodUnavailableBudget the conversion knows: a request error.
        let mut other = ok;
        other["apiVersion"] = json!("apps/v1");
        let err = answer(
            &request("v1alpha1", "CREATE", other, None),
            &Budgets::default(),
            "",
        )
        .unwrap_err();
        assert_eq!(err.http_code(), 400, "{err}");
    }

    #[test]
    fn selector_and_target_ref_are_immutable() {
        let update = |old: Value, new: Value| {
            let req = request(
                "v1beta1",
                "UPDATE",
                budget("p", new),
                Some(budget("p", old)),
            );
            answer(&req, &Budgets::default(), "")
                .unwrap()
                .denial()
                .map(|d| d.message.clone())
        };
        let sel = |v: &str| json!({"selector": {"matchLabels": {"app": v}}, "maxUnavailable": 1});
        assert_eq!(update(sel("web"), sel("web")), None);
        let immutable = Some(
            "spec.selector, targetRef: Required value: selector and targetRef cannot be modified"
                .to_owned(),
        );
        assert_eq!(update(sel("web"), sel("web2")), immutable);
        // Other fields may change.
        let mut changed = sel("web");
        changed["maxUnavailable"] = json!("50%");
        changed["protectOperations"] = json!(["DELETE"]);
        assert_eq!(update(sel("web"), changed), None);
        // Deep equality: an empty list is not an absent one.
        let with_empty = json!({"selector": {"matchLabels": {"app": "web"}, "matchExpressions": []}, "maxUnavailable": 1});
        assert_eq!(update(sel("web"), with_empty), immutable);
        let target = |name: &str| json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}, "maxUnavailable": 1});
        assert_eq!(update(target("web"), target("web")), None);
        assert_eq!(update(target("web"), target("api")), immutable);
        assert_eq!(update(sel("web"), target("web")), immutable);
        // v1alpha1 objects are compared after conversion.
        let alpha_update = request(
            "v1alpha1",
            "UPDATE",
            alpha("p", sel("web2"), json!({})),
            Some(alpha("p", sel("web"), json!({}))),
        );
        assert_eq!(
            answer(&alpha_update, &Budgets::default(), "")
                .unwrap()
                .denial()
                .map(|d| d.message.clone()),
            immutable
        );
    }

    #[test]
    fn conflicts_with_the_first_other_budget_in_name_order() {
        let sel = |labels: Value| json!({"selector": {"matchLabels": labels}, "maxUnavailable": 1});
        let target = |api: &str, kind: &str, name: &str| json!({"targetRef": {"apiVersion": api, "kind": kind, "name": name}, "maxUnavailable": 1});
        let others = [
            budget("pub-b", sel(json!({"app": "web"}))),
            budget("pub-a", sel(json!({"app": "web"}))),
            budget("pub-t", target("apps/v1", "Deployment", "web")),
        ];
        let conflict_with = |spec: Value| {
            create(spec, &others).map(|(code, m)| (code, m.rsplit(": ").next().unwrap().to_owned()))
        };
        assert_eq!(
            create(sel(json!({"app": "web"})), &others),
            Some((422, "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\"}, \
                        MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: \
                        pub.spec.selector is in conflict with other PodUnavailableBudget pub-a".to_owned()))
        );
        assert_eq!(
            conflict_with(sel(json!({"app": "web", "tier": "fe"}))),
            None,
            "other keys: no loose overlap"
        );
        assert_eq!(
            create(target("apps/v1beta1", "Deployment", "web"), &others),
            Some((422, "spec.targetReference: Invalid value: v1beta1.TargetReference{APIVersion:\"apps/v1beta1\", \
                        Kind:\"Deployment\", Name:\"web\"}: \
                        pub.spec.targetReference is in conflict with other PodUnavailableBudget pub-t".to_owned())),
            "the group decides, not the version"
        );
        assert_eq!(conflict_with(target("apps/v1", "StatefulSet", "web")), None);
        assert_eq!(
            conflict_with(target("apps.kruise.io/v1alpha1", "Deployment", "web")),
            None
        );
        assert_eq!(conflict_with(target("apps/v1", "Deployment", "api")), None);
        // A selector PUB never conflicts with a targetRef PUB, whatever the pods.
        let only_target = [budget("pub-t", target("apps/v1", "Deployment", "web"))];
        assert_eq!(create(sel(json!({"app": "web"})), &only_target), None);
        let only_selector = [budget("pub-a", sel(json!({"app": "web"})))];
        assert_eq!(
            create(target("apps/v1", "Deployment", "web"), &only_selector),
            None
        );
        // A PUB never conflicts with itself (an UPDATE finds its stored version).
        let spec = sel(json!({"app": "web"}));
        let req = request(
            "v1beta1",
            "UPDATE",
            budget("pub-a", spec.clone()),
            Some(budget("pub-a", spec)),
        );
        assert!(
            answer(&req, &Budgets::of(&others[1..2]), "")
                .unwrap()
                .is_allowed()
        );
        // Other namespaces do not count.
        let mut elsewhere = budget("pub-a", sel(json!({"app": "web"})));
        elsewhere["metadata"]["namespace"] = json!("other");
        assert_eq!(create(sel(json!({"app": "web"})), &[elsewhere]), None);
    }

    #[test]
    fn conflicts_follow_gos_else_if_and_come_after_the_field_errors() {
        // A PUB with both (invalid) is compared by targetRef with a targetRef PUB, by selector otherwise.
        let both = json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1,
                          "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}});
        let other_both = budget("pub-a", both.clone());
        let (_, m) = create(both.clone(), &[other_both]).unwrap();
        assert!(
            m.ends_with(
                "pub.spec.targetReference is in conflict with other PodUnavailableBudget pub-a]"
            ),
            "{m}"
        );
        let other_both_elsewhere = budget(
            "pub-a",
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1,
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}}),
        );
        let (_, m) = create(both.clone(), &[other_both_elsewhere]).unwrap();
        assert!(
            !m.contains("conflict"),
            "two targetRefs never compare selectors: {m}"
        );
        let other_selector = budget(
            "pub-a",
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        );
        let (_, m) = create(both, &[other_selector]).unwrap();
        assert!(
            m.starts_with("[spec.selector, targetRef: Required value: selector and targetRef are mutually exclusive, ")
                && m.ends_with("pub.spec.selector is in conflict with other PodUnavailableBudget pub-a]"),
            "{m}"
        );
    }

    #[test]
    fn the_namespace_is_the_objects_else_the_requests() {
        let other = budget(
            "pub-a",
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        );
        let mut obj = budget(
            "pub-b",
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}),
        );
        obj["metadata"].as_object_mut().unwrap().remove("namespace");
        let req = request("v1beta1", "CREATE", obj, None);
        assert!(
            answer(&req, &Budgets::of(&[other]), "")
                .unwrap()
                .denial()
                .is_some()
        );
    }

    fn req(operator: &'static str, values: &'static [&'static str]) -> (String, Vec<String>) {
        (
            operator.to_owned(),
            values.iter().map(|v| v.to_string()).collect(),
        )
    }

    fn overlaps(a: &(String, Vec<String>), b: &(String, Vec<String>)) -> bool {
        requirement_overlaps(
            &Requirement {
                operator: &a.0,
                values: &a.1,
            },
            &Requirement {
                operator: &b.0,
                values: &b.1,
            },
        )
    }

    #[test]
    fn requirement_overlap_table_covers_every_operator_pair() {
        let in_bc = req("In", &["b", "c"]);
        let exists = req("Exists", &[]);
        let not_in_bc = req("NotIn", &["b", "c"]);
        let absent = req("DoesNotExist", &[]);
        let unknown = req("Near", &["b"]);
        // (r1, r2, isMatchExpOverlap(r1, r2)) for every ordered pair; value-dependent pairs below.
        let table = [
            (&in_bc, &exists, true),
            (&in_bc, &absent, false),
            (&in_bc, &unknown, false),
            (&exists, &in_bc, true),
            (&exists, &exists, true),
            (&exists, &not_in_bc, true),
            (&exists, &absent, false),
            (&exists, &unknown, false),
            (&not_in_bc, &exists, true),
            (&not_in_bc, &not_in_bc, true),
            (&not_in_bc, &absent, true),
            (&not_in_bc, &unknown, false),
            (&absent, &in_bc, false),
            (&absent, &exists, false),
            (&absent, &not_in_bc, true),
            (&absent, &absent, true),
            (&absent, &unknown, false),
            (&unknown, &in_bc, false),
            (&unknown, &exists, false),
            (&unknown, &not_in_bc, false),
            (&unknown, &absent, false),
            (&unknown, &unknown, false),
        ];
        for (a, b, want) in table {
            assert_eq!(overlaps(a, b), want, "{a:?} x {b:?}");
        }
        // In x In: a shared value.
        assert!(overlaps(&in_bc, &req("In", &["c", "d"])));
        assert!(!overlaps(&in_bc, &req("In", &["d"])));
        assert!(!overlaps(&req("In", &[]), &req("In", &[])));
        // In(a) x NotIn(b): unless b holds all of a.
        assert!(overlaps(&in_bc, &req("NotIn", &["b"])));
        assert!(overlaps(&in_bc, &req("NotIn", &["a", "e"])));
        assert!(!overlaps(&in_bc, &not_in_bc));
        assert!(!overlaps(&in_bc, &req("NotIn", &["b", "c", "e"])));
        // NotIn(a) x In(b): unless a holds all of b.
        assert!(overlaps(&not_in_bc, &req("In", &["a", "b"])));
        assert!(overlaps(&not_in_bc, &req("In", &["e", "f"])));
        assert!(!overlaps(&not_in_bc, &req("In", &["b"])));
        assert!(!overlaps(&not_in_bc, &in_bc));
        // Both ways round where the table says so (the loose overlap asks both directions).
        assert!(overlaps(&not_in_bc, &absent) && overlaps(&absent, &not_in_bc));
        assert!(overlaps(&in_bc, &exists) && overlaps(&exists, &in_bc));
        assert!(overlaps(&not_in_bc, &exists) && overlaps(&exists, &not_in_bc));
        assert!(!overlaps(&in_bc, &absent) && !overlaps(&absent, &in_bc));
    }

    fn selector(v: Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn loose_overlap_needs_the_same_keys_and_both_directions() {
        let lo = |a: Value, b: Value| loosely_overlap(&selector(a), &selector(b));
        assert!(lo(
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchLabels": {"app": "web"}})
        ));
        assert!(!lo(
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchLabels": {"app": "api"}})
        ));
        assert!(!lo(
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchLabels": {"app": "web", "tier": "fe"}})
        ));
        assert!(!lo(
            json!({"matchLabels": {"app": "web", "tier": "fe"}}),
            json!({"matchLabels": {"app": "web"}})
        ));
        assert!(!lo(
            json!({"matchLabels": {"a": "b"}}),
            json!({"matchLabels": {"c": "d"}})
        ));
        assert!(
            lo(json!({}), json!({})),
            "no keys on either side: Go's loops find nothing against"
        );
        // matchLabels as `In [v]`.
        assert!(lo(
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]})
        ));
        assert!(lo(
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]})
        ));
        // Both directions must hold: In(b) x DoesNotExist fails one way.
        assert!(!lo(
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]})
        ));
        // matchLabels replaces an expression on the same key; a later expression replaces an earlier one.
        assert!(lo(
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}),
            json!({"matchLabels": {"app": "web"}})
        ));
        assert!(lo(
            json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}, {"key": "app", "operator": "Exists"}]}),
            json!({"matchLabels": {"app": "web"}})
        ));
        assert!(!lo(
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}, {"key": "app", "operator": "DoesNotExist"}]}),
            json!({"matchLabels": {"app": "web"}})
        ));
    }

    #[test]
    fn group_versions_parse_as_apimachinery_does() {
        assert_eq!(parse_group_version(""), Ok(("", "")));
        assert_eq!(parse_group_version("/"), Ok(("", "")));
        assert_eq!(parse_group_version("v1"), Ok(("", "v1")));
        assert_eq!(parse_group_version("apps/v1"), Ok(("apps", "v1")));
        assert_eq!(parse_group_version("apps/"), Ok(("apps", "")));
        assert_eq!(
            parse_group_version("a/b/c"),
            Err("unexpected GroupVersion string: a/b/c".to_owned())
        );
    }
}
