//! Syntax checks of names and values, as apimachinery's `k8s.io/apimachinery/pkg/util/validation` (v0.32)
//! writes them: each `is_*` function returns Go's messages for a value, none when it is valid. The field-error
//! wrappers live with their callers ([`super::meta`], the pod sections).

use std::sync::LazyLock;

use regex::Regex;

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

fn anchored(fmt: &str) -> Regex {
    Regex::new(&format!("^{fmt}$")).expect("a constant regex compiles")
}

static QUALIFIED_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME_FMT));
static LABEL_VALUE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_VALUE_FMT));
static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static ENV_VAR_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(ENV_VAR_NAME_FMT));
static PERCENT: LazyLock<Regex> = LazyLock::new(|| anchored(PERCENT_FMT));

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
    errs.extend(has_ch_dir_prefix(value));
    errs
}

/// `hasChDirPrefix`: a name that would read as `.` or `..` in a path.
fn has_ch_dir_prefix(value: &str) -> Option<String> {
    let msg = match value {
        "." => "must not be '.'",
        ".." => "must not be '..'",
        _ if value.starts_with("..") => "must not start with '..'",
        _ => return None,
    };
    Some(msg.to_owned())
}

/// `validation.IsValidPercent`.
pub fn is_valid_percent(value: &str) -> Vec<String> {
    if PERCENT.is_match(value) {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_ERR, PERCENT_FMT, &["1%", "93%"])]
    }
}

/// `validation.IsValidPortNum` as a test: 1..=65535 (the message is [`PORT_NUM_ERROR`]).
pub fn is_valid_port_num(n: i32) -> bool {
    (1..=65535).contains(&n)
}

/// `validation.InclusiveRangeError(1, 65535)`, the message of an invalid port number.
pub const PORT_NUM_ERROR: &str = "must be between 1 and 65535, inclusive";

/// `validation.IsValidPortName`.
pub fn is_valid_port_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push(max_len_error(15));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || name.is_empty()
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `validation.IsConfigMapKey`.
pub fn is_config_map_key(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(has_ch_dir_prefix(key));
    errs
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
}
