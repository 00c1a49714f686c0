//! Properties of the pod mutating chain with SidecarSet injection (issue acceptance; STYLE §9):
//! - injecting into an already-injected pod changes nothing;
//! - the order SidecarSets are loaded in changes no byte of the patch;
//! - every patch applies cleanly to the raw request object, and the result decodes as a `k8s_openapi` Pod;
//! - no input panics;
//! - every diff applies and gives its target;
//! - the pod reader gives back exactly the JSON it read, in any layout.
//!
//! Generated SidecarSets respect what validation guarantees (spec/sidecarset.md §8): container names are
//! unique across SidecarSets, selectors are non-empty. `resourcesPolicy` is left out: with hot upgrade its
//! targets legitimately change once `-1`/`-2` copies exist (OpenKruise behaves the same).

use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::AdmissionRequest;
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::json::patch;
use kruise_webhooks::json::rawpod::RawPod;
use kruise_webhooks::pod::{PodContext, mutate};
use proptest::prelude::*;
use serde_json::{Value, json};

const APPS: &[&str] = &["web", "db", "cache"];

fn env_strategy() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["A", "B", "LOG_LEVEL", "POD_NAME"]),
            "[a-z]{0,4}",
        )
            .prop_map(|(n, v)| json!({"name": n, "value": v})),
        0..3,
    )
    .prop_map(|mut envs| {
        envs.dedup_by(|a, b| a["name"] == b["name"]);
        envs
    })
}

fn mounts_strategy() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["data", "logs", "shared"]),
            0..4u8,
            any::<bool>(),
        )
            .prop_map(|(v, i, expr)| {
                let mut m = json!({"name": v, "mountPath": format!("/{v}/{i}")});
                if expr {
                    m["subPathExpr"] = json!("x/$(POD_NAME)");
                }
                m
            }),
        0..3,
    )
}

fn pod_strategy() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((env_strategy(), mounts_strategy()), 1..4),
        prop::sample::select(APPS),
        any::<bool>(),
        prop::option::of(prop::sample::select(vec!["s2", "s3"])),
    )
        .prop_map(|(containers, app, init, secret)| {
            let containers: Vec<Value> = containers
                .into_iter()
                .enumerate()
                .map(|(i, (env, mounts))| json!({"name": format!("app-{i}"), "image": "app:1", "env": env, "volumeMounts": mounts}))
                .collect();
            let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": "p-", "labels": {"app": app}, "creationTimestamp": null, "annotations": {"keep": "me"}},
                "spec": {"containers": containers,
                         "volumes": [{"name": "data", "emptyDir": {}}, {"name": "logs", "emptyDir": {}}, {"name": "shared", "emptyDir": {}}]},
                "status": {}});
            if init {
                pod["spec"]["initContainers"] = json!([{"name": "app-init", "image": "init:1"}]);
            }
            if let Some(s) = secret {
                pod["spec"]["imagePullSecrets"] = json!([{"name": s}]);
            }
            pod
        })
}

/// One SidecarSet's container: `name` is unique across all generated SidecarSets.
fn sidecar(
    name: String,
    policy: &str,
    share: bool,
    hot: bool,
    transfer: bool,
    native: bool,
) -> Value {
    let mut c = json!({"name": name, "image": "side:1", "podInjectPolicy": policy,
        "shareVolumePolicy": {"type": if share { "enabled" } else { "disabled" }},
        "volumeMounts": [{"name": "side-vol", "mountPath": "/side"}]});
    if hot {
        c["upgradeStrategy"] =
            json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"});
    }
    if transfer {
        c["transferEnv"] =
            json!([{"sourceContainerName": "app-0", "envNames": ["A", "LOG_LEVEL"]}]);
    }
    if native {
        c["restartPolicy"] = json!("Always");
    }
    c
}

