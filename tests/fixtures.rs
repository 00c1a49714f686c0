//! Every case under tests/fixtures/<webhook>/<case>/: review.json (the AdmissionReview), cluster.yaml
//! (optional cluster state), expected.json (written by hand from the spec's scenarios). Each case runs through
//! the real Router at `path` and, unless `"review": false`, through the `review` chain, which also evaluates
//! the shipped rules and selectors as the apiserver would.

mod common;

use std::path::Path;
use std::sync::Arc;

use assert_json_diff::assert_json_eq;
use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission;
use kruise_webhooks::fixture::FixtureCluster;
use serde_json::{Value, json};

fn cases(webhook: &str) -> Vec<std::path::PathBuf> {
    let dir = common::root().join("tests/fixtures").join(webhook);
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

fn cluster(case: &Path) -> FixtureCluster {
    let mut cluster = FixtureCluster::default();
    let file = case.join("cluster.yaml");
    if file.exists() {
        cluster
            .load_str(&common::read(&file), &file.display().to_string())
            .unwrap();
    }
    cluster
}

/// Compares a response (uid checked separately) with the expected `{allowed, status}`; with
/// `message_prefix`, the message is checked by prefix.
fn check_response(
    case: &str,
    actual: &Value,
    expected: &Value,
    message_prefix: Option<&str>,
    uid: &str,
) {
    assert_eq!(actual["uid"], uid, "{case}: uid echoed");
    let mut actual = actual.clone();
    actual.as_object_mut().unwrap().remove("uid");
    if let Some(prefix) = message_prefix {
        let message = actual["status"]
            .as_object_mut()
            .unwrap()
            .remove("message")
            .unwrap_or_default();
        assert!(
            message.as_str().unwrap_or("").starts_with(prefix),
            "{case}: message {message} lacks prefix {prefix}"
        );
    }
    println!("{case}: {actual}");
    assert_json_eq!(actual, expected.clone());
}

async fn run_case(case: &Path) {
    let name = case.file_name().unwrap().to_string_lossy().to_string();
    let review_text = common::read(&case.join("review.json"));
    let expected: Value = serde_json::from_str(&common::read(&case.join("expected.json"))).unwrap();
    let gates = expected["gates"].as_str().unwrap_or("");
    let uid = serde_json::from_str::<Value>(&review_text).unwrap()["request"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let prefix = expected["message_prefix"].as_str();

    // 1. The server's handler at the path.
    let audit_dir = tempfile::tempdir().unwrap();
    let mut state = common::state(cluster(case), gates);
    state.audit = Arc::new(kruise_webhook::audit::AuditLog::open(audit_dir.path()).unwrap());
    let path = expected["path"].as_str().unwrap();
    let (status, body) =
        common::post(&state, path, review_text.clone(), Some("application/json")).await;
    assert_eq!(status, 200, "{name}: HTTP status");
    assert_eq!(body["apiVersion"], "admission.k8s.io/v1", "{name}");
    assert_eq!(body["kind"], "AdmissionReview", "{name}");
    check_response(
        &name,
        &body["response"],
        &expected["response"],
        prefix,
        &uid,
    );

    let metrics = state.metrics.encode();
    if let Some(lines) = expected["metrics"].as_array() {
        for line in lines {
            assert!(
                metrics.contains(line.as_str().unwrap()),
                "{name}: metric {line} missing from\n{metrics}"
            );
        }
        if lines.is_empty() {
            assert!(
                !metrics.lines().any(|l| l.contains("deletion_protection{")),
                "{name}: no protection metric expected:\n{metrics}"
            );
        }
    }
    let audit = std::fs::read_to_string(audit_dir.path().join("protection.log")).unwrap();
    match expected.get("audit") {
        Some(Value::String(line)) => assert_eq!(audit, format!("{line}\n"), "{name}: audit log"),
        Some(Value::Null) => assert_eq!(audit, "", "{name}: no audit line expected"),
        _ => {}
    }

    // 2. The offline chain, with the apiserver's rule and selector matching.
    if expected["review"] != json!(false) {
        let gates: FeatureGates = gates.parse().unwrap();
        let decoded = admission::decode_review(review_text.as_bytes()).unwrap();
        let fixture = Arc::new(cluster(case));
        if let Some(calls) = expected["review_calls"].as_array() {
            let names: Vec<&str> =
                kruise_webhook::review::webhooks_for(&fixture, &gates, &decoded.request)
                    .iter()
                    .map(|s| s.name)
                    .collect();
            let want: Vec<&str> = calls.iter().map(|c| c.as_str().unwrap()).collect();
            assert_eq!(names, want, "{name}: webhooks the apiserver would call");
        }
        let response = kruise_webhook::review::review(fixture, &gates, &decoded).await;
        let want = expected
            .get("review_response")
            .unwrap_or(&expected["response"]);
        check_response(
            &name,
            &serde_json::to_value(&response).unwrap(),
            want,
            prefix,
            &uid,
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn deletion_protection_scenarios() {
    let cases = cases("deletion_protection");
    assert!(
        cases.len() >= 26,
        "every scenario of spec/deletion-protection.md §9 has a case"
    );
    for case in cases {
        run_case(&case).await;
    }
}
