//! The PodUnavailableBudget status controller (spec/podunavailablebudget.md §6) against a mock apiserver
//! (tower-test): each call is asserted (method, path, body) and answered, conflicts included. Cluster state
//! is the spec's common setup (§12): namespace `default`, Deployment `web` (5 replicas) with ReplicaSet
//! `web-7d9` and pods `web-0..web-4`, Running, Ready and consistent, labelled `app=web` and annotated with
//! both related-pub keys; PUB `pub-web` selecting `app=web` with `maxUnavailable: 1` and status
//! `{total 5, desired 4, current 5, allowed 1}`; "now" is 2026-03-01T10:00:00Z. Expected bodies are written
//! by hand from the scenarios.

mod common;

use common::mock_api::{Handle, Send, expect, mock, respond};
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::shared::Publisher;
use kruise_webhook::controller::podunavailablebudget::{
    Context, Inputs, PodUnavailableBudgetController, Reconciled, reconcile,
};
use kruise_webhook::controller::runtime::{Running, Settings};
use kruise_webhook::workload::{SlimWorkload, WorkloadKind, WorkloadStores, Workloads};
use kruise_webhooks::FeatureGates;
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;

const PUB: &str = "/apis/policy.kruise.io/v1beta1/namespaces/default/podunavailablebudgets/pub-web";
const STATUS: &str =
    "/apis/policy.kruise.io/v1beta1/namespaces/default/podunavailablebudgets/pub-web/status";
const EVENTS: &str = "/api/v1/namespaces/default/events";
const NOW: &str = "2026-03-01T10:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

fn failure(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": reason,
        "code": code, "message": format!("{reason} (mock)")})
}

/// A Running, Ready, consistent pod of ReplicaSet `web-7d9`, labelled and annotated as the common setup.
fn pod_json(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "7",
            "labels": {"app": "web"},
            "annotations": {"pub.kruise.io/related-pub": "pub-web", "kruise.io/related-pub": "pub-web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "image": "nginx:1.25",
                "imageID": "docker-pullable://nginx@sha256:aa", "containerID": "containerd://c"}]}
    })
}

fn web_pods(n: usize) -> Vec<Value> {
    (0..n).map(|i| pod_json(&format!("web-{i}"))).collect()
}

fn deployment(replicas: i32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "dep-uid", "resourceVersion": "20"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}}}})
}

fn replica_set(name: &str, uid: &str, replicas: i32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "21",
            "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "dep-uid", "controller": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}}}})
}

/// The common status: total 5, desired 4, current 5, allowed 1, generation 1 observed.
fn common_status() -> Value {
    json!({"observedGeneration": 1, "unavailableAllowed": 1, "currentAvailable": 5,
        "desiredAvailable": 4, "totalReplicas": 5})
}

fn budget_json(spec: Value, status: Value) -> Value {
    json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "uid": "pub-uid", "generation": 1,
            "resourceVersion": "100"},
        "spec": spec, "status": status})
}

fn selector_spec() -> Value {
    json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1})
}

/// Cluster state: PUBs, pods, workloads (any cached kind, by apiVersion and kind).
struct Setup {
    budgets: Vec<Value>,
    pods: Vec<Value>,
    workloads: Vec<Value>,
}

impl Setup {
    fn common(spec: Value, status: Value) -> Self {
        Self {
            budgets: vec![budget_json(spec, status)],
            pods: web_pods(5),
            workloads: vec![deployment(5), replica_set("web-7d9", "rs-uid", 5)],
        }
    }
}

/// The shared stores of a [`Setup`], listed, and their publishers (kept: through them a test brings watch
/// events).
struct Stores {
    inputs: Inputs,
    budgets: Publisher<PodUnavailableBudget>,
    pods: Publisher<SlimPod>,
    workloads: Vec<(WorkloadKind, Publisher<SlimWorkload>)>,
}

