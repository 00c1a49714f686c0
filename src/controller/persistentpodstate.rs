//! The PersistentPodState controllers (docs/persistentpodstate.md §3, §4): while this replica leads, keep
//! every PersistentPodState's `status.podStates` from the pods of its target StatefulSet and their Nodes
//! ([`PersistentPodStateController`]), and keep the PersistentPodState a StatefulSet's annotations ask for
//! ([`AutoGenerateController`], one per StatefulSet kind). The decisions are pure functions of
//! [`kruise_webhooks::persistentpodstate`]; this module reads the caches and writes.
//!
//! One status reconcile of a PersistentPodState (§3.2):
//! 0. not in the cache or being deleted: nothing; a target that is not a native or Advanced StatefulSet (a
//!    whitelisted custom workload): nothing (not followed, §3.1);
//! 1. the target from this controller's StatefulSet caches, its pods from the webhooks' pod store, the
//!    annotations of the pods [`status::annotation_reads`] names with a GET of each pod's metadata (only for a
//!    PersistentPodState that lists annotation keys; a pod gone is skipped), the Nodes' labels from this
//!    controller's Node cache;
//! 2. the status of [`status::compute`]; equal to the PersistentPodState's: no write. Otherwise a PUT of the
//!    status subresource at the served version (DECISIONS 25) with the base object's resourceVersion; on a
//!    conflict the object is read again and the status computed again from it, at most
//!    [`STATUS_ATTEMPTS`] in all (DECISIONS 10); gone (404): done;
//! 3. reconciled again after [`NODE_RETRY`] when a ready pod's Node was not in the cache.
//!
//! One auto-generation reconcile of a StatefulSet (§4.3): the plan of [`generate::plan`] for it and the
//! PersistentPodState of its name in the cache, carried out at the served version: a POST (AlreadyExists:
//! done), a PUT of the spec with the cached resourceVersion (a conflict or a 404: done, the change that
//! caused it reconciles the StatefulSet again once the cache has it), a DELETE with a uid precondition (gone
//! or replaced: done).
//!
//! Triggers (§3.3, §4.4), on the [controller runtime](super::runtime) over the webhooks' pod store and the
//! PersistentPodState store (the webhooks' when they keep one), and caches of this controller's own: native
//! and Advanced StatefulSets ([`SlimStatefulSet`]: metadata, the four PersistentPodState annotations,
//! replicas, reserve and start ordinals) and Nodes ([`TopologyNode`]: name and labels).
//! - status: a PersistentPodState change; a change of a pod whose controller is a StatefulSet a
//!   PersistentPodState of its namespace targets; a change of a StatefulSet, mapped to the PersistentPodStates
//!   targeting it. Nodes trigger nothing.
//! - auto-generation: a change of a StatefulSet of that kind that has the annotation `true` or controls the
//!   PersistentPodState of its name; a change of a PersistentPodState controlled by a StatefulSet of that kind.
//!
//! Every object once when leadership starts, after a relist, and 30 minutes after its last reconcile; 3
//! reconciles at once; failures retried after 1 s doubling to 5 min, counted and told as a Warning
//! `ReconcileFailed` on the object. Events are recorded as `persistentpodstate-controller`.

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;

use kruise_webhooks::api::persistentpodstate::PersistentPodState;
use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::api::statefulset::{
    Advanced, Flavor, Native, SlimStatefulSet, StatefulSetKind,
};
use kruise_webhooks::api::topology_node::TopologyNode;
use kruise_webhooks::persistentpodstate::generate::{self, Plan};
use kruise_webhooks::persistentpodstate::status::{self, Target};
use kruise_webhooks::podunavailablebudget::related::api_group;

use super::failure::is_code;
use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use crate::cache::shared::{self, Shared};
use crate::cache::versions::{KruiseKind, ServedApi, Versions};
use crate::events::Recorder;
use crate::metrics::Metrics;

/// The component events are recorded as (OpenKruise's controller name).
pub const COMPONENT: &str = "persistentpodstate-controller";
/// Status writes per reconcile: the first and two retries after a conflict (DECISIONS 10).
pub const STATUS_ATTEMPTS: usize = 3;
/// How soon a PersistentPodState is reconciled again when a ready pod's Node was not in the cache.
pub const NODE_RETRY: Duration = Duration::from_secs(10);

