//! The order in which candidates are updated (spec/sidecarset.md §9 step 6): Kubernetes' `ActivePods`
//! order, then `updateStrategy.priorityStrategy`, then `updateStrategy.scatterStrategy`. Ties keep the input
//! order (pods sorted by namespace and name, DECISIONS 12).

use std::cmp::Ordering;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;

use crate::api::pod::SlimPod;
use crate::api::sidecarset::SidecarSet;
use crate::selector;
use crate::sidecarset::select::selector_error;

/// `updateStrategy.priorityStrategy`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PriorityStrategy {
    /// Weights added up over the selectors a pod matches; higher first.
    #[serde(default)]
    pub weight_priority: Vec<WeightTerm>,
    /// Label keys whose value's trailing integer orders pods; higher first (first key present wins).
    #[serde(default)]
    pub order_priority: Vec<OrderTerm>,
}

/// One weight of a [`PriorityStrategy`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightTerm {
    /// The weight.
    #[serde(default)]
    pub weight: i32,
    /// The pods it applies to.
    #[serde(default)]
    pub match_selector: LabelSelector,
}

/// One ordered key of a [`PriorityStrategy`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderTerm {
    /// The label key.
    #[serde(default)]
    pub ordered_key: String,
}

/// One term of `updateStrategy.scatterStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ScatterTerm {
    /// Label key.
    #[serde(default)]
    pub key: String,
    /// Label value; `*` stands for every value of the key found on the candidates.
    #[serde(default)]
    pub value: String,
}

/// The SidecarSet's priority strategy; an unreadable one is none.
pub fn priority_strategy(set: &SidecarSet) -> Option<PriorityStrategy> {
    let v = set.spec.update_strategy.extra.get("priorityStrategy")?;
    serde_json::from_value(v.clone()).ok()
}

/// The SidecarSet's scatter strategy; an unreadable one is empty.
pub fn scatter_strategy(set: &SidecarSet) -> Vec<ScatterTerm> {
    set.spec
        .update_strategy
        .extra
        .get("scatterStrategy")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

fn ready_condition(pod: &SlimPod) -> Option<(&str, Option<&Time>)> {
    pod.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.as_str(), c.last_transition_time.as_ref()))
}

fn phase_rank(pod: &SlimPod) -> u8 {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

fn max_restarts(pod: &SlimPod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|s| s.restart_count)
        .max()
        .unwrap_or(0)
}

/// What the `ActivePods` order reads of a pod, read once per pod.
#[derive(Debug, Clone, Copy)]
struct ActiveKey {
    scheduled: bool,
    phase: u8,
    ready: bool,
    ready_since: Option<Timestamp>,
    restarts: i32,
    created: Option<Timestamp>,
}

fn active_key(p: &SlimPod) -> ActiveKey {
    let condition = ready_condition(p);
    let ready = condition.is_some_and(|(s, _)| s == "True");
    ActiveKey {
        scheduled: p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty()),
        phase: phase_rank(p),
        ready,
        ready_since: condition.and_then(|c| c.1).map(|t| t.0),
        restarts: max_restarts(p),
        created: p.metadata.creation_timestamp.as_ref().map(|t| t.0),
    }
}

