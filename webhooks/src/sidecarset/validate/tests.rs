//! Scenarios 44-61 of spec/sidecarset.md §11, the overlap table of scenario 58, and the request handling of
//! §8 (versions, conversion, UPDATE, answers), with the SidecarSet name rule and Go's regex errors. Expected
//! values are written from the spec.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde_json::{Value, json};

use super::*;
use crate::fixture::FixtureCluster;
use crate::validation::meta::validate_object_meta;

const KRUISE_NS: &str = "kruise-system";

/// A stand-in for the §5 calculator (the server wires the real one): accepts `+ - * /`, parentheses,
/// numbers with a unit suffix and/or `%`, the bound variable, and `max`/`min` with exactly 2 arguments.
fn fake_calc(expr: &str, variable: &str) -> Result<(), String> {
    #[derive(Debug, Clone, PartialEq)]
    enum Tok {
        Num,
        Ident(String),
        Op(char),
    }
    let chars: Vec<char> = expr.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            if i < chars.len() && chars[i] == '%' {
                i += 1;
            }
            toks.push(Tok::Num);
        } else if c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            toks.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if "+-*/(),".contains(c) {
            toks.push(Tok::Op(c));
            i += 1;
        } else {
            return Err(format!("parse error: unexpected character {c:?}"));
        }
    }
    struct P<'a> {
        toks: &'a [Tok],
        pos: usize,
        variable: &'a str,
    }
    impl P<'_> {
        fn peek(&self) -> Option<&Tok> {
            self.toks.get(self.pos)
        }
        fn eat(&mut self, op: char) -> bool {
            if self.peek() == Some(&Tok::Op(op)) {
                self.pos += 1;
                true
            } else {
                false
            }
        }
        fn expr(&mut self) -> Result<(), String> {
            self.term()?;
            while self.eat('+') || self.eat('-') {
                self.term()?;
            }
            Ok(())
        }
        fn term(&mut self) -> Result<(), String> {
            self.unary()?;
            while self.eat('*') || self.eat('/') {
                self.unary()?;
            }
            Ok(())
        }
        fn unary(&mut self) -> Result<(), String> {
            if self.eat('-') {
                return self.unary();
            }
            match self.toks.get(self.pos).cloned() {
                Some(Tok::Num) => {
                    self.pos += 1;
                    Ok(())
                }
                Some(Tok::Ident(name)) => {
                    self.pos += 1;
                    if self.eat('(') {
                        let mut args = 1;
                        self.expr()?;
                        while self.eat(',') {
                            args += 1;
                            self.expr()?;
                        }
                        if !self.eat(')') {
                            return Err("parse error: syntax error: missing )".into());
                        }
                        let lower = name.to_lowercase();
                        if lower != "max" && lower != "min" {
                            return Err(format!("unknown function: {name}"));
                        }
                        if args != 2 {
                            return Err(format!(
                                "{lower} function requires exactly 2 arguments, got {args}"
                            ));
                        }
                        Ok(())
                    } else if name.eq_ignore_ascii_case(self.variable) {
                        Ok(())
                    } else {
                        Err(format!("undefined variable: {name}"))
                    }
                }
                Some(Tok::Op('(')) => {
                    self.pos += 1;
                    self.expr()?;
                    if self.eat(')') {
                        Ok(())
                    } else {
                        Err("parse error: syntax error: missing )".into())
                    }
                }
                other => Err(format!("parse error: syntax error at {other:?}")),
            }
        }
    }
    let mut p = P {
        toks: &toks,
        pos: 0,
        variable,
    };
    p.expr()?;
    if p.pos != toks.len() {
        return Err(format!("parse error: syntax error at {:?}", toks[p.pos]));
    }
    Ok(())
}

#[test]
fn the_fake_calculator_accepts_what_the_spec_accepts() {
    for ok in [
        "cpu*50%",
        "max(cpu*50%, 50m)",
        "0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)",
        "max(min(cpu*50%, 100m), 50m)",
        "100Mi",
    ] {
        assert_eq!(fake_calc(ok, "cpu"), Ok(()), "{ok}");
    }
    assert_eq!(
        fake_calc("max(cpu*50%)", "cpu"),
        Err("max function requires exactly 2 arguments, got 1".into())
    );
    assert_eq!(
        fake_calc("memory*2", "cpu"),
        Err("undefined variable: memory".into())
    );
    assert!(fake_calc("max(cpu*50%, 50m", "cpu").is_err());
    assert!(fake_calc("cpu +*/ 50%", "cpu").is_err());
}

/// Test inputs: the cluster, gates and whitelist.
struct Env {
    cluster: FixtureCluster,
    gates: FeatureGates,
    whitelist: WhitelistSource,
}

impl Env {
    fn new() -> Self {
        Self {
            cluster: FixtureCluster::default(),
            gates: FeatureGates::default(),
            whitelist: WhitelistSource::Missing,
        }
    }

    fn with(mut self, objects: &[Value]) -> Self {
        for o in objects {
            self.cluster
                .load_str(&o.to_string(), "test.json")
                .expect("fixture loads");
        }
        self
    }

    fn whitelist(mut self, json: &str) -> Self {
        self.whitelist = WhitelistSource::Present(json.into());
        self
    }

    fn gate_on(mut self) -> Self {
        self.gates = FeatureGates::parse(&format!("{DEFAULTS_ALLOWED_GATE}=true")).unwrap();
        self
    }

    fn ctx(&self) -> ValidateContext<'_> {
        ValidateContext {
            gates: &self.gates,
            kruise_namespace: KRUISE_NS,
            patch_metadata_whitelist: &self.whitelist,
            validate_expression: &fake_calc,
        }
    }

    /// Every field error of a CREATE (or UPDATE, with `old`), before aggregation.
    fn errors_of(&self, obj: &Value, old: Option<&Value>) -> Vec<String> {
        let subject = decode(Some(&obj.to_string())).expect("object decodes");
        let old = old.map(|o| decode(Some(&o.to_string())).expect("old object decodes"));
        validate_sidecarset(&subject, old.as_ref(), &self.cluster, &self.ctx())
            .expect("decodes")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn errors(&self, obj: &Value) -> Vec<String> {
        self.errors_of(obj, None)
    }

    fn review(&self, req: &AdmissionRequest) -> Result<Verdict, WebhookError> {
        validate(req, &self.cluster, &self.ctx())
    }
}

