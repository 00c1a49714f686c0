//! `kruise-webhook review`: the admission chain offline (DECISIONS 17).
//!
//! Runs exactly the webhooks the apiserver would call for the request under the shipped configurations
//! (rules, namespaceSelector against the given Namespace objects, objectSelector against the object),
//! mutating ones first, then validating ones on the mutated object, with the server's own code. Prints one
//! AdmissionReview with the combined response. Status writes the answer depends on (a PodUnavailableBudget
//! spend, a WorkloadSpread creation or deletion record) are not performed: the review lists them under
//! `statusWrites`, each with the status the object would be written with. The WorkloadSpread subset a new pod
//! would get (its patched annotation `apps.kruise.io/matched-workloadspread`) is printed as `workloadSpread`.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use kruise_webhooks::admission::{self, AdmissionRequest, AdmissionResponse, AdmissionReview};
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::json::{RawJson, patch};
use kruise_webhooks::registry::{self, WebhookSpec};
use kruise_webhooks::verdict::StatusIntent;
use kruise_webhooks::{FeatureGates, Verdict};

use crate::cache::{self, Cluster};
use crate::config::ReviewConfig;
use crate::server::admission::{Env, decide, rfc3339_now};

/// Input that cannot be reviewed; printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// Bad `--objects`.
    #[error(transparent)]
    Objects(#[from] cache::LoadError),
    /// The request cannot be read.
    #[error("{source_name}: {message}")]
    Request {
        /// File name or `stdin`.
        source_name: String,
        /// What is wrong.
        message: String,
    },
}

/// The labels the apiserver matches a namespaceSelector against: the Namespace object's own for namespaces,
/// the request namespace's for namespaced objects, none for cluster-scoped objects.
pub fn namespace_labels(
    cluster: &FixtureCluster,
    req: &AdmissionRequest,
) -> Option<std::collections::BTreeMap<String, String>> {
    if req.resource.group.is_empty() && req.resource.resource == "namespaces" {
        let obj = req.old_object().or(req.object())?;
        let mut labels = admission::labels_of(obj);
        labels.insert("kubernetes.io/metadata.name".into(), req.name.clone());
        return Some(labels);
    }
    req.namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .map(|n| cluster.namespace_labels(n))
}

/// The webhooks the apiserver would call for this request, mutating first, each once.
pub fn webhooks_for(
    cluster: &FixtureCluster,
    gates: &FeatureGates,
    req: &AdmissionRequest,
) -> Vec<&'static WebhookSpec> {
    let labels = namespace_labels(cluster, req);
    let mut specs: Vec<&'static WebhookSpec> = Vec::new();
    for spec in registry::registered(gates, registry::Served::ALL) {
        if !specs.iter().any(|s| s.name == spec.name) && spec.would_call(req, labels.as_ref()) {
            specs.push(spec);
        }
    }
    specs.sort_by_key(|s| !s.mutating);
    specs
}

/// The answer of the chain and the status writes it would need (not performed offline).
#[derive(Debug)]
pub struct Reviewed {
    /// The combined response.
    pub response: AdmissionResponse,
    /// The status intents of the webhooks that ran, in order.
    pub status_writes: Vec<StatusIntent>,
    /// The WorkloadSpread placement the chain gave a new pod (`{"name", "subset"[, "uid"]}`), if any.
    pub placement: Option<serde_json::Value>,
}

/// The `apps.kruise.io/matched-workloadspread` annotation the response's patch sets on the request's object.
fn placement_of(req: &AdmissionRequest, response: &AdmissionResponse) -> Option<serde_json::Value> {
    use kruise_webhooks::workloadspread::annotation::{ANNOTATION, MatchedWorkloadSpread};
    let object = req.object_value()?;
    let ops = patch::from_json(serde_json::from_slice(&response.patch_bytes()?).ok()?).ok()?;
    let patched = patch::apply(&object, &ops).ok()?;
    let text = patched
        .pointer("/metadata/annotations")?
        .get(ANNOTATION)?
        .as_str()?;
    let before = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(serde_json::Value::as_str);
    if before == Some(text) {
        return None;
    }
    serde_json::to_value(MatchedWorkloadSpread::parse(text)?).ok()
}

