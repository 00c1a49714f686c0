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

use std::collections::HashSet;

use serde_json::{Map, Value};

/// The deepest patch [`apply`] accepts, counted in objects and lists from the top (the top object is
/// level 1). The merge recurses once per level of the patch.
pub const MAX_DEPTH: usize = 512;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Why a strategic-merge patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmpError {
    /// The original or the patch is not a JSON object (or `null`): apimachinery's `ErrBadJSONDoc`.
    #[error("invalid JSON document")]
    BadDocument,
    /// What `StrategicMergePatch` itself refuses, in its words.
    #[error("{0}")]
    Merge(String),
    /// A directive this module does not implement.
    #[error("{0} is not supported by this strategic-merge patch")]
    Unsupported(&'static str),
    /// The patch is nested deeper than [`MAX_DEPTH`].
    #[error("the patch is nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// The patched object does not have the Pod's shape where the schema knows it (where decoding into a
    /// `v1.Pod` fails).
    #[error("{path}: expected {expected}, found {found}")]
    Shape {
        /// Where, as `spec.containers[0].env`.
        path: String,
        /// `an object` or `a list`.
        expected: &'static str,
        /// The JSON type found there.
        found: &'static str,
    },
}

fn merge_error(message: impl Into<String>) -> SmpError {
    SmpError::Merge(message.into())
}

/// A field's patch metadata, and for objects the fields below that have some.
#[derive(Clone, Copy, Debug)]
pub enum Field {
    /// A Go struct; its fields not listed carry no strategy.
    Object(&'static [(&'static str, Field)]),
    /// A Go map (`map[string]string`, `ResourceList`): merged key by key, holding no objects or lists.
    Map,
    /// A list of objects with `patchStrategy:"merge" patchMergeKey:"<key>"`; its elements' fields.
    MergeByKey(&'static str, &'static [(&'static str, Field)]),
    /// A list of scalars with `patchStrategy:"merge"`.
    MergeScalars,
    /// A list without a patch strategy: replaced whole.
    Atomic,
}

/// The schema of one object level: where a lookup of a field name happens.
#[derive(Clone, Copy, Debug)]
pub enum Schema {
    /// A Go struct with these notable fields.
    Struct(&'static [(&'static str, Field)]),
    /// A Go type that is not a struct (its `reflect.Kind` name): objects or lists under it are an error,
    /// as Go's `LookupPatchMetadataForStruct` says.
    NotStruct(&'static str),
    /// No schema: objects merge, lists are replaced.
    Plain,
}

/// The Pod's patch metadata: see the module documentation's table.
pub const POD: Schema = Schema::Struct(POD_FIELDS);

const POD_FIELDS: &[(&str, Field)] = &[
    ("metadata", Field::Object(OBJECT_META)),
    ("spec", Field::Object(POD_SPEC)),
    ("status", Field::Object(POD_STATUS)),
];

const OBJECT_META: &[(&str, Field)] = &[
    ("annotations", Field::Map),
    ("finalizers", Field::MergeScalars),
    ("labels", Field::Map),
    ("managedFields", Field::Atomic),
    ("ownerReferences", Field::MergeByKey("uid", &[])),
];

const POD_SPEC: &[(&str, Field)] = &[
    ("affinity", Field::Object(AFFINITY)),
    ("containers", Field::MergeByKey("name", CONTAINER)),
    ("dnsConfig", Field::Object(DNS_CONFIG)),
    ("ephemeralContainers", Field::MergeByKey("name", CONTAINER)),
    ("hostAliases", Field::MergeByKey("ip", &[])),
    ("imagePullSecrets", Field::MergeByKey("name", &[])),
    ("initContainers", Field::MergeByKey("name", CONTAINER)),
    ("nodeSelector", Field::Map),
    ("overhead", Field::Map),
    ("readinessGates", Field::Atomic),
    ("resourceClaims", Field::MergeByKey("name", &[])),
    ("schedulingGates", Field::MergeByKey("name", &[])),
    ("securityContext", Field::Object(POD_SECURITY_CONTEXT)),
    ("tolerations", Field::Atomic),
    (
        "topologySpreadConstraints",
        Field::MergeByKey("topologyKey", &[]),
    ),
    ("volumes", Field::MergeByKey("name", &[])),
];

const CONTAINER: &[(&str, Field)] = &[
    ("args", Field::Atomic),
    ("command", Field::Atomic),
    ("env", Field::MergeByKey("name", &[])),
    ("envFrom", Field::Atomic),
    ("ports", Field::MergeByKey("containerPort", &[])),
    ("resizePolicy", Field::Atomic),
    ("resources", Field::Object(RESOURCES)),
    ("volumeDevices", Field::MergeByKey("devicePath", &[])),
    ("volumeMounts", Field::MergeByKey("mountPath", &[])),
];

const RESOURCES: &[(&str, Field)] = &[
    ("claims", Field::Atomic),
    ("limits", Field::Map),
    ("requests", Field::Map),
];

const AFFINITY: &[(&str, Field)] = &[
    ("nodeAffinity", Field::Object(NODE_AFFINITY)),
    ("podAffinity", Field::Object(POD_AFFINITY)),
    ("podAntiAffinity", Field::Object(POD_AFFINITY)),
];

const NODE_AFFINITY: &[(&str, Field)] = &[
    (
        "preferredDuringSchedulingIgnoredDuringExecution",
        Field::Atomic,
    ),
    (
        "requiredDuringSchedulingIgnoredDuringExecution",
        Field::Object(&[("nodeSelectorTerms", Field::Atomic)]),
    ),
];

const POD_AFFINITY: &[(&str, Field)] = &[
    (
        "preferredDuringSchedulingIgnoredDuringExecution",
        Field::Atomic,
    ),
    (
        "requiredDuringSchedulingIgnoredDuringExecution",
        Field::Atomic,
    ),
];

const POD_SECURITY_CONTEXT: &[(&str, Field)] = &[
    ("supplementalGroups", Field::Atomic),
    ("sysctls", Field::Atomic),
];

const DNS_CONFIG: &[(&str, Field)] = &[
    ("nameservers", Field::Atomic),
    ("options", Field::Atomic),
    ("searches", Field::Atomic),
];

const POD_STATUS: &[(&str, Field)] = &[
    ("conditions", Field::MergeByKey("type", &[])),
    ("containerStatuses", Field::Atomic),
    ("ephemeralContainerStatuses", Field::Atomic),
    ("hostIPs", Field::MergeByKey("ip", &[])),
    ("initContainerStatuses", Field::Atomic),
    ("podIPs", Field::MergeByKey("ip", &[])),
    ("resourceClaimStatuses", Field::MergeByKey("name", &[])),
];

/// A list field's patch metadata as `mergeSliceHandler` uses it.
struct ListMeta {
    /// The elements' schema.
    elements: Schema,
    /// `patchStrategy` is `merge`.
    merge: bool,
    /// `patchMergeKey`, empty when none.
    key: &'static str,
}

impl Schema {
    fn field(fields: &'static [(&'static str, Field)], name: &str) -> Option<Field> {
        fields.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    fn not_struct(kind: &str) -> SmpError {
        merge_error(format!(
            "merging an object in json but data type is not struct, instead is: {kind}"
        ))
    }

    /// `LookupPatchMetadataForStruct`: the schema below an object field both sides hold as objects.
    fn object(self, name: &str) -> Result<Schema, SmpError> {
        match self {
            Schema::Struct(fields) => Ok(match Schema::field(fields, name) {
                Some(Field::Object(fields)) => Schema::Struct(fields),
                Some(Field::Map) => Schema::NotStruct("map"),
                Some(Field::MergeByKey(..) | Field::MergeScalars | Field::Atomic) => {
                    Schema::NotStruct("slice")
                }
                None => Schema::Plain,
            }),
            Schema::NotStruct(kind) => Err(Schema::not_struct(kind)),
            Schema::Plain => Ok(Schema::Plain),
        }
    }

    /// `LookupPatchMetadataForSlice`: the metadata of a list field both sides hold as lists.
    fn list(self, name: &str) -> Result<ListMeta, SmpError> {
        let plain = ListMeta {
            elements: Schema::Plain,
            merge: false,
            key: "",
        };
        match self {
            Schema::Struct(fields) => match Schema::field(fields, name) {
                Some(Field::MergeByKey(key, fields)) => Ok(ListMeta {
                    elements: Schema::Struct(fields),
                    merge: true,
                    key,
                }),
                Some(Field::MergeScalars) => Ok(ListMeta {
                    elements: Schema::NotStruct("string"),
                    merge: true,
                    key: "",
                }),
                Some(Field::Atomic) | None => Ok(plain),
                Some(Field::Object(_) | Field::Map) => {
                    Err(merge_error("expected slice or array type, but got: struct"))
                }
            },
            Schema::NotStruct(kind) => Err(Schema::not_struct(kind)),
            Schema::Plain => Ok(plain),
        }
    }
}

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
    if let Err(err) = check_depth(&patch) {
        discard(Value::Object(patch));
        return Err(err);
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

/// Drops a value without recursing (serde_json's drop recurses once per level).
fn discard(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            Value::Array(list) => stack.extend(list),
            _ => {}
        }
    }
}

