//! The SidecarSet in-place update planner (spec/sidecarset.md §9 steps 2-8): one round over 10,000 matched
//! pods after an image change, 3,000 already updated (200 of them not ready yet), with a scatter strategy
//! over 10 zones and a priority weight. The goal is under 20 ms per round.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::sidecarset::SidecarSet;
use kruise_webhooks::sidecarset::upgrade::{Round, plan_round};
use serde_json::json;

const PODS: usize = 10_000;

fn set() -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "sidecarset1", "resourceVersion": "200",
            "annotations": {"kruise.io/sidecarset-hash": "h2", "kruise.io/sidecarset-hash-without-image": "w1"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "dns-f", "image": "dns:2.0", "shareVolumePolicy": {"type": "disabled"},
                "upgradeStrategy": {"upgradeType": "ColdUpgrade"}}],
            "updateStrategy": {"type": "RollingUpdate", "partition": "10%", "maxUnavailable": "5%",
                "priorityStrategy": {"weightPriority": [{"weight": 10, "matchSelector": {"matchLabels": {"tier": "canary"}}}]},
                "scatterStrategy": [{"key": "zone", "value": "*"}]}
        },
        "status": {"latestRevision": "sidecarset1-rev2"}
    }))
    .expect("a SidecarSet")
}

fn pod(i: usize) -> Arc<SlimPod> {
    let updated = i < 3_000;
    let ready = !(updated && i < 200);
    let (hash, image) = if updated {
        ("h2", "dns:2.0")
    } else {
        ("h1", "dns:1.0")
    };
    let record = |h: &str| {
        json!({"sidecarset1": {"updateTimestamp": "2025-01-02T03:04:05Z", "hash": h,
            "sidecarSetName": "sidecarset1", "sidecarList": ["dns-f"]}})
        .to_string()
    };
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("web-{i:05}"), "namespace": "default", "resourceVersion": "5",
                "creationTimestamp": format!("2025-01-01T00:{:02}:{:02}Z", (i / 60) % 60, i % 60),
                "labels": {"app": "web", "zone": format!("z{}", i % 10), "tier": if i.is_multiple_of(50) { "canary" } else { "main" }},
                "annotations": {"kruise.io/sidecarset-injected-list": "sidecarset1",
                    "kruise.io/sidecarset-hash": record(hash),
                    "kruise.io/sidecarset-hash-without-image": record("w1")}},
            "spec": {"nodeName": "n1", "containers": [
                {"name": "dns-f", "image": image, "env": [{"name": "IS_INJECTED", "value": "true"}]},
                {"name": "app", "image": "app:1"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                    "lastTransitionTime": "2025-01-01T01:00:00Z"}],
                "containerStatuses": [
                    {"name": "dns-f", "image": image, "imageID": format!("docker-pullable://{image}@sha256:aa"), "ready": ready, "restartCount": i % 3},
                    {"name": "app", "image": "app:1", "imageID": "docker-pullable://app@sha256:bb", "ready": ready}]}
        }))
        .expect("a pod"),
    )
}

fn bench(c: &mut Criterion) {
    let set = set();
    let pods: Vec<Arc<SlimPod>> = (0..PODS).map(pod).collect();
    match plan_round(&set, &pods) {
        Round::Update(round) => eprintln!(
            "one round over {PODS} pods: {} to update, {} held by the partition, {} by maxUnavailable",
            round.update.len(),
            round.partitioned,
            round.budget_held
        ),
        other => panic!("expected an update round, got {other:?}"),
    }
    c.bench_function("sidecarset_upgrade_plan_round_10000_pods", |b| {
        b.iter(|| black_box(plan_round(black_box(&set), black_box(&pods))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
