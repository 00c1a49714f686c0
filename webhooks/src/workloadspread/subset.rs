//! Which WorkloadSpread manages a new pod (spec/workloadspread.md §5.3) and which of its subsets the pod
//! goes to (§5.4), with the status write that reserves the place.
//!
//! The reservation is decided on the WorkloadSpread as the caller read it: a `creatingPods` record and one
//! less `missingReplicas` in the pod's version list, written whole through the status subresource with the
//! read resourceVersion. Whoever wrote the object since makes that write fail (409); the server then reads
//! it again and decides again on the fresh copy, so no two admissions, on one replica or several, ever
//! reserve the same place (§5.7).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::workload::{OwnerChain, Reference, WorkloadKinds, could_own, reference_equal};
use crate::api::workloadspread::{
    SUBSET_SCHEDULABLE, WorkloadSpread, WorkloadSpreadStatus, WorkloadSpreadSubset,
    WorkloadSpreadSubsetStatus,
};
use crate::selector;
use crate::validation::meta::selector_conversion_error;

/// `maxReplicas` absent, for the StatefulSet ordinal walk (§5.4 (b)).
const UNLIMITED: i64 = i32::MAX as i64;

/// The WorkloadSpread of the namespace that manages the pod (§5.3): the first of `spreads` (in name order,
/// DECISIONS 12), not being deleted, whose `targetRef` is the pod's workload and whose `targetFilter` selects the pod.
///
/// # Errors
/// OpenKruise's NotFound text when an owner between the pod and a WorkloadSpread's target is missing, for
/// a WorkloadSpread that could target the pod's workload through it (§5.3 step 4 with DECISIONS 9).
pub fn find(
    spreads: &[Arc<WorkloadSpread>],
    chain: &OwnerChain,
    kinds: WorkloadKinds<'_>,
    labels: &BTreeMap<String, String>,
) -> Result<Option<Arc<WorkloadSpread>>, String> {
    // In name order, as views hand them over (DECISIONS 12).
    for ws in spreads {
        if ws.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(target) = &ws.spec.target_ref else {
            continue;
        };
        match reference_equal(target, chain, kinds) {
            Reference::Match => {}
            Reference::NoMatch | Reference::Ignore => continue,
            Reference::NotFound(text) => {
                // DECISIONS 9: only a WorkloadSpread that could own the pod through the missing owner.
                if chain
                    .links
                    .last()
                    .is_some_and(|missing| could_own(target, missing, kinds))
                {
                    return Err(text);
                }
                continue;
            }
        }
        if selected(ws, labels) {
            return Ok(Some(ws.clone()));
        }
    }
    Ok(None)
}

/// Whether [`find`] may find one of `spreads` for a pod of `chain` (or fail on it), whatever the pod's
/// labels: one not being deleted whose target is in the chain, or could own it through a missing owner.
pub fn may_match(
    spreads: &[Arc<WorkloadSpread>],
    chain: &OwnerChain,
    kinds: WorkloadKinds<'_>,
) -> bool {
    spreads.iter().any(|ws| {
        ws.metadata.deletion_timestamp.is_none()
            && ws.spec.target_ref.as_ref().is_some_and(|target| {
                match reference_equal(target, chain, kinds) {
                    Reference::Match => true,
                    Reference::NoMatch | Reference::Ignore => false,
                    Reference::NotFound(_) => chain
                        .links
                        .last()
                        .is_some_and(|missing| could_own(target, missing, kinds)),
                }
            })
    })
}

/// `targetFilter` (§2.4, §5.3 step 5): none selects every pod, one without a selector none [quirk], an
/// invalid selector none.
fn selected(ws: &WorkloadSpread, labels: &BTreeMap<String, String>) -> bool {
    let Some(filter) = &ws.spec.target_filter else {
        return true;
    };
    let Some(sel) = &filter.selector else {
        return false;
    };
    selector_conversion_error(sel).is_none() && selector::matches(sel, labels)
}

/// Whether any subset's `maxReplicas` is a percentage: only then is the workload's replica count read
/// (§5.4 (c) 3).
pub fn needs_replicas(ws: &WorkloadSpread) -> bool {
    ws.spec
        .subsets
        .iter()
        .any(|s| matches!(s.max_replicas, Some(IntOrString::String(_))))
}

