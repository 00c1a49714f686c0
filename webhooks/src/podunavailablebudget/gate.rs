//! The PodUnavailableBudget gate of `/validate-pod` (spec/podunavailablebudget.md §7): classify the request
//! (§7.1, §7.2), then decide on the PUB as the view holds it (§7.3). A spend comes back as a
//! [`StatusIntent::BudgetSpend`]: the PUB with one more disruption recorded and one less allowed, from the
//! resourceVersion the decision read. The server writes it before the answer stands; on a conflict it
//! reads the PUB again and runs [`validate`] again on the fresh object (DECISIONS 10), so what is decided
//! here is always decided on the object that is written.
//!
//! Differences from OpenKruise (DECISIONS): both gates are on by default (1); dry runs, whether on the
//! request, in the options or in the eviction's `deleteOptions`, spend nothing (4); `pods/resize` UPDATEs
//! are gated like other resizes (6); a pod or PUB that is not found allows (7: an eviction of a pod missing
//! from the cache is allowed with a warning instead of OpenKruise's 400); every check reads the one PUB the
//! spend is written on (the spec's §10.5 read the desired count and the recorded pods from the cached
//! copy); an allowed disruption that leaves no budget says so in a warning (18).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;

use super::pod::{is_consistent, is_no_protect, is_ready, related_pub};
use super::update::{self, PodJson};
use super::{
    DELETE_GATE, MAX_UNAVAILABLE_POD_SIZE, Operation, UPDATE_GATE, budget_message,
    protected_operations, too_big_message,
};
use crate::admission::{AdmissionRequest, Operation as RequestOperation};
use crate::api::pod::SlimPod;
use crate::features::FeatureGates;
use crate::json::RawJson;
use crate::selector;
use crate::verdict::{BudgetDenialRecord, BudgetSpend, Denial, SideEffect, StatusIntent};
use crate::view::PodUnavailableBudgetView;
use crate::{ClusterView, Verdict, WebhookError};

/// What the gate needs besides the request and the cluster view.
#[derive(Debug, Clone, Copy)]
pub struct GateContext<'a> {
    /// Feature gates.
    pub gates: &'a FeatureGates,
    /// The request time, RFC 3339 UTC seconds: recorded with the spend.
    pub now: &'a str,
}

/// A protected disruption of a pod, as classified (§7.1).
#[derive(Debug, Clone)]
pub struct Disruption {
    /// The pod as it is before the disruption.
    pub pod: Arc<SlimPod>,
    /// What is done to it.
    pub operation: Operation,
    /// The request is a dry run: nothing is spent.
    pub dry_run: bool,
}

/// The text OpenKruise answers when a review has no object or options to decode.
const NO_CONTENT: &str = "there is no content to decode";

/// `dryRun` of request options (DeleteOptions, UpdateOptions, CreateOptions) or of an eviction's
/// `deleteOptions`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    #[serde(default)]
    dry_run: Option<Vec<String>>,
}

impl Options {
    fn is_dry_run(&self) -> bool {
        self.dry_run.as_ref().is_some_and(|d| !d.is_empty())
    }
}

/// The request's options, which must be there (§7.1: OpenKruise answers 400 without them).
fn options(req: &AdmissionRequest) -> Result<Options, WebhookError> {
    let raw = req
        .options
        .as_ref()
        .filter(|o| o.get().trim() != "null")
        .ok_or_else(|| WebhookError::Decode(NO_CONTENT.into()))?;
    serde_json::from_str(raw.get())
        .map_err(|e| WebhookError::Decode(format!("decoding the request options: {e}")))
}

/// An Eviction body, as far as the gate reads it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Eviction {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    delete_options: Option<Options>,
}

fn decode_pod(raw: &RawJson, which: &str) -> Result<SlimPod, WebhookError> {
    serde_json::from_str(raw.get())
        .map_err(|e| WebhookError::Decode(format!("decoding the {which}: {e}")))
}

fn pod_json(raw: &RawJson, which: &str) -> Result<PodJson, WebhookError> {
    match serde_json::from_str(raw.get()) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(WebhookError::Decode(format!(
            "decoding the {which}: expected a Pod object"
        ))),
        Err(e) => Err(WebhookError::Decode(format!("decoding the {which}: {e}"))),
    }
}

/// The outcome of classifying a request: a protected disruption to decide on, or an allow (with the
/// warnings it carries).
#[derive(Debug)]
pub enum Classified {
    /// Not a disruption the gate decides on.
    Allow(Verdict),
    /// A disruption of a pod that names a PUB.
    Disruption(Disruption),
}

