//! The real-API-server tier (README, "Testing against a real API server"): etcd and kube-apiserver from
//! `KUBEBUILDER_ASSETS`, RBAC authorization on, `deploy/base` applied, the server binary run as the shipped
//! ServiceAccount in its own process, scenarios driven through the API as a user would.
//!
//! Without `KUBEBUILDER_ASSETS` (or with a binary missing) it prints one line saying it was skipped and why,
//! and passes. Its own harness (`harness = false`): one control plane for every scenario, the scenarios one
//! after the other (they share cluster-scoped objects: the webhook configurations, the Lease), a line per
//! scenario and `N passed, N failed` at the end. Arguments filter scenarios by name, as `cargo test` does.
//!
//! Scenarios (issue 36): a replica starts ready within 10 s while our two webhook configurations are
//! installed, ten starts in a row, in three modes (external certificates in URL mode, self-managed in URL
//! mode, self-managed with the configurations calling a Service the API server cannot reach); two replicas
//! started together; a replica started right after the other stopped (the Lease released, so it leads at
//! once). The cluster holds about what the issue's did: 12 Nodes, 170 pods, PUBs, WorkloadSpreads, CRRs and a
//! PersistentPodState.

mod envtest;

#[path = "real_apiserver/beside.rs"]
mod beside;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use envtest::{ControlPlane, Replica, ReplicaOptions};
use serde_json::{Value, json};

/// How long a start may take to `/readyz` 200 (issue 36).
const READY_WITHIN: Duration = Duration::from_secs(10);
/// Starts of each kind in a row (issue 36's acceptance).
const STARTS: usize = 10;
/// How long a replica may take to exit after SIGTERM.
const STOP_WITHIN: Duration = Duration::from_secs(25);

type Outcome = Result<String, String>;
/// A named scenario.
type Scenario = (&'static str, fn(&Cluster) -> Outcome);

fn main() {
    let assets = match envtest::assets() {
        Ok(dir) => dir,
        Err(why) => {
            println!("real-apiserver tier skipped: {why}");
            return;
        }
    };
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
    let started = Instant::now();
    let plane = match ControlPlane::start(&assets) {
        Ok(plane) => plane,
        Err(e) => {
            println!("control plane failed to start: {e}");
            println!("0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    println!(
        "control plane ready in {:.1} s at {}",
        started.elapsed().as_secs_f64(),
        plane.url
    );
    let cluster = match Cluster::install(&plane) {
        Ok(cluster) => cluster,
        Err(e) => {
            println!("installing deploy/base failed: {e}");
            println!("0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    let scenarios: Vec<Scenario> = vec![
        ("ready_external_certs_url_mode", |c| {
            c.readiness(Mode::ExternalUrl)
        }),
        ("ready_self_managed_url_mode", |c| {
            c.readiness(Mode::SelfManagedUrl)
        }),
        ("ready_self_managed_service_mode", |c| {
            c.readiness(Mode::SelfManagedService)
        }),
        ("unsynced_cache_is_named", |c| c.unsynced_cache_is_named()),
        ("sidecarset_in_place_update", |c| {
            c.sidecarset_in_place_update()
        }),
        ("sidecarset_hot_upgrade_flip", |c| c.hot_upgrade()),
        ("forbidden_pod_update_is_reported", |c| {
            c.forbidden_pod_update_is_reported()
        }),
        ("pub_with_a_deployment", |c| c.pub_with_a_deployment()),
        ("deletion_protection", |c| c.deletion_protection()),
        ("conversion_v1alpha1_v1beta1", |c| c.conversion()),
        ("lease_failover_and_release", |c| c.lease_failover()),
        ("sidecarset_injection_validation_status", |c| {
            c.sidecarset_lifecycle()
        }),
        ("workloadspread_with_a_deployment", |c| c.workloadspread()),
        ("job_sidecar_terminator_crr", |c| c.sidecar_terminator()),
        ("launch_priority_barrier_in_order", |c| c.launch_priority()),
        ("pod_readiness_gate_turns_ready", |c| c.pod_readiness()),
        ("persistent_pod_state_end_to_end", |c| {
            c.persistent_pod_state()
        }),
        ("container_recreate_request_labels", |c| {
            c.container_recreate_request()
        }),
        ("missed_sidecars_explained_and_reported", |c| {
            c.missed_sidecars()
        }),
        ("self_managed_certificates_and_rotation", |c| {
            c.certificate_rotation()
        }),
        ("crds_after_the_server_and_removed_while_it_runs", |c| {
            c.crds_follow()
        }),
        // On a control plane of its own, with OpenKruise 1.8.3's CRDs.
        ("beside_openkruise_1_8_3", beside::beside_openkruise_1_8_3),
        // Last: it leaves 10,000 pods behind (deleting them needs our pod webhook running).
        ("ready_at_scale", |c| c.ready_at_scale()),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, scenario) in scenarios {
        if !wanted(name) {
            continue;
        }
        let t = Instant::now();
        match scenario(&cluster) {
            Ok(detail) => {
                passed += 1;
                println!(
                    "test {name} ... ok ({:.1} s) {detail}",
                    t.elapsed().as_secs_f64()
                );
            }
            Err(e) => {
                failed += 1;
                println!(
                    "test {name} ... FAILED ({:.1} s)\n{e}",
                    t.elapsed().as_secs_f64()
                );
            }
        }
    }
    println!(
        "real-apiserver tier: {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
    println!("{passed} passed, {failed} failed");
    drop(cluster);
    drop(plane);
    if failed > 0 {
        std::process::exit(1);
    }
}

/// How the server gets its certificates and how the API server calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `--cert-mode=external` (a CA of the test's, as cert-manager's would be), the configurations pointing
    /// at `https://127.0.0.1:<port>` with that CA: installed before the server starts.
    ExternalUrl,
    /// Self-managed certificates, `WEBHOOK_HOST=127.0.0.1`: the server writes the caBundle and the URLs.
    SelfManagedUrl,
    /// Self-managed certificates, the configurations calling the Service `kruise-webhook-service`, which
    /// the API server here cannot reach: readiness must not depend on being called.
    SelfManagedService,
}

/// `deploy/base` installed on a control plane, and what the scenarios start servers with.
struct Cluster<'a> {
    plane: &'a ControlPlane,
    /// `deploy/base` rendered.
    base: Vec<Value>,
    /// The ServiceAccount's kubeconfig.
    kubeconfig: std::path::PathBuf,
    /// The HTTPS port every replica listens on (each on its own loopback address).
    port: u16,
    /// A directory of external certificates (`tls.crt`, `tls.key`, `ca.crt`) for 127.0.0.1.
    external_certs: std::path::PathBuf,
    /// Their CA.
    external_ca: String,
}

impl<'a> Cluster<'a> {
    /// Applies `deploy/base` but its webhook configurations and Deployment (the server runs here as a
    /// process), waits for the CRDs to be established, and seeds the cluster.
    fn install(plane: &'a ControlPlane) -> Result<Self, String> {
        let base = envtest::install_base(plane)?;
        seed(plane)?;
        let kubeconfig =
            plane.service_account_kubeconfig(envtest::NAMESPACE, envtest::SERVICE_ACCOUNT)?;
        let (external_certs, external_ca) = envtest::external_certs(plane.path())?;
        Ok(Self {
            plane,
            base,
            kubeconfig,
            port: envtest::free_port(Ipv4Addr::LOCALHOST),
            external_certs,
            external_ca,
        })
    }

    /// A cluster over `plane` whose server runs as `base` (an overlay's rendering) has it, installed by the
    /// caller.
    fn over(plane: &'a ControlPlane, base: Vec<Value>) -> Result<Self, String> {
        let kubeconfig =
            plane.service_account_kubeconfig(envtest::NAMESPACE, envtest::SERVICE_ACCOUNT)?;
        let (external_certs, external_ca) = envtest::external_certs(plane.path())?;
        Ok(Self {
            plane,
            base,
            kubeconfig,
            port: envtest::free_port(Ipv4Addr::LOCALHOST),
            external_certs,
            external_ca,
        })
    }

    fn deployment(&self) -> &Value {
        self.base
            .iter()
            .find(|o| envtest::is_kind(o, "Deployment"))
            .expect("deploy/base has a Deployment")
    }

    /// Installs both webhook configurations as `mode` has them before the server starts (replacing what
    /// an earlier scenario left).
    fn install_configurations(&self, mode: Mode) -> Result<(), String> {
        let mut configurations = envtest::webhook_configurations(&self.base);
        for c in &configurations {
            let kind = c["kind"].as_str().unwrap_or_default().to_lowercase();
            let name = c["metadata"]["name"].as_str().unwrap_or_default();
            self.plane.kubectl(
                &["delete", &kind, name, "--ignore-not-found", "--wait"],
                None,
            )?;
        }
        if mode == Mode::ExternalUrl {
            for c in &mut configurations {
                envtest::to_url(c, "127.0.0.1", self.port, &self.external_ca);
            }
            // The CRDs' conversion webhooks too, as cert-manager's CA injector and a URL-mode install do
            // (a merge patch: a Service another scenario's server wrote there is removed).
            use base64::Engine;
            let ca = base64::engine::general_purpose::STANDARD.encode(&self.external_ca);
            for crd in self
                .base
                .iter()
                .filter(|o| envtest::is_kind(o, "CustomResourceDefinition"))
            {
                let name = crd["metadata"]["name"].as_str().unwrap_or_default();
                let patch = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1", "v1beta1"],
                    "clientConfig": {"service": null, "caBundle": ca,
                        "url": format!("https://127.0.0.1:{}/convert", self.port)}}}}});
                self.plane.kubectl(
                    &[
                        "patch",
                        "crd",
                        name,
                        "--type=merge",
                        "-p",
                        &patch.to_string(),
                    ],
                    None,
                )?;
            }
        }
        self.plane.apply(&configurations).map(drop)
    }

    fn options(&self, mode: Mode, ip: Ipv4Addr) -> ReplicaOptions {
        ReplicaOptions {
            ip,
            port: self.port,
            webhook_host: (mode != Mode::SelfManagedService).then(|| "127.0.0.1".to_owned()),
            external_certs: (mode == Mode::ExternalUrl).then(|| self.external_certs.clone()),
            extra_args: Vec::new(),
        }
    }

    fn start(&self, mode: Mode, ip: Ipv4Addr, name: &str) -> Replica {
        Replica::start(
            self.deployment(),
            &self.kubeconfig,
            &self.options(mode, ip),
            self.plane.path(),
            name,
        )
    }

    /// Issue 36: with both configurations installed, [`STARTS`] starts in a row of one replica, of two
    /// together, and of one right after the other stopped, each ready within [`READY_WITHIN`].
    fn readiness(&self, mode: Mode) -> Outcome {
        self.install_configurations(mode)?;
        let (a, b) = (Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 2));
        let mut single = Vec::new();
        for i in 0..STARTS {
            let mut replica = self.start(mode, a, &format!("{mode:?}-single-{i}"));
            single.push(
                replica
                    .wait_ready(READY_WITHIN)
                    .map_err(|e| format!("{mode:?}: start {} of one replica: {e}", i + 1))?,
            );
            replica.stop(STOP_WITHIN)?;
        }
        let mut pairs = Vec::new();
        for i in 0..STARTS {
            let mut first = self.start(mode, a, &format!("{mode:?}-pair-{i}-a"));
            let mut second = self.start(mode, b, &format!("{mode:?}-pair-{i}-b"));
            for (which, replica) in [("first", &mut first), ("second", &mut second)] {
                pairs.push(replica.wait_ready(READY_WITHIN).map_err(|e| {
                    format!(
                        "{mode:?}: start {} of two replicas, the {which}: {e}",
                        i + 1
                    )
                })?);
            }
            first.stop(STOP_WITHIN)?;
            second.stop(STOP_WITHIN)?;
        }
        let mut handovers = Vec::new();
        let mut previous = self.start(mode, a, &format!("{mode:?}-handover-first"));
        previous
            .wait_ready(READY_WITHIN)
            .map_err(|e| format!("{mode:?}: the first replica of the handovers: {e}"))?;
        for i in 0..STARTS {
            // The leader stops (releasing the Lease); the next replica starts at once and leads at once.
            previous.stop(STOP_WITHIN)?;
            let ip = if i % 2 == 0 { b } else { a };
            let mut next = self.start(mode, ip, &format!("{mode:?}-handover-{i}"));
            handovers.push(next.wait_ready(READY_WITHIN).map_err(|e| {
                format!(
                    "{mode:?}: start {} right after the other replica stopped: {e}",
                    i + 1
                )
            })?);
            previous = next;
        }
        previous.stop(STOP_WITHIN)?;
        Ok(format!(
            "ready after (max) one replica {}, two replicas {}, after a stop {}",
            seconds(&single),
            seconds(&pairs),
            seconds(&handovers)
        ))
    }
}

