//! Why a SidecarSet would or would not go into a pod (`kruise-webhook explain`, docs/explain.md scenarios
//! 5-8): the first reason in the order injection decides it (spec/sidecarset.md §4.3), read off the same
//! index values and matcher ([`super::select::pod_match`]) injection uses. It decides nothing of its own.

use std::collections::BTreeMap;

use super::select::{self, CLUSTER_SCOPE, PodMatch};
use crate::api::sidecarset::SidecarSet;
use crate::selector::{Labels, Mismatch};

/// The first reason a SidecarSet is not a match for a pod, or that it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Both selectors match and injection is not paused: injection decides (revision, canary).
    Selected,
    /// The `namespaceSelector` pins the SidecarSet to other namespaces (its index values).
    Namespace(Vec<String>),
    /// The pod's Namespace does not exist.
    NoNamespace,
    /// The `namespaceSelector` has an unknown operator.
    InvalidNamespaceSelector,
    /// The first `namespaceSelector` requirement the Namespace's labels fail.
    NamespaceSelector(Mismatch),
    /// `spec.selector` is unset.
    NoSelector,
    /// `spec.selector` is `{}`.
    EmptySelector,
    /// The first `selector` requirement the pod's labels fail.
    Selector(Mismatch),
    /// `spec.selector` cannot be evaluated: the pod create fails with this text.
    SelectorError(String),
    /// The selectors match but `spec.injectionStrategy.paused` is true.
    Paused,
}

impl Selection {
    /// The reason's key in `explain -o json` (`selected` when selected).
    pub fn key(&self) -> &'static str {
        match self {
            Self::Selected => "selected",
            Self::Namespace(_) => "namespace",
            Self::NoNamespace | Self::InvalidNamespaceSelector | Self::NamespaceSelector(_) => {
                "namespaceSelector"
            }
            Self::NoSelector | Self::EmptySelector | Self::Selector(_) | Self::SelectorError(_) => {
                "selector"
            }
            Self::Paused => "paused",
        }
    }

    /// The label requirement that failed, if the reason is one.
    pub fn mismatch(&self) -> Option<&Mismatch> {
        match self {
            Self::NamespaceSelector(m) | Self::Selector(m) => Some(m),
            _ => None,
        }
    }

    /// One line for a human: the reason's key, then what it found.
    pub fn message(&self, namespace: &str) -> String {
        match self {
            Self::Selected => "selected".to_owned(),
            Self::Namespace(pinned) => format!(
                "namespace: pinned to {}, the pod is in {namespace:?}",
                pinned.join(", ")
            ),
            Self::NoNamespace => {
                format!("namespaceSelector: the pod's Namespace {namespace:?} does not exist")
            }
            Self::InvalidNamespaceSelector => {
                "namespaceSelector: it has an unknown operator and matches nothing".to_owned()
            }
            Self::NamespaceSelector(m) => {
                format!("namespaceSelector: {}", m.describe("the namespace"))
            }
            Self::NoSelector => "selector: none is set, it selects nothing".to_owned(),
            Self::EmptySelector => "selector: {} selects nothing in Kruise".to_owned(),
            Self::Selector(m) => format!("selector: {}", m.describe("the pod")),
            Self::SelectorError(e) => format!("selector: {e}: the pod create fails"),
            Self::Paused => {
                "paused: spec.injectionStrategy.paused is true (its selector matches the pod)"
                    .to_owned()
            }
        }
    }
}

/// Why `set` is or is not selected for a pod in `namespace` (`""` reads as `default`) with `pod_labels`;
/// `namespace_labels` as [`select::pod_match`] takes them. Candidates first (the index), then the matcher,
/// then `paused`, which injection checks first but which is only worth naming for a set that selects the pod.
pub fn selection<N: Labels>(
    set: &SidecarSet,
    namespace: &str,
    pod_labels: &BTreeMap<String, String>,
    namespace_labels: Option<&N>,
) -> Selection {
    let namespace = if namespace.is_empty() {
        "default"
    } else {
        namespace
    };
    let index = select::index_values(set);
    if !index.iter().any(|v| v == namespace || v == CLUSTER_SCOPE) {
        return Selection::Namespace(index);
    }
    let matched = match select::pod_match(set, pod_labels, namespace_labels) {
        Ok(m) => m,
        Err(e) => return Selection::SelectorError(e),
    };
    match matched {
        PodMatch::Matched if set.spec.injection_strategy.paused => Selection::Paused,
        PodMatch::Matched => Selection::Selected,
        PodMatch::NoNamespace => Selection::NoNamespace,
        PodMatch::InvalidNamespaceSelector => Selection::InvalidNamespaceSelector,
        PodMatch::NamespaceSelector(m) => Selection::NamespaceSelector(m.to_mismatch()),
        PodMatch::NoSelector => Selection::NoSelector,
        PodMatch::EmptySelector => Selection::EmptySelector,
        PodMatch::Selector(m) => Selection::Selector(m.to_mismatch()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(spec: serde_json::Value) -> SidecarSet {
        serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": spec})).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_first_reason_in_injection_order() {
        let pod = labels(&[("app", "api")]);
        let ns = labels(&[("kubernetes.io/metadata.name", "default")]);
        let web = set(json!({"selector": {"matchLabels": {"app": "web"}}}));
        let Selection::Selector(m) = selection(&web, "default", &pod, Some(&ns)) else {
            panic!("selector")
        };
        assert_eq!(
            m.describe("the pod"),
            r#"app wants "web", the pod has "api""#
        );
        let pinned = set(json!({"selector": {"matchLabels": {"app": "api"}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "prod"}}}));
        assert_eq!(
            selection(&pinned, "default", &pod, Some(&ns)),
            Selection::Namespace(vec!["prod".into()])
        );
        let paused = set(json!({"selector": {"matchLabels": {"app": "api"}},
            "injectionStrategy": {"paused": true}}));
        assert_eq!(selection(&paused, "", &pod, Some(&ns)), Selection::Paused);
        let paused_miss = set(json!({"selector": {"matchLabels": {"app": "web"}},
            "injectionStrategy": {"paused": true}}));
        assert_eq!(
            selection(&paused_miss, "", &pod, Some(&ns)).key(),
            "selector"
        );
        let none = set(json!({}));
        assert_eq!(selection(&none, "", &pod, Some(&ns)), Selection::NoSelector);
        let team = set(json!({"selector": {"matchLabels": {"app": "api"}},
            "namespaceSelector": {"matchLabels": {"team": "a"}}}));
        assert_eq!(
            selection(&team, "default", &pod, None::<&BTreeMap<String, String>>),
            Selection::NoNamespace
        );
        assert_eq!(
            selection(&team, "default", &pod, Some(&ns)).message("default"),
            "namespaceSelector: team wants \"a\", the namespace has no such label"
        );
    }
}
