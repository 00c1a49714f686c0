//! Load bench: drives the real TLS admission server with N concurrent keep-alive connections and reports
//! requests/s and p50/p99, beside the same load against a no-op rustls/axum handler in the same run (same
//! TLS configuration and TCP_NODELAY, same certificate, and as its constant answer the very bytes our server
//! answered the request with): the gap is what our handler costs. Last comes our rate as a share of the
//! baseline's: the machine's speed swings between runs, the share much less.
//!
//! `cargo bench --bench load` (env: LOAD_CONNECTIONS=32, LOAD_SECONDS=5 measured per server, LOAD_ROUNDS=5
//! alternating rounds, LOAD_REQUEST=<AdmissionReview file>, LOAD_PATH=<webhook path>, LOAD_NOOP_SPIN_US=0).
//! `LOAD_MIX=examples/requests/mix.txt` replaces the one request by a mix: lines of `<path> <file>`, cycled
//! by every connection from its own offset (pod creates matched by SidecarSets and a WorkloadSpread,
//! evictions under a PUB, deletions of protected objects). The no-op then answers each request with our
//! answer to that request, picked by a header that our server ignores.
//! Besides rates and latencies it prints the process's CPU time per request for each server (read from
//! /proc; the client is in both), their difference (what our handler costs under load), and the share of
//! the machine's CPU time the hypervisor stole meanwhile. With LOAD_NOOP_SPIN_US the no-op handler busies
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
    /// Measured time per server, over all rounds.
    duration: Duration,
    /// Before the first round's measurement (connections opened, caches warm).
    warmup: Duration,
    /// Rounds, alternating our server and the baseline, each measuring `duration / rounds`.
    rounds: u32,
}

/// One server's measurements, summed over its rounds.
#[derive(Default)]
struct Outcome {
    latencies: Vec<Duration>,
    errors: usize,
    elapsed: Duration,
    /// The process's CPU time (user and system, client included) while measuring, when readable.
    cpu: Option<Duration>,
    /// The machine's CPU time stolen by the hypervisor, and all of its CPU time, while measuring.
    steal: Option<(u64, u64)>,
}

/// The process's CPU time so far (`/proc/self/stat` utime + stime, at USER_HZ = 100).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The machine's stolen and total CPU ticks so far (`/proc/stat`).
fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<u64> = stat
        .lines()
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    Some((cpu.get(7).copied().unwrap_or(0), cpu.iter().take(8).sum()))
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

/// The header that tells the no-op handler which answer of the mix to give.
const MIX_HEADER: &str = "x-load-mix";

