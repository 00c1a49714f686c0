use super::*;
use serde_json::json;

const CS_REF: &str = "v1beta1.TargetReference{APIVersion:\"apps.kruise.io/v1alpha1\", Kind:\"CloneSet\", Name:\"cs\"}";

fn subset(name: &str, max: Value) -> Value {
    let mut s = json!({"name": name});
    if !max.is_null() {
        s["maxReplicas"] = max;
    }
    s
}

fn cs_target() -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"})
}

fn ws(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
           "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7"}, "spec": spec})
}

fn request(
    version: &str,
    operation: &str,
    object: Option<Value>,
    old: Option<Value>,
) -> AdmissionRequest {
    serde_json::from_value(json!({
        "uid": "u", "operation": operation, "name": "ws", "namespace": "ns",
        "kind": {"group": "apps.kruise.io", "version": version, "kind": "WorkloadSpread"},
        "resource": {"group": "apps.kruise.io", "version": version, "resource": "workloadspreads"},
        "userInfo": {"username": "alice"}, "object": object, "oldObject": old
    }))
    .unwrap()
}

/// The facts of one request.
struct Facts {
    gates: FeatureGates,
    whitelist: WhitelistSource,
    others: Result<Vec<Arc<WorkloadSpread>>, String>,
    target: Option<Value>,
}

impl Default for Facts {
    fn default() -> Self {
        Self {
            gates: FeatureGates::default(),
            whitelist: WhitelistSource::Missing,
            others: Ok(Vec::new()),
            target: None,
        }
    }
}

impl Facts {
    fn with_others(docs: &[Value]) -> Self {
        Self {
            others: Ok(docs
                .iter()
                .map(|d| Arc::new(serde_json::from_value(d.clone()).unwrap()))
                .collect()),
            ..Self::default()
        }
    }

    fn answer(&self, req: &AdmissionRequest) -> Result<Verdict, WebhookError> {
        validate(
            req,
            &ValidateContext {
                gates: &self.gates,
                custom_workloads: &self.whitelist,
                others: &self.others,
                target: self.target.as_ref(),
            },
        )
    }

    /// The (code, message) of the denial of a v1beta1 CREATE of `spec`, or None when allowed.
    fn create(&self, spec: Value) -> Option<(u16, String)> {
        let req = request("v1beta1", "CREATE", Some(ws("ws", spec)), None);
        let verdict = self.answer(&req).unwrap();
        verdict.denial().map(|d| (d.code, d.message.clone()))
    }
}

fn message(spec: Value) -> Option<String> {
    Facts::default().create(spec).map(|(code, m)| {
        assert_eq!(code, 422, "{m}");
        m
    })
}

fn spec_with(subsets: Value) -> Value {
    json!({"targetRef": cs_target(), "subsets": subsets})
}

