//! Start-up in any order on the stand-in API server (docs/startup-order.md): a server whose cluster has no
//! SidecarSet CRD registers no `/mutate-pod`; once the CRD is established a new generation of caches and
//! paths takes over and injects, and when it is removed the path goes again; the generation in place answers
//! meanwhile. (The real-apiserver tier runs the same story through kube-apiserver and the binary.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::apiserver::StandIn;
use kruise_webhook::AppState;
use kruise_webhook::cache::Cluster;
use kruise_webhook::config::ServeConfig;
use kruise_webhook::server::generation::{self, Follow, Switch};
use kruise_webhook::server::{app, plain_app};
use serde_json::{Value, json};
use tower::ServiceExt;

fn crd(plural: &str, group: &str, kind: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": plural, "kind": kind},
            "versions": [{"name": "v1alpha1", "served": true, "storage": false},
                         {"name": "v1beta1", "served": true, "storage": true}]},
        "status": {"conditions": [{"type": "Established", "status": "True"}]}})
}

fn pod_create() -> String {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "create-web-0", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "web-0", "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "app:1"}]}},
            "oldObject": null, "dryRun": false}})
    .to_string()
}

/// `POST /mutate-pod` through the switch: the HTTP status, and the review's response when 200.
async fn mutate(tls: &Switch) -> (u16, Value) {
    let request = http::Request::post("/mutate-pod")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(pod_create()))
        .unwrap();
    let response = tls.service().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (status, review["response"].clone())
}

/// Polls `mutate` until `done` says so, for up to 10 s.
async fn until(tls: &Switch, what: &str, done: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let mut last = (0, Value::Null);
    for _ in 0..200 {
        last = mutate(tls).await;
        if done(last.0, &last.1) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within 10 s; last {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pod_webhook_follows_the_sidecarset_crd_coming_and_going() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    for ns in ["default", "kruise-system"] {
        stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }
    stand_in.put(crd(
        "podunavailablebudgets",
        "policy.kruise.io",
        "PodUnavailableBudget",
    ));
    let client = stand_in.client();
    let crds = kruise_webhook::cache::crds::watch(&client);
    tokio::time::timeout(Duration::from_secs(10), crds.store.ready())
        .await
        .expect("the CRDs listed");
    let kinds = crds.kinds_now();
    assert!(!kinds.served.sidecar_sets && kinds.served.pod_unavailable_budgets);
    let dir = tempfile::tempdir().unwrap();
    let config = ServeConfig::for_loopback(Vec::new(), dir.path().to_owned());
    let mut state = AppState::new(
        config.clone(),
        Cluster::Live(generation::cache(&client, &config, kinds)),
    );
    state.served = kinds.served;
    let (tls, plain) = (
        Switch::new(app(state.clone())),
        Switch::new(plain_app(state.clone())),
    );
    let certs = Arc::new(
        kruise_webhook::certs::CertManager::start(
            &config,
            state.certs.clone(),
            None,
            kinds.served,
            state.readiness.clone(),
        )
        .await
        .unwrap(),
    );
    let (_leading_tx, leading) = tokio::sync::watch::channel(false);
    let follower = generation::follow(
        Follow {
            client,
            tls: tls.clone(),
            plain,
            certs,
            controllers: Arc::default(),
            leading,
            routers: |s| (app(s.clone()), plain_app(s.clone())),
        },
        crds.kinds.clone(),
        kinds,
        state,
    );
    // No SidecarSet CRD: no pod webhook.
    assert_eq!(mutate(&tls).await.0, 404);
    // The CRD comes (with a SidecarSet of it): a new generation injects.
    stand_in.put(crd("sidecarsets", "apps.kruise.io", "SidecarSet"));
    stand_in.put(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "log-agent", "uid": "ss-uid", "generation": 1,
            "annotations": {"kruise.io/sidecarset-hash": "abc", "kruise.io/sidecarset-hash-without-image": "def"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "updateStrategy": {"type": "RollingUpdate"},
                 "containers": [{"name": "log-agent", "image": "agent:1",
                    "podInjectPolicy": "BeforeAppContainer",
                    "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
                    "shareVolumePolicy": {"type": "disabled"}}]}}));
    let (_, response) = until(&tls, "the pod webhook injecting", |status, response| {
        status == 200 && response["patch"].is_string()
    })
    .await;
    assert_eq!(response["allowed"], true, "{response}");
    // The CRD goes: so does the path.
    assert!(stand_in.remove("CustomResourceDefinition", "", "sidecarsets.apps.kruise.io"));
    until(&tls, "the pod webhook gone", |status, _| status == 404).await;
    follower.abort();
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}
