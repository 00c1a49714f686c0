//! `/healthz` (the process serves) and `/readyz` (a certificate is loaded, every cache synced, our caBundle seen
//! in place in the webhook configurations, and we are not shutting down: DECISIONS 22), in controller-runtime's
//! probe format.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::state::AppState;
use crate::cache::sync::SyncState;

/// The readiness flags, defined below the handlers that read them ([`super::readiness`]).
pub use super::readiness::{CaBundleSeen, Readiness};

/// `/healthz`: 200 `ok` while the process serves.
pub async fn live() -> &'static str {
    "ok"
}

/// `?verbose`.
#[derive(serde::Deserialize)]
pub struct Verbose {
    /// Present: list every check.
    pub verbose: Option<String>,
}

/// The readiness check of the informer caches.
pub const CACHES_CHECK: &str = "informer-caches-synced";

/// Under [`CACHES_CHECK`], a line per informer store (with `verbose`; else only those not listed yet):
/// `[+]informer-cache/pods ok`, or `[-]informer-cache/pods failed: not listed yet, last error 12s ago: ...`.
fn caches(body: &mut String, states: &[Arc<SyncState>], verbose: bool) {
    let now = std::time::SystemTime::now();
    for state in states {
        if state.synced() {
            if verbose {
                body.push_str(&format!("[+]informer-cache/{} ok\n", state.resource()));
            }
        } else {
            body.push_str(&format!(
                "[-]informer-cache/{} failed: {}\n",
                state.resource(),
                state.waiting_reason(now)
            ));
        }
    }
}

/// `/readyz`: 200 `ok`, or 500 naming the failed checks (`?verbose` lists every check).
pub async fn ready(
    State(state): State<Arc<AppState>>,
    Query(q): Query<Verbose>,
) -> impl IntoResponse {
    let checks = [
        ("serving-certificate", state.certs.loaded()),
        (CACHES_CHECK, state.cluster.synced()),
        ("ca-bundle-injected", state.readiness.ca_bundle_in_place()),
        (
            "not-shutting-down",
            !state.readiness.shutting_down.load(Ordering::Acquire),
        ),
    ];
    let ok = checks.iter().all(|(_, ok)| *ok);
    if ok && q.verbose.is_none() {
        return (StatusCode::OK, "ok".to_owned());
    }
    let mut body = String::new();
    for (name, passed) in checks {
        if passed {
            body.push_str(&format!("[+]{name} ok\n"));
        } else {
            body.push_str(&format!("[-]{name} failed\n"));
        }
        if name == CACHES_CHECK {
            caches(&mut body, &state.cluster.sync_states(), q.verbose.is_some());
        }
    }
    if ok {
        body.push_str("readyz check passed\n");
        (StatusCode::OK, body)
    } else {
        body.push_str("readyz check failed\n");
        (StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}
