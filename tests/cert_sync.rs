//! Certificates against a mock apiserver (tower-test), each call asserted: the Secret race (our create loses with
//! 409, we re-read and serve the winner's CA: DECISIONS 15, spec/webhook-server.md §12 scenario 19); the caBundle
//! kept in the webhook configuration and the Kruise CRDs' conversion webhooks; URL mode (DECISIONS 21, scenario
//! 8); and readiness as the looks at the configurations find them (DECISIONS 22).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// The watches of the certificate sync's nudges (one object by name each), held open and silent: these tests
/// assert the sync's own calls, made by its timer and the served kinds.
static HELD: std::sync::Mutex<Vec<tower_test::mock::SendResponse<Response<Body>>>> =
    std::sync::Mutex::new(Vec::new());

async fn expect(
    handle: &mut Handle,
    method: Method,
    path: &str,
) -> (Value, tower_test::mock::SendResponse<Response<Body>>) {
    let (request, send) = loop {
        let (request, send) = tokio::time::timeout(Duration::from_secs(10), handle.next_request())
            .await
            .unwrap_or_else(|_| panic!("no {method} {path} within 10 s"))
            .expect("client dropped");
        let query = request.uri().query().unwrap_or_default();
        if !query.contains("fieldSelector=metadata.name") {
            break (request, send);
        }
        if query.contains("watch=true") {
            HELD.lock().unwrap_or_else(|p| p.into_inner()).push(send);
        } else {
            respond(
                send,
                StatusCode::OK,
                json!({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}),
            );
        }
    };
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

/// A new CA and serving certificate for `policy`, as a replica creates them.
fn fresh(policy: &kruise_certs::Policy) -> kruise_certs::CertBundle {
    let now = time::OffsetDateTime::now_utc();
    kruise_certs::execute(&kruise_certs::CertPlan::Fresh, None, now, policy).unwrap()
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
    let winner = fresh(&policy);
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

const SECRET: &str = "/api/v1/namespaces/kruise-system/secrets/kruise-webhook-certs";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kruise-mutating-webhook-configuration";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kruise-validating-webhook-configuration";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The mock apiserver with the objects it holds, by path: a GET answers them (a collection lists what lies below
/// it), a POST creates, a PATCH merges (JSON merge patch, with the `resourceVersion` precondition) and refuses
/// what the real one refuses: a `clientConfig` without exactly one of `url` and `service` (422).
struct FakeApiserver {
    handle: Handle,
    objects: BTreeMap<String, Value>,
    version: u64,
}

impl FakeApiserver {
    fn new(handle: Handle, objects: impl IntoIterator<Item = (String, Value)>) -> Self {
        Self {
            handle,
            objects: objects.into_iter().collect(),
            version: 100,
        }
    }

    /// Expects `method path` next and answers it from the objects held; returns the request body.
    async fn answer(&mut self, method: Method, path: &str) -> Value {
        let (body, send) = expect(&mut self.handle, method.clone(), path).await;
        self.reply(&method, path, &body, send);
        body
    }

    fn reply(
        &mut self,
        method: &Method,
        path: &str,
        body: &Value,
        send: tower_test::mock::SendResponse<Response<Body>>,
    ) {
        let (code, answer) = self.apply(method, path, body);
        respond(send, code, answer);
    }

    fn apply(&mut self, method: &Method, path: &str, body: &Value) -> (StatusCode, Value) {
        let not_found = (StatusCode::NOT_FOUND, status(404, "NotFound"));
        self.version += 1;
        let version = Value::String(self.version.to_string());
        match *method {
            Method::GET => match self.objects.get(path) {
                Some(object) => (StatusCode::OK, object.clone()),
                None if path == CRDS => {
                    let below = format!("{path}/");
                    let items: Vec<_> = self
                        .objects
                        .iter()
                        .filter(|(p, _)| p.starts_with(&below))
                        .map(|(_, o)| o.clone())
                        .collect();
                    let list =
                        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items});
                    (StatusCode::OK, list)
                }
                None => not_found,
            },
            Method::POST => {
                let mut created = body.clone();
                created["metadata"]["resourceVersion"] = version;
                let name = created["metadata"]["name"].as_str().unwrap();
                self.objects
                    .insert(format!("{path}/{name}"), created.clone());
                (StatusCode::CREATED, created)
            }
            Method::PATCH => {
                let Some(stored) = self.objects.get(path) else {
                    return not_found;
                };
                let precondition = &body["metadata"]["resourceVersion"];
                if precondition.is_string()
                    && *precondition != stored["metadata"]["resourceVersion"]
                {
                    return (StatusCode::CONFLICT, status(409, "Conflict"));
                }
                let mut merged = stored.clone();
                json_patch::merge(&mut merged, body);
                if !exactly_url_or_service(&merged) {
                    let mut invalid = status(422, "Invalid");
                    invalid["message"] = json!(
                        "clientConfig: Required value: exactly one of url or service is required"
                    );
                    return (StatusCode::UNPROCESSABLE_ENTITY, invalid);
                }
                merged["metadata"]["resourceVersion"] = version;
                self.objects.insert(path.to_owned(), merged.clone());
                (StatusCode::OK, merged)
            }
            _ => panic!("unexpected {method} {path}"),
        }
    }

    /// Expects `method path` next and fails it: with `code`, or with no answer at all (the connection failed).
    async fn fail(&mut self, method: Method, path: &str, code: Option<StatusCode>) {
        let (_, send) = expect(&mut self.handle, method, path).await;
        match code {
            Some(code) => {
                let reason = code.canonical_reason().unwrap_or("Failure");
                respond(send, code, status(code.as_u16(), reason));
            }
            None => send.send_error("connection refused"),
        }
    }

    /// Waits for `method path`, the first call of the next sync (so the one before has finished), runs `check`,
    /// then answers.
    async fn before(&mut self, method: Method, path: &str, check: impl FnOnce()) {
        let (body, send) = expect(&mut self.handle, method.clone(), path).await;
        check();
        self.reply(&method, path, &body, send);
    }
}

/// Whether every `clientConfig` in `value` has exactly one of `url` and `service`, as the apiserver's validation
/// of webhook configurations and CRDs demands.
fn exactly_url_or_service(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().all(|(key, v)| {
            let present = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
            (key != "clientConfig" || present("url") != present("service"))
                && exactly_url_or_service(v)
        }),
        Value::Array(items) => items.iter().all(exactly_url_or_service),
        _ => true,
    }
}

