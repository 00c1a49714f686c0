//! The SidecarSet validating webhook `/validate-apps-kruise-io-sidecarset` (spec/sidecarset.md §8 and §8.1;
//! §2 for conversion, §4.3/§4.4 for the revision lookup, §12 for the quirks; DECISIONS 12).
//!
//! Entry point: [`validate`]. CREATE and UPDATE of v1alpha1 and v1beta1 SidecarSets are converted to v1beta1
//! (the old object too) and checked rule by rule in OpenKruise's order:
//!
//! 1. metadata ([`meta::validate_object_meta`] with the SidecarSet name rules, [`sidecarset_name_errors`]);
//! 2. canary rules (path `metadata`), each stopping the canary checks at the first failure;
//! 3. spec: native sidecars under RollingUpdate, selectors, `injectionStrategy.revision`, `updateStrategy`,
//!    the containers (Kruise rules, then a Kubernetes pod-create check of a fake pod: see
//!    the `fake_pod` module), `patchPodMetadata` with the whitelist of §8.1;
//! 4. UPDATE only: containers may not be added or renamed, upgradeType is immutable;
//! 5. any error so far stops here;
//! 6. conflicts with the other SidecarSets (visited in name order).
//!
//! A violation is answered `allowed: false`, **code 422** (DECISIONS 14 overrides the `Errored(500, ...)` of
//! spec §12), no reason, and OpenKruise's message `ErrorList.ToAggregate().Error()` ([`aggregate`]).
//! When the whitelist ConfigMap could not be read the answer is code 500 with the same message: the object may
//! be fine, the cluster read failed. Success is a plain allow (OpenKruise also
//! sets the message `allowed to be admitted`, which [`Verdict`] cannot carry).
//!
//! The resources-policy expression check needs the calculator of §5: the caller passes it as
//! [`ValidateContext::validate_expression`] (the server wires the real one; tests use a small fake).
//! Listing SidecarSets cannot fail on a cache, so the `Internal error` of rule 5 never occurs here.

mod containers;
mod fake_pod;
mod model;
mod overlap;
mod whitelist;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use self::model::{Spec, Subject, UpdateStrategy};
use crate::admission::{AdmissionRequest, Operation};
use crate::api::sidecarset::{BASE_ANNOTATION, InjectionRevision, SidecarSet, SidecarSetSpec};
use crate::json::RawJson;
use crate::sidecarset::revision::historical;
use crate::validation::apps::validate_positive_int_or_percent;
use crate::validation::field_error::{
    BadValue, FieldError, FieldPath, aggregate, go_int_or_string, go_quote,
};
use crate::validation::meta;
use crate::validation::syntax::{max_len_error, regex_error};
use crate::view::SidecarSetView;
use crate::{Denial, FeatureGates, Verdict, WebhookError};

pub use self::whitelist::{CONFIG_MAP_NAME, DEFAULTS_ALLOWED_GATE, WHITELIST_KEY, WhitelistSource};

/// The API versions the webhook decodes (`request.resource.version`).
pub const VERSIONS: [&str; 2] = ["v1alpha1", "v1beta1"];

/// The status code of a rule violation: 422, an invalid custom resource spec (DECISIONS 14 overrides the
/// `Errored(500)` OpenKruise answers, spec §12). The message stays OpenKruise's.
pub const VIOLATION_CODE: u16 = 422;

/// `status.message` of an admitted SidecarSet (spec §8).
pub const ALLOWED_MESSAGE: &str = "allowed to be admitted";

/// The SidecarSet name regex (§3).
pub const SIDECARSET_NAME_FMT: &str = "^[a-zA-Z0-9\\-]+$";
const SIDECARSET_NAME_ERR: &str = "sidecarset name must consist of alphanumeric characters or '-'";
/// The SidecarSet name length limit (§3).
pub const SIDECARSET_NAME_MAX_LEN: usize = 63;

static SIDECARSET_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(SIDECARSET_NAME_FMT).expect("a constant regex compiles"));

