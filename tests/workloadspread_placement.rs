//! The WorkloadSpread step of `/mutate-pod` committing its subset reservations against a stand-in API server
//! that enforces resourceVersion conflicts on the WorkloadSpread status (tests/common/apiserver.rs): two
//! replicas sharing it never place more pods in a subset than its `maxReplicas`, with or without failing
//! status writes (spec/workloadspread.md §5.4 (c), §5.7, scenario 23; DECISIONS 10), and a deletion is
//! recorded the same way (§5.9).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::apiserver::StandIn;
use kruise_webhook::AppState;
use kruise_webhook::cache::LiveCache;
use kruise_webhook::workload::ServedKinds;
use serde_json::{Value, json};

const ANN: &str = "apps.kruise.io/matched-workloadspread";

/// Namespace ns, CloneSet cs (replicas 200), WorkloadSpread ws over it with subsets a (max 50), b (max 50)
/// and c (unlimited), its status empty.
fn cluster() -> StandIn {
    let stand_in = StandIn::new();
    stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}));
    stand_in.put(
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "cs", "namespace": "ns", "uid": "uid-cs"},
        "spec": {"replicas": 200, "selector": {"matchLabels": {"app": "cs"}}}}),
    );
    stand_in.put(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "ns", "uid": "uid-ws", "generation": 1},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
            "subsets": [
                {"name": "a", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}, "maxReplicas": 50},
                {"name": "b", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}, "maxReplicas": 50},
                {"name": "c"}]}}));
    stand_in
}

/// A replica of the server on the stand-in: its own caches, its own client.
async fn replica(stand_in: &StandIn) -> AppState {
    kruise_webhook::install_crypto_provider();
    let served = ServedKinds {
        clone_sets: true,
        advanced_stateful_sets: false,
    };
    let cache = LiveCache::start_all(
        stand_in.client(),
        None,
        false,
        true,
        Some((served, "kruise-system")),
    );
    common::replica::replica(cache).await
}

/// The pod of create `i`: named `cs-<i>` for even `i`, `generateName: cs-` for odd ones.
fn pod(i: usize) -> Value {
    let mut metadata = json!({"namespace": "ns", "labels": {"app": "cs"},
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
            "uid": "uid-cs", "controller": true}]});
    if i.is_multiple_of(2) {
        metadata["name"] = json!(format!("cs-{i}"));
    } else {
        metadata["generateName"] = json!("cs-");
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

fn create(i: usize, attempt: usize) -> Value {
    let pod = pod(i);
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("00000000-0000-4000-8000-{:06}{:06}", attempt, i),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": pod["metadata"]["name"].as_str().unwrap_or(""), "namespace": "ns", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kruise-system:kruise-manager"},
            "object": pod, "oldObject": null, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
}

async fn review(state: &AppState, path: &str, review: Value) -> Value {
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

/// Where a created pod went: its subset (from the annotation) and the key of its record.
#[derive(Debug)]
struct Placed {
    subset: Option<String>,
    key: String,
}

/// 200 pod creates over two replicas at once; a create refused because its record could not be written is
/// sent again as a new request (as the workload controller does), up to 10 times.
async fn create_all(stand_in: &StandIn) -> (Vec<Placed>, usize) {
    let replicas = [replica(stand_in).await, replica(stand_in).await];
    let mut tasks = Vec::new();
    for i in 0..200 {
        let state = replicas[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            for attempt in 0..10 {
                let request = create(i, attempt);
                let response = review(&state, "/mutate-pod", request.clone()).await;
                if response["allowed"] != true {
                    assert_eq!(response["status"]["code"], 500, "pod {i}: {response}");
                    continue;
                }
                let pod = patched(&request, &response);
                let matched: Option<Value> = pod["metadata"]["annotations"][ANN]
                    .as_str()
                    .map(|a| serde_json::from_str(a).unwrap());
                let key = match pod["metadata"]["name"].as_str() {
                    Some(name) => name.to_owned(),
                    None => matched
                        .as_ref()
                        .and_then(|m| m["uid"].as_str())
                        // A pod without a name in the unlimited subset has no record, so no key.
                        .map_or_else(|| format!("unrecorded-{i}"), str::to_owned),
                };
                let subset = matched.map(|m| m["subset"].as_str().unwrap().to_owned());
                return (Placed { subset, key }, attempt);
            }
            panic!("pod {i} refused 10 times");
        }));
    }
    let mut placed = Vec::new();
    let mut retries = 0;
    for task in tasks {
        let (p, attempts) = task.await.unwrap();
        retries += attempts;
        placed.push(p);
    }
    (placed, retries)
}

