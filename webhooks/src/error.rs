//! Failures to decide (as opposed to denials, which are [`crate::Verdict`]s). DECISIONS 14 maps them to codes.

/// A webhook could not decide on a request.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The request's object is not what the route expects (HTTP-level 400 inside the review).
    #[error("{0}")]
    Decode(String),
    /// The request names a version the handler does not serve.
    #[error("unsupported version: {0}")]
    UnsupportedVersion(String),
    /// A custom resource in the request fails validation (422).
    #[error("{kind} {name} is invalid: {reason}")]
    InvalidSpec {
        /// The kind of the object.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A step of the webhook failed on this request (500), with OpenKruise's own text for it (e.g. a corrupt
    /// annotation, a missing ControllerRevision): answered verbatim (DECISIONS 14).
    #[error("{0}")]
    Failed(String),
    /// A bug or an impossible state (500).
    #[error("internal error: {0}")]
    Internal(String),
}

impl WebhookError {
    /// The `status.code` this error is answered with (DECISIONS 14).
    pub fn http_code(&self) -> u16 {
        match self {
            Self::Decode(_) | Self::UnsupportedVersion(_) => 400,
            Self::InvalidSpec { .. } => 422,
            Self::Failed(_) | Self::Internal(_) => 500,
        }
    }

    /// A decode error with the decoder's own message, as controller-runtime reports it.
    pub fn decode(err: impl std::fmt::Display) -> Self {
        Self::Decode(err.to_string())
    }
}