/// OpenKruise's `ParseSubsetReplicas`: a count as it stands, a percentage of `replicas` rounded up.
///
/// # Errors
/// OpenKruise's texts for a negative count, a string without `%`, a percentage that is not an integer or
/// is outside 0-100.
pub fn scaled(max: &IntOrString, replicas: i32) -> Result<i32, String> {
    match max {
        IntOrString::Int(n) if *n < 0 => {
            Err(format!("subsetReplicas ({n}) should not be less than 0"))
        }
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(text) => {
            if replicas < 0 {
                return Err(format!(
                    "workloadReplicas ({replicas}) should not be less than 0"
                ));
            }
            let Some(number) = text.strip_suffix('%') else {
                return Err(format!(
                    "subset replicas ({text}) only support integer value or percentage value with a suffix '%'"
                ));
            };
            let percent: i32 = number.parse().map_err(|_| {
                format!(
                    "subset replicas ({text}) should be correct percentage integer: strconv.ParseInt: parsing {number:?}: invalid syntax"
                )
            })?;
            if !(0..=100).contains(&percent) {
                return Err(format!(
                    "subset replicas ({text}) should be in range [0, 100]"
                ));
            }
            let product = i64::from(replicas) * i64::from(percent);
            Ok(((product + 99) / 100) as i32)
        }
    }
}

/// A version's list as the webhook initialises it from the spec (§5.4 (c) 3).
///
/// # Errors
/// Why a subset's `maxReplicas` cannot be evaluated ([`scaled`]).
pub fn initial_list(
    ws: &WorkloadSpread,
    replicas: i32,
) -> Result<Vec<WorkloadSpreadSubsetStatus>, String> {
    ws.spec
        .subsets
        .iter()
        .map(|s| {
            let missing = match &s.max_replicas {
                None => -1,
                Some(max) => scaled(max, replicas).map_err(|e| {
                    format!(
                        "WorkloadSpread {}/{} subset {}: {e}",
                        ws.metadata.namespace.as_deref().unwrap_or_default(),
                        ws.metadata.name.as_deref().unwrap_or_default(),
                        s.name
                    )
                })?,
            };
            Ok(WorkloadSpreadSubsetStatus {
                name: s.name.clone(),
                missing_replicas: missing,
                ..Default::default()
            })
        })
        .collect()
}

/// The pod being placed, as the choice reads it.
#[derive(Debug, Clone, Copy)]
pub struct Placing<'a> {
    /// `metadata.name` (`""` for a `generateName` pod).
    pub name: &'a str,
    /// Its version (§2.3).
    pub version: &'a str,
    /// The key its record gets when it has no name: a generated UID (§5.6).
    pub generated_uid: &'a str,
    /// The workload's replicas, for percentages (0 when not read).
    pub replicas: i32,
    /// The request time.
    pub now: &'a Time,
}

/// What the choice decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// No subset: the pod is admitted unchanged. `full`: subsets were considered and every one was full
    /// or unschedulable (DECISIONS 18 says so in a warning).
    NoSubset {
        /// Every subset was full or unschedulable.
        full: bool,
    },
    /// The pod goes to `subset`.
    Subset {
        /// The subset's name.
        subset: String,
        /// The generated key of its `creatingPods` record, when the pod has no name.
        uid: Option<String>,
        /// The WorkloadSpread to write (status subresource) before the answer stands, when the choice
        /// reserves a place.
        write: Option<Box<WorkloadSpread>>,
    },
}

fn unschedulable(status: &WorkloadSpreadSubsetStatus) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == SUBSET_SCHEDULABLE && c.status == "False")
}

