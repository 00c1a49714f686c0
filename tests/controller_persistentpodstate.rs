//! The PersistentPodState controllers (docs/persistentpodstate.md §3, §4; scenarios 19, 20, 23, 30, 31, 33 and
//! 35 of §5) against the stand-in API server (tests/common/apiserver.rs), which authorizes every request as
//! the shipped RBAC: real watches of PersistentPodStates, pods, both StatefulSet kinds and Nodes, real status
//! writes and object writes. Nodes `n1` (zone a) and `n2` (zone b), each labelled with its hostname. And
//! where they run: only where the CRD is served, never with `--beside-openkruise`.

mod common;

use std::time::Duration;

use common::apiserver::StandIn;
use kruise_webhook::cache::LiveCache;
use kruise_webhook::cache::versions::{KruiseKind, Versions};
use kruise_webhook::controller::persistentpodstate::{self, Context, Inputs, Started};
use kruise_webhook::controller::runtime::Settings;
use kruise_webhook::metrics::Metrics;
use serde_json::{Value, json};
use tokio::sync::watch;

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

fn node(name: &str, zone: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": {ZONE: zone, HOST: name, "other": "x"}},
        "status": {"images": [{"names": ["nginx"], "sizeBytes": 1}]}})
}

fn stateful_set(api_version: &str, name: &str, replicas: i32, annotations: Value) -> Value {
    json!({"apiVersion": api_version, "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "annotations": annotations},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})
}

/// A Running, Ready pod `<sts>-<ordinal>` of StatefulSet `sts` on `node`.
fn pod(sts: &str, ordinal: u32, node: &str, annotations: Value) -> Value {
    let name = format!("{sts}-{ordinal}");
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "labels": {"app": sts}, "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": sts,
                "uid": format!("uid-{sts}"), "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], "nodeName": node},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn state(name: &str, target: Value, spec_extra: Value) -> Value {
    let mut spec = json!({"targetRef": target,
        "requiredPersistentTopology": {"keys": [ZONE]},
        "preferredPersistentTopology": [{"weight": 50, "preference": {"keys": [HOST]}}]});
    for (k, v) in spec_extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-pps-{name}"), "generation": 1},
        "spec": spec})
}

fn entry(node: &str, zone: &str) -> Value {
    json!({"nodeName": node, "nodeTopologyLabels": {ZONE: zone, HOST: node}})
}

/// A stand-in with the namespace and the two nodes.
fn cluster() -> StandIn {
    let stand_in = StandIn::new();
    stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "ns", "labels": {"kubernetes.io/metadata.name": "ns"}}}));
    stand_in.put(node("n1", "a"));
    stand_in.put(node("n2", "b"));
    stand_in
}

/// The controllers on the stand-in, leading, on a pod cache of their own client.
async fn start(stand_in: &StandIn) -> Started {
    kruise_webhook::install_crypto_provider();
    let client = stand_in.client();
    let cache = LiveCache::start(client.clone(), None, false);
    let versions = Versions::newest();
    let states = kruise_webhook::cache::watch_kruise(
        &client,
        &versions.resource_or_newest(KruiseKind::PersistentPodState),
    );
    let inputs = Inputs::watch(&client, states, cache.pod_store().clone(), true);
    let (leader, leading) = watch::channel(true);
    // Leadership stays for the whole test.
    std::mem::forget(leader);
    persistentpodstate::start(
        Context::new(client, Metrics::new()).at(versions),
        inputs,
        leading,
        Settings::default(),
    )
}