/// The stores the controllers read and are triggered by.
#[derive(Clone)]
pub struct Inputs {
    /// PersistentPodStates (as v1beta1, whichever version is served).
    pub states: Shared<PersistentPodState>,
    /// Pods (the webhooks' store).
    pub pods: Shared<SlimPod>,
    /// Native StatefulSets.
    pub stateful_sets: Shared<SlimStatefulSet<Native>>,
    /// Advanced StatefulSets, when their CRD is served.
    pub advanced_stateful_sets: Option<Shared<SlimStatefulSet<Advanced>>>,
    /// Nodes, with their labels.
    pub nodes: Shared<TopologyNode>,
}

impl Inputs {
    /// `states` and the webhooks' `pods`, and watches of this controller's own: native StatefulSets, Advanced
    /// ones when `advanced` (their CRD is served at v1beta1), and Nodes.
    pub fn watch(
        client: &Client,
        states: Shared<PersistentPodState>,
        pods: Shared<SlimPod>,
        advanced: bool,
    ) -> Self {
        Self {
            states,
            pods,
            stateful_sets: watch_slim(client),
            advanced_stateful_sets: advanced.then(|| watch_slim(client)),
            // Each decodes only what is read.
            nodes: shared::watch(
                Api::all(client.clone()),
                (),
                shared::whole_lists(),
                |_| {},
                |_, _| {},
            ),
        }
    }

    fn state(&self, namespace: &str, name: &str) -> Option<Arc<PersistentPodState>> {
        self.states
            .store()
            .get(&ObjectRef::new(name).within(namespace))
    }

    /// The target of a StatefulSet kind, by namespace and name (`None`: not found, or being deleted).
    fn target(&self, kind: StatefulSetKind, namespace: &str, name: &str) -> Option<Target> {
        match kind {
            StatefulSetKind::Native => self
                .stateful_sets
                .store()
                .get(&ObjectRef::new(name).within(namespace))
                .and_then(|s| Target::of(&s)),
            StatefulSetKind::Advanced => self
                .advanced_stateful_sets
                .as_ref()?
                .store()
                .get(&ObjectRef::new(name).within(namespace))
                .and_then(|s| Target::of(&s)),
        }
    }

    /// The labels among `keys` of the Node `name`, when cached.
    fn node_labels(&self, name: &str, keys: &BTreeSet<String>) -> Option<BTreeMap<String, String>> {
        self.nodes
            .store()
            .get(&ObjectRef::new(name))
            .map(|n| n.labels_of(keys))
    }

    /// The PersistentPodStates of `namespace` targeting the StatefulSet `kind`/`name`.
    fn states_targeting(
        &self,
        namespace: &str,
        kind: StatefulSetKind,
        name: &str,
    ) -> Vec<ObjectRef<PersistentPodState>> {
        self.states
            .in_namespace(namespace)
            .iter()
            .filter(|s| {
                StatefulSetKind::of(&s.spec.target_ref) == Some(kind)
                    && s.spec.target_ref.name == name
            })
            .map(|s| ObjectRef::from_obj(&**s))
            .collect()
    }
}

/// A watch of every StatefulSet of a kind into a store of [`SlimStatefulSet`]s, listing in pages.
fn watch_slim<F: Flavor>(client: &Client) -> Shared<SlimStatefulSet<F>> {
    shared::watch(
        Api::all(client.clone()),
        (),
        shared::paged_lists(),
        |_| {},
        |_, _| {},
    )
}

/// What the controllers write with.
#[derive(Clone)]
pub struct Context {
    client: Client,
    /// Failed reconciles: counted and told on the object.
    report: FailureReport,
    /// The version PersistentPodStates are written at (DECISIONS 25).
    versions: Versions,
}

impl Context {
    /// A context writing with `client`, counting into `metrics`.
    pub fn new(client: Client, metrics: Metrics) -> Self {
        let recorder = Recorder::new(client.clone(), COMPONENT);
        Self {
            report: FailureReport { metrics, recorder },
            client,
            versions: Versions::newest(),
        }
    }

    /// Writes PersistentPodStates at the version `versions` gives (default: the newest).
    #[must_use]
    pub fn at(mut self, versions: Versions) -> Self {
        self.versions = versions;
        self
    }

    fn api(&self, namespace: &str) -> ServedApi<PersistentPodState> {
        ServedApi::namespaced(
            self.client.clone(),
            namespace,
            &self
                .versions
                .resource_or_newest(KruiseKind::PersistentPodState),
        )
    }
}

/// Why a reconcile did not finish (logged; retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API call failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done, naming the object.
        action: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The status write kept conflicting.
    #[error(
        "writing the status of PersistentPodState {namespace}/{name}: still conflicting after {attempts} attempts"
    )]
    Conflict {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Attempts made.
        attempts: usize,
    },
}

