//! Step 7 of the pod chain, gate `EnhancedLivenessProbe` (spec/pod-mutating-misc.md §8): a pod of a Kruise
//! workload that opts in (`apps.kruise.io/using-enhanced-liveness: "true"`) hands its containers' liveness
//! probes to kruise-daemon. Each container's `livenessProbe` (sidecars injected by step 3 included; init
//! containers not) is removed from the pod and kept in the annotation `apps.kruise.io/container-probe-context`
//! as Go marshals `[{name, livenessProbe}]` ([`Probe`]: Go's field order and omitempty).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::owner;
use crate::WebhookError;
use crate::admission::Operation;
use crate::api::probe::Probe;
use crate::json::patch::Json;
use crate::json::rawpod::{Item, RawPod};

/// Pod annotation that opts the pod in, with the value `"true"`.
pub const USING_ANNOTATION: &str = "apps.kruise.io/using-enhanced-liveness";
/// Pod annotation the containers' liveness probes are moved to.
pub const CONTEXT_ANNOTATION: &str = "apps.kruise.io/container-probe-context";

/// One entry of the context annotation (Go's `containerLivenessProbe`: both fields always written).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerLivenessProbe {
    name: String,
    liveness_probe: Probe,
}

/// The container `value` without its liveness probe, and that probe decoded; `None` when it has none
/// (absent or `null`).
///
/// # Errors
/// A decode error (400, as decoding the pod would have failed) when the probe is not a Probe.
fn take_probe(
    mut value: Value,
    index: usize,
) -> Result<Option<(Value, ContainerLivenessProbe)>, WebhookError> {
    let Some(container) = value.as_object_mut() else {
        return Ok(None);
    };
    let probe = match container.remove("livenessProbe") {
        None | Some(Value::Null) => return Ok(None),
        Some(probe) => probe,
    };
    let liveness_probe = Probe::deserialize(probe).map_err(|e| {
        WebhookError::Decode(format!("spec.containers[{index}].livenessProbe: {e}"))
    })?;
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Ok(Some((
        value,
        ContainerLivenessProbe {
            name,
            liveness_probe,
        },
    )))
}

