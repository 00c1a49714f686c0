//! Label selector matching (`metav1.LabelSelector` semantics), for webhook selectors evaluated offline.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `labels` match `selector`. An empty selector matches everything; an unknown operator matches
/// nothing (the apiserver rejects such selectors when they are stored).
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let by_labels = selector
        .match_labels
        .as_ref()
        .is_none_or(|m| m.iter().all(|(k, v)| labels.get(k) == Some(v)));
    by_labels
        && selector.match_expressions.as_ref().is_none_or(|exprs| {
            exprs.iter().all(|e| {
                let values = e.values.as_deref().unwrap_or_default();
                let value = labels.get(&e.key);
                match e.operator.as_str() {
                    "In" => value.is_some_and(|v| values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
        })
}

/// Whether `labels` carries every one of `wanted` (equality-based selection, as a label query string asks).
pub fn has_labels(
    labels: Option<&BTreeMap<String, String>>,
    wanted: &BTreeMap<String, String>,
) -> bool {
    wanted
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.iter().map(|s| s.to_string()).collect()),
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn operators_follow_metav1_semantics() {
        let l = labels(&[("a", "1")]);
        assert!(matches(&LabelSelector::default(), &l));
        assert!(matches(&expr("a", "In", &["1", "2"]), &l));
        assert!(!matches(&expr("a", "In", &["2"]), &l));
        assert!(
            matches(&expr("b", "NotIn", &["1"]), &l),
            "NotIn matches an absent key"
        );
        assert!(!matches(&expr("a", "NotIn", &["1"]), &l));
        assert!(matches(&expr("a", "Exists", &[]), &l));
        assert!(matches(&expr("b", "DoesNotExist", &[]), &l));
        assert!(!matches(&expr("a", "Bogus", &[]), &l));
        let by_labels = LabelSelector {
            match_labels: Some(labels(&[("a", "2")])),
            ..Default::default()
        };
        assert!(!matches(&by_labels, &l));
    }
}
