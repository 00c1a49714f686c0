//! Prometheus metrics (prometheus-client Registry, OpenMetrics text), names as OpenKruise and
//! controller-runtime use them (DECISIONS 19, spec/webhook-server.md §10).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

use kruise_webhooks::verdict::{ProtectionMetric, ProtectionRecord};

/// `{webhook, code}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookCodeLabels {
    /// The webhook path, as controller-runtime labels it.
    pub webhook: String,
    /// The HTTP-like status code of the answer.
    pub code: String,
}

impl WebhookCodeLabels {
    /// The labels of answers with `code` on `path`.
    pub fn new(path: &str, code: &str) -> Self {
        Self {
            webhook: path.to_owned(),
            code: code.to_owned(),
        }
    }
}

/// `{webhook}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabels {
    /// The webhook path.
    pub webhook: String,
}

/// `{name, username}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NameUserLabels {
    /// Namespace or CRD name.
    pub name: String,
    /// Requesting user.
    pub username: String,
}

/// `{kind_namespace_name, username}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkloadUserLabels {
    /// `<Kind>_<ns>_<name>`.
    pub kind_namespace_name: String,
    /// Requesting user.
    pub username: String,
}

/// `{result}` of the PUB status writes.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// The outcome: `written`, `conflict`, `not_found`, `error` or `stale` (not sent: the watch showed a newer version) for status writes; the SidecarSet update
    /// results of [`Metrics::sidecarset_upgrade`].
    pub result: String,
}

/// `{namespace,name}` of the WorkloadSpread metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SpreadLabels {
    /// The WorkloadSpread's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// `{sidecarset}` of the pods that missed a SidecarSet.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SidecarSetLabels {
    /// The SidecarSet's name.
    pub sidecarset: String,
}

/// `{action,result}` of the Job sidecar terminator's API calls.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionResultLabels {
    /// `crr_create`, `crr_delete`, `image_replace` or `status_patch`.
    pub action: &'static str,
    /// `ok` or `error`.
    pub result: &'static str,
}

/// `{resource}` of the informer metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    /// The resource, as kubectl names it (`pods`, `sidecarsets.apps.kruise.io`).
    pub resource: String,
}

/// `{controller,reason}` of the controller error metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerReasonLabels {
    /// The kind the controller reconciles (`SidecarSet`, `PodUnavailableBudget`, `Pod`, ...).
    pub controller: String,
    /// The API server's reason (`Forbidden`, `Conflict`, ...), `Unreachable`, `Timeout` or `Other`.
    pub reason: String,
}

/// `{name}` of the leader-election metrics: the Lease name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeaseLabels {
    /// The Lease (`kruise-manager`).
    pub name: String,
}

/// A monotonically increasing count exposed under its plain name, as OpenKruise's Go counters are
/// (`namespace_deletion_protection`, not `..._total`): OpenMetrics would force the suffix on a counter, so
/// this is typed `unknown`, which keeps the name dashboards already query.
#[derive(Debug, Default, Clone)]
pub struct PlainCounter(Arc<AtomicU64>);

impl PlainCounter {
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl TypedMetric for PlainCounter {
    const TYPE: MetricType = MetricType::Unknown;
}

impl EncodeMetric for PlainCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let v = i64::try_from(self.get()).unwrap_or(i64::MAX);
        encoder.encode_gauge(&v)
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Unknown
    }
}

