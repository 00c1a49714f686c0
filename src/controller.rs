//! The leader-elected controllers behind the webhooks (spec/webhook-server.md §9): every replica serves
//! admission, certificates and readiness; only the replica holding the Lease `kruise-system/kruise-manager`
//! ([`leader`]) runs the controllers: the SidecarSet controller ([`sidecarset`]), the
//! PodUnavailableBudget status controller ([`podunavailablebudget`]), the WorkloadSpread controller
//! ([`workloadspread`]), the container-launch-priority barrier controller ([`launch_priority`]) and the Job
//! sidecar terminator ([`sidecar_terminator`]). Every controller runs on [`runtime`]: kube-runtime's
//! `Controller`, driven by changes of the stores the webhooks read.
//!
//! Cluster mode only: [`crate::server::start_with`] starts [`Controllers`] last, after the informer caches,
//! and [`crate::Server::shutdown`] stops them. Standalone mode (`--objects`, standalone certificates) runs
//! no controller and takes no Lease: there is no cluster to write to.

pub mod launch_priority;
pub mod leader;
pub mod podunavailablebudget;
pub mod runtime;
pub mod sidecar_terminator;
pub mod sidecarset;
pub mod workloadspread;

use kube::Client;
use tokio::sync::watch;

use kruise_webhooks::registry::Served;

use crate::cache::{LiveCache, SidecarSetCache};
use crate::config::ServeConfig;
use crate::metrics::Metrics;
use std::sync::Arc;

use leader::LeaderElector;
use podunavailablebudget::PodUnavailableBudgetController;
use sidecarset::{Inputs, SidecarSetController};
use workloadspread::WorkloadSpreadController;

/// The API server answered `e` with HTTP status `code`.
pub(crate) fn is_code(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// Whether `e` is an admission webhook's refusal: the API server's text for one begins `admission webhook
/// "<name>" denied the request`. A 403 is not always one: RBAC answers 403 too (`pods "x" is forbidden: User
/// ... cannot update resource ...`), and that is an error to report, never a refusal to wait out.
pub(crate) fn is_admission_denial(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.message.starts_with("admission webhook \"")
        && s.message.contains("denied the request"))
}

/// The API server's answer in `e`'s chain of causes, when it answered.
pub(crate) fn api_status<'e>(
    e: &'e (dyn std::error::Error + 'static),
) -> Option<&'e kube::core::Status> {
    let mut current = Some(e);
    while let Some(error) = current {
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>() {
            return Some(status);
        }
        current = error.source();
    }
    None
}