/// A status intent as `review` prints it: the object, the resourceVersion the write would carry, the
/// status it would write.
pub fn status_write_json(intent: &StatusIntent) -> serde_json::Value {
    match intent {
        StatusIntent::BudgetSpend(spend) => serde_json::json!({
            "kind": "PodUnavailableBudget",
            "namespace": spend.budget.metadata.namespace,
            "name": spend.budget.metadata.name,
            "resourceVersion": spend.budget.metadata.resource_version,
            "pod": spend.pod,
            "operation": spend.operation,
            "status": spend.budget.status,
        }),
        StatusIntent::SpreadRecord(record) => serde_json::json!({
            "kind": "WorkloadSpread",
            "namespace": record.spread.metadata.namespace,
            "name": record.spread.metadata.name,
            "resourceVersion": record.spread.metadata.resource_version,
            "pod": record.pod,
            "operation": record.operation,
            "status": record.spread.status,
        }),
    }
}

/// Runs the chain on a decoded review.
pub async fn review(
    cluster: Arc<FixtureCluster>,
    gates: &FeatureGates,
    review: &AdmissionReview,
) -> AdmissionResponse {
    review_chain(cluster, gates, review).await.response
}

/// Runs the chain on a decoded review, keeping the status writes it would need.
pub async fn review_chain(
    cluster: Arc<FixtureCluster>,
    gates: &FeatureGates,
    review: &AdmissionReview,
) -> Reviewed {
    let specs = webhooks_for(&cluster, gates, &review.request);
    review_chain_of(cluster, gates, review, specs).await
}

/// [`review_chain`] through `specs` (mutating first), the webhooks the caller found called (`explain`, under
/// the configurations as installed).
pub async fn review_chain_of(
    cluster: Arc<FixtureCluster>,
    gates: &FeatureGates,
    review: &AdmissionReview,
    specs: Vec<&'static WebhookSpec>,
) -> Reviewed {
    let mut status_writes = Vec::new();
    let response = run_chain(cluster, gates, review, specs, &mut status_writes).await;
    Reviewed {
        placement: placement_of(&review.request, &response),
        response,
        status_writes,
    }
}

async fn run_chain(
    cluster: Arc<FixtureCluster>,
    gates: &FeatureGates,
    review: &AdmissionReview,
    specs: Vec<&'static WebhookSpec>,
    status_writes: &mut Vec<StatusIntent>,
) -> AdmissionResponse {
    let view = Cluster::Fixture(cluster);
    // A repeatable draw per request (fixed hasher keys, the request's uid), so `review` answers the same twice.
    let random = {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let fixed = BuildHasherDefault::<DefaultHasher>::default();
        (fixed.hash_one(&review.request.uid) >> 11) as f64 / (1u64 << 53) as f64
    };
    let env = Env {
        gates,
        kruise_namespace: "kruise-system",
        now: rfc3339_now(),
        random,
    };
    let original = review.request.object_value();
    let mut current = original.clone();
    let mut req = review.request.clone();
    let mut warnings = Vec::new();
    let mut audit = std::collections::BTreeMap::new();
    for spec in specs {
        let verdict = match decide(&view, &env, spec, &req).await {
            Ok(v) => v,
            Err(e) => return AdmissionResponse::from_error(&req.uid, &e),
        };
        tracing::info!(
            webhook = spec.name,
            allowed = verdict.is_allowed(),
            patch_ops = verdict.patch.len(),
            "webhook ran"
        );
        warnings.extend(verdict.warnings.iter().cloned());
        audit.extend(verdict.audit_annotations.clone());
        status_writes.extend(verdict.intents.iter().cloned());
        if !verdict.is_allowed() {
            let mut response = AdmissionResponse::from_verdict(&req.uid, &verdict);
            response.warnings = warnings;
            return response;
        }
        if spec.mutating && !verdict.patch.is_empty() {
            let Some(obj) = &current else { continue };
            match patch::apply(obj, &verdict.patch) {
                Ok(next) => {
                    // The next webhook sees the mutated object, as the apiserver sends it.
                    req.object = Some(RawJson::from_value(&next));
                    current = Some(next);
                }
                Err(e) => {
                    return AdmissionResponse::errored(
                        &req.uid,
                        500,
                        format!(
                            "webhook {} returned a patch that does not apply: {e}",
                            spec.name
                        ),
                    );
                }
            }
        }
    }
    let mut combined = Verdict::allow();
    if let (Some(before), Some(after)) = (&original, &current) {
        combined.patch = patch::diff(before, after);
    }
    combined.warnings = warnings;
    combined.audit_annotations = audit;
    AdmissionResponse::from_verdict(&req.uid, &combined)
}

