//! Kubernetes object validation shared by the validating webhooks: the subset of apimachinery's
//! validation and of `k8s.io/kubernetes/pkg/apis/core/validation` that OpenKruise's validators call, with
//! Go's field paths and message texts (Kubernetes v1.32, apimachinery v0.32).
//!
//! The files follow Kubernetes' own sections, so that a rule is found beside its Go counterpart:
//!
//! - [`field_error`]: `field.Error` / `field.ErrorList` and their texts (`pkg/util/validation/field`);
//! - [`syntax`]: names and values (`pkg/util/validation`: `IsQualifiedName`, `IsDNS1123Label`, ...);
//! - [`meta`]: object metadata, labels, annotations, label selectors (`pkg/api/validation`,
//!   `pkg/apis/meta/v1/validation`);
//! - [`scheduling`]: node selector terms, preferred scheduling terms and tolerations (`pkg/apis/core/validation`);
//! - [`apps`]: the rollout rules of `pkg/apis/apps/validation` (`ValidatePositiveIntOrPercent`);
//! - the pod spec ([`pod::validate_pod_spec`], `pkg/apis/core/validation`), in the sections of Go's file:
//!   `volumes`, `containers` (ports, env, volume mounts and devices), [`downward_api`] (field and resource
//!   selectors), `probes` (probes and lifecycle handlers), `security_context`, `resources`; the JSON they
//!   read without a typed model goes through `decode` (Go's zero values, decode errors).

pub mod apps;
mod containers;
mod decode;
pub mod downward_api;
pub mod field_error;
pub mod meta;
pub mod pod;
mod probes;
mod resources;
pub mod scheduling;
mod security_context;
pub mod syntax;
#[cfg(test)]
pub(crate) mod testing;
mod volumes;