impl Cluster<'_> {
    /// Issue 36: a store that cannot be listed (its identity lacks `list` on PersistentVolumeClaims) keeps
    /// the replica unready, and says so: `/readyz?verbose` names it with the API server's 403, the other
    /// stores pass, and `informer_synced` is 0 for it alone.
    fn unsynced_cache_is_named(&self) -> Outcome {
        self.install_configurations(Mode::ExternalUrl)?;
        let name = "kruise-webhook-no-claims";
        self.plane.apply(&envtest::identity_without(
            &self.base,
            name,
            "persistentvolumeclaims",
        ))?;
        let kubeconfig = self
            .plane
            .service_account_kubeconfig(envtest::NAMESPACE, name)?;
        let replica = Replica::start(
            self.deployment(),
            &kubeconfig,
            &self.options(Mode::ExternalUrl, Ipv4Addr::LOCALHOST),
            self.plane.path(),
            "no-claims",
        );
        let wanted = "[-]informer-cache/persistentvolumeclaims failed: not listed yet, last error";
        let deadline = Instant::now() + READY_WITHIN;
        let body = loop {
            let (code, body) = replica.readyz().unwrap_or_default();
            if body.contains(wanted) {
                if code != 500 {
                    return Err(format!(
                        "/readyz answered {code} with an unsynced cache:\n{body}"
                    ));
                }
                break body;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "/readyz?verbose never named the claims' cache:\n{body}\nlog:\n{}",
                    envtest::server_log(&replica.log, 20)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let line = body
            .lines()
            .find(|l| l.contains(wanted))
            .unwrap_or_default()
            .to_owned();
        if !line.contains("forbidden") {
            return Err(format!("the claims' line does not give the 403: {line}"));
        }
        for ok in [
            "[-]informer-caches-synced failed",
            "[+]informer-cache/pods ok",
            "[+]informer-cache/namespaces ok",
        ] {
            if !body.contains(ok) {
                return Err(format!("/readyz?verbose lacks {ok:?}:\n{body}"));
            }
        }
        let (_, metrics) = envtest::http_get(replica.metrics, "/metrics").unwrap_or_default();
        for sample in [
            "informer_synced{resource=\"persistentvolumeclaims\"} 0",
            "informer_synced{resource=\"pods\"} 1",
        ] {
            if !metrics.contains(sample) {
                return Err(format!("/metrics lacks {sample}"));
            }
        }
        replica.stop(STOP_WITHIN)?;
        Ok(line)
    }
}

/// How long a controller may take to act on a change.
const ACT_WITHIN: Duration = Duration::from_secs(20);

/// Polls `probe` every 100 ms until it gives a value, up to `within`.
///
/// # Errors
/// `what` and the last thing `probe` said, when it never gave one.
fn wait_for<T>(
    what: &str,
    within: Duration,
    mut probe: impl FnMut() -> Result<T, String>,
) -> Result<T, String> {
    let deadline = Instant::now() + within;
    loop {
        match probe() {
            Ok(value) => return Ok(value),
            Err(last) if Instant::now() > deadline => {
                return Err(format!("{what}: not within {within:?}; last: {last}"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

impl Cluster<'_> {
    /// An object as the admin reads it.
    fn get(&self, resource: &str, namespace: Option<&str>, name: &str) -> Result<Value, String> {
        let mut args = vec!["get", resource, name, "-o", "json"];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        let text = self.plane.kubectl(&args, None)?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    /// A running replica (external certificates, URL mode) as `identity` (the shipped ServiceAccount when
    /// `None`), ready.
    fn serving(&self, identity: Option<&str>, name: &str) -> Result<Replica, String> {
        self.install_configurations(Mode::ExternalUrl)?;
        let kubeconfig = match identity {
            None => self.kubeconfig.clone(),
            Some(sa) => self
                .plane
                .service_account_kubeconfig(envtest::NAMESPACE, sa)?,
        };
        let mut replica = Replica::start(
            self.deployment(),
            &kubeconfig,
            &self.options(Mode::ExternalUrl, Ipv4Addr::LOCALHOST),
            self.plane.path(),
            name,
        );
        replica.wait_ready(READY_WITHIN)?;
        Ok(replica)
    }

    /// A SidecarSet `name` injecting `agent:<tag>` as container `agent` into pods labelled `app=<name>` of
    /// `shop`, rolled out in place one pod at a time; and a pod of it created, injected, and reported
    /// running and ready through the status subresource as a kubelet would.
    fn sidecar_set_with_a_running_pod(&self, name: &str) -> Result<(), String> {
        self.plane.apply(&[json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}},
                     "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1},
                     "containers": [{"name": "agent", "image": "agent:1"}]},
        })])?;
        // The pod webhook's cache has the SidecarSet once a dry-run create shows the injection.
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{name}-0"), "namespace": "shop", "labels": {"app": name}},
            "spec": {"nodeName": "node-1", "automountServiceAccountToken": false,
                     "containers": [{"name": "app", "image": "app:1"}]},
        });
        wait_for("the SidecarSet injects at pod create", ACT_WITHIN, || {
            self.plane.dry_run_shows(&pod, "\"agent:1\"")
        })?;
        self.plane
            .kubectl(&["create", "-f", "-"], Some(&pod.to_string()))?;
        self.plane.kubelet("shop", &format!("app={name}"))?;
        Ok(())
    }

    /// Issue 37: the SidecarSet in-place update through a real API server with RBAC, as the shipped
    /// ServiceAccount: a new sidecar image reaches a running pod (its PUT is granted), and the SidecarSet's
    /// status counts it.
    fn sidecarset_in_place_update(&self) -> Outcome {
        let replica = self.serving(None, "in-place")?;
        let name = "inplace";
        self.sidecar_set_with_a_running_pod(name)?;
        let t = Instant::now();
        self.set_sidecar_image(name, "agent:2")?;
        let pod = format!("{name}-0");
        wait_for(
            "the pod's sidecar updated in place to agent:2",
            ACT_WITHIN,
            || {
                let image = self.image_of("shop", &pod, "agent")?;
                (image == "agent:2")
                    .then_some(())
                    .ok_or_else(|| format!("agent image {image:?}"))
            },
        )
        .map_err(|e| format!("{e}\n{}", envtest::server_log(&replica.log, 20)))?;
        let updated = t.elapsed();
        wait_for(
            "the SidecarSet's status counts the updated pod",
            ACT_WITHIN,
            || {
                let set = self.get("sidecarset", None, name)?;
                let status = &set["status"];
                (status["matchedPods"] == 1 && status["updatedPods"] == 1)
                    .then_some(())
                    .ok_or_else(|| status.to_string())
            },
        )?;
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "sidecar image updated in place {:.1} s after the SidecarSet changed",
            updated.as_secs_f64()
        ))
    }

    /// Issue 37: an identity without `update` on pods (the shipped RBAC lacked it) makes the in-place update
    /// fail, and the failure says so: never read as a PodUnavailableBudget refusal, logged at WARN with the
    /// API server's message, counted in `controller_errors_total{controller="SidecarSet",reason="Forbidden"}`,
    /// and told on the SidecarSet as a Warning event.
    fn forbidden_pod_update_is_reported(&self) -> Outcome {
        let identity = "kruise-webhook-no-pod-update";
        self.plane.apply(&envtest::identity_without_verb(
            &self.base, identity, "pods", "update",
        ))?;
        let replica = self.serving(Some(identity), "no-pod-update")?;
        let name = "forbidden";
        self.sidecar_set_with_a_running_pod(name)?;
        self.set_sidecar_image(name, "agent:2")?;
        let event = wait_for(
            "a Warning event ReconcileFailed on the SidecarSet",
            ACT_WITHIN,
            || {
                let events = self.plane.kubectl(
                    &[
                        "get",
                        "events",
                        "-n",
                        "default",
                        "-o",
                        "json",
                        "--field-selector",
                        &format!("involvedObject.name={name},reason=ReconcileFailed"),
                    ],
                    None,
                )?;
                let events: Value = serde_json::from_str(&events).map_err(|e| e.to_string())?;
                events["items"]
                    .as_array()
                    .and_then(|items| items.first())
                    .and_then(|e| e["message"].as_str().map(str::to_owned))
                    .ok_or_else(|| "no event".to_owned())
            },
        )?;
        for wanted in [
            "forbidden",
            "cannot update resource \"pods\"",
            &format!("{name}-0"),
        ] {
            if !event.contains(wanted) {
                return Err(format!("the event does not say {wanted:?}: {event}"));
            }
        }
        let log = std::fs::read_to_string(&replica.log).unwrap_or_default();
        if log.contains("refused by a PodUnavailableBudget") {
            return Err("the RBAC 403 was read as a PodUnavailableBudget refusal".into());
        }
        if !log.lines().any(|l| {
            l.contains("\"level\":\"WARN\"")
                && l.contains("reconcile failed")
                && l.contains("is forbidden")
        }) {
            return Err(format!(
                "no WARN line with the API server's message:\n{}",
                envtest::server_log(&replica.log, 10)
            ));
        }
        let (_, metrics) = envtest::http_get(replica.metrics, "/metrics").unwrap_or_default();
        let sample = "controller_errors_total{controller=\"SidecarSet\",reason=\"Forbidden\"}";
        if !metrics.lines().any(|l| l.starts_with(sample)) {
            return Err(format!("/metrics lacks {sample}"));
        }
        replica.stop(STOP_WITHIN)?;
        Ok(format!("event: {event}"))
    }
}

