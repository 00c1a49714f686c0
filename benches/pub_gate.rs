//! The PodUnavailableBudget gate (spec/podunavailablebudget.md §7).
//!
//! 1. The decision (`gate::validate`, pure): an eviction and a DELETE of a pod guarded by one of 1,000 PUBs
//!    in its namespace, 1,000 pods cached. criterion reports the mean; p50/p99 per call come from a timed
//!    loop afterwards (the goal is a percentile: under 20 µs).
//! 2. With `--bench` only: evictions through the TLS server with the status commit. Two replicas of the
//!    server (each its own caches and client) share an in-process stand-in API server that enforces
//!    resourceVersion conflicts on the PUB status (tests/common/apiserver.rs); 32 keep-alive connections,
//!    16 to each, evict distinct ready pods of one PUB, so every spend meets the other replica's. Reported:
//!    p50/p99 of the answers and the over-spend (allowed evictions beyond the budget, and allowed ones the
//!    stored status does not list: goal 0). `PUB_EVICTIONS` (default 4,000), `PUB_BUDGET` (default 500; the status grows by an entry per spend, so a larger budget makes every write and watch event larger)
//!    change it.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group};
use kruise_webhook::cache::LiveCache;
use kruise_webhook::server::tls::CertStore;
use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::AdmissionRequest;
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::podunavailablebudget::gate::{GateContext, validate};
use serde_json::{Value, json};

#[path = "../tests/common/apiserver.rs"]
mod apiserver;
#[path = "common/measure.rs"]
mod measure;
#[path = "common/replicas.rs"]
mod replicas;

use measure::{env, print_percentiles};
use replicas::Connection;

fn pod(i: usize, budget: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-{i}"), "namespace": "default", "uid": format!("uid-{i}"),
            "labels": {"app": "web", "pod-template-hash": "7d9c6b5f4"},
            "annotations": {"pub.kruise.io/related-pub": budget, "kruise.io/related-pub": budget},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9c6b5f4",
                "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}, {"name": "log", "image": "fluent-bit:3.0"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
            "containerStatuses": [
                {"name": "app", "image": "nginx:1.25", "imageID": "docker-pullable://nginx@sha256:aa", "containerID": "containerd://a"},
                {"name": "log", "image": "fluent-bit:3.0", "imageID": "docker-pullable://fluent-bit@sha256:bb", "containerID": "containerd://b"}]}})
}

fn budget(name: &str, allowed: i64, pods: usize) -> Value {
    json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": name}}, "maxUnavailable": allowed},
        "status": {"observedGeneration": 1, "unavailableAllowed": allowed, "currentAvailable": pods,
            "desiredAvailable": pods as i64 - allowed, "totalReplicas": pods}})
}

fn eviction_review(i: usize) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("evict-{i}"),
            "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
            "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"}, "requestSubResource": "eviction",
            "name": format!("web-{i}"), "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:drain", "groups": ["system:serviceaccounts"]},
            "object": {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": format!("web-{i}"), "namespace": "default", "creationTimestamp": null},
                "deleteOptions": {"gracePeriodSeconds": 30}},
            "oldObject": null, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
}

fn delete_review(i: usize) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("delete-{i}"), "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": format!("web-{i}"), "namespace": "default", "operation": "DELETE",
            "userInfo": {"username": "alice"}, "object": null, "oldObject": pod(i, "pub-0500"), "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}}})
}

fn decode(review: &Value) -> AdmissionRequest {
    kruise_webhooks::admission::decode_review(review.to_string().as_bytes())
        .unwrap()
        .request
}

