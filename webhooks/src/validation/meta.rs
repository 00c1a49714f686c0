//! Object metadata and label selectors, as apimachinery validates them (v0.32): `ValidateObjectMeta` for a
//! cluster-scoped object, labels and annotations (`k8s.io/apimachinery/pkg/api/validation`), label-selector
//! validation (`pkg/apis/meta/v1/validation`) and the `LabelSelectorAsSelector` failures of
//! `pkg/labels`, with Go's message texts.
//!
//! Not checked by [`validate_object_meta`]: `ownerReferences` and `managedFields` (the apiserver validates
//! both before any webhook sees the object).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};

use super::field_error::{BadValue, FieldError, FieldPath, go_quote, go_string_slice};
use super::syntax::{is_qualified_name, is_valid_label_value};

/// `TotalAnnotationSizeLimitB`: 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `ValidateLabelName`: the key is a qualified name.
fn validate_label_name(key: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    errs.extend(FieldError::invalid_each(path, key, is_qualified_name(key)));
}

/// `ValidateLabels`, in key order.
pub fn validate_labels(labels: &BTreeMap<String, String>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        validate_label_name(k, path, &mut errs);
        errs.extend(FieldError::invalid_each(path, v, is_valid_label_value(v)));
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names (compared lower-cased), total size at most 256 KiB.
pub fn validate_annotations(
    annotations: &BTreeMap<String, String>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for k in annotations.keys() {
        errs.extend(FieldError::invalid_each(
            path,
            k,
            is_qualified_name(&k.to_lowercase()),
        ));
    }
    let total: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// `ValidateNonnegativeField`.
pub fn validate_nonnegative(value: i64, path: &FieldPath) -> Vec<FieldError> {
    if value < 0 {
        vec![FieldError::invalid(
            path,
            BadValue::Int(value),
            "must be greater than or equal to 0",
        )]
    } else {
        Vec::new()
    }
}

/// `genericvalidation.ValidateObjectMeta(meta, false, name_fn, path)` for a cluster-scoped object: generateName
/// and name through `name_fn`, no namespace, generation ≥ 0, labels, annotations and finalizers.
pub fn validate_object_meta(
    meta: &ObjectMeta,
    name_fn: fn(&str) -> Vec<String>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(generate) = meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
        errs.extend(FieldError::invalid_each(
            &path.child("generateName"),
            generate,
            name_fn(generate),
        ));
    }
    match meta.name.as_deref().filter(|n| !n.is_empty()) {
        None => errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        )),
        Some(name) => {
            errs.extend(FieldError::invalid_each(
                &path.child("name"),
                name,
                name_fn(name),
            ));
        }
    }
    if meta.namespace.as_deref().is_some_and(|n| !n.is_empty()) {
        errs.push(FieldError::forbidden(
            &path.child("namespace"),
            "not allowed on this type",
        ));
    }
    errs.extend(validate_nonnegative(
        meta.generation.unwrap_or(0),
        &path.child("generation"),
    ));
    if let Some(labels) = &meta.labels {
        errs.extend(validate_labels(labels, &path.child("labels")));
    }
    if let Some(annotations) = &meta.annotations {
        errs.extend(validate_annotations(
            annotations,
            &path.child("annotations"),
        ));
    }
    let finalizers = meta.finalizers.as_deref().unwrap_or_default();
    let finalizers_path = path.child("finalizers");
    for f in finalizers {
        errs.extend(FieldError::invalid_each(
            &finalizers_path,
            f,
            is_qualified_name(f),
        ));
    }
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    if has("orphan") && has("foregroundDeletion") {
        errs.push(FieldError::invalid(
            &finalizers_path,
            BadValue::Raw(go_string_slice(finalizers)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// apimachinery's `FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE: &str = "field is immutable";

/// Kubernetes' finalizer names that need no domain prefix.
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// Go's `String()` of a `metav1.Time` (a `time.Time`): `2026-03-01 09:00:00 +0000 UTC`, from the RFC 3339 UTC
/// text k8s-openapi reads and writes.
fn go_time(t: &Time) -> String {
    let text = t.0.to_string();
    // jiff prints `2026-03-01T09:00:00Z`; Go prints the same instant as `2026-03-01 09:00:00 +0000 UTC`.
    match text.strip_suffix('Z') {
        Some(rest) => format!("{} +0000 UTC", rest.replacen('T', " ", 1)),
        None => text,
    }
}

/// `corevalidation.ValidateObjectMetaUpdate(new, old, path)` (apimachinery's
/// `ValidateObjectMetaAccessorUpdate`, then the core finalizer-name check): no new finalizers while the old
/// object is being deleted, a resourceVersion, a generation not decremented, name, namespace, uid,
/// creationTimestamp, deletionTimestamp and deletionGracePeriodSeconds unchanged, the new labels and
/// annotations valid, and every finalizer either qualified (`<domain>/<name>`) or a standard one.
///
/// Not checked, as for [`validate_object_meta`]: `ownerReferences` and `managedFields`.
pub fn validate_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let finalizers = new.finalizers.as_deref().unwrap_or_default();
    if old.deletion_timestamp.is_some() {
        let before = old.finalizers.as_deref().unwrap_or_default();
        // `sets.NewString(new...).Difference(old).List()`: sorted, each once.
        let extra: std::collections::BTreeSet<&String> =
            finalizers.iter().filter(|f| !before.contains(f)).collect();
        if !extra.is_empty() {
            let extra: Vec<String> = extra.into_iter().cloned().collect();
            errs.push(FieldError::forbidden(
                &path.child("finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(&extra)
                ),
            ));
        }
    }
    let resource_version = new.resource_version.as_deref().unwrap_or("");
    if resource_version.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceVersion"),
            BadValue::str(resource_version),
            "must be specified for an update",
        ));
    }
    let generation = new.generation.unwrap_or(0);
    if generation < old.generation.unwrap_or(0) {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            BadValue::Int(generation),
            "must not be decremented",
        ));
    }
    let mut immutable = |name: &str, changed: bool, value: BadValue| {
        if changed {
            errs.push(FieldError::invalid(
                &path.child(name),
                value,
                FIELD_IMMUTABLE,
            ));
        }
    };
    let text = |v: &Option<String>| BadValue::str(v.as_deref().unwrap_or(""));
    let time = |t: &Option<Time>| {
        t.as_ref()
            .map_or(BadValue::Null, |t| BadValue::Raw(go_time(t)))
    };
    immutable(
        "name",
        new.name.as_deref().unwrap_or("") != old.name.as_deref().unwrap_or(""),
        text(&new.name),
    );
    immutable(
        "namespace",
        new.namespace.as_deref().unwrap_or("") != old.namespace.as_deref().unwrap_or(""),
        text(&new.namespace),
    );
    immutable(
        "uid",
        new.uid.as_deref().unwrap_or("") != old.uid.as_deref().unwrap_or(""),
        text(&new.uid),
    );
    // A zero `metav1.Time` prints as Go's zero time.
    let created = |t: &Option<Time>| {
        t.as_ref()
            .map_or(BadValue::Raw("0001-01-01 00:00:00 +0000 UTC".into()), |t| {
                BadValue::Raw(go_time(t))
            })
    };
    immutable(
        "creationTimestamp",
        new.creation_timestamp != old.creation_timestamp,
        created(&new.creation_timestamp),
    );
    immutable(
        "deletionTimestamp",
        new.deletion_timestamp != old.deletion_timestamp,
        time(&new.deletion_timestamp),
    );
    immutable(
        "deletionGracePeriodSeconds",
        new.deletion_grace_period_seconds != old.deletion_grace_period_seconds,
        new.deletion_grace_period_seconds
            .map_or(BadValue::Null, BadValue::Int),
    );
    if let Some(labels) = &new.labels {
        errs.extend(validate_labels(labels, &path.child("labels")));
    }
    if let Some(annotations) = &new.annotations {
        errs.extend(validate_annotations(
            annotations,
            &path.child("annotations"),
        ));
    }
    for (i, finalizer) in finalizers.iter().enumerate() {
        if !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(&finalizer.as_str()) {
            errs.push(FieldError::invalid(
                &path.child("finalizers").index(i),
                BadValue::str(finalizer),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

/// `metav1validation.ValidateLabelSelector` with default options (label values in selectors are checked).
pub fn validate_label_selector(sel: &LabelSelector, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(labels) = &sel.match_labels {
        errs.extend(validate_labels(labels, &path.child("matchLabels")));
    }
    for (i, req) in sel.match_expressions.iter().flatten().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = req.values.as_deref().unwrap_or_default();
        match req.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                &p.child("operator"),
                BadValue::str(other),
                "not a valid selector operator",
            )),
        }
        validate_label_name(&req.key, &p.child("key"), &mut errs);
        for (j, v) in values.iter().enumerate() {
            errs.extend(FieldError::invalid_each(
                &p.child("values").index(j),
                v,
                is_valid_label_value(v),
            ));
        }
    }
    errs
}

