//! kruise-webhook: OpenKruise's admission webhooks, in Rust. The binary's library: everything that does I/O.
//! The policies themselves live in the pure `kruise-webhooks` crate.

pub mod audit;
pub mod cache;
pub mod certs;
pub mod cli;
pub mod config;
pub mod controller;
pub mod events;
pub mod explain;
pub mod metrics;
pub mod random;
pub mod review;
pub mod server;
pub mod spread_facts;
pub mod status;
pub mod telemetry;
pub mod workload;

pub use server::{AppState, Server, app, serve, start};

/// Installs ring as rustls' process-wide crypto provider (idempotent: later calls are no-ops).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
