//! The SidecarSet in-place update (spec/sidecarset.md §9 "In-place update", §6.2) against a mock apiserver
//! (tower-test): each call is asserted (method, path, body) and answered, conflicts and PodUnavailableBudget
//! refusals included. Expected pod bodies are written by hand from the spec.

mod common;

use common::mock_api::{Handle, expect, mock, respond};
use std::sync::Arc;

use http::{Method, StatusCode};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use kruise_webhook::controller::sidecarset::upgrade::{BUDGET_RETRY, EXPECTATIONS_RETRY};
use kruise_webhook::controller::sidecarset::{
    ReconcileError, Snapshot, UpgradeContext, Upgraded, reconcile_and_upgrade,
};
use kruise_webhook::metrics::Metrics;
use kruise_webhooks::api::sidecarset::SidecarSet;
use kruise_webhooks::sidecarset::status::candidate_revision;

const POD: &str = "/api/v1/namespaces/default/pods/web-1";
const POD_STATUS: &str = "/api/v1/namespaces/default/pods/web-1/status";
const NOW: &str = "2026-03-04T05:06:07Z";

fn failure(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": reason,
        "code": code, "message": message})
}

/// sidecarset1 after its image moved from `dns:1.0` (hash `h1`) to `dns:2.0` (hash `h2`).
fn set_value(upgrade: &str) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "sidecarset1", "uid": "uid-1", "generation": 3, "resourceVersion": "300",
            "annotations": {"kruise.io/sidecarset-hash": "h2", "kruise.io/sidecarset-hash-without-image": "w1"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "dns-f", "image": "dns:2.0", "imagePullPolicy": "IfNotPresent",
                "podInjectPolicy": "BeforeAppContainer", "shareVolumePolicy": {"type": "disabled"},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "upgradeStrategy": if upgrade == "HotUpgrade" {
                    json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"})
                } else {
                    json!({"upgradeType": "ColdUpgrade"})
                }}],
            "updateStrategy": {"type": "RollingUpdate"}
        }
    })
}

fn record(hash: &str) -> String {
    json!({"sidecarset1": {"updateTimestamp": "2025-01-02T03:04:05Z", "hash": hash,
        "sidecarSetName": "sidecarset1", "sidecarList": ["dns-f"], "controllerRevision": "sidecarset1-old"}})
    .to_string()
}

/// The pod as the API server returns it: injected at `h1`, running `dns:1.0`, ready; with fields our types
/// do not know (`uncommon`, `managedFields`).
fn pod_value() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "pod-uid", "resourceVersion": "7",
            "labels": {"app": "web"}, "creationTimestamp": "2025-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubelet", "operation": "Update"}],
            "annotations": {"kruise.io/sidecarset-injected-list": "sidecarset1",
                "kruise.io/sidecarset-hash": record("h1"),
                "kruise.io/sidecarset-hash-without-image": record("w1")}},
        "spec": {"nodeName": "n1", "containers": [
            {"name": "dns-f", "image": "dns:1.0", "env": [{"name": "IS_INJECTED", "value": "true"}],
                "uncommon": {"kept": true}},
            {"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2025-01-01T00:01:00Z"}],
            "containerStatuses": [
                {"name": "dns-f", "image": "dns:1.0", "imageID": "docker-pullable://dns@sha256:aaaa", "ready": true},
                {"name": "app", "image": "app:1", "imageID": "docker-pullable://app@sha256:bbbb", "ready": true}]}
    })
}

/// The SidecarSet whose status already reports `status_pods` (matched, updated, ready, updatedReady) at
/// its latest revision, with that revision stored: the reconcile writes no status and no revision.
fn snapshot(set: Value, pods: Vec<Value>, counts: [i32; 4]) -> Snapshot {
    let mut set = set;
    let typed: SidecarSet = serde_json::from_value(set.clone()).unwrap();
    let revision = candidate_revision(&typed, "kruise-system", 1, 0);
    set["status"] = json!({"observedGeneration": 3, "matchedPods": counts[0], "updatedPods": counts[1],
        "readyPods": counts[2], "updatedReadyPods": counts[3], "latestRevision": revision.name(),
        "collisionCount": 0});
    Snapshot {
        sidecar_sets: vec![Arc::new(serde_json::from_value(set).unwrap())],
        revisions: vec![Arc::new(revision.stored())],
        pods: pods
            .into_iter()
            .map(|p| Arc::new(serde_json::from_value(p).unwrap()))
            .collect(),
        namespaces: [("default".to_owned(), Default::default())].into(),
    }
}