#[test]
fn a_valid_workloadspread_is_allowed() {
    let spec = json!({
        "targetRef": cs_target(),
        "subsets": [
            {"name": "a", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
             "tolerations": [{"key": "dedicated", "operator": "Exists"}], "maxReplicas": 2,
             "patch": {"metadata": {"labels": {"subset": "a"}}}},
            {"name": "b", "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]},
             "preferredNodeSelector": [{"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}],
             "maxReplicas": 3},
            {"name": "c"}
        ],
        "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 147}},
        "targetFilter": {"selector": {"matchLabels": {"app": "web"}}, "replicasPathList": ["spec.replicas"]}
    });
    assert_eq!(message(spec), None);
}

#[test]
fn gate_off_denies_403_before_decoding() {
    let facts = Facts {
        gates: FeatureGates::parse("WorkloadSpread=false").unwrap(),
        ..Facts::default()
    };
    let req = request("v1beta1", "CREATE", None, None);
    let denial = facts.answer(&req).unwrap().denial().cloned().unwrap();
    assert_eq!(
        (denial.code, denial.message.as_str()),
        (403, GATE_OFF_MESSAGE)
    );
    assert_eq!(
        GATE_OFF_MESSAGE,
        "feature-gate WorkloadSpread is not enabled"
    );
    // PodWebhook=false forces the gate off.
    let facts = Facts {
        gates: FeatureGates::parse("PodWebhook=false").unwrap(),
        ..Facts::default()
    };
    assert_eq!(
        facts.answer(&req).unwrap().denial().map(|d| d.code),
        Some(403)
    );
}

#[test]
fn malformed_requests_are_400() {
    let facts = Facts::default();
    let err = facts
        .answer(&request("v1beta1", "CREATE", None, None))
        .unwrap_err();
    assert_eq!(
        (err.http_code(), err.to_string()),
        (400, NO_CONTENT.to_owned())
    );
    let valid = ws("ws", spec_with(json!([subset("a", Value::Null)])));
    let err = facts
        .answer(&request("v1beta1", "UPDATE", Some(valid), None))
        .unwrap_err();
    assert_eq!(err.http_code(), 400);
    for bad in [
        json!({"spec": {"subsets": {"name": "a"}}}),
        json!({"spec": {"subsets": [{"name": "a", "maxReplicas": 1.5}]}}),
        json!({"spec": {"targetRef": "cs"}}),
        json!({"spec": {"scheduleStrategy": {"adaptive": {"rescheduleCriticalSeconds": "30"}}}}),
        json!([1]),
        json!("x"),
    ] {
        for version in ["v1alpha1", "v1beta1"] {
            let err = facts
                .answer(&request(version, "CREATE", Some(bad.clone()), None))
                .unwrap_err();
            assert_eq!(err.http_code(), 400, "{version} {bad}");
        }
    }
    // A v1alpha1 request needs an object the conversion knows.
    let mut no_kind = ws("ws", spec_with(json!([subset("a", Value::Null)])));
    no_kind.as_object_mut().unwrap().remove("kind");
    let err = facts
        .answer(&request("v1alpha1", "CREATE", Some(no_kind), None))
        .unwrap_err();
    assert_eq!(err.http_code(), 400);
}

#[test]
fn other_operations_are_allowed() {
    let req = request("v1beta1", "DELETE", None, None);
    assert!(Facts::default().answer(&req).unwrap().is_allowed());
}

#[test]
fn target_ref_rules() {
    let with_target = |t: Value| json!({"targetRef": t, "subsets": [{"name": "a"}]});
    assert_eq!(
        message(json!({"subsets": [{"name": "a"}]})).as_deref(),
        Some("spec.targetRef: Required value: no targetRef defined in WorkloadSpread")
    );
    assert_eq!(
        message(with_target(
            json!({"apiVersion": "apps/v1", "kind": "Deployment"})
        ))
        .as_deref(),
        Some(
            "spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"apps/v1\", Kind:\"Deployment\", Name:\"\"}: empty TargetReference is not valid for WorkloadSpread."
        )
    );
    let detail =
        |t: Value| message(with_target(t)).map(|m| m.rsplit(": ").next().unwrap().to_owned());
    let cases = [
        (
            "apps/v1",
            "CloneSet",
            Some("TargetReference is not valid for CloneSet."),
        ),
        (
            "apps.kruise.io/v1/x",
            "CloneSet",
            Some("TargetReference is not valid for CloneSet."),
        ),
        ("apps.kruise.io/v1beta1", "CloneSet", None),
        (
            "extensions/v1beta1",
            "Deployment",
            Some("TargetReference is not valid for Deployment."),
        ),
        ("apps/v1", "Deployment", None),
        (
            "apps.kruise.io/v1alpha1",
            "ReplicaSet",
            Some("TargetReference is not valid for ReplicaSet."),
        ),
        ("apps/v1", "ReplicaSet", None),
        (
            "apps/v1",
            "Job",
            Some("TargetReference is not valid for Job."),
        ),
        ("batch/v1", "Job", None),
        ("apps/v1", "StatefulSet", None),
        ("apps.kruise.io/v1beta1", "StatefulSet", None),
        ("apps.kruise.io/v1alpha1", "StatefulSet", None),
        (
            "batch/v1",
            "StatefulSet",
            Some("TargetReference is not valid for StatefulSet."),
        ),
        (
            "kubeflow.org/v1",
            "TFJob",
            Some("TargetReference's GroupKind is not permitted."),
        ),
        (
            "v1",
            "Pod",
            Some("TargetReference's GroupKind is not permitted."),
        ),
    ];
    for (api, kind, want) in cases {
        assert_eq!(
            detail(json!({"apiVersion": api, "kind": kind, "name": "w"})).as_deref(),
            want,
            "{api} {kind}"
        );
    }
}

#[test]
fn custom_workloads_come_from_the_whitelist() {
    let spec = json!({"targetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "tf"}, "subsets": [{"name": "a"}]});
    let facts = |whitelist: WhitelistSource| Facts {
        whitelist,
        ..Facts::default()
    };
    let listed = WhitelistSource::Present(
        r#"{"workloads":[{"Group":"kubeflow.org","Version":"v1","Kind":"TFJob","replicasPath":"spec.replicas",
            "subResources":[{"Group":"kubeflow.org","Kind":"PyTorchJob"}]}]}"#
            .into(),
    );
    assert_eq!(facts(listed.clone()).create(spec.clone()), None);
    // Another version of the same group is fine; a sub-resource is not a valid target.
    let other_version = json!({"targetRef": {"apiVersion": "kubeflow.org/v2", "kind": "TFJob", "name": "tf"}, "subsets": [{"name": "a"}]});
    assert_eq!(facts(listed.clone()).create(other_version), None);
    let sub = json!({"targetRef": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "p"}, "subsets": [{"name": "a"}]});
    assert!(
        facts(listed)
            .create(sub)
            .unwrap()
            .1
            .ends_with("TargetReference's GroupKind is not permitted.")
    );
    // Unreadable or bad JSON: an internal error, then the (empty) whitelist permits nothing.
    let (code, m) = facts(WhitelistSource::ReadError(
        "configmaps \"kruise-configuration\" is forbidden".into(),
    ))
    .create(spec.clone())
    .unwrap();
    assert_eq!(code, 422);
    assert_eq!(
        m,
        "[spec.targetRef: Internal error: configmaps \"kruise-configuration\" is forbidden, \
         spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"kubeflow.org/v1\", Kind:\"TFJob\", Name:\"tf\"}: \
         TargetReference's GroupKind is not permitted.]"
    );
    let (_, m) = facts(WhitelistSource::Present("{".into()))
        .create(spec)
        .unwrap();
    assert!(m.starts_with("[spec.targetRef: Internal error: "), "{m}");
}

