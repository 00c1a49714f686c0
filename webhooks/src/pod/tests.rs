//! The chain end to end on a fixture cluster: the patch is applied to the raw request object and the result
//! compared with what the spec says (spec/sidecarset.md §11, spec/pod-mutating-misc.md §3-4).

use super::*;
use crate::fixture::FixtureCluster;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

const NOW: &str = "2026-11-21T10:00:00Z";

fn ctx(gates: &FeatureGates) -> PodContext<'_> {
    PodContext {
        gates,
        now: NOW,
        random: 0.5,
        kruise_namespace: "kruise-system",
        workload: None,
        spreads: None,
        pps_whitelist: None,
    }
}

fn request(op: &str, pod: Value, sub_resource: &str) -> AdmissionRequest {
    serde_json::from_str(
        &json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": sub_resource,
                "namespace": "default", "operation": op, "object": pod, "oldObject": if op == "UPDATE" { pod.clone() } else { Value::Null }})
        .to_string(),
    )
    .unwrap()
}

fn pod(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"generateName": "web-", "labels": labels, "creationTimestamp": null, "x-unknown-meta": "kept"},
           "spec": {"containers": [{"name": "app", "image": "app:1", "x-unknown-field": {"a": 1}}]},
           "status": {}})
}

fn cluster(yaml: &str) -> FixtureCluster {
    let mut c = FixtureCluster::default();
    c.load_str(yaml, "test").unwrap();
    c
}

const TWO_SETS: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: default}
---
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: b-logging, annotations: {kruise.io/sidecarset-hash: hb, kruise.io/sidecarset-hash-without-image: wb}}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: log-agent, image: "log:1", podInjectPolicy: AfterAppContainer, shareVolumePolicy: {type: disabled}}]
---
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: a-mesh, annotations: {kruise.io/sidecarset-hash: ha, kruise.io/sidecarset-hash-without-image: wa}}
spec:
  namespace: default
  selector: {matchLabels: {app: web}}
  containers: [{name: envoy, image: "envoy:1", podInjectPolicy: BeforeAppContainer, shareVolumePolicy: {type: disabled}}]
  volumes: [{name: unused, emptyDir: {}}]
"#;

fn apply(req: &AdmissionRequest, verdict: &Verdict) -> Value {
    let raw: Value = serde_json::from_str(req.object.as_ref().unwrap().get()).unwrap();
    let patched = crate::json::patch::apply(&raw, &verdict.patch)
        .expect("the patch applies to the raw request object");
    let _: Pod = serde_json::from_value(patched.clone()).expect("the result decodes as a Pod");
    patched
}

