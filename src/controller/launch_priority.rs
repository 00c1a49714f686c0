//! The container-launch-priority barrier controller (spec/container-launch-priority.md §4), leader-elected:
//! for a pod whose containers carry `KRUISE_CONTAINER_BARRIER` envs, it creates the ConfigMap
//! `<pod>-barrier` (owned by the pod, so the garbage collector removes it with the pod) and adds the key of
//! one priority level at a time, highest first, each once the containers of the levels above are Ready; then
//! it marks the pod `apps.kruise.io/container-launch-priority-completed: "true"`. The decisions are
//! [`kruise_webhooks::launch_priority::barrier`]; this module reads and writes.
//!
//! Driven by pod changes only (a container turning Ready changes what is pending). The barrier ConfigMaps
//! are not watched: this controller is their only writer, so it remembers the keys it read or wrote per pod
//! ([`Barriers`]); a pod whose highest pending level is already released costs no API call however often it
//! changes, and one that never becomes ready is never looked at again (no hot loop). The memory is dropped
//! when the pod is deleted or completed. A relist or a new leadership term starts from an empty memory, so
//! each pending pod's ConfigMap is read once then.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;

use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::launch_priority::barrier::{
    self, Step, completed_patch, release_patch, step, wants_reconcile,
};
use kruise_webhooks::launch_priority::barrier_name;

use super::failure::is_code;
use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use crate::cache::shared::{Change, Shared};
use crate::events::Recorder;
use crate::metrics::Metrics;

/// The component its events are recorded as.
pub const COMPONENT: &str = "containerlaunchpriority-controller";

/// Why a reconcile failed (retried with backoff).
#[derive(Debug, thiserror::Error)]
#[error("{action}: {source}")]
pub struct BarrierError {
    action: String,
    #[source]
    source: kube::Error,
}

fn failed(action: String) -> impl FnOnce(kube::Error) -> BarrierError {
    move |source| BarrierError { action, source }
}

/// The keys each pod's barrier ConfigMap is known to hold, by pod `namespace/name/uid` (a pod recreated
/// under the same name is another pod).
#[derive(Debug, Default)]
pub struct Barriers(Mutex<HashMap<String, BTreeSet<String>>>);

fn pod_key(pod: &SlimPod) -> String {
    format!(
        "{}/{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.uid.as_deref().unwrap_or("")
    )
}

impl Barriers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<String>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, pod: &SlimPod) -> Option<BTreeSet<String>> {
        self.lock().get(&pod_key(pod)).cloned()
    }

    fn set(&self, pod: &SlimPod, keys: BTreeSet<String>) {
        self.lock().insert(pod_key(pod), keys);
    }

    fn forget(&self, pod: &SlimPod) {
        self.lock().remove(&pod_key(pod));
    }

    /// Pods remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// No pod remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What one reconcile did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handled {
    /// The barrier ConfigMap was created.
    pub created: bool,
    /// A level was released.
    pub released: bool,
    /// The pod was marked completed.
    pub completed: bool,
}

/// The barrier controller.
pub struct LaunchPriorityController {
    client: Client,
    pods: Shared<SlimPod>,
    barriers: Arc<Barriers>,
    metrics: Metrics,
    /// Failed reconciles: counted and told on the pod.
    report: FailureReport,
}

impl LaunchPriorityController {
    /// Starts the controller on the pod store; it reconciles only while `leader` is true.
    pub fn start(
        client: Client,
        pods: Shared<SlimPod>,
        metrics: Metrics,
        leader: tokio::sync::watch::Receiver<bool>,
        settings: Settings,
    ) -> Running {
        let controller = Arc::new(Self::new(client, pods, metrics));
        runtime::start(controller, leader, settings)
    }

    /// The controller, not started (tests call [`LaunchPriorityController::handle`]).
    pub fn new(client: Client, pods: Shared<SlimPod>, metrics: Metrics) -> Self {
        Self {
            report: FailureReport {
                metrics: metrics.clone(),
                recorder: Recorder::new(client.clone(), COMPONENT),
            },
            client,
            pods,
            barriers: Arc::default(),
            metrics,
        }
    }

    /// The keys remembered per pod.
    pub fn barriers(&self) -> &Barriers {
        &self.barriers
    }

    fn count(&self, result: &str) {
        self.metrics.record_launch_barrier_write(result);
    }

