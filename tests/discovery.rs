//! Start-up discovery of the SidecarSet kind (webhook-server.md §4) against a mock apiserver (tower-test):
//! only a group/version listed without the resource disables `/mutate-pod`; a 404 or an apiserver that keeps
//! failing reads as present, after 4 attempts 0.5 s × 5ⁿ apart.

use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

use kruise_webhook::cache::discover;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

const PATH: &str = "/apis/apps.kruise.io/v1beta1";

fn mock() -> (kube::Client, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(service, "default"), handle)
}

/// Answers the next request, which must be the discovery GET, with `status` and `body`.
async fn answer(handle: &mut Handle, status: StatusCode, body: &Value) {
    let (request, send) = handle.next_request().await.expect("a discovery request");
    assert_eq!(request.method(), http::Method::GET);
    assert_eq!(request.uri().path(), PATH);
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
    for (names, served) in [
        (
            &["clonesets", "sidecarsets", "sidecarsets/status"][..],
            true,
        ),
        (&["clonesets", "sidecarsets/status"][..], false),
    ] {
        let (client, mut handle) = mock();
        let run = tokio::spawn(async move {
            discover(&client, "apps.kruise.io/v1beta1", "sidecarsets").await
        });
        answer(&mut handle, StatusCode::OK, &resource_list(names)).await;
        assert_eq!(run.await.unwrap(), served, "{names:?}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn unknown_group_version_reads_as_present() {
    let (client, mut handle) = mock();
    let run =
        tokio::spawn(
            async move { discover(&client, "apps.kruise.io/v1beta1", "sidecarsets").await },
        );
    answer(&mut handle, StatusCode::NOT_FOUND, &failure(404)).await;
    assert!(run.await.unwrap());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn failing_apiserver_is_retried_then_reads_as_present() {
    let (client, mut handle) = mock();
    let started = tokio::time::Instant::now();
    let run =
        tokio::spawn(
            async move { discover(&client, "apps.kruise.io/v1beta1", "sidecarsets").await },
        );
    let mut at = Vec::new();
    for _ in 0..4 {
        answer(
            &mut handle,
            StatusCode::INTERNAL_SERVER_ERROR,
            &failure(500),
        )
        .await;
        at.push(started.elapsed());
    }
    assert!(run.await.unwrap());
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
    let run =
        tokio::spawn(
            async move { discover(&client, "apps.kruise.io/v1beta1", "sidecarsets").await },
        );
    answer(&mut handle, StatusCode::SERVICE_UNAVAILABLE, &failure(503)).await;
    answer(&mut handle, StatusCode::OK, &resource_list(&["clonesets"])).await;
    assert!(!run.await.unwrap());
}
