//! The Job sidecar terminator controller (spec/sidecar-terminator.md §3-§8, scenarios of §10; DECISIONS 11)
//! against a mock apiserver (tower-test): each call is asserted (method, path, body) and answered. Common
//! setup of §10: pod `pi-7xk2p` in namespace `jobs`, uid `0b1c2d3e-1111-2222-3333-444455556666`, on
//! `node-1` (no labels), `restartPolicy: Never`, phase Running, containers `main` and `sidecar`
//! (`KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true`); Node `vk-node` labelled `type: virtual-kubelet`; "now" is
//! 2026-03-01T10:00:00Z. Expected calls are written by hand from the spec, never computed by the code.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::mock_api::{Handle, expect, mock, respond};
use http::{Method, StatusCode};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::shared::Publisher;
use kruise_webhook::controller::runtime::Settings;
use kruise_webhook::controller::sidecar_terminator::{
    Context, Inputs, ReconcileError, Reconciled, SidecarTerminatorController, reconcile,
};
use kruise_webhook::metrics::Metrics;
use kruise_webhooks::api::containerrecreaterequest::ContainerRecreateRequest;
use kruise_webhooks::api::node::SlimNode;
use kruise_webhooks::api::pod::SlimPod;

const NS: &str = "jobs";
const POD: &str = "pi-7xk2p";
const UID: &str = "0b1c2d3e-1111-2222-3333-444455556666";
const NOW: &str = "2026-03-01T10:00:00Z";
const CRRS: &str = "/apis/apps.kruise.io/v1beta1/namespaces/jobs/containerrecreaterequests";
const EVENTS: &str = "/api/v1/namespaces/jobs/events";
const POD_PATH: &str = "/api/v1/namespaces/jobs/pods/pi-7xk2p";
const STATUS_PATH: &str = "/api/v1/namespaces/jobs/pods/pi-7xk2p/status";
const NORMAL_CRR: &str = "sidecar-termination-0b1c2d3e-1111-2222-3333-444455556666";
const IGNORE_CRR: &str =
    "sidecar-termination-0b1c2d3e-1111-2222-3333-444455556666-ignore-exit-code";
const WHEN: (&str, &str) = ("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "true");
const IGNORE: (&str, &str) = ("KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "true");

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn failure(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": reason,
        "code": code, "message": format!("{reason} (mock)")})
}

fn container(name: &str, envs: &[(&str, &str)]) -> Value {
    let env: Vec<Value> = envs
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    json!({"name": name, "image": format!("{name}:1"), "env": env})
}

fn running(name: &str) -> Value {
    json!({"name": name, "image": format!("{name}:1"), "imageID": "", "containerID": format!("containerd://{name}"),
        "state": {"running": {"startedAt": "2026-03-01T09:00:00Z"}}})
}

fn exited(name: &str, code: i32) -> Value {
    json!({"name": name, "image": format!("{name}:1"), "imageID": "", "containerID": format!("containerd://{name}"),
        "state": {"terminated": {"exitCode": code, "reason": "Completed"}}})
}

/// The pod `pi-7xk2p` with these containers and statuses.
fn pod(
    policy: &str,
    node: &str,
    phase: &str,
    containers: Vec<Value>,
    statuses: Vec<Value>,
) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": POD, "namespace": NS, "uid": UID, "resourceVersion": "10",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "job-uid",
                "controller": true}]},
        "spec": {"nodeName": node, "restartPolicy": policy, "containers": containers},
        "status": {"phase": phase, "containerStatuses": statuses}
    })
}

/// The common setup with `main` and `sidecar` in these states.
fn common_pod(main: Value, sidecar: Value) -> Value {
    pod(
        "Never",
        "node-1",
        "Running",
        vec![container("main", &[]), container("sidecar", &[WHEN])],
        vec![main, sidecar],
    )
}

fn nodes() -> Vec<Value> {
    vec![
        json!({"metadata": {"name": "node-1", "resourceVersion": "1"}}),
        json!({"metadata": {"name": "vk-node", "resourceVersion": "1", "labels": {"type": "virtual-kubelet"}}}),
    ]
}

fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap()
}

struct Harness {
    ctx: Arc<Context>,
    inputs: Inputs,
    handle: Handle,
    metrics: Metrics,
    pods: Publisher<SlimPod>,
    crrs: Publisher<ContainerRecreateRequest>,
    #[allow(dead_code)]
    nodes: Publisher<SlimNode>,
}

