//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod apiserver;
pub mod mock_api;
pub mod replica;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use kruise_webhook::AppState;
use kruise_webhook::cache::Cluster;
use kruise_webhook::config::ServeConfig;
use kruise_webhooks::fixture::FixtureCluster;
use serde_json::Value;
use tower::ServiceExt;

/// Polls `done` every 10 ms until it holds; panics naming `what` when it has not within `within`.
pub async fn until_within(what: &str, within: std::time::Duration, mut done: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(within, async {
        while !done() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "timed out after {within:?} waiting for {what}"
    );
}

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
pub async fn post(
    state: &AppState,
    path: &str,
    body: impl Into<Body>,
    content_type: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::post(path);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let response = kruise_webhook::app(state.clone())
        .oneshot(req.body(body.into()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Reads a fixture file.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The directories directly under `dir`, sorted.
pub fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// A TLS client that trusts only the PEM CA bundle given (HTTP/1.1 and h2 offered via ALPN).
pub fn tls_client(ca_pem: &str, reuse_connections: bool) -> reqwest::Client {
    kruise_webhook::install_crypto_provider();
    let tls = kruise_webhook::server::tls::client_config(ca_pem.as_bytes(), &[b"h2", b"http/1.1"])
        .unwrap();
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(std::time::Duration::from_secs(10));
    if !reuse_connections {
        builder = builder.pool_max_idle_per_host(0);
    }
    builder.build().unwrap()
}

/// Starts the standalone server on loopback over the example cluster, certificates in a temp dir.
pub async fn start_standalone(
    configure: impl FnOnce(&mut ServeConfig),
) -> (kruise_webhook::Server, tempfile::TempDir) {
    kruise_webhook::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServeConfig::for_loopback(
        vec![root().join("examples/cluster.yaml")],
        dir.path().to_owned(),
    );
    configure(&mut config);
    let server = kruise_webhook::start(config).await.unwrap();
    (server, dir)
}