/// Waits (up to 10 s) until `check` holds of the stored object `kind` `ns/name` (`Null` when there is none);
/// returns it.
async fn until(
    stand_in: &StandIn,
    api_version: &str,
    kind: &str,
    name: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let object = stand_in
                .get_at(Some(api_version), kind, "ns", name)
                .unwrap_or(Value::Null);
            if check(&object) {
                return object;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    match found {
        Ok(object) => object,
        Err(_) => panic!(
            "{kind} ns/{name} never as expected; it is {}",
            stand_in
                .get_at(Some(api_version), kind, "ns", name)
                .unwrap_or(Value::Null)
        ),
    }
}

const PPS: &str = "apps.kruise.io/v1beta1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_states_follow_the_pods_of_a_statefulset_and_go_with_a_scale_down_or_the_target() {
    let stand_in = cluster();
    stand_in.put(stateful_set("apps/v1", "web", 3, json!({})));
    for (ordinal, node) in [(0, "n1"), (1, "n2"), (2, "n1")] {
        stand_in.put(pod("web", ordinal, node, json!({})));
    }
    // A pod of another StatefulSet, and one of web not ready: neither is recorded.
    stand_in.put(pod("db", 0, "n1", json!({})));
    let mut waiting = pod("web", 3, "n2", json!({}));
    waiting["status"]["conditions"][0]["status"] = json!("False");
    stand_in.put(waiting);
    stand_in.put(state(
        "web",
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"}),
        json!({}),
    ));
    let controllers = start(&stand_in).await;

    // Scenario 19.
    let want = json!({"observedGeneration": 1, "podStates": {
        "web-0": entry("n1", "a"), "web-1": entry("n2", "b"), "web-2": entry("n1", "a")}});
    until(&stand_in, PPS, "PersistentPodState", "web", |s| {
        s["status"] == want
    })
    .await;

    // Scenario 20: web-1 deleted (to be re-created: within the replicas), then a scale-down to 2 takes
    // web-2. The reconcile that drops web-2's entry sees web-1 gone too, and keeps its entry.
    assert!(stand_in.remove("Pod", "ns", "web-1"));
    stand_in.update("StatefulSet", "ns", "web", |sts| {
        sts["spec"]["replicas"] = json!(2);
        true
    });
    assert!(stand_in.remove("Pod", "ns", "web-2"));
    let want = json!({"observedGeneration": 1, "podStates": {
        "web-0": entry("n1", "a"), "web-1": entry("n2", "b")}});
    until(&stand_in, PPS, "PersistentPodState", "web", |s| {
        s["status"] == want
    })
    .await;

    // The pod re-created on the other node and ready: its entry follows it.
    stand_in.put(pod("web", 1, "n1", json!({})));
    until(&stand_in, PPS, "PersistentPodState", "web", |s| {
        s["status"]["podStates"]["web-1"] == entry("n1", "a")
    })
    .await;

    // Scenario 23: the StatefulSet deleted: every entry goes.
    assert!(stand_in.remove("StatefulSet", "ns", "web"));
    until(&stand_in, PPS, "PersistentPodState", "web", |s| {
        s["status"] == json!({"observedGeneration": 1})
    })
    .await;

    controllers.stop().await;
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statefulsets_annotations_generate_its_persistent_pod_state_and_take_it_back() {
    let stand_in = cluster();
    let annotations = json!({
        "kruise.io/auto-generate-persistent-pod-state": "true",
        "kruise.io/required-persistent-topology": ZONE,
        "kruise.io/preferred-persistent-topology": HOST,
        "kruise.io/persistent-pod-annotations": "cni.projectcalico.org/podIP"});
    stand_in.put(stateful_set("apps/v1", "db", 1, annotations.clone()));
    stand_in.put(pod(
        "db",
        0,
        "n2",
        json!({"cni.projectcalico.org/podIP": "10.0.0.7", "other": "x"}),
    ));
    // A user's own PersistentPodState named after a StatefulSet that asks for one: left alone.
    stand_in.put(stateful_set("apps/v1", "mine", 1, annotations.clone()));
    let users = state(
        "mine",
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "mine"}),
        json!({"persistentPodStateRetentionPolicy": "WhenDeleted"}),
    );
    stand_in.put(users.clone());
    // Scenario 35: an Advanced StatefulSet.
    stand_in.put(stateful_set(
        "apps.kruise.io/v1beta1",
        "adv",
        1,
        json!({"kruise.io/auto-generate-persistent-pod-state": "true",
            "kruise.io/preferred-persistent-topology": "a,,b"}),
    ));
    let controllers = start(&stand_in).await;

    // Scenario 30: created as §4.2 says, then its status filled with the pod's node and annotation.
    let generated = until(&stand_in, PPS, "PersistentPodState", "db", |s| {
        s["status"]["podStates"]["db-0"].is_object()
    })
    .await;
    assert_eq!(
        generated["metadata"]["ownerReferences"],
        json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "uid-db",
            "controller": true}])
    );
    assert_eq!(
        generated["spec"],
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
            "requiredPersistentTopology": {"keys": [ZONE]},
            "preferredPersistentTopology": [{"weight": 100, "preference": {"keys": [HOST]}}],
            "persistentPodAnnotations": [{"key": "cni.projectcalico.org/podIP"}]})
    );
    assert_eq!(
        generated["status"]["podStates"]["db-0"],
        json!({"nodeName": "n2", "nodeTopologyLabels": {ZONE: "b", HOST: "n2"},
            "annotations": {"cni.projectcalico.org/podIP": "10.0.0.7"}})
    );
    let advanced = until(&stand_in, PPS, "PersistentPodState", "adv", |s| {
        !s.is_null()
    })
    .await;
    assert_eq!(
        advanced["spec"],
        json!({"targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "adv"},
            "preferredPersistentTopology": [{"weight": 100, "preference": {"keys": ["a", "", "b"]}}]})
    );
    assert_eq!(
        advanced["metadata"]["ownerReferences"][0]["apiVersion"],
        "apps.kruise.io/v1beta1"
    );

    // Scenario 33: the required annotation changed: the spec follows.
    stand_in.update("StatefulSet", "ns", "db", |sts| {
        sts["metadata"]["annotations"]["kruise.io/required-persistent-topology"] =
            json!(format!("{ZONE},rack"));
        true
    });
    until(&stand_in, PPS, "PersistentPodState", "db", |s| {
        s["spec"]["requiredPersistentTopology"]["keys"] == json!([ZONE, "rack"])
    })
    .await;

    // Scenario 31: the annotation removed: the generated one goes.
    stand_in.update("StatefulSet", "ns", "db", |sts| {
        let annotations = sts["metadata"]["annotations"].as_object_mut().unwrap();
        annotations.remove("kruise.io/auto-generate-persistent-pod-state");
        true
    });
    until(&stand_in, PPS, "PersistentPodState", "db", Value::is_null).await;

    // Scenario 34: the user's own is as it was (its status aside), although its StatefulSet asks for one.
    let mine = stand_in
        .get_at(Some(PPS), "PersistentPodState", "ns", "mine")
        .unwrap();
    assert_eq!(mine["spec"], users["spec"]);
    assert_eq!(mine["metadata"].get("ownerReferences"), None);

    controllers.stop().await;
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_run_where_the_crd_is_served_and_never_beside_openkruise() {
    use kruise_webhook::config::ServeConfig;
    use kruise_webhook::controller::Controllers;
    use kruise_webhooks::registry::Served;

    kruise_webhook::install_crypto_provider();
    let stand_in = cluster();
    let client = stand_in.client();
    let metrics = Metrics::new();
    // Not leading: nothing is reconciled, only what runs is looked at.
    let (_leader, leading) = watch::channel(false);
    let served = LiveCache::start(client.clone(), None, false);
    let not_served = LiveCache::start_at(
        client.clone(),
        Versions::newest().with(KruiseKind::PersistentPodState, None),
        None,
        false,
        false,
        None,
        false,
    );
    for (cache, beside, runs) in [
        (&served, false, true),
        (&served, true, false),
        (&not_served, false, false),
    ] {
        let mut config = ServeConfig::for_loopback(Vec::new(), std::env::temp_dir());
        config.beside_openkruise = beside;
        let controllers = Controllers::start_on(
            client.clone(),
            cache,
            &config,
            Served::ALL,
            &metrics,
            leading.clone(),
        );
        assert_eq!(
            controllers.running().contains(&"PersistentPodState"),
            runs,
            "beside {beside}: {:?}",
            controllers.running()
        );
        controllers.shutdown().await;
    }
}
