//! The workload rollout rules of `k8s.io/kubernetes/pkg/apis/apps/validation` (v1.32) that Kruise's
//! validators call for their own rollout settings (a SidecarSet's `partition` and `maxUnavailable`, a
//! PodUnavailableBudget's `maxUnavailable` and `minAvailable`).

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

/// `IsNotMoreThan100Percent`: a valid percent string above `100%` is an error; integers and strings that are
/// not percents pass (the latter are [`validate_positive_int_or_percent`]'s to report). Go reads the number
/// with `strconv.Atoi`, which saturates, so any number of digits above 100 is refused.
pub fn is_not_more_than_100_percent(v: &IntOrString, path: &FieldPath) -> Vec<FieldError> {
    let IntOrString::String(s) = v else {
        return Vec::new();
    };
    if !is_valid_percent(s).is_empty() {
        return Vec::new();
    }
    // A valid percent is ASCII digits and `%`: only the significant digits decide.
    let digits = s.trim_end_matches('%').trim_start_matches('0');
    let over = digits.len() > 3 || digits.parse::<u16>().is_ok_and(|n| n > 100);
    if over {
        vec![FieldError::invalid(
            path,
            BadValue::Raw(go_int_or_string(v)),
            "must not be greater than 100%",
        )]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::super::field_error::go_quote;
    use super::*;

    fn shown(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn percent(s: &str) -> IntOrString {
        IntOrString::String(s.to_owned())
    }

    const PERCENT_DETAIL: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

    #[test]
    fn integers_must_not_be_negative() {
        let p = FieldPath::new("spec").child("maxUnavailable");
        assert!(validate_positive_int_or_percent(&IntOrString::Int(0), &p).is_empty());
        assert!(validate_positive_int_or_percent(&IntOrString::Int(i32::MAX), &p).is_empty());
        assert_eq!(
            shown(validate_positive_int_or_percent(&IntOrString::Int(-1), &p)),
            ["spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            shown(validate_positive_int_or_percent(
                &IntOrString::Int(i32::MIN),
                &p
            )),
            ["spec.maxUnavailable: Invalid value: -2147483648: must be greater than or equal to 0"]
        );
    }

    #[test]
    fn strings_must_be_percents() {
        let p = FieldPath::new("f");
        for ok in ["0%", "1%", "100%", "150%", "007%"] {
            assert!(
                validate_positive_int_or_percent(&percent(ok), &p).is_empty(),
                "{ok}"
            );
        }
        for bad in [
            "5", "abc", "", "%", "-1%", "1.5%", " 5%", "5% ", "5%%", "５%",
        ] {
            assert_eq!(
                shown(validate_positive_int_or_percent(&percent(bad), &p)),
                [format!(
                    "f: Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}: {PERCENT_DETAIL}",
                    go_quote(bad)
                )],
                "{bad:?}"
            );
        }
    }

    #[test]
    fn percents_above_100_are_refused_at_any_length() {
        let p = FieldPath::new("spec").child("minAvailable");
        for ok in [
            "0%",
            "000%",
            "1%",
            "99%",
            "100%",
            "0100%",
            "0000000000000000000000100%",
        ] {
            assert!(
                is_not_more_than_100_percent(&percent(ok), &p).is_empty(),
                "{ok}"
            );
        }
        for over in [
            "101%",
            "150%",
            "999%",
            "1000%",
            "99999999999999999999999999%",
        ] {
            assert_eq!(
                shown(is_not_more_than_100_percent(&percent(over), &p)),
                [format!(
                    "spec.minAvailable: Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:\"{over}\"}}: must not be greater than 100%"
                )],
                "{over}"
            );
        }
        // Not this rule's to report: integers of any size, strings that are not percents.
        for other in [
            IntOrString::Int(1000),
            IntOrString::Int(-5),
            percent("500"),
            percent("abc"),
        ] {
            assert!(
                is_not_more_than_100_percent(&other, &p).is_empty(),
                "{other:?}"
            );
        }
    }
}
