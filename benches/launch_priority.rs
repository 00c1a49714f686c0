//! Container launch priority (spec/container-launch-priority.md §3): the `/mutate-pod` chain on a
//! 20-container pod whose containers set `KRUISE_CONTAINER_PRIORITY` (the step reads every container, appends
//! 20 barrier envs and the patch carries them), against the same pod without priorities (the step tells it
//! apart without parsing a container); the difference is the step's cost. Goal: under 10 µs for the step.

use std::hint::black_box;

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::AdmissionRequest;
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::pod::{PodContext, mutate};

/// A 20-container pod create as the kube-apiserver sends it (defaulted), with or without priorities.
fn request(priorities: bool) -> AdmissionRequest {
    let containers: Vec<String> = (0..20)
        .map(|i| {
            let priority = if priorities {
                format!(r#"{{"name":"KRUISE_CONTAINER_PRIORITY","value":"{}"}},"#, 20 - i)
            } else {
                String::new()
            };
            format!(
                r#"{{"name":"c-{i}","image":"registry.example.com/c-{i}:1.{i}","ports":[{{"containerPort":{port},"protocol":"TCP"}}],"env":[{priority}{{"name":"A","value":"1"}},{{"name":"B","value":"2"}}],"resources":{{"requests":{{"cpu":"100m","memory":"64Mi"}}}},"volumeMounts":[{{"name":"kube-api-access-x7k2p","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}"#,
                port = 8080 + i
            )
        })
        .collect();
    let pod = format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"web-0","namespace":"default","creationTimestamp":null,"labels":{{"app":"web"}}}},"spec":{{"volumes":[{{"name":"kube-api-access-x7k2p","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}}],"defaultMode":420}}}}],"containers":[{}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","schedulerName":"default-scheduler","priority":0}},"status":{{}}}}"#,
        containers.join(",")
    );
    let review = format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"b","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"namespace":"default","operation":"CREATE","object":{pod}}}}}"#
    );
    kruise_webhooks::admission::decode_review(review.as_bytes())
        .unwrap()
        .request
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
    let view = FixtureCluster::default();
    let (with, without) = (request(true), request(false));
    let patch = mutate(&with, &view, &ctx).unwrap().patch;
    let text = String::from_utf8(kruise_webhooks::json::patch::to_json(&patch)).unwrap();
    assert_eq!(
        text.matches("KRUISE_CONTAINER_BARRIER").count(),
        20,
        "{text}"
    );
    assert!(mutate(&without, &view, &ctx).unwrap().patch.is_empty());
    let mut group = c.benchmark_group("launch_priority");
    group.bench_function("mutate_pod_20_containers_with_priorities", |b| {
        b.iter(|| mutate(black_box(&with), &view, &ctx).unwrap())
    });
    group.bench_function("mutate_pod_20_containers_without", |b| {
        b.iter(|| mutate(black_box(&without), &view, &ctx).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
