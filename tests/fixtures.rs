//! Every case under tests/fixtures/<webhook>/<case>/: review.json (the AdmissionReview), cluster.yaml
//! (optional cluster state), expected.json (written by hand from the spec's scenarios). Each case runs through
//! the real Router at `path` and, unless `"review": false`, through the `review` chain, which also evaluates
//! the shipped rules and selectors as the apiserver would.
//!
//! Keys of expected.json:
//! - `description`: the scenario, quoted; `path`: the route to POST to; `gates`: `--feature-gates` text.
//! - `response`: the response without `uid` (checked separately), `patch` and `patchType` (checked through
//!   `patched`). In a case with a `patched` key, `warnings` and `auditAnnotations` are compared only when
//!   `response` lists them (DECISIONS 18 leaves their wording to us).
//! - `message_prefix`, `message_suffix`, `message_contains` (substrings; `[]` accepts any message) and
//!   `error_count` (how many field errors an aggregated validation message holds: several print as
//!   `[e1, e2]`, one prints bare; counted by the `<path>: <Type>` markers of Kubernetes field errors): when
//!   any is given, `response.status.message` is checked by these instead of by equality.
//! - `patched`: `null` when the response must carry no patch; otherwise the complete object the response's
//!   JSONPatch yields when applied to `request.object`, compared whole, so fields the request had must survive.
//!   The `updateTimestamp` inside the pod annotations `kruise.io/sidecarset-hash` and
//!   `kruise.io/sidecarset-hash-without-image` is the server's clock: every `"updateTimestamp":"<RFC 3339>"`
//!   there whose time lies between the start of the case and the check (UTC, whole seconds, `Z`) is replaced by
//!   `"updateTimestamp":"<now>"` before comparing, so expected files write `<now>` for entries written by this
//!   request and keep literal times (or `null`) for entries that must survive unchanged.
//! - `review`: `false` skips the review chain. `review_response` / `review_patched` replace `response` /
//!   `patched` for the chain's combined answer (whose patch is the diff of the request object and the object
//!   after every mutating webhook); the message checks above apply to the chain only without
//!   `review_response`. `review_calls`: the webhooks the apiserver would call.
//! - `metrics`, `audit`: deletion-protection and PUB counters and audit log line.
//! - `status_writes`: the status writes the review chain would perform (`review` prints them, the server
//!   commits them), each `{kind, namespace, name, resourceVersion, pod, operation, status}`; the times of
//!   a PUB's `disruptedPods` / `unavailablePods` written by this request read `<now>`. Absent: none.

mod common;

use std::path::Path;
use std::sync::Arc;

use assert_json_diff::assert_json_eq;
use base64::Engine;
use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission;
use kruise_webhooks::fixture::FixtureCluster;
use serde_json::{Value, json};

fn cases(webhook: &str) -> Vec<std::path::PathBuf> {
    common::subdirs(&common::root().join("tests/fixtures").join(webhook))
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

/// The type markers of Kubernetes field errors (`<path>: <Type>[: <value>]: <detail>`).
const FIELD_ERROR_TYPES: &[&str] = &[
    ": Required value",
    ": Invalid value",
    ": Unsupported value",
    ": Internal error",
    ": Not found",
    ": Duplicate value",
    ": Forbidden",
    ": Too long",
    ": Too many",
];

/// How a response's message is checked when not by equality.
#[derive(Default)]
struct MessageChecks<'a> {
    prefix: Option<&'a str>,
    suffix: Option<&'a str>,
    contains: Option<Vec<&'a str>>,
    error_count: Option<usize>,
}

impl<'a> MessageChecks<'a> {
    fn from(expected: &'a Value) -> Self {
        Self {
            prefix: expected["message_prefix"].as_str(),
            suffix: expected["message_suffix"].as_str(),
            contains: expected["message_contains"]
                .as_array()
                .map(|l| l.iter().map(|s| s.as_str().unwrap()).collect()),
            error_count: expected["error_count"].as_u64().map(|n| n as usize),
        }
    }