/// An eviction's outcome: allowed (201), or the API server's refusal (its code and message).
type Evicted = Result<(), (u16, String)>;

impl Cluster<'_> {
    /// Evicts `pods` of `namespace` all at once (one request each, concurrently), as the admin.
    fn evict(
        &self,
        namespace: &str,
        pods: &[String],
        dry_run: bool,
    ) -> Result<Vec<Evicted>, String> {
        use futures::StreamExt;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let client = self.plane.admin_client().await?;
            let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
                kube::Api::namespaced(client, namespace);
            // A dry run as `?dryRun=All`, which the API server copies into the Eviction's deleteOptions
            // (kube's EvictParams.delete_options is sent as `delete_options`, a field the API server
            // ignores).
            let params = kube::api::EvictParams {
                post_options: kube::api::PostParams {
                    dry_run,
                    ..kube::api::PostParams::default()
                },
                ..kube::api::EvictParams::default()
            };
            Ok(futures::stream::iter(pods)
                .map(|pod| {
                    let (api, params) = (&api, &params);
                    async move {
                        match api.evict(pod, params).await {
                            Ok(_) => Ok(()),
                            Err(kube::Error::Api(s)) => Err((s.code, s.message)),
                            Err(e) => Err((0, e.to_string())),
                        }
                    }
                })
                .buffer_unordered(pods.len().max(1))
                .collect()
                .await)
        })
    }

    /// The PUB's status.
    fn budget_status(&self, namespace: &str, name: &str) -> Result<Value, String> {
        Ok(self.get("podunavailablebudget", Some(namespace), name)?["status"].clone())
    }

    /// Runs pods of `namespace` labelled `selector` as a kubelet would until `count` run.
    fn run_pods(
        &self,
        namespace: &str,
        selector: &str,
        count: usize,
    ) -> Result<Vec<String>, String> {
        wait_for(
            &format!("{count} pods {selector} running"),
            ACT_WITHIN,
            || {
                let names = self.plane.kubelet(namespace, selector)?;
                (names.len() >= count)
                    .then_some(names.clone())
                    .ok_or_else(|| format!("{} pods", names.len()))
            },
        )
    }

    /// Issue 37: a PodUnavailableBudget over a Deployment's pods (kube-controller-manager creates them, a
    /// simulated kubelet runs them): the pods are stamped with it, its status written; a dry-run eviction
    /// spends nothing; 20 concurrent evictions against a budget of 2 allow exactly 2; once the budget is back,
    /// a drain-style loop (evict one after the other until refused) stops at it.
    fn pub_with_a_deployment(&self) -> Outcome {
        if !self.plane.has_controller_manager() {
            return Err("needs kube-controller-manager in KUBEBUILDER_ASSETS".into());
        }
        let replica = self.serving(None, "pub")?;
        let ns = "pubtest";
        self.plane.apply(&[
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 2}}),
        ])?;
        self.plane.apply(&[json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 20, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                             "containers": [{"name": "web", "image": "nginx:1.25"}]}}}})])?;
        let pods = self.run_pods(ns, "app=web", 20)?;
        let status = wait_for(
            "the PUB's status counts 20 available pods",
            ACT_WITHIN,
            || {
                let status = self.budget_status(ns, "web")?;
                (status["totalReplicas"] == 20
                    && status["currentAvailable"] == 20
                    && status["desiredAvailable"] == 18
                    && status["unavailableAllowed"] == 2)
                    .then(|| status.clone())
                    .ok_or_else(|| status.to_string())
            },
        )
        .map_err(|e| format!("{e}\n{}", envtest::server_log(&replica.log, 10)))?;
        let pod = self.get("pod", Some(ns), &pods[0])?;
        if pod["metadata"]["annotations"]["pub.kruise.io/related-pub"] != "web" {
            return Err(format!("pod not stamped: {}", pod["metadata"]));
        }
        // A dry run is allowed and spends nothing.
        let dry = self.evict(ns, &pods[..1], true)?;
        if dry != [Ok(())] {
            return Err(format!("dry-run eviction: {dry:?}"));
        }
        let after_dry = self.budget_status(ns, "web")?;
        if after_dry["unavailableAllowed"] != 2
            || !after_dry["disruptedPods"]
                .as_object()
                .is_none_or(|m| m.is_empty())
        {
            return Err(format!("a dry run spent budget: {after_dry}"));
        }
        // 20 at once against a budget of 2.
        let outcomes = self.evict(ns, &pods, false)?;
        let allowed = outcomes.iter().filter(|o| o.is_ok()).count();
        let refusal = "admission webhook \"vpodeviction.kb.io\" denied the request: podunavailablebudget.policy.kruise.io \"web\" is forbidden: pub unavailable allowed is negative";
        let odd: Vec<&Evicted> = outcomes
            .iter()
            .filter(|o| matches!(o, Err((code, message)) if *code != 403 || message != refusal))
            .collect();
        if allowed != 2 || !odd.is_empty() {
            return Err(format!(
                "{allowed} of 20 concurrent evictions allowed; other refusals: {odd:?}"
            ));
        }
        // Spent: the 2 evicted pods are recorded as disrupted until the controller sees them gone.
        let spent = self.budget_status(ns, "web")?;
        let disrupted = spent["disruptedPods"].as_object().map_or(0, |m| m.len());
        let gone = 20 - spent["currentAvailable"].as_i64().unwrap_or(20);
        if spent["unavailableAllowed"] != 0 || disrupted.max(gone as usize) != 2 {
            return Err(format!("the PUB does not record the 2 evictions: {spent}"));
        }
        // The evicted pods go (no kubelet here to finish their deletion: forced), their replacements run,
        // and the budget comes back.
        for pod in self.plane.kubectl(&["get", "pods", "-n", ns, "-o", "jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name} {end}"], None)?.split_whitespace() {
            self.plane.kubectl(&["delete", "pod", pod, "-n", ns, "--grace-period=0", "--force"], None)?;
        }
        let pods = self.run_pods(ns, "app=web", 20)?;
        wait_for("the budget back at 2", ACT_WITHIN, || {
            let _ = self.plane.kubelet(ns, "app=web")?;
            let status = self.budget_status(ns, "web")?;
            (status["unavailableAllowed"] == 2)
                .then_some(())
                .ok_or_else(|| status.to_string())
        })?;
        // kubectl drain's loop: one eviction after the other, stopping at the first refusal.
        let mut drained = 0;
        for pod in &pods {
            match self.evict(ns, std::slice::from_ref(pod), false)?.remove(0) {
                Ok(()) => drained += 1,
                Err((403, message)) if message == refusal => break,
                Err(other) => return Err(format!("evicting {pod}: {other:?}")),
            }
        }
        if drained != 2 {
            return Err(format!("the drain loop evicted {drained} pods, not 2"));
        }
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "status {}; 2 of 20 concurrent evictions allowed; the drain loop stopped after 2",
            json!({"total": status["totalReplicas"], "allowed": status["unavailableAllowed"]})
        ))
    }
}

