//! Certificates, acting side (DECISIONS 15): `kruise-certs` plans, this module reads and writes.
//!
//! - standalone: a CA and serving certificate generated in memory; the CA is written to
//!   `<cert-dir>/ca.crt` so clients can trust it.
//! - external: `tls.crt` / `tls.key` / `ca.crt` in `--cert-dir` (cert-manager), re-read on change; the
//!   directory is never written.
//! - self-managed: the Secret is the one source of truth for every replica; the caBundle is patched into our
//!   webhook configurations and the Kruise CRDs' conversion webhooks (never the CRDs beside OpenKruise:
//!   DECISIONS 27).
//!
//! In every mode the serving certificate is installed into the [`CertStore`], which every TLS handshake reads.
//! The API server calls us through our Service or, with `WEBHOOK_HOST` set (URL mode, DECISIONS 21), at
//! `https://<WEBHOOK_HOST>:<port><path>`: see [`Endpoint`]. Readiness learns from every look at our webhook
//! configurations whether the API server trusts us ([`CaBundleSeen`], DECISIONS 22).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use arc_swap::ArcSwap;
use base64::Engine;
use futures::{FutureExt, StreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use time::OffsetDateTime;

use kruise_certs::{CertBundle, CertPlan, Policy};
use kruise_webhooks::registry;

use crate::config::{CertSource, ServeConfig};
use crate::server::readiness::{CaBundleSeen, Readiness};
use crate::server::tls::CertStore;

/// OpenKruise's names of the configurations we keep, the defaults of `--mutating-webhook-configuration-name`
/// and `--validating-webhook-configuration-name` ([`ServeConfig::mutating_configuration`] and
/// [`ServeConfig::validating_configuration`] are the ones in use).
pub use crate::cli::{MUTATING_CONFIGURATION, VALIDATING_CONFIGURATION};

/// Runs the certificate loop of the configured mode.
pub struct CertManager {
    stop: tokio::sync::watch::Sender<bool>,
    bundle: Arc<ArcSwap<Option<CertBundle>>>,
    /// The kinds served, which decide the webhooks kept in our configurations.
    served: tokio::sync::watch::Sender<registry::Served>,
}

impl CertManager {
    /// Loads or creates the first certificate (waiting up to `--webhook-initialize-timeout`), installs it,
    /// and keeps it current in the background.
    ///
    /// # Errors
    /// No usable certificate before the deadline, or an unwritable cert dir in standalone mode.
    pub async fn start(
        config: &ServeConfig,
        store: Arc<CertStore>,
        client: Option<Client>,
        served: registry::Served,
        readiness: Arc<Readiness>,
    ) -> anyhow::Result<Self> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let (served_tx, served) = tokio::sync::watch::channel(served);
        let bundle = Arc::new(ArcSwap::from_pointee(None));
        if client.is_some() && config.cert_source != CertSource::Standalone {
            // Our webhook configurations are judged at every sync: not ready before they trust us.
            readiness.await_ca_bundle();
        }
        let worker = Worker {
            config: config.clone(),
            store,
            client,
            bundle: bundle.clone(),
            installed: None,
            served,
            readiness,
        };
        let first = tokio::time::timeout(config.init_timeout, worker.first_sync());
        let worker = match first.await {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => return Err(e),
            Err(_) => anyhow::bail!(
                "failed to start webhook controller for waiting more than {:.6}s",
                config.init_timeout.as_secs_f64()
            ),
        };
        tokio::spawn(worker.run(stopped));
        Ok(Self {
            stop,
            bundle,
            served: served_tx,
        })
    }

    /// The cluster serves `served` now (its CRDs changed: docs/startup-order.md): our configurations are
    /// synced at once, a newly served kind's webhooks put back, a removed kind's taken out.
    pub fn serve_kinds(&self, served: registry::Served) {
        self.served
            .send_if_modified(|s| std::mem::replace(s, served) != served);
    }

    /// Stops the background loop.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    /// The caBundle clients must trust (PEM), once known.
    pub fn ca_bundle_pem(&self) -> Option<String> {
        self.bundle
            .load()
            .as_ref()
            .as_ref()
            .map(|b| b.ca_bundle_pem.clone())
    }
}

/// How long a change of the Secret or a configuration waits for the rest of its burst before the sync.
const NUDGE_SETTLE: Duration = Duration::from_millis(100);

