//! Kubernetes' strategic-merge patch of a Pod: `strategicpatch.StrategicMergePatch(original, patch,
//! &v1.Pod{})` of k8s.io/apimachinery (the apply half: `mergeMap`, `mergeSlice` and their helpers, as of
//! v0.3x, where values a patch brings in lose their nulls and directives), which WorkloadSpread applies
//! to a Pod at CREATE (spec/workloadspread.md §5.5 step 5) and to a workload's pod template when it
//! validates a subset's patch (§7.1).
//!
//! It works on [`serde_json::Value`]s, taken by value as Go's `mergeMap` takes its maps (it mutates
//! both): a subset patch is small, and nothing here clones or walks the original beyond where the patch
//! reaches, so no nesting of the original can exhaust the stack.
//!
//! # The rules (Go's, in Go's order)
//! In an object (`mergeMap`):
//! 1. a `$patch` key decides for the whole object: `replace` gives the patch object without its `$patch`
//!    (as it stands: its nulls and inner directives too), `delete` gives an **empty object** (not an
//!    absent key: Go returns an empty map), anything else is an error;
//! 2. `$retainKeys: [k…]` drops from the original every key not listed; a patch key not listed (and not
//!    `null`, not a parallel-list directive) is an error;
//! 3. every other patch key, in key order: `null` removes the key; `$deleteFromPrimitiveList/<key>`
//!    removes the listed scalars from the list `<key>`; a key the original lacks, or holds with another
//!    JSON type, takes the patch value with its nulls (in objects) and its `$patch` objects removed; two
//!    objects merge by these rules, two lists as the schema says (below), two scalars: the patch's.
//!
//! Two lists (`mergeSliceHandler`, `mergeSlice`): without `patchStrategy: merge` in the schema the
//! patch's list replaces the original's, as it stands. With it:
//! - scalars: the patch's are appended and duplicates dropped (Go's `deduplicateScalars`);
//! - objects (by the field's `patchMergeKey`): first the patch's special elements, `{"<key>": v,
//!   "$patch": "delete"}` removes every original element whose key is `v`, `{"$patch": "replace"}` makes
//!   the patch's other elements the whole list; then each other patch element merges (rules above) into
//!   the first original element with the same key value, or is appended as it stands;
//! - the order: the elements the patch names in the patch's order, interleaved with the others (the
//!   original's, in the original's order) as Go's `normalizeElementOrder`/`mergeSortedSlice` do: an
//!   original-only element goes first only when the patch element it meets is in the original too and
//!   comes later there. So an element only the patch has goes before every original-only element still
//!   to place (`env: [X]` patched with `[ZONE]` gives `[ZONE, X]`; `[a, b, c]` patched with `[n, c]`
//!   gives `[n, a, b, c]`), as Kubernetes' `kubectl patch` documentation shows for a container added to
//!   a Deployment (the new container first).
//!
//! Merge-key values and scalars compare as Go compares `interface{}` values decoded by `encoding/json`:
//! same JSON type and equal, numbers as `float64` (`80` equals `80.0`).
//!
//! # The Pod schema
//! [`POD`] is the part of `core/v1`'s `patchStrategy`/`patchMergeKey` struct tags a Pod has (read from
//! k8s.io/api `core/v1/types.go` and apimachinery `meta/v1/types.go`), plus the objects on the way to
//! them and the lists without a strategy that a Pod's shape check covers:
//!
//! | path | Go field and tag | here |
//! |---|---|---|
//! | `metadata.ownerReferences` | `OwnerReferences []OwnerReference` `patchStrategy:"merge" patchMergeKey:"uid"` | merge by `uid` |
//! | `metadata.finalizers` | `Finalizers []string` `patchStrategy:"merge"` | merge scalars |
//! | `metadata.labels`, `metadata.annotations` | `map[string]string` | Go map |
//! | `spec.volumes` | `Volumes []Volume` `patchStrategy:"merge,retainKeys" patchMergeKey:"name"` | merge by `name` |
//! | `spec.initContainers` | `InitContainers []Container` `patchStrategy:"merge" patchMergeKey:"name"` | merge by `name` |
//! | `spec.containers` | `Containers []Container` `patchStrategy:"merge" patchMergeKey:"name"` | merge by `name` |
//! | `spec.ephemeralContainers` | `EphemeralContainers []EphemeralContainer` `patchStrategy:"merge" patchMergeKey:"name"` | merge by `name` |
//! | `spec.imagePullSecrets` | `ImagePullSecrets []LocalObjectReference` `patchStrategy:"merge" patchMergeKey:"name"` | merge by `name` |
//! | `spec.hostAliases` | `HostAliases []HostAlias` `patchStrategy:"merge" patchMergeKey:"ip"` | merge by `ip` |
//! | `spec.topologySpreadConstraints` | `TopologySpreadConstraints []TopologySpreadConstraint` `patchStrategy:"merge" patchMergeKey:"topologyKey"` | merge by `topologyKey` |
//! | `spec.schedulingGates` | `SchedulingGates []PodSchedulingGate` `patchStrategy:"merge" patchMergeKey:"name"` | merge by `name` |
//! | `spec.resourceClaims` | `ResourceClaims []PodResourceClaim` `patchStrategy:"merge,retainKeys" patchMergeKey:"name"` | merge by `name` |
//! | `spec.tolerations`, `spec.readinessGates` | no tag | replaced |
//! | `spec.nodeSelector`, `spec.overhead` | Go maps | Go map |
//! | `spec.affinity.*` (`nodeSelectorTerms`, the `preferred…`/`required…` term lists) | no tag | replaced |
//! | `spec.securityContext.supplementalGroups`, `.sysctls`; `spec.dnsConfig.nameservers`, `.searches`, `.options` | no tag | replaced |
//! | `<container>.ports` | `Ports []ContainerPort` `patchStrategy:"merge" patchMergeKey:"containerPort"` | merge by `containerPort` |
//! | `<container>.env` | `Env []EnvVar` `patchStrategy:"merge" patchMergeKey:"name"` | merge by `name` |
//! | `<container>.volumeMounts` | `VolumeMounts []VolumeMount` `patchStrategy:"merge" patchMergeKey:"mountPath"` | merge by `mountPath` |
//! | `<container>.volumeDevices` | `VolumeDevices []VolumeDevice` `patchStrategy:"merge" patchMergeKey:"devicePath"` | merge by `devicePath` |
//! | `<container>.envFrom`, `.command`, `.args` | no tag | replaced |
//! | `<container>.resizePolicy` | `ResizePolicy []ContainerResizePolicy` (`+listType=atomic`, no patch tag) | replaced |
//! | `<container>.resources.limits`, `.requests`; `.resources.claims` | Go maps; no tag | Go map; replaced |
//! | `status.conditions` | `Conditions []PodCondition` `patchStrategy:"merge" patchMergeKey:"type"` | merge by `type` |
//! | `status.podIPs`, `status.hostIPs` | `PodIPs []PodIP`, `HostIPs []HostIP` `patchStrategy:"merge" patchMergeKey:"ip"` | merge by `ip` |
//! | `status.resourceClaimStatuses` | `patchStrategy:"merge,retainKeys" patchMergeKey:"name"` | merge by `name` |
//! | `status.containerStatuses`, `.initContainerStatuses`, `.ephemeralContainerStatuses` | no tag | replaced |
//!
//! `<container>` is an element of `spec.containers`, `spec.initContainers` or `spec.ephemeralContainers`
//! (`EphemeralContainerCommon` carries the same tags). `retainKeys` in a strategy changes nothing when a
//! patch is applied (Go's `extractRetainKeysPatchStrategy` drops it there; only the `$retainKeys`
//! directive counts). Lists below a list without strategy (a volume's `projected.sources`, a container
//! status's fields) are never merged, since Go replaces the outer list whole.
//!
//! # The shape check
//! OpenKruise decodes the patched JSON into a `v1.Pod` and fails there when, say, `spec.containers` is a
//! string (spec scenario 15: `{"spec":{"containers":"x"}}`). Go's `StrategicMergePatch` itself lets the
//! patch's value replace a value of another JSON type, so [`apply`] does the same and then checks the
//! result where the table knows the type: objects are objects or `null`, lists are lists or `null`, and the
//! elements of a list merged by key are objects. A violation is [`SmpError::Shape`], kept apart from
//! [`SmpError::Merge`] so that a caller can tell "failed to merge patch" from "failed to unmarshal" (spec
//! §7.1). Fields outside the table are not checked: a typed decode after this still has the last word.
//!
//! # Not implemented, and deviations
//! - `$setElementOrder/<key>` is refused ([`SmpError::Unsupported`]): only `kubectl apply`'s computed
//!   patches carry it, never a hand-written subset patch.
//! - Fields outside the table are schemaless: two objects merge, two lists are replaced. Go looks every
//!   such field up in `v1.Pod` and fails on a name the type lacks (`unable to find api field in struct …`)
//!   or on two objects under a scalar field; it also matches field names case-insensitively. Here such
//!   patches merge instead; the typed decode that follows rejects what Go's decode would.
//! - Error texts follow Go's words; values in them are written as JSON (objects as their key list), not
//!   as Go's `%v`.
//! - Go walks a patch object's keys in map order (random); here in key order. It only matters for a patch
//!   carrying both `<key>` and `$deleteFromPrimitiveList/<key>`: the deletion runs first here.
//! - Where Go panics (a `null` first element in a merged list, a merge-key value that is an object or a
//!   list), this returns an error.
//! - Numbers keep their JSON spelling (`80.0` stays `80.0`; Go would write `80`); key order is serde's
//!   (sorted, as Go's `json.Marshal` writes maps).
//! - A patch nested deeper than [`MAX_DEPTH`] levels is refused ([`SmpError::TooDeep`]); Go accepts
//!   10,000. The merge recurses along the patch, and no Pod patch comes near this depth.
//!
//! # Where each part lives
//! [`apply`] (here) refuses a patch too deep (`depth`), merges (`merge`: objects and lists, recursively,
//! with the directives of `directives` and the list elements of `elements`, found and ordered as Go does)
//! and checks the shape (`shape`), all following the patch metadata of `schema`; values are told apart
//! and compared as Go does (`value`), and refusals are `error`'s. Each part imports only parts below it,
//! and none imports this module.

