//! deploy/ and the binary must not drift: the shipped webhook configuration registers exactly the webhooks
//! the server serves (names, paths, rules, selectors, DECISIONS 2 settings), every shipped CRD gets the
//! conversion webhook (DECISIONS 16), and the Deployment probes and ports are the binary's defaults. The
//! rendered kustomizations, their schema and the Deployment's command line: tests/install.rs.

mod common;

use std::collections::BTreeSet;

use kruise_webhooks::FeatureGates;
use kruise_webhooks::registry::{FailurePolicy, WEBHOOKS};
use serde_json::{Value, json};

fn yaml_docs(path: &str) -> Vec<Value> {
    let text = common::read(&common::root().join(path));
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn check_configuration(file: &str, kind: &str, name: &str, mutating: bool) {
    let docs = yaml_docs(file);
    let config = docs
        .iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("{kind} in {file}"));
    assert_eq!(config["metadata"]["name"], name);
    assert_eq!(
        config["metadata"]["annotations"]["template"], "",
        "re-captured after kubectl apply"
    );
    let shipped = config["webhooks"].as_array().unwrap();
    let served: BTreeSet<&str> = kruise_webhooks::registry::routes(
        &FeatureGates::default(),
        kruise_webhooks::registry::Served::ALL,
    )
    .into_iter()
    .map(|(p, _)| p)
    .collect();
    let specs: Vec<_> = WEBHOOKS.iter().filter(|w| w.mutating == mutating).collect();
    assert_eq!(
        shipped.len(),
        specs.len(),
        "{file}: one shipped webhook per registered one"
    );
    for spec in specs {
        let hook = shipped
            .iter()
            .find(|h| h["name"] == spec.name)
            .unwrap_or_else(|| panic!("{} not shipped", spec.name));
        let path = hook["clientConfig"]["service"]["path"].as_str().unwrap();
        assert_eq!(path, spec.path, "{}", spec.name);
        assert!(served.contains(path), "{path} is shipped but not served");
        assert_eq!(
            hook["clientConfig"]["service"]["name"],
            "kruise-webhook-service"
        );
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        assert!(
            hook["clientConfig"].get("caBundle").is_none(),
            "the binary or cert-manager sets caBundle"
        );
        assert_eq!(hook["timeoutSeconds"], 10, "DECISIONS 2");
        assert_eq!(
            hook["sideEffects"],
            spec.side_effects.as_str(),
            "{}: DECISIONS 2",
            spec.name
        );
        assert_eq!(hook["admissionReviewVersions"], json!(["v1", "v1beta1"]));
        let policy = match spec.failure_policy {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        };
        assert_eq!(hook["failurePolicy"], policy, "{}", spec.name);
        let rules: Vec<Value> = spec
            .rules
            .iter()
            .map(|r| {
                json!({"operations": r.operations.iter().map(|o| o.as_str()).collect::<Vec<_>>(),
                       "apiGroups": r.groups, "apiVersions": r.versions, "resources": r.resources, "scope": "*"})
            })
            .collect();
        assert_eq!(hook["rules"], json!(rules), "{}", spec.name);
        let selector = |v: &Value| if v.is_null() { json!({}) } else { v.clone() };
        assert_eq!(
            selector(&hook["objectSelector"]),
            serde_json::to_value(spec.object_selector()).unwrap(),
            "{}",
            spec.name
        );
        assert_eq!(
            selector(&hook["namespaceSelector"]),
            serde_json::to_value(spec.namespace_selector()).unwrap(),
            "{}",
            spec.name
        );
    }
}

#[test]
fn shipped_webhooks_are_the_registry() {
    check_configuration(
        "deploy/base/webhooks.yaml",
        "ValidatingWebhookConfiguration",
        kruise_webhook::certs::VALIDATING_CONFIGURATION,
        false,
    );
    check_configuration(
        "deploy/base/mutating-webhooks.yaml",
        "MutatingWebhookConfiguration",
        kruise_webhook::certs::MUTATING_CONFIGURATION,
        true,
    );
}