/// Which requests are disruptions of a pod that names a PUB (§7.1, §7.2).
///
/// # Errors
/// [`WebhookError::Decode`] (400) when the object, the old object, the options or the eviction cannot be
/// decoded as what they must be.
pub fn classify(
    req: &AdmissionRequest,
    view: &impl ClusterView,
    gates: &FeatureGates,
) -> Result<Classified, WebhookError> {
    let allow = || Ok(Classified::Allow(Verdict::allow()));
    if !req.resource.group.is_empty() || req.resource.resource != "pods" {
        return allow();
    }
    let (pod, operation, dry_run) = match (req.operation, req.sub_resource.as_str()) {
        (RequestOperation::Update, "" | "resize") => {
            if !gates.enabled(UPDATE_GATE) {
                return allow();
            }
            let Some(new_raw) = req.object() else {
                return Err(WebhookError::Decode(NO_CONTENT.into()));
            };
            let new_pod = decode_pod(new_raw, "pod")?;
            if related_pub(&new_pod).is_none() {
                return allow();
            }
            let Some(old_raw) = req.old_object() else {
                return Err(WebhookError::Decode(NO_CONTENT.into()));
            };
            let old_pod = decode_pod(old_raw, "old pod")?;
            let (new_json, old_json) = (pod_json(new_raw, "pod")?, pod_json(old_raw, "old pod")?);
            if !update::unavailable_changed(&old_json, &new_json) {
                return allow();
            }
            let operation = if update::is_resize(&old_json, &new_json) {
                Operation::Resize
            } else {
                Operation::Update
            };
            let dry_run = options(req)?.is_dry_run() || req.dry_run == Some(true);
            (Arc::new(old_pod), operation, dry_run)
        }
        (RequestOperation::Delete, "") => {
            if !gates.enabled(DELETE_GATE) {
                return allow();
            }
            let Some(old_raw) = req.old_object() else {
                return allow();
            };
            let pod = decode_pod(old_raw, "pod")?;
            if related_pub(&pod).is_none() {
                return allow();
            }
            let dry_run = options(req)?.is_dry_run() || req.dry_run == Some(true);
            (Arc::new(pod), Operation::Delete, dry_run)
        }
        (RequestOperation::Create, "eviction") => {
            if !gates.enabled(DELETE_GATE) {
                return allow();
            }
            let Some(raw) = req.object() else {
                return Err(WebhookError::Decode(NO_CONTENT.into()));
            };
            let eviction: Eviction = serde_json::from_str(raw.get())
                .map_err(|e| WebhookError::Decode(format!("decoding the Eviction: {e}")))?;
            if let Some(kind) = eviction.kind.as_deref().filter(|k| *k != "Eviction") {
                return Err(WebhookError::Decode(format!(
                    "decoding the Eviction: the object is a {kind:?}, not an Eviction"
                )));
            }
            let dry_run = req.is_dry_run()
                || eviction
                    .delete_options
                    .as_ref()
                    .is_some_and(Options::is_dry_run);
            let namespace = req.namespace();
            let Some(pod) = view.pod(namespace, &req.name) else {
                let mut verdict = Verdict::allow();
                verdict.warnings.push(format!(
                    "Pod {:?} not found in namespace {namespace:?}: the eviction was not checked against a PodUnavailableBudget",
                    req.name
                ));
                return Ok(Classified::Allow(verdict));
            };
            if related_pub(&pod).is_none() {
                return allow();
            }
            (pod, Operation::Evict, dry_run)
        }
        _ => return allow(),
    };
    Ok(Classified::Disruption(Disruption {
        pod,
        operation,
        dry_run,
    }))
}

/// Runs the gate on a request: classification, then the decision on the PUB the view holds.
///
/// # Errors
/// [`WebhookError::Decode`] (400) for requests that cannot be decoded and PUBs whose
/// `ignoredPodSelector` cannot be evaluated.
pub fn validate(
    req: &AdmissionRequest,
    view: &(impl ClusterView + PodUnavailableBudgetView),
    ctx: &GateContext<'_>,
) -> Result<Verdict, WebhookError> {
    match classify(req, view, ctx.gates)? {
        Classified::Allow(verdict) => Ok(verdict),
        Classified::Disruption(disruption) => {
            decide(&disruption, view, &req.user_info.username, ctx)
        }
    }
}

/// The pod's controller (kind, name), or `("unknown", <pod name>)`.
fn owner(pod: &SlimPod) -> (String, String) {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| (r.kind.clone(), r.name.clone()))
        .unwrap_or_else(|| {
            (
                "unknown".to_owned(),
                pod.metadata.name.clone().unwrap_or_default(),
            )
        })
}

