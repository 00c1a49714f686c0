//! criterion: AdmissionReview decode + response encode for a realistic ~10 KB pod create.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kruise_webhooks::Verdict;
use kruise_webhooks::admission::{AdmissionResponse, decode_review, encode_review};
use serde_json::{Value, json};

/// A pod as the apiserver sends it on CREATE: three containers with env, probes, resources and mounts,
/// volumes, tolerations, affinity, managedFields. About 10 KB of JSON.
fn pod() -> Value {
    let container = |name: &str, i: usize| {
        json!({
            "name": name, "image": format!("registry.example.com/team/{name}:1.{i}.0"), "imagePullPolicy": "IfNotPresent",
            "args": ["--port=8080", "--log-level=info", "--metrics-addr=:9090"],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "env": (0..18).map(|e| json!({"name": format!("ENV_VAR_NUMBER_{e}"), "value": format!("value-{e}-{}", "x".repeat(24))})).collect::<Vec<_>>(),
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5, "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "data", "mountPath": "/var/lib/app"},
                             {"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}}
        })
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "checkout-7d9f8b6c5d-", "namespace": "shop", "creationTimestamp": null,
            "labels": {"app": "checkout", "pod-template-hash": "7d9f8b6c5d", "app.kubernetes.io/part-of": "shop", "team": "payments"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "checkout-7d9f8b6c5d", "uid": "5b0c2f9e-3a1d-4e8b-9c7f-1a2b3c4d5e6f", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"checkout\"}": {".": {}, "f:image": {}}}}}}]
        },
        "spec": {
            "containers": [container("checkout", 1), container("cart-cache", 2), container("log-shipper", 3)],
            "initContainers": [{"name": "migrate", "image": "registry.example.com/team/migrate:3", "command": ["/migrate", "up"], "resources": {}}],
            "volumes": [{"name": "config", "configMap": {"name": "checkout-config", "defaultMode": 420}},
                        {"name": "data", "emptyDir": {}},
                        {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "serviceAccountName": "checkout",
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "checkout"}}, "topologyKey": "kubernetes.io/hostname"}}]}},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "schedulerName": "default-scheduler"
        },
        "status": {}
    })
}

fn review_bytes() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"}, "resource": {"group": "", "version": "v1", "resource": "pods"},
                    "requestKind": {"group": "", "version": "v1", "kind": "Pod"}, "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                    "namespace": "shop", "operation": "CREATE",
                    "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller", "uid": "c1", "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]},
                    "object": pod(), "oldObject": null, "dryRun": false,
                    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}
    }))
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let body = review_bytes();
    let mut verdict = Verdict::allow();
    verdict.patch = kruise_webhooks::json::patch::from_json(json!([
        {"op": "add", "path": "/spec/containers/3", "value": {"name": "sidecar", "image": "sidecar:1", "resources": {}}},
        {"op": "add", "path": "/metadata/annotations/kruise.io~1sidecarset-hash", "value": "{\"s\":{\"hash\":\"abc\"}}"}
    ]))
    .unwrap();
    let mut group = c.benchmark_group("admission_codec");
    group.throughput(Throughput::Bytes(body.len() as u64));
    eprintln!("review size: {} bytes", body.len());
    group.bench_function("decode_10k_pod_review", |b| {
        b.iter(|| decode_review(black_box(&body)).unwrap())
    });
    group.bench_function("encode_response_with_patch", |b| {
        b.iter(|| {
            encode_review(
                Some("admission.k8s.io/v1"),
                &AdmissionResponse::from_verdict(
                    "705ab4f5-6393-11e8-b7cc-42010a800002",
                    black_box(&verdict),
                ),
            )
        })
    });
    group.bench_function("decode_and_encode", |b| {
        b.iter(|| {
            let review = decode_review(black_box(&body)).unwrap();
            encode_review(
                Some(review.api_version),
                &AdmissionResponse::from_verdict(&review.request.uid, &verdict),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
