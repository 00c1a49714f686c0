//! `kruise-webhook explain`: why the webhooks would (not) act on a pod (docs/explain.md).
//!
//! File mode: the pod (or a workload's pod template, turned into the pod its controller would create) and the
//! cluster state as `review` loads them. It runs the `review` chain for what happens (injected SidecarSets, the
//! WorkloadSpread subset, what a deletion or eviction would answer) and the webhooks crate's matchers for why
//! ([`WebhookSpec::call`], [`explain::selection`]). It decides nothing of its own.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_webhooks::ClusterView;
use kruise_webhooks::admission::{self, AdmissionResponse, AdmissionReview};
use kruise_webhooks::api::podunavailablebudget::{
    DEPRECATED_RELATED_PUB_ANNOTATION, RELATED_PUB_ANNOTATION,
};
use kruise_webhooks::api::sidecarset::HASH_ANNOTATION;
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::json::patch;
use kruise_webhooks::launch_priority;
use kruise_webhooks::pod::INJECTED_AUDIT_ANNOTATION;
use kruise_webhooks::podunavailablebudget::related;
use kruise_webhooks::registry::{self, Call};
use kruise_webhooks::selector::{Mismatch, WithLabel};
use kruise_webhooks::sidecarset::explain::{self, Selection};
use kruise_webhooks::sidecarset::inject::INJECTED_LIST_ANNOTATION;
use kruise_webhooks::sidecarset::select::NAMESPACE_NAME_LABEL;
use kruise_webhooks::verdict::StatusIntent;
use kruise_webhooks::view::{PodUnavailableBudgetView, SidecarSetView, WorkloadSpreadView};
use kruise_webhooks::{FeatureGates, api::workloadspread::WorkloadSpread};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cache;
use crate::cli::ExplainOutput;
use crate::config::{ExplainConfig, ExplainLiveConfig};
use crate::review::{self, ReviewError};

pub mod live;

use live::{LiveError, LiveOptions, LiveTarget};

/// Input that cannot be explained; printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// Bad `--objects` or `--pod`.
    #[error(transparent)]
    Input(#[from] ReviewError),
    /// Bad `--objects`.
    #[error(transparent)]
    Objects(#[from] cache::LoadError),
    /// The object has no pod to explain.
    #[error("{0}")]
    NoPod(String),
    /// Live mode: the target not found, a read refused, the API server unreachable, no kubeconfig.
    #[error(transparent)]
    Live(#[from] LiveError),
}

/// Which webhook configurations are taken as installed (docs/explain.md §1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// The ones shipped in `deploy/base` (files, and `--objects` without any configuration).
    Shipped,
    /// Every Mutating/ValidatingWebhookConfiguration among `--objects`.
    Objects,
    /// Live: exactly the two read by name (absent ones have no webhook), never OpenKruise's or another's.
    Live {
        /// `--mutating-webhook-configuration-name`.
        mutating: String,
        /// `--validating-webhook-configuration-name`.
        validating: String,
    },
}

impl Installed {
    /// File mode: [`Installed::Objects`] when `--objects` holds a webhook configuration, else the shipped ones.
    pub fn of_objects(cluster: &FixtureCluster) -> Self {
        let any = cluster.objects().iter().any(|o| {
            matches!(
                o.get("kind").and_then(Value::as_str),
                Some("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration")
            )
        });
        if any { Self::Objects } else { Self::Shipped }
    }

    /// Why a webhook none of the configurations has is not called, as the text says it.
    fn not_installed(&self) -> String {
        match self {
            Self::Live {
                mutating,
                validating,
            } => format!("not called: notInstalled: neither {mutating} nor {validating} has it"),
            _ => {
                "not called: notInstalled: no webhook configuration in --objects has it".to_owned()
            }
        }
    }
}

/// Which pod is explained.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PodRef {
    /// Its namespace (`default` when the input has none).
    pub namespace: String,
    /// Its name, or the `generateName` of a template's pod.
    pub name: String,
    /// `Pod`, or the workload kind whose template it is.
    pub from: String,
}

/// Whether the apiserver would call a webhook for one request about the pod.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WebhookLine {
    /// The webhook's name in its configuration.
    pub name: String,
    /// `CREATE` or `DELETE`.
    pub operation: String,
    /// `pods` or `pods/eviction`.
    pub resource: String,
    /// Whether it is called.
    pub called: bool,
    /// `namespaceSelector` or `objectSelector` when not called.
    pub reason: Option<String>,
    /// The requirement that failed.
    pub detail: Option<Mismatch>,
    /// The text line's last part.
    pub message: String,
}

/// What a SidecarSet does to the pod, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetLine {
    /// The SidecarSet.
    pub name: String,
    /// Whether its sidecars went in.
    pub injected: bool,
    /// `injected`, or the first reason not (docs/explain.md scenarios 5-12).
    pub reason: String,
    /// The label requirement that failed, for `namespaceSelector` and `selector`.
    pub detail: Option<Mismatch>,
    /// The ControllerRevision injected, `null` for the latest spec.
    pub revision: Option<String>,
    /// The pod already named it in `kruise.io/sidecarset-injected-list`.
    pub already_injected: bool,
    /// Pod containers of the same name that its sidecars replace.
    pub replaces_containers: Vec<String>,
    /// The text line's last part.
    pub message: String,
}

/// What the PUB gate answers for a disruption.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// Allowed or denied.
    pub allowed: bool,
    /// The denial's message.
    pub message: Option<String>,
}

