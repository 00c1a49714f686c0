//! serde types for the Kruise custom resources the webhooks read. Every type keeps the fields it does not
//! model (`extra`, or the raw JSON), so nothing a user stored is lost when it is written back or injected.

pub mod pod;
pub mod revision;
pub mod sidecarset;
