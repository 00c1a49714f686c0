//! Pods that missed their sidecars (docs/missed-sidecars.md §2, §3) against the stand-in API server
//! (tests/common/apiserver.rs), which authorizes as the shipped ServiceAccount and answers AlreadyExists for an
//! event name taken: the count follows pods and the SidecarSet as they change, each pod is told once (also by a
//! second leader), and the SidecarSet is told when its count grows.

mod common;

use std::time::Duration;

use common::apiserver::StandIn;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::LiveCache;
use kruise_webhook::cache::versions::{KruiseKind, Versions};
use kruise_webhook::controller::missed_sidecars::MissedSidecarsController;
use kruise_webhook::controller::runtime::{Running, Settings};
use kruise_webhook::metrics::Metrics;

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn pod(namespace: &str, name: &str, app: &str, injected: Option<&str>) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{namespace}-{name}"),
            "labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running"}});
    if let Some(list) = injected {
        pod["metadata"]["annotations"] = json!({"kruise.io/sidecarset-injected-list": list});
    }
    pod
}

fn sidecar_set(paused: bool) -> Value {
    sidecar_set_of("log", ("app", "web"), paused)
}

fn sidecar_set_of(name: &str, (key, value): (&str, &str), paused: bool) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "generation": 1},
        "spec": {"selector": {"matchLabels": {key: value}},
            "injectionStrategy": {"paused": paused},
            "containers": [{"name": format!("{name}-agent"), "image": "agent:1"}]}})
}

fn gauge(metrics: &Metrics) -> Option<String> {
    metrics
        .encode()
        .lines()
        .find(|l| l.starts_with("sidecarset_pods_missing_sidecars{sidecarset=\"log\"}"))
        .map(str::to_owned)
}

fn events(stand_in: &StandIn, reason: &str) -> Vec<Value> {
    stand_in
        .events()
        .into_iter()
        .filter(|e| e["reason"] == reason)
        .collect()
}

/// The `PodsNotInjected` events on SidecarSet `log`.
fn on_log(stand_in: &StandIn) -> Vec<Value> {
    events(stand_in, "PodsNotInjected")
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == "log")
        .collect()
}

async fn until(what: &str, done: impl Fn() -> bool) {
    common::until_within(what, Duration::from_secs(10), done).await;
}

fn start(
    stand_in: &StandIn,
    cache: &LiveCache,
    metrics: &Metrics,
    leading: watch::Receiver<bool>,
) -> Running {
    MissedSidecarsController::start(
        stand_in.client(),
        cache.sidecar_set_cache().unwrap().clone(),
        cache.pod_store().clone(),
        cache.namespace_store().clone(),
        vec!["kube-system".to_owned(), "kruise-system".to_owned()],
        Versions::newest().resource_or_newest(KruiseKind::SidecarSet),
        metrics.clone(),
        leading,
        Settings::default(),
    )
}