fn decision(c: &mut Criterion) {
    let mut docs =
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})];
    for j in 0..1000 {
        docs.push(budget(&format!("pub-{j:04}"), 3, 10));
    }
    for i in 0..1000 {
        docs.push(pod(i, &format!("pub-{:04}", i)));
    }
    let mut cluster = FixtureCluster::default();
    cluster
        .load_str(&serde_json::to_string(&docs).unwrap(), "bench")
        .unwrap();
    let gates = FeatureGates::default();
    let ctx = GateContext {
        gates: &gates,
        now: "2026-11-26T10:00:00Z",
    };
    let evict = decode(&eviction_review(500));
    let delete = decode(&delete_review(500));
    for req in [&evict, &delete] {
        assert_eq!(
            validate(req, &cluster, &ctx).unwrap().intents.len(),
            1,
            "a spend"
        );
    }
    let mut group = c.benchmark_group("pub_gate");
    group.bench_function("eviction_1000_pubs", |b| {
        b.iter(|| validate(black_box(&evict), &cluster, &ctx).unwrap())
    });
    group.bench_function("delete_1000_pubs", |b| {
        b.iter(|| validate(black_box(&delete), &cluster, &ctx).unwrap())
    });
    group.finish();
    for (name, req) in [
        ("eviction_1000_pubs", &evict),
        ("delete_1000_pubs", &delete),
    ] {
        print_percentiles(&format!("pub_gate/{name}"), || {
            black_box(validate(req, &cluster, &ctx).unwrap());
        });
    }
}

criterion_group!(benches, decision);

/// A replica of the server on the stand-in (its own caches, its own client), served over TLS with the given
/// certificate.
async fn replica(stand_in: &apiserver::StandIn, store: Arc<CertStore>) -> std::net::SocketAddr {
    replicas::serve(LiveCache::start(stand_in.client(), None, true), store).await
}

fn evictions_with_commit() {
    let evictions = env("PUB_EVICTIONS", 4_000);
    let allowed_budget = env("PUB_BUDGET", 500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (store, tls) = replicas::certificate().await;

        let stand_in = apiserver::StandIn::new();
        stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        for i in 0..evictions {
            stand_in.put(pod(i, "pub-web"));
        }
        stand_in.put(budget("pub-web", allowed_budget as i64, evictions));
        let replicas = [
            replica(&stand_in, store.clone()).await,
            replica(&stand_in, store.clone()).await,
        ];
        let connections = 32;
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..connections {
            let (tls, next) = (tls.clone(), next.clone());
            let addr = replicas[c % 2];
            tasks.push(tokio::spawn(async move {
                let mut connection = Connection::open(addr, tls).await;
                let mut out = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= evictions {
                        return out;
                    }
                    let body = eviction_review(i).to_string();
                    let t = Instant::now();
                    let answer = connection.exchange("/validate-pod", body.as_bytes()).await;
                    out.push((i, t.elapsed(), answer["response"].clone()));
                }
            }));
        }
        let mut answers = Vec::new();
        for task in tasks {
            answers.extend(task.await.unwrap());
        }
        let elapsed = started.elapsed();
        let mut latencies: Vec<Duration> = answers.iter().map(|(_, d, _)| *d).collect();
        latencies.sort();
        let allowed: BTreeSet<String> = answers
            .iter()
            .filter(|(_, _, r)| r["allowed"] == true)
            .map(|(i, _, _)| format!("web-{i}"))
            .collect();
        let stored = stand_in
            .get("PodUnavailableBudget", "default", "pub-web")
            .unwrap();
        let recorded: BTreeSet<String> = stored["status"]["disruptedPods"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let writes = stand_in.status_writes();
        let conflicts = writes.iter().filter(|w| w.code == 409).count();
        let over_spend = allowed.len().saturating_sub(allowed_budget)
            + allowed.difference(&recorded).count();
        println!(
            "pub_gate/evictions_with_commit: {evictions} evictions, 2 replicas, {connections} TLS connections, budget {allowed_budget}: \
             p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {:.0} evictions/s; {} allowed, {} denied, {} status writes ({conflicts} conflicts); over-spend {over_spend}",
            latencies[latencies.len() / 2].as_secs_f64() * 1e3,
            latencies[latencies.len() * 99 / 100].as_secs_f64() * 1e3,
            latencies[latencies.len() - 1].as_secs_f64() * 1e3,
            evictions as f64 / elapsed.as_secs_f64(),
            allowed.len(),
            answers.len() - allowed.len(),
            writes.len(),
        );
        assert_eq!(over_spend, 0, "never more than the budget, every allowed one recorded");
        assert_eq!(allowed.len(), allowed_budget.min(evictions), "the whole budget is spent");
    });
}

fn main() {
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
    if std::env::args().any(|a| a == "--bench") {
        evictions_with_commit();
    }
}