#[test]
fn subset_names() {
    assert_eq!(
        message(json!({"targetRef": cs_target(), "subsets": []})).as_deref(),
        Some("spec.subsets: Required value: subsets number must >= 1 in WorkloadSpread")
    );
    assert_eq!(
        message(json!({"targetRef": cs_target()})).as_deref(),
        Some("spec.subsets: Required value: subsets number must >= 1 in WorkloadSpread")
    );
    assert_eq!(
        message(spec_with(
            json!([{"name": "a"}, {"name": ""}, {"name": "a"}])
        ))
        .as_deref(),
        Some(
            "[spec.subsets[1].name: Invalid value: \"\", spec.subsets[2].name: Invalid value: \"a\": duplicated subset name a]"
        )
    );
}

#[test]
fn node_selectors_and_tolerations_use_kubernetes_validation_at_v1beta1_paths() {
    let m = message(spec_with(json!([{
        "name": "a",
        "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In"}]},
        "preferredNodeSelector": [{"weight": 0, "preference": {}}],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 3}]
    }])))
    .unwrap();
    assert_eq!(
        m,
        "[spec.subsets[0].requiredNodeSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn', \
         spec.subsets[0].preferredNodeSelector[0].weight: Invalid value: 0: must be in the range 1-100, \
         spec.subsets[0].tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set]"
    );
}

