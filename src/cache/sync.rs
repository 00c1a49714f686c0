//! Whether each informer store has its first list, and the last error of its watch ([`SyncState`], one per
//! store, kept by its writer in [`super::shared`]); what readiness, `/readyz?verbose`, the log and the
//! `informer_synced` gauge say of them ([`report`]).

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use tokio::sync::watch as flag;

/// Whether a store has its first list, and the last error of its watch: set by the store's writer, read by
/// any number of waiters (module docs).
#[derive(Debug)]
pub struct SyncState {
    resource: String,
    listed: flag::Sender<bool>,
    last_error: Mutex<Option<WatchError>>,
}

/// A failed list or watch of a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchError {
    /// What the client or the API server said.
    pub message: String,
    /// When.
    pub at: SystemTime,
}

impl SyncState {
    /// A store of `resource` (`plural` or `plural.group`, as kubectl names it), not listed yet.
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            listed: flag::channel(false).0,
            last_error: Mutex::new(None),
        }
    }

    /// The resource, as kubectl names it (`pods`, `sidecarsets.apps.kruise.io`).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Whether the store has had its first list.
    pub fn synced(&self) -> bool {
        *self.listed.borrow()
    }

    /// The last failed list or watch, if any (kept after the store syncs: the last error and when).
    pub fn last_error(&self) -> Option<WatchError> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Resolves once the store has had its first list (any number of waiters).
    pub fn ready(&self) -> impl Future<Output = ()> + Send + use<> {
        let mut listed = self.listed.subscribe();
        async move {
            // The sender lives as long as this state, which the receiver does not keep: if the state is
            // gone nothing will ever be listed, and the caller's other waits (leadership, stop) decide.
            if listed.wait_for(|l| *l).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Marks the first list done.
    pub fn mark_listed(&self) {
        self.listed
            .send_if_modified(|l| !std::mem::replace(l, true));
    }

    /// Records a failed list or watch.
    pub fn record_error(&self, message: String) {
        *self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(WatchError {
            message,
            at: SystemTime::now(),
        });
    }
}

/// How long a replica waits for its first lists before it warns.
pub const WARN_AFTER: Duration = Duration::from_secs(30);
/// How often it warns again while some are still not listed.
pub const WARN_EVERY: Duration = Duration::from_secs(60);

impl SyncState {
    /// One line on a store not listed yet: its resource, and [`SyncState::waiting_reason`].
    pub fn describe_waiting(&self, now: SystemTime) -> String {
        format!("{}: {}", self.resource, self.waiting_reason(now))
    }

    /// Why a store is not listed yet, as far as known: its watch's last error and how long ago.
    pub fn waiting_reason(&self, now: SystemTime) -> String {
        match self.last_error() {
            None => "not listed yet, no error".to_owned(),
            Some(e) => {
                let ago = now.duration_since(e.at).unwrap_or_default().as_secs();
                format!("not listed yet, last error {ago}s ago: {}", e.message)
            }
        }
    }
}

/// The stores of `states` not listed yet, described ([`SyncState::describe_waiting`]), `; `-separated.
pub fn describe_waiting(states: &[Arc<SyncState>]) -> String {
    let now = SystemTime::now();
    states
        .iter()
        .filter(|s| !s.synced())
        .map(|s| s.describe_waiting(now))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Logs (INFO) once every store of `states` has its first list; warns after [`WARN_AFTER`], and every
/// [`WARN_EVERY`] after that while some have not, naming them and their watches' last errors. Ends when
/// all are listed, or when the stores are gone (the task keeps none of them alive).
pub fn report(states: &[Arc<SyncState>]) {
    let count = states.len();
    let started = tokio::time::Instant::now();
    let watching = watch_sync(states, |after, waiting| {
        tracing::warn!(
            after_s = after.as_secs(),
            waiting = %waiting,
            "informer caches not synced: not ready until they are"
        );
    });
    tokio::spawn(async move {
        if watching.await {
            tracing::info!(
                resources = count,
                elapsed_s = started.elapsed().as_secs_f64(),
                "informer caches synced"
            );
        }
    });
}

/// Resolves true once every store of `states` has its first list, false when they are gone first; calls
/// `warn(elapsed, waiting)` after [`WARN_AFTER`] and every [`WARN_EVERY`] after that while some have not,
/// `waiting` as [`describe_waiting`] has them.
pub fn watch_sync(
    states: &[Arc<SyncState>],
    warn: impl Fn(Duration, String) + Send + 'static,
) -> impl Future<Output = bool> + Send + 'static {
    let weak: Vec<Weak<SyncState>> = states.iter().map(Arc::downgrade).collect();
    let mut flags: Vec<flag::Receiver<bool>> =
        states.iter().map(|s| s.listed.subscribe()).collect();
    let started = tokio::time::Instant::now();
    async move {
        let all_listed = async move {
            for listed in &mut flags {
                // An error: the store is gone.
                if listed.wait_for(|l| *l).await.is_err() {
                    return false;
                }
            }
            true
        };
        tokio::pin!(all_listed);
        let mut next = WARN_AFTER;
        loop {
            tokio::select! {
                listed = &mut all_listed => return listed,
                () = tokio::time::sleep_until(started + next) => {
                    let Some(states) = weak.iter().map(Weak::upgrade).collect::<Option<Vec<_>>>() else {
                        return false;
                    };
                    warn(next, describe_waiting(&states));
                    next += WARN_EVERY;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_waiter_wakes_when_the_store_is_listed() {
        // kube-runtime's Store::wait_until_ready woke only the last of several waiters (module docs of
        // super::shared): here each of many waiters, polled before the list, wakes.
        let state = Arc::new(SyncState::new("pods"));
        let waiters: Vec<_> = (0..8).map(|_| tokio::spawn(state.ready())).collect();
        tokio::task::yield_now().await;
        assert!(!state.synced());
        state.mark_listed();
        for waiter in waiters {
            tokio::time::timeout(Duration::from_secs(5), waiter)
                .await
                .expect("a waiter was not woken")
                .unwrap();
        }
        assert!(state.synced());
        // Ready at once afterwards.
        tokio::time::timeout(Duration::from_secs(1), state.ready())
            .await
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn stores_not_listed_are_warned_of_after_30_s_and_every_60_s_after() {
        let (pods, nodes) = (
            Arc::new(SyncState::new("pods")),
            Arc::new(SyncState::new("nodes")),
        );
        pods.mark_listed();
        nodes.record_error("list: nodes is forbidden (403)".into());
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let seen = warnings.clone();
        let states = [pods, nodes.clone()];
        let watching = tokio::spawn(watch_sync(&states, move |after, waiting| {
            seen.lock().unwrap().push((after.as_secs(), waiting));
        }));
        tokio::time::sleep(Duration::from_secs(29)).await;
        assert!(warnings.lock().unwrap().is_empty(), "nothing before 30 s");
        tokio::time::sleep(Duration::from_secs(62)).await;
        {
            let warnings = warnings.lock().unwrap();
            let after: Vec<u64> = warnings.iter().map(|(a, _)| *a).collect();
            assert_eq!(after, [30, 90]);
            assert!(
                warnings[0]
                    .1
                    .starts_with("nodes: not listed yet, last error "),
                "{warnings:?}"
            );
            assert!(
                warnings[0].1.ends_with(": list: nodes is forbidden (403)"),
                "{warnings:?}"
            );
        }
        nodes.mark_listed();
        assert!(watching.await.unwrap(), "listed at last");
        assert_eq!(warnings.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn the_watch_ends_when_the_stores_are_gone() {
        let state = Arc::new(SyncState::new("pods"));
        let watching = watch_sync(std::slice::from_ref(&state), |_, _| {});
        drop(state);
        assert!(!watching.await);
    }

    #[test]
    fn a_store_not_listed_is_described_with_its_last_error() {
        let state = SyncState::new("sidecarsets.apps.kruise.io");
        let now = SystemTime::now();
        assert_eq!(
            state.describe_waiting(now),
            "sidecarsets.apps.kruise.io: not listed yet, no error"
        );
        state.record_error("list: forbidden (403)".into());
        let later = state.last_error().unwrap().at + Duration::from_secs(12);
        assert_eq!(
            state.describe_waiting(later),
            "sidecarsets.apps.kruise.io: not listed yet, last error 12s ago: list: forbidden (403)"
        );
        assert_eq!(
            state.last_error().map(|e| e.message),
            Some("list: forbidden (403)".to_owned())
        );
    }

    #[test]
    fn only_stores_not_listed_are_described() {
        let (pods, nodes) = (
            Arc::new(SyncState::new("pods")),
            Arc::new(SyncState::new("nodes")),
        );
        pods.mark_listed();
        assert_eq!(
            describe_waiting(&[pods.clone(), nodes.clone()]),
            "nodes: not listed yet, no error"
        );
        nodes.mark_listed();
        assert_eq!(describe_waiting(&[pods, nodes]), "");
    }
}
