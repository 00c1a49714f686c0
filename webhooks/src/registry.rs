//! Which webhooks this version implements: names, paths (both spellings, DECISIONS 3), rules and selectors,
//! as the shipped configuration in `deploy/` registers them (DECISIONS 2). The server's route table, the
//! `review` command's dispatch and a test of `deploy/` all read this one table.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use crate::admission::{AdmissionRequest, Operation};
use crate::features::{FeatureGates, POD_WEBHOOK, RESOURCES_DELETION_PROTECTION};
use crate::selector;

/// The label deletion protection is scoped by.
pub const DELETE_PROTECTION_LABEL: &str = "policy.kruise.io/delete-protection";
/// Namespaces whose objects never reach our webhooks.
pub const EXCLUDED_NAMESPACES: &[&str] = &["kube-system", "kruise-system"];

/// The handler behind a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Handler {
    /// `/validate-namespace`.
    Namespace,
    /// `/validate-customresourcedefinition`.
    CustomResourceDefinition,
    /// `/validate-apps-deployment`: apps/v1 Deployment.
    Deployment,
    /// `/validate-apps-replicaset`: apps/v1 ReplicaSet.
    ReplicaSet,
    /// `/validate-apps-statefulset`: apps/v1 StatefulSet.
    StatefulSet,
    /// `/validate-service`.
    Service,
    /// `/validate-ingress`.
    Ingress,
    /// `/validate-apps-kruise-io-cloneset`.
    CloneSet,
    /// `/validate-apps-kruise-io-statefulset` (Advanced StatefulSet).
    AdvancedStatefulSet,
    /// `/validate-apps-kruise-io-uniteddeployment`.
    UnitedDeployment,
    /// `/mutate-pod`: the pod mutating chain (spec/pod-mutating-misc.md).
    PodMutate,
    /// `/validate-pod`: the pod validating chain, the PodUnavailableBudget gate (spec/podunavailablebudget.md
    /// §7); registered twice (`vpod.kb.io` for pods, `vpodeviction.kb.io` for evictions).
    PodValidate,
    /// `/mutate-apps-kruise-io-sidecarset`: SidecarSet defaulting and hashes (spec/sidecarset.md §7).
    SidecarSetDefault,
    /// `/validate-apps-kruise-io-sidecarset`: SidecarSet validation (spec/sidecarset.md §8).
    SidecarSetValidate,
    /// `/validate-policy-kruise-io-podunavailablebudget`: PodUnavailableBudget validation
    /// (spec/podunavailablebudget.md §8).
    PodUnavailableBudgetValidate,
    /// `/validate-apps-kruise-io-workloadspread`: WorkloadSpread validation (spec/workloadspread.md §7).
    WorkloadSpreadValidate,
    /// `/validate-apps-kruise-io-persistentpodstate`: PersistentPodState validation
    /// (docs/persistentpodstate.md §2).
    PersistentPodStateValidate,
    /// `/mutate-apps-kruise-io-containerrecreaterequest`: ContainerRecreateRequest labels, defaults and
    /// checks (docs/containerrecreaterequest-webhook.md).
    ContainerRecreateRequestMutate,
}

/// A custom resource kind whose CRD must be served for a webhook to be registered (spec/webhook-server.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequiredKind {
    /// `apps.kruise.io` SidecarSet.
    SidecarSet,
    /// `policy.kruise.io/v1beta1` PodUnavailableBudget.
    PodUnavailableBudget,
    /// `apps.kruise.io` ContainerRecreateRequest (v1beta1 or v1alpha1).
    ContainerRecreateRequest,
}

/// Which required kinds the cluster serves (discovery at start-up; always all of them standalone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Served {
    /// The SidecarSet CRD is served.
    pub sidecar_sets: bool,
    /// The PodUnavailableBudget CRD is served at `policy.kruise.io/v1beta1`.
    pub pod_unavailable_budgets: bool,
    /// The WorkloadSpread CRD is served at `apps.kruise.io/v1beta1` (the controller starts only then,
    /// spec/workloadspread.md §6.1).
    pub workload_spreads: bool,
    /// The ContainerRecreateRequest CRD is served, at `apps.kruise.io/v1beta1` or `v1alpha1` (the Job sidecar
    /// terminator starts, and the CRR webhook is registered, only then).
    pub container_recreate_requests: bool,
}

impl Served {
    /// Everything served (standalone, tests).
    pub const ALL: Self = Self {
        sidecar_sets: true,
        pod_unavailable_budgets: true,
        workload_spreads: true,
        container_recreate_requests: true,
    };

