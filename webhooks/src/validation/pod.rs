//! A pod spec's volumes and containers, as `ValidatePodSpec` of `k8s.io/kubernetes/pkg/apis/core/validation`
//! (v1.32) checks them, with its paths and texts, in its order: the `volumes` section, then the `containers`
//! section (containers, then init containers), then `validateContainersOnlyForPod` (images without leading or
//! trailing whitespace).
//!
//! Only those parts of the spec are checked: the rest of a pod (metadata, scheduling, the pod security
//! context, resource claims) is not, and the pod is taken to have no pod-level security context (host users)
//! and no resource claims. An empty container list is not reported (Go requires one container; callers pass
//! at least one).
//!
//! Containers and volumes stay raw JSON until checked: a value Go's decoder refuses (a wrong JSON type, an
//! unparsable quantity) is a [`WebhookError::Decode`] naming the field.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::containers::{PodContainer, validate_containers, validate_init_containers};
use super::field_error::{BadValue, FieldError, FieldPath};
use super::volumes::validate_volumes;
use crate::WebhookError;

/// `v1.DefaultTerminationGracePeriodSeconds`: the grace period of a pod that does not set one.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;

/// The parts of a pod spec that [`validate_pod_spec`] checks, as raw JSON.
pub struct PodSpec<'a> {
    /// `initContainers`.
    pub init_containers: &'a [Map<String, Value>],
    /// `containers`.
    pub containers: &'a [Map<String, Value>],
    /// `volumes`.
    pub volumes: &'a [Value],
    /// `terminationGracePeriodSeconds`, which bounds lifecycle `sleep` handlers.
    pub termination_grace_period_seconds: i64,
}

