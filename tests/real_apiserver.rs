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
//! once). The cluster holds about what the did: 12 Nodes, 170 pods, PUBs, WorkloadSpreads, CRRs and a
//! PersistentPodState.

mod envtest;

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
        let base = envtest::render_base()?;
        let rest: Vec<Value> = base
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
        plane.apply(&rest)?;
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
        seed(plane)?;
        let kubeconfig =
            plane.service_account_kubeconfig(envtest::NAMESPACE, envtest::SERVICE_ACCOUNT)?;
        let now = time::OffsetDateTime::now_utc();
        let policy = kruise_certs::Policy::new(
            "kruise-webhook-service.kruise-system.svc",
            ["127.0.0.1".to_owned()],
        );
        let bundle = kruise_certs::execute(&kruise_certs::CertPlan::Fresh, None, now, &policy)
            .map_err(|e| e.to_string())?;
        let external_certs = plane.path().join("external-certs");
        std::fs::create_dir_all(&external_certs).map_err(|e| e.to_string())?;
        for (name, text) in [
            ("tls.crt", &bundle.cert_pem),
            ("tls.key", &bundle.key_pem),
            ("ca.crt", &bundle.ca_cert_pem),
        ] {
            std::fs::write(external_certs.join(name), text).map_err(|e| e.to_string())?;
        }
        Ok(Self {
            plane,
            base,
            kubeconfig,
            port: envtest::free_port(Ipv4Addr::LOCALHOST),
            external_certs,
            external_ca: bundle.ca_cert_pem,
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

/// `0.31 s` for the longest of `times`.
fn seconds(times: &[Duration]) -> String {
    let max = times.iter().max().copied().unwrap_or_default();
    format!("{:.2} s", max.as_secs_f64())
}

/// About what the cluster held: 12 Nodes, 170 pods in three namespaces bound to them, PUBs,
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
