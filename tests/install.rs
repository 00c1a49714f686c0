//! The install story (deploy/README.md): the base, every overlay, every component applied to the base and every
//! example kustomization render (with `install/kustomize.rs`, the subset of kustomize they use), every rendered
//! object is one the API server's schema knows field by field, and the Deployment's command line (args, and env
//! read as the flags they stand for) is one the binary accepts, with the effect each knob promises.

mod common;
mod install {
    pub mod kustomize;
}

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use install::kustomize;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_webhook::cli::{Cli, LogFormat};
use kruise_webhook::config::{CertSource, Config, Mode, ServeConfig};
use kruise_webhooks::registry::{FailurePolicy, Served, WEBHOOKS};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

fn deploy() -> PathBuf {
    common::root().join("deploy")
}

/// The directories under `deploy/<group>`, sorted.
fn dirs(group: &str) -> Vec<PathBuf> {
    common::subdirs(&deploy().join(group))
}

fn name_of(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

/// The base with one component: what `components: [../deploy/components/<name>]` in a user's kustomization
/// over `deploy/base` renders to.
fn base_with(component: &str) -> Result<Vec<Value>, kustomize::Error> {
    kustomize::build_from(
        &deploy(),
        &json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["base"],
            "components": [format!("components/{component}")],
        }),
    )
}

fn render(dir: &Path) -> Vec<Value> {
    kustomize::build(dir).unwrap_or_else(|e| panic!("{e}"))
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

// ---------------------------------------------------------------------------------------------------------
// Schema: the typed round trip

/// cert-manager.io/v1 Issuer, the fields `deploy/` uses (cert-manager's API reference).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Issuer {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: IssuerSpec,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IssuerSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    self_signed: Option<BTreeMap<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ca: Option<CaIssuer>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaIssuer {
    secret_name: String,
}

/// cert-manager.io/v1 Certificate, the fields `deploy/` uses.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Certificate {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: CertificateSpec,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CertificateSpec {
    secret_name: String,
    #[serde(rename = "isCA", skip_serializing_if = "Option::is_none")]
    is_ca: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    common_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dns_names: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    renew_before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usages: Option<Vec<String>>,
    private_key: PrivateKey,
    issuer_ref: IssuerRef,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PrivateKey {
    algorithm: String,
    size: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<String>,
    rotation_policy: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IssuerRef {
    group: String,
    kind: String,
    name: String,
}

/// Deserializes `object` as `T` and serializes it back: a field `T` does not know (misspelled, misplaced) is
/// dropped on the way, so the two differ; a value of the wrong type fails to deserialize.
fn round_trip<T: DeserializeOwned + Serialize>(object: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    let mut back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    whole_numbers(&mut back);
    assert_json_diff::assert_json_matches_no_panic(
        &back,
        object,
        assert_json_diff::Config::new(assert_json_diff::CompareMode::Strict),
    )
    .map_err(|diff| format!("not in the schema (typed object vs rendered):\n{diff}"))
}

/// `0.0` as `0`: a float field of the schema (a JSON schema's `minimum`) serializes a whole number with a
/// fraction, the same JSON number as the YAML's integer.
fn whole_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                && n.is_f64()
            {
                *value = json!(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// The schema check of one rendered object, by its apiVersion and kind.
fn schema_check(object: &Value) -> Result<(), String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    match (api_version, kind) {
        ("v1", "Namespace") => round_trip::<Namespace>(object),
        ("v1", "Service") => round_trip::<Service>(object),
        ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(object),
        ("apps/v1", "Deployment") => round_trip::<Deployment>(object),
        ("policy/v1", "PodDisruptionBudget") => round_trip::<PodDisruptionBudget>(object),
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(object),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<ClusterRole>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            round_trip::<ClusterRoleBinding>(object)
        }
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            round_trip::<MutatingWebhookConfiguration>(object)
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            round_trip::<ValidatingWebhookConfiguration>(object)
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            round_trip::<CustomResourceDefinition>(object)
        }
        ("cert-manager.io/v1", "Issuer") => round_trip::<Issuer>(object),
        ("cert-manager.io/v1", "Certificate") => round_trip::<Certificate>(object),
        _ => Err(format!("no schema for {api_version} {kind}")),
    }
}

// ---------------------------------------------------------------------------------------------------------
// The binary's command line