fn denial_record(pod: &SlimPod, username: &str, dry_run: bool) -> BudgetDenialRecord {
    let (owner_kind, owner_name) = owner(pod);
    let namespace = pod
        .metadata
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    BudgetDenialRecord {
        kind_namespace_name: format!("{owner_kind}_{namespace}_{owner_name}"),
        username: username.to_owned(),
        owner_kind,
        owner_name,
        namespace,
        pod: pod.metadata.name.clone().unwrap_or_default(),
        pod_uid: pod.metadata.uid.clone(),
        dry_run,
    }
}

/// A 403 refusal with reason `Forbidden` (OpenKruise's `admission.Denied`).
fn forbidden(message: String) -> Denial {
    Denial {
        code: 403,
        reason: Some("Forbidden"),
        message,
    }
}

/// The warning of an allowed disruption that spent the last of the budget (DECISIONS 18).
pub fn last_budget_warning(namespace: &str, name: &str) -> String {
    format!(
        "PodUnavailableBudget {namespace}/{name} has no budget left after this disruption (unavailableAllowed 0): the next protected disruption of its pods is refused until they are available again"
    )
}

/// The decision on one disruption (§7.3).
///
/// # Errors
/// [`WebhookError::Decode`] when the PUB's `ignoredPodSelector` cannot be evaluated.
pub fn decide(
    disruption: &Disruption,
    view: &impl PodUnavailableBudgetView,
    username: &str,
    ctx: &GateContext<'_>,
) -> Result<Verdict, WebhookError> {
    let pod = &*disruption.pod;
    // 1-2. Opted out, or not counted as healthy: nothing to spend.
    if is_no_protect(pod)
        || !is_ready(pod)
        || !is_consistent(
            pod,
            ctx.gates
                .enabled(super::pod::IN_PLACE_WORKLOAD_VERTICAL_SCALING),
        )
    {
        return Ok(Verdict::allow());
    }
    // 3. The PUB; gone means allow (DECISIONS 7).
    let Some(pub_name) = related_pub(pod) else {
        return Ok(Verdict::allow());
    };
    let namespace = pod
        .metadata
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let Some(budget) = view.pod_unavailable_budget(namespace, pub_name) else {
        return Ok(Verdict::allow());
    };
    // 4. Ignored pods.
    if let Some(ignored) = &budget.spec.ignored_pod_selector
        && !crate::validation::meta::is_empty_selector(ignored)
    {
        if let Some(err) = selector::validated_error(ignored) {
            return Err(WebhookError::Decode(err));
        }
        if selector::matches(ignored, &pod.labels) {
            return Ok(Verdict::allow());
        }
    }
    let no_status = Default::default();
    let status = budget.status.as_ref().unwrap_or(&no_status);
    // 5. Nothing to keep available.
    if status.desired_available == 0 {
        return Ok(Verdict::allow());
    }
    // 6. Not protected.
    if !protected_operations(&budget, ctx.gates).contains(&disruption.operation) {
        return Ok(Verdict::allow());
    }
    // 7. Already recorded.
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    if status.disrupted_pods.contains_key(&pod_name)
        || status.unavailable_pods.contains_key(&pod_name)
    {
        return Ok(Verdict::allow());
    }
    // 8. Spend.
    let refused =
        |message: String| {
            Verdict::deny(forbidden(message)).with_side_effect(SideEffect::BudgetDenied(
                denial_record(pod, username, disruption.dry_run),
            ))
        };
    if status.unavailable_allowed <= 0 {
        return Ok(refused(budget_message(pub_name)));
    }
    if status.disrupted_pods.len() + status.unavailable_pods.len() > MAX_UNAVAILABLE_POD_SIZE {
        return Ok(refused(too_big_message(pub_name)));
    }
    let mut verdict = Verdict::allow();
    if status.unavailable_allowed == 1 {
        verdict
            .warnings
            .push(last_budget_warning(namespace, pub_name));
    }
    if disruption.dry_run {
        return Ok(verdict);
    }
    let now: Time = serde_json::from_value(serde_json::Value::String(ctx.now.to_owned()))
        .map_err(|e| WebhookError::Internal(format!("request time {:?}: {e}", ctx.now)))?;
    let mut spent = (*budget).clone();
    let new_status = spent.status.get_or_insert_with(Default::default);
    new_status.unavailable_allowed -= 1;
    if disruption.operation == Operation::Update {
        new_status.unavailable_pods.insert(pod_name.clone(), now);
    } else {
        new_status.disrupted_pods.insert(pod_name.clone(), now);
    }
    verdict.intents.push(StatusIntent::BudgetSpend(BudgetSpend {
        budget: spent,
        pod: pod_name,
        operation: disruption.operation.as_str(),
    }));
    Ok(verdict)
}

#[cfg(test)]
mod tests;
