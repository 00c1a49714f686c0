//! Kubernetes `field.Error` / `field.ErrorList` as apimachinery v0.32 prints them (spec/sidecarset.md §8
//! "Response format"): the validating webhook answers with `ErrorList.ToAggregate().Error()`.
//!
//! - One error prints `<path>: <Type>: <value>: <detail>`; `Required value`, `Forbidden`, `Too long` and
//!   `Internal error` never print the value, and an empty detail drops the last `: <detail>`.
//! - The aggregate drops repeated messages (keeping the first), prints a single remaining error as itself
//!   and several as `[e1, e2, ...]`.
//!
//! Value rendering ([`BadValue`]) follows Go's `ErrorBody`: integers and booleans with `%v`, strings with
//! `%q` ([`go_quote`]), `null` for nil, and everything else with `%#v`. Values Go prints with `%#v` (structs:
//! a `LabelSelector`, an `IntOrString`, ...) are pre-rendered by the caller in Go syntax
//! ([`BadValue::Raw`]); that rendering is a best effort and tests match paths and details, not it.

use std::fmt;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A field path (`field.Path`): `spec.containers[0].name`, `resources.limits[cpu]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath(String);

impl FieldPath {
    /// A root path (`field.NewPath(name)`); `""` is the empty root Go uses for request-wide errors.
    pub fn new(root: &str) -> Self {
        Self(root.to_owned())
    }

    /// `path.Child(name)`: `.name` (no dot after an empty root).
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self(name.to_owned())
        } else {
            Self(format!("{}.{name}", self.0))
        }
    }

    /// `path.Index(i)`: `[i]`.
    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }

    /// `path.Key(k)`: `[k]`.
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }

    /// The rendered path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `field.ErrorType`, printed as Go's `ErrorType.String()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// `Not found`.
    NotFound,
    /// `Required value`.
    Required,
    /// `Duplicate value`.
    Duplicate,
    /// `Invalid value`.
    Invalid,
    /// `Unsupported value`.
    NotSupported,
    /// `Forbidden`.
    Forbidden,
    /// `Too long`.
    TooLong,
    /// `Internal error`.
    Internal,
}

impl ErrorType {
    /// Go's text for the type.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::Internal => "Internal error",
        }
    }

    /// The types whose body never shows the bad value.
    fn hides_value(self) -> bool {
        matches!(
            self,
            Self::Required | Self::Forbidden | Self::TooLong | Self::Internal
        )
    }
}

/// The offending value of a field error, as Go would print it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    /// No value (Go's `omitValue`, or a type that hides the value).
    Omit,
    /// A nil value: prints `null`.
    Null,
    /// A string: prints with `%q`.
    Str(String),
    /// An integer: prints with `%v`.
    Int(i64),
    /// A boolean: prints with `%v`.
    Bool(bool),
    /// A value already rendered in Go syntax (`%#v` of a struct, a slice, ...), printed as is.
    Raw(String),
}

impl BadValue {
    /// A string value.
    pub fn str(s: impl Into<String>) -> Self {
        Self::Str(s.into())
    }
}

/// One `field.Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The kind of error.
    pub kind: ErrorType,
    /// The field path.
    pub field: String,
    /// The offending value.
    pub value: BadValue,
    /// The human-readable detail (may be empty).
    pub detail: String,
}

impl FieldError {
    fn new(kind: ErrorType, path: &FieldPath, value: BadValue, detail: impl Into<String>) -> Self {
        Self {
            kind,
            field: path.as_str().to_owned(),
            value,
            detail: detail.into(),
        }
    }

