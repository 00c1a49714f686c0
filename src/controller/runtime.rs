//! The runtime every controller runs on: kube-runtime's [`Controller`] over the stores the webhooks share
//! ([`crate::cache::shared`]), gated by leadership (STYLE §2).
//!
//! A controller says what it reconciles and what triggers it ([`Reconciler::triggers`]: its own objects'
//! changes, and changes of other kinds mapped to the objects they concern); kube-runtime's scheduler
//! coalesces the requests (an object waiting is queued once, an object in reconcile is not reconciled
//! twice at a time), runs up to [`Settings::concurrency`] reconciles at once and requeues. The runtime
//! adds what every controller of this server needs:
//! - it works only while this replica leads, and only once every cache the controller reads has synced
//!   ([`Reconciler::synced`]); each time it starts leading it reconciles every object once;
//! - losing leadership drops the controller, which aborts the reconciles in flight (kube-runtime spawns each
//!   as a task cancelled on drop), so a replica that lost the Lease writes nothing more; the controllers'
//!   client ([`crate::controller::leader::gated`]) also refuses any write issued once leadership is false,
//!   so a reconcile polled in the instant leadership ends cannot slip one out;
//! - a failed reconcile (an error, or longer than [`Settings::reconcile_timeout`]) is retried after
//!   [`Settings::min_backoff`] doubling per failure in a row up to [`Settings::max_backoff`]; a change of
//!   the object or of what it depends on retries it at once. Each failure is logged at WARN with the API
//!   server's message and the object, and, where the controller has a [`FailureReport`], counted in
//!   `controller_errors_total{controller,reason}` and told on the object as a Warning event
//!   (`ReconcileFailed`): at the first failure of a run, when the message changes, and at most every
//!   [`Settings::max_backoff`] while it repeats (no event storm);
//! - a successful one is repeated after [`Settings::resync`] (jittered by up to 10 %) unless something
//!   triggers it before: a safety net, never the way changes are found. Controllers of pods turn it off
//!   ([`Settings::per_pod`]): a scheduled resync of each of 10,000 pods held ~7 MiB per controller, for
//!   nothing a pod's own changes and relists do not already trigger;
//! - a relist of any watched store, or a trigger feed that fell behind, reconciles everything;
//! - a panic restarts the controller after 5 s; stopping ([`Running::stop`]) abandons what is in flight.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use kube::Resource;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{Lookup, ObjectRef, Store};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::failure::{failure_reason, failure_text};
use crate::cache::shared::{Change, Shared};
use crate::events::{EventType, Recorder};
use crate::metrics::{ControllerReasonLabels, Metrics};

/// Where a controller's failed reconciles are reported beyond the log ([`Reconciler::failure_report`]).
#[derive(Clone)]
pub struct FailureReport {
    /// `controller_errors_total{controller,reason}`.
    pub metrics: Metrics,
    /// Records the Warning event `ReconcileFailed` on the object.
    pub recorder: Recorder,
}

/// The reason of the Warning event on an object whose reconcile failed.
pub const RECONCILE_FAILED: &str = "ReconcileFailed";

/// Timing of a controller.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Reconciles running at once (OpenKruise's `--<controller>-workers`).
    pub concurrency: u16,
    /// First retry delay after a failure; doubles per failure in a row.
    pub min_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
    /// Longest time one reconcile may take.
    pub reconcile_timeout: Duration,
    /// Every object is reconciled again this long after its last success, if nothing triggered it before
    /// (`None`: only when triggered; a reconcile's own requested retry still stands).
    pub resync: Option<Duration>,
}

impl Settings {
    /// The settings of a controller of pods: no periodic resync of each object.
    #[must_use]
    pub fn per_pod() -> Self {
        Self {
            resync: None,
            ..Self::default()
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            concurrency: 3,
            min_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            reconcile_timeout: Duration::from_secs(60),
            resync: Some(Duration::from_secs(30 * 60)),
        }
    }
}

