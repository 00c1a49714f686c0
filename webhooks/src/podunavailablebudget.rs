//! PodUnavailableBudget (spec/podunavailablebudget.md): what a PUB protects and how a protected disruption
//! spends its budget.
//!
//! - [`pod`]: the pod predicates shared by the gate and the status controller (active, ready, consistent:
//!   §4.1) and the PUB that guards a pod (its related-pub annotation);
//! - [`gate`]: the admission gate of `/validate-pod` (§7): which requests are protected disruptions, and
//!   the decision, whose spend comes back as a [`crate::verdict::StatusIntent`] the server commits;
//!   [`update`]: which pod UPDATEs disrupt, and which of them are resizes (§7.2);
//! - [`validate`]: the PUB validating webhook (§8): field rules, immutability, conflicts with other PUBs;
//! - [`related`]: the PUB that guards a new pod or a workload (the related-pub step of `/mutate-pod`, §5,
//!   and the status controller's workload triggers, §6.1);
//! - [`status`]: the status controller's decisions (§6.2-6.5: pods, expected and desired counts, pruning,
//!   the status to write).
//!
//! The protected operation set of a PUB (§4.4) and OpenKruise's texts are here, shared by all of them.

pub mod gate;
pub mod pod;
pub mod related;
pub mod status;
pub mod update;
pub mod validate;

use std::collections::BTreeSet;

use crate::api::podunavailablebudget::{
    OPERATION_DELETE, OPERATION_EVICT, OPERATION_RESIZE, OPERATION_UPDATE,
    PROTECT_OPERATIONS_ANNOTATION, PodUnavailableBudget,
};
use crate::features::FeatureGates;

/// `PodUnavailableBudgetDeleteGate`: pod DELETE and eviction are gated.
pub const DELETE_GATE: &str = "PodUnavailableBudgetDeleteGate";
/// `PodUnavailableBudgetUpdateGate`: pod UPDATE (and resize) is gated.
pub const UPDATE_GATE: &str = "PodUnavailableBudgetUpdateGate";
/// `InPlacePodVerticalScaling`: changes which operation set RESIZE belongs to (§4.4 step 4).
pub const IN_PLACE_POD_VERTICAL_SCALING: &str = "InPlacePodVerticalScaling";

/// Most entries `disruptedPods` and `unavailablePods` may hold together before a spend is refused
/// (`MaxUnavailablePodSize`; refused when the sum is greater).
pub const MAX_UNAVAILABLE_POD_SIZE: usize = 2000;

/// A voluntary disruption a PUB may protect against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Pod deletion.
    Delete,
    /// In-place update of the pod spec (or an unavailable label added).
    Update,
    /// Eviction.
    Evict,
    /// In-place resize of cpu or memory without a container restart.
    Resize,
}

impl Operation {
    /// OpenKruise's name (`DELETE`, ...), as `spec.protectOperations` lists it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delete => OPERATION_DELETE,
            Self::Update => OPERATION_UPDATE,
            Self::Evict => OPERATION_EVICT,
            Self::Resize => OPERATION_RESIZE,
        }
    }

    /// The operation named `name` exactly, if it is one of the four.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Delete, Self::Update, Self::Evict, Self::Resize]
            .into_iter()
            .find(|op| op.as_str() == name)
    }
}

/// Whether either PUB gate is on (the related-pub step and the status controller run).
pub fn enabled(gates: &FeatureGates) -> bool {
    gates.enabled(DELETE_GATE) || gates.enabled(UPDATE_GATE)
}

/// The operations a PUB protects (§4.4): `spec.protectOperations`, else the deprecated annotation (split on
/// `,`, empty items dropped, not trimmed), else DELETE, UPDATE and EVICT; RESIZE joins UPDATE unless
/// `InPlacePodVerticalScaling` is on. Names that are not operations protect nothing.
pub fn protected_operations(
    budget: &PodUnavailableBudget,
    gates: &FeatureGates,
) -> BTreeSet<Operation> {
    let named: Vec<&str> = if !budget.spec.protect_operations.is_empty() {
        budget
            .spec
            .protect_operations
            .iter()
            .map(String::as_str)
            .collect()
    } else {
        budget
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PROTECT_OPERATIONS_ANNOTATION))
            .map(|v| v.split(',').filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    };
    let mut operations: BTreeSet<Operation> = if named.is_empty() {
        [Operation::Delete, Operation::Update, Operation::Evict].into()
    } else {
        named.into_iter().filter_map(Operation::parse).collect()
    };
    if !gates.enabled(IN_PLACE_POD_VERTICAL_SCALING) && operations.contains(&Operation::Update) {
        operations.insert(Operation::Resize);
    }
    operations
}

/// `D_BUDGET`: the budget is spent.
pub fn budget_message(pub_name: &str) -> String {
    format!(
        "podunavailablebudget.policy.kruise.io {:?} is forbidden: pub unavailable allowed is negative",
        pub_name
    )
}

/// `D_TOOBIG`: too many disruptions not yet confirmed by the status controller.
pub fn too_big_message(pub_name: &str) -> String {
    format!(
        "podunavailablebudget.policy.kruise.io {:?} is forbidden: DisruptedPods and UnavailablePods map too big - too many unavailable not confirmed by PUB controller",
        pub_name
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn budget(value: serde_json::Value) -> PodUnavailableBudget {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn protected_operations_follow_spec_then_annotation_then_default() {
        let gates = FeatureGates::default();
        let ops = |b: &PodUnavailableBudget| protected_operations(b, &gates);
        use Operation::*;
        assert_eq!(
            ops(&budget(json!({}))),
            [Delete, Update, Evict, Resize].into()
        );
        assert_eq!(
            ops(&budget(json!({"spec": {"protectOperations": ["EVICT"]}}))),
            [Evict].into()
        );
        assert_eq!(
            ops(&budget(
                json!({"metadata": {"annotations": {"kruise.io/pub-protect-operations": "DELETE,,UPDATE"}}})
            )),
            [Delete, Update, Resize].into()
        );
        // Not trimmed: " EVICT" names nothing.
        assert_eq!(
            ops(&budget(
                json!({"metadata": {"annotations": {"kruise.io/pub-protect-operations": "DELETE, EVICT"}}})
            )),
            [Delete].into()
        );
        // The spec wins over the annotation.
        assert_eq!(
            ops(&budget(json!({"spec": {"protectOperations": ["DELETE"]},
                "metadata": {"annotations": {"kruise.io/pub-protect-operations": "EVICT"}}}))),
            [Delete].into()
        );
        let scaling = FeatureGates::parse("InPlacePodVerticalScaling=true").unwrap();
        assert_eq!(
            protected_operations(
                &budget(json!({"spec": {"protectOperations": ["UPDATE", "DELETE"]}})),
                &scaling
            ),
            [Delete, Update].into()
        );
    }

    #[test]
    fn messages_are_openkruise_texts() {
        assert_eq!(
            budget_message("pub-web"),
            "podunavailablebudget.policy.kruise.io \"pub-web\" is forbidden: pub unavailable allowed is negative"
        );
        assert!(too_big_message("p").ends_with(
            "DisruptedPods and UnavailablePods map too big - too many unavailable not confirmed by PUB controller"
        ));
    }
}