fn sets_strategy() -> impl Strategy<Value = Vec<Value>> {
    let one = (
        prop::sample::select(APPS),
        prop::collection::vec(
            (
                prop::sample::select(vec!["BeforeAppContainer", "AfterAppContainer"]),
                any::<bool>(),
                any::<bool>(),
                any::<bool>(),
            ),
            0..3,
        ),
        prop::collection::vec((any::<bool>(), any::<bool>()), 0..2),
        prop::option::of(prop::sample::select(vec![
            "Retain",
            "Overwrite",
            "MergePatchJson",
        ])),
        any::<bool>(),
    );
    prop::collection::vec(one, 1..5).prop_map(|sets| {
        sets.into_iter()
            .enumerate()
            .map(|(i, (app, containers, inits, patch_policy, secret))| {
                let containers: Vec<Value> = containers
                    .into_iter()
                    .enumerate()
                    .map(|(j, (policy, share, hot, transfer))| sidecar(format!("s{i}-c{j}"), policy, share, hot, transfer, false))
                    .collect();
                let inits: Vec<Value> = inits
                    .into_iter()
                    .enumerate()
                    .map(|(j, (native, hot))| sidecar(format!("s{i}-i{j}"), "AfterAppContainer", false, native && hot, false, native))
                    .collect();
                let mut spec = json!({"selector": {"matchLabels": {"app": app}}, "containers": containers, "initContainers": inits,
                    "volumes": [{"name": "side-vol", "emptyDir": {}}, {"name": "data", "hostPath": {"path": "/x"}}]});
                if let Some(p) = patch_policy {
                    // Validation lets SidecarSets share a key only when both merge JSON (§8 step 6).
                    let (key, value) =
                        if p == "MergePatchJson" { ("shared-key".to_owned(), format!("{{\"s{i}\":1}}")) } else { (format!("key-{i}"), format!("v{i}")) };
                    spec["patchPodMetadata"] = json!([{"annotations": {key: value}, "patchPolicy": p}]);
                }
                if secret {
                    spec["imagePullSecrets"] = json!([{"name": "s3"}, {"name": format!("sec{i}")}]);
                }
                json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
                       "metadata": {"name": format!("set-{i}"), "annotations": {"kruise.io/sidecarset-hash": format!("h{i}")}},
                       "spec": spec})
            })
            .collect()
    })
}

fn request(pod: &Value) -> AdmissionRequest {
    serde_json::from_str(
        &json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": "default", "operation": "CREATE", "object": pod})
        .to_string(),
    )
    .unwrap()
}

fn cluster(sets: &[Value]) -> FixtureCluster {
    let mut c = FixtureCluster::default();
    c.load_str(&serde_json::to_string(sets).unwrap(), "generated")
        .unwrap();
    c
}

