//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use kruise_webhook::cache::Cluster;
use kruise_webhook::config::ServeConfig;
use kruise_webhook::AppState;
use kruise_webhooks::fixture::FixtureCluster;
use serde_json::Value;
use tower::ServiceExt;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// App state over a fixture cluster, with the given gates.
pub fn state(cluster: FixtureCluster, gates: &str) -> AppState {
    let mut config = ServeConfig::for_loopback(Vec::new(), std::env::temp_dir());
    config.gates = gates.parse().expect("valid gates");
    AppState::new(config, Cluster::Fixture(Arc::new(cluster)))
}

/// POSTs `body` to `path` of the Router; returns HTTP status and parsed JSON body (Null when not JSON).
pub async fn post(state: &AppState, path: &str, body: impl Into<Body>, content_type: Option<&str>) -> (StatusCode, Value) {
    let mut req = Request::post(path);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let response = kruise_webhook::app(state.clone()).oneshot(req.body(body.into()).unwrap()).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Reads a fixture file.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
