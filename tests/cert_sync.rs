//! Self-managed certificates against a mock apiserver (tower-test): the Secret race (our create loses with
//! 409, we re-read and serve the winner's CA: DECISIONS 15, spec/webhook-server.md §12 scenario 19) and the
//! caBundle kept in the webhook configuration and the Kruise CRDs' conversion webhooks, each call asserted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

async fn expect(
    handle: &mut Handle,
    method: Method,
    path: &str,
) -> (Value, tower_test::mock::SendResponse<Response<Body>>) {
    let (request, send) = tokio::time::timeout(Duration::from_secs(10), handle.next_request())
        .await
        .unwrap_or_else(|_| panic!("no {method} {path} within 10 s"))
        .expect("client dropped");
    assert_eq!(request.method(), method, "{}", request.uri());
    assert_eq!(request.uri().path(), path);
    let body = request.into_body().collect_bytes().await.unwrap();
    (serde_json::from_slice(&body).unwrap_or(Value::Null), send)
}

fn respond(send: tower_test::mock::SendResponse<Response<Body>>, status: StatusCode, body: Value) {
    send.send_response(
        Response::builder()
            .status(status)
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap(),
    );
}

fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": reason, "code": code, "message": reason})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_secret_race_serves_the_winners_ca_and_keeps_ca_bundles_current() {
    kruise_webhook::install_crypto_provider();
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let dir = tempfile::tempdir().unwrap();
    let mut config =
        kruise_webhook::config::ServeConfig::for_loopback(Vec::new(), dir.path().to_owned());
    config.cert_source = kruise_webhook::config::CertSource::SelfManaged;
    config.init_timeout = Duration::from_secs(15);

    // The other replica's Secret, which wins the race.
    let policy = kruise_certs::Policy::new(
        "kruise-webhook-service.kruise-system.svc",
        ["kruise-webhook-service.kruise-system.svc.cluster.local"],
    );
    let winner = kruise_certs::execute(
        &kruise_certs::CertPlan::Fresh,
        None,
        time::OffsetDateTime::now_utc(),
        &policy,
    )
    .unwrap();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let secret_data: serde_json::Map<String, Value> = winner
        .to_secret_data()
        .into_iter()
        .map(|(k, v)| (k, Value::String(b64(&v))))
        .collect();
    let ca_bundle = b64(winner.ca_bundle_pem.as_bytes());

    let apiserver = tokio::spawn(async move {
        let secret_path = "/api/v1/namespaces/kruise-system/secrets/kruise-webhook-certs";
        let (_, send) = expect(&mut handle, Method::GET, secret_path).await;
        respond(send, StatusCode::NOT_FOUND, status(404, "NotFound"));
        let (created, send) = expect(
            &mut handle,
            Method::POST,
            "/api/v1/namespaces/kruise-system/secrets",
        )
        .await;
        assert_eq!(created["metadata"]["name"], "kruise-webhook-certs");
        for key in [
            "ca-cert.pem",
            "ca-key.pem",
            "cert.pem",
            "key.pem",
            "tls.crt",
            "tls.key",
        ] {
            assert!(
                created["data"][key].is_string(),
                "OpenKruise's key {key} is written"
            );
        }
        respond(send, StatusCode::CONFLICT, status(409, "AlreadyExists"));
        let (_, send) = expect(&mut handle, Method::GET, secret_path).await;
        respond(
            send,
            StatusCode::OK,
            json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "kruise-webhook-certs", "namespace": "kruise-system", "resourceVersion": "5"}, "data": secret_data}),
        );

        // No mutating configuration in this version: tolerated.
        let (_, send) = expect(&mut handle, Method::GET, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kruise-mutating-webhook-configuration").await;
        respond(send, StatusCode::NOT_FOUND, status(404, "NotFound"));
        let validating = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kruise-validating-webhook-configuration";
        let (_, send) = expect(&mut handle, Method::GET, validating).await;
        let hook = |name: &str, path: &str| {
            json!({"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "path": path, "port": 443}}})
        };
        let live = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "kruise-validating-webhook-configuration", "resourceVersion": "9", "annotations": {"template": ""}},
            "webhooks": [hook("vnamespace.kb.io", "/validate-namespace"), hook("vgone.kb.io", "/validate-gone")]});
        respond(send, StatusCode::OK, live.clone());
        let (patch, send) = expect(&mut handle, Method::PATCH, validating).await;
        assert_eq!(
            patch["metadata"]["resourceVersion"], "9",
            "optimistic concurrency"
        );
        let webhooks = patch["webhooks"].as_array().unwrap();
        assert_eq!(
            webhooks.len(),
            1,
            "a path this version does not serve is dropped: {patch}"
        );
        assert_eq!(webhooks[0]["clientConfig"]["caBundle"], ca_bundle.as_str());
        assert!(
            patch["metadata"]["annotations"]["template"]
                .as_str()
                .unwrap()
                .contains("vgone.kb.io"),
            "kept in the template"
        );
        respond(send, StatusCode::OK, live);

        let (_, send) = expect(
            &mut handle,
            Method::GET,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        )
        .await;
        let crd = |name: &str, group: &str, strategy: &str| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name}, "spec": {"group": group, "scope": "Namespaced",
                "names": {"kind": "X", "plural": name.split('.').next().unwrap()},
                "versions": [{"name": "v1beta1", "served": true, "storage": true}],
                "conversion": {"strategy": strategy, "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"caBundle": "c3RhbGU=",
                    "service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "path": "/convert", "port": 443}}}}}})
        };
        respond(
            send,
            StatusCode::OK,
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinitionList", "metadata": {},
            "items": [crd("clonesets.apps.kruise.io", "apps.kruise.io", "Webhook"), crd("foos.example.com", "example.com", "Webhook"),
                      crd("sidecarsets.apps.kruise.io", "apps.kruise.io", "None"),
                      crd("statefulsets.apps.kruise.io", "apps.kruise.io", "Webhook")]}),
        );
        let (patch, send) = expect(
            &mut handle,
            Method::PATCH,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clonesets.apps.kruise.io",
        )
        .await;
        assert_eq!(
            patch["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"],
            ca_bundle.as_str()
        );
        assert_eq!(
            patch["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"],
            "/convert"
        );
        respond(
            send,
            StatusCode::OK,
            crd("clonesets.apps.kruise.io", "apps.kruise.io", "Webhook"),
        );
        // An OpenKruise CRD left pointing at the same Service, outside our RBAC: a warning, not a failed start.
        let (_, send) = expect(
            &mut handle,
            Method::PATCH,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/statefulsets.apps.kruise.io",
        )
        .await;
        respond(send, StatusCode::FORBIDDEN, status(403, "Forbidden"));
        handle
    });

    let store = Arc::new(kruise_webhook::server::tls::CertStore::default());
    let manager = kruise_webhook::certs::CertManager::start(
        &config,
        store.clone(),
        Some(client),
        kruise_webhooks::registry::Served::ALL,
        Default::default(),
    )
    .await
    .unwrap();
    let _handle = apiserver.await.unwrap(); // every expected call was made, and no other before start returned
    manager.stop();
    assert!(store.loaded());
    assert_eq!(
        manager.ca_bundle_pem().as_deref(),
        Some(winner.ca_bundle_pem.as_str()),
        "the Secret's CA wins"
    );
    assert_eq!(common::read(&dir.path().join("tls.crt")), winner.cert_pem);
    assert_eq!(
        common::read(&dir.path().join("ca.crt")),
        winner.ca_bundle_pem
    );
}