#[test]
fn every_shipped_crd_converts_through_our_endpoint() {
    let kustomization = yaml_docs("deploy/base/kustomization.yaml").remove(0);
    let resources: Vec<&str> = kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    let shared = common::root().join("../shared/crds");
    let mut crds = 0;
    for resource in resources.iter().filter(|r| r.starts_with("crds/")) {
        let crd = yaml_docs(&format!("deploy/base/{resource}")).remove(0);
        assert_eq!(crd["kind"], "CustomResourceDefinition");
        let served = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["served"] == true)
            .count();
        assert!(
            served > 1,
            "{resource} serves one version: it needs no conversion"
        );
        // Verbatim copies of OpenKruise's CRDs, when ../shared is beside the checkout.
        let original = shared.join(resource.trim_start_matches("crds/"));
        if original.exists() {
            assert_eq!(
                common::read(&common::root().join("deploy/base").join(resource)),
                common::read(&original),
                "{resource}"
            );
        }
        crds += 1;
    }
    assert_eq!(crds, 6);
    let patch = &kustomization["patches"][0];
    assert_eq!(patch["target"]["kind"], "CustomResourceDefinition");
    let ops = yaml_docs(&format!("deploy/base/{}", patch["path"].as_str().unwrap())).remove(0);
    let conversion = &ops[0]["value"];
    assert_eq!(ops[0]["path"], "/spec/conversion");
    assert_eq!(conversion["strategy"], "Webhook");
    assert_eq!(
        conversion["webhook"]["clientConfig"]["service"]["path"],
        kruise_webhooks::registry::CONVERT_PATH
    );
    assert_eq!(
        conversion["webhook"]["conversionReviewVersions"],
        json!(["v1", "v1beta1"])
    );
}

#[test]
fn deployment_probes_and_ports_are_the_binary_defaults() {
    let docs = yaml_docs("deploy/base/deployment.yaml");
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["args"][0], "serve");
    let ports: BTreeSet<i64> = container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["containerPort"].as_i64().unwrap())
        .collect();
    assert_eq!(ports, BTreeSet::from([9876, 8080, 8000]));
    let port_of = |probe: &Value| match &probe["httpGet"]["port"] {
        Value::String(name) => container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == *name)
            .unwrap()["containerPort"]
            .clone(),
        number => number.clone(),
    };
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(
        port_of(&container["readinessProbe"]),
        8000,
        "the --health-probe-addr default"
    );
    assert_eq!(port_of(&container["livenessProbe"]), 8000);
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    let mounts: BTreeSet<&str> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    assert!(
        mounts.contains("/tmp/kruise-webhook-certs") && mounts.contains("/log"),
        "{mounts:?}"
    );
}

