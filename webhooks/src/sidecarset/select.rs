//! Which SidecarSets a pod is a candidate for, and whether it matches (spec/sidecarset.md §4.3).
//!
//! [`SidecarSetIndex`] keys every SidecarSet by the namespaces its `namespaceSelector` pins
//! (`kubernetes.io/metadata.name`), or by `clusterScope`; a pod create looks at its namespace's bucket and
//! the cluster-scoped one only, so SidecarSets that cannot match are never scanned (OpenKruise issue 1546).
//! Each bucket iterates in name order (DECISIONS 12).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::prepared::PreparedSidecarSet;
use crate::api::sidecarset::SidecarSet;
use crate::selector::{self, Labels};

/// Index value of SidecarSets not pinned to namespaces.
pub const CLUSTER_SCOPE: &str = "clusterScope";
/// The namespace name label the apiserver sets on every Namespace.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The index values of a SidecarSet (§4.3 step 2): `matchLabels[kubernetes.io/metadata.name]`, else the
/// values of the first `In` expression on that key, else `clusterScope`.
pub fn index_values(set: &SidecarSet) -> Vec<String> {
    let Some(ns) = &set.spec.namespace_selector else {
        return vec![CLUSTER_SCOPE.to_owned()];
    };
    if let Some(name) = ns
        .match_labels
        .as_ref()
        .and_then(|m| m.get(NAMESPACE_NAME_LABEL))
    {
        return vec![name.clone()];
    }
    let first_in = ns
        .match_expressions
        .iter()
        .flatten()
        .find(|e| e.key == NAMESPACE_NAME_LABEL && e.operator == "In");
    match first_in
        .and_then(|e| e.values.clone())
        .filter(|v| !v.is_empty())
    {
        Some(values) => values,
        None => vec![CLUSTER_SCOPE.to_owned()],
    }
}

/// The first `matchLabels` pair of a SidecarSet's selector: a pod without that label cannot match, so the
/// index files the set under it and a pod create only looks at the sets whose anchor it carries.
fn anchor(set: &SidecarSet) -> Option<(String, String)> {
    set.spec
        .selector
        .as_ref()?
        .match_labels
        .as_ref()?
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
}

/// One index value's SidecarSets: all of them by name, and by anchor label.
#[derive(Debug, Default, Clone)]
struct Bucket {
    by_name: BTreeMap<String, Arc<PreparedSidecarSet>>,
    /// By anchor label key, then value: a pod's labels look them up without building a key.
    anchored: HashMap<String, HashMap<String, BTreeMap<String, Arc<PreparedSidecarSet>>>>,
    unanchored: BTreeMap<String, Arc<PreparedSidecarSet>>,
}

impl Bucket {
    fn insert(&mut self, name: &str, set: Arc<PreparedSidecarSet>) {
        match anchor(&set) {
            Some((key, value)) => self
                .anchored
                .entry(key)
                .or_default()
                .entry(value)
                .or_default()
                .insert(name.to_owned(), set.clone()),
            None => self.unanchored.insert(name.to_owned(), set.clone()),
        };
        self.by_name.insert(name.to_owned(), set);
    }

    fn remove(&mut self, name: &str) {
        let Some(set) = self.by_name.remove(name) else {
            return;
        };
        match anchor(&set) {
            Some((key, value)) => {
                if let Some(values) = self.anchored.get_mut(&key) {
                    if let Some(group) = values.get_mut(&value) {
                        group.remove(name);
                        if group.is_empty() {
                            values.remove(&value);
                        }
                    }
                    if values.is_empty() {
                        self.anchored.remove(&key);
                    }
                }
            }
            None => {
                self.unanchored.remove(name);
            }
        }
    }

    /// The sets a pod with these labels may match, in name order.
    fn for_labels(
        &self,
        labels: &BTreeMap<String, String>,
        out: &mut Vec<Arc<PreparedSidecarSet>>,
    ) {
        let start = out.len();
        out.extend(self.unanchored.values().cloned());
        for (k, v) in labels {
            if let Some(group) = self.anchored.get(k).and_then(|values| values.get(v)) {
                out.extend(group.values().cloned());
            }
        }
        out[start..].sort_by(|a, b| a.name().cmp(b.name()));
    }
}