/// Every metric the server exports; cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// `controller_runtime_webhook_requests_total{webhook,code}`.
    pub requests: Family<WebhookCodeLabels, Counter>,
    /// `controller_runtime_webhook_latency_seconds{webhook}`.
    pub latency: Family<WebhookLabels, Histogram>,
    /// `controller_runtime_webhook_requests_in_flight{webhook}`.
    pub in_flight: Family<WebhookLabels, Gauge>,
    /// `controller_runtime_webhook_panics_total`.
    pub panics: Counter,
    /// `admission_shed_total{webhook}`: admission requests answered HTTP 429 because `--max-in-flight`
    /// requests were being served (src/server/limit.rs).
    pub shed: Family<WebhookLabels, Counter>,
    /// `namespace_deletion_protection{name,username}`.
    pub namespace_protection: Family<NameUserLabels, PlainCounter>,
    /// `crd_deletion_protection{name,username}`.
    pub crd_protection: Family<NameUserLabels, PlainCounter>,
    /// `workload_deletion_protection{kind_namespace_name,username}`.
    pub workload_protection: Family<WorkloadUserLabels, PlainCounter>,
    /// `pod_unavailable_budget{kind_namespace_name,username}`: disruptions refused by a PUB.
    pub pod_unavailable_budget: Family<WorkloadUserLabels, PlainCounter>,
    /// `pod_unavailable_budget_status_writes_total{result}`: PUB status writes of the admission gate by
    /// outcome (`written`, `conflict`, `error`).
    pub budget_writes: Family<ResultLabels, Counter>,
    /// `kruise_manager_is_leader`: 1 while this replica holds the leader Lease, else 0.
    pub is_leader: Gauge,
    /// `leader_election_slowpath_total{name}`: renewals that had to re-read the Lease.
    pub leader_slowpath: Family<LeaseLabels, Counter>,
    /// `sidecarset_upgrade_pods_total{result}`: pods the SidecarSet in-place update handled, by outcome
    /// (`updated`, `flipped`, `not_upgradable`, `skipped`, `budget_denied`, `error`).
    pub sidecarset_upgrade: Family<ResultLabels, Counter>,
    /// `launch_priority_barrier_writes_total{result}`: writes of the container-launch-priority barrier
    /// controller by outcome (`created`, `released`, `completed`, `error`).
    pub launch_barrier_writes: Family<ResultLabels, Counter>,
    /// `workloadspread_controller_status_writes_total{result}`: WorkloadSpread status writes of the
    /// controller by outcome (`written`, `conflict`, `error`).
    pub workloadspread_status_writes: Family<ResultLabels, Counter>,
    /// `workloadspread_pod_deletion_cost_patches_total{result}`: deletion-cost annotations written on pods
    /// (`written`, `error`).
    pub workloadspread_cost_patches: Family<ResultLabels, Counter>,
    /// `workloadspread_rescheduled_pods_total{result}`: unschedulable pods the Adaptive strategy deleted
    /// (`deleted`, `error`).
    pub workloadspread_rescheduled: Family<ResultLabels, Counter>,
    /// `workloadspread_subsets_full_total{namespace,name}`: pods a WorkloadSpread managed but admitted
    /// without a subset, every subset being full or unschedulable (DECISIONS 18).
    pub spread_full: Family<SpreadLabels, Counter>,
    /// `workloadspread_status_writes_total{result}`: WorkloadSpread status records of the pod webhooks by
    /// outcome (`written`, `conflict`, `not_found`, `error`, `stale`).
    pub spread_writes: Family<ResultLabels, Counter>,
    /// `sidecar_terminator_actions_total{action,result}`: the Job sidecar terminator's writes.
    pub sidecar_terminator_actions: Family<ActionResultLabels, Counter>,
    /// `informer_synced{resource}`: 1 once the informer store of a resource readiness waits for has its
    /// first list, else 0 (set at each scrape: [`Metrics::observe_sync`]).
    pub informer_synced: Family<ResourceLabels, Gauge>,
    /// `controller_errors_total{controller,reason}`: failed reconciles, by controller and reason.
    pub controller_errors: Family<ControllerReasonLabels, Counter>,
    /// `sidecarset_pods_missing_sidecars{sidecarset}`: the active pods a SidecarSet's selector matches that
    /// were created without its sidecars (docs/missed-sidecars.md), as the leader last counted them.
    pub sidecarset_missing: Family<SidecarSetLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// One webhook path's metrics ([`Metrics::route`]): a request counts without building label sets or
/// looking the path up, unless it is answered with a code other than 200 or 500.
#[derive(Clone, Debug)]
pub struct RouteMetrics {
    path: &'static str,
    /// `controller_runtime_webhook_requests_in_flight{webhook}`.
    pub in_flight: Gauge,
    /// `controller_runtime_webhook_latency_seconds{webhook}`.
    pub latency: Histogram,
    /// `admission_shed_total{webhook}`.
    pub shed: Counter,
    ok: Counter,
    failed: Counter,
    requests: Family<WebhookCodeLabels, Counter>,
}

