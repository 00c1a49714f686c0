//! Load bench: drives the real TLS admission server with N concurrent keep-alive connections and reports
//! requests/s and p50/p99, beside the same load against a no-op rustls/axum handler in the same run (same
//! TLS configuration, same certificate, and as its constant answer the very bytes our server answered the
//! request with): the gap is what our handler costs.
//!
//! `cargo bench --bench load` (env: LOAD_CONNECTIONS=32, LOAD_SECONDS=5, LOAD_REQUEST=<AdmissionReview
//! file>, LOAD_PATH=<webhook path>). The client runs in the same process on the same cores, so absolute
//! numbers understate what a remote apiserver would see; the comparison is like for like. Bounded: every
//! loop stops at its deadline, traffic stays on 127.0.0.1.

use std::path::PathBuf;

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use kruise_webhook::config::ServeConfig;
use kruise_webhook::server::tls::{CertStore, client_config, server_config};

struct Load {
    connections: usize,
    duration: Duration,
    warmup: Duration,
}

struct Outcome {
    requests: usize,
    errors: usize,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
}

fn client(ca_pem: &str) -> reqwest::Client {
    // One HTTP/1.1 keep-alive connection per client: N clients = N connections.
    let tls = client_config(ca_pem.as_bytes(), &[b"http/1.1"]).unwrap();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .pool_max_idle_per_host(1)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn drive(url: String, body: Arc<Vec<u8>>, ca_pem: &str, load: &Load) -> Outcome {
    let mut tasks = Vec::new();
    let start = Instant::now();
    let measure_from = start + load.warmup;
    let end = measure_from + load.duration;
    for _ in 0..load.connections {
        let (client, url, body) = (client(ca_pem), url.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(4096);
            let mut errors = 0usize;
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                let ok = match client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.to_vec())
                    .send()
                    .await
                {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if sent >= measure_from {
                    if ok {
                        latencies.push(sent.elapsed());
                    } else {
                        errors += 1;
                    }
                }
            }
            (latencies, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.unwrap();
        all.extend(l);
        errors += e;
    }
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Outcome {
        requests: all.len(),
        errors,
        elapsed: load.duration,
        p50: pct(0.50),
        p99: pct(0.99),
    }
}

fn report(name: &str, o: &Outcome) {
    println!(
        "{name:<34} {:>9.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms   ({} requests, {} errors)",
        o.requests as f64 / o.elapsed.as_secs_f64(),
        o.p50.as_secs_f64() * 1e3,
        o.p99.as_secs_f64() * 1e3,
        o.requests,
        o.errors
    );
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    kruise_webhook::install_crypto_provider();
    // As criterion: `cargo bench` passes --bench; `cargo test --benches` runs a short smoke check.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let load = if smoke {
        Load {
            connections: 2,
            duration: Duration::from_millis(300),
            warmup: Duration::from_millis(100),
        }
    } else {
        Load {
            connections: env("LOAD_CONNECTIONS", 32),
            duration: Duration::from_secs(env("LOAD_SECONDS", 5)),
            warmup: Duration::from_secs(1),
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let request_file = std::env::var("LOAD_REQUEST")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("examples/requests/delete-deployment.json"));
    let path = std::env::var("LOAD_PATH").unwrap_or_else(|_| "/validate-apps-deployment".into());
    let body = Arc::new(std::fs::read(&request_file).expect("LOAD_REQUEST readable"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServeConfig::for_loopback(vec![root.join("examples/cluster.yaml")], dir.path().to_owned());
        config.protection_log_dir = None;
        let server = kruise_webhook::start(config).await.unwrap();
        let ca = std::fs::read_to_string(dir.path().join("ca.crt")).unwrap();

        // The baseline: same rustls config and certificate, a handler that answers a constant: the bytes our
        // server answers this request with, so both runs move the same bytes and the gap is the handler.
        let answer: &'static [u8] = Vec::leak(
            client(&ca)
                .post(format!("https://localhost:{}{path}", server.tls_addr().port()))
                .header("content-type", "application/json")
                .body(body.to_vec())
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
                .to_vec(),
        );
        let store = Arc::new(CertStore::default());
        store
            .install(&std::fs::read(dir.path().join("tls.crt")).unwrap(), &std::fs::read(dir.path().join("tls.key")).unwrap())
            .unwrap();
        let noop = Router::new().route(
            &path,
            post(move || async move { ([("content-type", "application/json")], answer) }),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let noop_addr = listener.local_addr().unwrap();
        let handle = axum_server::Handle::new();
        let noop_server = axum_server::from_tcp_rustls(listener, axum_server::tls_rustls::RustlsConfig::from_config(server_config(store)))
            .unwrap()
            .handle(handle.clone());
        tokio::spawn(noop_server.serve(noop.into_make_service()));

        println!(
            "load: {} keep-alive HTTP/1.1 TLS connections, {:?} measured after {:?} warm-up, request {} ({} bytes) to {path}, answer {} bytes",
            load.connections,
            load.duration,
            load.warmup,
            request_file.display(),
            body.len(),
            answer.len()
        );
        let ours = drive(format!("https://localhost:{}{path}", server.tls_addr().port()), body.clone(), &ca, &load).await;
        report("kruise-webhook", &ours);
        let baseline = drive(format!("https://localhost:{}{path}", noop_addr.port()), body.clone(), &ca, &load).await;
        report("no-op rustls/axum handler", &baseline);
        handle.shutdown();
        server.shutdown().await.unwrap();
        assert_eq!(ours.errors, 0, "requests failed under load");
    });
}
