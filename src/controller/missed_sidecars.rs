//! Pods that missed their sidecars (docs/missed-sidecars.md), leader-elected: for each SidecarSet, the
//! active pods the pod webhook would inject it into now that do not carry it (created while the webhook was
//! not called, or before the SidecarSet). The decision is [`kruise_webhooks::sidecarset::missed`]; this module
//! counts the pods in `sidecarset_pods_missing_sidecars{sidecarset}`, puts one Warning event
//! `SidecarSetNotInjected` on each, naming every SidecarSet it missed (named after the pod's uid, so
//! AlreadyExists means it was told already: once per pod, across SidecarSets, restarts and leaders), and a
//! Warning event `PodsNotInjected` on the SidecarSet when its count grows.
//!
//! It keeps an index of which pods missed which SidecarSets, on the stores the pod webhook reads (the SidecarSet
//! candidate index, pods, Namespaces), and reconciles SidecarSets from it:
//! - filled once per term (and after a relist of pods) by deciding every pod against its own candidates
//!   (10,000 pods and 1,000 SidecarSets: one decision a pod, not one a pod and SidecarSet);
//! - a pod change decides that pod again and reconciles only the SidecarSets it started or stopped missing (a
//!   status update triggers nothing); a Namespace change decides that namespace's pods again;
//! - a SidecarSet whose selection changed (its uid, selectors, paused flag or canary base: a new or edited one)
//!   has the pods it selects, and those it had, decided again, and its canary base with it; a deleted one
//!   leaves every pod's entry, and its canary base is decided again.
//!
//! A reconcile of a SidecarSet reads its pods from the index: the gauge, the pods' events, the SidecarSet's.
//!
//! Runs beside OpenKruise too: it writes events only, and in that mode our pod webhook is the one injecting.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::core::ApiResource;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;

use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::sidecarset::SidecarSet;
use kruise_webhooks::sidecarset::missed::{self, missed};
use kruise_webhooks::sidecarset::select;
use kruise_webhooks::sidecarset::status::is_pod_injected;
use kruise_webhooks::view::SidecarSetView;

use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use super::sidecarset::upgrade::{pod_reference, set_reference};
use crate::cache::SidecarSetCache;
use crate::cache::shared::{Change, Shared};
use crate::events::{EventType, Recorder};
use crate::metrics::{Metrics, SidecarSetLabels};

/// Event writes at once within one reconcile.
const EVENT_WRITES: usize = 8;

/// Why a reconcile failed (retried with backoff; what was recorded stays recorded).
#[derive(Debug, thiserror::Error)]
#[error("recording the event {event} of SidecarSet {set}: {source}")]
pub struct MissedError {
    set: String,
    event: String,
    #[source]
    source: kube::Error,
}

/// A pod, by namespace and name.
type PodKey = (String, String);

/// Pods that missed a SidecarSet, each with every SidecarSet it missed.
type Missing = Vec<(Arc<SlimPod>, Vec<String>)>;

/// What a SidecarSet selects with, for telling an edited one: its uid, selector, namespaceSelector, paused
/// flag and canary base (compared whole: no API server's generation is needed to see the edit).
#[derive(Debug, Clone, PartialEq)]
struct Selection {
    uid: Option<String>,
    selector: Option<LabelSelector>,
    namespace_selector: Option<LabelSelector>,
    paused: bool,
    canary_base: Option<String>,
}

fn selection(set: &SidecarSet) -> Selection {
    Selection {
        uid: set.metadata.uid.clone(),
        selector: set.spec.selector.clone(),
        namespace_selector: set.spec.namespace_selector.clone(),
        paused: set.spec.injection_strategy.paused,
        canary_base: set.canary_base().map(str::to_owned),
    }
}