fn container(name: &str) -> Value {
    json!({
        "name": name, "image": "test-image", "imagePullPolicy": "IfNotPresent",
        "terminationMessagePolicy": "File", "podInjectPolicy": "BeforeAppContainer",
        "shareVolumePolicy": {"type": "disabled"}, "upgradeStrategy": {"upgradeType": "ColdUpgrade"}
    })
}

fn init_container(name: &str) -> Value {
    json!({"name": name, "image": "test-image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"})
}

/// A valid v1beta1 SidecarSet: selector `a=b`, `NotUpdate`, one container `test-sidecar`.
fn sidecarset(name: &str) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "updateStrategy": {"type": "NotUpdate"},
            "containers": [container("test-sidecar")]
        }
    })
}

/// Merges `patch` into `base` (objects recursively; other values replace; `null` deletes).
fn merge(mut base: Value, patch: Value) -> Value {
    fn go(base: &mut Value, patch: Value) {
        match (base, patch) {
            (Value::Object(b), Value::Object(p)) => {
                for (k, v) in p {
                    if v.is_null() {
                        b.remove(&k);
                    } else {
                        go(b.entry(k).or_insert(Value::Null), v);
                    }
                }
            }
            (b, p) => *b = p,
        }
    }
    go(&mut base, patch);
    base
}

fn request(op: &str, version: &str, object: &Value, old: Option<&Value>) -> AdmissionRequest {
    let mut req = json!({
        "uid": "u1",
        "kind": {"group": "apps.kruise.io", "version": version, "kind": "SidecarSet"},
        "resource": {"group": "apps.kruise.io", "version": version, "resource": "sidecarsets"},
        "operation": op,
        "object": object,
    });
    if let Some(old) = old {
        req["oldObject"] = old.clone();
    }
    serde_json::from_value(req).unwrap()
}

fn revision(name: &str, set: &str, custom: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": KRUISE_NS,
                     "labels": {"kruise.io/sidecarset-name": set, "apps.kruise.io/sidecarset-custom-version": custom}},
        "revision": 1,
        "data": {"spec": {"$patch": "replace", "containers": [{"name": "test-sidecar", "image": "old"}]}}
    })
}

fn assert_single(errors: &[String], expected: &str) {
    assert_eq!(errors, [expected], "errors: {errors:#?}");
}

#[test]
fn a_valid_sidecarset_is_allowed() {
    let env = Env::new();
    assert!(env.errors(&sidecarset("test-sidecarset")).is_empty());
    let verdict = env
        .review(&request(
            "CREATE",
            "v1beta1",
            &sidecarset("test-sidecarset"),
            None,
        ))
        .unwrap();
    assert!(verdict.is_allowed());
    assert!(verdict.patch.is_empty());
}

#[test]
fn scenario_44_missing_selector() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"selector": null}}),
    );
    assert_single(
        &Env::new().errors(&obj),
        "spec.selector: Required value: no selector defined for SidecarSet",
    );
}

#[test]
fn scenario_45_bad_selector_value_gives_two_errors() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"selector": {"matchExpressions": [
            {"key": "app-name", "operator": "NotIn", "values": ["app-group", "app-risk-"]}]}}}),
    );
    let errs = Env::new().errors(&obj);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(
        errs[0].starts_with(
            "spec.selector.matchExpressions[0].values[1]: Invalid value: \"app-risk-\": a valid label must be an empty string"
        ),
        "{}",
        errs[0]
    );
    assert!(
        errs[1].starts_with("spec.selector.selector: Invalid value: v1.LabelSelector{")
            && errs[1].ends_with('}'),
        "the conversion failure has no detail: {}",
        errs[1]
    );
}

#[test]
fn scenario_46_duplicated_scatter_term() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate", "scatterStrategy": [
            {"key": "key-1", "value": "value-1"}, {"key": "key-1", "value": "value-1"}]}}}),
    );
    assert_single(
        &Env::new().errors(&obj),
        "spec.updateStrategy.scatterStrategy: Required value: duplicated key=key-1 value=value-1",
    );
}

#[test]
fn scenario_47_no_containers() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"containers": null}}),
    );
    assert_single(
        &Env::new().errors(&obj),
        "spec: Required value: no initContainer or container defined for SidecarSet",
    );
}

#[test]
fn scenario_48_missing_share_volume_policy() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"containers": [merge(container("test-sidecar"), json!({"shareVolumePolicy": null}))]}}),
    );
    assert_single(
        &Env::new().errors(&obj),
        "spec.container.shareVolumePolicy: Invalid value: v1beta1.ShareVolumePolicy{Type:\"\"}: unsupported share volume policy",
    );
}

#[test]
fn scenario_49_init_container_without_image() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"containers": null, "initContainers": [
            {"name": "test-sidecar", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}}),
    );
    assert_single(
        &Env::new().errors(&obj),
        "spec.initContainers[0].image: Required value",
    );
}

#[test]
fn scenario_50_volume_devices() {
    let env = Env::new();
    let with_device = |devices: Value, mounts: Value, volumes: Value| {
        merge(
            sidecarset("test-sidecarset"),
            json!({"spec": {"containers": [merge(container("test-sidecar"),
                json!({"volumeDevices": devices, "volumeMounts": mounts}))], "volumes": volumes}}),
        )
    };
    let device = json!([{"name": "disk0", "devicePath": "/dev/nvme1"}]);
    assert_single(
        &env.errors(&with_device(device.clone(), json!([]), json!([]))),
        "spec.containers[0].volumeDevices[0].name: Not found: \"disk0\"",
    );
    let volumes = json!([
        {"name": "disk0", "persistentVolumeClaim": {"claimName": "claim"}},
        {"name": "data", "emptyDir": {}}
    ]);
    assert!(
        env.errors(&with_device(device.clone(), json!([]), volumes.clone()))
            .is_empty()
    );
    let clash = env.errors(&with_device(
        device,
        json!([{"name": "data", "mountPath": "/dev/nvme1"}]),
        volumes,
    ));
    assert_eq!(
        clash,
        [
            "spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/dev/nvme1\": must not already exist as a path in volumeDevices",
            "spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/dev/nvme1\": must not already exist as a path in volumeMounts",
        ]
    );
}

