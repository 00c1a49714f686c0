//! The pod mutating chain of `/mutate-pod` in OpenKruise's fixed order (spec/pod-mutating-misc.md §3).
//!
//! Entry point: [`mutate`]. The pod of the request ([`RawPod`]: container lists kept raw until read) is
//! edited in place by each step; the answer is one RFC 6902 patch from the pod as received (namespace filled
//! in first, so it never appears in the patch) to the result.
//! Steps 6 to 8 have a module each: [`persistent_pod_state`] (always), [`enhanced_liveness`] (gate
//! `EnhancedLivenessProbe`) and [`pod_probe_marker`] (gate `EnablePodProbeMarkerOnServerless`).
//!
//! Step 2, WorkloadSpread, may rewrite any part of the pod (a subset's strategic-merge `patch`). It first
//! runs on the pod without its lists and with a few members of its spec ([`SPREAD_SPEC_MEMBERS`]), and its
//! changes are written back member by member ([`SpreadChanges`]): what every subset without a `$` directive
//! that sets tolerations, affinity, node selectors, priority, labels or annotations does, at a fraction of
//! the cost. When it changed more (a container, a member not built, an annotation removed), or a subset
//! patch has a directive, it runs on the whole pod as a tree, and the answer is the patch up to step 1, then
//! the diff of step 2, then the later steps' patch against the pod as step 2 left it (RFC 6902 operations
//! apply in order). Its status record comes back as an intent the server commits before the answer stands.
//!
//! [`validate`] is the `/validate-pod` chain: the WorkloadSpread deletion record first, then the
//! PodUnavailableBudget gate (spec/workloadspread.md §5.8).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::admission::{AdmissionRequest, Operation};
use crate::api::podunavailablebudget::{DEPRECATED_RELATED_PUB_ANNOTATION, RELATED_PUB_ANNOTATION};
use crate::api::sidecarset::HASH_ANNOTATION;
use crate::features::{self, FeatureGates};
use crate::json::patch::Json;
use crate::json::rawpod::{Item, RawPod, Section, string_map};
use crate::podunavailablebudget::gate::{self, GateContext};
use crate::podunavailablebudget::{self as pub_budget, related};
use crate::selector::WithLabel;
use crate::sidecarset::inject::{self, InjectOptions};
use crate::sidecarset::revision::{self, SidecarSetView};
use crate::sidecarset::select::{self, NAMESPACE_NAME_LABEL};
use crate::verdict::SideEffect;
use crate::view::{
    PersistentPodStateView, PodProbeMarkerView, PodUnavailableBudgetView, WorkloadSpreadView,
};
use crate::workloadspread::{self, SpreadFacts, create};
use crate::{ClusterView, Verdict, WebhookError};
use crate::{launch_priority, native_sidecar};

pub mod enhanced_liveness;
mod owner;
pub mod persistent_pod_state;
pub mod pod_probe_marker;

use persistent_pod_state::whitelist::WhitelistSource;

/// The readiness gate condition Kruise workloads use.
pub use crate::api::pod::KRUISE_POD_READY;

/// What the chain needs besides the request and the cluster view: time, randomness and configuration come
/// in as values (STYLE §2).
#[derive(Debug, Clone, Copy)]
pub struct PodContext<'a> {
    /// Feature gates.
    pub gates: &'a FeatureGates,
    /// Time of the request, RFC 3339 UTC seconds.
    pub now: &'a str,
    /// A uniform draw from [0, 1) for `Partial` revision injection (§4.4).
    pub random: f64,
    /// The Kruise namespace (ControllerRevisions live there).
    pub kruise_namespace: &'a str,
    /// The pod's top workload (its ReplicaSet's Deployment, else its controller) when it is known and a PUB
    /// of the namespace has a `targetRef` ([`related::wants_workload`]); `None` otherwise (the related-pub
    /// step then matches selectors only).
    pub workload: Option<&'a related::WorkloadKey>,
    /// What the WorkloadSpread step needs from outside the view ([`SpreadFacts`]); `None`: no WorkloadSpread
    /// may manage the pod (none in its namespace, or the pod has no controller), the step is skipped.
    pub spreads: Option<&'a SpreadFacts>,
    /// The PersistentPodState custom workload whitelist as the I/O layer read it (`kruise-configuration`,
    /// [`persistent_pod_state::whitelist`]); `None` when it was not read because it cannot change the answer
    /// ([`persistent_pod_state::needs_whitelist`]).
    pub pps_whitelist: Option<&'a WhitelistSource>,
}

