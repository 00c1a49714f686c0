//! A Node as the Job sidecar terminator's cache holds it (spec/sidecar-terminator.md §2, §5 step 2): its
//! name, resourceVersion and of its labels only [`VIRTUAL_KUBELET_LABEL`]. Decoding drops the rest as it
//! goes (a Node's status alone, with its images list, is tens of KiB), so a cache of every Node of a large
//! cluster costs a few dozen bytes per Node.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::Deserializer;
use serde::{Deserialize, Serialize};

use super::pod::StrMap;

/// The Node label whose value [`VIRTUAL_KUBELET_VALUE`] marks a virtual-kubelet node.
pub const VIRTUAL_KUBELET_LABEL: &str = "type";
/// The value of [`VIRTUAL_KUBELET_LABEL`] on a virtual-kubelet node (compared exactly).
pub const VIRTUAL_KUBELET_VALUE: &str = "virtual-kubelet";

/// A Node with only the fields read (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "wire::Node", into = "wire::Node")]
pub struct SlimNode {
    /// `name` and `resourceVersion`; never labels (they are [`SlimNode::labels`]).
    pub metadata: ObjectMeta,
    /// `metadata.labels`, only [`VIRTUAL_KUBELET_LABEL`].
    pub labels: StrMap,
}

impl SlimNode {
    /// Whether the node is a virtual-kubelet node: label `type` is exactly `virtual-kubelet`.
    pub fn is_virtual_kubelet(&self) -> bool {
        self.labels.get(VIRTUAL_KUBELET_LABEL) == Some(VIRTUAL_KUBELET_VALUE)
    }
}

mod wire {
    use super::*;

    #[derive(Serialize, Deserialize)]
    pub(super) struct Node {
        #[serde(default)]
        metadata: Option<Meta>,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
        #[serde(
            default,
            skip_serializing_if = "StrMap::is_empty",
            deserialize_with = "read_labels"
        )]
        labels: StrMap,
    }

    fn read_labels<'de, D: Deserializer<'de>>(deserializer: D) -> Result<StrMap, D::Error> {
        StrMap::decode(deserializer, |key| key == VIRTUAL_KUBELET_LABEL)
    }

    impl From<Node> for SlimNode {
        fn from(node: Node) -> Self {
            let meta = node.metadata.unwrap_or(Meta {
                name: None,
                resource_version: None,
                labels: StrMap::default(),
            });
            SlimNode {
                metadata: ObjectMeta {
                    name: meta.name,
                    resource_version: meta.resource_version,
                    ..ObjectMeta::default()
                },
                labels: meta.labels,
            }
        }
    }

    impl From<SlimNode> for Node {
        fn from(node: SlimNode) -> Self {
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
    SlimNode,
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
    fn decoding_keeps_the_name_and_the_type_label_only() {
        let node: SlimNode = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "vk-node", "resourceVersion": "9", "uid": "u",
                "labels": {"type": "virtual-kubelet", "kubernetes.io/hostname": "vk-node"},
                "annotations": {"a": "b"}},
            "spec": {"taints": [{"key": "virtual-kubelet.io/provider", "effect": "NoSchedule"}]},
            "status": {"images": [{"names": ["x"], "sizeBytes": 1}]}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&node).unwrap(),
            json!({"metadata": {"name": "vk-node", "resourceVersion": "9",
                "labels": {"type": "virtual-kubelet"}}})
        );
        assert!(node.is_virtual_kubelet());
    }

    #[test]
    fn only_the_exact_label_value_is_virtual_kubelet() {
        for (labels, vk) in [
            (json!({"type": "virtual-kubelet"}), true),
            (json!({"type": "Virtual-Kubelet"}), false),
            (json!({"type": "virtual-kubelet "}), false),
            (json!({"kind": "virtual-kubelet"}), false),
            (json!(null), false),
        ] {
            let node: SlimNode =
                serde_json::from_value(json!({"metadata": {"name": "n", "labels": labels}}))
                    .unwrap();
            assert_eq!(node.is_virtual_kubelet(), vk, "{labels}");
        }
        // A taint is not a mark (spec §2: the taint key is defined upstream but not used).
        let tainted: SlimNode = serde_json::from_value(json!({"metadata": {"name": "n"},
            "spec": {"taints": [{"key": "virtual-kubelet.io/provider", "effect": "NoSchedule"}]}}))
        .unwrap();
        assert!(!tainted.is_virtual_kubelet());
    }
}
