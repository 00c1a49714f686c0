//! SidecarSet in-place rollouts end to end (spec/sidecarset.md §9 "In-place update", §6.2): the SidecarSet
//! controller on its event-driven runtime, over the informer caches of the server, against the in-process
//! stand-in API server (resourceVersion conflicts enforced on every write), with a simulated kubelet that
//! restarts a container whose image changed and reports it ready again a little later. Rounds are driven
//! by those pod status changes only.
//!
//! What is asserted is what the cluster sees: at no stored state are more pods unavailable than
//! maxUnavailable allows; the rollout stops at the partition; a hot-upgrade pod always has a ready copy
//! running a real image; a second run over the final state writes nothing.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::apiserver::StandIn;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use kruise_webhook::cache::LiveCache;
use kruise_webhook::controller::runtime::{Running, Settings};
use kruise_webhook::controller::sidecarset::{
    Inputs, SidecarSetController, Snapshot, UpgradeContext, Upgraded, reconcile_and_upgrade,
};
use kruise_webhook::metrics::Metrics;

const EMPTY: &str = "empty:1";

fn record(hash: &str) -> String {
    json!({"sidecarset1": {"updateTimestamp": "2025-01-02T03:04:05Z", "hash": hash,
        "sidecarSetName": "sidecarset1", "sidecarList": ["dns-f"], "controllerRevision": "sidecarset1-old"}})
    .to_string()
}

/// sidecarset1 after its image moved from `dns:1.0` (hash `h1`) to `dns:2.0` (hash `h2`); the image is
/// the only change, so the without-image hash `w1` is the pods' own.
fn sidecar_set(hot: bool, max_unavailable: i32, partition: i32) -> Value {
    let upgrade = if hot {
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": EMPTY})
    } else {
        json!({"upgradeType": "ColdUpgrade"})
    };
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "sidecarset1", "uid": "set-uid", "generation": 2,
            "annotations": {"kruise.io/sidecarset-hash": "h2", "kruise.io/sidecarset-hash-without-image": "w1"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "dns-f", "image": "dns:2.0", "imagePullPolicy": "IfNotPresent",
                "podInjectPolicy": "BeforeAppContainer", "shareVolumePolicy": {"type": "disabled"},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "upgradeStrategy": upgrade}],
            "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": max_unavailable,
                "partition": partition}
        }
    })
}

fn status_of(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image, "imageID": format!("docker-pullable://{image}@sha256:00"),
        "ready": true, "restartCount": 0})
}

/// A running, ready pod injected at `h1`. Cold: `dns-f` runs `dns:1.0`. Hot: `dns-f-1` works on
/// `dns:1.0`, `dns-f-2` idles on the empty image.
fn pod(i: usize, hot: bool) -> Value {
    let mut annotations = json!({"kruise.io/sidecarset-injected-list": "sidecarset1",
        "kruise.io/sidecarset-hash": record("h1"),
        "kruise.io/sidecarset-hash-without-image": record("w1")});
    let containers = if hot {
        annotations["kruise.io/sidecarset-working-hotupgrade-container"] =
            json!(r#"{"dns-f":"dns-f-1"}"#);
        annotations["version.sidecarset.kruise.io/dns-f-1"] = json!("1");
        annotations["versionalt.sidecarset.kruise.io/dns-f-1"] = json!("0");
        annotations["version.sidecarset.kruise.io/dns-f-2"] = json!("0");
        annotations["versionalt.sidecarset.kruise.io/dns-f-2"] = json!("1");
        vec![("dns-f-1", "dns:1.0"), ("dns-f-2", EMPTY), ("app", "app:1")]
    } else {
        vec![("dns-f", "dns:1.0"), ("app", "app:1")]
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-{i:03}"), "namespace": "default", "uid": format!("uid-{i}"),
            "labels": {"app": "web"}, "creationTimestamp": "2025-01-01T00:00:00Z",
            "annotations": annotations},
        "spec": {"nodeName": "n1", "containers": containers.iter()
            .map(|(n, image)| json!({"name": n, "image": image})).collect::<Vec<_>>()},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": containers.iter().map(|(n, image)| status_of(n, image)).collect::<Vec<_>>()}
    })
}

