//! The WorkloadSpread controller (spec/workloadspread.md §6, scenarios 29-38 of §9) against a mock apiserver
//! (tower-test): each call is asserted (method, path, body) and answered. Cluster state is the spec's common
//! setup: namespace `ns`, CloneSet `cs` (`apps.kruise.io`, replicas 6), WorkloadSpread `ws` targeting it with
//! subsets `a` (required `zone In [z1]`, toleration `dedicated/Exists`, maxReplicas 2), `b` (required
//! `zone In [z2]`, maxReplicas 3) and `c` (unlimited); pods owned by `cs`, version `versionIgnored`; "now" is
//! 2025-01-01T00:00:00Z. Expected bodies are written by hand from the scenarios.

mod common;

use common::mock_api::{Handle, expect, mock, respond};
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::shared::Publisher;
use kruise_webhook::controller::runtime::Settings;
use kruise_webhook::controller::workloadspread::{
    Context, Inputs, ReconcileError, Reconciled, WorkloadSpreadController, reconcile,
};
use kruise_webhook::metrics::Metrics;
use kruise_webhook::workload::{SlimWorkload, WorkloadKind, WorkloadStores, Workloads};
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::workloadspread::WorkloadSpread;

const STATUS: &str = "/apis/apps.kruise.io/v1beta1/namespaces/ns/workloadspreads/ws/status";
const EVENTS: &str = "/api/v1/namespaces/ns/events";
const NOW: &str = "2025-01-01T00:00:00Z";
const MATCHED: &str = "apps.kruise.io/matched-workloadspread";
const COST: &str = "controller.kubernetes.io/pod-deletion-cost";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

/// `now - secs`, RFC 3339.
fn ago(secs: i64) -> String {
    now()
        .checked_sub(SignedDuration::from_secs(secs))
        .unwrap()
        .to_string()
}

fn failure(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": reason,
        "code": code, "message": format!("{reason} (mock)")})
}

fn subsets() -> Value {
    json!([
        {"name": "a", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
         "tolerations": [{"key": "dedicated", "operator": "Exists"}], "maxReplicas": 2},
        {"name": "b", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]},
         "maxReplicas": 3},
        {"name": "c"}
    ])
}

fn spread(spec_extra: Value, subsets: Value, status: Value) -> Value {
    let mut spec = json!({"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
        "subsets": subsets});
    for (k, v) in spec_extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "ns", "uid": "ws-uid", "generation": 1, "resourceVersion": "100"},
        "spec": spec, "status": status})
}

/// A Running, Ready pod of `cs` annotated into `subset` (none: no annotation) with deletion cost `cost`.
fn pod(name: &str, subset: Option<&str>, cost: Option<&str>) -> Value {
    let mut annotations = json!({});
    if let Some(s) = subset {
        annotations[MATCHED] = json!(format!(r#"{{"name":"ws","subset":"{s}"}}"#));
    }
    if let Some(c) = cost {
        annotations[COST] = json!(c);
    }
    json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "7",
            "creationTimestamp": ago(3600), "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
                "uid": "cs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], "nodeName": "n1"},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ago(3000)}]}
    })
}

fn clone_set(replicas: i32) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "cs", "namespace": "ns", "uid": "cs-uid", "resourceVersion": "20"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "cs"}},
            "template": {"metadata": {"labels": {"app": "cs"}}}}})
}

/// Cluster state: WorkloadSpreads, pods, workloads (any cached kind).
struct Setup {
    spreads: Vec<Value>,
    pods: Vec<Value>,
    workloads: Vec<Value>,
}

impl Setup {
    fn common(status: Value, pods: Vec<Value>) -> Self {
        Self {
            spreads: vec![spread(json!({}), subsets(), status)],
            pods,
            workloads: vec![clone_set(6)],
        }
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap()
}

/// The stores of a setup, a context on one mock apiserver, and the publishers that bring watch events.
struct Harness {
    ctx: Arc<Context>,
    inputs: Inputs,
    handle: Handle,
    metrics: Metrics,
    spreads: Publisher<WorkloadSpread>,
    #[allow(dead_code)]
    pods: Publisher<SlimPod>,
    #[allow(dead_code)]
    workloads: Vec<(WorkloadKind, Publisher<SlimWorkload>)>,
}

/// The listed stores of a setup and their publishers.
struct Listed {
    inputs: Inputs,
    spreads: Publisher<WorkloadSpread>,
    pods: Publisher<SlimPod>,
    workloads: Vec<(WorkloadKind, Publisher<SlimWorkload>)>,
}

fn stores(setup: &Setup, client: kube::Client) -> Listed {
    let (spreads, spread_store) =
        Publisher::listed((), setup.spreads.iter().map(decode).collect::<Vec<_>>());
    let (pods, pod_store) =
        Publisher::listed((), setup.pods.iter().map(decode).collect::<Vec<_>>());
    let mut publishers = Vec::new();
    let mut listed = |kind: WorkloadKind| {
        let objects: Vec<SlimWorkload> = setup
            .workloads
            .iter()
            .filter(|w| {
                let api_version = w["apiVersion"].as_str().unwrap();
                w["kind"] == kind.kind()
                    && api_version.starts_with(kind.group())
                    && api_version[kind.group().len()..].starts_with('/')
            })
            .map(decode)
            .collect();
        let (publisher, shared) = Publisher::listed(kind, objects);
        publishers.push((kind, publisher));
        shared
    };
    let workload_stores = WorkloadStores {
        deployments: listed(WorkloadKind::Deployment),
        replica_sets: listed(WorkloadKind::ReplicaSet),
        stateful_sets: listed(WorkloadKind::StatefulSet),
        clone_sets: Some(listed(WorkloadKind::CloneSet)),
        advanced_stateful_sets: Some(listed(WorkloadKind::AdvancedStatefulSet)),
    };
    let inputs = Inputs {
        spreads: spread_store,
        pods: pod_store,
        workloads: Workloads::new(workload_stores, client, "kruise-system"),
    };
    Listed {
        inputs,
        spreads,
        pods,
        workloads: publishers,
    }
}

fn harness(setup: &Setup) -> Harness {
    let (client, handle) = mock();
    let metrics = Metrics::new();
    let ctx = Arc::new(Context::new(client.clone(), metrics.clone()));
    let Listed {
        inputs,
        spreads,
        pods,
        workloads,
    } = stores(setup, client);
    Harness {
        ctx,
        inputs,
        handle,
        metrics,
        spreads,
        pods,
        workloads,
    }
}

type Run = tokio::task::JoinHandle<Result<Reconciled, ReconcileError>>;

impl Harness {
    /// Reconciles ns/ws at `at` in a task (the test answers its calls meanwhile).
    fn reconcile_at(&self, at: Timestamp) -> Run {
        let (ctx, inputs) = (self.ctx.clone(), self.inputs.clone());
        tokio::spawn(async move { reconcile(&ctx, &inputs, "ns", "ws", at).await })
    }

