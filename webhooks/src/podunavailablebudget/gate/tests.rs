//! The gate on bad input (a clear 400, never a spend) and on the edges the fixtures do not reach.

use serde_json::{Value, json};

use super::*;
use crate::fixture::FixtureCluster;

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
            "annotations": {"pub.kruise.io/related-pub": "pub-web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn cluster(ignored: Option<Value>) -> FixtureCluster {
    let mut budget = json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "resourceVersion": "3"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
        "status": {"unavailableAllowed": 1, "currentAvailable": 2, "desiredAvailable": 1, "totalReplicas": 2}});
    if let Some(selector) = ignored {
        budget["spec"]["ignoredPodSelector"] = selector;
    }
    let mut cluster = FixtureCluster::default();
    cluster.insert(pod("web-0")).unwrap();
    cluster.insert(budget).unwrap();
    cluster
}

fn request(
    operation: &str,
    sub: &str,
    object: Value,
    old: Value,
    options: Value,
) -> AdmissionRequest {
    serde_json::from_value(json!({
        "uid": "u", "operation": operation, "name": "web-0", "namespace": "default", "subResource": sub,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "userInfo": {"username": "alice"}, "object": object, "oldObject": old, "options": options
    }))
    .unwrap()
}

fn run(req: &AdmissionRequest, cluster: &FixtureCluster) -> Result<Verdict, WebhookError> {
    let gates = FeatureGates::default();
    validate(
        req,
        cluster,
        &GateContext {
            gates: &gates,
            now: "2026-03-01T10:00:00Z",
        },
    )
}

fn decode_error(result: Result<Verdict, WebhookError>) -> String {
    match result {
        Err(e @ WebhookError::Decode(_)) => {
            assert_eq!(e.http_code(), 400);
            e.to_string()
        }
        other => panic!("expected a 400, got {other:?}"),
    }
}

#[test]
fn a_delete_spends_from_the_resource_version_read() {
    let cluster = cluster(None);
    let req = request(
        "DELETE",
        "",
        Value::Null,
        pod("web-0"),
        json!({"kind": "DeleteOptions"}),
    );
    let verdict = run(&req, &cluster).unwrap();
    assert!(verdict.is_allowed());
    let [StatusIntent::BudgetSpend(spend)] = verdict.intents.as_slice() else {
        panic!("one spend: {:?}", verdict.intents)
    };
    assert_eq!(spend.budget.metadata.resource_version.as_deref(), Some("3"));
    let status = spend.budget.status.as_ref().unwrap();
    assert_eq!(status.unavailable_allowed, 0);
    assert_eq!(
        serde_json::to_value(&status.disrupted_pods).unwrap(),
        json!({"web-0": "2026-03-01T10:00:00Z"})
    );
    assert_eq!(spend.operation, "DELETE");
}

#[test]
fn an_eviction_body_that_is_not_an_eviction_is_a_400() {
    let cluster = cluster(None);
    for body in [
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0"}}),
        json!([1, 2]),
        json!("evict"),
        json!({"kind": "Eviction", "deleteOptions": {"dryRun": "All"}}),
        json!({"kind": "Eviction", "deleteOptions": 7}),
    ] {
        let req = request("CREATE", "eviction", body.clone(), Value::Null, Value::Null);
        let message = decode_error(run(&req, &cluster));
        assert!(message.contains("Eviction"), "{body}: {message}");
    }
    let req = request("CREATE", "eviction", Value::Null, Value::Null, Value::Null);
    assert_eq!(
        decode_error(run(&req, &cluster)),
        "there is no content to decode"
    );
}

#[test]
fn missing_or_malformed_options_are_a_400_never_a_spend() {
    let cluster = cluster(None);
    let req = request("DELETE", "", Value::Null, pod("web-0"), Value::Null);
    assert_eq!(
        decode_error(run(&req, &cluster)),
        "there is no content to decode"
    );
    for options in [json!({"dryRun": "All"}), json!([1]), json!({"dryRun": [1]})] {
        let req = request("DELETE", "", Value::Null, pod("web-0"), options.clone());
        assert!(
            decode_error(run(&req, &cluster)).starts_with("decoding the request options"),
            "{options}"
        );
    }
    let mut new = pod("web-0");
    new["spec"]["containers"][0]["image"] = json!("nginx:2");
    let req = request("UPDATE", "", new, pod("web-0"), Value::Null);
    assert_eq!(
        decode_error(run(&req, &cluster)),
        "there is no content to decode"
    );
}

#[test]
fn a_pod_whose_maps_are_not_maps_of_strings_is_a_400() {
    let cluster = cluster(None);
    for (pointer, value) in [
        ("/metadata/labels", json!({"app": 3})),
        ("/metadata/annotations", json!(["pub-web"])),
        (
            "/metadata/annotations",
            json!({"pub.kruise.io/related-pub": {"name": "pub-web"}}),
        ),
        ("/status/conditions", json!("Ready")),
        ("/metadata", json!(5)),
    ] {
        let mut old = pod("web-0");
        *old.pointer_mut(pointer).unwrap() = value.clone();
        let req = request("DELETE", "", Value::Null, old, json!({}));
        assert!(
            decode_error(run(&req, &cluster)).starts_with("decoding the pod"),
            "{pointer} = {value}"
        );
    }
    let req = request("DELETE", "", Value::Null, json!("a pod"), json!({}));
    decode_error(run(&req, &cluster));
}

#[test]
fn an_ignored_pod_selector_that_cannot_be_evaluated_is_a_400() {
    let cluster = cluster(Some(
        json!({"matchExpressions": [{"key": "canary", "operator": "Matches", "values": ["x"]}]}),
    ));
    let req = request("DELETE", "", Value::Null, pod("web-0"), json!({}));
    assert_eq!(
        decode_error(run(&req, &cluster)),
        "\"Matches\" is not a valid pod selector operator"
    );
    // An empty ignoredPodSelector ignores nothing.
    let cluster = self::cluster(Some(json!({})));
    let verdict = run(&req, &cluster).unwrap();
    assert_eq!(verdict.intents.len(), 1);
}

#[test]
fn requests_the_gate_does_not_decide_on_are_allowed_untouched() {
    let cluster = cluster(None);
    for (operation, sub) in [
        ("DELETE", "status"),
        ("UPDATE", "status"),
        ("CREATE", ""),
        ("CONNECT", "exec"),
    ] {
        let req = request(operation, sub, pod("web-0"), pod("web-0"), json!({}));
        let verdict = run(&req, &cluster).unwrap();
        assert!(
            verdict.is_allowed() && verdict.intents.is_empty(),
            "{operation} {sub}"
        );
    }
    // A DELETE without the old object (an old apiserver) cannot be checked: allowed.
    let req = request("DELETE", "", Value::Null, Value::Null, json!({}));
    assert!(run(&req, &cluster).unwrap().intents.is_empty());
}

#[test]
fn a_resize_through_the_subresource_is_gated() {
    let cluster = cluster(None);
    let mut old = pod("web-0");
    old["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
    let mut new = old.clone();
    new["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "200m"}});
    let req = request("UPDATE", "resize", new, old, json!({}));
    let verdict = run(&req, &cluster).unwrap();
    let [StatusIntent::BudgetSpend(spend)] = verdict.intents.as_slice() else {
        panic!("one spend: {:?}", verdict.intents)
    };
    assert_eq!(spend.operation, "RESIZE");
}
