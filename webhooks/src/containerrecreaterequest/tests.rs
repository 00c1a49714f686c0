//! Expected values are written by hand from docs/containerrecreaterequest-webhook.md. The fixture cases
//! (tests/fixtures/containerrecreaterequest/) run the scenarios through the Router; these check what is
//! easier to see here: the patch applied to the raw object, the Job sidecar terminator's CRRs, hostile input.

use super::*;
use crate::api::pod::SlimPod;
use crate::fixture::FixtureCluster;
use crate::sidecar_terminator::{KillSet, container_recreate_request};
use serde_json::json;

const UID: &str = "9d4c2f1e-0000-4000-8000-00000000c0de";

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "uid": UID},
        "spec": {"nodeName": "node-a", "terminationGracePeriodSeconds": 30, "containers": [
            {"name": "app", "image": "app:1"},
            {"name": "proxy", "image": "proxy:1",
             "ports": [{"name": "admin", "containerPort": 15000, "protocol": "TCP"}],
             "lifecycle": {"preStop": {"exec": {"command": ["/bin/drain"]}}}}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "app", "image": "app:1", "imageID": "", "containerID": "containerd://aaa", "restartCount": 0},
            {"name": "proxy", "image": "proxy:1", "imageID": "", "containerID": "containerd://bbb", "restartCount": 2}]}
    })
}

fn cluster(pods: &[Value]) -> FixtureCluster {
    let mut cluster = FixtureCluster::default();
    for pod in pods {
        cluster.insert(pod.clone()).unwrap();
    }
    cluster
}

fn crr(spec: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
        "metadata": {"name": "restart-app", "namespace": "default"},
        "spec": spec
    })
}

fn request(
    operation: &str,
    version: &str,
    object: &Value,
    old: Option<&Value>,
) -> AdmissionRequest {
    serde_json::from_value(json!({
        "uid": "u", "operation": operation, "name": "restart-app", "namespace": "default",
        "kind": {"group": "apps.kruise.io", "version": version, "kind": "ContainerRecreateRequest"},
        "resource": {"group": "apps.kruise.io", "version": version, "resource": "containerrecreaterequests"},
        "userInfo": {}, "object": object, "oldObject": old
    }))
    .unwrap()
}

fn create_with(
    object: &Value,
    pods: &[Value],
    gates: &FeatureGates,
) -> Result<Verdict, WebhookError> {
    mutate(
        &request("CREATE", "v1beta1", object, None),
        &cluster(pods),
        gates,
    )
}

/// The object the verdict's patch makes of `object`.
fn patched(object: &Value, verdict: &Verdict) -> Value {
    patch::apply(object, &verdict.patch).unwrap()
}

fn denial(verdict: &Verdict) -> (u16, &str) {
    let d = verdict.denial().expect("a denial");
    (d.code, d.message.as_str())
}

#[test]
fn a_create_gets_the_labels_defaults_and_status_context() {
    let object = crr(
        json!({"podName": "web-0", "containers": [{"name": "app"}, {"name": "proxy"}],
        "x-unknown": {"kept": true}}),
    );
    let verdict = create_with(&object, &[pod()], &FeatureGates::default()).unwrap();
    assert!(verdict.is_allowed());
    assert_eq!(
        patched(&object, &verdict),
        json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "restart-app", "namespace": "default", "labels": {
                "crr.apps.kruise.io/active": "true", "crr.apps.kruise.io/node-name": "node-a",
                "crr.apps.kruise.io/pod-uid": UID}},
            "spec": {"podName": "web-0", "x-unknown": {"kept": true},
                "strategy": {"failurePolicy": "Fail", "terminationGracePeriodSeconds": 30},
                "containers": [
                    {"name": "app", "statusContext": {"containerID": "containerd://aaa", "restartCount": 0}},
                    {"name": "proxy", "preStop": {"exec": {"command": ["/bin/drain"]}},
                     "statusContext": {"containerID": "containerd://bbb", "restartCount": 2}}]}
        })
    );
}