/// Refuses a patch deeper than [`MAX_DEPTH`], without recursing.
fn check_depth(patch: &Map<String, Value>) -> Result<(), SmpError> {
    let mut stack: Vec<(&Value, usize)> = patch.values().map(|v| (v, 2)).collect();
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(list) => Box::new(list.iter()),
            _ => continue,
        };
        if depth > MAX_DEPTH {
            return Err(SmpError::TooDeep);
        }
        stack.extend(children.map(|v| (v, depth + 1)));
    }
    Ok(())
}

/// The JSON type of a value, as Go's `reflect.TypeOf` of what `encoding/json` decodes tells them apart.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Go's `==` on two decoded `interface{}` values; objects or lists on both sides are not comparable (Go
/// panics there).
fn go_equal(a: &Value, b: &Value) -> Result<bool, SmpError> {
    Ok(match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)) => {
            return Err(merge_error(format!(
                "cannot compare two {}s as merge-key values or list elements",
                kind(a)
            )));
        }
        _ => a == b,
    })
}

/// A value for an error message: scalars as JSON, objects as their keys (never a deep walk).
fn brief(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            format!("map[{}]", keys.join(" "))
        }
        Value::Array(list) => format!("[{} elements]", list.len()),
        scalar => scalar.to_string(),
    }
}

