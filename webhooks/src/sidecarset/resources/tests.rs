//! Expected values are written by hand from spec/sidecarset.md §5, §8 and §11 (scenarios 39-42, 54) and from
//! the Go sources they describe; none is produced by the code under test.

use serde_json::json;

use super::calculator::{Value as V, evaluate};
use super::*;
use crate::json::rawpod::RawPod;

fn qty(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn eval(expr: &str) -> Result<String, String> {
    evaluate(expr, &[]).map(|v| v.to_string())
}

fn eval_with(expr: &str, name: &str, value: &str) -> Result<String, String> {
    evaluate(expr, &[(name, V::Quantity(qty(value)))]).map(|v| v.to_string())
}

fn ok(s: &str) -> Result<String, String> {
    Ok(s.to_owned())
}

fn fail(s: &str) -> Result<String, String> {
    Err(s.to_owned())
}

#[test]
fn spec_calculator_examples() {
    assert_eq!(eval("(200m+400m)*50%"), ok("300m"));
    assert_eq!(eval("600Mi*30%"), ok("180Mi"));
    assert_eq!(eval("max(max(200m,400m)*50%, 50m)"), ok("200m"));
}

#[test]
fn kruise_calculator_vectors() {
    let table = [
        ("2 + 3", "5"),
        ("10 - 4", "6"),
        ("3 * 4", "12"),
        ("15 / 3", "5"),
        ("(2 + 3) * 4", "20"),
        ("50%", "0.5"),
        ("100% * 2", "2"),
        ("max(10, 20)", "20"),
        ("min(10, 20)", "10"),
        ("40m + 20m", "60m"),
        ("100Mi - 50Mi", "50Mi"),
        ("2 * 40m", "80m"),
        ("100m / 2", "50m"),
        ("max(40m, 20)", "20"),
        ("min(40m, 20m)", "20m"),
        ("20 - 10", "10"),
        ("10 - 10", "0"),
        ("max(min(10, 20), 15)", "15"),
        ("1e3 + 500", "1500"),
        ("1.5e2 * 2", "300"),
        ("2   +   3", "5"),
        ("2\t+\t3", "5"),
        ("2\n+\n3", "5"),
        ("  2  \t  +  \n  3  ", "5"),
        ("max(  10  ,  20  )", "20"),
    ];
    for (expr, want) in table {
        assert_eq!(eval(expr), ok(want), "{expr}");
    }
    assert_eq!(eval_with("cpu", "cpu", "100m"), ok("100m"));
    assert_eq!(eval_with("cpu * 2", "cpu", "50m"), ok("100m"));
    assert_eq!(eval_with("max(cpu, 200m)", "cpu", "100m"), ok("200m"));
    assert_eq!(eval_with("memory + 100Mi", "memory", "200Mi"), ok("300Mi"));
    assert_eq!(eval_with("max(cpu * 50%, 50m)", "cpu", "200m"), ok("100m"));
}

#[test]
fn precedence_and_associativity() {
    let table = [
        ("2 + 3 * 4", "14"),
        ("2 * 3 + 4", "10"),
        ("10 - 4 - 3", "3"),
        ("100 / 10 / 5", "2"),
        ("8 / 2 * 4", "16"),
        ("2 - -3", "5"),
        ("--3", "3"),
        ("-2 * -3", "6"),
        ("-(2 - 5)", "3"),
        ("-2 + 5", "3"),
        ("2 * (3 + 4) - 1", "13"),
        ("MAX(1, 2) + Min(3, 4)", "5"),
    ];
    for (expr, want) in table {
        assert_eq!(eval(expr), ok(want), "{expr}");
    }
    // Unary minus binds tighter than `*`: -(1m) * 3 is computed on the quantity.
    assert_eq!(eval("0 - -1m * 3"), ok("3m"));
}

#[test]
fn typing_rules() {
    // A number meets a quantity as n*1000 milli, DecimalSI; the left operand's format is kept.
    assert_eq!(eval("1 + 500m"), ok("1500m"));
    assert_eq!(eval("1Gi + 1"), ok("1073741825"));
    assert_eq!(eval("1Gi - 512Mi"), ok("512Mi"));
    assert_eq!(eval("0.5 * 1Gi"), ok("512Mi"));
    assert_eq!(eval("1Gi / 4"), ok("256Mi"));
    assert_eq!(
        eval("1.5m * 1"),
        ok("2m"),
        "milli value rounds up before scaling"
    );
    assert_eq!(eval("1 / 3"), ok("0.3333333333333333"));
    assert_eq!(eval("max(1k, 999)"), ok("1k"));
    assert_eq!(
        eval("min(1, 1000m)"),
        ok("1"),
        "a tie keeps the left operand, here the converted number"
    );
    // A tie keeps the left operand with the text it was written in.
    assert_eq!(eval_with("max(cpu, 1)", "cpu", "+1"), ok("+1"));
    assert_eq!(eval_with("min(cpu, 1)", "cpu", "1000m"), ok("1"));
    assert_eq!(
        eval_with("CPU * 2", "cpu", "1"),
        ok("2"),
        "identifiers are case-insensitive"
    );
    // Other letter suffixes make a number worth 0.
    assert_eq!(eval("5x + 1"), ok("1"));
    assert_eq!(eval("2E + 7"), ok("7"));
    // A NUL byte ends the input.
    assert_eq!(eval("1\0 garbage"), ok("1"));
}

#[test]
fn evaluation_errors() {
    let table = [
        ("40m * 2m", "multiplication of two quantities"),
        ("2 / 40m", "division by quantity"),
        ("40m / 40m", "division by quantity"),
        ("10 / 0", "division by zero"),
        ("100m / 0", "division by zero"),
        ("unknown(1, 2)", "unknown function: unknown"),
        ("Foo(1)", "unknown function: Foo"),
        ("MAX(1)", "max function requires exactly 2 arguments, got 1"),
        ("min(7)", "min function requires exactly 2 arguments, got 1"),
        ("invalidvar * 50%", "undefined variable: invalidvar"),
        ("Mem * 2", "undefined variable: mem"),
        ("-10", "calculation result is negative: -10"),
        ("-100m", "calculation result is negative: -100m"),
        ("10 - 20", "calculation result is negative: -10"),
        ("50m - 100m", "calculation result is negative: -50m"),
        ("0 - 1.5Gi", "calculation result is negative: -1536Mi"),
        ("0 - 1000000", "calculation result is negative: -1e+06"),
        ("0 - 0.5", "calculation result is negative: -0.5"),
        (
            "1e3k",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        // The last recorded error wins, and it wins over a later syntax error.
        ("x + y", "undefined variable: y"),
        ("max(x)", "max function requires exactly 2 arguments, got 1"),
        ("max(x, 1)", "undefined variable: x"),
        ("1m*1m )", "multiplication of two quantities"),
        ("foo + )", "undefined variable: foo"),
    ];
    for (expr, want) in table {
        assert_eq!(eval(expr), fail(want), "{expr}");
    }
    assert_eq!(
        eval_with("cpu - 100m", "cpu", "50m"),
        fail("calculation result is negative: -50m")
    );
}

#[test]
fn syntax_errors_report_line_and_column_after_the_offending_token() {
    let table = [
        ("", 1, 1),
        ("   ", 1, 4),
        ("2 + @", 1, 6),
        ("(2 + 3", 1, 7),
        ("()", 1, 3),
        ("max()", 1, 6),
        ("max(1, 2, 3)", 1, 10),
        ("1 2", 1, 4),
        ("2\n+\n)", 3, 2),
        ("50%m", 1, 5),
        ("1.2.3", 1, 6),
        ("2 * \"2\"", 1, 6),
    ];
    for (expr, line, col) in table {
        assert_eq!(
            eval(expr),
            Err(format!(
                "parse error: syntax error at line {line}, col {col}"
            )),
            "{expr:?}"
        );
    }
    let deep = format!("{}1{}", "(".repeat(1000), ")".repeat(1000));
    assert_eq!(
        eval(&deep),
        fail("parse error: expression nests too deeply")
    );
}

#[test]
fn validation_of_scenario_54_expressions() {
    assert_eq!(
        validate_expression("max(cpu*50%, 50m", "cpu"),
        Err("invalid expression: parse error: syntax error at line 1, col 17".to_owned())
    );
    assert_eq!(
        validate_expression("max(cpu*50%)", "cpu"),
        Err("invalid expression: max function requires exactly 2 arguments, got 1".to_owned())
    );
    assert_eq!(
        validate_expression("invalidvar * 50%", "cpu"),
        Err("invalid expression: undefined variable: invalidvar".to_owned())
    );
    assert_eq!(
        validate_expression("0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)", "cpu"),
        Ok(())
    );
    assert_eq!(validate_expression("max(cpu*50%, 50m)", "cpu"), Ok(()));
    assert_eq!(
        validate_expression("max(memory*50%, 100Mi)", "memory"),
        Ok(())
    );
    assert_eq!(
        validate_expression("memory * 2", "cpu"),
        Err("invalid expression: undefined variable: memory".to_owned())
    );
    assert_eq!(
        validate_expression("cpu - 2", "cpu"),
        Err("invalid expression: calculation result is negative: -1".to_owned())
    );
    assert_eq!(validate_expression("", "cpu"), Ok(()));
}

#[test]
fn regex_errors_carry_go_text() {
    assert_eq!(
        compile_regex("[invalid(regex").err().as_deref(),
        Some("error parsing regexp: missing closing ]: `[invalid(regex`")
    );
    assert!(compile_regex("^large.engine.v.*$").is_ok_and(|r| r.is_match("large.engine.v4")));
}

#[test]
fn go_quote_escapes_like_strconv_quote() {
    assert_eq!(go_quote("^large.engine.v4$"), r#""^large.engine.v4$""#);
    assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
    assert_eq!(go_quote("a\nb\t\u{1}\u{7f}"), r#""a\nb\t\x01\x7f""#);
    assert_eq!(go_quote("\u{a0}\u{200b}é"), r#""\u00a0\u200bé""#);
    assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
}

#[test]
fn memory_variable_needs_the_whole_word() {
    assert!(contains_word("max(memory*50%, 100Mi)", "memory"));
    assert!(contains_word("memory", "memory"));
    assert!(!contains_word("memory_x * 2", "memory"));
    assert!(!contains_word("xmemory", "memory"));
    assert!(!contains_word("MEMORY", "memory"));
}

// ---- apply ---------------------------------------------------------------------------------------------------

fn sidecar(policy: Value) -> SidecarContainer {
    serde_json::from_value(
        json!({"name": "sidecar1", "image": "sidecar:latest", "resourcesPolicy": policy}),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn app(name: &str, limits: Value, requests: Value) -> Value {
    json!({"name": name, "image": "nginx:1.14.2", "resources": {"limits": limits, "requests": requests}})
}

fn pod(init: Vec<Value>, containers: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"initContainers": init, "containers": containers}})
}

fn names<'a>(list: &[&'a str]) -> NameSet<'a> {
    list.iter().copied().collect()
}

/// Runs `f` on the container lists of a pod as the chain reads them.
fn with_containers<T>(pod: &Value, f: impl FnOnce(PodContainers<'_>) -> T) -> T {
    let text = pod.to_string();
    let doc = RawPod::parse_str(&text).unwrap();
    f(PodContainers {
        init_containers: &doc.init_containers,
        containers: &doc.containers,
    })
}

/// Runs [`apply`] for `sidecar` and returns the `resources` it gives (which replace the sidecar's own whole).
fn run(policy: Value, pod: &Value, sidecar_names: &[&str]) -> Result<Value, String> {
    let sc = sidecar(policy);
    let resources = with_containers(pod, |pod| apply(&sc, &names(sidecar_names), pod))?;
    resources.ok_or_else(|| "no policy".to_owned())
}

fn two_apps(first: &str, second: &str) -> Value {
    pod(
        vec![],
        vec![
            app(
                first,
                json!({"cpu": "200m", "memory": "200Mi"}),
                json!({"cpu": "50m", "memory": "100Mi"}),
            ),
            app(
                second,
                json!({"cpu": "400m", "memory": "400Mi"}),
                json!({"cpu": "100m", "memory": "200Mi"}),
            ),
        ],
    )
}

#[test]
fn scenario_39_sum() {
    let policy = json!({
        "targetContainersMode": "sum",
        "targetContainersNameRegex": ".*",
        "resourcesExpr": {"limits": {"cpu": "cpu*50%", "memory": "200Mi"}, "requests": {"cpu": "cpu*50%", "memory": "100Mi"}},
    });
    assert_eq!(
        run(policy, &two_apps("app1", "app2"), &["sidecar1"]),
        Ok(
            json!({"limits": {"cpu": "300m", "memory": "200Mi"}, "requests": {"cpu": "75m", "memory": "100Mi"}})
        )
    );
}

#[test]
fn scenario_40_max_and_regex() {
    let pod = two_apps("large.engine.v4", "large.engine.v8");
    let policy = |mode: &str, regex: &str| {
        json!({
            "targetContainersMode": mode,
            "targetContainersNameRegex": regex,
            "resourcesExpr": {
                "limits": {"cpu": "max(cpu*50%, 50m)", "memory": "200Mi"},
                "requests": {"cpu": "max(cpu*50%, 50m)", "memory": "100Mi"},
            },
        })
    };
    assert_eq!(
        run(policy("max", "^large.engine.v.*$"), &pod, &[]),
        Ok(
            json!({"limits": {"cpu": "200m", "memory": "200Mi"}, "requests": {"cpu": "50m", "memory": "100Mi"}})
        )
    );
    assert_eq!(
        run(policy("sum", "^large.engine.v4$"), &pod, &[]),
        Ok(
            json!({"limits": {"cpu": "100m", "memory": "200Mi"}, "requests": {"cpu": "50m", "memory": "100Mi"}})
        )
    );
}

#[test]
fn scenario_41_unlimited_target() {
    let pod = pod(
        vec![],
        vec![
            app(
                "app1",
                json!({"memory": "200Mi"}),
                json!({"cpu": "100m", "memory": "100Mi"}),
            ),
            app(
                "app2",
                json!({"cpu": "400m", "memory": "400Mi"}),
                json!({"cpu": "50m", "memory": "200Mi"}),
            ),
        ],
    );
    let policy = json!({
        "targetContainersMode": "sum",
        "targetContainersNameRegex": ".*",
        "resourcesExpr": {
            "limits": {"cpu": "cpu*50%", "memory": "memory*30%"},
            "requests": {"cpu": "cpu*30%", "memory": "memory*20%"},
        },
    });
    assert_eq!(
        run(policy, &pod, &[]),
        Ok(json!({"limits": {"memory": "180Mi"}, "requests": {"cpu": "45m", "memory": "60Mi"}}))
    );
}

#[test]
fn scenario_42_no_regex_match() {
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": "^nonexistent$",
                        "resourcesExpr": {"limits": {"cpu": "cpu"}}});
    assert_eq!(
        run(policy, &two_apps("app1", "app2"), &[]),
        Err(r#"no containers match the regex pattern "^nonexistent$""#.to_owned())
    );
}

#[test]
fn invalid_regex_is_reported_with_go_text() {
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": "[invalid(regex",
                        "resourcesExpr": {"limits": {"cpu": "cpu"}}});
    assert_eq!(
        run(policy, &two_apps("app1", "app2"), &[]),
        Err("failed to get target containers: invalid regex pattern \"[invalid(regex\": error parsing regexp: \
             missing closing ]: `[invalid(regex`"
            .to_owned())
    );
}

#[test]
fn targets_are_native_sidecars_and_containers_that_are_not_kruise_sidecars() {
    let mut native = app("native", json!({"cpu": "1"}), json!({}));
    native["restartPolicy"] = json!("Always");
    let plain_init = app("init", json!({"cpu": "10"}), json!({}));
    let mut other_native = app("other-sidecar", json!({"cpu": "20"}), json!({}));
    other_native["restartPolicy"] = json!("Always");
    let pod = pod(
        vec![plain_init, native, other_native],
        vec![
            app("web", json!({"cpu": "2"}), json!({})),
            app("sidecar1", json!({"cpu": "40"}), json!({})),
        ],
    );
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": "e",
                        "resourcesExpr": {"limits": {"cpu": "cpu"}}});
    // native (1) + web (2); "init" is a plain init container, the other two are sidecars of matched sets.
    assert_eq!(
        run(policy, &pod, &["sidecar1", "other-sidecar"]),
        Ok(json!({"limits": {"cpu": "3"}}))
    );
}

