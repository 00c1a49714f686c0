//! The Kruise-specific container rules of spec/sidecarset.md §8 rule 3.6 (before the fake-pod check):
//! `resourcesPolicy` only on native-sidecar init containers, `podInjectPolicy` and `shareVolumePolicy` of
//! containers, `transferEnv[].sourceContainerNameFrom.fieldRef`, and the `resourcesPolicy` rules (§5).
//!
//! The bad values of these errors are a best effort (Go prints some of them as structs with pointers).

use super::compile_go_regex;
use super::model::{Container, Exprs};
use crate::validation::downward_api::{split_subscripted_path, validate_object_field_selector};
use crate::validation::field_error::{BadValue, FieldError, FieldPath, go_quote};

/// Unsubscripted `fieldRef` paths Kruise lists as valid for `transferEnv` (sorted, as Go's `List()`).
const TRANSFER_ENV_FIELD_PATHS: &[&str] =
    &["metadata.annotations", "metadata.labels", "metadata.name"];

/// Kruise's `ConvertDownwardAPIFieldLabel` (sidecarcontrol): only subscripted labels and annotations convert,
/// so plain `metadata.name` is rejected although it is listed as valid (§12).
fn convert_transfer_env_label(api_version: &str, label: &str) -> Result<String, String> {
    if api_version != "v1" {
        return Err(format!("unsupported pod version: {api_version}"));
    }
    match split_subscripted_path(label) {
        Some(("metadata.annotations" | "metadata.labels", _)) => Ok(label.to_owned()),
        Some(_) => Err(format!("field label does not support subscript: {label}")),
        None => Err(format!("field label not supported: {label}")),
    }
}

/// Validates the init containers and containers as §8 rule 3.6 lists (base path `spec`). `validate_expression`
/// test-evaluates a resources expression with only its variable bound to 1.
pub(super) fn validate_sidecar_containers(
    init_containers: &[Container],
    containers: &[Container],
    validate_expression: &dyn Fn(&str, &str) -> Result<(), String>,
) -> Vec<FieldError> {
    let root = FieldPath::new("spec");
    let mut errs = Vec::new();
    for (i, c) in init_containers.iter().enumerate() {
        if c.view.resources_policy.is_some() {
            let idx = root.index(i);
            if c.view.restart_policy.as_deref() != Some("Always") {
                errs.push(FieldError::invalid(
                    &idx.child("resourcesPolicy"),
                    BadValue::str(&c.view.name),
                    "resourcesPolicy is only supported for containers with RestartPolicy Always",
                ));
            }
            validate_resources_policy(c, &idx, validate_expression, &mut errs);
        }
    }
    for (i, c) in containers.iter().enumerate() {
        let idx = root.index(i);
        let policy = c.view.pod_inject_policy.as_str();
        if policy != "BeforeAppContainer" && policy != "AfterAppContainer" {
            errs.push(FieldError::invalid(
                &root.child("container").child("podInjectPolicy"),
                BadValue::str(policy),
                "unsupported pod inject policy",
            ));
        }
        let share = c.view.share_volume_policy.type_.as_str();
        if share != "enabled" && share != "disabled" {
            errs.push(FieldError::invalid(
                &root.child("container").child("shareVolumePolicy"),
                BadValue::Raw(format!(
                    "v1beta1.ShareVolumePolicy{{Type:{}}}",
                    go_quote(share)
                )),
                "unsupported share volume policy",
            ));
        }
        for te in &c.view.transfer_env {
            if let Some(fr) = te
                .source_container_name_from
                .as_ref()
                .and_then(|s| s.field_ref.as_ref())
            {
                validate_object_field_selector(
                    fr,
                    convert_transfer_env_label,
                    TRANSFER_ENV_FIELD_PATHS,
                    &idx.child("transferEnv").child("fieldRef"),
                    &mut errs,
                );
            }
        }
        if c.view.resources_policy.is_some() {
            validate_resources_policy(c, &idx, validate_expression, &mut errs);
        }
    }
    errs
}

/// `validateResourcesPolicy(container, spec[i])`: with `resources` set, that is the only error; otherwise
/// the regex, the presence of limits or requests, and each non-empty expression.
fn validate_resources_policy(
    c: &Container,
    idx: &FieldPath,
    validate_expression: &dyn Fn(&str, &str) -> Result<(), String>,
    errs: &mut Vec<FieldError>,
) {
    let Some(policy) = &c.view.resources_policy else {
        return;
    };
    let path = idx.child("resourcesPolicy");
    if !c.view.resources.limits.is_empty() || !c.view.resources.requests.is_empty() {
        errs.push(FieldError::invalid(
            &path,
            BadValue::str(&c.view.name),
            "resourcesPolicy and resources cannot be configured together",
        ));
        return;
    }
    let regex_path = path.child("targetContainersNameRegex");
    let regex = policy.target_containers_name_regex.as_str();
    if regex.is_empty() {
        errs.push(FieldError::required(&regex_path, "invalid empty regex"));
    } else if let Err(e) = compile_go_regex(regex) {
        errs.push(FieldError::invalid(
            &regex_path,
            BadValue::str(regex),
            format!("invalid regex pattern: {e}"),
        ));
    }
    let expr_path = path.child("resourcesExpr");
    let exprs = &policy.resources_expr;
    if exprs.limits.is_none() && exprs.requests.is_none() {
        errs.push(FieldError::required(
            &expr_path,
            "at least one of limits or requests must be configured",
        ));
        return;
    }
    let mut check = |group: &Option<Exprs>, name: &str| {
        let Some(group) = group else { return };
        for (expr, variable) in [(&group.cpu, "cpu"), (&group.memory, "memory")] {
            if expr.is_empty() {
                continue;
            }
            if let Err(e) = validate_expression(expr, variable) {
                errs.push(FieldError::invalid(
                    &expr_path.child(name).child(variable),
                    BadValue::str(expr),
                    format!("invalid expression: {e}"),
                ));
            }
        }
    };
    check(&exprs.limits, "limits");
    check(&exprs.requests, "requests");
}