fn names(pod: &Value, key: &str) -> Vec<String> {
    pod["spec"][key]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn two_sidecarsets_are_injected_in_one_patch_and_unknown_fields_survive() {
    let gates = FeatureGates::default();
    let view = cluster(TWO_SETS);
    let req = request("CREATE", pod(json!({"app": "web"})), "");
    let verdict = mutate(&req, &view, &ctx(&gates)).unwrap();
    let out = apply(&req, &verdict);
    assert_eq!(names(&out, "containers"), ["envoy", "app", "log-agent"]);
    assert_eq!(
        out["metadata"]["annotations"][inject::INJECTED_LIST_ANNOTATION],
        "a-mesh,b-logging"
    );
    assert_eq!(out["metadata"]["x-unknown-meta"], "kept");
    assert_eq!(
        out["spec"]["containers"][1]["x-unknown-field"],
        json!({"a": 1})
    );
    assert!(
        out["metadata"].get("namespace").is_none(),
        "the filled-in namespace is not part of the patch"
    );
    assert!(
        out["spec"].get("volumes").is_none(),
        "unreferenced SidecarSet volumes are not injected"
    );
    assert!(
        verdict
            .patch
            .iter()
            .all(|op| !op.path().contains("/metadata/namespace"))
    );
}

#[test]
fn paused_sidecarsets_that_select_the_pod_are_warned_about_and_injections_audited() {
    // DECISIONS 18.
    let gates = FeatureGates::default();
    let view = cluster(&format!(
        "{TWO_SETS}\n---\n{}\n---\n{}",
        "apiVersion: apps.kruise.io/v1beta1\nkind: SidecarSet\nmetadata: {name: c-paused}\nspec:\n  selector: {matchLabels: {app: web}}\n  injectionStrategy: {paused: true}\n  containers: [{name: paused, image: p}]",
        "apiVersion: apps.kruise.io/v1beta1\nkind: SidecarSet\nmetadata: {name: d-paused-elsewhere}\nspec:\n  selector: {matchLabels: {app: db}}\n  injectionStrategy: {paused: true}\n  containers: [{name: other, image: o}]",
    ));
    let req = request("CREATE", pod(json!({"app": "web"})), "");
    let verdict = mutate(&req, &view, &ctx(&gates)).unwrap();
    assert_eq!(
        verdict.warnings,
        [
            "SidecarSet c-paused selects this pod but its injection is paused (spec.injectionStrategy.paused): its sidecars were not injected"
        ]
    );
    assert_eq!(
        verdict.audit_annotations,
        BTreeMap::from([(
            INJECTED_AUDIT_ANNOTATION.to_owned(),
            "a-mesh,b-logging".to_owned()
        )])
    );
    let out = apply(&req, &verdict);
    assert_eq!(names(&out, "containers"), ["envoy", "app", "log-agent"]);

    // The injected pod again: nothing goes in, nothing is audited.
    let again = request("CREATE", out, "");
    let verdict = mutate(&again, &view, &ctx(&gates)).unwrap();
    assert!(verdict.patch.is_empty());
    assert!(verdict.audit_annotations.is_empty());
    assert_eq!(verdict.warnings.len(), 1);

    // No match, no warning.
    let other = request("CREATE", pod(json!({"app": "cache"})), "");
    let verdict = mutate(&other, &view, &ctx(&gates)).unwrap();
    assert!(verdict.warnings.is_empty() && verdict.audit_annotations.is_empty());
}

#[test]
fn same_input_same_patch_whatever_the_load_order() {
    let gates = FeatureGates::default();
    let docs: Vec<&str> = TWO_SETS.split("\n---\n").collect();
    let reversed = docs
        .iter()
        .rev()
        .copied()
        .collect::<Vec<_>>()
        .join("\n---\n");
    let req = request("CREATE", pod(json!({"app": "web"})), "");
    let a = mutate(&req, &cluster(TWO_SETS), &ctx(&gates)).unwrap();
    let b = mutate(&req, &cluster(&reversed), &ctx(&gates)).unwrap();
    assert_eq!(
        crate::json::patch::to_json(&a.patch),
        crate::json::patch::to_json(&b.patch)
    );
}

#[test]
fn no_match_no_patch() {
    // §11 scenario 1.
    let gates = FeatureGates::default();
    let req = request("CREATE", pod(json!({"app": "doesnt-match"})), "");
    assert!(
        mutate(&req, &cluster(TWO_SETS), &ctx(&gates))
            .unwrap()
            .patch
            .is_empty()
    );
}

#[test]
fn update_subresource_and_inactive_pods_are_left_alone() {
    // §11 scenarios 62, 63 and 64.
    let gates = FeatureGates::default();
    let view = cluster(TWO_SETS);
    assert!(
        mutate(
            &request("UPDATE", pod(json!({"app": "web"})), ""),
            &view,
            &ctx(&gates)
        )
        .unwrap()
        .patch
        .is_empty()
    );
    assert!(
        mutate(
            &request("CREATE", pod(json!({"app": "web"})), "status"),
            &view,
            &ctx(&gates)
        )
        .unwrap()
        .patch
        .is_empty()
    );
    let mut done = pod(json!({"app": "web"}));
    done["status"] = json!({"phase": "Succeeded"});
    assert!(
        mutate(&request("CREATE", done, ""), &view, &ctx(&gates))
            .unwrap()
            .patch
            .is_empty()
    );
    let mut deleting = pod(json!({"app": "web"}));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert!(
        mutate(&request("CREATE", deleting, ""), &view, &ctx(&gates))
            .unwrap()
            .patch
            .is_empty()
    );
}

#[test]
fn namespace_selector_and_kube_system() {
    // §11 scenarios 35 and 36.
    let gates = FeatureGates::default();
    let sets = |selector: &str, ns_exists: bool| {
        let ns = if ns_exists {
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: app1, labels: {ns: app1}}\n---\n"
        } else {
            ""
        };
        cluster(&format!(
            "{ns}apiVersion: apps.kruise.io/v1beta1\nkind: SidecarSet\nmetadata: {{name: s}}\nspec:\n  selector: {{matchLabels: {{app: web}}}}\n  namespaceSelector: {{matchLabels: {selector}}}\n  containers: [{{name: c, image: i}}]\n"
        ))
    };
    let mut req = request("CREATE", pod(json!({"app": "web"})), "");
    req.namespace = Some("app1".into());
    assert!(
        !mutate(&req, &sets("{ns: app1}", true), &ctx(&gates))
            .unwrap()
            .patch
            .is_empty()
    );
    assert!(
        mutate(&req, &sets("{ns: app2}", true), &ctx(&gates))
            .unwrap()
            .patch
            .is_empty()
    );
    assert!(
        mutate(&req, &sets("{ns: app1}", false), &ctx(&gates))
            .unwrap()
            .patch
            .is_empty(),
        "a missing namespace is no match"
    );

    let mut req = request("CREATE", pod(json!({"app": "web"})), "");
    req.namespace = Some("kube-system".into());
    let view = cluster(
        "apiVersion: apps.kruise.io/v1beta1\nkind: SidecarSet\nmetadata: {name: s}\nspec:\n  selector: {matchLabels: {app: web}}\n  containers: [{name: c, image: i}]\n",
    );
    assert!(
        !mutate(&req, &view, &ctx(&gates)).unwrap().patch.is_empty(),
        "kube-system is not ignored"
    );
}

#[test]
fn empty_selector_never_matches_and_canary_replaces_base() {
    // §11 scenarios 34 and 37.
    let gates = FeatureGates::default();
    let empty = cluster(
        "apiVersion: apps.kruise.io/v1beta1\nkind: SidecarSet\nmetadata: {name: s}\nspec:\n  selector: {}\n  containers: [{name: c, image: i}]\n",
    );
    assert!(
        mutate(
            &request("CREATE", pod(json!({"app": "web"})), ""),
            &empty,
            &ctx(&gates)
        )
        .unwrap()
        .patch
        .is_empty()
    );

    let view = cluster(
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: sc-base}
spec: {selector: {matchLabels: {app: web}}, containers: [{name: envoy, image: "envoy:v1"}]}
---
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: sc-canary, annotations: {apps.kruise.io/sidecarset-canary: "true", apps.kruise.io/sidecarset-base: sc-base}}
spec: {selector: {matchLabels: {app: web, canary: "true"}}, containers: [{name: envoy, image: "envoy:v2"}]}
"#,
    );
    let canary_req = request("CREATE", pod(json!({"app": "web", "canary": "true"})), "");
    let out = apply(
        &canary_req,
        &mutate(&canary_req, &view, &ctx(&gates)).unwrap(),
    );
    let envoy = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "envoy")
        .unwrap();
    assert_eq!(envoy["image"], "envoy:v2");
    assert_eq!(
        out["metadata"]["annotations"][inject::INJECTED_LIST_ANNOTATION],
        "sc-canary"
    );
    let base_req = request("CREATE", pod(json!({"app": "web"})), "");
    let out = apply(&base_req, &mutate(&base_req, &view, &ctx(&gates)).unwrap());
    assert_eq!(
        out["metadata"]["annotations"][inject::INJECTED_LIST_ANNOTATION],
        "sc-base"
    );
}

