//! Issue 38: kruise-webhook beside OpenKruise 1.8.3 (DECISIONS 27), on a control plane of its own prepared as
//! OpenKruise's chart and kruise-manager leave a cluster: its 17 CRDs as released (`v1alpha1` only for
//! SidecarSet, PodUnavailableBudget and WorkloadSpread), its two webhook configurations as rendered with
//! `PodWebhook=false` and the OpenKruise side of the recipe applied (`deploy/openkruise-side`), its Service,
//! certificate Secret, configuration ConfigMap and the Lease `kruise-manager` held by another identity. The
//! beside overlay is installed (all but its Deployment: the server runs here as a process, as that
//! Deployment runs it, with self-managed certificates in URL mode); `v1alpha1` objects created by the user
//! then work, and every object of kruise's is byte-identical (resourceVersion included) before and after.

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::envtest::{self, ControlPlane};
use super::{ACT_WITHIN, Cluster, Mode, Outcome, STOP_WITHIN, wait_for};

/// The overlay installed.
const OVERLAY: &str = "deploy/overlays/beside-openkruise";
/// The OpenKruise side of the recipe: a kustomization over kruise's rendered configurations.
const OPENKRUISE_SIDE: &str = "deploy/openkruise-side";
/// What OpenKruise 1.8.3's chart installs (tests/data/README.md).
const RELEASE: &str = "tests/data/openkruise-v1.8.3";

/// The objects kruise's chart and kruise-manager own, as `kubectl get` names them.
fn kruise_objects() -> Vec<(&'static str, Option<&'static str>, String)> {
    let mut objects = vec![
        ("namespace", None, "kruise-system".to_owned()),
        (
            "mutatingwebhookconfiguration",
            None,
            "kruise-mutating-webhook-configuration".to_owned(),
        ),
        (
            "validatingwebhookconfiguration",
            None,
            "kruise-validating-webhook-configuration".to_owned(),
        ),
        (
            "secret",
            Some("kruise-system"),
            "kruise-webhook-certs".to_owned(),
        ),
        (
            "service",
            Some("kruise-system"),
            "kruise-webhook-service".to_owned(),
        ),
        ("lease", Some("kruise-system"), "kruise-manager".to_owned()),
        (
            "configmap",
            Some("kruise-system"),
            "kruise-configuration".to_owned(),
        ),
        (
            "serviceaccount",
            Some("kruise-system"),
            "kruise-manager".to_owned(),
        ),
    ];
    if let Ok(entries) = std::fs::read_dir(envtest::root().join(RELEASE).join("crds")) {
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let file = e.file_name().to_string_lossy().into_owned();
                // `<group>_<plural>.yaml` → `<plural>.<group>`.
                let (group, plural) = file.strip_suffix(".yaml")?.split_once('_')?;
                Some(format!("{plural}.{group}"))
            })
            .collect();
        names.sort();
        objects.extend(
            names
                .into_iter()
                .map(|n| ("customresourcedefinition", None, n)),
        );
    }
    objects
}

/// Each of kruise's objects as the admin reads it (JSON text, resourceVersion included).
fn snapshot(plane: &ControlPlane) -> Result<Vec<(String, String)>, String> {
    kruise_objects()
        .into_iter()
        .map(|(resource, namespace, name)| {
            let mut args = vec!["get", resource, &name, "-o", "json"];
            if let Some(ns) = namespace {
                args.extend(["-n", ns]);
            }
            Ok((format!("{resource}/{name}"), plane.kubectl(&args, None)?))
        })
        .collect()
}

