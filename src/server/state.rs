//! What every handler of the server reads ([`AppState`]): below the handlers (`admission`, `health`) and
//! the server that builds it, so that none of them imports another for it.

use std::sync::Arc;

use kruise_webhooks::admission::AdmissionRequest;
use kruise_webhooks::registry;

use super::limit::InFlightLimit;
use super::readiness::Readiness;
use super::tls::CertStore;
use crate::audit::AuditLog;
use crate::cache::Cluster;
use crate::config::ServeConfig;
use crate::metrics::Metrics;

/// A hook run before every decision (tests use it to inject a panic).
pub type BeforeDecide = Arc<dyn Fn(&AdmissionRequest) + Send + Sync>;

/// Everything a request handler reads; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Validated configuration.
    pub config: Arc<ServeConfig>,
    /// Cluster state.
    pub cluster: Cluster,
    /// Metrics.
    pub metrics: Metrics,
    /// The serving certificate.
    pub certs: Arc<CertStore>,
    /// Shutdown flag for /readyz.
    pub readiness: Arc<Readiness>,
    /// The bound on admission requests in flight (`--max-in-flight`; [`super::limit`]).
    pub limit: Arc<InFlightLimit>,
    /// Deletion-protection audit log.
    pub audit: Arc<AuditLog>,
    /// Test hook.
    pub before_decide: Option<BeforeDecide>,
    /// The custom resource kinds the cluster serves (webhooks needing others are not registered).
    pub served: registry::Served,
}

impl AppState {
    /// State over a cluster view with fresh metrics, no audit log and an empty certificate store.
    pub fn new(config: ServeConfig, cluster: Cluster) -> Self {
        Self {
            limit: Arc::new(InFlightLimit::new(config.max_in_flight)),
            config: Arc::new(config),
            cluster,
            metrics: Metrics::new(),
            certs: Arc::new(CertStore::default()),
            readiness: Arc::new(Readiness::default()),
            audit: Arc::new(AuditLog::default()),
            before_decide: None,
            served: registry::Served::ALL,
        }
    }
}