#[test]
fn resources_are_replaced_and_an_empty_result_is_an_empty_object() {
    // Only limits are configured, and one target has no cpu limit: nothing is computed.
    let pod = pod(
        vec![],
        vec![
            app("a", json!({"cpu": "1"}), json!({})),
            app("b", json!({}), json!({})),
        ],
    );
    let policy = json!({"targetContainersMode": "max", "targetContainersNameRegex": ".*",
                        "resourcesExpr": {"limits": {"cpu": "cpu"}}});
    assert_eq!(run(policy, &pod, &[]), Ok(json!({})));
    // Neither limits nor requests configured.
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*", "resourcesExpr": {}});
    assert_eq!(run(policy, &pod, &[]), Ok(json!({})));
}

#[test]
fn a_sidecar_without_policy_is_untouched() {
    let sc: SidecarContainer = serde_json::from_value(
        json!({"name": "s", "image": "i", "resources": {"limits": {"cpu": "1"}}}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        with_containers(&two_apps("a", "b"), |pod| apply(&sc, &names(&[]), pod)),
        Ok(None)
    );
}

#[test]
fn missing_requests_count_as_zero_and_zero_totals_still_evaluate() {
    let pod = pod(
        vec![],
        vec![
            app("a", json!({"cpu": "1"}), json!({})),
            app("b", json!({"cpu": "1"}), json!({})),
        ],
    );
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*",
                        "resourcesExpr": {"requests": {"cpu": "cpu + 10m", "memory": "max(memory, 64Mi)"}}});
    assert_eq!(
        run(policy, &pod, &[]),
        Ok(json!({"requests": {"cpu": "10m", "memory": "64Mi"}}))
    );
    // An unknown mode aggregates nothing: no limit is computed, requests start from zero.
    let policy = json!({"targetContainersMode": "avg", "targetContainersNameRegex": ".*",
                        "resourcesExpr": {"limits": {"cpu": "cpu"}, "requests": {"cpu": "cpu + 10m"}}});
    assert_eq!(
        run(policy, &pod, &[]),
        Ok(json!({"requests": {"cpu": "10m"}}))
    );
}

