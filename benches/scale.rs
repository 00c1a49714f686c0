//! Scale bench (issue 24, items 4 and 5; issue 29): the server's informer caches and its SidecarSet
//! controller over a cluster of 10,000 pods, 1,000 SidecarSets (each with its ControllerRevision), 1,000
//! PodUnavailableBudgets, 1,000 WorkloadSpreads and 100 namespaces, served by an in-process mock
//! kube-apiserver ([`mock`]) that lists and watches the way a real one does (a `resourceVersion=0` LIST
//! comes whole, about 4 KB a pod with managedFields). Reports:
//! 1. the time from starting the caches to all of them synced, and the process's VmRSS and VmHWM then
//!    (from /proc/self/status; the mock generates its objects on demand and holds only what changed);
//! 2. the controller's first pass over every SidecarSet: its CPU time, the wall time until the process
//!    fell quiet (under 2 % of a core over half a second), and its writes (0 expected: every status and
//!    revision is up to date);
//! 3. the leader's idle CPU between events, as a share of one core (/proc/self/stat over the window, after
//!    the first pass settled; nothing changes in the cluster meanwhile);
//! 4. the time from a pod change (a watch event turning a pod unready, then ready again) to the write of
//!    the status of the SidecarSet that injected it;
//! 5. per-request latency through the server's Router (decode, webhook, encode; no TLS) against these
//!    caches and against a small cluster from the same generator (20 pods, 2 SidecarSets, 2 PUBs, 2
//!    WorkloadSpreads, 1 namespace): a pod create matched by a SidecarSet in a namespace with PUBs and
//!    WorkloadSpreads, and a dry-run eviction of a cached pod under a PUB (dry runs: the status commits
//!    are the `pub_gate` and `workloadspread` benches' subject), `SCALE_REQUESTS` of each, p50/p99 and the
//!    ratio at scale / small.
//!
//! With `SCALE_MISSED=n` the first `n` pods are created without their SidecarSet's sidecars (no injected
//! list): the first pass then also tells each of them once (docs/missed-sidecars.md) and writes the statuses
//! that count them out; it reports when the last event arrived.
//!
//! `cargo bench --bench scale` (env: SCALE_PODS=10000, SCALE_SIDECARSETS=1000, SCALE_BUDGETS=1000,
//! SCALE_SPREADS=1000, SCALE_NAMESPACES=100, SCALE_MISSED=0, SCALE_SETTLE_SECONDS=60 (the longest wait for the first
//! pass), SCALE_IDLE_SECONDS=30, SCALE_CHANGES=20, SCALE_REQUESTS=20000).
//!
//! `SCALE_FILES=json|yaml|both` measures the standalone server instead (`serve --objects FILE`): the
//! `SCALE_SIDECARSETS` SidecarSets the mock serves (same objects, with their status) written to a temp file
//! as one JSON `List` or as multi-document YAML, then the time from [`kruise_webhook::start`] (which loads
//! the file and builds the view) to `/readyz` answering 200, and VmRSS/VmHWM then. Under `cargo test` (no
//! `--bench`) a small cluster and short windows: a smoke run of everything.

use std::time::{Duration, Instant};

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "scale/mock.rs"]
mod mock;
#[path = "scale/objects.rs"]
mod objects;

use http_body_util::BodyExt;
use tower::ServiceExt;

use kruise_webhook::cache::{Cluster, LiveCache, shared};
use kruise_webhook::config::ServeConfig;
use kruise_webhook::controller::Controllers;
use kruise_webhook::metrics::Metrics;
use kruise_webhook::server::AppState;
use kruise_webhooks::registry::Served;

use mock::{Kind, MockApi};
use objects::Sizes;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// VmRSS and VmHWM, in KiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The process's CPU time so far (`/proc/self/stat` utime + stime, at USER_HZ = 100).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let ticks = stat.rsplit_once(')').map_or(0, |(_, rest)| {
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let at = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        at(11) + at(12)
    });
    Duration::from_millis(ticks * 10)
}

/// CPU time of the process's live threads (`/proc/self/task/*/schedstat`, nanoseconds): finer than
/// [`process_cpu`]'s ticks, but blind to threads that ended in between (tokio's workers do not).
fn threads_cpu() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten();
    let nanos: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Waits until the process falls quiet (under 2 % of a core over half a second) or `longest` passed;