/// The maxReplicas values of consecutive subsets `s0, s1, ...` and the expected message (None: allowed).
fn max_replicas_case(target_kind: &str, values: &[Value]) -> Option<String> {
    let subsets: Vec<Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| subset(&format!("s{i}"), v.clone()))
        .collect();
    let api = if target_kind == "StatefulSet" {
        "apps/v1"
    } else {
        "apps.kruise.io/v1alpha1"
    };
    message(
        json!({"targetRef": {"apiVersion": api, "kind": target_kind, "name": "w"}, "subsets": subsets}),
    )
}

#[test]
fn max_replicas_table() {
    let n = Value::Null;
    let pct = |s: &str| json!(s);
    let int = |i: i64| json!(i);
    let iv = |i: i32| format!("intstr.IntOrString{{Type:0, IntVal:{i}, StrVal:\"\"}}");
    let sv = |s: &str| format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:\"{s}\"}}");
    let table: Vec<(&str, Vec<Value>, Option<String>)> = vec![
        ("CloneSet", vec![int(3), int(100), n.clone()], None),
        ("CloneSet", vec![pct("30%"), pct("70%")], None),
        ("CloneSet", vec![pct("30%"), n.clone()], None),
        ("CloneSet", vec![pct("+30%"), pct("70%")], None),
        ("CloneSet", vec![int(0)], None),
        // Scenario 42.
        ("CloneSet", vec![pct("30%"), pct("30%")],
         Some(format!("spec.subsets[0].maxReplicas: Invalid value: {}: maxReplicas sum of all subsets must equal 100% when type is specified as percent", sv("30%")))),
        ("CloneSet", vec![pct("60%"), pct("50%")],
         Some(format!("spec.subsets[1].maxReplicas: Invalid value: {}: the sum of all subset's maxReplicas exceeds 100% is no permitted", sv("50%")))),
        // The sum rule looks at the first subset's value even when it has none.
        ("CloneSet", vec![n.clone(), pct("30%")],
         Some("spec.subsets[0].maxReplicas: Invalid value: null: maxReplicas sum of all subsets must equal 100% when type is specified as percent".into())),
        // Scenario 43: the first error stops every later subset check.
        ("CloneSet", vec![int(3), pct("50%"), pct("bad")],
         Some(format!("spec.subsets[1].maxReplicas: Invalid value: {}: the maxReplicas type of all subsets must be the same", sv("50%")))),
        // Scenario 44.
        ("StatefulSet", vec![pct("50%")],
         Some(format!("spec.subsets[0].maxReplicas: Invalid value: {}: the maxReplicas type must be Int for StatefulSet", sv("50%")))),
        ("StatefulSet", vec![int(2), n.clone()], None),
        ("CloneSet", vec![pct("30")],
         Some(format!("spec.subsets[0].maxReplicas: Invalid value: {}: maxReplicas is not valid for subset", sv("30")))),
        ("CloneSet", vec![pct("x%")],
         Some(format!("spec.subsets[0].maxReplicas: Invalid value: {}: maxReplicas is not valid for subset", sv("x%")))),
        ("CloneSet", vec![pct("-5%")],
         Some(format!("spec.subsets[0].maxReplicas: Invalid value: {}: maxReplicas is not valid for subset", sv("-5%")))),
        ("CloneSet", vec![int(-1)],
         Some(format!("spec.subsets[0].maxReplicas: Invalid value: {}: maxReplicas is not valid for subset", iv(-1)))),
        ("CloneSet", vec![pct("99999999999999999999%")],
         Some(format!("spec.subsets[0].maxReplicas: Invalid value: {}: maxReplicas is not valid for subset", sv("99999999999999999999%")))),
    ];
    for (kind, values, want) in table {
        assert_eq!(max_replicas_case(kind, &values), want, "{kind} {values:?}");
    }
}

#[test]
fn a_max_replicas_error_keeps_the_errors_found_before_it() {
    let m = message(spec_with(json!([
        {"name": "a", "maxReplicas": 1},
        {"name": "a", "maxReplicas": "10%"},
        {"name": "a"}
    ])))
    .unwrap();
    assert_eq!(
        m,
        format!(
            "[spec.subsets[1].name: Invalid value: \"a\": duplicated subset name a, \
             spec.subsets[1].maxReplicas: Invalid value: {}: the maxReplicas type of all subsets must be the same]",
            "intstr.IntOrString{Type:1, IntVal:0, StrVal:\"10%\"}"
        ),
        "subset 2's duplicate name is never looked at"
    );
}

