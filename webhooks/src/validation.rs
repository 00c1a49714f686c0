//! Kubernetes object validation shared by the validating webhooks: the subset of apimachinery's
//! validation and of `k8s.io/kubernetes/pkg/apis/core/validation` that OpenKruise's validators call, with
//! Go's field paths and message texts.

pub mod apps;
pub mod field_error;
pub mod meta;
pub mod pod_validation;
pub mod syntax;
