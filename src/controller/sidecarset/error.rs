//! Why a SidecarSet reconcile did not finish: the one error of the controller ([`super`]) and of the in-place
//! upgrade it runs ([`super::upgrade`]), in a module of its own so that the two name it without importing
//! each other.

/// Why a reconcile did not finish (logged; the SidecarSet is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// `spec.selector` or `spec.namespaceSelector` cannot be evaluated.
    #[error("SidecarSet {name}: {reason}")]
    Selector {
        /// The SidecarSet.
        name: String,
        /// The selector error.
        reason: String,
    },
    /// An API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done, naming the object.
        action: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Every name tried for a new revision was taken by a revision with other data.
    #[error("creating a ControllerRevision for SidecarSet {name}: {tries} names taken")]
    Collisions {
        /// The SidecarSet.
        name: String,
        /// Names tried.
        tries: usize,
    },
    /// A pod update kept conflicting.
    #[error("updating pod {pod}: still conflicting after {attempts} attempts")]
    PodConflict {
        /// The pod, `namespace/name`.
        pod: String,
        /// Attempts made.
        attempts: usize,
    },
    /// The status write kept conflicting.
    #[error("writing the status of SidecarSet {name}: still conflicting after {attempts} attempts")]
    Conflict {
        /// The SidecarSet.
        name: String,
        /// Attempts made.
        attempts: usize,
    },
}
