//! The WorkloadSpread step of the pod webhooks (spec/workloadspread.md §5).
//!
//! 1. The decision (pure): the subset choice of a pod create (`create::spread_for`: the WorkloadSpreads whose
//!    target is in the pod's owner chain, then `subset::find`; and `subset::choose`) and the
//!    whole WorkloadSpread step (`create::on_create`: choice, mutation, annotation) with 1,000
//!    WorkloadSpreads in the pod's namespace, the matching one last by name. criterion reports the mean;
//!    p50/p99 per call come from a timed loop afterwards (goal: under 20 µs).
//! 2. With `--bench` only: pod creates through the TLS server with the status commit. Two replicas of the
//!    server (each its own caches and client) share an in-process stand-in API server that enforces
//!    resourceVersion conflicts on the WorkloadSpread status (tests/common/apiserver.rs); 32 keep-alive
//!    connections, 16 to each, create pods of one CloneSet whose WorkloadSpread has subsets a and b capped at
//!    `SPREAD_CAPACITY` (default 500) and c unlimited, half of the pods with `generateName`, so every
//!    reservation meets the other replica's. Reported: p50/p99 of the answers (goal p99 ≤ 20 ms) and the
//!    over-placement (pods annotated for a capped subset beyond its cap, or not recorded there: goal 0).
//!    `SPREAD_CREATES` (default 4,000) changes the count.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_webhook::cache::LiveCache;
use kruise_webhook::server::tls::CertStore;
use kruise_webhook::workload::ServedKinds;
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::workloadspread::subset::{self, Placing};
use kruise_webhooks::workloadspread::workload::{ChainEnd, Link, OwnerChain};
use kruise_webhooks::workloadspread::{SpreadFacts, create};
use serde_json::{Value, json};

#[path = "../tests/common/apiserver.rs"]
mod apiserver;
#[path = "common/measure.rs"]
mod measure;
#[path = "common/replicas.rs"]
mod replicas;

use measure::{env, print_percentiles};
use replicas::Connection;

const NOW: &str = "2026-11-26T10:00:00Z";

fn spread(name: &str, target: &str, capacity: usize, namespace: &str) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"), "generation": 1},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": target},
            "subsets": [
                {"name": "a", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                 "tolerations": [{"key": "dedicated", "operator": "Exists"}], "maxReplicas": capacity},
                {"name": "b", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]},
                 "maxReplicas": capacity,
                 "patch": {"metadata": {"labels": {"subset": "b"}}}},
                {"name": "c"}]}})
}

fn pod(i: usize, owner: &str, named: bool) -> Value {
    let mut metadata = json!({"namespace": "default", "labels": {"app": owner},
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": owner,
            "uid": format!("uid-{owner}"), "controller": true, "blockOwnerDeletion": true}]});
    if named {
        metadata["name"] = json!(format!("{owner}-{i}"));
    } else {
        metadata["generateName"] = json!(format!("{owner}-"));
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25", "resources": {}},
                                {"name": "log", "image": "fluent-bit:3.0"}],
                 "restartPolicy": "Always", "terminationGracePeriodSeconds": 30}})
}

fn create_review(i: usize) -> Value {
    create_review_of(i, "cs")
}

/// Create `i` of a pod of CloneSet `owner`.
fn create_review_of(i: usize, owner: &str) -> Value {
    let pod = pod(i, owner, i.is_multiple_of(2));
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("00000000-0000-4000-8000-{i:012}"),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": pod["metadata"]["name"].as_str().unwrap_or(""), "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kruise-system:kruise-manager", "groups": ["system:serviceaccounts"]},
            "object": pod, "oldObject": null, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
}