/// Env name -> long flag, for every flag of the binary read from env (clap's own table).
fn env_flags() -> BTreeMap<String, String> {
    fn walk(cmd: &clap::Command, out: &mut BTreeMap<String, String>) {
        for arg in cmd.get_arguments() {
            if let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) {
                out.insert(env.to_string_lossy().into_owned(), long.to_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = BTreeMap::new();
    walk(&Cli::command(), &mut out);
    out
}

/// The validated configuration the rendered Deployment's container runs with: its args, and each env var the
/// binary reads given as the flag it stands for (a flag in args wins, as in clap). An env var the binary does
/// not read (other than `RUST_LOG`, the log filter, and `MIMALLOC_PURGE_DELAY`, the allocator's) is an error, as is a command line it refuses.
fn command_line(objects: &[Value]) -> Result<(LogFormat, ServeConfig), String> {
    let deployment = find(objects, "Deployment", "kruise-webhook");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let mut argv: Vec<String> =
        serde_json::from_value(container["args"].clone()).map_err(|e| format!("args: {e}"))?;
    let serve = argv
        .iter()
        .position(|a| a == "serve")
        .ok_or("args: no serve")?;
    let flags = env_flags();
    for env in container["env"].as_array().into_iter().flatten() {
        let name = env["name"].as_str().unwrap_or_default();
        let value = match (&env["value"], &env["valueFrom"]) {
            (Value::String(v), Value::Null) => v.clone(),
            (Value::Null, from) if from["fieldRef"]["fieldPath"] == "metadata.namespace" => {
                deployment["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            }
            _ => return Err(format!("env {name}: only a value or the pod's namespace")),
        };
        if name == "RUST_LOG" {
            tracing_subscriber::EnvFilter::try_new(&value)
                .map_err(|e| format!("RUST_LOG={value}: {e}"))?;
            continue;
        }
        // The allocator's option (mimalloc reads it at start): milliseconds, a whole number.
        if name == "MIMALLOC_PURGE_DELAY" {
            value
                .parse::<u32>()
                .map_err(|e| format!("MIMALLOC_PURGE_DELAY={value}: {e}"))?;
            continue;
        }
        let long = flags
            .get(name)
            .ok_or_else(|| format!("env {name}: the binary reads no such variable"))?;
        let flag = format!("--{long}");
        if !argv
            .iter()
            .any(|a| *a == flag || a.starts_with(&format!("{flag}=")))
        {
            argv.insert(serve + 1, format!("{flag}={value}"));
        }
    }
    let cli = Cli::try_parse_from(std::iter::once("kruise-webhook".to_owned()).chain(argv.clone()))
        .map_err(|e| e.to_string())?;
    let config = Config::try_from(cli).map_err(|e| e.to_string())?;
    match config.command {
        Mode::Serve(serve) => Ok((config.log_format, *serve)),
        Mode::Review(_) | Mode::Explain(_) => Err("not serve".into()),
    }
}

// ---------------------------------------------------------------------------------------------------------
// What each kustomization renders to

/// Every rendered object passes the schema check and carries the base's part-of label; the command line is
/// the binary's.
fn check_all(what: &str, objects: &[Value]) -> (LogFormat, ServeConfig) {
    assert!(!objects.is_empty(), "{what}: nothing rendered");
    for object in objects {
        let id = format!("{what}: {} {}", object["kind"], object["metadata"]["name"]);
        schema_check(object).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/part-of"], "kruise-webhook",
            "{id}"
        );
    }
    command_line(objects).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The failurePolicy of every webhook of both configurations, by webhook name.
fn failure_policies(objects: &[Value]) -> BTreeMap<String, String> {
    [
        (
            "MutatingWebhookConfiguration",
            kruise_webhook::certs::MUTATING_CONFIGURATION,
        ),
        (
            "ValidatingWebhookConfiguration",
            kruise_webhook::certs::VALIDATING_CONFIGURATION,
        ),
    ]
    .into_iter()
    .flat_map(|(kind, name)| {
        find(objects, kind, name)["webhooks"]
            .as_array()
            .unwrap()
            .clone()
    })
    .map(|h| {
        (
            h["name"].as_str().unwrap().to_owned(),
            h["failurePolicy"].as_str().unwrap().to_owned(),
        )
    })
    .collect()
}

/// The objects of `changed` that differ from `base`, by (kind, name); both must hold the same objects.
fn changed_objects(base: &[Value], changed: &[Value]) -> BTreeSet<(String, String)> {
    let key = |o: &Value| {
        (
            o["kind"].as_str().unwrap().to_owned(),
            o["metadata"]["name"].as_str().unwrap().to_owned(),
        )
    };
    let base: BTreeMap<_, _> = base.iter().map(|o| (key(o), o)).collect();
    let changed: BTreeMap<_, _> = changed.iter().map(|o| (key(o), o)).collect();
    assert_eq!(
        base.keys().collect::<Vec<_>>(),
        changed.keys().collect::<Vec<_>>(),
        "the same objects"
    );
    changed
        .into_iter()
        .filter(|(k, o)| base[k] != *o)
        .map(|(k, _)| k)
        .collect()
}

fn deletion_protection(name: &str) -> bool {
    WEBHOOKS
        .iter()
        .any(|w| w.name == name && w.failure_policy == FailurePolicy::Ignore)
}

#[test]
fn the_base_renders_to_what_the_binary_expects() {
    let objects = render(&deploy().join("base"));
    let (log_format, serve) = check_all("base", &objects);
    assert_eq!(log_format, LogFormat::Json, "DECISIONS 24");
    assert_eq!(serve.cert_source, CertSource::SelfManaged);
    assert_eq!(serve.namespace, "kruise-system");
    assert_eq!(serve.webhook_host, None);
    let deployment = find(&objects, "Deployment", "kruise-webhook");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "kruise-webhook:0.1.0"
    );
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/part-of"),
        None,
        "never in the pod template: the selector is immutable"
    );
    let crds: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .collect();
    assert_eq!(crds.len(), 6);
    // Conversion through a Service of its own that lists replicas before they are ready
    // (docs/startup-order.md rule 4), selecting the same pods as the admission Service.
    assert_eq!(
        serve.conversion_service_name,
        "kruise-webhook-conversion-service"
    );
    for crd in crds {
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"],
            serve.conversion_service_name
        );
    }
    let conversion = find(&objects, "Service", &serve.conversion_service_name);
    let admission = find(&objects, "Service", &serve.service_name);
    assert_eq!(conversion["spec"]["publishNotReadyAddresses"], true);
    assert_ne!(admission["spec"]["publishNotReadyAddresses"], true);
    assert_eq!(
        conversion["spec"]["selector"],
        admission["spec"]["selector"]
    );
    assert_eq!(conversion["spec"]["ports"][0]["targetPort"], 9876);
    for (name, policy) in failure_policies(&objects) {
        let want = if deletion_protection(&name) {
            "Ignore"
        } else {
            "Fail"
        };
        assert_eq!(policy, want, "{name}: DECISIONS 2");
    }
}

#[test]
fn the_cert_manager_overlay_runs_on_cert_managers_secret() {
    let base = render(&deploy().join("base"));
    let objects = render(&deploy().join("overlays/cert-manager"));
    let (log_format, serve) = check_all("overlays/cert-manager", &objects);
    assert_eq!(log_format, LogFormat::Json);
    assert_eq!(serve.cert_source, CertSource::External);
    let serving = find(&objects, "Certificate", "kruise-webhook-serving-cert");
    assert_eq!(serving["spec"]["secretName"], serve.secret_name);
    let names = serving["spec"]["dnsNames"].as_array().unwrap();
    for name in [
        format!("{}.{}.svc", serve.service_name, serve.namespace),
        "localhost".to_owned(),
    ] {
        assert!(
            names.contains(&json!(name)),
            "{name}: readiness and the Service"
        );
    }
    let annotated: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            o["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
                == "kruise-system/kruise-webhook-serving-cert"
        })
        .collect();
    assert_eq!(
        annotated.len(),
        2 + 6,
        "both configurations and the six CRDs"
    );
    assert_eq!(
        objects.len(),
        base.len() + 4,
        "two Issuers, two Certificates"
    );
    assert_eq!(failure_policies(&objects), failure_policies(&base));
}

// ---------------------------------------------------------------------------------------------------------
// Beside OpenKruise (deploy/overlays/beside-openkruise, deploy/openkruise-side; DECISIONS 27)

/// What OpenKruise's Helm chart 1.8.3 (openkruise/charts, versions/kruise/1.8.3/templates) and kruise-manager
/// create in a cluster, by kind and name. Nothing the beside overlay renders may be one of them, nor any
/// Namespace or CRD.
const OPENKRUISE_OBJECTS: &[(&str, &str)] = &[
    ("Namespace", "kruise-system"),
    ("Namespace", "kruise-daemon-config"),
    ("Service", "kruise-webhook-service"),
    ("Secret", "kruise-webhook-certs"),
    ("ConfigMap", "kruise-configuration"),
    ("Lease", "kruise-manager"),
    ("Deployment", "kruise-controller-manager"),
    ("DaemonSet", "kruise-daemon"),
    ("ServiceAccount", "kruise-manager"),
    ("ServiceAccount", "kruise-daemon"),
    ("ServiceAccount", "kruise-helm-hook"),
    ("Role", "kruise-leader-election-role"),
    ("Role", "kruise-webhook-role"),
    ("Role", "kruise-daemon-secret-role"),
    ("RoleBinding", "kruise-leader-election-rolebinding"),
    ("RoleBinding", "kruise-webhook-rolebinding"),
    ("RoleBinding", "kruise-daemon-secret-rolebinding"),
    ("ClusterRole", "kruise-manager-role"),
    ("ClusterRole", "kruise-daemon-role"),
    ("ClusterRole", "kruise-certs-role"),
    ("ClusterRole", "kruise-helm-hook-role"),
    ("ClusterRole", "aggregate-kruise-view"),
    ("ClusterRole", "aggregate-kruise-edit"),
    ("ClusterRole", "aggregate-kruise-admin"),
    ("ClusterRoleBinding", "kruise-manager-rolebinding"),
    ("ClusterRoleBinding", "kruise-daemon-rolebinding"),
    ("ClusterRoleBinding", "kruise-certs-rolebinding"),
    ("ClusterRoleBinding", "kruise-helm-hook-rolebinding"),
    (
        "MutatingWebhookConfiguration",
        "kruise-mutating-webhook-configuration",
    ),
    (
        "ValidatingWebhookConfiguration",
        "kruise-validating-webhook-configuration",
    ),
];

/// The webhooks kruise-webhook serves beside OpenKruise (issue 38, DECISIONS 27): the pod webhooks, the
/// SidecarSet, PodUnavailableBudget and WorkloadSpread ones, and deletion protection as the base has it.
const BESIDE_MUTATING: &[&str] = &["mpod.kb.io", "msidecarset.kb.io"];
/// The base's webhooks the beside overlay leaves out: kruise-manager keeps its own
/// (docs/containerrecreaterequest-webhook.md §1).
/// The base's webhooks kruise-manager keeps beside us: its ContainerRecreateRequest and PersistentPodState
/// webhooks (docs/containerrecreaterequest-webhook.md, docs/persistentpodstate.md).
const KEPT_BY_KRUISE_MANAGER: &[&str] = &[
    "mcontainerrecreaterequest.kb.io",
    "vpersistentpodstate.kb.io",
];
const BESIDE_VALIDATING: &[&str] = &[
    "vpod.kb.io",
    "vpodeviction.kb.io",
    "vsidecarset.kb.io",
    "vpodunavailablebudget.kb.io",
    "vworkloadspread.kb.io",
    "vnamespace.kb.io",
    "vcustomresourcedefinition.kb.io",
    "vbuiltindeployment.kb.io",
    "vbuiltinreplicaset.kb.io",
    "vbuiltinstatefulset.kb.io",
    "vservice.kb.io",
    "vingress.kb.io",
    "vcloneset.kb.io",
    "vstatefulset.kb.io",
    "vuniteddeployment.kb.io",
];

/// The labels of `selector` (a map of label to value) all on `labels`.
fn selects_labels(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// Verbs that change an object.
const WRITE_VERBS: &[&str] = &[
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "*",
];

/// The rules of `role` that grant a write on `resource` (group `group`), as (resourceNames, write verbs).
fn writes(role: &Value, group: &str, resource: &str) -> Vec<(Option<Vec<String>>, Vec<String>)> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            let lists =
                |key: &str, want: &str| strings(&r[key]).iter().any(|v| v == want || v == "*");
            lists("apiGroups", group) && lists("resources", resource)
        })
        .filter_map(|r| {
            let verbs: Vec<String> = strings(&r["verbs"])
                .into_iter()
                .filter(|v| WRITE_VERBS.contains(&v.as_str()))
                .collect();
            (!verbs.is_empty()).then(|| (r.get("resourceNames").map(strings), verbs))
        })
        .collect()
}