/// The index of pods that missed SidecarSets, and what the controller told (the API server's events are the
/// truth; this only saves asking again).
#[derive(Default)]
struct Memory {
    /// Whether `pods` and `by_set` were filled from the whole pod store this term (a relist of pods clears it).
    filled: bool,
    /// The SidecarSets each pod missed (a pod that missed none is absent).
    pods: HashMap<PodKey, Vec<String>>,
    /// The pods that missed each SidecarSet.
    by_set: HashMap<String, BTreeSet<PodKey>>,
    /// The selection each SidecarSet's pods were last decided with.
    decided: HashMap<String, Selection>,
    /// The uids of the pods whose event is recorded (or found recorded): forgotten when the pod is deleted.
    reported: HashSet<String>,
    /// Per SidecarSet, the count last told on it.
    told: HashMap<String, usize>,
}

impl Memory {
    /// Records that `pod` missed `now`: the SidecarSets it started or stopped missing.
    fn record(&mut self, key: PodKey, now: Vec<String>) -> Vec<String> {
        let before = if now.is_empty() {
            self.pods.remove(&key)
        } else {
            self.pods.insert(key.clone(), now.clone())
        }
        .unwrap_or_default();
        let mut changed = Vec::new();
        for set in before.iter().filter(|s| !now.contains(s)) {
            if let Some(pods) = self.by_set.get_mut(set) {
                pods.remove(&key);
            }
            changed.push(set.clone());
        }
        for set in now.iter().filter(|s| !before.contains(s)) {
            self.by_set
                .entry(set.clone())
                .or_default()
                .insert(key.clone());
            changed.push(set.clone());
        }
        changed
    }

    /// Fills the index from every pod of `pods`, every SidecarSet of `sets` taken as decided.
    fn fill(&mut self, finder: &Finder, pods: &[Arc<SlimPod>], sets: &[Arc<SidecarSet>]) {
        self.pods.clear();
        self.by_set.clear();
        for pod in pods {
            let missed = finder.missed_by(pod);
            if !missed.is_empty() {
                self.record(pod_key(pod), missed);
            }
        }
        self.decided = sets
            .iter()
            .map(|s| (s.name().to_owned(), selection(s)))
            .collect();
        self.filled = true;
    }

    /// Decides again the pods `set` selects and those it had: the SidecarSets whose pods changed.
    fn redecide(
        &mut self,
        finder: &Finder,
        pods: &[Arc<SlimPod>],
        set: &SidecarSet,
    ) -> Vec<String> {
        let had = self.by_set.get(set.name()).cloned().unwrap_or_default();
        let mut changed = Vec::new();
        for pod in pods {
            let key = pod_key(pod);
            if had.contains(&key) || finder.selects(pod, set) {
                changed.extend(self.record(key, finder.missed_by(pod)));
            }
        }
        // Pods of the index no longer in the store (their deletion not seen yet).
        if !had.is_empty() {
            let present: HashSet<PodKey> = pods.iter().map(|p| pod_key(p)).collect();
            for key in had.into_iter().filter(|k| !present.contains(k)) {
                changed.extend(self.record(key, Vec::new()));
            }
        }
        self.decided.insert(set.name().to_owned(), selection(set));
        changed
    }
}

/// What decides whether a pod missed a SidecarSet: the pod webhook's stores.
#[derive(Clone)]
struct Finder {
    sets: SidecarSetCache,
    namespaces: Shared<Namespace>,
    excluded: Arc<Vec<String>>,
}

impl Finder {
    /// Whether `pod` is one the pod webhook is called for and that could miss anything: active, not in an
    /// excluded namespace.
    fn eligible(&self, pod: &SlimPod) -> bool {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        pod.is_active() && !self.excluded.iter().any(|e| e == namespace)
    }

