//! Which PUB guards a pod or a workload, by its `targetRef` or its selector: the related-pub step of
//! `/mutate-pod` (spec/podunavailablebudget.md §5, pod-mutating-misc.md §6) and the status controller's
//! workload triggers (§6.1).
//!
//! The resolved top workload of a pod (its ReplicaSet's Deployment, else its controller) is a fact the I/O
//! layer fetches ([`WorkloadKey`]); it asks only when [`wants_workload`] says a PUB of the namespace has a
//! `targetRef`, so that a pod create in a namespace without one pays nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde::Deserialize;

use crate::api::podunavailablebudget::{PodUnavailableBudget, TargetReference};
use crate::de::nullable;
use crate::json::RawJson;
use crate::selector::{self, Labels};

/// A workload by API group, kind and name: what a `targetRef` names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadKey {
    /// `apiVersion` (only its group is compared).
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
}

/// The API group of an apiVersion as Go's `schema.ParseGroupVersion` reads it: `v1` is the core group `""`,
/// `apps/v1` is `apps`; more than one `/` does not parse.
pub fn api_group(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None => Some(""),
        Some((_, version)) if version.contains('/') => None,
        Some((group, _)) => Some(group),
    }
}

/// Whether `target` names the workload: same API group, kind and name (the version is not compared).
pub fn targets(target: &TargetReference, workload: &WorkloadKey) -> bool {
    target.kind == workload.kind
        && target.name == workload.name
        && api_group(&target.api_version).is_some()
        && api_group(&target.api_version) == api_group(&workload.api_version)
}

/// Whether a PUB of `budgets` has a `targetRef`: only then does stamping need the pod's workload.
pub fn wants_workload(budgets: &[Arc<PodUnavailableBudget>]) -> bool {
    budgets.iter().any(|b| b.spec.target_ref.is_some())
}

/// The controller owner reference of a pod as received (`None` when it has none or it does not read).
pub fn controller_ref(pod: &RawJson) -> Option<OwnerReference> {
    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        #[serde(default, deserialize_with = "nullable")]
        owner_references: Vec<OwnerReference>,
    }
    #[derive(Deserialize)]
    struct Pod {
        #[serde(default, deserialize_with = "nullable")]
        metadata: Meta,
    }
    let pod: Pod = serde_json::from_str(pod.get()).ok()?;
    pod.metadata
        .owner_references
        .into_iter()
        .find(|r| r.controller == Some(true))
}

/// The PUB that guards a new pod (§5 step 2): the first of `budgets` (name order) whose `targetRef` names the
/// pod's top workload, when the PUB has a `targetRef` and the workload is known; otherwise whose selector,
/// valid in Kruise's sense (its operators, [`selector::validated_error`], spec §4.2) and not empty, matches
/// the pod's labels. A PUB whose `targetRef` names another workload is not tried by its selector.
pub fn matching_budget<'b>(
    budgets: &'b [Arc<PodUnavailableBudget>],
    labels: &BTreeMap<String, String>,
    workload: Option<&WorkloadKey>,
) -> Option<&'b str> {
    budgets
        .iter()
        .find(|budget| match (&budget.spec.target_ref, workload) {
            (Some(target), Some(workload)) => targets(target, workload),
            _ => selector::picks(budget.spec.selector.as_ref(), labels),
        })
        .and_then(|budget| budget.metadata.name.as_deref())
}