#[test]
fn a_volume_mount_must_name_a_volume() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"containers": [merge(container("test-sidecar"),
            json!({"volumeMounts": [{"name": "nope", "mountPath": "/x"}]}))]}}),
    );
    assert_single(
        &Env::new().errors(&obj),
        "spec.containers[0].volumeMounts[0].name: Not found: \"nope\"",
    );
}

#[test]
fn scenario_51_patch_key_repeated_in_one_sidecarset() {
    let env = Env::new().whitelist(r#"{"rules":[{"allowedAnnotationKeyExprs":["key.*"]}]}"#);
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"patchPodMetadata": [
            {"annotations": {"key1": "{\"a\":1}"}, "patchPolicy": "MergePatchJson"},
            {"annotations": {"key1": "v"}, "patchPolicy": "Overwrite"}]}}),
    );
    assert_single(
        &env.errors(&obj),
        "spec.patchPodMetadata: Required value: patch annotation[key1] already exist",
    );
}

#[test]
fn patch_entries_need_annotations_a_policy_and_qualified_keys() {
    let env = Env::new().gate_on();
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"patchPodMetadata": [{"annotations": {}, "patchPolicy": "Retain"}, {"annotations": {"bad key": "v"}}]}}),
    );
    let errs = env.errors(&obj);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert_eq!(
        errs[0],
        "spec.patchPodMetadata: Required value: no annotations defined for SidecarSet"
    );
    assert!(
        errs[1].starts_with(
            "patchPodMetadata.annotations: Invalid value: \"bad key\": name part must consist of"
        ),
        "{}",
        errs[1]
    );
    assert_eq!(
        errs[2],
        "spec.patchPodMetadata: Required value: no patchPolicy defined for patchPodMetadata"
    );
}

#[test]
fn scenario_52_revision_must_exist() {
    let env = Env::new().with(&[revision(
        "test-sidecarset-01234",
        "test-sidecarset",
        "normal-sidecarset-01234",
    )]);
    let with_rev = |rev: Value| {
        merge(
            sidecarset("test-sidecarset"),
            json!({"spec": {"injectionStrategy": {"revision": rev}}}),
        )
    };
    assert_single(
        &Env::new().errors(&with_rev(
            json!({"customVersion": "normal-sidecarset-01234"}),
        )),
        "revision: Invalid value: null: Cannot find specific ControllerRevision, err: ControllerRevision.apps \"test-sidecarset\" not found",
    );
    assert_single(
        &env.errors(&with_rev(json!({"revisionName": "test-sidecarset-678235"}))),
        "revision: Invalid value: null: Cannot find specific ControllerRevision, err: controllerrevisions.apps \"test-sidecarset-678235\" not found",
    );
    assert!(
        env.errors(&with_rev(
            json!({"customVersion": "normal-sidecarset-01234", "policy": "Always"})
        ))
        .is_empty()
    );
    assert!(
        env.errors(&with_rev(json!({"revisionName": "test-sidecarset-01234"})))
            .is_empty()
    );
    let errs = env.errors(&with_rev(json!({"policy": "Sometimes"})));
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(
        errs[0].starts_with("revision: Invalid value: ")
            && errs[0].ends_with(": revisionName and customVersion cannot be empty simultaneously")
    );
    assert!(
        errs[1].starts_with("revision.policy: Invalid value: ")
            && errs[1].ends_with(": Invalid policy Sometimes, supported: [Always, Partial]")
    );
}

#[test]
fn scenario_53_native_sidecar_needs_not_update() {
    let obj = |strategy: &str| {
        merge(
            sidecarset("test-sidecarset"),
            json!({"spec": {"updateStrategy": {"type": strategy},
                "initContainers": [merge(init_container("native"), json!({"restartPolicy": "Always"}))]}}),
        )
    };
    assert_single(
        &Env::new().errors(&obj("RollingUpdate")),
        "spec.updateStrategy: Required value: The initContainer in-place upgrade is not currently supported.",
    );
    assert!(Env::new().errors(&obj("NotUpdate")).is_empty());
}

