//! The API server going away and coming back (tests/common/apiserver.rs, [`StandIn::go_down`]): a replica
//! keeps answering admission from its caches and stays ready; a status write inside admission (the PUB
//! gate's spend) is refused with a clear answer, not hung, and leaves nothing behind; once the API server is
//! back the PUB controller catches up with what changed meanwhile, and no status write is lost or doubled.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use common::apiserver::StandIn;
use kruise_webhook::AppState;
use kruise_webhook::cache::LiveCache;
use kruise_webhook::controller::podunavailablebudget::{self, PodUnavailableBudgetController};
use kruise_webhook::controller::runtime::Settings;
use kruise_webhook::workload::ServedKinds;
use serde_json::{Value, json};
use tokio::sync::watch;

const PODS: usize = 5;
const PUB_STATUS: &str =
    "/apis/policy.kruise.io/v1beta1/namespaces/default/podunavailablebudgets/pub-web/status";

fn pod(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-{i}"), "namespace": "default", "uid": format!("uid-{i}"),
            "labels": {"app": "web"}, "creationTimestamp": "2025-01-01T00:00:00Z",
            "annotations": {"pub.kruise.io/related-pub": "pub-web", "kruise.io/related-pub": "pub-web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx:1.25"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "image": "nginx:1.25", "ready": true,
                "imageID": "docker-pullable://nginx@sha256:aa"}]}})
}

/// Five ready pods of ReplicaSet web-7d9, PUB pub-web over them (maxUnavailable 2), SidecarSet log-agent
/// selecting them.
fn cluster() -> StandIn {
    let stand_in = StandIn::new();
    for ns in ["default", "kruise-system"] {
        stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }
    stand_in.put(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-7d9", "namespace": "default", "uid": "rs-uid", "generation": 1},
        "spec": {"replicas": PODS, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": PODS, "readyReplicas": PODS}}));
    for i in 0..PODS {
        stand_in.put(pod(i));
    }
    stand_in.put(
        json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "uid": "pub-uid", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 2},
        "status": {"observedGeneration": 1, "unavailableAllowed": 2, "currentAvailable": PODS,
            "desiredAvailable": PODS - 2, "totalReplicas": PODS}}),
    );
    stand_in.put(
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "log-agent", "uid": "uid-log-agent", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "log-agent", "image": "busybox:1.36"}]}}),
    );
    stand_in
}

/// A replica on the stand-in (pod webhooks with SidecarSets and PUBs, a serving certificate) and its PUB
/// controller, leading.
async fn replica(stand_in: &StandIn) -> (AppState, kruise_webhook::controller::runtime::Running) {
    kruise_webhook::install_crypto_provider();
    let client = stand_in.client();
    let served = ServedKinds {
        clone_sets: true,
        advanced_stateful_sets: false,
    };
    let cache = LiveCache::start_all(
        client.clone(),
        Some("kruise-system"),
        true,
        false,
        Some((served, "kruise-system")),
    );
    let state = common::replica::replica(cache.clone()).await;
    let gates = state.config.gates.clone();
    let policy =
        kruise_certs::Policy::new("kruise-webhook-service.kruise-system.svc", ["localhost"]);
    let bundle = kruise_certs::execute(
        &kruise_certs::CertPlan::Fresh,
        None,
        time::OffsetDateTime::now_utc(),
        &policy,
    )
    .unwrap();
    state
        .certs
        .install(bundle.cert_pem.as_bytes(), bundle.key_pem.as_bytes())
        .unwrap();
    let inputs = podunavailablebudget::Inputs {
        budgets: cache.budget_store().expect("PUB store").clone(),
        pods: cache.pod_store().clone(),
        workloads: cache.workloads().expect("workload stores").clone(),
    };
    let (leader, leading) = watch::channel(true);
    // Leadership stays for the whole test.
    std::mem::forget(leader);
    let controller = PodUnavailableBudgetController::start(
        podunavailablebudget::Context::sharing(client, gates, cache.budget_copies().clone()),
        inputs,
        Arc::new(k8s_openapi::jiff::Timestamp::now),
        leading,
        Settings::default(),
    );
    (state, controller)
}

fn create(name: &str) -> Value {
    let mut object = pod(0);
    object["metadata"]["name"] = json!(name);
    object["metadata"]["uid"] = Value::Null;
    object.as_object_mut().unwrap().remove("status");
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("create-{name}"),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": name, "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": object, "oldObject": null, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
}

fn eviction(i: usize) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("evict-{i}"),
            "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
            "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"}, "requestSubResource": "eviction",
            "name": format!("web-{i}"), "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:drain"},
            "object": {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": format!("web-{i}"), "namespace": "default"}},
            "oldObject": null, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
}

/// The response of `review` on `path`, within 30 s (an answer that hangs fails the test).
async fn review(state: &AppState, path: &str, review: Value) -> Value {
    let (status, body) = tokio::time::timeout(
        Duration::from_secs(30),
        common::post(state, path, review.to_string(), Some("application/json")),
    )
    .await
    .expect("answered, not hung");
    assert_eq!(status, 200, "{body}");
    body["response"].clone()
}