#[test]
fn the_beside_overlay_touches_no_object_of_openkruises_and_names_its_own_consistently() {
    let dir = deploy().join("overlays/beside-openkruise");
    let objects = render(&dir);
    let (log_format, serve) = check_all("overlays/beside-openkruise", &objects);
    assert_eq!(log_format, LogFormat::Json);
    assert!(serve.beside_openkruise, "--beside-openkruise");
    assert_eq!(serve.cert_source, CertSource::SelfManaged);
    assert_eq!(
        serve.namespace, "kruise-system",
        "OpenKruise's namespace, shared"
    );
    assert_eq!(serve.webhook_host, None);

    // Nothing of OpenKruise's chart or kruise-manager, no Namespace, no CRD; and none of our names is one of
    // theirs, whatever the kind (the binary writes the Secret and the Lease, which no manifest holds).
    let theirs: BTreeSet<&str> = OPENKRUISE_OBJECTS.iter().map(|(_, n)| *n).collect();
    for object in &objects {
        let (kind, name) = (
            object["kind"].as_str().unwrap(),
            object["metadata"]["name"].as_str().unwrap(),
        );
        assert!(
            !OPENKRUISE_OBJECTS.contains(&(kind, name)),
            "{kind} {name} is OpenKruise's"
        );
        assert!(
            !["Namespace", "CustomResourceDefinition"].contains(&kind),
            "{kind} {name}: the chart's"
        );
        assert_eq!(
            object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("kruise-system"),
            "kruise-system"
        );
    }
    let ours = [
        serve.mutating_configuration.as_str(),
        serve.validating_configuration.as_str(),
        serve.service_name.as_str(),
        serve.secret_name.as_str(),
        serve.leader_election.name.as_str(),
    ];
    assert_eq!(
        ours,
        [
            "kruise-mutating-webhook-configuration-pod",
            "kruise-validating-webhook-configuration-pod",
            "kruise-pod-webhook-service",
            "kruise-pod-webhook-certs",
            "kruise-pod-webhook",
        ]
    );
    for name in ours {
        assert!(!theirs.contains(name), "{name} is OpenKruise's");
    }
    assert_eq!(serve.leader_election.namespace, serve.namespace);
    // Ours run right after kruise-manager's: the API server calls mutating configurations in name order.
    assert!(kruise_webhook::certs::MUTATING_CONFIGURATION < serve.mutating_configuration.as_str());
    assert!(
        serve
            .mutating_configuration
            .starts_with(kruise_webhook::certs::MUTATING_CONFIGURATION)
    );

    // Exactly the webhooks taken over, on paths the binary serves (the registry's), calling our Service.
    let served: BTreeSet<&str> = kruise_webhooks::registry::routes(&serve.gates, Served::ALL)
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    for (kind, name, want) in [
        (
            "MutatingWebhookConfiguration",
            &serve.mutating_configuration,
            BESIDE_MUTATING,
        ),
        (
            "ValidatingWebhookConfiguration",
            &serve.validating_configuration,
            BESIDE_VALIDATING,
        ),
    ] {
        let config = find(&objects, kind, name);
        let hooks = config["webhooks"].as_array().unwrap();
        let names: BTreeSet<&str> = hooks.iter().map(|h| h["name"].as_str().unwrap()).collect();
        assert_eq!(names, want.iter().copied().collect(), "{kind}");
        for hook in hooks {
            let hook_name = hook["name"].as_str().unwrap();
            let service = &hook["clientConfig"]["service"];
            assert_eq!(service["name"], serve.service_name.as_str(), "{hook_name}");
            assert_eq!(
                service["namespace"],
                serve.namespace.as_str(),
                "{hook_name}"
            );
            let path = service["path"].as_str().unwrap();
            assert!(served.contains(path), "{hook_name}: {path} is not served");
            let spec = WEBHOOKS.iter().find(|w| w.name == hook_name).unwrap();
            assert_eq!(path, spec.path, "{hook_name}");
        }
    }
    // Deletion protection as the base has it: every such webhook of the registry.
    for spec in WEBHOOKS.iter().filter(|w| deletion_protection(w.name)) {
        assert!(BESIDE_VALIDATING.contains(&spec.name), "{}", spec.name);
    }
    // Otherwise the base's configurations (rules, selectors, failurePolicy, timeouts), but for the webhooks
    // kruise-manager keeps: names put back, equal.
    let mut base = render(&deploy().join("base"));
    for kept in KEPT_BY_KRUISE_MANAGER {
        assert!(
            base.iter().any(|o| o["webhooks"]
                .as_array()
                .is_some_and(|hooks| hooks.iter().any(|h| h["name"] == *kept))),
            "{kept} is in the base"
        );
        assert!(!BESIDE_MUTATING.contains(kept) && !BESIDE_VALIDATING.contains(kept));
    }
    for config in &mut base {
        if let Some(hooks) = config.get_mut("webhooks").and_then(Value::as_array_mut) {
            hooks.retain(|h| !KEPT_BY_KRUISE_MANAGER.iter().any(|k| h["name"] == *k));
        }
    }
    for (kind, name, base_name) in [
        (
            "MutatingWebhookConfiguration",
            &serve.mutating_configuration,
            kruise_webhook::certs::MUTATING_CONFIGURATION,
        ),
        (
            "ValidatingWebhookConfiguration",
            &serve.validating_configuration,
            kruise_webhook::certs::VALIDATING_CONFIGURATION,
        ),
    ] {
        let mut config = find(&objects, kind, name).clone();
        config["metadata"]["name"] = json!(base_name);
        for hook in config["webhooks"].as_array_mut().unwrap() {
            hook["clientConfig"]["service"]["name"] = json!("kruise-webhook-service");
        }
        assert_eq!(&config, find(&base, kind, base_name), "{kind}");
    }

    // Our Service selects our pods, OpenKruise's (control-plane=controller-manager) does not.
    let service = find(&objects, "Service", &serve.service_name);
    let pod_labels =
        &find(&objects, "Deployment", "kruise-webhook")["spec"]["template"]["metadata"]["labels"];
    assert!(selects_labels(&service["spec"]["selector"], pod_labels));
    assert!(!selects_labels(
        &json!({"control-plane": "controller-manager"}),
        pod_labels
    ));
    for (kind, selector) in [
        ("Deployment", "/spec/selector/matchLabels"),
        ("PodDisruptionBudget", "/spec/selector/matchLabels"),
    ] {
        let selector = find(&objects, kind, "kruise-webhook")
            .pointer(selector)
            .unwrap();
        assert!(selects_labels(selector, pod_labels), "{kind}");
    }
    // ... on the base's ports.
    assert_eq!(
        service["spec"]["ports"],
        find(&base, "Service", "kruise-webhook-service")["spec"]["ports"]
    );

    // RBAC: writes only to our names; no CRD written; OpenKruise's ConfigMap read only.
    let role = find(&objects, "Role", "kruise-webhook");
    let cluster_role = find(&objects, "ClusterRole", "kruise-webhook");
    let named_only = |role: &Value, group: &str, resource: &str, names: &[&str]| {
        for (resource_names, verbs) in writes(role, group, resource) {
            match resource_names {
                Some(n) => assert_eq!(n, names, "{resource} {verbs:?}"),
                // create cannot be restricted by name, and creates no object that exists.
                None => assert_eq!(verbs, ["create"], "{resource}: {verbs:?} on every name"),
            }
        }
    };
    named_only(role, "", "secrets", &[&serve.secret_name]);
    named_only(
        role,
        "coordination.k8s.io",
        "leases",
        &[&serve.leader_election.name],
    );
    named_only(role, "", "configmaps", &[]);
    for resource in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ] {
        let granted = writes(cluster_role, "admissionregistration.k8s.io", resource);
        assert_eq!(
            granted,
            [(
                Some(vec![
                    serve.mutating_configuration.clone(),
                    serve.validating_configuration.clone()
                ]),
                vec!["update".to_owned(), "patch".to_owned()]
            )],
            "{resource}"
        );
    }
    for (group, resource) in [
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        // kruise-manager's PersistentPodState controller writes them there, not ours.
        ("apps.kruise.io", "persistentpodstates"),
        ("apps.kruise.io", "persistentpodstates/status"),
        ("", "services"),
        ("", "namespaces"),
        ("", "serviceaccounts"),
        ("apps", "deployments"),
        ("apps", "daemonsets"),
    ] {
        for role in [role, cluster_role] {
            assert_eq!(writes(role, group, resource), [], "{resource}");
        }
    }
    for role in objects
        .iter()
        .filter(|o| o["kind"] == "Role" || o["kind"] == "ClusterRole")
    {
        for rule in role["rules"].as_array().into_iter().flatten() {
            for name in rule["resourceNames"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap();
                let verbs = rule["verbs"].as_array().unwrap();
                let writes = verbs
                    .iter()
                    .any(|v| WRITE_VERBS.contains(&v.as_str().unwrap()));
                assert!(!(writes && theirs.contains(name)), "{name}: {verbs:?}");
            }
        }
    }
    // The RBAC subjects are our ServiceAccount, which the Deployment runs as.
    assert_eq!(
        find(&objects, "Deployment", "kruise-webhook")["spec"]["template"]["spec"]["serviceAccountName"],
        "kruise-webhook"
    );
}

