//! A ContainerRecreateRequest as Go's typed decode sees it (`apis/apps/v1{alpha1,beta1}`, identical in both
//! versions for what is here): what the webhook checks, and the `reflect.DeepEqual` of two specs that decides
//! whether an UPDATE changed the spec (docs/containerrecreaterequest-webhook.md §5 rule 1).
//!
//! Go's pointers and slices are `Option`s here: absent and `null` are `None`, a zero value or an empty list is
//! `Some`, so `PartialEq` tells them apart as `DeepEqual` does. Go's non-pointer scalars decode `null` and
//! absence as their zero value ([`zero_if_null`]), so they compare equal to an explicit zero. Fields Go's types
//! do not have are ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

/// The object: namespace, labels, annotations and spec (the status is not read).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Object {
    /// `metadata`.
    #[serde(deserialize_with = "zero_if_null")]
    pub metadata: Meta,
    /// `spec`.
    #[serde(deserialize_with = "zero_if_null")]
    pub spec: Spec,
}

/// `metadata`, as far as the webhook reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Meta {
    /// `namespace`.
    #[serde(deserialize_with = "zero_if_null")]
    pub namespace: String,
    /// `labels`.
    #[serde(deserialize_with = "zero_if_null")]
    pub labels: BTreeMap<String, String>,
    /// `annotations`.
    #[serde(deserialize_with = "zero_if_null")]
    pub annotations: BTreeMap<String, String>,
}

impl Meta {
    /// A label's value, empty when absent (Go's map lookup).
    pub fn label(&self, key: &str) -> &str {
        self.labels.get(key).map_or("", String::as_str)
    }

    /// An annotation's value, empty when absent.
    pub fn annotation(&self, key: &str) -> &str {
        self.annotations.get(key).map_or("", String::as_str)
    }
}

/// `ContainerRecreateRequestSpec`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Spec {
    #[serde(deserialize_with = "zero_if_null")]
    pub pod_name: String,
    pub containers: Option<Vec<Container>>,
    pub strategy: Option<Strategy>,
    pub active_deadline_seconds: Option<i64>,
    pub ttl_seconds_after_finished: Option<i32>,
}

/// `ContainerRecreateRequestContainer`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Container {
    #[serde(deserialize_with = "zero_if_null")]
    pub name: String,
    pub pre_stop: Option<Handler>,
    pub ports: Option<Vec<Port>>,
    pub status_context: Option<StatusContext>,
}

impl Container {
    /// Whether a field only the webhook may fill is set (`preStop`, `ports`, `statusContext` non-nil).
    pub fn has_read_only_fields(&self) -> bool {
        self.pre_stop.is_some() || self.ports.is_some() || self.status_context.is_some()
    }
}

/// `ProbeHandler` (v1alpha1) / `CRRProbeHandler` (v1beta1).
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Handler {
    pub exec: Option<Exec>,
    pub http_get: Option<HttpGet>,
    pub tcp_socket: Option<TcpSocket>,
}

/// `v1.ExecAction`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(super) struct Exec {
    pub command: Option<Vec<String>>,
}

/// `v1.HTTPGetAction`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct HttpGet {
    #[serde(deserialize_with = "zero_if_null")]
    pub path: String,
    pub port: IntOrString,
    #[serde(deserialize_with = "zero_if_null")]
    pub host: String,
    #[serde(deserialize_with = "zero_if_null")]
    pub scheme: String,
    pub http_headers: Option<Vec<Header>>,
}

/// `v1.HTTPHeader`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(super) struct Header {
    #[serde(deserialize_with = "zero_if_null")]
    pub name: String,
    #[serde(deserialize_with = "zero_if_null")]
    pub value: String,
}

/// `v1.TCPSocketAction`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(super) struct TcpSocket {
    pub port: IntOrString,
    #[serde(deserialize_with = "zero_if_null")]
    pub host: String,
}

/// `v1.ContainerPort`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Port {
    #[serde(deserialize_with = "zero_if_null")]
    pub name: String,
    #[serde(deserialize_with = "zero_if_null")]
    pub host_port: i32,
    #[serde(deserialize_with = "zero_if_null")]
    pub container_port: i32,
    #[serde(deserialize_with = "zero_if_null")]
    pub protocol: String,
    #[serde(rename = "hostIP", deserialize_with = "zero_if_null")]
    pub host_ip: String,
}