/// returns the wall time waited and whether it fell quiet.
async fn until_quiet(longest: Duration) -> (Duration, bool) {
    let started = Instant::now();
    let window = Duration::from_millis(500);
    loop {
        let before = threads_cpu();
        tokio::time::sleep(window).await;
        let busy = threads_cpu().saturating_sub(before);
        if busy < window / 50 {
            return (started.elapsed(), true);
        }
        if started.elapsed() >= longest {
            return (started.elapsed(), false);
        }
    }
}

/// Starts the caches `serve` starts for the pod webhooks (SidecarSets and revisions, PUBs, WorkloadSpreads;
/// no workload stores: the mock serves no Deployments, so owner chains are not walked) on `mock`, and waits
/// until they synced.
async fn synced_cache(mock: &MockApi) -> (LiveCache, Cluster) {
    let cache = LiveCache::start_all(mock.client(), Some("kruise-system"), true, true, None);
    let cluster = Cluster::Live(cache.clone());
    // A watch whose list holds an object it cannot decode retries forever (and the bench logs nothing):
    // fail instead of waiting.
    let synced = async {
        while !cluster.synced() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(120), synced)
        .await
        .expect("caches synced within 120 s (does every object the mock serves decode?)");
    (cache, cluster)
}

/// An AdmissionReview of a pod create of SidecarSet `group`'s workload (its labels, in its namespace), as
/// the ReplicaSet controller sends it.
fn pod_create(sizes: &Sizes, group: usize, n: usize) -> String {
    let ns = group % sizes.namespaces;
    format!(
        r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"0a1b2c3d-0000-4000-8000-{n:012}","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"requestKind":{{"group":"","version":"v1","kind":"Pod"}},"requestResource":{{"group":"","version":"v1","resource":"pods"}},"namespace":"ns-{ns:03}","operation":"CREATE","userInfo":{{"username":"system:serviceaccount:kube-system:replicaset-controller","groups":["system:serviceaccounts","system:authenticated"]}},"object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"generateName":"web-{group:04}-7d9f8c6b5-","namespace":"ns-{ns:03}","creationTimestamp":null,"labels":{{"app":"web-{group:04}","pod-template-hash":"7d9f8c6b5","tier":"frontend"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-{group:04}-7d9f8c6b5","uid":"1b1c2d3e-0000-4000-8000-{group:012}","controller":true,"blockOwnerDeletion":true}}]}},"spec":{{"containers":[{{"name":"app","image":"registry.example.com/team/web:2.4.1","ports":[{{"name":"http","containerPort":8080,"protocol":"TCP"}}],"resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","securityContext":{{}},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},"status":{{}}}},"oldObject":null,"dryRun":false,"options":{{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}}}}}}"#
    )
}

/// An AdmissionReview of a dry-run eviction of pod `i` (in the cache, under its workload's PUB).
fn pod_eviction(sizes: &Sizes, i: usize, n: usize) -> String {
    let pod: serde_json::Value =
        serde_json::from_str(&objects::pod(sizes, i, 1, true)).expect("the pod parses");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"0a1b2c3d-0000-4000-9000-{n:012}","kind":{{"group":"policy","version":"v1","kind":"Eviction"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"subResource":"eviction","requestKind":{{"group":"policy","version":"v1","kind":"Eviction"}},"requestResource":{{"group":"","version":"v1","resource":"pods"}},"requestSubResource":"eviction","name":"{name}","namespace":"{ns}","operation":"CREATE","userInfo":{{"username":"system:serviceaccount:kube-system:drain","groups":["system:serviceaccounts","system:authenticated"]}},"object":{{"kind":"Eviction","apiVersion":"policy/v1","metadata":{{"name":"{name}","namespace":"{ns}","creationTimestamp":null}},"deleteOptions":{{"dryRun":["All"]}}}},"oldObject":null,"dryRun":true,"options":{{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}}}}}}"#
    )
}

