//! The downward API selectors of `k8s.io/kubernetes/pkg/apis/core/validation` (v1.32), shared by env
//! `valueFrom` and downwardAPI volume items: `fieldRef` (`validateObjectFieldSelector`, with the pod's
//! `ConvertDownwardAPIFieldLabel`; subscripted `metadata.labels['k']` / `metadata.annotations['k']` keys are
//! qualified names) and `resourceFieldRef` (`validateContainerResourceFieldSelector`: limits/requests of cpu,
//! memory, ephemeral-storage and the `limits.hugepages-` / `requests.hugepages-` prefixes; then
//! `validateContainerResourceDivisor`).

use serde::Deserialize;
use serde_json::Value;

use super::field_error::{BadValue, FieldError, FieldPath};
use super::resources::quantity;
use super::syntax::is_qualified_name;
use crate::WebhookError;
use crate::de::nullable;

/// `ObjectFieldSelector`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldRef {
    /// `apiVersion` (the fieldPath's schema version).
    #[serde(default, deserialize_with = "nullable")]
    pub api_version: String,
    /// `fieldPath`.
    #[serde(default, deserialize_with = "nullable")]
    pub field_path: String,
}

/// `ResourceFieldSelector`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceFieldRef {
    #[serde(default, deserialize_with = "nullable")]
    container_name: String,
    #[serde(default, deserialize_with = "nullable")]
    resource: String,
    #[serde(default)]
    divisor: Option<Value>,
}

/// `validContainerResourceFieldPathExpressions`, sorted.
const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `validContainerResourceFieldPathPrefixesWithDownwardAPIHugePages`.
const HUGEPAGES_FIELD_PREFIXES: &[&str] = &["limits.hugepages-", "requests.hugepages-"];

/// The divisors Go accepts for memory, ephemeral storage and hugepages.
const BYTE_DIVISORS: &[&str] = &[
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];

/// Kubernetes' `ConvertDownwardAPIFieldLabel` for pods (env `fieldRef`).
pub(super) fn convert_pod_field_label(api_version: &str, label: &str) -> Result<String, String> {
    if api_version != "v1" {
        return Err(format!("unsupported pod version: {api_version}"));
    }
    if let Some((path, _)) = split_subscripted_path(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label.to_owned()),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label.to_owned()),
        "spec.host" => Ok("spec.nodeName".to_owned()),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['k']` → (`metadata.labels`, `k`).
pub fn split_subscripted_path(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, subscript) = s.split_once("['")?;
    (!path.is_empty()).then_some((path, subscript))
}

/// `validateObjectFieldSelector`, with the label converter and the accepted unsubscripted paths of the caller.
pub fn validate_object_field_selector(
    fs: &FieldRef,
    convert: fn(&str, &str) -> Result<String, String>,
    expressions: &[&str],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if fs.api_version.is_empty() {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
        return;
    }
    if fs.field_path.is_empty() {
        errs.push(FieldError::required(&path.child("fieldPath"), ""));
        return;
    }
    let internal = match convert(&fs.api_version, &fs.field_path) {
        Ok(p) => p,
        Err(e) => {
            errs.push(FieldError::invalid(
                &path.child("fieldPath"),
                BadValue::str(&fs.field_path),
                format!("error converting fieldPath: {e}"),
            ));
            return;
        }
    };
    if let Some((p, subscript)) = split_subscripted_path(&internal) {
        let key = match p {
            "metadata.annotations" => subscript.to_lowercase(),
            "metadata.labels" => subscript.to_owned(),
            _ => {
                errs.push(FieldError::invalid(
                    path,
                    BadValue::str(p),
                    "does not support subscript",
                ));
                return;
            }
        };
        errs.extend(FieldError::invalid_each(
            path,
            &key,
            is_qualified_name(&key),
        ));
    } else if !expressions.contains(&internal.as_str()) {
        errs.push(FieldError::not_supported(
            &path.child("fieldPath"),
            BadValue::Str(internal),
            expressions,
        ));
    }
}

/// `validateContainerResourceFieldSelector` with the downward API hugepages prefixes, then
/// `validateContainerResourceDivisor`.
pub(super) fn validate_resource_field_selector(
    fs: &ResourceFieldRef,
    volume: bool,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let resource = fs.resource.as_str();
    if volume && fs.container_name.is_empty() {
        errs.push(FieldError::required(&path.child("containerName"), ""));
    } else if resource.is_empty() {
        errs.push(FieldError::required(&path.child("resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !HUGEPAGES_FIELD_PREFIXES
            .iter()
            .any(|prefix| resource.starts_with(prefix))
    {
        errs.push(FieldError::not_supported(
            &path.child("resource"),
            BadValue::str(resource),
            RESOURCE_FIELD_PATHS,
        ));
    }
    let Some(divisor) = fs.divisor.as_ref().filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let divisor = quantity(divisor, &path.child("divisor"))?;
    if divisor.value.is_zero() {
        return Ok(());
    }
    let bytes = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the";
    let mut bad = |detail: String| {
        errs.push(FieldError::invalid(
            &path.child("divisor"),
            BadValue::str(resource),
            detail,
        ));
    };
    let text = divisor.text.as_str();
    match resource {
        "limits.cpu" | "requests.cpu" if !["1m", "1"].contains(&text) => {
            bad("only divisor's values 1m and 1 are supported with the cpu resource".into());
        }
        "limits.memory" | "requests.memory" if !BYTE_DIVISORS.contains(&text) => {
            bad(format!("{bytes} memory resource"));
        }
        "limits.ephemeral-storage" | "requests.ephemeral-storage"
            if !BYTE_DIVISORS.contains(&text) =>
        {
            bad(format!("{bytes} local ephemeral storage resource"));
        }
        _ => {}
    }
    if HUGEPAGES_FIELD_PREFIXES
        .iter()
        .any(|prefix| resource.starts_with(prefix))
        && !BYTE_DIVISORS.contains(&text)
    {
        bad(format!("{bytes} hugepages resource"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::validation::testing::{c, check, with};

    #[test]
    fn env_resource_field_refs() {
        let a = with(
            c("a"),
            json!({"env": [
                {"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.foo"}}},
                {"name": "B", "valueFrom": {"resourceFieldRef": {"resource": "requests.hugepages-1Gi"}}},
                {"name": "C", "valueFrom": {"resourceFieldRef": {}}},
                {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1Mi"}}},
                {"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "3"}}},
                {"name": "F", "valueFrom": {"resourceFieldRef": {"resource": "requests.ephemeral-storage", "divisor": "1m"}}},
                {"name": "G", "valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages-2Mi", "divisor": "2Mi"}}},
                {"name": "H", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Gi"}}}
            ]}),
        );
        let bytes = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the";
        assert_eq!(
            check(json!([]), json!([a]), json!([])),
            [
                "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.foo\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"".to_owned(),
                "spec.containers[0].env[2].valueFrom.resourceFieldRef.resource: Required value".to_owned(),
                "spec.containers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource".to_owned(),
                format!("spec.containers[0].env[4].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.memory\": {bytes} memory resource"),
                format!("spec.containers[0].env[5].valueFrom.resourceFieldRef.divisor: Invalid value: \"requests.ephemeral-storage\": {bytes} local ephemeral storage resource"),
                format!("spec.containers[0].env[6].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.hugepages-2Mi\": {bytes} hugepages resource"),
            ]
        );
    }
}