#[test]
fn a_base_replaced_by_its_canary_still_has_its_revision_chosen() {
    // §4.3 step 3.3 comes before step 5: the base's missing revision fails the request (500) although the
    // canary replaces it.
    let gates = FeatureGates::default();
    let view = cluster(
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: sc-base}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: envoy, image: "envoy:v1"}]
  injectionStrategy: {revision: {customVersion: v1}}
---
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: sc-canary, annotations: {apps.kruise.io/sidecarset-canary: "true", apps.kruise.io/sidecarset-base: sc-base}}
spec: {selector: {matchLabels: {app: web, canary: "true"}}, containers: [{name: envoy, image: "envoy:v2"}]}
"#,
    );
    let req = request("CREATE", pod(json!({"app": "web", "canary": "true"})), "");
    match mutate(&req, &view, &ctx(&gates)) {
        Err(WebhookError::Failed(msg)) => {
            assert_eq!(msg, "ControllerRevision.apps \"sc-base\" not found");
        }
        other => panic!("expected a 500, got {other:?}"),
    }
}

#[test]
fn each_partial_sidecarset_gets_its_own_draw() {
    assert_eq!(super::draw(0.25, 0), 0.25);
    let draws: Vec<f64> = (0..64).map(|i| super::draw(0.25, i)).collect();
    assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
    let mut sorted = draws.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    assert_eq!(sorted.len(), draws.len(), "draws repeat: {draws:?}");
    // Spread over [0, 1), not clustered near the first draw.
    assert!(draws.iter().filter(|d| **d < 0.5).count() > 16);
    assert!(draws.iter().filter(|d| **d >= 0.5).count() > 16);
}

#[test]
fn historical_revision_is_injected_from_the_kruise_namespace() {
    // §11 scenario 27 through the chain.
    let gates = FeatureGates::default();
    let view = cluster(
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: sidecarset1}
spec:
  selector: {matchLabels: {app: web}}
  injectionStrategy: {revision: {customVersion: sidecarset1-12345, policy: Always}}
  initContainers: [{name: init-1, image: "busybox:2"}, {name: init-2, image: "busybox:2"}]
  containers: [{name: dns-f, image: "dns:2"}, {name: log-agent, image: "log:2"}]
---
apiVersion: apps/v1
kind: ControllerRevision
metadata:
  name: sidecarset1-12345
  namespace: kruise-system
  labels: {kruise.io/sidecarset-name: sidecarset1, apps.kruise.io/sidecarset-custom-version: sidecarset1-12345}
  annotations: {kruise.io/sidecarset-hash: old-hash, kruise.io/sidecarset-hash-without-image: old-wo}
revision: 3
data: {spec: {"$patch": replace, initContainers: [{name: init-2, image: "busybox:1", podInjectPolicy: AfterAppContainer}], containers: [{name: dns-f, image: "dns:1", podInjectPolicy: BeforeAppContainer}]}}
"#,
    );
    let req = request("CREATE", pod(json!({"app": "web"})), "");
    let out = apply(&req, &mutate(&req, &view, &ctx(&gates)).unwrap());
    assert_eq!(
        names(&out, "containers"),
        ["dns-f", "app"],
        "2 containers in total are injected, not 4"
    );
    assert_eq!(names(&out, "initContainers"), ["init-2"]);
    let hashes: Value = serde_json::from_str(
        out["metadata"]["annotations"]["kruise.io/sidecarset-hash"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(hashes["sidecarset1"]["hash"], "old-hash");
    assert_eq!(
        hashes["sidecarset1"]["controllerRevision"],
        "sidecarset1-12345"
    );

    let missing = cluster(
        "apiVersion: apps.kruise.io/v1beta1\nkind: SidecarSet\nmetadata: {name: sidecarset1}\nspec:\n  selector: {matchLabels: {app: web}}\n  injectionStrategy: {revision: {customVersion: none}}\n  containers: [{name: c, image: i}]\n",
    );
    let err = mutate(&req, &missing, &ctx(&gates)).unwrap_err();
    assert_eq!(
        (err.http_code(), err.to_string().as_str()),
        (500, "ControllerRevision.apps \"sidecarset1\" not found")
    );
}

#[test]
fn readiness_gate_for_kruise_owned_pods() {
    let gates = FeatureGates::default();
    let mut p = pod(json!({}));
    p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs", "uid": "1", "controller": true}]);
    let req = request("CREATE", p.clone(), "");
    let out = apply(
        &req,
        &mutate(&req, &FixtureCluster::default(), &ctx(&gates)).unwrap(),
    );
    assert_eq!(
        out["spec"]["readinessGates"],
        json!([{"conditionType": "KruisePodReady"}])
    );

    p["spec"]["readinessGates"] =
        json!([{"conditionType": "Other"}, {"conditionType": "KruisePodReady"}]);
    let req = request("CREATE", p, "");
    assert!(
        mutate(&req, &FixtureCluster::default(), &ctx(&gates))
            .unwrap()
            .patch
            .is_empty(),
        "already present"
    );

    let plain = request("CREATE", pod(json!({})), "");
    assert!(
        mutate(&plain, &FixtureCluster::default(), &ctx(&gates))
            .unwrap()
            .patch
            .is_empty()
    );
    let all = FeatureGates::parse("KruisePodReadinessGate=true").unwrap();
    assert!(
        !mutate(&plain, &FixtureCluster::default(), &ctx(&all))
            .unwrap()
            .patch
            .is_empty()
    );
}

#[test]
fn a_pod_that_is_not_a_pod_is_a_400() {
    let gates = FeatureGates::default();
    for bad in [
        json!("x"),
        json!({"spec": {"containers": "x"}}),
        json!({"metadata": {"labels": {"a": 1}}}),
    ] {
        let err = mutate(
            &request("CREATE", bad, ""),
            &FixtureCluster::default(),
            &ctx(&gates),
        )
        .unwrap_err();
        assert_eq!(err.http_code(), 400, "{err}");
    }
}

#[test]
fn resources_policy_is_applied_through_the_chain() {
    // spec/sidecarset.md §11 scenario 39.
    let gates = FeatureGates::default();
    let view = cluster(
        r#"
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: s}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - name: proxy
    image: "proxy:1"
    resourcesPolicy:
      targetContainersMode: sum
      targetContainersNameRegex: ".*"
      resourcesExpr:
        limits: {cpu: "cpu*50%", memory: "200Mi"}
        requests: {cpu: "cpu*50%", memory: "100Mi"}
"#,
    );
    let mut p = pod(json!({"app": "web"}));
    p["spec"]["containers"] = json!([
        {"name": "app1", "image": "a", "resources": {"limits": {"cpu": "200m", "memory": "200Mi"}, "requests": {"cpu": "50m", "memory": "100Mi"}}},
        {"name": "app2", "image": "a", "resources": {"limits": {"cpu": "400m", "memory": "400Mi"}, "requests": {"cpu": "100m", "memory": "200Mi"}}}]);
    let req = request("CREATE", p, "");
    let out = apply(&req, &mutate(&req, &view, &ctx(&gates)).unwrap());
    let proxy = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "proxy")
        .unwrap();
    assert_eq!(
        proxy["resources"],
        json!({"limits": {"cpu": "300m", "memory": "200Mi"}, "requests": {"cpu": "75m", "memory": "100Mi"}})
    );
}

