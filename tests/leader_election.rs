//! Leader election on the Lease kruise-system/kruise-manager (spec/webhook-server.md §9) against a mock
//! apiserver (tower-test): every call is asserted (method, path, body) and answered, conflicts included.
//! The clock is tokio's, paused: sleeps advance it instantly, so lease timings are exact. A leader stopped
//! releases the Lease (DECISIONS 23), so every test that stops a leader answers that release.

use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};
use tokio::time::Instant;

use kruise_webhook::config::LeaderElectionConfig;
use kruise_webhook::controller::leader::LeaderElector;
use kruise_webhook::metrics::{LeaseLabels, Metrics};

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;
type Send = tower_test::mock::SendResponse<Response<Body>>;

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases";
const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager";
const ME: &str = "host-a_0b1c2d3e-0000-4000-8000-000000000001";

async fn next(handle: &mut Handle) -> (Method, String, Value, Send) {
    let (request, send) = tokio::time::timeout(Duration::from_secs(120), handle.next_request())
        .await
        .expect("a request within 120 s")
        .expect("client alive");
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let body = request.into_body().collect_bytes().await.unwrap();
    (
        method,
        path,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
        send,
    )
}

async fn expect(handle: &mut Handle, method: Method, path: &str) -> (Value, Send) {
    let (m, p, body, send) = next(handle).await;
    assert_eq!((&m, p.as_str()), (&method, path), "body: {body}");
    (body, send)
}

fn respond(send: Send, status: StatusCode, body: &Value) {
    send.send_response(
        Response::builder()
            .status(status)
            .body(Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap(),
    );
}

fn failure(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": reason, "code": code, "message": reason})
}

/// The object as the apiserver stores it: the request body with a new resourceVersion.
fn stored(mut body: Value, resource_version: &str) -> Value {
    body["apiVersion"] = json!("coordination.k8s.io/v1");
    body["kind"] = json!("Lease");
    body["metadata"]["resourceVersion"] = json!(resource_version);
    body
}

fn others_lease(holder: &str, resource_version: &str, transitions: i32) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kruise-manager", "namespace": "kruise-system", "resourceVersion": resource_version},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
            "acquireTime": "2020-01-01T00:00:00.000000Z", "renewTime": "2020-01-01T00:00:10.000000Z",
            "leaseTransitions": transitions}})
}

fn start(handle_metrics: &Metrics) -> (LeaderElector, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let elector = LeaderElector::start(
        client,
        &LeaderElectionConfig::new("kruise-system"),
        ME.to_owned(),
        handle_metrics.clone(),
    );
    (elector, handle)
}

