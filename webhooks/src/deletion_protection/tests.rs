use super::*;
use crate::fixture::FixtureCluster;
use crate::view::EmptyView;
use serde_json::json;

fn request(kind: (&str, &str, &str), resource: &str, old: Value) -> AdmissionRequest {
    serde_json::from_str(&json!({
        "uid": "u", "operation": "DELETE", "name": old["metadata"]["name"], "namespace": old["metadata"]["namespace"],
        "kind": {"group": kind.0, "version": kind.1, "kind": kind.2},
        "resource": {"group": kind.0, "version": kind.1, "resource": resource},
        "userInfo": {"username": "alice"}, "oldObject": old
    }).to_string())
    .unwrap()
}

fn deployment(label: Option<&str>, replicas: Option<i32>) -> AdmissionRequest {
    let mut old = json!({"metadata": {"name": "d", "namespace": "default"}, "spec": {}});
    if let Some(l) = label {
        old["metadata"]["labels"] = json!({DELETE_PROTECTION_LABEL: l});
    }
    if let Some(r) = replicas {
        old["spec"]["replicas"] = json!(r);
    }
    request(("apps", "v1", "Deployment"), "deployments", old)
}

fn decide(handler: Handler, req: &AdmissionRequest) -> Verdict {
    validate(
        handler,
        req,
        &EmptyView,
        &FeatureGates::default(),
        &Facts::default(),
    )
    .unwrap()
}

#[test]
fn workload_without_the_label_is_allowed() {
    assert!(decide(Handler::Deployment, &deployment(None, Some(3))).is_allowed());
}

#[test]
fn label_values_are_case_sensitive() {
    assert!(decide(Handler::Deployment, &deployment(Some("always"), Some(3))).is_allowed());
    assert!(decide(Handler::Deployment, &deployment(Some(""), Some(3))).is_allowed());
}

#[test]
fn cascading_workload_is_refused_only_with_replicas() {
    let v = decide(Handler::Deployment, &deployment(Some(CASCADING), Some(2)));
    assert_eq!(
        v.denial().unwrap().message,
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 2>0"
    );
    assert!(decide(Handler::Deployment, &deployment(Some(CASCADING), Some(0))).is_allowed());
    assert!(decide(Handler::Deployment, &deployment(Some(CASCADING), None)).is_allowed());
}

#[test]
fn refusal_records_metric_and_audit_line() {
    let v = decide(Handler::Deployment, &deployment(Some(ALWAYS), None));
    let SideEffect::DeletionProtected(r) = &v.side_effects[0] else {
        panic!("a deletion-protection record: {:?}", v.side_effects)
    };
    assert_eq!(r.metric, ProtectionMetric::Workload);
    assert_eq!(r.metric_name, "Deployment_default_d");
    assert_eq!(
        r.audit_line(),
        r#"{"Event":"DeletionProtection","Kind":"Deployment","Namespace":"default","Name":"d","UserAgent":"alice"}"#
    );
}

#[test]
fn gate_off_allows_everything() {
    let gates = FeatureGates::parse("ResourcesDeletionProtection=false").unwrap();
    let v = validate(
        Handler::Deployment,
        &deployment(Some(ALWAYS), None),
        &EmptyView,
        &gates,
        &Facts::default(),
    );
    assert!(v.unwrap().is_allowed());
}

#[test]
fn non_delete_and_subresources_are_allowed() {
    let mut req = deployment(Some(ALWAYS), None);
    req.operation = Operation::Update;
    assert!(decide(Handler::Deployment, &req).is_allowed());
    let mut req = deployment(Some(ALWAYS), None);
    req.sub_resource = "status".into();
    assert!(decide(Handler::Deployment, &req).is_allowed());
}

#[test]
fn undecodable_old_object_is_a_decode_error() {
    let req = request(
        ("apps", "v1", "Deployment"),
        "deployments",
        json!({"spec": "x"}),
    );
    let err = validate(
        Handler::Deployment,
        &req,
        &EmptyView,
        &FeatureGates::default(),
        &Facts::default(),
    )
    .unwrap_err();
    assert_eq!(err.http_code(), 400);
}

