//! Load bench: drives the real TLS admission server with N concurrent keep-alive connections and reports
//! requests/s and p50/p99, beside the same load against a no-op rustls/axum handler in the same run (same
//! TLS configuration and TCP_NODELAY, same certificate, and as its constant answer the very bytes our server
//! answered the request with): the gap is what our handler costs. Last comes our rate as a share of the
//! baseline's: the machine's speed swings between runs, the share much less.
//!
//! `cargo bench --bench load` (env: LOAD_CONNECTIONS=32, LOAD_SECONDS=5, LOAD_REQUEST=<AdmissionReview
//! file>, LOAD_PATH=<webhook path>, LOAD_NOOP_SPIN_US=0). With LOAD_NOOP_SPIN_US the no-op handler busies
//! its core that many microseconds per request: what a handler of that cost would reach on this machine.
//! The client runs in the same process on the same cores, so absolute numbers understate what a remote
//! apiserver would see; the comparison is like for like. The client is kept minimal for that reason (one
//! write per request, the answer read by its Content-Length, no pool, no URL parsing), and still checks
//! every answer is a whole `200`. Bounded: every loop stops at its deadline, traffic stays on 127.0.0.1.

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

/// One keep-alive HTTP/1.1 connection over TLS, as the kube-apiserver holds to a webhook: the request is
/// written whole (head and body in one write) and the answer read whole, by its Content-Length. A minimal
/// client on purpose: it shares the two cores with the server, and what it spends is not the server's.
struct Connection {
    stream: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    buf: Vec<u8>,
}

impl Connection {
    async fn open(port: u16, tls: Arc<rustls::ClientConfig>) -> std::io::Result<Self> {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        tcp.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// Sends `request` (head and body) and reads the answer: its status and body, once the whole body is in.
    async fn exchange(&mut self, request: &[u8]) -> std::io::Result<(u16, &[u8])> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
        self.stream.write_all(request).await?;
        self.stream.flush().await?;
        self.buf.clear();
        let mut head_end = None;
        loop {
            if self.buf.len() == self.buf.capacity() {
                self.buf.reserve(self.buf.len());
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(bad("connection closed mid-answer"));
            }
            if head_end.is_none() {
                head_end = self
                    .buf
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .map(|p| p + 4);
            }
            let Some(end) = head_end else { continue };
            let head =
                std::str::from_utf8(&self.buf[..end]).map_err(|_| bad("answer head not UTF-8"))?;
            let status = head
                .strip_prefix("HTTP/1.1 ")
                .and_then(|rest| rest.get(..3))
                .and_then(|code| code.parse().ok())
                .ok_or_else(|| bad("no HTTP/1.1 status line"))?;
            let length: usize = head
                .split("\r\n")
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .ok_or_else(|| bad("answer without Content-Length"))?;
            if self.buf.len() >= end + length {
                return Ok((status, &self.buf[end..end + length]));
            }
        }
    }
}

/// The request as written on the wire: head and body.
fn wire_request(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path}?timeout=10s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: kube-apiserver-admission\r\nAccept: application/json, */*\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

async fn drive(
    port: u16,
    request: Arc<Vec<u8>>,
    tls: Arc<rustls::ClientConfig>,
    load: &Load,
) -> Outcome {
    let mut tasks = Vec::new();
    let start = Instant::now();
    let measure_from = start + load.warmup;
    let end = measure_from + load.duration;
    for _ in 0..load.connections {
        let (tls, request) = (tls.clone(), request.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(4096);
            let mut errors = 0usize;
            let mut connection = None;
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                // A failed exchange drops its connection; the next request opens a new one.
                let ok = match connection.take() {
                    Some(c) => Ok(c),
                    None => Connection::open(port, tls.clone()).await,
                };
                let ok = match ok {
                    Ok(mut c) => {
                        let answered = matches!(c.exchange(&request).await, Ok((200, _)));
                        if answered {
                            connection = Some(c);
                        }
                        answered
                    }
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

impl Outcome {
    fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

fn report(name: &str, o: &Outcome) {
    println!(
        "{name:<34} {:>9.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms   ({} requests, {} errors)",
        o.rate(),
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
        let request = Arc::new(wire_request(&path, &body));
        let tls = Arc::new(client_config(ca.as_bytes(), &[b"http/1.1"]).unwrap());
        let mut first = Connection::open(server.tls_addr().port(), tls.clone()).await.unwrap();
        let (status, answer) = first.exchange(&request).await.unwrap();
        assert_eq!(status, 200, "our server answers the request");
        let answer: &'static [u8] = Vec::leak(answer.to_vec());
        drop(first);
        let store = Arc::new(CertStore::default());
        store
            .install(&std::fs::read(dir.path().join("tls.crt")).unwrap(), &std::fs::read(dir.path().join("tls.key")).unwrap())
            .unwrap();
        let noop_spin = Duration::from_micros(env("LOAD_NOOP_SPIN_US", 0));
        let noop = Router::new().route(
            &path,
            post(move || async move {
                // Calibration: a handler that busies its core this long per request.
                if !noop_spin.is_zero() {
                    let started = Instant::now();
                    while started.elapsed() < noop_spin {
                        std::hint::spin_loop();
                    }
                }
                ([("content-type", "application/json")], answer)
            }),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let noop_addr = listener.local_addr().unwrap();
        let handle = axum_server::Handle::new();
        let noop_server = axum_server::from_tcp_rustls(listener, axum_server::tls_rustls::RustlsConfig::from_config(server_config(store)))
            .unwrap()
            .map(|tls| tls.acceptor(axum_server::accept::NoDelayAcceptor))
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
        let ours = drive(server.tls_addr().port(), request.clone(), tls.clone(), &load).await;
        report("kruise-webhook", &ours);
        let baseline = drive(noop_addr.port(), request, tls, &load).await;
        if noop_spin.is_zero() {
            report("no-op rustls/axum handler", &baseline);
        } else {
            report(&format!("no-op handler spinning {noop_spin:?}"), &baseline);
        }
        // The machine's speed swings between runs; the share of the baseline's rate moves much less.
        println!(
            "{:<34} {:>9.3} of the baseline's rate",
            "kruise-webhook / baseline",
            ours.rate() / baseline.rate()
        );
        handle.shutdown();
        server.shutdown().await.unwrap();
        assert_eq!(ours.errors, 0, "requests failed under load");
    });
}
