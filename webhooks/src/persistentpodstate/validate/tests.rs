use super::*;
use crate::Decision;
use serde_json::json;

const WEB_REF: &str =
    "v1beta1.TargetReference{APIVersion:\"apps/v1\", Kind:\"StatefulSet\", Name:\"web\"}";

fn pps(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "PersistentPodState",
           "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7", "generation": 1},
           "spec": spec})
}

fn web_spec() -> Value {
    json!({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
           "requiredPersistentTopology": {"keys": ["topology.kubernetes.io/zone"]}})
}

fn request(
    version: &str,
    operation: &str,
    object: Option<Value>,
    old: Option<Value>,
) -> AdmissionRequest {
    serde_json::from_value(json!({
        "uid": "u", "operation": operation, "name": "web", "namespace": "ns",
        "kind": {"group": "apps.kruise.io", "version": version, "kind": "PersistentPodState"},
        "resource": {"group": "apps.kruise.io", "version": version, "resource": "persistentpodstates"},
        "userInfo": {"username": "alice"}, "object": object, "oldObject": old
    }))
    .unwrap()
}

/// The verdict on `req` with no whitelist and `others` in the namespace: `None` when allowed, else the code
/// and the message.
fn outcome(req: &AdmissionRequest, others: &[Value]) -> Option<(u16, String)> {
    outcome_with(req, &WhitelistSource::Missing, &Ok(decoded(others)))
}

fn decoded(docs: &[Value]) -> Vec<Arc<PersistentPodState>> {
    docs.iter()
        .map(|d| Arc::new(serde_json::from_value(d.clone()).unwrap()))
        .collect()
}

fn outcome_with(
    req: &AdmissionRequest,
    whitelist: &WhitelistSource,
    others: &Result<Vec<Arc<PersistentPodState>>, String>,
) -> Option<(u16, String)> {
    let ctx = ValidateContext { whitelist, others };
    match validate(req, &ctx).unwrap().decision {
        Decision::Allow => None,
        Decision::Deny(d) => Some((d.code, d.message)),
    }
}

#[test]
fn a_statefulset_target_with_a_topology_is_allowed() {
    let req = request("v1beta1", "CREATE", Some(pps("web", web_spec())), None);
    assert_eq!(outcome(&req, &[]), None);
}

#[test]
fn an_empty_target_ref_is_refused_twice_and_a_spec_without_topology_once() {
    let req = request(
        "v1beta1",
        "CREATE",
        Some(pps(
            "web",
            json!({"targetRef": {}, "preferredPersistentTopology": [],
            "persistentPodAnnotations": [{"key": "ip"}], "persistentPodStateRetentionPolicy": "WhenDeleted"}),
        )),
        None,
    );
    let empty = "v1beta1.TargetReference{APIVersion:\"\", Kind:\"\", Name:\"\"}";
    let spec = format!(
        "v1beta1.PersistentPodStateSpec{{TargetReference:{empty}, \
         PersistentPodAnnotations:[]v1beta1.PersistentPodAnnotation{{v1beta1.PersistentPodAnnotation{{Key:\"ip\"}}}}, \
         RequiredPersistentTopology:(*v1beta1.NodeTopologyTerm)(nil), \
         PreferredPersistentTopology:[]v1beta1.PreferredTopologyTerm{{}}, \
         PersistentPodStateRetentionPolicy:\"WhenDeleted\"}}"
    );
    assert_eq!(
        outcome(&req, &[]),
        Some((
            422,
            format!(
                "[spec.targetRef: Invalid value: {empty}: empty targetRef is not valid for PersistentPodState., \
                 spec.targetRef: Invalid value: {empty}: targetRef.Kind must be StatefulSet or in \
                 PPS_Watch_Custom_Workload_WhiteList, \
                 spec: Invalid value: {spec}: TopologyConstraint and TopologyPreference cannot be empty at the same time]"
            )
        ))
    );
}

#[test]
fn a_v1alpha1_spec_prints_its_empty_lists_as_nil() {
    let mut object = pps(
        "web",
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
            "preferredPersistentTopology": [], "persistentPodAnnotations": []}),
    );
    object["apiVersion"] = json!("apps.kruise.io/v1alpha1");
    let req = request("v1alpha1", "CREATE", Some(object), None);
    let (code, message) = outcome(&req, &[]).unwrap();
    assert_eq!(code, 422);
    assert_eq!(
        message,
        format!(
            "spec: Invalid value: v1beta1.PersistentPodStateSpec{{TargetReference:{WEB_REF}, \
             PersistentPodAnnotations:[]v1beta1.PersistentPodAnnotation(nil), \
             RequiredPersistentTopology:(*v1beta1.NodeTopologyTerm)(nil), \
             PreferredPersistentTopology:[]v1beta1.PreferredTopologyTerm(nil), \
             PersistentPodStateRetentionPolicy:\"\"}}: TopologyConstraint and TopologyPreference cannot be empty at the same time"
        )
    );
}

