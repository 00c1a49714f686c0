//! The PodUnavailableBudget gate committing its spends against a stand-in API server that enforces
//! resourceVersion conflicts on the PUB status (tests/common/apiserver.rs): replicas that share it never
//! allow more disruptions than the budget, dry runs spend nothing, failed writes refuse, conflicts are
//! re-read and decided again (spec/podunavailablebudget.md §7.3, §12 scenarios 16, 34, 35; DECISIONS 4,
//! 7, 10).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::apiserver::StandIn;
use kruise_webhook::AppState;
use kruise_webhook::cache::LiveCache;
use serde_json::{Value, json};

const BUDGET_MESSAGE: &str = "podunavailablebudget.policy.kruise.io \"pub-web\" is forbidden: pub unavailable allowed is negative";

fn pod(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-{i}"), "namespace": "default", "uid": format!("uid-{i}"),
            "labels": {"app": "web"},
            "annotations": {"pub.kruise.io/related-pub": "pub-web", "kruise.io/related-pub": "pub-web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "image": "nginx:1.25", "imageID": "docker-pullable://nginx@sha256:aa"}]}})
}

fn budget(allowed: i32, pods: usize) -> Value {
    json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "uid": "pub-uid", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": allowed},
        "status": {"observedGeneration": 1, "unavailableAllowed": allowed, "currentAvailable": pods,
            "desiredAvailable": pods as i32 - allowed, "totalReplicas": pods}})
}

/// A cluster of `pods` ready pods guarded by `pub-web` with `allowed` budget.
fn cluster(pods: usize, allowed: i32) -> StandIn {
    let stand_in = StandIn::new();
    stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
    for i in 0..pods {
        stand_in.put(pod(i));
    }
    stand_in.put(budget(allowed, pods));
    stand_in
}

/// A replica of the server on the stand-in: its own caches, its own client.
async fn replica(stand_in: &StandIn) -> AppState {
    kruise_webhook::install_crypto_provider();
    let cache = LiveCache::start(stand_in.client(), None, true);
    common::replica::replica(cache).await
}

fn eviction(i: usize, dry_run: bool) -> Value {
    let mut eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": format!("web-{i}"), "namespace": "default"}});
    if dry_run {
        eviction["deleteOptions"] = json!({"dryRun": ["All"]});
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("evict-{i}"),
            "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
            "requestKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"}, "requestSubResource": "eviction",
            "name": format!("web-{i}"), "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:drain"},
            "object": eviction, "oldObject": null, "dryRun": dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
}

fn deletion(i: usize) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("delete-{i}"),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": format!("web-{i}"), "namespace": "default", "operation": "DELETE",
            "userInfo": {"username": "alice"},
            "object": null, "oldObject": pod(i), "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}}})
}

async fn review(state: &AppState, review: Value) -> Value {
    let (status, body) = common::post(
        state,
        "/validate-pod",
        review.to_string(),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 200);
    body["response"].clone()
}