/// Why `metav1.LabelSelectorAsSelector` would fail on `sel` (`None`: it converts). Like Go's
/// `labels.NewRequirement`, it checks operators, value counts, keys (qualified names) and values (label values).
pub fn selector_conversion_error(sel: &LabelSelector) -> Option<String> {
    let check = |key: &str, op: &str, values: &[String]| -> Option<String> {
        match op {
            "In" | "NotIn" if values.is_empty() => {
                return Some(
                    "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
                        .into(),
                );
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Some(format!(
                    "values: Invalid value: {}: values set must be empty for exists and does not exist",
                    go_string_slice(values)
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "=" => {}
            other => {
                return Some(format!(
                    "{} is not a valid label selector operator",
                    go_quote(other)
                ));
            }
        }
        if let Some(msg) = is_qualified_name(key).into_iter().next() {
            return Some(format!("key: Invalid value: {}: {msg}", go_quote(key)));
        }
        for v in values {
            if let Some(msg) = is_valid_label_value(v).into_iter().next() {
                return Some(format!(
                    "values[0][{key}]: Invalid value: {}: {msg}",
                    go_quote(v)
                ));
            }
        }
        None
    };
    for (k, v) in sel.match_labels.iter().flatten() {
        if let Some(e) = check(k, "=", std::slice::from_ref(v)) {
            return Some(e);
        }
    }
    for req in sel.match_expressions.iter().flatten() {
        if let Some(e) = check(
            &req.key,
            &req.operator,
            req.values.as_deref().unwrap_or_default(),
        ) {
            return Some(e);
        }
    }
    None
}

/// No matchLabels and no matchExpressions.
pub fn is_empty_selector(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// Go's `%#v` of a `metav1.LabelSelector` (the value of selector errors).
pub fn render_label_selector(sel: &LabelSelector) -> String {
    let labels = match &sel.match_labels {
        None => "map[string]string(nil)".to_owned(),
        Some(m) => {
            let pairs: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v)))
                .collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
    };
    let exprs = match &sel.match_expressions {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|r| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        go_quote(&r.key),
                        go_quote(&r.operator),
                        go_string_slice(r.values.as_deref().unwrap_or_default())
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_over_256_kib_are_too_long() {
        let big: BTreeMap<String, String> =
            [("k".to_owned(), "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT))].into();
        let errs = validate_annotations(&big, &FieldPath::new("metadata").child("annotations"));
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        let upper: BTreeMap<String, String> =
            [("Example.COM/Key".to_owned(), String::new())].into();
        assert!(
            validate_annotations(&upper, &FieldPath::new("a")).is_empty(),
            "annotation keys are checked lower-cased"
        );
    }

    #[test]
    fn object_meta_update_keeps_identity_and_times() {
        let m = |v: serde_json::Value| -> ObjectMeta { serde_json::from_value(v).unwrap() };
        let old = m(
            serde_json::json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
            "generation": 2, "creationTimestamp": "2026-03-01T09:00:00Z"}),
        );
        let check = |new: &ObjectMeta, old: &ObjectMeta| -> Vec<String> {
            validate_object_meta_update(new, old, &FieldPath::new("metadata"))
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert!(check(&old, &old).is_empty());
        let new = m(
            serde_json::json!({"name": "a", "namespace": "ns2", "uid": "u2", "resourceVersion": "5",
            "generation": 3, "creationTimestamp": "2026-03-02T10:30:00Z",
            "deletionTimestamp": "2026-03-03T00:00:00Z", "deletionGracePeriodSeconds": 30,
            "labels": {"k": "bad-"}, "finalizers": ["kubernetes", "orphan", "example.com/f"]}),
        );
        assert_eq!(
            check(&new, &old),
            [
                "metadata.namespace: Invalid value: \"ns2\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.creationTimestamp: Invalid value: 2026-03-02 10:30:00 +0000 UTC: field is immutable",
                "metadata.deletionTimestamp: Invalid value: 2026-03-03 00:00:00 +0000 UTC: field is immutable",
                "metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable",
                "metadata.labels: Invalid value: \"bad-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ]
        );
        // Removing a timestamp prints the nil pointer, and a missing creationTimestamp Go's zero time.
        let cleared = m(
            serde_json::json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
            "generation": 2}),
        );
        let mut deleting = old.clone();
        deleting.deletion_timestamp = new.deletion_timestamp.clone();
        assert_eq!(
            check(&cleared, &deleting),
            [
                "metadata.creationTimestamp: Invalid value: 0001-01-01 00:00:00 +0000 UTC: field is immutable",
                "metadata.deletionTimestamp: Invalid value: null: field is immutable",
            ]
        );
    }

    #[test]
    fn selector_conversion_checks_keys_values_and_operators() {
        let sel =
            |json: serde_json::Value| -> LabelSelector { serde_json::from_value(json).unwrap() };
        assert_eq!(
            selector_conversion_error(&sel(serde_json::json!({"matchLabels": {"a": "b"}}))),
            None
        );
        assert!(
            selector_conversion_error(&sel(serde_json::json!({"matchLabels": {"a": "b-"}})))
                .is_some()
        );
        assert!(
            selector_conversion_error(&sel(serde_json::json!({"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["ok", "bad-"]}]})))
                .is_some()
        );
        assert_eq!(
            selector_conversion_error(&sel(
                serde_json::json!({"matchExpressions": [{"key": "k", "operator": "Near"}]})
            )),
            Some("\"Near\" is not a valid label selector operator".into())
        );
        assert_eq!(
            render_label_selector(&sel(serde_json::json!({"matchLabels": {"a": "b"}}))),
            "v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
    }
}