/// The PodUnavailableBudget guarding the pod.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BudgetLine {
    /// The PUB.
    pub name: String,
    /// `status.unavailableAllowed`.
    pub unavailable_allowed: i32,
    /// `status.currentAvailable`.
    pub current_available: i32,
    /// `status.desiredAvailable`.
    pub desired_available: i32,
    /// What a DELETE of the pod would get (`null` for a template's pod).
    pub deletion: Option<Answer>,
    /// What an eviction would get (`null` for a template's pod).
    pub eviction: Option<Answer>,
    /// Whether the PUB gates the pod's disruptions: false for a stored pod without
    /// `pub.kruise.io/related-pub` (mpod.kb.io writes it at admission; the gate reads nothing else).
    pub guards: bool,
    /// The text line's last part.
    pub message: String,
}

/// Room left in one WorkloadSpread subset.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SubsetRoom {
    /// The subset.
    pub name: String,
    /// `missingReplicas` of its status: pods it still takes, `null` without `maxReplicas` (unlimited) or
    /// when the status does not count the subset yet.
    pub room: Option<i32>,
    /// Whether the status counts the subset (the WorkloadSpread controller has seen it).
    pub counted: bool,
}

/// The WorkloadSpread subset a new pod would get.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SpreadLine {
    /// The WorkloadSpread.
    pub name: String,
    /// The subset chosen.
    pub subset: String,
    /// Every subset's room left, in spec order.
    pub subsets: Vec<SubsetRoom>,
    /// The text line's last part.
    pub message: String,
}

/// What the pod create itself gets from the whole chain.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CreateLine {
    /// Allowed or denied.
    pub allowed: bool,
    /// The denial's message.
    pub message: Option<String>,
}

/// Launch priority or native-sidecar conversion, when the CREATE chain applied it (scenarios 17, 18).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ContainersLine {
    /// The containers concerned, in the pod's order (launch priority: `name` and the barrier key it waits on).
    pub containers: Vec<Value>,
    /// The text line's last part.
    pub message: String,
}

/// The whole explanation (`-o json`, docs/explain.md §2.2).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The pod.
    pub pod: PodRef,
    /// What the create gets.
    pub create: CreateLine,
    /// Each webhook whose rules cover the pod, per request.
    pub webhooks: Vec<WebhookLine>,
    /// Every SidecarSet, by name.
    pub sidecar_sets: Vec<SidecarSetLine>,
    /// The PUB guarding the pod, if any.
    pub pod_unavailable_budget: Option<BudgetLine>,
    /// The WorkloadSpread placing the pod, if any.
    pub workload_spread: Option<SpreadLine>,
    /// Container launch priority, when it applies.
    pub launch_priority: Option<ContainersLine>,
    /// Native-sidecar conversion, when it applies.
    pub native_sidecar: Option<ContainersLine>,
}

impl Explanation {
    /// The text form: one line a decision.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(format!(
            "pod {}/{} (from {}): create {}",
            self.pod.namespace,
            self.pod.name,
            self.pod.from,
            match (&self.create.allowed, &self.create.message) {
                (true, _) => "allowed".to_owned(),
                (false, m) => format!("denied: {}", m.as_deref().unwrap_or("")),
            }
        ));
        for w in &self.webhooks {
            line(format!(
                "webhook {} {} {}: {}",
                w.name, w.operation, w.resource, w.message
            ));
        }
        for s in &self.sidecar_sets {
            line(format!("sidecarset {}: {}", s.name, s.message));
        }
        match &self.pod_unavailable_budget {
            Some(b) => line(format!("podunavailablebudget {}: {}", b.name, b.message)),
            None => line("podunavailablebudget: none guards the pod".to_owned()),
        }
        match &self.workload_spread {
            Some(w) => line(format!("workloadspread {}: {}", w.name, w.message)),
            None => line("workloadspread: none places the pod".to_owned()),
        }
        if let Some(l) = &self.launch_priority {
            line(format!("launchpriority: {}", l.message));
        }
        if let Some(n) = &self.native_sidecar {
            line(format!("nativesidecar: {}", n.message));
        }
        out
    }
}

/// The kinds whose pod template is explained, by `apiVersion` group and kind.
fn template_of(value: &Value) -> Option<&Value> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    match (group, kind) {
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet")
        | ("batch", "Job")
        | ("apps.kruise.io", "CloneSet" | "StatefulSet") => value.pointer("/spec/template"),
        _ => None,
    }
}

/// Revision annotation the Deployment controller sets on its ReplicaSets.
const DEPLOYMENT_REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// The newest ReplicaSet of `cluster` the Deployment `deployment` controls (an owner reference with
/// `controller: true` naming it: by uid, or by name when either side has no uid), by the
/// `deployment.kubernetes.io/revision` annotation: the one its new pods come from.
fn newest_replica_set<'c>(cluster: &'c FixtureCluster, deployment: &Value) -> Option<&'c Value> {
    let text = |v: &'c Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
    let namespace = deployment
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let name = deployment
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let uid = deployment
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    cluster
        .objects()
        .iter()
        .map(|o| o.as_ref())
        .filter(|rs| {
            text(rs, "/apiVersion") == "apps/v1"
                && text(rs, "/kind") == "ReplicaSet"
                && match text(rs, "/metadata/namespace") {
                    "" => "default",
                    ns => ns,
                } == namespace
                && rs
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|r| {
                        let ref_uid = text(r, "/uid");
                        r.get("controller").and_then(Value::as_bool) == Some(true)
                            && text(r, "/kind") == "Deployment"
                            && text(r, "/apiVersion").starts_with("apps/")
                            && if uid.is_empty() || ref_uid.is_empty() {
                                text(r, "/name") == name
                            } else {
                                ref_uid == uid
                            }
                    })
        })
        .max_by_key(|rs| {
            let revision: u64 = rs
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(DEPLOYMENT_REVISION_ANNOTATION))
                .and_then(Value::as_str)
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            (revision, text(rs, "/metadata/name"))
        })
}