fn ctx(gates: &FeatureGates) -> PodContext<'_> {
    PodContext {
        gates,
        now: "2026-11-21T10:00:00Z",
        random: 0.5,
        kruise_namespace: "kruise-system",
        workload: None,
        spreads: None,
        pps_whitelist: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn patches_apply_decode_and_injecting_again_changes_nothing(pod in pod_strategy(), sets in sets_strategy()) {
        let gates = FeatureGates::default();
        let view = cluster(&sets);
        let verdict = mutate(&request(&pod), &view, &ctx(&gates)).unwrap();
        let patched = patch::apply(&pod, &verdict.patch).expect("the patch applies to the raw request object");
        // Containers are written as text: the bytes are those serde_json writes for them as trees.
        prop_assert_eq!(patch::to_json(&verdict.patch), serde_json::to_vec(&patch::operations(&verdict.patch).unwrap()).unwrap());
        let decoded: Result<k8s_openapi::api::core::v1::Pod, _> = serde_json::from_value(patched.clone());
        prop_assert!(decoded.is_ok(), "{:?}", decoded.err());
        prop_assert_eq!(&patched["metadata"]["annotations"]["keep"], &json!("me"));
        let again = mutate(&request(&patched), &view, &ctx(&gates)).unwrap();
        prop_assert!(again.patch.is_empty(), "second injection changed: {}", String::from_utf8_lossy(&patch::to_json(&again.patch)));
    }

    #[test]
    fn load_order_changes_no_byte_of_the_patch(pod in pod_strategy(), sets in sets_strategy(), seed in any::<u64>()) {
        let gates = FeatureGates::default();
        let mut shuffled = sets.clone();
        // A deterministic shuffle from the seed (Fisher-Yates with an LCG).
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (state >> 33) as usize % (i + 1));
        }
        let a = mutate(&request(&pod), &cluster(&sets), &ctx(&gates)).unwrap();
        let b = mutate(&request(&pod), &cluster(&shuffled), &ctx(&gates)).unwrap();
        prop_assert_eq!(patch::to_json(&a.patch), patch::to_json(&b.patch));
    }

    #[test]
    fn every_diff_applies_and_gives_the_target(from in any_json(), to in any_json()) {
        let ops = patch::diff(&from, &to);
        prop_assert_eq!(patch::apply(&from, &ops).expect("the diff applies"), to.clone());
        prop_assert_eq!(&patch::diff(&from, &to), &ops, "deterministic");
        prop_assert!(patch::diff(&to, &to).is_empty());
        // The patch writer writes what serde_json writes.
        prop_assert_eq!(patch::to_json(&ops), serde_json::to_vec(&patch::operations(&ops).unwrap()).unwrap());
    }

    #[test]
    fn raw_pods_read_back_exactly_in_any_layout(object in any_json(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&object) } else { serde_json::to_string(&object) }.unwrap();
        if let Ok(doc) = RawPod::parse_str(&text) {
            // What serde_json reads from the same text (floats are read the same lossy way by both).
            let read: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(doc.to_value(), read);
        } else {
            // Refused only for a shape a Pod cannot decode.
            let spec = &object["spec"];
            let bad_list = |key: &str| match &spec[key] {
                Value::Null => false,
                Value::Array(items) => items.iter().any(|c| !c.is_object() || !(c["name"].is_string() || c["name"].is_null())),
                _ => true,
            };
            let metadata = &object["metadata"];
            let bad_annotations = match &metadata["annotations"] {
                Value::Null => false,
                Value::Object(map) => map.values().any(|v| !v.is_string()),
                _ => true,
            };
            prop_assert!(!object.is_object() || !(spec.is_object() || spec.is_null()) || !(metadata.is_object() || metadata.is_null())
                || bad_annotations || bad_list("containers") || bad_list("initContainers") || bad_list("volumes"));
        }
    }

    #[test]
    fn no_object_makes_the_chain_panic(object in any_json(), sets in sets_strategy()) {
        let gates = FeatureGates::default();
        let _ = mutate(&request(&object), &cluster(&sets), &ctx(&gates));
    }
}

/// Arbitrary JSON, biased towards pod-like shapes so the chain gets past its shape check sometimes.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9..1e9f64).prop_map(|f| Value::from(f * 1e-6)),
        "[a-z]{0,6}".prop_map(Value::from),
        // Quotes, backslashes, control and non-ASCII characters: they must survive the raw pod reader.
        "[\"\\\\/a\u{0}-\u{1f}é€😀]{0,6}".prop_map(Value::from),
    ];
    let tree = leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "metadata",
                    "spec",
                    "labels",
                    "annotations",
                    "containers",
                    "initContainers",
                    "volumes",
                    "name",
                    "env",
                    "app",
                    "managedFields",
                    "nodeName",
                    "we\"ird/~key"
                ]),
                inner,
                0..4,
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    });
    tree.prop_map(|v| match v {
        Value::Object(mut m) => {
            m.entry("metadata")
                .or_insert_with(|| json!({"labels": {"app": "web"}}));
            Value::Object(m)
        }
        other => other,
    })
}
