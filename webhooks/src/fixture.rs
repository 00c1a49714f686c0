//! [`FixtureCluster`]: a [`ClusterView`] built from YAML or JSON documents (fixture tests, benches, the
//! `review` command and the standalone server). Parsing only: the caller reads the files.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ClusterView;
use crate::api::persistentpodstate::PersistentPodState;
use crate::api::pod::SlimPod;
use crate::api::podprobemarker::PodProbeMarker;
use crate::api::podunavailablebudget::PodUnavailableBudget;
use crate::api::revision::SlimRevision;
use crate::api::sidecarset::SidecarSet;
use crate::api::workloadspread::WorkloadSpread;
use crate::deletion_protection::{CustomResourceCount, CustomResourceQuery};
use crate::sidecarset::prepared::PreparedSidecarSet;
use crate::sidecarset::select::SidecarSetIndex;
use crate::view::{
    PersistentPodStateView, PodProbeMarkerView, PodUnavailableBudgetView, SidecarSetView,
    WorkloadSpreadView,
};

/// Why a document could not be loaded. Messages name the source and the document.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// Not YAML or JSON.
    #[error("{source_name}: document {index}: not valid YAML/JSON: {message}")]
    Syntax {
        /// File name or other label.
        source_name: String,
        /// 1-based document number.
        index: usize,
        /// Parser message, with the line and column.
        message: String,
    },
    /// A document that is not a Kubernetes object.
    #[error("{source_name}: document {index}: {message}")]
    NotAnObject {
        /// File name or other label.
        source_name: String,
        /// 1-based document number.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

/// Cluster state loaded from documents.
#[derive(Debug, Default, Clone)]
pub struct FixtureCluster {
    namespaces: BTreeMap<String, Arc<Namespace>>,
    pods: BTreeMap<String, Vec<Arc<SlimPod>>>,
    claims: BTreeMap<String, Vec<Arc<PersistentVolumeClaim>>>,
    sidecar_sets: SidecarSetIndex,
    revisions: Vec<Arc<SlimRevision>>,
    /// PodUnavailableBudgets by namespace, then name (v1beta1).
    budgets: BTreeMap<String, BTreeMap<String, Arc<PodUnavailableBudget>>>,
    /// WorkloadSpreads by namespace, then name (v1beta1).
    spreads: BTreeMap<String, BTreeMap<String, Arc<WorkloadSpread>>>,
    /// PersistentPodStates by namespace, then name (v1beta1).
    persistent_pod_states: BTreeMap<String, BTreeMap<String, Arc<PersistentPodState>>>,
    /// PodProbeMarkers by namespace, then name (v1alpha1).
    probe_markers: BTreeMap<String, BTreeMap<String, Arc<PodProbeMarker>>>,
    objects: Vec<Arc<Value>>,
    /// The position in `objects` of the first object of each identity ([`object_key`]).
    by_identity: HashMap<String, usize>,
}

/// An object's identity as one key: API group, kind, namespace (`default` when it has none, as lookups by
/// namespace read it) and name, on lines of their own (no name holds a line break).
fn object_key(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    [group, kind, namespace, name].join("\n")
}

fn documents(text: &str, source_name: &str) -> Result<Vec<Value>, FixtureError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(text).map_err(|e| FixtureError::Syntax {
            source_name: source_name.into(),
            index: 1,
            message: e.to_string(),
        })?;
        return Ok(match v {
            Value::Array(items) => items,
            v => vec![v],
        });
    }
    // Empty and null documents are skipped.
    serde_saphyr::from_multiple_with_options(text, yaml_options()).map_err(|e| {
        FixtureError::Syntax {
            source_name: source_name.into(),
            index: e
                .location()
                .map_or(1, |at| document_at(text, at.line() as usize)),
            message: e.to_string(),
        }
    })
}