fn no_merge_key(map: &Map<String, Value>, key: &str) -> SmpError {
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    merge_error(format!(
        "map: map[{}] does not contain declared merge key: {key}",
        keys.join(" ")
    ))
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> SmpError {
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    let directive = match directive {
        Value::String(s) => s.clone(),
        other => brief(other),
    };
    merge_error(format!(
        "unknown patch type: {directive} in map: map[{}]",
        keys.join(" ")
    ))
}

/// `mergeMap` with `MergeParallelList` and `IgnoreUnmatchedNulls` (what `StrategicMergePatch` sets).
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema,
) -> Result<Map<String, Value>, SmpError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    if patch.keys().any(|k| k.starts_with(SET_ELEMENT_ORDER)) {
        return Err(SmpError::Unsupported("$setElementOrder"));
    }
    for (key, patch_value) in patch {
        let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            // extractKey: "$deleteFromPrimitiveList/<key>", split at the first '/'.
            Some(rest) => match rest.strip_prefix('/') {
                Some(name) => (name.to_owned(), true),
                None => return Err(merge_error("invalid patch format of primitive list")),
            },
            None => (key, false),
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let current = match original.get_mut(&key) {
            Some(current) if kind(current) == kind(&patch_value) => current,
            _ => {
                // Absent, or of another type: the patch's value, cleaned (not for a deletion list).
                if !delete_list {
                    match remove_directives(discard_nulls(patch_value)) {
                        Some(value) => original.insert(key, value),
                        None => original.remove(&key),
                    };
                }
                continue;
            }
        };
        match patch_value {
            Value::Object(patch_map) => {
                let below = schema.object(&key)?;
                let Value::Object(current_map) = std::mem::take(current) else {
                    unreachable!("same kind")
                };
                *current = Value::Object(merge_map(current_map, patch_map, below)?);
            }
            Value::Array(patch_list) => {
                let meta = schema.list(&key)?;
                if meta.merge || delete_list {
                    let Value::Array(current_list) = std::mem::take(current) else {
                        unreachable!("same kind")
                    };
                    *current =
                        Value::Array(merge_list(current_list, patch_list, &meta, delete_list)?);
                } else {
                    *current = Value::Array(patch_list);
                }
            }
            scalar => *current = scalar,
        }
    }
    Ok(original)
}

/// `applyRetainKeysDirective` (with `MergeParallelList`).
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(merge_error("invalid patch format of retainKeys"));
    };
    let keep: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !keep.contains(key.as_str()) {
            return Err(merge_error("invalid patch format of retainKeys"));
        }
    }
    original.retain(|key, _| keep.contains(key.as_str()));
    Ok(())
}

/// `discardNullValuesFromPatch`: nulls out of every object (not out of lists).
fn discard_nulls(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|_, v| !v.is_null());
                map.values_mut().for_each(walk);
            }
            Value::Array(list) => list.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// `removeDirectives`: `None` for an object with `$patch`, and every such object dropped below.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                map.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(list) => Some(Value::Array(
            list.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// `sliceElementType`: the one JSON type of every element of both lists.
fn element_kind(original: &[Value], patch: &[Value]) -> Result<&'static str, SmpError> {
    let mut elements = original.iter().chain(patch);
    let Some(first) = elements.next() else {
        return Err(merge_error("no elements in any of the given slices"));
    };
    let first = kind(first);
    if first == "list" {
        return Err(merge_error("lists of lists are not supported"));
    }
    if first == "null" || elements.any(|e| kind(e) != first) {
        return Err(merge_error(format!(
            "list element types are not identical: {} and {} elements",
            original.len(),
            patch.len()
        )));
    }
    Ok(first)
}

/// `mergeSlice`: two lists of a field with `patchStrategy: merge` (or a deletion list).
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: &ListMeta,
    delete_list: bool,
) -> Result<Vec<Value>, SmpError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    if element_kind(&original, &patch)? != "object" {
        if delete_list {
            return delete_from_list(original, &patch);
        }
        let server_order = original.clone();
        let mut both = original;
        both.extend(patch.iter().cloned());
        let merged = deduplicate_scalars(both)?;
        let (ours, server_only) = partition(merged, |v| position(&patch, v))?;
        return normalize_order(ours, server_only, &patch, &server_order, |order, v| {
            position(order, v)
        });
    }
    if meta.key.is_empty() {
        let name = match meta.elements {
            Schema::NotStruct(kind) => kind,
            _ => "struct",
        };
        return Err(merge_error(format!(
            "cannot merge lists without merge key for {name}"
        )));
    }
    let key = meta.key;
    let (original, patch) = special_elements(original, patch, key)?;
    // The original's merge-key values after the deletions: the order the original's elements keep.
    let server_order = original
        .iter()
        .map(|e| key_value(e, key).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let patch_order = patch
        .iter()
        .map(|e| key_value(e, key).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let merged = merge_elements(original, patch, key, meta.elements)?;
    let (ours, server_only) = partition(merged, |e| position(&patch_order, key_value(e, key)?))?;
    normalize_order(
        ours,
        server_only,
        &patch_order,
        &server_order,
        |order, e| position(order, key_value(e, key)?),
    )
}

/// An element's merge-key value; an element that is not an object, or lacks it, is an error.
fn key_value<'v>(element: &'v Value, key: &str) -> Result<&'v Value, SmpError> {
    match element {
        Value::Object(map) => map.get(key).ok_or_else(|| no_merge_key(map, key)),
        other => Err(merge_error(format!(
            "expected a map[string]interface {{}}, but received a {}",
            kind(other)
        ))),
    }
}