impl Cluster<'_> {
    /// `kubectl delete` of `what`, which our webhook `webhook` must refuse with `message`.
    fn refused_deletion(&self, what: &[&str], webhook: &str, message: &str) -> Result<(), String> {
        let mut args = vec!["delete", "--wait=false"];
        args.extend(what);
        match self.plane.kubectl(&args, None) {
            Ok(out) => Err(format!(
                "kubectl delete {} was allowed: {out}",
                what.join(" ")
            )),
            Err(e)
                if e.contains(&format!(
                    "admission webhook \"{webhook}\" denied the request: {message}"
                )) =>
            {
                Ok(())
            }
            Err(e) => Err(format!(
                "kubectl delete {}: not the refusal expected: {e}",
                what.join(" ")
            )),
        }
    }

    /// Issue 37: deletion protection through the API server (spec/deletion-protection.md §9 scenarios 2,
    /// 3, 9, 10, 14): a namespace labelled Always, a Cascading one with a running pod, a Cascading Deployment
    /// with replicas (allowed once scaled to zero), a CRD labelled Always; the metrics count by the admin's
    /// name.
    fn deletion_protection(&self) -> Outcome {
        let replica = self.serving(None, "deletion-protection")?;
        let label = "policy.kruise.io/delete-protection";
        self.plane.apply(&[
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "dp-always", "labels": {label: "Always"}}}),
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "dp-cascading", "labels": {label: "Cascading"}}}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "default", "namespace": "dp-cascading"}}),
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com", "labels": {label: "Always"}},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        ])?;
        let always = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always";
        self.refused_deletion(&["namespace", "dp-always"], "vnamespace.kb.io", always)?;
        self.plane.apply(&[json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1", "namespace": "dp-cascading", "labels": {"app": "p1"}},
            "spec": {"automountServiceAccountToken": false, "containers": [{"name": "app", "image": "app:1"}]}})])?;
        self.run_pods("dp-cascading", "app=p1", 1)?;
        self.refused_deletion(
            &["namespace", "dp-cascading"],
            "vnamespace.kb.io",
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active pods 1>0",
        )?;
        self.plane
            .apply(&[json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d2", "namespace": "dp-cascading", "labels": {label: "Cascading"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d2"}},
                "template": {"metadata": {"labels": {"app": "d2"}},
                    "spec": {"containers": [{"name": "app", "image": "app:1"}]}}}})])?;
        self.refused_deletion(
            &["deployment", "d2", "-n", "dp-cascading"],
            "vbuiltindeployment.kb.io",
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 3>0",
        )?;
        self.plane.kubectl(
            &[
                "scale",
                "deployment",
                "d2",
                "-n",
                "dp-cascading",
                "--replicas=0",
            ],
            None,
        )?;
        self.plane
            .kubectl(&["delete", "deployment", "d2", "-n", "dp-cascading"], None)
            .map_err(|e| format!("a Cascading Deployment scaled to zero: {e}"))?;
        self.refused_deletion(
            &["crd", "widgets.example.com"],
            "vcustomresourcedefinition.kb.io",
            always,
        )?;
        // A Kruise CRD labelled Cascading while a custom resource of it lives (the seeded PersistentPodState
        // shop/db): the live LIST of its resources counts it.
        self.plane.kubectl(
            &[
                "label",
                "crd",
                "persistentpodstates.apps.kruise.io",
                &format!("{label}=Cascading"),
            ],
            None,
        )?;
        let cascading = self.refused_deletion(
            &["crd", "persistentpodstates.apps.kruise.io"],
            "vcustomresourcedefinition.kb.io",
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active CRs 1>0",
        );
        self.plane.kubectl(
            &[
                "label",
                "crd",
                "persistentpodstates.apps.kruise.io",
                &format!("{label}-"),
            ],
            None,
        )?;
        cascading?;
        // Counted (at least once: the API server may call a webhook again for one request).
        let (_, metrics) = envtest::http_get(replica.metrics, "/metrics").unwrap_or_default();
        for series in [
            "namespace_deletion_protection{name=\"dp-always\",username=\"admin\"} ",
            "workload_deletion_protection{kind_namespace_name=\"Deployment_dp-cascading_d2\",username=\"admin\"} ",
            "crd_deletion_protection{name=\"widgets.example.com\",username=\"admin\"} ",
        ] {
            let counted = metrics.lines().any(|l| {
                l.strip_prefix(series)
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .is_some_and(|v| v >= 1.0)
            });
            if !counted {
                return Err(format!("/metrics lacks {series}"));
            }
        }
        // Unprotected again, so that nothing is left undeletable.
        for (kind, name) in [
            ("namespace", "dp-always"),
            ("namespace", "dp-cascading"),
            ("crd", "widgets.example.com"),
        ] {
            self.plane
                .kubectl(&["label", kind, name, &format!("{label}-")], None)?;
        }
        replica.stop(STOP_WITHIN)?;
        Ok("namespace Always, namespace Cascading with a pod, Deployment Cascading with replicas, CRD Always, CRD Cascading with a live CR refused; scaled to zero allowed".into())
    }

    /// Issue 37: `/convert` through the API server: a SidecarSet created as `v1alpha1` is stored as
    /// `v1beta1` (the storage version) and read back in both.
    fn conversion(&self) -> Outcome {
        let replica = self.serving(None, "convert")?;
        self.plane.kubectl(
            &["create", "-f", "-"],
            Some(
                &json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "converted"},
            "spec": {"selector": {"matchLabels": {"app": "converted"}},
                     "containers": [{"name": "agent", "image": "agent:1"}]}})
                .to_string(),
            ),
        )?;
        let beta = self.get("sidecarsets.v1beta1.apps.kruise.io", None, "converted")?;
        let alpha = self.get("sidecarsets.v1alpha1.apps.kruise.io", None, "converted")?;
        if beta["apiVersion"] != "apps.kruise.io/v1beta1"
            || alpha["apiVersion"] != "apps.kruise.io/v1alpha1"
        {
            return Err(format!(
                "read back as {} and {}",
                beta["apiVersion"], alpha["apiVersion"]
            ));
        }
        if alpha["spec"]["containers"][0]["image"] != "agent:1"
            || beta["spec"]["containers"][0]["image"] != "agent:1"
        {
            return Err(format!(
                "the containers did not survive the conversion: {alpha} / {beta}"
            ));
        }
        let (_, metrics) = envtest::http_get(replica.metrics, "/metrics").unwrap_or_default();
        if !metrics.lines().any(|l| {
            l.starts_with(
                "controller_runtime_webhook_requests_total{webhook=\"/convert\",code=\"200\"}",
            )
        }) {
            return Err("no /convert request counted".into());
        }
        self.plane
            .kubectl(&["delete", "sidecarset", "converted"], None)?;
        replica.stop(STOP_WITHIN)?;
        Ok("v1alpha1 created, v1beta1 stored, both read back".into())
    }

    /// The holder of the leader Lease.
    fn lease_holder(&self) -> Result<String, String> {
        let lease = self.get("lease", Some(envtest::NAMESPACE), "kruise-manager")?;
        Ok(lease["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// Issue 37: two replicas share the Lease `kruise-system/kruise-manager`: one leads, the other does
    /// not; SIGTERM on the leader releases it and the other leads within a retry period or two (not the
    /// 15 s lease duration).
    fn lease_failover(&self) -> Outcome {
        let is_leader = |replica: &Replica| {
            let (_, metrics) = envtest::http_get(replica.metrics, "/metrics").unwrap_or_default();
            metrics.lines().any(|l| l == "kruise_manager_is_leader 1")
        };
        let first = self.serving(None, "lease-first")?;
        wait_for("the first replica leads", ACT_WITHIN, || {
            is_leader(&first)
                .then_some(())
                .ok_or_else(|| "not leading".to_owned())
        })?;
        let holder = self.lease_holder()?;
        let mut second = Replica::start(
            self.deployment(),
            &self.kubeconfig,
            &self.options(Mode::ExternalUrl, Ipv4Addr::new(127, 0, 0, 2)),
            self.plane.path(),
            "lease-second",
        );
        second.wait_ready(READY_WITHIN)?;
        std::thread::sleep(Duration::from_secs(3));
        if is_leader(&second) || self.lease_holder()? != holder {
            return Err("the second replica took the Lease from a live leader".into());
        }
        let stopped = Instant::now();
        first.stop(STOP_WITHIN)?;
        let released = self.lease_holder()?;
        wait_for("the second replica leads", Duration::from_secs(8), || {
            is_leader(&second)
                .then_some(())
                .ok_or_else(|| "not leading".to_owned())
        })?;
        let took = stopped.elapsed();
        let now = self.lease_holder()?;
        if now == holder || now.is_empty() {
            return Err(format!("the Lease is held by {now:?} after the failover"));
        }
        second.stop(STOP_WITHIN)?;
        Ok(format!(
            "released on SIGTERM (holder {released:?} right after), the other replica led {:.1} s after",
            took.as_secs_f64()
        ))
    }
}

impl Cluster<'_> {
    /// Issue 37: a SidecarSet through the API server: an invalid one refused by `vsidecarset.kb.io`; a
    /// valid one defaulted and hashed by `msidecarset.kb.io`, its ControllerRevision written in
    /// kruise-system, pods injected at create (container, hash and injected-list annotations), and its
    /// status counting them.
    fn sidecarset_lifecycle(&self) -> Outcome {
        let replica = self.serving(None, "sidecarset")?;
        let invalid = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "invalid"},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "containers": [{"name": "a", "image": "a:1"}, {"name": "a", "image": "a:2"}]}});
        match self
            .plane
            .kubectl(&["create", "-f", "-"], Some(&invalid.to_string()))
        {
            Ok(_) => return Err("a SidecarSet with two containers named a was created".into()),
            Err(e) if e.contains("admission webhook \"vsidecarset.kb.io\" denied the request") => {}
            Err(e) => return Err(format!("not refused by vsidecarset.kb.io: {e}")),
        }
        let name = "logging";
        self.plane.apply(&[
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "logged"}},
                     "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}},
                     "containers": [{"name": "log-agent", "image": "agent:1"}]}}),
        ])?;
        let set = self.get("sidecarset", None, name)?;
        let hash = set["metadata"]["annotations"]["kruise.io/sidecarset-hash"].clone();
        if !hash.is_string() || set["spec"]["updateStrategy"]["type"].is_null() {
            return Err(format!("not defaulted and hashed: {}", set["metadata"]));
        }
        let revision = wait_for(
            "its ControllerRevision in kruise-system",
            ACT_WITHIN,
            || {
                let list = self.plane.kubectl(
                    &[
                        "get",
                        "controllerrevisions",
                        "-n",
                        envtest::NAMESPACE,
                        "-l",
                        &format!("kruise.io/sidecarset-name={name}"),
                        "-o",
                        "json",
                    ],
                    None,
                )?;
                let list: Value = serde_json::from_str(&list).map_err(|e| e.to_string())?;
                list["items"]
                    .as_array()
                    .and_then(|i| i.first())
                    .map(|r| {
                        r["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned()
                    })
                    .ok_or_else(|| "none".to_owned())
            },
        )?;
        let pods: Vec<Value> = (0..3)
            .map(|i| json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("logged-{i}"), "namespace": "shop", "labels": {"app": "logged"}},
                "spec": {"automountServiceAccountToken": false, "containers": [{"name": "app", "image": "app:1"}]}}))
            .collect();
        wait_for(
            "the pod webhook's cache has the SidecarSet",
            ACT_WITHIN,
            || self.plane.dry_run_shows(&pods[0], "log-agent"),
        )?;
        for pod in &pods {
            self.plane
                .kubectl(&["create", "-f", "-"], Some(&pod.to_string()))?;
        }
        let pod = self.get("pod", Some("shop"), "logged-0")?;
        let containers: Vec<&str> = pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        let annotations = &pod["metadata"]["annotations"];
        if !containers.contains(&"log-agent")
            || annotations["kruise.io/sidecarset-injected-list"] != name
            || !annotations["kruise.io/sidecarset-hash"]
                .as_str()
                .is_some_and(|h| h.contains(name))
        {
            return Err(format!(
                "not injected: containers {containers:?}, annotations {annotations}"
            ));
        }
        self.run_pods("shop", "app=logged", 3)?;
        wait_for(
            "the SidecarSet's status counts 3 ready pods",
            ACT_WITHIN,
            || {
                let status = self.get("sidecarset", None, name)?["status"].clone();
                (status["matchedPods"] == 3
                    && status["updatedPods"] == 3
                    && status["readyPods"] == 3)
                    .then_some(())
                    .ok_or_else(|| status.to_string())
            },
        )?;
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "invalid refused; revision {revision}; 3 pods injected and counted"
        ))
    }

    /// Issue 37: a WorkloadSpread over a Deployment's pods (kube-controller-manager creates them): subset
    /// `a` takes 2 (its maxReplicas), `b` the rest, each pod carrying its subset and node affinity; the
    /// controller's status counts them; after a scale-down the accounting follows.
    fn workloadspread(&self) -> Outcome {
        if !self.plane.has_controller_manager() {
            return Err("needs kube-controller-manager in KUBEBUILDER_ASSETS".into());
        }
        let replica = self.serving(None, "workloadspread")?;
        let ns = "spread";
        self.plane.apply(&[
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "subsets": [
                        {"name": "a", "maxReplicas": 2, "requiredNodeSelector": {"matchExpressions": [
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-0"]}]}},
                        {"name": "b", "requiredNodeSelector": {"matchExpressions": [
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-1"]}]}}]}}),
        ])?;
        // The pod webhook's cache must have the WorkloadSpread before the Deployment's pods are created.
        wait_for(
            "the WorkloadSpread initialised by the controller",
            ACT_WITHIN,
            || {
                let status = self.get("workloadspread", Some(ns), "web")?["status"].clone();
                status["subsetStatuses"]
                    .is_array()
                    .then_some(())
                    .ok_or_else(|| status.to_string())
            },
        )?;
        self.plane.apply(&[json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                             "containers": [{"name": "web", "image": "nginx:1.25"}]}}}})])?;
        let subsets = |want: &[(&str, usize)]| -> Result<(), String> {
            wait_for(&format!("pods placed {want:?}"), ACT_WITHIN, || {
                let list = self.plane.kubectl(
                    &["get", "pods", "-n", ns, "-l", "app=web", "-o", "json"],
                    None,
                )?;
                let list: Value = serde_json::from_str(&list).map_err(|e| e.to_string())?;
                let mut counts = std::collections::BTreeMap::new();
                for pod in list["items"].as_array().into_iter().flatten() {
                    if !pod["metadata"]["deletionTimestamp"].is_null() {
                        continue;
                    }
                    let matched =
                        pod["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]
                            .as_str()
                            .and_then(|a| serde_json::from_str::<Value>(a).ok());
                    let subset = matched
                        .and_then(|m| m["subset"].as_str().map(str::to_owned))
                        .unwrap_or_else(|| "none".into());
                    *counts.entry(subset).or_insert(0usize) += 1;
                }
                let want: std::collections::BTreeMap<String, usize> =
                    want.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
                (counts == want)
                    .then_some(())
                    .ok_or_else(|| format!("{counts:?}"))
            })
        };
        subsets(&[("a", 2), ("b", 3)])?;
        self.run_pods(ns, "app=web", 5)?;
        wait_for("the status: a full, b unlimited", ACT_WITHIN, || {
            let status = self.get("workloadspread", Some(ns), "web")?["status"].clone();
            let subset = |name: &str| {
                status["subsetStatuses"]
                    .as_array()
                    .and_then(|s| s.iter().find(|s| s["name"] == name))
                    .cloned()
                    .unwrap_or_default()
            };
            (subset("a")["missingReplicas"] == 0
                && subset("a")["replicas"] == 2
                && subset("b")["missingReplicas"] == -1
                && subset("b")["replicas"] == 3)
                .then_some(())
                .ok_or_else(|| status.to_string())
        })?;
        // Scale-down: the Deployment deletes pods (deletion-cost from the controller steers which); the
        // accounting follows what is left.
        self.plane.kubectl(
            &["scale", "deployment", "web", "-n", ns, "--replicas=2"],
            None,
        )?;
        wait_for("3 pods left after the scale-down... 2", ACT_WITHIN, || {
            let status = self.get("workloadspread", Some(ns), "web")?["status"].clone();
            let replicas: i64 = status["subsetStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s["replicas"].as_i64().unwrap_or(0))
                .sum();
            (replicas == 2)
                .then_some(())
                .ok_or_else(|| status.to_string())
        })?;
        replica.stop(STOP_WITHIN)?;
        Ok("5 pods: 2 in a (its maxReplicas), 3 in b; status followed a scale-down to 2".into())
    }

    /// Issue 37: the Job sidecar terminator: once a Job pod's main container has exited (its status
    /// written as a kubelet would), the leader creates CRR `sidecar-termination-<pod uid>` naming the
    /// sidecar. Issue 39: `mcontainerrecreaterequest.kb.io` (deploy/base) admits it and fills in the
    /// sidecar's `statusContext` from the pod's status and the grace period from the pod (the API server's
    /// default, 30); the labels kruise-daemon selects on are there.
    fn sidecar_terminator(&self) -> Outcome {
        let replica = self.serving(None, "terminator")?;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "job-0", "namespace": "batch", "labels": {"job": "j"}},
            "spec": {"restartPolicy": "Never", "automountServiceAccountToken": false, "nodeName": "node-2",
                "containers": [
                    {"name": "main", "image": "job:1"},
                    {"name": "log", "image": "agent:1",
                     "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}]}]}});
        self.plane
            .kubectl(&["create", "-f", "-"], Some(&pod.to_string()))?;
        let created = self.get("pod", Some("batch"), "job-0")?;
        let uid = created["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        // With container IDs, as a kubelet writes them: the CRR webhook refuses a container without one.
        let status = json!({"status": {"phase": "Running", "containerStatuses": [
            {"name": "main", "image": "job:1", "imageID": "docker-pullable://job@sha256:1", "ready": false,
             "containerID": "containerd://main-0",
             "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:01:00Z"}}},
            {"name": "log", "image": "agent:1", "imageID": "docker-pullable://agent@sha256:1", "ready": true,
             "containerID": "containerd://log-0",
             "started": true, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}});
        self.plane.write_pod_status("batch", "job-0", &status)?;
        let crr = format!("sidecar-termination-{uid}");
        let found = wait_for("the sidecar terminator's CRR", ACT_WITHIN, || {
            self.get(
                "containerrecreaterequests.apps.kruise.io",
                Some("batch"),
                &crr,
            )
        })
        .map_err(|e| format!("{e}\n{}", envtest::server_log(&replica.log, 10)))?;
        if found["spec"]["podName"] != "job-0" || found["spec"]["containers"][0]["name"] != "log" {
            return Err(format!(
                "the CRR does not name the pod's sidecar: {}",
                found["spec"]
            ));
        }
        let labels = &found["metadata"]["labels"];
        let filled = labels["crr.apps.kruise.io/node-name"] == "node-2"
            && labels["crr.apps.kruise.io/active"] == "true"
            && labels["crr.apps.kruise.io/pod-uid"] == uid.as_str()
            && found["spec"]["containers"][0]["statusContext"]
                == json!({"containerID": "containerd://log-0", "restartCount": 0})
            && found["spec"]["strategy"]
                == json!({"forceRecreate": true, "failurePolicy": "Ignore", "terminationGracePeriodSeconds": 30});
        if !filled {
            return Err(format!(
                "the CRR webhook did not fill in the CRR: {}",
                found
            ));
        }
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "CRR {crr} names container log, with its statusContext and kruise-daemon's labels"
        ))
    }
}

impl Cluster<'_> {
    /// Issue 39: a user's ContainerRecreateRequest (v1beta1, and v1alpha1 as OpenKruise 1.8's clients send
    /// it) gets from `mcontainerrecreaterequest.kb.io` the labels kruise-daemon selects on and each container's
    /// status context; one naming a container the pod lacks is refused with OpenKruise's message
    /// (docs/containerrecreaterequest-webhook.md).
    fn container_recreate_request(&self) -> Outcome {
        let replica = self.serving(None, "container-recreate-request")?;
        let ns = "web";
        self.plane.apply(&[json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "restart-me", "namespace": ns, "labels": {"app": "restart-me"}},
            "spec": {"automountServiceAccountToken": false,
                     "containers": [{"name": "app", "image": "app:1"}, {"name": "log", "image": "log:1"}]}})])?;
        self.run_pods(ns, "app=restart-me", 1)?;
        let pod = self.get("pod", Some(ns), "restart-me")?;
        let (node, uid) = (&pod["spec"]["nodeName"], &pod["metadata"]["uid"]);
        let container_id = pod["status"]["containerStatuses"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "app"))
            .map(|c| c["containerID"].clone())
            .unwrap_or_default();
        let mut checked = Vec::new();
        for version in ["v1beta1", "v1alpha1"] {
            let name = format!("restart-app-{version}");
            self.plane
                .apply(&[json!({"apiVersion": format!("apps.kruise.io/{version}"),
                "kind": "ContainerRecreateRequest", "metadata": {"name": name, "namespace": ns},
                "spec": {"podName": "restart-me", "containers": [{"name": "app"}]}})])?;
            let crr = self.get(
                &format!("containerrecreaterequest.{version}.apps.kruise.io"),
                Some(ns),
                &name,
            )?;
            let labels = &crr["metadata"]["labels"];
            let context = &crr["spec"]["containers"][0]["statusContext"];
            if labels["crr.apps.kruise.io/active"] != "true"
                || labels["crr.apps.kruise.io/node-name"] != *node
                || labels["crr.apps.kruise.io/pod-uid"] != *uid
                || context["containerID"] != container_id
                || crr["spec"]["strategy"]["failurePolicy"] != "Fail"
            {
                return Err(format!(
                    "{version} CRR not filled in: {} {}",
                    crr["metadata"], crr["spec"]
                ));
            }
            checked.push(version);
        }
        match self.plane.apply(&[json!({"apiVersion": "apps.kruise.io/v1beta1",
            "kind": "ContainerRecreateRequest", "metadata": {"name": "restart-nothing", "namespace": ns},
            "spec": {"podName": "restart-me", "containers": [{"name": "sidecar"}]}})])
        {
            Err(e)
                if e.contains("mcontainerrecreaterequest.kb.io")
                    && e.contains("container sidecar not found in Pod") => {}
            other => return Err(format!("a CRR of an unknown container: {other:?}")),
        }
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "{} CRRs labelled active, node-name {node}, pod-uid, with the container ID; an unknown container refused",
            checked.join(" and ")
        ))
    }
}

