//! The read-only cluster snapshot webhooks decide on. Implemented over kube-runtime reflector stores in the
//! server (`src/cache`) and over YAML files in [`crate::fixture`].

use std::sync::Arc;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};

use crate::api::persistentpodstate::PersistentPodState;
use crate::api::pod::SlimPod;
use crate::api::podprobemarker::PodProbeMarker;
use crate::api::podunavailablebudget::PodUnavailableBudget;
use crate::api::revision::SlimRevision;
use crate::api::sidecarset::SidecarSet;
use crate::api::workloadspread::WorkloadSpread;
use crate::sidecarset::prepared::PreparedSidecarSet;

/// Questions a webhook may ask about the cluster. Answers come from caches: they never block.
pub trait ClusterView {
    /// The Namespace object, when known.
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>>;
    /// Every Pod in a namespace, as far as a cached pod is read ([`SlimPod`]).
    fn pods_in(&self, namespace: &str) -> Vec<Arc<SlimPod>>;
    /// Every PersistentVolumeClaim in a namespace.
    fn persistent_volume_claims_in(&self, namespace: &str) -> Vec<Arc<PersistentVolumeClaim>>;
    /// A Pod by namespace and name.
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<SlimPod>> {
        self.pods_in(namespace)
            .into_iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
    }
}

/// The PodUnavailableBudgets the PUB webhooks read (v1beta1, as stored). Implemented over an informer cache
/// in the server and over YAML in [`crate::fixture`].
pub trait PodUnavailableBudgetView {
    /// A PUB by namespace and name.
    fn pod_unavailable_budget(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<PodUnavailableBudget>>;
    /// Every PUB of a namespace, in name order (DECISIONS 12).
    fn pod_unavailable_budgets_in(&self, namespace: &str) -> Vec<Arc<PodUnavailableBudget>>;
}

/// The WorkloadSpreads the pod webhooks read (v1beta1, the newest copy this replica knows). Implemented over
/// an informer cache in the server and over YAML in [`crate::fixture`].
pub trait WorkloadSpreadView {
    /// Every WorkloadSpread of a namespace, in name order (DECISIONS 12).
    fn workload_spreads(&self, namespace: &str) -> Vec<Arc<WorkloadSpread>>;
    /// A WorkloadSpread by namespace and name.
    fn workload_spread(&self, namespace: &str, name: &str) -> Option<Arc<WorkloadSpread>> {
        self.workload_spreads(namespace)
            .into_iter()
            .find(|w| w.metadata.name.as_deref() == Some(name))
    }
    /// Whether the namespace has a WorkloadSpread (asked on every pod create: implementations answer
    /// without collecting them).
    fn has_workload_spreads(&self, namespace: &str) -> bool {
        !self.workload_spreads(namespace).is_empty()
    }
    /// The WorkloadSpreads of a namespace whose `targetRef` has this kind and name (any group), in name
    /// order: the only ones that can match a pod whose owner chain holds that kind and name.
    fn workload_spreads_targeting(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
    ) -> Vec<Arc<WorkloadSpread>> {
        self.workload_spreads(namespace)
            .into_iter()
            .filter(|w| targets(w, kind, name))
            .collect()
    }
}

/// Whether a WorkloadSpread's `targetRef` has this kind and name.
pub fn targets(ws: &WorkloadSpread, kind: &str, name: &str) -> bool {
    ws.spec
        .target_ref
        .as_ref()
        .is_some_and(|t| t.kind == kind && t.name == name)
}

/// The SidecarSets and ControllerRevisions injection reads. Implemented over informer caches in the server
/// and over YAML in [`crate::fixture`].
pub trait SidecarSetView {
    /// Candidate SidecarSets for a pod with `labels` in `namespace` (spec/sidecarset.md §4.3 step 2, each
    /// bucket in name order), without those that cannot match ([`crate::sidecarset::select::SidecarSetIndex::candidates_for`]),
    /// prepared for injection.
    fn sidecar_set_candidates(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<PreparedSidecarSet>>;
    /// A SidecarSet by name.
    fn sidecar_set(&self, name: &str) -> Option<Arc<SidecarSet>>;
    /// Every SidecarSet, in name order.
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>>;
    /// A ControllerRevision by namespace and name.
    fn controller_revision(&self, namespace: &str, name: &str) -> Option<Arc<SlimRevision>>;
    /// ControllerRevisions of a namespace carrying every one of `labels`.
    fn controller_revisions(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<SlimRevision>>;
}

/// The PersistentPodStates the pod chain's node-affinity step reads (v1beta1, v1alpha1 ones converted:
/// spec/pod-mutating-misc.md §7). Implemented over an informer cache in the server and over YAML in
/// [`crate::fixture`].
pub trait PersistentPodStateView {
    /// Every PersistentPodState of a namespace, in name order (DECISIONS 12).
    ///
    /// # Errors
    /// Why they could not be listed (the step then skips, §7.1).
    fn persistent_pod_states_in(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<PersistentPodState>>, String>;
}

/// The PodProbeMarkers the pod chain's serverless step reads (v1alpha1: spec/pod-mutating-misc.md §9).
/// Implemented over an informer cache in the server and over YAML in [`crate::fixture`].
pub trait PodProbeMarkerView {
    /// Every PodProbeMarker of a namespace, in name order (DECISIONS 12).
    ///
    /// # Errors
    /// Why they could not be listed (the pod create then fails, §9).
    fn pod_probe_markers_in(&self, namespace: &str) -> Result<Vec<Arc<PodProbeMarker>>, String>;
    /// A PodProbeMarker by namespace and name; `None` when it is not found or cannot be read (§9 skips it).
    fn pod_probe_marker(&self, namespace: &str, name: &str) -> Option<Arc<PodProbeMarker>> {
        self.pod_probe_markers_in(namespace)
            .ok()?
            .into_iter()
            .find(|m| m.metadata.name.as_deref() == Some(name))
    }
}

/// A view of an empty cluster (requests that need no cluster state, benches).
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyView;

impl ClusterView for EmptyView {
    fn namespace(&self, _: &str) -> Option<Arc<Namespace>> {
        None
    }
    fn pods_in(&self, _: &str) -> Vec<Arc<SlimPod>> {
        Vec::new()
    }
    fn persistent_volume_claims_in(&self, _: &str) -> Vec<Arc<PersistentVolumeClaim>> {
        Vec::new()
    }
}

impl WorkloadSpreadView for EmptyView {
    fn workload_spreads(&self, _: &str) -> Vec<Arc<WorkloadSpread>> {
        Vec::new()
    }
}

impl PodUnavailableBudgetView for EmptyView {
    fn pod_unavailable_budget(&self, _: &str, _: &str) -> Option<Arc<PodUnavailableBudget>> {
        None
    }
    fn pod_unavailable_budgets_in(&self, _: &str) -> Vec<Arc<PodUnavailableBudget>> {
        Vec::new()
    }
}

impl PersistentPodStateView for EmptyView {
    fn persistent_pod_states_in(&self, _: &str) -> Result<Vec<Arc<PersistentPodState>>, String> {
        Ok(Vec::new())
    }
}

impl PodProbeMarkerView for EmptyView {
    fn pod_probe_markers_in(&self, _: &str) -> Result<Vec<Arc<PodProbeMarker>>, String> {
        Ok(Vec::new())
    }
}