/// Checks the shape the chain edits, as decoding into a Pod would (a failure is a 400). `metadata` and
/// `spec` being objects (or null) and the raw lists were checked by [`RawPod::parse`].
fn check_shape(doc: &RawPod<'_>) -> Result<(), String> {
    for list in ["readinessGates", "imagePullSecrets"] {
        match doc.get(Section::Spec, list) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) if items.iter().all(Value::is_object) => {}
            Some(_) => return Err(format!("spec.{list}: expected a list of objects")),
        }
    }
    Ok(())
}

/// The pod's labels (none when absent or null), checked to be a map of strings as decoding into a Pod
/// would (a failure is a 400). Read from their text as received: no step writes them (they are not among
/// [`crate::json::rawpod::TREE_FIELDS`]), and they are read before any step runs.
fn pod_labels(doc: &RawPod<'_>) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    let Some(text) = doc.received(Section::Metadata, "labels") else {
        return Ok(labels);
    };
    // In order: the last of a key written twice stands, as when decoding.
    for (key, value) in string_map(text, "labels")?.into_iter().flatten() {
        labels.insert(key.into_owned(), value.into_owned());
    }
    Ok(labels)
}

/// Step 1: readiness gate `KruisePodReady` for pods of Kruise workloads, or every pod with the gate
/// `KruisePodReadinessGate` (pod-mutating-misc.md §4).
fn readiness_gate(doc: &mut RawPod<'_>, req: &AdmissionRequest, gates: &FeatureGates) {
    if req.operation != Operation::Create {
        return;
    }
    if !owner::owned_by_kruise(doc) && !gates.enabled("KruisePodReadinessGate") {
        return;
    }
    let has_gate = |list: &[Value]| {
        list.iter()
            .any(|g| g.get("conditionType").and_then(Value::as_str) == Some(KRUISE_POD_READY))
    };
    // Checked to be a list (or null) by `check_shape`.
    if let Some(Value::Array(list)) = doc.get(Section::Spec, "readinessGates")
        && has_gate(list)
    {
        return;
    }
    let gates_list = doc.edit(Section::Spec, "readinessGates");
    if !matches!(gates_list, Some(Value::Array(_))) {
        *gates_list = Some(json!([]));
    }
    if let Some(Value::Array(list)) = gates_list {
        list.push(json!({"conditionType": KRUISE_POD_READY}));
    }
}

