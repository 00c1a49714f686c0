//! The objects whose status this replica writes inside admission (PodUnavailableBudgets, WorkloadSpreads), as
//! it wrote or read them from the API server, newer than its informer's copy until the watch brings them,
//! and one lock per object ([`Copies`]). The admission steps' status records ([`crate::status`]) and the
//! status controllers share them: each decides on the newest copy this replica knows and writes under the
//! object's lock, so the two never make each other's writes conflict on one replica (conflicts then only
//! come from other replicas, and are retried on a fresh read either way). For WorkloadSpreads this is
//! OpenKruise's per-process cache of the last object written and its per-object mutex
//! (spec/workloadspread.md §5.7).
//!
//! A decision taken while records of this replica are being gathered into one write ([`crate::status`]
//! commits them in groups) reads the object as that group will write it: [`deciding_on`] lays it over the
//! copies for the one synchronous call that decides, on that thread only; nothing else ever sees an object
//! not yet written.

use std::any::{Any, TypeId};
use std::cell::RefCell;
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
pub fn revision<K: Metadata<Ty = ObjectMeta>>(object: &K) -> Option<u64> {
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
    locks: Mutex<HashMap<BudgetKey, Arc<Group<K>>>>,
}

pub use super::group::Group;

/// An object laid over the copies: its kind, key, and the object.
type Laid = (TypeId, BudgetKey, Arc<dyn Any + Send + Sync>);

thread_local! {
    /// The object a decision on this thread reads instead of the copies.
    static OVERLAY: RefCell<Option<Laid>> = const { RefCell::new(None) };
}

/// Runs `decide` reading `object` (when given) as the newest copy of `key`, on this thread only.
pub fn deciding_on<K: Any + Send + Sync, R>(
    key: &BudgetKey,
    object: Option<Arc<K>>,
    decide: impl FnOnce() -> R,
) -> R {
    struct Restore(Option<Laid>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            OVERLAY.with_borrow_mut(|o| *o = previous);
        }
    }
    let Some(object) = object else {
        return decide();
    };
    let laid: Arc<dyn Any + Send + Sync> = object;
    let _restore = Restore(OVERLAY.replace(Some((TypeId::of::<K>(), key.clone(), laid))));
    decide()
}

/// The object laid over `key` for the decision running on this thread, if any.
fn overlay<K: Any + Send + Sync>(key: &BudgetKey) -> Option<Arc<K>> {
    OVERLAY.with_borrow(|o| match o {
        Some((kind, at, object)) if *kind == TypeId::of::<K>() && at == key => {
            object.clone().downcast::<K>().ok()
        }
        _ => None,
    })
}

impl<K: Metadata<Ty = ObjectMeta> + Any + Send + Sync> Copies<K> {
    /// The writes of one object on this replica.
    pub fn group(&self, key: &BudgetKey) -> Arc<Group<K>> {
        let mut locks = self.0.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(key.clone()).or_default().clone()
    }

    /// The lock of one object's writes on this replica.
    pub fn lock(&self, key: &BudgetKey) -> Arc<tokio::sync::Mutex<()>> {
        self.group(key).writer()
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
        if let Some(laid) = overlay::<K>(key) {
            return Some(laid);
        }
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

    #[test]
    fn a_decision_reads_the_object_laid_over_its_key_and_only_that_decision() {
        let copies: BudgetCopies = Copies::default();
        let key = ("ns".to_owned(), "p".to_owned());
        let other = ("ns".to_owned(), "q".to_owned());
        let informer = Arc::new(budget("5", 3));
        let laid = Arc::new(budget("4", 1));
        let read = deciding_on(&key, Some(laid.clone()), || {
            (
                copies.newest(&key, Some(informer.clone())),
                copies.newest(&other, None),
                // Another kind under the same key is not laid over.
                SpreadCopies::default().newest(&key, None),
            )
        });
        assert_eq!(read, (Some(laid), None, None));
        assert_eq!(copies.newest(&key, Some(informer.clone())), Some(informer));
        // Restored when the decision panics too.
        let unwound = std::panic::catch_unwind(|| {
            deciding_on(&key, Some(Arc::new(budget("4", 1))), || panic!("decision"))
        });
        assert!(unwound.is_err());
        assert!(copies.newest(&key, None).is_none());
    }
}
