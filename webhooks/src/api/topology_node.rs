//! A Node as the PersistentPodState controller's cache holds it (docs/persistentpodstate.md §3.2 step 4): its
//! name, resourceVersion and labels, every one of them (the topology keys are the PersistentPodStates'
//! choice). Decoding drops the rest as it goes (the status, with its images list, is tens of KiB a Node);
//! the labels of a Node are a few dozen short strings.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::pod::StrMap;

/// A Node with its labels (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "wire::Node", into = "wire::Node")]
pub struct TopologyNode {
    /// `name` and `resourceVersion`; never labels (they are [`TopologyNode::labels`]).
    pub metadata: ObjectMeta,
    /// `metadata.labels`.
    pub labels: StrMap,
}

impl TopologyNode {
    /// Its labels among `keys`.
    pub fn labels_of(&self, keys: &BTreeSet<String>) -> BTreeMap<String, String> {
        self.labels
            .iter()
            .filter(|(k, _)| keys.contains(*k))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

mod wire {
    use super::*;

    #[derive(Serialize, Deserialize)]
    pub(super) struct Node {
        #[serde(default)]
        metadata: Option<Meta>,
    }

    #[derive(Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
        #[serde(default, skip_serializing_if = "StrMap::is_empty")]
        labels: StrMap,
    }

    impl From<Node> for TopologyNode {
        fn from(node: Node) -> Self {
            let meta = node.metadata.unwrap_or_default();
            TopologyNode {
                metadata: ObjectMeta {
                    name: meta.name,
                    resource_version: meta.resource_version,
                    ..ObjectMeta::default()
                },
                labels: meta.labels,
            }
        }
    }

    impl From<TopologyNode> for Node {
        fn from(node: TopologyNode) -> Self {
            Node {
                metadata: Some(Meta {
                    name: node.metadata.name,
                    resource_version: node.metadata.resource_version,
                    labels: node.labels,
                }),
            }
        }
    }
}

resource!(
    TopologyNode,
    "v1",
    "",
    "v1",
    "Node",
    "nodes",
    ClusterResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decoding_keeps_the_name_and_every_label() {
        let node: TopologyNode = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "resourceVersion": "9", "uid": "u",
                "labels": {"topology.kubernetes.io/zone": "a", "kubernetes.io/hostname": "n1"},
                "annotations": {"a": "b"}},
            "status": {"images": [{"names": ["x"], "sizeBytes": 1}]}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&node).unwrap(),
            json!({"metadata": {"name": "n1", "resourceVersion": "9",
                "labels": {"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "a"}}})
        );
        let keys = BTreeSet::from(["topology.kubernetes.io/zone".to_owned(), "rack".to_owned()]);
        assert_eq!(
            node.labels_of(&keys),
            BTreeMap::from([("topology.kubernetes.io/zone".to_owned(), "a".to_owned())])
        );
        let bare: TopologyNode =
            serde_json::from_value(json!({"metadata": {"name": "n", "labels": null}})).unwrap();
        assert!(bare.labels.is_empty());
    }
}
