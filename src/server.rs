//! The HTTPS admission server and the plain-HTTP metrics/probe listeners.
//!
//! [`app`] builds the Router (tests call it without sockets); [`start`] binds everything and returns a
//! [`Server`] whose [`Server::shutdown`] drains in-flight reviews within the grace period. Admission requests
//! beyond `--max-in-flight` are shed with HTTP 429 ([`limit`]).

pub mod admission;
pub mod generation;
pub mod health;
pub mod limit;
pub mod readiness;
mod state;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use bytes::Bytes;
use tokio::task::JoinHandle;

use kruise_webhooks::registry::{self, CONVERT_PATH};

use crate::audit::AuditLog;
use crate::cache::Cluster;
use crate::certs::CertManager;
use crate::config::ServeConfig;
use crate::metrics;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

pub use state::{AppState, BeforeDecide};

/// The largest ConversionReview accepted.
pub const MAX_CONVERSION_BYTES: usize = 64 * 1024 * 1024;

/// The admission Router: every served webhook path (both spellings), `/convert`, `/healthz`, `/readyz`.
pub fn app(state: AppState) -> Router {
    let mut router = Router::new();
    for (path, spec) in registry::routes(&state.config.gates, state.served) {
        // The handler is cloned per request: one reference count, not one per metric.
        let metrics = Arc::new(state.metrics.route(path));
        router = router.route(
            path,
            any(
                move |State(state): State<Arc<AppState>>, request: Request| async move {
                    admission::admit(&state, spec, &metrics, request).await
                },
            ),
        );
    }
    router
        // The apiserver sends every item of a LIST that needs converting in one ConversionReview: far over
        // axum's default 2 MiB for a large list.
        .route(
            CONVERT_PATH,
            any(convert).layer(DefaultBodyLimit::max(MAX_CONVERSION_BYTES)),
        )
        .route("/healthz", get(health::live))
        .route("/readyz", get(health::ready))
        .fallback(not_found)
        // A panic outside a webhook (the webhook itself is guarded per request) still answers 500.
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        // Shared, not cloned per request: a clone of the state is a few dozen reference counts.
        .with_state(Arc::new(state))
}

/// The plain-HTTP Router: `/metrics`, `/healthz`, `/readyz`.
pub fn plain_app(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics))
        .route("/healthz", get(health::live))
        .route("/readyz", get(health::ready))
        .fallback(not_found)
        .with_state(Arc::new(state))
}

async fn not_found() -> impl IntoResponse {
    (StatusCode::NOT_FOUND, "404 page not found\n")
}

async fn serve_metrics(State(state): State<Arc<AppState>>) -> Response {
    state.metrics.observe_sync(&state.cluster.sync_states());
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.encode(),
    )
        .into_response()
}

async fn convert(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let started = std::time::Instant::now();
    let (status, out) = match serde_json::from_slice::<serde_json::Value>(&body) {
        Err(e) => (
            StatusCode::BAD_REQUEST,
            serde_json::json!({"error": format!("couldn't decode ConversionReview: {e}")}),
        ),
        Ok(review) => match kruise_webhooks::conversion::review(&review) {
            Ok(answer) => (StatusCode::OK, answer),
            Err(e) => (
                StatusCode::BAD_REQUEST,
                serde_json::json!({"error": e.to_string()}),
            ),
        },
    };
    let code = status.as_u16().to_string();
    state
        .metrics
        .requests
        .get_or_create(&metrics::WebhookCodeLabels::new(CONVERT_PATH, &code))
        .inc();
    state
        .metrics
        .latency
        .get_or_create(&metrics::WebhookLabels {
            webhook: CONVERT_PATH.into(),
        })
        .observe(started.elapsed().as_secs_f64());
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        out.to_string(),
    )
        .into_response()
}

