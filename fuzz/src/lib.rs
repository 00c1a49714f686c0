//! What the fuzz targets share: the cases of `cases.txt` (a request, the cluster it is decided in, the
//! gates), loaded once, and the offline admission chain `kruise-webhook review` runs, which calls every
//! webhook the apiserver would call for the request with the server's own code.

use std::sync::{Arc, OnceLock};

use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::{self, AdmissionReview};
use kruise_webhooks::fixture::FixtureCluster;
use serde_json::Value;

/// One line of `cases.txt`, its files included at build time.
pub struct Case {
    /// The line.
    pub name: &'static str,
    /// The AdmissionReview JSON.
    pub review: &'static str,
    /// The cluster YAML (empty: no objects).
    pub cluster: &'static str,
    /// The fixture's expected.json (empty for the examples): only its `gates` is read.
    pub expected: &'static str,
}

/// Every case, in the order of `cases.txt`.
pub const CASES: &[Case] = include!(concat!(env!("OUT_DIR"), "/cases.rs"));

/// A case ready to run.
pub struct Loaded {
    /// Its line in `cases.txt`.
    pub name: &'static str,
    /// Its cluster.
    pub cluster: Arc<FixtureCluster>,
    /// Its gates.
    pub gates: FeatureGates,
    /// Its request.
    pub review: &'static str,
    /// Its request with the object (or, for a DELETE, the old object) cut out: the text before and after it.
    pub templates: Vec<(String, String)>,
}

/// The cases, loaded on first use.
pub fn cases() -> &'static [Loaded] {
    static LOADED: OnceLock<Vec<Loaded>> = OnceLock::new();
    LOADED.get_or_init(|| CASES.iter().map(load).collect())
}

/// The case an input's first byte picks, and the rest of the input.
pub fn pick(data: &[u8]) -> Option<(&'static Loaded, &[u8])> {
    let (&first, rest) = data.split_first()?;
    let cases = cases();
    Some((&cases[usize::from(first) % cases.len()], rest))
}

fn load(case: &Case) -> Loaded {
    let mut cluster = FixtureCluster::default();
    if !case.cluster.is_empty() {
        cluster
            .load_str(case.cluster, case.name)
            .unwrap_or_else(|e| panic!("{}: cluster: {e}", case.name));
    }
    let gates = if case.expected.is_empty() {
        FeatureGates::default()
    } else {
        let expected: Value = serde_json::from_str(case.expected)
            .unwrap_or_else(|e| panic!("{}: expected.json: {e}", case.name));
        let spec = expected.get("gates").and_then(Value::as_str).unwrap_or("");
        FeatureGates::parse(spec).unwrap_or_else(|e| panic!("{}: gates: {e}", case.name))
    };
    Loaded {
        name: case.name,
        cluster: Arc::new(cluster),
        gates,
        review: case.review,
        templates: templates(case),
    }
}

/// The review text around each of its objects that is present (`object`, then `oldObject`).
fn templates(case: &Case) -> Vec<(String, String)> {
    const MARK: &str = "\u{1}kruise-webhook-fuzz\u{1}";
    let review: Value =
        serde_json::from_str(case.review).unwrap_or_else(|e| panic!("{}: review: {e}", case.name));
    let mut out = Vec::new();
    for field in ["object", "oldObject"] {
        if review["request"][field].is_null() {
            continue;
        }
        let mut marked = review.clone();
        marked["request"][field] = Value::String(MARK.to_owned());
        let text = marked.to_string();
        let quoted = Value::String(MARK.to_owned()).to_string();
        let (before, after) = text.split_once(&quoted).expect("the mark is written once");
        out.push((before.to_owned(), after.to_owned()));
    }
    assert!(
        !out.is_empty(),
        "{}: the review carries no object",
        case.name
    );
    out
}

/// The runtime the chain's async steps run on (a fixture cluster answers at once; nothing waits).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    })
}

/// Decodes `body` as the server does and, when it is an AdmissionReview, runs the offline chain on it in
/// `case`'s cluster, then writes the answer as the server and `review` would.
pub fn review(case: &Loaded, body: &[u8]) {
    let Ok(decoded) = admission::decode_review(body) else {
        return;
    };
    run(case, &decoded);
}

/// Runs the chain on a decoded review and encodes what it answered.
pub fn run(case: &Loaded, decoded: &AdmissionReview) {
    let reviewed = runtime().block_on(kruise_webhook::review::review_chain(
        case.cluster.clone(),
        &case.gates,
        decoded,
    ));
    let encoded = admission::encode_review(Some(decoded.api_version), &reviewed.response);
    serde_json::from_slice::<Value>(&encoded).expect("the answer is JSON");
    if let Some(patch) = reviewed.response.patch_bytes() {
        serde_json::from_slice::<Value>(&patch).expect("the patch is JSON");
    }
    for intent in &reviewed.status_writes {
        kruise_webhook::review::status_write_json(intent);
    }
}