/// `ContainerRecreateRequestContainerContext`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct StatusContext {
    #[serde(rename = "containerID", deserialize_with = "zero_if_null")]
    pub container_id: String,
    #[serde(deserialize_with = "zero_if_null")]
    pub restart_count: i32,
}

/// `ContainerRecreateRequestStrategy`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Strategy {
    #[serde(deserialize_with = "zero_if_null")]
    pub failure_policy: String,
    #[serde(deserialize_with = "zero_if_null")]
    pub ordered_recreate: bool,
    #[serde(deserialize_with = "zero_if_null")]
    pub force_recreate: bool,
    pub termination_grace_period_seconds: Option<i64>,
    pub unready_grace_period_seconds: Option<i64>,
    #[serde(deserialize_with = "zero_if_null")]
    pub min_started_seconds: i32,
}

/// `intstr.IntOrString`: a number or a string; `null` leaves the zero value, the integer 0.
#[derive(Debug, PartialEq)]
pub(super) enum IntOrString {
    Int(i32),
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        Self::Int(0)
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Int(i32),
            String(String),
        }
        Ok(match Option::<Wire>::deserialize(deserializer)? {
            None => Self::default(),
            Some(Wire::Int(n)) => Self::Int(n),
            Some(Wire::String(s)) => Self::String(s),
        })
    }
}

/// A Go non-pointer field: `null` leaves the zero value, as absence does.
fn zero_if_null<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(value: serde_json::Value) -> Spec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn equality_follows_go_deep_equal() {
        let base = json!({"podName": "p", "containers": [{"name": "a"}]});
        // Non-pointer zero values equal their absence; null equals absence.
        for same in [
            json!({"podName": "p", "containers": [{"name": "a"}], "strategy": null}),
            json!({"podName": "p", "containers": [{"name": "a", "preStop": null}], "x-unknown": 1}),
        ] {
            assert_eq!(spec(base.clone()), spec(same.clone()), "{same}");
        }
        let with_strategy = json!({"podName": "p", "containers": [{"name": "a"}], "strategy": {}});
        assert_ne!(
            spec(base.clone()),
            spec(with_strategy.clone()),
            "nil vs &{{}}"
        );
        assert_eq!(
            spec(with_strategy),
            spec(json!({"podName": "p", "containers": [{"name": "a"}],
                "strategy": {"forceRecreate": false, "minStartedSeconds": 0, "failurePolicy": null}}))
        );
        // Pointers: zero is not absence; lists: empty is not absent.
        for different in [
            json!({"podName": "p", "containers": [{"name": "a"}], "activeDeadlineSeconds": 0}),
            json!({"podName": "p", "containers": [{"name": "a", "ports": []}]}),
            json!({"podName": "p", "containers": []}),
            json!({"podName": "p", "containers": [{"name": "b"}]}),
        ] {
            assert_ne!(spec(base.clone()), spec(different.clone()), "{different}");
        }
    }

    #[test]
    fn int_or_string_keeps_its_kind() {
        let port = |v: serde_json::Value| -> TcpSocket {
            serde_json::from_value(json!({"port": v})).unwrap()
        };
        assert_eq!(port(json!(80)).port, IntOrString::Int(80));
        assert_eq!(port(json!("80")).port, IntOrString::String("80".into()));
        assert_eq!(port(json!(null)).port, IntOrString::Int(0));
        assert_ne!(port(json!(80)), port(json!("80")));
        assert!(serde_json::from_value::<TcpSocket>(json!({"port": 1.5})).is_err());
    }

    #[test]
    fn a_field_of_the_wrong_type_does_not_decode() {
        for bad in [
            json!({"podName": 3}),
            json!({"containers": {}}),
            json!({"activeDeadlineSeconds": "3"}),
            json!({"strategy": {"forceRecreate": "yes"}}),
        ] {
            assert!(
                serde_json::from_value::<Spec>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