/// A controller: what it reconciles, what triggers it, and the reconcile itself.
pub trait Reconciler: Send + Sync + 'static {
    /// The kind reconciled.
    type Object: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static;
    /// Why a reconcile failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Resolves once every cache the reconcile reads has its first list.
    fn synced(&self) -> BoxFuture<'static, ()>;

    /// The objects and what triggers their reconcile; called each time this replica starts leading (the
    /// feeds are subscribed to then).
    fn triggers(&self) -> Triggers<Self::Object>;

    /// Where failed reconciles are counted and told on the object (module docs); `None`: the log alone.
    fn failure_report(&self) -> Option<&FailureReport> {
        None
    }

    /// The controller's name in logs (`controller`) and in `controller_errors_total{controller}`: the kind it
    /// reconciles, unless several controllers reconcile that kind (the pod controllers name what they do).
    fn name() -> String
    where
        Self: Sized,
    {
        kind::<Self>()
    }

    /// Brings one object to its desired state. `Ok(Some(after))` asks for another reconcile after `after`
    /// even if nothing changes (waiting on something that sends no event); `Ok(None)`: when something does.
    ///
    /// # Errors
    /// Whatever kept it from finishing; it is retried with backoff.
    fn reconcile(
        self: Arc<Self>,
        object: Arc<Self::Object>,
    ) -> BoxFuture<'static, Result<Option<Duration>, Self::Error>>;
}

/// The objects a controller reconciles and the streams of requests to reconcile them.
pub struct Triggers<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    store: Store<K>,
    requests: Vec<BoxStream<'static, ObjectRef<K>>>,
    /// Which objects the start of a term and a relist reconcile (`None`: all).
    interesting: Option<Interesting<K>>,
}

/// Whether an object is worth a reconcile.
type Interesting<K> = Arc<dyn Fn(&K) -> bool + Send + Sync>;

/// Every object of `store` that `interesting` keeps, as requests.
fn all<K>(store: &Store<K>, interesting: Option<&Interesting<K>>) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .state()
        .iter()
        .filter(|o| interesting.is_none_or(|keep| keep(o)))
        .map(|o| ObjectRef::from_obj(&**o))
        .collect()
}

impl<K> Triggers<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    /// The objects of `objects`, each reconciled when it changes.
    pub fn new(objects: &Shared<K>) -> Self {
        let triggers = Self {
            store: objects.store().clone(),
            requests: Vec::new(),
            interesting: None,
        };
        triggers.watches(objects, |o: &K| vec![ObjectRef::from_obj(o)])
    }

    /// The objects of `objects` for which `interesting` holds, each reconciled when it changes into a state
    /// that is (a change that leaves an object uninteresting queues nothing), and those of them there are at
    /// the start of a term and after a relist. A controller of pods that acts on few of them so never queues
    /// the others: queueing each of 10,000 pods once per term left the queue's tables at that size for
    /// good (~7 MiB a controller).
    pub fn when(
        objects: &Shared<K>,
        interesting: impl Fn(&K) -> bool + Send + Sync + 'static,
    ) -> Self {
        let interesting: Interesting<K> = Arc::new(interesting);
        let triggers = Self {
            store: objects.store().clone(),
            requests: Vec::new(),
            interesting: Some(interesting.clone()),
        };
        triggers.watches_changes(objects, move |change| match change {
            Change::Applied(o) if interesting(o) => vec![ObjectRef::from_obj(&**o)],
            _ => Vec::new(),
        })
    }

    /// Also reconciles the objects `map` names when an object of `other` changes (created, updated or
    /// deleted); a relist of `other` reconciles every object.
    #[must_use]
    pub fn watches<O>(
        self,
        other: &Shared<O>,
        map: impl Fn(&O) -> Vec<ObjectRef<K>> + Send + Sync + 'static,
    ) -> Self
    where
        O: Lookup + Clone + Send + Sync + 'static,
        O::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    {
        self.watches_changes(other, move |change| match change.object() {
            Some(object) => map(object),
            None => Vec::new(),
        })
    }

    /// [`Triggers::watches`] with the change itself: `map` tells an update from a deletion, and sees a
    /// relist (after which every object is reconciled whatever it names), so that it may keep what it
    /// remembers of `other` (the last replicas seen, to trigger only when they change).
    #[must_use]
    pub fn watches_changes<O>(
        mut self,
        other: &Shared<O>,
        map: impl Fn(&Change<O>) -> Vec<ObjectRef<K>> + Send + Sync + 'static,
    ) -> Self
    where
        O: Lookup + Clone + Send + Sync + 'static,
        O::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let store = self.store.clone();
        let interesting = self.interesting.clone();
        let requests = other.changes().flat_map(move |change: Change<O>| {
            let mut refs = map(&change);
            if change.object().is_none() {
                refs = all(&store, interesting.as_ref());
            }
            futures::stream::iter(refs)
        });
        self.requests.push(requests.boxed());
        self
    }
}