fn cluster(pods: usize, set: Value, hot: bool) -> StandIn {
    let stand_in = StandIn::new();
    for ns in ["default", "kruise-system"] {
        stand_in.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
    }
    for i in 0..pods {
        stand_in.put(pod(i, hot));
    }
    stand_in.put(set);
    stand_in
}

fn containers(pod: &Value) -> &[Value] {
    pod["spec"]["containers"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

fn container_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    pod["status"]["containerStatuses"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)
}

/// Unavailable as a Service or a PodUnavailableBudget sees it: not Ready, or a container whose running
/// image is not its spec's (an update in flight).
fn unavailable(pod: &Value) -> bool {
    let ready = pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    !ready
        || containers(pod).iter().any(|c| {
            container_status(pod, c["name"].as_str().unwrap_or(""))
                .is_none_or(|s| s["image"] != c["image"])
        })
}

/// The kubelet: a container whose spec image differs from the one it runs is stopped at once (not
/// ready), then reported running the new image and ready 5-30 ms later.
fn kubelet(stand_in: &StandIn) -> tokio::task::JoinHandle<()> {
    let mut pods = stand_in.subscribe("Pod");
    let stand_in = stand_in.clone();
    tokio::spawn(async move {
        let mut restarting = BTreeSet::new();
        let mut seed = 7u64;
        while let Some(pod) = pods.next().await {
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            for c in containers(&pod) {
                let (container, image) =
                    (c["name"].as_str().unwrap_or_default(), c["image"].clone());
                let running = container_status(&pod, container).map(|s| s["image"].clone());
                let key = (name.clone(), container.to_owned(), image.to_string());
                if running.as_ref() == Some(&image) || !restarting.insert(key.clone()) {
                    continue;
                }
                // Stop the container now.
                stand_in.update("Pod", "default", &name, |p| {
                    set_container(p, container, None);
                    true
                });
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let delay = Duration::from_millis(5 + (seed >> 33) % 26);
                let stand_in = stand_in.clone();
                let container = container.to_owned();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    stand_in.update("Pod", "default", &key.0, |p| {
                        let wanted = containers(p)
                            .iter()
                            .find(|c| c["name"] == container)
                            .map(|c| c["image"].clone());
                        // The spec moved on again: the next restart reports that one.
                        if wanted != Some(image.clone()) {
                            return false;
                        }
                        set_container(p, &container, image.as_str());
                        true
                    });
                });
            }
        }
    })
}

/// Sets a container's status: stopped (`None`), or running `image` and ready; the pod is Ready when
/// every container is.
fn set_container(pod: &mut Value, name: &str, image: Option<&str>) {
    let statuses = pod["status"]["containerStatuses"]
        .as_array_mut()
        .expect("statuses");
    if let Some(s) = statuses.iter_mut().find(|s| s["name"] == name) {
        match image {
            Some(image) => *s = status_of(name, image),
            None => s["ready"] = json!(false),
        }
    }
    let all_ready = statuses.iter().all(|s| s["ready"] == true);
    pod["status"]["conditions"] =
        json!([{"type": "Ready", "status": if all_ready { "True" } else { "False" }}]);
}

/// The server's caches over `stand_in` and the SidecarSet controller leading on them.
async fn controller(stand_in: &StandIn) -> (Running, watch::Sender<bool>, LiveCache) {
    kruise_webhook::install_crypto_provider();
    let client = stand_in.client();
    let cache = LiveCache::start(client.clone(), Some("kruise-system"), false);
    let sets = cache
        .sidecar_set_cache()
        .expect("SidecarSet caches")
        .clone();
    common::replica::synced(cache.clone()).await;
    let inputs = Inputs {
        sidecar_sets: sets.set_store().clone(),
        revisions: sets.revision_store().clone(),
        pods: cache.pod_store().clone(),
        namespaces: cache.namespace_store().clone(),
    };
    let (leader, leading) = watch::channel(true);
    let running = SidecarSetController::start(
        client.clone(),
        inputs,
        "kruise-system".into(),
        UpgradeContext::new(client, Metrics::new()),
        leading,
        Settings::default(),
    );
    (running, leader, cache)
}