/// The pod to explain: the input Pod, or the pod a workload's controller would create from its template
/// (docs/explain.md §1): the template's metadata, the workload's namespace, `generateName: <name>-`, and a
/// controller owner reference. A Deployment's pods are owned by its ReplicaSet: the newest one `cluster` holds
/// ([`newest_replica_set`]), else one named `<name>-explain` that is not in the cluster state.
pub fn pod_of(value: &Value, cluster: &FixtureCluster) -> Result<(Value, PodRef), ExplainError> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let str_at = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let namespace = str_at(value, "/metadata/namespace")
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    if kind == "Pod" {
        let mut pod = value.clone();
        if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("namespace".into(), json!(namespace));
        }
        let name = str_at(&pod, "/metadata/name")
            .or_else(|| str_at(&pod, "/metadata/generateName"))
            .unwrap_or_default();
        return Ok((
            pod,
            PodRef {
                namespace,
                name,
                from: "Pod".into(),
            },
        ));
    }
    let Some(template) = template_of(value) else {
        return Err(ExplainError::NoPod(format!(
            "a {} has no pod to explain (want a Pod, Deployment, ReplicaSet, StatefulSet, Job, CloneSet or Advanced StatefulSet)",
            if kind.is_empty() {
                "document without kind"
            } else {
                kind
            }
        )));
    };
    let name = str_at(value, "/metadata/name").unwrap_or_default();
    let uid = str_at(value, "/metadata/uid").unwrap_or_default();
    let api_version = str_at(value, "/apiVersion").unwrap_or_default();
    let owner = if kind == "Deployment" {
        let (rs_name, rs_uid) = match newest_replica_set(cluster, value) {
            Some(rs) => (
                str_at(rs, "/metadata/name").unwrap_or_default(),
                str_at(rs, "/metadata/uid").unwrap_or_default(),
            ),
            None => (format!("{name}-explain"), String::new()),
        };
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name,
               "uid": rs_uid, "controller": true, "blockOwnerDeletion": true})
    } else {
        json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
               "controller": true, "blockOwnerDeletion": true})
    };
    let generate_name = format!("{name}-");
    let mut metadata = json!({
        "generateName": generate_name,
        "namespace": namespace,
        "ownerReferences": [owner],
    });
    for key in ["labels", "annotations"] {
        if let Some(v) = template.pointer(&format!("/metadata/{key}")) {
            metadata[key] = v.clone();
        }
    }
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    Ok((
        pod,
        PodRef {
            namespace,
            name: generate_name,
            from: kind.to_owned(),
        },
    ))
}

/// An AdmissionReview about the pod: a CREATE of it, a DELETE of it, or a CREATE of its eviction.
fn review_for(pod: &Value, at: &PodRef, operation: &str) -> Option<AdmissionReview> {
    let (sub, object, old) = match operation {
        "CREATE" => ("", Some(pod.clone()), None),
        "DELETE" => ("", None, Some(pod.clone())),
        _ => (
            "eviction",
            Some(json!({"apiVersion": "policy/v1", "kind": "Eviction",
                        "metadata": {"name": at.name, "namespace": at.namespace}})),
            None,
        ),
    };
    let kind = if sub.is_empty() {
        json!({"group": "", "version": "v1", "kind": "Pod"})
    } else {
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    };
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("explain-{}-{}", at.name, operation),
            "kind": kind,
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "subResource": sub,
            "name": if operation == "CREATE" && sub.is_empty() { "" } else { at.name.as_str() },
            "namespace": at.namespace,
            "operation": if sub.is_empty() { operation } else { "CREATE" },
            "userInfo": {"username": "kruise-webhook-explain"},
            "object": object,
            "oldObject": old,
            "options": if operation == "DELETE" {
                json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"})
            } else {
                json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"})
            },
        }
    });
    admission::decode_review(&serde_json::to_vec(&review).ok()?).ok()
}

/// The webhooks of the installed configurations, by name, with their namespaceSelector and objectSelector
/// (`{}` when absent, as the apiserver defaults them); `None` for the shipped ones.
fn installed_webhooks(
    cluster: &FixtureCluster,
    installed: &Installed,
) -> Option<BTreeMap<String, (LabelSelector, LabelSelector)>> {
    let ours = |kind: &str, name: &str| match installed {
        Installed::Shipped => false,
        Installed::Objects => matches!(
            kind,
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"
        ),
        Installed::Live {
            mutating,
            validating,
        } => {
            (kind == "MutatingWebhookConfiguration" && name == mutating)
                || (kind == "ValidatingWebhookConfiguration" && name == validating)
        }
    };
    if *installed == Installed::Shipped {
        return None;
    }
    let mut out = BTreeMap::new();
    for obj in cluster.objects() {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !ours(kind, name) {
            continue;
        }
        for w in obj
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let selector = |key: &str| {
                w.get(key)
                    .and_then(|v| serde_json::from_value::<LabelSelector>(v.clone()).ok())
                    .unwrap_or_default()
            };
            if let Some(name) = w.get("name").and_then(Value::as_str) {
                out.insert(
                    name.to_owned(),
                    (selector("namespaceSelector"), selector("objectSelector")),
                );
            }
        }
    }
    Some(out)
}