    fn has(self, kind: RequiredKind) -> bool {
        match kind {
            RequiredKind::SidecarSet => self.sidecar_sets,
            RequiredKind::PodUnavailableBudget => self.pod_unavailable_budgets,
            RequiredKind::ContainerRecreateRequest => self.container_recreate_requests,
        }
    }
}

impl Handler {
    /// The webhook's registration.
    pub fn spec(self) -> &'static WebhookSpec {
        WEBHOOKS
            .iter()
            .find(|w| w.handler == self)
            .unwrap_or(&WEBHOOKS[0])
    }
}

/// `sideEffects`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideEffects {
    /// `None`: the webhook writes nothing.
    None,
    /// `NoneOnDryRun`: it writes status in the admission path, and nothing for a dry run (DECISIONS 2).
    NoneOnDryRun,
}

impl SideEffects {
    /// The configuration's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::NoneOnDryRun => "NoneOnDryRun",
        }
    }
}

/// `failurePolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Deny when the webhook cannot be reached.
    Fail,
    /// Admit when the webhook cannot be reached.
    Ignore,
}

/// One rule of a webhook registration.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// `apiGroups`.
    pub groups: &'static [&'static str],
    /// `apiVersions`.
    pub versions: &'static [&'static str],
    /// `resources` (with `/subresource` where one is meant).
    pub resources: &'static [&'static str],
    /// `operations`.
    pub operations: &'static [Operation],
}

/// One webhook of the shipped configurations.
#[derive(Debug, Clone, Copy)]
pub struct WebhookSpec {
    /// The webhook's name in the configuration (`vnamespace.kb.io`).
    pub name: &'static str,
    /// The path the configuration calls.
    pub path: &'static str,
    /// Other spellings of the path that are served too (DECISIONS 3).
    pub alt_paths: &'static [&'static str],
    /// Mutating (true) or validating.
    pub mutating: bool,
    /// The handler.
    pub handler: Handler,
    /// The rules.
    pub rules: &'static [Rule],
    /// `failurePolicy`.
    pub failure_policy: FailurePolicy,
    /// `sideEffects`.
    pub side_effects: SideEffects,
    /// objectSelector `policy.kruise.io/delete-protection Exists`.
    pub delete_protection_scoped: bool,
    /// The feature gate without which the path is not served, if any.
    pub gate: Option<&'static str>,
    /// The kind the cluster must serve for the path to be served, if any.
    pub requires: Option<RequiredKind>,
    /// namespaceSelector excluding kube-system and our namespace (DECISIONS 2); cluster-scoped kinds have none.
    pub excludes_system_namespaces: bool,
}

const DELETE: &[Operation] = &[Operation::Delete];

const fn deletion(
    name: &'static str,
    path: &'static str,
    alt_paths: &'static [&'static str],
    handler: Handler,
    rules: &'static [Rule],
    gate: Option<&'static str>,
) -> WebhookSpec {
    WebhookSpec {
        name,
        path,
        alt_paths,
        mutating: false,
        handler,
        rules,
        failure_policy: FailurePolicy::Ignore,
        side_effects: SideEffects::None,
        delete_protection_scoped: true,
        gate,
        requires: None,
        excludes_system_namespaces: true,
    }
}

const CREATE: &[Operation] = &[Operation::Create];
const CREATE_UPDATE: &[Operation] = &[Operation::Create, Operation::Update];
/// SidecarSet CREATE and UPDATE in both served versions: defaulting and validation register the same rules.
const SIDECARSET_RULES: &[Rule] = &[Rule {
    groups: &["apps.kruise.io"],
    versions: &["v1alpha1", "v1beta1"],
    resources: &["sidecarsets"],
    operations: CREATE_UPDATE,
}];

const fn rule(
    groups: &'static [&'static str],
    versions: &'static [&'static str],
    resources: &'static [&'static str],
) -> Rule {
    Rule {
        groups,
        versions,
        resources,
        operations: DELETE,
    }
}

