//! What the WorkloadSpread steps of the pod webhooks need beyond the cluster view, read before the pure
//! decision (spec/workloadspread.md §4, §5.4 (c) 3): the pod's owner chain, the custom workload whitelist
//! and the replicas of the target workload when a subset is a percentage.
//!
//! Owners of the cached kinds come from the workload stores (a miss confirmed with a GET), Jobs and
//! whitelisted kinds from a GET. Nothing is read for a pod whose namespace has no WorkloadSpread, or that
//! has no controller: the common pod create costs one map lookup here.

use std::time::Duration;

use serde_json::Value;

use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::{AdmissionRequest, Operation};
use kruise_webhooks::api::workloadspread::WorkloadSpread;
use kruise_webhooks::view::WorkloadSpreadView;
use kruise_webhooks::workloadspread::workload::{
    ChainEnd, Link, OwnerChain, WorkloadKinds, api_group, replicas_at,
};
use kruise_webhooks::workloadspread::{self, SpreadFacts, create, delete, subset, whitelist};

use crate::cache::Cluster;
use crate::workload::{WorkloadKind, Workloads, workloads_of};

/// How long reading the facts may take before the pod create fails (an owner chain is one or two reads).
pub const FACTS_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest owner chain walked (a pod, a ReplicaSet, a Deployment, and custom kinds above).
const MAX_DEPTH: usize = 8;

/// The custom workload whitelist: read once per process in a cluster, from the files standalone. A read
/// error is logged and read as an empty whitelist (OpenKruise logs and goes on without it).
async fn custom_workloads(
    cluster: &Cluster,
    kruise_namespace: &str,
) -> Vec<whitelist::CustomWorkload> {
    let read = match cluster {
        Cluster::Live(cache) => cache.spread_whitelist(kruise_namespace).await,
        Cluster::Fixture(_) => {
            whitelist::parse(&cluster.workload_spread_whitelist(kruise_namespace).await)
        }
    };
    read.unwrap_or_else(|error| {
        tracing::warn!(%error, "WorkloadSpread custom workload whitelist unreadable: using none");
        Vec::new()
    })
}

/// The resource of a kind for a NotFound text (`replicasets.apps "web" not found`).
fn resource_of(group: &str, kind: &str) -> String {
    let plural = format!("{}s", kind.to_ascii_lowercase());
    if group.is_empty() {
        plural
    } else {
        format!("{plural}.{group}")
    }
}

fn controller_link(refs: Option<&Value>) -> Option<Link> {
    refs?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            Link {
                api_version: text("apiVersion"),
                kind: text("kind"),
                name: text("name"),
            }
        })
}

/// The object a link names: `Ok(None)` not found; `Ok(Some(next))` found, with its own controller.
async fn owner_above(
    workloads: &Workloads,
    namespace: &str,
    group: &str,
    link: &Link,
) -> Result<Option<Option<Link>>, String> {
    if let Some(kind) = WorkloadKind::of(group, &link.kind) {
        let found = workloads
            .cached_object(kind, namespace, &link.name)
            .await
            .map_err(|e| e.to_string())?;
        return Ok(found.map(|w| {
            w.controller().map(|c| Link {
                api_version: c.api_version.clone(),
                kind: c.kind.clone(),
                name: c.name.clone(),
            })
        }));
    }
    let found = workloads
        .object(namespace, &link.api_version, &link.kind, &link.name)
        .await
        .map_err(|e| e.to_string())?;
    Ok(found.map(|o| controller_link(o.pointer("/metadata/ownerReferences"))))
}

/// Walks the owner chain from the pod's controller (§4.3).
async fn owner_chain(
    workloads: &Workloads,
    namespace: &str,
    first: Link,
    kinds: WorkloadKinds<'_>,
) -> OwnerChain {
    let mut links = vec![first];
    while links.len() <= MAX_DEPTH {
        let link = links.last().expect("one link at least");
        let Some(group) = api_group(&link.api_version) else {
            break;
        };
        if !kinds.contains(group, &link.kind) {
            break;
        }
        let end = match owner_above(workloads, namespace, group, link).await {
            Ok(Some(Some(next))) => {
                links.push(next);
                continue;
            }
            Ok(Some(None)) => ChainEnd::Top,
            Ok(None) => ChainEnd::NotFound(format!(
                "{} {:?} not found",
                resource_of(group, &link.kind),
                link.name
            )),
            Err(e) => ChainEnd::Unreadable(e),
        };
        return OwnerChain { links, end };
    }
    OwnerChain {
        links,
        end: ChainEnd::Top,
    }
}