#[test]
fn plain_number_results_become_millicores() {
    let pod = two_apps("a", "b");
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*",
                        "resourcesExpr": {"limits": {"cpu": "0.25"}, "requests": {"memory": "1.9"}}});
    // Without the word `memory` the cpu rule applies, even to the memory field: n*1000 milli, DecimalSI.
    assert_eq!(
        run(policy, &pod, &[]),
        Ok(json!({"limits": {"cpu": "250m"}, "requests": {"memory": "1900m"}}))
    );
}

#[test]
fn the_memory_variable_follows_the_word_not_the_field() {
    let pod = two_apps("a", "b");
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*",
                        "resourcesExpr": {"limits": {"cpu": "memory*50%"}}});
    // Bound to the cpu total (600m) under the name memory.
    assert_eq!(
        run(policy, &pod, &[]),
        Ok(json!({"limits": {"cpu": "300m"}}))
    );
}

#[test]
fn each_expression_has_its_own_error_prefix() {
    let pod = two_apps("a", "b");
    let cases = [
        (
            "limits",
            "cpu",
            "cpu / 0",
            "failed to evaluate CPU limits expression: failed to parse expression \"cpu / 0\": division by zero",
        ),
        (
            "limits",
            "memory",
            "memory * 2Mi",
            "failed to evaluate memory limits expression: failed to parse expression \"memory * 2Mi\": multiplication of two quantities",
        ),
        (
            "requests",
            "cpu",
            "memory_x",
            "failed to evaluate CPU requests expression: failed to parse expression \"memory_x\": undefined variable: memory_x",
        ),
        (
            "requests",
            "memory",
            "memory - 1Gi",
            "failed to evaluate memory requests expression: failed to parse expression \"memory - 1Gi\": calculation result is negative: -724Mi",
        ),
        (
            "limits",
            "cpu",
            "max(cpu, \"1\")",
            "failed to evaluate CPU limits expression: failed to parse expression \"max(cpu, \\\"1\\\")\": parse error: syntax error at line 1, col 11",
        ),
    ];
    for (list, resource, expr, message) in cases {
        let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*",
                            "resourcesExpr": {list: {resource: expr}}});
        assert_eq!(
            run(policy, &pod, &[]),
            Err(message.to_owned()),
            "{list}.{resource}"
        );
    }
}

