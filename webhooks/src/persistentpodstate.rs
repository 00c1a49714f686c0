//! PersistentPodState (docs/persistentpodstate.md): what is decided about the PersistentPodState objects
//! themselves. The pod chain's step that reads them is [`crate::pod::persistent_pod_state`].
//!
//! - [`validate`]: the validating webhook `/validate-apps-kruise-io-persistentpodstate` (§2);
//! - [`status`]: the status the controller keeps, computed from the target StatefulSet, its pods and their
//!   nodes (§3);
//! - [`generate`]: the PersistentPodState a StatefulSet's annotations ask for, and what to do about the one
//!   there is (§4).

pub mod generate;
pub mod status;
pub mod validate;

use crate::api::persistentpodstate::TargetReference;
pub use crate::api::statefulset::StatefulSetKind;
use crate::podunavailablebudget::related::api_group;

/// `util.IsReferenceEqual`: the same API group (both apiVersions parse), kind and name; the versions are not
/// compared.
pub fn same_target(a: &TargetReference, b: &TargetReference) -> bool {
    match (api_group(&a.api_version), api_group(&b.api_version)) {
        (Some(x), Some(y)) => x == y && a.kind == b.kind && a.name == b.name,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(api_version: &str, kind: &str, name: &str) -> TargetReference {
        TargetReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    #[test]
    fn targets_are_the_same_by_group_kind_and_name() {
        let web = target("apps/v1", "StatefulSet", "web");
        assert!(same_target(
            &web,
            &target("apps/v1beta2", "StatefulSet", "web")
        ));
        assert!(!same_target(
            &web,
            &target("apps.kruise.io/v1beta1", "StatefulSet", "web")
        ));
        assert!(!same_target(&web, &target("apps/v1", "StatefulSet", "db")));
        assert!(!same_target(&web, &target("a/b/c", "StatefulSet", "web")));
        // Empty apiVersions parse (to the core group): two empty targetRefs are the same.
        assert!(same_target(&target("", "", ""), &target("", "", "")));
    }

    #[test]
    fn only_statefulsets_of_apps_and_apps_kruise_io_are_followed() {
        assert_eq!(
            StatefulSetKind::of(&target("apps/v1", "StatefulSet", "w")),
            Some(StatefulSetKind::Native)
        );
        assert_eq!(
            StatefulSetKind::of(&target("apps.kruise.io/v1alpha1", "StatefulSet", "w")),
            Some(StatefulSetKind::Advanced)
        );
        assert_eq!(
            StatefulSetKind::of(&target("example.io/v1", "StatefulSet", "w")),
            None
        );
        assert_eq!(
            StatefulSetKind::of(&target("apps/v1", "Deployment", "w")),
            None
        );
    }
}