/// The target workload's replicas for percentages (§5.4 (c) 3): not found is 0; `replicasPathList` sums
/// those paths; the built-in kinds their `spec.replicas` (Job: `spec.parallelism`), CloneSet of any
/// version typed (the spec's recommendation); a whitelisted kind the value at its `replicasPath`.
///
/// # Errors
/// A read that failed, a replicas path that does not resolve.
pub async fn target_replicas(
    workloads: &Workloads,
    ws: &WorkloadSpread,
    custom: &[whitelist::CustomWorkload],
) -> Result<i32, String> {
    let Some(target) = &ws.spec.target_ref else {
        return Ok(0);
    };
    let namespace = ws.metadata.namespace.as_deref().unwrap_or("default");
    let Some(group) = api_group(&target.api_version) else {
        return Ok(0);
    };
    let paths = ws
        .spec
        .target_filter
        .as_ref()
        .map(|f| f.replicas_path_list.as_slice())
        .unwrap_or_default();
    if paths.is_empty()
        && let Some(kind) = WorkloadKind::of(group, &target.kind)
    {
        let found = workloads
            .cached_object(kind, namespace, &target.name)
            .await
            .map_err(|e| e.to_string())?;
        // The API server defaults replicas to 1.
        return Ok(found.map_or(0, |w| w.replicas.unwrap_or(1)));
    }
    let Some(object) = workloads
        .object(namespace, &target.api_version, &target.kind, &target.name)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(0);
    };
    if !paths.is_empty() {
        let mut sum: i64 = 0;
        for path in paths {
            sum += replicas_at(&object, path)?;
        }
        return Ok(sum.clamp(0, i64::from(i32::MAX)) as i32);
    }
    if group == "batch" && target.kind == "Job" {
        return Ok(object
            .pointer("/spec/parallelism")
            .and_then(Value::as_i64)
            .map_or(1, |p| p as i32));
    }
    let path = custom
        .iter()
        .find(|c| c.workload.group == group && c.workload.kind == target.kind)
        .map(|c| c.replicas_path.as_str())
        .unwrap_or("");
    Ok(replicas_at(&object, path).map_or(0, |r| r as i32))
}

/// A random version-4 UUID, for a review that came without a request UID (the API server always sends one).
fn random_uuid() -> String {
    use std::hash::BuildHasher;
    let draw = || std::collections::hash_map::RandomState::new().hash_one(0u8);
    let (hi, lo) = (draw(), draw());
    let bytes: [u8; 16] = {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&hi.to_be_bytes());
        b[8..].copy_from_slice(&lo.to_be_bytes());
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        b
    };
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The parts of a pod the facts read (its metadata and status), without building its spec: most of a
/// pod's bytes, which the step's own decision reads later if it needs them. `None` when the text is not an
/// object, or its metadata or status is not one (or null).
fn pod_head(text: &str) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        metadata: Value,
        #[serde(default)]
        status: Value,
    }
    let head: Head = serde_json::from_str(text).ok()?;
    let part = |v: Value| matches!(v, Value::Object(_) | Value::Null).then_some(v);
    Some(serde_json::json!({"metadata": part(head.metadata)?, "status": part(head.status)?}))
}

