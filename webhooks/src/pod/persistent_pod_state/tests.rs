//! Step 6 on pods and PersistentPodStates loaded as files (spec/pod-mutating-misc.md §7, §12 scenarios
//! 12-17): the patch is applied to the pod as received and the result compared whole.

use super::*;
use crate::fixture::FixtureCluster;
use serde_json::json;

const KRUISE_NS: &str = "kruise-system";

/// Scenario 12's PersistentPodState, with `extra` merged into its spec.
fn pps(name: &str, target: Value, spec: Value, states: Value) -> Value {
    let mut spec_all = json!({"targetRef": target});
    for (k, v) in spec.as_object().unwrap() {
        spec_all[k] = v.clone();
    }
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
           "metadata": {"name": name, "namespace": "ns-test"},
           "spec": spec_all, "status": {"observedGeneration": 1, "podStates": states}})
}

fn sts_target(name: &str) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": name})
}

fn topology() -> Value {
    json!({"requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]},
           "preferredPersistentTopology": [{"weight": 10, "preference": {"keys": ["kubernetes.io/hostname"]}}]})
}

fn recorded() -> Value {
    json!({"test-pod": {"nodeName": "kube-resource011162007216",
        "nodeTopologyLabels": {"topology.kubernetes.io/zone": "cn-beijing-a",
                               "kubernetes.io/hostname": "kube-resource011162007216"}}})
}

fn cluster(objects: &[Value]) -> FixtureCluster {
    let mut c = FixtureCluster::default();
    for o in objects {
        c.insert(o.clone()).unwrap();
    }
    c
}

fn owner(api_version: &str, kind: &str, name: &str) -> Value {
    json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": "u-1", "controller": true}])
}

/// Scenario 12's pod: an existing required term and an existing preferred term.
fn pod(owners: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "test-pod", "namespace": "ns-test", "ownerReferences": owners,
                        "annotations": {"keep": "me"}},
           "spec": {"containers": [{"name": "main", "image": "nginx"}],
                    "affinity": {"nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "node/gpu", "operator": "Exists"}]}]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 5, "preference": {"matchExpressions": [{"key": "test-key", "operator": "Exists"}]}}]}},
                    "x-unknown": {"kept": true}}})
}

/// Runs the step on `pod`; the pod as patched, `None` when the patch is empty.
fn run(
    pod: &Value,
    view: &FixtureCluster,
    whitelist: Option<&WhitelistSource>,
) -> Result<Option<Value>, WebhookError> {
    let text = pod.to_string();
    let mut doc = RawPod::parse_str(&text).unwrap();
    mutate(
        &mut doc,
        "ns-test",
        Operation::Create,
        view,
        whitelist,
        KRUISE_NS,
    )?;
    let patch = doc.into_patch();
    Ok((!patch.is_empty()).then(|| crate::json::patch::apply(pod, &patch).unwrap()))
}

#[test]
fn required_keys_become_the_node_selector_and_preferred_keys_a_term_after_the_existing_ones() {
    // Scenario 12.
    let view = cluster(&[pps(
        "test-kruise-sts",
        sts_target("test-kruise-sts"),
        topology(),
        recorded(),
    )]);
    let owners = owner("apps.kruise.io/v1beta1", "StatefulSet", "test-kruise-sts");
    let out = run(&pod(owners.clone()), &view, None).unwrap().unwrap();
    let mut want = pod(owners);
    want["metadata"]["annotations"] =
        json!({"keep": "me", "kruise.io/injected-persistent-pod-state": "test-kruise-sts"});
    want["spec"]["nodeSelector"] = json!({"topology.kubernetes.io/zone": "cn-beijing-a"});
    want["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = json!([
        {"weight": 5, "preference": {"matchExpressions": [{"key": "test-key", "operator": "Exists"}]}},
        {"weight": 10, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["kube-resource011162007216"]}]}}
    ]);
    assert_eq!(out, want);
}