/// Whether the apiserver calls each of our webhooks, by the configurations taken as installed (read once, for
/// the webhook lines and for every chain run).
struct Calls {
    /// The installed webhooks' selectors, by name; `None`: the shipped configurations.
    installed: Option<BTreeMap<String, (LabelSelector, LabelSelector)>>,
    /// What a webhook none of them has is told ([`Installed::not_installed`]).
    not_installed: String,
}

impl Calls {
    fn of(cluster: &FixtureCluster, configurations: &Installed) -> Self {
        Self {
            installed: installed_webhooks(cluster, configurations),
            not_installed: configurations.not_installed(),
        }
    }

    /// Whether the apiserver calls `spec` for `request` ([`registry::WebhookSpec::call`] with the installed selectors);
    /// `None` when no configuration taken as installed has it.
    fn call(
        &self,
        spec: &registry::WebhookSpec,
        request: &kruise_webhooks::admission::AdmissionRequest,
        namespace_labels: Option<&BTreeMap<String, String>>,
    ) -> Option<Call> {
        match &self.installed {
            None => Some(spec.call(request, namespace_labels)),
            Some(installed) => installed
                .get(spec.name)
                .map(|(ns, obj)| spec.call_with(request, namespace_labels, ns, obj)),
        }
    }

    /// The webhooks the apiserver calls for `request`, mutating first: the chain to run (with the shipped
    /// configurations, exactly [`review::webhooks_for`]'s).
    fn called(
        &self,
        cluster: &FixtureCluster,
        gates: &FeatureGates,
        request: &kruise_webhooks::admission::AdmissionRequest,
    ) -> Vec<&'static registry::WebhookSpec> {
        let labels = review::namespace_labels(cluster, request);
        let mut specs: Vec<&'static registry::WebhookSpec> = Vec::new();
        for spec in registry::registered(gates, registry::Served::ALL) {
            if !specs.iter().any(|s| s.name == spec.name)
                && self.call(spec, request, labels.as_ref()) == Some(Call::Called)
            {
                specs.push(spec);
            }
        }
        specs.sort_by_key(|s| !s.mutating);
        specs
    }
}

/// Each webhook whose rules cover one of the pod's requests, and whether the apiserver calls it.
fn webhook_lines(
    cluster: &FixtureCluster,
    gates: &FeatureGates,
    requests: &[(&str, &str, &AdmissionReview)],
    calls: &Calls,
) -> Vec<WebhookLine> {
    let mut lines = Vec::new();
    for (operation, resource, review) in requests {
        let labels = review::namespace_labels(cluster, &review.request);
        let mut seen: Vec<&str> = Vec::new();
        let mut specs: Vec<_> = registry::registered(gates, registry::Served::ALL);
        specs.sort_by_key(|s| (!s.mutating, s.name));
        for spec in specs {
            if seen.contains(&spec.name) {
                continue;
            }
            seen.push(spec.name);
            if !spec.rules_match(&review.request) {
                continue;
            }
            let Some(call) = calls.call(spec, &review.request, labels.as_ref()) else {
                lines.push(WebhookLine {
                    name: spec.name.to_owned(),
                    operation: (*operation).to_owned(),
                    resource: (*resource).to_owned(),
                    called: false,
                    reason: Some("notInstalled".to_owned()),
                    detail: None,
                    message: calls.not_installed.clone(),
                });
                continue;
            };
            let (reason, detail, message) = match call {
                Call::Rules => continue,
                Call::Called => (None, None, "called".to_owned()),
                Call::NamespaceSelector(m) => (
                    Some("namespaceSelector"),
                    Some(m.clone()),
                    format!(
                        "not called: namespaceSelector: {}",
                        m.describe("the namespace")
                    ),
                ),
                Call::ObjectSelector(m) => (
                    Some("objectSelector"),
                    m.clone(),
                    format!(
                        "not called: objectSelector: {}",
                        m.map_or_else(|| "no object".to_owned(), |m| m.describe("the pod"))
                    ),
                ),
            };
            lines.push(WebhookLine {
                name: spec.name.to_owned(),
                operation: (*operation).to_owned(),
                resource: (*resource).to_owned(),
                called: reason.is_none(),
                reason: reason.map(str::to_owned),
                detail,
                message,
            });
        }
    }
    lines
}

fn labels_at(pod: &Value, key: &str) -> BTreeMap<String, String> {
    pod.pointer(&format!("/metadata/{key}"))
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default()
}

/// The pod as the CREATE chain leaves it.
fn patched(pod: &Value, response: &AdmissionResponse) -> Value {
    response
        .patch_bytes()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .and_then(|v| patch::from_json(v).ok())
        .and_then(|ops| patch::apply(pod, &ops).ok())
        .unwrap_or_else(|| pod.clone())
}