/// What the validator needs besides the request and the cluster view.
pub struct ValidateContext<'a> {
    /// Feature gates (`SidecarSetPatchPodMetadataDefaultsAllowed`, §8.1).
    pub gates: &'a FeatureGates,
    /// The Kruise namespace (ControllerRevisions of `injectionStrategy.revision`).
    pub kruise_namespace: &'a str,
    /// The patch-metadata whitelist as the I/O layer read it.
    pub patch_metadata_whitelist: &'a WhitelistSource,
    /// `validate_expression(expr, variable)`: `Err(<calculator error>)` when `expr` does not evaluate with only
    /// `variable` (`cpu` or `memory`) bound to the number 1 (§5 calculator; wired by the server).
    pub validate_expression: &'a dyn Fn(&str, &str) -> Result<(), String>,
}

/// Answers a SidecarSet validating admission request (§8).
///
/// Operations other than CREATE and UPDATE are allowed. A valid object is allowed; an invalid one is denied
/// with code 422 (500 when the whitelist could not be read) and the aggregated field errors.
///
/// # Errors
/// [`WebhookError::UnsupportedVersion`] when `request.resource.version` is neither v1alpha1 nor v1beta1, and
/// [`WebhookError::Decode`] when the object (or, on UPDATE, the old object) is missing or does not decode as a
/// SidecarSet (both answered 400).
pub fn validate(
    req: &AdmissionRequest,
    view: &impl SidecarSetView,
    ctx: &ValidateContext<'_>,
) -> Result<Verdict, WebhookError> {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Ok(Verdict::allow());
    }
    let version = req.resource.version.as_str();
    if !VERSIONS.contains(&version) {
        return Err(WebhookError::UnsupportedVersion(version.to_owned()));
    }
    let subject = decode(req.object.as_ref().map(RawJson::get))?;
    let old = match req.operation {
        Operation::Update => Some(decode(req.old_object.as_ref().map(RawJson::get))?),
        _ => None,
    };
    let errors = validate_sidecarset(&subject, old.as_ref(), view, ctx)?;
    if errors.is_empty() {
        let mut verdict = Verdict::allow();
        verdict.allow_message = Some(ALLOWED_MESSAGE.to_owned());
        Ok(verdict)
    } else {
        let unread_whitelist = !subject.spec.patch_pod_metadata.is_empty()
            && matches!(ctx.patch_metadata_whitelist, WhitelistSource::ReadError(_));
        Ok(Verdict::deny(Denial {
            code: if unread_whitelist {
                500
            } else {
                VIOLATION_CODE
            },
            reason: None,
            message: aggregate(&errors),
        }))
    }
}

/// Decodes a raw object, converting it to v1beta1 first (§2).
fn decode(raw: Option<&str>) -> Result<Subject, WebhookError> {
    let raw = raw.ok_or_else(|| WebhookError::decode("there is no content to decode"))?;
    let value: Value = serde_json::from_str(raw).map_err(WebhookError::decode)?;
    let v1beta1 = crate::conversion::convert_object(&value, "apps.kruise.io/v1beta1")
        .map_err(WebhookError::decode)?;
    Subject::deserialize(&v1beta1).map_err(WebhookError::decode)
}

/// All rules of §8 in order; empty when the object is valid.
///
/// # Errors
/// [`WebhookError::Decode`] for a value Go's decoder would have refused (an unparsable quantity).
fn validate_sidecarset(
    subject: &Subject,
    old: Option<&Subject>,
    view: &impl SidecarSetView,
    ctx: &ValidateContext<'_>,
) -> Result<Vec<FieldError>, WebhookError> {
    let mut errs = meta::validate_object_meta(
        &subject.metadata,
        sidecarset_name_errors,
        &FieldPath::new("metadata"),
    );
    errs.extend(validate_canary(subject, old, view));
    errs.extend(validate_spec(subject, view, ctx)?);
    if let Some(old) = old {
        errs.extend(validate_update(&subject.spec, &old.spec));
    }
    if !errs.is_empty() {
        return Ok(errs);
    }
    Ok(overlap::conflicts(subject, &view.sidecar_sets()))
}

