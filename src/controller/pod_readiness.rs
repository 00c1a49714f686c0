//! The pod-readiness controller (docs/pod-readiness.md), leader-elected: a pod carrying the readiness gate
//! `KruisePodReady` gets that condition `True` once, so that it can turn Ready; a condition `True` while
//! not-ready keys are recorded is made `False`. The decisions are [`kruise_webhooks::pod_readiness`]; this
//! module writes them through the pod status subresource, on the resourceVersion read (a pod changed meanwhile
//! answers 409 and is decided again on its newer copy: OpenKruise's unconditioned patch can overwrite a key
//! recorded in between, §4.2).
//!
//! Driven by the webhooks' pod store; only pods whose condition needs a write are ever queued
//! ([`Triggers::when`]), so the pods without the gate cost one check per change and no queue entry.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};

use kruise_webhooks::api::pod::SlimPod;
use kruise_webhooks::pod_readiness::{self, Write};

use super::failure::is_code;
use super::runtime::{self, FailureReport, Reconciler, Running, Settings, Triggers};
use crate::cache::shared::Shared;
use crate::events::Recorder;
use crate::metrics::Metrics;

/// The component its events are recorded as (OpenKruise's controller name).
pub const COMPONENT: &str = "pod-readiness-controller";

/// Why a reconcile failed (retried with backoff).
#[derive(Debug, thiserror::Error)]
#[error("writing the KruisePodReady condition of pod {pod}: {source}")]
pub struct ReadinessError {
    pod: String,
    #[source]
    source: kube::Error,
}

/// The controller: what it writes with and reads.
pub struct PodReadinessController {
    client: Client,
    pods: Shared<SlimPod>,
    report: FailureReport,
    clock: Arc<dyn Fn() -> k8s_openapi::jiff::Timestamp + Send + Sync>,
}

impl PodReadinessController {
    /// Starts the controller on the pod store; it reconciles only while `leader` is true.
    pub fn start(
        client: Client,
        pods: Shared<SlimPod>,
        metrics: Metrics,
        leader: tokio::sync::watch::Receiver<bool>,
        settings: Settings,
    ) -> Running {
        let controller = Arc::new(Self::new(
            client,
            pods,
            metrics,
            Arc::new(k8s_openapi::jiff::Timestamp::now),
        ));
        runtime::start(controller, leader, settings)
    }

    /// A controller writing with `client`, reading `pods`, stamping conditions with `clock`.
    pub fn new(
        client: Client,
        pods: Shared<SlimPod>,
        metrics: Metrics,
        clock: Arc<dyn Fn() -> k8s_openapi::jiff::Timestamp + Send + Sync>,
    ) -> Self {
        Self {
            report: FailureReport {
                metrics,
                recorder: Recorder::new(client.clone(), COMPONENT),
            },
            client,
            pods,
            clock,
        }
    }

    /// Decides `pod` and writes what it needs: the write made, if any, or `None` also when the pod is gone
    /// or changed meanwhile (then its newer copy is decided when the watch brings it).
    ///
    /// # Errors
    /// The API server's error, other than 404 and 409.
    pub async fn handle(&self, pod: &SlimPod) -> Result<Option<Write>, ReadinessError> {
        let Some(write) = pod_readiness::decide(pod) else {
            return Ok(None);
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let now = (self.clock)().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let patch =
            pod_readiness::status_patch(write, pod.metadata.resource_version.as_deref(), &now);
        let api: Api<SlimPod> = Api::namespaced(self.client.clone(), namespace);
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            Ok(_) => {
                tracing::info!(pod = %format!("{namespace}/{name}"), write = ?write, "KruisePodReady written");
                Ok(Some(write))
            }
            Err(e) if is_code(&e, 404) || is_code(&e, 409) => {
                tracing::debug!(pod = %format!("{namespace}/{name}"), error = %e,
                    "KruisePodReady not written: the pod is gone or changed; deciding again on its next copy");
                Ok(None)
            }
            Err(source) => Err(ReadinessError {
                pod: format!("{namespace}/{name}"),
                source,
            }),
        }
    }
}

impl Reconciler for PodReadinessController {
    type Object = SlimPod;
    type Error = ReadinessError;

    fn name() -> String {
        "PodReadiness".to_owned()
    }

    fn failure_report(&self) -> Option<&FailureReport> {
        Some(&self.report)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        self.pods.ready().boxed()
    }

    fn triggers(&self) -> Triggers<SlimPod> {
        Triggers::when(&self.pods, |pod: &SlimPod| {
            pod_readiness::decide(pod).is_some()
        })
    }

    fn reconcile(
        self: Arc<Self>,
        pod: Arc<SlimPod>,
    ) -> BoxFuture<'static, Result<Option<Duration>, ReadinessError>> {
        async move { self.handle(&pod).await.map(|_| None) }.boxed()
    }
}