#[test]
fn reschedule_bound_shrinks_with_subsets() {
    let bounds: Vec<i32> = (0..=6).map(max_reschedule_critical_seconds).collect();
    assert_eq!(bounds, [i32::MAX, i32::MAX, 295, 147, 98, 73, 59]);
}

#[test]
fn schedule_strategy_rules() {
    let three =
        json!([{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 1}, {"name": "c"}]);
    let strategy = |subsets: &Value, s: Value| {
        message(json!({"targetRef": cs_target(), "subsets": subsets, "scheduleStrategy": s}))
    };
    // Scenario 45.
    assert_eq!(
        strategy(
            &three,
            json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 200}})
        )
        .as_deref(),
        Some(
            "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: 200: rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > 147 is not permitted"
        )
    );
    assert_eq!(
        strategy(
            &three,
            json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 147}})
        ),
        None
    );
    assert_eq!(
        strategy(
            &three,
            json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": -1}})
        )
        .as_deref(),
        Some(
            "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: -1: rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > 147 is not permitted"
        )
    );
    // Scenario 46.
    assert_eq!(
        strategy(
            &three,
            json!({"type": "Fixed", "adaptive": {"rescheduleCriticalSeconds": 30}})
        )
        .as_deref(),
        Some(
            "spec.scheduleStrategy.type: Invalid value: 30: the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy"
        )
    );
    assert_eq!(
        strategy(&three, json!({"adaptive": {}})).as_deref(),
        Some(
            "spec.scheduleStrategy.type: Invalid value: null: the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy"
        )
    );
    // Scenario 47.
    let two = json!([{"name": "a"}, {"name": "b", "maxReplicas": 3}]);
    assert_eq!(
        strategy(&two, json!({"type": "Adaptive", "adaptive": {}})).as_deref(),
        Some(
            "spec.scheduleStrategy.adaptive: Invalid value: null: the last subset's maxReplicas must be not specified when using adaptive scheduleStrategy"
        )
    );
    // One subset: the last may be limited, and any non-negative int32 is allowed.
    let one = json!([{"name": "a", "maxReplicas": 3}]);
    assert_eq!(
        strategy(
            &one,
            json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 2147483647}})
        ),
        None
    );
    // Adaptive without parameters never reschedules and is valid.
    assert_eq!(strategy(&two, json!({"type": "Adaptive"})), None);
    assert_eq!(
        strategy(&two, json!({"type": "Random"})).as_deref(),
        Some(
            "spec.scheduleStrategy.type: Invalid value: \"Random\": ScheduleStrategy's type is not valid"
        )
    );
}

#[test]
fn target_filter_selector_must_convert() {
    let with_filter =
        |f: Value| json!({"targetRef": cs_target(), "subsets": [{"name": "a"}], "targetFilter": f});
    assert_eq!(
        message(with_filter(json!({}))),
        None,
        "no selector: nothing to convert"
    );
    assert_eq!(message(with_filter(json!({"selector": {}}))), None);
    let m = message(with_filter(
        json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}}),
    ))
    .unwrap();
    assert!(
        m.starts_with("spec.targetFilter: Invalid value: v1beta1.TargetFilter{"),
        "{m}"
    );
    assert!(
        m.ends_with(": \"Near\" is not a valid label selector operator"),
        "{m}"
    );
}

