//! Following the cluster's CRDs (docs/startup-order.md): what depends on the kinds served — the informer
//! caches of the custom kinds, the webhook paths, the leader's controllers, the webhooks kept in our
//! configurations — is one *generation*, rebuilt when the CRD watch ([`crate::cache::crds`]) says the
//! served kinds changed. The new generation takes over admission (both routers swapped at once) only once
//! its caches are synced; until then the previous one answers, so a CRD appearing never makes a ready
//! replica unready. Then the previous generation's controllers stop and the new one's start, on the one
//! election the server runs for all of them.

use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::Router;
use axum::extract::Request;
use kube::Client;
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;
use tower::ServiceExt;

use crate::cache::crds::Kinds;
use crate::cache::{Cluster, LiveCache};
use crate::certs::CertManager;
use crate::config::ServeConfig;
use crate::controller::Controllers;

use super::state::AppState;

/// A Router that can be replaced while connections stay open: each request goes to the one in place when
/// it arrives.
#[derive(Clone)]
pub struct Switch(Arc<ArcSwap<Router>>);

impl Switch {
    /// A switch serving `router`.
    pub fn new(router: Router) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(router)))
    }

    /// Serves `router` from the next request on.
    pub fn set(&self, router: Router) {
        self.0.store(Arc::new(router));
    }

    /// The switch as a service (cloned per connection).
    pub fn service(&self) -> SwitchService {
        SwitchService(self.0.clone())
    }
}

/// A [`Switch`] as a service of any request body (hyper's, or axum's).
#[derive(Clone)]
pub struct SwitchService(Arc<ArcSwap<Router>>);

impl<B> tower::Service<http::Request<B>> for SwitchService
where
    B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = tower::util::Oneshot<Router, Request>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        Router::clone(&self.0.load()).oneshot(request.map(axum::body::Body::new))
    }
}

/// The caches a generation serving `kinds` reads (the same choice of stores for gates and kinds as at
/// start-up).
pub fn cache(client: &Client, config: &ServeConfig, kinds: Kinds) -> LiveCache {
    let served = kinds.served;
    let pod_webhook = config.gates.enabled(kruise_webhooks::features::POD_WEBHOOK);
    let budgets = served.pod_unavailable_budgets
        && pod_webhook
        && kruise_webhooks::podunavailablebudget::enabled(&config.gates);
    // The WorkloadSpreads the pod webhooks place pods with (spec/workloadspread.md §5) and the controller
    // reconciles, when served. The workloads PUBs protect and WorkloadSpread owner chains walk through:
    // CloneSets and Advanced StatefulSets only where served.
    let spreads = served.workload_spreads
        && pod_webhook
        && config.gates.enabled(kruise_webhooks::workloadspread::GATE);
    LiveCache::start_at(
        client.clone(),
        kinds.versions,
        (served.sidecar_sets && pod_webhook).then_some(config.namespace.as_str()),
        budgets,
        spreads,
        (budgets || spreads).then_some((kinds.workloads, config.namespace.as_str())),
        config
            .gates
            .enabled(kruise_webhooks::features::POD_PROBE_MARKER_ON_SERVERLESS),
    )
}

/// What the generations share and the follower swaps.
pub struct Follow {
    /// The client the caches and controllers use.
    pub client: Client,
    /// The admission router.
    pub tls: Switch,
    /// The probe and metrics router.
    pub plain: Switch,
    /// The certificate controller (told the kinds served).
    pub certs: Arc<CertManager>,
    /// The controllers of the generation in place.
    pub controllers: Arc<Mutex<Option<Controllers>>>,
    /// Leadership, from the server's one election.
    pub leading: watch::Receiver<bool>,
    /// The admission and the probe routers of a generation's state (the server's `app` and `plain_app`).
    pub routers: fn(&AppState) -> (Router, Router),
}

/// Follows `crds` from `kinds` (the kinds `state`'s generation serves): builds a generation for each
/// change, swaps it in once synced, and restarts the controllers on it.
pub fn follow(
    follow: Follow,
    mut crds: watch::Receiver<Kinds>,
    mut kinds: Kinds,
    mut state: AppState,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if crds.changed().await.is_err() {
                return;
            }
            let mut wanted = *crds.borrow_and_update();
            'build: while wanted != kinds {
                let started = tokio::time::Instant::now();
                let cache = cache(&follow.client, &state.config, wanted);
                let mut next = state.clone();
                next.cluster = Cluster::Live(cache.clone());
                next.served = wanted.served;
                // The previous generation answers until this one is synced; a newer change starts over.
                tokio::select! {
                    () = cache.ready() => {}
                    changed = crds.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        wanted = *crds.borrow_and_update();
                        continue 'build;
                    }
                }
                let (tls, plain) = (follow.routers)(&next);
                follow.tls.set(tls);
                follow.plain.set(plain);
                follow.certs.serve_kinds(wanted.served);
                {
                    let mut slot = follow.controllers.lock().await;
                    if let Some(previous) = slot.take() {
                        previous.shutdown().await;
                    }
                    *slot = Some(Controllers::start_on(
                        follow.client.clone(),
                        &cache,
                        &next.config,
                        wanted.served,
                        &next.metrics,
                        follow.leading.clone(),
                    ));
                }
                tracing::info!(
                    added = ?wanted.missing_from(&kinds),
                    removed = ?kinds.missing_from(&wanted),
                    synced_after_s = started.elapsed().as_secs_f64(),
                    "the served custom kinds changed: caches, webhook paths and controllers follow"
                );
                kinds = wanted;
                state = next;
            }
        }
    })
}