/// One line per SidecarSet, by name: the first reason from the matcher, what happened from the chain.
fn sidecar_set_lines(
    cluster: &FixtureCluster,
    pod: &Value,
    at: &PodRef,
    created: &AdmissionResponse,
) -> Vec<SidecarSetLine> {
    let pod_labels = labels_at(pod, "labels");
    let annotations = labels_at(pod, "annotations");
    let namespace = cluster.namespace(&at.namespace);
    let namespace_labels = namespace.as_ref().map(|ns| WithLabel {
        labels: ns.metadata.labels.as_ref(),
        added: (NAMESPACE_NAME_LABEL, &at.namespace),
    });
    let injected: Vec<&str> = created
        .audit_annotations
        .get(INJECTED_AUDIT_ANNOTATION)
        .into_iter()
        .flat_map(|v| v.split(','))
        .collect();
    let after = patched(pod, created);
    let hashes: BTreeMap<String, Value> = after
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(HASH_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    let listed: Vec<&str> = annotations
        .get(INJECTED_LIST_ANNOTATION)
        .into_iter()
        .flat_map(|v| v.split(','))
        .collect();
    let pod_containers: Vec<&str> = ["/spec/containers", "/spec/initContainers"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    let sets = cluster.sidecar_sets();
    let selections: Vec<(Arc<_>, Selection)> = sets
        .iter()
        .map(|set| {
            let why =
                explain::selection(set, &at.namespace, &pod_labels, namespace_labels.as_ref());
            (set.clone(), why)
        })
        .collect();
    let mut lines = Vec::new();
    for (set, why) in &selections {
        let name = set.name().to_owned();
        let mut line = SidecarSetLine {
            name: name.clone(),
            injected: false,
            reason: why.key().to_owned(),
            detail: why.mismatch().cloned(),
            revision: None,
            already_injected: listed.contains(&set.name()),
            replaces_containers: Vec::new(),
            message: String::new(),
        };
        if *why != Selection::Selected {
            line.message = format!("not injected: {}", why.message(&at.namespace));
            lines.push(line);
            continue;
        }
        if injected.contains(&set.name()) {
            line.injected = true;
            line.reason = "injected".to_owned();
            line.revision = hashes
                .get(set.name())
                .and_then(|e| e.get("controllerRevision"))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .map(str::to_owned);
            line.replaces_containers = set
                .spec
                .init_containers
                .iter()
                .chain(&set.spec.containers)
                .map(|c| c.view.name.clone())
                .filter(|n| pod_containers.contains(&n.as_str()))
                .collect();
            let mut message = format!(
                "injected: revision {}",
                line.revision.as_deref().unwrap_or("latest")
            );
            if set.spec.injection_strategy.revision.is_some() {
                message.push_str(" (chosen by spec.injectionStrategy.revision)");
            }
            if line.already_injected {
                message.push_str(
                    "; already injected: the pod names it in kruise.io/sidecarset-injected-list",
                );
            }
            if !line.replaces_containers.is_empty() {
                message.push_str(&format!(
                    "; container name taken: replaces the pod's {}",
                    line.replaces_containers.join(", ")
                ));
            }
            line.message = message;
            lines.push(line);
            continue;
        }
        let canary = selections.iter().find(|(other, w)| {
            *w == Selection::Selected
                && other.canary_base() == Some(set.name())
                && injected.contains(&other.name())
        });
        (line.reason, line.message) = if let Some((canary, _)) = canary {
            (
                "canary".to_owned(),
                format!(
                    "not injected: canary: SidecarSet {} replaces it",
                    canary.name()
                ),
            )
        } else if !created.allowed {
            (
                "createDenied".to_owned(),
                "not injected: the pod create is denied".to_owned(),
            )
        } else if set.spec.containers.is_empty() && set.spec.init_containers.is_empty() {
            (
                "noContainers".to_owned(),
                "not injected: it has no containers or init containers".to_owned(),
            )
        } else {
            (
                "notInjected".to_owned(),
                "not injected: selected, but the chain injected nothing (a pod that is not active)"
                    .to_owned(),
            )
        };
        lines.push(line);
    }
    lines
}

fn answer(response: &AdmissionResponse) -> Answer {
    Answer {
        allowed: response.allowed,
        message: response.status.as_ref().and_then(|s| s.message.clone()),
    }
}

fn answer_text(what: &str, a: &Answer) -> String {
    if a.allowed {
        match &a.message {
            Some(m) => format!("{what} allowed ({m})"),
            None => format!("{what} allowed"),
        }
    } else {
        format!("{what} denied ({})", a.message.as_deref().unwrap_or(""))
    }
}

/// The PUB guarding the pod (`pod` as it is stored: after the CREATE chain): the one its related-pub
/// annotation names, else the first whose selector picks it ([`related::matching_budget`]); what a deletion
/// and an eviction of it would get from the chain.
async fn budget_line(
    cluster: &FixtureCluster,
    gates: &FeatureGates,
    pod: &Value,
    at: &PodRef,
    calls: &Calls,
) -> Option<BudgetLine> {
    let budgets = cluster.pod_unavailable_budgets_in(&at.namespace);
    let labels = labels_at(pod, "labels");
    let annotations = labels_at(pod, "annotations");
    // The gate reads `pub.kruise.io/related-pub`, which mpod.kb.io writes at creation.
    let mut name = [RELATED_PUB_ANNOTATION, DEPRECATED_RELATED_PUB_ANNOTATION]
        .iter()
        .find_map(|k| annotations.get(*k).filter(|v| !v.is_empty()).cloned())
        .or_else(|| related::matching_budget(&budgets, &labels, None).map(str::to_owned));
    let mut answers = [None, None];
    if at.from == "Pod" {
        // The gate reads the pod from the cluster; a pod only in --pod is added to a copy.
        let mut with_pod = cluster.clone();
        if with_pod.pod(&at.namespace, &at.name).is_none() {
            let _ = with_pod.insert(pod.clone());
        }
        let with_pod = Arc::new(with_pod);
        for (i, op) in ["DELETE", "EVICT"].into_iter().enumerate() {
            let Some(review) = review_for(pod, at, op) else {
                continue;
            };
            let specs = calls.called(&with_pod, gates, &review.request);
            let reviewed = review::review_chain_of(with_pod.clone(), gates, &review, specs).await;
            for w in &reviewed.status_writes {
                if let StatusIntent::BudgetSpend(spend) = w {
                    name = spend.budget.metadata.name.clone().or(name);
                }
            }
            answers[i] = Some(answer(&reviewed.response));
        }
    }
    let name = name?;
    let budget = budgets
        .iter()
        .find(|b| b.metadata.name.as_deref() == Some(name.as_str()));
    let status = budget.and_then(|b| b.status.clone()).unwrap_or_default();
    let [deletion, eviction] = answers;
    let guards = at.from != "Pod"
        || [RELATED_PUB_ANNOTATION, DEPRECATED_RELATED_PUB_ANNOTATION]
            .iter()
            .any(|k| annotations.get(*k).is_some_and(|v| !v.is_empty()));
    let mut line = BudgetLine {
        guards,
        name,
        unavailable_allowed: status.unavailable_allowed,
        current_available: status.current_available,
        desired_available: status.desired_available,
        deletion,
        eviction,
        message: String::new(),
    };
    line.message = budget_message(&line);
    Some(line)
}

fn budget_message(b: &BudgetLine) -> String {
    let mut message = if b.guards {
        format!(
            "guards the pod: {} disruption(s) allowed now ({} available, {} desired)",
            b.unavailable_allowed, b.current_available, b.desired_available
        )
    } else {
        format!(
            "selects the pod but does not guard it: the pod has no {RELATED_PUB_ANNOTATION} annotation, which mpod.kb.io writes when it admits a pod (created without the webhook, or before the PUB); recreate the pod to protect it ({} disruption(s) allowed now)",
            b.unavailable_allowed
        )
    };
    if let Some(d) = &b.deletion {
        message.push_str(&format!("; {}", answer_text("deletion", d)));
    }
    if let Some(e) = &b.eviction {
        message.push_str(&format!("; {}", answer_text("eviction", e)));
    }
    message
}

fn spread_line(spread: &WorkloadSpread, subset: &str) -> SpreadLine {
    let status = spread.status.as_ref();
    let subsets: Vec<SubsetRoom> = spread
        .spec
        .subsets
        .iter()
        .map(|s| {
            // The controller counts subsets per pod version (`versionIgnored` unless it tracks versions),
            // older versions in `subsetStatuses`.
            let missing = status
                .and_then(|st| {
                    st.versioned_subset_statuses
                        .get("versionIgnored")
                        .into_iter()
                        .chain(st.versioned_subset_statuses.values())
                        .chain([&st.subset_statuses])
                        .find_map(|list| list.iter().find(|x| x.name == s.name))
                })
                .map(|x| x.missing_replicas);
            SubsetRoom {
                name: s.name.clone(),
                room: missing.filter(|n| *n >= 0),
                counted: missing.is_some() || s.max_replicas.is_none(),
            }
        })
        .collect();
    let rooms: Vec<String> = subsets
        .iter()
        .map(|s| match (s.room, s.counted) {
            (Some(n), _) => format!("{} {n}", s.name),
            (None, true) => format!("{} unlimited", s.name),
            (None, false) => format!("{} not counted yet", s.name),
        })
        .collect();
    SpreadLine {
        name: spread.metadata.name.clone().unwrap_or_default(),
        subset: subset.to_owned(),
        message: format!(
            "a new pod goes to subset {subset}; room left: {}",
            rooms.join(", ")
        ),
        subsets,
    }
}

fn containers_at<'v>(pod: &'v Value, list: &str) -> impl Iterator<Item = &'v Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn name_of(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The launch-priority barrier each container got from the chain (`KRUISE_CONTAINER_BARRIER`'s ConfigMap key).
fn launch_priority_line(after: &Value) -> Option<ContainersLine> {
    let containers: Vec<(String, String)> = containers_at(after, "containers")
        .filter_map(|c| {
            let key = c
                .get("env")
                .and_then(Value::as_array)?
                .iter()
                .find(|e| {
                    e.get("name").and_then(Value::as_str) == Some(launch_priority::BARRIER_ENV)
                })?
                .pointer("/valueFrom/configMapKeyRef/key")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            Some((name_of(c).to_owned(), key))
        })
        .collect();
    if containers.is_empty() {
        return None;
    }
    let listed: Vec<String> = containers
        .iter()
        .map(|(name, key)| format!("{name} waits for {key}"))
        .collect();
    Some(ContainersLine {
        message: format!(
            "applied: containers start by priority, highest first: {}",
            listed.join(", ")
        ),
        containers: containers
            .into_iter()
            .map(|(name, key)| json!({"name": name, "barrierKey": key}))
            .collect(),
    })
}

