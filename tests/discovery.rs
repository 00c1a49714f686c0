//! Start-up discovery of the version a Kruise kind is served at (`served_version`, asked when CRDs cannot be
//! listed; DECISIONS 25), against a mock apiserver (tower-test), for SidecarSets: the newest group/version
//! that lists the resource; one listed without it, or not found (404), reads as not served at that version and
//! the older one is asked; an apiserver that keeps failing reads as serving the version asked, after 4
//! attempts 0.5 s × 5ⁿ apart.

use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

use kruise_webhook::cache::discovery::served_version;
use kruise_webhook::cache::versions::{KruiseKind, Version};

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

const BETA: &str = "/apis/apps.kruise.io/v1beta1";
const ALPHA: &str = "/apis/apps.kruise.io/v1alpha1";

fn mock() -> (kube::Client, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(service, "default"), handle)
}

/// Answers the next request, which must be the discovery GET of `path`, with `status` and `body`.
async fn answer(handle: &mut Handle, path: &str, status: StatusCode, body: &Value) {
    let (request, send) = handle.next_request().await.expect("a discovery request");
    assert_eq!(request.method(), http::Method::GET);
    assert_eq!(request.uri().path(), path);
    send.send_response(
        Response::builder()
            .status(status)
            .body(Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap(),
    );
}

fn resource_list(names: &[&str]) -> Value {
    let resources: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "singularName": "", "namespaced": false, "kind": "K", "verbs": ["get"]}))
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps.kruise.io/v1beta1",
           "resources": resources})
}

fn failure(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": code,
           "reason": "x", "message": "x"})
}

#[tokio::test(flavor = "current_thread")]
async fn listed_resource_is_served_and_missing_one_is_not() {
    let (client, mut handle) = mock();
    let run = tokio::spawn(async move { served_version(&client, KruiseKind::SidecarSet).await });
    let listed = resource_list(&["clonesets", "sidecarsets", "sidecarsets/status"]);
    answer(&mut handle, BETA, StatusCode::OK, &listed).await;
    assert_eq!(run.await.unwrap(), Some(Version::V1beta1));
    // Listed without the resource at either version: not served.
    let (client, mut handle) = mock();
    let run = tokio::spawn(async move { served_version(&client, KruiseKind::SidecarSet).await });
    let without = resource_list(&["clonesets", "sidecarsets/status"]);
    answer(&mut handle, BETA, StatusCode::OK, &without).await;
    answer(&mut handle, ALPHA, StatusCode::OK, &without).await;
    assert_eq!(run.await.unwrap(), None);
    // Without it at v1beta1, with it at v1alpha1 (OpenKruise 1.8's CRDs): served at v1alpha1.
    let (client, mut handle) = mock();
    let run = tokio::spawn(async move { served_version(&client, KruiseKind::SidecarSet).await });
    answer(&mut handle, BETA, StatusCode::OK, &without).await;
    answer(&mut handle, ALPHA, StatusCode::OK, &listed).await;
    assert_eq!(run.await.unwrap(), Some(Version::V1alpha1));
}

#[tokio::test(flavor = "current_thread")]
async fn a_group_version_not_found_is_not_served_at_it() {
    let (client, mut handle) = mock();
    let run = tokio::spawn(async move { served_version(&client, KruiseKind::SidecarSet).await });
    answer(&mut handle, BETA, StatusCode::NOT_FOUND, &failure(404)).await;
    answer(&mut handle, ALPHA, StatusCode::NOT_FOUND, &failure(404)).await;
    assert_eq!(run.await.unwrap(), None);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn failing_apiserver_is_retried_then_reads_as_present() {
    let (client, mut handle) = mock();
    let started = tokio::time::Instant::now();
    let run = tokio::spawn(async move { served_version(&client, KruiseKind::SidecarSet).await });
    let mut at = Vec::new();
    for _ in 0..4 {
        answer(
            &mut handle,
            BETA,
            StatusCode::INTERNAL_SERVER_ERROR,
            &failure(500),
        )
        .await;
        at.push(started.elapsed());
    }
    assert_eq!(run.await.unwrap(), Some(Version::V1beta1));
    // The attempts came 0.5 s, 2.5 s and 12.5 s apart.
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    for (gap, want) in gaps.iter().zip([500, 2500, 12500]) {
        assert!(
            gap.as_millis().abs_diff(want) < 50,
            "gaps {gaps:?}, want 500/2500/12500 ms"
        );
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_late_answer_after_failures_is_taken() {
    let (client, mut handle) = mock();
    let run = tokio::spawn(async move { served_version(&client, KruiseKind::SidecarSet).await });
    answer(
        &mut handle,
        BETA,
        StatusCode::SERVICE_UNAVAILABLE,
        &failure(503),
    )
    .await;
    answer(
        &mut handle,
        BETA,
        StatusCode::OK,
        &resource_list(&["clonesets"]),
    )
    .await;
    answer(
        &mut handle,
        ALPHA,
        StatusCode::OK,
        &resource_list(&["clonesets"]),
    )
    .await;
    assert_eq!(run.await.unwrap(), None);
}