impl Cluster<'_> {
    /// Issue 39: PersistentPodState end to end (docs/persistentpodstate.md): a PPS over a StatefulSet's pods
    /// (kube-controller-manager creates them, the simulated kubelet runs them on zoned Nodes) gets
    /// `status.podStates` from the leader; a pod deleted and recreated by the StatefulSet controller gets the
    /// node affinity of the node its predecessor ran on from the pod webhook; a second PPS on the same target
    /// is refused by the validator with OpenKruise's message; a StatefulSet annotated for auto-generation gets
    /// its PPS, which goes when the annotation does.
    fn persistent_pod_state(&self) -> Outcome {
        if !self.plane.has_controller_manager() {
            return Err("needs kube-controller-manager in KUBEBUILDER_ASSETS".into());
        }
        let replica = self.serving(None, "persistent-pod-state")?;
        let ns = "pps";
        let stateful_set = |name: &str, annotations: Value| {
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": name, "namespace": ns, "annotations": annotations},
                "spec": {"replicas": 2, "serviceName": name, "podManagementPolicy": "Parallel",
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                        "spec": {"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                                 "containers": [{"name": "db", "image": "db:1"}]}}}})
        };
        self.plane.apply(&[
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
                    "requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]},
                    "preferredPersistentTopology": [{"weight": 50,
                        "preference": {"keys": ["kubernetes.io/hostname"]}}]}}),
            stateful_set("web", json!({})),
        ])?;
        self.run_pods(ns, "app=web", 2)?;
        let states = wait_for("status.podStates of web-0 and web-1", ACT_WITHIN, || {
            let _ = self.plane.kubelet(ns, "app=web")?;
            let status = self.get("persistentpodstate", Some(ns), "web")?["status"].clone();
            let states = status["podStates"].clone();
            let recorded = |pod: &str| {
                let node = self.get("pod", Some(ns), pod).ok()?["spec"]["nodeName"].clone();
                let state = &states[pod];
                (state["nodeName"] == node
                    && state["nodeTopologyLabels"]["topology.kubernetes.io/zone"].is_string()
                    && state["nodeTopologyLabels"]["kubernetes.io/hostname"] == node)
                    .then_some(())
            };
            (recorded("web-0").is_some() && recorded("web-1").is_some())
                .then(|| states.clone())
                .ok_or_else(|| status.to_string())
        })
        .map_err(|e| {
            format!(
                "{e}
{}",
                envtest::server_log(&replica.log, 10)
            )
        })?;
        // web-0 deleted (no kubelet here to finish it: forced); the StatefulSet controller creates it again.
        let old_uid = self.get("pod", Some(ns), "web-0")?["metadata"]["uid"].clone();
        self.plane.kubectl(
            &[
                "delete",
                "pod",
                "web-0",
                "-n",
                ns,
                "--grace-period=0",
                "--force",
            ],
            None,
        )?;
        let recreated = wait_for("web-0 recreated", ACT_WITHIN, || {
            let pod = self.get("pod", Some(ns), "web-0")?;
            (pod["metadata"]["uid"] != old_uid)
                .then(|| pod.clone())
                .ok_or_else(|| "not yet".to_owned())
        })?;
        let before = &states["web-0"]["nodeTopologyLabels"];
        let want_selector =
            json!({"topology.kubernetes.io/zone": before["topology.kubernetes.io/zone"]});
        let want_preferred = json!([{"weight": 50, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In",
             "values": [before["kubernetes.io/hostname"]]}]}}]);
        if recreated["spec"]["nodeSelector"] != want_selector
            || recreated["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
                != want_preferred
            || recreated["metadata"]["annotations"]["kruise.io/injected-persistent-pod-state"]
                != "web"
        {
            return Err(format!(
                "the recreated pod is not put back on {before}: {}",
                recreated["spec"]
            ));
        }
        // The validator: one PersistentPodState per target.
        match self
            .plane
            .apply(&[json!({"apiVersion": "apps.kruise.io/v1beta1",
            "kind": "PersistentPodState", "metadata": {"name": "web-again", "namespace": ns},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
                "requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]}}})])
        {
            Err(e)
                if e.contains("vpersistentpodstate.kb.io")
                    && e.contains("targetRef is in conflict with other PersistentPodState web") => {
            }
            other => return Err(format!("a second PPS on the same target: {other:?}")),
        }
        // Auto-generation from the StatefulSet's annotations, and its removal with them.
        self.plane.apply(&[stateful_set(
            "db",
            json!({"kruise.io/auto-generate-persistent-pod-state": "true",
                "kruise.io/required-persistent-topology": "topology.kubernetes.io/zone",
                "kruise.io/preferred-persistent-topology": "kubernetes.io/hostname"}),
        )])?;
        let db_uid = self.get("statefulset", Some(ns), "db")?["metadata"]["uid"].clone();
        let generated = wait_for("PersistentPodState db generated", ACT_WITHIN, || {
            self.get("persistentpodstate", Some(ns), "db")
        })?;
        let owner = &generated["metadata"]["ownerReferences"][0];
        if owner["kind"] != "StatefulSet"
            || owner["uid"] != db_uid
            || owner["controller"] != true
            || generated["spec"]["requiredPersistentTopology"]["keys"]
                != json!(["topology.kubernetes.io/zone"])
            || generated["spec"]["preferredPersistentTopology"][0]["weight"] != 100
        {
            return Err(format!("the generated PPS: {generated}"));
        }
        self.plane.kubectl(
            &[
                "annotate",
                "statefulset",
                "db",
                "-n",
                ns,
                "kruise.io/auto-generate-persistent-pod-state-",
            ],
            None,
        )?;
        wait_for("PersistentPodState db deleted", ACT_WITHIN, || {
            match self.get("persistentpodstate", Some(ns), "db") {
                Err(e) if e.contains("NotFound") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })?;
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "podStates {}; web-0 recreated with nodeSelector {want_selector} and its hostname preferred; a second PPS refused; db's PPS generated and removed",
            states
                .as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>().join(","))
                .unwrap_or_default()
        ))
    }
}

impl Cluster<'_> {
    /// Issue 39: with `KruisePodReadinessGate=true` a pod gets the readiness gate `KruisePodReady` from the pod
    /// webhook and the condition `True` from the pod-readiness controller, and turns Ready once the kubelet
    /// reports its containers ready; one whose condition a writer holds `False` with a not-ready key stays
    /// NotReady, its key untouched (docs/pod-readiness.md §5 scenarios 3, 8).
    fn pod_readiness(&self) -> Outcome {
        self.install_configurations(Mode::ExternalUrl)?;
        let mut options = self.options(Mode::ExternalUrl, Ipv4Addr::LOCALHOST);
        options
            .extra_args
            .push("--feature-gates=KruisePodReadinessGate=true".into());
        let mut replica = Replica::start(
            self.deployment(),
            &self.kubeconfig,
            &options,
            self.plane.path(),
            "pod-readiness",
        );
        replica.wait_ready(READY_WITHIN)?;
        let ns = "web";
        let pod = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "labels": {"app": "gated"}},
                "spec": {"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "app", "image": "app:1"}]}})
        };
        let started = Instant::now();
        self.plane.apply(&[pod("gated-0")])?;
        let created = self.get("pod", Some(ns), "gated-0")?;
        if created["spec"]["readinessGates"] != json!([{"conditionType": "KruisePodReady"}]) {
            return Err(format!("no readiness gate: {}", created["spec"]));
        }
        let condition = |pod: &Value, t: &str| {
            pod["status"]["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == t))
                .cloned()
                .unwrap_or_default()
        };
        let became_ready = wait_for("the gated pod Ready", ACT_WITHIN, || {
            self.plane.kubelet(ns, "app=gated")?;
            let pod = self.get("pod", Some(ns), "gated-0")?;
            (condition(&pod, "KruisePodReady")["status"] == "True"
                && condition(&pod, "Ready")["status"] == "True")
                .then(|| started.elapsed())
                .ok_or_else(|| pod["status"].to_string())
        })
        .map_err(|e| {
            format!(
                "{e}
{}",
                envtest::server_log(&replica.log, 10)
            )
        })?;
        // A writer (kruise-daemon restarting a container) holds the condition False with its key.
        self.plane.apply(&[pod("gated-1")])?;
        let keyed = r#"[{"userAgent":"ContainerRecreateRequest","key":"web/restart-gated-1"}]"#;
        self.plane.merge_pod_status(
            ns,
            "gated-1",
            &json!({"status": {"conditions": [{"type": "KruisePodReady", "status": "False",
                "message": keyed, "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}),
        )?;
        self.plane.kubelet(ns, "app=gated")?;
        std::thread::sleep(Duration::from_secs(2));
        self.plane.kubelet(ns, "app=gated")?;
        let held = self.get("pod", Some(ns), "gated-1")?;
        if condition(&held, "KruisePodReady")["message"] != keyed
            || condition(&held, "KruisePodReady")["status"] != "False"
            || condition(&held, "Ready")["status"] != "False"
        {
            return Err(format!("the writer's key was not kept: {}", held["status"]));
        }
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "gate injected, KruisePodReady True, Ready {:.1} s after the create; a keyed False kept NotReady",
            became_ready.as_secs_f64()
        ))
    }
}

impl Cluster<'_> {
    /// Issue 37: container launch priority: a pod asking for `Ordered` launch gets a barrier env on each
    /// container, and the leader adds the barrier ConfigMap's keys one level at a time as the containers
    /// before turn ready (their status written as a kubelet would), then marks the pod completed.
    fn launch_priority(&self) -> Outcome {
        let replica = self.serving(None, "launch-priority")?;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "ordered", "namespace": "web",
                "annotations": {"apps.kruise.io/container-launch-priority": "Ordered"}},
            "spec": {"automountServiceAccountToken": false, "nodeName": "node-3", "containers": [
                {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}, {"name": "c", "image": "c:1"}]}});
        self.plane
            .kubectl(&["create", "-f", "-"], Some(&pod.to_string()))?;
        let created = self.get("pod", Some("web"), "ordered")?;
        let barrier_key = |i: usize| {
            created["spec"]["containers"][i]["env"]
                .as_array()
                .and_then(|env| {
                    env.iter()
                        .find(|e| e["name"] == "KRUISE_CONTAINER_BARRIER")
                        .and_then(|e| {
                            e["valueFrom"]["configMapKeyRef"]["key"]
                                .as_str()
                                .map(str::to_owned)
                        })
                })
        };
        let keys: Vec<Option<String>> = (0..3).map(barrier_key).collect();
        if keys != [Some("p_0".into()), Some("p_-1".into()), Some("p_-2".into())] {
            return Err(format!("barrier envs: {keys:?}"));
        }
        let barrier = |want: &[&str]| {
            wait_for(&format!("barrier keys {want:?}"), ACT_WITHIN, || {
                let cm = self.get("configmap", Some("web"), "ordered-barrier")?;
                let mut have: Vec<String> = cm["data"]
                    .as_object()
                    .map(|d| d.keys().cloned().collect())
                    .unwrap_or_default();
                have.sort();
                let mut want: Vec<String> = want.iter().map(|k| (*k).to_owned()).collect();
                want.sort();
                (have == want)
                    .then_some(())
                    .ok_or_else(|| format!("{have:?}"))
            })
        };
        let report = |ready: &[&str]| {
            let statuses: Vec<Value> = ["a", "b", "c"]
                .iter()
                .map(|name| {
                    let up = ready.contains(name);
                    json!({"name": name, "image": format!("{name}:1"), "imageID": format!("docker-pullable://{name}@sha256:1"),
                        "ready": up, "started": up, "restartCount": 0,
                        "state": if up { json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}) }
                                 else { json!({"waiting": {"reason": "CreateContainerConfigError"}}) }})
                })
                .collect();
            let status = json!({"status": {"phase": "Pending", "containerStatuses": statuses}});
            self.plane.write_pod_status("web", "ordered", &status)
        };
        barrier(&["p_0"])?;
        report(&["a"])?;
        barrier(&["p_0", "p_-1"])?;
        report(&["a", "b"])?;
        barrier(&["p_0", "p_-1", "p_-2"])?;
        wait_for("the pod marked completed", ACT_WITHIN, || {
            let pod = self.get("pod", Some("web"), "ordered")?;
            (pod["metadata"]["annotations"]["apps.kruise.io/container-launch-priority-completed"]
                == "true")
                .then_some(())
                .ok_or_else(|| pod["metadata"]["annotations"].to_string())
        })?;
        replica.stop(STOP_WITHIN)?;
        Ok("p_0, then p_-1 once a was ready, then p_-2 once b was; completed".into())
    }

    /// Issue 37: self-managed certificates: the first replica writes the CA and serving certificate into the
    /// Secret `kruise-webhook-certs` and the caBundle into both configurations; a Secret deleted (an
    /// operator forcing a new CA) is written again with a new CA, which the configurations then carry, and
    /// the replica stays ready with it (the API server calls it: a pod create is admitted). Both at once, not
    /// at the next 60 s sync: the sync watches the Secret and the configurations; a caBundle reset too.
    fn certificate_rotation(&self) -> Outcome {
        use base64::Engine;
        self.install_configurations(Mode::SelfManagedUrl)?;
        let mut replica = self.start(Mode::SelfManagedUrl, Ipv4Addr::LOCALHOST, "certs");
        replica.wait_ready(READY_WITHIN)?;
        let secret_ca = || -> Result<String, String> {
            let secret = self.get("secret", Some(envtest::NAMESPACE), "kruise-webhook-certs")?;
            let ca = secret["data"]["ca-cert.pem"]
                .as_str()
                .ok_or("no ca-cert.pem")?;
            Ok(ca.to_owned())
        };
        let bundle_ca = || -> Result<String, String> {
            let c = self.get(
                "mutatingwebhookconfiguration",
                None,
                "kruise-mutating-webhook-configuration",
            )?;
            Ok(c["webhooks"][0]["clientConfig"]["caBundle"]
                .as_str()
                .unwrap_or_default()
                .to_owned())
        };
        let decode = |b64: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        };
        let first = secret_ca()?;
        if !decode(&bundle_ca()?).contains(decode(&first).trim()) {
            return Err("the caBundle is not the Secret's CA".into());
        }
        self.plane.kubectl(
            &[
                "delete",
                "secret",
                "kruise-webhook-certs",
                "-n",
                envtest::NAMESPACE,
            ],
            None,
        )?;
        let second = wait_for("a new CA in a new Secret", Duration::from_secs(90), || {
            let ca = secret_ca()?;
            (ca != first)
                .then_some(ca)
                .ok_or_else(|| "the same CA".to_owned())
        })?;
        wait_for(
            "the configurations carry the new CA",
            Duration::from_secs(90),
            || {
                let bundle = decode(&bundle_ca()?);
                bundle
                    .contains(decode(&second).trim())
                    .then_some(())
                    .ok_or_else(|| "old caBundle".to_owned())
            },
        )?;
        replica.wait_ready(Duration::from_secs(90))?;
        // A caBundle reset (an apply of the plain manifest) is put back at once: the sync watches our
        // configurations, not only its 60 s timer.
        let reset = Instant::now();
        self.plane.kubectl(
            &[
                "patch",
                "mutatingwebhookconfiguration",
                "kruise-mutating-webhook-configuration",
                "--type=json",
                "-p",
                r#"[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":""}]"#,
            ],
            None,
        )?;
        wait_for("the caBundle put back", Duration::from_secs(10), || {
            let bundle = decode(&bundle_ca()?);
            bundle
                .contains(decode(&second).trim())
                .then_some(())
                .ok_or_else(|| "empty caBundle".to_owned())
        })?;
        let put_back = reset.elapsed();
        // The API server trusts the new certificate: a pod create goes through our mpod webhook.
        self.plane.kubectl(&["create", "-f", "-"], Some(&json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "after-rotation", "namespace": "web"},
            "spec": {"automountServiceAccountToken": false, "containers": [{"name": "app", "image": "app:1"}]}}).to_string()))
            .map_err(|e| format!("a pod create after the rotation: {e}"))?;
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "Secret and caBundles written; a new CA after the Secret was deleted, trusted by the API server; a reset caBundle put back in {:.1} s",
            put_back.as_secs_f64()
        ))
    }
}