fn latest(source: &Snapshot) -> String {
    source.sidecar_sets[0]
        .status
        .as_ref()
        .unwrap()
        .latest_revision
        .clone()
        .unwrap()
}

fn context(client: &kube::Client) -> UpgradeContext {
    let mut ctx = UpgradeContext::new(client.clone(), Metrics::new());
    ctx.clock = Arc::new(|| NOW.parse::<Timestamp>().unwrap());
    ctx
}

type Run = tokio::task::JoinHandle<Result<Upgraded, ReconcileError>>;

fn run(client: &kube::Client, ctx: &UpgradeContext, source: &Snapshot) -> Run {
    let (client, ctx, source) = (client.clone(), ctx.clone(), source.clone());
    tokio::spawn(async move {
        let set = source.sidecar_sets[0].clone();
        reconcile_and_upgrade(&client, &source, &set, "kruise-system", &ctx)
            .await
            .map(|(_, upgraded)| upgraded)
    })
}

/// The pod after the update §9 step 9 describes, written by hand.
fn updated_pod(latest: &str) -> Value {
    let mut pod = pod_value();
    pod["spec"]["containers"][0]["image"] = json!("dns:2.0");
    let ann = &mut pod["metadata"]["annotations"];
    ann["kruise.io/sidecarset-hash"] = json!(format!(
        r#"{{"sidecarset1":{{"updateTimestamp":"{NOW}","hash":"h2","sidecarSetName":"sidecarset1","sidecarList":["dns-f"],"controllerRevision":"{latest}"}}}}"#
    ));
    ann["kruise.io/sidecarset-inplace-update-state"] = json!(format!(
        r#"{{"sidecarset1":{{"lastContainerStatuses":{{"dns-f":{{"imageID":"docker-pullable://dns@sha256:aaaa"}}}},"revision":"h2","updateTimestamp":"{NOW}"}}}}"#
    ));
    pod
}

fn with_rv(mut pod: Value, rv: &str) -> Value {
    pod["metadata"]["resourceVersion"] = json!(rv);
    pod
}

async fn expect_condition(handle: &mut Handle, status: &str, reason: &str, message: &str) {
    let call = expect(handle, Method::PATCH, POD_STATUS).await;
    assert_eq!(call.content_type, "application/strategic-merge-patch+json");
    assert_eq!(
        call.body,
        json!({"status": {"conditions": [{"type": "SidecarSetUpgradable", "status": status,
            "lastTransitionTime": NOW, "reason": reason, "message": message}]}})
    );
    respond(call.send, StatusCode::OK, &pod_value());
}

async fn no_more_calls(client: kube::Client, ctx: UpgradeContext, mut handle: Handle) {
    drop((client, ctx));
    assert!(handle.next_request().await.is_none(), "no call queued");
}

