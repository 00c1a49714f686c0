//! The leader-elected controllers behind the webhooks (spec/webhook-server.md §9): every replica serves
//! admission, certificates and readiness; only the replica holding the Lease `kruise-system/kruise-manager`
//! ([`leader`]) runs the controllers: the SidecarSet controller ([`sidecarset`]), the
//! PodUnavailableBudget status controller ([`podunavailablebudget`]), the WorkloadSpread controller
//! ([`workloadspread`]), the container-launch-priority barrier controller ([`launch_priority`]), the Job
//! sidecar terminator ([`sidecar_terminator`]) and the PersistentPodState status and auto-generation
//! controllers ([`persistentpodstate`]), and the reporter of pods that missed their sidecars
//! ([`missed_sidecars`]). Every controller runs on [`runtime`]: kube-runtime's
//! `Controller`, driven by changes of the stores the webhooks read.
//!
//! Cluster mode only: [`crate::server::start_with`] starts [`Controllers`] last, after the informer caches,
//! and [`crate::Server::shutdown`] stops them. Standalone mode (`--objects`, standalone certificates) runs
//! no controller and takes no Lease: there is no cluster to write to.

mod failure;
pub mod launch_priority;
pub mod leader;
pub mod missed_sidecars;
pub mod persistentpodstate;
pub mod pod_readiness;
pub mod podunavailablebudget;
pub mod runtime;
pub mod sidecar_terminator;
pub mod sidecarset;
pub mod workloadspread;

use kube::Client;
use tokio::sync::watch;

use kruise_webhooks::registry::Served;

use crate::cache::versions::KruiseKind;
use crate::cache::{LiveCache, SidecarSetCache};
use crate::config::ServeConfig;
use crate::metrics::Metrics;
use std::sync::Arc;

use leader::LeaderElector;
use podunavailablebudget::PodUnavailableBudgetController;
use sidecarset::{Inputs, SidecarSetController};
use workloadspread::WorkloadSpreadController;

/// The leader election and the controllers it gates.
pub struct Controllers {
    /// The election, when these controllers run it ([`Controllers::start`]); the server runs one election
    /// for every generation of controllers ([`Controllers::start_on`], docs/startup-order.md).
    leader: Option<LeaderElector>,
    /// Leadership, as the controllers see it.
    leading: watch::Receiver<bool>,
    sidecar_sets: Option<runtime::Running>,
    budgets: Option<runtime::Running>,
    spreads: Option<runtime::Running>,
    /// The container-launch-priority barrier controller, but beside OpenKruise.
    barriers: Option<runtime::Running>,
    /// The Job sidecar terminator ([`sidecar_terminator`]).
    terminator: Option<runtime::Running>,
    /// The pod-readiness controller ([`pod_readiness`]), but beside OpenKruise.
    readiness: Option<runtime::Running>,
    /// The PersistentPodState status and auto-generation controllers ([`persistentpodstate`]).
    persistent_pod_states: Option<persistentpodstate::Started>,
    /// The reporter of pods that missed their sidecars ([`missed_sidecars`]).
    missed_sidecars: Option<runtime::Running>,
}

impl Controllers {
    /// Starts leader election (or constant leadership with `--enable-leader-election=false`) and the
    /// SidecarSet controller when the cluster serves SidecarSets. The SidecarSet caches of `cache` are reused
    /// when the pod webhook started them; otherwise the controller starts its own. The PodUnavailableBudget
    /// status controller runs on the PUB and workload stores of `cache`, which exist when the CRD is served
    /// (at any version known, DECISIONS 25) and a PUB gate is on (spec/podunavailablebudget.md §3). The
    /// WorkloadSpread controller runs when the CRD is served and the `WorkloadSpread` and `PodWebhook` gates
    /// are on (spec/workloadspread.md §6.1), on the pod, workload and WorkloadSpread stores of `cache`.
    /// The Job sidecar terminator runs when the `SidecarTerminator` gate is on and the CRR CRD is served, on
    /// the pod store of `cache` and Node and CRR watches of its own. The container-launch-priority barrier
    /// controller and the pod-readiness controller (`KruisePodReady`, docs/pod-readiness.md) always run, on
    /// the pod store. The PersistentPodState controllers run when the CRD is served
    /// (docs/persistentpodstate.md §3), on the pod store, the PersistentPodState store of `cache` (or their
    /// own when the pod webhook keeps none) and StatefulSet and Node watches of their own. Beside OpenKruise
    /// (`--beside-openkruise`, DECISIONS 27) none of the SidecarSet, barrier, pod-readiness and
    /// PersistentPodState controllers runs: kruise-manager's do.
    pub fn start(
        client: Client,
        cache: &LiveCache,
        config: &ServeConfig,
        served: Served,
        metrics: &Metrics,
    ) -> Self {
        let leader = elector(client.clone(), config, metrics);
        let mut controllers =
            Self::start_on(client, cache, config, served, metrics, leader.is_leader());
        controllers.leader = Some(leader);
        controllers
    }