/// The cluster as OpenKruise 1.8.3 leaves it, but kruise-manager itself (nothing answers at
/// `kruise-webhook-service`; no pod path of kruise's configurations is left to call it).
fn prepare_openkruise(plane: &ControlPlane) -> Result<(), String> {
    let release = envtest::root().join(RELEASE);
    // Server-side: the largest CRDs are over the client-side apply annotation's limit.
    plane.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager=helm",
            "-f",
            &release.join("crds").display().to_string(),
        ],
        None,
    )?;
    plane.kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd",
            "--all",
        ],
        None,
    )?;
    let configurations = post_render(&release.join("webhookconfiguration-podwebhook-false.yaml"))?;
    let now = format!("{:.6}", k8s_openapi::jiff::Timestamp::now());
    plane.apply(&[
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kruise-system"}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "kruise-manager", "namespace": "kruise-system"}}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kruise-webhook-service", "namespace": "kruise-system"},
            "spec": {"ports": [{"port": 443, "targetPort": 9876}],
                "selector": {"control-plane": "controller-manager"}}}),
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "kruise-webhook-certs", "namespace": "kruise-system"},
            "data": {"ca-cert.pem": "a3J1aXNlJ3M=", "ca-key.pem": "a3J1aXNlJ3M=",
                "cert.pem": "a3J1aXNlJ3M=", "key.pem": "a3J1aXNlJ3M="}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"}, "data": {}}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "kruise-manager", "namespace": "kruise-system"},
            "spec": {"holderIdentity": "kruise-controller-manager-6b9f8c7d4-x2v7q_0c0e7f3a",
                "leaseDurationSeconds": 15, "acquireTime": now, "renewTime": now,
                "leaseTransitions": 0}}),
    ])?;
    plane.kubectl(
        &["apply", "--server-side", "--field-manager=helm", "-f", "-"],
        Some(&configurations),
    )?;
    Ok(())
}

/// Kruise's configurations as rendered with `PodWebhook=false`, through the recipe's Helm post-renderer
/// (`deploy/openkruise-side/post-renderer.sh`, with the kubectl of `KUBEBUILDER_ASSETS`).
fn post_render(rendered: &Path) -> Result<String, String> {
    let kubectl = envtest::assets()?.join("kubectl");
    let script = envtest::root()
        .join(OPENKRUISE_SIDE)
        .join("post-renderer.sh");
    let input =
        std::fs::File::open(rendered).map_err(|e| format!("{}: {e}", rendered.display()))?;
    let out = std::process::Command::new("sh")
        .arg(&script)
        .env("KUBECTL", &kubectl)
        .stdin(input)
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// The beside overlay as kustomize renders it.
fn render_overlay() -> Result<Vec<Value>, String> {
    envtest::kustomize::build(&envtest::root().join(OVERLAY))
}

/// Issue 38's acceptance on the v1.8.3 CRDs.
pub fn beside_openkruise_1_8_3(_: &Cluster) -> Outcome {
    let assets = envtest::assets()?;
    let started = Instant::now();
    let plane = ControlPlane::start(&assets)?;
    if !plane.has_controller_manager() {
        return Err("needs kube-controller-manager in KUBEBUILDER_ASSETS".into());
    }
    prepare_openkruise(&plane)?;
    let before = snapshot(&plane)?;
    let overlay = render_overlay()?;
    let rest: Vec<Value> = overlay
        .iter()
        .filter(|o| {
            ![
                "MutatingWebhookConfiguration",
                "ValidatingWebhookConfiguration",
                "Deployment",
            ]
            .iter()
            .any(|k| envtest::is_kind(o, k))
        })
        .cloned()
        .collect();
    for object in &rest {
        for (resource, namespace, name) in kruise_objects() {
            let kind_matches = object["kind"]
                .as_str()
                .is_some_and(|k| k.eq_ignore_ascii_case(resource));
            if kind_matches
                && object["metadata"]["name"] == name.as_str()
                && object["metadata"]["namespace"].as_str() == namespace
            {
                return Err(format!("the overlay renders kruise's {resource}/{name}"));
            }
        }
    }
    plane.apply(&rest)?;
    nodes(&plane)?;
    let cluster = Cluster::over(&plane, overlay)?;
    cluster.install_configurations(Mode::SelfManagedUrl)?;
    let mut replica = cluster.start(Mode::SelfManagedUrl, Ipv4Addr::LOCALHOST, "beside");
    replica.wait_ready(Duration::from_secs(30))?;
    let prepared = started.elapsed();
    let injected = sidecar_set_v1alpha1(&cluster)?;
    let budget = budget_v1alpha1(&cluster)?;
    let spread = spread_v1alpha1(&cluster)?;
    let log = envtest::server_log(&replica.log, 40);
    let reconciling = leading_kinds(&replica.log);
    replica.stop(STOP_WITHIN)?;
    let after = snapshot(&plane)?;
    let changed: Vec<&str> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b.1 != a.1)
        .map(|(b, _)| b.0.as_str())
        .collect();
    if !changed.is_empty() {
        return Err(format!(
            "kruise's objects changed: {changed:?}\nserver log:\n{log}"
        ));
    }
    // kruise-manager's SidecarSet, launch-priority and pod-readiness controllers run, not ours; the reporter of
    // pods that missed their sidecars does (it writes events only, docs/missed-sidecars.md §3).
    let wanted = [
        "MissedSidecars",
        "PodUnavailableBudget",
        "SidecarTerminator",
        "WorkloadSpread",
    ];
    if reconciling != wanted {
        return Err(format!(
            "controllers reconciling beside OpenKruise: {reconciling:?}, not {wanted:?}"
        ));
    }
    Ok(format!(
        "prepared and ready in {:.1} s; {injected}; {budget}; {spread}; {} objects of kruise's unchanged",
        prepared.as_secs_f64(),
        before.len()
    ))
}