    /// The labels of Namespace `name`, `None` when it is not known.
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces
            .store()
            .get(&ObjectRef::new(name))
            .map(|ns| ns.metadata.labels.clone().unwrap_or_default())
    }

    /// The SidecarSets `pod` missed (docs/missed-sidecars.md §1), in candidate order.
    fn missed_by(&self, pod: &SlimPod) -> Vec<String> {
        if !self.eligible(pod) {
            return Vec::new();
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let candidates = self
            .sets
            .sidecar_set_candidates(namespace, &pod.labels.to_btree());
        if candidates.is_empty() {
            return Vec::new();
        }
        let labels = self.namespace_labels(namespace);
        let excluded: Vec<&str> = self.excluded.iter().map(String::as_str).collect();
        missed(pod, &candidates, labels.as_ref(), &excluded).unwrap_or_else(|error| {
            // Debug, not warn: decided at every change of every such pod; the pod webhook's 500 at creation
            // already names the selector, and SidecarSet validation refuses it.
            tracing::debug!(pod = %format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or("")),
                %error, "a SidecarSet selector cannot be evaluated; the pod is not counted as missing it");
            Vec::new()
        })
    }

    /// Whether `set`'s own tests pick `pod` (not paused, not injected, its selectors match): the pods whose
    /// whole decision an edited `set` can change.
    fn selects(&self, pod: &SlimPod, set: &SidecarSet) -> bool {
        if set.spec.injection_strategy.paused
            || !self.eligible(pod)
            || is_pod_injected(pod, set.name())
        {
            return false;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let labels = self.namespace_labels(namespace);
        select::pod_matches(set, &pod.labels.to_btree(), labels.as_ref()).unwrap_or(false)
    }
}

