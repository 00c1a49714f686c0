//! spec/container-launch-priority.md §3 and §4, scenarios of §8 (the webhook ones also run as fixtures
//! through the server: tests/fixtures/pod-mutate/lp-*).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::barrier::{Step, container_priority, next_priorities, step, wants_reconcile};
use super::*;
use crate::api::pod::SlimPod;

// Step 4 on container trees: what the chain does to each container, as the scenarios state it. The chain
// itself (`crate::pod`) splices the env into the request's text; `pod::tests` checks it end to end.

/// The env entries of a container tree.
fn env_of(container: &Value) -> &[Value] {
    container
        .get("env")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// [`env_priority`] of a container tree.
fn tree_priority(container: &Value) -> Result<i64, String> {
    env_priority(env_of(container))
}

/// What step 4 does to container trees: the name to set and the containers with their barrier env appended.
#[derive(Debug, Clone, PartialEq)]
struct Launch {
    /// The pod name to set (`generateName` pods), `None` to keep it.
    name: Option<String>,
    /// The containers with their barrier env appended, in order.
    containers: Vec<Value>,
}

/// [`plan`] on container trees, applied to them.
///
fn mutate(
    containers: Vec<Value>,
    name: &str,
    generate_name: &str,
    annotation: Option<&str>,
    draw: f64,
) -> Result<Option<Launch>, String> {
    let read = |i: usize| env_priority(env_of(&containers[i]));
    let Some(plan) = plan(
        containers.len(),
        read,
        name,
        generate_name,
        annotation,
        draw,
    )?
    else {
        return Ok(None);
    };
    let containers = containers
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            append_env(&mut c, plan.barrier_env(i));
            c
        })
        .collect();
    Ok(Some(Launch {
        name: plan.name,
        containers,
    }))
}

fn c(name: &str, priority: Option<&str>) -> Value {
    match priority {
        Some(p) => json!({"name": name, "env": [{"name": PRIORITY_ENV, "value": p}]}),
        None => json!({"name": name}),
    }
}

