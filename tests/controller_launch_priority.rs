//! The container-launch-priority barrier controller (spec/container-launch-priority.md §4, scenarios 13-21
//! of §8) against a mock apiserver (tower-test): each call is asserted (method, path, body) and answered.
//! Scenario 14's pod: containers a p_3, b p_5, c p_0, d (no barrier env), e p_-1, f p_3. Expected bodies are
//! written by hand from the spec.

mod common;

use common::mock_api::{Handle, expect, mock, respond};
use std::time::Duration;

use http::{Method, StatusCode};
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::shared::Publisher;
use kruise_webhook::controller::launch_priority::{Handled, LaunchPriorityController};
use kruise_webhook::controller::runtime::Settings;
use kruise_webhook::metrics::Metrics;
use kruise_webhooks::api::pod::SlimPod;

const CM: &str = "/api/v1/namespaces/default/configmaps/fake-pod-barrier";
const CMS: &str = "/api/v1/namespaces/default/configmaps";
const POD: &str = "/api/v1/namespaces/default/pods/fake-pod";

fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "NotFound",
        "code": 404, "message": "configmaps \"fake-pod-barrier\" not found"})
}

fn container(name: &str, priority: Option<i64>) -> Value {
    match priority {
        Some(p) => json!({"name": name, "image": format!("{name}:1"), "env": [
            {"name": "KRUISE_CONTAINER_PRIORITY", "value": p.to_string()},
            {"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef":
                {"name": "fake-pod-barrier", "key": format!("p_{p}")}}}]}),
        None => json!({"name": name, "image": format!("{name}:1")}),
    }
}

/// Scenario 14's pod with `ready` containers Ready.
fn pod_json(ready: &[&str]) -> Value {
    let spec = [
        ("a", Some(3)),
        ("b", Some(5)),
        ("c", Some(0)),
        ("d", None),
        ("e", Some(-1)),
        ("f", Some(3)),
    ];
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "fake-pod", "namespace": "default", "uid": "u1", "resourceVersion": "10"},
        "spec": {"containers": spec.iter().map(|(n, p)| container(n, *p)).collect::<Vec<_>>()},
        "status": {"phase": "Pending", "containerStatuses": spec.iter()
            .map(|(n, _)| json!({"name": n, "image": format!("{n}:1"), "ready": ready.contains(n)}))
            .collect::<Vec<_>>()}
    })
}

fn pod(ready: &[&str]) -> SlimPod {
    serde_json::from_value(pod_json(ready)).unwrap()
}

fn barrier(keys: &[&str]) -> Value {
    let data: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| ((*k).to_owned(), json!("true")))
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fake-pod-barrier", "namespace": "default", "resourceVersion": "11"},
        "data": data})
}

fn controller(client: &kube::Client, pods: &[SlimPod]) -> LaunchPriorityController {
    let (_publisher, shared) = Publisher::listed((), pods.to_vec());
    LaunchPriorityController::new(client.clone(), shared, Metrics::new())
}

async fn no_more_calls(handle: &mut Handle) {
    if let Ok(Some((request, _))) =
        tokio::time::timeout(Duration::from_millis(200), handle.next_request()).await
    {
        panic!("unexpected {} {}", request.method(), request.uri().path());
    }
}

async fn expect_release(handle: &mut Handle, key: &str, keys_after: &[&str]) {
    let call = expect(handle, Method::PATCH, CM).await;
    assert_eq!(call.content_type, "application/strategic-merge-patch+json");
    assert_eq!(call.body, json!({"data": {key: "true"}}));
    respond(call.send, StatusCode::OK, &barrier(keys_after));
}

async fn expect_completed(handle: &mut Handle) {
    let call = expect(handle, Method::PATCH, POD).await;
    assert_eq!(call.content_type, "application/strategic-merge-patch+json");
    assert_eq!(
        call.body,
        json!({"metadata": {"annotations": {"apps.kruise.io/container-launch-priority-completed": "true"}}})
    );
    respond(call.send, StatusCode::OK, &pod_json(&[]));
}

