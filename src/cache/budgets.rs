//! The PodUnavailableBudgets this replica wrote or read from the API server, newer than its informer's copy
//! until the watch brings them, and one lock per PUB. The admission gate's spends ([`crate::status`]) and the
//! PUB status controller share them: each decides on the newest copy this replica knows and writes under the
//! PUB's lock, so the two never make each other's writes conflict on one replica (conflicts then only come
//! from other replicas, and are retried on a fresh read either way).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;

/// A PUB's namespace and name.
pub type BudgetKey = (String, String);

/// A resourceVersion as the number the API server makes it (etcd's revision); `None` if it is not one.
fn revision(budget: &PodUnavailableBudget) -> Option<u64> {
    budget.metadata.resource_version.as_deref()?.parse().ok()
}

/// The copies and locks (cheap to clone: shared).
#[derive(Clone, Default)]
pub struct BudgetCopies(Arc<Inner>);

#[derive(Default)]
struct Inner {
    copies: Mutex<HashMap<BudgetKey, Arc<PodUnavailableBudget>>>,
    locks: Mutex<HashMap<BudgetKey, Arc<tokio::sync::Mutex<()>>>>,
}

impl BudgetCopies {
    /// The lock of one PUB's writes on this replica.
    pub fn lock(&self, key: &BudgetKey) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.0.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(key.clone()).or_default().clone()
    }

    /// Keeps a PUB this replica wrote or read from the API server, if it is newer than the copy kept.
    pub fn remember(&self, budget: PodUnavailableBudget) {
        let key = (
            budget.metadata.namespace.clone().unwrap_or_default(),
            budget.metadata.name.clone().unwrap_or_default(),
        );
        let mut copies = self.0.copies.lock().unwrap_or_else(|p| p.into_inner());
        let newer = copies
            .get(&key)
            .is_none_or(|kept| revision(&budget) > revision(kept));
        if newer {
            copies.insert(key, Arc::new(budget));
        }
    }

    /// Drops the copy of a PUB that is gone.
    pub fn forget(&self, key: &BudgetKey) {
        let mut copies = self.0.copies.lock().unwrap_or_else(|p| p.into_inner());
        copies.remove(key);
    }

    /// The newest of the informer's copy (`cached`) and the copy kept, by resourceVersion. A kept copy the
    /// informer has caught up with is dropped; one the informer does not have (the object went away, or is
    /// not listed yet) is returned: the next write answers NotFound if it is gone.
    pub fn newest(
        &self,
        key: &BudgetKey,
        cached: Option<Arc<PodUnavailableBudget>>,
    ) -> Option<Arc<PodUnavailableBudget>> {
        let mut copies = self.0.copies.lock().unwrap_or_else(|p| p.into_inner());
        let Some(copy) = copies.get(key) else {
            return cached;
        };
        match &cached {
            Some(informer) if revision(informer) >= revision(copy) => {
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
        let copies = BudgetCopies::default();
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