    /// [`Controllers::start`] on an election run by the caller: `leading` says when they lead.
    pub fn start_on(
        client: Client,
        cache: &LiveCache,
        config: &ServeConfig,
        served: Served,
        metrics: &Metrics,
        leading: watch::Receiver<bool>,
    ) -> Self {
        // Controllers write through the leadership gate; the caches they read use `client`.
        let writer = leader::gated(client.clone(), leading.clone());
        // Beside OpenKruise (DECISIONS 27) kruise-manager's SidecarSet and container-launch-priority
        // controllers run whatever its gates say: a second SidecarSet controller would let `maxUnavailable`
        // pods out twice during an in-place update, a second barrier controller is not needed.
        let beside = config.beside_openkruise;
        let sidecar_sets = (served.sidecar_sets && !beside).then(|| {
            let sets = cache.sidecar_set_cache().cloned().unwrap_or_else(|| {
                SidecarSetCache::start(
                    &client,
                    &cache.versions().resource_or_newest(KruiseKind::SidecarSet),
                    &config.namespace,
                )
            });
            let inputs = Inputs {
                sidecar_sets: sets.set_store().clone(),
                revisions: sets.revision_store().clone(),
                pods: cache.pod_store().clone(),
                namespaces: cache.namespace_store().clone(),
            };
            SidecarSetController::start(
                writer.clone(),
                inputs,
                config.namespace.clone(),
                sidecarset::UpgradeContext::new(writer.clone(), metrics.clone())
                    .at(cache.versions()),
                leading.clone(),
                runtime::Settings::default(),
            )
        });
        let budgets = match (cache.budget_store(), cache.workloads()) {
            (Some(budgets), Some(workloads)) => {
                let inputs = podunavailablebudget::Inputs {
                    budgets: budgets.clone(),
                    pods: cache.pod_store().clone(),
                    workloads: workloads.clone(),
                };
                Some(PodUnavailableBudgetController::start(
                    podunavailablebudget::Context::sharing(
                        writer.clone(),
                        config.gates.clone(),
                        cache.budget_copies().clone(),
                    )
                    .with_metrics(metrics.clone())
                    .at(cache.versions()),
                    inputs,
                    Arc::new(k8s_openapi::jiff::Timestamp::now),
                    leading.clone(),
                    runtime::Settings::default(),
                ))
            }
            _ => None,
        };
        let spreads_on = served.workload_spreads
            && config.gates.enabled(kruise_webhooks::features::POD_WEBHOOK)
            && config.gates.enabled(kruise_webhooks::workloadspread::GATE);
        let spreads = match cache.workloads() {
            Some(workloads) if spreads_on => {
                let inputs = workloadspread::Inputs {
                    // The pod webhooks' store when they keep one (the same gates and CRD), else its own.
                    spreads: cache.spread_store().cloned().unwrap_or_else(|| {
                        crate::cache::watch_kruise(
                            &client,
                            &cache
                                .versions()
                                .resource_or_newest(KruiseKind::WorkloadSpread),
                        )
                    }),
                    pods: cache.pod_store().clone(),
                    workloads: workloads.clone(),
                };
                Some(WorkloadSpreadController::start(
                    workloadspread::Context::new(writer.clone(), metrics.clone())
                        .with_kruise_namespace(&config.namespace)
                        .at(cache.versions()),
                    inputs,
                    Arc::new(k8s_openapi::jiff::Timestamp::now),
                    leading.clone(),
                    runtime::Settings::default(),
                ))
            }
            _ => None,
        };
        // Always registered, as in OpenKruise (spec/container-launch-priority.md §2), but beside it: it acts
        // only on pods carrying barrier envs.
        let barriers = (!beside).then(|| {
            launch_priority::LaunchPriorityController::start(
                writer.clone(),
                cache.pod_store().clone(),
                metrics.clone(),
                leading.clone(),
                runtime::Settings {
                    concurrency: 4,
                    ..runtime::Settings::per_pod()
                },
            )
        });
        // `KruisePodReady` on the pods that carry its readiness gate (docs/pod-readiness.md): always, as in
        // OpenKruise, but beside it.
        let readiness = (!beside).then(|| {
            pod_readiness::PodReadinessController::start(
                writer.clone(),
                cache.pod_store().clone(),
                metrics.clone(),
                leading.clone(),
                runtime::Settings {
                    concurrency: 3,
                    ..runtime::Settings::per_pod()
                },
            )
        });
        // The Job sidecar terminator (spec/sidecar-terminator.md §3, §9; DECISIONS 1): gate
        // `SidecarTerminator` (forced off without `KruiseDaemon`), the CRD served; on the
        // webhooks' pod store, with a Node and a CRR watch of its own.
        let terminator_on = served.container_recreate_requests
            && config
                .gates
                .enabled(kruise_webhooks::sidecar_terminator::GATE);
        let terminator = terminator_on.then(|| {
            sidecar_terminator::SidecarTerminatorController::start(
                sidecar_terminator::Context::new(writer.clone(), metrics.clone())
                    .at(cache.versions()),
                sidecar_terminator::Inputs::watch(
                    &client,
                    cache.pod_store().clone(),
                    &cache
                        .versions()
                        .resource_or_newest(KruiseKind::ContainerRecreateRequest),
                ),
                Arc::new(k8s_openapi::jiff::Timestamp::now),
                leading.clone(),
                runtime::Settings::per_pod(),
            )
        });
        // PersistentPodStates (docs/persistentpodstate.md §3, §4): the CRD served, and not beside OpenKruise,
        // whose kruise-manager keeps its own PersistentPodState controller.
        let versions = cache.versions();
        let persistent_pod_states = (versions.serves(KruiseKind::PersistentPodState) && !beside)
            .then(|| {
                let states = cache
                    .persistent_pod_state_store()
                    .cloned()
                    .unwrap_or_else(|| {
                        crate::cache::watch_kruise(
                            &client,
                            &versions.resource_or_newest(KruiseKind::PersistentPodState),
                        )
                    });
                persistentpodstate::start(
                    persistentpodstate::Context::new(writer.clone(), metrics.clone()).at(versions),
                    persistentpodstate::Inputs::watch(
                        &client,
                        states,
                        cache.pod_store().clone(),
                        versions.serves(KruiseKind::AdvancedStatefulSet),
                    ),
                    leading.clone(),
                    runtime::Settings::default(),
                )
            });
        // Pods that missed their sidecars (docs/missed-sidecars.md): wherever the pod webhook injects
        // SidecarSets, beside OpenKruise too (it writes events only).
        let missed_sidecars = cache.sidecar_set_cache().map(|sets| {
            missed_sidecars::MissedSidecarsController::start(
                writer.clone(),
                sets.clone(),
                cache.pod_store().clone(),
                cache.namespace_store().clone(),
                vec!["kube-system".to_owned(), config.namespace.clone()],
                cache.versions().resource_or_newest(KruiseKind::SidecarSet),
                metrics.clone(),
                leading.clone(),
                runtime::Settings::default(),
            )
        });
        let controllers = Self {
            missed_sidecars,
            leader: None,
            leading,
            sidecar_sets,
            budgets,
            spreads,
            barriers,
            terminator,
            readiness,
            persistent_pod_states,
        };
        tracing::info!(controllers = ?controllers.running(), "controllers started (they work while this replica leads)");
        controllers
    }