/// Kruise's `validateSidecarSetName` (§8 rule 1): the regex `^[a-zA-Z0-9\-]+$` and at most 63 characters.
pub fn sidecarset_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if !SIDECARSET_NAME.is_match(name) {
        errs.push(regex_error(
            SIDECARSET_NAME_ERR,
            SIDECARSET_NAME_FMT,
            &["example-com"],
        ));
    }
    if name.len() > SIDECARSET_NAME_MAX_LEN {
        errs.push(max_len_error(SIDECARSET_NAME_MAX_LEN));
    }
    errs
}

/// Compiles a regex the way Go's `regexp.Compile` is used by Kruise (RE2 syntax, unanchored). The error text
/// imitates Go's ``error parsing regexp: <what>: `<pattern>` ``, where `<what>` is the Rust parser's one-line
/// reason.
fn compile_go_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        let reason = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .trim_start_matches("error: ")
            .to_owned();
        format!("error parsing regexp: {reason}: `{pattern}`")
    })
}

/// Rule 2: a canary names an existing, non-canary base other than itself, keeps it on UPDATE and does not
/// roll out (`NotUpdate`).
fn validate_canary(
    subject: &Subject,
    old: Option<&Subject>,
    view: &impl SidecarSetView,
) -> Option<FieldError> {
    let base = subject.canary_base()?;
    let path = FieldPath::new("metadata");
    let fail = |detail: String| Some(FieldError::invalid(&path, BadValue::str(base), detail));
    if base == subject.name() {
        return fail("base sidecarSet cannot be itself".into());
    }
    if let Some(old) = old
        && old.annotation(BASE_ANNOTATION) != base
    {
        return fail(format!("annotations[{BASE_ANNOTATION}] is immutable"));
    }
    let Some(base_set) = view.sidecar_set(base) else {
        return fail(format!(
            "fetch base sidecarSet[{base}] failed: sidecarsets.apps.kruise.io \"{base}\" not found"
        ));
    };
    if base_set.canary_base().is_some() {
        return fail("base sidecarSet cannot be canary".into());
    }
    if subject.spec.update_strategy.type_ != "NotUpdate" {
        return fail("RollingUpdate is not supported for canary sidecarSet".into());
    }
    None
}

/// Rule 3.
fn validate_spec(
    subject: &Subject,
    view: &impl SidecarSetView,
    ctx: &ValidateContext<'_>,
) -> Result<Vec<FieldError>, WebhookError> {
    let spec = &subject.spec;
    let root = FieldPath::new("spec");
    let mut errs = Vec::new();
    // 3.1: in-place upgrade of native sidecars is not supported.
    for c in &spec.init_containers {
        if c.view.restart_policy.as_deref() == Some("Always")
            && spec.update_strategy.type_ == "RollingUpdate"
        {
            errs.push(FieldError::required(
                &root.child("updateStrategy"),
                "The initContainer in-place upgrade is not currently supported.",
            ));
        }
    }
    // 3.2
    match &spec.selector {
        None => errs.push(FieldError::required(
            &root.child("selector"),
            "no selector defined for SidecarSet",
        )),
        Some(sel) => errs.extend(validate_selector(sel, &root.child("selector"))),
    }
    if let Some(ns) = &spec.namespace_selector {
        errs.extend(validate_selector(ns, &root.child("namespaceSelector")));
    }
    // 3.3
    errs.extend(validate_revision(subject, view, ctx.kruise_namespace));
    // 3.4
    if spec.update_strategy.type_ == "RollingUpdate" {
        errs.extend(validate_update_strategy(
            &spec.update_strategy,
            &root.child("updateStrategy"),
        ));
    }
    // 3.5: converting a v1 Volume to the internal type cannot fail; nothing to report.
    // 3.6
    if spec.init_containers.is_empty() && spec.containers.is_empty() {
        errs.push(FieldError::required(
            &root,
            "no initContainer or container defined for SidecarSet",
        ));
    } else {
        errs.extend(containers::validate_sidecar_containers(
            &spec.init_containers,
            &spec.containers,
            ctx.validate_expression,
        ));
        errs.extend(fake_pod::fake_pod_errors(spec)?);
    }
    // 3.7
    errs.extend(validate_patch_pod_metadata(subject, ctx));
    Ok(errs)
}

