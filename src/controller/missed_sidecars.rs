//! Pods that missed their sidecars (docs/missed-sidecars.md), leader-elected: for each SidecarSet, the
//! active pods the pod webhook would inject it into now that do not carry it (created while the webhook was
//! not called, or before the SidecarSet). The decision is [`kruise_webhooks::sidecarset::missed`]; this module
//! counts the pods in `sidecarset_pods_missing_sidecars{sidecarset}`, puts one Warning event
//! `SidecarSetNotInjected` on each, naming every SidecarSet it missed (named after the pod's uid, so
//! AlreadyExists means it was told already: once per pod, across SidecarSets, restarts and leaders), and a
//! Warning event `PodsNotInjected` on the SidecarSet when its count grows.
//!
//! It reconciles SidecarSets, on the stores the pod webhook reads (the SidecarSet candidate index, pods,
//! Namespaces): a SidecarSet when it changes; when a pod starts or stops missing it (each pod change is decided
//! once against its candidates and compared with what the pod missed before, so a pod's status updates
//! trigger nothing); and, if it has a `namespaceSelector`, when a Namespace changes. One reconcile goes over
//! every pod of the store: the SidecarSet's own selectors first (a few label lookups a pod, so 1,000
//! SidecarSets over 10,000 pods stay cheap), the pod's whole decision (its other candidates, canaries) only
//! for the pods they select; so the count is recomputed, never drifted.
//!
//! Runs beside OpenKruise too: it writes events only, and in that mode our pod webhook is the one injecting.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
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

/// What the controller remembers between reconciles (the API server's events are the truth; this only
/// saves asking again).
#[derive(Default)]
struct Memory {
    /// The SidecarSets each pod (`namespace`, `name`) missed when last decided: what its next change or its
    /// deletion triggers besides the sets it misses then.
    pods: HashMap<(String, String), Vec<String>>,
    /// The uids of the pods whose event is recorded (or found recorded): forgotten when the pod is deleted.
    reported: HashSet<String>,
    /// Per SidecarSet, the count last told on it.
    told: HashMap<String, usize>,
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
            tracing::warn!(pod = %format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or("")),
                %error, "a SidecarSet selector cannot be evaluated; the pod is not counted as missing it");
            Vec::new()
        })
    }

    /// The SidecarSets `pod` missed, when `set` is among them: `set`'s own tests first (not injected, its
    /// selectors match), the whole decision only then.
    fn missed_with(&self, pod: &SlimPod, set: &SidecarSet) -> Option<Vec<String>> {
        if set.spec.injection_strategy.paused
            || !self.eligible(pod)
            || is_pod_injected(pod, set.name())
        {
            return None;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let labels = self.namespace_labels(namespace);
        if !select::pod_matches(set, &pod.labels.to_btree(), labels.as_ref()).unwrap_or(false) {
            return None;
        }
        let missed = self.missed_by(pod);
        missed.iter().any(|s| s == set.name()).then_some(missed)
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
        let mut missing: Vec<(Arc<SlimPod>, Vec<String>)> = self
            .pods
            .store()
            .state()
            .into_iter()
            .filter_map(|pod| {
                let missed = self.finder.missed_with(&pod, set)?;
                Some((pod, missed))
            })
            .collect();
        missing.sort_by_key(|(pod, _)| pod_key(pod));
        let count = missing.len();
        self.metrics
            .sidecarset_missing
            .get_or_create(&SidecarSetLabels {
                sidecarset: name.clone(),
            })
            .set(i64::try_from(count).unwrap_or(i64::MAX));
        // What the pod triggers remember: this set for exactly the pods missing it now; and whom to tell.
        let (to_tell, told) = {
            let mut memory = self.memory();
            let now: HashSet<(String, String)> = missing.iter().map(|(p, _)| pod_key(p)).collect();
            memory.pods.retain(|key, sets| {
                if !now.contains(key) {
                    sets.retain(|s| *s != name);
                }
                !sets.is_empty()
            });
            for key in &now {
                let sets = memory.pods.entry(key.clone()).or_default();
                if !sets.contains(&name) {
                    sets.push(name.clone());
                }
            }
            let to_tell: Vec<(String, String, ObjectReference, String)> = missing
                .iter()
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
            (to_tell, memory.told.get(&name).copied().unwrap_or(0))
        };
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
        let (finder, memory) = (self.finder.clone(), self.memory.clone());
        let (gauge, forget) = (self.metrics.sidecarset_missing.clone(), self.memory.clone());
        let with_selector = set_store.store().clone();
        Triggers::new(&set_store)
            // A deleted SidecarSet is not reconciled (it is gone): its count and memory go here.
            .watches_changes(&set_store, move |change| {
                if let Change::Deleted(set) = change {
                    gauge.remove(&SidecarSetLabels {
                        sidecarset: set.name().to_owned(),
                    });
                    let mut memory = forget.lock().unwrap_or_else(|p| p.into_inner());
                    memory.told.remove(set.name());
                }
                Vec::new()
            })
            .watches_changes(&self.pods, move |change| {
                let (key, now) = match change {
                    Change::Applied(pod) => (pod_key(pod), finder.missed_by(pod)),
                    Change::Deleted(pod) => {
                        if let Some(uid) = &pod.metadata.uid {
                            let mut memory = memory.lock().unwrap_or_else(|p| p.into_inner());
                            memory.reported.remove(uid);
                        }
                        (pod_key(pod), Vec::new())
                    }
                    Change::Relisted => return Vec::new(),
                };
                let before = {
                    let mut memory = memory.lock().unwrap_or_else(|p| p.into_inner());
                    if now.is_empty() {
                        memory.pods.remove(&key)
                    } else {
                        memory.pods.insert(key, now.clone())
                    }
                }
                .unwrap_or_default();
                // Only the sets the pod started or stopped missing: a status update changes neither.
                let mut sets: Vec<&String> = before.iter().filter(|s| !now.contains(s)).collect();
                sets.extend(now.iter().filter(|s| !before.contains(s)));
                sets.into_iter().map(|s| ObjectRef::new(s)).collect()
            })
            .watches(
                &self.finder.namespaces,
                move |_: &Namespace| -> Vec<ObjectRef<SidecarSet>> {
                    with_selector
                        .state()
                        .iter()
                        .filter(|set| set.spec.namespace_selector.is_some())
                        .map(|set| ObjectRef::from_obj(&**set))
                        .collect()
                },
            )
    }

    fn reconcile(
        self: Arc<Self>,
        set: Arc<SidecarSet>,
    ) -> BoxFuture<'static, Result<Option<Duration>, MissedError>> {
        async move { self.handle(&set).await.map(|_| None) }.boxed()
    }
}