/// A short jittered pause before re-reading after a conflict (tens of milliseconds, DECISIONS 10).
async fn conflict_pause() {
    let jitter = crate::random::random_unit();
    tokio::time::sleep(Duration::from_millis(10 + (jitter * 30.0) as u64)).await;
}

/// The annotations of the pods `names` of `namespace`, read from the API server (their metadata only); a pod
/// gone is left out.
async fn read_annotations(
    client: &Client,
    namespace: &str,
    names: &[String],
) -> Result<BTreeMap<String, BTreeMap<String, String>>, ReconcileError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut read = BTreeMap::new();
    for name in names {
        match api.get_metadata_opt(name).await {
            Ok(Some(meta)) => {
                read.insert(name.clone(), meta.metadata.annotations.unwrap_or_default());
            }
            Ok(None) => {}
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: format!("reading the annotations of pod {namespace}/{name}"),
                    source,
                });
            }
        }
    }
    Ok(read)
}

/// Reconciles the status of PersistentPodState `namespace/name` (see the module docs). `Ok(Some(after))`:
/// reconcile again after `after` (a Node was missing).
///
/// # Errors
/// An API call that failed, or conflicts that outlast the retries.
pub async fn reconcile_status(
    ctx: &Context,
    inputs: &Inputs,
    namespace: &str,
    name: &str,
) -> Result<Option<Duration>, ReconcileError> {
    let Some(mut base) = inputs
        .state(namespace, name)
        .filter(|s| s.metadata.deletion_timestamp.is_none())
    else {
        return Ok(None);
    };
    let api = ctx.api(namespace);
    for attempt in 1..=STATUS_ATTEMPTS {
        let Some(kind) = StatefulSetKind::of(&base.spec.target_ref) else {
            tracing::debug!(namespace, persistent_pod_state = name, target = ?base.spec.target_ref,
                "target is not a StatefulSet: not followed");
            return Ok(None);
        };
        let target = inputs.target(kind, namespace, &base.spec.target_ref.name);
        let pods = target
            .as_ref()
            .map(|t| status::target_pods(&inputs.pods.in_namespace(namespace), t))
            .unwrap_or_default();
        let reads = status::annotation_reads(&base, &pods);
        let annotations = read_annotations(&ctx.client, namespace, &reads).await?;
        let node_labels = |node: &str, keys: &BTreeSet<String>| inputs.node_labels(node, keys);
        let computed = status::compute(
            &base,
            &status::Inputs {
                target: target.as_ref(),
                pods: &pods,
                node_labels: &node_labels,
                pod_annotations: &annotations,
            },
        );
        let again = computed.missing_node.then_some(NODE_RETRY);
        if status::unchanged(base.status.as_ref(), &computed.status) {
            return Ok(again);
        }
        let mut body = (*base).clone();
        body.status = Some(computed.status.clone());
        match api
            .replace_status(name, &PostParams::default(), &body)
            .await
        {
            Ok(_) => {
                tracing::info!(
                    namespace,
                    persistent_pod_state = name,
                    pod_states = computed.status.pod_states.len(),
                    observed_generation = computed.status.observed_generation,
                    "updated PersistentPodState status"
                );
                return Ok(again);
            }
            Err(e) if is_code(&e, 409) && attempt < STATUS_ATTEMPTS => {
                tracing::debug!(
                    namespace,
                    persistent_pod_state = name,
                    attempt,
                    "status write conflicted; re-reading"
                );
                conflict_pause().await;
                let fresh = api
                    .get_opt(name)
                    .await
                    .map_err(|source| ReconcileError::Api {
                        action: format!("reading PersistentPodState {namespace}/{name}"),
                        source,
                    })?;
                match fresh.filter(|s| s.metadata.deletion_timestamp.is_none()) {
                    Some(fresh) => base = Arc::new(fresh),
                    None => return Ok(None),
                }
            }
            Err(e) if is_code(&e, 409) => break,
            Err(e) if is_code(&e, 404) => return Ok(None),
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: format!("writing the status of PersistentPodState {namespace}/{name}"),
                    source,
                });
            }
        }
    }
    Err(ReconcileError::Conflict {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        attempts: STATUS_ATTEMPTS,
    })
}

/// What an auto-generation reconcile did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generated {
    /// Nothing to do (or nothing it may do: a foreign PersistentPodState, no topology annotation).
    Nothing,
    /// Created the PersistentPodState (or found it created).
    Created,
    /// Replaced its spec.
    Updated,
    /// Deleted it (or found it gone).
    Deleted,
}