/// Creates the Lease (absent) and answers; returns the created body.
async fn acquire_empty(handle: &mut Handle) -> Value {
    let (_, send) = expect(handle, Method::GET, LEASE).await;
    respond(send, StatusCode::NOT_FOUND, &failure(404, "NotFound"));
    let (created, send) = expect(handle, Method::POST, LEASES).await;
    respond(send, StatusCode::CREATED, &stored(created.clone(), "1"));
    created
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn acquires_an_absent_lease_and_renews_it_every_retry_period() {
    let metrics = Metrics::new();
    let (elector, mut handle) = start(&metrics);
    let mut leader = elector.is_leader();
    assert!(!*leader.borrow());

    let created = acquire_empty(&mut handle).await;
    assert_eq!(created["metadata"]["name"], "kruise-manager");
    assert_eq!(created["metadata"]["namespace"], "kruise-system");
    let spec = &created["spec"];
    assert_eq!(spec["holderIdentity"], ME);
    assert_eq!(spec["leaseDurationSeconds"], 15);
    assert_eq!(spec["leaseTransitions"], 0);
    assert!(spec["acquireTime"].is_string());
    assert_eq!(spec["acquireTime"], spec["renewTime"]);
    leader.wait_for(|l| *l).await.unwrap();
    assert_eq!(metrics.is_leader.get(), 1);

    let mut resource_version = 1;
    for _ in 0..2 {
        let since = Instant::now();
        let (renewed, send) = expect(&mut handle, Method::PUT, LEASE).await;
        assert_eq!(
            since.elapsed(),
            Duration::from_secs(2),
            "renewed every retry period"
        );
        assert_eq!(
            renewed["metadata"]["resourceVersion"],
            resource_version.to_string(),
            "optimistic: on the version written last"
        );
        assert_eq!(renewed["spec"]["holderIdentity"], ME);
        assert_eq!(
            renewed["spec"]["acquireTime"], spec["acquireTime"],
            "acquireTime is kept"
        );
        assert_eq!(renewed["spec"]["leaseTransitions"], 0);
        assert!(renewed["spec"]["renewTime"].is_string());
        resource_version += 1;
        respond(
            send,
            StatusCode::OK,
            &stored(renewed, &resource_version.to_string()),
        );
    }
    assert!(*leader.borrow());
    assert_eq!(
        metrics
            .leader_slowpath
            .get_or_create(&LeaseLabels {
                name: "kruise-manager".into()
            })
            .get(),
        0
    );

    let stopping = tokio::spawn(elector.stop());
    let (released, send) = expect(&mut handle, Method::PUT, LEASE).await;
    assert_eq!(
        released["metadata"]["resourceVersion"],
        resource_version.to_string(),
        "released on the version written last"
    );
    assert_eq!(released["spec"]["holderIdentity"], "");
    respond(send, StatusCode::OK, &stored(released, "9"));
    stopping.await.unwrap();
    assert!(!*leader.borrow());
    assert_eq!(metrics.is_leader.get(), 0);
    assert!(handle.next_request().await.is_none());
}

/// Leads on a fresh mock; returns the elector, the mock and the Lease as last written (resourceVersion 1).
async fn leading(metrics: &Metrics) -> (LeaderElector, Handle, Value) {
    let (elector, mut handle) = start(metrics);
    let created = acquire_empty(&mut handle).await;
    elector.is_leader().wait_for(|l| *l).await.unwrap();
    (elector, handle, stored(created, "1"))
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_leader_stopped_releases_the_lease_and_a_candidate_takes_it_over_at_once() {
    let metrics = Metrics::new();
    let (elector, mut handle, _) = leading(&metrics).await;
    let leader = elector.is_leader();

    let stopping = tokio::spawn(elector.stop());
    // client-go's release: an update on the version written last, holder empty, lease 1 s, both times now,
    // transitions kept.
    let (released, send) = expect(&mut handle, Method::PUT, LEASE).await;
    assert!(
        !*leader.borrow(),
        "leadership ends before the Lease is let go"
    );
    assert_eq!(metrics.is_leader.get(), 0);
    assert_eq!(released["metadata"]["resourceVersion"], "1");
    let spec = &released["spec"];
    assert_eq!(spec["holderIdentity"], "", "{spec}");
    assert_eq!(spec["leaseDurationSeconds"], 1);
    assert_eq!(spec["leaseTransitions"], 0);
    assert!(spec["acquireTime"].is_string());
    assert_eq!(spec["acquireTime"], spec["renewTime"]);
    let released = stored(released, "2");
    respond(send, StatusCode::OK, &released);
    stopping.await.unwrap();
    assert!(
        handle.next_request().await.is_none(),
        "one release, nothing after it"
    );

    // The next replica reads the released Lease and takes it over on that read, without waiting.
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let next_leader = LeaderElector::start(
        kube::Client::new(service, "default"),
        &LeaderElectionConfig::new("kruise-system"),
        "host-b_2".to_owned(),
        Metrics::new(),
    );
    let (_, send) = expect(&mut handle, Method::GET, LEASE).await;
    let read_at = Instant::now();
    respond(send, StatusCode::OK, &released);
    let (taken, send) = expect(&mut handle, Method::PUT, LEASE).await;
    assert_eq!(read_at.elapsed(), Duration::ZERO, "taken over on the read");
    assert_eq!(taken["metadata"]["resourceVersion"], "2");
    assert_eq!(taken["spec"]["holderIdentity"], "host-b_2");
    assert_eq!(taken["spec"]["leaseDurationSeconds"], 15);
    assert_eq!(taken["spec"]["leaseTransitions"], 1);
    respond(send, StatusCode::OK, &stored(taken, "3"));
    next_leader.is_leader().wait_for(|l| *l).await.unwrap();
    let stopping = tokio::spawn(next_leader.stop());
    let (_, send) = expect(&mut handle, Method::PUT, LEASE).await;
    respond(send, StatusCode::OK, &json!({}));
    stopping.await.unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_release_the_api_server_does_not_answer_gives_up_and_stop_returns() {
    let metrics = Metrics::new();
    let (elector, mut handle, _) = leading(&metrics).await;
    let stopping = tokio::spawn(elector.stop());
    let (released, _unanswered) = expect(&mut handle, Method::PUT, LEASE).await;
    assert_eq!(released["spec"]["holderIdentity"], "");
    tokio::time::timeout(Duration::from_secs(60), stopping)
        .await
        .expect("stop returns though the release is never answered")
        .unwrap();
    assert_eq!(metrics.is_leader.get(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn takes_over_a_lease_not_renewed_for_the_lease_duration() {
    let metrics = Metrics::new();
    let (elector, mut handle) = start(&metrics);
    let mut leader = elector.is_leader();
    let theirs = others_lease("host-b_1", "7", 3);

    let (_, send) = expect(&mut handle, Method::GET, LEASE).await;
    let first_seen = Instant::now();
    respond(send, StatusCode::OK, &theirs);
    // The record does not change; it is valid for 15 s from when this replica first saw it.
    let mut reads = 1;
    let (taken, send) = loop {
        let (method, path, body, send) = next(&mut handle).await;
        assert_eq!(path, LEASE);
        if method == Method::PUT {
            break (body, send);
        }
        assert_eq!(method, Method::GET);
        assert!(!*leader.borrow());
        reads += 1;
        respond(send, StatusCode::OK, &theirs);
    };
    assert!(
        first_seen.elapsed() >= Duration::from_secs(15),
        "not before the lease expired: {:?}",
        first_seen.elapsed()
    );
    assert!(
        (5..=9).contains(&reads),
        "read every 2-4.4 s (jittered), the last read just before the takeover: {reads}"
    );
    assert_eq!(
        taken["metadata"]["resourceVersion"], "7",
        "on the version read"
    );
    assert_eq!(taken["spec"]["holderIdentity"], ME);
    assert_eq!(taken["spec"]["leaseTransitions"], 4, "one more transition");
    assert_eq!(taken["spec"]["leaseDurationSeconds"], 15);
    assert_ne!(taken["spec"]["acquireTime"], theirs["spec"]["acquireTime"]);
    respond(send, StatusCode::OK, &stored(taken, "8"));
    leader.wait_for(|l| *l).await.unwrap();
    assert_eq!(metrics.is_leader.get(), 1);
    let stopping = tokio::spawn(elector.stop());
    let (released, send) = expect(&mut handle, Method::PUT, LEASE).await;
    assert_eq!(released["metadata"]["resourceVersion"], "8");
    assert_eq!(released["spec"]["leaseTransitions"], 4, "transitions kept");
    respond(send, StatusCode::OK, &stored(released, "9"));
    stopping.await.unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_renewal_conflict_showing_another_holder_ends_leadership() {
    let metrics = Metrics::new();
    let (elector, mut handle) = start(&metrics);
    let mut leader = elector.is_leader();
    acquire_empty(&mut handle).await;
    leader.wait_for(|l| *l).await.unwrap();

    let (_, send) = expect(&mut handle, Method::PUT, LEASE).await;
    respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    // 409: re-read, never retry blindly.
    let (_, send) = expect(&mut handle, Method::GET, LEASE).await;
    let theirs = others_lease("host-b_1", "9", 1);
    respond(send, StatusCode::OK, &theirs);
    leader.wait_for(|l| !*l).await.unwrap();
    assert_eq!(metrics.is_leader.get(), 0);

    // Back to candidate: reads only, no write while the other holder's lease is valid.
    let (_, send) = expect(&mut handle, Method::GET, LEASE).await;
    respond(send, StatusCode::OK, &theirs);
    elector.stop().await;
    // Another holder's Lease is not this replica's to release.
    assert!(handle.next_request().await.is_none());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_renewal_conflict_on_our_own_lease_renews_on_the_slow_path() {
    let metrics = Metrics::new();
    let (elector, mut handle) = start(&metrics);
    let leader = elector.is_leader();
    let created = acquire_empty(&mut handle).await;

    let (_, send) = expect(&mut handle, Method::PUT, LEASE).await;
    respond(send, StatusCode::CONFLICT, &failure(409, "Conflict"));
    // Someone touched the metadata only: the record is still ours.
    let (_, send) = expect(&mut handle, Method::GET, LEASE).await;
    respond(send, StatusCode::OK, &stored(created.clone(), "5"));
    let (renewed, send) = expect(&mut handle, Method::PUT, LEASE).await;
    assert_eq!(renewed["metadata"]["resourceVersion"], "5");
    assert_eq!(renewed["spec"]["holderIdentity"], ME);
    assert_eq!(
        renewed["spec"]["acquireTime"],
        created["spec"]["acquireTime"]
    );
    assert_eq!(renewed["spec"]["leaseTransitions"], 0);
    respond(send, StatusCode::OK, &stored(renewed, "6"));
    // The next renewal is optimistic again, on the version just written.
    let (renewed, send) = expect(&mut handle, Method::PUT, LEASE).await;
    assert_eq!(renewed["metadata"]["resourceVersion"], "6");
    respond(send, StatusCode::OK, &stored(renewed, "7"));
    assert!(*leader.borrow());
    assert_eq!(
        metrics
            .leader_slowpath
            .get_or_create(&LeaseLabels {
                name: "kruise-manager".into()
            })
            .get(),
        1
    );
    assert!(
        metrics
            .encode()
            .contains(r#"leader_election_slowpath_total{name="kruise-manager"} 1"#)
    );
    let stopping = tokio::spawn(elector.stop());
    let (released, send) = expect(&mut handle, Method::PUT, LEASE).await;
    assert_eq!(released["metadata"]["resourceVersion"], "7");
    assert_eq!(released["spec"]["holderIdentity"], "");
    respond(send, StatusCode::OK, &stored(released, "8"));
    stopping.await.unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn leadership_ends_when_no_renewal_succeeds_within_the_renew_deadline() {
    let metrics = Metrics::new();
    let (elector, mut handle) = start(&metrics);
    let mut leader = elector.is_leader();
    acquire_empty(&mut handle).await;
    leader.wait_for(|l| *l).await.unwrap();

    let mut first_failure = None;
    let mut attempts = 0;
    while *leader.borrow() {
        let (method, path, _, send) = tokio::select! {
            biased;
            _ = leader.wait_for(|l| !*l) => break,
            r = next(&mut handle) => r,
        };
        assert_eq!(path, LEASE);
        assert!(method == Method::PUT || method == Method::GET, "{method}");
        first_failure.get_or_insert_with(Instant::now);
        if method == Method::PUT {
            attempts += 1;
        }
        respond(
            send,
            StatusCode::INTERNAL_SERVER_ERROR,
            &failure(500, "InternalError"),
        );
    }
    let lost_after = first_failure.unwrap().elapsed();
    assert!(
        lost_after >= Duration::from_secs(8) && lost_after <= Duration::from_secs(10),
        "gave up at the renew deadline: {lost_after:?}"
    );
    assert_eq!(attempts, 5, "one attempt per retry period: 0, 2, 4, 6, 8 s");
    assert_eq!(metrics.is_leader.get(), 0);
    elector.stop().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_leader_that_loses_its_lease_mid_reconcile_issues_no_controller_write_after() {
    use kruise_webhook::controller::leader::{NotLeader, gated};
    use kube::api::{Api, PostParams};

    let metrics = Metrics::new();
    let (elector, mut lease_api, _) = leading(&metrics).await;
    let mut leader = elector.is_leader();
    // The cluster the controllers write to, behind the leadership gate.
    let (service, mut cluster) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(
        gated(kube::Client::new(service, "default"), leader.clone()),
        "default",
    );
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "web-0", "namespace": "default", "resourceVersion": "5"}}))
    .unwrap();

    // While leading, a write goes through.
    let write = tokio::spawn({
        let (pods, pod) = (pods.clone(), pod.clone());
        async move {
            pods.replace_status("web-0", &PostParams::default(), &pod)
                .await
        }
    });
    let (method, path, _, send) = next(&mut cluster).await;
    assert_eq!(
        (method, path.as_str()),
        (Method::PUT, "/api/v1/namespaces/default/pods/web-0/status")
    );

    // The reconcile is mid-write when the renewal shows another holder.
    let (_, renewal) = expect(&mut lease_api, Method::PUT, LEASE).await;
    respond(renewal, StatusCode::CONFLICT, &failure(409, "Conflict"));
    let (_, read) = expect(&mut lease_api, Method::GET, LEASE).await;
    respond(read, StatusCode::OK, &others_lease("host-b_1", "9", 1));
    leader.wait_for(|l| !*l).await.unwrap();
    // The write issued while leading gets its answer.
    respond(
        send,
        StatusCode::OK,
        &json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "resourceVersion": "6"}}),
    );
    write
        .await
        .unwrap()
        .expect("the write issued while leading completes");

    // From now on every write is refused before it is sent; reads still go through.
    let refused = tokio::time::timeout(
        Duration::from_secs(30),
        pods.replace_status("web-0", &PostParams::default(), &pod),
    )
    .await
    .expect("refused at once, never sent")
    .expect_err("no write once leadership is lost");
    let kube::Error::Service(source) = &refused else {
        panic!("refused by the gate, not by the API server: {refused:?}")
    };
    let not_leader = source
        .downcast_ref::<NotLeader>()
        .expect("a NotLeader refusal");
    assert_eq!(not_leader.method, Method::PUT);
    assert_eq!(
        not_leader.path,
        "/api/v1/namespaces/default/pods/web-0/status"
    );
    assert!(refused.to_string().contains("not the leader"), "{refused}");
    let delete = kube::api::DeleteParams::default();
    let deleted = tokio::time::timeout(Duration::from_secs(30), pods.delete("web-0", &delete));
    assert!(deleted.await.expect("refused at once").is_err());
    let read = tokio::spawn({
        let pods = pods.clone();
        async move { pods.get("web-0").await }
    });
    let (method, _, _, send) = next(&mut cluster).await;
    assert_eq!(
        method,
        Method::GET,
        "the only request after the loss is a read"
    );
    respond(
        send,
        StatusCode::OK,
        &json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "resourceVersion": "6"}}),
    );
    read.await.unwrap().unwrap();
    drop(pods);
    assert!(
        cluster.next_request().await.is_none(),
        "nothing else reached the API server"
    );

    // The other holder's Lease is valid: still a candidate, and nothing to release on stop.
    let (_, read) = expect(&mut lease_api, Method::GET, LEASE).await;
    respond(read, StatusCode::OK, &others_lease("host-b_1", "9", 1));
    elector.stop().await;
    assert!(lease_api.next_request().await.is_none());
}