#[test]
fn cloneset_of_an_unknown_version_is_a_400() {
    let mut req = deployment(Some(ALWAYS), None);
    req.resource = crate::admission::GroupVersionResource {
        group: "apps.kruise.io".into(),
        version: "v2".into(),
        resource: "clonesets".into(),
    };
    let err = validate(
        Handler::CloneSet,
        &req,
        &EmptyView,
        &FeatureGates::default(),
        &Facts::default(),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "unsupported version: v2");
}

fn crd(label: &str) -> AdmissionRequest {
    request(
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
        json!({"metadata": {"name": "foos.example.com", "labels": {DELETE_PROTECTION_LABEL: label}},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"kind": "Foo", "listKind": "FooList", "plural": "foos"},
                        "versions": [{"name": "v1alpha1", "storage": false}, {"name": "v1", "storage": true}]}}),
    )
}

#[test]
fn cascading_crd_asks_for_the_storage_version() {
    let q = custom_resource_query(
        Handler::CustomResourceDefinition,
        &crd(CASCADING),
        &FeatureGates::default(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(q.gvk_string(), "example.com/v1, Kind=FooList");
    assert_eq!(q.plural, "foos");
    assert!(
        custom_resource_query(
            Handler::CustomResourceDefinition,
            &crd(ALWAYS),
            &FeatureGates::default()
        )
        .unwrap()
        .is_none()
    );
}

#[test]
fn cascading_crd_counts_only_live_resources_whatever_the_sub_gate_says() {
    let gates = FeatureGates::default();
    assert!(!gates.enabled(crate::features::CRD_CASCADING));
    let facts = |total, terminating| Facts {
        custom_resources: Some(Ok(CustomResourceCount { total, terminating })),
    };
    let v = validate(
        Handler::CustomResourceDefinition,
        &crd(CASCADING),
        &EmptyView,
        &gates,
        &facts(2, 1),
    )
    .unwrap();
    assert_eq!(
        v.denial().unwrap().message,
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active CRs 1>0"
    );
    let v = validate(
        Handler::CustomResourceDefinition,
        &crd(CASCADING),
        &EmptyView,
        &gates,
        &facts(1, 1),
    )
    .unwrap();
    assert!(v.is_allowed());
    let listing_failed = Facts {
        custom_resources: Some(Err("forbidden".into())),
    };
    let v = validate(
        Handler::CustomResourceDefinition,
        &crd(CASCADING),
        &EmptyView,
        &gates,
        &listing_failed,
    )
    .unwrap();
    assert_eq!(
        v.denial().unwrap().message,
        "failed to list CRs of example.com/v1, Kind=FooList: forbidden"
    );
}

#[test]
fn cascading_namespace_counts_active_pods_then_bound_pvcs() {
    let mut cluster = FixtureCluster::default();
    cluster
        .load_str(
            r#"
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: ns}
status: {phase: Succeeded}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: c, namespace: ns}
status: {phase: Bound}
"#,
            "inline",
        )
        .unwrap();
    let req = request(
        ("", "v1", "Namespace"),
        "namespaces",
        json!({"metadata": {"name": "ns", "labels": {DELETE_PROTECTION_LABEL: CASCADING}}}),
    );
    let v = validate(
        Handler::Namespace,
        &req,
        &cluster,
        &FeatureGates::default(),
        &Facts::default(),
    )
    .unwrap();
    assert_eq!(
        v.denial().unwrap().message,
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and \"Bound\" status pvc 1>0"
    );
    let SideEffect::DeletionProtected(r) = &v.side_effects[0] else {
        panic!("a deletion-protection record: {:?}", v.side_effects)
    };
    assert_eq!(
        (r.metric, r.namespace.as_str(), r.metric_name.as_str()),
        (ProtectionMetric::Namespace, "", "ns")
    );
}

#[test]
fn service_ignores_cascading_and_records_nothing() {
    let old = |l: &str| json!({"metadata": {"name": "s", "namespace": "default", "labels": {DELETE_PROTECTION_LABEL: l}}});
    let v = decide(
        Handler::Service,
        &request(("", "v1", "Service"), "services", old(ALWAYS)),
    );
    assert!(!v.is_allowed() && v.side_effects.is_empty());
    assert!(
        decide(
            Handler::Service,
            &request(("", "v1", "Service"), "services", old(CASCADING))
        )
        .is_allowed()
    );
}