/// Go's `index`: where `value` first is in `order`.
fn position(order: &[Value], value: &Value) -> Result<Option<usize>, SmpError> {
    for (i, v) in order.iter().enumerate() {
        if go_equal(value, v)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `deleteFromSlice`: the original without every scalar the deletion list names.
fn delete_from_list(original: Vec<Value>, delete: &[Value]) -> Result<Vec<Value>, SmpError> {
    let mut kept = Vec::with_capacity(original.len());
    for value in original {
        if position(delete, &value)?.is_none() {
            kept.push(value);
        }
    }
    Ok(kept)
}

/// `deduplicateScalars`, Go's algorithm (a later duplicate is overwritten by the last element), whose
/// order the ordering step then fixes.
fn deduplicate_scalars(mut s: Vec<Value>) -> Result<Vec<Value>, SmpError> {
    if s.is_empty() {
        return Ok(s);
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if go_equal(&s[i], &s[j])? {
                s[j] = s[length].clone();
                s.truncate(length);
                length -= 1;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    Ok(s)
}

/// `mergeSliceWithSpecialElements`: applies the patch's `$patch` elements; gives the original and the
/// patch's other elements (the original is those elements, and the patch empty, after a `replace`).
fn special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut rest = Vec::with_capacity(patch.len());
    let mut replace = false;
    for element in patch {
        let Value::Object(map) = &element else {
            unreachable!("every element is an object")
        };
        let Some(directive) = map.get(DIRECTIVE) else {
            rest.push(element);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let value = map.get(key).ok_or_else(|| no_merge_key(map, key))?;
                let mut kept = Vec::with_capacity(original.len());
                for e in original {
                    let matches = match &e {
                        Value::Object(m) => match m.get(key) {
                            Some(v) => go_equal(v, value)?,
                            None => false,
                        },
                        _ => unreachable!("every element is an object"),
                    };
                    if !matches {
                        kept.push(e);
                    }
                }
                original = kept;
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(merge_error(
                    "merging lists cannot yet be specified in the patch",
                ));
            }
            _ => return Err(bad_patch_type(directive, map)),
        }
    }
    Ok(if replace {
        (rest, Vec::new())
    } else {
        (original, rest)
    })
}

/// `mergeSliceWithoutSpecialElements`: each patch element merged into the original element with its
/// merge-key value, or appended as it stands.
fn merge_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    schema: Schema,
) -> Result<Vec<Value>, SmpError> {
    for element in patch {
        let value = key_value(&element, key)?;
        let mut found = None;
        for (i, e) in original.iter().enumerate() {
            if let Value::Object(m) = e
                && let Some(v) = m.get(key)
                && go_equal(v, value)?
            {
                found = Some(i);
                break;
            }
        }
        let Value::Object(patch_map) = element else {
            unreachable!("every element is an object")
        };
        match found {
            Some(i) => {
                let Value::Object(current) = std::mem::take(&mut original[i]) else {
                    unreachable!("every element is an object")
                };
                original[i] = Value::Object(merge_map(current, patch_map, schema)?);
            }
            None => original.push(Value::Object(patch_map)),
        }
    }
    Ok(original)
}

/// `partitionMapsByPresentInList`/`partitionPrimitivesByPresentInList`: the merged elements the patch
/// names, and the others, each in merged order.
fn partition(
    merged: Vec<Value>,
    mut in_patch: impl FnMut(&Value) -> Result<Option<usize>, SmpError>,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let (mut ours, mut server_only) = (Vec::new(), Vec::new());
    for element in merged {
        if in_patch(&element)?.is_some() {
            ours.push(element);
        } else {
            server_only.push(element);
        }
    }
    Ok((ours, server_only))
}

/// `normalizeElementOrder`: the patch's elements in patch order, the others in the original's order, then
/// interleaved by `mergeSortedSlice`. `index(order, element)` finds an element in an order (patch or
/// original) by merge-key value, or by value for scalars.
fn normalize_order(
    ours: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    index: impl Fn(&[Value], &Value) -> Result<Option<usize>, SmpError>,
) -> Result<Vec<Value>, SmpError> {
    // Every element is found in its order (it came from there), so Go's `sort.SliceStable` with its
    // "less when both are found and come first" is a plain stable sort on the position.
    let sort = |list: Vec<Value>, order: &[Value]| -> Result<Vec<Value>, SmpError> {
        let mut keyed = list
            .into_iter()
            .map(|e| Ok((index(order, &e)?.unwrap_or(usize::MAX), e)))
            .collect::<Result<Vec<_>, SmpError>>()?;
        keyed.sort_by_key(|(i, _)| *i);
        Ok(keyed.into_iter().map(|(_, e)| e).collect())
    };
    let right = sort(ours, patch_order)?;
    let left = sort(server_only, server_order)?;
    // mergeSortedSlice(left = server-only, right = patch elements, serverOrder).
    let mut left_positions = Vec::with_capacity(left.len());
    for e in &left {
        left_positions.push(index(server_order, e)?);
    }
    let mut right_positions = Vec::with_capacity(right.len());
    for e in &right {
        right_positions.push(index(server_order, e)?);
    }
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    let (mut i, mut j) = (0, 0);
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(_), Some(_)) => matches!(
                (left_positions[i], right_positions[j]),
                (Some(l), Some(r)) if l < r
            ),
        };
        if take_left {
            out.extend(left.next());
            i += 1;
        } else {
            out.extend(right.next());
            j += 1;
        }
    }
    Ok(out)
}