impl Cluster<'_> {
    /// `deploy/base`'s SidecarSet CRD, created (as a user applying it after the server) and established.
    fn apply_sidecar_set_crd(&self) -> Result<Instant, String> {
        let crd = self
            .base
            .iter()
            .find(|o| {
                envtest::is_kind(o, "CustomResourceDefinition")
                    && o["metadata"]["name"] == "sidecarsets.apps.kruise.io"
            })
            .cloned()
            .ok_or("deploy/base has no SidecarSet CRD")?;
        self.plane
            .kubectl(&["create", "-f", "-"], Some(&crd.to_string()))?;
        self.plane.kubectl(
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd",
                "sidecarsets.apps.kruise.io",
            ],
            None,
        )?;
        Ok(Instant::now())
    }

    /// Whether our mutating configuration carries `mpod.kb.io`.
    fn has_mpod(&self) -> Result<bool, String> {
        let c = self.get(
            "mutatingwebhookconfiguration",
            None,
            "kruise-mutating-webhook-configuration",
        )?;
        Ok(c["webhooks"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|w| w["name"] == "mpod.kb.io"))
    }

    /// Issue 37 item 4 (docs/startup-order.md): a server started before the SidecarSet CRD is ready without
    /// it; once the CRD is established, `/mutate-pod` injects within 10 s without a restart (and `mpod.kb.io`
    /// is back in the configuration); when the CRD is removed while it runs, its cache goes, readiness stops
    /// waiting for it, the webhook is taken out of the configuration, and pods are created without it. The
    /// replica stays ready throughout.
    fn crds_follow(&self) -> Outcome {
        self.install_configurations(Mode::SelfManagedUrl)?;
        self.plane.kubectl(
            &["delete", "crd", "sidecarsets.apps.kruise.io", "--wait"],
            None,
        )?;
        let mut replica = self.start(Mode::SelfManagedUrl, Ipv4Addr::LOCALHOST, "crds");
        replica.wait_ready(READY_WITHIN)?;
        let ready = |replica: &Replica, when: &str| -> Result<String, String> {
            match replica.readyz() {
                Some((200, body)) => Ok(body),
                other => Err(format!("not ready {when}: {other:?}")),
            }
        };
        let body = ready(&replica, "without the CRD")?;
        if body.contains("sidecarsets") {
            return Err(format!(
                "readiness waits for SidecarSets without their CRD:\n{body}"
            ));
        }
        wait_for("mpod.kb.io out of the configuration", ACT_WITHIN, || {
            (!self.has_mpod()?)
                .then_some(())
                .ok_or_else(|| "still there".to_owned())
        })?;
        let established = self.apply_sidecar_set_crd()?;
        self.plane.apply(&[
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "late"},
            "spec": {"selector": {"matchLabels": {"app": "late"}},
                     "containers": [{"name": "late-agent", "image": "agent:1"}]}}),
        ])?;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "late-0", "namespace": "web", "labels": {"app": "late"}},
            "spec": {"automountServiceAccountToken": false, "containers": [{"name": "app", "image": "app:1"}]}});
        wait_for(
            "a pod injected by the late SidecarSet",
            READY_WITHIN,
            || self.plane.dry_run_shows(&pod, "late-agent"),
        )
        .map_err(|e| format!("{e}\n{}", envtest::server_log(&replica.log, 10)))?;
        let injecting = established.elapsed();
        if !self.has_mpod()? {
            return Err("mpod.kb.io not back in the configuration".into());
        }
        let body = ready(&replica, "with the CRD")?;
        let body = if body == "ok" {
            replica.readyz().map(|(_, b)| b).unwrap_or_default()
        } else {
            body
        };
        if !body.contains("sidecarsets.apps.kruise.io ok") && body != "ok" {
            return Err(format!(
                "readiness does not name the SidecarSet cache:\n{body}"
            ));
        }
        // Removed while it runs.
        self.plane.kubectl(
            &["delete", "crd", "sidecarsets.apps.kruise.io", "--wait"],
            None,
        )?;
        wait_for(
            "the SidecarSet cache gone from readiness",
            READY_WITHIN,
            || {
                let body = ready(&replica, "after the CRD was removed")?;
                (!body.contains("sidecarsets")).then_some(()).ok_or(body)
            },
        )?;
        wait_for(
            "mpod.kb.io out of the configuration again",
            ACT_WITHIN,
            || {
                (!self.has_mpod()?)
                    .then_some(())
                    .ok_or_else(|| "still there".to_owned())
            },
        )?;
        self.plane
            .kubectl(&["create", "-f", "-"], Some(&pod.to_string()))
            .map_err(|e| format!("a pod create without the SidecarSet CRD: {e}"))?;
        // Back for the scenarios after this one.
        self.apply_sidecar_set_crd()?;
        wait_for("mpod.kb.io back", ACT_WITHIN, || {
            self.has_mpod()?
                .then_some(())
                .ok_or_else(|| "not yet".to_owned())
        })?;
        ready(&replica, "at the end")?;
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "injecting {:.1} s after the SidecarSet CRD was established; removed and re-added while ready",
            injecting.as_secs_f64()
        ))
    }
}