/// `afterOrZero`: `a` goes first when it is zero, or later than `b` (both set).
fn after_or_zero(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

fn active_key_cmp(a: &ActiveKey, b: &ActiveKey) -> Ordering {
    a.scheduled
        .cmp(&b.scheduled)
        .then_with(|| a.phase.cmp(&b.phase))
        .then_with(|| a.ready.cmp(&b.ready))
        .then_with(|| {
            if a.ready && b.ready {
                after_or_zero(a.ready_since, b.ready_since)
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| b.restarts.cmp(&a.restarts))
        .then_with(|| after_or_zero(a.created, b.created))
}

/// Kubernetes' `ActivePods` order: unscheduled, Pending < Unknown < Running, not ready, ready for less time,
/// more restarts, newer (an unset creation time first).
pub fn active_pods_cmp(a: &SlimPod, b: &SlimPod) -> Ordering {
    active_key_cmp(&active_key(a), &active_key(b))
}

/// `getIntFromStringSuffix`: the integer the value ends with, 0 when none.
fn int_suffix(v: &str) -> i64 {
    let digits = v.len() - v.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    v[v.len() - digits..].parse().unwrap_or(0)
}

/// A pod's priority: the sum of matching weights, else the ordered key's integer suffix.
fn priority(strategy: &PriorityStrategy, pod: &SlimPod) -> i64 {
    if !strategy.weight_priority.is_empty() {
        return strategy
            .weight_priority
            .iter()
            .filter(|t| selector_error(&t.match_selector).is_none())
            .filter(|t| selector::matches(&t.match_selector, &pod.labels))
            .map(|t| i64::from(t.weight))
            .sum();
    }
    strategy
        .order_priority
        .iter()
        .find_map(|t| pod.labels.get(&t.ordered_key))
        .map_or(0, int_suffix)
}

/// A label value absent from a pod.
const ABSENT: u32 = u32::MAX;

/// The candidates' values of each scatter key, read once per round and interned per key, so that the
/// terms are counted and matched by comparing integers and the candidates move as indexes.
struct LabelTable<'a> {
    keys: std::collections::HashMap<&'a str, Column<'a>>,
}

/// The values of one label key: value to id, id to value, and `of[i]` = the id of candidate `i`'s value
/// or [`ABSENT`].
struct Column<'a> {
    ids: std::collections::HashMap<&'a str, u32>,
    names: Vec<&'a str>,
    of: Vec<u32>,
}

impl<'a> LabelTable<'a> {
    fn new(terms: &'a [ScatterTerm], candidates: &'a [Arc<SlimPod>]) -> Self {
        let mut keys = std::collections::HashMap::new();
        for term in terms {
            keys.entry(term.key.as_str()).or_insert_with(|| {
                let mut ids = std::collections::HashMap::new();
                let mut names = Vec::new();
                let of = candidates
                    .iter()
                    .map(|p| match p.labels.get(&term.key) {
                        None => ABSENT,
                        Some(v) => *ids.entry(v).or_insert_with(|| {
                            names.push(v);
                            (names.len() - 1) as u32
                        }),
                    })
                    .collect();
                Column { ids, names, of }
            });
        }
        Self { keys }
    }

    /// The ids of `key` per candidate, and the id of `value` (`None` when no candidate has it).
    fn column(&self, key: &str, value: &str) -> (&[u32], Option<u32>) {
        match self.keys.get(key) {
            Some(c) => (&c.of, c.ids.get(value).copied()),
            None => (&[], None),
        }
    }
}

/// The scatter terms in effect: a single term as written; several (or `*`) expanded to the (key, value)
/// pairs found on the candidates, most frequent first, first seen first among equals.
fn scatter_terms(terms: &[ScatterTerm], table: &LabelTable<'_>) -> Vec<ScatterTerm> {
    if terms.len() == 1 && terms[0].value != "*" {
        return terms.to_vec();
    }
    // (key, value id) in first-seen order, with an index to count them.
    let mut found: Vec<((&str, u32), usize)> = Vec::new();
    let mut index: std::collections::HashMap<(&str, u32), usize> = Default::default();
    for term in terms {
        let (of, wanted) = table.column(&term.key, &term.value);
        let any = term.value == "*";
        if !any && wanted.is_none() {
            continue;
        }
        for &id in of {
            if id == ABSENT || (!any && Some(id) != wanted) {
                continue;
            }
            let key = (term.key.as_str(), id);
            match index.get(&key) {
                Some(&i) => found[i].1 += 1,
                None => {
                    index.insert(key, found.len());
                    found.push((key, 1));
                }
            }
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.1));
    found
        .into_iter()
        .map(|((key, id), _)| ScatterTerm {
            key: key.to_owned(),
            value: table.keys[key].names[id as usize].to_owned(),
        })
        .collect()
}

#[derive(Debug, Clone, Copy, Default)]
struct Groups {
    count: usize,
    matched: usize,
    unmatched: usize,
    unmatched_first: usize,
}

fn groups(matched: usize, unmatched: usize) -> Groups {
    let count = matched.min(unmatched).max(1);
    let round = |n: usize| ((n as f64) / (count as f64)).round() as usize;
    Groups {
        count,
        matched: round(matched).max(1),
        unmatched: round(unmatched).max(1),
        unmatched_first: 0,
    }
}

/// The grouping by density: the candidates' own, unless the whole population is sparser in matched pods.
fn groups_by_density(total_m: usize, total_u: usize, m: usize, u: usize) -> Groups {
    let own = groups(m, u);
    if (total_u as f32) / (total_m as f32) >= (u as f32) / (m as f32) {
        return own;
    }
    let total = groups(total_m, total_u);
    let count = (m / total.matched).min(u / total.unmatched);
    Groups {
        count,
        matched: total.matched,
        unmatched: total.unmatched,
        unmatched_first: u - count * total.unmatched,
    }
}

fn take(from: &mut std::collections::VecDeque<u32>, into: &mut Vec<u32>, n: usize) {
    for _ in 0..n {
        match from.pop_front() {
            Some(p) => into.push(p),
            None => break,
        }
    }
}

/// Spreads the candidates carrying `term` among the others, the last of them at the very end. `order`
/// holds candidate indexes into `table`'s columns.
fn scatter_by<'a>(
    term: &ScatterTerm,
    order: Vec<u32>,
    table: &LabelTable<'_>,
    all: &'a [Arc<SlimPod>],
    densities: &mut Densities<'a>,
) -> Vec<u32> {
    // A pod without the key carries `""` (OpenKruise reads a missing label as the empty value).
    let (of, wanted) = table.column(&term.key, &term.value);
    let absent_matches = term.value.is_empty();
    let is_match = |i: u32| {
        let id = of.get(i as usize).copied().unwrap_or(ABSENT);
        if id == ABSENT {
            absent_matches
        } else {
            Some(id) == wanted
        }
    };
    let (mut matched, unmatched): (Vec<u32>, Vec<u32>) = order.iter().partition(|&&i| is_match(i));
    if matched.len() <= 1 || unmatched.len() <= 1 {
        return order;
    }
    let all_matched = densities.count(all, term);
    let total_m = all_matched.max(2) - 1;
    let total_u = (all.len() - all_matched).max(1);
    let last = matched.pop().expect("at least two matched");
    let g = groups_by_density(total_m, total_u, matched.len(), unmatched.len());
    let mut matched: std::collections::VecDeque<_> = matched.into();
    let mut unmatched: std::collections::VecDeque<_> = unmatched.into();
    let mut out = Vec::with_capacity(order.len());
    take(&mut unmatched, &mut out, g.unmatched_first);
    for _ in 0..g.count {
        take(&mut matched, &mut out, g.matched);
        take(&mut unmatched, &mut out, g.unmatched);
    }
    out.extend(matched);
    out.extend(unmatched);
    out.push(last);
    out
}

