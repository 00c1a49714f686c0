//! WorkloadSpread (spec/workloadspread.md): what the admission side decides about the WorkloadSpread
//! objects themselves.
//!
//! - [`validate`]: the validating webhook `/validate-apps-kruise-io-workloadspread` (§7): the gate, version
//!   handling (a v1alpha1 object is converted first, §2.5), every rule of §7.1 except the subset `patch`
//!   checks, the conflict with another WorkloadSpread of the namespace and, on UPDATE, targetRef and
//!   ObjectMeta immutability;
//! - [`status`]: what the WorkloadSpread controller computes (§6): the status from live pods, the expiry of
//!   the webhook's records, the Adaptive strategy's conditions and the pods' deletion costs;
//! - [`whitelist`]: the custom workloads a WorkloadSpread may target (§4.2), from the ConfigMap value the I/O
//!   layer reads.
//!
//! **Not implemented**: the subset `patch` checks of §7.1 (scenario 52). They merge each patch into the target
//! workload's pod template with a strategic merge patch and run the whole pod-spec validation on the result;
//! without them a subset patch is accepted whatever it holds (the pod webhook applies it at pod creation, where
//! the apiserver's own pod validation still refuses a bad result).

pub mod status;
pub mod validate;
pub mod whitelist;

/// The feature gate `WorkloadSpread` (on by default, DECISIONS 1).
pub const GATE: &str = "WorkloadSpread";