/// Kruise's `validateSelector`: label-selector rules, no empty selector, and an extra error when the selector
/// does not convert.
fn validate_selector(sel: &LabelSelector, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = meta::validate_label_selector(sel, path);
    let rendered = || BadValue::Raw(meta::render_label_selector(sel));
    if meta::is_empty_selector(sel) {
        errs.push(FieldError::invalid(
            path,
            rendered(),
            "empty selector is not valid for sidecarset.",
        ));
    }
    if meta::selector_conversion_error(sel).is_some() {
        errs.push(FieldError::invalid(&path.child("selector"), rendered(), ""));
    }
    errs
}

fn render_revision(rev: &InjectionRevision) -> String {
    let ptr = |v: &Option<String>| v.as_deref().map_or("(*string)(nil)".to_owned(), go_quote);
    format!(
        "v1beta1.SidecarSetInjectRevision{{CustomVersion:{}, RevisionName:{}, Policy:{}}}",
        ptr(&rev.custom_version),
        ptr(&rev.revision_name),
        go_quote(&rev.policy)
    )
}

/// Rule 3.3 (paths start at `revision`, as in Go).
fn validate_revision(
    subject: &Subject,
    view: &impl SidecarSetView,
    kruise_namespace: &str,
) -> Vec<FieldError> {
    let Some(rev) = &subject.spec.injection_strategy.revision else {
        return Vec::new();
    };
    let path = FieldPath::new("revision");
    let mut errs = Vec::new();
    if rev.revision_name.is_none() && rev.custom_version.is_none() {
        errs.push(FieldError::invalid(
            &path,
            BadValue::Raw(render_revision(rev)),
            "revisionName and customVersion cannot be empty simultaneously",
        ));
    } else {
        // The lookup reads only the name and the revision settings (§4.4 step 2).
        let set = SidecarSet {
            metadata: subject.metadata.clone(),
            spec: SidecarSetSpec {
                injection_strategy: subject.spec.injection_strategy.clone(),
                ..Default::default()
            },
            ..Default::default()
        };
        let failure = match historical(&set, view, kruise_namespace) {
            Ok(Some(_)) => None,
            Ok(None) => Some("<nil>".to_owned()),
            Err(e) => Some(e),
        };
        if let Some(e) = failure {
            errs.push(FieldError::invalid(
                &path,
                BadValue::Null,
                format!("Cannot find specific ControllerRevision, err: {e}"),
            ));
        }
    }
    if !matches!(rev.policy.as_str(), "" | "Always" | "Partial") {
        errs.push(FieldError::invalid(
            &path.child("policy"),
            BadValue::Raw(render_revision(rev)),
            format!(
                "Invalid policy {}, supported: [Always, Partial]",
                rev.policy
            ),
        ));
    }
    errs
}

/// Rule 3.4 (only called for `RollingUpdate`).
fn validate_update_strategy(strategy: &UpdateStrategy, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let partition_set = match &strategy.partition {
        None => false,
        Some(IntOrString::String(_)) => true,
        Some(IntOrString::Int(i)) => *i != 0,
    };
    if partition_set && strategy.selector.is_some() {
        let partition = strategy
            .partition
            .as_ref()
            .map(go_int_or_string)
            .unwrap_or_default();
        errs.push(FieldError::invalid(
            &FieldPath::new("updateStrategy"),
            BadValue::Str(format!(
                "&{{Type:{} Partition:{partition} Selector:{}}}",
                strategy.type_,
                strategy
                    .selector
                    .as_ref()
                    .map(meta::render_label_selector)
                    .unwrap_or_default()
            )),
            "Partition and Selector cannot be used together",
        ));
    }
    if let Some(sel) = &strategy.selector {
        errs.extend(validate_selector(sel, &path.child("selector")));
    }
    if let Some(p) = &strategy.partition {
        errs.extend(validate_positive_int_or_percent(
            p,
            &path.child("partition"),
        ));
    }
    if let Some(m) = &strategy.max_unavailable {
        errs.extend(validate_positive_int_or_percent(
            m,
            &path.child("maxUnavailable"),
        ));
    }
    if let Err(e) = priority_strategy_error(strategy) {
        errs.push(FieldError::required(&path.child("priorityStrategy"), e));
    }
    if let Err(e) = scatter_strategy_error(strategy) {
        errs.push(FieldError::required(&path.child("scatterStrategy"), e));
    }
    errs
}