/// A change of what the sync keeps, as it happens: the Secret (self-managed mode), and our two webhook
/// configurations (both modes: a caBundle reset by an apply, a webhook removed, is
/// put back at once, not at the next [`ServeConfig::cert_sync_interval`], which stays as the safety net and
/// for the time-driven renewal). Each watch is of one object by name (`fieldSelector=metadata.name=`, which
/// the shipped RBAC's `resourceNames` grant); a watch that fails is retried with backoff and logged at debug,
/// the periodic sync still running.
fn nudges(
    client: &Client,
    config: &ServeConfig,
) -> futures::stream::BoxStream<'static, &'static str> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use kube::runtime::{WatchStreamExt, watcher};
    fn changes<K>(
        api: Api<K>,
        name: &str,
        what: &'static str,
    ) -> futures::stream::BoxStream<'static, &'static str>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    {
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        watcher(api, config)
            .default_backoff()
            .filter_map(move |event| async move {
                match event {
                    Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => Some(what),
                    Ok(_) => None,
                    Err(error) => {
                        tracing::debug!(%error, what, "watching for certificate sync failed; retrying");
                        None
                    }
                }
            })
            .boxed()
    }
    let mut streams = vec![
        changes(
            Api::<MutatingWebhookConfiguration>::all(client.clone()),
            &config.mutating_configuration,
            "mutating webhook configuration",
        ),
        changes(
            Api::<ValidatingWebhookConfiguration>::all(client.clone()),
            &config.validating_configuration,
            "validating webhook configuration",
        ),
    ];
    if config.cert_source == CertSource::SelfManaged {
        streams.push(changes(
            Api::<Secret>::namespaced(client.clone(), &config.namespace),
            &config.secret_name,
            "secret",
        ));
    }
    futures::stream::select_all(streams).boxed()
}

struct Worker {
    config: ServeConfig,
    store: Arc<CertStore>,
    client: Option<Client>,
    bundle: Arc<ArcSwap<Option<CertBundle>>>,
    /// (cert, key) currently installed, to skip needless swaps.
    installed: Option<(String, String)>,
    /// Which webhooks are served (the others are dropped from our configurations); a change syncs at once.
    served: tokio::sync::watch::Receiver<registry::Served>,
    /// Told what each look at our webhook configurations saw.
    readiness: Arc<Readiness>,
}

/// The serving certificate's names: the Service's (and the conversion Service's), and in URL mode also
/// `WEBHOOK_HOST` (an IP address becomes an IP SAN), the same certificate in both modes otherwise (DECISIONS 21),
/// so replicas of either mode during a switch accept each other's. A certificate lacking a name (an install
/// from before the conversion Service) is issued again (`kruise_certs::plan`).
fn policy(config: &ServeConfig) -> Policy {
    let service = format!("{}.{}.svc", config.service_name, config.namespace);
    let conversion = format!(
        "{}.{}.svc",
        config.conversion_service_name, config.namespace
    );
    let names = [
        format!("{service}.cluster.local"),
        conversion.clone(),
        format!("{conversion}.cluster.local"),
    ];
    // Policy::new keeps the first of duplicates: one Service for both gives the names it always had.
    Policy::new(
        service,
        names.into_iter().chain(config.webhook_host.clone()),
    )
}

/// Where the API server calls us (spec/webhook-server.md §6.4 step 3, §6.6; DECISIONS 21).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint<'a> {
    /// Our Service `(namespace, name)`: a webhook naming it calls us, in either mode.
    pub service: (&'a str, &'a str),
    /// URL mode: `WEBHOOK_HOST` (an IPv6 address without brackets) and the listener port. A webhook with an
    /// `https` url on that host calls us too, and every webhook that calls us is given
    /// `https://<host>:<port><path>` in place of the Service.
    pub url: Option<(&'a str, u16)>,
}

impl<'a> Endpoint<'a> {
    /// The endpoint of `config`.
    pub fn of(config: &'a ServeConfig) -> Self {
        Self {
            service: (&config.namespace, &config.service_name),
            url: config
                .webhook_host
                .as_deref()
                .map(|host| (host, config.tls_addr.port())),
        }
    }

    /// The path a webhook's `clientConfig` (raw JSON) calls us on (`""` when our Service is named without
    /// one); `None` for another Service, or a URL not on `WEBHOOK_HOST` (every URL outside URL mode).
    fn path_of<'v>(&self, client_config: &'v Value) -> Option<&'v str> {
        if let Some(svc) = client_config.get("service").filter(|s| !s.is_null()) {
            let text = |k: &str| svc.get(k).and_then(Value::as_str);
            return (text("namespace") == Some(self.service.0)
                && text("name") == Some(self.service.1))
            .then(|| text("path").unwrap_or(""));
        }
        let (host, _) = self.url?;
        let rest = client_config
            .get("url")?
            .as_str()?
            .strip_prefix("https://")?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let url_host = match authority.strip_prefix('[') {
            Some(bracketed) => bracketed.split_once(']')?.0,
            None => authority.split_once(':').map_or(authority, |(h, _)| h),
        };
        url_host.eq_ignore_ascii_case(host).then_some(path)
    }

    /// URL mode: the `clientConfig` that calls us on `path` trusting `ca_b64`: a `url` and no `service` (the
    /// API server refuses both); `None` outside URL mode.
    fn url_client_config(&self, path: &str, ca_b64: &str) -> Option<Value> {
        let (host, port) = self.url?;
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        Some(json!({"url": format!("https://{host}:{port}{path}"), "caBundle": ca_b64}))
    }
}