fn pod_key(pod: &SlimPod) -> (String, String) {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

/// The controller.
pub struct MissedSidecarsController {
    finder: Finder,
    pods: Shared<SlimPod>,
    metrics: Metrics,
    recorder: Recorder,
    report: FailureReport,
    /// The version SidecarSets are served at (for the events' references).
    served: ApiResource,
    memory: Arc<Mutex<Memory>>,
}

impl MissedSidecarsController {
    /// Starts the controller; it reconciles only while `leader` is true, and `sidecarset_pods_missing_sidecars`
    /// is emptied whenever this replica stops leading (only the leader counts).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        client: Client,
        sets: SidecarSetCache,
        pods: Shared<SlimPod>,
        namespaces: Shared<Namespace>,
        excluded_namespaces: Vec<String>,
        served: ApiResource,
        metrics: Metrics,
        leader: watch::Receiver<bool>,
        settings: Settings,
    ) -> Running {
        let gauge = metrics.sidecarset_missing.clone();
        let mut leading = leader.clone();
        tokio::spawn(async move {
            while leading.changed().await.is_ok() {
                if !*leading.borrow_and_update() {
                    gauge.clear();
                }
            }
        });
        let controller = Arc::new(Self::new(
            client,
            sets,
            pods,
            namespaces,
            excluded_namespaces,
            served,
            metrics,
        ));
        runtime::start(controller, leader, settings)
    }

    /// A controller recording events with `client`, deciding on the stores given.
    pub fn new(
        client: Client,
        sets: SidecarSetCache,
        pods: Shared<SlimPod>,
        namespaces: Shared<Namespace>,
        excluded_namespaces: Vec<String>,
        served: ApiResource,
        metrics: Metrics,
    ) -> Self {
        let recorder = Recorder::new(client, missed::COMPONENT);
        Self {
            finder: Finder {
                sets,
                namespaces,
                excluded: Arc::new(excluded_namespaces),
            },
            pods,
            report: FailureReport {
                metrics: metrics.clone(),
                recorder: recorder.clone(),
            },
            recorder,
            metrics,
            served,
            memory: Arc::default(),
        }
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts and reports the pods that missed `set`: the number of them.
    ///
    /// # Errors
    /// The API server's error recording an event (the events recorded before it stay recorded and are not
    /// recorded again).
    pub async fn handle(&self, set: &SidecarSet) -> Result<usize, MissedError> {
        let name = set.name().to_owned();
        // The pods that missed `set`, from the index (filled, or decided again for an edited `set`), with every
        // SidecarSet each missed; and whom to tell.
        let (missing, to_tell, told, others) = {
            let mut memory = self.memory();
            // Other SidecarSets whose pods changed with `set`'s (its canary base, and those the pods decided
            // again missed): their counts are written here, their pods told here; their own events wait for
            // their next reconcile.
            let mut others: Vec<String> = Vec::new();
            if !memory.filled {
                let sets = self.finder.sets.set_store().store().state();
                memory.fill(&self.finder, &self.pods.store().state(), &sets);
            } else if memory.decided.get(&name) != Some(&selection(set)) {
                let pods = self.pods.store().state();
                others.extend(memory.redecide(&self.finder, &pods, set));
                // A canary replaces its base where both select a pod: the base's pods change with it.
                if let Some(base) = set
                    .canary_base()
                    .and_then(|b| self.finder.sets.sidecar_set(b))
                {
                    others.extend(memory.redecide(&self.finder, &pods, &base));
                }
            }
            others.sort();
            others.dedup();
            others.retain(|o| *o != name);
            let store = self.pods.store();
            let pods_of = |set: &str| -> Missing {
                memory
                    .by_set
                    .get(set)
                    .into_iter()
                    .flatten()
                    .filter_map(|(namespace, pod)| {
                        let found = store.get(&ObjectRef::new(pod).within(namespace))?;
                        let sets = memory.pods.get(&(namespace.clone(), pod.clone()))?.clone();
                        Some((found, sets))
                    })
                    .collect()
            };
            let missing = pods_of(&name);
            let others: Vec<(String, Missing)> = others
                .into_iter()
                .map(|o| {
                    let pods = pods_of(&o);
                    (o, pods)
                })
                .collect();
            let mut seen: HashSet<String> = HashSet::new();
            let to_tell: Vec<(String, String, ObjectReference, String)> = missing
                .iter()
                .chain(others.iter().flat_map(|(_, pods)| pods))
                .filter(|(pod, _)| {
                    pod.metadata
                        .uid
                        .as_ref()
                        .is_some_and(|u| seen.insert(u.clone()))
                })
                .filter_map(|(pod, sets)| {
                    let uid = pod.metadata.uid.clone()?;
                    if memory.reported.contains(&uid) {
                        return None;
                    }
                    let event =
                        missed::pod_event_name(pod.metadata.name.as_deref().unwrap_or(""), &uid);
                    Some((uid, event, pod_reference(pod), missed::pod_message(sets)))
                })
                .collect();
            (
                missing,
                to_tell,
                memory.told.get(&name).copied().unwrap_or(0),
                others,
            )
        };
        let count = missing.len();
        for (set, n) in
            std::iter::once((&name, count)).chain(others.iter().map(|(o, p)| (o, p.len())))
        {
            self.metrics
                .sidecarset_missing
                .get_or_create(&SidecarSetLabels {
                    sidecarset: set.clone(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        // One event a pod, at most EVENT_WRITES at a time.
        let recorder = &self.recorder;
        let results: Vec<(String, Result<bool, kube::Error>)> =
            futures::stream::iter(to_tell.into_iter().map(
                |(uid, event, regarding, message)| async move {
                    let result = recorder
                        .record_once(
                            event,
                            regarding,
                            EventType::Warning,
                            missed::POD_REASON,
                            &message,
                        )
                        .await;
                    (uid, result)
                },
            ))
            .buffer_unordered(EVENT_WRITES)
            .collect()
            .await;
        let mut failed = None;
        {
            let mut memory = self.memory();
            for (uid, result) in results {
                match result {
                    Ok(_) => {
                        memory.reported.insert(uid);
                    }
                    Err(source) => failed = failed.or(Some(source)),
                }
            }
        }
        if let Some(source) = failed {
            return Err(MissedError {
                set: name,
                event: missed::POD_REASON.to_owned(),
                source,
            });
        }
        if count > told {
            let first: Vec<String> = missing
                .iter()
                .take(3)
                .map(|(p, _)| {
                    let (ns, pod) = pod_key(p);
                    format!("{ns}/{pod}")
                })
                .collect();
            let event =
                missed::set_event_name(&name, set.metadata.uid.as_deref().unwrap_or(""), count);
            self.recorder
                .record_once(
                    event,
                    set_reference(set, &self.served),
                    EventType::Warning,
                    missed::SET_REASON,
                    &missed::set_message(count, &first),
                )
                .await
                .map_err(|source| MissedError {
                    set: name.clone(),
                    event: missed::SET_REASON.to_owned(),
                    source,
                })?;
            tracing::warn!(sidecarset = %name, pods = count,
                "pods the SidecarSet selects were created without its sidecars (events on them); recreate them");
        }
        self.memory().told.insert(name, count);
        Ok(count)
    }
}

impl Reconciler for MissedSidecarsController {
    type Object = SidecarSet;
    type Error = MissedError;

    fn name() -> String {
        "MissedSidecars".to_owned()
    }

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let (sets, pods, namespaces) = (
            self.finder.sets.ready(),
            self.pods.ready(),
            self.finder.namespaces.ready(),
        );
        async move {
            futures::join!(sets, pods, namespaces);
        }
        .boxed()
    }

    fn triggers(&self) -> Triggers<SidecarSet> {
        let set_store = self.finder.sets.set_store().clone();
        let (gauge, memory) = (self.metrics.sidecarset_missing.clone(), self.memory.clone());
        let on_pods = (self.finder.clone(), self.memory.clone());
        let on_namespaces = (self.finder.clone(), self.memory.clone(), self.pods.clone());
        Triggers::new(&set_store)
            // A deleted SidecarSet is not reconciled (it is gone): it leaves the index here, its count goes,
            // and its canary base, which it no longer replaces, is decided again.
            .watches_changes(&set_store, move |change| {
                let Change::Deleted(set) = change else {
                    return Vec::new();
                };
                gauge.remove(&SidecarSetLabels {
                    sidecarset: set.name().to_owned(),
                });
                let mut memory = memory.lock().unwrap_or_else(|p| p.into_inner());
                memory.told.remove(set.name());
                memory.decided.remove(set.name());
                for key in memory.by_set.remove(set.name()).unwrap_or_default() {
                    let rest: Vec<String> = memory
                        .pods
                        .get(&key)
                        .into_iter()
                        .flatten()
                        .filter(|s| *s != set.name())
                        .cloned()
                        .collect();
                    memory.record(key, rest);
                }
                match set.canary_base() {
                    Some(base) => {
                        memory.decided.remove(base);
                        vec![ObjectRef::new(base)]
                    }
                    None => Vec::new(),
                }
            })
            .watches_changes(&self.pods, move |change| {
                let (finder, memory) = &on_pods;
                let mut memory = memory.lock().unwrap_or_else(|p| p.into_inner());
                let changed = match change {
                    // Filled from the new list at the next reconcile (every SidecarSet is reconciled).
                    Change::Relisted => {
                        memory.filled = false;
                        return Vec::new();
                    }
                    _ if !memory.filled => return Vec::new(),
                    Change::Applied(pod) => memory.record(pod_key(pod), finder.missed_by(pod)),
                    Change::Deleted(pod) => {
                        if let Some(uid) = &pod.metadata.uid {
                            memory.reported.remove(uid);
                        }
                        memory.record(pod_key(pod), Vec::new())
                    }
                };
                changed.iter().map(|s| ObjectRef::new(s)).collect()
            })
            // A Namespace's labels may now select its pods, or no longer: they are decided again.
            .watches_changes(&self.finder.namespaces, move |change| {
                let (finder, memory, pods) = &on_namespaces;
                let Some(namespace) = change.object().and_then(|ns| ns.metadata.name.clone())
                else {
                    return Vec::new();
                };
                let mut memory = memory.lock().unwrap_or_else(|p| p.into_inner());
                if !memory.filled {
                    return Vec::new();
                }
                let mut changed = Vec::new();
                for pod in pods.in_namespace(&namespace) {
                    changed.extend(memory.record(pod_key(&pod), finder.missed_by(&pod)));
                }
                changed.sort();
                changed.dedup();
                changed.iter().map(|s| ObjectRef::new(s)).collect()
            })
    }

    fn reconcile(
        self: Arc<Self>,
        set: Arc<SidecarSet>,
    ) -> BoxFuture<'static, Result<Option<Duration>, MissedError>> {
        async move { self.handle(&set).await.map(|_| None) }.boxed()
    }
}