/// `UpdatePriorityStrategy.FieldsValidation`.
fn priority_strategy_error(strategy: &UpdateStrategy) -> Result<(), String> {
    let Some(p) = &strategy.priority_strategy else {
        return Ok(());
    };
    if !p.weight_priority.is_empty() && !p.order_priority.is_empty() {
        return Err("only one of weightPriority and orderPriority can be used".into());
    }
    for w in &p.weight_priority {
        if w.weight < 0 || w.weight > 100 {
            return Err("weight must be valid number in the range 1-100".into());
        }
        if meta::is_empty_selector(&w.match_selector) {
            return Err("selector can not be empty".into());
        }
        if let Some(e) = meta::selector_conversion_error(&w.match_selector) {
            return Err(format!("invalid selector {e}"));
        }
    }
    if p.order_priority.iter().any(|o| o.ordered_key.is_empty()) {
        return Err("order key can not be empty".into());
    }
    Ok(())
}

/// `UpdateScatterStrategy.FieldsValidation`.
fn scatter_strategy_error(strategy: &UpdateStrategy) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for term in &strategy.scatter_strategy {
        if term.key.is_empty() {
            return Err("key should not be empty".into());
        }
        if !seen.insert((term.key.as_str(), term.value.as_str())) {
            return Err(format!("duplicated key={} value={}", term.key, term.value));
        }
    }
    Ok(())
}

/// Rule 3.7: the whitelist, then each entry (annotations present and valid, a policy, keys unique across
/// entries; keys in sorted order).
fn validate_patch_pod_metadata(subject: &Subject, ctx: &ValidateContext<'_>) -> Vec<FieldError> {
    let patches = &subject.spec.patch_pod_metadata;
    let path = FieldPath::new("spec").child("patchPodMetadata");
    let mut errs = Vec::new();
    let labels = subject.metadata.labels.clone().unwrap_or_default();
    if let Err(e) = whitelist::check(
        patches,
        &labels,
        ctx.patch_metadata_whitelist,
        ctx.gates.enabled(DEFAULTS_ALLOWED_GATE),
    ) {
        errs.push(FieldError::required(&path, e));
    }
    let mut keys = std::collections::BTreeSet::new();
    for patch in patches {
        if patch.annotations.is_empty() {
            errs.push(FieldError::required(
                &path,
                "no annotations defined for SidecarSet",
            ));
        } else {
            // Go validates a fake ObjectMeta rooted at `patchPodMetadata` (not `spec.patchPodMetadata`).
            errs.extend(meta::validate_annotations(
                &patch.annotations,
                &FieldPath::new("patchPodMetadata").child("annotations"),
            ));
        }
        if patch.patch_policy.is_empty() {
            errs.push(FieldError::required(
                &path,
                "no patchPolicy defined for patchPodMetadata",
            ));
        }
        for k in patch.annotations.keys() {
            if !keys.insert(k.as_str()) {
                errs.push(FieldError::required(
                    &path,
                    format!("patch annotation[{k}] already exist"),
                ));
            }
        }
    }
    errs
}

/// Rule 4 (UPDATE): containers are matched to the old ones by name.
fn validate_update(new: &Spec, old: &Spec) -> Vec<FieldError> {
    let path = FieldPath::new("spec.containers");
    let old_types: BTreeMap<&str, &str> = old
        .containers
        .iter()
        .map(|c| {
            (
                c.view.name.as_str(),
                c.view.upgrade_strategy.upgrade_type.as_str(),
            )
        })
        .collect();
    let mut errs = Vec::new();
    for c in &new.containers {
        let name = c.view.name.as_str();
        match old_types.get(name) {
            Some(old_type) => {
                if !old_type.is_empty() && c.view.upgrade_strategy.upgrade_type != *old_type {
                    errs.push(FieldError::invalid(
                        &path.child("upgradeStrategy").child("upgradeType"),
                        BadValue::str(name),
                        format!("container {name} upgradeType is immutable"),
                    ));
                }
            }
            None => errs.push(FieldError::invalid(
                &path.child("name"),
                BadValue::str(name),
                format!("container {name} is not found"),
            )),
        }
    }
    errs
}
