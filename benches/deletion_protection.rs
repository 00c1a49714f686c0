//! criterion: the deletion-protection decision (pure function), on realistic requests.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::decode_review;
use kruise_webhooks::deletion_protection::{Facts, validate};
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::registry::Handler;
use serde_json::json;

fn request(
    kind: (&str, &str),
    resource: &str,
    name: &str,
    ns: Option<&str>,
    label: &str,
    replicas: i32,
) -> Vec<u8> {
    let mut meta = json!({"name": name, "labels": {"policy.kruise.io/delete-protection": label, "app": name}, "uid": "0d6c1bd4-77e4-4b3c-9f0e-3f2b0c2f9a11", "resourceVersion": "123456"});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "b1", "kind": {"group": kind.0, "version": "v1", "kind": kind.1},
                    "resource": {"group": kind.0, "version": "v1", "resource": resource},
                    "name": name, "namespace": ns, "operation": "DELETE",
                    "userInfo": {"username": "system:serviceaccount:kube-system:generic-garbage-collector", "groups": ["system:serviceaccounts"]},
                    "oldObject": {"apiVersion": "apps/v1", "kind": kind.1, "metadata": meta,
                                  "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                           "template": {"metadata": {"labels": {"app": name}},
                                                        "spec": {"containers": [{"name": "c", "image": "registry.example.com/app:1.2.3",
                                                                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}}},
                    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}}
    }))
    .unwrap()
}

fn namespace_with_pods(pods: usize) -> FixtureCluster {
    let mut cluster = FixtureCluster::default();
    let mut docs = String::new();
    for i in 0..pods {
        docs.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: ns{}}}\nstatus: {{phase: {}}}\n",
            i % 10,
            if i % 3 == 0 { "Succeeded" } else { "Running" }
        ));
    }
    cluster.load_str(&docs, "bench").unwrap();
    cluster
}

fn bench(c: &mut Criterion) {
    let gates = FeatureGates::default();
    let facts = Facts::default();
    let empty = FixtureCluster::default();
    let mut group = c.benchmark_group("deletion_protection");

    let always = decode_review(&request(
        ("apps", "Deployment"),
        "deployments",
        "web",
        Some("shop"),
        "Always",
        3,
    ))
    .unwrap()
    .request;
    group.bench_function("deployment_always_deny", |b| {
        b.iter(|| {
            validate(
                Handler::Deployment,
                black_box(&always),
                &empty,
                &gates,
                &facts,
            )
            .unwrap()
        })
    });
    let cascading_zero = decode_review(&request(
        ("apps", "Deployment"),
        "deployments",
        "web",
        Some("shop"),
        "Cascading",
        0,
    ))
    .unwrap()
    .request;
    group.bench_function("deployment_cascading_allow", |b| {
        b.iter(|| {
            validate(
                Handler::Deployment,
                black_box(&cascading_zero),
                &empty,
                &gates,
                &facts,
            )
            .unwrap()
        })
    });
    let cluster = namespace_with_pods(10_000);
    let ns = decode_review(
        &serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "n", "kind": {"group": "", "version": "v1", "kind": "Namespace"}, "resource": {"group": "", "version": "v1", "resource": "namespaces"},
            "name": "ns3", "operation": "DELETE", "userInfo": {"username": "alice"},
            "oldObject": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns3", "labels": {"policy.kruise.io/delete-protection": "Cascading"}}}}}))
        .unwrap(),
    )
    .unwrap()
    .request;
    group.bench_function("namespace_cascading_1000_pods_in_ns", |b| {
        b.iter(|| validate(Handler::Namespace, black_box(&ns), &cluster, &gates, &facts).unwrap())
    });
    let body = request(
        ("apps", "Deployment"),
        "deployments",
        "web",
        Some("shop"),
        "Always",
        3,
    );
    group.bench_function("decode_and_decide", |b| {
        b.iter(|| {
            let review = decode_review(black_box(&body)).unwrap();
            validate(Handler::Deployment, &review.request, &empty, &gates, &facts).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
