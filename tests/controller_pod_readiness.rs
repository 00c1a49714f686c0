//! The pod-readiness controller (docs/pod-readiness.md §5 scenarios 1-7) against the stand-in API server
//! (tests/common/apiserver.rs), which authorizes its requests as the shipped ServiceAccount and enforces the
//! resourceVersion a patch carries: the controller leads on the server's pod cache and writes `KruisePodReady`
//! through the status subresource.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::apiserver::StandIn;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::LiveCache;
use kruise_webhook::controller::pod_readiness::PodReadinessController;
use kruise_webhook::controller::runtime::Settings;
use kruise_webhook::metrics::Metrics;
use kruise_webhooks::pod_readiness::Write;

const KEYED: &str = r#"[{"userAgent":"ContainerRecreateRequest","key":"default/crr-1"}]"#;

fn pod(name: &str, gate: bool, condition: Option<Value>) -> Value {
    let mut gates = vec![json!({"conditionType": "example.com/other"})];
    if gate {
        gates.push(json!({"conditionType": "KruisePodReady"}));
    }
    let mut conditions = vec![json!({"type": "Ready", "status": "False"})];
    conditions.extend(condition);
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"nodeName": "node-1", "readinessGates": gates,
            "containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "conditions": conditions}})
}

fn kruise_condition(stand_in: &StandIn, name: &str) -> Option<Value> {
    stand_in.get("Pod", "default", name)?["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "KruisePodReady")
        .cloned()
}

async fn until(what: &str, done: impl Fn() -> bool) {
    common::until_within(what, Duration::from_secs(10), done).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_condition_is_set_once_repaired_when_it_contradicts_its_keys_and_left_to_its_writers() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
    // Scenario 1, 2, 3, 4, 5.
    stand_in.put(pod("first", true, None));
    stand_in.put(pod("no-gate", false, None));
    let keyed_false = json!({"type": "KruisePodReady", "status": "False", "message": KEYED,
        "lastTransitionTime": "2026-12-01T00:00:00Z"});
    stand_in.put(pod("keyed", true, Some(keyed_false.clone())));
    let keyed_true = json!({"type": "KruisePodReady", "status": "True", "message": KEYED,
        "lastTransitionTime": "2026-12-01T00:00:00Z"});
    stand_in.put(pod("contradiction", true, Some(keyed_true)));
    let emptied = json!({"type": "KruisePodReady", "status": "True", "message": "[]",
        "lastTransitionTime": "2026-12-01T00:00:00Z"});
    stand_in.put(pod("emptied", true, Some(emptied.clone())));
    // Scenario 6.
    let mut deleting = pod("deleting", true, None);
    deleting["metadata"]["deletionTimestamp"] = json!("2026-12-01T00:00:00Z");
    stand_in.put(deleting);

    let client = stand_in.client();
    let cache = LiveCache::start(client.clone(), None, false);
    common::replica::synced(cache.clone()).await;
    let (_leader, leading) = watch::channel(true);
    let running = PodReadinessController::start(
        client,
        cache.pod_store().clone(),
        Metrics::new(),
        leading,
        Settings::per_pod(),
    );
    until("the first condition", || {
        kruise_condition(&stand_in, "first").is_some()
    })
    .await;
    let first = kruise_condition(&stand_in, "first").unwrap();
    assert_eq!(first["status"], "True");
    assert!(first["lastTransitionTime"].is_string());
    assert!(first.get("message").is_none(), "{first}");
    until("the contradiction repaired", || {
        kruise_condition(&stand_in, "contradiction").is_some_and(|c| c["status"] == "False")
    })
    .await;
    assert_eq!(
        kruise_condition(&stand_in, "contradiction").unwrap()["message"],
        KEYED,
        "the keys are kept"
    );
    // A pod created while it runs.
    stand_in.put(pod("later", true, None));
    until("a new pod's condition", || {
        kruise_condition(&stand_in, "later").is_some_and(|c| c["status"] == "True")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(kruise_condition(&stand_in, "no-gate"), None);
    assert_eq!(kruise_condition(&stand_in, "deleting"), None);
    assert_eq!(kruise_condition(&stand_in, "keyed"), Some(keyed_false));
    assert_eq!(kruise_condition(&stand_in, "emptied"), Some(emptied));
    // Each write once: first, contradiction, later.
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenario_7_a_pod_changed_since_the_copy_read_is_not_overwritten() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
    stand_in.put(pod("raced", true, None));
    let client = stand_in.client();
    let cache = LiveCache::start(client.clone(), None, false);
    common::replica::synced(cache.clone()).await;
    let stale = cache
        .pod_store()
        .store()
        .state()
        .into_iter()
        .find(|p| p.metadata.name.as_deref() == Some("raced"))
        .unwrap();
    // A writer records a key meanwhile (the condition not yet in the copy read).
    let keyed = json!({"type": "KruisePodReady", "status": "False", "message": KEYED,
        "lastTransitionTime": "2026-12-01T00:00:00Z"});
    stand_in.put(pod("raced", true, Some(keyed.clone())));
    let controller = PodReadinessController::new(
        client,
        cache.pod_store().clone(),
        Metrics::new(),
        Arc::new(k8s_openapi::jiff::Timestamp::now),
    );
    assert_eq!(controller.handle(&stale).await.unwrap(), None);
    assert_eq!(kruise_condition(&stand_in, "raced"), Some(keyed));
    // The copy the watch brings decides nothing: the key is recorded.
    until("the newer copy cached", || {
        cache
            .pod_store()
            .store()
            .state()
            .iter()
            .any(|p| p.metadata.resource_version != stale.metadata.resource_version)
    })
    .await;
    let fresh = cache
        .pod_store()
        .store()
        .state()
        .into_iter()
        .find(|p| p.metadata.name.as_deref() == Some("raced"))
        .unwrap();
    assert_eq!(controller.handle(&fresh).await.unwrap(), None);
    // And a pod without the condition, read fresh, is written.
    stand_in.put(pod("plain", true, None));
    until("the plain pod cached", || {
        cache
            .pod_store()
            .store()
            .state()
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some("plain"))
    })
    .await;
    let plain = cache
        .pod_store()
        .store()
        .state()
        .into_iter()
        .find(|p| p.metadata.name.as_deref() == Some("plain"))
        .unwrap();
    assert_eq!(
        controller.handle(&plain).await.unwrap(),
        Some(Write::Initialise)
    );
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}