#[test]
fn update_strategy_rules_apply_to_rolling_update_only() {
    let obj = |strategy: Value| {
        merge(
            sidecarset("test-sidecarset"),
            json!({"spec": {"updateStrategy": strategy}}),
        )
    };
    let errs = Env::new().errors(&obj(json!({"type": "RollingUpdate", "partition": "abc",
        "maxUnavailable": -1, "selector": {"matchLabels": {"x": "y"}}})));
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert!(errs[0].starts_with("updateStrategy: Invalid value: "));
    assert!(errs[0].ends_with(": Partition and Selector cannot be used together"));
    assert_eq!(
        errs[1],
        "spec.updateStrategy.partition: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"abc\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
    );
    assert_eq!(
        errs[2],
        "spec.updateStrategy.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"
    );
    assert!(
        Env::new()
            .errors(&obj(
                json!({"type": "RollingUpdate", "partition": 0, "maxUnavailable": 0,
                "selector": {"matchLabels": {"x": "y"}}})
            ))
            .is_empty(),
        "partition 0 counts as unset; maxUnavailable 0 is accepted"
    );
    assert!(
        Env::new()
            .errors(&obj(json!({"type": "NotUpdate", "partition": "abc"})))
            .is_empty()
    );
    let priority = |p: Value| {
        Env::new().errors(&obj(
            json!({"type": "RollingUpdate", "priorityStrategy": p}),
        ))
    };
    assert_single(
        &priority(
            json!({"weightPriority": [{"weight": 101, "matchSelector": {"matchLabels": {"a": "b"}}}]}),
        ),
        "spec.updateStrategy.priorityStrategy: Required value: weight must be valid number in the range 1-100",
    );
    assert_single(
        &priority(json!({"weightPriority": [{"weight": 10, "matchSelector": {}}]})),
        "spec.updateStrategy.priorityStrategy: Required value: selector can not be empty",
    );
    assert_single(
        &priority(
            json!({"weightPriority": [{"weight": 10}], "orderPriority": [{"orderedKey": "k"}]}),
        ),
        "spec.updateStrategy.priorityStrategy: Required value: only one of weightPriority and orderPriority can be used",
    );
    assert_single(
        &priority(json!({"orderPriority": [{"orderedKey": ""}]})),
        "spec.updateStrategy.priorityStrategy: Required value: order key can not be empty",
    );
    assert!(
        priority(
            json!({"weightPriority": [{"weight": 0, "matchSelector": {"matchLabels": {"a": "b"}}}]})
        )
        .is_empty()
    );
    assert_single(
        &Env::new().errors(&obj(
            json!({"type": "RollingUpdate", "scatterStrategy": [{"key": "", "value": "v"}]}),
        )),
        "spec.updateStrategy.scatterStrategy: Required value: key should not be empty",
    );
}

#[test]
fn empty_and_namespace_selectors() {
    let mut obj = sidecarset("test-sidecarset");
    obj["spec"]["selector"] = json!({});
    obj["spec"]["namespaceSelector"] = json!({"matchLabels": {}});
    let errs = Env::new().errors(&obj);
    assert_eq!(
        errs,
        [
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is not valid for sidecarset.",
            "spec.namespaceSelector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is not valid for sidecarset.",
        ]
    );
}

fn with_policy(c: Value, policy: Value) -> Value {
    merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"containers": [merge(c, json!({"resourcesPolicy": policy}))]}}),
    )
}

#[test]
fn scenario_54_resources_policy() {
    let env = Env::new();
    let policy = |cpu: &str| {
        json!({"targetContainersMode": "sum", "targetContainersNameRegex": "^app.*$",
               "resourcesExpr": {"limits": {"cpu": cpu}}})
    };
    let expr_error = |cpu: &str| -> Vec<String> {
        env.errors(&with_policy(container("test-sidecar"), policy(cpu)))
    };
    assert_single(
        &env.errors(&with_policy(
            merge(
                container("test-sidecar"),
                json!({"resources": {"limits": {"cpu": "100m"}}}),
            ),
            json!({"targetContainersMode": "sum", "resourcesExpr": {"limits": {"cpu": "cpu*50%"}}}),
        )),
        "spec[0].resourcesPolicy: Invalid value: \"test-sidecar\": resourcesPolicy and resources cannot be configured together",
    );
    let regex = env.errors(&with_policy(
        container("test-sidecar"),
        json!({"targetContainersMode": "sum", "targetContainersNameRegex": "[invalid(regex",
               "resourcesExpr": {"limits": {"cpu": "cpu*50%"}}}),
    ));
    assert_eq!(regex.len(), 1, "{regex:#?}");
    assert!(
        regex[0].starts_with(
            "spec[0].resourcesPolicy.targetContainersNameRegex: Invalid value: \"[invalid(regex\": invalid regex pattern: "
        ),
        "{}",
        regex[0]
    );
    assert_single(
        &env.errors(&with_policy(
            container("test-sidecar"),
            json!({"targetContainersMode": "sum", "targetContainersNameRegex": "", "resourcesExpr": {"limits": {"cpu": "cpu*50%"}}}),
        )),
        "spec[0].resourcesPolicy.targetContainersNameRegex: Required value: invalid empty regex",
    );
    assert_single(
        &env.errors(&with_policy(
            container("test-sidecar"),
            json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*", "resourcesExpr": {}}),
        )),
        "spec[0].resourcesPolicy.resourcesExpr: Required value: at least one of limits or requests must be configured",
    );
    for bad in ["max(cpu*50%, 50m", "max(cpu*50%)", "invalidvar * 50%"] {
        let errs = expr_error(bad);
        assert_eq!(errs.len(), 1, "{bad}: {errs:#?}");
        assert!(
            errs[0].starts_with(&format!(
                "spec[0].resourcesPolicy.resourcesExpr.limits.cpu: Invalid value: \"{bad}\": invalid expression: "
            )),
            "{}",
            errs[0]
        );
    }
    assert_single(
        &expr_error("memory*50%"),
        "spec[0].resourcesPolicy.resourcesExpr.limits.cpu: Invalid value: \"memory*50%\": invalid expression: undefined variable: memory",
    );
    assert!(expr_error("0.5*cpu - 0.3*max(0, cpu-4) + 0.3*max(0, cpu-8)").is_empty());
    assert!(
        env.errors(&with_policy(
            container("test-sidecar"),
            json!({"targetContainersMode": "max", "targetContainersNameRegex": ".*",
                   "resourcesExpr": {"limits": {"memory": "max(memory*50%, 100Mi)"}, "requests": {"cpu": "", "memory": "100Mi"}}}),
        ))
        .is_empty()
    );
    let init = |restart: Option<&str>| {
        let mut c = init_container("init-sidecar");
        if let Some(r) = restart {
            c["restartPolicy"] = json!(r);
        }
        c["resourcesPolicy"] = policy("cpu*50%");
        merge(
            sidecarset("test-sidecarset"),
            json!({"spec": {"initContainers": [c]}}),
        )
    };
    assert_single(
        &env.errors(&init(None)),
        "spec[0].resourcesPolicy: Invalid value: \"init-sidecar\": resourcesPolicy is only supported for containers with RestartPolicy Always",
    );
    assert!(env.errors(&init(Some("Always"))).is_empty());
}