/// SidecarSets by index value, each bucket in name order, each prepared for injection once as it comes in.
#[derive(Debug, Default, Clone)]
pub struct SidecarSetIndex {
    buckets: HashMap<String, Bucket>,
    keys: HashMap<String, Vec<String>>,
}

fn bucket_key(namespace: &str) -> &str {
    if namespace.is_empty() {
        "default"
    } else {
        namespace
    }
}

impl SidecarSetIndex {
    /// Adds or replaces a SidecarSet (by name), prepared for injection ([`PreparedSidecarSet`]).
    pub fn upsert(&mut self, set: Arc<SidecarSet>) {
        let name = set.name().to_owned();
        self.remove(&name);
        let keys = index_values(&set);
        let set = Arc::new(PreparedSidecarSet::new(set));
        for key in &keys {
            self.buckets
                .entry(key.clone())
                .or_default()
                .insert(&name, set.clone());
        }
        self.keys.insert(name, keys);
    }

    /// Removes a SidecarSet by name.
    pub fn remove(&mut self, name: &str) {
        for key in self.keys.remove(name).unwrap_or_default() {
            if let Some(bucket) = self.buckets.get_mut(&key) {
                bucket.remove(name);
                if bucket.by_name.is_empty() {
                    self.buckets.remove(&key);
                }
            }
        }
    }

    /// A SidecarSet by name.
    pub fn get(&self, name: &str) -> Option<&Arc<SidecarSet>> {
        let key = self.keys.get(name)?.first()?;
        let prepared = self.buckets.get(key)?.by_name.get(name)?;
        Some(prepared.sidecar_set())
    }

    /// Every SidecarSet, in name order.
    pub fn all(&self) -> Vec<Arc<SidecarSet>> {
        let mut names: Vec<&String> = self.keys.keys().collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|n| self.get(n).cloned())
            .collect()
    }

    /// How many SidecarSets are indexed.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Every candidate for a pod in `namespace` (`""` reads as `default`): that namespace's bucket, then the
    /// cluster-scoped bucket, each in name order. A SidecarSet pinned to several namespaces appears once.
    pub fn candidates<'a>(
        &'a self,
        namespace: &str,
    ) -> impl Iterator<Item = &'a Arc<PreparedSidecarSet>> + 'a {
        let pinned = self
            .buckets
            .get(bucket_key(namespace))
            .into_iter()
            .flat_map(|b| b.by_name.values());
        let cluster = self
            .buckets
            .get(CLUSTER_SCOPE)
            .into_iter()
            .flat_map(|b| b.by_name.values());
        pinned.chain(cluster)
    }

    /// The candidates a pod with `labels` in `namespace` can match: [`SidecarSetIndex::candidates`] without the
    /// SidecarSets whose first `matchLabels` pair the pod lacks (they cannot match). Same order.
    pub fn candidates_for(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<PreparedSidecarSet>> {
        let mut out = Vec::new();
        for key in [bucket_key(namespace), CLUSTER_SCOPE] {
            if let Some(bucket) = self.buckets.get(key) {
                bucket.for_labels(labels, &mut out);
            }
        }
        out
    }
}

pub use crate::selector::validated_error as selector_error;

fn is_empty_selector(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && sel.match_expressions.as_ref().is_none_or(|e| e.is_empty())
}

/// How a pod fares against a SidecarSet's `namespaceSelector` and `selector` (`PodMatchedSidecarSet`), with
/// the first reason it does not match: what `explain` prints, and what [`pod_matches`] reduces to yes or no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodMatch<'s, 'l> {
    /// Both selectors match.
    Matched,
    /// The SidecarSet has a `namespaceSelector` and the pod's Namespace does not exist (or cannot be read).
    NoNamespace,
    /// The `namespaceSelector` cannot be evaluated (an unknown operator).
    InvalidNamespaceSelector,
    /// The first `namespaceSelector` requirement the Namespace's labels fail.
    NamespaceSelector(selector::Miss<'s, 'l>),
    /// `spec.selector` is unset: it selects nothing.
    NoSelector,
    /// `spec.selector` is `{}`: everything in Go, which Kruise reads as no match.
    EmptySelector,
    /// The first `selector` requirement the pod's labels fail.
    Selector(selector::Miss<'s, 'l>),
}

