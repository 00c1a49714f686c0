//! Shared test helpers: fixed times, the default policy, fresh bundles and the OpenSSL-made fixtures
//! (`testdata/README.md` says how they were made).

use std::collections::BTreeMap;

use time::OffsetDateTime;
use time::macros::datetime;

use crate::{CertBundle, CertPlan, Policy, execute};

/// A fixed "now" for generated bundles.
pub(crate) const T0: OffsetDateTime = datetime!(2030-01-01 00:00 UTC);

/// An OpenKruise Secret's CA certificate (RSA-2048).
pub(crate) const OK_CA_CERT: &str = include_str!("testdata/openkruise/ca-cert.pem");
/// An OpenKruise Secret's CA key (RSA-2048, PKCS#1).
pub(crate) const OK_CA_KEY: &str = include_str!("testdata/openkruise/ca-key.pem");
/// An OpenKruise Secret's serving certificate.
pub(crate) const OK_CERT: &str = include_str!("testdata/openkruise/cert.pem");
/// An OpenKruise Secret's serving key (RSA-2048, PKCS#1).
pub(crate) const OK_KEY: &str = include_str!("testdata/openkruise/key.pem");
/// A cert-manager style CA (ECDSA P-256).
pub(crate) const EXTERNAL_CA: &str = include_str!("testdata/external/ca.crt");
/// A cert-manager style serving certificate signed by [`EXTERNAL_CA`].
pub(crate) const EXTERNAL_TLS_CRT: &str = include_str!("testdata/external/tls.crt");
/// Its key in SEC1 (`EC PRIVATE KEY`).
pub(crate) const EXTERNAL_TLS_KEY: &str = include_str!("testdata/external/tls.key");

/// The default policy for OpenKruise's service name.
pub(crate) fn policy() -> Policy {
    Policy::new(
        "kruise-webhook-service.kruise-system.svc",
        Vec::<String>::new(),
    )
}

/// A bundle made by `Fresh` at `now` with the default policy.
pub(crate) fn fresh(now: OffsetDateTime) -> CertBundle {
    execute(&CertPlan::Fresh, None, now, &policy()).expect("fresh bundle")
}

/// The data map of a Secret written by OpenKruise: its six keys, no `ca-bundle.pem`.
pub(crate) fn openkruise_secret_data() -> BTreeMap<String, Vec<u8>> {
    [
        ("ca-cert.pem", OK_CA_CERT),
        ("ca-key.pem", OK_CA_KEY),
        ("cert.pem", OK_CERT),
        ("tls.crt", OK_CERT),
        ("key.pem", OK_KEY),
        ("tls.key", OK_KEY),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
    .collect()
}
