//! One object's status writes on this replica, as data: the lock every write of the object holds and the
//! records being gathered for its next write ([`Group`]), kept per object by the copies
//! ([`super::budgets::Copies`]). The status commits ([`crate::status`]) gather and write them; the PUB
//! status controller writes under the same lock. Only the state lives here, below the commits that use it.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

/// One object's writes on this replica: the lock a write holds (the PUB status controller writes under it
/// too), and the records being gathered for the next write.
pub struct Group<K> {
    writer: Arc<tokio::sync::Mutex<()>>,
    gathering: Mutex<Gathering<K>>,
}

impl<K> Default for Group<K> {
    fn default() -> Self {
        Self {
            writer: Arc::default(),
            gathering: Mutex::new(Gathering {
                open: None,
                in_flight: None,
                last: None,
                conflicts: 0,
            }),
        }
    }
}

impl<K> Group<K> {
    /// The lock of the object's writes.
    pub fn writer(&self) -> Arc<tokio::sync::Mutex<()>> {
        self.writer.clone()
    }

    /// The records being gathered, locked (a holder that panicked leaves them usable).
    pub(crate) fn gathering(&self) -> MutexGuard<'_, Gathering<K>> {
        self.gathering.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The records of one object between its writes.
pub(crate) struct Gathering<K> {
    /// The records gathered for the next write.
    pub(crate) open: Option<Batch<K>>,
    /// The object of the write in flight, as sent, and where its outcome is told.
    pub(crate) in_flight: Option<(Arc<K>, watch::Receiver<Option<Outcome>>)>,
    /// The last write that succeeded: the resourceVersion sent and the one answered (`None` after a write
    /// that failed).
    pub(crate) last: Option<(Option<String>, Option<String>)>,
    /// The writes that failed since the last one that succeeded (the pause after a conflict grows with it).
    pub(crate) conflicts: usize,
}

/// The records gathered for one write.
pub(crate) struct Batch<K> {
    /// The object with every record gathered.
    pub(crate) object: Arc<K>,
    /// Gathered on top of the write in flight, whose outcome decides whether this one may be written.
    pub(crate) on_in_flight: bool,
    /// Where the members learn the outcome.
    pub(crate) outcome: watch::Sender<Option<Outcome>>,
}

/// What became of a group's write.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Written.
    Written,
    /// Someone else wrote the object first (the API server's text); the fresh object is in the copies.
    Conflict(String),
    /// The write the group was gathered on top of failed: decide again.
    Again,
    /// The object is gone.
    Gone,
    /// The write failed otherwise (why).
    Failed(String),
}