    fn reconcile(&self) -> Run {
        self.reconcile_at(now())
    }

    /// Waits for the reconcile; asserts nothing else was asked of the apiserver.
    async fn finish(&mut self, run: Run) -> Reconciled {
        let done = run.await.unwrap().unwrap();
        self.assert_no_more_calls().await;
        done
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

    /// Expects the status PUT on resourceVersion 100 carrying `status`; answers it written at 101.
    async fn put_ok(&mut self, status: Value) {
        self.put_ok_on("100", status).await;
    }

    /// Expects the status PUT on `version` carrying `status`; answers it written at the next version.
    async fn put_ok_on(&mut self, version: &str, status: Value) {
        let call = expect(&mut self.handle, Method::PUT, STATUS).await;
        assert_eq!(call.content_type, "application/json");
        assert_eq!(call.body["metadata"]["resourceVersion"], version);
        assert_eq!(call.body["metadata"]["name"], "ws");
        assert_eq!(call.body["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(call.body["kind"], "WorkloadSpread");
        assert!(call.body["spec"]["subsets"].is_array(), "the whole object");
        assert_eq!(call.body["status"], status, "the status written");
        let mut written = call.body.clone();
        let next = version.parse::<u64>().unwrap() + 1;
        written["metadata"]["resourceVersion"] = json!(next.to_string());
        respond(call.send, StatusCode::OK, &written);
    }

    /// Expects a deletion-cost PATCH of `pod` to `cost`, and answers it.
    async fn cost_patch(&mut self, pod_name: &str, cost: &str) {
        let path = format!("/api/v1/namespaces/ns/pods/{pod_name}");
        let call = expect(&mut self.handle, Method::PATCH, &path).await;
        assert_eq!(call.content_type, "application/strategic-merge-patch+json");
        assert_eq!(
            call.body,
            json!({"metadata": {"annotations": {COST: cost}}})
        );
        respond(call.send, StatusCode::OK, &pod(pod_name, None, Some(cost)));
    }

    /// Expects an event on the WorkloadSpread, and answers it created.
    async fn event(&mut self, type_: &str, reason: &str, message: &str) {
        let call = expect(&mut self.handle, Method::POST, EVENTS).await;
        let body = &call.body;
        assert_eq!(
            (&body["type"], &body["reason"], &body["message"]),
            (&json!(type_), &json!(reason), &json!(message)),
            "{body}"
        );
        assert_eq!(body["involvedObject"]["kind"], "WorkloadSpread");
        assert_eq!(
            body["involvedObject"]["apiVersion"],
            "apps.kruise.io/v1beta1"
        );
        assert_eq!(body["involvedObject"]["name"], "ws");
        assert_eq!(body["involvedObject"]["namespace"], "ns");
        assert_eq!(body["source"]["component"], "workloadspread-controller");
        respond(call.send, StatusCode::CREATED, body);
    }

    fn metric(&self, line: &str) -> bool {
        self.metrics.encode().lines().any(|l| l == line)
    }
}

/// A subset status element as the controller writes it.
fn element(name: &str, replicas: i32, missing: i32) -> Value {
    json!({"name": name, "replicas": replicas, "missingReplicas": missing})
}

/// The status with the same list as aggregate and as `versionIgnored`.
fn both(list: Value) -> Value {
    json!({"observedGeneration": 1, "subsetStatuses": list, "versionedSubsetStatuses": {"versionIgnored": list}})
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_29_creating_record_observed_and_a_second_reconcile_writes_nothing() {
    let status = json!({"versionedSubsetStatuses": {"versionIgnored": [
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-aaaaa": ago(5)}},
        element("b", 0, 3), element("c", 0, -1)]}});
    let mut h = harness(&Setup::common(
        status,
        vec![pod("cs-aaaaa", Some("a"), Some("300"))],
    ));
    let run = h.reconcile();
    h.put_ok(both(json!([
        element("a", 1, 1),
        element("b", 0, 3),
        element("c", 0, -1)
    ])))
    .await;
    let done = h.finish(run).await;
    assert!(done.status_written);
    assert_eq!(done.requeue_after, None);
    assert!(h.metric(r#"workloadspread_controller_status_writes_total{result="written"} 1"#));
    // The informer has not caught up: the copy this process wrote is newer, and nothing changed.
    let run = h.reconcile();
    let again = h.finish(run).await;
    assert_eq!(again, Reconciled::default());
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_30_creating_record_expires_with_a_warning() {
    let status = json!({"versionedSubsetStatuses": {"versionIgnored": [
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"ghost": ago(31)}},
        element("b", 0, 3), element("c", 0, -1)]}});
    let mut h = harness(&Setup::common(status, vec![]));
    let run = h.reconcile();
    // No pods and no record left: the versionIgnored list goes.
    h.put_ok(json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)]}))
        .await;
    h.event(
        "Warning",
        "CreatePodFailed",
        "Pod ns/ghost was expected to be created but it wasn't",
    )
    .await;
    let done = h.finish(run).await;
    assert_eq!(done.requeue_after, None);
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_30_a_young_creating_record_holds_its_place_and_requeues() {
    let versioned = json!([
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"ghost": ago(20)}},
        element("b", 0, 3), element("c", 0, -1)]);
    let mut h = harness(&Setup::common(
        json!({"versionedSubsetStatuses": {"versionIgnored": versioned}}),
        vec![],
    ));
    let run = h.reconcile();
    h.put_ok(json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)],
        "versionedSubsetStatuses": {"versionIgnored": versioned}}))
        .await;
    let done = h.finish(run).await;
    assert_eq!(done.requeue_after, Some(Duration::from_secs(10)));
}

