//! The Router through `oneshot` (no sockets): bad input gets a clear 4xx and the next request is still
//! served; panics become a 500 answer for that request only; versions and uids are echoed; metrics count.

mod common;

use std::sync::Arc;

use axum::http::StatusCode;
use kruise_webhooks::fixture::FixtureCluster;
use serde_json::{Value, json};

fn review(api_version: &str, uid: &str, label: &str) -> String {
    json!({
        "apiVersion": api_version, "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Service"},
                    "resource": {"group": "", "version": "v1", "resource": "services"},
                    "name": "svc1", "namespace": "default", "operation": "DELETE", "userInfo": {"username": "bob"},
                    "oldObject": {"apiVersion": "v1", "kind": "Service",
                                  "metadata": {"name": "svc1", "namespace": "default",
                                               "labels": {"policy.kruise.io/delete-protection": label}}}}
    })
    .to_string()
}

async fn still_serves(state: &kruise_webhook::AppState) {
    let (status, body) = common::post(
        state,
        "/validate-service",
        review("admission.k8s.io/v1", "next", "Always"),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["response"]["uid"], "next");
    assert_eq!(body["response"]["allowed"], false);
}

async fn expect_refusal(
    body: impl Into<axum::body::Body>,
    content_type: Option<&str>,
    status: StatusCode,
    message: &str,
) {
    let state = common::state(FixtureCluster::default(), "");
    let (got, answer) = common::post(&state, "/validate-service", body, content_type).await;
    // controller-runtime answers every refusal with HTTP 200, the code in the review (webhook-server.md §3).
    assert_eq!(got, StatusCode::OK, "{answer}");
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(answer["response"]["status"]["code"], status.as_u16());
    let text = answer["response"]["status"]["message"].as_str().unwrap();
    assert!(
        text.contains(message),
        "{text:?} should contain {message:?}"
    );
    assert!(
        answer.get("apiVersion").is_none(),
        "early errors carry no apiVersion (controller-runtime's shape)"
    );
    still_serves(&state).await;
}