/// The pod containers the chain moved to `initContainers` as native sidecars (`restartPolicy: Always`).
fn native_sidecar_line(pod: &Value, after: &Value) -> Option<ContainersLine> {
    let before: Vec<&str> = containers_at(pod, "containers").map(name_of).collect();
    let moved: Vec<String> = containers_at(after, "initContainers")
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
        .map(name_of)
        .filter(|n| before.contains(n))
        .map(str::to_owned)
        .collect();
    if moved.is_empty() {
        return None;
    }
    Some(ContainersLine {
        message: format!(
            "converted: {} (to the end of initContainers with restartPolicy Always)",
            moved.join(", ")
        ),
        containers: moved.into_iter().map(|n| json!({"name": n})).collect(),
    })
}

/// Whether `input` is a workload the cluster state does not hold.
fn workload_missing(cluster: &FixtureCluster, input: &Value, at: &PodRef) -> bool {
    if at.from == "Pod" {
        return false;
    }
    let text = |p: &str| input.pointer(p).and_then(Value::as_str).unwrap_or("");
    let group = text("/apiVersion").split_once('/').map_or("", |(g, _)| g);
    cluster
        .object(group, text("/kind"), &at.namespace, text("/metadata/name"))
        .is_none()
}

/// Explains the pod against the cluster, with the webhook configurations `installed`.
pub async fn explain(
    cluster: Arc<FixtureCluster>,
    gates: &FeatureGates,
    input: &Value,
    installed: &Installed,
) -> Result<Explanation, ExplainError> {
    let (pod, at) = pod_of(input, &cluster)?;
    // A workload explained from a file and missing from --objects is added to a copy of the cluster state: its
    // pod's owner is resolved through it (a PUB's targetRef, a WorkloadSpread's target).
    let cluster = if workload_missing(&cluster, input, &at) {
        let mut with = (*cluster).clone();
        let _ = with.insert(input.clone());
        Arc::new(with)
    } else {
        cluster
    };
    let bad =
        |what: &str| ExplainError::NoPod(format!("cannot build the {what} request for the pod"));
    let create = review_for(&pod, &at, "CREATE").ok_or_else(|| bad("CREATE"))?;
    let delete = review_for(&pod, &at, "DELETE").ok_or_else(|| bad("DELETE"))?;
    let evict = review_for(&pod, &at, "EVICT").ok_or_else(|| bad("eviction"))?;
    let calls = Calls::of(&cluster, installed);
    let webhooks = webhook_lines(
        &cluster,
        gates,
        &[
            ("CREATE", "pods", &create),
            ("DELETE", "pods", &delete),
            ("CREATE", "pods/eviction", &evict),
        ],
        &calls,
    );
    let specs = calls.called(&cluster, gates, &create.request);
    let reviewed = review::review_chain_of(cluster.clone(), gates, &create, specs).await;
    let mut sidecar_sets = sidecar_set_lines(&cluster, &pod, &at, &reviewed.response);
    // Injection happens in mpod.kb.io: when the apiserver does not call it, that is every SidecarSet's first
    // reason (a SidecarSet that would otherwise select the pod is the usual "my sidecar was not injected").
    if let Some(skipped) = webhooks
        .iter()
        .find(|w| w.name == "mpod.kb.io" && w.operation == "CREATE" && !w.called)
    {
        for line in &mut sidecar_sets {
            line.message = format!(
                "not injected: webhook not called: mpod.kb.io ({})",
                skipped.reason.as_deref().unwrap_or("rules")
            );
            line.reason = "webhookNotCalled".to_owned();
            line.injected = false;
        }
    }
    // The pod as the apiserver stores it: read live, as it is; from a file, as given when it already went
    // through mpod.kb.io (it carries the related-pub annotation), else as the CREATE chain leaves it.
    let live_pod = matches!(installed, Installed::Live { .. }) && at.from == "Pod";
    let stored = if live_pod || labels_at(&pod, "annotations").contains_key(RELATED_PUB_ANNOTATION)
    {
        pod.clone()
    } else {
        patched(&pod, &reviewed.response)
    };
    let mut pod_unavailable_budget = budget_line(&cluster, gates, &stored, &at, &calls).await;
    // With the configurations as installed, a disruption no webhook is called for is simply allowed.
    if let Some(budget) = &mut pod_unavailable_budget {
        let uncalled = |operation: &str, resource: &str| {
            !webhooks
                .iter()
                .any(|w| w.operation == operation && w.resource == resource && w.called)
        };
        let none = || Answer {
            allowed: true,
            message: Some("no webhook is called for it".to_owned()),
        };
        let mut changed = false;
        if budget.deletion.is_some() && uncalled("DELETE", "pods") {
            budget.deletion = Some(none());
            changed = true;
        }
        if budget.eviction.is_some() && uncalled("CREATE", "pods/eviction") {
            budget.eviction = Some(none());
            changed = true;
        }
        if changed {
            budget.message = budget_message(budget);
        }
    }
    let workload_spread = reviewed.placement.as_ref().and_then(|p| {
        let name = p.get("name")?.as_str()?;
        let subset = p.get("subset")?.as_str()?;
        let spread = cluster.workload_spread(&at.namespace, name)?;
        Some(spread_line(&spread, subset))
    });
    let after = patched(&pod, &reviewed.response);
    Ok(Explanation {
        launch_priority: launch_priority_line(&after),
        native_sidecar: native_sidecar_line(&pod, &after),
        pod: at,
        create: CreateLine {
            allowed: reviewed.response.allowed,
            message: answer(&reviewed.response).message,
        },
        webhooks,
        sidecar_sets,
        pod_unavailable_budget,
        workload_spread,
    })
}