/// A running server.
pub struct Server {
    state: AppState,
    tls_addr: SocketAddr,
    metrics_addr: SocketAddr,
    probe_addr: SocketAddr,
    handle: axum_server::Handle<SocketAddr>,
    plain_shutdown: tokio::sync::watch::Sender<bool>,
    tasks: Vec<JoinHandle<anyhow::Result<()>>>,
    certs: Arc<CertManager>,
    /// The controllers of the generation in place (generation.rs), in cluster mode.
    controllers: Arc<tokio::sync::Mutex<Option<crate::controller::Controllers>>>,
    /// The one leader election, in cluster mode.
    elector: Option<crate::controller::leader::LeaderElector>,
    /// Follows the CRDs (generation.rs), in cluster mode.
    follower: Option<JoinHandle<()>>,
    /// The CRD watch the follower reads (its watch ends with the server).
    _crds: Option<crate::cache::shared::Shared<CustomResourceDefinition>>,
}

/// How long the first list of CRDs may take before discovery answers which kinds are served.
const CRD_LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The kinds served as discovery says (when CRDs cannot be listed).
async fn discovered_kinds(client: &kube::Client) -> crate::cache::crds::Kinds {
    use crate::cache::versions::{KruiseKind, Versions};
    let mut versions = Versions::default();
    for kind in KruiseKind::ALL {
        versions = versions.with(
            kind,
            crate::cache::discovery::served_version(client, kind).await,
        );
    }
    crate::cache::crds::Kinds::at(versions)
}

/// Says at which versions the Kruise kinds are read, and what is not registered for want of a CRD (until
/// it comes: docs/startup-order.md).
fn log_unserved(kinds: crate::cache::crds::Kinds) {
    tracing::info!(served = ?kinds.versions.describe(), "Kruise kinds served (each read and written at the version shown)");
    if !kinds.served.sidecar_sets {
        tracing::warn!(
            "SidecarSet CRD (sidecarsets.apps.kruise.io, v1beta1 or v1alpha1) not served: /mutate-pod is not registered until it is"
        );
    }
    if !kinds.served.pod_unavailable_budgets {
        tracing::warn!(
            "PodUnavailableBudget CRD (podunavailablebudgets.policy.kruise.io, v1beta1 or v1alpha1) not served: /validate-pod is not registered until it is"
        );
    }
}

/// Start-up lines about the command line itself, once each: the beside-OpenKruise mode (DECISIONS 27), and
/// every feature gate named that this version accepts but does not implement.
fn announce(config: &ServeConfig) {
    if config.beside_openkruise {
        tracing::info!(
            mutating_configuration = %config.mutating_configuration,
            validating_configuration = %config.validating_configuration,
            service = %config.service_name,
            secret = %config.secret_name,
            lease = %config.leader_election.name,
            "beside OpenKruise: only these objects of ours are written; CustomResourceDefinitions never are (kruise-manager owns them and their conversion)"
        );
    }
    for (gate, feature) in &config.unimplemented_gates {
        tracing::warn!(
            %gate,
            in_openkruise = %feature,
            "feature gate accepted but not implemented by kruise-webhook: setting it changes nothing"
        );
    }
}

/// Binds `addr`, non-blocking for tokio. The unspecified IPv6 address (the default: both families, as Go's
/// `:port`) falls back to 0.0.0.0 on a host without IPv6.
fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    let listener = match std::net::TcpListener::bind(addr) {
        Err(e)
            if addr.ip() == std::net::Ipv6Addr::UNSPECIFIED
                && e.kind() != std::io::ErrorKind::AddrInUse =>
        {
            tracing::warn!(%addr, error = %e, "no IPv6 on this host: listening on IPv4 only");
            std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, addr.port()))
        }
        other => other,
    };
    let listener = listener.with_context(|| format!("binding {addr}"))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