impl Cluster<'_> {
    /// Reports `pod`'s containers as a kubelet would: running and ready, each with the image its spec names
    /// now and an imageID of that image (a container restarted on a new image gets a new imageID).
    fn report_running(&self, namespace: &str, pod: &str) -> Result<(), String> {
        let current = self.get("pod", Some(namespace), pod)?;
        let statuses: Vec<Value> = current["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let image = c["image"].as_str().unwrap_or_default();
                json!({"name": c["name"], "image": image, "ready": true, "started": true, "restartCount": 0,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    "imageID": format!("docker-pullable://{}@sha256:{:x}", image, image.len() * 7919)})
            })
            .collect();
        let status = json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"},
                {"type": "PodScheduled", "status": "True"}, {"type": "Initialized", "status": "True"}],
            "containerStatuses": statuses}});
        self.plane
            .write_pod_status(namespace, pod, &status)
            .map(drop)
    }

    /// Changes the image of SidecarSet `name`'s first container, as a user rolling out a new sidecar.
    fn set_sidecar_image(&self, name: &str, image: &str) -> Result<(), String> {
        let patch = json!([{"op": "replace", "path": "/spec/containers/0/image", "value": image}]);
        self.plane
            .kubectl(
                &[
                    "patch",
                    "sidecarset",
                    name,
                    "--type=json",
                    "-p",
                    &patch.to_string(),
                ],
                None,
            )
            .map(drop)
    }

    /// The image of container `name` of `pod`.
    fn image_of(&self, namespace: &str, pod: &str, name: &str) -> Result<String, String> {
        let pod = self.get("pod", Some(namespace), pod)?;
        pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == name)
            .and_then(|c| c["image"].as_str().map(str::to_owned))
            .ok_or_else(|| format!("no container {name}"))
    }

    /// Issue 37: the SidecarSet hot upgrade (spec/sidecarset.md §6): a pod is injected with the two copies
    /// (`agent-1` working on `agent:1`, `agent-2` on the empty image); a new image goes in place to the empty
    /// copy, which becomes the working one; once it runs, the old copy is flipped to the empty image.
    fn hot_upgrade(&self) -> Outcome {
        let replica = self.serving(None, "hot-upgrade")?;
        let name = "hot";
        self.plane.apply(&[json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}},
                     "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1},
                     "containers": [{"name": "agent", "image": "agent:1",
                        "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}]}})])?;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "hot-0", "namespace": "shop", "labels": {"app": name}},
            "spec": {"nodeName": "node-4", "automountServiceAccountToken": false,
                     "containers": [{"name": "app", "image": "app:1"}]}});
        wait_for("the hot SidecarSet injects", ACT_WITHIN, || {
            self.plane.dry_run_shows(&pod, "agent-2")
        })?;
        self.plane
            .kubectl(&["create", "-f", "-"], Some(&pod.to_string()))?;
        let (one, two) = (
            self.image_of("shop", "hot-0", "agent-1")?,
            self.image_of("shop", "hot-0", "agent-2")?,
        );
        if (one.as_str(), two.as_str()) != ("agent:1", "empty:1") {
            return Err(format!("injected agent-1={one} agent-2={two}"));
        }
        self.report_running("shop", "hot-0")?;
        self.set_sidecar_image(name, "agent:2")?;
        wait_for(
            "agent:2 in place on the empty copy agent-2",
            ACT_WITHIN,
            || {
                let image = self.image_of("shop", "hot-0", "agent-2")?;
                (image == "agent:2").then_some(()).ok_or(image)
            },
        )
        .map_err(|e| format!("{e}\n{}", envtest::server_log(&replica.log, 10)))?;
        let working = |want: &str| -> Result<(), String> {
            let pod = self.get("pod", Some("shop"), "hot-0")?;
            let map =
                pod["metadata"]["annotations"]["kruise.io/sidecarset-working-hotupgrade-container"]
                    .clone();
            (map == json!(format!("{{\"agent\":\"{want}\"}}")))
                .then_some(())
                .ok_or_else(|| map.to_string())
        };
        working("agent-2")?;
        // The new copy runs (kubelet restarted it on agent:2): the old one is flipped to the empty image.
        self.report_running("shop", "hot-0")?;
        wait_for("agent-1 flipped to the empty image", ACT_WITHIN, || {
            let image = self.image_of("shop", "hot-0", "agent-1")?;
            (image == "empty:1").then_some(()).ok_or(image)
        })
        .map_err(|e| format!("{e}\n{}", envtest::server_log(&replica.log, 10)))?;
        working("agent-2")?;
        replica.stop(STOP_WITHIN)?;
        Ok("agent:2 in place on agent-2, then agent-1 flipped to empty:1".into())
    }
}

