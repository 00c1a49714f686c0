//! `kruise-webhook explain` through files (docs/explain.md): one test per reason of §4, the JSON form, the
//! exit codes, and the README's examples printed verbatim.

use std::path::Path;
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn explain(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kruise-webhook"))
        .arg("explain")
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

/// The text explanation of `tests/explain/<pod>.yaml` against `tests/explain/cluster.yaml`.
fn text(pod: &str) -> String {
    let out = explain(&[
        "--objects",
        "tests/explain/cluster.yaml",
        "--pod",
        &format!("tests/explain/{pod}.yaml"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json(pod: &str) -> serde_json::Value {
    let out = explain(&[
        "--objects",
        "tests/explain/cluster.yaml",
        "--pod",
        &format!("tests/explain/{pod}.yaml"),
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[track_caller]
fn has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "missing line {line:?} in:\n{text}"
    );
}

#[test]
fn scenario_1_webhooks_called() {
    let t = text("web");
    has_line(&t, "webhook mpod.kb.io CREATE pods: called");
    has_line(&t, "webhook vpod.kb.io DELETE pods: called");
    has_line(
        &t,
        "webhook vpodeviction.kb.io CREATE pods/eviction: called",
    );
}

#[test]
fn scenario_3_kube_system_is_excluded_by_the_namespace_selector() {
    let t = text("system");
    has_line(
        &t,
        r#"webhook mpod.kb.io CREATE pods: not called: namespaceSelector: kubernetes.io/metadata.name wants none of ["kube-system", "kruise-system"], the namespace has "kube-system""#,
    );
    // Every SidecarSet's first reason is then that the pod webhook is not called.
    has_line(
        &t,
        "sidecarset f-log: not injected: webhook not called: mpod.kb.io (namespaceSelector)",
    );
    let j = json("system");
    let w = &j["webhooks"][0];
    assert_eq!(w["called"], false);
    assert_eq!(w["reason"], "namespaceSelector");
    assert_eq!(w["detail"]["key"], "kubernetes.io/metadata.name");
    assert_eq!(w["detail"]["operator"], "NotIn");
    assert_eq!(w["detail"]["actual"], "kube-system");
    assert_eq!(j["sidecarSets"][0]["reason"], "webhookNotCalled");
}

#[test]
fn scenario_2b_configurations_as_installed_in_objects() {
    let out = explain(&[
        "--objects",
        "tests/explain/cluster.yaml",
        "--objects",
        "tests/explain/installed/configurations.yaml",
        "--pod",
        "tests/explain/web.yaml",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let t = String::from_utf8_lossy(&out.stdout);
    has_line(
        &t,
        "webhook mpod.kb.io CREATE pods: not called: notInstalled: no webhook configuration in --objects has it",
    );
    has_line(
        &t,
        r#"webhook vpod.kb.io DELETE pods: not called: namespaceSelector: team wants "other", the namespace has "shop""#,
    );
    has_line(
        &t,
        "webhook vpodeviction.kb.io CREATE pods/eviction: called",
    );
    has_line(
        &t,
        "sidecarset f-log: not injected: webhook not called: mpod.kb.io (notInstalled)",
    );
    has_line(
        &t,
        // mpod.kb.io not called: the pod is created without the related-pub annotation, which is all the gate
        // reads, so its PUB does not guard it (the whole chain follows the configurations as installed).
        "podunavailablebudget web-pub: selects the pod but does not guard it: the pod has no pub.kruise.io/related-pub annotation, which mpod.kb.io writes when it admits a pod (created without the webhook, or before the PUB); recreate the pod to protect it (1 disruption(s) allowed now); deletion allowed (no webhook is called for it); eviction allowed",
    );
}

#[test]
fn scenario_5_namespace_pinned_elsewhere() {
    has_line(
        &text("web"),
        r#"sidecarset b-prod-only: not injected: namespace: pinned to prod, the pod is in "shop""#,
    );
}

#[test]
fn scenario_6_namespace_selector_label_and_missing_namespace() {
    has_line(
        &text("scratch"),
        r#"sidecarset a-team-only: not injected: namespaceSelector: team wants "shop", the namespace has no such label"#,
    );
    has_line(
        &text("nowhere"),
        r#"sidecarset a-team-only: not injected: namespaceSelector: the pod's Namespace "nowhere" does not exist"#,
    );
}

#[test]
fn scenario_7_selector_label_that_differs_and_no_selector() {
    let t = text("web");
    has_line(
        &t,
        r#"sidecarset c-frontend: not injected: selector: tier wants "frontend", the pod has "backend""#,
    );
    has_line(
        &t,
        "sidecarset d-no-selector: not injected: selector: none is set, it selects nothing",
    );
    has_line(
        &text("canary"),
        r#"sidecarset c-frontend: not injected: selector: tier wants "frontend", the pod has no such label"#,
    );
    let j = json("web");
    let c = j["sidecarSets"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "c-frontend"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(c["injected"], false);
    assert_eq!(c["reason"], "selector");
    assert_eq!(
        c["detail"],
        serde_json::json!({"key": "tier", "operator": "In", "wanted": ["frontend"], "actual": "backend"})
    );
}

#[test]
fn scenario_8_paused() {
    has_line(
        &text("web"),
        "sidecarset e-paused: not injected: paused: spec.injectionStrategy.paused is true (its selector matches the pod)",
    );
}

#[test]
fn scenario_9_injected_with_its_revision() {
    has_line(&text("web"), "sidecarset f-log: injected: revision latest");
    let j = json("web");
    let f = j["sidecarSets"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "f-log"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(f["injected"], true);
    assert_eq!(f["reason"], "injected");
    assert_eq!(f["revision"], serde_json::Value::Null);
}

#[test]
fn scenario_9_the_revision_the_injection_strategy_chose() {
    has_line(
        &text("pinned"),
        "sidecarset h-pinned: injected: revision h-pinned-01234 (chosen by spec.injectionStrategy.revision)",
    );
    let j = json("pinned");
    let h = j["sidecarSets"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "h-pinned"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(h["revision"], "h-pinned-01234");
}

#[test]
fn scenarios_10_and_11_already_injected_and_container_name_taken() {
    has_line(
        &text("taken"),
        "sidecarset f-log: injected: revision latest; already injected: the pod names it in kruise.io/sidecarset-injected-list; container name taken: replaces the pod's log-agent",
    );
    let j = json("taken");
    let f = j["sidecarSets"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "f-log"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(f["alreadyInjected"], true);
    assert_eq!(f["replacesContainers"], serde_json::json!(["log-agent"]));
}

#[test]
fn scenario_12_a_canary_replaces_its_base() {
    let t = text("canary");
    has_line(
        &t,
        "sidecarset g-mesh: not injected: canary: SidecarSet g-mesh-canary replaces it",
    );
    has_line(&t, "sidecarset g-mesh-canary: injected: revision latest");
}

#[test]
fn scenarios_13_and_14_the_budget_and_what_a_disruption_gets() {
    has_line(
        &text("scratch"),
        "podunavailablebudget: none guards the pod",
    );
    has_line(
        &text("web"),
        "podunavailablebudget web-pub: guards the pod: 1 disruption(s) allowed now (3 available, 2 desired); deletion allowed; eviction allowed",
    );
    let j = json("web");
    let b = &j["podUnavailableBudget"];
    assert_eq!(b["name"], "web-pub");
    assert_eq!(b["unavailableAllowed"], 1);
    assert_eq!(b["deletion"]["allowed"], true);
    assert_eq!(b["eviction"]["allowed"], true);
    assert_eq!(b["guards"], true);
    // By targetRef: a CloneSet's pod (the CloneSet not in --objects: it is added, so the owner resolves).
    has_line(
        &text("cloneset"),
        "podunavailablebudget cart-pub: guards the pod: 2 disruption(s) allowed now (4 available, 2 desired)",
    );
}

#[test]
fn scenarios_15_and_16_workload_spread() {
    has_line(&text("web"), "workloadspread: none places the pod");
    // The README's CloneSet example covers the subset and the room left; its JSON form here.
    let out = explain(&[
        "--objects",
        "examples/explain/cluster.yaml",
        "--pod",
        "examples/explain/cloneset.yaml",
        "-o",
        "json",
    ]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        j["workloadSpread"]["subsets"],
        serde_json::json!([
            {"name": "zone-a", "room": 0, "counted": true},
            {"name": "zone-b", "room": null, "counted": true},
        ])
    );
    assert_eq!(j["workloadSpread"]["subset"], "zone-b");
}

#[test]
fn scenario_17_launch_priority_when_it_applies() {
    has_line(
        &text("ordered"),
        "launchpriority: applied: containers start by priority, highest first: first waits for p_0, second waits for p_-1",
    );
    assert!(!text("web").contains("launchpriority"));
    let j = json("ordered");
    assert_eq!(
        j["launchPriority"]["containers"],
        serde_json::json!([{"name": "first", "barrierKey": "p_0"}, {"name": "second", "barrierKey": "p_-1"}])
    );
    assert_eq!(json("web")["launchPriority"], serde_json::Value::Null);
}

#[test]
fn scenario_18_native_sidecar_conversion_when_it_applies() {
    has_line(
        &text("native"),
        "nativesidecar: converted: proxy (to the end of initContainers with restartPolicy Always)",
    );
    assert!(!text("web").contains("nativesidecar"));
    assert_eq!(
        json("native")["nativeSidecar"]["containers"],
        serde_json::json!([{"name": "proxy"}])
    );
}

#[test]
fn a_job_template_is_explained_as_the_pod_its_controller_creates() {
    let t = text("job");
    has_line(&t, "pod shop/report- (from Job): create allowed");
    has_line(&t, "sidecarset c-frontend: injected: revision latest");
    // Not created yet: no deletion or eviction is asked about.
    has_line(
        &t,
        "podunavailablebudget web-pub: guards the pod: 1 disruption(s) allowed now (3 available, 2 desired)",
    );
    let j = json("job");
    assert_eq!(
        j["pod"],
        serde_json::json!({"namespace": "shop", "name": "report-", "from": "Job"})
    );
    assert_eq!(
        j["podUnavailableBudget"]["deletion"],
        serde_json::Value::Null
    );
}

#[test]
fn the_json_form_has_the_documented_keys() {
    let j = json("web");
    let mut keys: Vec<&str> = j
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "create",
            "launchPriority",
            "nativeSidecar",
            "pod",
            "podUnavailableBudget",
            "sidecarSets",
            "webhooks",
            "workloadSpread"
        ]
    );
    // Every message is the text line's last part.
    let t = text("web");
    for s in j["sidecarSets"].as_array().into_iter().flatten() {
        let line = format!(
            "sidecarset {}: {}",
            s["name"].as_str().unwrap_or(""),
            s["message"].as_str().unwrap_or("")
        );
        has_line(&t, &line);
    }
}

#[test]
fn exit_codes() {
    // No pod template: 2, one line on stderr, nothing on stdout.
    let out = explain(&[
        "--objects",
        "tests/explain/cluster.yaml",
        "--pod",
        "tests/explain/configmap.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "kruise-webhook explain: a ConfigMap has no pod to explain (want a Pod, Deployment, ReplicaSet, StatefulSet, Job, CloneSet or Advanced StatefulSet)\n"
    );
    // A file that does not exist: 2.
    let out = explain(&["--pod", "tests/explain/absent.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("kruise-webhook explain: tests/explain/absent.yaml: ")
    );
    // Bad --objects: 2.
    let out = explain(&[
        "--objects",
        "tests/explain/absent",
        "--pod",
        "tests/explain/web.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // Bad flags: 64... clap's own usage error is 2; an unknown output format is clap's.
    let out = explain(&["--pod", "tests/explain/web.yaml", "-o", "yaml"]);
    assert_ne!(out.status.code(), Some(0));
    // A pod nothing acts on still exits 0.
    assert!(text("system").contains("not injected"));
}

/// The README's `console` blocks that run `kruise-webhook explain`: each prints exactly what the README shows.
#[test]
fn the_readme_examples_print_what_the_readme_shows() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut checked = 0;
    let mut rest = readme.as_str();
    while let Some(start) = rest.find("```console\n$ kruise-webhook explain ") {
        let block = &rest[start + "```console\n".len()..];
        let end = block.find("```\n").expect("the block ends");
        let (command, shown) = block[..end].split_once('\n').expect("a command line");
        let args: Vec<&str> = command
            .trim_start_matches("$ kruise-webhook explain ")
            .split_whitespace()
            .collect();
        let out = explain(&args);
        assert_eq!(out.status.code(), Some(0), "{command}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), shown, "{command}");
        checked += 1;
        rest = &block[end..];
    }
    assert!(checked >= 4, "the README shows {checked} explain examples");
}