/// Carries out the auto-generation plan for StatefulSet `sts` (§4.3).
///
/// # Errors
/// An API call that failed (a refusal by the validator included).
pub async fn reconcile_generated<F: Flavor>(
    ctx: &Context,
    inputs: &Inputs,
    sts: &SlimStatefulSet<F>,
) -> Result<Generated, ReconcileError> {
    let namespace = sts.metadata.namespace.as_deref().unwrap_or_default();
    let name = sts.name();
    let existing = inputs.state(namespace, name);
    let api = ctx.api(namespace);
    let failed = |verb: &str| {
        let action = format!("{verb} the PersistentPodState {namespace}/{name} of its StatefulSet");
        move |source| ReconcileError::Api { action, source }
    };
    match generate::plan(sts, existing.as_deref()) {
        Plan::Nothing => Ok(Generated::Nothing),
        Plan::Incomplete => {
            tracing::debug!(
                namespace,
                stateful_set = name,
                "auto-generation asked without a topology annotation: nothing generated"
            );
            Ok(Generated::Nothing)
        }
        Plan::Foreign => {
            tracing::info!(
                namespace,
                stateful_set = name,
                "auto-generation asked, but a PersistentPodState of that name that the StatefulSet does not control exists: left alone"
            );
            Ok(Generated::Nothing)
        }
        Plan::Create(pps) => match api.create(&PostParams::default(), &pps).await {
            Ok(_) => {
                tracing::info!(
                    namespace,
                    stateful_set = name,
                    "created its PersistentPodState"
                );
                Ok(Generated::Created)
            }
            Err(e) if is_code(&e, 409) => Ok(Generated::Created),
            Err(e) => Err(failed("creating")(e)),
        },
        Plan::Update(pps) => match api.replace(name, &PostParams::default(), &pps).await {
            Ok(_) => {
                tracing::info!(
                    namespace,
                    stateful_set = name,
                    "updated the spec of its PersistentPodState"
                );
                Ok(Generated::Updated)
            }
            // Gone meanwhile, or changed since the cache's copy: that deletion or change reaches the cache
            // and reconciles the StatefulSet again (the PersistentPodState trigger), on the fresh copy.
            Err(e) if is_code(&e, 404) || is_code(&e, 409) => {
                tracing::debug!(namespace, stateful_set = name, error = %e,
                    "its PersistentPodState changed meanwhile: done until the cache has it");
                Ok(Generated::Nothing)
            }
            Err(e) => Err(failed("updating")(e)),
        },
        Plan::Delete { uid } => {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(name, &params).await {
                Ok(()) => {
                    tracing::info!(
                        namespace,
                        stateful_set = name,
                        "deleted its PersistentPodState"
                    );
                    Ok(Generated::Deleted)
                }
                // Gone already, or replaced by another object of that name.
                Err(e) if is_code(&e, 404) || is_code(&e, 409) => Ok(Generated::Deleted),
                Err(e) => Err(failed("deleting")(e)),
            }
        }
    }
}

/// The status controller ([`super::runtime::Reconciler`]).
pub struct PersistentPodStateController {
    ctx: Context,
    inputs: Inputs,
}

/// The PersistentPodStates a pod's change concerns: those of its namespace targeting its controller, when
/// that is a StatefulSet of `apps` or `apps.kruise.io`.
fn states_of_pod(inputs: &Inputs, pod: &SlimPod) -> Vec<ObjectRef<PersistentPodState>> {
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let Some(owner) = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
    else {
        return Vec::new();
    };
    let kind = match (owner.kind.as_str(), api_group(&owner.api_version)) {
        ("StatefulSet", Some("apps")) => StatefulSetKind::Native,
        ("StatefulSet", Some("apps.kruise.io")) => StatefulSetKind::Advanced,
        _ => return Vec::new(),
    };
    inputs.states_targeting(namespace, kind, &owner.name)
}