/// Every webhook this version registers, mutating first, in the order the chain runs them.
pub static WEBHOOKS: &[WebhookSpec] = &[
    WebhookSpec {
        name: "mpod.kb.io",
        path: "/mutate-pod",
        alt_paths: &[],
        mutating: true,
        handler: Handler::PodMutate,
        rules: &[Rule {
            groups: &[""],
            versions: &["v1"],
            resources: &["pods"],
            operations: CREATE,
        }],
        failure_policy: FailurePolicy::Fail,
        // The WorkloadSpread step records the pod's subset in the WorkloadSpread status (DECISIONS 2).
        side_effects: SideEffects::NoneOnDryRun,
        delete_protection_scoped: false,
        gate: Some(POD_WEBHOOK),
        requires: Some(RequiredKind::SidecarSet),
        excludes_system_namespaces: true,
    },
    WebhookSpec {
        name: "vpod.kb.io",
        path: "/validate-pod",
        alt_paths: &[],
        mutating: false,
        handler: Handler::PodValidate,
        rules: &[
            Rule {
                groups: &[""],
                versions: &["v1"],
                resources: &["pods"],
                operations: &[Operation::Update, Operation::Delete],
            },
            // DECISIONS 6: resizes through the subresource are gated like other in-place resizes.
            Rule {
                groups: &[""],
                versions: &["v1"],
                resources: &["pods/resize"],
                operations: &[Operation::Update],
            },
        ],
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::NoneOnDryRun,
        delete_protection_scoped: false,
        gate: Some(POD_WEBHOOK),
        requires: Some(RequiredKind::PodUnavailableBudget),
        excludes_system_namespaces: true,
    },
    WebhookSpec {
        name: "vpodeviction.kb.io",
        path: "/validate-pod",
        alt_paths: &[],
        mutating: false,
        handler: Handler::PodValidate,
        rules: &[Rule {
            groups: &[""],
            versions: &["v1"],
            resources: &["pods/eviction"],
            operations: CREATE,
        }],
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::NoneOnDryRun,
        delete_protection_scoped: false,
        gate: Some(POD_WEBHOOK),
        requires: Some(RequiredKind::PodUnavailableBudget),
        excludes_system_namespaces: true,
    },
    WebhookSpec {
        name: "msidecarset.kb.io",
        path: "/mutate-apps-kruise-io-sidecarset",
        alt_paths: &["/mutate-apps-kruise-io-v1alpha1-sidecarset"],
        mutating: true,
        handler: Handler::SidecarSetDefault,
        rules: SIDECARSET_RULES,
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::None,
        delete_protection_scoped: false,
        gate: None,
        requires: None,
        excludes_system_namespaces: false,
    },
    WebhookSpec {
        name: "vsidecarset.kb.io",
        path: "/validate-apps-kruise-io-sidecarset",
        alt_paths: &["/validate-apps-kruise-io-v1alpha1-sidecarset"],
        mutating: false,
        handler: Handler::SidecarSetValidate,
        rules: SIDECARSET_RULES,
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::None,
        delete_protection_scoped: false,
        gate: None,
        requires: None,
        excludes_system_namespaces: false,
    },
    // Both served versions (OpenKruise 1.8.3's rule has v1alpha1 only, master's both); both path spellings
    // (1.8.3's `-v1alpha1-`, DECISIONS 3). Namespaced: kube-system and our namespace excluded (DECISIONS 2).
    // Registered only while the CRR CRD is served; refuses everything itself while KruiseDaemon is off.
    WebhookSpec {
        name: "mcontainerrecreaterequest.kb.io",
        path: "/mutate-apps-kruise-io-containerrecreaterequest",
        alt_paths: &["/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest"],
        mutating: true,
        handler: Handler::ContainerRecreateRequestMutate,
        rules: &[Rule {
            groups: &["apps.kruise.io"],
            versions: &["v1alpha1", "v1beta1"],
            resources: &["containerrecreaterequests"],
            operations: CREATE_UPDATE,
        }],
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::None,
        delete_protection_scoped: false,
        gate: None,
        requires: Some(RequiredKind::ContainerRecreateRequest),
        excludes_system_namespaces: true,
    },
    deletion(
        "vnamespace.kb.io",
        "/validate-namespace",
        &[],
        Handler::Namespace,
        &[rule(&[""], &["v1"], &["namespaces"])],
        None,
    ),
    deletion(
        "vcustomresourcedefinition.kb.io",
        "/validate-customresourcedefinition",
        &[],
        Handler::CustomResourceDefinition,
        &[rule(
            &["apiextensions.k8s.io"],
            &["v1", "v1beta1"],
            &["customresourcedefinitions"],
        )],
        None,
    ),
    deletion(
        "vbuiltindeployment.kb.io",
        "/validate-apps-deployment",
        &[],
        Handler::Deployment,
        &[rule(&["apps"], &["v1"], &["deployments"])],
        None,
    ),
    deletion(
        "vbuiltinreplicaset.kb.io",
        "/validate-apps-replicaset",
        &[],
        Handler::ReplicaSet,
        &[rule(&["apps"], &["v1"], &["replicasets"])],
        None,
    ),
    deletion(
        "vbuiltinstatefulset.kb.io",
        "/validate-apps-statefulset",
        &[],
        Handler::StatefulSet,
        &[rule(&["apps"], &["v1"], &["statefulsets"])],
        None,
    ),
    deletion(
        "vservice.kb.io",
        "/validate-service",
        &[],
        Handler::Service,
        &[rule(&[""], &["v1"], &["services"])],
        Some(RESOURCES_DELETION_PROTECTION),
    ),
    deletion(
        "vingress.kb.io",
        "/validate-ingress",
        &[],
        Handler::Ingress,
        &[rule(
            &["networking.k8s.io"],
            &["v1", "v1beta1"],
            &["ingresses"],
        )],
        Some(RESOURCES_DELETION_PROTECTION),
    ),
    deletion(
        "vcloneset.kb.io",
        "/validate-apps-kruise-io-cloneset",
        &["/validate-apps-kruise-io-v1alpha1-cloneset"],
        Handler::CloneSet,
        &[rule(
            &["apps.kruise.io"],
            &["v1alpha1", "v1beta1"],
            &["clonesets"],
        )],
        None,
    ),
    deletion(
        "vstatefulset.kb.io",
        "/validate-apps-kruise-io-statefulset",
        &[],
        Handler::AdvancedStatefulSet,
        &[rule(
            &["apps.kruise.io"],
            &["v1alpha1", "v1beta1"],
            &["statefulsets"],
        )],
        None,
    ),
    deletion(
        "vuniteddeployment.kb.io",
        "/validate-apps-kruise-io-uniteddeployment",
        &["/validate-apps-kruise-io-v1alpha1-uniteddeployment"],
        Handler::UnitedDeployment,
        &[rule(
            &["apps.kruise.io"],
            &["v1alpha1", "v1beta1"],
            &["uniteddeployments"],
        )],
        None,
    ),
    // Always registered: it refuses everything itself while both PUB gates are off (spec §3). Both served
    // versions in the rule (spec §10.6: the chart's v1alpha1-only rule leaves v1beta1 fields unchecked).
    // Namespaced: kube-system and our namespace are excluded like the pod webhooks' (DECISIONS 2).
    WebhookSpec {
        name: "vpodunavailablebudget.kb.io",
        path: "/validate-policy-kruise-io-podunavailablebudget",
        alt_paths: &[],
        mutating: false,
        handler: Handler::PodUnavailableBudgetValidate,
        rules: &[Rule {
            groups: &["policy.kruise.io"],
            versions: &["v1alpha1", "v1beta1"],
            resources: &["podunavailablebudgets"],
            operations: CREATE_UPDATE,
        }],
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::None,
        delete_protection_scoped: false,
        gate: None,
        requires: None,
        excludes_system_namespaces: true,
    },
    // Always registered: it refuses everything itself while gate WorkloadSpread is off (spec §7). Both served
    // versions; the v1.9.0 path spelling is served too (spec/webhook-server.md). Namespaced: kube-system and our
    // namespace are excluded like the other validators (DECISIONS 2).
    WebhookSpec {
        name: "vworkloadspread.kb.io",
        path: "/validate-apps-kruise-io-workloadspread",
        alt_paths: &["/validate-apps-kruise-io-v1alpha1-workloadspread"],
        mutating: false,
        handler: Handler::WorkloadSpreadValidate,
        rules: &[Rule {
            groups: &["apps.kruise.io"],
            versions: &["v1alpha1", "v1beta1"],
            resources: &["workloadspreads"],
            operations: CREATE_UPDATE,
        }],
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::None,
        delete_protection_scoped: false,
        gate: None,
        requires: None,
        excludes_system_namespaces: true,
    },
    // Always registered, as OpenKruise does (docs/persistentpodstate.md §2.1): both served versions, failurePolicy
    // Fail as OpenKruise ships it. Namespaced: kube-system and our namespace are excluded (DECISIONS 2). Not
    // in the beside-OpenKruise overlay: kruise-manager keeps its own there.
    WebhookSpec {
        name: "vpersistentpodstate.kb.io",
        path: "/validate-apps-kruise-io-persistentpodstate",
        alt_paths: &[],
        mutating: false,
        handler: Handler::PersistentPodStateValidate,
        rules: &[Rule {
            groups: &["apps.kruise.io"],
            versions: &["v1alpha1", "v1beta1"],
            resources: &["persistentpodstates"],
            operations: CREATE_UPDATE,
        }],
        failure_policy: FailurePolicy::Fail,
        side_effects: SideEffects::None,
        delete_protection_scoped: false,
        gate: None,
        requires: None,
        excludes_system_namespaces: true,
    },
];

