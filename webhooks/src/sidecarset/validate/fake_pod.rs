//! The "fake pod" check of spec/sidecarset.md §8 rule 3.6: the SidecarSet's init containers, containers (or a
//! placeholder `test`/`busybox`) and volumes are put in a pod (`default/test`, restartPolicy Always,
//! terminationGracePeriodSeconds 30) and go through Kubernetes' pod-spec validation
//! ([`validate_pod_spec`]), with its paths and texts.

use serde_json::{Map, Value, json};

use super::model::Spec;
use crate::WebhookError;
use crate::validation::field_error::{FieldError, FieldPath};
use crate::validation::pod::{
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, PodSpec, validate_pod_spec,
};

/// The fake-pod check of the SidecarSet's spec.
///
/// # Errors
/// [`WebhookError::Decode`] for a value Go's decoder would have refused before validation.
pub(super) fn fake_pod_errors(spec: &Spec) -> Result<Vec<FieldError>, WebhookError> {
    let init: Vec<_> = spec.init_containers.iter().map(|c| c.raw.clone()).collect();
    let containers: Vec<_> = spec.containers.iter().map(|c| c.raw.clone()).collect();
    validate_fake_pod(&init, &containers, &spec.volumes)
}

/// Validates the fake pod holding these init containers, containers (the placeholder when there are none) and
/// volumes.
fn validate_fake_pod(
    init_containers: &[Map<String, Value>],
    containers: &[Map<String, Value>],
    volumes: &[Value],
) -> Result<Vec<FieldError>, WebhookError> {
    let placeholder;
    let containers = if containers.is_empty() {
        placeholder = [placeholder_container()];
        &placeholder[..]
    } else {
        containers
    };
    validate_pod_spec(
        &PodSpec {
            init_containers,
            containers,
            volumes,
            termination_grace_period_seconds: DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
        },
        &FieldPath::new("spec"),
    )
}

/// The container Kruise puts in the fake pod when the SidecarSet has none.
fn placeholder_container() -> Map<String, Value> {
    let Value::Object(container) = json!({
        "name": "test",
        "image": "busybox",
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePolicy": "File",
    }) else {
        unreachable!("a JSON object literal")
    };
    container
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::testing::{c, containers, with};

    fn check(init: Value, main: Value, volumes: Value) -> Vec<String> {
        let volumes: Vec<Value> = serde_json::from_value(volumes).unwrap();
        validate_fake_pod(&containers(init), &containers(main), &volumes)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_valid_pod_and_the_placeholder_container_give_no_errors() {
        assert!(check(json!([]), json!([]), json!([])).is_empty());
        assert!(
            check(
                json!([with(c("init"), json!({"restartPolicy": "Always", "livenessProbe": {"exec": {"command": ["x"]}, "successThreshold": 1}}))]),
                json!([with(c("main"), json!({"volumeMounts": [{"name": "v", "mountPath": "/v"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}}}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1024Mi"}}}))]),
                json!([{"name": "v", "emptyDir": {}}])
            )
            .is_empty()
        );
    }
}
