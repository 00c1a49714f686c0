//! A real control plane for the tests, envtest-style: `etcd` and `kube-apiserver` (RBAC on, static tokens for
//! an admin, the shipped ServiceAccount's token from the TokenRequest API) started from the binaries in the
//! directory `KUBEBUILDER_ASSETS` names, `deploy/` rendered and applied with `kubectl`, and the server binary
//! run as the Deployment runs it, as the ServiceAccount, in a process of its own.
//!
//! Every process it starts runs under a guard ([`guarded`]) that kills it when this test process goes away,
//! even when it is killed itself: no etcd or apiserver outlives a test run.

#![allow(dead_code)]

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "../install/kustomize.rs"]
pub mod kustomize;

/// The namespace `deploy/` installs into.
pub const NAMESPACE: &str = "kruise-system";
/// The shipped ServiceAccount.
pub const SERVICE_ACCOUNT: &str = "kruise-webhook";
/// The binaries a control plane needs.
const BINARIES: [&str; 3] = ["etcd", "kube-apiserver", "kubectl"];

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory of the control-plane binaries, or why there is none.
///
/// # Errors
/// `KUBEBUILDER_ASSETS` unset, or a binary missing from it.
pub fn assets() -> Result<PathBuf, String> {
    let dir = std::env::var_os("KUBEBUILDER_ASSETS")
        .map(PathBuf::from)
        .ok_or("KUBEBUILDER_ASSETS is not set (README, \"Testing against a real API server\")")?;
    for binary in BINARIES {
        if !dir.join(binary).is_file() {
            return Err(format!(
                "KUBEBUILDER_ASSETS={} has no {binary}",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

/// A free TCP port on `ip` (bound and released: another process could take it in between, which the
/// caller's start then reports).
pub fn free_port(ip: Ipv4Addr) -> u16 {
    TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Runs `program args` so that it is killed when this process exits, however it exits: a shell holds the
/// read end of a pipe whose write end only this process has, and kills the program when it reads EOF. Its
/// output goes to `log`.
pub fn guarded(program: &Path, args: &[String], envs: &[(String, String)], log: &Path) -> Child {
    let log_file = std::fs::File::create(log).expect("log file");
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(
            // The shell's stdin is the pipe; `exec 3<&0` keeps it for the watcher, which kills the program
            // at EOF (this process gone). SIGTERM is passed on; the shell exits with the program.
            r#"exec 3<&0
"$@" </dev/null 3<&- & child=$!
(cat <&3 >/dev/null; kill -9 "$child" 2>/dev/null) </dev/null & watcher=$!
exec 3<&-
trap 'kill -TERM "$child" 2>/dev/null' TERM
while :; do wait "$child"; status=$?; kill -0 "$child" 2>/dev/null || break; done
kill "$watcher" 2>/dev/null
exit $status"#,
        )
        .arg("sh")
        .arg(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(log_file.try_clone().expect("log file"))
        .stderr(log_file);
    for (k, v) in envs {
        command.env(k, v);
    }
    command
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()))
}

/// Sends SIGTERM to `child` (the guard shell passes it on) and waits up to `within` for it to exit.
///
/// # Errors
/// It did not exit in time (it is killed then).
pub fn terminate(child: &mut Child, within: Duration) -> Result<(), String> {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(format!("did not exit within {within:?} of SIGTERM"))
}

/// The last `lines` lines of a file.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// What a server's log says that matters when it failed: its last `lines` lines at WARN or ERROR, then its
/// last 5 lines of any level (the per-admission INFO lines drown the rest).
pub fn server_log(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let serious: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"level\":\"WARN\"") || l.contains("\"level\":\"ERROR\""))
        .collect();
    format!(
        "WARN and ERROR:\n{}\nlast lines:\n{}",
        serious[serious.len().saturating_sub(lines)..].join("\n"),
        tail(path, 5)
    )
}

/// A running etcd and kube-apiserver.
pub struct ControlPlane {
    /// Where its files live (removed on drop).
    pub dir: tempfile::TempDir,
    assets: PathBuf,
    etcd: Child,
    apiserver: Child,
    /// kube-controller-manager, when `KUBEBUILDER_ASSETS` has it (Deployments make ReplicaSets and pods,
    /// Namespaces get their `default` ServiceAccount, deletions are garbage collected).
    controller_manager: Option<Child>,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The admin's kubeconfig (system:masters).
    pub admin_kubeconfig: PathBuf,
    /// The CA of the apiserver's serving certificate (PEM).
    pub ca_pem: String,
}

/// The admin's static token.
const ADMIN_TOKEN: &str = "admin-token-for-tests";

impl ControlPlane {
    /// Starts etcd and the apiserver (RBAC authorization, the admin's static token, ServiceAccount tokens
    /// signed with a key of its own) and waits until the apiserver is ready.
    ///
    /// # Errors
    /// A process that does not start, or an apiserver not ready within 60 s (with its log's tail).
    pub fn start(assets: &Path) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let d = dir.path();
        let loopback = Ipv4Addr::LOCALHOST;
        let (client, peer, secure) = (
            free_port(loopback),
            free_port(loopback),
            free_port(loopback),
        );
        // The apiserver's serving certificate and the ServiceAccount signing key, from the project's own
        // certificate code.
        let now = time::OffsetDateTime::now_utc();
        let policy = kruise_certs::Policy::new("localhost", ["127.0.0.1".to_owned()]);
        let serving = kruise_certs::execute(&kruise_certs::CertPlan::Fresh, None, now, &policy)
            .map_err(|e| e.to_string())?;
        let write = |name: &str, text: &str| {
            std::fs::write(d.join(name), text).map_err(|e| format!("{name}: {e}"))
        };
        write("apiserver.crt", &serving.cert_pem)?;
        write("apiserver.key", &serving.key_pem)?;
        // The signing key is the fresh CA's; the apiserver reads its public key from the CA certificate.
        write("sa.key", &serving.ca_key_pem)?;
        write("sa.crt", &serving.ca_cert_pem)?;
        write(
            "tokens.csv",
            &format!("{ADMIN_TOKEN},admin,admin-uid,\"system:masters\"\n"),
        )?;
        let admin_kubeconfig = d.join("admin.kubeconfig");
        let url = format!("https://127.0.0.1:{secure}");
        write_kubeconfig(&admin_kubeconfig, &url, &serving.ca_cert_pem, ADMIN_TOKEN)?;
        let path = |name: &str| d.join(name).display().to_string();
        let etcd = guarded(
            &assets.join("etcd"),
            &[
                "--data-dir".into(),
                path("etcd"),
                "--listen-client-urls".into(),
                format!("http://127.0.0.1:{client}"),
                "--advertise-client-urls".into(),
                format!("http://127.0.0.1:{client}"),
                "--listen-peer-urls".into(),
                format!("http://127.0.0.1:{peer}"),
                "--initial-advertise-peer-urls".into(),
                format!("http://127.0.0.1:{peer}"),
                "--initial-cluster".into(),
                format!("default=http://127.0.0.1:{peer}"),
                "--unsafe-no-fsync".into(),
            ],
            &[],
            &d.join("etcd.log"),
        );
        let apiserver = guarded(
            &assets.join("kube-apiserver"),
            &[
                format!("--etcd-servers=http://127.0.0.1:{client}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--secure-port={secure}"),
                format!("--tls-cert-file={}", path("apiserver.crt")),
                format!("--tls-private-key-file={}", path("apiserver.key")),
                format!("--cert-dir={}", path("certs")),
                "--authorization-mode=Node,RBAC".into(),
                format!("--token-auth-file={}", path("tokens.csv")),
                "--service-account-issuer=https://kubernetes.default.svc".into(),
                format!("--service-account-key-file={}", path("sa.crt")),
                format!("--service-account-signing-key-file={}", path("sa.key")),
                "--service-cluster-ip-range=10.0.0.0/24".into(),
                "--allow-privileged=true".into(),
            ],
            &[],
            &d.join("apiserver.log"),
        );
        let mut plane = Self {
            url,
            admin_kubeconfig,
            ca_pem: serving.ca_cert_pem.clone(),
            assets: assets.to_owned(),
            etcd,
            apiserver,
            controller_manager: None,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let exited = plane.apiserver.try_wait().ok().flatten().is_some()
                || plane.etcd.try_wait().ok().flatten().is_some();
            match plane.kubectl(&["get", "--raw", "/readyz"], None) {
                Ok(out) if out.trim() == "ok" => break,
                _ if exited || Instant::now() > deadline => {
                    return Err(format!(
                        "kube-apiserver not ready (exited: {exited}) within 60 s:\n{}\netcd:\n{}",
                        tail(&plane.dir.path().join("apiserver.log"), 30),
                        tail(&plane.dir.path().join("etcd.log"), 10)
                    ));
                }
                _ => std::thread::sleep(Duration::from_millis(200)),
            }
        }
        let kcm = assets.join("kube-controller-manager");
        if kcm.is_file() {
            let d = plane.dir.path();
            plane.controller_manager = Some(guarded(
                &kcm,
                &[
                    format!("--kubeconfig={}", plane.admin_kubeconfig.display()),
                    format!("--service-account-private-key-file={}", d.join("sa.key").display()),
                    format!("--root-ca-file={}", d.join("sa.crt").display()),
                    "--use-service-account-credentials=false".into(),
                    "--leader-elect=false".into(),
                    "--bind-address=127.0.0.1".into(),
                    "--secure-port=0".into(),
                    // No kubelet reports on the Nodes here: the node lifecycle controller would taint
                    // them unreachable and evict their pods; no cloud, no node IPAM.
                    "--controllers=*,-nodelifecycle,-nodeipam,-cloud-node-lifecycle,-service,-route"
                        .into(),
                    "--concurrent-deployment-syncs=10".into(),
                    "--concurrent-replicaset-syncs=10".into(),
                ],
                &[],
                &d.join("kube-controller-manager.log"),
            ));
        }
        Ok(plane)
    }

    /// Whether kube-controller-manager runs.
    pub fn has_controller_manager(&self) -> bool {
        self.controller_manager.is_some()
    }

    /// Runs `kubectl` as the admin, with `stdin` when given.
    ///
    /// # Errors
    /// A non-zero exit, with its stderr.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        kubectl(&self.assets, &self.admin_kubeconfig, args, stdin)
    }

    /// `kubectl apply --server-side --force-conflicts -f -` of `objects`, as the admin.
    ///
    /// # Errors
    /// As [`ControlPlane::kubectl`].
    pub fn apply(&self, objects: &[Value]) -> Result<String, String> {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        self.kubectl(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=envtest",
                "-f",
                "-",
            ],
            Some(&list.to_string()),
        )
    }

    /// A kubeconfig for ServiceAccount `namespace/name`, with a token from the TokenRequest API (what a pod
    /// of that ServiceAccount is given).
    ///
    /// # Errors
    /// The ServiceAccount does not exist, or the token request failed.
    pub fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<PathBuf, String> {
        let token = self.kubectl(
            &["create", "token", name, "-n", namespace, "--duration=24h"],
            None,
        )?;
        let path = self
            .dir
            .path()
            .join(format!("{namespace}-{name}.kubeconfig"));
        write_kubeconfig(&path, &self.url, &self.ca_pem, token.trim())?;
        Ok(path)
    }

    /// A kube client as the admin (for bulk work that `kubectl` would take minutes over).
    ///
    /// # Errors
    /// An unreadable kubeconfig.
    pub async fn admin_client(&self) -> Result<kube::Client, String> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.admin_kubeconfig)
            .map_err(|e| e.to_string())?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| e.to_string())?;
        kube::Client::try_from(config).map_err(|e| e.to_string())
    }

    /// Creates `objects` (JSON, each with its apiVersion, kind and namespace) through the API, `concurrency`
    /// at a time, as the admin: for thousands of objects. One that exists already is left as it is.
    ///
    /// # Errors
    /// The first refused create.
    pub fn create_many(&self, objects: Vec<Value>, concurrency: usize) -> Result<(), String> {
        use futures::StreamExt;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let client = self.admin_client().await?;
            let discovery = kube::discovery::Discovery::new(client.clone())
                .run()
                .await
                .map_err(|e| e.to_string())?;
            let results = futures::stream::iter(objects)
                .map(|object| {
                    let (client, discovery) = (client.clone(), &discovery);
                    async move {
                        let (group, version) =
                            match object["apiVersion"].as_str().unwrap_or("").split_once('/') {
                                Some((g, v)) => (g.to_owned(), v.to_owned()),
                                None => (
                                    String::new(),
                                    object["apiVersion"].as_str().unwrap_or("").to_owned(),
                                ),
                            };
                        let kind = object["kind"].as_str().unwrap_or("");
                        let gvk = kube::core::GroupVersionKind::gvk(&group, &version, kind);
                        let (resource, caps) = discovery
                            .resolve_gvk(&gvk)
                            .ok_or_else(|| format!("{gvk:?} is not served"))?;
                        let api: kube::Api<kube::core::DynamicObject> =
                            match object["metadata"]["namespace"].as_str() {
                                Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
                                    kube::Api::namespaced_with(client, ns, &resource)
                                }
                                _ => kube::Api::all_with(client, &resource),
                            };
                        let dynamic: kube::core::DynamicObject =
                            serde_json::from_value(object).map_err(|e| e.to_string())?;
                        match api
                            .create(&kube::api::PostParams::default(), &dynamic)
                            .await
                        {
                            // kube-controller-manager may have made it (a namespace's ServiceAccount).
                            Err(kube::Error::Api(s)) if s.reason == "AlreadyExists" => Ok(()),
                            other => other.map(drop),
                        }
                        .map_err(|e| {
                            format!(
                                "creating {}: {e}",
                                dynamic.metadata.name.unwrap_or_default()
                            )
                        })
                    }
                })
                .buffer_unordered(concurrency)
                .collect::<Vec<Result<(), String>>>()
                .await;
            results.into_iter().collect::<Result<(), String>>()
        })
    }

    /// Writes `status` (a merge patch's `{"status": ...}`) to pod `namespace/name` through the status
    /// subresource, as a kubelet does.
    ///
    /// # Errors
    /// A refused write.
    pub fn write_pod_status(
        &self,
        namespace: &str,
        name: &str,
        status: &Value,
    ) -> Result<(), String> {
        self.patch_pod_status(namespace, name, "merge", status)
    }

    /// [`ControlPlane::write_pod_status`] as a strategic merge, as the kubelet's status manager patches:
    /// conditions merge by type, so the others written (a readiness gate's) stay.
    ///
    /// # Errors
    /// A refused write.
    pub fn merge_pod_status(
        &self,
        namespace: &str,
        name: &str,
        status: &Value,
    ) -> Result<(), String> {
        self.patch_pod_status(namespace, name, "strategic", status)
    }

    fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch_type: &str,
        status: &Value,
    ) -> Result<(), String> {
        self.kubectl(
            &[
                "patch",
                "pod",
                name,
                "-n",
                namespace,
                "--subresource=status",
                &format!("--type={patch_type}"),
                "-p",
                &status.to_string(),
            ],
            None,
        )
        .map(drop)
    }

    /// Whether a server-side dry run of creating `object` comes back containing `marker` (what a webhook
    /// that mutates it added, once its caches have what it needs).
    ///
    /// # Errors
    /// The dry run refused, or the marker absent.
    pub fn dry_run_shows(&self, object: &Value, marker: &str) -> Result<(), String> {
        let out = self.kubectl(
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&object.to_string()),
        )?;
        out.contains(marker)
            .then_some(())
            .ok_or_else(|| format!("{marker} not in the dry run yet"))
    }

    /// What a kubelet would do for the pods of `namespace` matching `selector`: binds each unbound one to a
    /// Node (round robin over `node-0`..`node-11`), reports each not yet running as running through the status
    /// subresource (every container started and ready), and keeps `Ready` as the kubelet computes it: the
    /// containers ready and every readiness gate's condition `True` (strategic merges by condition type, so
    /// the gates' conditions others write stay). Returns the pods' names.
    ///
    /// # Errors
    /// A refused binding or status write.
    pub fn kubelet(&self, namespace: &str, selector: &str) -> Result<Vec<String>, String> {
        let list = self.kubectl(
            &["get", "pods", "-n", namespace, "-l", selector, "-o", "json"],
            None,
        )?;
        let list: Value = serde_json::from_str(&list).map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        for (i, pod) in list["items"].as_array().into_iter().flatten().enumerate() {
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if !pod["metadata"]["deletionTimestamp"].is_null() {
                continue;
            }
            if pod["spec"]["nodeName"].is_null() {
                let binding = json!({"apiVersion": "v1", "kind": "Binding",
                    "metadata": {"name": name, "namespace": namespace},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": format!("node-{}", i % 12)}});
                self.kubectl(
                    &[
                        "create",
                        "--raw",
                        &format!("/api/v1/namespaces/{namespace}/pods/{name}/binding"),
                        "-f",
                        "-",
                    ],
                    Some(&binding.to_string()),
                )?;
            }
            // Ready as the kubelet decides it: the containers ready and every readiness gate's condition
            // True (a gate's condition is someone else's, e.g. the pod-readiness controller's KruisePodReady).
            let condition = |t: &str| {
                pod["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == t))
                    .map(|c| c["status"].clone())
            };
            let gates_met = pod["spec"]["readinessGates"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|g| {
                    g["conditionType"]
                        .as_str()
                        .is_some_and(|t| condition(t) == Some(json!("True")))
                });
            let ready = if gates_met { "True" } else { "False" };
            if pod["status"]["phase"] == "Running" && condition("Ready") != Some(json!(ready)) {
                // A strategic merge by condition type, as the kubelet's status manager patches: the gates'
                // conditions stay.
                let status =
                    json!({"status": {"conditions": [{"type": "Ready", "status": ready}]}});
                self.merge_pod_status(namespace, &name, &status)?;
            }
            if pod["status"]["phase"] != "Running" {
                let statuses: Vec<Value> = pod["spec"]["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let image = c["image"].as_str().unwrap_or_default();
                        json!({"name": c["name"], "image": image, "ready": true, "started": true,
                            "containerID": format!("containerd://{name}-{}", c["name"].as_str().unwrap_or_default()),
                            "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                            "imageID": format!("docker-pullable://{image}@sha256:1111")})
                    })
                    .collect();
                let status = json!({"status": {"phase": "Running", "podIP": format!("10.1.0.{}", i % 250 + 2),
                    "conditions": [{"type": "Ready", "status": ready}, {"type": "ContainersReady", "status": "True"},
                        {"type": "PodScheduled", "status": "True"}, {"type": "Initialized", "status": "True"}],
                    "containerStatuses": statuses}});
                self.merge_pod_status(namespace, &name, &status)?;
            }
            names.push(name);
        }
        Ok(names)
    }

    /// Where this control plane's files live.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The apiserver's log, last lines.
    pub fn apiserver_log(&self, lines: usize) -> String {
        tail(&self.dir.path().join("apiserver.log"), lines)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if let Some(kcm) = &mut self.controller_manager {
            let _ = terminate(kcm, Duration::from_secs(10));
        }
        let _ = terminate(&mut self.apiserver, Duration::from_secs(10));
        let _ = terminate(&mut self.etcd, Duration::from_secs(10));
        if std::env::var_os("KRUISE_ENVTEST_KEEP").is_some() {
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("a temp dir"));
            println!("logs and files kept in {}", dir.keep().display());
        }
    }
}

fn write_kubeconfig(path: &Path, server: &str, ca_pem: &str, token: &str) -> Result<(), String> {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "envtest", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "user", "user": {"token": token}}],
        "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "user"}}],
        "current-context": "envtest",
    });
    std::fs::write(path, config.to_string()).map_err(|e| format!("{}: {e}", path.display()))
}