use serde_json::{Map, Value};

mod depth;
mod directives;
mod elements;
mod error;
mod merge;
mod schema;
mod shape;
mod value;

pub use depth::MAX_DEPTH;
pub use error::SmpError;
pub use schema::{Field, POD, Schema};

use depth::{discard, too_deep};
use merge::merge_map;
use shape::check_shape;

/// Applies the strategic-merge patch `patch` to `original` with the patch metadata of `schema` ([`POD`]
/// for a Pod), then checks the result's shape against `schema`.
///
/// `null` for either stands for an empty object, as Go's `json.Unmarshal` of `null` into a map gives.
///
/// # Errors
/// [`SmpError::BadDocument`] when either is neither an object nor `null`; [`SmpError::TooDeep`] for a
/// patch deeper than [`MAX_DEPTH`]; [`SmpError::Merge`] for what Kubernetes refuses;
/// [`SmpError::Unsupported`] for `$setElementOrder`; [`SmpError::Shape`] when the result does not have
/// the schema's shape.
pub fn apply(original: Value, patch: Value, schema: Schema) -> Result<Value, SmpError> {
    let original = top_object(original)?;
    let patch = top_object(patch)?;
    if too_deep(&patch) {
        discard(Value::Object(patch));
        return Err(SmpError::TooDeep);
    }
    let merged = Value::Object(merge_map(original, patch, schema)?);
    if let Schema::Struct(fields) = schema {
        check_shape(&merged, fields)?;
    }
    Ok(merged)
}

fn top_object(value: Value) -> Result<Map<String, Value>, SmpError> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(SmpError::BadDocument),
    }
}

#[cfg(test)]
mod tests;