fn deleting_setup(at: String) -> Setup {
    let status = json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 2, 0), element("b", 0, 3), element("c", 0, -1)],
        "versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 2, "missingReplicas": 1, "deletingPods": {"cs-aaaaa": at}},
            element("b", 0, 3), element("c", 0, -1)]}});
    Setup::common(
        status,
        vec![
            pod("cs-aaaaa", Some("a"), Some("300")),
            pod("cs-bbbbb", Some("a"), Some("300")),
        ],
    )
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_31_a_young_deleting_record_is_kept_without_a_write() {
    let mut h = harness(&deleting_setup(ago(5)));
    let run = h.reconcile();
    let done = h.finish(run).await;
    assert!(
        !done.status_written,
        "a.missing 1 with the record: as stored"
    );
    assert_eq!(done.requeue_after, Some(Duration::from_secs(10)));
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_31_an_old_deleting_record_is_dropped_with_a_warning() {
    let mut h = harness(&deleting_setup(ago(16)));
    let run = h.reconcile();
    h.put_ok(both(json!([
        element("a", 2, 0),
        element("b", 0, 3),
        element("c", 0, -1)
    ])))
    .await;
    h.event(
        "Warning",
        "DeletePodFailed",
        "Pod ns/cs-aaaaa was expected to be deleted but it wasn't",
    )
    .await;
    h.finish(run).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_32_a_version_without_pods_lives_while_it_has_records() {
    let v2 = |at: String| {
        json!([{"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"web-v2-x": at}},
            element("b", 0, 3), element("c", 0, -1)])
    };
    let current = both(json!([
        element("a", 0, 2),
        element("b", 0, 3),
        element("c", 0, -1)
    ]));
    let mut status = current.clone();
    status["versionedSubsetStatuses"]["v2"] = v2(ago(10));
    let mut h = harness(&Setup::common(status, vec![]));
    // Zero pods: versionIgnored has none either, and goes.
    let run = h.reconcile();
    let mut want = json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)]});
    want["versionedSubsetStatuses"] = json!({"v2": v2(ago(10))});
    h.put_ok(want).await;
    let done = h.finish(run).await;
    assert_eq!(done.requeue_after, Some(Duration::from_secs(20)));
    // 21 s later the record has expired: v2 goes too (the base is the copy this process wrote).
    let later = now().checked_add(SignedDuration::from_secs(21)).unwrap();
    let run = h.reconcile_at(later);
    h.put_ok_on(
        "101",
        json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)]}),
    )
    .await;
    h.event(
        "Warning",
        "CreatePodFailed",
        "Pod ns/web-v2-x was expected to be created but it wasn't",
    )
    .await;
    h.finish(run).await;
}