#[tokio::test(flavor = "current_thread")]
async fn an_image_change_updates_the_pod_in_place_then_marks_it_upgradable() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    let source = snapshot(set_value("ColdUpgrade"), vec![pod_value()], [1, 0, 1, 0]);
    let task = run(&client, &ctx, &source);

    let call = expect(&mut handle, Method::GET, POD).await;
    respond(call.send, StatusCode::OK, &pod_value());
    let call = expect(&mut handle, Method::PUT, POD).await;
    assert_eq!(call.content_type, "application/json");
    assert_eq!(call.body, updated_pod(&latest(&source)));
    respond(call.send, StatusCode::OK, &with_rv(call.body.clone(), "8"));
    expect_condition(
        &mut handle,
        "True",
        "AllSidecarsetUpgradable",
        r#"{"sidecarset1":true}"#,
    )
    .await;

    let done = task.await.unwrap().unwrap();
    assert_eq!((done.updated, done.requeue), (1, None));
    let metrics = ctx.metrics.encode();
    assert!(
        metrics.contains(r#"sidecarset_upgrade_pods_total{result="updated"} 1"#),
        "{metrics}"
    );

    // The cache still shows the pod before our write: the next round waits, writing nothing.
    let done = run(&client, &ctx, &source).await.unwrap().unwrap();
    assert_eq!(done.requeue, Some(EXPECTATIONS_RETRY));
    // Once it shows the write (and the status counts it), nothing is left to do.
    let mut restarted = with_rv(updated_pod(&latest(&source)), "8");
    restarted["status"]["containerStatuses"][0]["image"] = json!("dns:2.0");
    restarted["status"]["containerStatuses"][0]["imageID"] =
        json!("docker-pullable://dns@sha256:cccc");
    let seen = snapshot(set_value("ColdUpgrade"), vec![restarted], [1, 1, 1, 1]);
    let done = run(&client, &ctx, &seen).await.unwrap().unwrap();
    assert_eq!(done, Upgraded::default());
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_conflicting_pod_update_rereads_and_retries() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    let source = snapshot(set_value("ColdUpgrade"), vec![pod_value()], [1, 0, 1, 0]);
    let task = run(&client, &ctx, &source);

    let call = expect(&mut handle, Method::GET, POD).await;
    respond(call.send, StatusCode::OK, &pod_value());
    let call = expect(&mut handle, Method::PUT, POD).await;
    respond(
        call.send,
        StatusCode::CONFLICT,
        &failure(409, "Conflict", "the object has been modified"),
    );
    // Someone else wrote a label meanwhile: the retry keeps it and carries the fresh resourceVersion.
    let mut fresh = with_rv(pod_value(), "9");
    fresh["metadata"]["labels"]["extra"] = json!("1");
    let call = expect(&mut handle, Method::GET, POD).await;
    respond(call.send, StatusCode::OK, &fresh);
    let call = expect(&mut handle, Method::PUT, POD).await;
    let mut expected = with_rv(updated_pod(&latest(&source)), "9");
    expected["metadata"]["labels"]["extra"] = json!("1");
    assert_eq!(call.body, expected);
    respond(call.send, StatusCode::OK, &with_rv(call.body.clone(), "10"));
    expect_condition(
        &mut handle,
        "True",
        "AllSidecarsetUpgradable",
        r#"{"sidecarset1":true}"#,
    )
    .await;

    assert_eq!(task.await.unwrap().unwrap().updated, 1);
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn pod_update_conflicts_give_up_after_three_attempts() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    let source = snapshot(set_value("ColdUpgrade"), vec![pod_value()], [1, 0, 1, 0]);
    let task = run(&client, &ctx, &source);
    for _ in 0..3 {
        let call = expect(&mut handle, Method::GET, POD).await;
        respond(call.send, StatusCode::OK, &pod_value());
        let call = expect(&mut handle, Method::PUT, POD).await;
        respond(
            call.send,
            StatusCode::CONFLICT,
            &failure(409, "Conflict", "modified"),
        );
    }
    let err = task.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("after 3 attempts"), "{err}");
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_pod_update_refused_by_a_budget_is_retried_later_not_forced() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    let source = snapshot(set_value("ColdUpgrade"), vec![pod_value()], [1, 0, 1, 0]);
    let task = run(&client, &ctx, &source);
    let call = expect(&mut handle, Method::GET, POD).await;
    respond(call.send, StatusCode::OK, &pod_value());
    let call = expect(&mut handle, Method::PUT, POD).await;
    respond(
        call.send,
        StatusCode::FORBIDDEN,
        &failure(
            403,
            "Forbidden",
            "admission webhook \"vpod.kb.io\" denied the request: pub unavailable",
        ),
    );
    let done = task.await.unwrap().unwrap();
    assert_eq!((done.updated, done.requeue), (0, Some(BUDGET_RETRY)));
    assert!(
        ctx.metrics
            .encode()
            .contains(r#"result="budget_denied"} 1"#)
    );
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_pod_whose_other_fields_changed_is_marked_not_upgradable_with_an_event() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    let mut pod = pod_value();
    pod["metadata"]["annotations"]["kruise.io/sidecarset-hash-without-image"] = json!(record("w0"));
    let source = snapshot(set_value("ColdUpgrade"), vec![pod], [1, 0, 1, 0]);
    let task = run(&client, &ctx, &source);

    expect_condition(
        &mut handle,
        "False",
        "UpdateImmutableField",
        r#"{"sidecarset1":false}"#,
    )
    .await;
    let call = expect(
        &mut handle,
        Method::POST,
        "/api/v1/namespaces/default/events",
    )
    .await;
    assert_eq!(call.body["reason"], "NotUpgradablePods");
    assert_eq!(call.body["type"], "Normal");
    assert_eq!(
        call.body["message"],
        "SidecarSet in-place update detected 1 not upgradable pod(s) in this round, will skip them."
    );
    assert_eq!(call.body["involvedObject"]["kind"], "SidecarSet");
    assert_eq!(call.body["involvedObject"]["name"], "sidecarset1");
    assert_eq!(call.body["source"]["component"], "sidecarset-controller");
    respond(call.send, StatusCode::CREATED, &call.body.clone());

    let done = task.await.unwrap().unwrap();
    assert_eq!((done.updated, done.not_upgradable), (0, 1));
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn paused_and_not_update_sidecarsets_touch_no_pod() {
    for (key, value) in [("paused", json!(true)), ("type", json!("NotUpdate"))] {
        let (client, handle) = mock();
        let ctx = context(&client);
        let mut set = set_value("ColdUpgrade");
        set["spec"]["updateStrategy"][key] = value;
        let source = snapshot(set, vec![pod_value()], [1, 0, 1, 0]);
        let done = run(&client, &ctx, &source).await.unwrap().unwrap();
        assert_eq!(done, Upgraded::default());
        no_more_calls(client, ctx, handle).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_corrupt_hash_annotation_read_back_is_skipped_without_a_write() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    let source = snapshot(set_value("ColdUpgrade"), vec![pod_value()], [1, 0, 1, 0]);
    let task = run(&client, &ctx, &source);
    let call = expect(&mut handle, Method::GET, POD).await;
    let mut corrupt = pod_value();
    corrupt["metadata"]["annotations"]["kruise.io/sidecarset-hash"] = json!("not-json");
    respond(call.send, StatusCode::OK, &corrupt);
    let done = task.await.unwrap().unwrap();
    assert_eq!((done.updated, done.skipped), (0, 1));
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_sidecarset_deleted_mid_rollout_stops_before_touching_pods() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    // The cached status is stale, so the reconcile writes it first: the SidecarSet is gone.
    let source = snapshot(set_value("ColdUpgrade"), vec![pod_value()], [0, 0, 0, 0]);
    let task = run(&client, &ctx, &source);
    let call = expect(
        &mut handle,
        Method::PATCH,
        "/apis/apps.kruise.io/v1beta1/sidecarsets/sidecarset1/status",
    )
    .await;
    respond(
        call.send,
        StatusCode::NOT_FOUND,
        &failure(404, "NotFound", "not found"),
    );
    assert!(task.await.unwrap().is_err());
    no_more_calls(client, ctx, handle).await;
}

/// A hot-upgrade pod after its update: `dns-f-2` works on `dns:2.0` (ready), `dns-f-1` still runs `dns:1.0`.
fn hot_pod_mid_upgrade() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "pod-uid", "resourceVersion": "20",
            "labels": {"app": "web"},
            "annotations": {"kruise.io/sidecarset-injected-list": "sidecarset1",
                "kruise.io/sidecarset-hash": record("h2"),
                "kruise.io/sidecarset-hash-without-image": record("w1"),
                "kruise.io/sidecarset-working-hotupgrade-container": r#"{"dns-f":"dns-f-2"}"#,
                "kruise.io/sidecarset-inplace-update-state": r#"{"sidecarset1":{"lastContainerStatuses":{"dns-f-2":{"imageID":"i-empty"}},"revision":"h2","updateTimestamp":"2026-01-01T00:00:00Z"}}"#,
                "version.sidecarset.kruise.io/dns-f-1": "1", "versionalt.sidecarset.kruise.io/dns-f-1": "300",
                "version.sidecarset.kruise.io/dns-f-2": "300", "versionalt.sidecarset.kruise.io/dns-f-2": "1"}},
        "spec": {"nodeName": "n1", "containers": [
            {"name": "dns-f-1", "image": "dns:1.0"}, {"name": "dns-f-2", "image": "dns:2.0"},
            {"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "dns-f-1", "image": "dns:1.0", "imageID": "i-dns1", "ready": true},
                {"name": "dns-f-2", "image": "dns:2.0", "imageID": "i-dns2", "ready": true},
                {"name": "app", "image": "app:1", "imageID": "i-app", "ready": true}]}
    })
}