async fn bind_plain(
    addr: SocketAddr,
    router: generation::Switch,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<(SocketAddr, JoinHandle<anyhow::Result<()>>)> {
    let listener = tokio::net::TcpListener::from_std(bind(addr)?)?;
    let local = listener.local_addr()?;
    let service = router.service();
    let task = tokio::spawn(async move {
        axum::serve(listener, tower::make::Shared::new(service))
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await
            .context("plain HTTP listener")
    });
    Ok((local, task))
}

/// Binds the listeners, loads cluster state and certificates, and starts serving.
///
/// # Errors
/// Unreadable `--objects`, an audit log that cannot be opened, a port in use, no cluster reachable, or no
/// certificate within `--webhook-initialize-timeout`.
pub async fn start(config: ServeConfig) -> anyhow::Result<Server> {
    start_with(config, None).await
}

/// [`start`] with a hook run before every decision.
///
/// # Errors
/// As [`start`].
pub async fn start_with(
    config: ServeConfig,
    before_decide: Option<BeforeDecide>,
) -> anyhow::Result<Server> {
    announce(&config);
    let (cluster, client, kinds) = if config.standalone() {
        let fixture = crate::cache::load_objects(&config.objects)?;
        tracing::info!(
            objects = fixture.objects().len(),
            "standalone: serving on objects from files"
        );
        (Cluster::Fixture(Arc::new(fixture)), None, None)
    } else {
        let client = kube::Client::try_default()
            .await
            .context("connecting to the cluster (kubeconfig or in-cluster)")?;
        // The kinds served come from the CRDs, followed while the server runs (docs/startup-order.md).
        let crds = crate::cache::crds::watch(&client);
        let kinds = match tokio::time::timeout(CRD_LIST_TIMEOUT, crds.store.ready()).await {
            Ok(()) => crds.kinds_now(),
            Err(_) => {
                tracing::warn!(
                    waited_s = CRD_LIST_TIMEOUT.as_secs(),
                    error = ?crds.store.sync_state().last_error().map(|e| e.message),
                    "CustomResourceDefinitions not listed: asking discovery once; the CRD watch goes on"
                );
                discovered_kinds(&client).await
            }
        };
        log_unserved(kinds);
        let cache = generation::cache(&client, &config, kinds);
        (Cluster::Live(cache), Some((client, crds)), Some(kinds))
    };
    let served = kinds.map_or(registry::Served::ALL, |k| k.served);
    let mut state = AppState::new(config.clone(), cluster);
    state.served = served;
    state.before_decide = before_decide;
    if let Some(dir) = &config.protection_log_dir {
        state.audit = Arc::new(
            AuditLog::open(dir)
                .with_context(|| format!("opening {}/protection.log", dir.display()))?,
        );
    }
    let certs = Arc::new(
        CertManager::start(
            &config,
            state.certs.clone(),
            client.as_ref().map(|(c, _)| c.clone()),
            served,
            state.readiness.clone(),
        )
        .await?,
    );

    let tls_listener = bind(config.tls_addr)?;
    let tls_addr = tls_listener.local_addr()?;
    let rustls =
        axum_server::tls_rustls::RustlsConfig::from_config(tls::server_config(state.certs.clone()));
    let handle = axum_server::Handle::new();
    // TCP_NODELAY on every connection, as Go's net/http (the apiserver's side) sets it: a reply is never
    // held back waiting for the ACK of the one before (Nagle against delayed ACK stalls up to 40 ms).
    let mut server = axum_server::from_tcp_rustls(tls_listener, rustls)?
        .map(|tls| tls.acceptor(axum_server::accept::NoDelayAcceptor))
        .handle(handle.clone());
    // Slow or silent clients must not hold connections open forever.
    server
        .http_builder()
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
    server
        .http_builder()
        .http2()
        .timer(hyper_util::rt::TokioTimer::new());
    // Both routers are switches: a generation of the served kinds replaces them (generation.rs).
    let tls_router = generation::Switch::new(app(state.clone()));
    let plain_router = generation::Switch::new(plain_app(state.clone()));
    let tls_service = tls_router.service();
    let mut tasks = vec![tokio::spawn(async move {
        server
            .serve(tower::make::Shared::new(tls_service))
            .await
            .context("TLS listener")
    })];

    let (plain_shutdown, stop) = tokio::sync::watch::channel(false);
    let (metrics_addr, task) =
        bind_plain(config.metrics_addr, plain_router.clone(), stop.clone()).await?;
    tasks.push(task);
    let probe_addr = if config.probe_addr == config.metrics_addr && config.probe_addr.port() != 0 {
        metrics_addr
    } else {
        let (addr, task) = bind_plain(config.probe_addr, plain_router.clone(), stop).await?;
        tasks.push(task);
        addr
    };
    tracing::info!(%tls_addr, %metrics_addr, %probe_addr, gates = %config.gates, "serving");
    if config.standalone() {
        tracing::info!(
            "try: curl --cacert {} -H 'content-type: application/json' --data @examples/requests/delete-namespace.json https://localhost:{}/validate-namespace",
            config.cert_dir.join("ca.crt").display(),
            tls_addr.port()
        );
    }
    // Leader-elected controllers: cluster mode only, started last (src/controller.rs), one election for
    // every generation of them.
    let controllers = Arc::new(tokio::sync::Mutex::new(None));
    let (elector, follower, crds) = match (&state.cluster, client, kinds) {
        (Cluster::Live(cache), Some((client, crds)), Some(kinds)) => {
            let elector = crate::controller::elector(client.clone(), &config, &state.metrics);
            *controllers.lock().await = Some(crate::controller::Controllers::start_on(
                client.clone(),
                cache,
                &config,
                kinds.served,
                &state.metrics,
                elector.is_leader(),
            ));
            let follow = generation::Follow {
                client,
                tls: tls_router,
                plain: plain_router,
                certs: certs.clone(),
                controllers: controllers.clone(),
                leading: elector.is_leader(),
                routers: |state| (app(state.clone()), plain_app(state.clone())),
            };
            let follower = generation::follow(follow, crds.kinds.clone(), kinds, state.clone());
            (Some(elector), Some(follower), Some(crds.store))
        }
        _ => (None, None, None),
    };
    Ok(Server {
        state,
        tls_addr,
        metrics_addr,
        probe_addr,
        handle,
        plain_shutdown,
        tasks,
        certs,
        controllers,
        elector,
        follower,
        _crds: crds,
    })
}

impl Server {
    /// The HTTPS address.
    pub fn tls_addr(&self) -> SocketAddr {
        self.tls_addr
    }
    /// The /metrics address.
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics_addr
    }
    /// The probe address.
    pub fn probe_addr(&self) -> SocketAddr {
        self.probe_addr
    }
    /// Shared state (tests read metrics and certificates through it).
    pub fn state(&self) -> &AppState {
        &self.state
    }
    /// The certificate manager.
    pub fn certs(&self) -> &CertManager {
        &self.certs
    }

    /// Readiness goes false, in-flight requests finish within the grace period, listeners close. Meanwhile
    /// the controllers stop and then, on the leader, the Lease is released (src/controller/leader.rs), so
    /// the next replica leads without waiting out the lease duration.
    ///
    /// # Errors
    /// A listener that failed while serving.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.state.readiness.begin_shutdown();
        tracing::info!(
            grace_s = self.state.config.shutdown_grace.as_secs(),
            "shutting down: draining in-flight requests"
        );
        self.handle
            .graceful_shutdown(Some(self.state.config.shutdown_grace));
        let _ = self.plain_shutdown.send(true);
        self.certs.stop();
        // No new generation now; the controllers stop, then the election releases the Lease.
        if let Some(follower) = self.follower {
            follower.abort();
        }
        if let Some(controllers) = self.controllers.lock().await.take() {
            controllers.shutdown().await;
        }
        if let Some(elector) = self.elector {
            elector.stop().await;
        }
        let mut result = Ok(());
        for task in self.tasks {
            match tokio::time::timeout(
                self.state.config.shutdown_grace + Duration::from_secs(1),
                task,
            )
            .await
            {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => result = Err(e),
                Ok(Err(join)) => result = Err(anyhow::anyhow!("listener task: {join}")),
                Err(_) => tracing::warn!("a listener did not stop within the grace period"),
            }
        }
        tracing::info!("stopped");
        result
    }
}

/// Serves until `signal` completes, then shuts down gracefully.
///
/// # Errors
/// As [`start`] and [`Server::shutdown`].
pub async fn serve(
    config: ServeConfig,
    signal: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let server = start(config).await?;
    signal.await;
    server.shutdown().await
}