fn is_active(doc: &RawPod<'_>) -> bool {
    let phase = doc
        .get(Section::Top, "status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        .unwrap_or("");
    phase != "Succeeded"
        && phase != "Failed"
        && doc
            .get(Section::Metadata, "deletionTimestamp")
            .is_none_or(Value::is_null)
}

/// The `i`-th uniform draw from [0, 1) of a request whose first draw is `first`: OpenKruise draws once per
/// `Partial` SidecarSet, so two of them pick independently. The later draws are splitmix64 of the first.
fn draw(first: f64, i: usize) -> f64 {
    if i == 0 {
        return first;
    }
    let mut z = ((first * (1u64 << 53) as f64) as u64)
        .wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The audit annotation naming the SidecarSets whose sidecars went into the pod (DECISIONS 18); the apiserver
/// prefixes it with the webhook's name.
pub const INJECTED_AUDIT_ANNOTATION: &str = "sidecarset-injected";

/// The warning for a SidecarSet that selects the pod but was skipped because its injection is paused.
fn paused_warning(name: &str) -> String {
    format!(
        "SidecarSet {name} selects this pod but its injection is paused (spec.injectionStrategy.paused): its sidecars were not injected"
    )
}

/// Step 3: SidecarSet injection (spec/sidecarset.md §4.2-4.8). Adds to `verdict` a warning per paused
/// SidecarSet that selects the pod and the audit annotation naming what was injected (DECISIONS 18).
fn sidecarset_step(
    doc: &mut RawPod<'_>,
    pod_labels: &BTreeMap<String, String>,
    req: &AdmissionRequest,
    view: &(impl ClusterView + SidecarSetView),
    ctx: &PodContext<'_>,
    verdict: &mut Verdict,
) -> Result<(), WebhookError> {
    // §4.10: UPDATE ends with no change in OpenKruise's default control.
    if req.operation != Operation::Create || !is_active(doc) {
        return Ok(());
    }
    let namespace = pod_namespace(doc).to_owned();
    let candidates = view.sidecar_set_candidates(&namespace, pod_labels);
    if candidates.is_empty() {
        return Ok(());
    }
    // The Namespace, read only when a candidate has a namespaceSelector (no other reads it).
    let namespace_object = candidates
        .iter()
        .any(|set| set.spec.namespace_selector.is_some())
        .then(|| view.namespace(&namespace))
        .flatten();
    let namespace_labels = namespace_object.as_ref().map(|ns| WithLabel {
        labels: ns.metadata.labels.as_ref(),
        // The apiserver sets this label on every Namespace.
        added: (NAMESPACE_NAME_LABEL, &namespace),
    });
    let failed = WebhookError::Failed;
    let chosen = select::matching(
        candidates.iter(),
        pod_labels,
        namespace_labels.as_ref(),
        |set, i| {
            let random = draw(ctx.random, i);
            revision::choose(set, pod_labels, view, ctx.kruise_namespace, random)
        },
    )
    .map_err(failed)?;
    let options = InjectOptions {
        now: ctx.now,
        sort_containers_by_name: ctx.gates.enabled("EnableSortSidecarContainerByName"),
    };
    // A paused SidecarSet that selects the pod is skipped (§4.3 step 3.1); say so. Its selector errors were
    // never evaluated by OpenKruise, so they are not reported here either.
    verdict.warnings.extend(
        candidates
            .iter()
            .filter(|set| set.spec.injection_strategy.paused)
            .filter(|set| {
                select::pod_matches(set, pod_labels, namespace_labels.as_ref()) == Ok(true)
            })
            .map(|set| paused_warning(set.name())),
    );
    inject::inject(doc, &chosen, options, &crate::sidecarset::resources::apply)
        .map_err(|e| failed(e.to_string()))?;
    // Sidecars went in exactly when the hash annotation was rewritten (a pod injected before keeps it).
    if doc.annotation(HASH_ANNOTATION) != doc.received_annotation(HASH_ANNOTATION) {
        let names: Vec<&str> = chosen
            .iter()
            .filter(|set| !set.spec.containers.is_empty() || !set.spec.init_containers.is_empty())
            .map(|set| set.name())
            .collect();
        verdict
            .audit_annotations
            .insert(INJECTED_AUDIT_ANNOTATION.to_owned(), names.join(","));
    }
    Ok(())
}

/// Ours, between steps 3 and 4 (DECISIONS 20, spec/sidecar-terminator.md §11.2): when asked for, Job
/// sidecars marked `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true` move to the end of `spec.initContainers`
/// as native sidecars (`restartPolicy: Always`). CREATE only; no side effect, so dry runs too.
fn native_sidecar_step(
    doc: &mut RawPod<'_>,
    req: &AdmissionRequest,
    view: &impl ClusterView,
    ctx: &PodContext<'_>,
) {
    if req.operation != Operation::Create
        || !native_sidecar::runs_to_completion(
            doc.get(Section::Spec, "restartPolicy")
                .and_then(Value::as_str),
        )
        || !doc
            .containers
            .any_may_contain("env", native_sidecar::WHEN_JOB_EXIT_ENV)
    {
        return;
    }
    let namespace = view.namespace(doc.metadata_str("namespace"));
    let namespace_annotation = namespace
        .as_ref()
        .and_then(|ns| ns.metadata.annotations.as_ref())
        .and_then(|a| a.get(native_sidecar::ANNOTATION))
        .map(String::as_str);
    if !native_sidecar::enabled(
        doc.annotation(native_sidecar::ANNOTATION),
        namespace_annotation,
        ctx.gates
            .enabled(crate::features::NATIVE_SIDECAR_CONVERSION),
    ) || native_sidecar::owned_by_in_place_workload(
        doc.get(Section::Metadata, "ownerReferences"),
    ) {
        return;
    }
    let items = doc.containers.items();
    let values: Vec<Value> = items.iter().map(|i| doc.containers.value_of(i)).collect();
    let ordered =
        doc.annotation(launch_priority::PRIORITY_ANNOTATION) == Some(launch_priority::ORDERED);
    let chosen = native_sidecar::select(&values, ordered);
    if chosen.is_empty() {
        return;
    }
    let mut init = doc.init_containers.items();
    let mut kept = Vec::with_capacity(items.len() - chosen.len());
    for (i, (item, value)) in items.into_iter().zip(values).enumerate() {
        if chosen.contains(&i) {
            init.push(Item::New(Json::Value(native_sidecar::as_native(value))));
        } else {
            kept.push(item);
        }
    }
    doc.containers.set(kept);
    doc.init_containers.set(init);
}

/// Step 4: container launch priority (spec/container-launch-priority.md §3), on the containers as SidecarSet
/// injection left them. A priority that does not parse stops the chain (500, Go's text).
fn launch_priority_step(
    doc: &mut RawPod<'_>,
    req: &AdmissionRequest,
    ctx: &PodContext<'_>,
) -> Result<(), WebhookError> {
    if req.operation != Operation::Create || doc.containers.current_len() == 1 {
        return Ok(());
    }
    // Most pods have neither the annotation nor the env: tell without parsing a container.
    let ordered =
        doc.annotation(launch_priority::PRIORITY_ANNOTATION) == Some(launch_priority::ORDERED);
    if !ordered
        && !doc
            .containers
            .any_may_contain("env", launch_priority::PRIORITY_ENV)
    {
        return Ok(());
    }
    // Each container's priority: read from the request's text for a container as received (its env
    // entries' `name` and `value`, no tree built), from the tree for one a step wrote.
    let items = doc.containers.items();
    let trees: Vec<Option<Value>> = items
        .iter()
        .map(|item| match item {
            Item::Original(_) => None,
            other => Some(doc.containers.value_of(other)),
        })
        .collect();
    let containers = &doc.containers;
    let priority_of = |i: usize| match (&items[i], &trees[i]) {
        (Item::Original(at), _) => {
            let entries = containers
                .element(*at)
                .into_iter()
                .flat_map(|c| c.elements("env"))
                .map(|e| e.strs(["name", "value"]));
            let entries: Vec<[std::borrow::Cow<'_, str>; 2]> = entries.collect();
            launch_priority::priority_of(entries.iter().map(|[n, v]| (&**n, &**v)))
        }
        (_, Some(tree)) => launch_priority::env_priority(
            tree.get("env")
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice),
        ),
        _ => Ok(0),
    };
    let plan = launch_priority::plan(
        items.len(),
        priority_of,
        doc.metadata_str("name"),
        doc.metadata_str("generateName"),
        doc.annotation(launch_priority::PRIORITY_ANNOTATION),
        ctx.random,
    )
    .map_err(WebhookError::Failed)?;
    let Some(plan) = plan else {
        return Ok(());
    };
    // A container as received gets the env spliced into its text (one `replace` each in the patch, its
    // other bytes as they came); one a step wrote is edited as a tree.
    let edited: Vec<Item> = items
        .into_iter()
        .zip(trees)
        .enumerate()
        .map(|(i, (item, tree))| {
            let as_tree = |tree: Option<Value>| {
                let mut tree = tree.unwrap_or(Value::Null);
                launch_priority::append_env(&mut tree, plan.barrier_env(i));
                Json::Value(tree)
            };
            match item {
                Item::Original(at) => {
                    match doc
                        .containers
                        .append_to_member(at, "env", &plan.barrier_env_text(i))
                    {
                        Some(text) => Item::Edited(at, text),
                        None => Item::Edited(at, as_tree(Some(doc.containers.value(at)))),
                    }
                }
                Item::Edited(at, _) => Item::Edited(at, as_tree(tree)),
                Item::New(_) => Item::New(as_tree(tree)),
            }
        })
        .collect();
    if let Some(name) = plan.name {
        *doc.edit(Section::Metadata, "name") = Some(Value::String(name));
    }
    doc.containers.set(edited);
    Ok(())
}

/// Step 5: the PUB that guards the pod, named in `pub.kruise.io/related-pub` and its legacy twin
/// `kruise.io/related-pub` (spec/podunavailablebudget.md §5, pod-mutating-misc.md §6), when either PUB gate
/// is on.
fn related_pub_step(
    doc: &mut RawPod<'_>,
    pod_labels: &BTreeMap<String, String>,
    req: &AdmissionRequest,
    view: &impl PodUnavailableBudgetView,
    ctx: &PodContext<'_>,
) {
    if req.operation != Operation::Create || !pub_budget::enabled(ctx.gates) {
        return;
    }
    let budgets = view.pod_unavailable_budgets_in(pod_namespace(doc));
    if let Some(name) = related::matching_budget(&budgets, pod_labels, ctx.workload) {
        doc.set_annotation(RELATED_PUB_ANNOTATION, name.to_owned());
        doc.set_annotation(DEPRECATED_RELATED_PUB_ANNOTATION, name.to_owned());
    }
}

/// `dryRun` of the request's CreateOptions.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateOptions {
    #[serde(default)]
    dry_run: Option<Vec<String>>,
}

/// The namespace the steps read the pod's objects in: the pod's (filled in from the request), `default`
/// when it names none.
fn pod_namespace<'a>(doc: &'a RawPod<'_>) -> &'a str {
    Some(doc.metadata_str("namespace"))
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
}

/// Whether the WorkloadSpread step runs at all (spec/workloadspread.md §5.1 steps 1-3): gate on, a CREATE,
/// not a dry run. Options that are absent count as no dry run (OpenKruise fails such a request; every API
/// server sends them); options that do not decode fail the request (500), as OpenKruise's.
fn spread_step_runs(req: &AdmissionRequest, gates: &FeatureGates) -> Result<bool, WebhookError> {
    if req.operation != Operation::Create || !gates.enabled(workloadspread::GATE) {
        return Ok(false);
    }
    let options = match &req.options {
        Some(raw) if raw.get().trim() != "null" => serde_json::from_str::<CreateOptions>(raw.get())
            .map_err(|e| WebhookError::Failed(format!("decoding the request options: {e}")))?,
        _ => CreateOptions::default(),
    };
    let dry_run = options
        .dry_run
        .is_some_and(|d| d.iter().any(|v| v == "All"));
    Ok(!dry_run && req.dry_run != Some(true))
}

/// The members of `spec` the WorkloadSpread step writes (tolerations, affinity, a new priorityClassName
/// clearing priority) and those a subset's patch commonly sets: the step runs on the pod with only these
/// of its spec, and its changes are written back member by member ([`SpreadChanges`]).
const SPREAD_SPEC_MEMBERS: [&str; 8] = [
    "affinity",
    "nodeSelector",
    "priority",
    "priorityClassName",
    "runtimeClassName",
    "schedulerName",
    "tolerations",
    "topologySpreadConstraints",
];

#[cfg(test)]
thread_local! {
    /// Tests set it to run the WorkloadSpread step on the whole pod only, and compare.
    static WHOLE_POD_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the WorkloadSpread step runs on the pod's members first (always, but in tests that compare it
/// with the whole-pod path).
fn members_first() -> bool {
    #[cfg(test)]
    {
        !WHOLE_POD_ONLY.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        true
    }
}

/// `value` as an object, absent and `null` as `none`; `None` when it is something else.
fn map_or_none<'a>(
    value: Option<&'a Value>,
    none: &'a Map<String, Value>,
) -> Option<&'a Map<String, Value>> {
    match value {
        None | Some(Value::Null) => Some(none),
        Some(v) => v.as_object(),
    }
}