#[test]
fn the_beside_first_apply_only_relaxes_failure_policies() {
    let beside = render(&deploy().join("overlays/beside-openkruise"));
    let objects = render(&deploy().join("overlays/beside-openkruise-first-apply"));
    let (_, serve) = check_all("overlays/beside-openkruise-first-apply", &objects);
    assert!(serve.beside_openkruise);
    let changed = changed_objects(&beside, &objects);
    assert_eq!(
        changed,
        BTreeSet::from([
            (
                "MutatingWebhookConfiguration".to_owned(),
                serve.mutating_configuration.clone()
            ),
            (
                "ValidatingWebhookConfiguration".to_owned(),
                serve.validating_configuration.clone()
            ),
        ])
    );
    let mut restored = objects.clone();
    for config in &mut restored {
        for hook in config
            .get_mut("webhooks")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            assert_eq!(hook["failurePolicy"], "Ignore", "{}", hook["name"]);
            let spec = WEBHOOKS.iter().find(|w| hook["name"] == w.name).unwrap();
            if spec.failure_policy == FailurePolicy::Fail {
                hook["failurePolicy"] = json!("Fail");
            }
        }
    }
    assert_eq!(restored, beside, "only the failurePolicy changed");
}

/// The OpenKruise side's kustomization as `post-renderer.sh` runs it, on `chart` (Helm's output, relative to
/// the repository root) in place of the `helm-output.yaml` the script writes.
fn openkruise_side_on(chart: &str) -> Result<Vec<Value>, kustomize::Error> {
    let dir = deploy().join("openkruise-side");
    let mut k = kustomize::read_yaml(&dir.join("kustomization.yaml"))?.remove(0);
    assert_eq!(
        k["resources"],
        json!(["helm-output.yaml"]),
        "what the script writes"
    );
    k["resources"] = json!([format!("../../{chart}")]);
    kustomize::build_from(&dir, &k)
}

