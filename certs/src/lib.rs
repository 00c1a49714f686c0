//! The webhook's CA and serving certificates (DECISIONS 15; OpenKruise's behaviour in
//! spec/webhook-server.md section 6.3). Pure planning and in-memory generation: no I/O, no clock.
//!
//! One CA per cluster lives in the Secret [`SECRET_NAME`] ([`CertBundle`], OpenKruise's keys plus
//! `ca-bundle.pem`). Each sync the server reads it, asks [`plan`] what to do at `now`, carries that out
//! with [`execute`], writes the Secret (optimistic concurrency) and the cert dir
//! ([`files_up_to_date`]), and publishes [`CertBundle::ca_bundle_pem`] as the caBundle. CA rotation
//! overlaps old and new CA in the caBundle (below). External certificates (cert-manager layout) are
//! checked by [`from_external`].
//!
//! # CA rotation
//! The stage is read from the bundle itself, so no state is kept besides the Secret:
//! - `ca-cert.pem` is always the newest CA, the one that signs; `ca-bundle.pem` holds it plus older CAs.
//! - [`CertPlan::StartCaRotation`]: a new CA becomes `ca-cert.pem`, the bundle is old + new, the served
//!   certificate (from the old CA) is unchanged. Its start time is the new CA's `not_before + CLOCK_SKEW`.
//! - Serving certificate signed by an older CA of the bundle: once the new CA is `propagation` old,
//!   every apiserver trusts it, so [`CertPlan::PromoteNewCa`] issues the serving certificate from it.
//! - Serving certificate signed by the current CA while the bundle holds other CAs: once the serving
//!   certificate is `propagation` old, every replica serves it, so [`CertPlan::FinishCaRotation`]
//!   leaves only the current CA in the bundle.
//!
//! Every step keeps both the certificate served before and the one served after trusted by both the
//! caBundle published before and the one published after, so, given that a Secret change reaches every
//! replica and the apiserver within `propagation`, nothing served is ever untrusted.
//!
//! Keys we generate are ECDSA P-256 in PKCS#8; OpenKruise's RSA keys in PKCS#1 are read and kept.
//! ring is the only crypto provider.

mod bundle;
mod error;
mod external;
mod inspect;
mod issue;
mod pem;
mod plan;
mod policy;
#[cfg(test)]
mod testutil;

pub use bundle::{
    CA_BUNDLE_KEY, CA_CERT_KEY, CA_KEY_KEY, CERT_KEY, CertBundle, KEY_KEY, SECRET_NAME,
    TLS_CRT_KEY, TLS_KEY_KEY, files_up_to_date,
};
pub use error::CertError;
pub use external::from_external;
pub use inspect::{CertInfo, inspect};
pub use issue::{CA_COMMON_NAME, execute};
pub use plan::{CertPlan, plan};
pub use policy::{CLOCK_SKEW, Policy};
