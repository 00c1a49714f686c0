//! Deletion protection: `policy.kruise.io/delete-protection` = `Always` | `Cascading`
//! (spec/deletion-protection.md; DECISIONS 1 and 8).
//!
//! Entry points: [`custom_resource_query`] says what the I/O layer must count before a CRD deletion can be
//! decided (the cache cannot answer for arbitrary custom resources), and [`validate`] decides, given those
//! [`Facts`]. Refusals carry a [`SideEffect::DeletionProtected`] for the metrics and the audit log (§7).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::admission::{AdmissionRequest, Operation};
use crate::features::{FeatureGates, RESOURCES_DELETION_PROTECTION};
use crate::json::RawJson;
use crate::registry::{DELETE_PROTECTION_LABEL, Handler};
use crate::verdict::{Denial, ProtectionMetric, ProtectionRecord, SideEffect, Verdict};
use crate::{ClusterView, WebhookError};

/// Label value: refuse every deletion.
pub const ALWAYS: &str = "Always";
/// Label value: refuse while the object still owns live things.
pub const CASCADING: &str = "Cascading";

const PREFIX: &str = "forbidden by ResourcesProtectionDeletion for";

/// `M_ALWAYS`.
pub fn message_always() -> String {
    format!("{PREFIX} {DELETE_PROTECTION_LABEL}=Always")
}

fn message_cascading(what: &str, n: usize) -> String {
    format!("{PREFIX} {DELETE_PROTECTION_LABEL}=Cascading and {what} {n}>0")
}