/// The 1-based number of the YAML document that holds `line` (1-based): one more than the `---` separators
/// before it, a separator opening the text aside.
fn document_at(text: &str, line: usize) -> usize {
    let separators = |lines: &mut dyn Iterator<Item = &str>| {
        lines
            .filter(|l| *l == "---" || l.starts_with("--- "))
            .count()
    };
    let leading = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l == "---" || l.starts_with("--- "));
    let before = separators(&mut text.lines().take(line.saturating_sub(1)));
    (before + 1).saturating_sub(usize::from(leading)).max(1)
}

/// How YAML files of cluster state and requests are read: as kubectl's go-yaml reads them (YAML 1.1 `yes`
/// and `on` are booleans, `0644` is octal), with serde-saphyr's caps against alias expansion bombs, and the
/// size caps raised to what a cluster dump needs (50,000 SidecarSets in one file) and nesting to what CRD
/// schemas need.
pub fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = 10_000_000;
    budget.max_nodes = 500_000_000;
    budget.max_events = 1_000_000_000;
    budget.max_total_scalar_bytes = 4 << 30;
    budget.max_depth = 256;
    // Kubernetes YAML rarely uses anchors; a tenth of the default stops an expansion bomb ten times sooner.
    budget.max_recorded_anchor_events = 100_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.legacy_octal_numbers = true; // 0644 is 420, as kubectl (go-yaml) reads a defaultMode
    options.with_snippet = false; // one-line errors: `review` names the file and the problem on one line
    options
}

