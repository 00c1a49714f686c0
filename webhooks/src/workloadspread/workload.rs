//! How a pod is tied to the workload a WorkloadSpread targets (spec/workloadspread.md §4) and which
//! version of that workload it belongs to (§2.3).
//!
//! The owner chain is walked by the I/O layer (it reads the owners from caches or the API server) into an
//! [`OwnerChain`]: the pod's controller owner reference, then each owner's own controller reference, as long
//! as the owner is a workload kind ([`WorkloadKinds`]) and was found. The decisions on it are pure:
//! [`reference_equal`] is OpenKruise's `isReferenceEqual` over that chain.

use serde_json::Value;

use super::whitelist::CustomWorkload;
use crate::api::workloadspread::{TargetReference, VERSION_IGNORED};

/// The built-in workload kinds (§4.1): (group, kind).
pub const BUILT_IN: &[(&str, &str)] = &[
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
    ("apps.kruise.io", "CloneSet"),
    ("apps", "StatefulSet"),
    ("apps.kruise.io", "StatefulSet"),
];

/// The API group of an apiVersion (`apps/v1` → `apps`, `v1` → `""`); `None` when it does not parse.
pub fn api_group(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None if api_version.is_empty() => None,
        None => Some(""),
        Some((_, version)) if version.contains('/') || version.is_empty() => None,
        Some((group, _)) => Some(group),
    }
}

/// The workload list owner chains are walked through: the built-in kinds, each whitelisted workload and
/// its sub-resources (§4.1, §4.2).
#[derive(Debug, Clone, Copy)]
pub struct WorkloadKinds<'a> {
    /// The custom workload whitelist.
    pub custom: &'a [CustomWorkload],
}

impl WorkloadKinds<'_> {
    /// Whether `(group, kind)` is in the list (versions are never compared).
    pub fn contains(&self, group: &str, kind: &str) -> bool {
        BUILT_IN.iter().any(|(g, k)| *g == group && *k == kind)
            || self.custom.iter().any(|c| {
                (c.workload.group == group && c.workload.kind == kind)
                    || c.sub_resources
                        .iter()
                        .any(|s| s.group == group && s.kind == kind)
            })
    }

    /// Whether `(group, kind)` is a top-level whitelisted workload (a valid custom `targetRef`).
    pub fn is_custom_workload(&self, group: &str, kind: &str) -> bool {
        self.custom
            .iter()
            .any(|c| c.workload.group == group && c.workload.kind == kind)
    }
}

/// One controller owner reference of the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
}

/// How the walk up the owner chain ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainEnd {
    /// At an owner that is not a workload kind, or a workload without a controller: the chain is whole.
    Top,
    /// The last link's object is not in the cluster: OpenKruise's NotFound error, with its text.
    NotFound(String),
    /// The last link's object could not be read (another error): WorkloadSpreads that need to go past it
    /// are ignored (§5.3 step 4).
    Unreadable(String),
}

/// The pod's controller owner reference and the controllers above it (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerChain {
    /// From the pod's controller owner upwards (empty: the pod has no controller).
    pub links: Vec<Link>,
    /// How the walk ended.
    pub end: ChainEnd,
}

impl OwnerChain {
    /// A chain of one link that was never walked further (the owner is not a workload kind, or nothing
    /// above it is needed).
    pub fn single(link: Link) -> Self {
        Self {
            links: vec![link],
            end: ChainEnd::Top,
        }
    }
}

/// What [`reference_equal`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// The target is the pod's workload.
    Match,
    /// It is not.
    NoMatch,
    /// An owner in the way is not found (OpenKruise denies the pod create with this text, §5.3 step 4).
    NotFound(String),
    /// The target or an owner cannot be read: this WorkloadSpread is ignored.
    Ignore,
}