/// The facts of the WorkloadSpread step of a pod CREATE, when it may act (gate on, a pod with a controller
/// in a namespace with a WorkloadSpread); `None` otherwise.
pub async fn for_create(
    cluster: &Cluster,
    gates: &FeatureGates,
    kruise_namespace: &str,
    req: &AdmissionRequest,
) -> Option<SpreadFacts> {
    if !gates.enabled(workloadspread::GATE)
        || req.operation != Operation::Create
        || !req.sub_resource.is_empty()
        || req.resource.resource != "pods"
    {
        return None;
    }
    // The request's namespace is the pod's (the API server fills one from the other): checked before the
    // pod is read, so a pod create in a namespace without WorkloadSpread reads nothing more.
    let request_namespace = req
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    if !cluster.has_workload_spreads(request_namespace) {
        return None;
    }
    let pod = pod_head(req.object()?.get())?;
    let first = controller_link(pod.pointer("/metadata/ownerReferences"))?;
    let namespace = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(request_namespace)
        .to_owned();
    let workloads = workloads_of(cluster)?;
    let custom = custom_workloads(cluster, kruise_namespace).await;
    let kinds = WorkloadKinds { custom: &custom };
    if !create::wants(&pod, kinds) {
        return None;
    }
    let chain = owner_chain(&workloads, &namespace, first, kinds).await;
    let mut facts = SpreadFacts {
        chain,
        custom: Vec::new(),
        replicas: None,
        generated_uid: if req.uid.is_empty() {
            random_uuid()
        } else {
            req.uid.clone()
        },
    };
    facts.custom = custom;
    if let Ok(Some(ws)) = create::spread_for(&pod, &namespace, cluster, &facts)
        && subset::needs_replicas(&ws)
    {
        facts.replicas = Some(target_replicas(&workloads, &ws, &facts.custom).await);
    }
    Some(facts)
}

/// The replicas of the target of the WorkloadSpread a deleted or evicted pod names, when one of its
/// subsets is a percentage (§5.9 step 5 initialises the pod's version list as creation does).
pub async fn for_delete(
    cluster: &Cluster,
    gates: &FeatureGates,
    kruise_namespace: &str,
    req: &AdmissionRequest,
) -> Option<Result<i32, String>> {
    if !gates.enabled(workloadspread::GATE) {
        return None;
    }
    let deletion = delete::classify(req, cluster).ok()??;
    let (ws, _) = delete::spread_for(&deletion, cluster)?;
    if !subset::needs_replicas(&ws) {
        return None;
    }
    let workloads = workloads_of(cluster)?;
    let custom = custom_workloads(cluster, kruise_namespace).await;
    Some(target_replicas(&workloads, &ws, &custom).await)
}

/// [`for_create`] within [`FACTS_TIMEOUT`]: a timeout is a failed read of the owner chain.
pub async fn for_create_within(
    cluster: &Cluster,
    gates: &FeatureGates,
    kruise_namespace: &str,
    req: &AdmissionRequest,
) -> Option<SpreadFacts> {
    match tokio::time::timeout(
        FACTS_TIMEOUT,
        for_create(cluster, gates, kruise_namespace, req),
    )
    .await
    {
        Ok(facts) => facts,
        Err(_) => {
            tracing::warn!(uid = %req.uid, timeout_s = FACTS_TIMEOUT.as_secs(),
                "reading the pod's owners for WorkloadSpread timed out");
            // No owner known: no WorkloadSpread manages the pod, nothing is reserved.
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_uuids_are_version_4_and_differ() {
        let (a, b) = (random_uuid(), random_uuid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn the_pod_head_holds_metadata_and_status_only() {
        let text = r#"{"metadata":{"name":"p","ownerReferences":[{"kind":"ReplicaSet"}]},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Pending"}}"#;
        assert_eq!(
            pod_head(text),
            Some(
                serde_json::json!({"metadata": {"name": "p", "ownerReferences": [{"kind": "ReplicaSet"}]},
                "status": {"phase": "Pending"}})
            )
        );
        assert_eq!(
            pod_head(r#"{"spec":{}}"#),
            Some(serde_json::json!({"metadata": null, "status": null}))
        );
        assert_eq!(pod_head(r#"{"metadata":"x"}"#), None);
        assert_eq!(pod_head("[1]"), None);
        assert_eq!(pod_head("{"), None);
    }

    #[test]
    fn not_found_texts_name_the_resource_as_the_api_server_does() {
        assert_eq!(resource_of("apps", "ReplicaSet"), "replicasets.apps");
        assert_eq!(resource_of("batch", "Job"), "jobs.batch");
        assert_eq!(resource_of("", "Pod"), "pods");
    }
}