#[tokio::test]
async fn scenario_13_the_barrier_is_created_owned_by_the_pod_and_the_pod_requeued() {
    let (client, mut handle) = mock();
    let p = pod(&[]);
    let ctl = controller(&client, std::slice::from_ref(&p));
    let run = tokio::spawn(async move { (ctl.handle(&p).await.unwrap(), ctl) });
    let call = expect(&mut handle, Method::GET, CM).await;
    respond(call.send, StatusCode::NOT_FOUND, &not_found());
    let call = expect(&mut handle, Method::POST, CMS).await;
    assert_eq!(
        call.body,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default",
            "name": "fake-pod-barrier", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
            "name": "fake-pod", "uid": "u1"}]}})
    );
    respond(call.send, StatusCode::CREATED, &barrier(&[]));
    let ((done, after), ctl) = run.await.unwrap();
    assert_eq!(
        done,
        Handled {
            created: true,
            ..Handled::default()
        }
    );
    assert_eq!(after, Some(Duration::ZERO), "requeued at once");
    // The requeue: the empty barrier is known, p_5 goes in without reading it again.
    let p = pod(&[]);
    let run = tokio::spawn(async move { ctl.handle(&p).await.unwrap() });
    expect_release(&mut handle, "p_5", &["p_5"]).await;
    assert_eq!(
        run.await.unwrap().0,
        Handled {
            released: true,
            ..Handled::default()
        }
    );
    no_more_calls(&mut handle).await;
}

#[tokio::test]
async fn an_existing_barrier_is_adopted() {
    // Another replica (or an earlier term) created it: AlreadyExists is ignored.
    let (client, mut handle) = mock();
    let p = pod(&[]);
    let ctl = controller(&client, std::slice::from_ref(&p));
    let run = tokio::spawn(async move { ctl.handle(&p).await.unwrap() });
    let call = expect(&mut handle, Method::GET, CM).await;
    respond(call.send, StatusCode::NOT_FOUND, &not_found());
    let call = expect(&mut handle, Method::POST, CMS).await;
    respond(
        call.send,
        StatusCode::CONFLICT,
        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "AlreadyExists", "code": 409,
            "message": "configmaps \"fake-pod-barrier\" already exists"}),
    );
    assert!(run.await.unwrap().0.created);
    no_more_calls(&mut handle).await;
}

#[tokio::test]
async fn scenarios_14_to_17_one_level_per_round_then_completed() {
    let (client, mut handle) = mock();
    let ctl = std::sync::Arc::new(controller(&client, &[pod(&[])]));
    let round = |ready: &'static [&'static str]| {
        let ctl = ctl.clone();
        tokio::spawn(async move { ctl.handle(&pod(ready)).await.unwrap().0 })
    };
    // 14: nothing ready, the barrier exists empty: p_5 only.
    let run = round(&[]);
    let call = expect(&mut handle, Method::GET, CM).await;
    respond(call.send, StatusCode::OK, &barrier(&[]));
    expect_release(&mut handle, "p_5", &["p_5"]).await;
    assert!(run.await.unwrap().released);
    // 14, handled again: p_5 is there and b still starting: no call at all.
    assert_eq!(round(&[]).await.unwrap(), Handled::default());
    no_more_calls(&mut handle).await;
    // b ready: next [-1, 0, 3, 3]: p_3.
    let run = round(&["b"]);
    expect_release(&mut handle, "p_3", &["p_5", "p_3"]).await;
    assert!(run.await.unwrap().released);
    // 15: b and f ready, a still starting: p_3 is there: nothing.
    assert_eq!(round(&["b", "f"]).await.unwrap(), Handled::default());
    no_more_calls(&mut handle).await;
    // 16: a, b, f ready: p_0, not completed.
    let run = round(&["a", "b", "f"]);
    expect_release(&mut handle, "p_0", &["p_5", "p_3", "p_0"]).await;
    assert_eq!(
        run.await.unwrap(),
        Handled {
            released: true,
            ..Handled::default()
        }
    );
    // 17: a, b, c, f ready: p_-1 and completed.
    let run = round(&["a", "b", "c", "f"]);
    expect_release(&mut handle, "p_-1", &["p_5", "p_3", "p_0", "p_-1"]).await;
    expect_completed(&mut handle).await;
    assert_eq!(
        run.await.unwrap(),
        Handled {
            released: true,
            completed: true,
            ..Handled::default()
        }
    );
    assert!(ctl.barriers().is_empty(), "a completed pod is forgotten");
    no_more_calls(&mut handle).await;
}

