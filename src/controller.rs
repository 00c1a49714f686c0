//! The leader-elected controllers behind the webhooks (spec/webhook-server.md §9): every replica serves
//! admission, certificates and readiness; only the replica holding the Lease `kruise-system/kruise-manager`
//! ([`leader`]) runs the controllers, today the SidecarSet controller ([`sidecarset`]). Every controller
//! runs on [`runtime`]: kube-runtime's `Controller`, driven by changes of the stores the webhooks read.
//!
//! Cluster mode only: [`crate::server::start_with`] starts [`Controllers`] last, after the informer caches,
//! and [`crate::Server::shutdown`] stops them. Standalone mode (`--objects`, standalone certificates) runs
//! no controller and takes no Lease: there is no cluster to write to.

pub mod leader;
pub mod runtime;
pub mod sidecarset;

use kube::Client;
use tokio::sync::watch;

use kruise_webhooks::registry::Served;

use crate::cache::{LiveCache, SidecarSetCache};
use crate::config::ServeConfig;
use crate::metrics::Metrics;
use leader::LeaderElector;
use sidecarset::{Inputs, SidecarSetController};

/// The leader election and the controllers it gates.
pub struct Controllers {
    leader: LeaderElector,
    sidecar_sets: Option<runtime::Running>,
}

impl Controllers {
    /// Starts leader election (or constant leadership with `--enable-leader-election=false`) and the
    /// SidecarSet controller when the cluster serves SidecarSets. The SidecarSet caches of `cache` are reused
    /// when the pod webhook started them; otherwise the controller starts its own.
    pub fn start(
        client: Client,
        cache: &LiveCache,
        config: &ServeConfig,
        served: Served,
        metrics: &Metrics,
    ) -> Self {
        let leader = if config.leader_election.enabled {
            LeaderElector::start(
                client.clone(),
                &config.leader_election,
                leader::default_identity(),
                metrics.clone(),
            )
        } else {
            tracing::info!("leader election disabled: this replica runs the controllers");
            LeaderElector::always_leader(metrics)
        };
        let sidecar_sets = served.sidecar_sets.then(|| {
            let sets = cache
                .sidecar_set_cache()
                .cloned()
                .unwrap_or_else(|| SidecarSetCache::start(&client, &config.namespace));
            let inputs = Inputs {
                sidecar_sets: sets.set_store().clone(),
                revisions: sets.revision_store().clone(),
                pods: cache.pod_store().clone(),
                namespaces: cache.namespace_store().clone(),
            };
            SidecarSetController::start(
                client.clone(),
                inputs,
                config.namespace.clone(),
                leader.is_leader(),
                runtime::Settings::default(),
            )
        });
        Self {
            leader,
            sidecar_sets,
        }
    }

    /// Leadership, as the controllers see it.
    pub fn is_leader(&self) -> watch::Receiver<bool> {
        self.leader.is_leader()
    }

    /// Stops the controllers, then the election (the Lease is left to expire).
    pub async fn shutdown(self) {
        if let Some(c) = self.sidecar_sets {
            c.stop().await;
        }
        self.leader.stop().await;
    }
}