impl Worker {
    async fn first_sync(mut self) -> anyhow::Result<Self> {
        let mut delay = Duration::from_millis(200);
        loop {
            match self.sync().await {
                Ok(()) => return Ok(self),
                Err(e) if self.config.cert_source == CertSource::Standalone => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "certificate sync failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn run(mut self, mut stopped: tokio::sync::watch::Receiver<bool>) {
        let period = match self.config.cert_source {
            // Files change under us (cert-manager renewals): look often, it is cheap.
            CertSource::External => self.config.cert_sync_interval.min(Duration::from_secs(10)),
            _ => self.config.cert_sync_interval,
        };
        let mut nudges = match (&self.client, self.config.cert_source) {
            (Some(client), CertSource::SelfManaged | CertSource::External) => {
                nudges(client, &self.config)
            }
            _ => futures::stream::pending().boxed(),
        };
        loop {
            let nudged = tokio::select! {
                _ = stopped.wait_for(|s| *s) => return,
                _ = tokio::time::sleep(period) => None,
                changed = self.served.changed() => if changed.is_err() { return } else { None },
                Some(what) = nudges.next() => Some(what),
            };
            if let Some(what) = nudged {
                // A burst (our own writes, an apply of several objects) is one sync.
                tokio::time::sleep(NUDGE_SETTLE).await;
                while let Some(Some(_)) = nudges.next().now_or_never() {}
                tracing::debug!(
                    changed = what,
                    "certificate sync: an object it keeps changed"
                );
            }
            if let Err(e) = self.sync().await {
                tracing::warn!(error = %format!("{e:#}"), "certificate sync failed; keeping the current certificate");
            }
        }
    }

    fn install(&mut self, bundle: &CertBundle) -> anyhow::Result<()> {
        let pair = (bundle.cert_pem.clone(), bundle.key_pem.clone());
        if self.installed.as_ref() != Some(&pair) {
            self.store
                .install(pair.0.as_bytes(), pair.1.as_bytes())
                .context("installing the serving certificate")?;
            tracing::info!(
                generation = self.store.generation(),
                "serving certificate installed"
            );
            self.installed = Some(pair);
        }
        self.bundle.store(Arc::new(Some(bundle.clone())));
        Ok(())
    }

    async fn sync(&mut self) -> anyhow::Result<()> {
        match self.config.cert_source {
            CertSource::Standalone => self.sync_standalone(),
            CertSource::External => {
                self.sync_external()?;
                self.check_external_ca_bundles().await;
                Ok(())
            }
            CertSource::SelfManaged => self.sync_secret().await,
        }
    }

    fn sync_standalone(&mut self) -> anyhow::Result<()> {
        let now = OffsetDateTime::now_utc();
        let policy = policy(&self.config);
        let current = self.bundle.load_full();
        let current = current.as_ref().as_ref();
        let plan = kruise_certs::plan(current, now, &policy);
        if matches!(plan, CertPlan::Keep) {
            return Ok(());
        }
        let next = kruise_certs::execute(&plan, current, now, &policy)?;
        write_files(&self.config.cert_dir, &next).context("writing certificates")?;
        tracing::info!(plan = %plan, ca = %self.config.cert_dir.join("ca.crt").display(), "standalone certificates ready");
        self.install(&next)
    }

    fn sync_external(&mut self) -> anyhow::Result<()> {
        let dir = &self.config.cert_dir;
        let read = |name: &str| -> anyhow::Result<String> {
            let path = dir.join(name);
            std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
        };
        let (crt, key, ca) = (read("tls.crt")?, read("tls.key")?, read("ca.crt")?);
        let current = self.bundle.load_full();
        if let Some(b) = current.as_ref()
            && b.cert_pem == crt
            && b.key_pem == key
            && b.ca_bundle_pem == ca
        {
            return Ok(());
        }
        let bundle =
            kruise_certs::from_external(&crt, &key, &ca).context("external certificates")?;
        self.install(&bundle)
    }

    /// External certificates: our configurations are never written, but readiness waits until every served
    /// webhook of them trusts `ca.crt` (cert-manager's cainjector fills them in), with OpenKruise's message
    /// while it does not (webhook-server.md §6.5).
    async fn check_external_ca_bundles(&self) {
        let (Some(client), Some(bundle)) = (&self.client, self.bundle.load_full().as_ref().clone())
        else {
            return;
        };
        self.keep_configurations(client, &ca_b64(&bundle), false)
            .await;
    }

    /// Looks at our two webhook configurations and tells readiness what it saw. With self-managed certificates
    /// (`write`) each is first brought to its desired form ([`desired_configuration`]).
    async fn keep_configurations(&self, client: &Client, ca_b64: &str, write: bool) {
        let endpoint = Endpoint::of(&self.config);
        let served = self.served_paths();
        let mut seen = CaBundleSeen::InPlace;
        for (resource, kind, name) in configuration_resources(&self.config) {
            let api: Api<kube::core::DynamicObject> = Api::all_with(client.clone(), &resource);
            let target = (kind, name);
            let look = keep_configuration(&api, target, &endpoint, &served, ca_b64, write).await;
            seen = seen.max(look);
        }
        self.readiness.observe_ca_bundle(seen);
    }

    fn served_paths(&self) -> Vec<&'static str> {
        registry::routes(&self.config.gates, *self.served.borrow())
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    async fn sync_secret(&mut self) -> anyhow::Result<()> {
        let client = self
            .client
            .clone()
            .context("self-managed certificates need a cluster")?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &self.config.namespace);
        let name = self.config.secret_name.clone();
        let policy = policy(&self.config);
        let mut bundle = None;
        // A lost race (AlreadyExists, Conflict) re-reads: the Secret wins (DECISIONS 15, spec §12 scenario 19).
        for _ in 0..3 {
            let existing = secrets
                .get_opt(&name)
                .await
                .context("failed to ensure certs: reading the Secret")?;
            let data: BTreeMap<String, Vec<u8>> = existing
                .as_ref()
                .and_then(|s| s.data.clone())
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            let current = CertBundle::from_secret_data(&data).unwrap_or_else(|e| {
                tracing::warn!(error = %e, secret = %name, "certificate Secret holds unusable data; regenerating");
                None
            });
            let now = OffsetDateTime::now_utc();
            let plan = kruise_certs::plan(current.as_ref(), now, &policy);
            if !plan.changes_secret() {
                bundle = current;
                break;
            }
            let next = kruise_certs::execute(&plan, current.as_ref(), now, &policy)?;
            let data = next
                .to_secret_data()
                .into_iter()
                .map(|(k, v)| (k, ByteString(v)))
                .collect();
            let result = match existing {
                None => {
                    let secret = Secret {
                        metadata: kube::api::ObjectMeta {
                            name: Some(name.clone()),
                            namespace: Some(self.config.namespace.clone()),
                            ..Default::default()
                        },
                        data: Some(data),
                        ..Default::default()
                    };
                    secrets.create(&PostParams::default(), &secret).await
                }
                Some(mut secret) => {
                    secret.data = Some(data);
                    secret.metadata.managed_fields = None;
                    secrets
                        .replace(&name, &PostParams::default(), &secret)
                        .await
                }
            };
            match result {
                Ok(_) => {
                    tracing::info!(plan = %plan, secret = %name, "certificate Secret written");
                    bundle = Some(next);
                    break;
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    tracing::info!(secret = %name, "another replica wrote the certificate Secret first; re-reading");
                }
                Err(e) => return Err(e).context("failed to ensure certs: writing the Secret"),
            }
        }
        let bundle = bundle.context("failed to ensure certs: the Secret kept changing under us")?;
        if let Err(e) = write_files(&self.config.cert_dir, &bundle) {
            tracing::debug!(error = %e, "cert dir not writable; serving from memory");
        }
        self.install(&bundle)?;
        let ca_b64 = ca_b64(&bundle);
        // The certificate is what serving needs; keeping caBundles current is retried every interval and
        // never fails the sync: readiness waits for the configurations (DECISIONS 22), not for the CRDs (an
        // OpenKruise CRD we may not patch must not keep every replica unready).
        self.keep_configurations(&client, &ca_b64, true).await;
        // Beside OpenKruise the Kruise CRDs are kruise-manager's: it points their conversion at its own Service
        // every minute, and a write of ours would flap with it (DECISIONS 27).
        if !self.config.beside_openkruise {
            ensure_crds(
                &client,
                &Endpoint::of(&self.config),
                &self.config.conversion_service_name,
                &ca_b64,
            )
            .await;
        }
        Ok(())
    }
}

/// The caBundle as the API objects carry it.
fn ca_b64(bundle: &CertBundle) -> String {
    base64::engine::general_purpose::STANDARD.encode(bundle.ca_bundle_pem.as_bytes())
}

/// Writes OpenKruise's file layout plus `ca.crt` (what curl and cert-manager users expect).
fn write_files(dir: &Path, bundle: &CertBundle) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let files: [(&str, &str); 8] = [
        ("ca.crt", &bundle.ca_bundle_pem),
        ("ca-cert.pem", &bundle.ca_cert_pem),
        ("cert.pem", &bundle.cert_pem),
        ("tls.crt", &bundle.cert_pem),
        ("key.pem", &bundle.key_pem),
        ("tls.key", &bundle.key_pem),
        ("ca-key.pem", &bundle.ca_key_pem),
        ("ca-bundle.pem", &bundle.ca_bundle_pem),
    ];
    for (name, content) in files {
        let path: PathBuf = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, content)?;
        if name.contains("key") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        }
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