#[test]
fn a_v1alpha1_object_is_converted_before_it_is_checked() {
    let mut object = pps(
        "web",
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
            "requiredPersistentTopology": {"nodeTopologyKeys": ["zone"]}}),
    );
    object["apiVersion"] = json!("apps.kruise.io/v1alpha1");
    assert_eq!(
        outcome(&request("v1alpha1", "CREATE", Some(object), None), &[]),
        None
    );
}

#[test]
fn the_whitelist_failing_to_read_is_the_only_error() {
    let req = request("v1beta1", "CREATE", Some(pps("web", json!({}))), None);
    assert_eq!(
        outcome_with(
            &req,
            &WhitelistSource::ReadError("forbidden".into()),
            &Ok(Vec::new())
        ),
        Some((
            422,
            ": Internal error: failed to get persistent pod state config white list, error: forbidden"
                .into()
        ))
    );
}

#[test]
fn a_whitelisted_kind_is_allowed_and_others_are_not() {
    let spec = json!({"targetRef": {"apiVersion": "example.io/v1", "kind": "GameServerSet", "name": "gs"},
        "requiredPersistentTopology": {"keys": []}});
    let req = request("v1beta1", "CREATE", Some(pps("gs", spec)), None);
    let listed = WhitelistSource::Present(
        r#"{"workloads":[{"Group":"example.io","Version":"v1","Kind":"GameServerSet"}]}"#.into(),
    );
    assert_eq!(outcome_with(&req, &listed, &Ok(Vec::new())), None);
    let (_, message) = outcome(&req, &[]).unwrap();
    assert!(
        message.ends_with(
            ": targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList"
        ),
        "{message}"
    );
}

#[test]
fn the_target_ref_is_immutable_version_included() {
    let old = pps("web", web_spec());
    let mut new = old.clone();
    new["spec"]["targetRef"]["apiVersion"] = json!("apps/v1beta2");
    let req = request("v1beta1", "UPDATE", Some(new), Some(old.clone()));
    assert_eq!(
        outcome(&req, std::slice::from_ref(&old)),
        Some((
            422,
            "spec.targetRef: Forbidden: targetRef is immutable".into()
        ))
    );
    // The topology may change; the object itself in the namespace is no conflict.
    let mut new = old.clone();
    new["spec"]["requiredPersistentTopology"]["keys"] = json!(["kubernetes.io/hostname"]);
    let req = request("v1beta1", "UPDATE", Some(new), Some(old.clone()));
    assert_eq!(outcome(&req, &[old]), None);
}

#[test]
fn the_first_other_state_targeting_the_same_workload_conflicts() {
    let mut other = pps("b-other", web_spec());
    other["spec"]["targetRef"]["apiVersion"] = json!("apps/v1beta1");
    let mut elsewhere = pps("a-elsewhere", web_spec());
    elsewhere["metadata"]["namespace"] = json!("other");
    let unrelated = pps(
        "a-db",
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}}),
    );
    let mut later = other.clone();
    later["metadata"]["name"] = json!("c-later");
    let req = request("v1beta1", "CREATE", Some(pps("web", web_spec())), None);
    assert_eq!(
        outcome(&req, &[later, elsewhere, unrelated, other]),
        Some((
            422,
            format!(
                "spec.targetRef: Invalid value: {WEB_REF}: targetRef is in conflict with other PersistentPodState b-other"
            )
        ))
    );
    assert_eq!(
        outcome_with(
            &req,
            &WhitelistSource::Missing,
            &Err("connection refused".into())
        ),
        Some((
            422,
            ": Internal error: query other PersistentPodState failed, err: connection refused"
                .into()
        ))
    );
}

#[test]
fn malformed_requests_are_400() {
    let err = validate(
        &request("v2", "CREATE", Some(pps("web", web_spec())), None),
        &ValidateContext {
            whitelist: &WhitelistSource::Missing,
            others: &Ok(Vec::new()),
        },
    )
    .unwrap_err();
    assert_eq!(
        (err.http_code(), err.to_string()),
        (400, "unsupported version: v2".into())
    );
    let err = validate(
        &request("v1beta1", "CREATE", None, None),
        &ValidateContext {
            whitelist: &WhitelistSource::Missing,
            others: &Ok(Vec::new()),
        },
    )
    .unwrap_err();
    assert_eq!((err.http_code(), err.to_string()), (400, NO_CONTENT.into()));
    let delete = request("v1beta1", "DELETE", None, Some(pps("web", web_spec())));
    assert_eq!(outcome(&delete, &[]), None);
}