    /// `field.Required(path, detail)`.
    pub fn required(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, path, BadValue::Omit, detail)
    }

    /// `field.Invalid(path, value, detail)`.
    pub fn invalid(path: &FieldPath, value: BadValue, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, path, value, detail)
    }

    /// `field.NotFound(path, value)`.
    pub fn not_found(path: &FieldPath, value: BadValue) -> Self {
        Self::new(ErrorType::NotFound, path, value, "")
    }

    /// `field.Duplicate(path, value)`.
    pub fn duplicate(path: &FieldPath, value: BadValue) -> Self {
        Self::new(ErrorType::Duplicate, path, value, "")
    }

    /// `field.NotSupported(path, value, supported)`: the detail lists the supported values quoted.
    pub fn not_supported(path: &FieldPath, value: BadValue, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, path, value, detail)
    }

    /// `field.Forbidden(path, detail)`.
    pub fn forbidden(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, path, BadValue::Omit, detail)
    }

    /// `field.TooLong(path, value, max)`: `may not be more than <max> bytes`.
    pub fn too_long(path: &FieldPath, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            ErrorType::TooLong,
            path,
            BadValue::Omit,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// `field.InternalError(path, err)`.
    pub fn internal(path: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Internal, path, BadValue::Omit, detail)
    }

    /// `field.Invalid(path, value, msg)` for each message of a syntax check (Go's
    /// `for _, msg := range validation.IsX(v)`); `value` is the value the errors show.
    pub fn invalid_each(path: &FieldPath, value: &str, messages: Vec<String>) -> Vec<Self> {
        messages
            .into_iter()
            .map(|msg| Self::invalid(path, BadValue::str(value), msg))
            .collect()
    }

    /// A value from a closed set, checked as Go's `switch` does: nothing when `supported` lists it, else
    /// `Required` when empty and `NotSupported` (listing `supported`) otherwise.
    pub fn one_of(path: &FieldPath, value: &str, supported: &[&str]) -> Option<Self> {
        if supported.contains(&value) {
            None
        } else if value.is_empty() {
            Some(Self::required(path, ""))
        } else {
            Some(Self::not_supported(path, BadValue::str(value), supported))
        }
    }

    /// Go's `ErrorBody()`: the message without the path.
    pub fn body(&self) -> String {
        let mut s = self.kind.as_str().to_owned();
        if !self.kind.hides_value() {
            match &self.value {
                BadValue::Omit => {}
                BadValue::Null => s.push_str(": null"),
                BadValue::Str(v) => {
                    s.push_str(": ");
                    s.push_str(&go_quote(v));
                }
                BadValue::Int(v) => s.push_str(&format!(": {v}")),
                BadValue::Bool(v) => s.push_str(&format!(": {v}")),
                BadValue::Raw(v) => {
                    s.push_str(": ");
                    s.push_str(v);
                }
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// `ErrorList.ToAggregate().Error()`: repeated messages dropped, one error as itself, several as
/// `[e1, e2, ...]`. An empty list gives `""`.
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

pub use crate::json::go::go_quote;

/// A validating webhook's answer to `errors`: allowed when there are none, else denied with `code` (422 in
/// every validator: DECISIONS 14) and their aggregate ([`aggregate`]), as OpenKruise's
/// `admission.Errored(code, errs.ToAggregate())`.
pub fn verdict(errors: &[FieldError], code: u16) -> crate::Verdict {
    if errors.is_empty() {
        crate::Verdict::allow()
    } else {
        crate::Verdict::deny(crate::Denial {
            code,
            reason: None,
            message: aggregate(errors),
        })
    }
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}` (`[]string(nil)` when empty, as a nil slice prints).
pub fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_owned();
    }
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Go's `%#v` of an `intstr.IntOrString`: `intstr.IntOrString{Type:0, IntVal:1, StrVal:""}`.
pub fn go_int_or_string(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => format!("intstr.IntOrString{{Type:0, IntVal:{i}, StrVal:\"\"}}"),
        IntOrString::String(s) => {
            format!(
                "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
                go_quote(s)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_as_go_field_paths() {
        let spec = FieldPath::new("spec");
        assert_eq!(
            spec.child("containers").index(0).child("name").as_str(),
            "spec.containers[0].name"
        );
        assert_eq!(
            spec.child("resources").child("limits").key("cpu").as_str(),
            "spec.resources.limits[cpu]"
        );
        assert_eq!(spec.index(2).as_str(), "spec[2]");
        assert_eq!(FieldPath::new("").child("x").as_str(), "x");
        assert_eq!(FieldPath::new("").as_str(), "");
    }

    #[test]
    fn required_and_forbidden_never_print_the_value() {
        let p = FieldPath::new("spec").child("selector");
        assert_eq!(
            FieldError::required(&p, "no selector defined for SidecarSet").to_string(),
            "spec.selector: Required value: no selector defined for SidecarSet"
        );
        assert_eq!(
            FieldError::required(&FieldPath::new("spec.initContainers[0].image"), "").to_string(),
            "spec.initContainers[0].image: Required value"
        );
        assert_eq!(
            FieldError::forbidden(
                &FieldPath::new("metadata.namespace"),
                "not allowed on this type"
            )
            .to_string(),
            "metadata.namespace: Forbidden: not allowed on this type"
        );
        assert_eq!(
            FieldError::too_long(&FieldPath::new("metadata.annotations"), 262144).to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            FieldError::internal(&FieldPath::new(""), "boom").to_string(),
            ": Internal error: boom"
        );
    }

    #[test]
    fn invalid_values_print_like_go() {
        let p = FieldPath::new("f");
        assert_eq!(
            FieldError::invalid(&p, BadValue::str("a\"b"), "bad").to_string(),
            "f: Invalid value: \"a\\\"b\": bad"
        );
        assert_eq!(
            FieldError::invalid(&p, BadValue::Int(-1), "must be greater than or equal to 0")
                .to_string(),
            "f: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            FieldError::invalid(&p, BadValue::Raw("v1.X{}".into()), "").to_string(),
            "f: Invalid value: v1.X{}"
        );
        assert_eq!(
            FieldError::invalid(&p, BadValue::Null, "d").to_string(),
            "f: Invalid value: null: d"
        );
        assert_eq!(
            FieldError::invalid(&p, BadValue::Bool(true), "d").to_string(),
            "f: Invalid value: true: d"
        );
        assert_eq!(
            FieldError::not_found(&p, BadValue::str("v")).to_string(),
            "f: Not found: \"v\""
        );
        assert_eq!(
            FieldError::duplicate(&p, BadValue::str("c")).to_string(),
            "f: Duplicate value: \"c\""
        );
        assert_eq!(
            FieldError::not_supported(&p, BadValue::str("X"), &["SCTP", "TCP", "UDP"]).to_string(),
            "f: Unsupported value: \"X\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
    }

    #[test]
    fn one_of_requires_a_listed_value_and_invalid_each_reports_every_message() {
        let p = FieldPath::new("f");
        assert_eq!(FieldError::one_of(&p, "TCP", &["SCTP", "TCP", "UDP"]), None);
        assert_eq!(
            FieldError::one_of(&p, "", &["TCP"]).map(|e| e.to_string()),
            Some("f: Required value".to_owned())
        );
        assert_eq!(
            FieldError::one_of(&p, "ICMP", &["SCTP", "TCP"]).map(|e| e.to_string()),
            Some("f: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\"".to_owned())
        );
        let shown: Vec<String> = FieldError::invalid_each(&p, "Bad", vec!["x".into(), "y".into()])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            [
                "f: Invalid value: \"Bad\": x",
                "f: Invalid value: \"Bad\": y"
            ]
        );
    }

    #[test]
    fn aggregate_prints_one_error_bare_and_several_in_brackets_without_repeats() {
        let a = FieldError::required(&FieldPath::new("a"), "x");
        let b = FieldError::required(&FieldPath::new("b"), "y");
        assert_eq!(aggregate(&[]), "");
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a: Required value: x");
        assert_eq!(
            aggregate(&[a.clone(), a.clone()]),
            "a: Required value: x",
            "a repeated message collapses to one, without brackets"
        );
        assert_eq!(
            aggregate(&[a.clone(), b.clone(), a]),
            "[a: Required value: x, b: Required value: y]"
        );
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        assert_eq!(go_quote("plain"), "\"plain\"");
        assert_eq!(go_quote("tab\there\n"), "\"tab\\there\\n\"");
        assert_eq!(go_quote("back\\slash"), "\"back\\\\slash\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("ünïcode"), "\"ünïcode\"");
        assert_eq!(go_string_slice(&[]), "[]string(nil)");
        assert_eq!(
            go_string_slice(&["a".into(), "b".into()]),
            "[]string{\"a\", \"b\"}"
        );
    }
}
