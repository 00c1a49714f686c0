//! The SidecarSet controller (spec/sidecarset.md §9) against a mock apiserver (tower-test): each call is
//! asserted (method, path, body) and answered, conflicts included. Cluster state comes from a
//! [`Snapshot`]; expected bodies are written by hand from the spec.

mod common;

use common::mock_api::{Handle, Send, expect, mock, respond};
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::watch;

use k8s_openapi::api::core::v1::Namespace;
use kruise_webhook::cache::shared::Publisher;
use kruise_webhook::controller::runtime::{Running, Settings};
use kruise_webhook::controller::sidecarset::{
    Inputs, Reconciled, SidecarSetController, Snapshot, UpgradeContext, reconcile,
};
use kruise_webhook::metrics::Metrics;
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::revision::SlimRevision;
use kruise_webhooks::api::sidecarset::SidecarSet;
use kube::runtime::watcher::Event;

const REVISIONS: &str = "/apis/apps/v1/namespaces/kruise-system/controllerrevisions";
const SET: &str = "/apis/apps.kruise.io/v1beta1/sidecarsets/sidecarset1";
const STATUS: &str = "/apis/apps.kruise.io/v1beta1/sidecarsets/sidecarset1/status";

/// The revision `data` of [`set`] (§9: keys sorted, the container as Go encodes it, missing lists null).
const DATA: &str = r#"{"spec":{"$patch":"replace","containers":[{"image":"dns:1.0","imagePullPolicy":"IfNotPresent","name":"dns-f","podInjectPolicy":"BeforeAppContainer","resources":{},"shareVolumePolicy":{"type":"disabled"},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":null,"volumes":null}}"#;
/// FNV-1 32 of DATA + "0" is 3448237518 (computed with Python), digits mapped through the safe alphabet.
const NAME_0: &str = "sidecarset1-788d67c95d";
/// ... and of DATA + "1": 3448237519.
const NAME_1: &str = "sidecarset1-788d67c95f";

fn failure(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": reason, "code": code, "message": reason})
}

fn set_json(status: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "sidecarset1", "uid": "uid-1", "generation": 2, "resourceVersion": "100",
            "annotations": {"kruise.io/sidecarset-hash": "h1", "kruise.io/sidecarset-hash-without-image": "w1"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "dns-f", "image": "dns:1.0", "imagePullPolicy": "IfNotPresent",
                "podInjectPolicy": "BeforeAppContainer", "shareVolumePolicy": {"type": "disabled"},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "upgradeStrategy": {"upgradeType": "ColdUpgrade"}}],
            "updateStrategy": {"type": "RollingUpdate"}
        },
        "status": status
    })
}

/// A running, ready pod injected by sidecarset1 at its current hash.
fn pod_json(name: &str) -> Value {
    let record = json!({"sidecarset1": {"updateTimestamp": "2025-01-02T03:04:05Z", "hash": "h1",
        "sidecarSetName": "sidecarset1", "sidecarList": ["dns-f"], "controllerRevision": NAME_0}});
    json!({
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "7", "labels": {"app": "web"},
            "annotations": {"kruise.io/sidecarset-injected-list": "sidecarset1",
                "kruise.io/sidecarset-hash": record.to_string()}},
        "spec": {"containers": [{"name": "dns-f", "image": "dns:1.0"}, {"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "dns-f", "image": "dns:1.0", "imageID": "docker-pullable://dns@sha256:aaaa", "ready": true, "restartCount": 0},
                {"name": "app", "image": "app:1", "imageID": "docker-pullable://app@sha256:bbbb", "ready": true, "restartCount": 0}]}
    })
}

fn stored_revision(name: &str, data: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": "kruise-system", "resourceVersion": "50",
            "labels": {"kruise.io/sidecarset-name": "sidecarset1", "controller.kubernetes.io/hash": name.rsplit('-').next().unwrap()},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "name": "sidecarset1",
                "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}]},
        "data": serde_json::from_str::<Value>(data).unwrap(),
        "revision": 1
    })
}