    fn any(&self) -> bool {
        self.prefix.is_some()
            || self.suffix.is_some()
            || self.contains.is_some()
            || self.error_count.is_some()
    }

    fn check(&self, case: &str, message: &str) {
        if let Some(prefix) = self.prefix {
            assert!(
                message.starts_with(prefix),
                "{case}: message {message:?} lacks prefix {prefix:?}"
            );
        }
        if let Some(suffix) = self.suffix {
            assert!(
                message.ends_with(suffix),
                "{case}: message {message:?} lacks suffix {suffix:?}"
            );
        }
        for part in self.contains.iter().flatten() {
            assert!(
                message.contains(part),
                "{case}: message {message:?} lacks {part:?}"
            );
        }
        if let Some(n) = self.error_count {
            let found: usize = FIELD_ERROR_TYPES
                .iter()
                .map(|t| message.matches(t).count())
                .sum();
            assert_eq!(found, n, "{case}: field errors in {message:?}");
            let aggregated = message.starts_with('[') && message.ends_with(']');
            assert_eq!(
                aggregated,
                n > 1,
                "{case}: one error prints bare, several as [e1, e2]: {message:?}"
            );
        }
    }
}

/// Compares a response (uid checked separately) with the expected `{allowed, status, ...}`.
fn check_response(
    case: &str,
    actual: &Value,
    expected: &Value,
    checks: &MessageChecks<'_>,
    uid: &str,
    patch_checked: bool,
) {
    assert_eq!(actual["uid"], uid, "{case}: uid echoed");
    let mut actual = actual.clone();
    let fields = actual.as_object_mut().unwrap();
    fields.remove("uid");
    if patch_checked {
        fields.remove("patch");
        fields.remove("patchType");
        for extra in ["warnings", "auditAnnotations"] {
            if expected.get(extra).is_none() {
                fields.remove(extra);
            }
        }
    }
    if checks.any() {
        let message = actual["status"]
            .as_object_mut()
            .unwrap()
            .remove("message")
            .unwrap_or_default();
        checks.check(case, message.as_str().unwrap_or(""));
    }
    println!("{case}: {actual}");
    assert_json_eq!(actual, expected.clone());
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ` (times in that form compare as strings).
fn utc_now() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

fn is_utc_seconds(ts: &str) -> bool {
    let b = ts.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Replaces `"updateTimestamp":"<t>"` by `"updateTimestamp":"<now>"` where `from <= t <= to`.
fn normalise_timestamps(text: &str, from: &str, to: &str) -> String {
    const MARK: &str = "\"updateTimestamp\":\"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        out.push_str(&rest[..i + MARK.len()]);
        rest = &rest[i + MARK.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        let ts = &rest[..end];
        if is_utc_seconds(ts) && from <= ts && ts <= to {
            out.push_str("<now>");
        } else {
            out.push_str(ts);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Replaces the times of the PUB status maps (`disruptedPods`, `unavailablePods`) and of the WorkloadSpread
/// records (`creatingPods`, `deletingPods` of each `versionedSubsetStatuses` element) that lie between `from`
/// and `to` by `<now>`: the spend or record holds the request's time.
fn normalise_pod_times(writes: &mut Value, from: &str, to: &str) {
    for write in writes.as_array_mut().into_iter().flatten() {
        let mut maps: Vec<&mut Value> = Vec::new();
        let Some(status) = write.get_mut("status").and_then(Value::as_object_mut) else {
            continue;
        };
        for (key, value) in status.iter_mut() {
            match key.as_str() {
                "disruptedPods" | "unavailablePods" => maps.push(value),
                "versionedSubsetStatuses" => {
                    for list in value
                        .as_object_mut()
                        .into_iter()
                        .flat_map(|m| m.values_mut())
                    {
                        for element in list.as_array_mut().into_iter().flatten() {
                            for (k, v) in element.as_object_mut().into_iter().flatten() {
                                if k == "creatingPods" || k == "deletingPods" {
                                    maps.push(v);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        for map in maps {
            let times = map.as_object_mut();
            for (_, t) in times.into_iter().flatten() {
                if t.as_str()
                    .is_some_and(|ts| is_utc_seconds(ts) && from <= ts && ts <= to)
                {
                    *t = json!("<now>");
                }
            }
        }
    }
}

fn normalise_hash_annotations(obj: &mut Value, from: &str, to: &str) {
    for key in [
        "kruise.io~1sidecarset-hash",
        "kruise.io~1sidecarset-hash-without-image",
    ] {
        if let Some(Value::String(s)) = obj.pointer_mut(&format!("/metadata/annotations/{key}")) {
            *s = normalise_timestamps(s, from, to);
        }
    }
}

/// Checks the response's patch against `want`: `null` = no patch; an object = the result of applying the
/// patch to the request's object.
fn check_patched(case: &str, response: &Value, object: &Value, want: &Value, from: &str) {
    if want.is_null() {
        assert!(
            response.get("patch").is_none() && response.get("patchType").is_none(),
            "{case}: no patch expected, got {response}"
        );
        return;
    }
    assert_eq!(response["patchType"], "JSONPatch", "{case}: patchType");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().expect("a patch"))
        .unwrap_or_else(|e| panic!("{case}: patch is not base64: {e}"));
    let ops: json_patch::Patch = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{case}: patch is not an RFC 6902 document: {e}"));
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &ops)
        .unwrap_or_else(|e| panic!("{case}: patch does not apply to the request object: {e}"));
    normalise_hash_annotations(&mut patched, from, &utc_now());
    println!("{case}: patched {patched}");
    assert_json_eq!(patched, want.clone());
}

async fn run_case(case: &Path) {
    let name = case.file_name().unwrap().to_string_lossy().to_string();
    let review_text = common::read(&case.join("review.json"));
    let expected: Value = serde_json::from_str(&common::read(&case.join("expected.json")))
        .unwrap_or_else(|e| panic!("{name}: expected.json: {e}"));
    let gates = expected["gates"].as_str().unwrap_or("");
    let review_json: Value = serde_json::from_str(&review_text).unwrap();
    let uid = review_json["request"]["uid"].as_str().unwrap().to_owned();
    let object = &review_json["request"]["object"];
    let checks = MessageChecks::from(&expected);
    let patched = expected.get("patched");
    let started = utc_now();

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
        &checks,
        &uid,
        patched.is_some(),
    );
    if let Some(want) = patched {
        check_patched(&name, &body["response"], object, want, &started);
    }

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
        let reviewed = kruise_webhook::review::review_chain(fixture, &gates, &decoded).await;
        let writes: Vec<Value> = reviewed
            .status_writes
            .iter()
            .map(kruise_webhook::review::status_write_json)
            .collect();
        let mut writes = Value::Array(writes);
        normalise_pod_times(&mut writes, &started, &utc_now());
        let want_writes = expected.get("status_writes").cloned().unwrap_or(json!([]));
        println!("{name}: status writes {writes}");
        assert_json_eq!(writes, want_writes);
        let response = serde_json::to_value(&reviewed.response).unwrap();
        let (want, review_checks) = match expected.get("review_response") {
            Some(want) => (want, MessageChecks::default()),
            None => (&expected["response"], MessageChecks::from(&expected)),
        };
        let review_name = format!("{name} (review)");
        let review_patched = expected.get("review_patched").or(patched);
        check_response(
            &review_name,
            &response,
            want,
            &review_checks,
            &uid,
            review_patched.is_some(),
        );
        if let Some(want) = review_patched {
            check_patched(&review_name, &response, object, want, &started);
        }
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

/// Runs every case, then fails naming each case that failed (one failure does not hide the others).
async fn run_all(cases: Vec<std::path::PathBuf>) {
    let mut failed = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let outcome =
            futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run_case(&case))).await;
        if outcome.is_err() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "failed cases: {failed:?}");
}

/// The scenario numbers in `range` that no case stands for (a case's folder starts with its two-digit number).
fn missing_scenarios(
    cases: &[std::path::PathBuf],
    range: std::ops::RangeInclusive<u32>,
) -> Vec<u32> {
    let scenarios: std::collections::BTreeSet<u32> = cases
        .iter()
        .filter_map(|c| c.file_name()?.to_str()?.get(..2)?.parse().ok())
        .collect();
    range.filter(|n| !scenarios.contains(n)).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn sidecarset_scenarios() {
    let cases = cases("sidecarset");
    let missing = missing_scenarios(&cases, 1..=64);
    assert!(
        missing.is_empty(),
        "every admission scenario of spec/sidecarset.md §11 (1-64) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}

#[tokio::test(flavor = "current_thread")]
async fn podunavailablebudget_scenarios() {
    let cases = cases("podunavailablebudget");
    let missing = missing_scenarios(&cases, 43..=50);
    assert!(
        missing.is_empty(),
        "every validator scenario of spec/podunavailablebudget.md §12 (43-50) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}

#[tokio::test(flavor = "current_thread")]
async fn pod_unavailable_budget_gate_scenarios() {
    let cases = cases("pod-validate");
    // 34 and 35 (conflicts on the status write) need an API server: tests/pub_gate.rs.
    let missing: Vec<u32> = missing_scenarios(&cases, 16..=39)
        .into_iter()
        .filter(|n| ![34, 35].contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "every pod gate scenario of spec/podunavailablebudget.md §12 (16-39) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}

#[tokio::test(flavor = "current_thread")]
async fn pod_mutate_scenarios() {
    let cases = cases("pod-mutate");
    let missing = missing_scenarios(&cases, 40..=42);
    assert!(
        missing.is_empty(),
        "every mutation scenario of spec/podunavailablebudget.md §12 (40-42) has a case; missing {missing:?}"
    );
    // Steps 6-8 of the chain. 21 (WorkloadSpread dry run) is workloadspread-pod/16-dry-run; 22 (a step's
    // error stops the chain) and 23 (steps 4 and 5 on a generateName pod) are unit tests of the chain
    // (webhooks/src/pod/tests.rs).
    let missing: Vec<u32> = missing_scenarios(&cases, 12..=24)
        .into_iter()
        .filter(|n| !(21..=23).contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "every scenario of spec/pod-mutating-misc.md §12 for steps 6-8 (12-20, 24) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}

#[tokio::test(flavor = "current_thread")]
async fn workloadspread_scenarios() {
    let cases = cases("workloadspread");
    // 52 (the subset patch checks) is not implemented: webhooks/src/workloadspread.rs.
    let missing = missing_scenarios(&cases, 39..=51);
    assert!(
        missing.is_empty(),
        "every validation scenario of spec/workloadspread.md §9 (39-51) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}

#[tokio::test(flavor = "current_thread")]
async fn workloadspread_pod_scenarios() {
    let cases = cases("workloadspread-pod");
    // 23 (conflicts on the status write) needs an API server: tests/workloadspread_placement.rs.
    let missing: Vec<u32> = missing_scenarios(&cases, 1..=28)
        .into_iter()
        .filter(|n| *n != 23)
        .collect();
    assert!(
        missing.is_empty(),
        "every webhook scenario of spec/workloadspread.md §9 (1-28) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}

#[tokio::test(flavor = "current_thread")]
async fn persistentpodstate_scenarios() {
    let cases = cases("persistentpodstate");
    let missing = missing_scenarios(&cases, 1..=18);
    assert!(
        missing.is_empty(),
        "every validator scenario of docs/persistentpodstate.md §5 (1-18) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}

#[tokio::test(flavor = "current_thread")]
async fn containerrecreaterequest_scenarios() {
    let cases = cases("containerrecreaterequest");
    let missing = missing_scenarios(&cases, 1..=34);
    assert!(
        missing.is_empty(),
        "every scenario of docs/containerrecreaterequest-webhook.md §8 (1-34) has a case; missing {missing:?}"
    );
    run_all(cases).await;
}