/// Our two webhook configurations (their names from the flags): the resource, its kind, its name.
fn configuration_resources(
    config: &ServeConfig,
) -> [(kube::core::ApiResource, &'static str, &str); 2] {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    [
        (
            kube::core::ApiResource::erase::<MutatingWebhookConfiguration>(&()),
            "MutatingWebhookConfiguration",
            &config.mutating_configuration,
        ),
        (
            kube::core::ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
            "ValidatingWebhookConfiguration",
            &config.validating_configuration,
        ),
    ]
}

/// The path a webhook (raw JSON) calls us on, if it calls us ([`Endpoint::path_of`]).
fn our_path<'v>(hook: &'v Value, endpoint: &Endpoint<'_>) -> Option<&'v str> {
    endpoint.path_of(hook.get("clientConfig")?)
}

/// Whether a webhook of `current` (a configuration, raw JSON) that calls us on a served path (through our Service,
/// or in URL mode a url on `WEBHOOK_HOST`) carries a caBundle other than `ca_b64`. Webhooks of other services
/// and hosts, and unserved paths, are not ours to check.
pub fn ca_bundle_mismatch(
    current: &Value,
    endpoint: &Endpoint<'_>,
    served: &[&str],
    ca_b64: &str,
) -> bool {
    let hooks = current.get("webhooks").and_then(Value::as_array);
    hooks.into_iter().flatten().any(|hook| {
        our_path(hook, endpoint).is_some_and(|path| served.contains(&path))
            && hook
                .pointer("/clientConfig/caBundle")
                .and_then(Value::as_str)
                != Some(ca_b64)
    })
}