#[tokio::test]
async fn scenario_19_completed_or_containers_ready_pods_are_left_alone() {
    let (client, mut handle) = mock();
    let mut completed = pod_json(&[]);
    completed["metadata"]["annotations"] =
        json!({"apps.kruise.io/container-launch-priority-completed": "true"});
    let mut ready = pod_json(&[]);
    ready["status"]["conditions"] = json!([{"type": "ContainersReady", "status": "True"}]);
    for p in [completed, ready] {
        let p: SlimPod = serde_json::from_value(p).unwrap();
        let ctl = controller(&client, std::slice::from_ref(&p));
        assert_eq!(ctl.handle(&p).await.unwrap(), (Handled::default(), None));
    }
    no_more_calls(&mut handle).await;
}

#[tokio::test]
async fn a_lowest_level_already_released_completes_the_pod() {
    // §4.2 step 3.1: the key of next[0] is in the barrier (an earlier term released it, then stopped).
    let (client, mut handle) = mock();
    let p = pod(&["a", "b", "c", "f"]);
    let ctl = controller(&client, std::slice::from_ref(&p));
    let run = tokio::spawn(async move { ctl.handle(&p).await.unwrap().0 });
    let call = expect(&mut handle, Method::GET, CM).await;
    respond(
        call.send,
        StatusCode::OK,
        &barrier(&["p_5", "p_3", "p_0", "p_-1"]),
    );
    expect_completed(&mut handle).await;
    assert_eq!(
        run.await.unwrap(),
        Handled {
            completed: true,
            ..Handled::default()
        }
    );
    no_more_calls(&mut handle).await;
}

#[tokio::test]
async fn a_failed_release_is_an_error_retried_and_nothing_is_remembered_as_released() {
    let (client, mut handle) = mock();
    let ctl = std::sync::Arc::new(controller(&client, &[pod(&[])]));
    let c = ctl.clone();
    let run = tokio::spawn(async move { c.handle(&pod(&[])).await.map(|d| d.0) });
    let call = expect(&mut handle, Method::GET, CM).await;
    respond(call.send, StatusCode::OK, &barrier(&[]));
    let call = expect(&mut handle, Method::PATCH, CM).await;
    respond(
        call.send,
        StatusCode::INTERNAL_SERVER_ERROR,
        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "InternalError", "code": 500,
            "message": "etcdserver: request timed out"}),
    );
    let err = run.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("releasing p_5"), "{err}");
    // The retry sends the same key again.
    let c = ctl.clone();
    let run = tokio::spawn(async move { c.handle(&pod(&[])).await.unwrap().0 });
    expect_release(&mut handle, "p_5", &["p_5"]).await;
    assert!(run.await.unwrap().released);
    no_more_calls(&mut handle).await;
}

#[tokio::test]
async fn through_the_runtime_a_container_turning_ready_releases_the_next_level_and_nothing_polls() {
    let (client, mut handle) = mock();
    let (mut publisher, shared) = Publisher::listed((), vec![pod(&[])]);
    let (_leader, leading) = watch::channel(true);
    let running = LaunchPriorityController::start(
        client,
        shared,
        Metrics::new(),
        leading,
        Settings::default(),
    );
    // The start of the term: scenario 13, then 14.
    let call = expect(&mut handle, Method::GET, CM).await;
    respond(call.send, StatusCode::NOT_FOUND, &not_found());
    let call = expect(&mut handle, Method::POST, CMS).await;
    respond(call.send, StatusCode::CREATED, &barrier(&[]));
    expect_release(&mut handle, "p_5", &["p_5"]).await;
    // The pod never gets further on its own: a status change that releases nothing costs no call.
    let mut unchanged = pod_json(&[]);
    unchanged["metadata"]["resourceVersion"] = json!("12");
    publisher.apply(Event::Apply(serde_json::from_value(unchanged).unwrap()));
    no_more_calls(&mut handle).await;
    // b turns Ready: p_3 at once.
    let mut b_ready = pod_json(&["b"]);
    b_ready["metadata"]["resourceVersion"] = json!("13");
    publisher.apply(Event::Apply(serde_json::from_value(b_ready).unwrap()));
    expect_release(&mut handle, "p_3", &["p_5", "p_3"]).await;
    no_more_calls(&mut handle).await;
    // Deleted: forgotten.
    publisher.apply(Event::Delete(pod(&["b"])));
    running.stop().await;
}