/// The PUBs a change of `workload` (with pod template labels `template_labels`) concerns (§6.1): those whose
/// `targetRef` names it, and those without one whose valid selector matches the template labels. OpenKruise
/// enqueues the first; every one is a superset that costs a reconcile that writes nothing.
pub fn budgets_for_workload<'b>(
    budgets: &'b [Arc<PodUnavailableBudget>],
    workload: &WorkloadKey,
    template_labels: &(impl Labels + ?Sized),
) -> Vec<&'b PodUnavailableBudget> {
    budgets
        .iter()
        .filter(|budget| match &budget.spec.target_ref {
            Some(target) => targets(target, workload),
            None => budget.spec.selector.as_ref().is_some_and(|s| {
                selector::validated_error(s).is_none() && selector::matches(s, template_labels)
            }),
        })
        .map(|b| &**b)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn budget(name: &str, spec: Value) -> Arc<PodUnavailableBudget> {
        Arc::new(
            serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}),
            )
            .unwrap(),
        )
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn web() -> WorkloadKey {
        WorkloadKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
        }
    }

    #[test]
    fn groups_are_compared_not_versions() {
        assert_eq!(api_group("v1"), Some(""));
        assert_eq!(api_group("apps/v1"), Some("apps"));
        assert_eq!(api_group("a/b/c"), None);
        let target = |v: &str| TargetReference {
            api_version: v.into(),
            kind: "Deployment".into(),
            name: "web".into(),
        };
        assert!(targets(&target("apps/v1beta1"), &web()));
        assert!(!targets(&target("extensions/v1"), &web()));
        assert!(!targets(&target("apps/v1/x"), &web()));
    }

    #[test]
    fn the_first_matching_budget_by_name_wins() {
        let budgets = [
            budget("pub-a", json!({"selector": {"matchLabels": {"app": "db"}}})),
            budget(
                "pub-b",
                json!({"selector": {"matchLabels": {"app": "web"}}}),
            ),
            budget(
                "pub-c",
                json!({"selector": {"matchLabels": {"app": "web"}}}),
            ),
        ];
        let l = labels(&[("app", "web")]);
        assert_eq!(matching_budget(&budgets, &l, None), Some("pub-b"));
        assert_eq!(
            matching_budget(&budgets, &labels(&[("app", "cache")]), None),
            None
        );
    }

    #[test]
    fn a_target_ref_matches_the_known_workload_and_never_falls_back() {
        // pod-mutating-misc.md §12 scenarios 8 and 9.
        let l = labels(&[("app", "web")]);
        let by_ref = [budget(
            "pub-t",
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}),
        )];
        assert_eq!(matching_budget(&by_ref, &l, Some(&web())), Some("pub-t"));
        let other = [budget(
            "pub-1",
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"},
                   "selector": {"matchLabels": {"app": "web"}}}),
        )];
        assert_eq!(matching_budget(&other, &l, Some(&web())), None);
        // Unknown workload: the selector is tried.
        assert_eq!(matching_budget(&other, &l, None), Some("pub-1"));
        assert_eq!(matching_budget(&by_ref, &l, None), None, "no selector");
    }

    #[test]
    fn empty_nil_or_invalid_selectors_match_nothing() {
        let l = labels(&[("app", "web")]);
        for spec in [
            json!({"selector": {}}),
            json!({}),
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}}),
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}}),
        ] {
            assert_eq!(
                matching_budget(&[budget("p", spec.clone())], &l, None),
                None,
                "{spec}"
            );
        }
    }

    #[test]
    fn the_controller_reference_is_read_from_the_request_object() {
        let pod = RawJson::from_value(&json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u0"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9", "uid": "u1", "controller": true}]}}));
        let r = controller_ref(&pod).unwrap();
        assert_eq!(
            (r.kind.as_str(), r.name.as_str()),
            ("ReplicaSet", "web-7d9")
        );
        for none in [
            json!({"metadata": {"ownerReferences": null}}),
            json!({"metadata": {}}),
            json!({"metadata": {"ownerReferences": "x"}}),
        ] {
            assert_eq!(controller_ref(&RawJson::from_value(&none)), None);
        }
    }

    #[test]
    fn a_workload_change_concerns_its_target_refs_and_selectors() {
        let budgets = [
            budget(
                "by-ref",
                json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}),
            ),
            budget(
                "by-selector",
                json!({"selector": {"matchLabels": {"app": "web"}}}),
            ),
            budget("other", json!({"selector": {"matchLabels": {"app": "db"}}})),
            budget("nil", json!({})),
        ];
        let names: Vec<&str> = budgets_for_workload(&budgets, &web(), &labels(&[("app", "web")]))
            .iter()
            .map(|b| b.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names, ["by-ref", "by-selector"]);
    }
}