/// The controller reference is read from the references' text as the request has them: escapes decoded,
/// the last of a key written twice, anything that is not a list of objects read as no owner.
#[test]
fn a_kruise_controller_is_found_in_the_references_as_received() {
    let owned = |refs: &str| {
        let text =
            format!(r#"{{"metadata": {{"name": "p", "ownerReferences": {refs}}}, "spec": {{}}}}"#);
        owner::owned_by_kruise(&crate::json::rawpod::RawPod::parse_str(&text).unwrap())
    };
    for (refs, wanted) in [
        (
            r#"[{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "controller": true}]"#,
            true,
        ),
        (
            r#"[{"apiVersion": "apps/v1", "controller": true}, {"apiVersion": "apps.kruise.io/v1beta1", "controller": true}]"#,
            true,
        ),
        (
            r#"[{"apiVersion":"apps.kruise.io\/v1alpha1","contr\u006fller":true}]"#,
            true,
        ),
        (
            r#"[{"controller": true, "apiVersion": "apps.kruise.io/v1alpha1", "controller": false}]"#,
            false,
        ),
        (
            r#"[{"apiVersion": "apps.kruise.io/v1alpha1", "controller": false}]"#,
            false,
        ),
        (r#"[{"apiVersion": "apps.kruise.io/v1alpha1"}]"#, false),
        (
            r#"[{"apiVersion": "apps.kruise.io", "controller": true}]"#,
            false,
        ),
        (r#"[{"apiVersion": "apps/v1", "controller": true}]"#, false),
        (
            r#"[{"apiVersion": 1, "controller": "true"}, "x", null, []]"#,
            false,
        ),
        (
            r#"{"apiVersion": "apps.kruise.io/v1alpha1", "controller": true}"#,
            false,
        ),
        ("null", false),
        ("[]", false),
    ] {
        assert_eq!(owned(refs), wanted, "{refs}");
    }
    let twice = r#"{"metadata": {"ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "controller": true}],
        "ownerReferences": []}}"#;
    assert!(
        !owner::owned_by_kruise(&crate::json::rawpod::RawPod::parse_str(twice).unwrap()),
        "the last one stands"
    );
}

#[test]
fn labels_are_read_from_their_text_as_a_pod_decodes_them() {
    let labels = |meta: &str| {
        let text = format!(r#"{{"metadata": {meta}, "spec": {{}}}}"#);
        pod_labels(&crate::json::rawpod::RawPod::parse_str(&text).unwrap())
    };
    let map = |pairs: &[(&str, &str)]| {
        Ok(pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>())
    };
    assert_eq!(labels("{}"), map(&[]));
    assert_eq!(labels(r#"{"labels": null}"#), map(&[]));
    assert_eq!(labels(r#"{"labels": {}}"#), map(&[]));
    assert_eq!(
        labels(r#"{"labels": {"app": "web", "tier" : "front\u0065nd", "a\/b": "x\"y"}}"#),
        map(&[("app", "web"), ("tier", "frontend"), ("a/b", "x\"y")])
    );
    assert_eq!(
        labels(r#"{"labels": {"app": "web", "app": "api"}}"#),
        map(&[("app", "api")]),
        "the last one stands, as in a decoded map"
    );
    assert_eq!(
        labels(r#"{"labels": {"app": "web"}, "labels": {"tier": "x"}}"#),
        map(&[("tier", "x")])
    );
    for bad in [
        r#"{"labels": []}"#,
        r#"{"labels": "app=web"}"#,
        r#"{"labels": 1}"#,
        r#"{"labels": {"app": 1}}"#,
        r#"{"labels": {"app": null}}"#,
        r#"{"labels": {"app": {"x": "y"}}}"#,
        r#"{"labels": {"ok": "1", "app": ["web"]}}"#,
        r#"{"labels": {"app": "\ud800"}}"#,
    ] {
        assert_eq!(
            labels(bad),
            Err("metadata.labels: expected a map of strings".to_owned()),
            "{bad}"
        );
        // Decoding into a Pod refuses them as well.
        let pod = format!(r#"{{"metadata": {bad}}}"#);
        assert!(serde_json::from_str::<Pod>(&pod).is_err(), "{pod}");
    }
}

const BUDGETS: &str = r#"
apiVersion: policy.kruise.io/v1beta1
kind: PodUnavailableBudget
metadata: {name: pub-web, namespace: default}
spec: {selector: {matchLabels: {app: web}}, maxUnavailable: 1}
---
apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata: {name: pub-t, namespace: default}
spec: {targetRef: {apiVersion: apps/v1, kind: Deployment, name: api}, maxUnavailable: 1}
"#;

#[test]
fn the_related_pub_is_stamped_with_both_keys_in_the_same_patch_as_sidecars() {
    // spec/podunavailablebudget.md §12 scenario 40, with SidecarSets injecting too.
    let gates = FeatureGates::default();
    let view = cluster(&format!("{TWO_SETS}\n---\n{BUDGETS}"));
    let req = request("CREATE", pod(json!({"app": "web"})), "");
    let verdict = mutate(&req, &view, &ctx(&gates)).unwrap();
    let out = apply(&req, &verdict);
    assert_eq!(names(&out, "containers"), ["envoy", "app", "log-agent"]);
    let annotations = &out["metadata"]["annotations"];
    assert_eq!(annotations["pub.kruise.io/related-pub"], "pub-web");
    assert_eq!(annotations["kruise.io/related-pub"], "pub-web");
    assert_eq!(
        annotations[inject::INJECTED_LIST_ANNOTATION],
        "a-mesh,b-logging"
    );
}

#[test]
fn the_related_pub_follows_the_known_workload_and_the_gates() {
    // Scenarios 41 and 42; a known workload that no targetRef names falls to no selector of pub-t.
    let view = cluster(BUDGETS);
    let req = request("CREATE", pod(json!({"app": "api"})), "");
    let api = related::WorkloadKey {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "api".into(),
    };
    let gates = FeatureGates::default();
    let with = |workload, gates| {
        let mut c = ctx(gates);
        c.workload = workload;
        let verdict = mutate(&req, &view, &c).unwrap();
        apply(&req, &verdict)["metadata"]["annotations"]["pub.kruise.io/related-pub"].clone()
    };
    assert_eq!(with(Some(&api), &gates), "pub-t");
    assert_eq!(with(None, &gates), Value::Null, "unknown workload");
    let off = FeatureGates::parse(
        "PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=false",
    )
    .unwrap();
    assert_eq!(with(Some(&api), &off), Value::Null, "both gates off");
    let update_only = FeatureGates::parse(
        "PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=true",
    )
    .unwrap();
    assert_eq!(with(Some(&api), &update_only), "pub-t");
    // UPDATE is not stamped.
    let update = request("UPDATE", pod(json!({"app": "web"})), "");
    let verdict = mutate(&update, &view, &ctx(&gates)).unwrap();
    assert!(verdict.patch.is_empty());
}

/// spec/container-launch-priority.md §8 scenario 10 through the chain: the name is fixed in the patch, the
/// envs name its barrier, and the result decodes as a Pod (one patch, steps 4 and 5 seeing the new name).
#[test]
fn launch_priority_fixes_a_generate_name_pod_name_in_the_same_patch() {
    let gates = FeatureGates::default();
    let mut object = pod(json!({"app": "web"}));
    object["spec"]["containers"] = json!([
        {"name": "a", "image": "a:1", "env": [{"name": "KRUISE_CONTAINER_PRIORITY", "value": "1"}], "x-unknown": 1},
        {"name": "b", "image": "b:1"}
    ]);
    let req = request("CREATE", object, "");
    let verdict = mutate(
        &req,
        &cluster("apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n"),
        &ctx(&gates),
    )
    .unwrap();
    let patched = apply(&req, &verdict);
    let name = patched["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    assert_eq!(patched["metadata"]["x-unknown-meta"], "kept");
    assert_eq!(patched["spec"]["containers"][0]["x-unknown"], 1);
    for (i, key) in ["p_1", "p_0"].iter().enumerate() {
        let env = patched["spec"]["containers"][i]["env"].as_array().unwrap();
        assert_eq!(
            env.last().unwrap(),
            &json!({"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"name": format!("{name}-barrier"), "key": key}}})
        );
    }
    let _: Pod = serde_json::from_value(patched).expect("the Pod schema accepts the result");
    // An UPDATE is never gated.
    let update = request("UPDATE", pod(json!({"app": "web"})), "");
    let verdict = mutate(&update, &cluster(""), &ctx(&gates)).unwrap();
    assert!(verdict.patch.is_empty());
}

/// A CloneSet pod opted in to enhanced liveness, selected by a SidecarSet whose sidecar has a liveness
/// probe, and by a PodProbeMarker probing that sidecar.
const PROBED: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: default}
---
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: mesh, annotations: {kruise.io/sidecarset-hash: hm, kruise.io/sidecarset-hash-without-image: wm}}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - name: envoy
    image: "envoy:1"
    podInjectPolicy: AfterAppContainer
    shareVolumePolicy: {type: disabled}
    livenessProbe: {tcpSocket: {port: 15000}, periodSeconds: 5}
---
apiVersion: apps.kruise.io/v1alpha1
kind: PodProbeMarker
metadata: {name: mesh-ready, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  probes:
  - {name: ready, containerName: envoy, podConditionType: mesh.io/ready, probe: {exec: {command: [check]}}}
"#;

fn probed_pod() -> Value {
    let mut object = pod(json!({"app": "web"}));
    object["metadata"]["annotations"] = json!({"apps.kruise.io/using-enhanced-liveness": "true"});
    object["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet", "name": "web", "uid": "cs", "controller": true}]);
    object["spec"]["containers"][0]["livenessProbe"] =
        json!({"httpGet": {"path": "/", "port": 80}});
    object
}

/// spec/pod-mutating-misc.md §12 scenario 20, and §3's ordering: steps 7 and 8 see the sidecars step 3
/// injected. Both gates are off by default (OpenKruise's defaults): then only the sidecar goes in.
#[test]
fn enhanced_liveness_and_probe_markers_see_injected_sidecars_when_their_gates_are_on() {
    let view = cluster(PROBED);
    let req = request("CREATE", probed_pod(), "");
    let gates: FeatureGates = "EnhancedLivenessProbe=true,EnablePodProbeMarkerOnServerless=true"
        .parse()
        .unwrap();
    let patched = apply(&req, &mutate(&req, &view, &ctx(&gates)).unwrap());
    assert_eq!(names(&patched, "containers"), ["app", "envoy"]);
    let annotations = &patched["metadata"]["annotations"];
    assert_eq!(
        annotations["apps.kruise.io/container-probe-context"],
        r#"[{"name":"app","livenessProbe":{"httpGet":{"path":"/","port":80}}},{"name":"envoy","livenessProbe":{"tcpSocket":{"port":15000},"periodSeconds":5}}]"#
    );
    for c in patched["spec"]["containers"].as_array().unwrap() {
        assert!(c.get("livenessProbe").is_none(), "{c}");
    }
    assert_eq!(
        patched["spec"]["containers"][0]["x-unknown-field"],
        json!({"a": 1})
    );
    assert_eq!(
        annotations["kruise.io/podprobe"],
        r#"[{"name":"ready","containerName":"envoy","probe":{"exec":{"command":["check"]}},"podConditionType":"mesh.io/ready"}]"#
    );
    assert_eq!(annotations["kruise.io/podprobemarker-list"], "mesh-ready");

    let defaults = FeatureGates::default();
    let patched = apply(&req, &mutate(&req, &view, &ctx(&defaults)).unwrap());
    assert_eq!(names(&patched, "containers"), ["app", "envoy"]);
    assert!(
        patched["spec"]["containers"][1]
            .get("livenessProbe")
            .is_some()
    );
    let annotations = patched["metadata"]["annotations"].as_object().unwrap();
    for key in [
        "apps.kruise.io/container-probe-context",
        "kruise.io/podprobe",
        "kruise.io/podprobemarker-list",
    ] {
        assert!(!annotations.contains_key(key), "{key}");
    }
}

/// §3 step 4: a step's error stops the chain with 500; nothing of the earlier steps (here the sidecars) is
/// answered.
#[test]
fn an_invalid_persistent_pod_state_whitelist_fails_the_pod_create() {
    let gates = FeatureGates::default();
    let whitelist = WhitelistSource::Present("{not json".into());
    let ctx = PodContext {
        pps_whitelist: Some(&whitelist),
        ..ctx(&gates)
    };
    let req = request("CREATE", pod(json!({"app": "web"})), "");
    let err = mutate(&req, &cluster(TWO_SETS), &ctx).unwrap_err();
    assert_eq!(err.http_code(), 500);
    assert!(
        err.to_string()
            .contains("PPS_Watch_Custom_Workload_WhiteList"),
        "{err}"
    );
}

/// Step 6 through the chain: a StatefulSet pod's recorded state is found by the pod's name (a pod without
/// one, `generateName` only, has none), in the same patch as the sidecars; a v1alpha1 PersistentPodState
/// reads as v1beta1.
#[test]
fn the_persistent_pod_state_step_finds_the_state_by_the_pods_name_beside_injection() {
    let gates = FeatureGates::default();
    let owner = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s",
        "controller": true}]);
    let mut object = pod(json!({"app": "web"}));
    object["metadata"]["ownerReferences"] = owner.clone();
    let req = request("CREATE", object, "");
    let view = cluster(&format!(
        "{TWO_SETS}\n---\n{}",
        r#"
apiVersion: apps.kruise.io/v1alpha1
kind: PersistentPodState
metadata: {name: db, namespace: default}
spec:
  targetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
  requiredPersistentTopology: {nodeTopologyKeys: [zone]}
status:
  observedGeneration: 1
  podStates: {db-0: {nodeTopologyLabels: {zone: a}}}
"#
    ));
    // Without a name (generateName only), no state is found.
    let patched = apply(&req, &mutate(&req, &view, &ctx(&gates)).unwrap());
    assert!(patched["spec"].get("nodeSelector").is_none());
    let mut named = pod(json!({"app": "web"}));
    named["metadata"]["name"] = json!("db-0");
    named["metadata"]["ownerReferences"] = owner;
    let req = request("CREATE", named, "");
    let patched = apply(&req, &mutate(&req, &view, &ctx(&gates)).unwrap());
    assert_eq!(patched["spec"]["nodeSelector"], json!({"zone": "a"}));
    assert_eq!(
        patched["metadata"]["annotations"]["kruise.io/injected-persistent-pod-state"],
        "db"
    );
    // Sidecars went in in the same patch.
    assert_eq!(names(&patched, "containers"), ["envoy", "app", "log-agent"]);
}

/// The whole chain on a Job pod (issue: SidecarSet injection with a priority env, container launch priority,
/// native-sidecar conversion when asked): one patch; the mesh proxy injected before the app starts first
/// (p_1 before p_0), the log sidecar marked KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT becomes a native sidecar
/// (appended to initContainers, restartPolicy Always, no barrier: spec/sidecar-terminator.md §11.2 steps 3
/// and 7), and Kubernetes' own pod validation accepts the result.
#[test]
fn injection_launch_priority_and_native_sidecars_in_one_patch_that_kubernetes_accepts() {
    const MESH: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: default}
---
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {name: mesh, annotations: {kruise.io/sidecarset-hash: hm, kruise.io/sidecarset-hash-without-image: wm}}
spec:
  selector: {matchLabels: {app: batch}}
  containers:
  - name: envoy
    image: "envoy:1"
    imagePullPolicy: IfNotPresent
    terminationMessagePolicy: File
    podInjectPolicy: BeforeAppContainer
    shareVolumePolicy: {type: disabled}
    env: [{name: KRUISE_CONTAINER_PRIORITY, value: "1"}]
"#;
    let gates = FeatureGates::default();
    let object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-1-abcde", "labels": {"app": "batch"},
            "annotations": {"kruise-webhook.io/native-sidecar-conversion": "true"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "job-1", "uid": "j", "controller": true}]},
        "spec": {"restartPolicy": "Never",
            "initContainers": [{"name": "setup", "image": "busybox:1", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "containers": [
                {"name": "main", "image": "job:1", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"},
                {"name": "log", "image": "log:1", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
                    "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}],
                    "readinessProbe": {"exec": {"command": ["true"]}}, "x-unknown": 1}]}});
    let req = request("CREATE", object, "");
    let verdict = mutate(&req, &cluster(MESH), &ctx(&gates)).unwrap();
    let patched = apply(&req, &verdict);
    assert_eq!(names(&patched, "containers"), ["envoy", "main"]);
    assert_eq!(names(&patched, "initContainers"), ["setup", "log"]);
    let log = &patched["spec"]["initContainers"][1];
    assert_eq!(log["restartPolicy"], "Always");
    assert_eq!(log["x-unknown"], 1);
    assert_eq!(
        log["env"],
        json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}])
    );
    let barrier_key = |i: usize| {
        let env = patched["spec"]["containers"][i]["env"].as_array().unwrap();
        env.last().unwrap()["valueFrom"]["configMapKeyRef"]["key"].clone()
    };
    assert_eq!(
        (barrier_key(0), barrier_key(1)),
        (json!("p_1"), json!("p_0"))
    );
    // Kubernetes' ValidatePodSpec (containers, init containers incl. the restartable one, volumes).
    let list = |key: &str| -> Vec<serde_json::Map<String, Value>> {
        patched["spec"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let mut c = c.as_object().unwrap().clone();
                c.remove("x-unknown");
                c
            })
            .collect()
    };
    let (init, containers) = (list("initContainers"), list("containers"));
    let spec = crate::validation::pod::PodSpec {
        init_containers: &init,
        containers: &containers,
        volumes: &[],
        termination_grace_period_seconds: 30,
    };
    let errors = crate::validation::pod::validate_pod_spec(
        &spec,
        &crate::validation::field_error::FieldPath::new("spec"),
    )
    .unwrap();
    assert!(errors.is_empty(), "{errors:?}");

    // Not asked for: nothing moves.
    let mut plain = req
        .object
        .as_ref()
        .map(|o| serde_json::from_str::<Value>(o.get()).unwrap())
        .unwrap();
    plain["metadata"]["annotations"] = json!({});
    let req = request("CREATE", plain, "");
    let patched = apply(&req, &mutate(&req, &cluster(MESH), &ctx(&gates)).unwrap());
    assert_eq!(names(&patched, "containers"), ["envoy", "main", "log"]);
    assert_eq!(names(&patched, "initContainers"), ["setup"]);
}

/// The WorkloadSpread step's changes on the pod without its lists: written back member by member when
/// they stay among the spec members built, the labels and the annotations; anything else sends the step
/// to the whole pod.
mod spread_changes {
    use super::super::SpreadChanges;
    use serde_json::json;

    fn before() -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "a"}, "annotations": {"keep": "y"}},
            "spec": {"tolerations": [{"key": "t", "operator": "Exists"}]}})
    }

    #[test]
    fn spec_members_labels_and_annotations_are_written_back() {
        let mut after = before();
        after["spec"]["affinity"] = json!({"nodeAffinity": {}});
        after["spec"]["tolerations"] = json!([]);
        after["metadata"]["labels"]["zone"] = json!("z1");
        after["metadata"]["annotations"]["new"] = json!("v");
        let changes = SpreadChanges::between(&before(), &after).expect("member changes");
        assert_eq!(
            changes.spec,
            vec![
                ("affinity", Some(json!({"nodeAffinity": {}}))),
                ("tolerations", Some(json!([])))
            ]
        );
        assert_eq!(
            changes.labels,
            Some(Some(json!({"app": "a", "zone": "z1"})))
        );
        assert_eq!(
            changes.annotations,
            vec![("new".to_owned(), "v".to_owned())]
        );
    }

    #[test]
    fn a_spec_absent_before_is_an_empty_one() {
        let mut before = before();
        before.as_object_mut().unwrap().remove("spec");
        let mut after = before.clone();
        after["spec"] = json!({"affinity": {"nodeAffinity": {}}});
        let changes = SpreadChanges::between(&before, &after).expect("member changes");
        assert_eq!(
            changes.spec,
            vec![("affinity", Some(json!({"nodeAffinity": {}})))]
        );
        assert!(changes.labels.is_none() && changes.annotations.is_empty());
    }

    #[test]
    fn anything_else_goes_to_the_whole_pod() {
        type Change = fn(&mut serde_json::Value);
        let cases: [(&str, Change); 7] = [
            ("a list", |p| {
                p["spec"]["containers"] = json!([{"name": "c"}])
            }),
            ("another spec member", |p| {
                p["spec"]["hostNetwork"] = json!(true)
            }),
            ("the name", |p| p["metadata"]["name"] = json!("q")),
            ("a top member", |p| {
                p["status"] = json!({"phase": "Pending"})
            }),
            ("an annotation removed", |p| {
                p["metadata"]["annotations"] = json!({"other": "z"});
            }),
            ("an annotation not a string", |p| {
                p["metadata"]["annotations"]["n"] = json!(1);
            }),
            ("labels not strings", |p| {
                p["metadata"]["labels"]["n"] = json!(1)
            }),
        ];
        for (what, change) in cases {
            let mut after = before();
            change(&mut after);
            assert!(
                SpreadChanges::between(&before(), &after).is_none(),
                "{what}: expected the whole pod"
            );
        }
    }
}

