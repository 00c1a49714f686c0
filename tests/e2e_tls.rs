//! The real server on 127.0.0.1 over TLS, called as the kube-apiserver calls it, with a client that trusts
//! only the CA the server generated (standalone) or was given (external).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kruise_webhook::config::CertSource;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn example(name: &str) -> String {
    common::read(&common::root().join("examples/requests").join(name))
}

fn https(server: &kruise_webhook::Server, path: &str) -> String {
    format!("https://localhost:{}{path}", server.tls_addr().port())
}

async fn post(client: &reqwest::Client, url: &str, body: String) -> reqwest::Result<(u16, Value)> {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.json().await.unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_verdicts_readiness_and_metrics_over_tls() {
    let (server, dir) = common::start_standalone(|_| {}).await;
    let ca = common::read(&dir.path().join("ca.crt"));
    let client = common::tls_client(&ca, true);

    let (status, body) = post(
        &client,
        &https(&server, "/validate-namespace"),
        example("delete-namespace.json"),
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(
        body["response"],
        json!({"uid": "6b1c3c4e-0f5e-4b8a-9d1a-000000000001", "allowed": false, "status": {"code": 403,
               "message": "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active pods 2>0"}})
    );
    let (status, body) = post(
        &client,
        &https(&server, "/validate-apps-deployment"),
        example("delete-deployment.json"),
    )
    .await
    .unwrap();
    assert_eq!(
        (status, body["response"]["allowed"].clone()),
        (200, json!(false))
    );

    // The apiserver negotiates h2 when offered.
    let response = client.get(https(&server, "/readyz")).send().await.unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.text().await.unwrap(), "ok");

    let plain = reqwest::Client::new();
    let ready = plain
        .get(format!("http://{}/readyz", server.probe_addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let metrics = plain
        .get(format!("http://{}/metrics", server.metrics_addr()))
        .send()
        .await
        .unwrap();
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = metrics.text().await.unwrap();
    for line in [
        r#"controller_runtime_webhook_requests_total{webhook="/validate-namespace",code="403"} 1"#,
        r#"controller_runtime_webhook_requests_total{webhook="/validate-apps-deployment",code="403"} 1"#,
        r#"namespace_deletion_protection{name="shop",username="alice"} 1"#,
        r#"workload_deletion_protection{kind_namespace_name="Deployment_shop_checkout",username="alice"} 1"#,
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }

    // A client that does not trust the generated CA cannot talk to it: verification is real.
    let stranger = common::tls_client(
        &common::read(&common::root().join("tests/data/unrelated-ca.pem")),
        true,
    );
    assert!(
        stranger
            .get(https(&server, "/healthz"))
            .send()
            .await
            .is_err()
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_over_tls_gets_its_4xx_code_and_the_server_keeps_serving() {
    let (server, dir) = common::start_standalone(|c| c.body_timeout = Duration::from_secs(1)).await;
    let client = common::tls_client(&common::read(&dir.path().join("ca.crt")), true);
    let url = https(&server, "/validate-namespace");

    let (status, body) = post(&client, &url, " ".repeat(8 * 1024 * 1024))
        .await
        .unwrap();
    // controller-runtime's way: HTTP 200, the code and message in the review.
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["response"]["status"]["code"], 413, "{body}");
    let (status, body) = post(&client, &url, "{not json".into()).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["response"]["status"]["code"], 400, "{body}");

    // A client that announces a body and never finishes it is cut off by the body timeout.
    let ca = common::read(&dir.path().join("ca.crt"));
    let tls = kruise_webhook::server::tls::client_config(ca.as_bytes(), &[b"http/1.1"]).unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let tcp = tokio::net::TcpStream::connect(server.tls_addr())
        .await
        .unwrap();
    let mut stream = connector
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    // The server follows the client's order, which puts AES-128-GCM first as Go's (the apiserver's) does.
    assert_eq!(
        stream
            .get_ref()
            .1
            .negotiated_cipher_suite()
            .map(|s| s.suite()),
        Some(rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
    );
    stream
        .write_all(b"POST /validate-namespace HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"apiVer")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
            if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}}") {
                break;
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "the server must answer a stalled body within its timeout"
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""code":408"#), "{answer}");
    assert!(
        answer.contains("request body not received within 1s"),
        "{answer}"
    );

    let (status, body) = post(&client, &url, example("delete-namespace.json"))
        .await
        .unwrap();
    assert_eq!(
        (status, body["response"]["allowed"].clone()),
        (200, json!(false))
    );
    server.shutdown().await.unwrap();
}

/// Admission requests whose uid starts with `held-` stop in the webhook (a slow handler, blocking its
/// worker thread) until [`Held::release`]; the test knows how many are inside. Dropping it releases them.
#[derive(Clone, Default)]
struct Held {
    released: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    entered: Arc<std::sync::atomic::AtomicUsize>,
}

impl Held {
    fn hook(&self) -> kruise_webhook::server::BeforeDecide {
        let held = self.clone();
        Arc::new(move |req| {
            if req.uid.starts_with("held-") {
                held.entered.fetch_add(1, Ordering::SeqCst);
                let (lock, released) = &*held.released;
                let mut open = lock.lock().unwrap();
                while !*open {
                    open = released.wait(open).unwrap();
                }
            }
        })
    }

    /// Waits until `n` held requests are inside the webhook.
    async fn entered(&self, n: usize) {
        tokio::time::timeout(Duration::from_secs(30), async {
            while self.entered.load(Ordering::SeqCst) < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{n} requests held in the webhook"));
    }

    fn release(&self) {
        let (lock, released) = &*self.released;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        released.notify_all();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // A test that fails does not leave the server's threads blocked.
        self.release();
    }
}

/// The namespace deletion example as the review with uid `uid`.
fn delete_namespace(uid: &str) -> String {
    let mut review: Value = serde_json::from_str(&example("delete-namespace.json")).unwrap();
    review["request"]["uid"] = json!(uid);
    review.to_string()
}

async fn start_held(
    held: &Held,
    configure: impl FnOnce(&mut kruise_webhook::config::ServeConfig),
) -> (kruise_webhook::Server, tempfile::TempDir, reqwest::Client) {
    kruise_webhook::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut config = kruise_webhook::config::ServeConfig::for_loopback(
        vec![common::root().join("examples/cluster.yaml")],
        dir.path().to_owned(),
    );
    configure(&mut config);
    let server = kruise_webhook::server::start_with(config, Some(held.hook()))
        .await
        .unwrap();
    let client = common::tls_client(&common::read(&dir.path().join("ca.crt")), true);
    (server, dir, client)
}

/// The namespace deletion verdict the example gets.
fn denied_as_expected(uid: &str, (status, body): &(u16, Value)) {
    assert_eq!(*status, 200, "{body}");
    assert_eq!(body["response"]["uid"], uid);
    assert_eq!(body["response"]["allowed"], false);
    assert_eq!(body["response"]["status"]["code"], 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn shutdown_turns_readiness_off_and_drains_in_flight_requests() {
    const IN_FLIGHT: usize = 4;
    let held = Held::default();
    let (server, _dir, client) =
        start_held(&held, |c| c.shutdown_grace = Duration::from_secs(20)).await;
    let url = https(&server, "/validate-namespace");
    let requests: Vec<_> = (0..IN_FLIGHT)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                post(&client, &url, delete_namespace(&format!("held-{i}"))).await
            })
        })
        .collect();
    held.entered(IN_FLIGHT).await;

    let state = server.state().clone();
    let tls_addr = server.tls_addr();
    let shutdown = tokio::spawn(server.shutdown());
    // Readiness goes off while the requests are still inside the webhook.
    use tower::ServiceExt;
    let readyz = || async {
        let response = kruise_webhook::server::plain_app(state.clone())
            .oneshot(
                axum::http::Request::get("/readyz")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = response.status();
        let text = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, String::from_utf8_lossy(&text).into_owned())
    };
    let text = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match readyz().await {
                (status, text) if status == 500 => break text,
                _ => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    })
    .await
    .expect("/readyz reports the shutdown");
    assert!(text.contains("[-]not-shutting-down failed"), "{text}");
    assert!(
        !shutdown.is_finished(),
        "shutdown waits for the requests in flight"
    );

    // Every request in flight when the shutdown began completes with its verdict.
    held.release();
    for (i, request) in requests.into_iter().enumerate() {
        let answer = tokio::time::timeout(Duration::from_secs(30), request)
            .await
            .expect("an in-flight request completes once released")
            .unwrap()
            .expect("in-flight request completes");
        denied_as_expected(&format!("held-{i}"), &answer);
    }
    shutdown.await.unwrap().unwrap();
    // The listener is closed: a new connection is refused.
    assert!(tokio::net::TcpStream::connect(tls_addr).await.is_err());
    assert_eq!(
        state
            .metrics
            .requests
            .get_or_create(&kruise_webhook::metrics::WebhookCodeLabels::new(
                "/validate-namespace",
                "403"
            ))
            .get(),
        IN_FLIGHT as u64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn overload_at_five_times_capacity_sheds_the_excess_at_once_and_serves_the_rest() {
    const LIMIT: usize = 4;
    let held = Held::default();
    let (server, _dir, client) = start_held(&held, |c| c.max_in_flight = LIMIT).await;
    let url = https(&server, "/validate-namespace");

    // Capacity taken by slow requests...
    let admitted: Vec<_> = (0..LIMIT)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                post(&client, &url, delete_namespace(&format!("held-{i}"))).await
            })
        })
        .collect();
    held.entered(LIMIT).await;
    // ...and four times as many more on top: 5x capacity in flight.
    let excess: Vec<_> = (0..4 * LIMIT)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                post(&client, &url, delete_namespace(&format!("excess-{i}"))).await
            })
        })
        .collect();
    // The excess is answered while the admitted requests are still held: shed, not queued behind them
    // (queued, they could only be answered after the release below, and this would time out).
    let shed = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(excess))
        .await
        .expect("the excess is answered while capacity is still taken");
    for answer in shed {
        let (status, body) = answer.unwrap().unwrap();
        assert_eq!(status, 429, "{body}");
        assert_eq!(body["kind"], "Status");
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(body["code"], 429);
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .starts_with("kruise-webhook is overloaded: 4 admission requests in flight"),
            "{body}"
        );
    }
    assert_eq!(server.state().limit.available(), 0);
    assert!(
        admitted.iter().all(|r| !r.is_finished()),
        "the admitted requests are still inside"
    );

    // The admitted requests all complete with their verdict.
    held.release();
    for (i, request) in admitted.into_iter().enumerate() {
        let answer = tokio::time::timeout(Duration::from_secs(30), request)
            .await
            .expect("an admitted request completes once released");
        denied_as_expected(&format!("held-{i}"), &answer.unwrap().unwrap());
    }
    // Capacity is back and the server keeps serving.
    assert_eq!(server.state().limit.available(), LIMIT);
    for i in 0..2 * LIMIT {
        let uid = format!("after-{i}");
        denied_as_expected(
            &uid,
            &post(&client, &url, delete_namespace(&uid)).await.unwrap(),
        );
    }

    let text = reqwest::Client::new()
        .get(format!("http://{}/metrics", server.metrics_addr()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        r#"admission_shed_total{webhook="/validate-namespace"} 16"#,
        r#"controller_runtime_webhook_requests_total{webhook="/validate-namespace",code="429"} 16"#,
        r#"controller_runtime_webhook_requests_total{webhook="/validate-namespace",code="403"} 12"#,
        r#"controller_runtime_webhook_requests_in_flight{webhook="/validate-namespace"} 0"#,
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_the_serving_certificate_under_load_fails_no_request() {
    kruise_webhook::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let policy =
        kruise_certs::Policy::new("kruise-webhook-service.kruise-system.svc", ["localhost"]);
    let now = time::OffsetDateTime::now_utc();
    let mut bundle =
        kruise_certs::execute(&kruise_certs::CertPlan::Fresh, None, now, &policy).unwrap();
    let write = |b: &kruise_certs::CertBundle| {
        for (name, content) in [
            ("ca.crt", &b.ca_bundle_pem),
            ("tls.key", &b.key_pem),
            ("tls.crt", &b.cert_pem),
        ] {
            let tmp = dir.path().join(format!(".{name}"));
            std::fs::write(&tmp, content).unwrap();
            std::fs::rename(&tmp, dir.path().join(name)).unwrap();
        }
    };
    write(&bundle);
    let mut config = kruise_webhook::config::ServeConfig::for_loopback(
        vec![common::root().join("examples/cluster.yaml")],
        dir.path().to_owned(),
    );
    config.cert_source = CertSource::External;
    config.cert_sync_interval = Duration::from_secs(1);
    let server = kruise_webhook::start(config).await.unwrap();
    let store = server.state().certs.clone();
    let start_generation = store.generation();

    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut workers = Vec::new();
    for i in 0..4 {
        // Half the workers open a new connection (a new handshake) for every request.
        let client = common::tls_client(&bundle.ca_bundle_pem, i % 2 == 0);
        let (stop, ok, failed, url) = (
            stop.clone(),
            ok.clone(),
            failed.clone(),
            https(&server, "/validate-namespace"),
        );
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match post(&client, &url, example("delete-namespace.json")).await {
                    Ok((200, body)) if body["response"]["allowed"] == json!(false) => {
                        ok.fetch_add(1, Ordering::Relaxed)
                    }
                    other => {
                        eprintln!("failed request: {other:?}");
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }
    for round in 1..=3u64 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let plan = kruise_certs::CertPlan::ReissueServing {
            reason: format!("test rotation {round}"),
        };
        bundle = kruise_certs::execute(
            &plan,
            Some(&bundle),
            time::OffsetDateTime::now_utc(),
            &policy,
        )
        .unwrap();
        write(&bundle);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while store.generation() < start_generation + round {
            assert!(
                tokio::time::Instant::now() < deadline,
                "rotation {round} was not picked up"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert_eq!(
        failed,
        0,
        "{failed} of {} requests failed during rotation",
        ok + failed
    );
    assert!(ok > 20, "only {ok} requests ran during rotation");
    assert_eq!(store.generation(), start_generation + 3);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_create_matched_by_two_sidecarsets_gets_one_combined_patch() {
    let (server, dir) = common::start_standalone(|_| {}).await;
    let client = common::tls_client(&common::read(&dir.path().join("ca.crt")), true);
    let request = example("create-pod.json");
    let (status, body) = post(&client, &https(&server, "/mutate-pod"), request.clone())
        .await
        .unwrap();
    assert_eq!(status, 200);
    let response = &body["response"];
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    // DECISIONS 18: the audit annotation names what went in (the apiserver prefixes the webhook's name).
    assert_eq!(
        response["auditAnnotations"],
        json!({"sidecarset-injected": "log-agent,mesh"})
    );
    assert!(response.get("warnings").is_none(), "{response}");
    use base64::Engine;
    let patch: json_patch::Patch = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(response["patch"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let mut pod: Value =
        serde_json::from_str::<Value>(&request).unwrap()["request"]["object"].clone();
    json_patch::patch(&mut pod, &patch).unwrap();
    let names = |key: &str| -> Vec<String> {
        pod["spec"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("containers"), ["envoy", "web", "log-agent"]);
    assert_eq!(names("initContainers"), ["mesh-init"]);
    assert_eq!(names("volumes"), ["data", "log-buffer"]);
    assert_eq!(
        pod["spec"]["imagePullSecrets"],
        json!([{"name": "mesh-registry"}])
    );
    let log_agent = &pod["spec"]["containers"][2];
    assert_eq!(
        log_agent["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "LOG_LEVEL", "value": "info"}])
    );
    assert_eq!(
        log_agent["volumeMounts"],
        json!([{"name": "log-buffer", "mountPath": "/buffer"}, {"name": "data", "mountPath": "/data"}])
    );
    assert_eq!(
        pod["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"],
        "log-agent,mesh"
    );
    let hashes: Value = serde_json::from_str(
        pod["metadata"]["annotations"]["kruise.io/sidecarset-hash"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        hashes["log-agent"]["hash"],
        "6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684"
    );
    assert_eq!(hashes["mesh"]["sidecarList"], json!(["envoy"]));
    assert_eq!(
        pod["metadata"]["creationTimestamp"],
        Value::Null,
        "fields the request carried survive"
    );
    let _: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod).unwrap();
    server.shutdown().await.unwrap();
}

/// Posts `len` bytes of spaces to `path` over HTTP/2, the length declared or not, and returns the answer;
/// an error when the server reset the stream before it had the whole body or its answer could be read.
async fn post_h2(
    server: &kruise_webhook::Server,
    ca: &str,
    path: &str,
    len: usize,
    declare_length: bool,
) -> Result<(u16, Value), h2::Error> {
    let tls = kruise_webhook::server::tls::client_config(ca.as_bytes(), &[b"h2"]).unwrap();
    let tcp = tokio::net::TcpStream::connect(server.tls_addr())
        .await
        .unwrap();
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let (mut client, connection) = h2::client::handshake(stream).await?;
    tokio::spawn(connection);
    let mut request = http::Request::post(format!("https://localhost{path}"))
        .header("content-type", "application/json");
    if declare_length {
        request = request.header("content-length", len);
    }
    let (response, mut body) = client.send_request(request.body(()).unwrap(), false)?;
    let mut left = len;
    while left > 0 {
        body.reserve_capacity(left);
        let granted = std::future::poll_fn(|cx| body.poll_capacity(cx))
            .await
            .expect("the stream stays open while the body is sent")?;
        let n = granted.min(left);
        left -= n;
        body.send_data(bytes::Bytes::from(vec![b' '; n]), left == 0)?;
    }
    let (head, mut answer) = response.await?.into_parts();
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.data().await {
        let chunk = chunk?;
        let _ = answer.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    Ok((
        head.status.as_u16(),
        serde_json::from_slice(&bytes).unwrap(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_gets_its_413_review_over_http2_too() {
    let (server, dir) = common::start_standalone(|_| {}).await;
    let ca = common::read(&dir.path().join("ca.crt"));
    for declare_length in [true, false] {
        let (status, body) = post_h2(&server, &ca, "/validate-namespace", 8 << 20, declare_length)
            .await
            .unwrap_or_else(|e| panic!("declared length {declare_length}: {e}"));
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["response"]["status"],
            json!({"code": 413, "message": "request entity is too large; limit is 7340032 bytes"})
        );
    }
    server.shutdown().await.unwrap();
}
