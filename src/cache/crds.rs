//! Which custom kinds the cluster serves, followed as the CRDs change (docs/startup-order.md): one watch on
//! CustomResourceDefinitions, and from every change of it the Kruise kinds served at the versions this
//! server reads ([`Served`]) and the optional workload kinds ([`ServedKinds`]), published on a watch
//! channel. A kind is served when its CRD exists, is not being deleted, has `Established=True`, and serves
//! the version read.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::Api;
use kube::runtime::reflector::Store;
use tokio::sync::watch;

use kruise_webhooks::registry::Served;

use super::shared::{self, Shared};
use super::versions::{KruiseKind, Versions};
use super::workloads::ServedKinds;

/// What the cluster serves of the kinds this server knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kinds {
    /// The Kruise kinds of webhook paths, caches and controllers.
    pub served: Served,
    /// The optional workload kinds PUBs and WorkloadSpreads walk through.
    pub workloads: ServedKinds,
    /// The version each Kruise kind is read, watched and written at (DECISIONS 25).
    pub versions: Versions,
}

impl Kinds {
    /// The kinds served according to `crds`: each Kruise kind at the newest version it serves of those
    /// this server knows.
    pub fn of<'a>(crds: impl IntoIterator<Item = &'a CustomResourceDefinition>) -> Self {
        let crds: Vec<&CustomResourceDefinition> = crds.into_iter().collect();
        let versions = KruiseKind::ALL
            .iter()
            .fold(Versions::default(), |versions, &kind| {
                let name = kind.crd_name();
                let crd = crds
                    .iter()
                    .find(|crd| crd.metadata.name.as_deref() == Some(name.as_str()));
                let version = crd.and_then(|crd| {
                    kind.known()
                        .iter()
                        .copied()
                        .find(|v| serving(crd, v.as_str()))
                });
                versions.with(kind, version)
            });
        Self::at(versions)
    }

    /// The kinds served at `versions`.
    pub fn at(versions: Versions) -> Self {
        Self {
            served: Served {
                sidecar_sets: versions.serves(KruiseKind::SidecarSet),
                pod_unavailable_budgets: versions.serves(KruiseKind::PodUnavailableBudget),
                workload_spreads: versions.serves(KruiseKind::WorkloadSpread),
                container_recreate_requests: versions.serves(KruiseKind::ContainerRecreateRequest),
            },
            workloads: ServedKinds {
                clone_sets: versions.serves(KruiseKind::CloneSet),
                advanced_stateful_sets: versions.serves(KruiseKind::AdvancedStatefulSet),
            },
            versions,
        }
    }

    /// The kinds (at their versions) of `self` that `other` lacks or serves at another version, named as
    /// `plural.group/version` (for the log of a change).
    pub fn missing_from(&self, other: &Self) -> Vec<String> {
        KruiseKind::ALL
            .iter()
            .filter_map(|&kind| match self.versions.of(kind) {
                Some(v) if other.versions.of(kind) != Some(v) => {
                    Some(format!("{}/{v}", kind.crd_name()))
                }
                _ => None,
            })
            .collect()
    }
}

/// Whether `crd` is established, not being deleted, and serves `version`.
fn serving(crd: &CustomResourceDefinition, version: &str) -> bool {
    let established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
    established
        && crd.metadata.deletion_timestamp.is_none()
        && crd
            .spec
            .versions
            .iter()
            .any(|v| v.name == version && v.served)
}

/// What a stored CRD keeps: no schema (the bulk of a CRD, never read here), no managedFields.
fn strip(crd: &mut CustomResourceDefinition) {
    shared::strip_unread_metadata(crd);
    for version in &mut crd.spec.versions {
        version.schema = None;
    }
}

/// The CRD watch: the store, and the kinds it serves (updated on every change of the store, ready with
/// its first list).
pub struct CrdWatch {
    /// The CRDs, without their schemas.
    pub store: Shared<CustomResourceDefinition>,
    /// The kinds served, as of the last change.
    pub kinds: watch::Receiver<Kinds>,
}

impl CrdWatch {
    /// The kinds the store serves now (once it is listed, before the feed's first change may be out).
    pub fn kinds_now(&self) -> Kinds {
        Kinds::of(self.store.store().state().iter().map(|c| &**c))
    }
}