/// How many of all the matched pods carry each value of a label key (`""` for those without it), counted
/// once per key for every scatter term of a round.
#[derive(Default)]
struct Densities<'a>(std::collections::HashMap<String, std::collections::HashMap<&'a str, usize>>);

impl<'a> Densities<'a> {
    fn count(&mut self, all: &'a [Arc<SlimPod>], term: &ScatterTerm) -> usize {
        let by_value = self.0.entry(term.key.clone()).or_insert_with(|| {
            let mut by_value = std::collections::HashMap::new();
            for pod in all {
                *by_value
                    .entry(pod.labels.get(&term.key).unwrap_or(""))
                    .or_insert(0) += 1;
            }
            by_value
        });
        by_value.get(term.value.as_str()).copied().unwrap_or(0)
    }
}

/// Sorts `candidates` for the update (§9 step 6); `all` is every matched pod (the scatter densities).
pub fn sort(
    set: &SidecarSet,
    mut candidates: Vec<Arc<SlimPod>>,
    all: &[Arc<SlimPod>],
) -> Vec<Arc<SlimPod>> {
    let mut keyed: Vec<(ActiveKey, Arc<SlimPod>)> = candidates
        .into_iter()
        .map(|p| (active_key(&p), p))
        .collect();
    keyed.sort_by(|a, b| active_key_cmp(&a.0, &b.0));
    candidates = keyed.into_iter().map(|(_, p)| p).collect();
    if let Some(strategy) = priority_strategy(set) {
        let mut keyed: Vec<(i64, Arc<SlimPod>)> = candidates
            .into_iter()
            .map(|p| (priority(&strategy, &p), p))
            .collect();
        keyed.sort_by_key(|k| std::cmp::Reverse(k.0));
        candidates = keyed.into_iter().map(|(_, p)| p).collect();
    }
    let terms = scatter_strategy(set);
    if terms.is_empty() || candidates.len() < 2 {
        return candidates;
    }
    let table = LabelTable::new(&terms, &candidates);
    let mut densities = Densities::default();
    let mut order: Vec<u32> = (0..candidates.len() as u32).collect();
    for term in scatter_terms(&terms, &table) {
        order = scatter_by(&term, order, &table, all, &mut densities);
    }
    order
        .into_iter()
        .map(|i| candidates[i as usize].clone())
        .collect()
}