#[test]
fn a_create_already_labelled_and_defaulted_gets_only_the_status_context() {
    let object = crr(json!({"podName": "web-0", "containers": [{"name": "app"}]}));
    let verdict = create_with(&object, &[pod()], &FeatureGates::default()).unwrap();
    let done = patched(&object, &verdict);
    // The same CRR, already filled, except for the read-only fields rule 16 refuses: only labels and strategy.
    let mut again = done.clone();
    again["spec"]["containers"] = json!([{"name": "app"}]);
    let verdict = create_with(&again, &[pod()], &FeatureGates::default()).unwrap();
    assert_eq!(
        patched(&again, &verdict),
        done,
        "only the status context is added"
    );
    assert_eq!(verdict.patch.len(), 1, "{:?}", verdict.patch);
}

#[test]
fn the_patch_is_valid_for_a_v1alpha1_request() {
    let mut object = crr(json!({"podName": "web-0", "containers": [{"name": "app"}]}));
    object["apiVersion"] = json!("apps.kruise.io/v1alpha1");
    let req = request("CREATE", "v1alpha1", &object, None);
    let verdict = mutate(&req, &cluster(&[pod()]), &FeatureGates::default()).unwrap();
    let result = patched(&object, &verdict);
    assert_eq!(result["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(
        result["metadata"]["labels"]["crr.apps.kruise.io/node-name"],
        "node-a"
    );
}

#[test]
fn ports_are_copied_beside_an_http_get_pre_stop() {
    let mut pod = pod();
    pod["spec"]["containers"][1]["lifecycle"] =
        json!({"preStop": {"httpGet": {"path": "/drain", "port": "admin"}}});
    let object = crr(json!({"podName": "web-0", "containers": [{"name": "proxy"}]}));
    let verdict = create_with(&object, &[pod], &FeatureGates::default()).unwrap();
    assert_eq!(
        patched(&object, &verdict)["spec"]["containers"][0],
        json!({"name": "proxy", "preStop": {"httpGet": {"path": "/drain", "port": "admin"}},
            "ports": [{"name": "admin", "containerPort": 15000, "protocol": "TCP"}],
            "statusContext": {"containerID": "containerd://bbb", "restartCount": 2}})
    );
}

#[test]
fn checks_come_in_openkruises_order() {
    let gates = FeatureGates::default();
    // Both the deadline and the pod are wrong: the CRR's own fields are checked first.
    let object = crr(
        json!({"podName": "web-9", "containers": [{"name": "app"}], "activeDeadlineSeconds": 1}),
    );
    let verdict = create_with(&object, &[pod()], &gates).unwrap();
    assert_eq!(
        denial(&verdict),
        (422, "activeDeadlineSeconds can not be less than 3s")
    );
    // A duplicate after an unknown container: the unknown one answers.
    let object = crr(json!({"podName": "web-0", "containers": [{"name": "db"}, {"name": "db"}]}));
    let verdict = create_with(&object, &[pod()], &gates).unwrap();
    assert_eq!(denial(&verdict), (403, "container db not found in Pod"));
    // A read-only field on the second entry of a duplicate: the duplicate answers.
    let object = crr(
        json!({"podName": "web-0", "containers": [{"name": "app"}, {"name": "app", "ports": []}]}),
    );
    let verdict = create_with(&object, &[pod()], &gates).unwrap();
    assert_eq!(denial(&verdict), (422, "can not recreate app multi times"));
}

#[test]
fn the_gate_off_refuses_every_request() {
    let gates = FeatureGates::parse("KruiseDaemon=false").unwrap();
    let object = crr(json!({"podName": "web-0", "containers": [{"name": "app"}]}));
    for req in [
        request("CREATE", "v1beta1", &object, None),
        request("UPDATE", "v1alpha1", &object, Some(&object)),
    ] {
        let verdict = mutate(&req, &cluster(&[pod()]), &gates).unwrap();
        assert_eq!(denial(&verdict), (403, GATE_OFF_MESSAGE));
    }
}

#[test]
fn an_update_may_change_labels_but_not_the_spec() {
    let gates = FeatureGates::default();
    let old = crr(json!({"podName": "web-0", "containers": [{"name": "app",
        "statusContext": {"containerID": "containerd://aaa", "restartCount": 0}}],
        "strategy": {"failurePolicy": "Fail"}}));
    let update = |new: &Value, version: &str| {
        mutate(
            &request("UPDATE", version, new, Some(&old)),
            &EmptyCluster,
            &gates,
        )
        .unwrap()
    };
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"app": "web"});
    let verdict = update(&relabelled, "v1beta1");
    assert!(verdict.is_allowed() && verdict.patch.is_empty());
    let mut zero = old.clone();
    zero["spec"]["strategy"]["forceRecreate"] = json!(false);
    assert!(update(&zero, "v1beta1").is_allowed(), "a Go zero value");
    let mut deadline = old.clone();
    deadline["spec"]["activeDeadlineSeconds"] = json!(0);
    assert_eq!(
        denial(&update(&deadline, "v1beta1")),
        (422, "spec of ContainerRecreateRequest is immutable")
    );
}