/// The status §9 gives for one updated, ready pod.
fn up_to_date_status(latest: &str, collision_count: i32) -> Value {
    json!({"observedGeneration": 2, "matchedPods": 1, "updatedPods": 1, "readyPods": 1,
        "updatedReadyPods": 1, "latestRevision": latest, "collisionCount": collision_count})
}

fn snapshot(set: Value, revisions: Vec<Value>) -> Snapshot {
    Snapshot {
        sidecar_sets: vec![Arc::new(serde_json::from_value(set).unwrap())],
        revisions: revisions
            .into_iter()
            .map(|r| Arc::new(serde_json::from_value(r).unwrap()))
            .collect(),
        pods: vec![Arc::new(serde_json::from_value(pod_json("web-1")).unwrap())],
        namespaces: [("default".to_owned(), Default::default())].into(),
    }
}

/// Expects the create of revision 1 named `name`, with DATA byte for byte; answers with `status`.
async fn expect_create(handle: &mut Handle, name: &str, status: StatusCode, answer: Option<Value>) {
    let call = expect(handle, Method::POST, REVISIONS).await;
    assert_eq!(call.content_type, "application/json");
    let raw = String::from_utf8(call.raw).unwrap();
    assert!(
        raw.ends_with(&format!(",\"data\":{DATA}}}")),
        "data byte for byte: {raw}"
    );
    let body = call.body;
    assert_eq!(body["metadata"]["name"], name);
    assert_eq!(body["metadata"]["namespace"], "kruise-system");
    assert_eq!(body["revision"], 1);
    assert_eq!(
        body["metadata"]["labels"],
        json!({"kruise.io/sidecarset-name": "sidecarset1", "controller.kubernetes.io/hash": "788d67c95d"})
    );
    assert_eq!(
        body["metadata"]["annotations"],
        json!({"kruise.io/sidecarset-hash": "h1", "kruise.io/sidecarset-hash-without-image": "w1"})
    );
    assert_eq!(
        body["metadata"]["ownerReferences"],
        json!([{"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "name": "sidecarset1",
            "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}])
    );
    let mut created = body.clone();
    created["metadata"]["resourceVersion"] = json!("51");
    respond(call.send, status, &answer.unwrap_or(created));
}

async fn expect_status(handle: &mut Handle, resource_version: &str, status: Value) -> Send {
    let call = expect(handle, Method::PATCH, STATUS).await;
    assert_eq!(call.content_type, "application/merge-patch+json");
    assert_eq!(
        call.body,
        json!({"metadata": {"resourceVersion": resource_version}, "status": status})
    );
    let _ = (call.method, call.path);
    call.send
}

/// Expects the status write §9 gives for one updated, ready pod on resourceVersion 100, and answers it.
async fn expect_up_to_date_status(handle: &mut Handle) {
    let send = expect_status(handle, "100", up_to_date_status(NAME_0, 0)).await;
    respond(
        send,
        StatusCode::OK,
        &set_json(up_to_date_status(NAME_0, 0)),
    );
}

#[tokio::test(flavor = "current_thread")]
async fn first_reconcile_creates_the_revision_and_writes_status() {
    let (client, mut handle) = mock();
    let source = snapshot(set_json(json!(null)), vec![]);
    let set = source.sidecar_sets[0].clone();
    let run = tokio::spawn(async move { reconcile(&client, &source, &set, "kruise-system").await });

    expect_create(&mut handle, NAME_0, StatusCode::CREATED, None).await;
    expect_up_to_date_status(&mut handle).await;

    let done = run.await.unwrap().unwrap();
    assert_eq!(
        done,
        Reconciled {
            latest_revision: NAME_0.into(),
            revision_writes: 1,
            status_written: true
        }
    );
}

#[tokio::test(flavor = "current_thread")]
async fn nothing_changed_makes_no_write() {
    let (client, mut handle) = mock();
    let source = snapshot(
        set_json(up_to_date_status(NAME_0, 0)),
        vec![stored_revision(NAME_0, DATA)],
    );
    let set = source.sidecar_sets[0].clone();
    // Any call would wait for an answer that never comes.
    let done = tokio::time::timeout(
        Duration::from_secs(10),
        reconcile(&client, &source, &set, "kruise-system"),
    )
    .await
    .expect("no call made")
    .unwrap();
    assert_eq!(
        done,
        Reconciled {
            latest_revision: NAME_0.into(),
            revision_writes: 0,
            status_written: false
        }
    );
    drop(client);
    assert!(handle.next_request().await.is_none(), "no call queued");
}

#[tokio::test(flavor = "current_thread")]
async fn status_conflict_rereads_and_retries_on_the_fresh_version() {
    let (client, mut handle) = mock();
    let stale = json!({"observedGeneration": 1, "matchedPods": 0, "updatedPods": 0, "readyPods": 0,
        "updatedReadyPods": 0, "latestRevision": NAME_0, "collisionCount": 0});
    let source = snapshot(set_json(stale.clone()), vec![stored_revision(NAME_0, DATA)]);
    let set = source.sidecar_sets[0].clone();
    let run = tokio::spawn(async move { reconcile(&client, &source, &set, "kruise-system").await });

    let send = expect_status(&mut handle, "100", up_to_date_status(NAME_0, 0)).await;
    respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    let call = expect(&mut handle, Method::GET, SET).await;
    let mut fresh = set_json(stale);
    fresh["metadata"]["resourceVersion"] = json!("101");
    respond(call.send, StatusCode::OK, &fresh);
    let send = expect_status(&mut handle, "101", up_to_date_status(NAME_0, 0)).await;
    let mut written = set_json(up_to_date_status(NAME_0, 0));
    written["metadata"]["resourceVersion"] = json!("102");
    respond(send, StatusCode::OK, &written);

    let done = run.await.unwrap().unwrap();
    assert!(done.status_written);
    assert_eq!(done.revision_writes, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn status_conflict_stops_when_the_fresh_object_already_has_the_status() {
    let (client, mut handle) = mock();
    let source = snapshot(set_json(json!(null)), vec![stored_revision(NAME_0, DATA)]);
    let set = source.sidecar_sets[0].clone();
    let run = tokio::spawn(async move { reconcile(&client, &source, &set, "kruise-system").await });

    let send = expect_status(&mut handle, "100", up_to_date_status(NAME_0, 0)).await;
    respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    let call = expect(&mut handle, Method::GET, SET).await;
    let mut fresh = set_json(up_to_date_status(NAME_0, 0));
    fresh["metadata"]["resourceVersion"] = json!("101");
    respond(call.send, StatusCode::OK, &fresh);

    let done = run.await.unwrap().unwrap();
    assert!(!done.status_written, "another writer got there first");
}

#[tokio::test(flavor = "current_thread")]
async fn status_conflicts_give_up_after_three_attempts() {
    let (client, mut handle) = mock();
    let source = snapshot(set_json(json!(null)), vec![stored_revision(NAME_0, DATA)]);
    let set = source.sidecar_sets[0].clone();
    let run = tokio::spawn(async move { reconcile(&client, &source, &set, "kruise-system").await });

    for attempt in 0..3 {
        let rv = (100 + attempt).to_string();
        let send = expect_status(&mut handle, &rv, up_to_date_status(NAME_0, 0)).await;
        respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
        if attempt < 2 {
            let call = expect(&mut handle, Method::GET, SET).await;
            let mut fresh = set_json(json!(null));
            fresh["metadata"]["resourceVersion"] = json!((101 + attempt).to_string());
            respond(call.send, StatusCode::OK, &fresh);
        }
    }
    let err = run.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("after 3 attempts"), "{err}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_revision_name_taken_by_other_data_raises_the_collision_count() {
    let (client, mut handle) = mock();
    let source = snapshot(set_json(json!(null)), vec![]);
    let set = source.sidecar_sets[0].clone();
    let run = tokio::spawn(async move { reconcile(&client, &source, &set, "kruise-system").await });

    expect_create(
        &mut handle,
        NAME_0,
        StatusCode::CONFLICT,
        Some(failure(409, "AlreadyExists")),
    )
    .await;
    let call = expect(&mut handle, Method::GET, &format!("{REVISIONS}/{NAME_0}")).await;
    respond(
        call.send,
        StatusCode::OK,
        &stored_revision(NAME_0, &DATA.replace("dns:1.0", "dns:0.1")),
    );
    // Same object, next name; the hash label keeps the first hash (Go renames only).
    expect_create(&mut handle, NAME_1, StatusCode::CREATED, None).await;
    let send = expect_status(&mut handle, "100", up_to_date_status(NAME_1, 1)).await;
    respond(
        send,
        StatusCode::OK,
        &set_json(up_to_date_status(NAME_1, 1)),
    );

    let done = run.await.unwrap().unwrap();
    assert_eq!(done.latest_revision, NAME_1);
}

#[tokio::test(flavor = "current_thread")]
async fn an_existing_revision_with_the_same_data_is_adopted() {
    let (client, mut handle) = mock();
    let source = snapshot(set_json(json!(null)), vec![]);
    let set = source.sidecar_sets[0].clone();
    let run = tokio::spawn(async move { reconcile(&client, &source, &set, "kruise-system").await });

    // The cache had not seen our own earlier create yet.
    expect_create(
        &mut handle,
        NAME_0,
        StatusCode::CONFLICT,
        Some(failure(409, "AlreadyExists")),
    )
    .await;
    let call = expect(&mut handle, Method::GET, &format!("{REVISIONS}/{NAME_0}")).await;
    respond(call.send, StatusCode::OK, &stored_revision(NAME_0, DATA));
    expect_up_to_date_status(&mut handle).await;
    let done = run.await.unwrap().unwrap();
    assert_eq!(done.latest_revision, NAME_0);
    assert_eq!(done.revision_writes, 0);
}

/// The shared stores of a [`Snapshot`], listed, as the cache's watches fill them, and their publishers
/// (kept: through them the test brings watch events; a store whose publisher is gone ends its feed).
struct Stores {
    inputs: Inputs,
    sets: Publisher<SidecarSet>,
    revisions: Publisher<SlimRevision>,
    pods: Publisher<SlimPod>,
    namespaces: Publisher<Namespace>,
}

fn namespace(name: &str, labels: Value) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn owned<K: Clone>(objects: &[Arc<K>]) -> Vec<K> {
    objects.iter().map(|o| (**o).clone()).collect()
}

fn stores(source: &Snapshot) -> Stores {
    let (sets, sidecar_sets) = Publisher::listed((), owned(&source.sidecar_sets));
    let (revisions, revision_store) = Publisher::listed((), owned(&source.revisions));
    let (pods, pod_store) = Publisher::listed((), owned(&source.pods));
    let (namespaces, namespace_store) = Publisher::listed(
        (),
        source
            .namespaces
            .iter()
            .map(|(name, labels)| namespace(name, json!(labels))),
    );
    Stores {
        inputs: Inputs {
            sidecar_sets,
            revisions: revision_store,
            pods: pod_store,
            namespaces: namespace_store,
        },
        sets,
        revisions,
        pods,
        namespaces,
    }
}

/// The controller over `source`, leading or not as `leading` says.
fn start_with(source: &Snapshot, leading: bool) -> (watch::Sender<bool>, Running, Handle, Stores) {
    let (client, handle) = mock();
    let stores = stores(source);
    let (leader, leader_rx) = watch::channel(leading);
    let controller = SidecarSetController::start(
        client.clone(),
        stores.inputs.clone(),
        "kruise-system".into(),
        UpgradeContext::new(client, Metrics::new()),
        leader_rx,
        Settings::default(),
    );
    (leader, controller, handle, stores)
}

/// The controller over [`set_json`] without revisions, leading or not as `leading` says.
fn start_loop(leading: bool) -> (watch::Sender<bool>, Running, Handle, Stores) {
    start_with(&snapshot(set_json(json!(null)), vec![]), leading)
}

/// Asserts the apiserver is not called for 300 s (paused clock).
async fn no_call(handle: &mut Handle, why: &str) {
    if let Ok(Some((request, _))) =
        tokio::time::timeout(Duration::from_secs(300), handle.next_request()).await
    {
        panic!("{why}: {} {}", request.method(), request.uri().path());
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_loop_reconciles_only_while_leading() {
    let (leader, controller, mut handle, _stores) = start_loop(false);
    // Not leading: nothing for a while.
    no_call(&mut handle, "no call while not leading").await;
    leader.send_replace(true);
    expect_create(&mut handle, NAME_0, StatusCode::CREATED, None).await;
    expect_up_to_date_status(&mut handle).await;
    // Leading again reconciles every SidecarSet at once; a failure is retried with backoff.
    leader.send_replace(false);
    tokio::time::sleep(Duration::from_secs(1)).await;
    leader.send_replace(true);
    expect_create(
        &mut handle,
        NAME_0,
        StatusCode::INTERNAL_SERVER_ERROR,
        Some(failure(500, "InternalError")),
    )
    .await;
    let before = tokio::time::Instant::now();
    // The failure is told on the SidecarSet (a Warning event with the API server's answer), then retried.
    let event = expect(
        &mut handle,
        Method::POST,
        "/api/v1/namespaces/default/events",
    )
    .await;
    assert_eq!(event.body["reason"], "ReconcileFailed");
    assert_eq!(event.body["type"], "Warning");
    assert_eq!(event.body["involvedObject"]["kind"], "SidecarSet");
    assert!(
        event.body["message"]
            .as_str()
            .unwrap()
            .contains("(InternalError 500)"),
        "{}",
        event.body
    );
    respond(event.send, StatusCode::CREATED, &event.body);
    expect_create(&mut handle, NAME_0, StatusCode::CREATED, None).await;
    assert!(before.elapsed() >= Duration::from_secs(1), "backed off");
    expect_up_to_date_status(&mut handle).await;
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn losing_leadership_abandons_a_reconcile_in_flight() {
    // webhook-server.md §9: controllers run on the leader only. A reconcile stuck on a slow apiserver when
    // the Lease is lost must not go on writing after another replica took over.
    let (leader, controller, mut handle, _stores) = start_loop(true);
    let stuck = expect(&mut handle, Method::POST, REVISIONS).await;
    leader.send_replace(false);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The apiserver answers late: the abandoned reconcile does not go on to write the status.
    let mut created = stuck.body.clone();
    created["metadata"]["resourceVersion"] = json!("51");
    respond(stuck.send, StatusCode::CREATED, &created);
    no_call(&mut handle, "no call after leadership was lost").await;
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_lease_lost_to_another_holder_mid_write_stops_every_controller_write() {
    // The wiring of src/controller.rs: a real election, the controller on the leadership it publishes and
    // writing through the leadership gate. The Lease renewal shows another holder while a write of the
    // controller is in flight at the API server.
    use kruise_webhook::config::LeaderElectionConfig;
    use kruise_webhook::controller::leader::{LeaderElector, gated};
    const LEASE: &str =
        "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager";
    let (lease_client, mut lease_api) = mock();
    let elector = LeaderElector::start(
        lease_client,
        &LeaderElectionConfig::new("kruise-system"),
        "host-a_1".to_owned(),
        Metrics::new(),
    );
    let (client, mut handle) = mock();
    let writer = gated(client, elector.is_leader());
    let stores = stores(&snapshot(set_json(json!(null)), vec![]));
    let controller = SidecarSetController::start(
        writer.clone(),
        stores.inputs.clone(),
        "kruise-system".into(),
        UpgradeContext::new(writer, Metrics::new()),
        elector.is_leader(),
        Settings::default(),
    );
    let read = expect(&mut lease_api, Method::GET, LEASE).await;
    respond(read.send, StatusCode::NOT_FOUND, &failure(404, "NotFound"));
    let create = expect(
        &mut lease_api,
        Method::POST,
        "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases",
    )
    .await;
    let mut lease = create.body.clone();
    lease["metadata"]["resourceVersion"] = json!("1");
    respond(create.send, StatusCode::CREATED, &lease);

    // Leading: the controller's first write goes out, and the API server is slow to answer it.
    let stuck = expect(&mut handle, Method::POST, REVISIONS).await;
    // Meanwhile the renewal meets another holder.
    let renewal = expect(&mut lease_api, Method::PUT, LEASE).await;
    respond(
        renewal.send,
        StatusCode::CONFLICT,
        &failure(409, "Conflict"),
    );
    let read = expect(&mut lease_api, Method::GET, LEASE).await;
    let mut theirs = lease.clone();
    theirs["metadata"]["resourceVersion"] = json!("2");
    theirs["spec"]["holderIdentity"] = json!("host-b_1");
    respond(read.send, StatusCode::OK, &theirs);
    elector.is_leader().wait_for(|l| !*l).await.unwrap();

    // The write issued while leading is answered late: nothing follows it (the status it would go on to
    // write never comes), for as long as the other replica leads.
    let mut created = stuck.body.clone();
    created["metadata"]["resourceVersion"] = json!("51");
    respond(stuck.send, StatusCode::CREATED, &created);
    let lease_reads = tokio::spawn(async move {
        // The candidate keeps reading the Lease, which the other replica keeps renewing.
        let mut version = 2;
        while let Some((request, send)) = lease_api.next_request().await {
            assert_eq!(
                request.method(),
                Method::GET,
                "no takeover of a renewed Lease"
            );
            version += 1;
            theirs["metadata"]["resourceVersion"] = json!(version.to_string());
            theirs["spec"]["renewTime"] =
                json!(format!("2030-01-01T00:{:02}:00.000000Z", version % 60));
            send.send_response(
                http::Response::builder()
                    .status(StatusCode::OK)
                    .body(kube::client::Body::from(
                        serde_json::to_vec(&theirs).unwrap(),
                    ))
                    .unwrap(),
            );
        }
    });
    no_call(&mut handle, "no controller call after the Lease was lost").await;
    controller.stop().await;
    elector.stop().await;
    lease_reads.await.unwrap();
}

/// Leads over sidecarset1 with its revision and status written (as the watches bring them back after the
/// first reconcile): nothing left to write until something changes.
async fn start_settled(
    namespace_selector: Option<Value>,
) -> (watch::Sender<bool>, Running, Handle, Stores) {
    let mut set = set_json(up_to_date_status(NAME_0, 0));
    if let Some(selector) = namespace_selector {
        set["spec"]["namespaceSelector"] = selector;
        set["status"]["matchedPods"] = json!(0);
        set["status"]["updatedPods"] = json!(0);
        set["status"]["readyPods"] = json!(0);
        set["status"]["updatedReadyPods"] = json!(0);
    }
    let source = snapshot(set, vec![stored_revision(NAME_0, DATA)]);
    let (leader, controller, mut handle, stores) = start_with(&source, true);
    no_call(&mut handle, "everything is up to date").await;
    (leader, controller, handle, stores)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_pod_change_reconciles_the_sidecarset_that_injected_it() {
    let (_leader, controller, mut handle, mut stores) = start_settled(None).await;
    // The kubelet reports the pod unready: readyPods drops.
    let mut pod = pod_json("web-1");
    pod["metadata"]["resourceVersion"] = json!("8");
    pod["status"]["conditions"][0]["status"] = json!("False");
    stores
        .pods
        .apply(Event::Apply(serde_json::from_value(pod).unwrap()));
    let mut status = up_to_date_status(NAME_0, 0);
    status["readyPods"] = json!(0);
    status["updatedReadyPods"] = json!(0);
    let send = expect_status(&mut handle, "100", status.clone()).await;
    let mut written = set_json(status);
    written["metadata"]["resourceVersion"] = json!("101");
    respond(send, StatusCode::OK, &written.clone());
    // The write comes back through the SidecarSet watch: that reconcile has nothing to do.
    stores
        .sets
        .apply(Event::Apply(serde_json::from_value(written).unwrap()));
    no_call(&mut handle, "the status is current").await;
    // The pod goes away: matchedPods drops.
    stores.pods.apply(Event::Delete(
        serde_json::from_value(pod_json("web-1")).unwrap(),
    ));
    let empty = json!({"observedGeneration": 2, "matchedPods": 0, "updatedPods": 0, "readyPods": 0,
        "updatedReadyPods": 0, "latestRevision": NAME_0, "collisionCount": 0});
    let send = expect_status(&mut handle, "101", empty.clone()).await;
    respond(send, StatusCode::OK, &set_json(empty));
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_pod_of_another_sidecarset_triggers_nothing() {
    let (_leader, controller, mut handle, mut stores) = start_settled(None).await;
    let mut pod = pod_json("other-1");
    pod["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"] = json!("sidecarset2");
    pod["status"]["conditions"][0]["status"] = json!("False");
    stores
        .pods
        .apply(Event::Apply(serde_json::from_value(pod).unwrap()));
    no_call(
        &mut handle,
        "sidecarset2 does not exist and sidecarset1 did not inject the pod",
    )
    .await;
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_namespace_label_change_reconciles_sidecarsets_with_a_namespace_selector() {
    let selector = json!({"matchLabels": {"mesh": "on"}});
    let (_leader, controller, mut handle, mut stores) = start_settled(Some(selector)).await;
    stores
        .namespaces
        .apply(Event::Apply(namespace("default", json!({"mesh": "on"}))));
    expect_up_to_date_status(&mut handle).await;
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_deleted_revision_is_created_again() {
    let (_leader, controller, mut handle, mut stores) = start_settled(None).await;
    let revision: SlimRevision = serde_json::from_value(stored_revision(NAME_0, DATA)).unwrap();
    stores.revisions.apply(Event::Delete(revision));
    expect_create(&mut handle, NAME_0, StatusCode::CREATED, None).await;
    controller.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn nothing_is_reconciled_before_the_caches_are_listed() {
    let (client, mut handle) = mock();
    let (mut sets, sidecar_sets) = Publisher::<SidecarSet>::new(());
    let (_revisions, revision_store) = Publisher::listed((), Vec::<SlimRevision>::new());
    let (mut pods, pod_store) = Publisher::<SlimPod>::new(());
    let (_namespaces, namespace_store) = Publisher::listed((), [namespace("default", json!({}))]);
    let inputs = Inputs {
        sidecar_sets,
        revisions: revision_store,
        pods: pod_store,
        namespaces: namespace_store,
    };
    let (_leader, leader_rx) = watch::channel(true);
    let controller = SidecarSetController::start(
        client.clone(),
        inputs,
        "kruise-system".into(),
        UpgradeContext::new(client, Metrics::new()),
        leader_rx,
        Settings::default(),
    );
    sets.apply(Event::Init);
    sets.apply(Event::InitApply(
        serde_json::from_value(set_json(json!(null))).unwrap(),
    ));
    sets.apply(Event::InitDone);
    no_call(&mut handle, "the pods are not listed yet").await;
    pods.apply(Event::Init);
    pods.apply(Event::InitApply(
        serde_json::from_value(pod_json("web-1")).unwrap(),
    ));
    pods.apply(Event::InitDone);
    expect_create(&mut handle, NAME_0, StatusCode::CREATED, None).await;
    expect_up_to_date_status(&mut handle).await;
    controller.stop().await;
}
