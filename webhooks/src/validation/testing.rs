//! Test helpers of the pod sections: a pod spec given as JSON lists, checked by [`validate_pod_spec`] at
//! `spec` with the default grace period.

use serde_json::{Map, Value, json};

use super::field_error::{FieldError, FieldPath};
use super::pod::{DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, PodSpec, validate_pod_spec};
use crate::WebhookError;

/// A JSON list of containers as raw objects.
pub(crate) fn containers(v: Value) -> Vec<Map<String, Value>> {
    serde_json::from_value(v).unwrap()
}

/// The errors of the pod spec with these init containers, containers and volumes.
pub(crate) fn pod_spec_errors(
    init: Value,
    main: Value,
    volumes: Value,
) -> Result<Vec<FieldError>, WebhookError> {
    let init = containers(init);
    let main = containers(main);
    let volumes: Vec<Value> = serde_json::from_value(volumes).unwrap();
    validate_pod_spec(
        &PodSpec {
            init_containers: &init,
            containers: &main,
            volumes: &volumes,
            termination_grace_period_seconds: DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
        },
        &FieldPath::new("spec"),
    )
}

/// The errors as Go prints them.
pub(crate) fn check(init: Value, main: Value, volumes: Value) -> Vec<String> {
    pod_spec_errors(init, main, volumes)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// `field: detail` of each error, for values Go prints with `%#v` (not reproducible byte for byte).
pub(crate) fn details(init: Value, main: Value, volumes: Value) -> Vec<String> {
    pod_spec_errors(init, main, volumes)
        .unwrap()
        .iter()
        .map(|e| format!("{}: {}", e.field, e.detail))
        .collect()
}

/// Whether the spec with these containers and volumes fails to decode (answered 400).
pub(crate) fn decode_fails(main: Value, volumes: Value) -> bool {
    pod_spec_errors(json!([]), main, volumes).is_err_and(|e| e.http_code() == 400)
}

/// A valid container named `name`.
pub(crate) fn c(name: &str) -> Value {
    json!({"name": name, "image": "img", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"})
}

/// `base` with the fields of `extra` added (or replaced).
pub(crate) fn with(mut base: Value, extra: Value) -> Value {
    base.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    base
}