/// `isReferenceEqual` (§4.3) of `target` against the pod's owner chain.
pub fn reference_equal(
    target: &TargetReference,
    chain: &OwnerChain,
    kinds: WorkloadKinds<'_>,
) -> Reference {
    let Some(target_group) = api_group(&target.api_version) else {
        return Reference::Ignore;
    };
    for link in &chain.links {
        let Some(group) = api_group(&link.api_version) else {
            return Reference::Ignore;
        };
        // Kind and name first: most WorkloadSpreads of a namespace differ there.
        if link.kind == target.kind && link.name == target.name && group == target_group {
            return Reference::Match;
        }
        if !kinds.contains(group, &link.kind) {
            return Reference::NoMatch;
        }
    }
    match &chain.end {
        ChainEnd::Top => Reference::NoMatch,
        ChainEnd::NotFound(text) => Reference::NotFound(text.clone()),
        ChainEnd::Unreadable(_) => Reference::Ignore,
    }
}

/// Whether `target` could be an owner above a missing ReplicaSet or other workload `missing` (DECISIONS 9:
/// an owner missing from the cache denies a pod create only for a WorkloadSpread that could target the
/// pod's workload through it): a Deployment above a missing ReplicaSet, or a whitelisted custom workload.
pub fn could_own(target: &TargetReference, missing: &Link, kinds: WorkloadKinds<'_>) -> bool {
    let Some(group) = api_group(&target.api_version) else {
        return false;
    };
    let missing_is_replica_set =
        api_group(&missing.api_version) == Some("apps") && missing.kind == "ReplicaSet";
    (missing_is_replica_set && group == "apps" && target.kind == "Deployment")
        || kinds.is_custom_workload(group, &target.kind)
}

/// The kinds whose pods are versioned (§2.3: the fixed set, the flag never takes effect).
const VERSIONED_KINDS: &[&str] = &["deployment", "replicaset"];

/// The version of a pod (§2.3): its `pod-template-hash` label (else the part after the last `-` of
/// `controller-revision-hash`) when its controller is a Deployment or ReplicaSet, else [`VERSION_IGNORED`].
pub fn pod_version(
    controller_kind: Option<&str>,
    labels: &impl Fn(&str) -> Option<String>,
) -> String {
    let versioned =
        controller_kind.is_some_and(|k| VERSIONED_KINDS.contains(&k.to_ascii_lowercase().as_str()));
    if !versioned {
        return VERSION_IGNORED.to_owned();
    }
    if let Some(hash) = labels("pod-template-hash") {
        return hash;
    }
    if let Some(hash) = labels("controller-revision-hash") {
        return hash
            .rsplit_once('-')
            .map_or(hash.as_str(), |(_, tail)| tail)
            .to_owned();
    }
    VERSION_IGNORED.to_owned()
}