impl RouteMetrics {
    /// The webhook path.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// Counts one answer with `code` in `controller_runtime_webhook_requests_total{webhook,code}`.
    pub fn count(&self, code: u16) {
        match code {
            200 => self.ok.inc(),
            500 => self.failed.inc(),
            _ => {
                let labels = WebhookCodeLabels::new(self.path, &code.to_string());
                self.requests.get_or_create(&labels).inc()
            }
        };
    }
}

impl Metrics {
    /// Registers every family.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<WebhookCodeLabels, Counter>::default();
        // controller-runtime's buckets (prometheus.DefBuckets), so dashboards line up.
        let latency = Family::<WebhookLabels, Histogram>::new_with_constructor(|| {
            Histogram::new([
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ])
        });
        let in_flight = Family::<WebhookLabels, Gauge>::default();
        let panics = Counter::default();
        let shed = Family::<WebhookLabels, Counter>::default();
        let namespace_protection = Family::<NameUserLabels, PlainCounter>::default();
        let crd_protection = Family::<NameUserLabels, PlainCounter>::default();
        let workload_protection = Family::<WorkloadUserLabels, PlainCounter>::default();
        let is_leader = Gauge::default();
        let leader_slowpath = Family::<LeaseLabels, Counter>::default();
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            in_flight.clone(),
        );
        registry.register(
            "controller_runtime_webhook_panics",
            "Total number of webhook panics",
            panics.clone(),
        );
        registry.register(
            "admission_shed",
            "Admission requests answered 429 at once because --max-in-flight requests were being served",
            shed.clone(),
        );
        registry.register(
            "namespace_deletion_protection",
            "Number of namespace deletions refused by deletion protection",
            namespace_protection.clone(),
        );
        registry.register(
            "crd_deletion_protection",
            "Number of CRD deletions refused by deletion protection",
            crd_protection.clone(),
        );
        registry.register(
            "workload_deletion_protection",
            "Number of workload deletions refused by deletion protection",
            workload_protection.clone(),
        );
        let pod_unavailable_budget = Family::<WorkloadUserLabels, PlainCounter>::default();
        registry.register(
            "pod_unavailable_budget",
            "Number of pod disruptions refused by a PodUnavailableBudget",
            pod_unavailable_budget.clone(),
        );
        let budget_writes = Family::<ResultLabels, Counter>::default();
        registry.register(
            "pod_unavailable_budget_status_writes",
            "PodUnavailableBudget status writes of the admission gate, by result",
            budget_writes.clone(),
        );
        registry.register(
            "kruise_manager_is_leader",
            "Whether this replica holds the leader Lease (1) or not (0)",
            is_leader.clone(),
        );
        registry.register(
            "leader_election_slowpath",
            "Total number of leader Lease renewals that fell back to re-reading the Lease",
            leader_slowpath.clone(),
        );
        let sidecarset_upgrade = Family::<ResultLabels, Counter>::default();
        registry.register(
            "sidecarset_upgrade_pods",
            "Pods handled by the SidecarSet in-place sidecar update, by result",
            sidecarset_upgrade.clone(),
        );
        let launch_barrier_writes = Family::<ResultLabels, Counter>::default();
        registry.register(
            "launch_priority_barrier_writes",
            "Writes of the container-launch-priority barrier controller (ConfigMaps created, levels released, pods completed), by result",
            launch_barrier_writes.clone(),
        );
        let workloadspread_status_writes = Family::<ResultLabels, Counter>::default();
        registry.register(
            "workloadspread_controller_status_writes",
            "WorkloadSpread status writes of the controller, by result",
            workloadspread_status_writes.clone(),
        );
        let workloadspread_cost_patches = Family::<ResultLabels, Counter>::default();
        registry.register(
            "workloadspread_pod_deletion_cost_patches",
            "Pod deletion-cost annotations written by the WorkloadSpread controller, by result",
            workloadspread_cost_patches.clone(),
        );
        let workloadspread_rescheduled = Family::<ResultLabels, Counter>::default();
        registry.register(
            "workloadspread_rescheduled_pods",
            "Unschedulable pods deleted by the WorkloadSpread Adaptive strategy, by result",
            workloadspread_rescheduled.clone(),
        );
        let spread_full = Family::<SpreadLabels, Counter>::default();
        registry.register(
            "workloadspread_subsets_full",
            "Pods a WorkloadSpread managed but admitted without a subset: every subset full or unschedulable",
            spread_full.clone(),
        );
        let spread_writes = Family::<ResultLabels, Counter>::default();
        registry.register(
            "workloadspread_status_writes",
            "WorkloadSpread status records of the pod webhooks, by result",
            spread_writes.clone(),
        );
        let sidecar_terminator_actions = Family::<ActionResultLabels, Counter>::default();
        registry.register(
            "sidecar_terminator_actions",
            "Writes of the Job sidecar terminator (CRR create and delete, image replace, status patch), by result",
            sidecar_terminator_actions.clone(),
        );
        let informer_synced = Family::<ResourceLabels, Gauge>::default();
        registry.register(
            "informer_synced",
            "Whether the informer cache of a resource readiness waits for has its first list (1) or not (0)",
            informer_synced.clone(),
        );
        let sidecarset_missing = Family::<SidecarSetLabels, Gauge>::default();
        registry.register(
            "sidecarset_pods_missing_sidecars",
            "Active pods a SidecarSet selects that were created without its sidecars (recreate them), as the leader counts them",
            sidecarset_missing.clone(),
        );
        let controller_errors = Family::<ControllerReasonLabels, Counter>::default();
        registry.register(
            "controller_errors",
            "Failed reconciles, by controller and reason (the API server's reason when it answered)",
            controller_errors.clone(),
        );
        Self {
            controller_errors,
            sidecarset_missing,
            informer_synced,
            spread_full,
            spread_writes,
            registry: Arc::new(registry),
            requests,
            latency,
            in_flight,
            panics,
            shed,
            namespace_protection,
            crd_protection,
            workload_protection,
            pod_unavailable_budget,
            budget_writes,
            is_leader,
            leader_slowpath,
            sidecarset_upgrade,
            launch_barrier_writes,
            workloadspread_status_writes,
            workloadspread_cost_patches,
            workloadspread_rescheduled,
            sidecar_terminator_actions,
        }
    }

    /// Sets `informer_synced` from the stores' sync states.
    pub fn observe_sync(&self, states: &[std::sync::Arc<crate::cache::sync::SyncState>]) {
        for state in states {
            self.informer_synced
                .get_or_create(&ResourceLabels {
                    resource: state.resource().to_owned(),
                })
                .set(i64::from(state.synced()));
        }
    }

    /// Counts a write of the launch-priority barrier controller, by result.
    pub fn record_launch_barrier_write(&self, result: &str) {
        Self::count(&self.launch_barrier_writes, result);
    }

    /// Counts a write of the Job sidecar terminator by action and result.
    pub fn record_sidecar_terminator_action(&self, action: &'static str, ok: bool) {
        self.sidecar_terminator_actions
            .get_or_create(&ActionResultLabels {
                action,
                result: if ok { "ok" } else { "error" },
            })
            .inc();
    }

    /// Counts a WorkloadSpread status write of the controller by result.
    pub fn record_workloadspread_status_write(&self, result: &str) {
        Self::count(&self.workloadspread_status_writes, result);
    }

    /// Counts a deletion-cost patch of the WorkloadSpread controller by result.
    pub fn record_workloadspread_cost_patch(&self, result: &str) {
        Self::count(&self.workloadspread_cost_patches, result);
    }

    /// Counts an unschedulable pod deletion of the WorkloadSpread controller by result.
    pub fn record_workloadspread_reschedule(&self, result: &str) {
        Self::count(&self.workloadspread_rescheduled, result);
    }

    fn count(family: &Family<ResultLabels, Counter>, result: &str) {
        family
            .get_or_create(&ResultLabels {
                result: result.to_owned(),
            })
            .inc();
    }

    /// Counts a pod the SidecarSet in-place update handled, by result.
    pub fn record_sidecarset_upgrade(&self, result: &str) {
        self.sidecarset_upgrade
            .get_or_create(&ResultLabels {
                result: result.to_owned(),
            })
            .inc();
    }

    /// Counts a disruption refused by a PUB.
    pub fn record_budget_denial(&self, r: &kruise_webhooks::verdict::BudgetDenialRecord) {
        self.pod_unavailable_budget
            .get_or_create(&WorkloadUserLabels {
                kind_namespace_name: r.kind_namespace_name.clone(),
                username: r.username.clone(),
            })
            .inc();
    }

    /// Counts a pod admitted without a subset because every subset of its WorkloadSpread was full.
    pub fn record_spread_full(&self, namespace: &str, name: &str) {
        self.spread_full
            .get_or_create(&SpreadLabels {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })
            .inc();
    }

    /// Counts a WorkloadSpread status record of the pod webhooks by result.
    pub fn record_spread_write(&self, result: &str) {
        self.spread_writes
            .get_or_create(&ResultLabels {
                result: result.to_owned(),
            })
            .inc();
    }

    /// Counts a PUB status write of the gate by result.
    pub fn record_budget_write(&self, result: &str) {
        self.budget_writes
            .get_or_create(&ResultLabels {
                result: result.to_owned(),
            })
            .inc();
    }

    /// The handles of one webhook path, resolved once when its route is built. As controller-runtime's
    /// `InstrumentedHook`, the in-flight gauge and the `200` and `500` counters exist (at zero) from then on.
    pub fn route(&self, path: &'static str) -> RouteMetrics {
        let labels = WebhookLabels {
            webhook: path.to_owned(),
        };
        let code = |code| {
            self.requests
                .get_or_create(&WebhookCodeLabels::new(path, code))
                .clone()
        };
        RouteMetrics {
            path,
            in_flight: self.in_flight.get_or_create(&labels).clone(),
            latency: self.latency.get_or_create(&labels).clone(),
            shed: self.shed.get_or_create(&labels).clone(),
            ok: code("200"),
            failed: code("500"),
            requests: self.requests.clone(),
        }
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Counts one refused deletion (spec/deletion-protection.md §7).
    pub fn record_protection(&self, r: &ProtectionRecord) {
        match r.metric {
            ProtectionMetric::Namespace => self
                .namespace_protection
                .get_or_create(&NameUserLabels {
                    name: r.metric_name.clone(),
                    username: r.username.clone(),
                })
                .inc(),
            ProtectionMetric::Crd => self
                .crd_protection
                .get_or_create(&NameUserLabels {
                    name: r.metric_name.clone(),
                    username: r.username.clone(),
                })
                .inc(),
            ProtectionMetric::Workload => self
                .workload_protection
                .get_or_create(&WorkloadUserLabels {
                    kind_namespace_name: r.metric_name.clone(),
                    username: r.username.clone(),
                })
                .inc(),
        }
    }
}