#[test]
fn conflicts_with_the_first_other_workloadspread_in_name_order() {
    let target = |api: &str, kind: &str, name: &str| json!({"targetRef": {"apiVersion": api, "kind": kind, "name": name}, "subsets": [{"name": "a"}]});
    let others = [
        ws("ws-b", target("apps.kruise.io/v1alpha1", "CloneSet", "cs")),
        ws("ws-a", target("apps.kruise.io/v1beta1", "CloneSet", "cs")),
        ws("ws-d", target("apps/v1", "Deployment", "cs")),
    ];
    let facts = Facts::with_others(&others);
    // Scenario 49, and the version does not count.
    assert_eq!(
        facts.create(target("apps.kruise.io/v1alpha1", "CloneSet", "cs")),
        Some((
            422,
            format!(
                "spec.targetRef: Invalid value: {CS_REF}: ws.spec.targetRef is in conflict with other WorkloadSpread ws-a"
            )
        ))
    );
    assert_eq!(
        facts.create(target("apps.kruise.io/v1alpha1", "CloneSet", "other")),
        None
    );
    assert_eq!(facts.create(target("apps/v1", "StatefulSet", "cs")), None);
    // Its own stored copy does not conflict; other namespaces do not count.
    let own = Facts::with_others(&[ws(
        "ws",
        target("apps.kruise.io/v1alpha1", "CloneSet", "cs"),
    )]);
    assert_eq!(
        own.create(target("apps.kruise.io/v1alpha1", "CloneSet", "cs")),
        None
    );
    let mut elsewhere = ws("ws-a", target("apps.kruise.io/v1alpha1", "CloneSet", "cs"));
    elsewhere["metadata"]["namespace"] = json!("other");
    assert_eq!(
        Facts::with_others(&[elsewhere]).create(target(
            "apps.kruise.io/v1alpha1",
            "CloneSet",
            "cs"
        )),
        None
    );
    // A list failure is an internal error at the empty path.
    let failing = Facts {
        others: Err("etcdserver: request timed out".into()),
        ..Facts::default()
    };
    assert_eq!(
        failing.create(target("apps.kruise.io/v1alpha1", "CloneSet", "cs")),
        Some((422, ": Internal error: query other WorkloadSpread failed, err: etcdserver: request timed out".into()))
    );
}

#[test]
fn update_keeps_target_ref_and_object_meta() {
    let target = |api: &str, name: &str| json!({"targetRef": {"apiVersion": api, "kind": "CloneSet", "name": name}, "subsets": [{"name": "a"}]});
    let update = |old: Value, new: Value| {
        let req = request("v1beta1", "UPDATE", Some(new), Some(old));
        Facts::default()
            .answer(&req)
            .unwrap()
            .denial()
            .map(|d| d.message.clone())
    };
    // Scenario 50.
    assert_eq!(
        update(
            ws("ws", target("apps.kruise.io/v1alpha1", "cs")),
            ws("ws", target("apps.kruise.io/v1alpha1", "cs2"))
        )
        .as_deref(),
        Some(
            "spec.targetRef: Invalid value: v1beta1.TargetReference{APIVersion:\"apps.kruise.io/v1alpha1\", Kind:\"CloneSet\", Name:\"cs2\"}: change TargetReference is not permitted for WorkloadSpread"
        )
    );
    assert_eq!(
        update(
            ws("ws", target("apps.kruise.io/v1alpha1", "cs")),
            ws("ws", target("apps.kruise.io/v1beta1", "cs"))
        ),
        None
    );
    // ObjectMeta: resourceVersion required, name immutable, generation not decremented.
    let mut old = ws("ws", target("apps.kruise.io/v1alpha1", "cs"));
    old["metadata"]["generation"] = json!(3);
    let mut new = old.clone();
    new["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    new["metadata"]["generation"] = json!(2);
    new["metadata"]["name"] = json!("ws2");
    assert_eq!(
        update(old, new).as_deref(),
        Some(
            "[metadata.resourceVersion: Invalid value: \"\": must be specified for an update, \
              metadata.generation: Invalid value: 2: must not be decremented, \
              metadata.name: Invalid value: \"ws2\": field is immutable]"
        )
    );
    // No new finalizers while being deleted; unqualified names must be standard ones.
    let mut old = ws("ws", target("apps.kruise.io/v1alpha1", "cs"));
    old["metadata"]["deletionTimestamp"] = json!("2026-03-01T09:00:00Z");
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["example.com/x", "mine"]);
    assert_eq!(
        update(old, new).as_deref(),
        Some(
            "[metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/x\", \"mine\"}, \
              metadata.finalizers[1]: Invalid value: \"mine\": name is neither a standard finalizer name nor is it fully qualified]"
        )
    );
}