impl Stores {
    fn workload(&mut self, kind: WorkloadKind) -> &mut Publisher<SlimWorkload> {
        &mut self
            .workloads
            .iter_mut()
            .find(|(k, _)| *k == kind)
            .unwrap()
            .1
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap()
}

fn stores(setup: &Setup, client: kube::Client) -> Stores {
    let (budgets, budget_store) =
        Publisher::listed((), setup.budgets.iter().map(decode).collect::<Vec<_>>());
    let (pods, pod_store) =
        Publisher::listed((), setup.pods.iter().map(decode).collect::<Vec<_>>());
    let mut publishers = Vec::new();
    let mut listed = |kind: WorkloadKind| {
        let objects: Vec<SlimWorkload> = setup
            .workloads
            .iter()
            .filter(|w| {
                w["kind"] == kind.kind()
                    && w["apiVersion"].as_str().unwrap().starts_with(kind.group())
                    && w["apiVersion"].as_str().unwrap()[kind.group().len()..].starts_with('/')
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
    Stores {
        inputs: Inputs {
            budgets: budget_store,
            pods: pod_store,
            workloads: Workloads::new(workload_stores, client, "kruise-system"),
        },
        budgets,
        pods,
        workloads: publishers,
    }
}

type Run = tokio::task::JoinHandle<(
    Result<Reconciled, kruise_webhook::controller::podunavailablebudget::ReconcileError>,
    Arc<Context>,
)>;

/// Reconciles pub-web over `setup` at `at`, with `ctx` (a fresh one when `None`).
fn run_at(setup: &Setup, at: Timestamp, ctx: Option<Arc<Context>>) -> (Run, Handle, Stores) {
    let (client, handle) = mock();
    let ctx =
        ctx.unwrap_or_else(|| Arc::new(Context::new(client.clone(), FeatureGates::default())));
    let stores = stores(setup, client);
    let inputs = stores.inputs.clone();
    let run = tokio::spawn(async move {
        let done = reconcile(&ctx, &inputs, "default", "pub-web", at).await;
        (done, ctx)
    });
    (run, handle, stores)
}

fn reconciling(setup: &Setup) -> (Run, Handle, Stores) {
    run_at(setup, now(), None)
}

/// Expects the status PUT on `resource_version` carrying `status`; returns the call's answer handle.
async fn expect_put(handle: &mut Handle, resource_version: &str, status: Value) -> (Send, Value) {
    let call = expect(handle, Method::PUT, STATUS).await;
    assert_eq!(call.content_type, "application/json");
    assert_eq!(call.body["metadata"]["resourceVersion"], resource_version);
    assert_eq!(call.body["metadata"]["name"], "pub-web");
    assert_eq!(call.body["apiVersion"], "policy.kruise.io/v1beta1");
    assert_eq!(call.body["kind"], "PodUnavailableBudget");
    assert_eq!(call.body["status"], status, "the status written");
    (call.send, call.body)
}

/// Expects the PUT and answers it as written, at resourceVersion `written_version`.
async fn put_ok(handle: &mut Handle, resource_version: &str, status: Value, written_version: &str) {
    let (send, mut body) = expect_put(handle, resource_version, status).await;
    body["metadata"]["resourceVersion"] = json!(written_version);
    respond(send, StatusCode::OK, &body);
}

/// Expects an event and answers it created.
async fn expect_event(
    handle: &mut Handle,
    type_: &str,
    reason: &str,
    message: &str,
    kind: &str,
    name: &str,
) {
    let call = expect(handle, Method::POST, EVENTS).await;
    let body = &call.body;
    assert_eq!(
        (&body["type"], &body["reason"], &body["message"]),
        (&json!(type_), &json!(reason), &json!(message)),
        "{body}"
    );
    assert_eq!(body["involvedObject"]["kind"], kind);
    assert_eq!(body["involvedObject"]["name"], name);
    assert_eq!(body["involvedObject"]["namespace"], "default");
    assert_eq!(
        body["source"]["component"],
        "podunavailablebudget-controller"
    );
    assert_eq!(
        body["reportingComponent"],
        "podunavailablebudget-controller"
    );
    assert_eq!(body["count"], 1);
    assert!(
        body["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{name}.")),
        "client-go's name: <object>.<nanoseconds in hex>"
    );
    respond(call.send, StatusCode::CREATED, body);
}

/// Waits for the reconcile; asserts nothing else was asked of the apiserver.
async fn finish(run: Run, mut handle: Handle) -> Reconciled {
    let (done, _) = run.await.unwrap();
    let done = done.unwrap();
    assert_no_more_calls(&mut handle).await;
    done
}

async fn assert_no_more_calls(handle: &mut Handle) {
    if let Ok(Some((request, _))) =
        tokio::time::timeout(Duration::from_millis(50), handle.next_request()).await
    {
        panic!(
            "unexpected call: {} {}",
            request.method(),
            request.uri().path()
        );
    }
}

fn counters(total: i32, desired: i32, current: i32, allowed: i32) -> Value {
    json!({"observedGeneration": 1, "unavailableAllowed": allowed, "currentAvailable": current,
        "desiredAvailable": desired, "totalReplicas": total})
}

fn with(mut status: Value, key: &str, value: Value) -> Value {
    status[key] = value;
    status
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_01_percent_max_unavailable_rounds_up() {
    let setup = Setup {
        budgets: vec![budget_json(
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "25%"}),
            json!(null),
        )],
        pods: web_pods(10),
        workloads: vec![deployment(10), replica_set("web-7d9", "rs-uid", 10)],
    };
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(10, 7, 10, 3), "101").await;
    let done = finish(run, handle).await;
    assert!(done.status_written);
    assert_eq!(done.requeue_after, None);
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_02_percent_min_available_rounds_up() {
    let mut setup = Setup::common(
        json!({"selector": {"matchLabels": {"app": "web"}}, "minAvailable": "50%"}),
        common_status(),
    );
    setup.pods[4]["status"]["conditions"][0]["status"] = json!("False");
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 3, 4, 1), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_03_int_min_available_above_total() {
    let setup = Setup::common(
        json!({"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 8}),
        common_status(),
    );
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 8, 5, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_04_zero_budget() {
    let setup = Setup::common(
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 0}),
        common_status(),
    );
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 5, 5, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_05_protect_total_replicas_overrides_the_workload() {
    // Deployment scaled to 0 while two of its ReplicaSets still own 10 ready pods.
    let mut pods = web_pods(5);
    for i in 5..10 {
        let mut pod = pod_json(&format!("web-{i}"));
        pod["metadata"]["ownerReferences"][0]["name"] = json!("web-6c5");
        pod["metadata"]["ownerReferences"][0]["uid"] = json!("rs-old-uid");
        pods.push(pod);
    }
    let setup = Setup {
        budgets: vec![budget_json(
            json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "30%",
                "protectTotalReplicas": 15}),
            common_status(),
        )],
        pods,
        workloads: vec![
            deployment(0),
            replica_set("web-7d9", "rs-uid", 5),
            replica_set("web-6c5", "rs-old-uid", 5),
        ],
    };
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(15, 10, 10, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn protect_total_replicas_annotation_overrides_too() {
    // DECISIONS 5: a v1alpha1-created PUB keeps its override in the annotation.
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.budgets[0]["metadata"]["annotations"] =
        json!({"pub.kruise.io/protect-total-replicas": "8"});
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(8, 7, 5, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_06_target_workload_scaled_to_zero() {
    let setup = Setup {
        budgets: vec![budget_json(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxUnavailable": 1}),
            common_status(),
        )],
        pods: web_pods(5),
        workloads: vec![deployment(0), replica_set("web-7d9", "rs-uid", 0)],
    };
    let (run, mut handle, _stores) = reconciling(&setup);
    expect_event(
        &mut handle,
        "Normal",
        "NoPods",
        "No matching pods found",
        "PodUnavailableBudget",
        "pub-web",
    )
    .await;
    put_ok(&mut handle, "100", counters(0, 0, 0, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn target_ref_deployment_counts_the_pods_of_its_replica_sets() {
    let setup = Setup {
        budgets: vec![budget_json(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxUnavailable": "20%"}),
            json!(null),
        )],
        pods: web_pods(5),
        workloads: vec![deployment(5), replica_set("web-7d9", "rs-uid", 5)],
    };
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 4, 5, 1), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn target_ref_replica_set_is_the_replica_set_itself() {
    let setup = Setup {
        budgets: vec![budget_json(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9"},
                "maxUnavailable": 1}),
            json!(null),
        )],
        pods: web_pods(5),
        // The Deployment says 9: the ReplicaSet's own replicas count.
        workloads: vec![deployment(9), replica_set("web-7d9", "rs-uid", 5)],
    };
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 4, 5, 1), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_07_an_expired_disruption_is_released_with_an_event() {
    let status = json!({"observedGeneration": 1, "disruptedPods": {"web-1": "2026-03-01T09:59:35Z"},
        "unavailableAllowed": 0, "currentAvailable": 4, "desiredAvailable": 4, "totalReplicas": 5});
    let setup = Setup::common(selector_spec(), status);
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 4, 5, 1), "101").await;
    expect_event(
        &mut handle,
        "Warning",
        "NotDeleted",
        "Pod was expected by PUB default/pub-web to be deleted but it wasn't",
        "Pod",
        "web-1",
    )
    .await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_08_a_fresh_disruption_is_kept_and_rechecked() {
    // As the gate wrote it: web-1 recorded, budget spent, current not yet recounted.
    let status = json!({"observedGeneration": 1, "disruptedPods": {"web-1": "2026-03-01T09:59:55Z"},
        "unavailableAllowed": 0, "currentAvailable": 5, "desiredAvailable": 4, "totalReplicas": 5});
    let setup = Setup::common(selector_spec(), status);
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(
        &mut handle,
        "100",
        with(
            counters(5, 4, 4, 0),
            "disruptedPods",
            json!({"web-1": "2026-03-01T09:59:55Z"}),
        ),
        "101",
    )
    .await;
    let done = finish(run, handle).await;
    assert_eq!(done.requeue_after, Some(Duration::from_secs(15)));
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_09_an_unavailable_entry_lasts_ten_seconds() {
    let entry = json!({"web-2": "2026-03-01T09:59:57Z"});
    let mut setup = Setup::common(
        selector_spec(),
        with(counters(5, 4, 4, 0), "unavailablePods", entry.clone()),
    );
    setup.pods[2]["status"]["conditions"][0]["status"] = json!("False");
    // Already reported as computed: kept, nothing to write, recheck in 7 s.
    let (run, handle, _stores) = reconciling(&setup);
    let done = finish(run, handle).await;
    assert!(!done.status_written);
    assert_eq!(done.requeue_after, Some(Duration::from_secs(7)));
    // At 10:00:08 it is dropped although web-2 is still not ready.
    let later: Timestamp = "2026-03-01T10:00:08Z".parse().unwrap();
    let (run, mut handle, _stores) = run_at(&setup, later, None);
    put_ok(&mut handle, "100", counters(5, 4, 4, 0), "101").await;
    let done = finish(run, handle).await;
    assert_eq!(done.requeue_after, None);
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_10_a_deleted_pod_leaves_the_map_silently() {
    let status = json!({"observedGeneration": 1, "disruptedPods": {"web-4": "2026-03-01T09:59:59Z"},
        "unavailableAllowed": 0, "currentAvailable": 5, "desiredAvailable": 4, "totalReplicas": 5});
    let mut setup = Setup::common(selector_spec(), status);
    setup.pods[4]["metadata"]["deletionTimestamp"] = json!("2026-03-01T09:59:59Z");
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 4, 4, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_11_no_put_when_the_status_is_current() {
    // Maps and times as the apiserver may echo them: another offset, null for an empty map.
    let status = json!({"observedGeneration": 1, "disruptedPods": {"web-1": "2026-03-01T11:59:55+02:00"},
        "unavailablePods": null, "unavailableAllowed": 0, "currentAvailable": 4, "desiredAvailable": 4,
        "totalReplicas": 5});
    let setup = Setup::common(selector_spec(), status);
    let (run, handle, _stores) = reconciling(&setup);
    let done = finish(run, handle).await;
    assert_eq!(
        done,
        Reconciled {
            stamped: 0,
            status_written: false,
            requeue_after: Some(Duration::from_secs(15))
        }
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_new_generation_is_written_even_with_equal_counters() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.budgets[0]["metadata"]["generation"] = json!(2);
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(
        &mut handle,
        "100",
        with(common_status(), "observedGeneration", json!(2)),
        "101",
    )
    .await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_12_an_unavailable_label_makes_a_pod_unavailable() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.pods[3]["metadata"]["labels"]["unavailable-pod.kruise.io/drain"] = json!("true");
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 4, 4, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_13_pods_lacking_the_annotation_are_stamped() {
    let mut setup = Setup::common(selector_spec(), common_status());
    let mut new = pod_json("web-5");
    new["metadata"]["annotations"] = json!({});
    setup.pods.push(new);
    let (run, mut handle, _stores) = reconciling(&setup);
    let call = expect(
        &mut handle,
        Method::PATCH,
        "/api/v1/namespaces/default/pods/web-5",
    )
    .await;
    assert_eq!(call.content_type, "application/strategic-merge-patch+json");
    assert_eq!(
        call.body,
        json!({"metadata": {"annotations": {"pub.kruise.io/related-pub": "pub-web",
            "kruise.io/related-pub": "pub-web"}}})
    );
    let mut patched = pod_json("web-5");
    patched["metadata"]["resourceVersion"] = json!("8");
    respond(call.send, StatusCode::OK, &patched);
    // web-5 is ready too: 6 available of an expected 5.
    put_ok(&mut handle, "100", counters(5, 4, 6, 2), "101").await;
    let done = finish(run, handle).await;
    assert_eq!(done.stamped, 1);
}

#[tokio::test(flavor = "current_thread")]
async fn scenario_14_bare_pods_count_as_available_not_as_expected() {
    let mut setup = Setup::common(selector_spec(), common_status());
    let mut tool = pod_json("tool");
    tool["metadata"]["ownerReferences"] = json!(null);
    setup.pods.push(tool);
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 4, 6, 2), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn pods_of_a_job_count_nothing_toward_the_total() {
    // §10.4 decided: OpenKruise would sum the Job's -1 into a total of 4. Resolving the Job asks discovery
    // and the whitelist (§4.3 steps 7-8); a Job has no scale subresource, and existence is not asked.
    let mut setup = Setup::common(selector_spec(), common_status());
    for name in ["migrate-a", "migrate-b"] {
        let mut pod = pod_json(name);
        pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": "migrate", "uid": "job-uid", "controller": true}]);
        setup.pods.push(pod);
    }
    let (run, mut handle, _stores) = reconciling(&setup);
    let call = expect(&mut handle, Method::GET, "/apis/batch/v1").await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "batch/v1", "resources": [
            {"name": "jobs", "singularName": "job", "namespaced": true, "kind": "Job",
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
            {"name": "jobs/status", "singularName": "", "namespaced": true, "kind": "Job",
                "verbs": ["get", "patch", "update"]}]}),
    );
    let call = expect(
        &mut handle,
        Method::GET,
        "/api/v1/namespaces/kruise-system/configmaps/kruise-configuration",
    )
    .await;
    respond(call.send, StatusCode::NOT_FOUND, &failure(404, "NotFound"));
    put_ok(&mut handle, "100", counters(5, 4, 7, 3), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_target_with_a_scale_subresource_counts_its_pods_by_its_selector() {
    // §4.3 step 8 and §6.2 "any other kind": no pod is owned by the GameServerSet's uid, so its scale
    // selector picks them.
    let mut setup = Setup {
        budgets: vec![budget_json(
            json!({"targetRef": {"apiVersion": "game.io/v1", "kind": "GameServerSet", "name": "gs"},
                "maxUnavailable": 1}),
            json!(null),
        )],
        pods: Vec::new(),
        workloads: Vec::new(),
    };
    for i in 0..3 {
        let mut pod = pod_json(&format!("gs-{i}"));
        pod["metadata"]["labels"] = json!({"game": "gs"});
        pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "game.io/v1", "kind": "GameServer",
            "name": format!("gs-{i}"), "uid": format!("server-{i}"), "controller": true}]);
        setup.pods.push(pod);
    }
    let (run, mut handle, _stores) = reconciling(&setup);
    let call = expect(&mut handle, Method::GET, "/apis/game.io/v1").await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "game.io/v1", "resources": [
            {"name": "gameserversets", "singularName": "gameserverset", "namespaced": true,
                "kind": "GameServerSet", "verbs": ["get", "list", "watch"]},
            {"name": "gameserversets/scale", "singularName": "", "namespaced": true,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}]}),
    );
    let call = expect(
        &mut handle,
        Method::GET,
        "/api/v1/namespaces/kruise-system/configmaps/kruise-configuration",
    )
    .await;
    respond(call.send, StatusCode::NOT_FOUND, &failure(404, "NotFound"));
    let call = expect(
        &mut handle,
        Method::GET,
        "/apis/game.io/v1/namespaces/default/gameserversets/gs/scale",
    )
    .await;
    respond(
        call.send,
        StatusCode::OK,
        &json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "gs", "namespace": "default", "uid": "gs-uid"},
            "spec": {"replicas": 4}, "status": {"replicas": 3, "selector": "game=gs"}}),
    );
    put_ok(&mut handle, "100", counters(4, 3, 3, 0), "101").await;
    finish(run, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_status_conflict_is_read_again_and_retried_on_the_fresh_version() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.pods[0]["status"]["conditions"][0]["status"] = json!("False");
    let (run, mut handle, _stores) = reconciling(&setup);
    let (send, _) = expect_put(&mut handle, "100", counters(5, 4, 4, 0)).await;
    respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    let call = expect(&mut handle, Method::GET, PUB).await;
    let mut fresh = budget_json(selector_spec(), common_status());
    fresh["metadata"]["resourceVersion"] = json!("101");
    respond(call.send, StatusCode::OK, &fresh);
    put_ok(&mut handle, "101", counters(5, 4, 4, 0), "102").await;
    let done = finish(run, handle).await;
    assert!(done.status_written);
}

#[tokio::test(flavor = "current_thread")]
async fn an_entry_the_gate_added_meanwhile_is_in_what_is_put() {
    // The gate admitted the deletion of web-3 between our read and our write: our PUT conflicts, and the
    // fresh object carries its entry and its spend. The retry is computed from that object.
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.pods[0]["status"]["conditions"][0]["status"] = json!("False");
    let (run, mut handle, _stores) = reconciling(&setup);
    let (send, _) = expect_put(&mut handle, "100", counters(5, 4, 4, 0)).await;
    respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    let call = expect(&mut handle, Method::GET, PUB).await;
    let spent = json!({"observedGeneration": 1, "disruptedPods": {"web-3": "2026-03-01T10:00:00Z"},
        "unavailableAllowed": 0, "currentAvailable": 5, "desiredAvailable": 4, "totalReplicas": 5});
    let mut fresh = budget_json(selector_spec(), spent);
    fresh["metadata"]["resourceVersion"] = json!("101");
    respond(call.send, StatusCode::OK, &fresh);
    put_ok(
        &mut handle,
        "101",
        with(
            counters(5, 4, 3, 0),
            "disruptedPods",
            json!({"web-3": "2026-03-01T10:00:00Z"}),
        ),
        "102",
    )
    .await;
    let done = finish(run, handle).await;
    assert_eq!(done.requeue_after, Some(Duration::from_secs(20)));
}

#[tokio::test(flavor = "current_thread")]
async fn a_conflict_stops_when_the_fresh_object_already_reports_the_status() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.pods[0]["status"]["conditions"][0]["status"] = json!("False");
    let (run, mut handle, _stores) = reconciling(&setup);
    let (send, _) = expect_put(&mut handle, "100", counters(5, 4, 4, 0)).await;
    respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    let call = expect(&mut handle, Method::GET, PUB).await;
    let mut fresh = budget_json(selector_spec(), counters(5, 4, 4, 0));
    fresh["metadata"]["resourceVersion"] = json!("101");
    respond(call.send, StatusCode::OK, &fresh);
    let done = finish(run, handle).await;
    assert!(!done.status_written);
}

#[tokio::test(flavor = "current_thread")]
async fn status_conflicts_give_up_after_three_attempts() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.pods[0]["status"]["conditions"][0]["status"] = json!("False");
    let (run, mut handle, _stores) = reconciling(&setup);
    for attempt in 0..3 {
        let version = (100 + attempt).to_string();
        let (send, _) = expect_put(&mut handle, &version, counters(5, 4, 4, 0)).await;
        respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
        if attempt < 2 {
            let call = expect(&mut handle, Method::GET, PUB).await;
            let mut fresh = budget_json(selector_spec(), common_status());
            fresh["metadata"]["resourceVersion"] = json!((101 + attempt).to_string());
            respond(call.send, StatusCode::OK, &fresh);
        }
    }
    let (done, _) = run.await.unwrap();
    let err = done.unwrap_err();
    assert!(err.to_string().contains("after 3 attempts"), "{err}");
    assert_no_more_calls(&mut handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_copy_this_process_wrote_is_the_base_while_the_cache_lags() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.pods[0]["status"]["conditions"][0]["status"] = json!("False");
    let (run, mut handle, _stores) = reconciling(&setup);
    put_ok(&mut handle, "100", counters(5, 4, 4, 0), "105").await;
    let (done, ctx) = run.await.unwrap();
    assert!(done.unwrap().status_written);
    // The informer still has resourceVersion 100 and the old status: our copy (105) is newer and current.
    let (run, handle, _stores) = run_at(&setup, now(), Some(ctx));
    let done = finish(run, handle).await;
    assert!(!done.status_written, "nothing to write on our own copy");
}

#[tokio::test(flavor = "current_thread")]
async fn a_missing_or_deleted_budget_is_left_alone() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.budgets[0]["metadata"]["deletionTimestamp"] = json!("2026-03-01T09:00:00Z");
    setup.pods[0]["status"]["conditions"][0]["status"] = json!("False");
    let (run, handle, _stores) = reconciling(&setup);
    assert_eq!(finish(run, handle).await, Reconciled::default());
    setup.budgets.clear();
    let (run, handle, _stores) = reconciling(&setup);
    assert_eq!(finish(run, handle).await, Reconciled::default());
}

#[tokio::test(flavor = "current_thread")]
async fn a_percent_that_is_not_one_is_an_event_and_an_error() {
    let setup = Setup::common(
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "half"}),
        common_status(),
    );
    let (run, mut handle, _stores) = reconciling(&setup);
    expect_event(
        &mut handle,
        "Warning",
        "CalculateExpectedPodCountFailed",
        "Failed to calculate the number of expected pods: invalid value for IntOrString: invalid type: string is not a percentage",
        "PodUnavailableBudget",
        "pub-web",
    )
    .await;
    let (done, _) = run.await.unwrap();
    assert!(done.is_err());
    assert_no_more_calls(&mut handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_invalid_selector_fails_without_a_call() {
    let setup = Setup::common(
        json!({"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
            "maxUnavailable": 1}),
        common_status(),
    );
    let (run, mut handle, _stores) = reconciling(&setup);
    let (done, _) = run.await.unwrap();
    let err = done.unwrap_err().to_string();
    assert!(err.contains("values set can't be empty"), "{err}");
    assert_no_more_calls(&mut handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_put_is_an_error_without_retry() {
    let mut setup = Setup::common(selector_spec(), common_status());
    setup.pods[0]["status"]["conditions"][0]["status"] = json!("False");
    let (run, mut handle, _stores) = reconciling(&setup);
    let (send, _) = expect_put(&mut handle, "100", counters(5, 4, 4, 0)).await;
    respond(send, StatusCode::FORBIDDEN, &failure(403, "Forbidden"));
    let (done, _) = run.await.unwrap();
    assert!(done.is_err());
    assert_no_more_calls(&mut handle).await;
}

/// The controller over `setup`, leading, with the clock at [`NOW`].
fn start(setup: &Setup) -> (Running, Handle, Stores, watch::Sender<bool>) {
    let (client, handle) = mock();
    let stores = stores(setup, client.clone());
    let (leader, leader_rx) = watch::channel(true);
    let controller = PodUnavailableBudgetController::start(
        Context::new(client, FeatureGates::default()),
        stores.inputs.clone(),
        Arc::new(now),
        leader_rx,
        Settings::default(),
    );
    (controller, handle, stores, leader)
}

/// Asserts the apiserver is not called for 300 s (paused clock).
async fn no_call(handle: &mut Handle, why: &str) {
    if let Ok(Some((request, _))) =
        tokio::time::timeout(Duration::from_secs(300), handle.next_request()).await
    {
        panic!("{why}: {} {}", request.method(), request.uri().path());
    }
}

fn target_setup() -> Setup {
    Setup {
        budgets: vec![budget_json(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxUnavailable": 1}),
            common_status(),
        )],
        pods: web_pods(5),
        workloads: vec![deployment(5), replica_set("web-7d9", "rs-uid", 5)],
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn scenario_15_a_replicas_change_reconciles_the_target_budget() {
    let (controller, mut handle, mut stores, _leader) = start(&target_setup());
    no_call(&mut handle, "the status is current").await;
    // A status-only change of the Deployment: replicas unchanged, nothing to do.
    let mut status_only = deployment(5);
    status_only["metadata"]["resourceVersion"] = json!("22");
    stores
        .workload(WorkloadKind::Deployment)
        .apply(Event::Apply(serde_json::from_value(status_only).unwrap()));
    // The first event of a workload is news to the trigger (it remembers from then on): a reconcile that
    // writes nothing.
    no_call(&mut handle, "replicas did not change the status").await;
    let mut scaled = deployment(3);
    scaled["metadata"]["resourceVersion"] = json!("23");
    stores
        .workload(WorkloadKind::Deployment)
        .apply(Event::Apply(serde_json::from_value(scaled).unwrap()));
    put_ok(&mut handle, "100", counters(3, 2, 5, 3), "101").await;
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_pod_change_reconciles_the_budget_it_names() {
    let (controller, mut handle, mut stores, _leader) =
        start(&Setup::common(selector_spec(), common_status()));
    no_call(&mut handle, "the status is current").await;
    let mut unready = pod_json("web-2");
    unready["metadata"]["resourceVersion"] = json!("8");
    unready["status"]["conditions"][0]["status"] = json!("False");
    stores
        .pods
        .apply(Event::Apply(serde_json::from_value(unready).unwrap()));
    put_ok(&mut handle, "100", counters(5, 4, 4, 0), "101").await;
    // Our write comes back through the watch: nothing more to do.
    let mut written = budget_json(selector_spec(), counters(5, 4, 4, 0));
    written["metadata"]["resourceVersion"] = json!("101");
    stores
        .budgets
        .apply(Event::Apply(serde_json::from_value(written).unwrap()));
    no_call(&mut handle, "the status is current again").await;
    // A pod naming another PUB triggers nothing here.
    let mut other = pod_json("db-0");
    other["metadata"]["annotations"] = json!({"pub.kruise.io/related-pub": "pub-db"});
    other["metadata"]["labels"] = json!({"app": "db"});
    stores
        .pods
        .apply(Event::Apply(serde_json::from_value(other).unwrap()));
    no_call(&mut handle, "pub-db does not exist").await;
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_kept_entry_is_looked_at_again_when_it_expires() {
    let status = json!({"observedGeneration": 1, "disruptedPods": {"web-1": "2026-03-01T09:59:55Z"},
        "unavailableAllowed": 0, "currentAvailable": 4, "desiredAvailable": 4, "totalReplicas": 5});
    let setup = Setup::common(selector_spec(), status);
    // The clock moves with tokio's paused time from NOW.
    let (client, mut handle) = mock();
    let stores = stores(&setup, client.clone());
    let (_leader, leader_rx) = watch::channel(true);
    let started = tokio::time::Instant::now();
    let clock = Arc::new(move || {
        let elapsed = tokio::time::Instant::now() - started;
        now().checked_add(elapsed).unwrap()
    });
    let controller = PodUnavailableBudgetController::start(
        Context::new(client, FeatureGates::default()),
        stores.inputs.clone(),
        clock,
        leader_rx,
        Settings::default(),
    );
    // Kept now (current), requeued after 15 s: then web-1 is still there, and the entry has expired.
    put_ok(&mut handle, "100", counters(5, 4, 5, 1), "101").await;
    assert!(
        started.elapsed() >= Duration::from_secs(15),
        "not before the entry expired"
    );
    expect_event(
        &mut handle,
        "Warning",
        "NotDeleted",
        "Pod was expected by PUB default/pub-web to be deleted but it wasn't",
        "Pod",
        "web-1",
    )
    .await;
    controller.stop().await;
}