/// Reads the inputs, runs the chain, returns the AdmissionReview JSON to print.
///
/// # Errors
/// [`ReviewError`] for unreadable or malformed input.
pub fn run(config: &ReviewConfig, stdin: impl Read) -> Result<Vec<u8>, ReviewError> {
    let cluster = cache::load_objects(&config.objects)?;
    let (source_name, bytes) = read_request(config.request.as_ref(), stdin)?;
    let decoded = decode(&source_name, &bytes)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReviewError::Request {
            source_name: "runtime".into(),
            message: e.to_string(),
        })?;
    let reviewed = runtime.block_on(review_chain(Arc::new(cluster), &config.gates, &decoded));
    let mut out = serde_json::json!({
        "apiVersion": decoded.api_version,
        "kind": "AdmissionReview",
        "response": reviewed.response,
    });
    if let Some(placement) = reviewed.placement {
        out["workloadSpread"] = placement;
    }
    if !reviewed.status_writes.is_empty() {
        out["statusWrites"] = reviewed
            .status_writes
            .iter()
            .map(status_write_json)
            .collect();
    }
    let mut text = serde_json::to_vec_pretty(&out).unwrap_or_default();
    text.push(b'\n');
    Ok(text)
}

pub(crate) fn read_request(
    path: Option<&PathBuf>,
    mut stdin: impl Read,
) -> Result<(String, Vec<u8>), ReviewError> {
    match path {
        Some(p) => {
            let name = p.display().to_string();
            std::fs::read(p)
                .map(|b| (name.clone(), b))
                .map_err(|e| ReviewError::Request {
                    source_name: name,
                    message: e.to_string(),
                })
        }
        None => {
            let mut buf = Vec::new();
            stdin
                .read_to_end(&mut buf)
                .map_err(|e| ReviewError::Request {
                    source_name: "stdin".into(),
                    message: e.to_string(),
                })?;
            Ok(("stdin".into(), buf))
        }
    }
}

/// Accepts JSON or YAML AdmissionReviews.
pub(crate) fn decode_value(
    source_name: &str,
    bytes: &[u8],
) -> Result<serde_json::Value, ReviewError> {
    let err = |message: String| ReviewError::Request {
        source_name: source_name.into(),
        message,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(err("empty input".into()));
    }
    serde_saphyr::from_slice_with_options(bytes, kruise_webhooks::fixture::yaml_options())
        .map_err(|e| err(format!("not valid YAML/JSON: {e}")))
}

fn decode(source_name: &str, bytes: &[u8]) -> Result<AdmissionReview, ReviewError> {
    let err = |message: String| ReviewError::Request {
        source_name: source_name.into(),
        message,
    };
    let trimmed = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map(|i| bytes[i]);
    let json = if matches!(trimmed, Some(b'{')) || trimmed.is_none() {
        bytes.to_vec()
    } else {
        let value: serde_json::Value =
            serde_saphyr::from_slice_with_options(bytes, kruise_webhooks::fixture::yaml_options())
                .map_err(|e| err(format!("not valid YAML/JSON: {e}")))?;
        serde_json::to_vec(&value).map_err(|e| err(e.to_string()))?
    };
    admission::decode_review(&json).map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_prints_the_subset_and_the_workloadspread_record() {
        let case = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/workloadspread-pod/01-first-pod-status-empty");
        let config = ReviewConfig {
            objects: vec![case.join("cluster.yaml")],
            request: Some(case.join("review.json")),
            gates: FeatureGates::default(),
        };
        let out: serde_json::Value =
            serde_json::from_slice(&run(&config, std::io::empty()).unwrap()).unwrap();
        assert_eq!(
            out["workloadSpread"],
            serde_json::json!({"name": "ws", "subset": "a"})
        );
        let write = &out["statusWrites"][0];
        assert_eq!(write["kind"], "WorkloadSpread");
        assert_eq!(write["name"], "ws");
        assert_eq!(write["resourceVersion"], "10");
        assert_eq!(write["pod"], "cs-aaaaa");
        let a = &write["status"]["versionedSubsetStatuses"]["versionIgnored"][0];
        assert_eq!(a["missingReplicas"], 1);
        assert!(a["creatingPods"]["cs-aaaaa"].is_string());
    }
}