fn kubectl(
    assets: &Path,
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, String> {
    // A discovery cache of this control plane's own (beside its kubeconfig): kubectl's default one is keyed
    // by host:port, so a plane on a port an earlier plane used (other CRD versions) read stale discovery and
    // asked for a version this one does not serve.
    let cache = kubeconfig.parent().map_or_else(
        || PathBuf::from("kubectl-cache"),
        |d| d.join("kubectl-cache"),
    );
    let mut child = Command::new(assets.join("kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("kubectl: {e}"))?;
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(input.as_bytes())
            .map_err(|e| format!("kubectl stdin: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("kubectl: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "kubectl {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ))
    }
}

/// `deploy/base` as kustomize renders it.
///
/// # Errors
/// A rendering error.
pub fn render_base() -> Result<Vec<Value>, String> {
    kustomize::build(&root().join("deploy/base"))
}

/// The shipped ServiceAccount's RBAC (every Role, ClusterRole and binding of `base` naming it) copied for
/// ServiceAccount `name` (created too), with `resource` taken out of every rule: an identity that lacks
/// exactly that grant.
pub fn identity_without(base: &[Value], name: &str, resource: &str) -> Vec<Value> {
    identity_with(base, name, |rule| {
        if let Some(resources) = rule["resources"].as_array_mut() {
            resources.retain(|r| r != resource);
        }
    })
}

/// [`identity_without`] with `verb` taken out of every rule on `resource` (a rule naming other resources
/// too is split, so they keep it).
pub fn identity_without_verb(base: &[Value], name: &str, resource: &str, verb: &str) -> Vec<Value> {
    identity_with_rules(base, name, |rule| {
        let names = |r: &Value| {
            r["resources"]
                .as_array()
                .is_some_and(|rs| rs.iter().any(|x| x == resource))
        };
        if !names(&rule) {
            return vec![rule];
        }
        let mut others = rule.clone();
        others["resources"]
            .as_array_mut()
            .unwrap()
            .retain(|r| r != resource);
        let mut this = rule;
        this["resources"] = json!([resource]);
        this["verbs"]
            .as_array_mut()
            .into_iter()
            .for_each(|v| v.retain(|x| x != verb));
        [others, this]
            .into_iter()
            .filter(|r| {
                r["resources"].as_array().is_some_and(|x| !x.is_empty())
                    && r["verbs"].as_array().is_some_and(|x| !x.is_empty())
            })
            .collect()
    })
}

fn identity_with(base: &[Value], name: &str, edit: impl Fn(&mut Value)) -> Vec<Value> {
    identity_with_rules(base, name, |mut rule| {
        edit(&mut rule);
        if rule["resources"].as_array().is_some_and(|r| r.is_empty()) {
            Vec::new()
        } else {
            vec![rule]
        }
    })
}

/// The shipped ServiceAccount's RBAC copied for ServiceAccount `name`, each rule replaced by what `edit`
/// makes of it.
fn identity_with_rules(
    base: &[Value],
    name: &str,
    edit: impl Fn(Value) -> Vec<Value>,
) -> Vec<Value> {
    let mut objects = vec![json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": NAMESPACE}})];
    let bound: Vec<&Value> = base
        .iter()
        .filter(|o| is_kind(o, "RoleBinding") || is_kind(o, "ClusterRoleBinding"))
        .filter(|b| {
            b["subjects"].as_array().is_some_and(|s| {
                s.iter()
                    .any(|s| s["kind"] == "ServiceAccount" && s["name"] == SERVICE_ACCOUNT)
            })
        })
        .collect();
    for binding in bound {
        let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        let Some(role) = base
            .iter()
            .find(|o| is_kind(o, role_kind) && o["metadata"]["name"] == role_name)
        else {
            continue;
        };
        let copy_name = format!("{name}-{role_name}");
        let mut role = role.clone();
        role["metadata"] = json!({"name": copy_name, "namespace": role["metadata"]["namespace"]});
        if role["metadata"]["namespace"].is_null() {
            role["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("namespace");
        }
        let rules: Vec<Value> = role["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|rule| edit(rule.clone()))
            .collect();
        role["rules"] = Value::Array(rules);
        let mut binding = binding.clone();
        binding["metadata"]["name"] = json!(copy_name);
        binding["roleRef"]["name"] = json!(copy_name);
        binding["subjects"] =
            json!([{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]);
        objects.push(role);
        objects.push(binding);
    }
    objects
}

/// Renders `deploy/base` and applies all of it but the webhook configurations and the Deployment (the
/// server runs here as a process; each scenario installs the configurations it needs), then waits for the
/// CRDs to be established. Returns what was rendered.
///
/// # Errors
/// A rendering or `kubectl` error.
pub fn install_base(plane: &ControlPlane) -> Result<Vec<Value>, String> {
    let base = render_base()?;
    let rest: Vec<Value> = base
        .iter()
        .filter(|o| {
            ![
                "MutatingWebhookConfiguration",
                "ValidatingWebhookConfiguration",
                "Deployment",
            ]
            .iter()
            .any(|k| is_kind(o, k))
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
    Ok(base)
}

/// External certificates for the server on 127.0.0.1, as cert-manager would issue them: `tls.crt`,
/// `tls.key` and `ca.crt` in `<dir>/external-certs`. Returns the directory and the CA (PEM).
///
/// # Errors
/// A file that cannot be written.
pub fn external_certs(dir: &Path) -> Result<(PathBuf, String), String> {
    let now = time::OffsetDateTime::now_utc();
    let policy = kruise_certs::Policy::new(
        "kruise-webhook-service.kruise-system.svc",
        ["127.0.0.1".to_owned()],
    );
    let bundle = kruise_certs::execute(&kruise_certs::CertPlan::Fresh, None, now, &policy)
        .map_err(|e| e.to_string())?;
    let certs = dir.join("external-certs");
    std::fs::create_dir_all(&certs).map_err(|e| e.to_string())?;
    for (name, text) in [
        ("tls.crt", &bundle.cert_pem),
        ("tls.key", &bundle.key_pem),
        ("ca.crt", &bundle.ca_cert_pem),
    ] {
        std::fs::write(certs.join(name), text).map_err(|e| e.to_string())?;
    }
    Ok((certs, bundle.ca_cert_pem))
}

/// Whether `object` is of `kind`.
pub fn is_kind(object: &Value, kind: &str) -> bool {
    object["kind"] == kind
}

/// The webhook configurations of `objects`.
pub fn webhook_configurations(objects: &[Value]) -> Vec<Value> {
    objects
        .iter()
        .filter(|o| {
            is_kind(o, "MutatingWebhookConfiguration")
                || is_kind(o, "ValidatingWebhookConfiguration")
        })
        .cloned()
        .collect()
}

/// Points every webhook of `configuration` (and a CRD's conversion webhook) at `https://<host>:<port><path>`
/// with `ca_pem` as its caBundle: what cert-manager and a URL-mode install do for external certificates.
pub fn to_url(object: &mut Value, host: &str, port: u16, ca_pem: &str) {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let point = |client: &mut Value| {
        let path = client["service"]["path"].as_str().unwrap_or("/").to_owned();
        *client = json!({"url": format!("https://{host}:{port}{path}"), "caBundle": ca});
    };
    if let Some(webhooks) = object.get_mut("webhooks").and_then(Value::as_array_mut) {
        for webhook in webhooks {
            point(&mut webhook["clientConfig"]);
        }
    }
    if let Some(client) = object.pointer_mut("/spec/conversion/webhook/clientConfig") {
        point(client);
    }
}

/// What a replica of the server is started with.
#[derive(Clone, Debug)]
pub struct ReplicaOptions {
    /// Its own loopback address (127.0.0.N): every replica binds the same ports on its own address, as pods
    /// of one Deployment do.
    pub ip: Ipv4Addr,
    /// The HTTPS port (the same for every replica).
    pub port: u16,
    /// `WEBHOOK_HOST` (URL mode), when set.
    pub webhook_host: Option<String>,
    /// `--cert-mode=external` with certificates from this directory; else self-managed in a directory of
    /// its own.
    pub external_certs: Option<PathBuf>,
    /// More arguments.
    pub extra_args: Vec<String>,
}

/// A running server process.
pub struct Replica {
    child: Child,
    /// Its log.
    pub log: PathBuf,
    /// `http://<ip>:<probe port>`.
    pub probe: SocketAddr,
    /// `http://<ip>:<metrics port>`.
    pub metrics: SocketAddr,
    /// When it was started.
    pub started: Instant,
}

/// The server binary the tests run: `KRUISE_WEBHOOK_BINARY` (a release build, or another version's), else
/// the one `cargo test` built.
pub fn server_binary() -> PathBuf {
    std::env::var_os("KRUISE_WEBHOOK_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kruise-webhook")))
}

impl Replica {
    /// Starts the server as `deploy/base`'s Deployment runs it (its args, and its env but for the
    /// downward API's `POD_NAMESPACE`, which is `kruise-system`), with `kubeconfig` as its credentials
    /// (the ServiceAccount's), listening on `options.ip`.
    pub fn start(
        deployment: &Value,
        kubeconfig: &Path,
        options: &ReplicaOptions,
        dir: &Path,
        name: &str,
    ) -> Self {
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let mut args: Vec<String> = container["args"]
            .as_array()
            .expect("the Deployment's args")
            .iter()
            .map(|a| a.as_str().expect("a string arg").to_owned())
            .collect();
        let mut envs: Vec<(String, String)> = container["env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| {
                Some((
                    e["name"].as_str()?.to_owned(),
                    e["value"].as_str()?.to_owned(),
                ))
            })
            .collect();
        envs.push(("POD_NAMESPACE".into(), NAMESPACE.into()));
        envs.push(("KUBECONFIG".into(), kubeconfig.display().to_string()));
        if let Some(host) = &options.webhook_host {
            envs.push(("WEBHOOK_HOST".into(), host.clone()));
        }
        let ip = options.ip;
        let (metrics, probe) = (
            SocketAddr::from((ip, free_port(ip))),
            SocketAddr::from((ip, free_port(ip))),
        );
        args.extend([
            format!("--bind-address={ip}"),
            format!("--port={}", options.port),
            format!("--metrics-addr={metrics}"),
            format!("--health-probe-addr={probe}"),
        ]);
        match &options.external_certs {
            Some(certs) => args.extend([
                "--cert-mode=external".into(),
                format!("--cert-dir={}", certs.display()),
            ]),
            None => {
                let certs = dir.join(format!("{name}-certs"));
                let _ = std::fs::create_dir_all(&certs);
                args.push(format!("--cert-dir={}", certs.display()));
            }
        }
        args.extend(options.extra_args.iter().cloned());
        let log = dir.join(format!("{name}.log"));
        let child = guarded(&server_binary(), &args, &envs, &log);
        Self {
            child,
            log,
            probe,
            metrics,
            started: Instant::now(),
        }
    }

    /// `GET /readyz?verbose` on the probe port: (status code, body).
    pub fn readyz(&self) -> Option<(u16, String)> {
        http_get(self.probe, "/readyz?verbose")
    }

    /// Waits until `/readyz` answers 200, up to `within`; how long after the start it did.
    ///
    /// # Errors
    /// Not ready in time: the last `/readyz?verbose` body and the log's tail; or the process exited.
    pub fn wait_ready(&mut self, within: Duration) -> Result<Duration, String> {
        let deadline = self.started + within;
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Err(format!(
                    "the server exited ({status}):\n{}",
                    server_log(&self.log, 30)
                ));
            }
            let last = match self.readyz() {
                Some((200, _)) => return Ok(self.started.elapsed()),
                other => other,
            };
            if Instant::now() > deadline {
                return Err(format!(
                    "not ready within {within:?}; /readyz?verbose: {last:?}\nlog:\n{}",
                    server_log(&self.log, 30)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, and the exit within `within`.
    ///
    /// # Errors
    /// It did not exit in time.
    pub fn stop(mut self, within: Duration) -> Result<(), String> {
        terminate(&mut self.child, within)
            .map_err(|e| format!("{e}\nlog:\n{}", server_log(&self.log, 20)))
    }
}

impl Drop for Replica {
    /// A replica left running (a scenario that failed) is stopped as Kubernetes stops a pod: SIGTERM, so
    /// that it releases the Lease for the next scenario, then SIGKILL after 5 s.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = terminate(&mut self.child, Duration::from_secs(5));
        }
    }
}

/// A plain HTTP/1.0 GET: (status, body), or None when nothing answers.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    use std::io::Read;
    let mut stream =
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Some((status, body))
}