/// What [`FixtureCluster::objects`] keeps of a SidecarSet: its apiVersion, kind and identifying metadata
/// (what counting custom resources and finding objects by name read). A dump of 50,000 SidecarSets held
/// whole as JSON values took gigabytes beside the typed and prepared copies the webhooks read.
fn identity(obj: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(meta) = obj.get("metadata").and_then(Value::as_object) {
        let kept: serde_json::Map<String, Value> = meta
            .iter()
            .filter(|(k, _)| {
                matches!(
                    k.as_str(),
                    "name"
                        | "namespace"
                        | "uid"
                        | "resourceVersion"
                        | "generation"
                        | "labels"
                        | "deletionTimestamp"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert("metadata".into(), Value::Object(kept));
    }
    Value::Object(out)
}

impl FixtureCluster {
    /// Loads every object of a YAML (multi-document) or JSON text; `v1 List`s are expanded.
    /// Returns the number of objects added.
    ///
    /// # Errors
    /// [`FixtureError`] naming `source_name` and the document.
    pub fn load_str(&mut self, text: &str, source_name: &str) -> Result<usize, FixtureError> {
        let mut added = 0;
        for (i, doc) in documents(text, source_name)?.into_iter().enumerate() {
            let is_list = doc
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.ends_with("List"))
                && doc.get("items").is_some();
            // Taken, not copied: a dump's List is most of its text.
            let items = match doc {
                Value::Object(mut list) if is_list => match list.remove("items") {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                },
                doc => vec![doc],
            };
            for item in items {
                self.insert(item)
                    .map_err(|message| FixtureError::NotAnObject {
                        source_name: source_name.into(),
                        index: i + 1,
                        message,
                    })?;
                added += 1;
            }
        }
        Ok(added)
    }

    /// Adds one object.
    ///
    /// # Errors
    /// A message when it has no apiVersion, kind or metadata.name, or does not decode as its kind.
    pub fn insert(&mut self, obj: Value) -> Result<(), String> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or("missing apiVersion")?;
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .ok_or("missing kind")?;
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{kind} without metadata.name"))?;
        let namespace = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_owned();
        fn typed<T: DeserializeOwned>(
            obj: &Value,
            kind: &str,
            name: &str,
        ) -> Result<Arc<T>, String> {
            T::deserialize(obj)
                .map(Arc::new)
                .map_err(|e| format!("{kind} {name}: {e}"))
        }
        match (api_version, kind) {
            ("v1", "Namespace") => {
                self.namespaces
                    .insert(name.to_owned(), typed(&obj, kind, name)?);
            }
            ("v1", "Pod") => self
                .pods
                .entry(namespace)
                .or_default()
                .push(typed(&obj, kind, name)?),
            ("v1", "PersistentVolumeClaim") => self
                .claims
                .entry(namespace)
                .or_default()
                .push(typed(&obj, kind, name)?),
            ("apps/v1", "ControllerRevision") => self.revisions.push(typed(&obj, kind, name)?),
            ("apps.kruise.io/v1beta1" | "apps.kruise.io/v1alpha1", "SidecarSet") => {
                // The apiserver serves v1beta1 through our conversion; files get the same.
                let set = if api_version == "apps.kruise.io/v1beta1" {
                    typed(&obj, kind, name)?
                } else {
                    let v1beta1 = crate::conversion::convert_object(&obj, "apps.kruise.io/v1beta1")
                        .map_err(|e| e.to_string())?;
                    typed(&v1beta1, kind, name)?
                };
                self.sidecar_sets.upsert(set);
                // Held typed (and prepared) above: only what the raw list is read for is kept of it.
                self.push_object(identity(&obj));
                return Ok(());
            }
            ("policy.kruise.io/v1beta1" | "policy.kruise.io/v1alpha1", "PodUnavailableBudget") => {
                // As the apiserver stores it: v1beta1, the v1alpha1 annotations converted.
                let v1beta1 = crate::conversion::convert_object(&obj, "policy.kruise.io/v1beta1")
                    .map_err(|e| e.to_string())?;
                self.budgets
                    .entry(namespace)
                    .or_default()
                    .insert(name.to_owned(), typed(&v1beta1, kind, name)?);
            }
            ("apps.kruise.io/v1beta1" | "apps.kruise.io/v1alpha1", "WorkloadSpread") => {
                // As the apiserver stores it: v1beta1 (spec/workloadspread.md §2.5).
                let v1beta1 = crate::conversion::convert_object(&obj, "apps.kruise.io/v1beta1")
                    .map_err(|e| e.to_string())?;
                let mut spread: WorkloadSpread =
                    (*typed::<WorkloadSpread>(&v1beta1, kind, name)?).clone();
                spread.metadata.namespace = Some(namespace.clone());
                self.spreads
                    .entry(namespace)
                    .or_default()
                    .insert(name.to_owned(), Arc::new(spread));
            }
            ("apps.kruise.io/v1beta1" | "apps.kruise.io/v1alpha1", "PersistentPodState") => {
                // As the apiserver stores it: v1beta1.
                let v1beta1 = crate::conversion::convert_object(&obj, "apps.kruise.io/v1beta1")
                    .map_err(|e| e.to_string())?;
                self.persistent_pod_states
                    .entry(namespace)
                    .or_default()
                    .insert(name.to_owned(), typed(&v1beta1, kind, name)?);
            }
            ("apps.kruise.io/v1alpha1", "PodProbeMarker") => {
                self.probe_markers
                    .entry(namespace)
                    .or_default()
                    .insert(name.to_owned(), typed(&obj, kind, name)?);
            }
            _ => {}
        }
        self.push_object(obj);
        Ok(())
    }

    /// Keeps `obj` among the raw objects, filed by its identity (the first of an identity is found).
    fn push_object(&mut self, obj: Value) {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
        let api_version = text(obj.get("apiVersion"));
        if let Some(group) = crate::podunavailablebudget::related::api_group(&api_version) {
            let namespace = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default");
            let key = object_key(
                group,
                &text(obj.get("kind")),
                namespace,
                &text(obj.pointer("/metadata/name")),
            );
            self.by_identity.entry(key).or_insert(self.objects.len());
        }
        self.objects.push(Arc::new(obj));
    }

    /// The first object loaded of API group `group`, kind `kind`, namespace `namespace` (objects without
    /// one are in `default`) and name `name`: one map lookup, however many objects were loaded.
    pub fn object(&self, group: &str, kind: &str, namespace: &str, name: &str) -> Option<&Value> {
        let at = self
            .by_identity
            .get(&object_key(group, kind, namespace, name))?;
        self.objects.get(*at).map(|o| &**o)
    }

    /// Counts the objects of a custom resource definition, of any version (the apiserver converts).
    pub fn count_custom_resources(&self, query: &CustomResourceQuery) -> CustomResourceCount {
        let mut count = CustomResourceCount::default();
        for obj in &self.objects {
            let group = obj
                .get("apiVersion")
                .and_then(Value::as_str)
                .and_then(|v| v.rsplit_once('/'))
                .map(|(g, _)| g);
            if group == Some(query.group.as_str())
                && obj.get("kind").and_then(Value::as_str) == Some(query.kind.as_str())
            {
                count.total += 1;
                if obj
                    .pointer("/metadata/deletionTimestamp")
                    .is_some_and(|t| !t.is_null())
                {
                    count.terminating += 1;
                }
            }
        }
        count
    }

    /// Every object loaded, raw; of a SidecarSet (held typed) only its apiVersion, kind and identifying
    /// metadata (name, namespace, uid, resourceVersion, generation, labels, deletionTimestamp).
    pub fn objects(&self) -> &[Arc<Value>] {
        &self.objects
    }

    /// Labels of a namespace as the apiserver sees them: the object's labels plus
    /// `kubernetes.io/metadata.name`, which the apiserver always sets.
    pub fn namespace_labels(&self, name: &str) -> BTreeMap<String, String> {
        let mut labels = self
            .namespaces
            .get(name)
            .and_then(|n| n.metadata.labels.clone())
            .unwrap_or_default();
        labels.insert("kubernetes.io/metadata.name".into(), name.into());
        labels
    }
}

impl SidecarSetView for FixtureCluster {
    fn sidecar_set_candidates(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<PreparedSidecarSet>> {
        self.sidecar_sets.candidates_for(namespace, labels)
    }
    fn sidecar_set(&self, name: &str) -> Option<Arc<SidecarSet>> {
        self.sidecar_sets.get(name).cloned()
    }
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>> {
        self.sidecar_sets.all()
    }
    fn controller_revision(&self, namespace: &str, name: &str) -> Option<Arc<SlimRevision>> {
        self.revisions
            .iter()
            .find(|r| {
                r.metadata.namespace.as_deref() == Some(namespace)
                    && r.metadata.name.as_deref() == Some(name)
            })
            .cloned()
    }
    fn controller_revisions(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Arc<SlimRevision>> {
        self.revisions
            .iter()
            .filter(|r| r.metadata.namespace.as_deref() == Some(namespace))
            .filter(|r| crate::selector::has_labels(r.metadata.labels.as_ref(), labels))
            .cloned()
            .collect()
    }
}

impl WorkloadSpreadView for FixtureCluster {
    fn workload_spreads(&self, namespace: &str) -> Vec<Arc<WorkloadSpread>> {
        self.spreads
            .get(namespace)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
    fn workload_spread(&self, namespace: &str, name: &str) -> Option<Arc<WorkloadSpread>> {
        self.spreads.get(namespace)?.get(name).cloned()
    }
    fn has_workload_spreads(&self, namespace: &str) -> bool {
        self.spreads.get(namespace).is_some_and(|m| !m.is_empty())
    }
    fn workload_spreads_targeting(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
    ) -> Vec<Arc<WorkloadSpread>> {
        self.spreads
            .get(namespace)
            .into_iter()
            .flat_map(|m| m.values())
            .filter(|w| crate::view::targets(w, kind, name))
            .cloned()
            .collect()
    }
}

impl PodUnavailableBudgetView for FixtureCluster {
    fn pod_unavailable_budget(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<PodUnavailableBudget>> {
        self.budgets.get(namespace)?.get(name).cloned()
    }
    fn pod_unavailable_budgets_in(&self, namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
        self.budgets
            .get(namespace)
            .map(|b| b.values().cloned().collect())
            .unwrap_or_default()
    }
}

impl PersistentPodStateView for FixtureCluster {
    fn persistent_pod_states_in(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<PersistentPodState>>, String> {
        Ok(self
            .persistent_pod_states
            .get(namespace)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default())
    }
}

impl PodProbeMarkerView for FixtureCluster {
    fn pod_probe_markers_in(&self, namespace: &str) -> Result<Vec<Arc<PodProbeMarker>>, String> {
        Ok(self
            .probe_markers
            .get(namespace)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default())
    }
    fn pod_probe_marker(&self, namespace: &str, name: &str) -> Option<Arc<PodProbeMarker>> {
        self.probe_markers.get(namespace)?.get(name).cloned()
    }
}

impl ClusterView for FixtureCluster {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.namespaces.get(name).cloned()
    }
    fn pods_in(&self, namespace: &str) -> Vec<Arc<SlimPod>> {
        self.pods.get(namespace).cloned().unwrap_or_default()
    }
    fn persistent_volume_claims_in(&self, namespace: &str) -> Vec<Arc<PersistentVolumeClaim>> {
        self.claims.get(namespace).cloned().unwrap_or_default()
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<SlimPod>> {
        self.pods
            .get(namespace)?
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_multi_document_yaml_lists_and_json() {
        let mut c = FixtureCluster::default();
        let n = c
            .load_str(
                "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\n",
                "x.yaml",
            )
            .unwrap();
        assert_eq!(n, 2);
        assert!(c.namespace("a").is_some());
        assert_eq!(c.pods_in("a").len(), 1);
        assert_eq!(
            c.load_str(
                r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"}}"#,
                "b.json"
            )
            .unwrap(),
            1
        );
    }

    #[test]
    fn sidecar_sets_are_held_typed_and_listed_raw_by_identity_only() {
        let mut c = FixtureCluster::default();
        let set = |api_version: &str, name: &str, deleted: bool| {
            let mut set = serde_json::json!({"apiVersion": api_version, "kind": "SidecarSet",
                "metadata": {"name": name, "uid": "u-1", "labels": {"team": "mesh"},
                             "managedFields": [{"manager": "kubectl"}]},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                         "containers": [{"name": "proxy", "image": "proxy:1"}]}});
            if deleted {
                set["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
            }
            set
        };
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            set("apps.kruise.io/v1beta1", "beta", false),
            set("apps.kruise.io/v1alpha1", "alpha", true),
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}},
        ]});
        assert_eq!(c.load_str(&list.to_string(), "dump.json").unwrap(), 3);
        // Both versions held typed, with their containers.
        for name in ["alpha", "beta"] {
            let typed = c.sidecar_set(name).unwrap();
            assert_eq!(typed.spec.containers.len(), 1, "{name}");
        }
        // The raw list keeps a SidecarSet's identity, and every other kind whole.
        assert_eq!(
            *c.objects()[0],
            serde_json::json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
                "metadata": {"name": "beta", "uid": "u-1", "labels": {"team": "mesh"}}})
        );
        assert_eq!(c.objects()[2]["data"]["k"], "v");
        // What counting custom resources reads is there.
        let query = CustomResourceQuery {
            group: "apps.kruise.io".into(),
            version: "v1beta1".into(),
            kind: "SidecarSet".into(),
            list_kind: "SidecarSetList".into(),
            plural: "sidecarsets".into(),
            namespaced: false,
        };
        let count = c.count_custom_resources(&query);
        assert_eq!((count.total, count.terminating), (2, 1));
    }

    #[test]
    fn objects_are_found_by_group_kind_namespace_and_name_the_first_of_an_identity() {
        let mut c = FixtureCluster::default();
        let yaml = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ns}
spec: {parallelism: 4}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ns}
spec: {parallelism: 9}
---
apiVersion: game.kruise.io/v1alpha1
kind: GameServerSet
metadata: {name: gss}
spec: {replicas: 10}
"#;
        c.load_str(yaml, "objects.yaml").unwrap();
        let job = c.object("batch", "Job", "ns", "j").expect("the Job");
        assert_eq!(job["spec"]["parallelism"], 4);
        // Without a namespace: found in `default`.
        let gss = c.object("game.kruise.io", "GameServerSet", "default", "gss");
        assert_eq!(gss.expect("the GameServerSet")["spec"]["replicas"], 10);
        assert!(c.object("batch", "Job", "other", "j").is_none());
        assert!(c.object("apps", "Job", "ns", "j").is_none());
        assert!(c.object("batch", "CronJob", "ns", "j").is_none());
    }

    #[test]
    fn persistent_pod_states_of_either_version_and_probe_markers_are_held_typed() {
        let mut c = FixtureCluster::default();
        let yaml = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: PersistentPodState
metadata: {name: b, namespace: ns}
spec:
  targetRef: {apiVersion: apps/v1, kind: StatefulSet, name: web}
  requiredPersistentTopology: {nodeTopologyKeys: [zone]}
---
apiVersion: apps.kruise.io/v1beta1
kind: PersistentPodState
metadata: {name: a, namespace: ns}
spec:
  targetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
  preferredPersistentTopology: [{weight: 5, preference: {keys: [rack]}}]
---
apiVersion: apps.kruise.io/v1alpha1
kind: PodProbeMarker
metadata: {name: ppm, namespace: ns}
spec:
  selector: {matchLabels: {app: game}}
  probes: [{name: healthy, containerName: main, probe: {exec: {command: [ok]}}}]
"#;
        assert_eq!(c.load_str(yaml, "kruise.yaml").unwrap(), 3);
        let states = c.persistent_pod_states_in("ns").unwrap();
        let names: Vec<&str> = states.iter().map(|p| p.name()).collect();
        assert_eq!(names, ["a", "b"], "in name order");
        assert_eq!(
            states[1]
                .spec
                .required_persistent_topology
                .as_ref()
                .unwrap()
                .keys,
            ["zone"],
            "v1alpha1 nodeTopologyKeys read as v1beta1 keys"
        );
        assert!(c.persistent_pod_states_in("other").unwrap().is_empty());
        let marker = c.pod_probe_marker("ns", "ppm").expect("the marker");
        assert_eq!(marker.spec.probes[0].container_name, "main");
        assert_eq!(c.pod_probe_markers_in("ns").unwrap().len(), 1);
        assert!(c.pod_probe_marker("ns", "nope").is_none());
    }

    #[test]
    fn yaml_scalars_read_as_kubectl_reads_them() {
        let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(
            "defaultMode: 0644\nreadOnly: yes\nname: '0644'\nreplicas: 3\n",
            yaml_options(),
        )
        .unwrap();
        assert_eq!(
            docs,
            vec![
                serde_json::json!({"defaultMode": 420, "readOnly": true, "name": "0644", "replicas": 3})
            ]
        );
    }

    #[test]
    fn a_syntax_error_names_its_document() {
        let mut c = FixtureCluster::default();
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n";
        for (text, index) in [
            (format!("{pod}---\n{pod}---\nb: [\n"), 3),
            (format!("---\n{pod}---\nb: [\n"), 2),
            (format!("# c\n---\nb: [\n---\n{pod}"), 1),
        ] {
            let e = c.load_str(&text, "f.yaml").unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("f.yaml: document {index}: not valid YAML/JSON: ")),
                "{e}"
            );
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn a_cluster_dump_of_many_documents_loads_and_an_alias_bomb_does_not() {
        let mut c = FixtureCluster::default();
        let dump: String = (0..1500)
            .map(|i| {
                format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: d}}\n")
            })
            .collect();
        assert_eq!(c.load_str(&dump, "dump.yaml").unwrap(), 1500);
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (n, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            bomb.push_str(&format!("{n}: &{n} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        let e = c.load_str(&bomb, "bomb.yaml").unwrap_err().to_string();
        assert!(e.contains("not valid YAML/JSON"), "{e}");
    }

    #[test]
    fn errors_name_the_source_and_document() {
        let mut c = FixtureCluster::default();
        let e = c
            .load_str(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\nkind: Pod\n",
                "f.yaml",
            )
            .unwrap_err();
        assert_eq!(e.to_string(), "f.yaml: document 2: missing apiVersion");
        let e = c.load_str("a: [", "g.yaml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("g.yaml: document 1: not valid YAML/JSON"),
            "{e}"
        );
        let e = c
            .load_str(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: 3\n",
                "h.yaml",
            )
            .unwrap_err();
        assert!(
            e.to_string().starts_with("h.yaml: document 1: Pod a:"),
            "{e}"
        );
    }
}
