//! Container resources, as `ValidateContainerResourceRequirements` and `validateResizePolicy` of
//! `k8s.io/kubernetes/pkg/apis/core/validation` (v1.32) check them: resource names, quantities non-negative,
//! integer extended resources, requests not above limits, requests equal to limits for hugepages and extended
//! resources, hugepages need cpu or memory, claims must name pod resource claims (none are supported here, so
//! every claim is reported); resizePolicy resource names and restart policies.
//!
//! Quantities are parsed as Go's `Quantity.UnmarshalJSON` does ([`quantity`]); Go's decoder refuses an
//! unparsable one before validation, so here it is a [`WebhookError::Decode`] (answered 400) naming the field.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;

use super::containers::NameRef;
use super::field_error::{BadValue, FieldError, FieldPath};
use super::syntax::is_qualified_name;
use crate::WebhookError;
use crate::de::nullable;
use crate::quantity::Quantity;

/// `resources`: limits and requests by resource name (quantities as raw JSON), claims.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Resources {
    #[serde(default, deserialize_with = "nullable")]
    limits: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    requests: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    claims: Vec<NameRef>,
}

/// One `resizePolicy` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResizePolicy {
    #[serde(default, deserialize_with = "nullable")]
    pub(super) resource_name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub(super) restart_policy: String,
}

/// A parsed quantity and its text as Go prints it in messages.
#[derive(Debug, Clone)]
pub(super) struct Qty {
    pub(super) text: String,
    pub(super) value: Quantity,
}

impl Qty {
    pub(super) fn negative(&self) -> bool {
        self.value.sign() < 0
    }

    /// `MilliValue() % 1000 == 0`, Kubernetes' test for whole units of extended resources.
    fn is_integer(&self) -> bool {
        self.value.milli_value() % 1000 == 0
    }

    fn cmp(&self, other: &Self) -> Ordering {
        self.value.cmp(&other.value)
    }
}

/// Parses a quantity as Go's `Quantity.UnmarshalJSON` does (a string or a number; `null` is zero).
pub(super) fn quantity(value: &Value, path: &FieldPath) -> Result<Qty, WebhookError> {
    let text = match value {
        Value::Null => "0".to_owned(),
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => {
            return Err(WebhookError::Decode(format!(
                "decoding {path}: a quantity must be a string or a number"
            )));
        }
    };
    let q = Quantity::parse(&text)
        .map_err(|e| WebhookError::Decode(format!("decoding {path}: {e}")))?;
    Ok(Qty {
        text: q.to_string(),
        value: q,
    })
}

const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

/// `validateContainerResourceName`.
fn validate_resource_name(name: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(name);
    if !msgs.is_empty() {
        errs.extend(FieldError::invalid_each(path, name, msgs));
        return;
    }
    if !name.contains('/') {
        if !(STANDARD_RESOURCES.contains(&name) || is_hugepages(name)) {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(name),
                "must be a standard resource type or fully qualified",
            ));
            return;
        }
        if !(STANDARD_CONTAINER_RESOURCES.contains(&name) || is_hugepages(name)) {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(name),
            "doesn't follow extended resource name standard",
        ));
    }
}

fn validate_quantity_value(name: &str, q: &Qty, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if q.negative() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(&q.text),
            "must be greater than or equal to 0",
        ));
    }
    if is_extended(name) && !q.is_integer() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(&q.text),
            "must be an integer",
        ));
    }
}

/// `ValidateContainerResourceRequirements` (resource names in key order).
pub(super) fn validate_resources(
    r: &Resources,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let (mut cpu_or_memory, mut hugepages) = (false, false);
    // The checks every limit and request gets, by name; returns the quantity.
    let mut entry = |name: &str, value: &Value, p: &FieldPath, errs: &mut Vec<FieldError>| {
        let q = quantity(value, p)?;
        validate_resource_name(name, p, errs);
        validate_quantity_value(name, &q, p, errs);
        hugepages |= is_hugepages(name);
        cpu_or_memory |= name == "cpu" || name == "memory";
        Ok::<_, WebhookError>(q)
    };
    let mut limits = BTreeMap::new();
    for (name, value) in &r.limits {
        let q = entry(name, value, &lim_path.key(name), errs)?;
        limits.insert(name.as_str(), q);
    }
    for (name, value) in &r.requests {
        let q = entry(name, value, &req_path.key(name), errs)?;
        match limits.get(name.as_str()) {
            Some(limit) => {
                let order = q.cmp(limit);
                if order != Ordering::Equal && !overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        &req_path,
                        BadValue::str(&q.text),
                        format!("must be equal to {name} limit of {}", limit.text),
                    ));
                } else if order == Ordering::Greater {
                    errs.push(FieldError::invalid(
                        &req_path,
                        BadValue::str(&q.text),
                        format!(
                            "must be less than or equal to {name} limit of {}",
                            limit.text
                        ),
                    ));
                }
            }
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
    if hugepages && !cpu_or_memory {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    let claims_path = path.child("claims");
    let mut names = BTreeSet::new();
    for (i, claim) in r.claims.iter().enumerate() {
        let p = claims_path.index(i);
        if claim.name.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if !names.insert(claim.name.as_str()) {
            errs.push(FieldError::duplicate(&p, BadValue::str(&claim.name)));
        }
        let mut e = FieldError::not_found(&p, BadValue::str(&claim.name));
        e.detail = "must be one of the names in pod.spec.resourceClaims which is empty".into();
        errs.push(e);
    }
    Ok(())
}

/// `validateResizePolicy`: resource names unique, cpu or memory; restart policies supported.
pub(super) fn validate_resize_policy(
    list: &[ResizePolicy],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let mut seen = BTreeSet::new();
    for (i, r) in list.iter().enumerate() {
        if !seen.insert(r.resource_name.as_str()) {
            errs.push(FieldError::duplicate(
                &path.index(i),
                BadValue::str(&r.resource_name),
            ));
        }
        errs.extend(FieldError::one_of(
            path,
            &r.resource_name,
            &["cpu", "memory"],
        ));
        errs.extend(FieldError::one_of(
            path,
            &r.restart_policy,
            &["NotRequired", "RestartContainer"],
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn quantities_compare_exactly_across_suffixes() {
        let q = |s: &str| quantity(&json!(s), &FieldPath::new("q")).unwrap();
        assert_eq!(q("1Gi").cmp(&q("1024Mi")), Ordering::Equal);
        assert_eq!(q("1G").cmp(&q("1Gi")), Ordering::Less);
        assert_eq!(q("0.5").cmp(&q("500m")), Ordering::Equal);
        assert_eq!(q("1e3").cmp(&q("1k")), Ordering::Equal);
        assert_eq!(q("2E").cmp(&q("1n")), Ordering::Greater);
        assert!(q("-1").negative());
        assert!(q("2").is_integer() && !q("1500m").is_integer() && q("2000m").is_integer());
    }
}
