//! SidecarSet injection through the pod mutating chain (`pod::mutate`): a 10-container pod, 1,000
//! SidecarSets in view of which 5 match; then the same with 50,000 more SidecarSets pinned to other
//! namespaces (they must cost nothing: the index never looks at them). criterion reports the mean; the
//! p50/p99 per call are measured by a timed loop afterwards, since the target is a percentile.

use std::hint::black_box;

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::Duration;

// Only its timed loop is used here.
#[allow(dead_code)]
#[path = "common/measure.rs"]
mod measure;

use criterion::{Criterion, criterion_group};
use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::AdmissionRequest;
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::pod::{PodContext, mutate};
use serde_json::json;

fn cluster(other_namespaces: usize) -> FixtureCluster {
    let mut docs = Vec::new();
    for i in 0..1000 {
        let app = if i % 200 == 7 {
            "web".to_owned()
        } else {
            format!("app-{i}")
        };
        docs.push(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": format!("set-{i:04}"), "annotations": {"kruise.io/sidecarset-hash": "h", "kruise.io/sidecarset-hash-without-image": "w"}},
            "spec": {"selector": {"matchLabels": {"app": app}},
                     "containers": [{"name": format!("sidecar-{i}"), "image": "sidecar:1.0", "podInjectPolicy": "AfterAppContainer",
                                     "shareVolumePolicy": {"type": "disabled"}, "env": [{"name": "MODE", "value": "x"}],
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}));
    }
    for i in 0..other_namespaces {
        docs.push(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": format!("other-{i:05}")},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": format!("ns-{i}")}},
                     "containers": [{"name": "o", "image": "o:1"}]}}));
    }
    let mut c = FixtureCluster::default();
    c.load_str(&serde_json::to_string(&docs).unwrap(), "bench")
        .unwrap();
    c
}

/// A Deployment's pod create as the kube-apiserver sends it: defaulted, fields in Go's struct order (so every
/// container starts with its name), 10 containers.
fn request() -> AdmissionRequest {
    let containers: Vec<String> = (0..10)
        .map(|i| {
            format!(
                r#"{{"name":"app-{i}","image":"registry.example.com/app-{i}:1.{i}","ports":[{{"containerPort":{port},"protocol":"TCP"}}],"env":[{{"name":"A","value":"1"}},{{"name":"B","value":"2"}}],"resources":{{"requests":{{"cpu":"250m","memory":"256Mi"}}}},"volumeMounts":[{{"name":"data","mountPath":"/data/{i}"}},{{"name":"kube-api-access-x7k2p","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}"#,
                port = 8080 + i
            )
        })
        .collect();
    let pod = format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"generateName":"web-7d9c6b5f4-","namespace":"default","creationTimestamp":null,"labels":{{"app":"web","pod-template-hash":"7d9c6b5f4","tier":"frontend"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9c6b5f4","uid":"0b7f3c1e-6a0e-4a53-9a55-2f4f3c9a1d11","controller":true,"blockOwnerDeletion":true}}]}},"spec":{{"volumes":[{{"name":"data","emptyDir":{{}}}},{{"name":"kube-api-access-x7k2p","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}},{{"configMap":{{"name":"kube-root-ca.crt","items":[{{"key":"ca.crt","path":"ca.crt"}}]}}}}],"defaultMode":420}}}}],"containers":[{containers}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","securityContext":{{}},"schedulerName":"default-scheduler","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}},{{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},"status":{{}}}}"#,
        containers = containers.join(",")
    );
    let review = format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"b","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"namespace":"default","operation":"CREATE","object":{pod}}}}}"#
    );
    // Decoded as the server decodes a body.
    kruise_webhooks::admission::decode_review(review.as_bytes())
        .unwrap()
        .request
}

fn percentiles(
    view: &FixtureCluster,
    req: &AdmissionRequest,
    ctx: &PodContext<'_>,
) -> (Duration, Duration) {
    let samples = measure::samples(|| {
        black_box(mutate(req, view, ctx).unwrap());
    });
    if std::env::var_os("TAILS").is_some() {
        for q in [10, 50, 80, 90, 95, 98, 99, 995, 999] {
            let idx = if q > 100 {
                samples.len() * q / 1000
            } else {
                samples.len() * q / 100
            };
            eprint!("p{q}={:.1} ", samples[idx].as_secs_f64() * 1e6);
        }
        eprintln!();
    }
    (
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
    )
}

fn bench(c: &mut Criterion) {
    let gates = FeatureGates::default();
    let ctx = PodContext {
        gates: &gates,
        now: "2026-11-21T10:00:00Z",
        random: 0.5,
        kruise_namespace: "kruise-system",
        workload: None,
        spreads: None,
        pps_whitelist: None,
    };
    let req = request();
    let small = cluster(0);
    assert!(
        !mutate(&req, &small, &ctx).unwrap().patch.is_empty(),
        "5 SidecarSets match"
    );
    let large = cluster(50_000);
    let mut group = c.benchmark_group("sidecarset_injection");
    group.bench_function("1000_sets_5_match", |b| {
        b.iter(|| mutate(black_box(&req), &small, &ctx).unwrap())
    });
    group.bench_function("plus_50000_in_other_namespaces", |b| {
        b.iter(|| mutate(black_box(&req), &large, &ctx).unwrap())
    });
    // The load bench's request: examples/requests/create-web-pod.json against examples/cluster.yaml (3
    // SidecarSets match; share-volume and transferEnv read the pod's containers).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut example = FixtureCluster::default();
    example
        .load_str(
            &std::fs::read_to_string(root.join("examples/cluster.yaml")).unwrap(),
            "cluster.yaml",
        )
        .unwrap();
    // Decoded from the file's bytes as the server decodes a body: the pod stays as the apiserver wrote it.
    let example_req = kruise_webhooks::admission::decode_review(
        &std::fs::read(root.join("examples/requests/create-web-pod.json")).unwrap(),
    )
    .unwrap()
    .request;
    let patch = mutate(&example_req, &example, &ctx).unwrap().patch;
    let patch = String::from_utf8(kruise_webhooks::json::patch::to_json(&patch)).unwrap();
    for name in ["envoy", "log-agent", "config-reloader"] {
        assert!(patch.contains(name), "{name} is injected: {patch}");
    }
    group.bench_function("example_web_pod_3_sets", |b| {
        b.iter(|| mutate(black_box(&example_req), &example, &ctx).unwrap())
    });
    group.finish();
    for (name, view, req) in [
        ("1000_sets_5_match", &small, &req),
        ("plus_50000_in_other_namespaces", &large, &req),
        ("example_web_pod_3_sets", &example, &example_req),
    ] {
        let (p50, p99) = percentiles(view, req, &ctx);
        println!(
            "sidecarset_injection/{name}: p50 {:.1} µs, p99 {:.1} µs per call",
            p50.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
