//! The HTTPS admission server and the plain-HTTP metrics/probe listeners.
//!
//! [`app`] builds the Router (tests call it without sockets); [`start`] binds everything and returns a
//! [`Server`] whose [`Server::shutdown`] drains in-flight reviews within the grace period. Admission requests
//! beyond `--max-in-flight` are shed with HTTP 429 ([`limit`]).

pub mod admission;
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
    certs: CertManager,
    controllers: Option<crate::controller::Controllers>,
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
    router: Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<(SocketAddr, JoinHandle<anyhow::Result<()>>)> {
    let listener = tokio::net::TcpListener::from_std(bind(addr)?)?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
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
    let (cluster, client, served) = if config.standalone() {
        let fixture = crate::cache::load_objects(&config.objects)?;
        tracing::info!(
            objects = fixture.objects().len(),
            "standalone: serving on objects from files"
        );
        (
            Cluster::Fixture(Arc::new(fixture)),
            None,
            registry::Served::ALL,
        )
    } else {
        let client = kube::Client::try_default()
            .await
            .context("connecting to the cluster (kubeconfig or in-cluster)")?;
        let served = registry::Served {
            sidecar_sets: crate::cache::discover(&client, "apps.kruise.io/v1beta1", "sidecarsets")
                .await,
            pod_unavailable_budgets: crate::cache::discover(
                &client,
                "policy.kruise.io/v1beta1",
                "podunavailablebudgets",
            )
            .await,
            workload_spreads: crate::cache::discover(
                &client,
                "apps.kruise.io/v1beta1",
                "workloadspreads",
            )
            .await,
            container_recreate_requests: crate::cache::discover(
                &client,
                "apps.kruise.io/v1beta1",
                "containerrecreaterequests",
            )
            .await,
        };
        if !served.sidecar_sets {
            tracing::warn!(
                "SidecarSet CRD (apps.kruise.io/v1beta1) not served: /mutate-pod is not registered"
            );
        }
        if !served.pod_unavailable_budgets {
            tracing::warn!(
                "PodUnavailableBudget CRD (policy.kruise.io/v1beta1) not served: /validate-pod is not registered"
            );
        }
        let pod_webhook = config.gates.enabled(kruise_webhooks::features::POD_WEBHOOK);
        let budgets = served.pod_unavailable_budgets
            && pod_webhook
            && kruise_webhooks::podunavailablebudget::enabled(&config.gates);
        // The WorkloadSpreads the pod webhooks place pods with (spec/workloadspread.md §5) and the
        // controller reconciles, when served. The workloads PUBs protect and WorkloadSpread owner chains walk
        // through: CloneSets and Advanced StatefulSets only where served.
        let spreads = served.workload_spreads
            && pod_webhook
            && config.gates.enabled(kruise_webhooks::workloadspread::GATE);
        let workload_kinds = if budgets || spreads {
            Some(crate::workload::ServedKinds::discover(&client).await)
        } else {
            None
        };
        let cache = crate::cache::LiveCache::start_all(
            client.clone(),
            (served.sidecar_sets && pod_webhook).then_some(config.namespace.as_str()),
            budgets,
            spreads,
            workload_kinds.map(|kinds| (kinds, config.namespace.as_str())),
        );
        (Cluster::Live(cache), Some(client), served)
    };
    let mut state = AppState::new(config.clone(), cluster);
    state.served = served;
    state.before_decide = before_decide;
    if let Some(dir) = &config.protection_log_dir {
        state.audit = Arc::new(
            AuditLog::open(dir)
                .with_context(|| format!("opening {}/protection.log", dir.display()))?,
        );
    }
    let certs = CertManager::start(
        &config,
        state.certs.clone(),
        client.clone(),
        served,
        state.readiness.clone(),
    )
    .await?;

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
    let router = app(state.clone());
    let mut tasks = vec![tokio::spawn(async move {
        server
            .serve(router.into_make_service())
            .await
            .context("TLS listener")
    })];

    let (plain_shutdown, stop) = tokio::sync::watch::channel(false);
    let (metrics_addr, task) =
        bind_plain(config.metrics_addr, plain_app(state.clone()), stop.clone()).await?;
    tasks.push(task);
    let probe_addr = if config.probe_addr == config.metrics_addr && config.probe_addr.port() != 0 {
        metrics_addr
    } else {
        let (addr, task) = bind_plain(config.probe_addr, plain_app(state.clone()), stop).await?;
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
    // Leader-elected controllers: cluster mode only, started last (src/controller.rs).
    let controllers = match (&state.cluster, client) {
        (Cluster::Live(cache), Some(client)) => Some(crate::controller::Controllers::start(
            client,
            cache,
            &config,
            served,
            &state.metrics,
        )),
        _ => None,
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
        if let Some(controllers) = self.controllers {
            controllers.shutdown().await;
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