#[test]
fn container_inject_policy_and_transfer_env_field_refs() {
    let env = Env::new();
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"containers": [merge(container("test-sidecar"), json!({
        "podInjectPolicy": "Middle",
        "transferEnv": [
            {"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}, "envName": "A"},
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['x']"}}, "envName": "B"},
            {"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v1"}}, "envName": "C"},
            {"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['bad key']"}}, "envName": "D"},
            {"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.annotations['Example.com/Key']"}}, "envName": "E"}
        ]}))]}}),
    );
    let errs = env.errors(&obj);
    assert_eq!(errs.len(), 5, "{errs:#?}");
    assert_eq!(
        errs[0],
        "spec.container.podInjectPolicy: Invalid value: \"Middle\": unsupported pod inject policy"
    );
    assert_eq!(
        errs[1],
        "spec[0].transferEnv.fieldRef.fieldPath: Invalid value: \"metadata.name\": error converting fieldPath: field label not supported: metadata.name"
    );
    assert_eq!(
        errs[2],
        "spec[0].transferEnv.fieldRef.apiVersion: Required value"
    );
    assert_eq!(
        errs[3],
        "spec[0].transferEnv.fieldRef.fieldPath: Required value"
    );
    assert!(
        errs[4].starts_with(
            "spec[0].transferEnv.fieldRef: Invalid value: \"bad key\": name part must consist of"
        ),
        "{}",
        errs[4]
    );
}

#[test]
fn metadata_rules() {
    let env = Env::new();
    assert_single(
        &env.errors(&sidecarset("bad_name")),
        "metadata.name: Invalid value: \"bad_name\": sidecarset name must consist of alphanumeric characters or '-' (e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')",
    );
    let long = "a".repeat(64);
    assert_single(
        &env.errors(&sidecarset(&long)),
        &format!("metadata.name: Invalid value: \"{long}\": must be no more than 63 characters"),
    );
    let errs = env.errors(&merge(
        sidecarset("ok"),
        json!({"metadata": {"labels": {"app": "bad value"}, "annotations": {"-bad": "x"}}}),
    ));
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(
        errs[0].starts_with("metadata.labels: Invalid value: \"bad value\": a valid label must be")
    );
    assert!(
        errs[1].starts_with(
            "metadata.annotations: Invalid value: \"-bad\": name part must consist of"
        )
    );
    assert_single(
        &env.errors(&merge(sidecarset("x"), json!({"metadata": {"name": null}}))),
        "metadata.name: Required value: name or generateName is required",
    );
}

fn existing(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": name}, "spec": spec})
}

/// The new SidecarSet of scenarios 55-57: selector `a=b`, container `container-name`, init container
/// `init-name`, volume `volume-name`.
fn sidecarset2(extra: Value) -> Value {
    merge(
        json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "sidecarset2"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "updateStrategy": {"type": "NotUpdate"},
                "containers": [container("container-name")],
                "initContainers": [init_container("init-name")],
                "volumes": [{"name": "volume-name", "emptyDir": {}}]
            }
        }),
        extra,
    )
}

#[test]
fn scenario_55_container_name_conflicts() {
    let env = Env::new().with(&[existing(
        "sidecarset1",
        json!({"selector": {"matchLabels": {"a": "b"}}, "containers": [{"name": "container-name"}],
               "initContainers": [{"name": "init-name"}], "volumes": [{"name": "volume-name"}]}),
    )]);
    assert_eq!(
        env.errors(&sidecarset2(json!({}))),
        [
            "spec.containers: Invalid value: \"init-name\": container init-name already exist in sidecarset1",
            "spec.containers: Invalid value: \"container-name\": container container-name already exist in sidecarset1",
        ],
        "the volume equal after defaulting does not conflict"
    );
    let ns = |app: &str| json!({"matchLabels": {"app": app}});
    let env = Env::new().with(&[existing(
        "sidecarset1",
        json!({"selector": {"matchLabels": {"a": "b"}}, "namespaceSelector": ns("nginx"),
               "containers": [{"name": "container-name"}], "initContainers": [{"name": "other-init"}]}),
    )]);
    assert_single(
        &env.errors(&sidecarset2(
            json!({"spec": {"namespaceSelector": ns("nginx")}}),
        )),
        "spec.containers: Invalid value: \"container-name\": container container-name already exist in sidecarset1",
    );
    assert!(
        env.errors(&sidecarset2(
            json!({"spec": {"namespaceSelector": ns("redis")}})
        ))
        .is_empty()
    );
    assert!(
        env.errors(&sidecarset2(
            json!({"spec": {"selector": {"matchLabels": {"a": "c"}}}})
        ))
        .is_empty(),
        "disjoint pod selectors do not conflict"
    );
    assert!(
        env.errors(&merge(
            sidecarset2(json!({})),
            json!({"metadata": {"name": "sidecarset1"}, "spec": {"namespaceSelector": ns("nginx")}})
        ))
        .is_empty(),
        "a SidecarSet does not conflict with itself"
    );
}

#[test]
fn scenario_56_volume_conflicts() {
    let env = |volume: Value| {
        Env::new().with(&[existing(
            "sidecarset1",
            json!({"selector": {"matchLabels": {"a": "b"}}, "containers": [{"name": "other"}], "volumes": [volume]}),
        )])
    };
    let mine =
        json!({"spec": {"volumes": [{"name": "volume-name", "hostPath": {"path": "/home/work"}}]}});
    assert_single(
        &env(json!({"name": "volume-name", "hostPath": {"path": "/home/other"}}))
            .errors(&sidecarset2(mine.clone())),
        "spec.volumes: Invalid value: \"volume-name\": volume volume-name is in conflict with sidecarset sidecarset1",
    );
    assert!(
        env(json!({"name": "volume-name", "hostPath": {"path": "/home/work", "type": ""}}))
            .errors(&sidecarset2(mine.clone()))
            .is_empty(),
        "identical after defaulting"
    );
    assert!(
        env(json!({"name": "other-volume", "hostPath": {"path": "/x"}}))
            .errors(&sidecarset2(mine))
            .is_empty()
    );
}

