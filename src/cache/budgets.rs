//! The objects whose status this replica writes inside admission (PodUnavailableBudgets, WorkloadSpreads), as
//! it wrote or read them from the API server, newer than its informer's copy until the watch brings them,
//! and one lock per object ([`Copies`]). The admission steps' status records ([`crate::status`]) and the
//! status controllers share them: each decides on the newest copy this replica knows and writes under the
//! object's lock, so the two never make each other's writes conflict on one replica (conflicts then only
//! come from other replicas, and are retried on a fresh read either way). For WorkloadSpreads this is
//! OpenKruise's per-process cache of the last object written and its per-object mutex
//! (spec/workloadspread.md §5.7).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::Metadata;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;
use kruise_webhooks::api::workloadspread::WorkloadSpread;

/// An object's namespace and name.
pub type BudgetKey = (String, String);

/// The PodUnavailableBudget copies.
pub type BudgetCopies = Copies<PodUnavailableBudget>;
/// The WorkloadSpread copies.
pub type SpreadCopies = Copies<WorkloadSpread>;

/// A resourceVersion as the number the API server makes it (etcd's revision); `None` if it is not one.
fn revision<K: Metadata<Ty = ObjectMeta>>(object: &K) -> Option<u64> {
    object.metadata().resource_version.as_deref()?.parse().ok()
}

/// The copies and locks of one kind (cheap to clone: shared).
pub struct Copies<K>(Arc<Inner<K>>);

impl<K> Clone for Copies<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K> Default for Copies<K> {
    fn default() -> Self {
        Self(Arc::new(Inner {
            copies: Mutex::default(),
            locks: Mutex::default(),
        }))
    }
}

struct Inner<K> {
    copies: Mutex<HashMap<BudgetKey, Arc<K>>>,
    locks: Mutex<HashMap<BudgetKey, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K: Metadata<Ty = ObjectMeta>> Copies<K> {
    /// The lock of one object's writes on this replica.
    pub fn lock(&self, key: &BudgetKey) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.0.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(key.clone()).or_default().clone()
    }

    /// Keeps an object this replica wrote or read from the API server, if it is newer than the copy kept.
    pub fn remember(&self, budget: K) {
        let key = (
            budget.metadata().namespace.clone().unwrap_or_default(),
            budget.metadata().name.clone().unwrap_or_default(),
        );
        let mut copies = self.0.copies.lock().unwrap_or_else(|p| p.into_inner());
        let newer = copies
            .get(&key)
            .is_none_or(|kept| revision(&budget) > revision(&**kept));
        if newer {
            copies.insert(key, Arc::new(budget));
        }
    }

    /// Drops the copy of an object that is gone.
    pub fn forget(&self, key: &BudgetKey) {
        let mut copies = self.0.copies.lock().unwrap_or_else(|p| p.into_inner());
        copies.remove(key);
    }

    /// The newest of the informer's copy (`cached`) and the copy kept, by resourceVersion. A kept copy the
    /// informer has caught up with is dropped; one the informer does not have (the object went away, or is
    /// not listed yet) is returned: the next write answers NotFound if it is gone.
    pub fn newest(&self, key: &BudgetKey, cached: Option<Arc<K>>) -> Option<Arc<K>> {
        let mut copies = self.0.copies.lock().unwrap_or_else(|p| p.into_inner());
        let Some(copy) = copies.get(key) else {
            return cached;
        };
        match &cached {
            Some(informer) if revision(&**informer) >= revision(&**copy) => {
                copies.remove(key);
                cached
            }
            _ => Some(copy.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(rv: &str, allowed: i32) -> PodUnavailableBudget {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": rv},
            "status": {"unavailableAllowed": allowed, "currentAvailable": 0, "desiredAvailable": 0, "totalReplicas": 0}
        }))
        .unwrap()
    }

    #[test]
    fn the_newest_copy_wins_and_a_caught_up_one_is_dropped() {
        let copies: BudgetCopies = Copies::default();
        let key = ("ns".to_owned(), "p".to_owned());
        let informer = Arc::new(budget("5", 3));
        assert_eq!(
            copies.newest(&key, Some(informer.clone())),
            Some(informer.clone())
        );
        copies.remember(budget("7", 2));
        copies.remember(budget("6", 9)); // older: ignored
        let newest = copies.newest(&key, Some(informer)).unwrap();
        assert_eq!(newest.metadata.resource_version.as_deref(), Some("7"));
        // The informer catches up: its copy is read, the kept one dropped.
        let caught_up = Arc::new(budget("8", 1));
        assert_eq!(
            copies.newest(&key, Some(caught_up.clone())),
            Some(caught_up.clone())
        );
        assert!(copies.0.copies.lock().unwrap().is_empty());
        // Not in the informer (yet, or any more): the copy stands.
        copies.remember(budget("9", 0));
        assert!(copies.newest(&key, None).is_some());
        copies.forget(&key);
        assert!(copies.newest(&key, None).is_none());
    }
}