/// The kind `R` reconciles, for logs.
fn kind<R: Reconciler>() -> String {
    <R::Object as Resource>::kind(&()).into_owned()
}

/// Why the runtime counts a reconcile as failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure<E: std::error::Error + 'static> {
    /// The reconcile returned an error.
    #[error(transparent)]
    Reconcile(E),
    /// It took longer than [`Settings::reconcile_timeout`].
    #[error("timed out after {}s", .0.as_secs())]
    TimedOut(Duration),
}

/// What one leadership term's reconciles share: failures in a row per object, for the backoff and the
/// events.
struct Term<R: Reconciler> {
    reconciler: Arc<R>,
    settings: Settings,
    failures: Mutex<HashMap<ObjectRef<R::Object>, Failures>>,
}

/// The failures in a row of one object.
#[derive(Default)]
struct Failures {
    count: u32,
    /// The message of the last event told on the object, and when.
    told: Option<(String, tokio::time::Instant)>,
}

impl<R: Reconciler> Term<R> {
    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectRef<R::Object>, Failures>> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn reconcile<R: Reconciler>(
    object: Arc<R::Object>,
    term: Arc<Term<R>>,
) -> Result<Action, Failure<R::Error>> {
    let key = ObjectRef::from_obj(&*object);
    let settings = term.settings;
    let run = term.reconciler.clone().reconcile(object);
    match tokio::time::timeout(settings.reconcile_timeout, run).await {
        Ok(Ok(after)) => {
            term.failures().remove(&key);
            let resync = settings
                .resync
                .map(|every| crate::controller::leader::jitter(every, 0.1));
            Ok(match (after, resync) {
                (Some(after), Some(resync)) => Action::requeue(after.min(resync)),
                (Some(after), None) | (None, Some(after)) => Action::requeue(after),
                (None, None) => Action::await_change(),
            })
        }
        Ok(Err(e)) => Err(Failure::Reconcile(e)),
        Err(_) => Err(Failure::TimedOut(settings.reconcile_timeout)),
    }
}

fn error_policy<R: Reconciler>(
    object: Arc<R::Object>,
    error: &Failure<R::Error>,
    term: Arc<Term<R>>,
) -> Action {
    let key = ObjectRef::from_obj(&*object);
    let settings = term.settings;
    let message = failure_text(error);
    let now = tokio::time::Instant::now();
    let (failures, tell) = {
        let mut all = term.failures();
        let entry = all.entry(key).or_default();
        entry.count = entry.count.saturating_add(1);
        // Told at the first failure, when the message changes, and at most every max_backoff otherwise.
        let tell = match &entry.told {
            Some((told, at)) => *told != message || now.duration_since(*at) >= settings.max_backoff,
            None => true,
        };
        if tell {
            entry.told = Some((message.clone(), now));
        }
        (entry.count, tell)
    };
    let delay = settings
        .min_backoff
        .saturating_mul(1 << failures.min(16).saturating_sub(1))
        .min(settings.max_backoff);
    let kind = R::name();
    tracing::warn!(controller = %kind, namespace = %object.meta().namespace.as_deref().unwrap_or(""),
        name = %object.meta().name.as_deref().unwrap_or(""), error = %message, failures,
        retry_in_s = delay.as_secs_f64(), "reconcile failed");
    if let Some(report) = term.reconciler.failure_report() {
        report
            .metrics
            .controller_errors
            .get_or_create(&ControllerReasonLabels {
                controller: kind,
                reason: match error {
                    Failure::TimedOut(_) => "Timeout".to_owned(),
                    Failure::Reconcile(e) => failure_reason(e),
                },
            })
            .inc();
        if tell {
            let (recorder, reference) = (report.recorder.clone(), object.object_ref(&()));
            tokio::spawn(async move {
                recorder
                    .record(reference, EventType::Warning, RECONCILE_FAILED, &message)
                    .await;
            });
        }
    }
    Action::requeue(delay)
}

/// The controller of one leadership term, as a stream of reconcile outcomes (dropping it aborts the
/// reconciles in flight).
fn term<R: Reconciler>(reconciler: Arc<R>, settings: Settings) -> BoxStream<'static, ()> {
    let Triggers {
        store,
        requests,
        interesting,
    } = reconciler.triggers();
    let mut controller = Controller::for_shared_stream(futures::stream::pending(), store.clone())
        .with_config(controller::Config::default().concurrency(settings.concurrency));
    // Every object (of interest) once at the start of the term.
    controller = match interesting {
        None => controller.reconcile_all_on(futures::stream::once(async {})),
        Some(interesting) => controller.reconcile_on(
            futures::stream::once(async move { all(&store, Some(&interesting)) })
                .flat_map(futures::stream::iter),
        ),
    };
    for stream in requests {
        controller = controller.reconcile_on(stream);
    }
    let term = Arc::new(Term {
        reconciler,
        settings,
        failures: Mutex::default(),
    });
    let kind = R::name();
    controller
        .run(reconcile::<R>, error_policy::<R>, term)
        .map(move |outcome| match outcome {
            Ok((object, _)) => tracing::debug!(controller = %kind, name = %object.name, "reconciled"),
            // Logged by the error policy.
            Err(controller::Error::ReconcilerFailed(..)) => {}
            // Triggered by a change of something it no longer exists for.
            Err(controller::Error::ObjectNotFound(object)) => {
                tracing::debug!(controller = %kind, name = %object.name, "not found: nothing to reconcile")
            }
            Err(e) => tracing::warn!(controller = %kind, error = %e, "controller queue failed"),
        })
        .boxed()
}