/// The subset for a pod (§5.4).
///
/// # Errors
/// Why a `maxReplicas` cannot be evaluated when the pod's version list is initialised.
pub fn choose(ws: &WorkloadSpread, pod: Placing<'_>) -> Result<Choice, String> {
    let subsets = &ws.spec.subsets;
    // (a) One subset without a limit: no status read or write.
    if let [only] = subsets.as_slice()
        && only.max_replicas.is_none()
    {
        return Ok(Choice::Subset {
            subset: only.name.clone(),
            uid: None,
            write: None,
        });
    }
    // (b) StatefulSets: by ordinal, never written.
    if ws
        .spec
        .target_ref
        .as_ref()
        .is_some_and(|t| t.kind == "StatefulSet")
    {
        return Ok(by_ordinal(ws, pod.name));
    }
    // (c) The pod's version list, initialised from the spec when empty. Read in place: the object is
    // cloned only when the choice reserves a place (most choices reserve nothing: an unlimited subset, a
    // pod already recorded, no room).
    let stored = ws
        .status
        .as_ref()
        .and_then(|s| s.versioned_subset_statuses.get(pod.version))
        .filter(|list| !list.is_empty());
    let initialised;
    let list: &[WorkloadSpreadSubsetStatus] = match stored {
        Some(list) => list,
        None => {
            initialised = initial_list(ws, pod.replicas)?;
            &initialised
        }
    };
    let key = if pod.name.is_empty() {
        pod.generated_uid
    } else {
        pod.name
    };
    if key.is_empty() {
        // Two such pods would share one record: refuse rather than place a pod unrecorded.
        return Err("the pod has neither a name nor a generated uid to record it under".into());
    }
    let uid = pod.name.is_empty().then(|| pod.generated_uid.to_owned());
    // 4. Already recorded (by name; a pod without one by the key this request generated, which only a
    // decision of this same request can have written).
    if let Some(recorded) = list
        .iter()
        .find(|s| s.creating_pods.contains_key(key) || s.deleting_pods.contains_key(key))
    {
        return Ok(Choice::Subset {
            subset: recorded.name.clone(),
            uid: uid.filter(|u| recorded.creating_pods.contains_key(u)),
            write: None,
        });
    }
    // 5. The first schedulable subset with room.
    let Some(at) = list
        .iter()
        .position(|s| !unschedulable(s) && (s.missing_replicas > 0 || s.missing_replicas == -1))
    else {
        return Ok(Choice::NoSubset {
            full: !list.is_empty(),
        });
    };
    // 6. Unlimited: nothing to reserve.
    if list[at].missing_replicas == -1 {
        return Ok(Choice::Subset {
            subset: list[at].name.clone(),
            uid: None,
            write: None,
        });
    }
    // 7. Reserve, in a copy of the object with the list as read (or as initialised).
    let mut written = ws.clone();
    let status = written
        .status
        .get_or_insert_with(WorkloadSpreadStatus::default);
    let entry = status
        .versioned_subset_statuses
        .entry(pod.version.to_owned())
        .or_default();
    if stored.is_none() {
        list.clone_into(entry);
    }
    let Some(chosen) = entry.get_mut(at) else {
        return Err("the subset list changed while reserving".into());
    };
    chosen.creating_pods.insert(key.to_owned(), pod.now.clone());
    chosen.missing_replicas = (chosen.missing_replicas - 1).max(0);
    let subset = chosen.name.clone();
    Ok(Choice::Subset {
        subset,
        uid,
        write: Some(Box::new(written)),
    })
}

/// The trailing ordinal of a StatefulSet pod's name (`-1` when there is none or it overflows).
fn ordinal(name: &str) -> i64 {
    let Some((prefix, digits)) = name.rsplit_once('-') else {
        return -1;
    };
    if prefix.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return -1;
    }
    digits.parse::<i32>().map_or(-1, i64::from)
}

/// §5.4 (b): subsets in spec order with a running threshold, skipping those the aggregate status marks
/// unschedulable; a string `maxReplicas` is read as a plain integer (`"50%"` is 0).
fn by_ordinal(ws: &WorkloadSpread, name: &str) -> Choice {
    let ordinal = ordinal(name);
    let aggregate = ws
        .status
        .as_ref()
        .map(|s| s.subset_statuses.as_slice())
        .unwrap_or_default();
    let mut threshold: i64 = 0;
    for subset in &ws.spec.subsets {
        if aggregate
            .iter()
            .any(|s| s.name == subset.name && unschedulable(s))
        {
            continue;
        }
        threshold += capacity(subset);
        if ordinal < threshold {
            return Choice::Subset {
                subset: subset.name.clone(),
                uid: None,
                write: None,
            };
        }
    }
    Choice::NoSubset { full: true }
}

fn capacity(subset: &WorkloadSpreadSubset) -> i64 {
    match &subset.max_replicas {
        None => UNLIMITED,
        Some(IntOrString::Int(n)) => i64::from(*n),
        Some(IntOrString::String(s)) => s.parse::<i32>().map_or(0, i64::from),
    }
}

#[cfg(test)]
mod tests;