#[test]
fn unready_acquired_is_immutable_in_v1alpha1_only() {
    let gates = FeatureGates::default();
    let annotated = |time: Option<&str>| {
        let mut obj = crr(json!({"podName": "web-0", "containers": [{"name": "app"}]}));
        if let Some(time) = time {
            obj["metadata"]["annotations"] = json!({UNREADY_ACQUIRED_ANNOTATION: time});
        }
        obj
    };
    let old = annotated(Some("2026-03-01T10:00:00Z"));
    let new = annotated(Some("2026-03-01T11:00:00Z"));
    let alpha = mutate(
        &request("UPDATE", "v1alpha1", &new, Some(&old)),
        &EmptyCluster,
        &gates,
    )
    .unwrap();
    assert_eq!(
        denial(&alpha),
        (
            422,
            "not allowed to update immutable annotation crr.apps.kruise.io/unready-acquired"
        )
    );
    let beta = mutate(
        &request("UPDATE", "v1beta1", &new, Some(&old)),
        &EmptyCluster,
        &gates,
    )
    .unwrap();
    assert!(beta.is_allowed());
    let first = mutate(
        &request("UPDATE", "v1alpha1", &new, Some(&annotated(None))),
        &EmptyCluster,
        &gates,
    )
    .unwrap();
    assert!(first.is_allowed(), "set where there was none");
}

/// A view with no pods.
struct EmptyCluster;

impl ClusterView for EmptyCluster {
    fn namespace(&self, _: &str) -> Option<std::sync::Arc<k8s_openapi::api::core::v1::Namespace>> {
        None
    }
    fn pods_in(&self, _: &str) -> Vec<std::sync::Arc<SlimPod>> {
        Vec::new()
    }
    fn persistent_volume_claims_in(
        &self,
        _: &str,
    ) -> Vec<std::sync::Arc<k8s_openapi::api::core::v1::PersistentVolumeClaim>> {
        Vec::new()
    }
}

/// The Job pod of the terminator: `main` done, `sidecar` (with a preStop hook) still running.
fn job_pod(phase: &str, conditions: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pi-7xk2p", "namespace": "jobs", "uid": UID},
        "spec": {"nodeName": "node-1", "restartPolicy": "Never", "terminationGracePeriodSeconds": 30,
            "containers": [
                {"name": "main", "image": "pi:1"},
                {"name": "sidecar", "image": "envoy:1",
                 "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}],
                 "lifecycle": {"preStop": {"exec": {"command": ["curl", "-XPOST", "localhost:15000/quit"]}}}}]},
        "status": {"phase": phase, "conditions": conditions, "containerStatuses": [
            {"name": "main", "image": "pi:1", "imageID": "", "containerID": "containerd://m1",
             "state": {"terminated": {"exitCode": 0}}},
            {"name": "sidecar", "image": "envoy:1", "imageID": "", "containerID": "containerd://s1",
             "restartCount": 1, "state": {"running": {"startedAt": "2026-03-01T09:00:00Z"}}}]}
    })
}

