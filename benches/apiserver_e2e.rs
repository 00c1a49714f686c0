//! The end-to-end cost of the pod webhook where users pay it: pod creates through a real kube-apiserver
//! (the real-apiserver tier's control plane, tests/envtest), 16 at a time, with no webhook, with a no-op
//! mutating webhook registered as `mpod.kb.io` is (URL mode on 127.0.0.1, same rules, namespaceSelector,
//! failurePolicy and timeout, TLS with a certificate of the same CA) answering without a patch, with the same
//! no-op replaying our patch for such a pod (the API server then applies the same patch and stores the same
//! bigger pod: what is left is our server's own cost), and with ours (the server binary as the shipped
//! ServiceAccount, external certificates, both configurations installed, its controllers running) injecting
//! one SidecarSet. Rates, p50/p99 of the create calls, and ours as a share of each no-op's, the four
//! alternating round by round in the same sitting (the machine's speed swings; apiserver, etcd, the webhooks
//! and the client share its 2 cores).
//!
//! `cargo bench --bench apiserver_e2e` (env: E2E_PODS=1600 pods per configuration and round, E2E_ROUNDS=3,
//! E2E_CLIENTS=16). Needs `KUBEBUILDER_ASSETS` (README, "Testing against a real API server"); without it it
//! says so and exits. `cargo test --benches` runs a smoke round of 40 pods each.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};

#[path = "../tests/envtest/mod.rs"]
mod envtest;

use envtest::{ControlPlane, Replica, ReplicaOptions};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the API server calls on pod create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Webhook {
    None,
    NoOp,
    Replay,
    Ours,
}

impl Webhook {
    fn label(self) -> &'static str {
        match self {
            Self::None => "no webhook",
            Self::NoOp => "no-op webhook (no patch)",
            Self::Replay => "no-op webhook replaying our patch",
            Self::Ours => "kruise-webhook (1 SidecarSet injected)",
        }
    }
}

/// One configuration's measurements over its rounds.
#[derive(Default)]
struct Runs {
    latencies: Vec<Duration>,
    pods: usize,
    elapsed: Duration,
}

impl Runs {
    fn rate(&self) -> f64 {
        self.pods as f64 / self.elapsed.as_secs_f64()
    }
    fn percentile(&mut self, p: f64) -> Duration {
        self.latencies.sort_unstable();
        let i = ((self.latencies.len() as f64 * p).ceil() as usize).saturating_sub(1);
        self.latencies.get(i).copied().unwrap_or_default()
    }
}

/// The no-op webhook: allows every review, echoing its uid, with no patch, or with `patch` (base64 JSON
/// patch: our server's answer to such a pod, replayed, so that the API server does the same work on it).
fn noop_server(
    runtime: &tokio::runtime::Runtime,
    certs: &std::path::Path,
    patch: Arc<std::sync::OnceLock<String>>,
) -> u16 {
    use kruise_webhook::server::tls::{CertStore, server_config};
    let store = Arc::new(CertStore::default());
    store
        .install(
            &std::fs::read(certs.join("tls.crt")).unwrap(),
            &std::fs::read(certs.join("tls.key")).unwrap(),
        )
        .unwrap();
    let answer = move |body: axum::body::Bytes, replay: bool| {
        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut response = json!({"uid": review["request"]["uid"], "allowed": true});
        if let Some(patch) = patch.get().filter(|_| replay) {
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch);
        }
        let answer = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response});
        ([("content-type", "application/json")], answer.to_string())
    };
    let replaying = answer.clone();
    let router = Router::new()
        .route(
            "/mutate-pod",
            post(move |body| async move { answer(body, false) }),
        )
        .route(
            "/replay",
            post(move |body| async move { replaying(body, true) }),
        );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let _guard = runtime.enter();
    let server = axum_server::from_tcp_rustls(
        listener,
        axum_server::tls_rustls::RustlsConfig::from_config(server_config(store)),
    )
    .unwrap()
    .map(|tls| tls.acceptor(axum_server::accept::NoDelayAcceptor));
    runtime.spawn(server.serve(router.into_make_service()));
    port
}