#[test]
fn scenario_57_annotation_conflicts() {
    let env = |policy: &str, key: &str| {
        Env::new().gate_on().with(&[existing(
            "sidecarset1",
            json!({"selector": {"matchLabels": {"a": "b"}}, "containers": [{"name": "other"}],
                   "patchPodMetadata": [{"annotations": {key: "v"}, "patchPolicy": policy}]}),
        )])
    };
    let mine = |policy: &str, key: &str| {
        sidecarset2(
            json!({"spec": {"patchPodMetadata": [{"annotations": {key: "v"}, "patchPolicy": policy}]}}),
        )
    };
    assert_single(
        &env("MergePatchJson", "key1").errors(&mine("Overwrite", "key1")),
        "spec.patchPodMetadata: Invalid value: \"key1\": annotation key1 is in conflict with sidecarset sidecarset1",
    );
    assert!(
        env("Overwrite", "key2")
            .errors(&mine("Retain", "key1"))
            .is_empty()
    );
    assert!(
        env("MergePatchJson", "oom-score")
            .errors(&mine("MergePatchJson", "oom-score"))
            .is_empty()
    );
    assert!(
        env("Overwrite", "key1")
            .errors(&mine("Retain", "key1"))
            .is_empty(),
        "Retain entries never conflict"
    );
    assert_eq!(
        env("Overwrite", "key1")
            .errors(&mine("MergePatchJson", "key1"))
            .len(),
        1
    );
}

fn selector(v: Value) -> LabelSelector {
    serde_json::from_value(v).unwrap()
}

#[test]
fn scenario_58_selector_overlap_table() {
    let labels = |pairs: &[(&str, &str)]| -> Value {
        json!({"matchLabels": pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()})
    };
    let expr = |key: &str, op: &str, values: &[&str]| -> Value {
        json!({"matchExpressions": [{"key": key, "operator": op, "values": values}]})
    };
    let table: Vec<(Value, Value, bool)> = vec![
        (labels(&[("a", "h")]), labels(&[("a", "h")]), true),
        (labels(&[("a", "h")]), labels(&[("a", "i")]), false),
        (labels(&[("a", "h")]), labels(&[("b", "i")]), true),
        (
            labels(&[("a", "h"), ("b", "i"), ("c", "j")]),
            labels(&[("a", "h"), ("b", "x"), ("c", "j")]),
            false,
        ),
        (
            labels(&[("a", "h")]),
            expr("a", "In", &["h", "i", "j"]),
            true,
        ),
        (labels(&[("a", "h")]), expr("a", "In", &["i", "j"]), false),
        (
            expr("a", "NotIn", &["h", "i"]),
            labels(&[("a", "h")]),
            false,
        ),
        (labels(&[("a", "h")]), expr("a", "Exists", &[]), true),
        (expr("a", "DoesNotExist", &[]), labels(&[("a", "h")]), false),
    ];
    for (i, (a, b, overlap)) in table.into_iter().enumerate() {
        let (a, b) = (selector(a), selector(b));
        assert_eq!(
            overlap::selectors_overlap(Some(&a), Some(&b)),
            overlap,
            "case {i}: {a:?} / {b:?}"
        );
    }
}

#[test]
fn the_exists_rule_is_asymmetric() {
    // §12: `{a=h}` vs `{b Exists}` counts as disjoint, because `b` is absent from the first selector.
    let a = selector(json!({"matchLabels": {"a": "h"}}));
    let b = selector(json!({"matchExpressions": [{"key": "b", "operator": "Exists"}]}));
    assert!(overlap::is_disjoint(&a, &b));
    assert!(!overlap::is_disjoint(&b, &a));
    assert!(!overlap::selectors_overlap(Some(&a), Some(&b)));
}

#[test]
fn scenario_59_update_immutables() {
    let with = |containers: Value| {
        merge(
            sidecarset("test-sidecarset"),
            json!({"spec": {"containers": containers}}),
        )
    };
    let c = |name: &str, upgrade: &str| {
        merge(
            container(name),
            json!({"upgradeStrategy": {"upgradeType": upgrade, "hotUpgradeEmptyImage": "empty:1"}}),
        )
    };
    let old = with(json!([c("test", "ColdUpgrade")]));
    let env = Env::new();
    assert_single(
        &env.errors_of(&with(json!([c("test", "HotUpgrade")])), Some(&old)),
        "spec.containers.upgradeStrategy.upgradeType: Invalid value: \"test\": container test upgradeType is immutable",
    );
    assert_single(
        &env.errors_of(
            &with(json!([c("test", "ColdUpgrade"), c("new", "ColdUpgrade")])),
            Some(&old),
        ),
        "spec.containers.name: Invalid value: \"new\": container new is not found",
    );
    assert!(
        env.errors_of(&with(json!([c("test", "ColdUpgrade")])), Some(&old))
            .is_empty()
    );
    let two = with(json!([c("test", "ColdUpgrade"), c("other", "ColdUpgrade")]));
    assert!(
        env.errors_of(&with(json!([c("test", "ColdUpgrade")])), Some(&two))
            .is_empty(),
        "removing a container is allowed"
    );
    let untyped = with(json!([c("test", "")]));
    assert!(
        env.errors_of(&with(json!([c("test", "HotUpgrade")])), Some(&untyped))
            .is_empty(),
        "an empty old upgradeType may change"
    );
}

fn canary(name: &str, base: &str, strategy: &str) -> Value {
    merge(
        sidecarset(name),
        json!({"metadata": {"annotations": {"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": base}},
               "spec": {"updateStrategy": {"type": strategy}, "containers": [container("canary-sidecar")]}}),
    )
}