/// Latencies of `n` requests to `path` through the Router, one at a time (`body(k)` is the k-th), after a
/// warm-up; sorted. Checks every answer with `check`.
async fn timed(
    router: &axum::Router,
    path: &str,
    n: usize,
    body: impl Fn(usize) -> String,
    check: impl Fn(&serde_json::Value),
) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(n);
    for k in 0..n + n / 10 {
        let request = http::Request::post(path)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body(k)))
            .expect("a request");
        let at = Instant::now();
        let response = router.clone().oneshot(request).await.expect("an answer");
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        let took = at.elapsed();
        if k == 0 {
            check(&serde_json::from_slice(&bytes).expect("a review"));
        }
        // The first tenth warms up.
        if k >= n / 10 {
            latencies.push(took);
        }
    }
    latencies.sort();
    latencies
}

/// p50 and p99 of pod creates and evictions against `cluster` (of `sizes`), through the server's Router.
async fn request_latencies(sizes: &Sizes, cluster: Cluster, n: usize) -> [(Duration, Duration); 2] {
    let config = ServeConfig::for_loopback(Vec::new(), std::env::temp_dir());
    let router = kruise_webhook::app(AppState::new(config, cluster));
    // A workload with pods, a PUB and a WorkloadSpread.
    let group = 7 % sizes.sidecar_sets;
    let creates = timed(
        &router,
        "/mutate-pod",
        n,
        |k| pod_create(sizes, group, k),
        |review| {
            let response = &review["response"];
            assert_eq!(response["allowed"], true, "{review}");
            let annotations = response["auditAnnotations"].to_string();
            assert!(
                response["patch"].is_string()
                    && annotations.contains(&format!("sidecarset-{group:04}")),
                "the pod create is injected by sidecarset-{group:04}: {review}"
            );
        },
    )
    .await;
    // Pod `group` belongs to the group (`group < sidecar_sets`).
    let evictions = timed(
        &router,
        "/validate-pod",
        n,
        |k| pod_eviction(sizes, group, k),
        // Allowed, or refused by the workload's PUB when its budget is spent (50,000 SidecarSets over 10,000
        // pods leave one pod a workload): the gate's path either way.
        |review| {
            let response = &review["response"];
            assert!(
                response["allowed"] == true
                    || response["status"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(&format!("\"pub-{group:04}\""))),
                "{review}"
            );
        },
    )
    .await;
    [
        (percentile(&creates, 0.5), percentile(&creates, 0.99)),
        (percentile(&evictions, 0.5), percentile(&evictions, 0.99)),
    ]
}

/// The SidecarSets of `sizes` as the mock serves them (with their status), written as one JSON `List` or as
/// multi-document YAML into `dir`.
fn write_sidecar_sets(sizes: &Sizes, yaml: bool, dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write as _;
    let path = dir.join(if yaml {
        "sidecarsets.yaml"
    } else {
        "sidecarsets.json"
    });
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("a temp file"));
    if !yaml {
        let _ = write!(out, r#"{{"apiVersion":"v1","kind":"List","items":["#);
    }
    for j in 0..sizes.sidecar_sets {
        let pods = sizes.pods_of(j);
        let status = objects::sidecar_set_status(sizes, j, pods, pods);
        let text = objects::sidecar_set(j, 1, Some(&status));
        if yaml {
            let value: serde_json::Value =
                serde_json::from_str(&text).expect("the SidecarSet parses");
            let doc = serde_saphyr::to_string(&value).expect("YAML");
            let _ = write!(out, "---\n{doc}");
        } else {
            let _ = write!(out, "{}{text}", if j == 0 { "" } else { "," });
        }
    }
    if !yaml {
        let _ = write!(out, "]}}");
    }
    out.flush().expect("written");
    path
}