/// The path of the CRD conversion webhook (DECISIONS 16).
pub const CONVERT_PATH: &str = "/convert";

/// Every admission path served with these gates, both spellings, each once, with its (first) webhook.
/// Webhooks sharing a path share its handler (`vpod.kb.io` and `vpodeviction.kb.io`).
pub fn routes(gates: &FeatureGates, served: Served) -> Vec<(&'static str, &'static WebhookSpec)> {
    let mut routes: Vec<(&'static str, &'static WebhookSpec)> = Vec::new();
    for w in WEBHOOKS
        .iter()
        .filter(|w| w.gate.is_none_or(|g| gates.enabled(g)))
        .filter(|w| w.requires.is_none_or(|k| served.has(k)))
    {
        for path in std::iter::once(w.path).chain(w.alt_paths.iter().copied()) {
            if !routes.iter().any(|(p, _)| *p == path) {
                routes.push((path, w));
            }
        }
    }
    routes
}

/// Every webhook registered with these gates (each once; several may share a path).
pub fn registered(gates: &FeatureGates, served: Served) -> Vec<&'static WebhookSpec> {
    WEBHOOKS
        .iter()
        .filter(|w| w.gate.is_none_or(|g| gates.enabled(g)))
        .filter(|w| w.requires.is_none_or(|k| served.has(k)))
        .collect()
}

