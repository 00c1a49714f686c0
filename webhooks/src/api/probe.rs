//! `core/v1` Probe as OpenKruise's Go code decodes and marshals it: the annotations the pod chain writes
//! from probes (`apps.kruise.io/container-probe-context`, `kruise.io/podprobe`; spec/pod-mutating-misc.md §8,
//! §9) are `json.Marshal` of Go's `v1.Probe`, so this type writes its fields in Go's declaration order
//! (`exec`, `httpGet`, `tcpSocket`, `grpc`, then the timings) with Go's `omitempty` rules, not in the
//! alphabetical order of `k8s_openapi`'s type.
//!
//! Decoding follows `encoding/json` into the Go type: `null` is the zero value (nil for a pointer), unknown
//! fields are dropped. Go's omitempty leaves out a zero int32 and an empty string or list, but writes a
//! pointer that is set even when it points at zero (`terminationGracePeriodSeconds: 0` stays), and
//! `grpc.service` has no omitempty at all (`"service":null` when unset).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use crate::de::nullable;

/// `v1.Probe`: a probe handler and its timings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// `exec`: run a command in the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    /// `httpGet`: an HTTP GET request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HttpGetAction>,
    /// `tcpSocket`: a TCP connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TcpSocketAction>,
    /// `grpc`: a gRPC health check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcAction>,
    /// `initialDelaySeconds` (omitted when 0).
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "nullable"
    )]
    pub initial_delay_seconds: i32,
    /// `timeoutSeconds` (omitted when 0).
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "nullable"
    )]
    pub timeout_seconds: i32,
    /// `periodSeconds` (omitted when 0).
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "nullable"
    )]
    pub period_seconds: i32,
    /// `successThreshold` (omitted when 0).
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "nullable"
    )]
    pub success_threshold: i32,
    /// `failureThreshold` (omitted when 0).
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "nullable"
    )]
    pub failure_threshold: i32,
    /// `terminationGracePeriodSeconds`: a pointer in Go, omitted only when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
}

/// `v1.ExecAction`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecAction {
    /// `command` (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub command: Vec<String>,
}

/// `v1.HTTPGetAction`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpGetAction {
    /// `path` (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub path: String,
    /// `port`: always written.
    #[serde(default, deserialize_with = "nullable")]
    pub port: IntOrString,
    /// `host` (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub host: String,
    /// `scheme` (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub scheme: String,
    /// `httpHeaders` (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub http_headers: Vec<HttpHeader>,
}

/// `v1.HTTPHeader`: both fields always written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpHeader {
    /// `name`.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// `value`.
    #[serde(default, deserialize_with = "nullable")]
    pub value: String,
}

/// `v1.TCPSocketAction`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpSocketAction {
    /// `port`: always written.
    #[serde(default, deserialize_with = "nullable")]
    pub port: IntOrString,
    /// `host` (omitted when empty).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub host: String,
}

/// `v1.GRPCAction`: neither field has omitempty in Go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrpcAction {
    /// `port`.
    #[serde(default, deserialize_with = "nullable")]
    pub port: i32,
    /// `service`: `null` when unset.
    #[serde(default)]
    pub service: Option<String>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn go(probe: &Probe) -> String {
        crate::json::go::to_string(probe)
    }

    #[test]
    fn fields_are_written_in_go_order_without_zero_values() {
        // spec/pod-mutating-misc.md §8's example probe.
        let probe: Probe = serde_json::from_value(json!({
            "failureThreshold": 3, "successThreshold": 1, "periodSeconds": 100, "timeoutSeconds": 5,
            "initialDelaySeconds": 3000,
            "httpGet": {"scheme": "HTTP", "port": 7001, "path": "/health"}
        }))
        .unwrap();
        assert_eq!(
            go(&probe),
            r#"{"httpGet":{"path":"/health","port":7001,"scheme":"HTTP"},"initialDelaySeconds":3000,"timeoutSeconds":5,"periodSeconds":100,"successThreshold":1,"failureThreshold":3}"#
        );
    }

    #[test]
    fn every_handler_reads_and_writes_as_go_does() {
        let probe: Probe = serde_json::from_value(json!({
            "terminationGracePeriodSeconds": 0,
            "grpc": {"port": 9000},
            "tcpSocket": {"port": "http", "host": ""},
            "exec": {"command": ["cat", "/tmp/ok"]},
            "httpGet": {"port": "web", "host": "h", "httpHeaders": [{"name": "X-A", "value": "<b>"}]},
            "x-unknown": true,
            "periodSeconds": null
        }))
        .unwrap();
        assert_eq!(
            go(&probe),
            concat!(
                r#"{"exec":{"command":["cat","/tmp/ok"]},"#,
                r#""httpGet":{"port":"web","host":"h","httpHeaders":[{"name":"X-A","value":"\u003cb\u003e"}]},"#,
                r#""tcpSocket":{"port":"http"},"grpc":{"port":9000,"service":null},"#,
                r#""terminationGracePeriodSeconds":0}"#
            )
        );
    }

    #[test]
    fn empty_handlers_and_nulls_are_go_zero_values() {
        let probe: Probe = serde_json::from_value(json!({
            "exec": {"command": []}, "httpGet": {"port": null, "httpHeaders": null}
        }))
        .unwrap();
        assert_eq!(go(&probe), r#"{"exec":{},"httpGet":{"port":0}}"#);
        assert_eq!(go(&Probe::default()), "{}");
    }

    #[test]
    fn values_go_refuses_are_errors() {
        for bad in [
            json!({"initialDelaySeconds": "3"}),
            json!({"periodSeconds": 1.5}),
            json!({"timeoutSeconds": 4_294_967_296_i64}),
            json!({"exec": {"command": "ls"}}),
        ] {
            assert!(
                serde_json::from_value::<Probe>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