const CHART_PODWEBHOOK_FALSE: &str =
    "tests/data/openkruise-v1.8.3/webhookconfiguration-podwebhook-false.yaml";

#[test]
fn the_openkruise_side_deletes_exactly_the_four_webhooks_taken_over() {
    let chart = kustomize::read_yaml(&common::root().join(CHART_PODWEBHOOK_FALSE)).unwrap();
    let rendered = openkruise_side_on(CHART_PODWEBHOOK_FALSE).unwrap_or_else(|e| panic!("{e}"));
    let gone = [
        "msidecarset.kb.io",
        "vsidecarset.kb.io",
        "vpodunavailablebudget.kb.io",
        "vworkloadspread.kb.io",
    ];
    // The chart as rendered with those four entries taken out is, value for value, what the patch gives.
    let mut want = chart.clone();
    let mut taken = Vec::new();
    for config in &mut want {
        let hooks = config["webhooks"].as_array_mut().unwrap();
        hooks.retain(|h| {
            let name = h["name"].as_str().unwrap();
            let delete = gone.contains(&name);
            if delete {
                taken.push(name.to_owned());
            }
            !delete
        });
    }
    taken.sort();
    let mut expected: Vec<String> = gone.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(
        taken, expected,
        "all four are in the chart's configurations"
    );
    assert_eq!(rendered, want);
    // And nothing of the chart's pod webhooks is left for kruise-manager (PodWebhook=false left them out).
    for object in &rendered {
        for hook in object["webhooks"].as_array().unwrap() {
            assert!(
                !["mpod.kb.io", "vpod.kb.io", "vpodeviction.kb.io"]
                    .contains(&hook["name"].as_str().unwrap()),
                "{}",
                hook["name"]
            );
        }
    }
}