/// The custom resources the I/O layer must count before a `Cascading` CRD's deletion is decided.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CustomResourceQuery {
    /// `spec.group`.
    pub group: String,
    /// The storage version (first of `spec.versions` with `storage: true`).
    pub version: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.names.listKind`.
    pub list_kind: String,
    /// `spec.names.plural`: the resource to list.
    pub plural: String,
    /// `spec.scope == Namespaced`.
    pub namespaced: bool,
}

impl CustomResourceQuery {
    /// The GVK as apimachinery prints it, for OpenKruise's list-error message.
    pub fn gvk_string(&self) -> String {
        format!("{}/{}, Kind={}", self.group, self.version, self.list_kind)
    }
}

/// How many custom resources exist, and how many of them are already being deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CustomResourceCount {
    /// All objects of the CRD, in all namespaces.
    pub total: usize,
    /// Objects with a `deletionTimestamp`.
    pub terminating: usize,
}

/// What the I/O layer fetched for this request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The answer to [`custom_resource_query`]: a count, or the list error's text.
    pub custom_resources: Option<Result<CustomResourceCount, String>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    deletion_timestamp: Option<Value>,
}

#[derive(Deserialize)]
struct Object<S> {
    #[serde(default)]
    metadata: Meta,
    #[serde(default = "Option::default")]
    spec: Option<S>,
}

#[derive(Deserialize)]
struct WorkloadSpec {
    #[serde(default)]
    replicas: Option<i32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CrdSpec {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    versions: Vec<CrdVersion>,
    #[serde(default)]
    names: CrdNames,
    #[serde(default)]
    scope: String,
}

#[derive(Deserialize)]
struct CrdVersion {
    #[serde(default)]
    name: String,
    #[serde(default)]
    storage: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CrdNames {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    list_kind: String,
    #[serde(default)]
    plural: String,
}

impl<S> Object<S> {
    fn label(&self) -> Option<&str> {
        self.metadata
            .labels
            .as_ref()?
            .get(DELETE_PROTECTION_LABEL)
            .map(String::as_str)
    }
    fn terminating(&self) -> bool {
        self.metadata
            .deletion_timestamp
            .as_ref()
            .is_some_and(|t| !t.is_null())
    }
}

fn decode<'a, S: Deserialize<'a>>(old: &'a RawJson) -> Result<Object<S>, WebhookError> {
    serde_json::from_str::<Object<S>>(old.get()).map_err(WebhookError::decode)
}

/// What the kind rule needs to know, once the prelude (§5.1) has passed.
enum Subject {
    Allow,
    Workload(Object<WorkloadSpec>),
    AlwaysOnly(Object<IgnoredAny>),
    Namespace(Object<IgnoredAny>),
    Crd(Object<CrdSpec>),
}

/// The common prelude of every handler (§5.1 steps 1-3) and the version dispatch.
fn subject(handler: Handler, req: &AdmissionRequest) -> Result<Subject, WebhookError> {
    if req.operation != Operation::Delete || !req.sub_resource.is_empty() {
        return Ok(Subject::Allow);
    }
    let Some(old) = req.old_object() else {
        return Ok(Subject::Allow);
    };
    Ok(match handler {
        Handler::Namespace => Subject::Namespace(decode(old)?),
        Handler::CustomResourceDefinition => match req.kind.version.as_str() {
            "v1" | "v1beta1" => Subject::Crd(decode(old)?),
            _ => Subject::Allow,
        },
        // The three builtin paths share one handler that dispatches on the kind (§5.1 step 3).
        Handler::Deployment | Handler::ReplicaSet | Handler::StatefulSet => {
            match req.kind.kind.as_str() {
                "Deployment" | "ReplicaSet" | "StatefulSet" => Subject::Workload(decode(old)?),
                _ => Subject::Allow,
            }
        }
        Handler::Service => Subject::AlwaysOnly(decode(old)?),
        // OpenKruise dereferences a nil object for other versions (a recovered panic); we allow.
        Handler::Ingress => match req.kind.version.as_str() {
            "v1" | "v1beta1" => Subject::AlwaysOnly(decode(old)?),
            _ => Subject::Allow,
        },
        Handler::CloneSet | Handler::UnitedDeployment => match req.resource.version.as_str() {
            "v1alpha1" | "v1beta1" => Subject::Workload(decode(old)?),
            other => return Err(WebhookError::UnsupportedVersion(other.to_owned())),
        },
        // v1alpha1 converts to v1beta1 first; `spec.replicas` is the same field in both.
        Handler::AdvancedStatefulSet => Subject::Workload(decode(old)?),
        // Not deletion-protection handlers: nothing to protect.
        Handler::PodMutate
        | Handler::PodValidate
        | Handler::SidecarSetDefault
        | Handler::SidecarSetValidate
        | Handler::PodUnavailableBudgetValidate
        | Handler::WorkloadSpreadValidate
        | Handler::PersistentPodStateValidate
        | Handler::ContainerRecreateRequestMutate => Subject::Allow,
    })
}

/// The custom resources to count before deciding this request, if it is a `Cascading` CRD deletion that
/// deletion protection will look at.
///
/// # Errors
/// [`WebhookError::Decode`] when the old object is not a CustomResourceDefinition.
pub fn custom_resource_query(
    handler: Handler,
    req: &AdmissionRequest,
    gates: &FeatureGates,
) -> Result<Option<CustomResourceQuery>, WebhookError> {
    if !gates.enabled(RESOURCES_DELETION_PROTECTION) {
        return Ok(None);
    }
    let Subject::Crd(crd) = subject(handler, req)? else {
        return Ok(None);
    };
    if crd.terminating() || crd.label() != Some(CASCADING) {
        return Ok(None);
    }
    Ok(crd.spec.map(|spec| {
        let version = spec
            .versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
            .or(spec.version)
            .unwrap_or_default();
        CustomResourceQuery {
            group: spec.group,
            version,
            kind: spec.names.kind,
            list_kind: spec.names.list_kind,
            plural: spec.names.plural,
            namespaced: spec.scope != "Cluster",
        }
    }))
}

/// Decides a deletion (spec/deletion-protection.md §5).
///
/// # Errors
/// [`WebhookError::Decode`] (400) for an undecodable old object, [`WebhookError::UnsupportedVersion`] (400)
/// for a Kruise workload version the handler does not serve, [`WebhookError::Internal`] when a CRD
/// deletion needs [`Facts::custom_resources`] and the caller did not fetch them.
pub fn validate(
    handler: Handler,
    req: &AdmissionRequest,
    view: &impl ClusterView,
    gates: &FeatureGates,
    facts: &Facts,
) -> Result<Verdict, WebhookError> {
    let subject = subject(handler, req)?;
    if !gates.enabled(RESOURCES_DELETION_PROTECTION) {
        return Ok(Verdict::allow());
    }
    let record = |metric: ProtectionMetric, meta: &Meta| {
        let name = meta.name.clone().unwrap_or_else(|| req.name.clone());
        let namespace = meta
            .namespace
            .clone()
            .unwrap_or_else(|| req.namespace().to_owned());
        let metric_name = match metric {
            ProtectionMetric::Workload => format!("{}_{}_{}", req.kind.kind, namespace, name),
            ProtectionMetric::Namespace | ProtectionMetric::Crd => name.clone(),
        };
        let namespace = if metric == ProtectionMetric::Workload {
            namespace
        } else {
            String::new()
        };
        SideEffect::DeletionProtected(ProtectionRecord {
            metric,
            metric_name,
            kind: req.kind.kind.clone(),
            namespace,
            name,
            username: req.user_info.username.clone(),
        })
    };
    let deny = |message: String, effect: Option<SideEffect>| {
        let verdict = Verdict::deny(Denial::forbidden(message));
        match effect {
            Some(e) => verdict.with_side_effect(e),
            None => verdict,
        }
    };
    Ok(match subject {
        Subject::Allow => Verdict::allow(),
        Subject::AlwaysOnly(obj) => match obj.label() {
            Some(ALWAYS) if !obj.terminating() => deny(message_always(), None),
            _ => Verdict::allow(),
        },
        Subject::Workload(obj) => {
            if obj.terminating() {
                return Ok(Verdict::allow());
            }
            let replicas = obj.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
            let message = match obj.label() {
                Some(ALWAYS) => message_always(),
                Some(CASCADING) if replicas > 0 => format!(
                    "{PREFIX} {DELETE_PROTECTION_LABEL}=Cascading and replicas {replicas}>0"
                ),
                _ => return Ok(Verdict::allow()),
            };
            deny(
                message,
                Some(record(ProtectionMetric::Workload, &obj.metadata)),
            )
        }
        Subject::Namespace(obj) => {
            if obj.terminating() {
                return Ok(Verdict::allow());
            }
            let message = match obj.label() {
                Some(ALWAYS) => message_always(),
                Some(CASCADING) => {
                    let ns = obj.metadata.name.as_deref().unwrap_or(&req.name);
                    match namespace_contents(view, ns) {
                        Some(message) => message,
                        None => return Ok(Verdict::allow()),
                    }
                }
                _ => return Ok(Verdict::allow()),
            };
            deny(
                message,
                Some(record(ProtectionMetric::Namespace, &obj.metadata)),
            )
        }
        Subject::Crd(obj) => {
            if obj.terminating() {
                return Ok(Verdict::allow());
            }
            let message = match obj.label() {
                Some(ALWAYS) => message_always(),
                // DECISIONS 8: denied only while live custom resources exist, whatever
                // DeletionProtectionForCRDCascadingGate says.
                Some(CASCADING) => match &facts.custom_resources {
                    None => {
                        return Err(WebhookError::Internal(format!(
                            "custom resources of CRD {} were not counted before deciding",
                            obj.metadata.name.as_deref().unwrap_or(&req.name)
                        )));
                    }
                    Some(Err(list_error)) => {
                        let query = custom_resource_query(handler, req, gates)?;
                        let gvk = query.map(|q| q.gvk_string()).unwrap_or_default();
                        format!("failed to list CRs of {gvk}: {list_error}")
                    }
                    Some(Ok(count)) => {
                        let active = count.total.saturating_sub(count.terminating);
                        if active == 0 {
                            return Ok(Verdict::allow());
                        }
                        message_cascading("active CRs", active)
                    }
                },
                _ => return Ok(Verdict::allow()),
            };
            deny(message, Some(record(ProtectionMetric::Crd, &obj.metadata)))
        }
    })
}

/// The refusal message for a `Cascading` namespace that still holds active pods or bound PVCs (pods first).
fn namespace_contents(view: &impl ClusterView, namespace: &str) -> Option<String> {
    let active_pods = view
        .pods_in(namespace)
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let phase = p
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("");
            phase != "Succeeded" && phase != "Failed"
        })
        .count();
    if active_pods > 0 {
        return Some(message_cascading("active pods", active_pods));
    }
    let bound = view
        .persistent_volume_claims_in(namespace)
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
        .count();
    (bound > 0).then(|| message_cascading("\"Bound\" status pvc", bound))
}

#[cfg(test)]
mod tests;