/// The desired form of a webhook configuration (raw JSON): the webhooks of the `template` annotation (captured
/// from the object on first sight, as OpenKruise does), minus the ones calling us on a path this version does
/// not serve, each of ours with `caBundle` set and, in URL mode, its `clientConfig` replaced by our url (no
/// `service` beside it). `None` when nothing changes.
pub fn desired_configuration(
    current: &Value,
    endpoint: &Endpoint<'_>,
    served: &[&str],
    ca_b64: &str,
) -> Result<Option<Value>, String> {
    let live = current
        .get("webhooks")
        .cloned()
        .unwrap_or_else(|| json!([]));
    let template_text = current
        .pointer("/metadata/annotations/template")
        .and_then(Value::as_str)
        .unwrap_or("");
    let template: Value = if template_text.is_empty() {
        live.clone()
    } else {
        serde_json::from_str(template_text)
            .map_err(|e| format!("parsing annotation template: {e}"))?
    };
    let mut webhooks = Vec::new();
    for mut hook in template.as_array().cloned().unwrap_or_default() {
        let url_client_config = match our_path(&hook, endpoint) {
            None => {
                webhooks.push(hook);
                continue;
            }
            Some(path) if !served.contains(&path) => {
                tracing::info!(webhook = ?hook.get("name"), path, "ignoring webhook in configuration: path not served");
                continue;
            }
            Some(path) => endpoint.url_client_config(path, ca_b64),
        };
        match url_client_config {
            Some(url) => hook["clientConfig"] = url,
            None => {
                if let Some(cc) = hook.get_mut("clientConfig").and_then(Value::as_object_mut) {
                    cc.insert("caBundle".into(), Value::String(ca_b64.to_owned()));
                }
            }
        }
        webhooks.push(hook);
    }
    let mut desired = current.clone();
    desired["webhooks"] = Value::Array(webhooks);
    if template_text.is_empty() {
        let captured = serde_json::to_string(&template).map_err(|e| e.to_string())?;
        let meta = desired["metadata"]
            .as_object_mut()
            .ok_or("object has no metadata")?;
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        annotations["template"] = Value::String(captured);
    }
    Ok((desired != *current).then_some(desired))
}

