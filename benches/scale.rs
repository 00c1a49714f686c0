//! Scale bench (issue 24, items 4 and 5): the server's informer caches and its SidecarSet controller over
//! a cluster of 10,000 pods, 1,000 SidecarSets (each with its ControllerRevision), 1,000
//! PodUnavailableBudgets, 1,000 WorkloadSpreads and 100 namespaces, served by an in-process mock
//! kube-apiserver ([`mock`]) that lists and watches the way a real one does (a `resourceVersion=0` LIST
//! comes whole, about 4 KB a pod with managedFields). Reports:
//! 1. the time from starting the caches to all of them synced, and the process's VmRSS and VmHWM then
//!    (from /proc/self/status; the mock generates its objects on demand and holds only what changed);
//! 2. the leader's idle CPU between events, as a share of one core (/proc/self/stat over the window, after
//!    the controller's first pass settled; nothing changes in the cluster meanwhile);
//! 3. the time from a pod change (a watch event turning a pod unready, then ready again) to the write of
//!    the status of the SidecarSet that injected it.
//!
//! `cargo bench --bench scale` (env: SCALE_PODS=10000, SCALE_SIDECARSETS=1000, SCALE_BUDGETS=1000,
//! SCALE_SPREADS=1000, SCALE_NAMESPACES=100, SCALE_SETTLE_SECONDS=15, SCALE_IDLE_SECONDS=30,
//! SCALE_CHANGES=20). Under `cargo test` (no `--bench`) a small cluster and short windows: a smoke run.

use std::time::{Duration, Instant};

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "scale/mock.rs"]
mod mock;
#[path = "scale/objects.rs"]
mod objects;

use kube::runtime::reflector::Store;

use kruise_webhook::cache::{Cluster, LiveCache, shared};
use kruise_webhook::config::ServeConfig;
use kruise_webhook::controller::Controllers;
use kruise_webhook::metrics::Metrics;
use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;
use kruise_webhooks::api::workloadspread::WorkloadSpread;
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