/// The standalone server on a file of `sizes.sidecar_sets` SidecarSets: time to ready, memory then.
async fn from_files(sizes: &Sizes, yaml: bool) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = write_sidecar_sets(sizes, yaml, dir.path());
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let (rss_start, _) = memory();
    let started = Instant::now();
    let config = ServeConfig::for_loopback(vec![path], dir.path().join("certs"));
    let server = kruise_webhook::start(config)
        .await
        .expect("the standalone server starts");
    let loaded = started.elapsed();
    let readyz = format!("http://{}/readyz", server.probe_addr());
    let client = reqwest::Client::new();
    loop {
        match client.get(&readyz).send().await {
            Ok(r) if r.status() == 200 => break,
            _ => tokio::time::sleep(Duration::from_millis(1)).await,
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "not ready within 300 s"
        );
    }
    let ready = started.elapsed();
    let (rss, hwm) = memory();
    assert_eq!(
        kruise_webhooks::view::SidecarSetView::sidecar_sets(&server.state().cluster).len(),
        sizes.sidecar_sets
    );
    println!(
        "standalone server on {} SidecarSets ({}, {:.1} MB): started (file loaded, view built) in {:.2} s, /readyz 200 after {:.2} s; VmRSS {:.1} MiB, VmHWM {:.1} MiB (VmRSS {:.1} MiB before)",
        sizes.sidecar_sets,
        if yaml {
            "multi-document YAML"
        } else {
            "a JSON List"
        },
        bytes as f64 / 1e6,
        loaded.as_secs_f64(),
        ready.as_secs_f64(),
        mib(rss),
        mib(hwm),
        mib(rss_start)
    );
    server.shutdown().await.expect("a clean shutdown");
}

fn main() {
    kruise_webhook::install_crypto_provider();
    // As criterion: `cargo bench` passes --bench; `cargo test --benches` runs a short smoke check.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (sizes, settle, idle, changes, requests) = if smoke {
        let sizes = Sizes {
            pods: 200,
            sidecar_sets: 20,
            budgets: 20,
            spreads: 20,
            namespaces: 5,
            missed: 20,
        };
        (
            sizes,
            Duration::from_secs(10),
            Duration::from_millis(300),
            2,
            50,
        )
    } else {
        let sizes = Sizes {
            pods: env("SCALE_PODS", 10_000) as usize,
            sidecar_sets: env("SCALE_SIDECARSETS", 1_000).max(1) as usize,
            budgets: env("SCALE_BUDGETS", 1_000) as usize,
            spreads: env("SCALE_SPREADS", 1_000) as usize,
            namespaces: env("SCALE_NAMESPACES", 100).max(1) as usize,
            missed: env("SCALE_MISSED", 0) as usize,
        };
        (
            sizes,
            Duration::from_secs(env("SCALE_SETTLE_SECONDS", 60)),
            Duration::from_secs(env("SCALE_IDLE_SECONDS", 30)),
            env("SCALE_CHANGES", 20) as usize,
            env("SCALE_REQUESTS", 20_000).max(10) as usize,
        )
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let files = std::env::var("SCALE_FILES").ok();
    runtime.block_on(async {
        match files.as_deref() {
            Some("json") => return from_files(&sizes, false).await,
            Some("yaml") => return from_files(&sizes, true).await,
            Some("both") => {
                from_files(&sizes, false).await;
                return from_files(&sizes, true).await;
            }
            Some(other) => panic!("SCALE_FILES={other}: json, yaml or both"),
            None => {}
        }
        live(sizes, settle, idle, changes, requests).await;
        if smoke {
            from_files(&sizes, false).await;
            from_files(&sizes, true).await;
        }
    });
}