    /// The kinds whose controllers these are (`PersistentPodState` for both of its controllers), in start
    /// order: what `--beside-openkruise`, the gates and the CRDs served left running.
    pub fn running(&self) -> Vec<&'static str> {
        [
            ("SidecarSet", self.sidecar_sets.is_some()),
            ("PodUnavailableBudget", self.budgets.is_some()),
            ("WorkloadSpread", self.spreads.is_some()),
            ("ContainerLaunchPriority", self.barriers.is_some()),
            ("SidecarTerminator", self.terminator.is_some()),
            ("PodReadiness", self.readiness.is_some()),
            ("PersistentPodState", self.persistent_pod_states.is_some()),
            ("MissedSidecars", self.missed_sidecars.is_some()),
        ]
        .into_iter()
        .filter_map(|(kind, on)| on.then_some(kind))
        .collect()
    }

    /// Leadership, as the controllers see it.
    pub fn is_leader(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Stops the controllers, then the election, which releases the Lease if this replica holds it: no
    /// controller write can follow the release.
    pub async fn shutdown(self) {
        if let Some(c) = self.sidecar_sets {
            c.stop().await;
        }
        if let Some(c) = self.budgets {
            c.stop().await;
        }
        if let Some(c) = self.spreads {
            c.stop().await;
        }
        if let Some(c) = self.barriers {
            c.stop().await;
        }
        if let Some(c) = self.terminator {
            c.stop().await;
        }
        if let Some(c) = self.readiness {
            c.stop().await;
        }
        if let Some(c) = self.persistent_pod_states {
            c.stop().await;
        }
        if let Some(c) = self.missed_sidecars {
            c.stop().await;
        }
        if let Some(leader) = self.leader {
            leader.stop().await;
        }
    }
}

/// Leader election (or constant leadership with `--enable-leader-election=false`), as `config` says.
pub fn elector(client: Client, config: &ServeConfig, metrics: &Metrics) -> LeaderElector {
    if config.leader_election.enabled {
        LeaderElector::start(
            client,
            &config.leader_election,
            leader::default_identity(),
            metrics.clone(),
        )
    } else {
        tracing::info!("leader election disabled: this replica runs the controllers");
        LeaderElector::always_leader(metrics)
    }
}