fn service_hook(name: &str, path: &str) -> Value {
    json!({"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "path": path, "port": 443}}})
}

fn configuration(kind: &str, name: &str, webhooks: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name, "resourceVersion": "9", "annotations": {"template": ""}}, "webhooks": webhooks})
}

/// The PEM under `key` of a Secret as created (base64 `data`).
fn secret_pem(secret: &Value, key: &str) -> String {
    let b64 = secret["data"][key].as_str().unwrap();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
    .unwrap()
}

fn conversion_crd(name: &str, group: &str, strategy: &str, client_config: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "resourceVersion": "3"}, "spec": {"group": group, "scope": "Namespaced",
        "names": {"kind": "X", "plural": name.split('.').next().unwrap()},
        "versions": [{"name": "v1beta1", "served": true, "storage": true}],
        "conversion": {"strategy": strategy, "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": client_config}}}})
}

fn our_service_conversion() -> Value {
    json!({"caBundle": "c3RhbGU=", "service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "path": "/convert", "port": 443}})
}

type Started = tokio::task::JoinHandle<anyhow::Result<kruise_webhook::certs::CertManager>>;

/// Starts the certificate manager of `config` against a mock apiserver, in the background (the test answers the
/// apiserver's side meanwhile); the task ends with the first sync. Returns the apiserver's handle, the serving
/// certificate store, readiness, and the task.
fn start(
    config: kruise_webhook::config::ServeConfig,
) -> (
    Handle,
    Arc<kruise_webhook::server::tls::CertStore>,
    Arc<kruise_webhook::server::health::Readiness>,
    Started,
) {
    kruise_webhook::install_crypto_provider();
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let readiness = Arc::new(kruise_webhook::server::health::Readiness::default());
    let store = Arc::new(kruise_webhook::server::tls::CertStore::default());
    let (task_readiness, task_store) = (readiness.clone(), store.clone());
    let task = tokio::spawn(async move {
        kruise_webhook::certs::CertManager::start(
            &config,
            task_store,
            Some(client),
            kruise_webhooks::registry::Served::ALL,
            task_readiness,
        )
        .await
    });
    (handle, store, readiness, task)
}

fn cluster_config(dir: &std::path::Path) -> kruise_webhook::config::ServeConfig {
    let mut config = kruise_webhook::config::ServeConfig::for_loopback(Vec::new(), dir.to_owned());
    config.cert_source = kruise_webhook::config::CertSource::SelfManaged;
    config.init_timeout = Duration::from_secs(15);
    config.cert_sync_interval = Duration::from_millis(20);
    config
}

/// DECISIONS 21, spec/webhook-server.md §6.4 step 3, §6.6, scenario 8: with WEBHOOK_HOST every webhook of ours and
/// every Kruise CRD conversion calls `https://<WEBHOOK_HOST>:<port><path>` with our caBundle and no `service`
/// (the apiserver refuses both: the 422 loop OpenKruise's merge into the old form ran into), the serving
/// certificate from the one CA of the Secret also names the host (an IP SAN), readiness sees the urls carry our
/// caBundle, and the next sync writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_mode_points_configurations_and_crds_at_webhook_host_and_then_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = cluster_config(dir.path());
    config.webhook_host = Some("10.0.0.5".to_owned());
    config.tls_addr.set_port(9876);
    let (handle, store, readiness, manager) = start(config);

    let crd_path = |name: &str| format!("{CRDS}/{name}");
    let mut apiserver = FakeApiserver::new(
        handle,
        [
            (
                MUTATING.to_owned(),
                configuration(
                    "MutatingWebhookConfiguration",
                    "kruise-mutating-webhook-configuration",
                    json!([service_hook("mpod.kb.io", "/mutate-pod")]),
                ),
            ),
            (
                VALIDATING.to_owned(),
                configuration(
                    "ValidatingWebhookConfiguration",
                    "kruise-validating-webhook-configuration",
                    json!([service_hook("vnamespace.kb.io", "/validate-namespace"),
                        // Pointed at the host by hand, on another port and without a caBundle: the x509 failure.
                        {"name": "vsidecarset.kb.io", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                         "clientConfig": {"url": "https://10.0.0.5:443/validate-apps-kruise-io-sidecarset"}},
                        {"name": "other.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                         "clientConfig": {"url": "https://other.example.com/check"}}]),
                ),
            ),
            (
                crd_path("clonesets.apps.kruise.io"),
                conversion_crd(
                    "clonesets.apps.kruise.io",
                    "apps.kruise.io",
                    "Webhook",
                    our_service_conversion(),
                ),
            ),
            (
                crd_path("sidecarsets.apps.kruise.io"),
                conversion_crd(
                    "sidecarsets.apps.kruise.io",
                    "apps.kruise.io",
                    "Webhook",
                    json!({"url": "https://10.0.0.5:9876/convert"}),
                ),
            ),
            (
                crd_path("podunavailablebudgets.policy.kruise.io"),
                conversion_crd(
                    "podunavailablebudgets.policy.kruise.io",
                    "policy.kruise.io",
                    "None",
                    our_service_conversion(),
                ),
            ),
            (
                crd_path("foos.example.com"),
                conversion_crd(
                    "foos.example.com",
                    "example.com",
                    "Webhook",
                    our_service_conversion(),
                ),
            ),
        ],
    );

    // Sync 1: the Secret is created (no fs writer in URL mode: DECISIONS 21), then everything points at the host.
    apiserver.answer(Method::GET, SECRET).await;
    let created = apiserver
        .answer(Method::POST, "/api/v1/namespaces/kruise-system/secrets")
        .await;
    let pem = |key: &str| secret_pem(&created, key);
    let cert = kruise_certs::inspect(&pem("cert.pem")).unwrap();
    assert_eq!(
        cert.ip_addresses,
        ["10.0.0.5".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(
        cert.dns_names,
        [
            "localhost",
            "kruise-webhook-service.kruise-system.svc",
            "kruise-webhook-service.kruise-system.svc.cluster.local"
        ]
    );
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(pem("ca-bundle.pem"));
    let ours =
        |path: &str| json!({"url": format!("https://10.0.0.5:9876{path}"), "caBundle": ca_bundle});
    for path in [MUTATING, VALIDATING] {
        apiserver.answer(Method::GET, path).await;
        let patch = apiserver.answer(Method::PATCH, path).await;
        assert_eq!(
            patch["metadata"]["resourceVersion"], "9",
            "optimistic concurrency"
        );
    }
    apiserver.answer(Method::GET, CRDS).await;
    for name in ["clonesets.apps.kruise.io", "sidecarsets.apps.kruise.io"] {
        let patch = apiserver.answer(Method::PATCH, &crd_path(name)).await;
        assert_eq!(
            patch["spec"]["conversion"]["webhook"]["conversionReviewVersions"],
            json!(["v1", "v1beta1"])
        );
    }
    let manager = manager.await.unwrap().unwrap();
    assert!(store.loaded());
    assert!(
        readiness.ca_bundle_in_place(),
        "the urls carry our caBundle"
    );

    let objects = &apiserver.objects;
    let client_configs = |path: &str| -> Vec<Value> {
        objects[path]["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["clientConfig"].clone())
            .collect()
    };
    assert_eq!(client_configs(MUTATING), [ours("/mutate-pod")]);
    assert_eq!(
        client_configs(VALIDATING),
        [
            ours("/validate-namespace"),
            ours("/validate-apps-kruise-io-sidecarset"),
            json!({"url": "https://other.example.com/check"})
        ]
    );
    let conversion = |name: &str| {
        objects[&crd_path(name)]["spec"]["conversion"]["webhook"]["clientConfig"].clone()
    };
    assert_eq!(
        conversion("clonesets.apps.kruise.io"),
        ours("/convert"),
        "service replaced by the url"
    );
    assert_eq!(conversion("sidecarsets.apps.kruise.io"), ours("/convert"));
    assert_eq!(
        conversion("podunavailablebudgets.policy.kruise.io"),
        our_service_conversion(),
        "strategy None"
    );
    assert_eq!(
        conversion("foos.example.com"),
        our_service_conversion(),
        "not a Kruise CRD"
    );

    // Sync 2 reads everything and writes nothing: the next call is sync 3's, not a PATCH.
    for path in [SECRET, MUTATING, VALIDATING, CRDS] {
        apiserver.answer(Method::GET, path).await;
    }
    apiserver.before(Method::GET, SECRET, || {}).await;
    manager.stop();
}

/// docs/startup-order.md rule 4, Service mode: with a conversion Service of its own (deploy/base's, which lists
/// replicas before they are ready), the Kruise CRDs' conversion calls it: a CRD an older install pointed at the
/// admission Service is moved there, one already there gets our caBundle, one pointing at another Service is
/// left alone; the serving certificate names both Services.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_mode_points_crd_conversion_at_the_conversion_service() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = cluster_config(dir.path());
    config.conversion_service_name = "kruise-webhook-conversion-service".to_owned();
    let (handle, store, _readiness, manager) = start(config);
    let crd_path = |name: &str| format!("{CRDS}/{name}");
    let service = |name: &str| json!({"caBundle": "c3RhbGU=", "service": {"namespace": "kruise-system", "name": name, "path": "/convert", "port": 443}});
    let mut apiserver = FakeApiserver::new(
        handle,
        [
            (
                MUTATING.to_owned(),
                configuration(
                    "MutatingWebhookConfiguration",
                    "kruise-mutating-webhook-configuration",
                    json!([service_hook("mpod.kb.io", "/mutate-pod")]),
                ),
            ),
            (
                VALIDATING.to_owned(),
                configuration(
                    "ValidatingWebhookConfiguration",
                    "kruise-validating-webhook-configuration",
                    json!([service_hook("vnamespace.kb.io", "/validate-namespace")]),
                ),
            ),
            (
                crd_path("clonesets.apps.kruise.io"),
                conversion_crd(
                    "clonesets.apps.kruise.io",
                    "apps.kruise.io",
                    "Webhook",
                    our_service_conversion(),
                ),
            ),
            (
                crd_path("sidecarsets.apps.kruise.io"),
                conversion_crd(
                    "sidecarsets.apps.kruise.io",
                    "apps.kruise.io",
                    "Webhook",
                    service("kruise-webhook-conversion-service"),
                ),
            ),
            (
                crd_path("workloadspreads.apps.kruise.io"),
                conversion_crd(
                    "workloadspreads.apps.kruise.io",
                    "apps.kruise.io",
                    "Webhook",
                    service("someone-elses"),
                ),
            ),
        ],
    );
    apiserver.answer(Method::GET, SECRET).await;
    let created = apiserver
        .answer(Method::POST, "/api/v1/namespaces/kruise-system/secrets")
        .await;
    let pem = |key: &str| secret_pem(&created, key);
    let cert = kruise_certs::inspect(&pem("cert.pem")).unwrap();
    assert_eq!(
        cert.dns_names,
        [
            "localhost",
            "kruise-webhook-service.kruise-system.svc",
            "kruise-webhook-service.kruise-system.svc.cluster.local",
            "kruise-webhook-conversion-service.kruise-system.svc",
            "kruise-webhook-conversion-service.kruise-system.svc.cluster.local"
        ]
    );
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(pem("ca-bundle.pem"));
    for path in [MUTATING, VALIDATING] {
        apiserver.answer(Method::GET, path).await;
        apiserver.answer(Method::PATCH, path).await;
    }
    apiserver.answer(Method::GET, CRDS).await;
    for name in ["clonesets.apps.kruise.io", "sidecarsets.apps.kruise.io"] {
        apiserver.answer(Method::PATCH, &crd_path(name)).await;
    }
    let manager = manager.await.unwrap().unwrap();
    assert!(store.loaded());
    let conversion = |name: &str| {
        apiserver.objects[&crd_path(name)]["spec"]["conversion"]["webhook"]["clientConfig"].clone()
    };
    let wanted = json!({"caBundle": ca_bundle, "service": {"namespace": "kruise-system",
        "name": "kruise-webhook-conversion-service", "path": "/convert", "port": 443}});
    assert_eq!(
        conversion("clonesets.apps.kruise.io"),
        wanted,
        "moved from the admission Service"
    );
    assert_eq!(conversion("sidecarsets.apps.kruise.io"), wanted);
    assert_eq!(
        conversion("workloadspreads.apps.kruise.io"),
        service("someone-elses"),
        "another Service's"
    );
    // The admission webhooks stay on the admission Service.
    assert_eq!(
        apiserver.objects[MUTATING]["webhooks"][0]["clientConfig"]["service"]["name"],
        "kruise-webhook-service"
    );
    // Sync 2 reads everything and writes nothing.
    for path in [SECRET, MUTATING, VALIDATING, CRDS] {
        apiserver.answer(Method::GET, path).await;
    }
    apiserver.before(Method::GET, SECRET, || {}).await;
    manager.stop();
}

/// DECISIONS 22 with self-managed certificates: once our caBundle was seen in place, configurations that cannot
/// be read (5xx, a failed connection) or a Secret that cannot be read leave the replica ready; a caBundle seen
/// wrong (edited by hand, and our repair refused) makes it unready, and only seeing it in place again readies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_managed_readiness_follows_what_is_seen_not_what_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, _, readiness, manager) = start(cluster_config(dir.path()));
    let validating = configuration(
        "ValidatingWebhookConfiguration",
        "kruise-validating-webhook-configuration",
        json!([service_hook("vnamespace.kb.io", "/validate-namespace")]),
    );
    let mut apiserver = FakeApiserver::new(handle, [(VALIDATING.to_owned(), validating)]);
    // Sync 1: Secret created, caBundle written (no mutating configuration: nothing to judge there). Another
    // replica writes the configuration between our read and our write: the conflict re-reads, not a sync later.
    apiserver.answer(Method::GET, SECRET).await;
    apiserver
        .answer(Method::POST, "/api/v1/namespaces/kruise-system/secrets")
        .await;
    apiserver.answer(Method::GET, MUTATING).await;
    apiserver.answer(Method::GET, VALIDATING).await;
    apiserver.objects.get_mut(VALIDATING).unwrap()["metadata"]["resourceVersion"] = json!("10");
    apiserver.answer(Method::PATCH, VALIDATING).await;
    apiserver.answer(Method::GET, VALIDATING).await;
    apiserver.answer(Method::PATCH, VALIDATING).await;
    apiserver.answer(Method::GET, CRDS).await;
    let manager = manager.await.unwrap().unwrap();
    assert!(readiness.ca_bundle_in_place());

    // Sync 2: the Secret cannot be read. Sync 3: neither configuration can.
    apiserver.fail(Method::GET, SECRET, None).await;
    apiserver
        .before(Method::GET, SECRET, || {
            assert!(readiness.ca_bundle_in_place())
        })
        .await;
    apiserver
        .fail(Method::GET, MUTATING, Some(StatusCode::SERVICE_UNAVAILABLE))
        .await;
    apiserver.fail(Method::GET, VALIDATING, None).await;
    apiserver.fail(Method::GET, CRDS, None).await;
    // Sync 4: someone replaced our caBundle, and our repair is refused.
    apiserver
        .before(Method::GET, SECRET, || {
            assert!(readiness.ca_bundle_in_place(), "unreachable is not unready")
        })
        .await;
    apiserver.answer(Method::GET, MUTATING).await;
    let stale = json!("c3RhbGU=");
    apiserver.objects.get_mut(VALIDATING).unwrap()["webhooks"][0]["clientConfig"]["caBundle"] =
        stale;
    apiserver.answer(Method::GET, VALIDATING).await;
    apiserver
        .fail(Method::PATCH, VALIDATING, Some(StatusCode::FORBIDDEN))
        .await;
    apiserver.answer(Method::GET, CRDS).await;
    // Sync 5: unreachable again, and the caBundle seen wrong still counts.
    apiserver
        .before(Method::GET, SECRET, || {
            assert!(!readiness.ca_bundle_in_place(), "seen wrong")
        })
        .await;
    apiserver.fail(Method::GET, MUTATING, None).await;
    apiserver.fail(Method::GET, VALIDATING, None).await;
    apiserver.answer(Method::GET, CRDS).await;
    // Sync 6 repairs it.
    apiserver
        .before(Method::GET, SECRET, || {
            assert!(!readiness.ca_bundle_in_place(), "not seen in place since")
        })
        .await;
    apiserver.answer(Method::GET, MUTATING).await;
    apiserver.answer(Method::GET, VALIDATING).await;
    apiserver.answer(Method::PATCH, VALIDATING).await;
    apiserver.answer(Method::GET, CRDS).await;
    apiserver
        .before(Method::GET, SECRET, || {
            assert!(readiness.ca_bundle_in_place())
        })
        .await;
    manager.stop();
}

/// DECISIONS 22 with external certificates (issue 24 item 11, as found against a stopped kube-apiserver): the
/// check re-reads the configurations every sync; once our caBundle was seen in place, reads that fail leave the
/// replica ready; cert-manager's caBundle seen wrong makes it unready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_readiness_survives_an_unreachable_apiserver_but_not_a_wrong_ca_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = fresh(&kruise_certs::Policy::new(
        "localhost",
        Vec::<String>::new(),
    ));
    for (name, content) in [
        ("tls.crt", &bundle.cert_pem),
        ("tls.key", &bundle.key_pem),
        ("ca.crt", &bundle.ca_bundle_pem),
    ] {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let mut config = cluster_config(dir.path());
    config.cert_source = kruise_webhook::config::CertSource::External;
    let (handle, _, readiness, manager) = start(config);
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&bundle.ca_bundle_pem);
    let mut injected = service_hook("vnamespace.kb.io", "/validate-namespace");
    injected["clientConfig"]["caBundle"] = json!(ca_bundle);
    let mut apiserver = FakeApiserver::new(
        handle,
        [(
            VALIDATING.to_owned(),
            configuration(
                "ValidatingWebhookConfiguration",
                "kruise-validating-webhook-configuration",
                json!([injected]),
            ),
        )],
    );
    // Sync 1 sees cert-manager's caBundle in place (the configurations are only read, never written).
    apiserver.answer(Method::GET, MUTATING).await;
    apiserver.answer(Method::GET, VALIDATING).await;
    let manager = manager.await.unwrap().unwrap();
    assert!(readiness.ca_bundle_in_place());
    // Sync 2: the connection fails half-way. Sync 3: the apiserver answers 503.
    apiserver
        .before(Method::GET, MUTATING, || {
            assert!(readiness.ca_bundle_in_place())
        })
        .await;
    apiserver.fail(Method::GET, VALIDATING, None).await;
    apiserver
        .fail(Method::GET, MUTATING, Some(StatusCode::SERVICE_UNAVAILABLE))
        .await;
    apiserver
        .fail(
            Method::GET,
            VALIDATING,
            Some(StatusCode::SERVICE_UNAVAILABLE),
        )
        .await;
    // Sync 4: back, with another caBundle.
    apiserver
        .before(Method::GET, MUTATING, || {
            assert!(readiness.ca_bundle_in_place(), "unreachable is not unready")
        })
        .await;
    apiserver.objects.get_mut(VALIDATING).unwrap()["webhooks"][0]["clientConfig"]["caBundle"] =
        json!("c3RhbGU=");
    apiserver.answer(Method::GET, VALIDATING).await;
    apiserver
        .before(Method::GET, MUTATING, || {
            assert!(!readiness.ca_bundle_in_place(), "seen wrong")
        })
        .await;
    manager.stop();
}

/// DECISIONS 27, issue 38: beside OpenKruise a replica keeps its own Secret and webhook configurations (the names
/// of deploy/overlays/beside-openkruise) and never reads or writes a CustomResourceDefinition, not even a Kruise
/// CRD whose conversion calls our Service; kruise-manager's configurations and CRDs are never asked for. The mock
/// apiserver fails the test on any request other than the one expected next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_openkruise_keeps_its_own_configurations_and_never_writes_crds() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = cluster_config(dir.path());
    config.beside_openkruise = true;
    config.secret_name = "kruise-pod-webhook-certs".to_owned();
    config.service_name = "kruise-pod-webhook-service".to_owned();
    config.mutating_configuration = "kruise-mutating-webhook-configuration-pod".to_owned();
    config.validating_configuration = "kruise-validating-webhook-configuration-pod".to_owned();
    let (handle, store, readiness, manager) = start(config);

    let secret = "/api/v1/namespaces/kruise-system/secrets/kruise-pod-webhook-certs";
    let mutating = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kruise-mutating-webhook-configuration-pod";
    let validating = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kruise-validating-webhook-configuration-pod";
    let ours = |name: &str, path: &str| {
        let mut hook = service_hook(name, path);
        hook["clientConfig"]["service"]["name"] = json!("kruise-pod-webhook-service");
        hook
    };
    let crd_path = |name: &str| format!("{CRDS}/{name}");
    let mut our_conversion = our_service_conversion();
    our_conversion["service"]["name"] = json!("kruise-pod-webhook-service");
    // kruise-manager's objects: its two configurations and the CRDs it keeps, one of them (by hand, or by a
    // replica of another mode) pointing at our Service.
    let openkruise = [
        (
            MUTATING.to_owned(),
            configuration(
                "MutatingWebhookConfiguration",
                "kruise-mutating-webhook-configuration",
                json!([service_hook(
                    "mcloneset.kb.io",
                    "/mutate-apps-kruise-io-v1alpha1-cloneset"
                )]),
            ),
        ),
        (
            VALIDATING.to_owned(),
            configuration(
                "ValidatingWebhookConfiguration",
                "kruise-validating-webhook-configuration",
                json!([service_hook(
                    "vcloneset.kb.io",
                    "/validate-apps-kruise-io-v1alpha1-cloneset"
                )]),
            ),
        ),
        (
            crd_path("statefulsets.apps.kruise.io"),
            conversion_crd(
                "statefulsets.apps.kruise.io",
                "apps.kruise.io",
                "Webhook",
                our_service_conversion(),
            ),
        ),
        (
            crd_path("sidecarsets.apps.kruise.io"),
            conversion_crd(
                "sidecarsets.apps.kruise.io",
                "apps.kruise.io",
                "Webhook",
                our_conversion,
            ),
        ),
    ];
    let mut apiserver = FakeApiserver::new(
        handle,
        openkruise.iter().cloned().chain([
            (
                mutating.to_owned(),
                configuration(
                    "MutatingWebhookConfiguration",
                    "kruise-mutating-webhook-configuration-pod",
                    json!([ours("mpod.kb.io", "/mutate-pod")]),
                ),
            ),
            (
                validating.to_owned(),
                configuration(
                    "ValidatingWebhookConfiguration",
                    "kruise-validating-webhook-configuration-pod",
                    json!([ours("vnamespace.kb.io", "/validate-namespace")]),
                ),
            ),
        ]),
    );

    // Sync 1: our Secret is created, our configurations get the caBundle; no CRD is listed or patched.
    apiserver.answer(Method::GET, secret).await;
    let created = apiserver
        .answer(Method::POST, "/api/v1/namespaces/kruise-system/secrets")
        .await;
    assert_eq!(created["metadata"]["name"], "kruise-pod-webhook-certs");
    let cert = kruise_certs::inspect(
        &String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(created["data"]["cert.pem"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        cert.dns_names
            .contains(&"kruise-pod-webhook-service.kruise-system.svc".to_owned()),
        "{:?}",
        cert.dns_names
    );
    for path in [mutating, validating] {
        apiserver.answer(Method::GET, path).await;
        let patch = apiserver.answer(Method::PATCH, path).await;
        assert!(
            patch["webhooks"][0]["clientConfig"]["caBundle"].is_string(),
            "{patch}"
        );
    }
    let manager = manager.await.unwrap().unwrap();
    assert!(store.loaded());
    assert!(readiness.ca_bundle_in_place());

    // Sync 2 reads ours and writes nothing; the next call is sync 3's Secret read, not a CRD list.
    for path in [secret, mutating, validating] {
        apiserver.answer(Method::GET, path).await;
    }
    apiserver.before(Method::GET, secret, || {}).await;
    manager.stop();
    for (path, object) in &openkruise {
        assert_eq!(&apiserver.objects[path], object, "{path} untouched");
    }
}