#[test]
fn the_openkruise_side_values_switch_off_what_kruise_webhook_runs() {
    let values = kustomize::read_yaml(&deploy().join("openkruise-side/values.yaml"))
        .unwrap()
        .remove(0);
    let spec = values["featureGates"]
        .as_str()
        .expect("featureGates, one string");
    // OpenKruise's gate names and syntax (our parser takes exactly those).
    let gates = kruise_webhooks::FeatureGates::parse(spec).unwrap();
    let named: BTreeMap<&str, &str> = spec
        .split(',')
        .map(|item| item.split_once('=').unwrap())
        .collect();
    assert_eq!(
        named,
        BTreeMap::from([
            ("ImagePullJobGate", "true"),
            ("PodWebhook", "false"),
            ("ResourcesDeletionProtection", "false"),
        ]),
        "the chart's default gate kept, SidecarTerminator left at its default (off)"
    );
    assert!(!gates.enabled("PodWebhook") && !gates.enabled("ResourcesDeletionProtection"));
    // The chart leaves the pod webhooks out when its featureGates string contains this (templates/
    // webhookconfiguration.yaml: `contains "PodWebhook=false" .Values.featureGates`).
    assert!(spec.contains("PodWebhook=false"));
    assert_eq!(
        values.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["featureGates"],
        "nothing else of the user's values is overridden"
    );
}

/// The kubectl to cross-check this renderer with: `KUBECTL`, else `$KUBEBUILDER_ASSETS/kubectl` (where the
/// real-apiserver tier finds its binaries); `None` where neither is (CI machines without them skip).
fn kubectl() -> Option<PathBuf> {
    let path = std::env::var_os("KUBECTL").map(PathBuf::from).or_else(|| {
        std::env::var_os("KUBEBUILDER_ASSETS").map(|d| PathBuf::from(d).join("kubectl"))
    })?;
    path.is_file().then_some(path)
}

/// Objects by (apiVersion, kind, namespace, name).
fn by_identity(objects: Vec<Value>) -> BTreeMap<(String, String, String, String), Value> {
    objects
        .into_iter()
        .map(|o| {
            let field = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                (
                    field(&o["apiVersion"]),
                    field(&o["kind"]),
                    field(&o["metadata"]["namespace"]),
                    field(&o["metadata"]["name"]),
                ),
                o,
            )
        })
        .collect()
}