    /// One reconcile of `pod` as cached (§4.2). `Ok(Some(after))`: look again after that long (the
    /// ConfigMap was just created).
    ///
    /// # Errors
    /// A failed read or write; the runtime retries it with backoff.
    pub async fn handle(&self, pod: &SlimPod) -> Result<(Handled, Option<Duration>), BarrierError> {
        let mut done = Handled::default();
        let known = self.barriers.get(pod);
        if !wants_reconcile(pod, known.as_ref()) {
            return Ok((done, None));
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let cm_name = barrier_name(name);
        let configmaps: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let keys = match known {
            Some(keys) => keys,
            None => match configmaps
                .get_opt(&cm_name)
                .await
                .map_err(failed(format!("reading ConfigMap {namespace}/{cm_name}")))?
            {
                Some(cm) => cm.data.unwrap_or_default().into_keys().collect(),
                None => {
                    self.create(&configmaps, pod, &cm_name).await?;
                    done.created = true;
                    self.barriers.set(pod, BTreeSet::new());
                    // §4.2 step 2: requeue at once; the next round finds the ConfigMap.
                    return Ok((done, Some(Duration::ZERO)));
                }
            },
        };
        self.barriers.set(pod, keys.clone());
        match step(pod, &keys) {
            Step::Wait => {}
            Step::Complete => {
                self.complete(pod).await?;
                done.completed = true;
            }
            Step::Release { key, complete } => {
                let patch = release_patch(&key);
                configmaps
                    .patch(&cm_name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await
                    .map_err(|e| {
                        self.count("error");
                        failed(format!(
                            "releasing {key} in ConfigMap {namespace}/{cm_name}"
                        ))(e)
                    })?;
                self.count("released");
                tracing::info!(pod = %format!("{namespace}/{name}"), key = %key, "released a launch priority level");
                let mut keys = keys;
                keys.insert(key);
                self.barriers.set(pod, keys);
                done.released = true;
                if complete {
                    self.complete(pod).await?;
                    done.completed = true;
                }
            }
        }
        Ok((done, None))
    }

    async fn create(
        &self,
        configmaps: &Api<ConfigMap>,
        pod: &SlimPod,
        cm_name: &str,
    ) -> Result<(), BarrierError> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let barrier: ConfigMap = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": namespace, "name": cm_name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "Pod",
                "name": pod.metadata.name.as_deref().unwrap_or(""),
                "uid": pod.metadata.uid.as_deref().unwrap_or("")}]}
        }))
        .expect("a ConfigMap");
        match configmaps.create(&PostParams::default(), &barrier).await {
            Ok(_) => {
                self.count("created");
                tracing::info!(configmap = %format!("{namespace}/{cm_name}"), "created a launch barrier");
                Ok(())
            }
            Err(e) if is_code(&e, 409) => Ok(()),
            Err(e) => {
                self.count("error");
                Err(failed(format!("creating ConfigMap {namespace}/{cm_name}"))(
                    e,
                ))
            }
        }
    }

    async fn complete(&self, pod: &SlimPod) -> Result<(), BarrierError> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let pods: Api<SlimPod> = Api::namespaced(self.client.clone(), namespace);
        match pods
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Strategic(&completed_patch()),
            )
            .await
        {
            Ok(_) => {
                self.count("completed");
                self.barriers.forget(pod);
                tracing::info!(pod = %format!("{namespace}/{name}"), "every launch priority level released");
                Ok(())
            }
            // Gone: nothing left to gate.
            Err(e) if is_code(&e, 404) => {
                self.barriers.forget(pod);
                Ok(())
            }
            Err(e) => {
                self.count("error");
                Err(failed(format!("marking pod {namespace}/{name} completed"))(
                    e,
                ))
            }
        }
    }
}

impl Reconciler for LaunchPriorityController {
    type Object = SlimPod;
    type Error = BarrierError;

    fn name() -> String {
        "ContainerLaunchPriority".to_owned()
    }

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        self.pods.ready().boxed()
    }

    fn triggers(&self) -> Triggers<SlimPod> {
        // A pod's change triggers it only while it may be gated (most pods never are); deletions and relists
        // also reset the memory.
        let barriers = self.barriers.clone();
        Triggers::when(&self.pods, barrier::gated).watches_changes(
            &self.pods,
            move |change: &Change<SlimPod>| {
                match change {
                    Change::Deleted(pod) => barriers.forget(pod),
                    Change::Relisted => barriers.lock().clear(),
                    Change::Applied(_) => {}
                }
                Vec::<ObjectRef<SlimPod>>::new()
            },
        )
    }

    fn reconcile(
        self: Arc<Self>,
        pod: Arc<SlimPod>,
    ) -> BoxFuture<'static, Result<Option<Duration>, BarrierError>> {
        async move { self.handle(&pod).await.map(|(_, after)| after) }.boxed()
    }
}
