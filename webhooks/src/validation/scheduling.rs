//! Node selector terms, preferred scheduling terms and tolerations, as `k8s.io/kubernetes/pkg/apis/core/validation`
//! checks them (`ValidateNodeSelectorTerm`, `ValidatePreferredSchedulingTerms`, `ValidateTolerations`), with Go's
//! field paths and texts. OpenKruise's WorkloadSpread validator calls these on each subset's
//! `requiredNodeSelector`, `preferredNodeSelector` and `tolerations` (spec/workloadspread.md §7.1).
//!
//! As in Kubernetes v1.32 (the version [`super`] follows), `matchExpressions` values are not checked as label
//! values: later versions add that check (`allowInvalidLabelValueInRequiredNodeAffinity`).
//!
//! Values Go prints with `%#v` (a whole `core.Toleration`) are rendered best effort ([`render_toleration`]); a
//! set `tolerationSeconds` is a pointer there, printed as an address Go chooses, here as its value.

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm, Toleration,
};

use super::field_error::{BadValue, FieldError, FieldPath, go_quote};
use super::syntax::{is_dns1123_subdomain, is_qualified_name, is_valid_label_value};

/// The only key `matchFields` accepts (`metav1.ObjectNameField`).
const OBJECT_NAME_FIELD: &str = "metadata.name";
/// `core.TaintEffectNoExecute`.
const NO_EXECUTE: &str = "NoExecute";
/// The taint effects a toleration may name, in Go's order.
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", NO_EXECUTE];
/// The toleration operators, in Go's order.
const TOLERATION_OPERATORS: [&str; 2] = ["Equal", "Exists"];

fn values(rq: &NodeSelectorRequirement) -> &[String] {
    rq.values.as_deref().unwrap_or_default()
}