/// The `index`-th request of the mix as written on the wire: head and body.
fn wire_request(path: &str, body: &[u8], index: usize) -> Vec<u8> {
    let mut request = format!(
        "POST {path}?timeout=10s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: kube-apiserver-admission\r\nAccept: application/json, */*\r\nContent-Type: application/json\r\n{MIX_HEADER}: {index}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// Drives `connections` connections for `warmup` then `duration`, measuring the latter.
async fn drive(
    port: u16,
    requests: Arc<Vec<Vec<u8>>>,
    tls: Arc<rustls::ClientConfig>,
    connections: usize,
    (warmup, duration): (Duration, Duration),
) -> Outcome {
    let mut tasks = Vec::new();
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + duration;
    // The CPU the process and the machine spend while measuring.
    let usage = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        let before = (process_cpu(), machine_ticks());
        tokio::time::sleep_until(end.into()).await;
        let after = (process_cpu(), machine_ticks());
        let cpu = before.0.zip(after.0).map(|(b, a)| a.saturating_sub(b));
        let steal = before
            .1
            .zip(after.1)
            .map(|(b, a)| (a.0.saturating_sub(b.0), a.1.saturating_sub(b.1)));
        (cpu, steal)
    });
    for offset in 0..connections {
        let (tls, requests) = (tls.clone(), requests.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(4096);
            let mut errors = 0usize;
            let mut connection = None;
            let mut next = offset;
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                let request = &requests[next % requests.len()];
                next += 1;
                // A failed exchange drops its connection; the next request opens a new one.
                let ok = match connection.take() {
                    Some(c) => Ok(c),
                    None => Connection::open(port, tls.clone()).await,
                };
                let ok = match ok {
                    Ok(mut c) => {
                        let answered = matches!(c.exchange(request).await, Ok((200, _)));
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
    let mut outcome = Outcome {
        elapsed: duration,
        ..Outcome::default()
    };
    for t in tasks {
        let (l, e) = t.await.unwrap();
        outcome.latencies.extend(l);
        outcome.errors += e;
    }
    (outcome.cpu, outcome.steal) = usage.await.unwrap();
    outcome
}

impl Outcome {
    /// Two rounds' measurements as one (CPU and steal only when read in both).
    fn merged(mut self, round: Outcome) -> Self {
        self.latencies.extend(round.latencies);
        self.errors += round.errors;
        self.elapsed += round.elapsed;
        self.cpu = self.cpu.zip(round.cpu).map(|(a, b)| a + b);
        self.steal = self
            .steal
            .zip(round.steal)
            .map(|(a, b)| (a.0 + b.0, a.1 + b.1));
        self
    }

    fn requests(&self) -> usize {
        self.latencies.len()
    }

    fn rate(&self) -> f64 {
        self.requests() as f64 / self.elapsed.as_secs_f64()
    }

    /// The latency at `p` (0-1) of the latencies, sorted first.
    fn percentile(&self, p: f64) -> Duration {
        let n = self.latencies.len();
        self.latencies
            .get(((n as f64 * p) as usize).min(n.saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }

    /// The process's CPU time per request answered, in microseconds.
    fn cpu_per_request(&self) -> Option<f64> {
        let requests = self.requests().max(1) as f64;
        self.cpu.map(|cpu| cpu.as_secs_f64() * 1e6 / requests)
    }
}

fn report(name: &str, o: &mut Outcome) {
    o.latencies.sort_unstable();
    let (p50, p99, p999) = (o.percentile(0.50), o.percentile(0.99), o.percentile(0.999));
    let cpu = o
        .cpu_per_request()
        .map_or_else(String::new, |us| format!("   {us:>5.1} µs CPU/req"));
    println!(
        "{name:<34} {:>9.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms   p999 {:>7.3} ms{cpu}   ({} requests, {} errors)",
        o.rate(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        p999.as_secs_f64() * 1e3,
        o.requests(),
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
            rounds: 2,
        }
    } else {
        Load {
            connections: env("LOAD_CONNECTIONS", 32),
            duration: Duration::from_secs(env("LOAD_SECONDS", 5)),
            warmup: Duration::from_secs(1),
            rounds: env("LOAD_ROUNDS", 5u32).max(1),
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // (webhook path, request file) of each request of the mix; one request unless LOAD_MIX names a mix.
    let mix: Vec<(String, PathBuf)> = match std::env::var("LOAD_MIX") {
        Ok(file) => std::fs::read_to_string(root.join(&file))
            .expect("LOAD_MIX readable")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (path, file) = l.split_once(' ').expect("`<path> <file>` per line");
                (path.to_owned(), root.join(file.trim()))
            })
            .collect(),
        Err(_) => vec![(
            std::env::var("LOAD_PATH").unwrap_or_else(|_| "/validate-apps-deployment".into()),
            std::env::var("LOAD_REQUEST")
                .map(PathBuf::from)
                .unwrap_or_else(|_| root.join("examples/requests/delete-deployment.json")),
        )],
    };
    assert!(!mix.is_empty(), "a mix of at least one request");
    let bodies: Vec<Vec<u8>> = mix
        .iter()
        .map(|(_, file)| std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display())))
        .collect();
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
        let requests: Arc<Vec<Vec<u8>>> = Arc::new(
            mix.iter().zip(&bodies).enumerate().map(|(i, ((path, _), body))| wire_request(path, body, i)).collect(),
        );
        let tls = Arc::new(client_config(ca.as_bytes(), &[b"http/1.1"]).unwrap());
        let mut first = Connection::open(server.tls_addr().port(), tls.clone()).await.unwrap();
        let mut answers: Vec<&'static [u8]> = Vec::new();
        for (request, (path, file)) in requests.iter().zip(&mix) {
            let (status, answer) = first.exchange(request).await.unwrap();
            assert_eq!(status, 200, "our server answers {} on {path}", file.display());
            answers.push(Vec::leak(answer.to_vec()));
        }
        let answers: &'static [&'static [u8]] = Vec::leak(answers);
        drop(first);
        let store = Arc::new(CertStore::default());
        store
            .install(&std::fs::read(dir.path().join("tls.crt")).unwrap(), &std::fs::read(dir.path().join("tls.key")).unwrap())
            .unwrap();
        let noop_spin = Duration::from_micros(env("LOAD_NOOP_SPIN_US", 0));
        let noop_handler = post(move |headers: axum::http::HeaderMap| async move {
            // Calibration: a handler that busies its core this long per request.
            if !noop_spin.is_zero() {
                let started = Instant::now();
                while started.elapsed() < noop_spin {
                    std::hint::spin_loop();
                }
            }
            let index: usize = headers
                .get(MIX_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            ([("content-type", "application/json")], answers[index % answers.len()])
        });
        let mut noop = Router::new();
        let mut paths: Vec<&str> = mix.iter().map(|(path, _)| path.as_str()).collect();
        paths.sort_unstable();
        paths.dedup();
        for path in paths {
            noop = noop.route(path, noop_handler.clone());
        }
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
            "load: {} keep-alive HTTP/1.1 TLS connections, {:?} measured per server in {} alternating rounds after {:?} warm-up",
            load.connections, load.duration, load.rounds, load.warmup
        );
        for (((path, file), body), answer) in mix.iter().zip(&bodies).zip(answers) {
            println!("  request {} ({} bytes) to {path}, answer {} bytes", file.display(), body.len(), answer.len());
        }
        // Alternating rounds: both servers see the machine in the same states (its speed swings within
        // seconds); each round reopens its connections, outside the measured time.
        let mut rounds: [Vec<Outcome>; 2] = Default::default();
        let slice = load.duration / load.rounds;
        for round in 0..load.rounds {
            let warmup = if round == 0 { load.warmup } else { load.warmup / 4 };
            for (outcomes, port) in rounds.iter_mut().zip([server.tls_addr().port(), noop_addr.port()]) {
                outcomes.push(drive(port, requests.clone(), tls.clone(), load.connections, (warmup, slice)).await);
            }
        }
        // `load.rounds` is at least one.
        let [mut ours, mut baseline] =
            rounds.map(|outcomes| outcomes.into_iter().reduce(Outcome::merged).unwrap_or_default());
        report("kruise-webhook", &mut ours);
        if noop_spin.is_zero() {
            report("no-op rustls/axum handler", &mut baseline);
        } else {
            report(&format!("no-op handler spinning {noop_spin:?}"), &mut baseline);
        }
        // The machine's speed swings between runs; the share of the baseline's rate moves much less.
        println!(
            "{:<34} {:>9.3} of the baseline's rate",
            "kruise-webhook / baseline",
            ours.rate() / baseline.rate()
        );
        if let (Some(a), Some(b)) = (ours.cpu_per_request(), baseline.cpu_per_request()) {
            println!("{:<34} {:>9.1} µs CPU per request more than the baseline (client included in both)", "kruise-webhook handler", a - b);
        }
        if let (Some((s1, t1)), Some((s2, t2))) = (ours.steal, baseline.steal) {
            println!("{:<34} {:>9.1} % of the machine's CPU time while measuring", "stolen by the hypervisor", 100.0 * (s1 + s2) as f64 / (t1 + t2).max(1) as f64);
        }
        handle.shutdown();
        server.shutdown().await.unwrap();
        assert_eq!(ours.errors, 0, "requests failed under load");
    });
}
