//! [`FixtureCluster`]: a [`ClusterView`] built from YAML or JSON documents (fixture tests, benches, the
//! `review` command and the standalone server). Parsing only: the caller reads the files.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ClusterView;
use crate::api::sidecarset::SidecarSet;
use crate::deletion_protection::{CustomResourceCount, CustomResourceQuery};
use crate::sidecarset::select::SidecarSetIndex;
use crate::view::SidecarSetView;

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
        /// Parser message.
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
    pods: BTreeMap<String, Vec<Arc<Pod>>>,
    claims: BTreeMap<String, Vec<Arc<PersistentVolumeClaim>>>,
    sidecar_sets: SidecarSetIndex,
    revisions: Vec<Arc<ControllerRevision>>,
    objects: Vec<Arc<Value>>,
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
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let v = Value::deserialize(doc).map_err(|e| FixtureError::Syntax {
            source_name: source_name.into(),
            index: i + 1,
            message: e.to_string(),
        })?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
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
            let items = match doc.get("kind").and_then(Value::as_str) {
                Some(k) if k.ends_with("List") && doc.get("items").is_some() => {
                    match doc.get("items") {
                        Some(Value::Array(items)) => items.clone(),
                        _ => Vec::new(),
                    }
                }
                _ => vec![doc],
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
                let v1beta1 = crate::conversion::convert_object(&obj, "apps.kruise.io/v1beta1")
                    .map_err(|e| e.to_string())?;
                self.sidecar_sets.upsert(typed(&v1beta1, kind, name)?);
            }
            _ => {}
        }
        self.objects.push(Arc::new(obj));
        Ok(())
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

    /// Every object loaded, raw.
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
    ) -> Vec<Arc<SidecarSet>> {
        self.sidecar_sets.candidates_for(namespace, labels)
    }
    fn sidecar_set(&self, name: &str) -> Option<Arc<SidecarSet>> {
        self.sidecar_sets.get(name).cloned()
    }
    fn sidecar_sets(&self) -> Vec<Arc<SidecarSet>> {
        self.sidecar_sets.all()
    }
    fn controller_revision(&self, namespace: &str, name: &str) -> Option<Arc<ControllerRevision>> {
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
    ) -> Vec<Arc<ControllerRevision>> {
        self.revisions
            .iter()
            .filter(|r| r.metadata.namespace.as_deref() == Some(namespace))
            .filter(|r| crate::selector::has_labels(r.metadata.labels.as_ref(), labels))
            .cloned()
            .collect()
    }
}

impl ClusterView for FixtureCluster {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.namespaces.get(name).cloned()
    }
    fn pods_in(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.pods.get(namespace).cloned().unwrap_or_default()
    }
    fn persistent_volume_claims_in(&self, namespace: &str) -> Vec<Arc<PersistentVolumeClaim>> {
        self.claims.get(namespace).cloned().unwrap_or_default()
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