/// `ValidateNodeSelectorRequirement`: the operator and its values, then the key (a label name).
fn validate_node_selector_requirement(
    rq: &NodeSelectorRequirement,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let n = values(rq).len();
    match rq.operator.as_str() {
        "In" | "NotIn" => {
            if n == 0 {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if n > 0 {
                errs.push(FieldError::forbidden(
                    &path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if n != 1 {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            BadValue::str(other),
            "not a valid selector operator",
        )),
    }
    errs.extend(FieldError::invalid_each(
        &path.child("key"),
        &rq.key,
        is_qualified_name(&rq.key),
    ));
    errs
}

/// `ValidateNodeFieldSelectorRequirement`: In or NotIn with exactly one value, key `metadata.name`, each value
/// a node name (a DNS-1123 subdomain).
fn validate_node_field_selector_requirement(
    rq: &NodeSelectorRequirement,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match rq.operator.as_str() {
        "In" | "NotIn" => {
            if values(rq).len() != 1 {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            BadValue::str(other),
            "not a valid selector operator",
        )),
    }
    if rq.key != OBJECT_NAME_FIELD {
        errs.push(FieldError::invalid(
            &path.child("key"),
            BadValue::str(&rq.key),
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in values(rq).iter().enumerate() {
            errs.extend(FieldError::invalid_each(
                &path.child("values").index(i),
                v,
                is_dns1123_subdomain(v),
            ));
        }
    }
    errs
}

/// `ValidateNodeSelectorTerm`: every `matchExpressions` requirement, then every `matchFields` one.
pub fn validate_node_selector_term(term: &NodeSelectorTerm, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, rq) in term.match_expressions.iter().flatten().enumerate() {
        errs.extend(validate_node_selector_requirement(
            rq,
            &path.child("matchExpressions").index(j),
        ));
    }
    for (j, rq) in term.match_fields.iter().flatten().enumerate() {
        errs.extend(validate_node_field_selector_requirement(
            rq,
            &path.child("matchFields").index(j),
        ));
    }
    errs
}

/// `ValidatePreferredSchedulingTerms`: each weight in 1..=100, each preference a valid term.
pub fn validate_preferred_scheduling_terms(
    terms: &[PreferredSchedulingTerm],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        if term.weight <= 0 || term.weight > 100 {
            errs.push(FieldError::invalid(
                &path.index(i).child("weight"),
                BadValue::Int(term.weight.into()),
                "must be in the range 1-100",
            ));
        }
        errs.extend(validate_node_selector_term(
            &term.preference,
            &path.index(i).child("preference"),
        ));
    }
    errs
}

/// Go's `%#v` of a `core.Toleration` (the value of the Exists-with-value error).
pub fn render_toleration(t: &Toleration) -> String {
    let s = |v: &Option<String>| go_quote(v.as_deref().unwrap_or(""));
    let seconds = match t.toleration_seconds {
        None => "(*int64)(nil)".to_owned(),
        Some(v) => format!("(*int64)({v})"),
    };
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:{seconds}}}",
        s(&t.key),
        s(&t.operator),
        s(&t.value),
        s(&t.effect)
    )
}

/// `ValidateTolerations`: per toleration, the key (a label name, when set), the operator (Exists for an empty
/// key; Equal or empty with a label value, Exists without one), `tolerationSeconds` only with NoExecute, and
/// the effect (when set) one of NoSchedule, PreferNoSchedule, NoExecute.
pub fn validate_tolerations(tolerations: &[Toleration], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let idx = path.index(i);
        let key = t.key.as_deref().unwrap_or("");
        let operator = t.operator.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        let effect = t.effect.as_deref().unwrap_or("");
        if !key.is_empty() {
            errs.extend(FieldError::invalid_each(
                &idx.child("key"),
                key,
                is_qualified_name(key),
            ));
        }
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                &idx.child("operator"),
                BadValue::str(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.toleration_seconds.is_some() && effect != NO_EXECUTE {
            errs.push(FieldError::invalid(
                &idx.child("effect"),
                BadValue::str(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let problems = is_valid_label_value(value);
                if !problems.is_empty() {
                    errs.push(FieldError::invalid(
                        &idx.child("operator"),
                        BadValue::str(value),
                        problems.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        &idx.child("operator"),
                        BadValue::Raw(render_toleration(t)),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                &idx.child("operator"),
                BadValue::str(other),
                &TOLERATION_OPERATORS,
            )),
        }
        if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
            errs.push(FieldError::not_supported(
                &idx.child("effect"),
                BadValue::str(effect),
                &TAINT_EFFECTS,
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn shown(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn term_errors(term: Value) -> Vec<String> {
        let term: NodeSelectorTerm = serde_json::from_value(term).unwrap();
        shown(validate_node_selector_term(&term, &FieldPath::new("t")))
    }

    fn toleration_errors(list: Value) -> Vec<String> {
        let list: Vec<Toleration> = serde_json::from_value(list).unwrap();
        shown(validate_tolerations(&list, &FieldPath::new("tol")))
    }

    #[test]
    fn match_expressions_follow_each_operators_value_rule() {
        let expr = |op: &str, values: Value| {
            term_errors(
                json!({"matchExpressions": [{"key": "zone", "operator": op, "values": values}]}),
            )
        };
        let none: Vec<String> = Vec::new();
        let table: [(&str, Value, Vec<&str>); 12] = [
            ("In", json!(["z1"]), vec![]),
            ("NotIn", json!(["z1", "z2"]), vec![]),
            (
                "In",
                json!([]),
                vec![
                    "t.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ],
            ),
            (
                "NotIn",
                Value::Null,
                vec![
                    "t.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ],
            ),
            ("Exists", Value::Null, vec![]),
            ("DoesNotExist", json!([]), vec![]),
            (
                "Exists",
                json!(["x"]),
                vec![
                    "t.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ],
            ),
            (
                "DoesNotExist",
                json!(["x"]),
                vec![
                    "t.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ],
            ),
            ("Gt", json!(["3"]), vec![]),
            (
                "Lt",
                json!(["1", "2"]),
                vec![
                    "t.matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                ],
            ),
            (
                "Gt",
                json!([]),
                vec![
                    "t.matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                ],
            ),
            (
                "Near",
                json!(["z1"]),
                vec![
                    "t.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
                ],
            ),
        ];
        for (op, values, want) in table {
            assert_eq!(expr(op, values.clone()), want, "{op} {values}");
        }
        assert_eq!(term_errors(json!({})), none);
    }

    #[test]
    fn match_expression_keys_are_label_names() {
        let errs = term_errors(
            json!({"matchExpressions": [{"key": "ok", "operator": "Exists"}, {"key": "-bad", "operator": "Exists"}]}),
        );
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with(
                "t.matchExpressions[1].key: Invalid value: \"-bad\": name part must consist of"
            ),
            "{errs:?}"
        );
    }

    #[test]
    fn match_fields_take_one_node_name() {
        let field = |key: &str, op: &str, values: Value| {
            term_errors(json!({"matchFields": [{"key": key, "operator": op, "values": values}]}))
        };
        assert!(field("metadata.name", "In", json!(["node-1"])).is_empty());
        assert_eq!(
            field("metadata.name", "In", json!(["a", "b"])),
            [
                "t.matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            ]
        );
        assert_eq!(
            field("metadata.name", "Exists", Value::Null),
            ["t.matchFields[0].operator: Invalid value: \"Exists\": not a valid selector operator"]
        );
        assert_eq!(
            field("metadata.labels", "In", json!(["x"])),
            [
                "t.matchFields[0].key: Invalid value: \"metadata.labels\": not a valid field selector key"
            ]
        );
        let bad = field("metadata.name", "NotIn", json!(["Node_1"]));
        assert_eq!(bad.len(), 1);
        assert!(
            bad[0].starts_with("t.matchFields[0].values[0]: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain"),
            "{bad:?}"
        );
        // Expressions first, then fields.
        let both = term_errors(json!({
            "matchFields": [{"key": "x", "operator": "In", "values": ["n"]}],
            "matchExpressions": [{"key": "k", "operator": "Near"}]
        }));
        assert_eq!(
            both,
            [
                "t.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
                "t.matchFields[0].key: Invalid value: \"x\": not a valid field selector key"
            ]
        );
    }

    #[test]
    fn preferred_terms_weigh_1_to_100() {
        let terms = |weights: &[i32]| {
            let list: Vec<PreferredSchedulingTerm> = weights
                .iter()
                .map(|w| {
                    serde_json::from_value(json!({"weight": w, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}))
                        .unwrap()
                })
                .collect();
            shown(validate_preferred_scheduling_terms(
                &list,
                &FieldPath::new("p"),
            ))
        };
        assert!(terms(&[1, 50, 100]).is_empty());
        assert_eq!(
            terms(&[0, 101, -3]),
            [
                "p[0].weight: Invalid value: 0: must be in the range 1-100",
                "p[1].weight: Invalid value: 101: must be in the range 1-100",
                "p[2].weight: Invalid value: -3: must be in the range 1-100"
            ]
        );
        let bad: Vec<PreferredSchedulingTerm> = serde_json::from_value(json!([
            {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In"}]}}
        ]))
        .unwrap();
        assert_eq!(
            shown(validate_preferred_scheduling_terms(
                &bad,
                &FieldPath::new("p")
            )),
            [
                "p[0].preference.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
            ]
        );
    }

    #[test]
    fn tolerations_follow_kubernetes_rules() {
        let ok = json!([
            {"key": "dedicated", "operator": "Exists"},
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"key": "k", "value": "v", "effect": "PreferNoSchedule"},
            {"operator": "Exists"},
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
        ]);
        assert_eq!(toleration_errors(ok), Vec::<String>::new());
        assert_eq!(
            toleration_errors(json!([{"operator": "Equal", "value": "v"}])),
            [
                "tol[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\""
            ]
        );
        assert_eq!(
            toleration_errors(
                json!([{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}])
            ),
            [
                "tol[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"
            ]
        );
        assert_eq!(
            toleration_errors(json!([{"key": "k", "operator": "Exists", "value": "v"}])),
            [
                "tol[0].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'"
            ]
        );
        assert_eq!(
            toleration_errors(json!([{"key": "k", "operator": "Gt", "value": "1"}])),
            ["tol[0].operator: Unsupported value: \"Gt\": supported values: \"Equal\", \"Exists\""]
        );
        assert_eq!(
            toleration_errors(json!([{"key": "k", "operator": "Exists", "effect": "NoAdmit"}])),
            [
                "tol[0].effect: Unsupported value: \"NoAdmit\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
            ]
        );
        let value = toleration_errors(json!([{"key": "k", "operator": "Equal", "value": "bad-"}]));
        assert_eq!(value.len(), 1);
        assert!(
            value[0].starts_with("tol[0].operator: Invalid value: \"bad-\": a valid label must be"),
            "{value:?}"
        );
        let key = toleration_errors(json!([{"key": "a/b/c", "operator": "Exists"}]));
        assert_eq!(key.len(), 1);
        assert!(
            key[0].starts_with("tol[0].key: Invalid value: \"a/b/c\": a qualified name"),
            "{key:?}"
        );
    }
}