/// Nodes in three zones, and the namespaces of the scenarios with their default ServiceAccount.
fn nodes(plane: &ControlPlane) -> Result<(), String> {
    let mut objects = Vec::new();
    // As many as the simulated kubelet binds pods to.
    for i in 0..12 {
        objects.push(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{i}"), "labels": {
                "kubernetes.io/hostname": format!("node-{i}"),
                "topology.kubernetes.io/zone": format!("zone-{}", i % 3)}}}));
    }
    for ns in ["beside-shop", "beside-pub", "beside-spread"] {
        objects.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        objects.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}}));
    }
    plane.apply(&objects).map(drop)
}

/// A `v1alpha1` SidecarSet (its `spec.namespace`, a field v1beta1 does not have) injects into a pod of its
/// namespace, not into one of another.
fn sidecar_set_v1alpha1(cluster: &Cluster) -> Result<String, String> {
    cluster.plane.apply(&[json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": "log-agent"},
        "spec": {"namespace": "beside-shop", "selector": {"matchLabels": {"app": "shop"}},
                 "containers": [{"name": "log-agent", "image": "log-agent:1"}]}})])?;
    let pod = |ns: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "shop-0", "namespace": ns, "labels": {"app": "shop"}},
            "spec": {"automountServiceAccountToken": false,
                     "containers": [{"name": "app", "image": "app:1"}]}})
    };
    wait_for("the v1alpha1 SidecarSet injects", ACT_WITHIN, || {
        cluster
            .plane
            .dry_run_shows(&pod("beside-shop"), "\"log-agent:1\"")
    })?;
    cluster
        .plane
        .apply(&[pod("beside-shop"), pod("beside-pub")])?;
    let injected = cluster.get("pod", Some("beside-shop"), "shop-0")?;
    let other = cluster.get("pod", Some("beside-pub"), "shop-0")?;
    let containers = |p: &Value| p["spec"]["containers"].as_array().map_or(0, Vec::len);
    if containers(&injected) != 2
        || injected["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"] != "log-agent"
    {
        return Err(format!("not injected: {}", injected["spec"]));
    }
    if containers(&other) != 1 {
        return Err(format!(
            "injected outside spec.namespace: {}",
            other["spec"]
        ));
    }
    Ok("a v1alpha1 SidecarSet injected".into())
}