impl WebhookSpec {
    /// The shipped namespaceSelector: kube-system and our own namespace excluded (none for cluster-scoped kinds).
    pub fn namespace_selector(&self) -> LabelSelector {
        if !self.excludes_system_namespaces {
            return LabelSelector::default();
        }
        LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "kubernetes.io/metadata.name".into(),
                operator: "NotIn".into(),
                values: Some(EXCLUDED_NAMESPACES.iter().map(|s| s.to_string()).collect()),
            }]),
            match_labels: None,
        }
    }

    /// The shipped objectSelector.
    pub fn object_selector(&self) -> LabelSelector {
        if self.delete_protection_scoped {
            LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: DELETE_PROTECTION_LABEL.into(),
                    operator: "Exists".into(),
                    values: None,
                }]),
                match_labels: None,
            }
        } else {
            LabelSelector::default()
        }
    }

    /// Whether the rules match a request (group, version, resource/subresource, operation).
    pub fn rules_match(&self, req: &AdmissionRequest) -> bool {
        let resource = if req.sub_resource.is_empty() {
            req.resource.resource.clone()
        } else {
            format!("{}/{}", req.resource.resource, req.sub_resource)
        };
        self.rules.iter().any(|r| {
            r.operations.contains(&req.operation)
                && r.groups
                    .iter()
                    .any(|g| *g == "*" || *g == req.resource.group)
                && r.versions
                    .iter()
                    .any(|v| *v == "*" || *v == req.resource.version)
                && r.resources.iter().any(|x| *x == "*" || *x == resource)
        })
    }

    /// Whether the apiserver would call this webhook for the request, and if not why ([`Call`]): rules, then
    /// the namespaceSelector (against `namespace_labels`, the labels of the request's namespace or of the
    /// Namespace object itself; `None` for cluster-scoped objects, which it always matches) and the
    /// objectSelector (old or new object).
    pub fn call(
        &self,
        req: &AdmissionRequest,
        namespace_labels: Option<&BTreeMap<String, String>>,
    ) -> Call {
        self.call_with(
            req,
            namespace_labels,
            &self.namespace_selector(),
            &self.object_selector(),
        )
    }

    /// [`WebhookSpec::call`] with the selectors of a configuration as installed (an absent one is `{}`, as
    /// the apiserver defaults it) instead of the shipped ones; the rules stay the shipped ones.
    pub fn call_with(
        &self,
        req: &AdmissionRequest,
        namespace_labels: Option<&BTreeMap<String, String>>,
        ns_selector: &LabelSelector,
        object_selector: &LabelSelector,
    ) -> Call {
        if !self.rules_match(req) {
            return Call::Rules;
        }
        if let Some(labels) = namespace_labels
            && let Some(miss) = selector::first_miss(ns_selector, labels)
        {
            return Call::NamespaceSelector(miss.to_mismatch());
        }
        // The apiserver's MatchObjectSelector: an empty selector matches every request, objects or not;
        // any other is matched against the object and the old object, and an absent one matches nothing.
        if *object_selector == LabelSelector::default() {
            return Call::Called;
        }
        let labels = req.object_labels();
        let mut first = None;
        for l in labels.iter().flatten() {
            match selector::first_miss(object_selector, l) {
                None => return Call::Called,
                Some(miss) => {
                    first.get_or_insert_with(|| miss.to_mismatch());
                }
            }
        }
        Call::ObjectSelector(first)
    }

    /// Whether the apiserver would call this webhook for the request ([`WebhookSpec::call`] is
    /// [`Call::Called`]).
    pub fn would_call(
        &self,
        req: &AdmissionRequest,
        namespace_labels: Option<&BTreeMap<String, String>>,
    ) -> bool {
        self.call(req, namespace_labels) == Call::Called
    }
}