/// Starts watching CRDs.
pub fn watch(client: &Client) -> CrdWatch {
    let (tx, kinds) = watch::channel(Kinds::default());
    let store = shared::watch(
        Api::<CustomResourceDefinition>::all(client.clone()),
        (),
        shared::whole_lists(),
        strip,
        move |_, store: &Store<CustomResourceDefinition>| {
            let now = Kinds::of(store.state().iter().map(|c| &**c));
            tx.send_if_modified(|kinds| std::mem::replace(kinds, now) != now);
        },
    );
    CrdWatch { store, kinds }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::versions::Version;

    fn crd(name: &str, versions: &[(&str, bool)], established: bool) -> CustomResourceDefinition {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"group": name.split_once('.').unwrap().1, "scope": "Namespaced",
                "names": {"plural": name.split_once('.').unwrap().0, "kind": "X"},
                "versions": versions.iter().map(|(v, served)| serde_json::json!(
                    {"name": v, "served": served, "storage": true})).collect::<Vec<_>>()},
            "status": {"conditions": [{"type": "Established",
                "status": if established { "True" } else { "False" }}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_kind_is_served_at_the_newest_known_version_its_established_crd_serves() {
        let none = Kinds::of([]);
        assert_eq!(none, Kinds::default());
        let master = [
            crd(
                "sidecarsets.apps.kruise.io",
                &[("v1alpha1", true), ("v1beta1", true)],
                true,
            ),
            crd(
                "podunavailablebudgets.policy.kruise.io",
                &[("v1beta1", true)],
                true,
            ),
            crd("clonesets.apps.kruise.io", &[("v1alpha1", true)], true),
        ];
        let kinds = Kinds::of(&master);
        assert!(kinds.served.sidecar_sets && kinds.served.pod_unavailable_budgets);
        assert!(!kinds.served.workload_spreads && !kinds.served.container_recreate_requests);
        assert!(kinds.workloads.clone_sets && !kinds.workloads.advanced_stateful_sets);
        // Not yet established, or the version read not served: not served.
        let pending = [crd(
            "sidecarsets.apps.kruise.io",
            &[("v1beta1", true)],
            false,
        )];
        assert!(!Kinds::of(&pending).served.sidecar_sets);
        // OpenKruise 1.8's CRDs: v1alpha1 only (or v1beta1 listed but not served): served at v1alpha1.
        let alpha_only = [
            crd(
                "sidecarsets.apps.kruise.io",
                &[("v1alpha1", true), ("v1beta1", false)],
                true,
            ),
            crd(
                "podunavailablebudgets.policy.kruise.io",
                &[("v1alpha1", true)],
                true,
            ),
        ];
        let released = Kinds::of(&alpha_only);
        assert!(released.served.sidecar_sets && released.served.pod_unavailable_budgets);
        assert_eq!(
            released.versions.of(KruiseKind::SidecarSet),
            Some(Version::V1alpha1)
        );
        assert_eq!(
            released.versions.of(KruiseKind::PodUnavailableBudget),
            Some(Version::V1alpha1)
        );
        assert_eq!(
            kinds.versions.of(KruiseKind::SidecarSet),
            Some(Version::V1beta1)
        );
        // A version change reads as the new one added and the old one gone.
        assert_eq!(
            released.missing_from(&kinds),
            [
                "sidecarsets.apps.kruise.io/v1alpha1",
                "podunavailablebudgets.policy.kruise.io/v1alpha1"
            ]
        );
        // A version this server does not know is not read.
        let unknown = [crd("sidecarsets.apps.kruise.io", &[("v2", true)], true)];
        assert!(!Kinds::of(&unknown).served.sidecar_sets);
        // Being deleted: not served.
        let mut deleting = crd("sidecarsets.apps.kruise.io", &[("v1beta1", true)], true);
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        assert!(!Kinds::of([&deleting]).served.sidecar_sets);
        assert_eq!(
            kinds.missing_from(&none),
            [
                "sidecarsets.apps.kruise.io/v1beta1",
                "podunavailablebudgets.policy.kruise.io/v1beta1",
                "clonesets.apps.kruise.io/v1alpha1"
            ]
        );
        assert!(none.missing_from(&kinds).is_empty());
    }
}