/// The WorkloadSpread step on the pod's members answers as on the whole pod: same patched pod (the later
/// steps seeing the labels a subset added), same intents and warnings, same errors, for subset patches
/// within the members, outside them, with directives, and malformed, on pods of several shapes.
mod spread_members_match_the_whole_pod {
    use super::*;
    use crate::workloadspread::SpreadFacts;
    use crate::workloadspread::workload::{ChainEnd, Link, OwnerChain};

    const PATCHES: [&str; 21] = [
        r#"{}"#,
        r#"{"metadata":{"labels":{"zone":"z1"}}}"#,
        r#"{"metadata":{"labels":{"app":null}}}"#,
        r#"{"metadata":{"annotations":{"note":"x"}}}"#,
        r#"{"metadata":{"annotations":{"team":null}}}"#,
        r#"{"spec":{"nodeSelector":{"disk":"ssd"}}}"#,
        r#"{"spec":{"tolerations":[{"key":"k","operator":"Exists"}]}}"#,
        r#"{"spec":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"podAffinityTerm":{"topologyKey":"zone","labelSelector":{"matchLabels":{"app":"web"}}}}]}}}}"#,
        r#"{"spec":{"priorityClassName":"low"}}"#,
        r#"{"spec":{"containers":[{"name":"app","env":[{"name":"Z","value":"1"}]}]}}"#,
        r#"{"spec":{"hostNetwork":true}}"#,
        r#"{"metadata":{"labels":{"$patch":"replace","zone":"z1"}}}"#,
        r#"{"spec":{"$retainKeys":["containers"],"containers":[{"name":"app","image":"app:2"}]}}"#,
        r#"{"metadata":{"labels":{"zone":"z1"},"annotations":{"note":"x"}},"spec":{"schedulerName":"s","runtimeClassName":"r","topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}}"#,
        r#"{"metadata":{"name":"other"}}"#,
        r#"{"spec":{"nodeSelector":null}}"#,
        r#"{"status":{"phase":"Pending"}}"#,
        r#"{"metadata":{"labels":{"n":1}}}"#,
        r#"{"spec":{"tolerations":"x"}}"#,
        r#"{"metadata":{"annotations":{"kruise.io/sidecarset-hash":"x"}}}"#,
        r#"{"spec":{"volumes":[{"name":"v","emptyDir":{}}]},"metadata":{"labels":{"zone":"z1"}}}"#,
    ];