/// Resolves when `flag` is `value`: true then, false when its sender is gone first.
async fn until(flag: &mut watch::Receiver<bool>, value: bool) -> bool {
    flag.wait_for(|v| *v == value).await.is_ok()
}

/// Resolves when `leader` turns false (never when the elector is gone: shutdown comes through `stop`).
async fn leadership_lost(leader: &mut watch::Receiver<bool>) {
    if !until(leader, false).await {
        std::future::pending::<()>().await;
    }
}

/// Leads, follows, leads again… until `stop` turns true.
async fn lead<R: Reconciler>(
    reconciler: Arc<R>,
    mut leader: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
    settings: Settings,
) {
    let kind = R::name();
    loop {
        tokio::select! {
            leading = until(&mut leader, true) => if !leading { return },
            _ = until(&mut stop, true) => return,
        }
        tokio::select! {
            () = reconciler.synced() => {}
            () = leadership_lost(&mut leader) => continue,
            _ = until(&mut stop, true) => return,
        }
        tracing::info!(controller = %kind, "leading: reconciling");
        let mut outcomes = term(reconciler.clone(), settings);
        tokio::select! {
            () = async { while outcomes.next().await.is_some() {} } => {
                tracing::error!(controller = %kind, "the controller stopped on its own; restarting it");
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            () = leadership_lost(&mut leader) => {
                tracing::warn!(controller = %kind, "leadership lost: reconciles in flight abandoned");
            }
            _ = until(&mut stop, true) => return,
        }
    }
}

/// A running controller.
pub struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Starts `reconciler`; it works only while `leader` is true.
pub fn start<R: Reconciler>(
    reconciler: Arc<R>,
    leader: watch::Receiver<bool>,
    settings: Settings,
) -> Running {
    let (stop, stop_rx) = watch::channel(false);
    let kind = R::name();
    let task = tokio::spawn(async move {
        loop {
            let attempt = tokio::spawn(lead(
                reconciler.clone(),
                leader.clone(),
                stop_rx.clone(),
                settings,
            ));
            match attempt.await {
                Ok(()) => return,
                Err(e) => {
                    tracing::error!(controller = %kind, error = %e, "the controller died; restarting it");
                    let mut stop = stop_rx.clone();
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(5)) => {}
                        _ = stop.changed() => {}
                    }
                    if *stop.borrow() {
                        return;
                    }
                }
            }
        }
    });
    Running { stop, task }
}