/// Live mode (docs/explain.md §1): reads a snapshot of the cluster through `client` (GET and LIST only) and
/// explains `target` against it, the installed configurations being exactly the two `options` names.
///
/// # Errors
/// [`ExplainError::Live`] when the target is not found or a read fails; [`ExplainError::NoPod`] for a target
/// without a pod template.
pub async fn live(
    client: kube::Client,
    target: &LiveTarget,
    options: &LiveOptions,
    gates: &FeatureGates,
) -> Result<Explanation, ExplainError> {
    let snapshot = live::snapshot(client, target, options).await?;
    let installed = Installed::Live {
        mutating: options.mutating_configuration.clone(),
        validating: options.validating_configuration.clone(),
    };
    explain(
        Arc::new(snapshot.cluster),
        gates,
        &snapshot.target,
        &installed,
    )
    .await
}

/// The client of `--kubeconfig`/`--context`, else of `kube::Config::infer` (KUBECONFIG, ~/.kube/config,
/// in-cluster), and the API server's URL.
async fn live_client(config: &ExplainLiveConfig) -> Result<(kube::Client, String), LiveError> {
    let unreadable = |e: &(dyn std::error::Error + 'static)| LiveError::Kubeconfig(live::causes(e));
    let options = kube::config::KubeConfigOptions {
        context: config.context.clone(),
        ..Default::default()
    };
    let kube_config = match (&config.kubeconfig, &config.context) {
        (Some(path), _) => {
            let file = kube::config::Kubeconfig::read_from(path).map_err(|e| {
                LiveError::Kubeconfig(format!("{}: {}", path.display(), live::causes(&e)))
            })?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| {
                    LiveError::Kubeconfig(format!("{}: {}", path.display(), live::causes(&e)))
                })?
        }
        (None, Some(_)) => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| unreadable(&e))?,
        (None, None) => kube::Config::infer().await.map_err(|e| unreadable(&e))?,
    };
    let server = kube_config.cluster_url.to_string();
    let client = kube::Client::try_from(kube_config).map_err(|e| unreadable(&e))?;
    Ok((client, server.trim_end_matches('/').to_owned()))
}

