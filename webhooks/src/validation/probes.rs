//! Probes and lifecycle handlers, as `validateProbe`, `validateLifecycle` and `validateHandler` of
//! `k8s.io/kubernetes/pkg/apis/core/validation` (v1.32) check them: exactly one handler; exec command;
//! httpGet path, port (1-65535 or an IANA service name), scheme and header names; tcpSocket port; grpc port;
//! lifecycle `sleep` seconds in 1..=terminationGracePeriodSeconds; non-negative probe numbers,
//! successThreshold 1 for liveness and startup, probe-level terminationGracePeriodSeconds (positive, not on
//! readiness).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::decode::{as_object, decode_error, list, opt_int, opt_str};
use super::field_error::{BadValue, FieldError, FieldPath};
use super::meta::validate_nonnegative;
use super::syntax::{PORT_NUM_ERROR, is_valid_port_name, is_valid_port_num, regex_error};
use crate::WebhookError;
use crate::de::nullable;

/// A probe: its handler (the one set among `exec`, `httpGet`, `tcpSocket`, `grpc`) and its numbers.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Probe {
    #[serde(flatten)]
    handler: Map<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    initial_delay_seconds: i32,
    #[serde(default, deserialize_with = "nullable")]
    timeout_seconds: i32,
    #[serde(default, deserialize_with = "nullable")]
    period_seconds: i32,
    #[serde(default, deserialize_with = "nullable")]
    success_threshold: i32,
    #[serde(default, deserialize_with = "nullable")]
    failure_threshold: i32,
    #[serde(default)]
    termination_grace_period_seconds: Option<i64>,
}

/// `lifecycle`: the `postStart` and `preStop` handlers.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Lifecycle {
    #[serde(default)]
    post_start: Option<Map<String, Value>>,
    #[serde(default)]
    pre_stop: Option<Map<String, Value>>,
}

/// Which probe of a container is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ProbeKind {
    /// `livenessProbe`.
    Liveness,
    /// `readinessProbe`.
    Readiness,
    /// `startupProbe`.
    Startup,
}