    fn pods() -> [Value; 3] {
        let owner = json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
            "uid": "uid-cs", "controller": true}]);
        [
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "cs-a", "labels": {"app": "web"}, "annotations": {"team": "t"},
                    "ownerReferences": owner},
                "spec": {"containers": [{"name": "app", "image": "app:1"}], "nodeSelector": {"pool": "p"},
                    "tolerations": [{"key": "t", "operator": "Exists"}]}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": "cs-", "ownerReferences": owner},
                "spec": {"containers": [{"name": "app", "image": "app:1"}]}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "cs-c", "labels": null, "annotations": null, "ownerReferences": owner},
                "spec": {"containers": [{"name": "app", "image": "app:1"}], "priorityClassName": "high",
                    "priority": 5, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}}},
                "status": {}}),
        ]
    }

    fn view(patch: &str) -> FixtureCluster {
        cluster(&format!(
            r#"
apiVersion: v1
kind: Namespace
metadata: {{name: default}}
---
apiVersion: apps.kruise.io/v1beta1
kind: SidecarSet
metadata: {{name: zonal, annotations: {{kruise.io/sidecarset-hash: hz, kruise.io/sidecarset-hash-without-image: wz}}}}
spec:
  selector: {{matchLabels: {{zone: z1}}}}
  containers: [{{name: zonal-agent, image: "z:1", podInjectPolicy: AfterAppContainer, shareVolumePolicy: {{type: disabled}}}}]
---
apiVersion: apps.kruise.io/v1beta1
kind: WorkloadSpread
metadata: {{name: ws, namespace: default}}
spec:
  targetRef: {{apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet, name: cs}}
  subsets:
  - name: a
    requiredNodeSelector: {{matchExpressions: [{{key: zone, operator: In, values: [z1]}}]}}
    maxReplicas: 5
    patch: {patch}
"#
        ))
    }

    /// The answer as compared: the patched pod, the intents and warnings; or the error.
    fn answer(
        req: &AdmissionRequest,
        view: &FixtureCluster,
        whole: bool,
    ) -> Result<String, String> {
        let gates = FeatureGates::default();
        let facts = SpreadFacts {
            chain: OwnerChain {
                links: vec![Link {
                    api_version: "apps.kruise.io/v1alpha1".into(),
                    kind: "CloneSet".into(),
                    name: "cs".into(),
                }],
                end: ChainEnd::Top,
            },
            custom: Vec::new(),
            replicas: None,
            generated_uid: "u".into(),
        };
        let ctx = PodContext {
            spreads: Some(&facts),
            ..ctx(&gates)
        };
        super::super::WHOLE_POD_ONLY.with(|w| w.set(whole));
        let verdict = mutate(req, view, &ctx);
        super::super::WHOLE_POD_ONLY.with(|w| w.set(false));
        let verdict = verdict.map_err(|e| format!("{e:?}"))?;
        Ok(format!(
            "{}\n{:?}\n{:?}",
            apply(req, &verdict),
            verdict.intents,
            verdict.warnings
        ))
    }

    #[test]
    fn for_every_patch_and_pod() {
        let mut on_members = 0;
        for patch in PATCHES {
            let view = view(patch);
            for pod in pods() {
                let req = request("CREATE", pod.clone(), "");
                let whole = answer(&req, &view, true);
                let members = answer(&req, &view, false);
                assert_eq!(members, whole, "patch {patch} on {pod}");
                on_members += usize::from(
                    whole.is_ok() && !patch.contains('$') && !patch.contains("containers"),
                );
            }
        }
        // The comparison is not empty: most cases answer, and some of them carry the subset's changes.
        assert!(on_members > 30, "{on_members}");
    }
}