/// Reads the inputs, explains, returns the text or JSON to print.
///
/// # Errors
/// [`ExplainError`] for unreadable or malformed input, and in live mode a failed read.
pub fn run(config: &ExplainConfig, stdin: impl Read) -> Result<Vec<u8>, ExplainError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ExplainError::NoPod(format!("runtime: {e}")))?;
    let explanation = match &config.live {
        Some(live_config) => runtime.block_on(async {
            let (client, server) = live_client(live_config).await?;
            live(
                client,
                &live_config.target,
                &live_config.options,
                &config.gates,
            )
            .await
            .map_err(|e| match e {
                ExplainError::Live(LiveError::Unreachable { cause, .. }) => {
                    ExplainError::Live(LiveError::Unreachable {
                        server: Some(server),
                        cause,
                    })
                }
                other => other,
            })
        })?,
        None => {
            let cluster = cache::load_objects(&config.objects)?;
            let (source_name, bytes) = review::read_request(config.pod.as_ref(), stdin)?;
            let input = review::decode_value(&source_name, &bytes)?;
            let installed = Installed::of_objects(&cluster);
            runtime.block_on(explain(
                Arc::new(cluster),
                &config.gates,
                &input,
                &installed,
            ))?
        }
    };
    Ok(match config.output {
        ExplainOutput::Text => explanation.text().into_bytes(),
        ExplainOutput::Json => {
            let mut text = serde_json::to_vec_pretty(&explanation).unwrap_or_default();
            text.push(b'\n');
            text
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(uid: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": uid},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
    }

    fn replica_set(name: &str, revision: &str, owner_uid: &str, controller: bool) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                "annotations": {"deployment.kubernetes.io/revision": revision},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                    "uid": owner_uid, "controller": controller}]},
            "spec": {}})
    }

    fn owner(pod: &Value) -> (&str, &str) {
        let r = &pod["metadata"]["ownerReferences"][0];
        (
            r["name"].as_str().unwrap_or(""),
            r["uid"].as_str().unwrap_or(""),
        )
    }

    #[test]
    fn a_deployment_s_pod_is_owned_by_its_newest_replica_set() {
        let mut cluster = FixtureCluster::default();
        for rs in [
            replica_set("web-1", "9", "d-uid", true),
            replica_set("web-2", "10", "d-uid", true),
            // Not the Deployment's controller, or another Deployment of the same name (another uid).
            replica_set("web-3", "11", "d-uid", false),
            replica_set("web-4", "12", "other-uid", true),
        ] {
            cluster.insert(rs).unwrap();
        }
        let (pod, at) = pod_of(&deployment("d-uid"), &cluster).unwrap();
        assert_eq!(owner(&pod), ("web-2", "uid-web-2"));
        assert_eq!(at.name, "web-");
        // Without a uid on the Deployment, by name: web-4 (revision 12) is then the newest.
        let (pod, _) = pod_of(&deployment(""), &cluster).unwrap();
        assert_eq!(owner(&pod).0, "web-4");
        // None in the cluster state: the made-up `<deployment>-explain`.
        let (pod, _) = pod_of(&deployment("d-uid"), &FixtureCluster::default()).unwrap();
        assert_eq!(owner(&pod), ("web-explain", ""));
    }
}