fn node(labels: Value, taints: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": labels},
        "spec": {"taints": taints}})
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_33_a_pre_existing_pod_is_adopted_into_the_best_subset() {
    let old_pod = pod("cs-old", None, None);
    let mut h = harness(&Setup::common(json!(null), vec![old_pod.clone()]));
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::GET, "/api/v1/nodes/n1").await;
    respond(
        call.send,
        StatusCode::OK,
        &node(json!({"zone": "z2"}), json!([])),
    );
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/api/v1/namespaces/ns/pods/cs-old",
    )
    .await;
    respond(call.send, StatusCode::OK, &old_pod);
    // b (quota 1) and c (quota 1) match, b is earlier.
    let call = expect(
        &mut h.handle,
        Method::PATCH,
        "/api/v1/namespaces/ns/pods/cs-old",
    )
    .await;
    assert_eq!(call.content_type, "application/strategic-merge-patch+json");
    assert_eq!(
        call.body,
        json!({"metadata": {"annotations": {MATCHED: "{\"name\":\"ws\",\"subset\":\"b\"}"}}})
    );
    respond(call.send, StatusCode::OK, &pod("cs-old", Some("b"), None));
    h.cost_patch("cs-old", "200").await;
    h.put_ok(both(json!([
        element("a", 0, 2),
        element("b", 1, 2),
        element("c", 0, -1)
    ])))
    .await;
    let done = h.finish(run).await;
    assert_eq!(done.adopted, 1);
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_33_adoption_copies_the_subset_patch_metadata_unless_told_not_to() {
    let mut subsets = subsets();
    subsets[1]["patch"] = json!({"metadata": {"labels": {"subset": "b"}}});
    for (ignore, want) in [
        (
            false,
            json!({"metadata": {"labels": {"subset": "b"},
            "annotations": {MATCHED: "{\"name\":\"ws\",\"subset\":\"b\"}"}}}),
        ),
        (
            true,
            json!({"metadata": {"annotations": {MATCHED: "{\"name\":\"ws\",\"subset\":\"b\"}"}}}),
        ),
    ] {
        let mut ws = spread(json!({}), subsets.clone(), json!(null));
        if ignore {
            ws["metadata"]["annotations"] =
                json!({"workloadspread.kruise.io/ignore-patch-existing-pods-metadata": "true"});
        }
        let old_pod = pod("cs-old", None, Some("200"));
        let setup = Setup {
            spreads: vec![ws],
            pods: vec![old_pod.clone()],
            workloads: vec![clone_set(6)],
        };
        let mut h = harness(&setup);
        let run = h.reconcile();
        let call = expect(&mut h.handle, Method::GET, "/api/v1/nodes/n1").await;
        respond(
            call.send,
            StatusCode::OK,
            &node(json!({"zone": "z2"}), json!([])),
        );
        let call = expect(
            &mut h.handle,
            Method::GET,
            "/api/v1/namespaces/ns/pods/cs-old",
        )
        .await;
        respond(call.send, StatusCode::OK, &old_pod);
        let call = expect(
            &mut h.handle,
            Method::PATCH,
            "/api/v1/namespaces/ns/pods/cs-old",
        )
        .await;
        assert_eq!(call.body, want);
        respond(call.send, StatusCode::OK, &old_pod);
        h.put_ok(both(json!([
            element("a", 0, 2),
            element("b", 1, 2),
            element("c", 0, -1)
        ])))
        .await;
        h.finish(run).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_pod_no_subset_matches_is_not_read_again_until_it_changes() {
    let old_pod = pod("cs-old", None, Some("-400"));
    let status = both(json!([
        element("a", 0, 2),
        element("b", 0, 3),
        element("c", 0, -1)
    ]));
    let mut h = harness(&Setup::common(status, vec![old_pod.clone()]));
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::GET, "/api/v1/nodes/n1").await;
    // A taint no subset tolerates: no subset matches, the pod stays in no subset.
    respond(
        call.send,
        StatusCode::OK,
        &node(
            json!({"zone": "z2"}),
            json!([{"key": "gpu", "effect": "NoSchedule"}]),
        ),
    );
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/api/v1/namespaces/ns/pods/cs-old",
    )
    .await;
    respond(call.send, StatusCode::OK, &old_pod);
    let done = h.finish(run).await;
    assert_eq!(done.adopted, 0);
    assert!(!done.status_written);
    // Same pod, same spec: no call at all.
    let run = h.reconcile();
    assert_eq!(h.finish(run).await, Reconciled::default());
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_34_deletion_cost_latest_version() {
    let mut not_ready = pod("cs-a2", Some("a"), None);
    not_ready["status"]["conditions"][0]["status"] = json!("False");
    let mut other = pod("cs-x1", None, None);
    // Annotated for another WorkloadSpread and not scheduled: in no subset of this one, not adopted.
    other["metadata"]["annotations"][MATCHED] = json!(r#"{"name":"other","subset":"a"}"#);
    other["spec"].as_object_mut().unwrap().remove("nodeName");
    let pods = vec![
        pod("cs-a1", Some("a"), None),
        not_ready,
        pod("cs-a3", Some("a"), Some("300")),
        pod("cs-b1", Some("b"), None),
        pod("cs-b2", Some("b"), Some("100")),
        pod("cs-c1", Some("c"), None),
        other,
    ];
    let status = both(json!([
        element("a", 3, 0),
        element("b", 2, 1),
        element("c", 1, -1)
    ]));
    let mut h = harness(&Setup::common(status, pods));
    let run = h.reconcile();
    // By pod name; cs-a3 already has its value.
    h.cost_patch("cs-a1", "300").await;
    h.cost_patch("cs-a2", "-100").await;
    h.cost_patch("cs-b1", "200").await;
    h.cost_patch("cs-b2", "200").await;
    h.cost_patch("cs-c1", "100").await;
    h.cost_patch("cs-x1", "-400").await;
    let done = h.finish(run).await;
    assert_eq!(done.costs_written, 6);
    assert!(!done.status_written);
    assert!(h.metric(r#"workloadspread_pod_deletion_cost_patches_total{result="written"} 6"#));
}

/// A pod of Deployment `web`'s ReplicaSet `web-<hash>`.
fn web_pod(name: &str, hash: &str, subset: &str, cost: Option<&str>) -> Value {
    let mut p = pod(name, Some(subset), cost);
    p["metadata"]["labels"] = json!({"app": "web", "pod-template-hash": hash});
    p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": format!("web-{hash}"), "uid": format!("rs-{hash}"), "controller": true}]);
    p
}

fn web_template(image: &str, hash: Option<&str>) -> Value {
    let mut labels = json!({"app": "web"});
    if let Some(h) = hash {
        labels["pod-template-hash"] = json!(h);
    }
    json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": image}]}})
}

fn web_deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "uid": "web-uid", "resourceVersion": "30"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
            "template": web_template("nginx:2", None)}})
}

