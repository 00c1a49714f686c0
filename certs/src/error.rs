//! The one error type of this crate (STYLE.md section 3): what could not be read, checked or generated.

use x509_parser::error::{PEMError, X509Error};

/// Why reading, checking or generating certificates failed. `what` names the object, e.g. `cert.pem`.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// A Secret value is not UTF-8 text, so it cannot be PEM.
    #[error("reading secret key {key}: the value is not UTF-8 text")]
    NotUtf8 {
        /// The Secret data key.
        key: String,
    },
    /// A PEM block is malformed (bad header, bad base64, missing end line).
    #[error("decoding {what} PEM: {source}")]
    Pem {
        /// The object being decoded.
        what: String,
        /// The PEM decoder's error.
        #[source]
        source: PEMError,
    },
    /// The text holds no PEM block of the kind expected.
    #[error("decoding {what} PEM: no {expected} block found")]
    NoPem {
        /// The object being decoded.
        what: String,
        /// The PEM label(s) looked for.
        expected: &'static str,
    },
    /// A PEM block has a label this object cannot hold.
    #[error("decoding {what} PEM: unexpected block {label:?}, expected {expected}")]
    UnexpectedPem {
        /// The object being decoded.
        what: String,
        /// The label found.
        label: String,
        /// The PEM label(s) looked for.
        expected: &'static str,
    },
    /// A `CERTIFICATE` block is not a parsable X.509 certificate.
    #[error("parsing {what} certificate: {source}")]
    Certificate {
        /// The object being parsed.
        what: String,
        /// The X.509 parser's error.
        #[source]
        source: X509Error,
    },
    /// A private key cannot be loaded (unsupported algorithm or encoding, or rejected by ring).
    #[error("loading {what} private key: {source}")]
    Key {
        /// The object being loaded.
        what: String,
        /// rcgen's (ring's) error.
        #[source]
        source: rcgen::Error,
    },
    /// A private key does not belong to the certificate it is paired with.
    #[error("checking {what}: the private key does not match the certificate")]
    KeyMismatch {
        /// The pair being checked.
        what: String,
    },
    /// A certificate does not chain to the CA it must chain to.
    #[error("checking {what}: {reason}")]
    Untrusted {
        /// The certificate being checked.
        what: String,
        /// Which link is missing.
        reason: String,
    },
    /// The CA cannot sign certificates (not a CA, key unusable, or a trial signature failed).
    #[error("signing with the CA: {reason}")]
    CaUnusable {
        /// Why the CA cannot sign.
        reason: String,
    },
    /// rcgen failed to generate a key or a certificate.
    #[error("generating {what}: {source}")]
    Generate {
        /// What was being generated.
        what: &'static str,
        /// rcgen's error.
        #[source]
        source: rcgen::Error,
    },
    /// A plan other than `Fresh`/`Replace` was executed without the bundle it was planned from.
    #[error("carrying out plan {plan}: it needs the current certificate bundle, none was given")]
    MissingCurrent {
        /// The plan's name.
        plan: &'static str,
    },
}