/// The keys whose values differ between two objects, in order.
fn changed_keys<'a>(before: &'a Map<String, Value>, after: &'a Map<String, Value>) -> Vec<&'a str> {
    let mut keys: Vec<&str> = before
        .keys()
        .chain(after.keys())
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.retain(|k| before.get(*k) != after.get(*k));
    keys
}

/// What the WorkloadSpread step changed on the pod built with [`SPREAD_SPEC_MEMBERS`] only: members of
/// the spec among them, the labels, annotations added or changed.
#[derive(Debug)]
struct SpreadChanges {
    spec: Vec<(&'static str, Option<Value>)>,
    labels: Option<Option<Value>>,
    annotations: Vec<(String, String)>,
}

impl SpreadChanges {
    /// The changes from `before` to `after`; `None` when the step changed anything else (a member of the
    /// spec not built, a list, metadata other than labels and annotations, an annotation removed or not a
    /// string, labels that are not a map of strings): the step then runs on the whole pod, which answers
    /// those cases as it always did.
    fn between(before: &Value, after: &Value) -> Option<Self> {
        let (before, after) = (before.as_object()?, after.as_object()?);
        let none = Map::new();
        let object = |v| map_or_none(v, &none);
        let mut changes = Self {
            spec: Vec::new(),
            labels: None,
            annotations: Vec::new(),
        };
        for key in changed_keys(before, after) {
            match key {
                "spec" => {
                    let (b, a) = (object(before.get(key))?, object(after.get(key))?);
                    for member in changed_keys(b, a) {
                        let member = SPREAD_SPEC_MEMBERS.into_iter().find(|m| *m == member)?;
                        changes.spec.push((member, a.get(member).cloned()));
                    }
                }
                "metadata" => {
                    let (b, a) = (object(before.get(key))?, object(after.get(key))?);
                    for member in changed_keys(b, a) {
                        match member {
                            "labels" => {
                                let labels = a.get(member);
                                object(labels)?
                                    .values()
                                    .all(Value::is_string)
                                    .then_some(())?;
                                changes.labels = Some(labels.cloned());
                            }
                            "annotations" => {
                                let (b, a) = (object(b.get(member))?, object(a.get(member))?);
                                b.keys().all(|k| a.contains_key(k)).then_some(())?;
                                for (k, v) in a {
                                    if b.get(k) != Some(v) {
                                        changes
                                            .annotations
                                            .push((k.clone(), v.as_str()?.to_owned()));
                                    }
                                }
                            }
                            _ => return None,
                        }
                    }
                }
                _ => return None,
            }
        }
        Some(changes)
    }

