//! One change of a shared store ([`super::shared`]), as its publisher files it in the store's indexes
//! ([`super::index`]) and then publishes it to the controllers. Its own module so that the indexes and the
//! store both name it without importing each other.

use std::sync::Arc;

/// One change of a shared store.
pub enum Change<K> {
    /// An object was created or updated (the store's copy).
    Applied(Arc<K>),
    /// An object was deleted (its last state).
    Deleted(Arc<K>),
    /// The store was replaced by a relist, or the subscriber missed changes: anything may have changed.
    Relisted,
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Applied(o) => Self::Applied(o.clone()),
            Self::Deleted(o) => Self::Deleted(o.clone()),
            Self::Relisted => Self::Relisted,
        }
    }
}

impl<K> Change<K> {
    /// The object changed, when one did.
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Applied(o) | Self::Deleted(o) => Some(o),
            Self::Relisted => None,
        }
    }
}