/// Creates pods `<prefix>-0`..`<prefix>-<count-1>` in `namespace`, `clients` at a time: each create's
/// latency, and the wall time.
fn create_pods(
    runtime: &tokio::runtime::Runtime,
    client: &kube::Client,
    namespace: &str,
    prefix: &str,
    count: usize,
    clients: usize,
) -> (Vec<Duration>, Duration) {
    use futures::StreamExt;
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), namespace);
    runtime.block_on(async {
        let started = Instant::now();
        let latencies: Vec<Duration> = futures::stream::iter(0..count)
            .map(|i| {
                let api = api.clone();
                async move {
                    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
                        "metadata": {"name": format!("{prefix}-{i}"), "labels": {"app": "bench"}},
                        "spec": {"automountServiceAccountToken": false,
                                 "containers": [{"name": "app", "image": "app:1"}]}}))
                    .unwrap();
                    let t = Instant::now();
                    api.create(&kube::api::PostParams::default(), &pod)
                        .await
                        .unwrap_or_else(|e| panic!("creating {prefix}-{i} in {namespace}: {e}"));
                    t.elapsed()
                }
            })
            .buffer_unordered(clients)
            .collect()
            .await;
        (latencies, started.elapsed())
    })
}

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let assets = match envtest::assets() {
        Ok(dir) => dir,
        Err(why) => {
            println!("apiserver_e2e skipped: {why}");
            return;
        }
    };
    kruise_webhook::install_crypto_provider();
    let (pods, rounds, clients) = if smoke {
        (40, 1, 4)
    } else {
        (
            env("E2E_PODS", 1600),
            env("E2E_ROUNDS", 3),
            env("E2E_CLIENTS", 16),
        )
    };
    let plane = ControlPlane::start(&assets).unwrap_or_else(|e| panic!("{e}"));
    let base = envtest::install_base(&plane).unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = plane
        .service_account_kubeconfig(envtest::NAMESPACE, envtest::SERVICE_ACCOUNT)
        .unwrap();
    let (certs, ca) = envtest::external_certs(plane.path()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let replayed = Arc::new(std::sync::OnceLock::new());
    let noop_port = noop_server(&runtime, &certs, replayed.clone());
    let port = envtest::free_port(Ipv4Addr::LOCALHOST);
    let mut configurations = envtest::webhook_configurations(&base);
    for c in &mut configurations {
        envtest::to_url(c, "127.0.0.1", port, &ca);
    }
    // The no-op registered as mpod.kb.io is: the same webhook, another name, the no-op's URL.
    let mut noop = configurations
        .iter()
        .find(|c| envtest::is_kind(c, "MutatingWebhookConfiguration"))
        .cloned()
        .unwrap();
    noop["metadata"] = json!({"name": "bench-noop"});
    let mut mpod = noop["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "mpod.kb.io")
        .cloned()
        .unwrap();
    mpod["name"] = json!("mpod.noop.bench");
    mpod["sideEffects"] = json!("None");
    mpod["clientConfig"] = json!({"url": format!("https://127.0.0.1:{noop_port}/mutate-pod"),
        "caBundle": base64_encode(&ca)});
    noop["webhooks"] = json!([mpod.clone()]);
    let mut replay = noop.clone();
    replay["metadata"] = json!({"name": "bench-replay"});
    replay["webhooks"][0]["clientConfig"]["url"] =
        json!(format!("https://127.0.0.1:{noop_port}/replay"));
    let deployment = base
        .iter()
        .find(|o| envtest::is_kind(o, "Deployment"))
        .unwrap()
        .clone();
    let mut replica = Replica::start(
        &deployment,
        &kubeconfig,
        &ReplicaOptions {
            ip: Ipv4Addr::LOCALHOST,
            port,
            webhook_host: Some("127.0.0.1".into()),
            external_certs: Some(certs.clone()),
            extra_args: Vec::new(),
        },
        plane.path(),
        "bench",
    );
    replica.wait_ready(Duration::from_secs(30)).unwrap();
    plane
        .apply(&[
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "bench-agent"},
            "spec": {"selector": {"matchLabels": {"app": "bench"}},
                     "containers": [{"name": "agent", "image": "agent:1"}]}}),
        ])
        .unwrap();
    // Our answer to a bench pod's create, for the no-op to replay (once our cache has the SidecarSet).
    let patch = runtime.block_on(our_patch(port, &ca));
    replayed.set(patch).unwrap();
    let client = runtime.block_on(plane.admin_client()).unwrap();
    let mut runs: [Runs; 4] = Default::default();
    let order = [Webhook::None, Webhook::NoOp, Webhook::Replay, Webhook::Ours];
    println!(
        "apiserver_e2e: {pods} pod creates per configuration and round, {clients} at a time, {rounds} alternating rounds"
    );
    for round in 0..rounds {
        for (runs, webhook) in runs.iter_mut().zip(order) {
            // Only the configuration measured is installed.
            for c in configurations.iter().chain([&noop, &replay]) {
                let kind = c["kind"].as_str().unwrap().to_lowercase();
                let name = c["metadata"]["name"].as_str().unwrap();
                plane
                    .kubectl(&["delete", &kind, name, "--ignore-not-found"], None)
                    .unwrap();
            }
            match webhook {
                Webhook::None => {}
                Webhook::NoOp => drop(plane.apply(&[noop.clone()]).unwrap()),
                Webhook::Replay => drop(plane.apply(&[replay.clone()]).unwrap()),
                Webhook::Ours => drop(plane.apply(&configurations).unwrap()),
            }
            let namespace = format!(
                "bench-{}-{round}",
                order.iter().position(|w| *w == webhook).unwrap()
            );
            plane
                .apply(&[
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
                    json!({"apiVersion": "v1", "kind": "ServiceAccount",
                           "metadata": {"name": "default", "namespace": namespace}}),
                ])
                .unwrap();
            // The apiserver picks a configuration change up within a second or so; a few creates outside
            // the measurement warm the connections of whatever it calls.
            std::thread::sleep(Duration::from_secs(2));
            create_pods(&runtime, &client, &namespace, "warm", clients, clients);
            let (latencies, elapsed) =
                create_pods(&runtime, &client, &namespace, "pod", pods, clients);
            runs.latencies.extend(latencies);
            runs.pods += pods;
            runs.elapsed += elapsed;
            if matches!(webhook, Webhook::Ours | Webhook::Replay) {
                let pod = plane
                    .kubectl(
                        &[
                            "get",
                            "pod",
                            "pod-5",
                            "-n",
                            &namespace,
                            "-o",
                            "jsonpath={.spec.containers[*].name}",
                        ],
                        None,
                    )
                    .unwrap();
                assert!(pod.contains("agent"), "our webhook did not inject: {pod}");
            }
        }
    }
    for (runs, webhook) in runs.iter_mut().zip(order) {
        println!(
            "{:<40} {:>8.1} pods/s  p50 {:>6.2} ms  p99 {:>6.2} ms",
            webhook.label(),
            runs.rate(),
            runs.percentile(0.50).as_secs_f64() * 1e3,
            runs.percentile(0.99).as_secs_f64() * 1e3
        );
    }
    println!(
        "{:<40} {:>8.3} of the no-op's rate (no webhook at all: {:.3})",
        "kruise-webhook / no-op (no patch)",
        runs[3].rate() / runs[1].rate(),
        runs[0].rate() / runs[1].rate()
    );
    println!(
        "{:<40} {:>8.3} of the replaying no-op's rate",
        "kruise-webhook / no-op replaying",
        runs[3].rate() / runs[2].rate()
    );
    replica.stop(Duration::from_secs(25)).unwrap();
}

/// Our server's patch for a bench pod's create (asked directly, as the API server would), once it injects.
async fn our_patch(port: u16, ca: &str) -> String {
    let tls = kruise_webhook::server::tls::client_config(ca.as_bytes(), &[b"http/1.1"]).unwrap();
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .unwrap();
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "pod-0", "namespace": "bench-2-0", "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "pod-0", "namespace": "bench-2-0", "labels": {"app": "bench"}},
                "spec": {"automountServiceAccountToken": false,
                         "containers": [{"name": "app", "image": "app:1", "imagePullPolicy": "IfNotPresent",
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                         "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                         "terminationGracePeriodSeconds": 30, "securityContext": {}, "enableServiceLinks": true,
                         "priority": 0, "preemptionPolicy": "PreemptLowerPriority"}},
            "oldObject": null, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}});
    for _ in 0..100 {
        let answer: Value = client
            .post(format!("https://127.0.0.1:{port}/mutate-pod"))
            .json(&review)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if let Some(patch) = answer["response"]["patch"].as_str() {
            return patch.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("our server never injected the bench SidecarSet");
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