#[test]
fn scenario_60_canary_rules() {
    let env = Env::new().with(&[
        existing(
            "base",
            json!({"selector": {"matchLabels": {"a": "b"}}, "containers": [{"name": "canary-sidecar"}]}),
        ),
        canary("other-canary", "base", "NotUpdate"),
    ]);
    assert_single(
        &env.errors(&canary("me", "me", "NotUpdate")),
        "metadata: Invalid value: \"me\": base sidecarSet cannot be itself",
    );
    assert_single(
        &env.errors(&canary("me", "nonexistent-sidecarset", "NotUpdate")),
        "metadata: Invalid value: \"nonexistent-sidecarset\": fetch base sidecarSet[nonexistent-sidecarset] failed: sidecarsets.apps.kruise.io \"nonexistent-sidecarset\" not found",
    );
    assert_single(
        &env.errors_of(
            &canary("me", "base", "NotUpdate"),
            Some(&canary("me", "other-base", "NotUpdate")),
        ),
        "metadata: Invalid value: \"base\": annotations[apps.kruise.io/sidecarset-base] is immutable",
    );
    assert_single(
        &env.errors(&canary("me", "base", "RollingUpdate")),
        "metadata: Invalid value: \"base\": RollingUpdate is not supported for canary sidecarSet",
    );
    assert_single(
        &env.errors(&canary("me", "other-canary", "NotUpdate")),
        "metadata: Invalid value: \"other-canary\": base sidecarSet cannot be canary",
    );
    // The base is not an "other": the canary may reuse its container names; another SidecarSet may not.
    assert_eq!(
        env.errors(&canary("me", "base", "NotUpdate")),
        [
            "spec.containers: Invalid value: \"canary-sidecar\": container canary-sidecar already exist in other-canary"
        ]
    );
    let env = Env::new().with(&[existing(
        "base",
        json!({"selector": {"matchLabels": {"a": "b"}}, "containers": [{"name": "canary-sidecar"}]}),
    )]);
    assert!(env.errors(&canary("me", "base", "NotUpdate")).is_empty());
    assert!(
        env.errors(&merge(
            canary("me", "base", "RollingUpdate"),
            json!({"metadata": {"annotations": {"apps.kruise.io/sidecarset-canary": "True"}}})
        ))
        .len()
            == 1,
        "not canary unless exactly \"true\": only the container conflict with base remains"
    );
}

#[test]
fn scenario_61_whitelist() {
    let patch = |labels: Value| {
        merge(
            sidecarset("test-sidecarset"),
            json!({"metadata": {"labels": labels},
                   "spec": {"patchPodMetadata": [{"annotations": {"key1": "v"}, "patchPolicy": "Overwrite"}]}}),
        )
    };
    let obj = patch(json!({"app": "sidecar"}));
    assert_single(
        &Env::new().errors(&obj),
        "spec.patchPodMetadata: Required value: SidecarSet patch metadata whitelist not found",
    );
    assert!(
        Env::new()
            .whitelist(r#"{"rules":[{"allowedAnnotationKeyExprs":["key.*"]}]}"#)
            .errors(&obj)
            .is_empty()
    );
    assert_single(
        &Env::new()
            .whitelist(r#"{"rules":[{"allowedAnnotationKeyExprs":["key2"]}]}"#)
            .errors(&obj),
        "spec.patchPodMetadata: Required value: sidecarSet patch metadata annotation(key1) is not allowed",
    );
    assert_single(
        &Env::new()
            .whitelist(r#"{"rules":[{"selector":{"matchLabels":{"app":"other"}},"allowedAnnotationKeyExprs":["key.*"]}]}"#)
            .errors(&obj),
        "spec.patchPodMetadata: Required value: sidecarSet patch metadata annotation is not allowed",
    );
    assert!(
        Env::new()
            .whitelist(r#"{"rules":[{"selector":{"matchLabels":{"app":"sidecar"}},"allowedAnnotationKeyExprs":["key.*"]}]}"#)
            .errors(&obj)
            .is_empty()
    );
    assert!(Env::new().gate_on().errors(&obj).is_empty());
    assert!(
        Env::new()
            .gate_on()
            .whitelist(r#"{"rules":[{"selector":{"matchLabels":{"app":"other"}},"allowedAnnotationKeyExprs":["x"]}]}"#)
            .errors(&obj)
            .is_empty(),
        "no applicable rule with the gate on: accepted"
    );
    let mut read_error = Env::new();
    read_error.whitelist =
        WhitelistSource::ReadError("configmaps \"kruise-configuration\" is forbidden".into());
    assert_single(
        &read_error.errors(&obj),
        "spec.patchPodMetadata: Required value: configmaps \"kruise-configuration\" is forbidden",
    );
    // The cluster read failed, not the object: 500, with the same text.
    let denial = read_error
        .review(&request("CREATE", "v1beta1", &obj, None))
        .unwrap()
        .denial()
        .cloned()
        .expect("denied");
    assert_eq!(denial.code, 500);
    assert_eq!(
        denial.message,
        "spec.patchPodMetadata: Required value: configmaps \"kruise-configuration\" is forbidden"
    );
    let bad_json = Env::new().whitelist("{not json").errors(&obj);
    assert_eq!(bad_json.len(), 1);
    assert!(bad_json[0].starts_with("spec.patchPodMetadata: Required value: "));
    let bad_regex = Env::new()
        .whitelist(r#"{"rules":[{"allowedAnnotationKeyExprs":["("]}]}"#)
        .errors(&obj);
    assert!(
        bad_regex[0].starts_with("spec.patchPodMetadata: Required value: error parsing regexp: "),
        "{bad_regex:?}"
    );
}

#[test]
fn violations_are_answered_422_with_the_aggregate() {
    let obj = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"selector": null, "containers": null}}),
    );
    let verdict = Env::new()
        .review(&request("CREATE", "v1beta1", &obj, None))
        .unwrap();
    let denial = verdict.denial().expect("denied");
    assert_eq!(denial.code, 422);
    assert_eq!(denial.reason, None);
    assert_eq!(
        denial.message,
        "[spec.selector: Required value: no selector defined for SidecarSet, spec: Required value: no initContainer or container defined for SidecarSet]"
    );
    let one = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"selector": null}}),
    );
    let verdict = Env::new()
        .review(&request("CREATE", "v1beta1", &one, None))
        .unwrap();
    assert_eq!(
        verdict.denial().unwrap().message,
        "spec.selector: Required value: no selector defined for SidecarSet"
    );
}

