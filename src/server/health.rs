//! `/healthz` (the process serves) and `/readyz` (a certificate is loaded, every cache synced, with external
//! certificates the webhook configurations trust their CA, and we are not shutting down), in controller-runtime's
//! probe format.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use crate::server::AppState;

/// Flags readiness is computed from.
#[derive(Debug, Default)]
pub struct Readiness {
    /// Set on SIGTERM: the apiserver should stop sending us reviews.
    pub shutting_down: AtomicBool,
    /// External certificates only: a served webhook of our configurations carries a caBundle other than
    /// `ca.crt` (cert-manager has not injected it yet), so the apiserver cannot call us.
    pub ca_bundle_mismatch: AtomicBool,
}

impl Readiness {
    /// Marks the start of shutdown.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }
}

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

/// `/readyz`: 200 `ok`, or 500 naming the failed checks (`?verbose` lists every check).
pub async fn ready(
    State(state): State<Arc<AppState>>,
    Query(q): Query<Verbose>,
) -> impl IntoResponse {
    let checks = [
        ("serving-certificate", state.certs.loaded()),
        ("informer-caches-synced", state.cluster.synced()),
        (
            "ca-bundle-injected",
            !state.readiness.ca_bundle_mismatch.load(Ordering::Acquire),
        ),
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
    }
    if ok {
        body.push_str("readyz check passed\n");
        (StatusCode::OK, body)
    } else {
        body.push_str("readyz check failed\n");
        (StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}