fn run(command: &mut std::process::Command, stdin: Option<&str>) -> String {
    use std::io::Write;
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.unwrap_or_default().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Where kubectl is at hand, its kustomize renders the beside overlays, and `post-renderer.sh` the chart, to the
/// objects this renderer gives (kustomize also rewrites references on renames and strategic merges; the
/// renderer refuses those it does not do the same).
#[test]
fn kubectl_renders_the_beside_overlays_and_the_post_renderer_as_this_renderer() {
    let Some(kubectl) = kubectl() else {
        eprintln!("skipped: no KUBECTL, and no kubectl in KUBEBUILDER_ASSETS");
        return;
    };
    for dir in [
        "overlays/beside-openkruise",
        "overlays/beside-openkruise-first-apply",
        "base",
        "overlays/cert-manager",
    ] {
        let text = run(
            std::process::Command::new(&kubectl)
                .arg("kustomize")
                .arg(deploy().join(dir)),
            None,
        );
        let theirs = by_identity(kustomize::parse_yaml(&text).unwrap());
        let ours = by_identity(render(&deploy().join(dir)));
        assert_eq!(
            theirs.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>(),
            "{dir}"
        );
        for (id, object) in &ours {
            assert_eq!(&theirs[id], object, "{dir}: {id:?}");
        }
    }
    let chart = common::read(&common::root().join(CHART_PODWEBHOOK_FALSE));
    let text = run(
        std::process::Command::new(deploy().join("openkruise-side/post-renderer.sh"))
            .env("KUBECTL", &kubectl),
        Some(&chart),
    );
    assert_eq!(
        by_identity(kustomize::parse_yaml(&text).unwrap()),
        by_identity(openkruise_side_on(CHART_PODWEBHOOK_FALSE).unwrap())
    );
}

#[test]
fn every_component_renders_over_the_base() {
    let base = render(&deploy().join("base"));
    let components: Vec<String> = dirs("components").iter().map(|d| name_of(d)).collect();
    assert_eq!(
        components,
        [
            "external-certs",
            "failure-policy-fail",
            "failure-policy-ignore",
            "log-format-text"
        ],
        "a new component needs its checks below"
    );
    for component in &components {
        let objects = base_with(component).unwrap_or_else(|e| panic!("{e}"));
        let (log_format, serve) = check_all(component, &objects);
        let changed = changed_objects(&base, &objects);
        let kinds: BTreeSet<&str> = changed.iter().map(|(k, _)| k.as_str()).collect();
        match component.as_str() {
            "external-certs" => {
                assert_eq!(serve.cert_source, CertSource::External);
                assert_eq!(kinds, BTreeSet::from(["Deployment"]));
                let pod =
                    &find(&objects, "Deployment", "kruise-webhook")["spec"]["template"]["spec"];
                let mount = pod["containers"][0]["volumeMounts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["mountPath"] == serve.cert_dir.to_str().unwrap())
                    .expect("the Secret mounted at --cert-dir");
                assert_eq!(mount["readOnly"], true);
                let volume = pod["volumes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|v| v["name"] == mount["name"])
                    .unwrap();
                assert_eq!(
                    volume,
                    &json!({"name": "cert", "secret": {"secretName": serve.secret_name, "defaultMode": 0o440}})
                );
            }
            "failure-policy-ignore" | "failure-policy-fail" => {
                let want = if component.ends_with("ignore") {
                    "Ignore"
                } else {
                    "Fail"
                };
                let policies = failure_policies(&objects);
                assert_eq!(policies.len(), WEBHOOKS.len());
                for (name, policy) in &policies {
                    assert_eq!(policy, want, "{component}: {name}");
                }
                // Only the failurePolicy changed: put the base's back and nothing else differs.
                let mut restored = objects.clone();
                let before = failure_policies(&base);
                for config in &mut restored {
                    let hooks = config.get_mut("webhooks").and_then(Value::as_array_mut);
                    for hook in hooks.into_iter().flatten() {
                        let name = hook["name"].as_str().unwrap().to_owned();
                        hook["failurePolicy"] = json!(before[&name]);
                    }
                }
                assert_eq!(restored, base, "{component}");
                assert_eq!(log_format, LogFormat::Json);
            }
            "log-format-text" => {
                assert_eq!(log_format, LogFormat::Text);
                assert_eq!(kinds, BTreeSet::from(["Deployment"]));
            }
            other => unreachable!("{other}"),
        }
    }
}

#[test]
fn every_example_renders_with_its_knob() {
    let examples: Vec<String> = dirs("examples").iter().map(|d| name_of(d)).collect();
    assert_eq!(
        examples,
        [
            "external-certs",
            "failure-policy-ignore",
            "feature-gates",
            "log-format-text",
            "replicas",
            "url-mode",
            "webhook-off"
        ],
        "a new example needs its checks below"
    );
    for example in &examples {
        let objects = render(&deploy().join("examples").join(example));
        let (log_format, serve) = check_all(example, &objects);
        let deployment = find(&objects, "Deployment", "kruise-webhook");
        match example.as_str() {
            "external-certs" => assert_eq!(serve.cert_source, CertSource::External),
            "failure-policy-ignore" => {
                assert!(failure_policies(&objects).values().all(|p| p == "Ignore"))
            }
            "feature-gates" => {
                let paths: BTreeSet<&str> =
                    kruise_webhooks::registry::routes(&serve.gates, Served::ALL)
                        .into_iter()
                        .map(|(path, _)| path)
                        .collect();
                for gone in [
                    "/mutate-pod",
                    "/validate-pod",
                    "/validate-service",
                    "/validate-ingress",
                ] {
                    assert!(!paths.contains(gone), "{gone} still served");
                }
                assert!(paths.contains("/validate-namespace"));
            }
            "log-format-text" => assert_eq!(log_format, LogFormat::Text),
            "replicas" => {
                assert_eq!(deployment["spec"]["replicas"], 3);
                assert_eq!(
                    deployment["spec"]["template"]["spec"]["containers"][0]["image"],
                    "registry.example.com/platform/kruise-webhook:0.1.0"
                );
            }
            "url-mode" => assert_eq!(serve.webhook_host.as_deref(), Some("webhook.example.com")),
            "webhook-off" => {
                let policies = failure_policies(&objects);
                assert!(!policies.contains_key("vnamespace.kb.io"));
                assert_eq!(policies.len(), WEBHOOKS.len() - 1);
            }
            other => unreachable!("{other}"),
        }
    }
}

#[test]
fn every_component_and_example_is_documented() {
    let readme = common::read(&deploy().join("README.md"));
    for dir in dirs("components") {
        let name = format!("components/{}", name_of(&dir));
        assert!(
            readme.contains(&name),
            "deploy/README.md does not mention {name}"
        );
    }
    for dir in dirs("overlays") {
        let name = format!("overlays/{}", name_of(&dir));
        assert!(
            readme.contains(&name),
            "deploy/README.md does not mention {name}"
        );
    }
    for dir in dirs("examples") {
        // Shown in full, so that the text a reader copies is the one rendered here.
        let text = common::read(&dir.join("kustomization.yaml"));
        assert!(
            readme.contains(text.trim_end()),
            "deploy/README.md does not show examples/{}/kustomization.yaml as it is",
            name_of(&dir)
        );
    }
}

// ---------------------------------------------------------------------------------------------------------
// The checks themselves fail when they should

fn kustomization(fields: Value) -> Value {
    let mut k = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["base"],
    });
    k.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    k
}

fn render_error(fields: Value) -> String {
    kustomize::build_from(&deploy(), &kustomization(fields))
        .expect_err("rendered although the renderer should refuse it")
}

#[test]
fn the_renderer_refuses_what_it_does_not_understand() {
    let deployment = json!({"group": "apps", "kind": "Deployment", "name": "kruise-webhook"});
    for (fields, want) in [
        (
            json!({"namePrefix": "x-"}),
            "\"namePrefix\" is not understood",
        ),
        (
            json!({"patches": [{"patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kruise-webhook}\nspec: {replicas: 1}\n"}]}),
            "strategic-merge",
        ),
        (
            json!({"patches": [{"target": {"labelSelector": "a=b"}, "patch": "- {op: remove, path: /spec}"}]}),
            "\"labelSelector\" is not understood",
        ),
        (
            json!({"patches": [{"target": {"kind": "Deployment", "name": "other"}, "patch": "- {op: remove, path: /spec}"}]}),
            "matches no object",
        ),
        (
            json!({"patches": [{"target": deployment, "patch": "- {op: test, path: /spec/replicas, value: 5}"}]}),
            "value did not match",
        ),
        (
            json!({"patches": [{"target": deployment, "patch": "- {op: add, path: /spec/paused, value: true, extra: 1}"}]}),
            "\"extra\" is not understood",
        ),
        (
            json!({"labels": [{"pairs": {"a": "b"}, "includeSelectors": true}]}),
            "includeSelectors",
        ),
        (
            json!({"replicas": [{"name": "nothing", "count": 1}]}),
            "no workload",
        ),
        (
            json!({"images": [{"name": "nothing", "newTag": "1"}]}),
            "no container",
        ),
        (json!({"resources": ["base", "base"]}), "twice"),
        (
            json!({"patches": [{"patch": "apiVersion: v1\nkind: Service\nmetadata: {name: kruise-webhook-service, namespace: kruise-system}\n$patch: replace\n"}]}),
            "only `$patch: delete`",
        ),
        (
            json!({"patches": [{"patch": "apiVersion: v1\nkind: Service\nmetadata: {name: nothing, namespace: kruise-system}\n$patch: delete\n"}]}),
            "matches no object",
        ),
        (
            json!({"patches": [{"patch": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: kruise-validating-webhook-configuration}\nwebhooks:\n- {name: vnothing.kb.io, $patch: delete}\n"}]}),
            "has no webhook vnothing.kb.io",
        ),
        (
            json!({"patches": [{"target": {"kind": "Service"}, "patch": "- {op: replace, path: /metadata/name, value: other}"}]}),
            "would rename the references",
        ),
        (json!({"components": ["base"]}), "Component"),
    ] {
        let error = render_error(fields.clone());
        assert!(error.contains(want), "{fields}: {error}");
    }
}

#[test]
fn the_schema_check_catches_a_misspelled_field() {
    let objects = render(&deploy().join("base"));
    let mut deployment = find(&objects, "Deployment", "kruise-webhook").clone();
    schema_check(&deployment).unwrap();
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    let error = schema_check(&deployment).unwrap_err();
    assert!(error.contains("imagePullPolicyy"), "{error}");
    let mut certificate = find(
        &render(&deploy().join("overlays/cert-manager")),
        "Certificate",
        "kruise-webhook-ca",
    )
    .clone();
    certificate["spec"]["isCa"] = json!(true);
    assert!(schema_check(&certificate).is_err());
}

#[test]
fn the_command_line_check_catches_an_unknown_flag_or_env() {
    let objects = render(&deploy().join("base"));
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut objects = objects.clone();
        for o in &mut objects {
            if o["kind"] == "Deployment" {
                edit(&mut o["spec"]["template"]["spec"]["containers"][0]);
            }
        }
        command_line(&objects)
    };
    // The container with `item` added to its list `list` (args or env).
    let with_added =
        |list: &str, item: Value| with(&|c| c[list].as_array_mut().unwrap().push(item.clone()));
    // Refused, the error naming what is wrong.
    let refused = |list: &str, item: Value, named: &str| {
        let error = with_added(list, item).unwrap_err();
        assert!(error.contains(named), "{error}");
    };
    with(&|_| {}).unwrap();
    refused(
        "args",
        json!("--feature-gate=PodWebhook=false"),
        "--feature-gate",
    );
    refused(
        "args",
        json!("--feature-gates=NoSuchGate=true"),
        "NoSuchGate",
    );
    refused(
        "env",
        json!({"name": "WEBHOOK_HOTS", "value": "x"}),
        "WEBHOOK_HOTS",
    );
    refused(
        "env",
        json!({"name": "WEBHOOK_HOST", "value": "https://x"}),
        "WEBHOOK_HOST",
    );
    // A flag in args wins over its env, as in the binary: the env alone does not change the log format.
    let (format, _) = with_added(
        "env",
        json!({"name": "KRUISE_WEBHOOK_LOG_FORMAT", "value": "text"}),
    )
    .unwrap();
    assert_eq!(format, LogFormat::Json);
}

/// The README's Flags table: every flag it names is one of the binary's, with the env the binary reads for it,
/// and every env the binary reads is in the table.
#[test]
fn the_readme_flags_table_is_the_binarys() {
    let readme = common::read(&common::root().join("README.md"));
    let table = readme
        .split("### Flags\n")
        .nth(1)
        .expect("### Flags")
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2);
    let by_env = env_flags();
    let long_env: BTreeMap<&str, &str> = by_env
        .iter()
        .map(|(env, long)| (long.as_str(), env.as_str()))
        .collect();
    let mut longs = BTreeSet::new();
    fn walk(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        out.extend(
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned)),
        );
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    walk(&Cli::command(), &mut longs);
    let mut documented_envs = BTreeSet::new();
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    for row in table {
        let cells: Vec<&str> = row.split('|').collect();
        let flags: Vec<String> = ticked(cells[1])
            .into_iter()
            .filter_map(|f| f.strip_prefix("--").map(str::to_owned))
            .collect();
        assert!(!flags.is_empty(), "{row}");
        for flag in &flags {
            assert!(
                longs.contains(flag),
                "README: --{flag} is not a flag of the binary"
            );
        }
        let envs = ticked(cells[2]);
        assert_eq!(
            envs,
            long_env
                .get(flags[0].as_str())
                .map(|e| e.to_string())
                .into_iter()
                .collect::<Vec<_>>(),
            "README: the env of --{}",
            flags[0]
        );
        documented_envs.extend(envs);
    }
    let read: BTreeSet<String> = by_env.into_keys().collect();
    assert_eq!(
        documented_envs, read,
        "every env the binary reads is in the table"
    );
}