/// Content type of [`Metrics::encode`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_starts_its_series_at_zero_and_counts_every_code() {
        let metrics = Metrics::new();
        let route = metrics.route("/mutate-pod");
        let text = metrics.encode();
        for line in [
            r#"controller_runtime_webhook_requests_total{webhook="/mutate-pod",code="200"} 0"#,
            r#"controller_runtime_webhook_requests_total{webhook="/mutate-pod",code="500"} 0"#,
            r#"controller_runtime_webhook_requests_in_flight{webhook="/mutate-pod"} 0"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        route.count(200);
        route.count(200);
        route.count(500);
        route.count(403);
        route.latency.observe(0.001);
        let text = metrics.encode();
        for line in [
            r#"controller_runtime_webhook_requests_total{webhook="/mutate-pod",code="200"} 2"#,
            r#"controller_runtime_webhook_requests_total{webhook="/mutate-pod",code="500"} 1"#,
            r#"controller_runtime_webhook_requests_total{webhook="/mutate-pod",code="403"} 1"#,
            r#"controller_runtime_webhook_latency_seconds_count{webhook="/mutate-pod"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn names_match_openkruise_and_controller_runtime() {
        let m = Metrics::new();
        m.requests
            .get_or_create(&WebhookCodeLabels {
                webhook: "/validate-namespace".into(),
                code: "200".into(),
            })
            .inc();
        m.record_protection(&ProtectionRecord {
            metric: ProtectionMetric::Namespace,
            metric_name: "ns-a".into(),
            kind: "Namespace".into(),
            namespace: String::new(),
            name: "ns-a".into(),
            username: "alice".into(),
        });
        let text = m.encode();
        assert!(text.contains(r#"controller_runtime_webhook_requests_total{webhook="/validate-namespace",code="200"} 1"#), "{text}");
        assert!(
            text.contains(r#"namespace_deletion_protection{name="ns-a",username="alice"} 1"#),
            "{text}"
        );
    }
}