/// A cache of a kind that no webhook or controller of the server reads yet (PodUnavailableBudgets,
/// WorkloadSpreads), so the memory figure counts it: the typed objects the PUB and WorkloadSpread issues
/// will read, through the same watch as the server's caches.
fn typed_store<K>(client: &kube::Client) -> Store<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    shared::watch(
        kube::Api::all(client.clone()),
        (),
        shared::whole_lists(),
        shared::strip_unread_metadata::<K>,
        |_, _| {},
    )
    .store()
    .clone()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn main() {
    kruise_webhook::install_crypto_provider();
    // As criterion: `cargo bench` passes --bench; `cargo test --benches` runs a short smoke check.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (sizes, settle, idle, changes) = if smoke {
        let sizes = Sizes {
            pods: 200,
            sidecar_sets: 20,
            budgets: 20,
            spreads: 20,
            namespaces: 5,
        };
        (
            sizes,
            Duration::from_millis(300),
            Duration::from_millis(300),
            2,
        )
    } else {
        let sizes = Sizes {
            pods: env("SCALE_PODS", 10_000) as usize,
            sidecar_sets: env("SCALE_SIDECARSETS", 1_000).max(1) as usize,
            budgets: env("SCALE_BUDGETS", 1_000) as usize,
            spreads: env("SCALE_SPREADS", 1_000) as usize,
            namespaces: env("SCALE_NAMESPACES", 100).max(1) as usize,
        };
        (
            sizes,
            Duration::from_secs(env("SCALE_SETTLE_SECONDS", 15)),
            Duration::from_secs(env("SCALE_IDLE_SECONDS", 30)),
            env("SCALE_CHANGES", 20) as usize,
        )
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
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
        let (rss_start, _) = memory();

        // 1. Caches: what `serve` starts for the pod webhook, plus the two kinds not cached yet.
        let started = Instant::now();
        let cache = LiveCache::start(client.clone(), Some("kruise-system"), false);
        let cluster = Cluster::Live(cache.clone());
        let budgets = typed_store::<PodUnavailableBudget>(&client);
        let spreads = typed_store::<WorkloadSpread>(&client);
        // A watch whose list holds an object it cannot decode retries forever (and the bench logs nothing):
        // fail instead of waiting.
        let synced = async {
            let _ = futures::join!(budgets.wait_until_ready(), spreads.wait_until_ready());
            while !cluster.synced() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(120), synced)
            .await
            .expect("caches synced within 120 s (does every object the mock serves decode?)");
        let ready_in = started.elapsed();
        let (rss, hwm) = memory();
        println!("caches synced in {:.2} s", ready_in.as_secs_f64());
        println!(
            "memory when synced: VmRSS {:.1} MiB, VmHWM {:.1} MiB (VmRSS {:.1} MiB before the caches started)",
            mib(rss),
            mib(hwm),
            mib(rss_start)
        );
        assert_eq!(budgets.state().len(), sizes.budgets);
        assert_eq!(spreads.state().len(), sizes.spreads);
        // Decoded whole, and stripped of what nothing reads.
        let unread = |meta: &kube::core::ObjectMeta| {
            meta.managed_fields.is_some()
                || meta.annotations.as_ref().is_some_and(|a| a.contains_key(shared::LAST_APPLIED_ANNOTATION))
        };
        assert!(budgets.state().iter().all(|b| {
            !unread(&b.metadata) && b.spec.max_unavailable.is_some() && b.status.is_some()
        }));
        assert!(spreads.state().iter().all(|s| {
            let versions = s.status.as_ref().map(|st| st.versioned_subset_statuses.len());
            !unread(&s.metadata) && s.spec.subsets.iter().all(|x| x.patch.is_some()) && versions == Some(1)
        }));

        // 2. The controller, leading (election off): its first pass over every SidecarSet, then idle.
        let mut config = ServeConfig::for_loopback(Vec::new(), std::env::temp_dir());
        config.leader_election.enabled = false;
        let settle_cpu = process_cpu();
        let controllers = Controllers::start(client.clone(), &cache, &config, Served::ALL, &Metrics::new());
        tokio::time::sleep(settle).await;
        let settle_cpu = process_cpu().saturating_sub(settle_cpu);
        let first_pass = mock.writes().len();
        let (cpu, fine) = (process_cpu(), threads_cpu());
        let idle_started = Instant::now();
        tokio::time::sleep(idle).await;
        let idle_cpu = process_cpu().saturating_sub(cpu);
        let idle_fine = threads_cpu().saturating_sub(fine);
        let idle_wall = idle_started.elapsed();
        let idle_writes = mock.writes().len() - first_pass;
        println!(
            "controller first pass: {first_pass} writes, {:.2} s CPU within {:.0} s (every status and revision is up to date: 0 writes expected)",
            settle_cpu.as_secs_f64(),
            settle.as_secs_f64()
        );
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
            let j = (change / 2 * 37 + 11) % sizes.sidecar_sets;
            let ready = change % 2 == 1;
            let at = Instant::now();
            mock.set_pod_ready(j, ready);
            let suffix = format!("/sidecarsets/sidecarset-{j:04}/status");
            match mock.wait_for_write(at, &suffix, Duration::from_secs(30)).await {
                Some(written) => latencies.push(written - at),
                None => panic!("no status write for sidecarset-{j:04} within 30 s of its pod turning ready={ready}"),
            }
        }
        latencies.sort();
        println!(
            "pod change to status write over {} changes: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            latencies.len(),
            percentile(&latencies, 0.5).as_secs_f64() * 1e3,
            percentile(&latencies, 0.9).as_secs_f64() * 1e3,
            latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
        );
        let (rss, hwm) = memory();
        println!("memory at the end: VmRSS {:.1} MiB, VmHWM {:.1} MiB", mib(rss), mib(hwm));
        controllers.shutdown().await;
        println!(
            "LIST bodies: pods {:.1} MB, SidecarSets {:.1} MB, ControllerRevisions {:.1} MB, budgets {:.1} MB, spreads {:.1} MB",
            mock.list_bytes(Kind::Pods) as f64 / 1e6,
            mock.list_bytes(Kind::SidecarSets) as f64 / 1e6,
            mock.list_bytes(Kind::Revisions) as f64 / 1e6,
            mock.list_bytes(Kind::Budgets) as f64 / 1e6,
            mock.list_bytes(Kind::Spreads) as f64 / 1e6
        );
        let unexpected = mock.unexpected();
        assert!(unexpected.is_empty(), "requests the mock does not serve: {unexpected:?}");
    });
}