/// Waits (up to 30 s) until `done` holds of the stand-in.
async fn until(stand_in: &StandIn, what: &str, done: impl Fn(&StandIn) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while !done(stand_in) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting for {what}");
}

fn images(stand_in: &StandIn, container: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for pod in stand_in.all("Pod") {
        if let Some(s) = container_status(&pod, container).filter(|s| s["ready"] == true) {
            *counts
                .entry(s["image"].as_str().unwrap_or_default().to_owned())
                .or_default() += 1;
        }
    }
    counts
}

fn set_status(stand_in: &StandIn) -> Value {
    stand_in
        .get("SidecarSet", "", "sidecarset1")
        .expect("the SidecarSet")["status"]
        .clone()
}

/// The state of the stand-in as a snapshot, for a reconcile run by hand.
fn snapshot(stand_in: &StandIn) -> Snapshot {
    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> Arc<T> {
        Arc::new(serde_json::from_value(v).expect("typed"))
    }
    Snapshot {
        sidecar_sets: stand_in.all("SidecarSet").into_iter().map(typed).collect(),
        revisions: stand_in
            .all("ControllerRevision")
            .into_iter()
            .map(typed)
            .collect(),
        pods: stand_in.all("Pod").into_iter().map(typed).collect(),
        namespaces: [("default".to_owned(), BTreeMap::new())].into(),
    }
}