fn web_replica_set(hash: &str, image: &str, replicas: i32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": format!("web-{hash}"), "namespace": "ns", "uid": format!("rs-{hash}"),
            "resourceVersion": "31", "labels": {"app": "web", "pod-template-hash": hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "web-uid", "controller": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": hash}},
            "template": web_template(image, Some(hash))}})
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_35_deletion_cost_old_version_reversed() {
    let mut ws = spread(
        json!({}),
        json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
        json!(null),
    );
    ws["spec"]["targetRef"] = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    let setup = Setup {
        spreads: vec![ws],
        pods: vec![
            web_pod("web-v1-a1", "v1", "a", None),
            web_pod("web-v1-a2", "v1", "a", None),
            web_pod("web-v1-c1", "v1", "c", None),
            web_pod("web-v2-a1", "v2", "a", None),
            web_pod("web-v2-c1", "v2", "c", None),
        ],
        workloads: vec![
            web_deployment(),
            web_replica_set("v1", "nginx:1", 3),
            web_replica_set("v2", "nginx:2", 2),
        ],
    };
    let mut h = harness(&setup);
    let run = h.reconcile();
    // version(workload): the ReplicaSet whose template is the Deployment's.
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/apis/apps/v1/namespaces/ns/deployments/web",
    )
    .await;
    respond(call.send, StatusCode::OK, &web_deployment());
    let (request, send) = h.handle.next_request().await.unwrap();
    assert_eq!(request.method(), Method::GET);
    assert_eq!(
        request.uri().path(),
        "/apis/apps/v1/namespaces/ns/replicasets"
    );
    assert_eq!(request.uri().query(), Some("&labelSelector=app%3Dweb"));
    respond(
        send,
        StatusCode::OK,
        &json!({"apiVersion": "apps/v1", "kind": "ReplicaSetList", "metadata": {},
            "items": [web_replica_set("v1", "nginx:1", 3), web_replica_set("v2", "nginx:2", 2)]}),
    );
    h.cost_patch("web-v1-a1", "100").await;
    h.cost_patch("web-v1-a2", "100").await;
    h.cost_patch("web-v1-c1", "200").await;
    h.cost_patch("web-v2-a1", "200").await;
    h.cost_patch("web-v2-c1", "100").await;
    let v1 = json!([element("a", 2, 0), element("c", 1, -1)]);
    let v2 = json!([element("a", 1, 1), element("c", 1, -1)]);
    h.put_ok(json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 3, 0), element("c", 2, -1)],
        "versionedSubsetStatuses": {"v1": v1, "v2": v2}}))
        .await;
    h.finish(run).await;
}

fn adaptive() -> Value {
    json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}})
}

fn condition(status: &str, reason: &str, since: &str) -> Value {
    json!([{"type": "Schedulable", "status": status, "reason": reason, "message": "",
        "lastTransitionTime": since}])
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_36_adaptive_marks_the_subset_then_deletes_the_pod() {
    let mut stuck = pod("cs-p1", Some("a"), Some("200"));
    stuck["metadata"]["creationTimestamp"] = json!(ago(40));
    stuck["spec"].as_object_mut().unwrap().remove("nodeName");
    stuck["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
        "status": "False", "reason": "Unschedulable", "lastTransitionTime": ago(40)}]});
    let setup = Setup {
        spreads: vec![spread(
            adaptive(),
            json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
            json!(null),
        )],
        pods: vec![stuck],
        workloads: vec![clone_set(6)],
    };
    let mut h = harness(&setup);
    let run = h.reconcile();
    let mut a = element("a", 1, 1);
    a["conditions"] = condition("False", "PodUnschedulable", NOW);
    let mut c = element("c", 0, -1);
    c["conditions"] = condition("True", "Sufficient", NOW);
    h.put_ok(both(json!([a, c]))).await;
    let call = expect(
        &mut h.handle,
        Method::DELETE,
        "/api/v1/namespaces/ns/pods/cs-p1",
    )
    .await;
    respond(
        call.send,
        StatusCode::OK,
        &pod("cs-p1", Some("a"), Some("200")),
    );
    let done = h.finish(run).await;
    assert_eq!(done.pods_deleted, 1);
    assert!(h.metric(r#"workloadspread_rescheduled_pods_total{result="deleted"} 1"#));
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_36_a_failed_delete_is_a_warning_and_a_retry() {
    let mut stuck = pod("cs-p1", Some("a"), Some("200"));
    stuck["metadata"]["creationTimestamp"] = json!(ago(40));
    stuck["spec"].as_object_mut().unwrap().remove("nodeName");
    stuck["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
        "status": "False", "reason": "Unschedulable"}]});
    let mut a = element("a", 1, 1);
    a["conditions"] = condition("False", "PodUnschedulable", NOW);
    let mut c = element("c", 0, -1);
    c["conditions"] = condition("True", "Sufficient", NOW);
    let setup = Setup {
        spreads: vec![spread(
            adaptive(),
            json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
            both(json!([a, c])),
        )],
        pods: vec![stuck],
        workloads: vec![clone_set(6)],
    };
    let mut h = harness(&setup);
    let run = h.reconcile();
    let call = expect(
        &mut h.handle,
        Method::DELETE,
        "/api/v1/namespaces/ns/pods/cs-p1",
    )
    .await;
    respond(call.send, StatusCode::FORBIDDEN, &failure(403, "Forbidden"));
    h.event(
        "Warning",
        "DeletePodFailed",
        "Failed to delete unschedulabe Pod ns/cs-p1 in Subset a of WorkloadSpread ns/ws",
    )
    .await;
    let err = run.await.unwrap().unwrap_err();
    assert!(
        err.to_string()
            .contains("deleting unschedulable pod ns/cs-p1"),
        "{err}"
    );
}