/// Step 7 on a pod CREATE; the caller checks the gate.
///
/// # Errors
/// A decode error (400) when a container's liveness probe is not a Probe.
pub fn mutate(doc: &mut RawPod<'_>, operation: Operation) -> Result<(), WebhookError> {
    if operation != Operation::Create
        || !owner::owned_by_kruise(doc)
        || doc.annotation(USING_ANNOTATION) != Some("true")
    {
        return Ok(());
    }
    let items = doc.containers.items();
    let mut probes = Vec::new();
    let mut edited = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        // Containers as received without a probe are kept as they came, unparsed.
        if let Item::Original(at) = item
            && doc
                .containers
                .element(at)
                .is_none_or(|c| c.get("livenessProbe").is_none_or(Value::is_null))
        {
            edited.push(item);
            continue;
        }
        match take_probe(doc.containers.value_of(&item), index)? {
            None => edited.push(item),
            Some((container, probe)) => {
                probes.push(probe);
                edited.push(match item {
                    Item::Original(at) | Item::Edited(at, _) => {
                        Item::Edited(at, Json::Value(container))
                    }
                    Item::New(_) => Item::New(Json::Value(container)),
                });
            }
        }
    }
    if probes.is_empty() {
        return Ok(());
    }
    doc.containers.set(edited);
    doc.set_annotation(CONTEXT_ANNOTATION, crate::json::go::to_string(&probes));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KRUISE_OWNER: &str = r#"[{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","name":"cs","uid":"u","controller":true}]"#;

    fn pod(owners: &str, annotations: Value, containers: Value) -> String {
        format!(
            r#"{{"metadata":{{"name":"p","namespace":"ns","ownerReferences":{owners},"annotations":{annotations}}},"spec":{{"containers":{containers},"initContainers":[{{"name":"init","livenessProbe":{{"exec":{{"command":["x"]}}}}}}]}}}}"#
        )
    }

    fn opted_in() -> Value {
        json!({USING_ANNOTATION: "true"})
    }

    fn run(text: &str) -> Result<Value, WebhookError> {
        let mut doc = RawPod::parse_str(text).unwrap();
        mutate(&mut doc, Operation::Create)?;
        let before: Value = serde_json::from_str(text).unwrap();
        Ok(crate::json::patch::apply(&before, &doc.into_patch()).unwrap())
    }

    #[test]
    fn probes_move_into_the_annotation_in_container_order_as_go_writes_them() {
        // spec/pod-mutating-misc.md §12 scenario 18.
        let containers = json!([
            {"name": "c1", "image": "a", "x-unknown": 1,
             "livenessProbe": {"httpGet": {"path": "/health", "port": 7001, "scheme": "HTTP"},
                               "initialDelaySeconds": 3000, "timeoutSeconds": 5, "periodSeconds": 100,
                               "successThreshold": 1, "failureThreshold": 3}},
            {"name": "plain", "image": "b"},
            {"name": "c2", "image": "c", "livenessProbe": {"exec": {"command": ["cat", "/ok"]}}}
        ]);
        let out = run(&pod(KRUISE_OWNER, opted_in(), containers)).unwrap();
        assert_eq!(
            out["metadata"]["annotations"][CONTEXT_ANNOTATION],
            concat!(
                r#"[{"name":"c1","livenessProbe":{"httpGet":{"path":"/health","port":7001,"scheme":"HTTP"},"initialDelaySeconds":3000,"timeoutSeconds":5,"periodSeconds":100,"successThreshold":1,"failureThreshold":3}},"#,
                r#"{"name":"c2","livenessProbe":{"exec":{"command":["cat","/ok"]}}}]"#
            )
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c1", "image": "a", "x-unknown": 1}, {"name": "plain", "image": "b"},
                   {"name": "c2", "image": "c"}])
        );
        assert!(
            out["spec"]["initContainers"][0]
                .get("livenessProbe")
                .is_some(),
            "init containers keep theirs"
        );
    }

    #[test]
    fn an_existing_context_is_overwritten() {
        let annotations = json!({USING_ANNOTATION: "true", CONTEXT_ANNOTATION: "old"});
        let containers = json!([{"name": "c", "livenessProbe": {"tcpSocket": {"port": 80}}}]);
        let out = run(&pod(KRUISE_OWNER, annotations, containers)).unwrap();
        assert_eq!(
            out["metadata"]["annotations"][CONTEXT_ANNOTATION],
            r#"[{"name":"c","livenessProbe":{"tcpSocket":{"port":80}}}]"#
        );
    }

    #[test]
    fn nothing_changes_unless_a_kruise_pod_opts_in_and_has_a_probe() {
        let containers = json!([{"name": "c", "livenessProbe": {"tcpSocket": {"port": 80}}}]);
        let rs_owner =
            r#"[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","controller":true}]"#;
        for text in [
            // Scenario 19: not opted in, a value other than "true", not owned by Kruise.
            pod(KRUISE_OWNER, json!({}), containers.clone()),
            pod(
                KRUISE_OWNER,
                json!({USING_ANNOTATION: "True"}),
                containers.clone(),
            ),
            pod(rs_owner, opted_in(), containers.clone()),
            // No container has a probe (a null one is none).
            pod(
                KRUISE_OWNER,
                opted_in(),
                json!([{"name": "c", "livenessProbe": null}]),
            ),
        ] {
            let mut doc = RawPod::parse_str(&text).unwrap();
            mutate(&mut doc, Operation::Create).unwrap();
            assert!(doc.into_patch().is_empty(), "{text}");
        }
        let text = pod(KRUISE_OWNER, opted_in(), containers);
        let mut doc = RawPod::parse_str(&text).unwrap();
        mutate(&mut doc, Operation::Update).unwrap();
        assert!(doc.into_patch().is_empty(), "UPDATE is left alone");
    }

    #[test]
    fn a_probe_that_is_not_a_probe_is_a_decode_error() {
        let containers = json!([{"name": "c", "livenessProbe": {"periodSeconds": "10"}}]);
        let err = run(&pod(KRUISE_OWNER, opted_in(), containers)).unwrap_err();
        assert_eq!(err.http_code(), 400);
        assert!(
            err.to_string()
                .starts_with("spec.containers[0].livenessProbe: "),
            "{err}"
        );
    }
}