/// The pods the stored PUB records as disrupted, and its unavailableAllowed.
fn stored(stand_in: &StandIn) -> (BTreeSet<String>, i64) {
    let pub_web = stand_in
        .get("PodUnavailableBudget", "default", "pub-web")
        .unwrap();
    let pods = pub_web["status"]["disruptedPods"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    (
        pods,
        pub_web["status"]["unavailableAllowed"].as_i64().unwrap(),
    )
}

/// 100 evictions of distinct ready pods, split over two replicas and sent all at once; `dry_run(i)` says
/// which are dry runs. Returns (pod index, response) per request.
async fn evict_all(
    stand_in: &StandIn,
    dry_run: impl Fn(usize) -> bool,
) -> Vec<(usize, bool, Value)> {
    let replicas = [replica(stand_in).await, replica(stand_in).await];
    let mut tasks = Vec::new();
    for i in 0..100 {
        let state = replicas[i % 2].clone();
        let dry = dry_run(i);
        tasks.push(tokio::spawn(async move {
            (i, dry, review(&state, eviction(i, dry)).await)
        }));
    }
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_never_spend_more_than_the_budget() {
    let stand_in = cluster(100, 3);
    let answers = evict_all(&stand_in, |_| false).await;
    let allowed: BTreeSet<String> = answers
        .iter()
        .filter(|(_, _, r)| r["allowed"] == true)
        .map(|(i, _, _)| format!("web-{i}"))
        .collect();
    assert_eq!(allowed.len(), 3, "exactly the budget is spent");
    for (i, _, response) in answers.iter().filter(|(_, _, r)| r["allowed"] != true) {
        assert_eq!(response["status"]["code"], 403, "web-{i}: {response}");
        assert_eq!(
            response["status"]["message"], BUDGET_MESSAGE,
            "web-{i}: {response}"
        );
    }
    let (recorded, left) = stored(&stand_in);
    assert_eq!(
        recorded, allowed,
        "the stored status lists exactly the allowed pods"
    );
    assert_eq!(left, 0);
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dry_runs_spend_nothing_and_the_count_still_holds() {
    let stand_in = cluster(100, 3);
    let answers = evict_all(&stand_in, |i| i % 2 == 0).await;
    let allowed_real: BTreeSet<String> = answers
        .iter()
        .filter(|(_, dry, r)| !dry && r["allowed"] == true)
        .map(|(i, _, _)| format!("web-{i}"))
        .collect();
    assert_eq!(allowed_real.len(), 3);
    let (recorded, left) = stored(&stand_in);
    assert_eq!(recorded, allowed_real, "no dry run is recorded");
    assert_eq!(left, 0);
    // No status write carried a dry run: the writes recorded the three real evictions (in one to three
    // writes, as the records of one replica are gathered) and nothing else.
    let written = stand_in
        .status_writes()
        .iter()
        .filter(|w| w.code == 200)
        .count();
    assert!((1..=3).contains(&written), "{written} writes");
    // A dry run is refused like a real one once the budget is spent, and spends nothing either way.
    for (i, _, response) in answers
        .iter()
        .filter(|(_, dry, r)| *dry && r["allowed"] != true)
    {
        assert_eq!(
            response["status"]["message"], BUDGET_MESSAGE,
            "web-{i}: {response}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_status_writes_never_let_more_than_the_budget_through() {
    let stand_in = cluster(100, 3);
    // The first write fails for sure: gathered into groups, the evictions make only a few writes, which a
    // 30 % rate alone may all let through.
    stand_in.fail_next_status_writes(1);
    stand_in.fail_status_writes(0.3);
    let answers = evict_all(&stand_in, |_| false).await;
    let allowed: BTreeSet<String> = answers
        .iter()
        .filter(|(_, _, r)| r["allowed"] == true)
        .map(|(i, _, _)| format!("web-{i}"))
        .collect();
    let (recorded, left) = stored(&stand_in);
    assert!(allowed.len() <= 3, "{allowed:?}");
    assert_eq!(
        recorded, allowed,
        "every allowed eviction is recorded, and only those"
    );
    assert_eq!(left, 3 - allowed.len() as i64);
    let failed = stand_in
        .status_writes()
        .iter()
        .filter(|w| w.code == 500)
        .count();
    assert!(failed > 0, "the fault was injected");
    // A refusal for a write that failed says so.
    assert!(answers.iter().any(|(_, _, r)| {
        r["status"]["message"].as_str().is_some_and(|m| {
            m.starts_with(
                "the disruption could not be recorded in PodUnavailableBudget default/pub-web",
            )
        })
    }));
}

#[tokio::test]
async fn a_delete_spends_the_budget_and_records_the_pod() {
    // Scenario 16.
    let stand_in = cluster(5, 1);
    let state = replica(&stand_in).await;
    let response = review(&state, deletion(0)).await;
    assert_eq!(response["allowed"], true, "{response}");
    assert!(
        response["warnings"][0]
            .as_str()
            .unwrap()
            .contains("pub-web has no budget left")
    );
    let (recorded, left) = stored(&stand_in);
    assert_eq!(recorded, BTreeSet::from(["web-0".to_owned()]));
    assert_eq!(left, 0);
    // Scenario 17: the next is refused, counted and reported on the pod.
    let response = review(&state, deletion(1)).await;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(response["status"]["reason"], "Forbidden");
    assert_eq!(response["status"]["message"], BUDGET_MESSAGE);
    let metrics = state.metrics.encode();
    assert!(
        metrics.contains(
            r#"pod_unavailable_budget{kind_namespace_name="ReplicaSet_default_web-7d9",username="alice"} 1"#
        ),
        "{metrics}"
    );
    let event = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(e) = stand_in.events().into_iter().next() {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("an event is recorded");
    assert_eq!(event["reason"], "PubPreventPodDeletion");
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["involvedObject"]["name"], "web-1");
    assert_eq!(event["involvedObject"]["kind"], "Pod");
    assert_eq!(event["message"], "openkruise pub prevents pod deletion");
    assert_eq!(event["source"]["component"], "pub-controller");
}

#[tokio::test]
async fn every_call_of_the_gate_is_granted_by_the_shipped_rbac_and_one_rule_less_fails() {
    // The stand-in authorizes as the shipped ServiceAccount against deploy/base/rbac.yaml: the delete above
    // made no call it refused.
    let stand_in = cluster(5, 1);
    let state = replica(&stand_in).await;
    let response = review(&state, deletion(0)).await;
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(stand_in.forbidden(), Vec::<String>::new());
    // Without `update` on podunavailablebudgets/status the spend cannot be recorded: the delete is refused
    // with the API server's refusal, and nothing is spent.
    let rules =
        common::apiserver::rbac::Rules::shipped().without("podunavailablebudgets/status", "update");
    let stand_in = StandIn::with_rbac(rules);
    stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
    for i in 0..5 {
        stand_in.put(pod(i));
    }
    stand_in.put(budget(1, 5));
    let state = replica(&stand_in).await;
    let response = review(&state, deletion(0)).await;
    assert_eq!(response["allowed"], false, "{response}");
    let forbidden = stand_in.forbidden();
    assert_eq!(
        forbidden.first().map(String::as_str),
        Some(
            "podunavailablebudgets \"pub-web\" is forbidden: User \"system:serviceaccount:kruise-system:kruise-webhook\" cannot update resource \"podunavailablebudgets/status\" in API group \"policy.kruise.io\" in the namespace \"default\""
        ),
        "{forbidden:?}"
    );
    assert_eq!(stored(&stand_in), (BTreeSet::new(), 1), "nothing spent");
}

#[tokio::test]
async fn a_conflict_is_read_again_and_decided_on_the_fresh_object() {
    // Scenario 34: the first write meets a concurrent one; the re-read object still has budget.
    let stand_in = cluster(5, 1);
    let state = replica(&stand_in).await;
    stand_in.conflict_next_status_writes(1);
    let response = review(&state, deletion(0)).await;
    assert_eq!(response["allowed"], true, "{response}");
    let codes: Vec<u16> = stand_in.status_writes().iter().map(|w| w.code).collect();
    assert_eq!(codes, [409, 200]);
    assert_eq!(stored(&stand_in).0, BTreeSet::from(["web-0".to_owned()]));
}

#[tokio::test]
async fn conflicts_on_every_attempt_refuse_with_the_api_servers_text() {
    // Scenario 35 (three attempts, DECISIONS 10): nothing spent, no metric, no event.
    let stand_in = cluster(5, 1);
    let state = replica(&stand_in).await;
    stand_in.conflict_next_status_writes(3);
    let response = review(&state, deletion(0)).await;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(
        response["status"]["message"],
        "Operation cannot be fulfilled on podunavailablebudgets.policy.kruise.io \"pub-web\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(stand_in.status_writes().len(), 3);
    assert_eq!(stored(&stand_in), (BTreeSet::new(), 1));
    assert!(!state.metrics.encode().contains("pod_unavailable_budget{"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(stand_in.events().is_empty());
}

#[tokio::test]
async fn a_replica_does_not_conflict_with_itself() {
    // Spends in a row on one replica: each decides on the copy the last write returned, even before the
    // watch brings it, so none of them conflicts.
    let stand_in = cluster(10, 5);
    let state = replica(&stand_in).await;
    for i in 0..5 {
        let response = review(&state, deletion(i)).await;
        assert_eq!(response["allowed"], true, "web-{i}: {response}");
    }
    let response = review(&state, deletion(5)).await;
    assert_eq!(response["status"]["message"], BUDGET_MESSAGE);
    let codes: Vec<u16> = stand_in.status_writes().iter().map(|w| w.code).collect();
    assert_eq!(codes, [200; 5]);
    assert_eq!(stored(&stand_in).0.len(), 5);
}

#[tokio::test]
async fn a_budget_that_is_gone_allows() {
    // DECISIONS 7: the PUB named by the pod does not exist.
    let stand_in = cluster(2, 1);
    let state = replica(&stand_in).await;
    let mut review_json = deletion(0);
    review_json["request"]["oldObject"]["metadata"]["annotations"]["pub.kruise.io/related-pub"] =
        json!("missing");
    let response = review(&state, review_json).await;
    assert_eq!(response["allowed"], true);
    assert!(stand_in.status_writes().is_empty());
}