/// Whether the pod matches the SidecarSet, and if not the first reason ([`PodMatch`]). `namespace_labels`
/// are the labels of the pod's Namespace, `None` when it does not exist.
///
/// # Errors
/// The selector's error text when `spec.selector` cannot be evaluated (the request then fails with 500).
pub fn pod_match<'s, 'l, N: Labels>(
    set: &'s SidecarSet,
    pod_labels: &'l BTreeMap<String, String>,
    namespace_labels: Option<&'l N>,
) -> Result<PodMatch<'s, 'l>, String> {
    if let Some(ns_selector) = &set.spec.namespace_selector {
        // A Namespace that cannot be read, or a selector that cannot be evaluated, is no match.
        let Some(labels) = namespace_labels else {
            return Ok(PodMatch::NoNamespace);
        };
        if selector_error(ns_selector).is_some() {
            return Ok(PodMatch::InvalidNamespaceSelector);
        }
        if let Some(miss) = selector::first_miss(ns_selector, labels) {
            return Ok(PodMatch::NamespaceSelector(miss));
        }
    }
    let Some(sel) = &set.spec.selector else {
        return Ok(PodMatch::NoSelector);
    };
    if let Some(e) = selector_error(sel) {
        return Err(e);
    }
    // An empty selector selects everything in Go, and Kruise then treats that as "no match".
    if is_empty_selector(sel) {
        return Ok(PodMatch::EmptySelector);
    }
    Ok(selector::first_miss(sel, pod_labels).map_or(PodMatch::Matched, PodMatch::Selector))
}

/// Whether the pod matches the SidecarSet (`PodMatchedSidecarSet`): [`pod_match`] is [`PodMatch::Matched`].
///
/// # Errors
/// The selector's error text when `spec.selector` cannot be evaluated (the request then fails with 500).
pub fn pod_matches(
    set: &SidecarSet,
    pod_labels: &BTreeMap<String, String>,
    namespace_labels: Option<&impl Labels>,
) -> Result<bool, String> {
    pod_match(set, pod_labels, namespace_labels).map(|m| m == PodMatch::Matched)
}