#[tokio::test(flavor = "current_thread")]
async fn a_hot_upgrade_flips_the_old_copy_to_the_empty_image_once_the_new_one_is_ready() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    // Updated but not "ready" for the status: the idle copy does not run the empty image yet.
    let source = snapshot(
        set_value("HotUpgrade"),
        vec![hot_pod_mid_upgrade()],
        [1, 1, 0, 0],
    );
    let task = run(&client, &ctx, &source);

    let call = expect(&mut handle, Method::GET, POD).await;
    respond(call.send, StatusCode::OK, &hot_pod_mid_upgrade());
    let call = expect(&mut handle, Method::PUT, POD).await;
    let mut expected = hot_pod_mid_upgrade();
    expected["spec"]["containers"][0]["image"] = json!("empty:1");
    let ann = &mut expected["metadata"]["annotations"];
    ann["version.sidecarset.kruise.io/dns-f-1"] = json!("0");
    ann["versionalt.sidecarset.kruise.io/dns-f-2"] = json!("0");
    ann["kruise.io/sidecarset-inplace-update-state"] = json!(
        r#"{"sidecarset1":{"lastContainerStatuses":{"dns-f-1":{"imageID":"i-dns1"},"dns-f-2":{"imageID":"i-empty"}},"revision":"h2","updateTimestamp":"2026-01-01T00:00:00Z"}}"#
    );
    assert_eq!(call.body, expected);
    // The working copy keeps its image through the flip.
    assert_eq!(call.body["spec"]["containers"][1]["image"], "dns:2.0");
    respond(call.send, StatusCode::OK, &with_rv(call.body.clone(), "21"));
    let call = expect(
        &mut handle,
        Method::POST,
        "/api/v1/namespaces/default/events",
    )
    .await;
    assert_eq!(call.body["reason"], "ResetContainerSucceed");
    assert_eq!(
        call.body["message"],
        "reset sidecar container image empty successfully"
    );
    assert_eq!(call.body["involvedObject"]["kind"], "Pod");
    assert_eq!(call.body["involvedObject"]["name"], "web-1");
    respond(call.send, StatusCode::CREATED, &call.body.clone());

    let done = task.await.unwrap().unwrap();
    assert_eq!((done.flipped, done.updated), (1, 0));
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_flip_records_reset_container_failed_and_is_retried() {
    let (client, mut handle) = mock();
    let ctx = context(&client);
    let source = snapshot(
        set_value("HotUpgrade"),
        vec![hot_pod_mid_upgrade()],
        [1, 1, 0, 0],
    );
    let task = run(&client, &ctx, &source);

    let call = expect(&mut handle, Method::GET, POD).await;
    respond(call.send, StatusCode::OK, &hot_pod_mid_upgrade());
    let call = expect(&mut handle, Method::PUT, POD).await;
    respond(
        call.send,
        StatusCode::INTERNAL_SERVER_ERROR,
        &failure(500, "InternalError", "etcdserver: request timed out"),
    );
    let call = expect(
        &mut handle,
        Method::POST,
        "/api/v1/namespaces/default/events",
    )
    .await;
    assert_eq!(call.body["reason"], "ResetContainerFailed");
    assert_eq!(call.body["type"], "Warning");
    assert!(
        call.body["message"]
            .as_str()
            .unwrap()
            .starts_with("reset sidecarset hot upgrade container failed, err:"),
        "{}",
        call.body["message"]
    );
    respond(call.send, StatusCode::CREATED, &call.body.clone());

    // An error: the runtime retries it with backoff.
    assert!(task.await.unwrap().is_err());
    no_more_calls(client, ctx, handle).await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_invalid_update_selector_updates_no_pod() {
    let (client, handle) = mock();
    let ctx = context(&client);
    let mut set = set_value("ColdUpgrade");
    set["spec"]["updateStrategy"]["selector"] =
        json!({"matchExpressions": [{"key": "canary", "operator": "badOp", "values": ["true"]}]});
    let source = snapshot(set, vec![pod_value()], [1, 0, 1, 0]);
    let done = run(&client, &ctx, &source).await.unwrap().unwrap();
    assert_eq!(done, Upgraded::default());
    no_more_calls(client, ctx, handle).await;
}
