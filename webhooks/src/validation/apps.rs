//! The workload rollout rules of `k8s.io/kubernetes/pkg/apis/apps/validation` (v1.32) that Kruise's
//! validators call for their own rollout settings (a SidecarSet's `partition` and `maxUnavailable`).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::field_error::{BadValue, FieldError, FieldPath, go_int_or_string};
use super::meta::validate_nonnegative;
use super::syntax::is_valid_percent;

/// `ValidatePositiveIntOrPercent`: a string is a percent (`10%`), an integer is not negative.
pub fn validate_positive_int_or_percent(v: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    match v {
        IntOrString::String(s) => is_valid_percent(s)
            .into_iter()
            .map(|msg| FieldError::invalid(path, BadValue::Raw(go_int_or_string(v)), msg))
            .collect(),
        IntOrString::Int(i) => validate_nonnegative((*i).into(), path),
    }
}