/// Whether the apiserver calls a webhook for a request, and if not the first reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// It calls it.
    Called,
    /// The rules do not cover the operation and resource.
    Rules,
    /// The first namespaceSelector requirement the namespace's labels fail.
    NamespaceSelector(selector::Mismatch),
    /// The first objectSelector requirement the object's labels fail (`None`: no object to match).
    ObjectSelector(Option<selector::Mismatch>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::FeatureGates;

    #[test]
    fn both_spellings_are_served_and_gated_paths_follow_their_gate() {
        let on: Vec<_> = routes(&FeatureGates::default(), Served::ALL)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        for p in [
            "/validate-apps-kruise-io-cloneset",
            "/validate-apps-kruise-io-v1alpha1-cloneset",
            "/validate-service",
        ] {
            assert!(on.contains(&p), "{p}");
        }
        let off = FeatureGates::parse("ResourcesDeletionProtection=false").unwrap();
        let off: Vec<_> = routes(&off, Served::ALL)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert!(!off.contains(&"/validate-service") && !off.contains(&"/validate-ingress"));
        assert!(
            off.contains(&"/validate-namespace"),
            "always registered, allows when the gate is off"
        );
    }

    #[test]
    fn webhooks_sharing_a_path_share_its_handler() {
        for w in WEBHOOKS {
            assert_eq!(w.handler.spec().handler, w.handler);
            for other in WEBHOOKS.iter().filter(|o| o.path == w.path) {
                assert_eq!(other.handler, w.handler, "{} and {}", w.name, other.name);
            }
        }
        let paths: Vec<_> = routes(&FeatureGates::default(), Served::ALL)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            paths.iter().filter(|p| **p == "/validate-pod").count(),
            1,
            "one route per path"
        );
    }

    #[test]
    fn the_crr_webhook_is_served_only_with_its_crd() {
        let paths = |served: Served| -> Vec<&str> {
            routes(&FeatureGates::default(), served)
                .into_iter()
                .map(|(p, _)| p)
                .collect()
        };
        let crr = [
            "/mutate-apps-kruise-io-containerrecreaterequest",
            "/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest",
        ];
        let all = paths(Served::ALL);
        assert!(crr.iter().all(|p| all.contains(p)));
        let without = paths(Served {
            container_recreate_requests: false,
            ..Served::ALL
        });
        assert!(crr.iter().all(|p| !without.contains(p)));
        assert!(without.contains(&"/mutate-pod"));
    }

    /// A request for `resource` (core group) with `operation` and neither object nor old object.
    fn without_objects(resource: &str, operation: &str) -> AdmissionRequest {
        serde_json::from_value(serde_json::json!({
            "uid": "u", "operation": operation, "name": "x", "namespace": "default",
            "kind": {"group": "", "version": "v1", "kind": "X"},
            "resource": {"group": "", "version": "v1", "resource": resource},
            "userInfo": {}
        }))
        .unwrap()
    }

    #[test]
    fn an_empty_object_selector_calls_without_objects_a_scoped_one_does_not() {
        let pod = Handler::PodMutate.spec();
        assert!(pod.would_call(&without_objects("pods", "CREATE"), None));
        let service = WEBHOOKS
            .iter()
            .find(|w| {
                w.delete_protection_scoped && w.rules_match(&without_objects("services", "DELETE"))
            })
            .unwrap();
        assert!(!service.would_call(&without_objects("services", "DELETE"), None));
    }
}