/// The SidecarSets to inject into a pod (§4.3 steps 3-5): candidates in index order, paused ones skipped,
/// matching ones given the revision `choose` picks for them (§4.4, the `i`-th matching set is passed `i`),
/// then every base of a matched canary removed. A base's revision is chosen too, so its failure fails the
/// request even when a canary replaces it, as in OpenKruise.
///
/// # Errors
/// A selector error of a candidate, or the error of `choose` (500).
pub fn matching<'a>(
    candidates: impl IntoIterator<Item = &'a Arc<PreparedSidecarSet>>,
    pod_labels: &BTreeMap<String, String>,
    namespace_labels: Option<&impl Labels>,
    mut choose: impl FnMut(&Arc<PreparedSidecarSet>, usize) -> Result<Arc<PreparedSidecarSet>, String>,
) -> Result<Vec<Arc<PreparedSidecarSet>>, String> {
    let mut matched: Vec<Arc<PreparedSidecarSet>> = Vec::new();
    let mut bases: Vec<String> = Vec::new();
    for set in candidates {
        if set.spec.injection_strategy.paused || matched.iter().any(|m| m.name() == set.name()) {
            continue;
        }
        if pod_matches(set, pod_labels, namespace_labels)? {
            let chosen = choose(set, matched.len())?;
            if let Some(base) = chosen.canary_base() {
                bases.push(base.to_owned());
            }
            matched.push(chosen);
        }
    }
    matched.retain(|s| !bases.iter().any(|b| b == s.name()));
    Ok(matched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(name: &str, spec: serde_json::Value, annotations: serde_json::Value) -> Arc<SidecarSet> {
        Arc::new(
            serde_json::from_value(
                json!({"metadata": {"name": name, "annotations": annotations}, "spec": spec}),
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

    #[test]
    fn index_values_follow_the_namespace_selector() {
        let pinned = set(
            "a",
            json!({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "ns1"}}}),
            json!({}),
        );
        assert_eq!(index_values(&pinned), ["ns1"]);
        let listed = set(
            "b",
            json!({"namespaceSelector": {"matchExpressions": [
            {"key": "team", "operator": "In", "values": ["x"]},
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": ["ns1", "ns2"]}]}}),
            json!({}),
        );
        assert_eq!(index_values(&listed), ["ns1", "ns2"]);
        let by_label = set(
            "c",
            json!({"namespaceSelector": {"matchLabels": {"team": "x"}}}),
            json!({}),
        );
        assert_eq!(index_values(&by_label), [CLUSTER_SCOPE]);
        assert_eq!(
            index_values(&set("d", json!({}), json!({}))),
            [CLUSTER_SCOPE]
        );
    }

    #[test]
    fn candidates_are_the_namespace_then_cluster_scope_each_by_name() {
        let mut index = SidecarSetIndex::default();
        for (name, ns) in [
            ("z", Some("ns1")),
            ("a", None),
            ("m", Some("ns1")),
            ("b", Some("other")),
            ("c", None),
        ] {
            let spec = match ns {
                Some(ns) => {
                    json!({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: ns}}})
                }
                None => json!({}),
            };
            index.upsert(set(name, spec, json!({})));
        }
        let names: Vec<&str> = index.candidates("ns1").map(|s| s.name()).collect();
        assert_eq!(names, ["m", "z", "a", "c"]);
        let names: Vec<&str> = index.candidates("").map(|s| s.name()).collect();
        assert_eq!(names, ["a", "c"], "an empty namespace reads as default");
        index.upsert(set("m", json!({}), json!({})));
        let names: Vec<&str> = index.candidates("ns1").map(|s| s.name()).collect();
        assert_eq!(
            names,
            ["z", "a", "c", "m"],
            "an update moves the set to its new bucket"
        );
        assert_eq!(index.get("b").map(|s| s.name()), Some("b"));
        let all: Vec<String> = index.all().iter().map(|s| s.name().to_owned()).collect();
        assert_eq!(all, ["a", "b", "c", "m", "z"]);
        index.remove("z");
        assert!(index.get("z").is_none());
        assert_eq!(index.len(), 4);
        assert_eq!(index.candidates("ns1").count(), 3);
    }

    #[test]
    fn candidates_for_a_pod_skip_sets_whose_anchor_label_it_lacks() {
        let mut index = SidecarSetIndex::default();
        for (name, selector) in [
            ("a", json!({"matchLabels": {"app": "web", "tier": "x"}})),
            ("b", json!({"matchLabels": {"app": "db"}})),
            (
                "c",
                json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
            ),
            ("d", json!({"matchLabels": {"app": "web"}})),
        ] {
            index.upsert(set(name, json!({"selector": selector}), json!({})));
        }
        let pod = labels(&[("app", "web"), ("tier", "y")]);
        let names = |index: &SidecarSetIndex| -> Vec<String> {
            index
                .candidates_for("ns", &pod)
                .iter()
                .map(|s| s.name().to_owned())
                .collect()
        };
        assert_eq!(
            names(&index),
            ["a", "c", "d"],
            "b cannot match; a is checked by matching proper; order by name"
        );
        index.remove("a");
        assert_eq!(names(&index), ["c", "d"]);
        index.remove("d");
        index.remove("b");
        assert_eq!(names(&index), ["c"]);
        assert!(
            index.buckets.values().all(|b| b.anchored.is_empty()),
            "emptied anchors leave no entries behind"
        );
    }

    #[test]
    fn nil_and_empty_selectors_match_nothing_and_bad_operators_fail() {
        let pod = labels(&[("app", "web")]);
        let ns = labels(&[(NAMESPACE_NAME_LABEL, "default")]);
        assert_eq!(
            pod_matches(&set("a", json!({}), json!({})), &pod, Some(&ns)),
            Ok(false)
        );
        assert_eq!(
            pod_matches(
                &set("a", json!({"selector": {}}), json!({})),
                &pod,
                Some(&ns)
            ),
            Ok(false)
        );
        assert_eq!(
            pod_matches(
                &set(
                    "a",
                    json!({"selector": {"matchLabels": {"app": "web"}}}),
                    json!({})
                ),
                &pod,
                Some(&ns)
            ),
            Ok(true)
        );
        let bad = set(
            "a",
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}}),
            json!({}),
        );
        assert_eq!(
            pod_matches(&bad, &pod, Some(&ns)),
            Err("\"Near\" is not a valid pod selector operator".into())
        );
        // Values are not checked (a SidecarSet stored past validation): `In` without values matches nothing,
        // `Exists` with values matches on the key alone.
        let no_values = set(
            "a",
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}}),
            json!({}),
        );
        assert_eq!(pod_matches(&no_values, &pod, Some(&ns)), Ok(false));
        let exists_with_values = set(
            "a",
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}}),
            json!({}),
        );
        assert_eq!(pod_matches(&exists_with_values, &pod, Some(&ns)), Ok(true));
    }

    #[test]
    fn namespace_selector_needs_an_existing_matching_namespace() {
        let pod = labels(&[("app", "web")]);
        let s = set(
            "a",
            json!({"selector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            json!({}),
        );
        assert_eq!(
            pod_matches(&s, &pod, None::<&BTreeMap<String, String>>),
            Ok(false),
            "a namespace that cannot be read is no match"
        );
        assert_eq!(
            pod_matches(&s, &pod, Some(&labels(&[("env", "dev")]))),
            Ok(false)
        );
        assert_eq!(
            pod_matches(&s, &pod, Some(&labels(&[("env", "prod")]))),
            Ok(true)
        );
        let bad_ns = set(
            "a",
            json!({"selector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Near"}]}}),
            json!({}),
        );
        assert_eq!(
            pod_matches(&bad_ns, &pod, Some(&labels(&[]))),
            Ok(false),
            "an invalid namespaceSelector is no match, not an error"
        );
        // Only operators are checked: `Exists` with values selects on the key, `In` without values nothing.
        let ns_sel = |expr: serde_json::Value| {
            set(
                "a",
                json!({"selector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {"matchExpressions": [expr]}}),
                json!({}),
            )
        };
        let exists = ns_sel(json!({"key": "env", "operator": "Exists", "values": ["x"]}));
        assert_eq!(
            pod_matches(&exists, &pod, Some(&labels(&[("env", "prod")]))),
            Ok(true)
        );
        assert_eq!(pod_matches(&exists, &pod, Some(&labels(&[]))), Ok(false));
        let in_nothing = ns_sel(json!({"key": "env", "operator": "In", "values": []}));
        assert_eq!(
            pod_matches(&in_nothing, &pod, Some(&labels(&[("env", "prod")]))),
            Ok(false)
        );
    }

    #[test]
    fn paused_sets_are_skipped_and_a_canary_replaces_its_base() {
        let pod = labels(&[("app", "web")]);
        let ns = labels(&[]);
        let sel = json!({"matchLabels": {"app": "web"}});
        let sets = [
            set("base", json!({"selector": sel}), json!({})),
            set(
                "canary",
                json!({"selector": sel}),
                json!({"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": "base"}),
            ),
            set(
                "paused",
                json!({"selector": sel, "injectionStrategy": {"paused": true}}),
                json!({}),
            ),
            set(
                "other",
                json!({"selector": {"matchLabels": {"app": "db"}}}),
                json!({}),
            ),
            set("plain", json!({"selector": sel}), json!({})),
        ];
        let sets = sets.map(|s| Arc::new(PreparedSidecarSet::new(s)));
        let names: Vec<String> = matching(sets.iter(), &pod, Some(&ns), |s, _| Ok(s.clone()))
            .unwrap()
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        assert_eq!(names, ["canary", "plain"]);
    }
}