fn decision(c: &mut Criterion) {
    let mut docs =
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})];
    for j in 0..1000 {
        docs.push(spread(
            &format!("ws-{j:04}"),
            &format!("cs-{j:04}"),
            50,
            "default",
        ));
    }
    let mut cluster = FixtureCluster::default();
    cluster
        .load_str(&serde_json::to_string(&docs).unwrap(), "bench")
        .unwrap();
    // The pod of the last WorkloadSpread by name: every other is looked at first.
    let owner = "cs-0999";
    let pod = pod(7, owner, true);
    let facts = SpreadFacts {
        chain: OwnerChain {
            links: vec![Link {
                api_version: "apps.kruise.io/v1alpha1".into(),
                kind: "CloneSet".into(),
                name: owner.into(),
            }],
            end: ChainEnd::Top,
        },
        custom: Vec::new(),
        replicas: None,
        generated_uid: "00000000-0000-4000-8000-000000000007".into(),
    };
    let now: Time = serde_json::from_value(json!(NOW)).unwrap();
    let choose = || {
        let ws = create::spread_for(&pod, "default", &cluster, &facts)
            .unwrap()
            .expect("a WorkloadSpread");
        subset::choose(
            &ws,
            Placing {
                name: "cs-0999-7",
                version: "versionIgnored",
                generated_uid: &facts.generated_uid,
                replicas: 0,
                now: &now,
            },
        )
        .unwrap()
    };
    assert!(matches!(
        choose(),
        subset::Choice::Subset { write: Some(_), .. }
    ));
    let step = || create::on_create(&pod, "default", &cluster, &facts, NOW).unwrap();
    assert!(step().intent.is_some(), "a reservation");
    let mut group = c.benchmark_group("workloadspread");
    group.bench_function("subset_choice_1000_spreads", |b| {
        b.iter(|| black_box(choose()))
    });
    group.bench_function("create_step_1000_spreads", |b| b.iter(|| black_box(step())));
    group.finish();
    print_percentiles("workloadspread/subset_choice_1000_spreads", || {
        black_box(choose());
    });
    print_percentiles("workloadspread/create_step_1000_spreads", || {
        black_box(step());
    });
}

criterion_group!(benches, decision);

/// A replica of the server on the stand-in (its own caches, its own client, CloneSets served), served over
/// TLS with the given certificate.
async fn replica(stand_in: &apiserver::StandIn, store: Arc<CertStore>) -> std::net::SocketAddr {
    let served = ServedKinds {
        clone_sets: true,
        advanced_stateful_sets: false,
    };
    let cache = LiveCache::start_all(
        stand_in.client(),
        None,
        false,
        true,
        Some((served, "kruise-system")),
    );
    replicas::serve(cache, store).await
}

/// The subset a response's patch puts the pod in, and the key of its record (name or generated uid).
fn placed(review: &Value, response: &Value) -> (Option<String>, String) {
    use base64::Engine;
    let mut pod = review["request"]["object"].clone();
    if let Some(patch) = response["patch"].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let ops: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
        json_patch::patch(&mut pod, &ops).unwrap();
    }
    let matched: Option<Value> =
        pod["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]
            .as_str()
            .map(|a| serde_json::from_str(a).unwrap());
    let key = pod["metadata"]["name"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| matched.as_ref()?["uid"].as_str().map(str::to_owned))
        .unwrap_or_default();
    (
        matched.map(|m| m["subset"].as_str().unwrap().to_owned()),
        key,
    )
}