/// `validateHandler`: exactly one handler, each checked as Go's `validate<Kind>Action` does.
fn validate_handler(
    handler: &Map<String, Value>,
    kinds: &[&str],
    grace_period: i64,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let mut found = false;
    for kind in kinds {
        let Some(h) = handler.get(*kind).filter(|v| !v.is_null()) else {
            continue;
        };
        let hp = path.child(kind);
        if found {
            errs.push(FieldError::forbidden(
                &hp,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        found = true;
        let h = as_object(h, &hp)?;
        match *kind {
            "exec"
                if h.get("command")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty) =>
            {
                errs.push(FieldError::required(&hp.child("command"), ""));
            }
            "httpGet" => {
                if opt_str(h, "path", &hp)?.unwrap_or("").is_empty() {
                    errs.push(FieldError::required(&hp.child("path"), ""));
                }
                validate_port_num_or_name(h.get("port"), &hp.child("port"), errs)?;
                let scheme = opt_str(h, "scheme", &hp)?.unwrap_or("");
                if scheme != "HTTP" && scheme != "HTTPS" {
                    errs.push(FieldError::not_supported(
                        &hp.child("scheme"),
                        BadValue::str(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
                let headers = hp.child("httpHeaders");
                for header in list(h, "httpHeaders", &hp)? {
                    let name =
                        opt_str(as_object(header, &headers)?, "name", &headers)?.unwrap_or("");
                    if name.is_empty()
                        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    {
                        errs.push(FieldError::invalid(
                            &headers,
                            BadValue::str(name),
                            regex_error(
                                "a valid HTTP header must consist of alphanumeric characters or '-'",
                                "[-A-Za-z0-9]+",
                                &["X-Header-Name"],
                            ),
                        ));
                    }
                }
            }
            "tcpSocket" => validate_port_num_or_name(h.get("port"), &hp.child("port"), errs)?,
            "grpc" => {
                // An int32 field: Go's decoder refuses a string here.
                let port = opt_int(h, "port", &hp)?.unwrap_or(0);
                let port = i32::try_from(port)
                    .map_err(|_| decode_error(&hp.child("port"), "expected an int32"))?;
                if !is_valid_port_num(port) {
                    errs.push(FieldError::invalid(
                        &hp.child("port"),
                        BadValue::Int(port.into()),
                        PORT_NUM_ERROR,
                    ));
                }
            }
            "sleep" => {
                let seconds = opt_int(h, "seconds", &hp)?.unwrap_or(0);
                if seconds <= 0 || seconds > grace_period {
                    errs.push(FieldError::invalid(
                        &hp,
                        BadValue::Int(seconds),
                        format!(
                            "must be greater than 0 and less than terminationGracePeriodSeconds ({grace_period}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if !found {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    Ok(())
}

/// `ValidatePortNumOrName` of an `IntOrString` port: a JSON number is an int (absent and `null` are 0), a
/// JSON string a port name.
fn validate_port_num_or_name(
    port: Option<&Value>,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    match port {
        None | Some(Value::Null) => {
            errs.push(FieldError::invalid(path, BadValue::Int(0), PORT_NUM_ERROR))
        }
        Some(Value::Number(n)) => {
            let n = n
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| decode_error(path, "expected an int32 or a string"))?;
            if !is_valid_port_num(n) {
                errs.push(FieldError::invalid(
                    path,
                    BadValue::Int(n.into()),
                    PORT_NUM_ERROR,
                ));
            }
        }
        Some(Value::String(name)) => {
            errs.extend(FieldError::invalid_each(
                path,
                name,
                is_valid_port_name(name),
            ));
        }
        Some(_) => return Err(decode_error(path, "expected an int32 or a string")),
    }
    Ok(())
}

/// `validateLifecycle`: each handler; `sleep` is bounded by the pod's grace period.
pub(super) fn validate_lifecycle(
    l: &Lifecycle,
    grace_period: i64,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    for (h, name) in [(&l.post_start, "postStart"), (&l.pre_stop, "preStop")] {
        if let Some(h) = h {
            validate_handler(
                h,
                &["exec", "httpGet", "tcpSocket", "sleep"],
                grace_period,
                &path.child(name),
                errs,
            )?;
        }
    }
    Ok(())
}

/// `validateProbe` with the kind's own rules (`validateLivenessProbe`, ...), at the container's `path`.
pub(super) fn validate_probe(
    probe: Option<&Probe>,
    kind: ProbeKind,
    grace_period: i64,
    container: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let Some(probe) = probe else { return Ok(()) };
    let path = container.child(match kind {
        ProbeKind::Liveness => "livenessProbe",
        ProbeKind::Readiness => "readinessProbe",
        ProbeKind::Startup => "startupProbe",
    });
    validate_handler(
        &probe.handler,
        &["exec", "httpGet", "tcpSocket", "grpc"],
        grace_period,
        &path,
        errs,
    )?;
    for (value, field) in [
        (probe.initial_delay_seconds, "initialDelaySeconds"),
        (probe.timeout_seconds, "timeoutSeconds"),
        (probe.period_seconds, "periodSeconds"),
        (probe.success_threshold, "successThreshold"),
        (probe.failure_threshold, "failureThreshold"),
    ] {
        errs.extend(validate_nonnegative(value.into(), &path.child(field)));
    }
    if let Some(grace) = probe.termination_grace_period_seconds
        && grace <= 0
    {
        errs.push(FieldError::invalid(
            &path.child("terminationGracePeriodSeconds"),
            BadValue::Int(grace),
            "must be greater than 0",
        ));
    }
    match kind {
        ProbeKind::Liveness | ProbeKind::Startup if probe.success_threshold != 1 => {
            errs.push(FieldError::invalid(
                &path.child("successThreshold"),
                BadValue::Int(probe.success_threshold.into()),
                "must be 1",
            ));
        }
        ProbeKind::Readiness if probe.termination_grace_period_seconds.is_some() => {
            errs.push(FieldError::invalid(
                &path.child("terminationGracePeriodSeconds"),
                BadValue::Int(probe.termination_grace_period_seconds.unwrap_or_default()),
                "must not be set for readinessProbes",
            ));
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::validation::testing::{c, check, with};

    #[test]
    fn probe_and_lifecycle_handler_ports_paths_and_sleep() {
        let bad = with(
            c("a"),
            json!({
                "lifecycle": {
                    "postStart": {"sleep": {"seconds": 0}},
                    "preStop": {"httpGet": {"port": "8080"}}
                },
                "livenessProbe": {"httpGet": {"path": "/", "port": 70000, "scheme": "HTTP",
                    "httpHeaders": [{"name": "bad header", "value": "x"}]}, "successThreshold": 1},
                "readinessProbe": {"tcpSocket": {"port": "bad_name!"}},
                "startupProbe": {"grpc": {"port": 0}, "successThreshold": 1}
            }),
        );
        assert_eq!(
            check(json!([]), json!([bad]), json!([])),
            [
                "spec.containers[0].lifecycle.postStart.sleep: Invalid value: 0: must be greater than 0 and less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.",
                "spec.containers[0].lifecycle.preStop.httpGet.path: Required value",
                "spec.containers[0].lifecycle.preStop.httpGet.port: Invalid value: \"8080\": must contain at least one letter (a-z)",
                "spec.containers[0].lifecycle.preStop.httpGet.scheme: Unsupported value: \"\": supported values: \"HTTP\", \"HTTPS\"",
                "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].livenessProbe.httpGet.httpHeaders: Invalid value: \"bad header\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
                "spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: \"bad_name!\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].startupProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
        // An absent port is Go's zero IntOrString (the int 0); a sleep longer than the grace period fails.
        let init = with(
            c("i"),
            json!({"restartPolicy": "Always",
                "livenessProbe": {"tcpSocket": {}, "successThreshold": 1},
                "lifecycle": {"preStop": {"sleep": {"seconds": 31}}}}),
        );
        assert_eq!(
            check(json!([init]), json!([]), json!([])),
            [
                "spec.initContainers[0].lifecycle.preStop.sleep: Invalid value: 31: must be greater than 0 and less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.",
                "spec.initContainers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
    }
}