#[test]
fn the_sidecar_terminators_crrs_pass_with_what_openkruise_adds() {
    let terminated = json!([{"type": "SidecarTerminated", "status": "True"}]);
    for (pod, set) in [
        (job_pod("Running", json!([])), KillSet::Normal),
        (job_pod("Succeeded", terminated), KillSet::IgnoreExitCode),
    ] {
        let slim: SlimPod = serde_json::from_value(pod.clone()).unwrap();
        let crr = container_recreate_request(&slim, set, &["sidecar".to_owned()]).unwrap();
        let object = serde_json::to_value(&crr).unwrap();
        let req: AdmissionRequest = serde_json::from_value(json!({
            "uid": "u", "operation": "CREATE", "name": crr.metadata.name, "namespace": "jobs",
            "kind": {"group": "apps.kruise.io", "version": "v1beta1", "kind": "ContainerRecreateRequest"},
            "resource": {"group": "apps.kruise.io", "version": "v1beta1", "resource": "containerrecreaterequests"},
            "userInfo": {}, "object": object
        }))
        .unwrap();
        let verdict = mutate(&req, &cluster(&[pod]), &FeatureGates::default()).unwrap();
        assert!(verdict.is_allowed(), "{:?}", verdict.denial());
        let mut want = object.clone();
        want["spec"]["strategy"]["terminationGracePeriodSeconds"] = json!(30);
        want["spec"]["containers"][0]["preStop"] =
            json!({"exec": {"command": ["curl", "-XPOST", "localhost:15000/quit"]}});
        want["spec"]["containers"][0]["statusContext"] =
            json!({"containerID": "containerd://s1", "restartCount": 1});
        assert_eq!(patched(&object, &verdict), want, "labels untouched");
        assert!(
            verdict
                .patch
                .iter()
                .all(|op| op.path().starts_with("/spec/")),
            "{:?}",
            verdict.patch
        );
    }
}

#[test]
fn hostile_objects_are_refused_without_panicking() {
    let gates = FeatureGates::default();
    for object in [
        json!(null),
        json!([]),
        json!("x"),
        json!({"metadata": null, "spec": null}),
        json!({"metadata": {"labels": []}, "spec": {"podName": "web-0", "containers": [{"name": "app"}]}}),
        json!({"spec": {"podName": "web-0", "containers": [null]}}),
        json!({"spec": {"podName": "web-0", "containers": [{"name": "app"}], "strategy": []}}),
        json!({"metadata": [], "spec": {"podName": "web-0", "containers": [{"name": "app"}]}}),
        json!({"spec": {"podName": "web-0", "containers": [["app"]]}}),
        json!({"spec": {"podName": "web-0", "containers": [{"name": "app", "preStop": {"httpGet": {"port": 1.5}}}]}}),
        json!({"spec": {"podName": "web-0", "containers": [{"name": "app"}], "activeDeadlineSeconds": 1e40}}),
    ] {
        for op in ["CREATE", "UPDATE"] {
            let req = request(op, "v1beta1", &object, Some(&object));
            match mutate(&req, &cluster(&[pod()]), &gates) {
                Ok(verdict) => assert!(
                    !verdict.is_allowed() || verdict.patch.is_empty() || op == "CREATE",
                    "{object}"
                ),
                Err(e) => assert_eq!(e.http_code(), 400, "{object}: {e}"),
            }
        }
    }
    let req = request("CREATE", "v1", &crr(json!({})), None);
    assert_eq!(
        mutate(&req, &cluster(&[]), &gates).unwrap_err().http_code(),
        400
    );
}

#[test]
fn labels_null_and_strategy_null_become_objects() {
    let mut object =
        crr(json!({"podName": "web-0", "containers": [{"name": "app"}], "strategy": null}));
    object["metadata"]["labels"] = json!(null);
    let verdict = create_with(&object, &[pod()], &FeatureGates::default()).unwrap();
    let result = patched(&object, &verdict);
    assert_eq!(
        result["metadata"]["labels"]["crr.apps.kruise.io/active"],
        "true"
    );
    assert_eq!(result["spec"]["strategy"]["failurePolicy"], "Fail");
}