/// A `v1alpha1` PodUnavailableBudget of 2 over a Deployment's pods gets its status from the beside server's
/// controller, and a drain's third eviction is refused.
fn budget_v1alpha1(cluster: &Cluster) -> Result<String, String> {
    let ns = "beside-pub";
    cluster.plane.apply(&[
        json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 2}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                             "containers": [{"name": "web", "image": "nginx:1.25"}]}}}}),
    ])?;
    let pods = cluster.run_pods(ns, "app=web", 6)?;
    wait_for(
        "the v1alpha1 PUB's status counts 6 available pods",
        ACT_WITHIN,
        || {
            let status = cluster.budget_status(ns, "web")?;
            (status["totalReplicas"] == 6
                && status["currentAvailable"] == 6
                && status["unavailableAllowed"] == 2)
                .then_some(())
                .ok_or_else(|| status.to_string())
        },
    )?;
    let stored = cluster.get(
        "podunavailablebudget.v1alpha1.policy.kruise.io",
        Some(ns),
        "web",
    )?;
    if stored["apiVersion"] != "policy.kruise.io/v1alpha1" {
        return Err(format!("read back as {}", stored["apiVersion"]));
    }
    let refusal = "admission webhook \"vpodeviction.kb.io\" denied the request: podunavailablebudget.policy.kruise.io \"web\" is forbidden: pub unavailable allowed is negative";
    let mut evicted = 0;
    for pod in &pods {
        match cluster
            .evict(ns, std::slice::from_ref(pod), false)?
            .remove(0)
        {
            Ok(()) => evicted += 1,
            Err((403, message)) if message == refusal => break,
            Err(other) => return Err(format!("evicting {pod}: {other:?}")),
        }
    }
    if evicted != 2 {
        return Err(format!(
            "a drain evicted {evicted} pods under a budget of 2"
        ));
    }
    Ok("a v1alpha1 PUB of 2 got its status and stopped the third eviction".into())
}

/// A `v1alpha1` WorkloadSpread (its `requiredNodeSelectorTerm`, v1beta1's `requiredNodeSelector`) spreads a
/// Deployment's pods: 2 in the capped subset, 3 in the other.
fn spread_v1alpha1(cluster: &Cluster) -> Result<String, String> {
    let ns = "beside-spread";
    cluster.plane.apply(&[json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {"name": "a", "maxReplicas": 2, "requiredNodeSelectorTerm": {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-0"]}]}},
                {"name": "b", "requiredNodeSelectorTerm": {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-1"]}]}}]}})])?;
    wait_for(
        "the v1alpha1 WorkloadSpread initialised by the controller",
        ACT_WITHIN,
        || {
            let status = cluster.get("workloadspread", Some(ns), "web")?["status"].clone();
            status["subsetStatuses"]
                .is_array()
                .then_some(())
                .ok_or_else(|| status.to_string())
        },
    )?;
    cluster
        .plane
        .apply(&[json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "web", "image": "nginx:1.25"}]}}}})])?;
    let placed = wait_for("pods placed a: 2, b: 3", ACT_WITHIN, || {
        let list = cluster.plane.kubectl(
            &["get", "pods", "-n", ns, "-l", "app=web", "-o", "json"],
            None,
        )?;
        let list: Value = serde_json::from_str(&list).map_err(|e| e.to_string())?;
        let mut counts = std::collections::BTreeMap::new();
        for pod in list["items"].as_array().into_iter().flatten() {
            let matched = pod["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]
                .as_str()
                .and_then(|a| serde_json::from_str::<Value>(a).ok());
            let subset = matched
                .and_then(|m| m["subset"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "none".into());
            let zone = pod["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                ["matchExpressions"][0]["values"][0]
                .as_str()
                .unwrap_or("none")
                .to_owned();
            *counts.entry((subset, zone)).or_insert(0usize) += 1;
        }
        let want = std::collections::BTreeMap::from([
            (("a".to_owned(), "zone-0".to_owned()), 2),
            (("b".to_owned(), "zone-1".to_owned()), 3),
        ]);
        (counts == want)
            .then_some(counts.clone())
            .ok_or_else(|| format!("{counts:?}"))
    })?;
    Ok(format!("a v1alpha1 WorkloadSpread placed {placed:?}"))
}

/// The controllers that said `leading: reconciling` in `log` (JSON lines), sorted.
fn leading_kinds(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut kinds: Vec<String> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["message"] == "leading: reconciling")
        .filter_map(|entry| entry["controller"].as_str().map(str::to_owned))
        .collect();
    kinds.sort();
    kinds
}