fn recovering(since: String) -> Setup {
    let mut a = element("a", 0, 2);
    a["conditions"] = condition("False", "PodUnschedulable", &since);
    let mut c = element("c", 0, -1);
    c["conditions"] = condition("True", "Sufficient", &ago(1000));
    Setup {
        spreads: vec![spread(
            adaptive(),
            json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
            json!({"observedGeneration": 1, "subsetStatuses": [a, c]}),
        )],
        pods: vec![],
        workloads: vec![clone_set(6)],
    }
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_37_adaptive_recovery_after_300s() {
    let mut h = harness(&recovering(ago(301)));
    let run = h.reconcile();
    let mut a = element("a", 0, 2);
    a["conditions"] = condition("True", "Sufficient", NOW);
    let mut c = element("c", 0, -1);
    c["conditions"] = condition("True", "Sufficient", &ago(1000));
    h.put_ok(json!({"observedGeneration": 1, "subsetStatuses": [a, c]}))
        .await;
    h.event(
        "Normal",
        "RecoverSchedulable",
        "Subset a of WorkloadSpread ns/ws is recovered from unschedulable to schedulable",
    )
    .await;
    h.finish(run).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_37_adaptive_holds_the_subset_before_300s() {
    let mut h = harness(&recovering(ago(200)));
    let run = h.reconcile();
    let done = h.finish(run).await;
    assert!(!done.status_written);
    assert_eq!(done.requeue_after, Some(Duration::from_secs(100)));
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_38_fixed_strategy_removes_conditions() {
    let mut a = element("a", 0, 2);
    a["conditions"] = condition("False", "PodUnschedulable", &ago(10));
    let mut c = element("c", 0, -1);
    c["conditions"] = condition("True", "Sufficient", &ago(10));
    let setup = Setup {
        spreads: vec![spread(
            json!({}),
            json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}]),
            json!({"observedGeneration": 1, "subsetStatuses": [a, c]}),
        )],
        pods: vec![],
        workloads: vec![clone_set(6)],
    };
    let mut h = harness(&setup);
    let run = h.reconcile();
    h.put_ok(json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("c", 0, -1)]}))
        .await;
    h.finish(run).await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_invalid_target_filter_selector_is_skipped_without_a_call() {
    let mut setup = Setup::common(json!(null), vec![pod("cs-aaaaa", Some("a"), None)]);
    setup.spreads[0]["spec"]["targetFilter"] = json!({"selector": {"matchExpressions": [
        {"key": "role", "operator": "Bogus", "values": ["x"]}]}});
    let mut h = harness(&setup);
    let run = h.reconcile();
    assert_eq!(h.finish(run).await, Reconciled::default());
}

#[tokio::test(flavor = "current_thread")]
async fn a_malformed_max_replicas_percentage_is_skipped_and_keeps_the_records() {
    let status = json!({"versionedSubsetStatuses": {"versionIgnored": [
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-aaaaa": ago(5)}},
        element("c", 0, -1)]}});
    let setup = Setup {
        spreads: vec![spread(
            json!({}),
            json!([{"name": "a", "maxReplicas": "2x%"}, {"name": "c"}]),
            status,
        )],
        pods: vec![pod("cs-aaaaa", Some("a"), None)],
        workloads: vec![clone_set(6)],
    };
    let mut h = harness(&setup);
    let run = h.reconcile();
    assert_eq!(h.finish(run).await, Reconciled::default());
}

#[tokio::test(flavor = "current_thread")]
async fn a_corrupt_annotation_counts_in_no_subset_and_loses_no_record() {
    let mut corrupt = pod("cs-aaaaa", None, None);
    corrupt["metadata"]["annotations"][MATCHED] = json!("{\"name\":\"ws\",");
    // Not scheduled: not adopted either.
    corrupt["spec"].as_object_mut().unwrap().remove("nodeName");
    let status = json!({"versionedSubsetStatuses": {"versionIgnored": [
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-bbbbb": ago(5)}},
        element("b", 0, 3), element("c", 0, -1)]}});
    let mut h = harness(&Setup::common(status, vec![corrupt]));
    let run = h.reconcile();
    h.cost_patch("cs-aaaaa", "-400").await;
    let list = json!([
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-bbbbb": ago(5)}},
        element("b", 0, 3), element("c", 0, -1)]);
    h.put_ok(json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)],
        "versionedSubsetStatuses": {"versionIgnored": list}}))
        .await;
    let done = h.finish(run).await;
    assert_eq!(done.requeue_after, Some(Duration::from_secs(25)));
}