#[test]
fn cross_sidecarset_checks_run_only_when_everything_else_passed() {
    let env = Env::new().with(&[existing(
        "sidecarset1",
        json!({"selector": {"matchLabels": {"a": "b"}}, "containers": [{"name": "container-name"}]}),
    )]);
    let errs = env.errors(&sidecarset2(json!({"spec": {"initContainers": null, "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": -1}}})));
    assert_single(
        &errs,
        "spec.updateStrategy.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
    );
}

#[test]
fn v1alpha1_objects_are_converted_first() {
    // spec.namespace becomes a namespaceSelector on kubernetes.io/metadata.name (§2).
    let env = Env::new().with(&[existing(
        "sidecarset1",
        json!({"selector": {"matchLabels": {"a": "b"}}, "containers": [{"name": "container-name"}],
               "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns2"}}}),
    )]);
    let alpha = |ns: &str| {
        merge(
            sidecarset2(json!({"spec": {"initContainers": null, "namespace": ns}})),
            json!({"apiVersion": "apps.kruise.io/v1alpha1"}),
        )
    };
    let allowed = env
        .review(&request("CREATE", "v1alpha1", &alpha("ns1"), None))
        .unwrap();
    assert!(allowed.is_allowed(), "{allowed:?}");
    let denied = env
        .review(&request("CREATE", "v1alpha1", &alpha("ns2"), None))
        .unwrap();
    assert_eq!(
        denied.denial().unwrap().message,
        "spec.containers: Invalid value: \"container-name\": container container-name already exist in sidecarset1"
    );
}

#[test]
fn update_requests_compare_with_the_converted_old_object() {
    let env = Env::new();
    let old = merge(
        sidecarset("test-sidecarset"),
        json!({"apiVersion": "apps.kruise.io/v1alpha1"}),
    );
    let new = merge(
        sidecarset("test-sidecarset"),
        json!({"spec": {"containers": [container("test-sidecar"), container("added")]}}),
    );
    let verdict = env
        .review(&request("UPDATE", "v1beta1", &new, Some(&old)))
        .unwrap();
    assert_eq!(
        verdict.denial().unwrap().message,
        "spec.containers.name: Invalid value: \"added\": container added is not found"
    );
    let same = env
        .review(&request(
            "UPDATE",
            "v1beta1",
            &sidecarset("test-sidecarset"),
            Some(&old),
        ))
        .unwrap();
    assert!(same.is_allowed());
    let missing_old = env
        .review(&request(
            "UPDATE",
            "v1beta1",
            &sidecarset("test-sidecarset"),
            None,
        ))
        .unwrap_err();
    assert_eq!(missing_old.http_code(), 400);
}

#[test]
fn unsupported_versions_and_malformed_objects_are_400() {
    let env = Env::new();
    let e = env
        .review(&request("CREATE", "v2", &sidecarset("x"), None))
        .unwrap_err();
    assert_eq!(e.http_code(), 400);
    assert_eq!(e.to_string(), "unsupported version: v2");
    for bad in [
        json!("not an object"),
        merge(sidecarset("x"), json!({"spec": {"containers": "nope"}})),
        merge(
            sidecarset("x"),
            json!({"spec": {"updateStrategy": {"partition": [1]}}}),
        ),
        json!({"metadata": {"name": "no-kind"}}),
    ] {
        let e = env
            .review(&request("CREATE", "v1beta1", &bad, None))
            .unwrap_err();
        assert_eq!(e.http_code(), 400, "{bad}: {e}");
    }
}

#[test]
fn an_unparsable_quantity_is_a_decode_error() {
    let obj = merge(
        sidecarset("x"),
        json!({"spec": {"containers": [merge(container("c"), json!({"resources": {"limits": {"cpu": "lots"}}}))]}}),
    );
    let e = Env::new()
        .review(&request("CREATE", "v1beta1", &obj, None))
        .unwrap_err();
    assert_eq!(e.http_code(), 400);
    assert!(
        e.to_string().starts_with(
            "decoding spec.containers[0].resources.limits[cpu]: quantities must match"
        ),
        "{e}"
    );
}

#[test]
fn other_operations_are_allowed() {
    let verdict = Env::new()
        .review(&request("DELETE", "v1beta1", &json!(null), None))
        .unwrap();
    assert!(verdict.is_allowed());
}

#[test]
fn sidecarset_names_follow_kruise_regex_and_length() {
    assert_eq!(
        sidecarset_name_errors("bad_name"),
        [
            "sidecarset name must consist of alphanumeric characters or '-' (e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')"
        ]
    );
    assert_eq!(
        sidecarset_name_errors(&"a".repeat(64)),
        ["must be no more than 63 characters"]
    );
    assert!(sidecarset_name_errors("Upper-Case-ok-1").is_empty());
}

#[test]
fn object_meta_requires_a_name_and_no_namespace() {
    let meta = ObjectMeta {
        namespace: Some("ns".into()),
        generation: Some(-1),
        finalizers: Some(vec!["orphan".into(), "foregroundDeletion".into()]),
        ..Default::default()
    };
    let errs: Vec<String> =
        validate_object_meta(&meta, sidecarset_name_errors, &FieldPath::new("metadata"))
            .iter()
            .map(ToString::to_string)
            .collect();
    assert_eq!(
        errs,
        [
            "metadata.name: Required value: name or generateName is required",
            "metadata.namespace: Forbidden: not allowed on this type",
            "metadata.generation: Invalid value: -1: must be greater than or equal to 0",
            "metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set",
        ]
    );
}

#[test]
fn go_regex_errors_are_one_line() {
    assert!(compile_go_regex("key.*").unwrap().is_match("key1"));
    let e = compile_go_regex("[invalid(regex").unwrap_err();
    assert!(e.starts_with("error parsing regexp: "), "{e}");
    assert!(e.ends_with(": `[invalid(regex`"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}