impl Running {
    /// Stops the controller (reconciles in flight are abandoned).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .is_err()
        {
            tracing::warn!("a controller did not stop within 5 s");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::FutureExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::cache::shared::Publisher;

    /// Counts its reconciles of the objects of `objects` (those named `only`, when given).
    struct Counting {
        objects: Shared<ConfigMap>,
        reconciles: Arc<AtomicUsize>,
        only: Option<&'static str>,
    }

    impl Reconciler for Counting {
        type Object = ConfigMap;
        type Error = std::io::Error;

        fn synced(&self) -> BoxFuture<'static, ()> {
            futures::future::ready(()).boxed()
        }

        fn triggers(&self) -> Triggers<ConfigMap> {
            let only = self.only;
            Triggers::when(&self.objects, move |o| {
                only.is_none_or(|name| o.metadata.name.as_deref() == Some(name))
            })
        }

        fn reconcile(
            self: Arc<Self>,
            _: Arc<ConfigMap>,
        ) -> BoxFuture<'static, Result<Option<Duration>, std::io::Error>> {
            self.reconciles.fetch_add(1, Ordering::SeqCst);
            futures::future::ready(Ok(None)).boxed()
        }
    }

    /// The reconciles of objects `a` and `b` over two hours after the start of a term, with `settings`, of a
    /// controller interested in `only` one of them.
    async fn reconciles_over_two_hours(settings: Settings, only: Option<&'static str>) -> usize {
        let object = |name: &str| ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let (_publisher, objects) = Publisher::listed((), vec![object("a"), object("b")]);
        let reconciles = Arc::new(AtomicUsize::new(0));
        let (_leader, leading) = watch::channel(true);
        let running = start(
            Arc::new(Counting {
                objects,
                reconciles: reconciles.clone(),
                only,
            }),
            leading,
            settings,
        );
        for _ in 0..2 * 60 {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        running.stop().await;
        reconciles.load(Ordering::SeqCst)
    }

    #[tokio::test(start_paused = true)]
    async fn objects_are_resynced_unless_the_controller_is_of_pods() {
        // Each once at the start of the term, then every 30 minutes (jittered by up to 10 %).
        let resynced = reconciles_over_two_hours(Settings::default(), None).await;
        assert!((8..=10).contains(&resynced), "{resynced}");
        // A controller of pods: each once, then only when something changes.
        assert_eq!(
            reconciles_over_two_hours(Settings::per_pod(), None).await,
            2
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_start_of_a_term_reconciles_only_the_objects_of_interest() {
        assert_eq!(
            reconciles_over_two_hours(Settings::per_pod(), Some("a")).await,
            1
        );
    }
}