/// One look at a webhook configuration: read it, and when `write` (self-managed certificates) bring it to its
/// desired form (a conflict re-reads, as another replica may have just written the same); then judge what the
/// API server holds. A configuration not installed has nothing to judge; one that cannot be read is
/// [`CaBundleSeen::Unread`], never a reason to turn unready (DECISIONS 22).
async fn keep_configuration(
    api: &Api<kube::core::DynamicObject>,
    (kind, name): (&str, &str),
    endpoint: &Endpoint<'_>,
    served: &[&str],
    ca_b64: &str,
    write: bool,
) -> CaBundleSeen {
    const ATTEMPTS: usize = 3;
    let mut live = Value::Null;
    for attempt in 1..=ATTEMPTS {
        // DynamicObject keeps every field outside metadata, known to our types or not; we only merge-patch.
        let current = match api.get_opt(name).await {
            Ok(Some(object)) => serde_json::to_value(object).unwrap_or_default(),
            Ok(None) => {
                tracing::debug!(
                    configuration = name,
                    "not installed; nothing to keep current"
                );
                return CaBundleSeen::InPlace;
            }
            Err(e) => {
                tracing::warn!(configuration = name, error = %e,
                    "failed to read the webhook configuration; readiness keeps its last verdict");
                return CaBundleSeen::Unread;
            }
        };
        let desired = if write {
            desired_configuration(&current, endpoint, served, ca_b64).unwrap_or_else(|e| {
                tracing::warn!(configuration = name, error = %e, "failed to ensure configuration; retrying next sync");
                None
            })
        } else {
            None
        };
        let Some(desired) = desired else {
            live = current;
            break;
        };
        let patch = json!({
            "metadata": {
                "resourceVersion": current.pointer("/metadata/resourceVersion"),
                "annotations": desired.pointer("/metadata/annotations"),
            },
            "webhooks": desired["webhooks"],
        });
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(updated) => {
                tracing::info!(configuration = name, "caBundle and webhooks updated");
                live = serde_json::to_value(updated).unwrap_or_default();
                break;
            }
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < ATTEMPTS => {
                tracing::info!(
                    configuration = name,
                    "changed since read (another replica?); re-reading"
                );
            }
            Err(e) => {
                tracing::warn!(configuration = name, error = %e, "failed to update {name}; retrying next sync");
                live = current;
                break;
            }
        }
    }
    if !ca_bundle_mismatch(&live, endpoint, served, ca_b64) {
        return CaBundleSeen::InPlace;
    }
    let whose = if write { "our" } else { "the external" };
    tracing::warn!(
        error = %format!("caBundle of {kind} {name} does not match {whose} caBundle"),
        "failed to ensure configuration; not ready until the caBundle is in place"
    );
    CaBundleSeen::Wrong
}