const LINE_1: &str = r#"sidecarset_pods_missing_sidecars{sidecarset="log"} 1"#;
const LINE_2: &str = r#"sidecarset_pods_missing_sidecars{sidecarset="log"} 2"#;
const LINE_0: &str = r#"sidecarset_pods_missing_sidecars{sidecarset="log"} 0"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missed_pods_are_counted_and_told_once_each() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    for ns in ["shop", "kube-system", "kruise-system"] {
        stand_in.put(namespace(ns));
    }
    stand_in.put(sidecar_set(false));
    stand_in.put(sidecar_set_of("mesh", ("tier", "edge"), false));
    // Scenario 1: missed. 2: injected. 5: selector misses. 7: excluded namespace. 8: finished.
    stand_in.put(pod("shop", "web-0", "web", None));
    stand_in.put(pod("shop", "web-1", "web", Some("log")));
    stand_in.put(pod("shop", "db-0", "db", None));
    stand_in.put(pod("kube-system", "web-0", "web", None));
    let mut done = pod("shop", "done", "web", None);
    done["status"]["phase"] = json!("Succeeded");
    stand_in.put(done);

    let cache = LiveCache::start(stand_in.client(), Some("kruise-system"), false);
    common::replica::synced(cache.clone()).await;
    let metrics = Metrics::new();
    let (leader, leading) = watch::channel(true);
    let running = start(&stand_in, &cache, &metrics, leading);

    until("the first count", || {
        gauge(&metrics).as_deref() == Some(LINE_1)
    })
    .await;
    until("the SidecarSet's event", || !on_log(&stand_in).is_empty()).await;
    let on_pods = events(&stand_in, "SidecarSetNotInjected");
    assert_eq!(on_pods.len(), 1, "{on_pods:?}");
    let event = &on_pods[0];
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["involvedObject"]["kind"], "Pod");
    assert_eq!(event["involvedObject"]["namespace"], "shop");
    assert_eq!(event["involvedObject"]["name"], "web-0");
    assert_eq!(event["involvedObject"]["uid"], "uid-shop-web-0");
    assert_eq!(event["metadata"]["namespace"], "shop");
    assert_eq!(event["source"]["component"], "sidecarset-controller");
    assert_eq!(
        event["message"],
        "pod was created without the sidecars of SidecarSet log (its selector matches the pod now); recreate the pod to inject them"
    );
    assert!(
        event["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("web-0.missed-sidecars-"),
        "{event}"
    );
    let on_set = on_log(&stand_in);
    assert_eq!(on_set.len(), 1, "{on_set:?}");
    assert_eq!(on_set[0]["involvedObject"]["kind"], "SidecarSet");
    assert_eq!(on_set[0]["involvedObject"]["name"], "log");
    assert_eq!(on_set[0]["metadata"]["namespace"], "default");
    assert_eq!(
        on_set[0]["message"],
        "1 pod matched by this SidecarSet was created without its sidecars: shop/web-0; recreate it"
    );

    // A second pod created without its sidecars: counted, told on the pod, the SidecarSet told again.
    // A second pod created without its sidecars, of two SidecarSets: counted by each, told once on the pod
    // (naming both), the SidecarSet told again.
    let mut both = pod("shop", "web-2", "web", None);
    both["metadata"]["labels"]["tier"] = json!("edge");
    stand_in.put(both.clone());
    until("the second count", || {
        gauge(&metrics).as_deref() == Some(LINE_2)
    })
    .await;
    until("the SidecarSet's second event", || {
        on_log(&stand_in).len() == 2
    })
    .await;
    assert_eq!(
        on_log(&stand_in)[1]["message"],
        "2 pods matched by this SidecarSet were created without its sidecars (first: shop/web-0, shop/web-2); recreate them"
    );
    until("mesh's count", || {
        metrics
            .encode()
            .contains(r#"sidecarset_pods_missing_sidecars{sidecarset="mesh"} 1"#)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let told: Vec<(Value, Value)> = events(&stand_in, "SidecarSetNotInjected")
        .iter()
        .map(|e| (e["involvedObject"]["name"].clone(), e["message"].clone()))
        .collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(told[0].0, "web-0");
    assert_eq!(
        told[1],
        (
            json!("web-2"),
            json!(
                "pod was created without the sidecars of SidecarSets log, mesh (their selectors match the pod now); recreate the pod to inject them"
            )
        )
    );

    // A new leader (fresh memory and metrics) counts the same pods and records nothing new: the event names
    // are taken.
    leader.send_replace(false);
    until("the gauge emptied once not leading", || {
        gauge(&metrics).is_none()
    })
    .await;
    running.stop().await;
    let posted = stand_in.events().len();
    let second = Metrics::new();
    let (_leader, leading) = watch::channel(true);
    let running = start(&stand_in, &cache, &second, leading);
    until("the new leader's count", || {
        gauge(&second).as_deref() == Some(LINE_2)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(stand_in.events().len(), posted, "{:?}", stand_in.events());

    // Leaving the count: relabelled out of the selector, recreated with its sidecars, deleted.
    stand_in.put(pod("shop", "web-0", "other", None));
    until("web-0 left", || gauge(&second).as_deref() == Some(LINE_1)).await;
    both["metadata"]["annotations"] = json!({"kruise.io/sidecarset-injected-list": "log,mesh"});
    stand_in.put(both);
    until("web-2 injected", || {
        gauge(&second).as_deref() == Some(LINE_0)
    })
    .await;
    stand_in.put(pod("shop", "web-3", "web", None));
    until("web-3 counted", || {
        gauge(&second).as_deref() == Some(LINE_1)
    })
    .await;
    assert!(stand_in.remove("Pod", "shop", "web-3"));
    until("web-3 deleted", || {
        gauge(&second).as_deref() == Some(LINE_0)
    })
    .await;

    // Scenario 4: a paused SidecarSet is expected not to inject; a change of the SidecarSet recounts.
    stand_in.put(pod("shop", "web-4", "web", None));
    until("web-4 counted", || {
        gauge(&second).as_deref() == Some(LINE_1)
    })
    .await;
    stand_in.put(sidecar_set(true));
    until("paused", || gauge(&second).as_deref() == Some(LINE_0)).await;
    // Deleted: its count goes.
    assert!(stand_in.remove("SidecarSet", "", "log"));
    until("the deleted set's count gone", || gauge(&second).is_none()).await;

    running.stop().await;
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
    assert!(
        events(&stand_in, "ReconcileFailed").is_empty(),
        "{:?}",
        stand_in.events()
    );
}

/// `sidecarset_pods_missing_sidecars{sidecarset=<set>}`, if exported.
fn count(metrics: &Metrics, set: &str) -> Option<String> {
    let prefix = format!("sidecarset_pods_missing_sidecars{{sidecarset=\"{set}\"}} ");
    metrics
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
}

/// The index follows Namespace labels (scenario 6), SidecarSet edits, and canaries (scenario 9): a deleted
/// canary leaves its base missed, an edited selector moves the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_count_follows_namespaces_edits_and_canaries() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    let team = |label: &str| {
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team", "labels": {"team": label}}})
    };
    stand_in.put(team("a"));
    let mut pinned = sidecar_set_of("ns-log", ("app", "api"), false);
    pinned["spec"]["namespaceSelector"] = json!({"matchLabels": {"team": "a"}});
    stand_in.put(pinned);
    stand_in.put(sidecar_set_of("base", ("app", "api"), false));
    let mut canary = sidecar_set_of("base-canary", ("canary", "yes"), false);
    canary["metadata"]["annotations"] = json!({"apps.kruise.io/sidecarset-canary": "true",
        "apps.kruise.io/sidecarset-base": "base"});
    stand_in.put(canary);
    stand_in.put(pod("team", "api-0", "api", None));
    let mut canaried = pod("team", "api-1", "api", None);
    canaried["metadata"]["labels"]["canary"] = json!("yes");
    stand_in.put(canaried);

    let cache = LiveCache::start(stand_in.client(), Some("kruise-system"), false);
    common::replica::synced(cache.clone()).await;
    let metrics = Metrics::new();
    let (_leader, leading) = watch::channel(true);
    let running = start(&stand_in, &cache, &metrics, leading);
    let counts = |wanted: [(&str, &str); 3]| {
        wanted
            .iter()
            .all(|(set, n)| count(&metrics, set).as_deref() == Some(*n))
    };
    until("the first counts", || {
        counts([("ns-log", "2"), ("base", "1"), ("base-canary", "1")])
    })
    .await;
    // The namespace relabelled out of ns-log's namespaceSelector, and back.
    stand_in.put(team("b"));
    until("ns-log's pods gone with the namespace's label", || {
        counts([("ns-log", "0"), ("base", "1"), ("base-canary", "1")])
    })
    .await;
    stand_in.put(team("a"));
    until("ns-log's pods back", || {
        counts([("ns-log", "2"), ("base", "1"), ("base-canary", "1")])
    })
    .await;
    // The canary deleted: its pod now missed the base.
    assert!(stand_in.remove("SidecarSet", "", "base-canary"));
    until("the base counts the canary's pod", || {
        count(&metrics, "base").as_deref() == Some("2") && count(&metrics, "base-canary").is_none()
    })
    .await;
    // The base's selector edited (the same generation, as the stand-in keeps it): its pods leave.
    stand_in.put(sidecar_set_of("base", ("app", "other"), false));
    until("the edited base", || {
        count(&metrics, "base").as_deref() == Some("0")
    })
    .await;
    running.stop().await;
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
    // Each pod told once, naming what it missed then.
    let mut told: Vec<String> = events(&stand_in, "SidecarSetNotInjected")
        .iter()
        .map(|e| {
            e["involvedObject"]["name"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    told.sort();
    assert_eq!(told, ["api-0", "api-1"]);
}

/// An edited canary hands its pods back to its base (scenario 9): the base's count follows without a change of
/// the base, and the pod, told once, is not told again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_canary_hands_its_pods_back_to_its_base() {
    kruise_webhook::install_crypto_provider();
    let stand_in = StandIn::new();
    stand_in.put(namespace("team"));
    stand_in.put(sidecar_set_of("base", ("app", "api"), false));
    let canary = |wanted: &str| {
        let mut canary = sidecar_set_of("base-canary", ("canary", wanted), false);
        canary["metadata"]["annotations"] = json!({"apps.kruise.io/sidecarset-canary": "true",
            "apps.kruise.io/sidecarset-base": "base"});
        canary
    };
    stand_in.put(canary("yes"));
    let mut canaried = pod("team", "api-1", "api", None);
    canaried["metadata"]["labels"]["canary"] = json!("yes");
    stand_in.put(canaried);

    let cache = LiveCache::start(stand_in.client(), Some("kruise-system"), false);
    common::replica::synced(cache.clone()).await;
    let metrics = Metrics::new();
    let (_leader, leading) = watch::channel(true);
    let running = start(&stand_in, &cache, &metrics, leading);
    until("the canary counts the pod, the base does not", || {
        count(&metrics, "base").as_deref() == Some("0")
            && count(&metrics, "base-canary").as_deref() == Some("1")
    })
    .await;
    stand_in.put(canary("no"));
    until("the base counts the pod", || {
        count(&metrics, "base").as_deref() == Some("1")
            && count(&metrics, "base-canary").as_deref() == Some("0")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    running.stop().await;
    let told = events(&stand_in, "SidecarSetNotInjected");
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        told[0]["message"],
        "pod was created without the sidecars of SidecarSet base-canary (its selector matches the pod now); recreate the pod to inject them"
    );
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
}
