//! The pure admission policy library of kruise-webhook.
//!
//! Every webhook here is a function from (admission request, read-only cluster snapshot, facts the I/O layer
//! fetched) to a [`Verdict`]. Nothing in this crate reads the clock, spawns, locks or talks to the API server:
//! that is what makes it testable on fixture AdmissionReviews and fast (STYLE.md §2).
//!
//! Entry points: [`admission`] (the AdmissionReview wire format), [`registry`] (which webhooks exist, their
//! paths and rules), [`deletion_protection`], [`containerrecreaterequest`] (the CRR mutating webhook),
//! [`conversion`] (CRD conversion), [`fixture`] (a cluster view loaded from YAML for tests, benches and
//! `kruise-webhook review`), [`validation`] (Kubernetes object validation with Go's paths and texts, shared by
//! the validating webhooks), [`json`] (reading request JSON in place, patches, and JSON as Go writes it).

pub mod admission;
pub mod api;
pub mod containerrecreaterequest;
pub mod conversion;
pub mod de;
pub mod deletion_protection;
pub mod error;
pub mod features;
pub mod fixture;
pub mod json;
pub mod launch_priority;
pub mod native_sidecar;
pub mod persistentpodstate;
pub mod pod;
pub mod pod_readiness;
pub mod podunavailablebudget;
pub mod quantity;
pub mod registry;
pub mod selector;
pub mod sidecar_terminator;
pub mod sidecarset;
pub mod validation;
pub mod verdict;
pub mod view;
pub mod workloadspread;

pub use error::WebhookError;
pub use features::FeatureGates;
pub use verdict::{Decision, Denial, SideEffect, Verdict};
pub use view::ClusterView;