#[tokio::test(flavor = "current_thread")]
async fn a_conflicting_status_write_fails_the_reconcile_for_a_retry() {
    let status = json!({"versionedSubsetStatuses": {"versionIgnored": [
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-aaaaa": ago(5)}},
        element("b", 0, 3), element("c", 0, -1)]}});
    let mut h = harness(&Setup::common(
        status,
        vec![pod("cs-aaaaa", Some("a"), Some("300"))],
    ));
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::PUT, STATUS).await;
    respond(call.send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    let err = run.await.unwrap().unwrap_err();
    assert!(
        err.to_string()
            .contains("writing the status of WorkloadSpread ns/ws"),
        "{err}"
    );
    h.assert_no_more_calls().await;
    assert!(h.metric(r#"workloadspread_controller_status_writes_total{result="conflict"} 1"#));
}

#[tokio::test(flavor = "current_thread")]
async fn a_workload_scaled_to_zero_has_no_pods() {
    let status = both(json!([
        element("a", 1, 1),
        element("b", 0, 3),
        element("c", 0, -1)
    ]));
    let mut setup = Setup::common(status, vec![pod("cs-aaaaa", Some("a"), Some("300"))]);
    setup.workloads = vec![clone_set(0)];
    let mut h = harness(&setup);
    let run = h.reconcile();
    // Integer maxReplicas do not scale with the replicas: a and b have all their room again.
    h.put_ok(json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)]}))
        .await;
    h.finish(run).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_missing_or_deleted_spread_does_nothing() {
    let mut h = harness(&Setup::common(json!(null), vec![]));
    h.spreads.apply(Event::Delete(decode(&spread(
        json!({}),
        subsets(),
        json!(null),
    ))));
    let run = h.reconcile();
    assert_eq!(h.finish(run).await, Reconciled::default());
}