#[tokio::test(flavor = "current_thread")]
async fn non_json_body_is_a_400() {
    expect_refusal(
        "this is not json",
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "couldn't decode AdmissionReview",
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn empty_body_is_a_400() {
    expect_refusal(
        "",
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "request body is empty",
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn wrong_api_version_or_kind_is_a_400() {
    let body =
        json!({"apiVersion": "v1", "kind": "Pod", "request": {"uid": "x", "operation": "DELETE"}})
            .to_string();
    expect_refusal(
        body,
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "unsupported apiVersion/kind",
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn missing_request_is_a_400() {
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).to_string();
    expect_refusal(
        body,
        Some("application/json"),
        StatusCode::BAD_REQUEST,
        "AdmissionReview has no request",
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn wrong_content_type_is_a_400_with_controller_runtime_message() {
    expect_refusal(
        review("admission.k8s.io/v1", "u", "Always"),
        Some("text/plain"),
        StatusCode::BAD_REQUEST,
        "contentType=text/plain, expected application/json",
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn eight_mib_body_is_a_413() {
    let body = vec![b' '; 8 * 1024 * 1024];
    expect_refusal(
        body,
        Some("application/json"),
        StatusCode::PAYLOAD_TOO_LARGE,
        "request entity is too large; limit is 7340032 bytes",
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn delete_without_old_object_is_allowed() {
    let state = common::state(FixtureCluster::default(), "");
    let mut r: Value =
        serde_json::from_str(&review("admission.k8s.io/v1", "u0", "Always")).unwrap();
    r["request"].as_object_mut().unwrap().remove("oldObject");
    let (status, body) = common::post(
        &state,
        "/validate-service",
        r.to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["response"],
        json!({"uid": "u0", "allowed": true, "status": {"code": 200}})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn v1beta1_review_is_answered_in_v1beta1_with_the_uid() {
    let state = common::state(FixtureCluster::default(), "");
    let (status, body) = common::post(
        &state,
        "/validate-service",
        review("admission.k8s.io/v1beta1", "u1", "Always"),
        Some("application/json; charset=utf-8"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(body["kind"], "AdmissionReview");
    assert_eq!(body["response"]["uid"], "u1");
    assert_eq!(
        body["response"]["status"],
        json!({"code": 403, "message": "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always"})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_is_a_500_for_that_request_only() {
    let mut state = common::state(FixtureCluster::default(), "");
    state.before_decide = Some(Arc::new(|req| {
        if req.uid == "boom" {
            panic!("injected failure");
        }
    }));
    let (status, body) = common::post(
        &state,
        "/validate-service",
        review("admission.k8s.io/v1", "boom", "Always"),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["response"],
        json!({"uid": "boom", "allowed": false, "status": {"code": 500, "message": "panic: injected failure [recovered]"}})
    );
    still_serves(&state).await;
    assert!(
        state
            .metrics
            .encode()
            .contains("controller_runtime_webhook_panics_total 1")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn unknown_paths_are_404_and_gated_paths_are_not_served() {
    let state = common::state(
        FixtureCluster::default(),
        "ResourcesDeletionProtection=false",
    );
    let (status, _) =
        common::post(&state, "/validate-nothing", "{}", Some("application/json")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = common::post(
        &state,
        "/validate-service",
        review("admission.k8s.io/v1", "u", "Always"),
        Some("application/json"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "vservice is only registered with ResourcesDeletionProtection (spec §4)"
    );
    let (status, body) = common::post(
        &state,
        "/validate-apps-kruise-io-v1alpha1-cloneset",
        "{}",
        Some("application/json"),
    )
    .await;
    assert_eq!(
        (status, &body["response"]["status"]["code"]),
        (StatusCode::OK, &json!(400)),
        "the old spelling is served (DECISIONS 3): {body}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn metrics_count_requests_by_path_and_code() {
    let state = common::state(FixtureCluster::default(), "");
    for label in ["Always", "Cascading", "Always"] {
        common::post(
            &state,
            "/validate-service",
            review("admission.k8s.io/v1", "m", label),
            Some("application/json"),
        )
        .await;
    }
    common::post(
        &state,
        "/validate-service",
        "nope",
        Some("application/json"),
    )
    .await;
    let text = state.metrics.encode();
    for line in [
        r#"controller_runtime_webhook_requests_total{webhook="/validate-service",code="403"} 2"#,
        r#"controller_runtime_webhook_requests_total{webhook="/validate-service",code="200"} 1"#,
        r#"controller_runtime_webhook_requests_total{webhook="/validate-service",code="400"} 1"#,
        r#"controller_runtime_webhook_latency_seconds_count{webhook="/validate-service"} 4"#,
        r#"controller_runtime_webhook_requests_in_flight{webhook="/validate-service"} 0"#,
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn convert_answers_a_conversion_review() {
    let state = common::state(FixtureCluster::default(), "");
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "c1", "desiredAPIVersion": "apps.kruise.io/v1beta1", "objects": [{
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "s", "labels": {"apps.kruise.io/sidecarset-custom-version": "v2"}},
            "spec": {"namespace": "shop", "selector": {}, "containers": []}}]}
    });
    let (status, body) = common::post(
        &state,
        "/convert",
        review.to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["response"]["uid"], "c1");
    assert_eq!(body["response"]["result"]["status"], "Success");
    let converted = &body["response"]["convertedObjects"][0];
    assert_eq!(converted["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(converted["spec"]["customVersion"], "v2");
    assert_eq!(
        converted["spec"]["namespaceSelector"],
        json!({"matchLabels": {"kubernetes.io/metadata.name": "shop"}})
    );
    let (status, _) = common::post(&state, "/convert", "garbage", Some("application/json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "current_thread")]
async fn convert_takes_a_large_list() {
    // 3,000 CloneSets of about 1 KB: a LIST the apiserver converts in one review, over axum's default
    // 2 MiB body limit.
    let state = common::state(FixtureCluster::default(), "");
    let pad = "x".repeat(1000);
    let objects: Vec<Value> = (0..3000)
        .map(|i| {
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                   "metadata": {"name": format!("c{i}"), "namespace": "shop", "annotations": {"pad": pad}},
                   "spec": {"replicas": 1}})
        })
        .collect();
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "big", "desiredAPIVersion": "apps.kruise.io/v1beta1", "objects": objects}
    })
    .to_string();
    assert!(review.len() > 3 * 1024 * 1024);
    let (status, body) = common::post(&state, "/convert", review, Some("application/json")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["response"]["result"]["status"], "Success");
    let converted = body["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(converted.len(), 3000);
    assert_eq!(converted[2999]["apiVersion"], "apps.kruise.io/v1beta1");
}

#[tokio::test(flavor = "current_thread")]
async fn sidecarset_defaulting_sets_openkruises_hash() {
    // spec/sidecarset.md §11 scenario 43 through the Router.
    let state = common::state(FixtureCluster::default(), "");
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "d1", "kind": {"group": "apps.kruise.io", "version": "v1beta1", "kind": "SidecarSet"},
                    "resource": {"group": "apps.kruise.io", "version": "v1beta1", "resource": "sidecarsets"},
                    "name": "s", "operation": "CREATE", "userInfo": {"username": "alice"},
                    "object": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": "s"},
                               "spec": {"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "dns-f", "image": "dns:1.0"}]}}}
    });
    for path in [
        "/mutate-apps-kruise-io-sidecarset",
        "/mutate-apps-kruise-io-v1alpha1-sidecarset",
    ] {
        let (status, body) =
            common::post(&state, path, review.to_string(), Some("application/json")).await;
        assert_eq!(status, StatusCode::OK);
        use base64::Engine;
        let patch: json_patch::Patch = serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(body["response"]["patch"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap();
        let mut object = review["request"]["object"].clone();
        json_patch::patch(&mut object, &patch).unwrap();
        assert_eq!(
            object["metadata"]["annotations"]["kruise.io/sidecarset-hash"],
            "6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684"
        );
        assert_eq!(
            object["metadata"]["annotations"]["kruise.io/sidecarset-hash-without-image"],
            "82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94"
        );
        assert_eq!(
            object["spec"]["containers"][0]["podInjectPolicy"],
            "BeforeAppContainer"
        );
    }
}

fn sidecarset_review(spec: Value) -> String {
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "v1", "kind": {"group": "apps.kruise.io", "version": "v1beta1", "kind": "SidecarSet"},
                    "resource": {"group": "apps.kruise.io", "version": "v1beta1", "resource": "sidecarsets"},
                    "name": "s", "operation": "CREATE", "userInfo": {"username": "alice"},
                    "object": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": "s", "labels": {"app": "sidecar"}}, "spec": spec}}
    })
    .to_string()
}

#[tokio::test(flavor = "current_thread")]
async fn sidecarset_validation_answers_with_openkruises_texts_and_422() {
    // spec/sidecarset.md §11 scenarios 44 and 61, through the Router and the I/O that reads the whitelist;
    // violations are 422 (DECISIONS 14 overrides OpenKruise's 500), the messages OpenKruise's.
    let container = json!([{"name": "c", "image": "i:1", "podInjectPolicy": "BeforeAppContainer", "shareVolumePolicy": {"type": "disabled"},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}]);
    let strategy = json!({"type": "RollingUpdate", "partition": 0, "maxUnavailable": 1});
    let state = common::state(FixtureCluster::default(), "");
    let (status, body) = common::post(
        &state,
        "/validate-apps-kruise-io-sidecarset",
        sidecarset_review(json!({"containers": container, "updateStrategy": strategy})),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["response"],
        json!({"uid": "v1", "allowed": false, "status": {"code": 422, "message": "spec.selector: Required value: no selector defined for SidecarSet"}})
    );

    let valid = json!({"selector": {"matchLabels": {"app": "web"}}, "containers": container, "updateStrategy": strategy,
                       "patchPodMetadata": [{"annotations": {"key1": "v"}, "patchPolicy": "Retain"}]});
    let (_, body) = common::post(
        &state,
        "/validate-apps-kruise-io-v1alpha1-sidecarset",
        sidecarset_review(valid.clone()),
        Some("application/json"),
    )
    .await;
    assert_eq!(
        body["response"]["status"]["message"],
        "spec.patchPodMetadata: Required value: SidecarSet patch metadata whitelist not found"
    );

    let mut cluster = FixtureCluster::default();
    cluster
        .load_str(
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"},
                "data": {"SidecarSet_PatchPodMetadata_WhiteList": "{\"rules\":[{\"allowedAnnotationKeyExprs\":[\"key.*\"]}]}"}}"#,
            "cm",
        )
        .unwrap();
    let state = common::state(cluster, "");
    let (_, body) = common::post(
        &state,
        "/validate-apps-kruise-io-sidecarset",
        sidecarset_review(valid),
        Some("application/json"),
    )
    .await;
    assert_eq!(
        body["response"],
        json!({"uid": "v1", "allowed": true, "status": {"code": 200, "message": "allowed to be admitted"}})
    );
}
