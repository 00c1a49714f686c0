//! The read-only cluster snapshot webhooks decide on. Implemented over kube-runtime reflector stores in the
//! server (`src/cache`) and over YAML files in [`crate::fixture`].

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod};

/// Questions a webhook may ask about the cluster. Answers come from caches: they never block.
pub trait ClusterView {
    /// The Namespace object, when known.
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>>;
    /// Every Pod in a namespace.
    fn pods_in(&self, namespace: &str) -> Vec<Arc<Pod>>;
    /// Every PersistentVolumeClaim in a namespace.
    fn persistent_volume_claims_in(&self, namespace: &str) -> Vec<Arc<PersistentVolumeClaim>>;
}

/// A view of an empty cluster (requests that need no cluster state, benches).
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyView;

impl ClusterView for EmptyView {
    fn namespace(&self, _: &str) -> Option<Arc<Namespace>> {
        None
    }
    fn pods_in(&self, _: &str) -> Vec<Arc<Pod>> {
        Vec::new()
    }
    fn persistent_volume_claims_in(&self, _: &str) -> Vec<Arc<PersistentVolumeClaim>> {
        Vec::new()
    }
}
