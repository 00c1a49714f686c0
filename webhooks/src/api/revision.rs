//! A ControllerRevision as the cluster view holds it (the SidecarSets' history in the Kruise namespace,
//! [`crate::view::SidecarSetView::controller_revision`]): its metadata and number, and its `data` as the
//! JSON text it came as. Decoded, a SidecarSet's containers are a tree of maps about ten times the size of
//! their text, and with `revisionHistoryLimit` (10 by default) there are many revisions per SidecarSet; the
//! SidecarSet controller compares the text's canonical form, historical-revision injection decodes it when it
//! restores a SidecarSet from it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A ControllerRevision with its `data` as JSON text (module docs).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SlimRevision {
    /// Metadata (managedFields are dropped by the cache).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `data`, as received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
    /// `revision`.
    #[serde(default)]
    pub revision: i64,
}

impl SlimRevision {
    /// The text of `data` (`""` when absent).
    pub fn data_text(&self) -> &str {
        self.data.as_deref().map_or("", RawValue::get)
    }
}

impl PartialEq for SlimRevision {
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata
            && self.revision == other.revision
            && self.data_text() == other.data_text()
    }
}

resource!(
    SlimRevision,
    "apps/v1",
    "apps",
    "v1",
    "ControllerRevision",
    "controllerrevisions",
    NamespaceResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const STORED: &str = r#"{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"s-1","namespace":"kruise-system","labels":{"kruise.io/sidecarset-name":"s"}},"data":{"spec":{"containers":[{"name":"a","image":"a:1"}],"$patch":"replace"}},"revision":4}"#;

    #[test]
    fn data_keeps_its_text_as_received() {
        let r: SlimRevision = serde_json::from_str(STORED).unwrap();
        assert_eq!(
            r.data_text(),
            r#"{"spec":{"containers":[{"name":"a","image":"a:1"}],"$patch":"replace"}}"#
        );
        assert_eq!((r.revision, r.metadata.name.as_deref()), (4, Some("s-1")));
    }

    #[test]
    fn decodes_from_a_value_as_the_fixture_cluster_loads_it() {
        let v: serde_json::Value = serde_json::from_str(STORED).unwrap();
        let r: SlimRevision = serde_json::from_value(v).unwrap();
        let data: serde_json::Value = serde_json::from_str(r.data_text()).unwrap();
        assert_eq!(data["spec"]["containers"][0]["image"], "a:1");
        let none: SlimRevision =
            serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        assert_eq!((none.data_text(), none.revision), ("", 0));
    }
}
