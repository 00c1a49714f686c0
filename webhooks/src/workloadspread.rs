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
//!   layer reads;
//! - the pod webhooks' steps: [`create`] (step 2 of `/mutate-pod`, §5.1-§5.6: [`workload`] ties the pod to
//!   its workload, [`subset`] finds the WorkloadSpread and the subset, [`mutate`] edits the pod,
//!   [`annotation`] is the record on the pod) and [`delete`] (the first step of `/validate-pod`, §5.8-§5.9).
//!   Both return the WorkloadSpread status write they depend on as a
//!   [`crate::verdict::StatusIntent::SpreadRecord`], which the server commits with optimistic concurrency
//!   before the answer stands, deciding again on the fresh object after a conflict.
//!
//! **Not implemented**: the subset `patch` checks of §7.1 (scenario 52). They merge each patch into the target
//! workload's pod template with a strategic merge patch and run the whole pod-spec validation on the result;
//! without them a subset patch is accepted whatever it holds (the pod webhook applies it at pod creation, where
//! the apiserver's own pod validation still refuses a bad result).

pub mod annotation;
pub mod create;
pub mod delete;
pub mod mutate;
pub mod status;
pub mod subset;
pub mod validate;
pub mod whitelist;
pub mod workload;

use whitelist::CustomWorkload;
use workload::OwnerChain;

/// What the pod webhooks' WorkloadSpread steps need that the cluster view does not hold: the I/O layer reads
/// it from caches and the API server before the pure decision (STYLE §2).
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadFacts {
    /// The pod's owner chain (§4.3).
    pub chain: OwnerChain,
    /// The custom workload whitelist (§4.2).
    pub custom: Vec<CustomWorkload>,
    /// The replicas of the target workload of the WorkloadSpread that manages the pod, when one of its
    /// subsets uses a percentage (§5.4 (c) 3); `None` when not read.
    pub replicas: Option<Result<i32, String>>,
    /// The key of a `creatingPods` record for a pod without a name (§5.6): the admission request's UID, a
    /// random UUID the API server generated for this request (unique, and the same when the decision is
    /// taken again after a conflict).
    pub generated_uid: String,
}

/// The feature gate `WorkloadSpread` (on by default, DECISIONS 1).
pub const GATE: &str = "WorkloadSpread";