fn creates_with_commit() {
    let creates = env("SPREAD_CREATES", 4_000);
    let capacity = env("SPREAD_CAPACITY", 500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (store, tls) = replicas::certificate().await;

        let stand_in = apiserver::StandIn::new();
        stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        stand_in.put(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "cs", "namespace": "default", "uid": "uid-cs"},
            "spec": {"replicas": creates, "selector": {"matchLabels": {"app": "cs"}}}}));
        stand_in.put(spread("ws", "cs", capacity, "default"));
        // The pods of the warm-up: a CloneSet no WorkloadSpread targets.
        stand_in.put(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "warm", "namespace": "default", "uid": "uid-warm"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "warm"}}}}));
        let replicas = [
            replica(&stand_in, store.clone()).await,
            replica(&stand_in, store.clone()).await,
        ];
        let connections = 32;
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Every connection open and warm (TLS, the pod chain, the caches) before the measured creates start
        // together: the reservations come first, and would otherwise carry the start-up.
        let ready = Arc::new(tokio::sync::Barrier::new(connections + 1));
        let mut tasks = Vec::new();
        for c in 0..connections {
            let (tls, next, ready) = (tls.clone(), next.clone(), ready.clone());
            let addr = replicas[c % 2];
            tasks.push(tokio::spawn(async move {
                let mut connection = Connection::open(addr, tls).await;
                for w in 0..20 {
                    let warm = create_review_of(c * 100 + w, "warm").to_string();
                    connection.exchange("/mutate-pod", warm.as_bytes()).await;
                }
                ready.wait().await;
                let mut out = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= creates {
                        return out;
                    }
                    let review = create_review(i);
                    let body = review.to_string();
                    let t = Instant::now();
                    let answer = connection.exchange("/mutate-pod", body.as_bytes()).await;
                    out.push((review, t.elapsed(), answer["response"].clone(), t));
                }
            }));
        }
        ready.wait().await;
        let started = Instant::now();
        let mut answers = Vec::new();
        for task in tasks {
            answers.extend(task.await.unwrap());
        }
        let elapsed = started.elapsed();
        let mut latencies: Vec<Duration> = answers.iter().map(|(_, d, _, _)| *d).collect();
        // The slowest creates: when they were sent (from the start) and where they went.
        let mut slowest: Vec<_> = answers.iter().collect();
        slowest.sort_by_key(|(_, d, _, _)| std::cmp::Reverse(*d));
        for (review, took, response, sent) in slowest.iter().take(3) {
            let subset = if response["allowed"] == true { placed(review, response).0 } else { Some("refused".into()) };
            println!(
                "  slow: {:.1} ms, sent at {:.1} ms, {}",
                took.as_secs_f64() * 1e3,
                sent.duration_since(started).as_secs_f64() * 1e3,
                subset.unwrap_or_else(|| "<none>".into())
            );
        }
        latencies.sort();
        let mut by_subset: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut refused = 0;
        // The latencies of the creates that reserved a place (a, b), of the others, of the refused.
        let mut by_kind: [Vec<Duration>; 3] = Default::default();
        for (review, took, response, _) in &answers {
            if response["allowed"] != true {
                refused += 1;
                by_kind[2].push(*took);
                continue;
            }
            let (subset, key) = placed(review, response);
            let reserved = matches!(subset.as_deref(), Some("a" | "b"));
            by_kind[usize::from(!reserved)].push(*took);
            by_subset.entry(subset.unwrap_or_else(|| "<none>".into())).or_default().push(key);
        }
        for (kind, mut took) in ["reserving", "not reserving", "refused"].into_iter().zip(by_kind) {
            took.sort();
            if let (Some(first), Some(last)) = (took.first(), took.last()) {
                println!(
                    "  {kind}: {} creates, p50 {:.2} ms, p99 {:.2} ms (min {:.2}, max {:.2})",
                    took.len(),
                    took[took.len() / 2].as_secs_f64() * 1e3,
                    took[took.len() * 99 / 100].as_secs_f64() * 1e3,
                    first.as_secs_f64() * 1e3,
                    last.as_secs_f64() * 1e3
                );
            }
        }
        let stored = stand_in.get("WorkloadSpread", "default", "ws").unwrap();
        let mut over = 0;
        for (at, name) in ["a", "b"].iter().enumerate() {
            let recorded: std::collections::BTreeSet<String> = stored["status"]["versionedSubsetStatuses"]["versionIgnored"][at]["creatingPods"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            let got = by_subset.get(*name).cloned().unwrap_or_default();
            over += got.len().saturating_sub(capacity);
            over += got.iter().filter(|k| !recorded.contains(*k)).count();
        }
        let writes = stand_in.status_writes();
        let conflicts = writes.iter().filter(|w| w.code == 409).count();
        let counts: BTreeMap<&str, usize> = by_subset.iter().map(|(k, v)| (k.as_str(), v.len())).collect();
        println!(
            "workloadspread/creates_with_commit: {creates} pod creates, 2 replicas, {connections} TLS connections, subsets a, b capped at {capacity}, c unlimited: \
             p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {:.0} creates/s; placed {counts:?}, {refused} refused, {} status writes ({conflicts} conflicts); over-placement {over}",
            latencies[latencies.len() / 2].as_secs_f64() * 1e3,
            latencies[latencies.len() * 99 / 100].as_secs_f64() * 1e3,
            latencies[latencies.len() - 1].as_secs_f64() * 1e3,
            creates as f64 / elapsed.as_secs_f64(),
            writes.len(),
        );
        assert_eq!(over, 0, "never more than maxReplicas, every placed pod recorded");
    });
}

fn main() {
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
    if std::env::args().any(|a| a == "--bench") {
        creates_with_commit();
    }
}