/// Validates a pod spec's volumes, containers and init containers (`ValidatePodSpec`, the parts listed in
/// the module docs) at `path` (`spec` for a pod), returning Kubernetes' field errors in Go's order.
///
/// # Errors
/// [`WebhookError::Decode`] when a container or volume holds a value Go's decoder refuses (a wrong JSON
/// type, an unparsable quantity).
pub fn validate_pod_spec(
    spec: &PodSpec<'_>,
    path: &FieldPath,
) -> Result<Vec<FieldError>, WebhookError> {
    let decode = |list: &[Map<String, Value>],
                  what: &str|
     -> Result<Vec<PodContainer>, WebhookError> {
        list.iter()
            .enumerate()
            .map(|(i, raw)| {
                PodContainer::deserialize(&Value::Object(raw.clone()))
                    .map_err(|e| WebhookError::Decode(format!("decoding {path}.{what}[{i}]: {e}")))
            })
            .collect()
    };
    let init = decode(spec.init_containers, "initContainers")?;
    let containers = decode(spec.containers, "containers")?;
    let grace_period = spec.termination_grace_period_seconds;
    let mut errs = Vec::new();
    let volumes = validate_volumes(spec.volumes, &path.child("volumes"), &mut errs)?;
    validate_containers(
        &containers,
        &volumes,
        grace_period,
        &path.child("containers"),
        &mut errs,
    )?;
    validate_init_containers(
        &init,
        &containers,
        &volumes,
        grace_period,
        &path.child("initContainers"),
        &mut errs,
    )?;
    for (list, name) in [(&containers, "containers"), (&init, "initContainers")] {
        for (i, c) in list.iter().enumerate() {
            if c.image.len() != c.image.trim().len() {
                errs.push(FieldError::invalid(
                    &path.child(name).index(i).child("image"),
                    BadValue::str(&c.image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    Ok(errs)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::validation::testing::{c, check, decode_fails, with};

    /// A sidecar as the defaulting webhook leaves it, using every rule added for probes, security
    /// contexts, the downward API, mounts and volume items.
    #[test]
    fn a_realistic_sidecar_with_named_probe_ports_and_downward_api_passes() {
        let sidecar = with(
            c("sidecar"),
            json!({
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
                    {"name": "MEM", "valueFrom": {"resourceFieldRef": {"containerName": "sidecar", "resource": "requests.memory", "divisor": "1Mi"}}},
                    {"name": "HUGE", "valueFrom": {"resourceFieldRef": {"resource": "limits.hugepages-2Mi"}}}
                ],
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "volumeMounts": [
                    {"name": "podinfo", "mountPath": "/etc/podinfo", "readOnly": true, "recursiveReadOnly": "IfPossible"},
                    {"name": "token", "mountPath": "/var/run/token", "mountPropagation": "None"},
                    {"name": "conf", "mountPath": "/etc/conf", "subPath": "app.conf"},
                    {"name": "host", "mountPath": "/host", "mountPropagation": "HostToContainer"}
                ],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP",
                    "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
                    "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"tcpSocket": {"port": 8080}, "successThreshold": 1},
                "startupProbe": {"grpc": {"port": 9090}, "successThreshold": 1},
                "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "true"]}},
                    "preStop": {"sleep": {"seconds": 5}}},
                "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": true,
                    "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "procMount": "Default",
                    "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                    "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-sidecar"}}
            }),
        );
        let privileged = with(
            c("agent"),
            json!({
                "securityContext": {"privileged": true, "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/agent.json"}},
                "volumeMounts": [{"name": "host", "mountPath": "/host", "mountPropagation": "Bidirectional"}],
                "lifecycle": {"preStop": {"httpGet": {"path": "/stop", "port": 8081, "scheme": "HTTPS"}}}
            }),
        );
        let init = with(
            c("proxy-init"),
            json!({"restartPolicy": "Always",
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 15021, "scheme": "HTTP"}}}),
        );
        let volumes = json!([
            {"name": "podinfo", "downwardAPI": {"defaultMode": 420, "items": [
                {"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}},
                {"path": "annotation", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.annotations['a']"}},
                {"path": "cpu_limit", "resourceFieldRef": {"containerName": "sidecar", "resource": "limits.cpu", "divisor": "1m"}, "mode": 420}
            ]}},
            {"name": "token", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600, "audience": "api"}},
                {"configMap": {"name": "ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"secret": {"name": "tls", "items": [{"key": "tls.crt", "path": "certs/tls.crt", "mode": 384}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]}},
            {"name": "conf", "configMap": {"name": "conf", "defaultMode": 420, "items": [{"key": "app.conf", "path": "app.conf", "mode": 420}]}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": "DirectoryOrCreate"}},
            {"name": "unset-type", "hostPath": {"path": "/tmp", "type": ""}},
            {"name": "certs", "secret": {"secretName": "certs", "items": [{"key": "tls.key", "path": "keys/..data"}]}},
            {"name": "store", "csi": {"driver": "secrets-store.csi.k8s.io", "nodePublishSecretRef": {"name": "creds"}}}
        ]);
        assert_eq!(
            check(json!([init]), json!([sidecar, privileged]), volumes),
            Vec::<String>::new()
        );
    }

    #[test]
    fn wrongly_typed_fields_are_decode_errors_not_panics() {
        let cases = [
            (
                json!({"livenessProbe": {"httpGet": "x", "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"livenessProbe": {"httpGet": {"path": "/", "port": true}, "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"livenessProbe": {"httpGet": {"path": "/", "port": 1.5}, "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"livenessProbe": {"tcpSocket": {"port": 5_000_000_000_i64}}, "successThreshold": 1}),
                json!([]),
            ),
            (
                json!({"startupProbe": {"grpc": {"port": "http"}, "successThreshold": 1}}),
                json!([]),
            ),
            (
                json!({"lifecycle": {"preStop": {"sleep": {"seconds": "5"}}}}),
                json!([]),
            ),
            (
                json!({"lifecycle": {"preStop": {"httpGet": {"path": "/", "port": 80, "httpHeaders": "x"}}}}),
                json!([]),
            ),
            (json!({"securityContext": {"runAsUser": "root"}}), json!([])),
            (
                json!({"securityContext": {"capabilities": {"add": "CAP_SYS_ADMIN"}}}),
                json!([]),
            ),
            (
                json!({"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "lots"}}}]}),
                json!([]),
            ),
            (
                json!({"volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": "yes"}]}),
                json!([]),
            ),
            (
                json!({}),
                json!([{"name": "v", "secret": {"secretName": "s", "items": "x"}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "secret": {"secretName": "s", "items": [5]}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "p", "mode": "0644"}]}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "hostPath": {"path": "/x", "type": 3}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "downwardAPI": {"items": [{"path": "p", "fieldRef": "x"}]}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "projected": {"sources": 5}}]),
            ),
            (
                json!({}),
                json!([{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 1e3}}]}}]),
            ),
            (json!({}), json!([{"name": "v", "csi": {"driver": ["d"]}}])),
        ];
        for (extra, volumes) in cases {
            let main = json!([with(c("a"), extra.clone())]);
            assert!(decode_fails(main, volumes.clone()), "{extra} {volumes}");
        }
        // Nulls are Go's zero values, never a failure.
        let nulls = with(
            c("a"),
            json!({"securityContext": null, "livenessProbe": {"httpGet": {"path": "/", "port": null, "scheme": "HTTP", "httpHeaders": null}, "successThreshold": 1},
                "volumeMounts": [{"name": "v", "mountPath": "/v", "mountPropagation": null, "recursiveReadOnly": null, "readOnly": null}]}),
        );
        assert_eq!(
            check(
                json!([]),
                json!([nulls]),
                json!([{"name": "v", "projected": {"sources": [null, {"secret": {"name": "s", "items": [null]}}]}}])
            ),
            [
                "spec.volumes[0].projected.sources[1].secret.items[0].key: Required value",
                "spec.volumes[0].projected.sources[1].secret.items[0].path: Required value",
                "spec.containers[0].volumeMounts[0].name: Not found: \"v\"",
                "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
    }
}