fn harness(pods: Vec<Value>, crrs: Vec<Value>) -> Harness {
    let (client, handle) = mock();
    let metrics = Metrics::new();
    let (pods, pod_store) = Publisher::listed((), pods.iter().map(decode).collect::<Vec<_>>());
    let (nodes, node_store) = Publisher::listed((), nodes().iter().map(decode).collect::<Vec<_>>());
    let (crrs, crr_store) = Publisher::listed((), crrs.iter().map(decode).collect::<Vec<_>>());
    Harness {
        ctx: Arc::new(Context::new(client, metrics.clone())),
        inputs: Inputs {
            pods: pod_store,
            nodes: node_store,
            crrs: crr_store,
        },
        handle,
        metrics,
        pods,
        crrs,
        nodes,
    }
}

type Run = tokio::task::JoinHandle<Result<Reconciled, ReconcileError>>;

/// A call the test expects, as written from the spec.
#[derive(Debug, Clone)]
enum Call {
    /// POST of the CRR named so, listing these containers, on this node.
    Crr(&'static str, &'static [&'static str]),
    /// POST of a Normal `SidecarTerminator` event with this message.
    Event(&'static str),
    /// Strategic-merge PATCH of the pod status with this phase.
    Status(&'static str),
    /// Strategic-merge PATCH of the pod's containers: (name, image).
    Images(&'static [(&'static str, &'static str)]),
}

impl Harness {
    fn reconcile(&self) -> Run {
        let (ctx, inputs) = (self.ctx.clone(), self.inputs.clone());
        tokio::spawn(async move { reconcile(&ctx, &inputs, NS, POD, now()).await })
    }

    async fn assert_no_more_calls(&mut self) {
        if let Ok(Some((request, _))) =
            tokio::time::timeout(Duration::from_millis(50), self.handle.next_request()).await
        {
            panic!(
                "unexpected call: {} {}",
                request.method(),
                request.uri().path()
            );
        }
    }

    /// Runs one reconcile expecting exactly `calls`, answering each; the watch then brings what was written
    /// (a CRR, a phase, images) into the stores, as it would in a cluster.
    async fn reconcile_expecting(&mut self, node: &str, calls: &[Call]) -> Reconciled {
        let run = self.reconcile();
        let mut pod: Value = serde_json::to_value(
            &*self
                .inputs
                .pods
                .store()
                .get(&kube::runtime::reflector::ObjectRef::new(POD).within(NS))
                .unwrap(),
        )
        .unwrap();
        let mut created = Vec::new();
        for call in calls {
            match call {
                Call::Crr(name, containers) => {
                    created.push(self.expect_crr(name, containers, node).await);
                }
                Call::Event(message) => self.expect_event(message).await,
                Call::Status(phase) => {
                    self.expect_status(phase).await;
                    pod["status"]["phase"] = json!(phase);
                }
                Call::Images(images) => {
                    self.expect_images(images).await;
                    for (name, image) in *images {
                        for c in pod["spec"]["containers"].as_array_mut().unwrap() {
                            if c["name"] == *name {
                                c["image"] = json!(image);
                            }
                        }
                    }
                }
            }
        }
        let done = run.await.unwrap().unwrap();
        self.assert_no_more_calls().await;
        for crr in created {
            self.crrs.apply(Event::Apply(decode(&crr)));
        }
        pod["metadata"]["resourceVersion"] = json!("11");
        self.pods.apply(Event::Apply(decode(&pod)));
        done
    }

    async fn expect_crr(&mut self, name: &str, containers: &[&str], node: &str) -> Value {
        let call = expect(&mut self.handle, Method::POST, CRRS).await;
        assert_eq!(call.content_type, "application/json");
        let listed: Vec<Value> = containers.iter().map(|c| json!({"name": c})).collect();
        assert_eq!(
            call.body,
            json!({
                "apiVersion": "apps.kruise.io/v1beta1",
                "kind": "ContainerRecreateRequest",
                "metadata": {
                    "namespace": "jobs",
                    "name": name,
                    "labels": {
                        "crr.apps.kruise.io/active": "true",
                        "crr.apps.kruise.io/node-name": node,
                        "crr.apps.kruise.io/pod-name": "pi-7xk2p",
                        "crr.apps.kruise.io/pod-uid": "0b1c2d3e-1111-2222-3333-444455556666"
                    },
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pi-7xk2p",
                        "uid": "0b1c2d3e-1111-2222-3333-444455556666", "controller": true,
                        "blockOwnerDeletion": true}]
                },
                "spec": {
                    "podName": "pi-7xk2p",
                    "containers": listed,
                    "strategy": {"forceRecreate": true, "failurePolicy": "Ignore"}
                }
            })
        );
        let mut created = call.body.clone();
        created["metadata"]["uid"] = json!(format!("uid-of-{name}"));
        created["metadata"]["resourceVersion"] = json!("50");
        respond(call.send, StatusCode::CREATED, &created);
        created
    }

    async fn expect_event(&mut self, message: &str) {
        let call = expect(&mut self.handle, Method::POST, EVENTS).await;
        let body = &call.body;
        assert_eq!(
            (&body["type"], &body["reason"], &body["message"]),
            (
                &json!("Normal"),
                &json!("SidecarTerminator"),
                &json!(message)
            ),
            "{body}"
        );
        assert_eq!(body["involvedObject"]["kind"], "Pod");
        assert_eq!(body["involvedObject"]["apiVersion"], "v1");
        assert_eq!(body["involvedObject"]["name"], POD);
        assert_eq!(body["involvedObject"]["namespace"], NS);
        assert_eq!(body["involvedObject"]["uid"], UID);
        assert_eq!(body["source"]["component"], "sidecarterminator-controller");
        respond(call.send, StatusCode::CREATED, body);
    }

    async fn expect_status(&mut self, phase: &str) {
        let call = expect(&mut self.handle, Method::PATCH, STATUS_PATH).await;
        assert_eq!(call.content_type, "application/strategic-merge-patch+json");
        assert_eq!(
            call.body,
            json!({"status": {"phase": phase, "conditions": [{"type": "SidecarTerminated",
                "status": "True", "lastTransitionTime": "2026-03-01T10:00:00Z",
                "message": "Terminated by Sidecar Terminator"}]}})
        );
        respond(
            call.send,
            StatusCode::OK,
            &json!({"metadata": {"name": POD}}),
        );
    }

    async fn expect_images(&mut self, images: &[(&str, &str)]) {
        let call = expect(&mut self.handle, Method::PATCH, POD_PATH).await;
        assert_eq!(call.content_type, "application/strategic-merge-patch+json");
        let containers: Vec<Value> = images
            .iter()
            .map(|(n, i)| json!({"name": n, "image": i}))
            .collect();
        assert_eq!(call.body, json!({"spec": {"containers": containers}}));
        respond(
            call.send,
            StatusCode::OK,
            &json!({"metadata": {"name": POD}}),
        );
    }

    fn metric(&self, line: &str) -> bool {
        self.metrics.encode().lines().any(|l| l == line)
    }
}

/// One reconcile with `calls`, then a second one that makes no call.
async fn twice(h: &mut Harness, node: &str, calls: &[Call]) {
    h.reconcile_expecting(node, calls).await;
    h.reconcile_expecting(node, &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_1_main_still_running_does_nothing() {
    let mut h = harness(
        vec![common_pod(running("main"), running("sidecar"))],
        vec![],
    );
    twice(&mut h, "node-1", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_2_main_succeeded_creates_the_crr_once() {
    let mut h = harness(
        vec![common_pod(exited("main", 0), running("sidecar"))],
        vec![],
    );
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr",
            ),
        ],
    )
    .await;
    assert!(h.metric(r#"sidecar_terminator_actions_total{action="crr_create",result="ok"} 1"#));
}

#[tokio::test(flavor = "current_thread")]
async fn a_crr_created_here_counts_as_there_until_the_watch_shows_it() {
    let mut h = harness(
        vec![common_pod(exited("main", 0), running("sidecar"))],
        vec![],
    );
    let run = h.reconcile();
    h.expect_crr(NORMAL_CRR, &["sidecar"], "node-1").await;
    h.expect_event("Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr")
        .await;
    run.await.unwrap().unwrap();
    // The pod changes again before the CRR watch event: no second create, and a look again later in
    // case the CRR never shows.
    let done = h.reconcile().await.unwrap().unwrap();
    h.assert_no_more_calls().await;
    assert_eq!(done.done, vec![]);
    let after = done.requeue_after.unwrap();
    assert!(
        after > Duration::from_secs(50) && after <= Duration::from_secs(60),
        "{after:?}"
    );
    // Once seen, nothing is remembered.
    h.crrs
        .apply(Event::Apply(decode(&crr_in_store(NORMAL_CRR, json!({})))));
    assert_eq!(h.reconcile().await.unwrap().unwrap(), Reconciled::default());
    h.assert_no_more_calls().await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_3_main_failed_never_creates_the_same_crr() {
    let mut h = harness(
        vec![common_pod(exited("main", 1), running("sidecar"))],
        vec![],
    );
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr",
            ),
        ],
    )
    .await;
}

fn on_failure(main_code: i32) -> Value {
    pod(
        "OnFailure",
        "node-1",
        "Running",
        vec![container("main", &[]), container("sidecar", &[WHEN])],
        vec![exited("main", main_code), running("sidecar")],
    )
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_4_on_failure_main_failed_does_nothing() {
    let mut h = harness(vec![on_failure(1)], vec![]);
    twice(&mut h, "node-1", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_5_on_failure_main_succeeded_creates_the_crr() {
    let mut h = harness(vec![on_failure(0)], vec![]);
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_6_pods_that_do_not_qualify() {
    let base = common_pod(exited("main", 0), running("sidecar"));
    let mut always = base.clone();
    always["spec"]["restartPolicy"] = json!("Always");
    let mut pending = base.clone();
    pending["status"]["phase"] = json!("Pending");
    let mut deleting = base.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-03-01T09:59:00Z");
    let sidecar_done = common_pod(exited("main", 0), exited("sidecar", 0));
    let mut one_status = base.clone();
    one_status["status"]["containerStatuses"] = json!([exited("main", 0)]);
    let mut no_env = base.clone();
    no_env["spec"]["containers"][1]["env"] = json!([]);
    for pod in [always, pending, deleting, sidecar_done, one_status, no_env] {
        let mut h = harness(vec![pod], vec![]);
        twice(&mut h, "node-1", &[]).await;
    }
}

fn crr_in_store(name: &str, status: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-of-{name}"), "resourceVersion": "50"},
        "spec": {"podName": POD, "containers": [{"name": "sidecar"}]},
        "status": status})
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_7_an_existing_crr_means_nothing_to_do() {
    let mut h = harness(
        vec![common_pod(exited("main", 0), running("sidecar"))],
        vec![crr_in_store(NORMAL_CRR, json!({"phase": "Recreating"}))],
    );
    twice(&mut h, "node-1", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_7_a_create_that_races_is_an_error_and_the_retry_finds_the_crr() {
    let mut h = harness(
        vec![common_pod(exited("main", 0), running("sidecar"))],
        vec![],
    );
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::POST, CRRS).await;
    assert_eq!(call.body["metadata"]["name"], NORMAL_CRR);
    respond(
        call.send,
        StatusCode::CONFLICT,
        &failure(409, "AlreadyExists"),
    );
    let err = run.await.unwrap().unwrap_err();
    assert!(
        err.to_string().starts_with(
            "creating ContainerRecreateRequest jobs/sidecar-termination-0b1c2d3e-1111-2222-3333-444455556666: "
        ),
        "{err}"
    );
    h.assert_no_more_calls().await;
    assert!(h.metric(r#"sidecar_terminator_actions_total{action="crr_create",result="error"} 1"#));
    h.crrs.apply(Event::Apply(decode(&crr_in_store(
        NORMAL_CRR,
        json!({"phase": "Recreating"}),
    ))));
    h.reconcile_expecting("node-1", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_8_only_uncompleted_sidecars_are_listed() {
    let p = pod(
        "OnFailure",
        "node-1",
        "Running",
        vec![
            container("main-1", &[]),
            container("main-2", &[]),
            container("sidecar-1", &[WHEN]),
            container("sidecar-2", &[WHEN]),
        ],
        vec![
            exited("main-1", 0),
            exited("main-2", 0),
            exited("sidecar-1", 0),
            running("sidecar-2"),
        ],
    );
    let mut h = harness(vec![p], vec![]);
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar-2"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-2] using crr",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_9_env_value_case() {
    let mut upper = common_pod(exited("main", 0), running("sidecar"));
    upper["spec"]["containers"][1]["env"][0]["value"] = json!("TRUE");
    let mut h = harness(vec![upper], vec![]);
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr",
            ),
        ],
    )
    .await;
    let mut yes = common_pod(exited("main", 0), running("sidecar"));
    yes["spec"]["containers"][1]["env"][0]["value"] = json!("yes");
    let mut h = harness(vec![yes], vec![]);
    twice(&mut h, "node-1", &[]).await;
}

fn ignoring(phase: &str, main_code: i32) -> Value {
    pod(
        "Never",
        "node-1",
        phase,
        vec![
            container("main", &[]),
            container("sidecar", &[WHEN, IGNORE]),
        ],
        vec![exited("main", main_code), running("sidecar")],
    )
}

#[tokio::test(flavor = "current_thread")]
async fn scenarios_10_11_ignore_exit_code_patches_the_phase_then_kills() {
    for (code, phase) in [(0, "Succeeded"), (2, "Failed")] {
        let mut h = harness(vec![ignoring("Running", code)], vec![]);
        twice(
            &mut h,
            "node-1",
            &[
                Call::Status(phase),
                Call::Crr(IGNORE_CRR, &["sidecar"]),
                Call::Event(
                    "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr",
                ),
            ],
        )
        .await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_12_phase_already_terminal_only_kills() {
    let mut h = harness(vec![ignoring("Succeeded", 0)], vec![]);
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(IGNORE_CRR, &["sidecar"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_13_mixed_sidecars_each_set_its_own_crr() {
    let containers = vec![
        container("main", &[]),
        container("sidecar-1", &[WHEN]),
        container("sidecar-2", &[WHEN]),
        container("sidecar-3", &[WHEN, IGNORE]),
    ];
    let all_running = pod(
        "OnFailure",
        "node-1",
        "Running",
        containers.clone(),
        vec![
            exited("main", 0),
            running("sidecar-1"),
            running("sidecar-2"),
            running("sidecar-3"),
        ],
    );
    let mut h = harness(vec![all_running], vec![]);
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar-1", "sidecar-2"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-1 sidecar-2] using crr",
            ),
        ],
    )
    .await;
    // kruise-daemon killed them: the ignore-exit-code set now goes (upstream would find the name taken).
    let mut later = pod(
        "OnFailure",
        "node-1",
        "Running",
        containers,
        vec![
            exited("main", 0),
            exited("sidecar-1", 0),
            exited("sidecar-2", 0),
            running("sidecar-3"),
        ],
    );
    later["metadata"]["resourceVersion"] = json!("20");
    h.pods.apply(Event::Apply(decode(&later)));
    twice(
        &mut h,
        "node-1",
        &[
            Call::Status("Succeeded"),
            Call::Crr(IGNORE_CRR, &["sidecar-3"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-3] using crr",
            ),
        ],
    )
    .await;
}

const EXIT_IMAGE: (&str, &str) = (
    "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE",
    "registry.example/exit:1",
);

fn on_vk(sidecar_envs: &[(&str, &str)]) -> Value {
    pod(
        "Never",
        "vk-node",
        "Running",
        vec![container("main", &[]), container("sidecar", sidecar_envs)],
        vec![exited("main", 1), running("sidecar")],
    )
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_14_virtual_kubelet_replaces_the_image_once() {
    let mut h = harness(vec![on_vk(&[WHEN, EXIT_IMAGE])], vec![]);
    twice(
        &mut h,
        "vk-node",
        &[
            Call::Images(&[("sidecar", "registry.example/exit:1")]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using in-place update",
            ),
        ],
    )
    .await;
    assert!(h.metric(r#"sidecar_terminator_actions_total{action="image_replace",result="ok"} 1"#));
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_15_virtual_kubelet_without_exit_image_does_nothing() {
    let mut h = harness(vec![on_vk(&[WHEN])], vec![]);
    twice(&mut h, "vk-node", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_16_ordinary_node_with_only_an_exit_image_does_nothing() {
    let p = pod(
        "Never",
        "node-1",
        "Running",
        vec![container("main", &[]), container("sidecar", &[EXIT_IMAGE])],
        vec![exited("main", 0), running("sidecar")],
    );
    let mut h = harness(vec![p], vec![]);
    twice(&mut h, "node-1", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_17_image_already_replaced_makes_no_call() {
    let mut p = on_vk(&[WHEN, EXIT_IMAGE]);
    p["spec"]["containers"][1]["image"] = json!("registry.example/exit:1");
    let mut h = harness(vec![p], vec![]);
    twice(&mut h, "vk-node", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_18_a_node_missing_from_the_cache_is_an_error_and_no_action() {
    let mut p = common_pod(exited("main", 0), running("sidecar"));
    p["spec"]["nodeName"] = json!("gone");
    let mut h = harness(vec![p], vec![]);
    let err = h.reconcile().await.unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"pod jobs/pi-7xk2p: node "gone" not found in the cache"#
    );
    h.assert_no_more_calls().await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_19_two_vk_sidecars_one_done() {
    let p = pod(
        "Never",
        "vk-node",
        "Running",
        vec![
            container("main", &[]),
            container(
                "s1",
                &[(
                    "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE",
                    "exit:1",
                )],
            ),
            container(
                "s2",
                &[(
                    "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE",
                    "exit:2",
                )],
            ),
        ],
        vec![exited("main", 0), exited("s1", 0), running("s2")],
    );
    let mut h = harness(vec![p], vec![]);
    twice(
        &mut h,
        "vk-node",
        &[
            Call::Images(&[("s2", "exit:2")]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [s2] using in-place update",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_20_a_pod_of_sidecars_only() {
    let p = pod(
        "Never",
        "node-1",
        "Running",
        vec![
            container("sidecar-1", &[WHEN]),
            container("sidecar-2", &[WHEN]),
        ],
        vec![running("sidecar-1"), running("sidecar-2")],
    );
    let mut h = harness(vec![p], vec![]);
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar-1", "sidecar-2"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-1 sidecar-2] using crr",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_22_a_deleted_pod_is_not_acted_on() {
    // The CRR's owner reference (asserted in every create) lets the garbage collector remove it.
    let mut h = harness(vec![], vec![crr_in_store(NORMAL_CRR, json!({}))]);
    twice_absent(&mut h).await;
}

async fn twice_absent(h: &mut Harness) {
    for _ in 0..2 {
        let done = h.reconcile().await.unwrap().unwrap();
        assert_eq!(done, Reconciled::default());
        h.assert_no_more_calls().await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_crr_is_deleted_after_the_pause_and_created_again() {
    // Finished 10 s ago, the sidecar still running: wait 20 s more, no call.
    let young = crr_in_store(
        NORMAL_CRR,
        json!({"phase": "Completed", "completionTime": "2026-03-01T09:59:50Z"}),
    );
    let mut h = harness(
        vec![common_pod(exited("main", 0), running("sidecar"))],
        vec![young],
    );
    let done = h.reconcile_expecting("node-1", &[]).await;
    assert_eq!(done.requeue_after, Some(Duration::from_secs(20)));
    // Finished 60 s ago: deleted with a uid precondition.
    let old = crr_in_store(
        NORMAL_CRR,
        json!({"phase": "Completed", "completionTime": "2026-03-01T09:59:00Z"}),
    );
    h.crrs.apply(Event::Apply(decode(&old)));
    let run = h.reconcile();
    let call = expect(
        &mut h.handle,
        Method::DELETE,
        &format!("{CRRS}/{NORMAL_CRR}"),
    )
    .await;
    assert_eq!(
        call.body,
        json!({"preconditions": {"uid": format!("uid-of-{NORMAL_CRR}")}})
    );
    respond(call.send, StatusCode::OK, &old);
    run.await.unwrap().unwrap();
    h.assert_no_more_calls().await;
    assert!(h.metric(r#"sidecar_terminator_actions_total{action="crr_delete",result="ok"} 1"#));
    // Its deletion is seen: the kill is requested again.
    h.crrs.apply(Event::Delete(decode(&old)));
    twice(
        &mut h,
        "node-1",
        &[
            Call::Crr(NORMAL_CRR, &["sidecar"]),
            Call::Event(
                "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_finished_crr_whose_sidecars_stopped_is_left_alone() {
    let finished = crr_in_store(
        NORMAL_CRR,
        json!({"phase": "Completed", "completionTime": "2026-03-01T09:00:00Z"}),
    );
    // The sidecar terminated: the pod no longer qualifies.
    let mut h = harness(
        vec![common_pod(exited("main", 0), exited("sidecar", 137))],
        vec![finished],
    );
    twice(&mut h, "node-1", &[]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn api_errors_fail_the_reconcile_and_stop_the_actions() {
    let mut h = harness(vec![ignoring("Running", 0)], vec![]);
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::PATCH, STATUS_PATH).await;
    respond(call.send, StatusCode::FORBIDDEN, &failure(403, "Forbidden"));
    let err = run.await.unwrap().unwrap_err();
    assert!(
        err.to_string()
            .starts_with("pod jobs/pi-7xk2p: failed to patch pod status: "),
        "{err}"
    );
    // No CRR after a failed status patch (§5 step 7 returns).
    h.assert_no_more_calls().await;
    assert!(
        h.metric(r#"sidecar_terminator_actions_total{action="status_patch",result="error"} 1"#)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_pod_gone_meanwhile_ends_the_reconcile_quietly() {
    let mut h = harness(vec![on_vk(&[WHEN, EXIT_IMAGE])], vec![]);
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::PATCH, POD_PATH).await;
    respond(call.send, StatusCode::NOT_FOUND, &failure(404, "NotFound"));
    assert_eq!(run.await.unwrap().unwrap().done, vec![]);
    h.assert_no_more_calls().await;
}

#[tokio::test(flavor = "current_thread")]
async fn bad_input_no_panic_no_action() {
    let mut unknown_policy = common_pod(exited("main", 0), running("sidecar"));
    unknown_policy["spec"]["restartPolicy"] = json!("Sometimes");
    let mut doubled = common_pod(exited("main", 0), running("sidecar"));
    doubled["status"]["containerStatuses"] = json!([exited("main", 0), exited("main", 0)]);
    let mut stranger = common_pod(exited("main", 0), running("sidecar"));
    stranger["status"]["containerStatuses"][1]["name"] = json!("other");
    let mut no_statuses = common_pod(exited("main", 0), running("sidecar"));
    no_statuses["status"]["containerStatuses"] = json!(null);
    let mut no_state = common_pod(exited("main", 0), running("sidecar"));
    no_state["status"]["containerStatuses"] = json!([{"name": "main"}, {"name": "sidecar"}]);
    let mut no_spec = common_pod(exited("main", 0), running("sidecar"));
    no_spec["spec"] = json!(null);
    let mut no_status = common_pod(exited("main", 0), running("sidecar"));
    no_status["status"] = json!(null);
    for pod in [
        unknown_policy,
        doubled,
        stranger,
        no_statuses,
        no_state,
        no_spec,
        no_status,
    ] {
        let mut h = harness(vec![pod], vec![]);
        twice(&mut h, "node-1", &[]).await;
    }
    // No node name at all: the node is not in the cache.
    let mut unscheduled = common_pod(exited("main", 0), running("sidecar"));
    unscheduled["spec"]["nodeName"] = json!(null);
    let h = harness(vec![unscheduled], vec![]);
    let err = h.reconcile().await.unwrap().unwrap_err();
    assert!(matches!(err, ReconcileError::NodeMissing { .. }), "{err}");
}

// ---- The terminator matrix --------------------------------------------------------------------------

/// One row: restartPolicy, main exit code, virtual-kubelet node, sidecars, ignore-exit-code, the calls of
/// the first reconcile (the second makes none).
struct Row {
    policy: &'static str,
    exit: i32,
    vk: bool,
    sidecars: usize,
    ignore: bool,
    calls: Vec<Call>,
}

const EV_CRR_1: &str =
    "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-1] using crr";
const EV_CRR_2: &str =
    "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-1 sidecar-2] using crr";
const EV_VK_1: &str =
    "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-1] using in-place update";
const EV_VK_2: &str = "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-1 sidecar-2] using in-place update";
const IMG_1: &[(&str, &str)] = &[("sidecar-1", "exit/sidecar-1:0")];
const IMG_2: &[(&str, &str)] = &[
    ("sidecar-1", "exit/sidecar-1:0"),
    ("sidecar-2", "exit/sidecar-2:0"),
];

fn row(
    policy: &'static str,
    exit: i32,
    vk: bool,
    sidecars: usize,
    ignore: bool,
    calls: Vec<Call>,
) -> Row {
    Row {
        policy,
        exit,
        vk,
        sidecars,
        ignore,
        calls,
    }
}

fn matrix() -> Vec<Row> {
    use Call::{Crr, Event as Ev, Images, Status};
    const N: &str = NORMAL_CRR;
    const I: &str = IGNORE_CRR;
    const S1: &[&str] = &["sidecar-1"];
    const S2: &[&str] = &["sidecar-1", "sidecar-2"];
    vec![
        // Never, main exit 0.
        row("Never", 0, false, 1, false, vec![Crr(N, S1), Ev(EV_CRR_1)]),
        row(
            "Never",
            0,
            false,
            1,
            true,
            vec![Status("Succeeded"), Crr(I, S1), Ev(EV_CRR_1)],
        ),
        row("Never", 0, false, 2, false, vec![Crr(N, S2), Ev(EV_CRR_2)]),
        row(
            "Never",
            0,
            false,
            2,
            true,
            vec![Status("Succeeded"), Crr(I, S2), Ev(EV_CRR_2)],
        ),
        row("Never", 0, true, 1, false, vec![Images(IMG_1), Ev(EV_VK_1)]),
        row("Never", 0, true, 1, true, vec![Images(IMG_1), Ev(EV_VK_1)]),
        row("Never", 0, true, 2, false, vec![Images(IMG_2), Ev(EV_VK_2)]),
        row("Never", 0, true, 2, true, vec![Images(IMG_2), Ev(EV_VK_2)]),
        // Never, main exit 1: terminated is enough; the ignore-exit-code phase is Failed.
        row("Never", 1, false, 1, false, vec![Crr(N, S1), Ev(EV_CRR_1)]),
        row(
            "Never",
            1,
            false,
            1,
            true,
            vec![Status("Failed"), Crr(I, S1), Ev(EV_CRR_1)],
        ),
        row("Never", 1, false, 2, false, vec![Crr(N, S2), Ev(EV_CRR_2)]),
        row(
            "Never",
            1,
            false,
            2,
            true,
            vec![Status("Failed"), Crr(I, S2), Ev(EV_CRR_2)],
        ),
        row("Never", 1, true, 1, false, vec![Images(IMG_1), Ev(EV_VK_1)]),
        row("Never", 1, true, 1, true, vec![Images(IMG_1), Ev(EV_VK_1)]),
        row("Never", 1, true, 2, false, vec![Images(IMG_2), Ev(EV_VK_2)]),
        row("Never", 1, true, 2, true, vec![Images(IMG_2), Ev(EV_VK_2)]),
        // OnFailure, main exit 0: as Never.
        row(
            "OnFailure",
            0,
            false,
            1,
            false,
            vec![Crr(N, S1), Ev(EV_CRR_1)],
        ),
        row(
            "OnFailure",
            0,
            false,
            1,
            true,
            vec![Status("Succeeded"), Crr(I, S1), Ev(EV_CRR_1)],
        ),
        row(
            "OnFailure",
            0,
            false,
            2,
            false,
            vec![Crr(N, S2), Ev(EV_CRR_2)],
        ),
        row(
            "OnFailure",
            0,
            false,
            2,
            true,
            vec![Status("Succeeded"), Crr(I, S2), Ev(EV_CRR_2)],
        ),
        row(
            "OnFailure",
            0,
            true,
            1,
            false,
            vec![Images(IMG_1), Ev(EV_VK_1)],
        ),
        row(
            "OnFailure",
            0,
            true,
            1,
            true,
            vec![Images(IMG_1), Ev(EV_VK_1)],
        ),
        row(
            "OnFailure",
            0,
            true,
            2,
            false,
            vec![Images(IMG_2), Ev(EV_VK_2)],
        ),
        row(
            "OnFailure",
            0,
            true,
            2,
            true,
            vec![Images(IMG_2), Ev(EV_VK_2)],
        ),
        // OnFailure, main exit 1: kubelet restarts main; nothing.
        row("OnFailure", 1, false, 1, false, vec![]),
        row("OnFailure", 1, false, 1, true, vec![]),
        row("OnFailure", 1, false, 2, false, vec![]),
        row("OnFailure", 1, false, 2, true, vec![]),
        row("OnFailure", 1, true, 1, false, vec![]),
        row("OnFailure", 1, true, 1, true, vec![]),
        row("OnFailure", 1, true, 2, false, vec![]),
        row("OnFailure", 1, true, 2, true, vec![]),
    ]
}

#[tokio::test(flavor = "current_thread")]
async fn terminator_matrix() {
    let rows = matrix();
    assert_eq!(rows.len(), 32);
    for r in rows {
        let node = if r.vk { "vk-node" } else { "node-1" };
        let mut containers = vec![container("main", &[])];
        let mut statuses = vec![exited("main", r.exit)];
        for i in 1..=r.sidecars {
            let name = format!("sidecar-{i}");
            // Every sidecar carries both the kill env and an exit image: the node decides (§4.1).
            let image = format!("exit/{name}:0");
            let mut envs = vec![
                WHEN,
                (
                    "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE",
                    image.as_str(),
                ),
            ];
            if r.ignore {
                envs.push(IGNORE);
            }
            containers.push(container(&name, &envs));
            statuses.push(running(&name));
        }
        let p = pod(r.policy, node, "Running", containers, statuses);
        let mut h = harness(vec![p], vec![]);
        eprintln!(
            "row: {} exit {} vk {} sidecars {} ignore {}",
            r.policy, r.exit, r.vk, r.sidecars, r.ignore
        );
        twice(&mut h, node, &r.calls).await;
    }
}

// ---- Driven by the watches -------------------------------------------------------------------------

/// Asserts the apiserver is not called for 300 s (paused clock).
async fn no_call(handle: &mut Handle, why: &str) {
    if let Ok(Some((request, _))) =
        tokio::time::timeout(Duration::from_secs(300), handle.next_request()).await
    {
        panic!("{why}: {} {}", request.method(), request.uri().path());
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_pod_status_change_is_acted_on_through_the_watch_and_nothing_else_writes() {
    let (client, mut handle) = mock();
    let (mut pods, pod_store) = Publisher::listed(
        (),
        vec![decode::<SlimPod>(&common_pod(
            running("main"),
            running("sidecar"),
        ))],
    );
    let (_nodes, node_store) =
        Publisher::listed((), nodes().iter().map(decode).collect::<Vec<SlimNode>>());
    let (mut crrs, crr_store) = Publisher::<ContainerRecreateRequest>::listed((), vec![]);
    let (_leader, leader_rx) = watch::channel(true);
    let controller = SidecarTerminatorController::start(
        Context::new(client, Metrics::new()),
        Inputs {
            pods: pod_store,
            nodes: node_store,
            crrs: crr_store,
        },
        Arc::new(now),
        leader_rx,
        Settings::default(),
    );
    no_call(&mut handle, "main is still running").await;
    // A status change that does not finish main: nothing.
    let mut still = common_pod(running("main"), running("sidecar"));
    still["metadata"]["resourceVersion"] = json!("11");
    pods.apply(Event::Apply(decode(&still)));
    no_call(&mut handle, "main is still running").await;
    // kubelet reports main exited: the CRR and its event follow.
    let mut done = common_pod(exited("main", 0), running("sidecar"));
    done["metadata"]["resourceVersion"] = json!("12");
    pods.apply(Event::Apply(decode(&done)));
    let call = expect(&mut handle, Method::POST, CRRS).await;
    assert_eq!(call.body["metadata"]["name"], NORMAL_CRR);
    let mut created = call.body.clone();
    created["metadata"]["uid"] = json!("crr-uid");
    respond(call.send, StatusCode::CREATED, &created);
    let call = expect(&mut handle, Method::POST, EVENTS).await;
    respond(call.send, StatusCode::CREATED, &call.body.clone());
    // The CRR comes back through its watch, the pod is updated again: no second CRR.
    crrs.apply(Event::Apply(decode(&created)));
    let mut again = done.clone();
    again["metadata"]["resourceVersion"] = json!("13");
    pods.apply(Event::Apply(decode(&again)));
    no_call(&mut handle, "the CRR exists").await;
    controller.stop().await;
}