#[test]
fn max_mode_keeps_the_first_maximum_with_its_text_and_sum_takes_the_first_format() {
    let pod = pod(
        vec![],
        vec![
            app("a", json!({"cpu": "+500m", "memory": "1G"}), json!({})),
            app("b", json!({"cpu": "500m", "memory": "1Gi"}), json!({})),
        ],
    );
    let policy = |mode: &str| {
        json!({"targetContainersMode": mode, "targetContainersNameRegex": ".*",
               "resourcesExpr": {"limits": {"cpu": "cpu", "memory": "memory"}}})
    };
    assert_eq!(
        run(policy("max"), &pod, &[]),
        Ok(json!({"limits": {"cpu": "+500m", "memory": "1Gi"}}))
    );
    assert_eq!(
        run(policy("sum"), &pod, &[]),
        Ok(json!({"limits": {"cpu": "1", "memory": "2073741824"}}))
    );
}

#[test]
fn an_invalid_target_quantity_is_an_error() {
    let pod = pod(vec![], vec![app("a", json!({"cpu": "lots"}), json!({}))]);
    let policy = json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*",
                        "resourcesExpr": {"limits": {"cpu": "cpu"}}});
    assert_eq!(
        run(policy, &pod, &[]),
        Err(
            "decoding container a resources: quantities must match the regular expression \
             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                .to_owned()
        )
    );
}