/// The containers the response's patch adds (`add` operations whose value is a container).
/// The decoded patch of a response, every RFC 3339 timestamp of the second replaced by `<time>`.
fn without_timestamps(response: &Value) -> String {
    let patch = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().unwrap_or_default())
        .unwrap();
    let text = String::from_utf8(patch).unwrap();
    let mut out = String::new();
    let mut rest = text.as_str();
    // `2026-11-26T21:38:53Z`: 20 characters, a `T` at 10 and a `Z` at 19.
    while let Some(at) = rest.find('T') {
        let start = at.saturating_sub(10);
        let is_time = rest.len() >= start + 20
            && rest.as_bytes()[start + 19] == b'Z'
            && rest[start..start + 4].bytes().all(|b| b.is_ascii_digit());
        if is_time {
            out.push_str(&rest[..start]);
            out.push_str("<time>");
            rest = &rest[start + 20..];
        } else {
            out.push_str(&rest[..=at]);
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

fn added_containers(response: &Value) -> Vec<String> {
    let Some(patch) = response["patch"].as_str() else {
        return Vec::new();
    };
    let patch: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap(),
    )
    .unwrap();
    let mut names = Vec::new();
    for op in patch.as_array().unwrap() {
        let value = &op["value"];
        let items = value
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![value.clone()]);
        for item in items {
            if let Some(name) = item["name"].as_str()
                && item.get("image").is_some()
                && op["path"].as_str().unwrap_or("").contains("containers")
            {
                names.push(name.to_owned());
            }
        }
    }
    names
}

async fn readyz(state: &AppState) -> (u16, String) {
    use tower::ServiceExt;
    let response = kruise_webhook::server::plain_app(state.clone())
        .oneshot(
            axum::http::Request::get("/readyz?verbose")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Waits (up to 60 s) until `done` holds.
async fn until(what: &str, done: impl FnMut() -> bool) {
    common::until_within(what, Duration::from_secs(60), done).await;
}

fn budget_status(stand_in: &StandIn) -> Value {
    stand_in
        .get("PodUnavailableBudget", "default", "pub-web")
        .unwrap()["status"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_going_away_keeps_admission_answering_and_loses_no_status_write() {
    let stand_in = cluster();
    // Every PUB status stored, in order.
    let stored = Arc::new(Mutex::new(Vec::<Value>::new()));
    stand_in.observe({
        let stored = stored.clone();
        move |object| {
            if object["kind"] == "PodUnavailableBudget" {
                stored.lock().unwrap().push(object["status"].clone());
            }
        }
    });
    let (state, controller) = replica(&stand_in).await;
    until("the PUB controller observed the budget", || {
        budget_status(&stand_in)["currentAvailable"] == PODS
    })
    .await;
    let before = review(&state, "/mutate-pod", create("web-new")).await;
    assert_eq!(before["allowed"], true, "{before}");
    assert_eq!(added_containers(&before), ["log-agent"]);

    // The API server goes away; the replica's watches fail to come back.
    stand_in.go_down();
    until("a watch retried and refused", || {
        stand_in.refused().iter().any(|r| r.starts_with("GET "))
    })
    .await;
    let writes_before = stand_in.status_writes().len();

    // Admission keeps answering from the caches: the SidecarSet is still injected.
    let during = review(&state, "/mutate-pod", create("web-during")).await;
    assert_eq!(during["allowed"], true, "{during}");
    // The same injection as before (the patches differ only in the hash annotations' updateTimestamp when
    // the two reviews fall in different seconds).
    assert_eq!(
        without_timestamps(&during),
        without_timestamps(&before),
        "the same injection as before"
    );
    // Readiness holds: an API server blip must not empty the Service.
    let (code, text) = readyz(&state).await;
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("[+]informer-caches-synced ok"), "{text}");

    // A spend the PUB gate cannot record is refused with a clear answer at once: no hang, nothing written.
    let refused = review(&state, "/validate-pod", eviction(3)).await;
    assert_eq!(refused["allowed"], false, "{refused}");
    let message = refused["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "the disruption could not be recorded in PodUnavailableBudget default/pub-web, so it is refused"
        ),
        "{message}"
    );
    let attempts = stand_in
        .refused()
        .iter()
        .filter(|r| **r == format!("PUT {PUB_STATUS}"))
        .count();
    assert!(
        (1..=3).contains(&attempts),
        "at most 3 attempts: {attempts}"
    );
    assert_eq!(
        stand_in.status_writes().len(),
        writes_before,
        "nothing reached the API server"
    );

    // Meanwhile the cluster changes where the replica cannot see it: web-0 becomes unready.
    assert!(stand_in.update("Pod", "default", "web-0", |pod| {
        pod["status"]["conditions"][0]["status"] = json!("False");
        true
    }));
    assert_eq!(budget_status(&stand_in)["currentAvailable"], PODS);

    // The API server comes back: the controller catches up with one write.
    stand_in.come_back();
    until("the PUB status counts web-0 unavailable", || {
        budget_status(&stand_in)["currentAvailable"] == PODS - 1
    })
    .await;
    let status = budget_status(&stand_in);
    assert_eq!(status["unavailableAllowed"], 1, "{status}");
    assert!(
        status
            .get("disruptedPods")
            .is_none_or(|d| d.get("web-3").is_none()),
        "the refused eviction spent nothing: {status}"
    );

    // The gate works again and its spend is recorded exactly once.
    let allowed = review(&state, "/validate-pod", eviction(3)).await;
    assert_eq!(allowed["allowed"], true, "{allowed}");
    let status = budget_status(&stand_in);
    assert_eq!(status["unavailableAllowed"], 0, "one spend, once: {status}");
    assert_eq!(
        status["disruptedPods"]
            .as_object()
            .map(|d| d.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["web-3".to_owned()]),
        "{status}"
    );

    // No write doubled: every status stored differs from the one before it.
    let stored = stored.lock().unwrap().clone();
    for pair in stored.windows(2) {
        assert_ne!(pair[0], pair[1], "a status written twice: {stored:#?}");
    }
    let failed: Vec<_> = stand_in
        .status_writes()
        .into_iter()
        .filter(|w| w.code != 200)
        .collect();
    assert!(
        failed.is_empty(),
        "status writes refused by the API server: {failed:?}"
    );
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
    controller.stop().await;
}