/// `e` as a log line or an event says it: its text, with the API server's answer, when there is one, as
/// `<message> (<reason> <code>)` instead of the client's dump of the whole Status.
pub(crate) fn failure_text(e: &(dyn std::error::Error + 'static)) -> String {
    let text = e.to_string();
    let mut current = Some(e);
    while let Some(error) = current {
        if let Some(client @ kube::Error::Api(status)) = error.downcast_ref::<kube::Error>() {
            let concise = format!("{} ({} {})", status.message, status.reason, status.code);
            return text.replace(&client.to_string(), &concise);
        }
        current = error.source();
    }
    text
}

/// The reason label of a failure: the API server's reason (`Forbidden`, `Conflict`, `NotFound`, ...) when it
/// answered, `Unreachable` when the client could not reach it, else `Other`.
pub(crate) fn failure_reason(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(status) = api_status(e) {
        return if status.reason.is_empty() {
            status.code.to_string()
        } else {
            status.reason.clone()
        };
    }
    let mut current = Some(e);
    while let Some(error) = current {
        if error.downcast_ref::<kube::Error>().is_some() {
            return "Unreachable".to_owned();
        }
        current = error.source();
    }
    "Other".to_owned()
}

/// The leader election and the controllers it gates.
pub struct Controllers {
    leader: LeaderElector,
    sidecar_sets: Option<runtime::Running>,
    budgets: Option<runtime::Running>,
    spreads: Option<runtime::Running>,
    barriers: runtime::Running,
    /// The Job sidecar terminator ([`sidecar_terminator`]).
    terminator: Option<runtime::Running>,
}

impl Controllers {
    /// Starts leader election (or constant leadership with `--enable-leader-election=false`) and the
    /// SidecarSet controller when the cluster serves SidecarSets. The SidecarSet caches of `cache` are reused
    /// when the pod webhook started them; otherwise the controller starts its own. The PodUnavailableBudget
    /// status controller runs on the PUB and workload stores of `cache`, which exist when the CRD is served
    /// at v1beta1 and a PUB gate is on (spec/podunavailablebudget.md §3). The WorkloadSpread controller runs
    /// when the CRD is served at v1beta1 and the `WorkloadSpread` and `PodWebhook` gates are on
    /// (spec/workloadspread.md §6.1), on the pod, workload and WorkloadSpread stores of `cache`.
    /// The Job sidecar terminator runs when the `SidecarTerminator` gate is on and the CRR CRD is served at
    /// v1beta1, on the pod store of `cache` and Node and CRR watches of its own. The container-launch-priority
    /// barrier controller always runs, on the pod store.
    pub fn start(
        client: Client,
        cache: &LiveCache,
        config: &ServeConfig,
        served: Served,
        metrics: &Metrics,
    ) -> Self {
        let leader = if config.leader_election.enabled {
            LeaderElector::start(
                client.clone(),
                &config.leader_election,
                leader::default_identity(),
                metrics.clone(),
            )
        } else {
            tracing::info!("leader election disabled: this replica runs the controllers");
            LeaderElector::always_leader(metrics)
        };
        // Controllers write through the leadership gate; the caches they read use `client`.
        let writer = leader::gated(client.clone(), leader.is_leader());
        let sidecar_sets = served.sidecar_sets.then(|| {
            let sets = cache
                .sidecar_set_cache()
                .cloned()
                .unwrap_or_else(|| SidecarSetCache::start(&client, &config.namespace));
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
                sidecarset::UpgradeContext::new(writer.clone(), metrics.clone()),
                leader.is_leader(),
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
                    .with_metrics(metrics.clone()),
                    inputs,
                    Arc::new(k8s_openapi::jiff::Timestamp::now),
                    leader.is_leader(),
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
                        crate::cache::shared::watch(
                            kube::Api::all(client.clone()),
                            (),
                            crate::cache::shared::whole_lists(),
                            crate::cache::shared::strip_unread_metadata,
                            |_, _| {},
                        )
                    }),
                    pods: cache.pod_store().clone(),
                    workloads: workloads.clone(),
                };
                Some(WorkloadSpreadController::start(
                    workloadspread::Context::new(writer.clone(), metrics.clone())
                        .with_kruise_namespace(&config.namespace),
                    inputs,
                    Arc::new(k8s_openapi::jiff::Timestamp::now),
                    leader.is_leader(),
                    runtime::Settings::default(),
                ))
            }
            _ => None,
        };
        // Always registered, as in OpenKruise (spec/container-launch-priority.md §2): it acts only on pods
        // carrying barrier envs.
        let barriers = launch_priority::LaunchPriorityController::start(
            writer.clone(),
            cache.pod_store().clone(),
            metrics.clone(),
            leader.is_leader(),
            runtime::Settings {
                concurrency: 4,
                ..runtime::Settings::per_pod()
            },
        );
        // The Job sidecar terminator (spec/sidecar-terminator.md §3, §9; DECISIONS 1): gate
        // `SidecarTerminator` (forced off without `KruiseDaemon`), the CRD served at v1beta1; on the
        // webhooks' pod store, with a Node and a CRR watch of its own.
        let terminator_on = served.container_recreate_requests
            && config
                .gates
                .enabled(kruise_webhooks::sidecar_terminator::GATE);
        let terminator = terminator_on.then(|| {
            sidecar_terminator::SidecarTerminatorController::start(
                sidecar_terminator::Context::new(writer.clone(), metrics.clone()),
                sidecar_terminator::Inputs::watch(&client, cache.pod_store().clone()),
                Arc::new(k8s_openapi::jiff::Timestamp::now),
                leader.is_leader(),
                runtime::Settings::per_pod(),
            )
        });
        Self {
            leader,
            sidecar_sets,
            budgets,
            spreads,
            barriers,
            terminator,
        }
    }

    /// Leadership, as the controllers see it.
    pub fn is_leader(&self) -> watch::Receiver<bool> {
        self.leader.is_leader()
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
        self.barriers.stop().await;
        if let Some(c) = self.terminator {
            c.stop().await;
        }
        self.leader.stop().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(message: &str, reason: &str, code: u16) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure(message, reason).with_code(code),
        ))
    }

    #[test]
    fn a_403_is_a_webhook_refusal_only_when_the_api_server_says_a_webhook_denied_it() {
        let denied = api(
            "admission webhook \"vpod.kb.io\" denied the request: pub unavailable allowed is 0",
            "Forbidden",
            403,
        );
        assert!(is_admission_denial(&denied));
        let rbac = api(
            "pods \"web-0\" is forbidden: User \"system:serviceaccount:kruise-system:kruise-webhook\" cannot update resource \"pods\" in API group \"\" in the namespace \"shop\"",
            "Forbidden",
            403,
        );
        assert!(is_code(&rbac, 403));
        assert!(!is_admission_denial(&rbac));
    }

    #[derive(Debug, thiserror::Error)]
    #[error("updating pod shop/web-0: {source}")]
    struct Wrapped {
        #[source]
        source: kube::Error,
    }

    #[test]
    fn a_failure_says_the_api_servers_message_reason_and_code_without_the_status_dump() {
        let e = Wrapped {
            source: api("pods \"web-0\" is forbidden", "Forbidden", 403),
        };
        assert_eq!(
            failure_text(&e),
            "updating pod shop/web-0: pods \"web-0\" is forbidden (Forbidden 403)"
        );
        assert_eq!(failure_reason(&e), "Forbidden");
        let conflict = Wrapped {
            source: api("the object has been modified", "", 409),
        };
        assert_eq!(failure_reason(&conflict), "409");
        let other = std::io::Error::other("disk full");
        assert_eq!(failure_text(&other), "disk full");
        assert_eq!(failure_reason(&other), "Other");
    }
}