    /// Writes the changes into `doc`; the new labels when they changed.
    fn write(self, doc: &mut RawPod<'_>) -> Option<BTreeMap<String, String>> {
        for (member, value) in self.spec {
            *doc.edit(Section::Spec, member) = value;
        }
        for (key, value) in self.annotations {
            doc.set_annotation(key, value);
        }
        let labels = self.labels?;
        let map = labels
            .as_ref()
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        *doc.edit(Section::Metadata, "labels") = labels;
        Some(map)
    }
}

/// Runs the pod mutating chain on a CREATE (or UPDATE) of a pod.
///
/// # Errors
/// [`WebhookError::Decode`] (400) when the object is not a pod; [`WebhookError::Failed`] (500) when a step
/// fails, with the step's message, as OpenKruise answers.
pub fn mutate(
    req: &AdmissionRequest,
    view: &(
         impl ClusterView
         + SidecarSetView
         + PodUnavailableBudgetView
         + WorkloadSpreadView
         + PersistentPodStateView
         + PodProbeMarkerView
     ),
    ctx: &PodContext<'_>,
) -> Result<Verdict, WebhookError> {
    if !req.sub_resource.is_empty()
        || req.resource.resource != "pods"
        || !matches!(req.operation, Operation::Create | Operation::Update)
    {
        return Ok(Verdict::allow());
    }
    let Some(raw) = req.object() else {
        return Err(WebhookError::Decode("there is no content to decode".into()));
    };
    // The pod as the WorkloadSpread step left it, when it changed it; declared first, as the chain reads it
    // from there on.
    let spread_pod: String;
    let mut doc = RawPod::parse(raw).map_err(WebhookError::Decode)?;
    check_shape(&doc).map_err(WebhookError::Decode)?;
    let mut labels = pod_labels(&doc).map_err(WebhookError::Decode)?;
    // The namespace is filled in as received, so it never appears in the patch (§3 step 2).
    if doc.metadata_str("namespace").is_empty()
        && let Some(ns) = req.namespace.as_deref().filter(|n| !n.is_empty())
    {
        doc.fill_namespace(ns);
    }
    let mut verdict = Verdict::allow();
    readiness_gate(&mut doc, req, ctx.gates); // 1
    let mut earlier = Vec::new();
    // 2: WorkloadSpread (spec/workloadspread.md §5.1-§5.6), when the I/O layer found that a WorkloadSpread may
    // manage the pod (its namespace has one, the pod a controller): the common pod create builds nothing here.
    if let Some(facts) = ctx.spreads
        && spread_step_runs(req, ctx.gates)?
        && let Some(managing) = create::may_manage(pod_namespace(&doc), view, facts)
    {
        let namespace = pod_namespace(&doc).to_owned();
        // First on the pod without its lists, written back member by member; on the whole pod when the
        // subset changed more than that.
        let on_members = (members_first() && managing.plain_patches)
            .then(|| {
                let before = doc.to_value_with_spec(&SPREAD_SPEC_MEMBERS);
                let created = create::on_create(&before, &namespace, view, facts, ctx.now).ok()?;
                let changes = match &created.pod {
                    Some(pod) => Some(SpreadChanges::between(&before, pod)?),
                    None => None,
                };
                Some((created, changes))
            })
            .flatten();
        let created = match on_members {
            Some((created, changes)) => {
                if let Some(new_labels) = changes.and_then(|c| c.write(&mut doc)) {
                    labels = new_labels;
                }
                created
            }
            None => {
                let before = doc.to_value();
                let mut created = create::on_create(&before, &namespace, view, facts, ctx.now)
                    .map_err(WebhookError::Failed)?;
                if let Some(pod) = created.pod.take() {
                    spread_pod = serde_json::to_string(&pod)
                        .map_err(|e| WebhookError::Internal(format!("encoding the pod: {e}")))?;
                    earlier = doc.into_patch();
                    earlier.extend(crate::json::patch::diff_owned(&before, pod));
                    doc = RawPod::parse_str(&spread_pod).map_err(|e| {
                        WebhookError::Failed(format!(
                            "the pod after its WorkloadSpread subset: {e}"
                        ))
                    })?;
                    check_shape(&doc).map_err(WebhookError::Failed)?;
                    // The later steps select on the labels the subset's patch may have added.
                    labels = pod_labels(&doc).map_err(WebhookError::Failed)?;
                }
                created
            }
        };
        verdict.intents.extend(created.intent);
        if let Some((ns, name)) = created.full {
            verdict.warnings.push(create::full_warning(&ns, &name));
            verdict.side_effects.push(SideEffect::SpreadFull {
                namespace: ns,
                name,
            });
        }
    }
    sidecarset_step(&mut doc, &labels, req, view, ctx, &mut verdict)?; // 3
    native_sidecar_step(&mut doc, req, view, ctx); // ours (DECISIONS 20), before 4 (sidecar-terminator.md §11.2)
    launch_priority_step(&mut doc, req, ctx)?; // 4
    related_pub_step(&mut doc, &labels, req, view, ctx); // 5
    let namespace = pod_namespace(&doc).to_owned();
    persistent_pod_state::mutate(
        &mut doc,
        &namespace,
        req.operation,
        view,
        ctx.pps_whitelist,
        ctx.kruise_namespace,
    )?; // 6
    if ctx.gates.enabled(features::ENHANCED_LIVENESS_PROBE) {
        enhanced_liveness::mutate(&mut doc, req.operation)?; // 7
    }
    if ctx.gates.enabled(features::POD_PROBE_MARKER_ON_SERVERLESS) {
        pod_probe_marker::mutate(&mut doc, &namespace, &labels, req.operation, view)?; // 8
    }
    earlier.extend(doc.into_patch());
    verdict.patch = earlier;
    Ok(verdict)
}

/// Runs the `/validate-pod` chain: the WorkloadSpread deletion record (gate `WorkloadSpread`), then, unless
/// it refused, the PodUnavailableBudget gate (spec/workloadspread.md §5.8). The answer carries the status
/// writes of both, the WorkloadSpread's first. `spread_replicas`: the replicas of the target of the
/// WorkloadSpread named by the pod, when the I/O layer read them (percentages, §5.4 (c) 3).
///
/// # Errors
/// Those of [`gate::validate`].
pub fn validate(
    req: &AdmissionRequest,
    view: &(impl ClusterView + PodUnavailableBudgetView + WorkloadSpreadView),
    ctx: &GateContext<'_>,
    spread_replicas: Option<&Result<i32, String>>,
) -> Result<Verdict, WebhookError> {
    let spread = if ctx.gates.enabled(workloadspread::GATE) {
        workloadspread::delete::validate(req, view, spread_replicas, ctx.now)
    } else {
        Verdict::allow()
    };
    if !spread.is_allowed() {
        return Ok(spread);
    }
    let mut verdict = gate::validate(req, view, ctx)?;
    let mut warnings = spread.warnings;
    warnings.append(&mut verdict.warnings);
    verdict.warnings = warnings;
    let mut intents = spread.intents;
    intents.append(&mut verdict.intents);
    verdict.intents = intents;
    Ok(verdict)
}

#[cfg(test)]
mod tests;