/// The `creatingPods` keys of each subset in the stored WorkloadSpread (version `versionIgnored`).
fn records(stand_in: &StandIn) -> BTreeMap<String, BTreeSet<String>> {
    let ws = stand_in.get("WorkloadSpread", "ns", "ws").unwrap();
    ws["status"]["versionedSubsetStatuses"]["versionIgnored"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let keys = s["creatingPods"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            (s["name"].as_str().unwrap().to_owned(), keys)
        })
        .collect()
}

fn by_subset(placed: &[Placed]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in placed {
        let subset = p.subset.clone().unwrap_or_else(|| "<none>".into());
        assert!(
            out.entry(subset).or_default().insert(p.key.clone()),
            "key {} used twice",
            p.key
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_place_exactly_max_replicas_per_subset() {
    let stand_in = cluster();
    let (placed, retries) = create_all(&stand_in).await;
    let placed = by_subset(&placed);
    let counts: BTreeMap<&str, usize> = placed.iter().map(|(s, k)| (s.as_str(), k.len())).collect();
    assert_eq!(
        counts,
        BTreeMap::from([("a", 50), ("b", 50), ("c", 100)]),
        "retries {retries}"
    );
    let recorded = records(&stand_in);
    // Every pod placed in a capped subset is recorded in exactly that subset; the unlimited one records
    // nothing (spec §5.4 (c) 6).
    assert_eq!(recorded["a"], placed["a"]);
    assert_eq!(recorded["b"], placed["b"]);
    assert!(recorded["c"].is_empty());
    let ws = stand_in.get("WorkloadSpread", "ns", "ws").unwrap();
    let missing: Vec<i64> = ws["status"]["versionedSubsetStatuses"]["versionIgnored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["missingReplicas"].as_i64().unwrap())
        .collect();
    assert_eq!(missing, [0, 0, -1]);
    // Half the pods had no name: those in a and b are recorded under the generated UID of their annotation.
    let generated = |s: &str| {
        placed[s]
            .iter()
            .filter(|k| k.starts_with("00000000-"))
            .count()
    };
    let unrecorded = placed["c"]
        .iter()
        .filter(|k| k.starts_with("unrecorded-"))
        .count();
    assert_eq!(generated("a") + generated("b") + unrecorded, 100);
    assert_eq!(generated("c"), 0);
    // The whitelist ConfigMap is read (once per replica) and is not there.
    let unexpected: Vec<String> = stand_in
        .unexpected()
        .into_iter()
        .filter(|r| !r.ends_with("/configmaps/kruise-configuration"))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    let conflicts = stand_in
        .status_writes()
        .iter()
        .filter(|w| w.code == 409)
        .count();
    // The records of concurrent creates on one replica are gathered into shared writes: without that, each
    // of the 100 records would cost a write of its own.
    let written = stand_in
        .status_writes()
        .iter()
        .filter(|w| w.code == 200)
        .count();
    assert!(written < 100, "{written} writes for 100 records");
    println!(
        "creates sent again after a refused record: {retries}; conflicts met: {conflicts}; writes: {written}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_status_writes_never_overfill_a_subset() {
    let stand_in = cluster();
    // The first write fails for sure: gathered into groups, the creates make only a few writes, which a 30 %
    // rate alone may all let through.
    stand_in.fail_next_status_writes(1);
    stand_in.fail_status_writes(0.3);
    let (placed, _) = create_all(&stand_in).await;
    let placed = by_subset(&placed);
    let recorded = records(&stand_in);
    for subset in ["a", "b"] {
        let got = placed.get(subset).cloned().unwrap_or_default();
        assert!(got.len() <= 50, "{subset}: {}", got.len());
        assert_eq!(
            recorded[subset], got,
            "{subset}: placed pods are exactly the recorded ones"
        );
    }
    assert_eq!(placed.values().map(BTreeSet::len).sum::<usize>(), 200);
    assert!(
        stand_in.status_writes().iter().any(|w| w.code == 500),
        "the fault was injected"
    );
}

fn single(stand_in: &StandIn) -> Value {
    json!({"pods": stand_in.status_writes().iter().map(|w| w.code).collect::<Vec<_>>()})
}

#[tokio::test]
async fn scenario_23_a_conflict_is_read_again_and_three_conflicts_refuse() {
    let stand_in = cluster();
    let state = replica(&stand_in).await;
    stand_in.conflict_next_status_writes(1);
    let response = review(&state, "/mutate-pod", create(0, 0)).await;
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(single(&stand_in), json!({"pods": [409, 200]}));
    assert_eq!(records(&stand_in)["a"], BTreeSet::from(["cs-0".to_owned()]));
    // Conflicts on every attempt (3 attempts, DECISIONS 10, where OpenKruise makes 4): refused 500 with the API server's text, nothing recorded.
    stand_in.conflict_next_status_writes(3);
    let response = review(&state, "/mutate-pod", create(2, 0)).await;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 500);
    assert_eq!(
        response["status"]["message"],
        "Operation cannot be fulfilled on workloadspreads.apps.kruise.io \"ws\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(records(&stand_in)["a"], BTreeSet::from(["cs-0".to_owned()]));
}

#[tokio::test]
async fn a_replica_does_not_conflict_with_itself_and_a_delete_is_recorded() {
    let stand_in = cluster();
    let state = replica(&stand_in).await;
    for i in 0..4 {
        let response = review(&state, "/mutate-pod", create(2 * i, 0)).await;
        assert_eq!(response["allowed"], true, "{response}");
    }
    assert_eq!(single(&stand_in), json!({"pods": [200, 200, 200, 200]}));
    // Scenario 24 against the API server: cs-0 (in a) deleted.
    let mut old = pod(0);
    old["metadata"]["annotations"] = json!({ANN: "{\"name\":\"ws\",\"subset\":\"a\"}"});
    old["status"] = json!({"phase": "Running"});
    let delete = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "delete-0", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "cs-0", "namespace": "ns", "operation": "DELETE", "userInfo": {"username": "alice"},
            "object": null, "oldObject": old, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}}});
    // The creation record is still there (the controller has not seen the pod): no deletion record
    // (§5.9 step 5: already a key of creatingPods).
    let response = review(&state, "/validate-pod", delete.clone()).await;
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(stand_in.status_writes().len(), 4);
    // Once the controller has replaced the creation record by the pod's count, the delete is recorded.
    let mut ws = stand_in.get("WorkloadSpread", "ns", "ws").unwrap();
    ws["status"]["versionedSubsetStatuses"]["versionIgnored"][0] =
        json!({"name": "a", "replicas": 4, "missingReplicas": 46});
    stand_in.put(ws);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let response = review(&state, "/validate-pod", delete).await;
    assert_eq!(response["allowed"], true, "{response}");
    let ws = stand_in.get("WorkloadSpread", "ns", "ws").unwrap();
    let a = &ws["status"]["versionedSubsetStatuses"]["versionIgnored"][0];
    assert_eq!(a["missingReplicas"], 47);
    assert!(a["deletingPods"]["cs-0"].is_string(), "{a}");
}

/// The subset a response's patch annotates its pod with (`None`: refused or not placed).
fn subset_of(request: &Value, response: &Value) -> Option<String> {
    if response["allowed"] != true {
        return None;
    }
    let pod = patched(request, response);
    let matched: Value =
        serde_json::from_str(pod["metadata"]["annotations"][ANN].as_str()?).ok()?;
    matched["subset"].as_str().map(str::to_owned)
}

/// Sends the creates `(i, attempt)` to one replica `gap` apart, all in flight together; their answers.
async fn overlapping(state: &AppState, creates: &[(usize, usize)], gap: Duration) -> Vec<Value> {
    let mut tasks = Vec::new();
    for &(i, attempt) in creates {
        let state = state.clone();
        tasks.push(tokio::spawn(async move {
            review(&state, "/mutate-pod", create(i, attempt)).await
        }));
        tokio::time::sleep(gap).await;
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers
}

#[tokio::test]
async fn creates_arriving_during_a_write_go_out_together_on_its_answer() {
    let stand_in = cluster();
    let state = replica(&stand_in).await;
    stand_in.delay_status_writes(Duration::from_millis(150));
    let creates = [(0, 0), (2, 0), (4, 0), (6, 0)];
    let answers = overlapping(&state, &creates, Duration::from_millis(20)).await;
    for (&(i, attempt), answer) in creates.iter().zip(&answers) {
        assert_eq!(
            subset_of(&create(i, attempt), answer).as_deref(),
            Some("a"),
            "{answer}"
        );
    }
    // The first create's write, then the three that came while it was in flight in one write carrying the
    // resourceVersion the first was answered with: no conflict.
    let writes = stand_in.status_writes();
    assert_eq!(
        writes.iter().map(|w| w.code).collect::<Vec<_>>(),
        [200, 200]
    );
    assert!(
        writes[1].resource_version.parse::<u64>().unwrap()
            > writes[0].resource_version.parse::<u64>().unwrap()
    );
    let names = |ns: &[usize]| {
        ns.iter()
            .map(|i| format!("cs-{i}"))
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(records(&stand_in)["a"], names(&[0, 2, 4, 6]));
}

#[tokio::test]
async fn creates_gathered_on_a_failed_write_are_decided_again_and_written() {
    let stand_in = cluster();
    let state = replica(&stand_in).await;
    stand_in.delay_status_writes(Duration::from_millis(150));
    stand_in.fail_next_status_writes(1);
    let creates = [(0, 0), (2, 0), (4, 0)];
    let answers = overlapping(&state, &creates, Duration::from_millis(20)).await;
    assert_eq!(answers[0]["allowed"], false, "{}", answers[0]);
    assert_eq!(answers[0]["status"]["code"], 500);
    for (&(i, attempt), answer) in creates.iter().zip(&answers).skip(1) {
        assert_eq!(
            subset_of(&create(i, attempt), answer).as_deref(),
            Some("a"),
            "{answer}"
        );
    }
    let codes: Vec<u16> = stand_in.status_writes().iter().map(|w| w.code).collect();
    assert_eq!(codes, [500, 200]);
    assert_eq!(
        records(&stand_in)["a"],
        BTreeSet::from(["cs-2".to_owned(), "cs-4".to_owned()])
    );
}

#[tokio::test]
async fn a_pod_found_among_records_not_yet_written_waits_for_them() {
    // The API server calls the webhook again for the same pod (its first call timed out) while the first
    // call's record is in flight; that write fails. The second call must not stand on the first's record.
    let stand_in = cluster();
    let state = replica(&stand_in).await;
    stand_in.delay_status_writes(Duration::from_millis(150));
    stand_in.fail_next_status_writes(1);
    let answers = overlapping(&state, &[(0, 0), (0, 1)], Duration::from_millis(40)).await;
    assert_eq!(answers[0]["status"]["code"], 500, "{}", answers[0]);
    assert_eq!(subset_of(&create(0, 1), &answers[1]).as_deref(), Some("a"));
    assert_eq!(records(&stand_in)["a"], BTreeSet::from(["cs-0".to_owned()]));
    let codes: Vec<u16> = stand_in.status_writes().iter().map(|w| w.code).collect();
    assert_eq!(codes, [500, 200]);
}