impl Reconciler for PersistentPodStateController {
    type Object = PersistentPodState;
    type Error = ReconcileError;

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.ctx.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let mut waits = vec![
            self.inputs.states.ready().boxed(),
            self.inputs.pods.ready().boxed(),
            self.inputs.stateful_sets.ready().boxed(),
            self.inputs.nodes.ready().boxed(),
        ];
        if let Some(advanced) = &self.inputs.advanced_stateful_sets {
            waits.push(advanced.ready().boxed());
        }
        async move {
            futures::future::join_all(waits).await;
        }
        .boxed()
    }

    fn triggers(&self) -> Triggers<PersistentPodState> {
        let pods = self.inputs.clone();
        let native = self.inputs.clone();
        let mut triggers = Triggers::new(&self.inputs.states)
            .watches(&self.inputs.pods, move |pod| states_of_pod(&pods, pod))
            .watches(&self.inputs.stateful_sets, move |sts| {
                native.states_targeting(
                    sts.metadata.namespace.as_deref().unwrap_or_default(),
                    StatefulSetKind::Native,
                    sts.name(),
                )
            });
        if let Some(advanced) = &self.inputs.advanced_stateful_sets {
            let inputs = self.inputs.clone();
            triggers = triggers.watches(advanced, move |sts| {
                inputs.states_targeting(
                    sts.metadata.namespace.as_deref().unwrap_or_default(),
                    StatefulSetKind::Advanced,
                    sts.name(),
                )
            });
        }
        triggers
    }

    fn reconcile(
        self: Arc<Self>,
        state: Arc<PersistentPodState>,
    ) -> BoxFuture<'static, Result<Option<Duration>, ReconcileError>> {
        async move {
            let namespace = state.metadata.namespace.clone().unwrap_or_default();
            let name = state.name().to_owned();
            reconcile_status(&self.ctx, &self.inputs, &namespace, &name).await
        }
        .boxed()
    }
}

/// The auto-generation controller of one StatefulSet kind ([`super::runtime::Reconciler`]).
pub struct AutoGenerateController<F: Flavor> {
    ctx: Context,
    inputs: Inputs,
    stateful_sets: Shared<SlimStatefulSet<F>>,
    flavor: PhantomData<F>,
}

impl<F: Flavor> Reconciler for AutoGenerateController<F> {
    type Object = SlimStatefulSet<F>;
    type Error = ReconcileError;

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.ctx.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let waits = (self.inputs.states.ready(), self.stateful_sets.ready());
        async move {
            futures::join!(waits.0, waits.1);
        }
        .boxed()
    }

    fn triggers(&self) -> Triggers<SlimStatefulSet<F>> {
        let states = self.inputs.states.clone();
        // Asks for one, or controls the one of its name (which then goes when it no longer asks).
        let interesting = move |sts: &SlimStatefulSet<F>| {
            generate::wanted(sts)
                || states
                    .store()
                    .get(
                        &ObjectRef::new(sts.name())
                            .within(sts.metadata.namespace.as_deref().unwrap_or_default()),
                    )
                    .is_some_and(|pps| generate::controlled_by(&pps, sts.uid()))
        };
        Triggers::when(&self.stateful_sets, interesting).watches(&self.inputs.states, |pps| {
            let namespace = pps.metadata.namespace.as_deref().unwrap_or_default();
            pps.metadata
                .owner_references
                .iter()
                .flatten()
                .filter(|r| {
                    r.controller == Some(true)
                        && r.kind == "StatefulSet"
                        && api_group(&r.api_version) == Some(F::GROUP)
                })
                .map(|r| ObjectRef::new(&r.name).within(namespace))
                .collect()
        })
    }

    fn reconcile(
        self: Arc<Self>,
        sts: Arc<SlimStatefulSet<F>>,
    ) -> BoxFuture<'static, Result<Option<Duration>, ReconcileError>> {
        async move {
            reconcile_generated(&self.ctx, &self.inputs, &sts).await?;
            Ok(None)
        }
        .boxed()
    }
}

/// The running PersistentPodState controllers.
pub struct Started {
    status: Running,
    native: Running,
    advanced: Option<Running>,
}

impl Started {
    /// Stops them (reconciles in flight are abandoned).
    pub async fn stop(self) {
        self.status.stop().await;
        self.native.stop().await;
        if let Some(advanced) = self.advanced {
            advanced.stop().await;
        }
    }
}

/// Starts the status controller and the auto-generation controllers (native StatefulSets, and Advanced ones
/// when `inputs` watches them) on `inputs`; they work only while `leader` is true.
pub fn start(
    ctx: Context,
    inputs: Inputs,
    leader: watch::Receiver<bool>,
    settings: Settings,
) -> Started {
    let status = runtime::start(
        Arc::new(PersistentPodStateController {
            ctx: ctx.clone(),
            inputs: inputs.clone(),
        }),
        leader.clone(),
        settings,
    );
    let native = runtime::start(
        Arc::new(AutoGenerateController::<Native> {
            ctx: ctx.clone(),
            stateful_sets: inputs.stateful_sets.clone(),
            inputs: inputs.clone(),
            flavor: PhantomData,
        }),
        leader.clone(),
        settings,
    );
    let advanced = inputs.advanced_stateful_sets.clone().map(|stateful_sets| {
        runtime::start(
            Arc::new(AutoGenerateController::<Advanced> {
                ctx,
                stateful_sets,
                inputs,
                flavor: PhantomData,
            }),
            leader,
            settings,
        )
    });
    Started {
        status,
        native,
        advanced,
    }
}