/// The verbs the ClusterRole `kruise-webhook` grants on `group`/`resource` (rules without resourceNames).
fn cluster_role_verbs(group: &str, resource: &str) -> BTreeSet<String> {
    let docs = yaml_docs("deploy/base/rbac.yaml");
    let role = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "kruise-webhook")
        .expect("ClusterRole kruise-webhook");
    let lists = |rule: &Value, key: &str, want: &str| {
        rule[key]
            .as_array()
            .is_some_and(|l| l.iter().any(|v| v == want || v == "*"))
    };
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r.get("resourceNames").is_none())
        .filter(|r| lists(r, "apiGroups", group) && lists(r, "resources", resource))
        .flat_map(|r| r["verbs"].as_array().unwrap().iter())
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_caches_the_webhooks_read_may_list_and_watch() {
    // An informer the RBAC forbids never syncs, and the replica never becomes ready (DECISIONS 22).
    for (group, resource) in [
        ("", "pods"),
        ("", "namespaces"),
        ("", "persistentvolumeclaims"),
        ("apps.kruise.io", "sidecarsets"),
        ("policy.kruise.io", "podunavailablebudgets"),
        ("apps.kruise.io", "workloadspreads"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps.kruise.io", "clonesets"),
    ] {
        let verbs = cluster_role_verbs(group, resource);
        for verb in ["list", "watch"] {
            assert!(
                verbs.contains(verb),
                "{group}/{resource}: {verb} not granted ({verbs:?})"
            );
        }
    }
}

#[test]
fn the_launch_priority_barrier_controller_may_do_what_it_does() {
    // spec/container-launch-priority.md §4.2: the barrier ConfigMap's GET, create and patch; the pod's patch.
    for (group, resource, verb) in [
        ("", "configmaps", "get"),
        ("", "configmaps", "create"),
        ("", "configmaps", "patch"),
        ("", "pods", "patch"),
    ] {
        let verbs = cluster_role_verbs(group, resource);
        assert!(
            verbs.contains(verb),
            "{group}/{resource}: {verb} not granted ({verbs:?})"
        );
    }
}

#[test]
fn the_workloadspread_controller_may_do_what_it_does() {
    // spec/workloadspread.md §6: status writes, deletion costs, Adaptive rescheduling, the target's replicas.
    for (group, resource, verb) in [
        ("apps.kruise.io", "workloadspreads/status", "update"),
        ("", "pods", "patch"),
        ("", "pods", "delete"),
        ("", "pods", "get"),
        ("", "nodes", "get"),
        ("batch", "jobs", "get"),
        ("apps", "replicasets", "list"),
        ("apps", "deployments", "get"),
        ("", "events", "create"),
    ] {
        let verbs = cluster_role_verbs(group, resource);
        assert!(
            verbs.contains(verb),
            "{group}/{resource}: {verb} not granted ({verbs:?})"
        );
    }
    // Never the spec.
    assert!(!cluster_role_verbs("apps.kruise.io", "workloadspreads").contains("update"));
}

#[test]
fn the_pod_webhooks_may_write_what_they_record() {
    // Status writes inside admission (spec/workloadspread.md §5.4 (c) 7, §5.9; PUB §7.3): an update of the
    // status subresource, and a get to read the object again after a conflict.
    for (group, resource) in [
        ("apps.kruise.io", "workloadspreads/status"),
        ("policy.kruise.io", "podunavailablebudgets/status"),
    ] {
        assert!(
            cluster_role_verbs(group, resource).contains("update"),
            "{group}/{resource}"
        );
    }
    assert!(cluster_role_verbs("apps.kruise.io", "workloadspreads").contains("get"));
    // Owner chains through Jobs (§4.1).
    assert!(cluster_role_verbs("batch", "jobs").contains("get"));
}

#[test]
fn the_persistentpodstate_controllers_may_do_what_they_do() {
    // docs/persistentpodstate.md §3-§4: the caches they read (PersistentPodStates, pods, both StatefulSet
    // kinds, Nodes), a pod's metadata GET for its annotations, the status write and its re-read, the
    // generated PersistentPodState's create, update and delete, the validator's LIST, their failure events.
    for (group, resource, verb) in [
        ("apps.kruise.io", "persistentpodstates", "list"),
        ("apps.kruise.io", "persistentpodstates", "watch"),
        ("apps.kruise.io", "persistentpodstates", "get"),
        ("apps.kruise.io", "persistentpodstates", "create"),
        ("apps.kruise.io", "persistentpodstates", "update"),
        ("apps.kruise.io", "persistentpodstates", "delete"),
        ("apps.kruise.io", "persistentpodstates/status", "update"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods", "get"),
        ("apps", "statefulsets", "list"),
        ("apps", "statefulsets", "watch"),
        ("apps.kruise.io", "statefulsets", "list"),
        ("apps.kruise.io", "statefulsets", "watch"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("", "events", "create"),
    ] {
        let verbs = cluster_role_verbs(group, resource);
        assert!(
            verbs.contains(verb),
            "{group}/{resource}: {verb} not granted ({verbs:?})"
        );
    }
    // Never more than that on them.
    assert!(!cluster_role_verbs("apps.kruise.io", "persistentpodstates").contains("patch"));
    assert!(!cluster_role_verbs("apps.kruise.io", "persistentpodstates/status").contains("patch"));
}

#[test]
fn the_sidecar_terminator_may_do_what_it_does() {
    // spec/sidecar-terminator.md §3 and DECISIONS 11: the caches it reads, its CRRs (created, retried by
    // deletion), the image replacement, the status patch, its events, the owner reference's finalizers.
    for (group, resource, verb) in [
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods", "patch"),
        ("", "pods/status", "patch"),
        ("", "pods/finalizers", "update"),
        ("", "nodes", "get"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("apps.kruise.io", "containerrecreaterequests", "get"),
        ("apps.kruise.io", "containerrecreaterequests", "list"),
        ("apps.kruise.io", "containerrecreaterequests", "watch"),
        ("apps.kruise.io", "containerrecreaterequests", "create"),
        ("apps.kruise.io", "containerrecreaterequests", "delete"),
        ("", "events", "create"),
    ] {
        let verbs = cluster_role_verbs(group, resource);
        assert!(
            verbs.contains(verb),
            "{group}/{resource}: {verb} not granted ({verbs:?})"
        );
    }
    // Nothing beyond: no update of a CRR, no write of a Node.
    assert!(!cluster_role_verbs("apps.kruise.io", "containerrecreaterequests").contains("update"));
    for verb in ["update", "patch", "delete"] {
        assert!(!cluster_role_verbs("", "nodes").contains(verb), "{verb}");
    }
}