fn keys(launch: &Launch) -> Vec<String> {
    launch
        .containers
        .iter()
        .map(|c| {
            let env = c["env"].as_array().unwrap();
            let last = env.last().unwrap();
            assert_eq!(last["name"], BARRIER_ENV);
            last["valueFrom"]["configMapKeyRef"]["key"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn atoi_reads_what_go_reads_and_words_errors_as_go() {
    assert_eq!(atoi("10"), Ok(10));
    assert_eq!(atoi("+7"), Ok(7));
    assert_eq!(atoi("-1"), Ok(-1));
    assert_eq!(atoi("-0"), Ok(0));
    assert_eq!(atoi("007"), Ok(7));
    assert_eq!(atoi("9223372036854775807"), Ok(i64::MAX));
    assert_eq!(atoi("-9223372036854775808"), Ok(i64::MIN));
    for bad in [
        "", "abc", " 5", "5 ", "5.0", "1e3", "+", "-", "0x10", "1_000", "٣",
    ] {
        let err = atoi(bad).unwrap_err();
        assert!(err.ends_with(": invalid syntax"), "{bad:?}: {err}");
    }
    assert_eq!(
        atoi("abc").unwrap_err(),
        r#"strconv.Atoi: parsing "abc": invalid syntax"#
    );
    assert_eq!(
        atoi("9223372036854775808").unwrap_err(),
        r#"strconv.Atoi: parsing "9223372036854775808": value out of range"#
    );
    assert_eq!(
        atoi("-99999999999999999999").unwrap_err(),
        r#"strconv.Atoi: parsing "-99999999999999999999": value out of range"#
    );
}

#[test]
fn the_last_priority_env_wins_and_each_one_is_parsed() {
    let two = json!({"name": "a", "env": [{"name": PRIORITY_ENV, "value": "3"}, {"name": "X", "value": "y"},
        {"name": PRIORITY_ENV, "value": "8"}]});
    assert_eq!(container_priority_of(&two), Ok(8));
    let bad_first = json!({"name": "a", "env": [{"name": PRIORITY_ENV, "value": "x"}, {"name": PRIORITY_ENV, "value": "8"}]});
    assert!(container_priority_of(&bad_first).is_err());
    assert_eq!(
        container_priority_of(&json!({"name": "a", "env": null})),
        Ok(0)
    );
}

fn container_priority_of(c: &Value) -> Result<i64, String> {
    tree_priority(c)
}

#[test]
fn scenarios_1_to_9_decide_the_keys() {
    let none = |cs: Vec<Value>, ann: Option<&str>| mutate(cs, "fake", "", ann, 0.5).unwrap();
    // 1: one container.
    assert_eq!(none(vec![c("a", Some("10"))], None), None);
    // 2: no priorities.
    assert_eq!(none(vec![c("a", None), c("b", None)], None), None);
    // 3, 4: Ordered, env ignored.
    let ordered = none(
        vec![c("a", None), c("b", Some("100")), c("c", None)],
        Some(ORDERED),
    )
    .unwrap();
    assert_eq!(keys(&ordered), ["p_0", "p_-1", "p_-2"]);
    assert_eq!(
        ordered.containers[1]["env"][0]["value"], "100",
        "the user's env stays"
    );
    // 5: exact value only.
    assert_eq!(
        none(vec![c("a", None), c("b", None)], Some("ordered")),
        None
    );
    // 6: env priorities, every container gets the env.
    let env = none(
        vec![c("a", Some("1000")), c("b", Some("100")), c("c", None)],
        None,
    )
    .unwrap();
    assert_eq!(keys(&env), ["p_1000", "p_100", "p_0"]);
    assert_eq!(
        env.containers[0]["env"][1]["valueFrom"]["configMapKeyRef"]["name"],
        "fake-barrier"
    );
    // 7: all equal.
    assert_eq!(none(vec![c("a", Some("5")), c("b", Some("5"))], None), None);
    // 8: bad value.
    let err = mutate(
        vec![c("a", Some("abc")), c("b", None)],
        "fake",
        "",
        None,
        0.5,
    )
    .unwrap_err();
    assert!(err.contains("invalid syntax"), "{err}");
    // 9: negatives.
    let neg = none(vec![c("a", Some("-1")), c("b", Some("0"))], None).unwrap();
    assert_eq!(keys(&neg), ["p_-1", "p_0"]);
    assert_eq!(neg.name, None, "a named pod keeps its name");
}

#[test]
fn an_existing_barrier_env_is_kept_and_another_appended() {
    let a = json!({"name": "a", "env": [{"name": BARRIER_ENV, "value": "old"}, {"name": PRIORITY_ENV, "value": "1"}]});
    let launch = mutate(vec![a, c("b", None)], "fake", "", None, 0.5)
        .unwrap()
        .unwrap();
    let env = launch.containers[0]["env"].as_array().unwrap();
    assert_eq!(env.len(), 3);
    assert_eq!(env[0], json!({"name": BARRIER_ENV, "value": "old"}));
}

#[test]
fn scenario_10_a_generate_name_pod_gets_its_name_now() {
    let launch = mutate(
        vec![c("a", Some("1")), c("b", Some("0"))],
        "",
        "web-",
        None,
        0.25,
    )
    .unwrap()
    .unwrap();
    let name = launch.name.clone().unwrap();
    assert_eq!(name.len(), "web-".len() + 5);
    assert!(name.starts_with("web-"));
    assert!(
        name[4..].bytes().all(|b| NAME_ALPHABET.contains(&b)),
        "{name}"
    );
    for container in &launch.containers {
        let last = container["env"].as_array().unwrap().last().unwrap();
        assert_eq!(
            last["valueFrom"]["configMapKeyRef"]["name"],
            format!("{name}-barrier")
        );
    }
    // Neither name nor generateName: the ConfigMap name is `-barrier` (the API server refuses the pod).
    let nameless = mutate(vec![c("a", Some("1")), c("b", None)], "", "", None, 0.25)
        .unwrap()
        .unwrap();
    assert_eq!(nameless.name, None);
    assert_eq!(
        nameless.containers[0]["env"][1]["valueFrom"]["configMapKeyRef"]["name"],
        "-barrier"
    );
}

#[test]
fn generated_names_cut_the_base_to_58_and_differ_between_draws() {
    let long = "x".repeat(80);
    assert_eq!(generated_name(&long, 0.1).len(), 63);
    let multibyte = "é".repeat(40); // 80 bytes: the cut lands on a character boundary.
    let name = generated_name(&multibyte, 0.1);
    assert_eq!(name.len(), 58 + 5);
    let drawn: BTreeSet<String> = (0..1000)
        .map(|i| generated_name("a-", f64::from(i) / 1000.0))
        .collect();
    assert!(drawn.len() > 990, "{} distinct of 1000", drawn.len());
    assert_eq!(generated_name("a-", 0.3), generated_name("a-", 0.3));
    // Out-of-range draws are clamped, not a panic.
    let _ = generated_name("a-", f64::NAN);
    let _ = generated_name("a-", 7.0);
}

#[test]
fn a_hundred_containers_and_ordered_without_containers() {
    let many: Vec<Value> = (0..100)
        .map(|i| c(&format!("c{i}"), Some(&i.to_string())))
        .collect();
    let launch = mutate(many, "fake", "", None, 0.5).unwrap().unwrap();
    assert_eq!(keys(&launch).len(), 100);
    assert_eq!(keys(&launch)[99], "p_99");
    // Ordered skips the all-equal test: no containers, yet the name is fixed (§3.2 step 2 goes to step 5).
    let empty = mutate(vec![], "", "job-", Some(ORDERED), 0.5)
        .unwrap()
        .unwrap();
    assert!(empty.name.unwrap().starts_with("job-"));
}

// --- §4: the barrier controller ---

fn slim(containers: &[(&str, Option<i64>)], ready: &[&str], extra: Value) -> SlimPod {
    let mut pod = json!({
        "metadata": {"name": "fake-pod", "namespace": "default", "uid": "u1"},
        "spec": {"containers": containers.iter().map(|(n, p)| match p {
            Some(p) => json!({"name": n, "env": [{"name": BARRIER_ENV, "valueFrom": {"configMapKeyRef":
                {"name": "fake-pod-barrier", "key": barrier_key(*p)}}}]}),
            None => json!({"name": n}),
        }).collect::<Vec<_>>()},
        "status": {"containerStatuses": ready.iter().map(|n| json!({"name": n, "ready": true})).collect::<Vec<_>>()}
    });
    json_patch::merge(&mut pod, &extra);
    serde_json::from_value(pod).unwrap()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

/// Scenario 14's containers: a p_3, b p_5, c p_0, d none, e p_-1, f p_3 (or f p_4 for scenario 18).
fn scenario_pod(f: i64, ready: &[&str]) -> SlimPod {
    slim(
        &[
            ("a", Some(3)),
            ("b", Some(5)),
            ("c", Some(0)),
            ("d", None),
            ("e", Some(-1)),
            ("f", Some(f)),
        ],
        ready,
        json!({}),
    )
}

#[test]
fn scenario_18_find_next_priorities() {
    assert_eq!(next_priorities(&scenario_pod(4, &["b"])), [-1, 0, 3, 4]);
    assert_eq!(next_priorities(&scenario_pod(3, &["b", "f"])), [-1, 0, 3]);
}

#[test]
fn scenarios_14_to_17_release_one_level_at_a_time() {
    // 14: nothing ready, empty barrier: p_5 (handled twice: the second time it waits).
    let pod = scenario_pod(3, &[]);
    assert_eq!(
        step(&pod, &set(&[])),
        Step::Release {
            key: "p_5".into(),
            complete: false
        }
    );
    assert_eq!(step(&pod, &set(&["p_5"])), Step::Wait);
    // 15: b and f ready, a starting: next [-1, 0, 3], p_3 already there: wait.
    let pod = scenario_pod(3, &["b", "f"]);
    assert_eq!(next_priorities(&pod), [-1, 0, 3]);
    assert_eq!(step(&pod, &set(&["p_5", "p_3"])), Step::Wait);
    // 16: a, b, f ready: next [-1, 0]: p_0 added, not completed.
    let pod = scenario_pod(3, &["a", "b", "f"]);
    assert_eq!(
        step(&pod, &set(&["p_5", "p_3"])),
        Step::Release {
            key: "p_0".into(),
            complete: false
        }
    );
    // 17: a, b, c, f ready: next [-1]: p_-1 added and completed.
    let pod = scenario_pod(3, &["a", "b", "c", "f"]);
    assert_eq!(
        step(&pod, &set(&["p_5", "p_3", "p_0"])),
        Step::Release {
            key: "p_-1".into(),
            complete: true
        }
    );
    // Nothing pending, or the lowest level already released: completed.
    let pod = scenario_pod(3, &["a", "b", "c", "e", "f"]);
    assert_eq!(step(&pod, &set(&["p_5"])), Step::Complete);
    assert_eq!(step(&scenario_pod(3, &[]), &set(&["p_-1"])), Step::Complete);
}

#[test]
fn scenarios_19_to_21_which_pods_are_reconciled() {
    let pending = scenario_pod(3, &["b", "f"]);
    // 20: no ConfigMap known: reconciled.
    assert!(wants_reconcile(&pending, None));
    // 21: the highest pending key (p_3) is there: not reconciled (no work while a container starts).
    assert!(!wants_reconcile(&pending, Some(&set(&["p_5", "p_3"]))));
    assert!(wants_reconcile(&pending, Some(&set(&["p_5"]))));
    // 19: completed, or ContainersReady.
    let done = slim(
        &[("a", Some(1)), ("b", Some(0))],
        &[],
        json!({"metadata": {"annotations": {COMPLETED_ANNOTATION: "true"}}}),
    );
    assert!(!wants_reconcile(&done, None));
    let ready = slim(
        &[("a", Some(1)), ("b", Some(0))],
        &[],
        json!({"status": {"conditions": [{"type": "ContainersReady", "status": "True"}]}}),
    );
    assert!(!wants_reconcile(&ready, None));
    // No barrier env at all: nothing to do.
    assert!(!wants_reconcile(
        &slim(&[("a", None), ("b", None)], &[], json!({})),
        None
    ));
}

#[test]
fn odd_barrier_keys_read_as_zero_and_an_env_without_a_key_gates_nothing() {
    let odd = |key: &str| -> SlimPod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "env": [{"name": BARRIER_ENV, "valueFrom": {"configMapKeyRef": {"name": "p-barrier", "key": key}}}]},
            {"name": "b", "env": [{"name": BARRIER_ENV, "value": "literal"}]}]}}))
        .unwrap()
    };
    for key in ["p_x", "p", "", "p_99999999999999999999"] {
        let pod = odd(key);
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(container_priority(&spec.containers[0]), Some(0), "{key:?}");
        assert_eq!(container_priority(&spec.containers[1]), None);
        assert_eq!(next_priorities(&pod), [0]);
    }
}

#[test]
fn the_barrier_env_text_is_the_tree_as_serde_json_writes_it() {
    for (name, p) in [("fake", 0), ("web-x7k2p", -3), ("odd\"name\\", i64::MAX)] {
        let text = barrier_env_text(name, p);
        assert_eq!(text, barrier_env(name, p).to_string());
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            barrier_env(name, p)
        );
    }
}
