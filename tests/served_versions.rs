//! A cluster with OpenKruise 1.8's CRDs, which serve only `v1alpha1` of SidecarSet, PodUnavailableBudget and
//! WorkloadSpread (DECISIONS 25): the server reads each kind at the version served, converts it to its own
//! types, and writes status at that version with that version's fields, against the stand-in API server
//! (tests/common/apiserver.rs) that keeps objects per version and authorizes as the shipped RBAC.

mod common;

use common::apiserver::StandIn;
use kruise_webhook::AppState;
use kruise_webhook::cache::LiveCache;
use kruise_webhook::cache::versions::Versions;
use kruise_webhook::workload::ServedKinds;
use serde_json::{Value, json};

async fn review(state: &AppState, path: &str, review: &Value) -> Value {
    let (status, body) =
        common::post(state, path, review.to_string(), Some("application/json")).await;
    assert_eq!(status, 200);
    body["response"].clone()
}

/// The pod the patch of a response makes of the request's pod.
fn patched(request: &Value, response: &Value) -> Value {
    use base64::Engine;
    let mut pod = request["request"]["object"].clone();
    if let Some(patch) = response["patch"].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let ops: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
        json_patch::patch(&mut pod, &ops).unwrap();
    }
    pod
}

fn admission(uid: &str, operation: &str, sub: Option<&str>, object: Value, old: Value) -> Value {
    let name = object["metadata"]["name"]
        .as_str()
        .or(old["metadata"]["name"].as_str())
        .unwrap_or_default()
        .to_owned();
    let mut request = json!({"uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": name, "namespace": "default", "operation": operation,
        "userInfo": {"username": "alice"}, "object": object, "oldObject": old, "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1",
            "kind": if operation == "DELETE" { "DeleteOptions" } else { "CreateOptions" }}});
    if let Some(sub) = sub {
        request["subResource"] = json!(sub);
        request["kind"] = json!({"group": "policy", "version": "v1", "kind": "Eviction"});
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "default", "labels": {"kubernetes.io/metadata.name": "default"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1alpha1_sidecarset_injects() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    stand_in.put(namespace());
    // v1alpha1 only: `spec.namespace` (v1beta1 has a namespaceSelector in its place).
    stand_in.put(
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": "log-agent", "uid": "ss-uid", "generation": 1},
        "spec": {"namespace": "default", "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "log-agent", "image": "busybox:1.36"}]}}),
    );
    let cache = LiveCache::start_at(
        stand_in.client(),
        Versions::released(),
        Some("kruise-system"),
        false,
        false,
        None,
        false,
    );
    let state = common::replica::replica(cache).await;
    let mut new_pod = pod("web-0");
    new_pod["status"] = json!({});
    let request = admission("c1", "CREATE", None, new_pod, Value::Null);
    let response = review(&state, "/mutate-pod", &request).await;
    assert_eq!(response["allowed"], true, "{response}");
    let injected = patched(&request, &response);
    let names: Vec<&str> = injected["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"log-agent"), "{injected}");
    assert_eq!(
        injected["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"],
        "log-agent"
    );
    // Another namespace: `spec.namespace` converted to a namespaceSelector keeps it out.
    let mut elsewhere = pod("web-1");
    elsewhere["metadata"]["namespace"] = json!("other");
    stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "other", "labels": {"kubernetes.io/metadata.name": "other"}}}));
    let request = admission("c2", "CREATE", None, elsewhere, Value::Null);
    let response = review(&state, "/mutate-pod", &request).await;
    assert!(
        patched(&request, &response)["spec"]["containers"]
            .as_array()
            .unwrap()
            .len()
            == 1,
        "{response}"
    );
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1alpha1_budget_is_spent_and_written_at_v1alpha1() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    stand_in.put(namespace());
    let guarded = |i: usize| {
        let mut p = pod(&format!("web-{i}"));
        p["metadata"]["annotations"] = json!({"pub.kruise.io/related-pub": "pub-web"});
        p
    };
    for i in 0..3 {
        stand_in.put(guarded(i));
    }
    // v1alpha1 carries protectOperations as an annotation: deletions only, evictions not guarded.
    stand_in.put(
        json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "uid": "pub-uid", "generation": 1,
            "annotations": {"kruise.io/pub-protect-operations": "DELETE"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
        "status": {"observedGeneration": 1, "unavailableAllowed": 1, "currentAvailable": 3,
            "desiredAvailable": 2, "totalReplicas": 3}}),
    );
    let cache = LiveCache::start_at(
        stand_in.client(),
        Versions::released(),
        None,
        true,
        false,
        None,
        false,
    );
    let state = common::replica::replica(cache).await;
    // An eviction is not a protected operation of this PUB (the v1alpha1 annotation says so).
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "web-2", "namespace": "default"}});
    let evict = admission("e1", "CREATE", Some("eviction"), eviction, Value::Null);
    let answer = review(&state, "/validate-pod", &evict).await;
    assert_eq!(answer["allowed"], true, "{answer}");
    assert!(
        stand_in.status_writes().is_empty(),
        "an unguarded operation spends nothing"
    );
    // The first deletion spends the budget of 1; the second is refused.
    let first = review(
        &state,
        "/validate-pod",
        &admission("d0", "DELETE", None, Value::Null, guarded(0)),
    )
    .await;
    assert_eq!(first["allowed"], true, "{first}");
    let second = review(
        &state,
        "/validate-pod",
        &admission("d1", "DELETE", None, Value::Null, guarded(1)),
    )
    .await;
    assert_eq!(second["allowed"], false, "{second}");
    // Written at v1alpha1, with v1alpha1's fields: the annotation kept, no v1beta1-only field.
    let stored = stand_in
        .get_at(
            Some("policy.kruise.io/v1alpha1"),
            "PodUnavailableBudget",
            "default",
            "pub-web",
        )
        .unwrap();
    assert_eq!(stored["apiVersion"], "policy.kruise.io/v1alpha1");
    assert_eq!(stored["status"]["unavailableAllowed"], 0, "{stored}");
    assert!(
        stored["status"]["disruptedPods"]["web-0"].is_string(),
        "{stored}"
    );
    assert!(
        stored["spec"].get("protectOperations").is_none(),
        "{stored}"
    );
    assert_eq!(
        stored["metadata"]["annotations"]["kruise.io/pub-protect-operations"],
        "DELETE"
    );
    assert!(
        stand_in
            .get_at(
                Some("policy.kruise.io/v1beta1"),
                "PodUnavailableBudget",
                "default",
                "pub-web"
            )
            .is_none()
    );
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1alpha1_workloadspread_places_and_records_at_v1alpha1() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    stand_in.put(namespace());
    stand_in.put(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "dep-uid"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}}}}));
    stand_in.put(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-7d9", "namespace": "default", "uid": "rs-uid",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "dep-uid", "controller": true}]},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}}}}));
    // v1alpha1 field names: requiredNodeSelectorTerm.
    stand_in.put(
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default", "uid": "ws-uid", "generation": 1},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {"name": "a", "requiredNodeSelectorTerm": {"matchExpressions":
                    [{"key": "zone", "operator": "In", "values": ["z1"]}]}, "maxReplicas": 1},
                {"name": "b", "requiredNodeSelectorTerm": {"matchExpressions":
                    [{"key": "zone", "operator": "In", "values": ["z2"]}]}}]}}),
    );
    let served = ServedKinds {
        clone_sets: false,
        advanced_stateful_sets: false,
    };
    let cache = LiveCache::start_at(
        stand_in.client(),
        Versions::released(),
        None,
        false,
        true,
        Some((served, "kruise-system")),
        false,
    );
    let state = common::replica::replica(cache).await;
    let mut subsets = Vec::new();
    for i in 0..2 {
        let mut new_pod = pod(&format!("web-{i}"));
        new_pod["status"] = json!({});
        let request = admission(&format!("c{i}"), "CREATE", None, new_pod, Value::Null);
        let response = review(&state, "/mutate-pod", &request).await;
        assert_eq!(response["allowed"], true, "{response}");
        let placed = patched(&request, &response);
        let matched: Value = serde_json::from_str(
            placed["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]
                .as_str()
                .expect("placed by the WorkloadSpread"),
        )
        .unwrap();
        let term = &placed["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0];
        subsets.push((matched["subset"].as_str().unwrap().to_owned(), term.clone()));
    }
    assert_eq!(subsets[0].0, "a");
    assert_eq!(subsets[0].1["matchExpressions"][0]["values"], json!(["z1"]));
    assert_eq!(subsets[1].0, "b", "subset a is full at 1");
    let stored = stand_in
        .get_at(
            Some("apps.kruise.io/v1alpha1"),
            "WorkloadSpread",
            "default",
            "ws",
        )
        .unwrap();
    assert_eq!(stored["apiVersion"], "apps.kruise.io/v1alpha1");
    // No status yet from the controller: the record goes where OpenKruise's webhook puts it then.
    let a = &stored["status"]["versionedSubsetStatuses"]["versionIgnored"][0];
    assert_eq!(a["name"], "a", "{stored}");
    assert!(a["creatingPods"]["web-0"].is_string(), "{stored}");
    // v1alpha1 field names kept in what was written.
    assert!(
        stored["spec"]["subsets"][0]
            .get("requiredNodeSelectorTerm")
            .is_some()
    );
    // The stand-in serves no ConfigMaps: the custom workload whitelist reads as missing.
    let unexpected = stand_in.unexpected();
    assert!(
        unexpected
            .iter()
            .all(|r| r == "GET /api/v1/namespaces/kruise-system/configmaps/kruise-configuration"),
        "{unexpected:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1alpha1_persistent_pod_state_puts_a_recreated_pod_back() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    stand_in.put(namespace());
    // v1alpha1 field names: nodeTopologyKeys (v1beta1: keys).
    stand_in.put(
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PersistentPodState",
        "metadata": {"name": "db", "namespace": "default", "uid": "pps-uid"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
            "requiredPersistentTopology": {"nodeTopologyKeys": ["topology.kubernetes.io/zone"]},
            "preferredPersistentTopology": [{"weight": 100,
                "preference": {"nodeTopologyKeys": ["kubernetes.io/hostname"]}}]},
        "status": {"podStates": {"db-0": {"nodeName": "node-3", "nodeTopologyLabels": {
            "topology.kubernetes.io/zone": "zone-1", "kubernetes.io/hostname": "node-3"}}}}}),
    );
    let cache = LiveCache::start_at(
        stand_in.client(),
        Versions::released(),
        Some("kruise-system"),
        false,
        false,
        None,
        false,
    );
    let state = common::replica::replica(cache).await;
    let mut db = pod("db-0");
    db["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
        "name": "db", "uid": "sts-uid", "controller": true}]);
    db["status"] = json!({});
    let request = admission("p1", "CREATE", None, db, Value::Null);
    let response = review(&state, "/mutate-pod", &request).await;
    assert_eq!(response["allowed"], true, "{response}");
    let placed = patched(&request, &response);
    assert_eq!(
        placed["metadata"]["annotations"]["kruise.io/injected-persistent-pod-state"],
        "db"
    );
    assert_eq!(
        placed["spec"]["nodeSelector"],
        json!({"topology.kubernetes.io/zone": "zone-1"})
    );
    assert_eq!(
        placed["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
        json!([{"weight": 100, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-3"]}]}}])
    );
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}