/// Keeps the conversion webhook of the Kruise CRDs (strategy `Webhook`) that call our Service or our conversion
/// Service, or no Service (a url, or nothing yet), as OpenKruise does (spec/webhook-server.md §6.6):
/// `clientConfig` becomes exactly our conversion Service `conversion_service` on `/convert` (which lists
/// replicas before they are ready: a replica's caches may need a conversion to get ready), or in URL mode our
/// url, with `caBundle`. Failures are logged per CRD and retried at the next sync.
async fn ensure_crds(
    client: &Client,
    endpoint: &Endpoint<'_>,
    conversion_service: &str,
    ca_b64: &str,
) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crds = match api.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(e) => {
            tracing::warn!(error = %e, "failed to list crds; retrying next sync");
            return;
        }
    };
    let (namespace, service) = endpoint.service;
    let ours_name = |name: &str| name == service || name == conversion_service;
    let service = conversion_service;
    let desired = endpoint
        .url_client_config(registry::CONVERT_PATH, ca_b64)
        .unwrap_or_else(|| {
            json!({"caBundle": ca_b64, "service": {
                "namespace": namespace, "name": service, "path": registry::CONVERT_PATH, "port": 443}})
        });
    // A JSON merge patch merges into the current clientConfig: the form not wanted is removed explicitly, or
    // the API server refuses both (422 "exactly one of url or service is required").
    let mut patched = json!({"service": null, "url": null});
    for (key, value) in desired.as_object().into_iter().flatten() {
        patched[key] = value.clone();
    }
    let patch = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
        "clientConfig": patched, "conversionReviewVersions": ["v1", "v1beta1"]}}}});
    for crd in crds {
        let spec = &crd.spec;
        if spec.group != "apps.kruise.io" && spec.group != "policy.kruise.io" {
            continue;
        }
        let Some(conversion) = &spec.conversion else {
            continue;
        };
        if conversion.strategy != "Webhook" {
            continue;
        }
        let client_config = conversion
            .webhook
            .as_ref()
            .and_then(|w| w.client_config.as_ref());
        let ours = client_config
            .and_then(|c| c.service.as_ref())
            .is_none_or(|s| s.namespace == namespace && ours_name(&s.name));
        let current = client_config.and_then(|c| serde_json::to_value(c).ok());
        if !ours || current.as_ref() == Some(&desired) {
            continue;
        }
        let name = crd.metadata.name.clone().unwrap_or_default();
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::info!(crd = %name, "conversion webhook updated"),
            Err(e) => {
                tracing::warn!(crd = %name, error = %e, "failed to update CRD; retrying next sync")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE: Endpoint<'static> = Endpoint {
        service: ("kruise-system", "kruise-webhook-service"),
        url: None,
    };

    fn configuration(annotation: Option<&str>) -> Value {
        let hook = |name: &str, path: &str| {
            json!({"name": name, "clientConfig": {"service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "path": path}},
                   "x-unknown": true})
        };
        let mut c = json!({"metadata": {"name": VALIDATING_CONFIGURATION, "resourceVersion": "7"},
            "webhooks": [hook("vnamespace.kb.io", "/validate-namespace"), hook("vservice.kb.io", "/validate-service"),
                         {"name": "other.example.com", "clientConfig": {"url": "https://x/y"}}]});
        if let Some(a) = annotation {
            c["metadata"]["annotations"] = json!({"template": a});
        }
        c
    }

    #[test]
    fn external_ca_bundle_is_checked_on_served_webhooks_of_our_service_only() {
        let service = &SERVICE;
        let served = ["/validate-namespace", "/validate-service"];
        let mut c = configuration(None);
        // Not injected yet: no caBundle on our webhooks.
        assert!(ca_bundle_mismatch(&c, service, &served, "Q0E="));
        c["webhooks"][0]["clientConfig"]["caBundle"] = json!("Q0E=");
        c["webhooks"][1]["clientConfig"]["caBundle"] = json!("b2xk");
        assert!(
            ca_bundle_mismatch(&c, service, &served, "Q0E="),
            "one stale webhook"
        );
        // An unserved path is not checked (it is not ours to answer); neither is a foreign webhook.
        assert!(!ca_bundle_mismatch(
            &c,
            service,
            &["/validate-namespace"],
            "Q0E="
        ));
        c["webhooks"][1]["clientConfig"]["caBundle"] = json!("Q0E=");
        assert!(!ca_bundle_mismatch(&c, service, &served, "Q0E="));
        // Another Service of the same paths is someone else's.
        let other = Endpoint {
            service: ("kruise-system", "other"),
            url: None,
        };
        assert!(!ca_bundle_mismatch(
            &configuration(None),
            &other,
            &served,
            "Q0E="
        ));
        assert!(!ca_bundle_mismatch(&json!({}), service, &served, "Q0E="));
    }

    #[test]
    fn unserved_paths_are_dropped_but_kept_in_the_template() {
        // spec/deletion-protection.md scenario 27: gate off removes vservice, keeps vnamespace.
        let desired = desired_configuration(
            &configuration(None),
            &SERVICE,
            &["/validate-namespace"],
            "Q0E=",
        )
        .unwrap()
        .unwrap();
        let names: Vec<_> = desired["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["vnamespace.kb.io", "other.example.com"]);
        assert_eq!(desired["webhooks"][0]["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(
            desired["webhooks"][0]["x-unknown"], true,
            "unknown fields survive"
        );
        assert!(
            desired["webhooks"][1]["clientConfig"]
                .get("caBundle")
                .is_none(),
            "foreign webhooks untouched"
        );
        let template = desired["metadata"]["annotations"]["template"]
            .as_str()
            .unwrap();
        assert!(template.contains("vservice.kb.io"));
        // Turning the gate back on restores it from the template, and a second pass changes nothing.
        let restored = desired_configuration(
            &desired,
            &SERVICE,
            &["/validate-namespace", "/validate-service"],
            "Q0E=",
        )
        .unwrap()
        .unwrap();
        assert_eq!(restored["webhooks"].as_array().unwrap().len(), 3);
        assert!(
            desired_configuration(
                &restored,
                &SERVICE,
                &["/validate-namespace", "/validate-service"],
                "Q0E="
            )
            .unwrap()
            .is_none()
        );
    }

    #[test]
    fn a_broken_template_is_an_error() {
        assert!(desired_configuration(&configuration(Some("{nope")), &SERVICE, &[], "").is_err());
    }

    const URL_MODE: Endpoint<'static> = Endpoint {
        url: Some(("10.0.0.5", 9876)),
        ..SERVICE
    };

    #[test]
    fn url_mode_gives_our_webhooks_our_url_and_ca_bundle_and_no_service() {
        // spec/webhook-server.md scenario 8, DECISIONS 21.
        let mut current = configuration(None);
        // A webhook someone pointed at WEBHOOK_HOST by hand (another port, no caBundle) is ours too.
        let by_hand = json!({"name": "vpod.kb.io", "clientConfig": {"url": "https://10.0.0.5:443/validate-pod"}});
        current["webhooks"].as_array_mut().unwrap().push(by_hand);
        let served = ["/validate-namespace", "/validate-service", "/validate-pod"];
        let desired = desired_configuration(&current, &URL_MODE, &served, "Q0E=")
            .unwrap()
            .unwrap();
        let client_configs: Vec<_> = desired["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["clientConfig"].clone())
            .collect();
        assert_eq!(
            client_configs,
            [
                json!({"url": "https://10.0.0.5:9876/validate-namespace", "caBundle": "Q0E="}),
                json!({"url": "https://10.0.0.5:9876/validate-service", "caBundle": "Q0E="}),
                json!({"url": "https://x/y"}),
                json!({"url": "https://10.0.0.5:9876/validate-pod", "caBundle": "Q0E="}),
            ]
        );
        assert_eq!(
            desired["webhooks"][0]["x-unknown"], true,
            "unknown fields survive"
        );
        // Readiness judges the urls: in place now, and a stale caBundle on one of them is seen.
        assert!(!ca_bundle_mismatch(&desired, &URL_MODE, &served, "Q0E="));
        let mut stale = desired.clone();
        stale["webhooks"][3]["clientConfig"]["caBundle"] = json!("b2xk");
        assert!(ca_bundle_mismatch(&stale, &URL_MODE, &served, "Q0E="));
        // The template keeps the Service form: a second pass changes nothing, and Service mode brings it back.
        assert!(
            desired_configuration(&desired, &URL_MODE, &served, "Q0E=")
                .unwrap()
                .is_none()
        );
        let back = desired_configuration(&desired, &SERVICE, &served, "Q0E=")
            .unwrap()
            .unwrap();
        assert_eq!(
            back["webhooks"][0]["clientConfig"],
            json!({"service": {"namespace": "kruise-system", "name": "kruise-webhook-service",
                               "path": "/validate-namespace"}, "caBundle": "Q0E="})
        );
    }

    #[test]
    fn url_mode_recognises_urls_on_webhook_host_only() {
        let cc = |url: &str| json!({ "url": url });
        let v6 = Endpoint {
            url: Some(("fd00::5", 9876)),
            ..SERVICE
        };
        assert_eq!(
            v6.path_of(&cc("https://[FD00::5]:9443/convert")),
            Some("/convert")
        );
        assert_eq!(
            v6.url_client_config("/convert", "Q0E="),
            Some(json!({"url": "https://[fd00::5]:9876/convert", "caBundle": "Q0E="}))
        );
        let name = Endpoint {
            url: Some(("Webhook.Example.com", 9876)),
            ..SERVICE
        };
        let path =
            |endpoint: &Endpoint<'_>, url: &str| endpoint.path_of(&cc(url)).map(str::to_owned);
        assert_eq!(
            path(&name, "https://webhook.example.com/validate-pod").as_deref(),
            Some("/validate-pod")
        );
        assert_eq!(
            path(&name, "https://webhook.example.com.evil:1/validate-pod"),
            None
        );
        assert_eq!(path(&name, "http://webhook.example.com/validate-pod"), None);
        assert_eq!(
            path(&SERVICE, "https://webhook.example.com/validate-pod"),
            None,
            "outside URL mode no url is ours"
        );
        let ours = json!({"service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "path": "/p"}});
        assert_eq!(
            name.path_of(&ours),
            Some("/p"),
            "nor is our Service less ours in URL mode"
        );
    }

    #[test]
    fn url_mode_certificate_also_names_webhook_host() {
        let mut config = ServeConfig::for_loopback(Vec::new(), PathBuf::from("/nonexistent"));
        let service_mode = policy(&config);
        config.webhook_host = Some("10.0.0.5".to_owned());
        let url_mode = policy(&config);
        assert_eq!(url_mode.common_name, service_mode.common_name);
        assert_eq!(
            url_mode.dns_names,
            [
                "localhost",
                "kruise-webhook-service.kruise-system.svc",
                "kruise-webhook-service.kruise-system.svc.cluster.local",
                "10.0.0.5"
            ]
        );
        assert_eq!(url_mode.dns_names[..3], service_mode.dns_names[..]);
    }
}