/// Checks the shape of the patched object where `fields` knows it; a path names the first violation.
fn check_shape(value: &Value, fields: &'static [(&'static str, Field)]) -> Result<(), SmpError> {
    // Explicit stack: (value, its fields, its path). The schema's depth bounds it anyway.
    let mut stack = vec![(value, fields, String::new())];
    while let Some((value, fields, path)) = stack.pop() {
        let Value::Object(map) = value else { continue };
        for (name, field) in fields {
            let Some(child) = map.get(*name) else {
                continue;
            };
            if child.is_null() {
                continue;
            }
            let child_path = if path.is_empty() {
                (*name).to_owned()
            } else {
                format!("{path}.{name}")
            };
            let shape = |expected: &'static str, ok: bool| {
                if ok {
                    Ok(())
                } else {
                    Err(SmpError::Shape {
                        path: child_path.clone(),
                        expected,
                        found: kind(child),
                    })
                }
            };
            match field {
                Field::Object(below) => {
                    shape("an object", child.is_object())?;
                    stack.push((child, below, child_path.clone()));
                }
                Field::Map => shape("an object", child.is_object())?,
                Field::MergeScalars | Field::Atomic => shape("a list", child.is_array())?,
                Field::MergeByKey(_, below) => {
                    shape("a list", child.is_array())?;
                    for (i, element) in child.as_array().into_iter().flatten().enumerate() {
                        if !element.is_object() && !element.is_null() {
                            return Err(SmpError::Shape {
                                path: format!("{child_path}[{i}]"),
                                expected: "an object",
                                found: kind(element),
                            });
                        }
                        stack.push((element, below, format!("{child_path}[{i}]")));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A Pod as the API server returns it after defaulting (trimmed to what the tests read).
    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-0",
                "namespace": "default",
                "labels": {"app": "web"},
                "annotations": {"a": "1"},
                "finalizers": ["x/a", "x/b"],
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d",
                    "uid": "u-1", "controller": true, "blockOwnerDeletion": true
                }],
                "futureField": {"kept": true}
            },
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "nginx:1.25",
                        "command": ["nginx"],
                        "args": ["-g", "daemon off;"],
                        "env": [{"name": "X", "value": "1"}],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    },
                    {
                        "name": "sidecar",
                        "image": "busybox",
                        "env": [{"name": "Y", "value": "2"}],
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "Always"
                    }
                ],
                "volumes": [
                    {"name": "data", "emptyDir": {}},
                    {"name": "kube-api-access-abcde", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}], "defaultMode": 420}}
                ],
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                ],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default",
                "securityContext": {},
                "schedulerName": "default-scheduler",
                "priorityClassName": "high",
                "priority": 10000,
                "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority"
            },
            "status": {"phase": "Pending", "qosClass": "Burstable"}
        })
    }

    fn patched(patch: Value) -> Value {
        apply(pod(), patch, POD).unwrap()
    }

    fn container<'v>(pod: &'v Value, name: &str) -> &'v Value {
        pod["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
    }

    fn names(list: &Value, key: &str) -> Vec<Value> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|e| e[key].clone())
            .collect()
    }

    #[test]
    fn scenario_13_label_added_env_merged_by_name_other_containers_untouched() {
        let out = patched(json!({
            "metadata": {"labels": {"subset": "a"}},
            "spec": {"containers": [{"name": "app", "env": [{"name": "ZONE", "value": "z1"}]}]}
        }));
        assert_eq!(
            out["metadata"]["labels"],
            json!({"app": "web", "subset": "a"})
        );
        let app = container(&out, "app");
        // [X=1, ZONE=z1] as a set; Go's order puts the element only the patch has first.
        assert_eq!(
            app["env"],
            json!([{"name": "ZONE", "value": "z1"}, {"name": "X", "value": "1"}])
        );
        // The rest of the container and the other container as they were.
        let before = pod();
        let mut expected_app = container(&before, "app").clone();
        expected_app["env"] = app["env"].clone();
        assert_eq!(app, &expected_app);
        assert_eq!(container(&out, "sidecar"), container(&before, "sidecar"));
        assert_eq!(
            names(&out["spec"]["containers"], "name"),
            [json!("app"), json!("sidecar")]
        );
        // Everything else is unchanged.
        let mut expected = before.clone();
        expected["metadata"]["labels"]["subset"] = json!("a");
        expected["spec"]["containers"][0]["env"] = app["env"].clone();
        assert_eq!(out, expected);
    }

    #[test]
    fn scenario_14_the_patch_sets_priority_class_name() {
        let out = patched(json!({"spec": {"priorityClassName": "low"}}));
        assert_eq!(out["spec"]["priorityClassName"], "low");
        // Clearing `priority` is the caller's step (§5.5 step 5), not the patch's.
        assert_eq!(out["spec"]["priority"], 10000);
    }

    #[test]
    fn scenario_15_containers_that_are_not_a_list_are_an_error() {
        assert_eq!(
            apply(pod(), json!({"spec": {"containers": "x"}}), POD),
            Err(SmpError::Shape {
                path: "spec.containers".into(),
                expected: "a list",
                found: "string",
            })
        );
        let err = apply(pod(), json!({"spec": {"containers": {"name": "app"}}}), POD).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers: expected a list, found object"
        );
        let err = apply(pod(), json!({"spec": "x"}), POD).unwrap_err();
        assert_eq!(err.to_string(), "spec: expected an object, found string");
        // An element of a keyed list, and a list below an element.
        let err = apply(
            pod(),
            json!({"spec": {"containers": [{"name": "app", "env": {"name": "Z"}}]}}),
            POD,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[0].env: expected a list, found object"
        );
        let err = apply(
            pod(),
            json!({"spec": {"initContainers": [{"name": "i", "ports": 5}]}}),
            POD,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.initContainers[0].ports: expected a list, found number"
        );
        let err = apply(pod(), json!({"metadata": {"labels": ["a"]}}), POD).unwrap_err();
        assert_eq!(
            err.to_string(),
            "metadata.labels: expected an object, found list"
        );
    }

    #[test]
    fn maps_merge_recursively_and_null_deletes() {
        let out = patched(json!({
            "metadata": {"labels": {"app": null, "tier": "fe"}, "annotations": null},
            "spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "1Gi", "cpu": null}}}]}
        }));
        assert_eq!(out["metadata"]["labels"], json!({"tier": "fe"}));
        assert!(out["metadata"].get("annotations").is_none());
        assert_eq!(
            container(&out, "app")["resources"],
            json!({"limits": {"memory": "1Gi"}, "requests": {"cpu": "500m"}})
        );
        // A null for a key the original lacks is dropped, not kept.
        let out = patched(json!({"spec": {"hostname": null}}));
        assert!(out["spec"].get("hostname").is_none());
        // Values brought in lose their nulls (in objects, not in lists) and their `$patch` objects.
        let out = patched(json!({"spec": {"affinity": {
            "nodeAffinity": {"x": null, "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": []}, "gone": null},
                {"$patch": "delete"}
            ]},
            "podAffinity": {"$patch": "replace"}
        }}}));
        assert_eq!(
            out["spec"]["affinity"],
            json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": []}}
            ]}})
        );
    }

    #[test]
    fn unknown_fields_of_the_original_are_kept_and_merged() {
        let out = patched(json!({
            "metadata": {"futureField": {"more": 1}},
            "spec": {"futureSpec": [1, 2]}
        }));
        assert_eq!(
            out["metadata"]["futureField"],
            json!({"kept": true, "more": 1})
        );
        assert_eq!(out["spec"]["futureSpec"], json!([1, 2]));
        assert_eq!(
            out["status"],
            json!({"phase": "Pending", "qosClass": "Burstable"})
        );
        assert_eq!(out["kind"], "Pod");
    }

    #[test]
    fn lists_with_a_merge_key_merge_element_by_element() {
        let out = patched(json!({"spec": {
            "containers": [
                {"name": "sidecar", "image": "busybox:2"},
                {"name": "new", "image": "n"},
                {"name": "app", "ports": [{"containerPort": 8080}, {"containerPort": 80, "name": "http"}]}
            ],
            "volumes": [{"name": "cache", "emptyDir": {"medium": "Memory"}}, {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}]
        }}));
        // The patch's order, interleaved with the original's: "new" after "sidecar" as in the patch.
        assert_eq!(
            names(&out["spec"]["containers"], "name"),
            [json!("sidecar"), json!("new"), json!("app")]
        );
        assert_eq!(container(&out, "sidecar")["image"], "busybox:2");
        assert_eq!(
            container(&out, "sidecar")["env"],
            json!([{"name": "Y", "value": "2"}])
        );
        assert_eq!(
            container(&out, "new"),
            &json!({"name": "new", "image": "n"})
        );
        assert_eq!(
            container(&out, "app")["ports"],
            json!([{"containerPort": 8080}, {"containerPort": 80, "protocol": "TCP", "name": "http"}])
        );
        assert_eq!(
            out["spec"]["volumes"],
            json!([
                {"name": "cache", "emptyDir": {"medium": "Memory"}},
                {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                {"name": "kube-api-access-abcde", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}], "defaultMode": 420}}
            ])
        );
        // Owner references by uid; a number merge key matches whatever its spelling.
        let out = patched(
            json!({"metadata": {"ownerReferences": [{"uid": "u-1", "blockOwnerDeletion": false}]}}),
        );
        assert_eq!(
            out["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            false
        );
        assert_eq!(out["metadata"]["ownerReferences"][0]["name"], "web-5d");
        let out = patched(
            json!({"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80.0, "hostPort": 8000}]}]}}),
        );
        assert_eq!(
            container(&out, "app")["ports"],
            // The patch's scalar wins, in its spelling (Go's float64 would print 80).
            json!([{"containerPort": 80.0, "protocol": "TCP", "hostPort": 8000}])
        );
    }

    #[test]
    fn order_of_merged_lists_follows_go() {
        // Original [a, b, c, d]; patch [d, x, b]: the patch's elements in patch order [d, x, b], the
        // original-only ones in original order [a, c]; mergeSortedSlice takes a (before d in the
        // original), c (before d), then d, x, b.
        let env = |names: &[&str]| Value::Array(names.iter().map(|n| json!({"name": n})).collect());
        let mut original = pod();
        original["spec"]["containers"][0]["env"] = env(&["a", "b", "c", "d"]);
        let out = apply(
            original,
            json!({"spec": {"containers": [{"name": "app", "env": env(&["d", "x", "b"])}]}}),
            POD,
        )
        .unwrap();
        assert_eq!(
            container(&out, "app")["env"],
            env(&["a", "c", "d", "x", "b"])
        );
        // An original-only element meeting one only the patch has goes after it; one meeting a patch
        // element it precedes in the original goes before it.
        let mut original = pod();
        original["spec"]["containers"][0]["env"] = env(&["a", "b", "c"]);
        let out = apply(
            original,
            json!({"spec": {"containers": [{"name": "app", "env": env(&["n", "c"])}]}}),
            POD,
        )
        .unwrap();
        assert_eq!(container(&out, "app")["env"], env(&["n", "a", "b", "c"]));
    }

    #[test]
    fn lists_without_a_merge_key_are_replaced() {
        let out = patched(json!({"spec": {
            "tolerations": [{"key": "zone", "operator": "Equal", "value": "z1", "effect": "NoSchedule"}],
            "containers": [{"name": "app", "args": ["-v"], "command": ["sh", "-c"], "envFrom": [{"configMapRef": {"name": "c"}}]}]
        }}));
        assert_eq!(
            out["spec"]["tolerations"],
            json!([{"key": "zone", "operator": "Equal", "value": "z1", "effect": "NoSchedule"}])
        );
        let app = container(&out, "app");
        assert_eq!(app["args"], json!(["-v"]));
        assert_eq!(app["command"], json!(["sh", "-c"]));
        assert_eq!(app["envFrom"], json!([{"configMapRef": {"name": "c"}}]));
        // A replaced list is taken as it stands, nulls and directives included (Go does not clean it).
        let out = patched(json!({"spec": {"tolerations": [{"key": "k", "x": null}]}}));
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "k", "x": null}]));
        // A volume's inner lists are replaced with the volume's merge.
        let out = patched(
            json!({"spec": {"volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": []}}]}}),
        );
        assert_eq!(
            out["spec"]["volumes"][1]["projected"],
            json!({"sources": [], "defaultMode": 420})
        );
    }

    #[test]
    fn primitive_lists_with_merge_strategy_append_and_delete() {
        let out = patched(json!({"metadata": {"finalizers": ["x/c", "x/a"]}}));
        // Deduplicated; the patch's [c, a] in its order, b (after a in the original) after them.
        assert_eq!(out["metadata"]["finalizers"], json!(["x/c", "x/a", "x/b"]));
        let out =
            patched(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/a", "x/z"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["x/b"]));
        // Both: the deletion runs first, then the additions.
        let out = patched(json!({"metadata": {
            "$deleteFromPrimitiveList/finalizers": ["x/b"],
            "finalizers": ["x/c"]
        }}));
        assert_eq!(out["metadata"]["finalizers"], json!(["x/c", "x/a"]));
        // A deletion list for a list the original lacks does nothing; a bad directive key is an error.
        let out = patched(json!({"spec": {"$deleteFromPrimitiveList/nodeSelectorTerms": ["a"]}}));
        assert_eq!(out["spec"], pod()["spec"]);
        assert_eq!(
            apply(
                pod(),
                json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["x/a"]}}),
                POD
            ),
            Err(SmpError::Merge(
                "invalid patch format of primitive list".into()
            ))
        );
        // An empty patch list leaves a merged list as it was; a deletion list works on any list.
        let out = patched(json!({"metadata": {"finalizers": []}, "spec": {"containers": []}}));
        assert_eq!(out, pod());
        let out = patched(
            json!({"spec": {"containers": [{"name": "app", "$deleteFromPrimitiveList/args": ["-g"]}]}}),
        );
        assert_eq!(container(&out, "app")["args"], json!(["daemon off;"]));
        // Lists without strategy are replaced even when they hold scalars.
        let out = patched(json!({"spec": {"containers": [{"name": "app", "args": ["-q"]}]}}));
        assert_eq!(container(&out, "app")["args"], json!(["-q"]));
    }

    #[test]
    fn patch_delete_removes_a_list_element_and_empties_a_map() {
        let out =
            patched(json!({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}));
        assert_eq!(names(&out["spec"]["containers"], "name"), [json!("app")]);
        let out = patched(
            json!({"spec": {"containers": [{"name": "app", "env": [{"name": "X", "$patch": "delete"}, {"name": "Z", "value": "3"}]}]}}),
        );
        assert_eq!(
            container(&out, "app")["env"],
            json!([{"name": "Z", "value": "3"}])
        );
        // On a map the original holds: an empty map, as Go returns; on one it lacks: nothing.
        let out = patched(
            json!({"spec": {"containers": [{"name": "app", "resources": {"$patch": "delete"}}], "affinity": {"$patch": "delete"}}}),
        );
        assert_eq!(container(&out, "app")["resources"], json!({}));
        assert!(out["spec"].get("affinity").is_none());
        // A deletion element without the merge key is an error.
        assert_eq!(
            apply(
                pod(),
                json!({"spec": {"containers": [{"$patch": "delete"}]}}),
                POD
            ),
            Err(SmpError::Merge(
                "map: map[$patch] does not contain declared merge key: name".into()
            ))
        );
    }

    #[test]
    fn patch_replace_replaces_a_map_or_a_list() {
        let out = patched(json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}));
        assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
        let out = patched(
            json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "s"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "solo", "image": "s"}])
        );
        let out = patched(
            json!({"spec": {"containers": [{"name": "app", "env": [{"name": "N", "value": "v"}, {"$patch": "replace"}]}]}}),
        );
        assert_eq!(
            container(&out, "app")["env"],
            json!([{"name": "N", "value": "v"}])
        );
        // Unknown directives are errors.
        for patch in [
            json!({"spec": {"$patch": "merge-all"}}),
            json!({"spec": {"$patch": 1}}),
            json!({"spec": {"containers": [{"name": "app", "$patch": "bogus"}]}}),
        ] {
            let err = apply(pod(), patch.clone(), POD).unwrap_err();
            assert!(
                err.to_string().starts_with("unknown patch type: "),
                "{patch}: {err}"
            );
        }
        assert_eq!(
            apply(
                pod(),
                json!({"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}),
                POD
            ),
            Err(SmpError::Merge(
                "merging lists cannot yet be specified in the patch".into()
            ))
        );
    }

    #[test]
    fn retain_keys_and_set_element_order() {
        let out = patched(
            json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}}),
        );
        assert_eq!(
            out["spec"]["volumes"][0],
            json!({"name": "data", "hostPath": {"path": "/x"}})
        );
        assert_eq!(
            apply(
                pod(),
                json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["name"], "hostPath": {}}]}}),
                POD
            ),
            Err(SmpError::Merge("invalid patch format of retainKeys".into()))
        );
        assert_eq!(
            apply(pod(), json!({"spec": {"$retainKeys": "x"}}), POD),
            Err(SmpError::Merge("invalid patch format of retainKeys".into()))
        );
        let err = apply(
            pod(),
            json!({"spec": {"$setElementOrder/containers": [{"name": "app"}]}}),
            POD,
        )
        .unwrap_err();
        assert_eq!(err, SmpError::Unsupported("$setElementOrder"));
        assert_eq!(
            err.to_string(),
            "$setElementOrder is not supported by this strategic-merge patch"
        );
    }

    #[test]
    fn merge_errors_use_go_words() {
        // Objects under a Go map, or lists where the schema has a struct.
        let mut original = pod();
        original["metadata"]["labels"]["odd"] = json!({"a": 1});
        assert_eq!(
            apply(
                original,
                json!({"metadata": {"labels": {"odd": {"b": 2}}}}),
                POD
            ),
            Err(SmpError::Merge(
                "merging an object in json but data type is not struct, instead is: map".into()
            ))
        );
        let mut original = pod();
        original["spec"]["affinity"] = json!([1]);
        assert_eq!(
            apply(original, json!({"spec": {"affinity": [2]}}), POD),
            Err(SmpError::Merge(
                "expected slice or array type, but got: struct".into()
            ))
        );
        // Mixed element types, lists of lists, elements without the merge key.
        let err = apply(pod(), json!({"spec": {"containers": ["x"]}}), POD).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("list element types are not identical"),
            "{err}"
        );
        let mut original = pod();
        original["metadata"]["finalizers"] = json!([["a"]]);
        assert_eq!(
            apply(original, json!({"metadata": {"finalizers": ["b"]}}), POD),
            Err(SmpError::Merge("lists of lists are not supported".into()))
        );
        assert_eq!(
            apply(
                pod(),
                json!({"spec": {"containers": [{"image": "i"}]}}),
                POD
            ),
            Err(SmpError::Merge(
                "map: map[image] does not contain declared merge key: name".into()
            ))
        );
        let mut original = pod();
        original["spec"]["containers"][1] = json!({"image": "anonymous"});
        assert_eq!(
            apply(
                original,
                json!({"spec": {"containers": [{"name": "app", "image": "i"}]}}),
                POD
            ),
            Err(SmpError::Merge(
                "map: map[image] does not contain declared merge key: name".into()
            ))
        );
        // A merge-key value that is an object (Go panics comparing two maps).
        let mut original = pod();
        original["spec"]["containers"][0]["name"] = json!({"n": 1});
        assert!(matches!(
            apply(
                original,
                json!({"spec": {"containers": [{"name": {"n": 1}}]}}),
                POD
            ),
            Err(SmpError::Merge(_))
        ));
    }

    #[test]
    fn the_top_level_must_be_an_object_or_null() {
        for bad in [json!([1]), json!(1), json!("s"), json!(true)] {
            assert_eq!(
                apply(bad.clone(), json!({}), POD),
                Err(SmpError::BadDocument)
            );
            assert_eq!(apply(pod(), bad, POD), Err(SmpError::BadDocument));
        }
        assert_eq!(apply(pod(), Value::Null, POD).unwrap(), pod());
        assert_eq!(
            apply(Value::Null, json!({"metadata": {"name": "n"}}), POD).unwrap(),
            json!({"metadata": {"name": "n"}})
        );
        // `$patch` at the top.
        assert_eq!(
            apply(pod(), json!({"$patch": "delete"}), POD).unwrap(),
            json!({})
        );
        assert_eq!(
            apply(pod(), json!({"$patch": "replace", "kind": "Pod"}), POD).unwrap(),
            json!({"kind": "Pod"})
        );
    }

    /// `{"k": inner}`, built without `json!` (which serializes an expression: a recursive copy).
    fn object(inner: Value) -> Value {
        Value::Object(Map::from_iter([("k".to_owned(), inner)]))
    }

    /// Builds `{"k": {"k": … leaf …}}` `depth` objects deep without recursion.
    fn nested(depth: usize, leaf: Value) -> Value {
        (0..depth).fold(leaf, |inner, _| object(inner))
    }

    /// Drops a deep value without recursing (serde_json's drop recurses).
    fn dismantle(mut value: Value) {
        loop {
            value = match value {
                Value::Object(mut map) => match map.remove("k") {
                    Some(inner) => inner,
                    None => return,
                },
                Value::Array(mut list) => match list.pop() {
                    Some(inner) => inner,
                    None => return,
                },
                _ => return,
            };
        }
    }

    #[test]
    fn deep_nesting_is_merged_up_to_the_limit_and_refused_past_it() {
        // The top object is level 1: a patch MAX_DEPTH deep merges into an original as deep.
        let original = nested(MAX_DEPTH - 1, json!({"x": 1}));
        let patch = nested(MAX_DEPTH - 1, json!({"y": 2}));
        let out = apply(original, patch, POD).unwrap();
        let mut at = &out;
        for _ in 0..MAX_DEPTH - 1 {
            at = &at["k"];
        }
        assert_eq!(at, &json!({"x": 1, "y": 2}));
        dismantle(out);
        // One level more is refused before any recursion; so are much deeper patches, and lists.
        // (A refused patch is dropped without recursion too.)
        let patch = nested(MAX_DEPTH, json!({}));
        assert_eq!(apply(json!({}), patch, POD), Err(SmpError::TooDeep));
        let patch = nested(200_000, json!(1));
        assert_eq!(apply(pod(), patch, POD), Err(SmpError::TooDeep));
        let list = (0..100_000).fold(Value::Null, |inner, _| Value::Array(vec![inner]));
        assert_eq!(apply(pod(), object(list), POD), Err(SmpError::TooDeep));
        // An original deeper than the limit, under a patch that stops early, is never walked.
        let mut original = pod();
        original["spec"]["deep"] = nested(2 * MAX_DEPTH, json!(1));
        let out = apply(original, json!({"spec": {"other": 5}}), POD).unwrap();
        assert_eq!(out["spec"]["other"], 5);
        dismantle(out);
    }

    #[test]
    fn odd_shapes_never_panic() {
        let odd = [
            json!(null),
            json!(0),
            json!(-1.5),
            json!("x"),
            json!(true),
            json!([]),
            json!([null]),
            json!([1, "a", {}]),
            json!([[1]]),
            json!({}),
            json!({"$patch": null}),
            json!([{"$patch": "delete"}]),
            json!([{"name": "app", "$patch": "replace"}]),
            json!([{"name": null}]),
            json!([{"name": ["app"]}]),
            json!({"$retainKeys": [1, null, {}]}),
            json!({"$deleteFromPrimitiveList/": [1]}),
            json!({"$deleteFromPrimitiveList/containers": [{"name": "app"}]}),
            json!({"$deleteFromPrimitiveList/finalizers": "x"}),
        ];
        let fields = [
            "metadata",
            "spec",
            "status",
            "labels",
            "finalizers",
            "ownerReferences",
            "containers",
            "env",
            "ports",
            "volumes",
            "tolerations",
            "affinity",
            "unknown",
            "k",
        ];
        for value in &odd {
            for field in fields {
                for patch in [
                    json!({ field: value }),
                    json!({"spec": { field: value }}),
                    json!({"metadata": { field: value }}),
                    json!({"spec": {"containers": [{"name": "app", field: value}]}}),
                    json!({"spec": {"containers": [{"name": "new", field: value}]}}),
                ] {
                    // Whatever the answer, it is an answer.
                    let _ = apply(pod(), patch.clone(), POD);
                    let _ = apply(patch.clone(), pod(), POD);
                    let _ = apply(patch.clone(), patch, POD);
                }
            }
            let _ = apply(value.clone(), value.clone(), POD);
            let _ = apply(value.clone(), value.clone(), Schema::Plain);
        }
    }
}