#[test]
fn v1alpha1_objects_are_converted_and_reported_at_v1beta1_paths() {
    let alpha = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
    "metadata": {"name": "ws", "namespace": "ns"},
    "spec": {"targetRef": cs_target(), "subsets": [
        {"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["z"]}]},
         "preferredNodeSelectorTerms": [{"weight": 101, "preference": {}}]}
    ]}});
    let req = request("v1alpha1", "CREATE", Some(alpha), None);
    let denial = Facts::default()
        .answer(&req)
        .unwrap()
        .denial()
        .cloned()
        .unwrap();
    assert_eq!(denial.code, 422);
    assert_eq!(
        denial.message,
        "[spec.subsets[0].requiredNodeSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist', \
         spec.subsets[0].preferredNodeSelector[0].weight: Invalid value: 101: must be in the range 1-100]"
    );
}

/// A CloneSet `app` whose template runs container `app` and claims volume `data`.
fn clone_set() -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "app", "namespace": "ns"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "app", "image": "app:1", "imagePullPolicy": "IfNotPresent",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}})
}

fn patched_spec(patch: Value) -> Value {
    json!({"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "app"},
        "subsets": [{"name": "a", "patch": patch}]})
}

#[test]
fn scenario_52_a_subset_patch_is_checked_against_the_existing_workload_template() {
    let with_target = Facts {
        target: Some(clone_set()),
        ..Facts::default()
    };
    // An image emptied by the patch: Kubernetes' pod validation under the subset's patch.
    let (code, message) = with_target
        .create(patched_spec(
            json!({"spec": {"containers": [{"name": "app", "image": ""}]}}),
        ))
        .expect("denied");
    assert_eq!(code, 422);
    assert!(
        message.contains("spec.subsets[0].patch.containers[0].image: Required value"),
        "{message}"
    );
    // The same WorkloadSpread before the CloneSet exists: the patch checks are skipped.
    assert_eq!(
        Facts::default().create(patched_spec(
            json!({"spec": {"containers": [{"name": "app", "image": ""}]}})
        )),
        None
    );
    // A valid patch (a label, an env merged into the container by name), with the claim's volume mounted.
    assert_eq!(
        with_target.create(patched_spec(json!({"metadata": {"labels": {"zone": "a"}},
            "spec": {"containers": [{"name": "app", "env": [{"name": "ZONE", "value": "a"}]}]}}))),
        None
    );
    // A patch Kubernetes' strategic merge refuses.
    let (_, message) = with_target
        .create(patched_spec(
            json!({"spec": {"containers": {"name": "app"}}}),
        ))
        .expect("denied");
    assert!(
        message.contains("spec.subsets[0].patch: Invalid value:"),
        "{message}"
    );
    assert!(message.contains("failed to merge patch"), "{message}");
}

#[test]
fn the_template_target_is_a_built_in_kind_in_its_group() {
    let object = |api_version: &str, kind: &str| json!({"spec": {"targetRef": {"apiVersion": api_version, "kind": kind, "name": "w"}}});
    assert_eq!(
        template_target(&object("apps.kruise.io/v1alpha1", "CloneSet")),
        Some(("apps.kruise.io/v1alpha1", "CloneSet", "w".to_owned()))
    );
    assert_eq!(
        template_target(&object("apps.kruise.io/v1beta1", "StatefulSet")),
        Some(("apps/v1", "StatefulSet", "w".to_owned()))
    );
    assert_eq!(
        template_target(&object("batch/v1", "Job")),
        Some(("batch/v1", "Job", "w".to_owned()))
    );
    assert_eq!(template_target(&object("apps/v1", "CloneSet")), None);
    assert_eq!(template_target(&object("example.com/v1", "Custom")), None);
    assert_eq!(template_target(&json!({"spec": {}})), None);
    assert_eq!(template_target(&json!("garbage")), None);
}