/// A reconcile of the final state by hand: it must find nothing to do and write nothing.
async fn second_run_writes_nothing(stand_in: &StandIn) {
    let before = stand_in.writes().len();
    let source = snapshot(stand_in);
    let client = stand_in.client();
    let ctx = UpgradeContext::new(client.clone(), Metrics::new());
    let (_, upgraded) = reconcile_and_upgrade(
        &client,
        &source,
        &source.sidecar_sets[0],
        "kruise-system",
        &ctx,
    )
    .await
    .expect("a second run");
    assert_eq!(upgraded.updated, 0);
    assert_eq!(upgraded.flipped, 0);
    assert_eq!(
        upgraded,
        Upgraded {
            requeue: upgraded.requeue,
            ..Upgraded::default()
        }
    );
    assert_eq!(
        stand_in.writes()[before..],
        [] as [String; 0],
        "the second run wrote"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_of_100_pods_stops_at_the_partition_and_never_exceeds_max_unavailable() {
    let stand_in = cluster(100, sidecar_set(false, 10, 20), false);
    // Every stored state, in order: how many pods are unavailable, at most.
    let (out, most) = (
        Arc::new(Mutex::new(BTreeSet::new())),
        Arc::new(Mutex::new(0)),
    );
    {
        let (out, most) = (out.clone(), most.clone());
        stand_in.observe(move |object| {
            if object["kind"] != "Pod" {
                return;
            }
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut out = out.lock().unwrap();
            if unavailable(object) {
                out.insert(name);
            } else {
                out.remove(&name);
            }
            let mut most = most.lock().unwrap();
            *most = (*most).max(out.len());
        });
    }
    let kubelet = kubelet(&stand_in);
    let (running, _leader, _cache) = controller(&stand_in).await;

    until(
        &stand_in,
        "80 pods ready on dns:2.0 and the status saying so",
        |s| {
            let status = set_status(s);
            images(s, "dns-f").get("dns:2.0") == Some(&80)
                && status["updatedPods"] == 80
                && status["updatedReadyPods"] == 80
                && status["readyPods"] == 100
        },
    )
    .await;
    // Settled: nothing more moves for a while.
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.stop().await;
    kubelet.abort();

    assert_eq!(
        images(&stand_in, "dns-f"),
        BTreeMap::from([("dns:1.0".to_owned(), 20), ("dns:2.0".to_owned(), 80)])
    );
    let most = *most.lock().unwrap();
    assert!(most <= 10, "{most} pods were unavailable at once");
    assert!(
        most >= 2,
        "the rollout went one pod at a time ({most}): maxUnavailable unused"
    );
    assert!(out.lock().unwrap().is_empty(), "pods still unavailable");
    let status = set_status(&stand_in);
    assert_eq!(status["matchedPods"], 100);
    // The 80 updated pods record the new hash and the revision the controller created.
    let revision = status["latestRevision"]
        .as_str()
        .expect("a latest revision")
        .to_owned();
    let updated: Vec<Value> = stand_in
        .all("Pod")
        .into_iter()
        .filter(|p| p["spec"]["containers"][0]["image"] == "dns:2.0")
        .collect();
    assert_eq!(updated.len(), 80);
    for p in &updated {
        let hash: Value = serde_json::from_str(
            p["metadata"]["annotations"]["kruise.io/sidecarset-hash"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(hash["sidecarset1"]["hash"], "h2");
        assert_eq!(hash["sidecarset1"]["controllerRevision"], revision.as_str());
        assert_eq!(
            p["spec"]["containers"][1]["image"], "app:1",
            "only the sidecar image changes"
        );
    }
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
    second_run_writes_nothing(&stand_in).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_upgrade_always_keeps_a_ready_copy_running_a_real_image() {
    let stand_in = cluster(3, sidecar_set(true, 3, 0), true);
    // Every stored state of every pod: some sidecar copy ready and running a real image.
    let broken = Arc::new(Mutex::new(Vec::new()));
    {
        let broken = broken.clone();
        stand_in.observe(move |object| {
            if object["kind"] != "Pod" {
                return;
            }
            let serving = ["dns-f-1", "dns-f-2"].iter().any(|c| {
                container_status(object, c)
                    .is_some_and(|s| s["ready"] == true && s["image"] != EMPTY)
            });
            if !serving {
                broken.lock().unwrap().push(object.clone());
            }
        });
    }
    let kubelet = kubelet(&stand_in);
    let (running, _leader, _cache) = controller(&stand_in).await;

    until(
        &stand_in,
        "every pod working on dns:2.0 with the old copy emptied",
        |s| {
            images(s, "dns-f-2").get("dns:2.0") == Some(&3)
                && images(s, "dns-f-1").get(EMPTY) == Some(&3)
                && set_status(s)["updatedReadyPods"] == 3
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.stop().await;
    kubelet.abort();

    assert_eq!(
        broken.lock().unwrap().len(),
        0,
        "a pod without a serving copy: {:?}",
        broken.lock().unwrap().first()
    );
    for p in stand_in.all("Pod") {
        let ann = &p["metadata"]["annotations"];
        assert_eq!(
            ann["kruise.io/sidecarset-working-hotupgrade-container"],
            r#"{"dns-f":"dns-f-2"}"#
        );
        // §6.2: the flipped copy's version and the working copy's versionalt are "0".
        assert_eq!(ann["version.sidecarset.kruise.io/dns-f-1"], "0");
        assert_eq!(ann["versionalt.sidecarset.kruise.io/dns-f-2"], "0");
        assert_eq!(p["spec"]["containers"][0]["image"], EMPTY);
        assert_eq!(p["spec"]["containers"][1]["image"], "dns:2.0");
    }
    let reasons: Vec<Value> = stand_in
        .events()
        .iter()
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(
        reasons
            .iter()
            .filter(|r| *r == "ResetContainerSucceed")
            .count(),
        3,
        "{reasons:?}"
    );
    assert!(
        stand_in.unexpected().is_empty(),
        "{:?}",
        stand_in.unexpected()
    );
    second_run_writes_nothing(&stand_in).await;
}