/// Pods and SidecarSets of the scale scenario (issues 36 and 37: the scale no replica became ready at).
const SCALE_PODS: usize = 10_000;
/// See [`SCALE_PODS`].
const SCALE_SIDECARSETS: usize = 1_000;

impl Cluster<'_> {
    /// Issues 36 and 37: with 10,000 pods in one namespace (a plain pod-create loop, 16 at a time) and
    /// 1,000 SidecarSets, a replica started with our configurations installed is ready within
    /// [`READY_WITHIN`], cold and again on a restart right after the first stopped.
    fn ready_at_scale(&self) -> Outcome {
        // Created while no configuration of ours calls a server that is not running.
        for c in envtest::webhook_configurations(&self.base) {
            let kind = c["kind"].as_str().unwrap_or_default().to_lowercase();
            let name = c["metadata"]["name"].as_str().unwrap_or_default();
            self.plane
                .kubectl(&["delete", &kind, name, "--ignore-not-found"], None)?;
        }
        let created = Instant::now();
        let mut objects = vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scale"}}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "scale"}}),
        ];
        self.plane.create_many(std::mem::take(&mut objects), 1)?;
        for i in 0..SCALE_SIDECARSETS {
            objects.push(json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
                "metadata": {"name": format!("sidecar-{i}")},
                "spec": {"selector": {"matchLabels": {"sidecar": format!("s{}", i % 50)}},
                         "containers": [{"name": format!("agent-{i}"), "image": "agent:1"}]},
            }));
        }
        for i in 0..SCALE_PODS {
            objects.push(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i}"), "namespace": "scale",
                             "labels": {"app": format!("app-{}", i % 100), "sidecar": format!("s{}", i % 50)}},
                "spec": {"nodeName": format!("node-{}", i % 12), "automountServiceAccountToken": false,
                         "containers": [{"name": "app", "image": "app:1"}]},
            }));
        }
        self.plane.create_many(objects, 16)?;
        let created = created.elapsed();
        self.install_configurations(Mode::ExternalUrl)?;
        let mut times = Vec::new();
        for start in ["cold", "restart"] {
            let mut replica = self.start(
                Mode::ExternalUrl,
                Ipv4Addr::LOCALHOST,
                &format!("scale-{start}"),
            );
            times.push(
                replica
                    .wait_ready(READY_WITHIN)
                    .map_err(|e| format!("{start} start at scale: {e}"))?,
            );
            replica.stop(STOP_WITHIN)?;
        }
        Ok(format!(
            "{SCALE_PODS} pods and {SCALE_SIDECARSETS} SidecarSets created in {:.1} s; ready after {:.2} s cold, {:.2} s on a restart",
            created.as_secs_f64(),
            times[0].as_secs_f64(),
            times[1].as_secs_f64()
        ))
    }
}

impl Cluster<'_> {
    /// Issue 40: a pod created while the mutating configuration is removed gets no sidecars; `explain` (live,
    /// through the admin's kubeconfig) says that the webhook is not called and why nothing was injected; once
    /// the server runs again the pod gets the Warning event `SidecarSetNotInjected` and
    /// `sidecarset_pods_missing_sidecars` counts it; a restarted server counts it again and records no second
    /// event (docs/missed-sidecars.md §2).
    fn missed_sidecars(&self) -> Outcome {
        let (ns, set, pod) = ("web", "missed-log", "missed-0");
        // Created while the server runs: our validating webhook checks SidecarSets.
        let replica = self.serving(None, "missed-sidecars-before")?;
        self.plane.apply(&[
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": set},
            "spec": {"selector": {"matchLabels": {"app": "missed"}},
                     "containers": [{"name": "log-agent", "image": "agent:1"}]}}),
        ])?;
        replica.stop(STOP_WITHIN)?;
        let mutating = envtest::webhook_configurations(&self.base)
            .into_iter()
            .find(|c| envtest::is_kind(c, "MutatingWebhookConfiguration"))
            .and_then(|c| c["metadata"]["name"].as_str().map(str::to_owned))
            .ok_or("deploy/base has no MutatingWebhookConfiguration")?;
        self.plane.kubectl(
            &[
                "delete",
                "mutatingwebhookconfiguration",
                &mutating,
                "--wait",
            ],
            None,
        )?;
        self.plane
            .apply(&[json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": ns, "labels": {"app": "missed"}},
            "spec": {"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "app", "image": "app:1"}]}})])?;
        let created = self.get("pod", Some(ns), pod)?;
        if created["spec"]["containers"].as_array().map(Vec::len) != Some(1) {
            return Err(format!(
                "injected with no configuration installed: {}",
                created["spec"]
            ));
        }
        // `explain`, live, as a user would run it.
        let explained = std::process::Command::new(envtest::server_binary())
            .arg("explain")
            .arg("--kubeconfig")
            .arg(&self.plane.admin_kubeconfig)
            .arg(format!("{ns}/{pod}"))
            .output()
            .map_err(|e| format!("running explain: {e}"))?;
        let text = String::from_utf8_lossy(&explained.stdout).into_owned();
        if !explained.status.success() {
            return Err(format!(
                "explain exited {:?}: {}{text}",
                explained.status.code(),
                String::from_utf8_lossy(&explained.stderr)
            ));
        }
        for wanted in [
            "webhook mpod.kb.io CREATE pods: not called: notInstalled".to_owned(),
            format!(
                "sidecarset {set}: not injected: webhook not called: mpod.kb.io (notInstalled)"
            ),
        ] {
            if !text.lines().any(|l| l.starts_with(&wanted)) {
                return Err(format!("explain does not say {wanted:?}:\n{text}"));
            }
        }
        // The server runs again (its configurations installed again): the pod is told, and counted.
        let events = || -> Result<Vec<Value>, String> {
            let listed = self.plane.kubectl(
                &[
                    "get",
                    "events",
                    "-n",
                    ns,
                    "-o",
                    "json",
                    "--field-selector",
                    &format!("involvedObject.name={pod},reason=SidecarSetNotInjected"),
                ],
                None,
            )?;
            let listed: Value = serde_json::from_str(&listed).map_err(|e| e.to_string())?;
            Ok(listed["items"].as_array().cloned().unwrap_or_default())
        };
        let counted = format!("sidecarset_pods_missing_sidecars{{sidecarset=\"{set}\"}} 1");
        let started = Instant::now();
        let replica = self.serving(None, "missed-sidecars-after")?;
        let event = wait_for("the Warning event on the pod", ACT_WITHIN, || {
            events()?
                .first()
                .cloned()
                .ok_or_else(|| "no event".to_owned())
        })
        .map_err(|e| format!("{e}\n{}", envtest::server_log(&replica.log, 20)))?;
        let told_after = started.elapsed();
        let message = event["message"].as_str().unwrap_or_default();
        if event["type"] != "Warning"
            || !message.contains(&format!("SidecarSet {set} "))
            || !message.contains("recreate the pod")
        {
            return Err(format!("not the event wanted: {event}"));
        }
        let metric = |replica: &Replica| {
            wait_for("the pod counted", ACT_WITHIN, || {
                let (_, metrics) =
                    envtest::http_get(replica.metrics, "/metrics").unwrap_or_default();
                metrics
                    .contains(&counted)
                    .then_some(())
                    .ok_or_else(|| format!("/metrics lacks {counted}"))
            })
        };
        metric(&replica)?;
        replica.stop(STOP_WITHIN)?;
        // Once: a restarted server (a new leader, nothing remembered) counts it again, records nothing.
        let replica = self.serving(None, "missed-sidecars-restarted")?;
        metric(&replica)?;
        std::thread::sleep(Duration::from_secs(1));
        let told = events()?;
        if told.len() != 1 {
            return Err(format!("told {} times: {told:?}", told.len()));
        }
        self.plane
            .kubectl(&["delete", "pod", pod, "-n", ns, "--wait=false"], None)?;
        self.plane.kubectl(&["delete", "sidecarset", set], None)?;
        replica.stop(STOP_WITHIN)?;
        Ok(format!(
            "explain: webhook not called; told {:.1} s after the server started, once across a restart",
            told_after.as_secs_f64()
        ))
    }
}

/// `0.31 s` for the longest of `times`.
fn seconds(times: &[Duration]) -> String {
    let max = times.iter().max().copied().unwrap_or_default();
    format!("{:.2} s", max.as_secs_f64())
}

/// About what the issue's cluster held: 12 Nodes, 170 pods in three namespaces bound to them, PUBs,
/// WorkloadSpreads, ContainerRecreateRequests and a PersistentPodState (created before any webhook
/// configuration is installed).
fn seed(plane: &ControlPlane) -> Result<(), String> {
    let namespaces = ["shop", "batch", "web"];
    let mut objects = Vec::new();
    for i in 0..12 {
        objects.push(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{i}"), "labels": {
                "kubernetes.io/hostname": format!("node-{i}"),
                "topology.kubernetes.io/zone": format!("zone-{}", i % 3)}},
        }));
    }
    for ns in namespaces {
        objects.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        // The ServiceAccount admission plugin wants the pods' ServiceAccount to exist (no
        // kube-controller-manager creates it here).
        objects.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}}));
        objects.push(json!({
            "apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "app", "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": "app"}}, "maxUnavailable": 1},
        }));
        objects.push(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
            "metadata": {"name": "app", "namespace": ns},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
                     "subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b"}]},
        }));
    }
    plane.apply(&objects)?;
    let mut pods = Vec::new();
    for i in 0..170 {
        let ns = namespaces[i % namespaces.len()];
        pods.push(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("app-{i}"), "namespace": ns, "labels": {"app": "app"}},
            "spec": {"nodeName": format!("node-{}", i % 12), "automountServiceAccountToken": false,
                     "containers": [{"name": "app", "image": "nginx:1.25"}]},
        }));
    }
    pods.push(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
        "metadata": {"name": "restart-app-0", "namespace": "shop"},
        "spec": {"podName": "app-0", "containers": [{"name": "app"}]},
    }));
    pods.push(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
                 "requiredPersistentTopology": {"keys": ["kubernetes.io/hostname"]}},
    }));
    plane.apply(&pods).map(drop)
}