#[test]
fn a_pod_without_affinity_or_selector_gets_both_created_and_existing_selector_keys_are_overwritten()
{
    let view = cluster(&[pps(
        "web",
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"}),
        topology(),
        recorded(),
    )]);
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "test-pod", "namespace": "ns-test",
                     "ownerReferences": owner("apps/v1", "StatefulSet", "web")},
        "spec": {"containers": [{"name": "main"}]}});
    let out = run(&p, &view, None).unwrap().unwrap();
    assert_eq!(
        out["spec"]["affinity"],
        json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["kube-resource011162007216"]}]}}]}})
    );
    assert_eq!(
        out["spec"]["nodeSelector"],
        json!({"topology.kubernetes.io/zone": "cn-beijing-a"})
    );
    p["spec"]["nodeSelector"] = json!({"topology.kubernetes.io/zone": "old", "disk": "ssd"});
    p["spec"]["affinity"] = Value::Null;
    let out = run(&p, &view, None).unwrap().unwrap();
    assert_eq!(
        out["spec"]["nodeSelector"],
        json!({"topology.kubernetes.io/zone": "cn-beijing-a", "disk": "ssd"})
    );
    assert_eq!(
        out["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn nothing_changes_without_a_matching_state() {
    let view = cluster(&[pps(
        "test-kruise-sts",
        sts_target("test-kruise-sts"),
        topology(),
        recorded(),
    )]);
    // Scenario 13: the owner's name differs.
    let other = owner("apps.kruise.io/v1beta1", "StatefulSet", "no-found");
    assert_eq!(run(&pod(other), &view, None).unwrap(), None);
    // The group is compared, not the version; the kind is.
    let alpha = owner("apps.kruise.io/v1alpha1", "StatefulSet", "test-kruise-sts");
    assert!(run(&pod(alpha), &view, None).unwrap().is_some());
    let apps = owner("apps/v1", "StatefulSet", "test-kruise-sts");
    assert_eq!(run(&pod(apps), &view, None).unwrap(), None);
    // Scenario 14: no state recorded for this pod, or no topology in it.
    for states in [
        json!({"other-pod": recorded()["test-pod"]}),
        json!({"test-pod": {"nodeName": "n1"}}),
        json!({}),
    ] {
        let view = cluster(&[pps(
            "test-kruise-sts",
            sts_target("test-kruise-sts"),
            topology(),
            states,
        )]);
        let owners = owner("apps.kruise.io/v1beta1", "StatefulSet", "test-kruise-sts");
        assert_eq!(run(&pod(owners), &view, None).unwrap(), None);
    }
    // No controller at all.
    let mut orphan = pod(json!([]));
    orphan["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    assert_eq!(run(&orphan, &view, None).unwrap(), None);
}

#[test]
fn a_persistent_pod_state_being_deleted_is_passed_over_for_the_next_by_name() {
    let mut deleting = pps(
        "a-deleting",
        sts_target("test-kruise-sts"),
        json!({"requiredPersistentTopology": {"keys": ["kubernetes.io/hostname"]}}),
        recorded(),
    );
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let live = pps(
        "b-live",
        sts_target("test-kruise-sts"),
        topology(),
        recorded(),
    );
    let view = cluster(&[deleting, live]);
    let owners = owner("apps.kruise.io/v1beta1", "StatefulSet", "test-kruise-sts");
    let out = run(&pod(owners), &view, None).unwrap().unwrap();
    assert_eq!(
        out["metadata"]["annotations"]["kruise.io/injected-persistent-pod-state"],
        "b-live"
    );
}

#[test]
fn a_non_statefulset_owner_needs_the_whitelist() {
    // Scenarios 15 and 16.
    let rs = owner("apps/v1", "ReplicaSet", "web-7d9");
    let gss = owner("example.io/v1", "GameServerSet", "gs");
    let view = cluster(&[
        pps(
            "rs",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9"}),
            topology(),
            recorded(),
        ),
        pps(
            "gs",
            json!({"apiVersion": "example.io/v1alpha1", "kind": "GameServerSet", "name": "gs"}),
            topology(),
            recorded(),
        ),
    ]);
    let listed = WhitelistSource::Present(
        r#"{"workloads":[{"Group":"example.io","Kind":"GameServerSet"}]}"#.into(),
    );
    assert_eq!(run(&pod(rs.clone()), &view, None).unwrap(), None);
    assert_eq!(
        run(&pod(rs), &view, Some(&WhitelistSource::Missing)).unwrap(),
        None
    );
    assert_eq!(run(&pod(gss.clone()), &view, None).unwrap(), None);
    let out = run(&pod(gss.clone()), &view, Some(&listed))
        .unwrap()
        .unwrap();
    assert_eq!(
        out["metadata"]["annotations"]["kruise.io/injected-persistent-pod-state"],
        "gs"
    );
    // Field names in any case, as Go reads them.
    let lower = WhitelistSource::Present(
        r#"{"workloads":[{"group":"example.io","kind":"GameServerSet"}]}"#.into(),
    );
    assert!(run(&pod(gss), &view, Some(&lower)).unwrap().is_some());
}

#[test]
fn an_unreadable_or_invalid_whitelist_fails_the_pod_create() {
    // §7.1.
    let view = cluster(&[]);
    let sts = owner("apps/v1", "StatefulSet", "web");
    let err = run(
        &pod(sts.clone()),
        &view,
        Some(&WhitelistSource::Present("{".into())),
    )
    .unwrap_err();
    assert_eq!(err.http_code(), 500);
    assert!(
        err.to_string().starts_with(
            "invalid PPS_Watch_Custom_Workload_WhiteList in ConfigMap kruise-system/kruise-configuration: "
        ),
        "{err}"
    );
    let err = run(
        &pod(sts),
        &view,
        Some(&WhitelistSource::ReadError("forbidden".into())),
    )
    .unwrap_err();
    assert_eq!(err.http_code(), 500);
    assert_eq!(
        err.to_string(),
        "reading ConfigMap kruise-system/kruise-configuration: forbidden"
    );
}

#[test]
fn a_preferred_term_whose_keys_were_not_recorded_is_added_without_expressions() {
    // Scenario 17.
    let view = cluster(&[pps(
        "web",
        sts_target("web"),
        json!({"requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]},
               "preferredPersistentTopology": [{"weight": 7, "preference": {"keys": ["rack"]}}]}),
        recorded(),
    )]);
    let mut p = pod(owner("apps.kruise.io/v1beta1", "StatefulSet", "web"));
    p["spec"].as_object_mut().unwrap().remove("affinity");
    let out = run(&p, &view, None).unwrap().unwrap();
    assert_eq!(
        out["spec"]["affinity"],
        json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 7, "preference": {}}]}})
    );
    assert_eq!(
        out["spec"]["nodeSelector"],
        json!({"topology.kubernetes.io/zone": "cn-beijing-a"})
    );
}