/// The integer at a dot-separated path of a workload object (numeric segments index arrays); an empty path
/// is 0 (§2.4).
///
/// # Errors
/// A path that does not exist, indexes out of range or does not end at an integer.
pub fn replicas_at(object: &Value, path: &str) -> Result<i64, String> {
    if path.is_empty() {
        return Ok(0);
    }
    let mut at = object;
    for segment in path.split('.') {
        at = match at {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
        .ok_or_else(|| format!("failed to find replicas path {path}: {segment} not found"))?;
    }
    at.as_i64()
        .ok_or_else(|| format!("replicas path {path} is not an integer: {at}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloadspread::whitelist::GroupKind;
    use serde_json::json;

    fn link(api_version: &str, kind: &str, name: &str) -> Link {
        Link {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    fn target(api_version: &str, kind: &str, name: &str) -> TargetReference {
        TargetReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    const NO_CUSTOM: WorkloadKinds<'static> = WorkloadKinds { custom: &[] };

    #[test]
    fn a_deployment_matches_through_its_replica_set_and_the_replica_set_itself() {
        let chain = OwnerChain {
            links: vec![
                link("apps/v1", "ReplicaSet", "web-7d9f"),
                link("apps/v1", "Deployment", "web"),
            ],
            end: ChainEnd::Top,
        };
        let kinds = NO_CUSTOM;
        assert_eq!(
            reference_equal(&target("apps/v1", "Deployment", "web"), &chain, kinds),
            Reference::Match
        );
        assert_eq!(
            reference_equal(
                &target("apps/v1beta2", "ReplicaSet", "web-7d9f"),
                &chain,
                kinds
            ),
            Reference::Match,
            "versions are not compared"
        );
        assert_eq!(
            reference_equal(&target("apps/v1", "Deployment", "api"), &chain, kinds),
            Reference::NoMatch
        );
        assert_eq!(
            reference_equal(&target("apps/v1/x", "Deployment", "web"), &chain, kinds),
            Reference::Ignore
        );
    }

    #[test]
    fn a_missing_owner_is_not_found_unless_the_target_is_met_first() {
        let chain = OwnerChain {
            links: vec![link("apps/v1", "ReplicaSet", "ghost")],
            end: ChainEnd::NotFound("replicasets.apps \"ghost\" not found".into()),
        };
        assert_eq!(
            reference_equal(&target("apps/v1", "Deployment", "web"), &chain, NO_CUSTOM),
            Reference::NotFound("replicasets.apps \"ghost\" not found".into())
        );
        assert_eq!(
            reference_equal(&target("apps/v1", "ReplicaSet", "ghost"), &chain, NO_CUSTOM),
            Reference::Match
        );
        assert!(could_own(
            &target("apps/v1", "Deployment", "web"),
            &chain.links[0],
            NO_CUSTOM
        ));
        assert!(!could_own(
            &target("apps.kruise.io/v1alpha1", "CloneSet", "cs"),
            &chain.links[0],
            NO_CUSTOM
        ));
    }

    #[test]
    fn whitelisted_sub_resources_are_walked_through() {
        let custom = [CustomWorkload {
            workload: GroupKind {
                group: "game.kruise.io".into(),
                kind: "GameServerSet".into(),
            },
            replicas_path: "spec.replicas".into(),
            sub_resources: vec![GroupKind {
                group: "game.kruise.io".into(),
                kind: "GameServer".into(),
            }],
        }];
        let kinds = WorkloadKinds { custom: &custom };
        let chain = OwnerChain {
            links: vec![
                link("game.kruise.io/v1alpha1", "GameServer", "gs-0"),
                link("game.kruise.io/v1alpha1", "GameServerSet", "gss"),
            ],
            end: ChainEnd::Top,
        };
        assert_eq!(
            reference_equal(
                &target("game.kruise.io/v1alpha1", "GameServerSet", "gss"),
                &chain,
                kinds
            ),
            Reference::Match
        );
        // Without the whitelist the walk stops at the GameServer.
        assert_eq!(
            reference_equal(
                &target("game.kruise.io/v1alpha1", "GameServerSet", "gss"),
                &chain,
                NO_CUSTOM
            ),
            Reference::NoMatch
        );
    }

    #[test]
    fn versions_come_from_the_hash_labels_of_replica_set_pods_only() {
        let labels = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            pod_version(
                Some("ReplicaSet"),
                &labels(&[("pod-template-hash", "5d8f")])
            ),
            "5d8f"
        );
        assert_eq!(
            pod_version(
                Some("ReplicaSet"),
                &labels(&[("controller-revision-hash", "web-6c4b9")])
            ),
            "6c4b9"
        );
        assert_eq!(
            pod_version(Some("CloneSet"), &labels(&[("pod-template-hash", "5d8f")])),
            "versionIgnored"
        );
        assert_eq!(
            pod_version(Some("ReplicaSet"), &labels(&[])),
            "versionIgnored"
        );
    }

    #[test]
    fn replicas_paths_index_objects_and_arrays_and_fail_clearly() {
        let tf = json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 3}}, "subsets": [{"replicas": 1}, {"replicas": 4}]}});
        assert_eq!(
            replicas_at(&tf, "spec.tfReplicaSpecs.Worker.replicas"),
            Ok(3)
        );
        assert_eq!(replicas_at(&tf, "spec.subsets.1.replicas"), Ok(4));
        assert_eq!(replicas_at(&tf, ""), Ok(0));
        assert!(replicas_at(&tf, "spec.subsets.2.replicas").is_err());
        assert!(replicas_at(&tf, "spec.tfReplicaSpecs").is_err());
    }
}
