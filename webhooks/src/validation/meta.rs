//! apimachinery validation primitives the SidecarSet validator uses (spec/sidecarset.md §8 rules 1, 3.2 and
//! 3.7): name and label syntax (`k8s.io/apimachinery/pkg/util/validation`), `ValidateObjectMeta` for a
//! cluster-scoped object, label-selector validation and `LabelSelectorAsSelector` failures, with Go's message
//! texts.
//!
//! Not checked by [`validate_object_meta`]: `ownerReferences` and `managedFields` (the apiserver validates
//! both before any webhook sees the object).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use regex::Regex;

use super::field_error::{BadValue, FieldError, FieldPath, go_quote, go_string_slice};

/// `TotalAnnotationSizeLimitB`: 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const ENV_VAR_NAME_ERR: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_ERR: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";
/// The SidecarSet name regex (§3).
pub const SIDECARSET_NAME_FMT: &str = "^[a-zA-Z0-9\\-]+$";
const SIDECARSET_NAME_ERR: &str = "sidecarset name must consist of alphanumeric characters or '-'";
/// The SidecarSet name length limit (§3).
pub const SIDECARSET_NAME_MAX_LEN: usize = 63;

fn anchored(fmt: &str) -> Regex {
    Regex::new(&format!("^{fmt}$")).expect("a constant regex compiles")
}

static QUALIFIED_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME_FMT));
static LABEL_VALUE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_VALUE_FMT));
static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static ENV_VAR_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(ENV_VAR_NAME_FMT));
static PERCENT: LazyLock<Regex> = LazyLock::new(|| anchored(PERCENT_FMT));
static SIDECARSET_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(SIDECARSET_NAME_FMT).expect("a constant regex compiles"));

/// `validation.RegexError(msg, fmt, examples...)`.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// `validation.MaxLenError(n)`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

const EMPTY_ERROR: &str = "must be non-empty";

/// `validation.IsQualifiedName`: `[prefix/]name`, the prefix a DNS-1123 subdomain.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {EMPTY_ERROR}"));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {EMPTY_ERROR}"));
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !QUALIFIED_NAME.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !LABEL_VALUE.is_match(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `validation.IsDNS1123Label`.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `validation.IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !DNS1123_SUBDOMAIN.is_match(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsEnvVarName` (the strict form: kruise's pod validation options do not relax it).
pub fn is_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if !ENV_VAR_NAME.is_match(value) {
        errs.push(regex_error(
            ENV_VAR_NAME_ERR,
            ENV_VAR_NAME_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    if value == "." {
        errs.push("must not be '.'".to_owned());
    } else if value == ".." {
        errs.push("must not be '..'".to_owned());
    } else if value.starts_with("..") {
        errs.push("must not start with '..'".to_owned());
    }
    errs
}

/// `validation.IsValidPercent`.
pub fn is_valid_percent(value: &str) -> Vec<String> {
    if PERCENT.is_match(value) {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_ERR, PERCENT_FMT, &["1%", "93%"])]
    }
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

/// `ValidateLabelName`: the key is a qualified name.
fn validate_label_name(key: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    for msg in is_qualified_name(key) {
        errs.push(FieldError::invalid(path, BadValue::str(key), msg));
    }
}

/// `ValidateLabels`, in key order.
pub fn validate_labels(labels: &BTreeMap<String, String>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        validate_label_name(k, path, &mut errs);
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path, BadValue::str(v), msg));
        }
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
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, BadValue::str(k), msg));
        }
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
        for msg in name_fn(generate) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                BadValue::str(generate),
                msg,
            ));
        }
    }
    match meta.name.as_deref().filter(|n| !n.is_empty()) {
        None => errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        )),
        Some(name) => {
            for msg in name_fn(name) {
                errs.push(FieldError::invalid(
                    &path.child("name"),
                    BadValue::str(name),
                    msg,
                ));
            }
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
        for msg in is_qualified_name(f) {
            errs.push(FieldError::invalid(&finalizers_path, BadValue::str(f), msg));
        }
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
            for msg in is_valid_label_value(v) {
                errs.push(FieldError::invalid(
                    &p.child("values").index(j),
                    BadValue::str(v),
                    msg,
                ));
            }
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

/// Compiles a regex the way Go's `regexp.Compile` is used by Kruise (RE2 syntax, unanchored). The error text
/// imitates Go's ``error parsing regexp: <what>: `<pattern>` ``, where `<what>` is the Rust parser's one-line
/// reason.
pub fn compile_go_regex(pattern: &str) -> Result<Regex, String> {
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
    fn regex_error_matches_go_including_the_double_space_quirk() {
        assert_eq!(
            is_valid_percent("abc").remove(0),
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
        );
        assert!(is_valid_percent("10%").is_empty());
        assert_eq!(
            sidecarset_name_errors("bad_name"),
            [
                "sidecarset name must consist of alphanumeric characters or '-' (e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')"
            ]
        );
        assert_eq!(
            sidecarset_name_errors(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert!(sidecarset_name_errors("Upper-Case-ok-1").is_empty());
    }

    #[test]
    fn qualified_names_and_label_values() {
        assert!(is_qualified_name("example.com/my-key").is_empty());
        assert!(is_qualified_name("key_1.x").is_empty());
        assert_eq!(is_qualified_name("/x"), ["prefix part must be non-empty"]);
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(is_qualified_name("-x")[0].starts_with("name part must consist of"));
        assert!(
            is_qualified_name("Bad_Prefix/x")[0]
                .starts_with("prefix part a lowercase RFC 1123 subdomain")
        );
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("app-risk-")[0].starts_with("a valid label must be"));
        assert_eq!(is_dns1123_label("a.b"), ["must not contain dots"]);
        assert!(is_dns1123_label("Upper")[0].starts_with("a lowercase RFC 1123 label"));
        assert!(is_env_var_name("MY_VAR.x-1").is_empty());
        assert_eq!(is_env_var_name("1abc").len(), 1);
        assert_eq!(is_env_var_name("..x"), ["must not start with '..'"]);
    }

    #[test]
    fn go_regex_errors_are_one_line() {
        assert!(compile_go_regex("key.*").unwrap().is_match("key1"));
        let e = compile_go_regex("[invalid(regex").unwrap_err();
        assert!(e.starts_with("error parsing regexp: "), "{e}");
        assert!(e.ends_with(": `[invalid(regex`"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

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
    fn object_meta_requires_a_name_and_no_namespace() {
        let meta = ObjectMeta {
            namespace: Some("ns".into()),
            generation: Some(-1),
            finalizers: Some(vec!["orphan".into(), "foregroundDeletion".into()]),
            ..Default::default()
        };
        let errs: Vec<String> =
            validate_object_meta(&meta, sidecarset_name_errors, &FieldPath::new("metadata"))
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            errs,
            [
                "metadata.name: Required value: name or generateName is required",
                "metadata.namespace: Forbidden: not allowed on this type",
                "metadata.generation: Invalid value: -1: must be greater than or equal to 0",
                "metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set",
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