#[test]
fn nothing_is_written_when_no_key_was_recorded_and_no_preferred_term_exists() {
    // §7.2 step 5: a required key that was not recorded and no preferred term.
    let view = cluster(&[pps(
        "web",
        sts_target("web"),
        json!({"requiredPersistentTopology": {"keys": ["rack"]}}),
        recorded(),
    )]);
    let p = pod(owner("apps.kruise.io/v1beta1", "StatefulSet", "web"));
    assert_eq!(run(&p, &view, None).unwrap(), None);
}

#[test]
fn update_is_left_alone_and_a_list_error_skips() {
    struct Failing;
    impl PersistentPodStateView for Failing {
        fn persistent_pod_states_in(
            &self,
            _: &str,
        ) -> Result<Vec<std::sync::Arc<PersistentPodState>>, String> {
            Err("boom".into())
        }
    }
    let p = pod(owner(
        "apps.kruise.io/v1beta1",
        "StatefulSet",
        "test-kruise-sts",
    ));
    let text = p.to_string();
    let mut doc = RawPod::parse_str(&text).unwrap();
    mutate(
        &mut doc,
        "ns-test",
        Operation::Create,
        &Failing,
        None,
        KRUISE_NS,
    )
    .unwrap();
    assert!(doc.into_patch().is_empty());
    let view = cluster(&[pps(
        "test-kruise-sts",
        sts_target("test-kruise-sts"),
        topology(),
        recorded(),
    )]);
    let mut doc = RawPod::parse_str(&text).unwrap();
    mutate(
        &mut doc,
        "ns-test",
        Operation::Update,
        &view,
        None,
        KRUISE_NS,
    )
    .unwrap();
    assert!(doc.into_patch().is_empty());
}

#[test]
fn malformed_members_it_writes_are_decode_errors() {
    let view = cluster(&[pps(
        "test-kruise-sts",
        sts_target("test-kruise-sts"),
        topology(),
        recorded(),
    )]);
    let owners = owner("apps.kruise.io/v1beta1", "StatefulSet", "test-kruise-sts");
    for (member, value) in [
        ("nodeSelector", json!("zone=a")),
        ("affinity", json!([])),
        ("affinity", json!({"nodeAffinity": 3})),
        (
            "affinity",
            json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": {}}}),
        ),
    ] {
        let mut p = pod(owners.clone());
        p["spec"][member] = value;
        let err = run(&p, &view, None).unwrap_err();
        assert_eq!(err.http_code(), 400, "{member}: {err}");
    }
}

fn request(pod: &Value, namespace: &str) -> AdmissionRequest {
    let review = json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "namespace": namespace,
        "operation": "CREATE", "object": pod});
    serde_json::from_str(&review.to_string()).unwrap()
}

#[test]
fn the_whitelist_is_needed_only_for_a_targeted_controller_that_is_not_a_statefulset() {
    let view = cluster(&[
        pps("sts", sts_target("test-kruise-sts"), topology(), recorded()),
        pps(
            "gs",
            json!({"apiVersion": "example.io/v1", "kind": "GameServerSet", "name": "gs"}),
            topology(),
            recorded(),
        ),
    ]);
    let gss = pod(owner("example.io/v1", "GameServerSet", "gs"));
    assert!(needs_whitelist(&request(&gss, "ns-test"), &view));
    // Another namespace, another name, a StatefulSet, no controller.
    assert!(!needs_whitelist(&request(&gss, "other"), &view));
    let other = pod(owner("example.io/v1", "GameServerSet", "gs-2"));
    assert!(!needs_whitelist(&request(&other, "ns-test"), &view));
    let sts = pod(owner(
        "apps.kruise.io/v1beta1",
        "StatefulSet",
        "test-kruise-sts",
    ));
    assert!(!needs_whitelist(&request(&sts, "ns-test"), &view));
    assert!(!needs_whitelist(
        &request(&pod(json!([])), "ns-test"),
        &view
    ));
    // Not a pod CREATE.
    let mut update = request(&gss, "ns-test");
    update.operation = Operation::Update;
    assert!(!needs_whitelist(&update, &view));
    let mut status = request(&gss, "ns-test");
    status.sub_resource = "status".into();
    assert!(!needs_whitelist(&status, &view));
}