async fn live(sizes: Sizes, settle: Duration, idle: Duration, changes: usize, requests: usize) {
    let mock = MockApi::new(sizes);
    let client = mock.client();
    println!(
        "scale: {} pods ({} bytes each as listed), {} SidecarSets with a ControllerRevision each, {} PodUnavailableBudgets, {} WorkloadSpreads, {} namespaces",
        sizes.pods,
        objects::pod(&sizes, 0, 1, true).len(),
        sizes.sidecar_sets,
        sizes.budgets,
        sizes.spreads,
        sizes.namespaces
    );
    // The memory figures depend on it: deploy/ sets 1 (freed memory returned after 1 ms).
    println!(
        "allocator: mimalloc, MIMALLOC_PURGE_DELAY={}",
        std::env::var("MIMALLOC_PURGE_DELAY").unwrap_or_else(|_| {
            "unset (mimalloc's default: freed pages stay resident a while)".into()
        })
    );
    let (rss_start, _) = memory();

    // 1. Caches: what `serve` starts for the pod webhooks.
    let started = Instant::now();
    let (cache, cluster) = synced_cache(&mock).await;
    let ready_in = started.elapsed();
    let (rss, hwm) = memory();
    println!("caches synced in {:.2} s", ready_in.as_secs_f64());
    println!(
        "memory when synced: VmRSS {:.1} MiB, VmHWM {:.1} MiB (VmRSS {:.1} MiB before the caches started)",
        mib(rss),
        mib(hwm),
        mib(rss_start)
    );
    let budgets = cache.budget_store().expect("PUBs watched").store().clone();
    let spreads = cache
        .spread_store()
        .expect("WorkloadSpreads watched")
        .store()
        .clone();
    assert_eq!(budgets.state().len(), sizes.budgets);
    assert_eq!(spreads.state().len(), sizes.spreads);
    // Decoded whole, and stripped of what nothing reads.
    let unread = |meta: &kube::core::ObjectMeta| {
        meta.managed_fields.is_some()
            || meta
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(shared::LAST_APPLIED_ANNOTATION))
    };
    assert!(budgets.state().iter().all(|b| {
        !unread(&b.metadata) && b.spec.max_unavailable.is_some() && b.status.is_some()
    }));
    assert!(spreads.state().iter().all(|s| {
        let versions = s
            .status
            .as_ref()
            .map(|st| st.versioned_subset_statuses.len());
        !unread(&s.metadata)
            && s.spec.subsets.iter().all(|x| x.patch.is_some())
            && versions == Some(1)
    }));

    // 2. The controller, leading (election off): its first pass over every SidecarSet, then idle.
    let mut config = ServeConfig::for_loopback(Vec::new(), std::env::temp_dir());
    config.leader_election.enabled = false;
    let settle_cpu = threads_cpu();
    let settle_started = Instant::now();
    let controllers = Controllers::start(
        client.clone(),
        &cache,
        &config,
        Served::ALL,
        &Metrics::new(),
    );
    let (settled_in, quiet) = until_quiet(settle).await;
    let settle_cpu = threads_cpu().saturating_sub(settle_cpu);
    let writes = mock.writes();
    let first_pass = writes.len();
    let events: Vec<Instant> = writes
        .iter()
        .filter(|w| w.path.ends_with("/events"))
        .map(|w| w.at)
        .collect();
    println!(
        "controller first pass: {} writes and {} events, {:.2} s CPU, {} after {:.1} s (0 writes expected without SCALE_MISSED: every status and revision is up to date)",
        first_pass - events.len(),
        events.len(),
        settle_cpu.as_secs_f64(),
        if quiet { "quiet" } else { "STILL BUSY" },
        settled_in.as_secs_f64()
    );
    if sizes.missed > 0 {
        // One Warning event a pod that missed its sidecars, one on each SidecarSet that has such pods.
        let sets = sizes.missed.min(sizes.sidecar_sets);
        assert_eq!(
            events.len(),
            sizes.missed + sets,
            "missed-sidecars events: one a pod and one a SidecarSet"
        );
        let last = events.iter().max().copied().unwrap_or(settle_started);
        println!(
            "missed sidecars: {} pods created without their SidecarSet's sidecars told ({} events on pods, {sets} on SidecarSets), the last {:.2} s after the controllers started",
            sizes.missed,
            sizes.missed,
            (last - settle_started).as_secs_f64()
        );
    }
    let (cpu, fine) = (process_cpu(), threads_cpu());
    let idle_started = Instant::now();
    tokio::time::sleep(idle).await;
    let idle_cpu = process_cpu().saturating_sub(cpu);
    let idle_fine = threads_cpu().saturating_sub(fine);
    let idle_wall = idle_started.elapsed();
    let idle_writes = mock.writes().len() - first_pass;
    println!(
        "idle leader: {:.3} % of a core over {:.0} s ({:.3} s CPU from /proc/self/stat; {:.1} ms from the threads' schedstat; {idle_writes} writes)",
        100.0 * idle_cpu.as_secs_f64() / idle_wall.as_secs_f64(),
        idle_wall.as_secs_f64(),
        idle_cpu.as_secs_f64(),
        idle_fine.as_secs_f64() * 1e3
    );

    // 3. Pod change to status write: a pod of SidecarSet j turns unready, later ready again.
    let mut latencies = Vec::new();
    for change in 0..changes {
        let j = (change / 2 * 37 + 11) % sizes.sidecar_sets.min(sizes.pods.max(1));
        // A pod of SidecarSet j that it injected (past the SCALE_MISSED ones: those do not count in its status).
        let i =
            j + sizes.sidecar_sets * sizes.missed.saturating_sub(j).div_ceil(sizes.sidecar_sets);
        if i >= sizes.pods {
            println!(
                "pod change to status write: skipped, SidecarSet {j} injected none of its pods"
            );
            break;
        }
        let ready = change % 2 == 1;
        let at = Instant::now();
        mock.set_pod_ready(i, ready);
        let suffix = format!("/sidecarsets/sidecarset-{j:04}/status");
        match mock
            .wait_for_write(at, &suffix, Duration::from_secs(30))
            .await
        {
            Some(written) => latencies.push(written - at),
            None => panic!(
                "no status write for sidecarset-{j:04} within 30 s of its pod turning ready={ready}"
            ),
        }
    }
    latencies.sort();
    println!(
        "pod change to status write over {} changes: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        latencies.len(),
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.9)),
        ms(latencies.last().copied().unwrap_or_default())
    );
    let (rss, hwm) = memory();
    println!(
        "memory at the end: VmRSS {:.1} MiB, VmHWM {:.1} MiB",
        mib(rss),
        mib(hwm)
    );
    controllers.shutdown().await;

    // 4. Per-request latency, at scale and on a small cluster of the same generator.
    let small_sizes = Sizes {
        pods: 20,
        sidecar_sets: 2,
        budgets: 2,
        spreads: 2,
        namespaces: 1,
        missed: 0,
    };
    let small_mock = MockApi::new(small_sizes);
    let (_small_cache, small) = synced_cache(&small_mock).await;
    // Alternated, so that the machine's noise falls on both alike.
    let mut at_scale = Vec::new();
    let mut at_small = Vec::new();
    for _ in 0..2 {
        at_scale.push(request_latencies(&sizes, cluster.clone(), requests / 2).await);
        at_small.push(request_latencies(&small_sizes, small.clone(), requests / 2).await);
    }
    let mean = |runs: &[[(Duration, Duration); 2]], which: usize, p99: bool| {
        let sum: Duration = runs
            .iter()
            .map(|r| if p99 { r[which].1 } else { r[which].0 })
            .sum();
        sum / runs.len() as u32
    };
    for (which, what) in [
        (0, "pod create (SidecarSet injection)"),
        (1, "dry-run eviction under a PUB"),
    ] {
        let (p50, p99) = (mean(&at_scale, which, false), mean(&at_scale, which, true));
        let (s50, s99) = (mean(&at_small, which, false), mean(&at_small, which, true));
        println!(
            "{what}, {requests} through the Router: at scale p50 {:.1} µs, p99 {:.1} µs; small view p50 {:.1} µs, p99 {:.1} µs; ratio p50 {:.2}, p99 {:.2}",
            ms(p50) * 1e3,
            ms(p99) * 1e3,
            ms(s50) * 1e3,
            ms(s99) * 1e3,
            p50.as_secs_f64() / s50.as_secs_f64(),
            p99.as_secs_f64() / s99.as_secs_f64()
        );
    }

    println!(
        "LIST bodies: pods {:.1} MB, SidecarSets {:.1} MB, ControllerRevisions {:.1} MB, budgets {:.1} MB, spreads {:.1} MB",
        mock.list_bytes(Kind::Pods) as f64 / 1e6,
        mock.list_bytes(Kind::SidecarSets) as f64 / 1e6,
        mock.list_bytes(Kind::Revisions) as f64 / 1e6,
        mock.list_bytes(Kind::Budgets) as f64 / 1e6,
        mock.list_bytes(Kind::Spreads) as f64 / 1e6
    );
    for m in [&mock, &small_mock] {
        let unexpected = m.unexpected();
        assert!(
            unexpected.is_empty(),
            "requests the mock does not serve: {unexpected:?}"
        );
    }
}
