//! The Job sidecar terminator's reaction time (spec/sidecar-terminator.md §3: driven by pod updates, never
//! a poll): 10,000 Job pods cached (main and sidecar running, so none qualifies), the controller leading on
//! a tower-test mock apiserver; one pod at a time has its main container exit (a MODIFIED pod, as kubelet's
//! status update brings) and the time to the CRR POST is measured. Reported: p50, p90 and max over 50
//! changes (goal: under a second). Without `--bench` (`cargo test --all-targets`), 200 pods and 3 changes.

use std::sync::Arc;
use std::time::{Duration, Instant};

// The allocator the kruise-webhook binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use http::{Method, StatusCode};
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::shared::Publisher;
use kruise_webhook::controller::runtime::Settings;
use kruise_webhook::controller::sidecar_terminator::{
    Context, Inputs, SidecarTerminatorController,
};
use kruise_webhook::metrics::Metrics;
use kruise_webhooks::api::containerrecreaterequest::ContainerRecreateRequest;
use kruise_webhooks::api::node::SlimNode;
use kruise_webhooks::api::pod::SlimPod;

#[allow(dead_code)]
#[path = "../tests/common/mock_api.rs"]
mod mock_api;

const CRRS: &str = "/apis/apps.kruise.io/v1beta1/namespaces/jobs/containerrecreaterequests";
const EVENTS: &str = "/api/v1/namespaces/jobs/events";

fn pod(i: usize, resource_version: u64, main_done: bool) -> SlimPod {
    let main_state = if main_done {
        json!({"terminated": {"exitCode": 0}})
    } else {
        json!({"running": {"startedAt": "2026-03-01T09:00:00Z"}})
    };
    serde_json::from_value(json!({
        "metadata": {"name": format!("job-{i}"), "namespace": "jobs", "uid": format!("uid-{i}"),
            "resourceVersion": resource_version.to_string(),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": format!("job-{i}"),
                "uid": format!("job-uid-{i}"), "controller": true}]},
        "spec": {"nodeName": format!("node-{}", i % 100), "restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox:1"},
            {"name": "sidecar", "image": "envoy:1",
             "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}]}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "main", "image": "busybox:1", "imageID": "", "containerID": "containerd://m", "state": main_state},
            {"name": "sidecar", "image": "envoy:1", "imageID": "", "containerID": "containerd://s",
             "state": {"running": {"startedAt": "2026-03-01T09:00:00Z"}}}]}
    }))
    .expect("a valid pod")
}

fn node(i: usize) -> SlimNode {
    serde_json::from_value(
        json!({"metadata": {"name": format!("node-{i}"), "resourceVersion": "1"}}),
    )
    .expect("a valid node")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (pods, changes) = if bench { (10_000, 50) } else { (200, 3) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let (client, mut handle) = mock_api::mock();
        let (mut pod_feed, pod_store) = Publisher::listed((), (0..pods).map(|i| pod(i, 1, false)));
        let (_node_feed, node_store) = Publisher::listed((), (0..100).map(node));
        let (_crr_feed, crr_store) = Publisher::<ContainerRecreateRequest>::listed((), vec![]);
        let (_leader, leader_rx) = watch::channel(true);
        let controller = SidecarTerminatorController::start(
            Context::new(client, Metrics::new()),
            Inputs {
                pods: pod_store,
                nodes: node_store,
                crrs: crr_store,
            },
            Arc::new(k8s_openapi::jiff::Timestamp::now),
            leader_rx,
            Settings::default(),
        );
        // The first reconcile of every pod (leadership starts) writes nothing.
        if let Ok(Some((request, _))) =
            tokio::time::timeout(Duration::from_secs(2), handle.next_request()).await
        {
            panic!("unexpected call: {} {}", request.method(), request.uri().path());
        }
        let mut latencies = Vec::with_capacity(changes);
        for k in 0..changes {
            let i = (k * 7919) % pods;
            let at = Instant::now();
            pod_feed.apply(Event::Apply(pod(i, 2, true)));
            let call = mock_api::expect(&mut handle, Method::POST, CRRS).await;
            latencies.push(at.elapsed());
            assert_eq!(call.body["spec"]["podName"], json!(format!("job-{i}")));
            let created: Value = call.body.clone();
            mock_api::respond(call.send, StatusCode::CREATED, &created);
            let event = mock_api::expect(&mut handle, Method::POST, EVENTS).await;
            let body = event.body.clone();
            mock_api::respond(event.send, StatusCode::CREATED, &body);
        }
        latencies.sort();
        println!(
            "sidecar terminator, {pods} pods: main exit to CRR POST over {} changes: p50 {:.2} ms, p90 {:.2} ms, max {:.2} ms",
            latencies.len(),
            percentile(&latencies, 0.5).as_secs_f64() * 1e3,
            percentile(&latencies, 0.9).as_secs_f64() * 1e3,
            latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
        );
        controller.stop().await;
    });
}