/// The controller over `setup`, leading, with the clock at [`NOW`].
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_pod_event_reconciles_the_spread_it_names() {
    let status = both(json!([
        element("a", 1, 1),
        element("b", 0, 3),
        element("c", 0, -1)
    ]));
    let setup = Setup::common(status, vec![pod("cs-aaaaa", Some("a"), Some("300"))]);
    let (client, mut handle) = mock();
    let Listed {
        inputs,
        spreads: _spreads,
        mut pods,
        workloads: _workloads,
    } = stores(&setup, client.clone());
    let (_leader, leader_rx) = watch::channel(true);
    let controller = WorkloadSpreadController::start(
        Context::new(client, Metrics::new()),
        inputs,
        Arc::new(now),
        leader_rx,
        Settings::default(),
    );
    // Current: the first reconcile writes nothing.
    if let Ok(Some((request, _))) =
        tokio::time::timeout(Duration::from_secs(300), handle.next_request()).await
    {
        panic!(
            "the status is current: {} {}",
            request.method(),
            request.uri().path()
        );
    }
    // A second pod lands in `b`.
    pods.apply(Event::Apply(decode(&pod(
        "cs-bbbbb",
        Some("b"),
        Some("200"),
    ))));
    let call = expect(&mut handle, Method::PUT, STATUS).await;
    assert_eq!(
        call.body["status"],
        both(json!([
            element("a", 1, 1),
            element("b", 1, 2),
            element("c", 0, -1)
        ]))
    );
    respond(call.send, StatusCode::OK, &call.body);
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn replicas_path_list_replaces_the_replicas_for_percentages() {
    let status = both(json!([element("a", 0, 0), element("c", 0, -1)]));
    let mut setup = Setup {
        spreads: vec![spread(
            json!({"targetFilter": {"selector": {"matchLabels": {"role": "worker"}},
                "replicasPathList": ["spec.replicas", "spec.extra.1"]}}),
            json!([{"name": "a", "maxReplicas": "50%"}, {"name": "c"}]),
            status,
        )],
        pods: vec![
            pod("cs-w1", Some("a"), Some("200")),
            pod("cs-p1", Some("a"), None),
        ],
        workloads: vec![clone_set(6)],
    };
    setup.pods[0]["metadata"]["labels"] = json!({"role": "worker"});
    setup.pods[1]["metadata"]["labels"] = json!({"role": "ps"});
    let mut h = harness(&setup);
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::GET, "/apis/apps.kruise.io/v1alpha1").await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps.kruise.io/v1alpha1",
            "resources": [{"name": "clonesets", "singularName": "cloneset", "namespaced": true,
                "kind": "CloneSet", "verbs": ["get", "list", "watch"]}]}),
    );
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/apis/apps.kruise.io/v1alpha1/namespaces/ns/clonesets/cs",
    )
    .await;
    let mut whole = clone_set(6);
    whole["spec"]["extra"] = json!([1, 4]);
    respond(call.send, StatusCode::OK, &whole);
    // 6 + 4 = 10 replicas: a's max is 5, the worker pod takes one; the ps pod is not managed.
    h.put_ok(both(json!([element("a", 1, 4), element("c", 0, -1)])))
        .await;
    h.finish(run).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_whitelisted_custom_workload_counts_its_replicas_path() {
    let mut ws = spread(
        json!({}),
        json!([{"name": "a", "maxReplicas": "50%"}, {"name": "c"}]),
        json!(null),
    );
    ws["spec"]["targetRef"] =
        json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "tf"});
    let mut worker = pod("tf-worker-0", Some("a"), None);
    worker["metadata"]["ownerReferences"] = json!([{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "name": "tf", "uid": "tf-uid", "controller": true}]);
    let setup = Setup {
        spreads: vec![ws],
        pods: vec![worker],
        workloads: vec![],
    };
    let mut h = harness(&setup);
    let run = h.reconcile();
    let call = expect(&mut h.handle, Method::GET, "/apis/kubeflow.org/v1").await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "kubeflow.org/v1",
            "resources": [{"name": "tfjobs", "singularName": "tfjob", "namespaced": true, "kind": "TFJob",
                "verbs": ["get", "list", "watch"]},
                {"name": "tfjobs/scale", "singularName": "", "namespaced": true, "kind": "Scale",
                "group": "autoscaling", "version": "v1", "verbs": ["get"]}]}),
    );
    // The workload finder's own whitelist (PUB's key): not listed there.
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/api/v1/namespaces/kruise-system/configmaps/kruise-configuration",
    )
    .await;
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"},
        "data": {"WorkloadSpread_Watch_Custom_Workload_WhiteList":
            "{\"workloads\":[{\"Group\":\"kubeflow.org\",\"Version\":\"v1\",\"Kind\":\"TFJob\",\"ReplicasPath\":\"spec.tfReplicaSpecs.Worker.replicas\"}]}"}});
    respond(call.send, StatusCode::OK, &config);
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/tf/scale",
    )
    .await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "tf", "namespace": "ns", "uid": "tf-uid"},
            "spec": {"replicas": 1}, "status": {"replicas": 1, "selector": "job=tf"}}),
    );
    // Ours: the WorkloadSpread key gives the replicas path.
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/api/v1/namespaces/kruise-system/configmaps/kruise-configuration",
    )
    .await;
    respond(call.send, StatusCode::OK, &config);
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/tf",
    )
    .await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "tf", "namespace": "ns", "uid": "tf-uid"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4}}}}),
    );
    // 4 workers: a's max is 2. Not a ReplicaSet, Deployment or CloneSet: no deletion cost.
    h.put_ok(both(json!([element("a", 1, 1), element("c", 0, -1)])))
        .await;
    h.finish(run).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_young_record_is_expired_by_a_requeue_not_a_poll() {
    let versioned = json!([
        {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"ghost": ago(20)}},
        element("b", 0, 3), element("c", 0, -1)]);
    // As the controller computes it now: nothing to write until the record expires 10 s later.
    let status = json!({"observedGeneration": 1,
        "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)],
        "versionedSubsetStatuses": {"versionIgnored": versioned}});
    let setup = Setup::common(status, vec![]);
    let (client, mut handle) = mock();
    let listed = stores(&setup, client.clone());
    let (_leader, leader_rx) = watch::channel(true);
    let started = tokio::time::Instant::now();
    let clock = Arc::new(move || {
        let elapsed = tokio::time::Instant::now() - started;
        now().checked_add(elapsed).unwrap()
    });
    let controller = WorkloadSpreadController::start(
        Context::new(client, Metrics::new()),
        listed.inputs.clone(),
        clock,
        leader_rx,
        Settings::default(),
    );
    let call = expect(&mut handle, Method::PUT, STATUS).await;
    assert!(
        started.elapsed() >= Duration::from_secs(10),
        "not before the record expired"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "at its expiry, not at a resync"
    );
    assert_eq!(
        call.body["status"],
        json!({"observedGeneration": 1,
            "subsetStatuses": [element("a", 0, 2), element("b", 0, 3), element("c", 0, -1)]})
    );
    respond(call.send, StatusCode::OK, &call.body);
    let call = expect(&mut handle, Method::POST, EVENTS).await;
    assert_eq!(call.body["reason"], "CreatePodFailed");
    respond(call.send, StatusCode::CREATED, &call.body);
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_cost_patch_is_a_warning_with_openkruises_text_and_a_retry() {
    let mut h = harness(&Setup::common(
        both(json!([
            element("a", 1, 1),
            element("b", 0, 3),
            element("c", 0, -1)
        ])),
        vec![pod("cs-aaaaa", Some("a"), None)],
    ));
    let run = h.reconcile();
    let call = expect(
        &mut h.handle,
        Method::PATCH,
        "/api/v1/namespaces/ns/pods/cs-aaaaa",
    )
    .await;
    respond(call.send, StatusCode::FORBIDDEN, &failure(403, "Forbidden"));
    h.event(
        "Warning",
        "PatchPodDeletionCostFailed",
        "WorkloadSpread ns/ws failed to patch deletion-cost annotation to %!d(string=300) for Pod ns/cs-aaaaa",
    )
    .await;
    let err = run.await.unwrap().unwrap_err();
    assert!(
        err.to_string()
            .contains("writing the deletion cost of pod ns/cs-aaaaa"),
        "{err}"
    );
    h.assert_no_more_calls().await;
    assert!(h.metric(r#"workloadspread_pod_deletion_cost_patches_total{result="error"} 1"#));
}

#[tokio::test(flavor = "current_thread")]
async fn a_job_counts_the_pods_it_owns_and_selects_and_its_parallelism() {
    let mut ws = spread(
        json!({}),
        json!([{"name": "a", "maxReplicas": "50%"}, {"name": "c"}]),
        json!(null),
    );
    ws["spec"]["targetRef"] = json!({"apiVersion": "batch/v1", "kind": "Job", "name": "j"});
    let job_pod = |name: &str, uid: &str, label: &str| {
        let mut p = pod(name, Some("a"), None);
        p["metadata"]["labels"] = json!({"batch.kubernetes.io/controller-uid": label});
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": "j", "uid": uid, "controller": true}]);
        p
    };
    let setup = Setup {
        spreads: vec![ws],
        pods: vec![
            job_pod("j-1", "job-uid", "job-uid"),
            // Owned by the uid but not selected, selected but owned by another: neither counts.
            job_pod("j-2", "job-uid", "other"),
            job_pod("j-3", "old-uid", "job-uid"),
        ],
        workloads: vec![],
    };
    let mut h = harness(&setup);
    let run = h.reconcile();
    let call = expect(
        &mut h.handle,
        Method::GET,
        "/apis/batch/v1/namespaces/ns/jobs/j",
    )
    .await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid"},
            "spec": {"parallelism": 4,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}},
                "template": {"spec": {"containers": [{"name": "app", "image": "busybox"}]}}}}),
    );
    // Parallelism 4: a's max is 2. A Job keeps no deletion cost.
    h.put_ok(both(json!([element("a", 1, 1), element("c", 0, -1)])))
        .await;
    h.finish(run).await;
}
