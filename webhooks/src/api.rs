//! serde types for the Kruise custom resources the webhooks and controllers read, and Go's `v1.Probe`
//! ([`probe`]) as Kruise marshals it into pod annotations. What a webhook injects or writes back as received
//! keeps the fields our types do not model (a SidecarSet's `extra`, its containers and volumes as text
//! ([`RawObject`]), a WorkloadSpread subset's `patch` as text); the PodUnavailableBudget, WorkloadSpread and
//! PersistentPodState types cover every field of their CRD's schema and ignore others, which the apiserver
//! prunes anyway.

/// `k8s_openapi::Resource` and `Metadata` (so kube's `Resource`: a reflector can store it, an `Api` can
/// read it) for an API type whose `metadata` field is an `ObjectMeta`.
macro_rules! resource {
    ($ty:ty, $api_version:literal, $group:literal, $version:literal, $kind:literal, $plural:literal, $scope:ident) => {
        impl k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = $api_version;
            const GROUP: &'static str = $group;
            const KIND: &'static str = $kind;
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = k8s_openapi::$scope;
        }

        impl k8s_openapi::Metadata for $ty {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
    };
}

pub mod containerrecreaterequest;
#[cfg(test)]
mod crd_schema;
pub mod intern;
pub mod node;
pub mod persistentpodstate;
pub mod pod;
pub mod podprobemarker;
pub mod podunavailablebudget;
pub mod probe;
mod raw;
pub mod revision;
pub mod sidecarset;
pub mod statefulset;
pub mod topology_node;
pub mod workloadspread;

pub use raw::RawObject;
