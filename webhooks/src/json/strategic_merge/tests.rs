//! Unit tests of the strategic-merge patch: Go's rules, its words, its orders, and the depth bound.

use serde_json::json;

use super::*;

/// A Pod as the API server returns it after defaulting (trimmed to what the tests read).
fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "default",
            "labels": {"app": "web"},
            "annotations": {"a": "1"},
            "finalizers": ["x/a", "x/b"],
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d",
                "uid": "u-1", "controller": true, "blockOwnerDeletion": true
            }],
            "futureField": {"kept": true}
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "command": ["nginx"],
                    "args": ["-g", "daemon off;"],
                    "env": [{"name": "X", "value": "1"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent"
                },
                {
                    "name": "sidecar",
                    "image": "busybox",
                    "env": [{"name": "Y", "value": "2"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "Always"
                }
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "kube-api-access-abcde", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}], "defaultMode": 420}}
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "priorityClassName": "high",
            "priority": 10000,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"}
    })
}

fn patched(patch: Value) -> Value {
    apply(pod(), patch, POD).unwrap()
}

fn container<'v>(pod: &'v Value, name: &str) -> &'v Value {
    pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

fn names(list: &Value, key: &str) -> Vec<Value> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e[key].clone())
        .collect()
}

#[test]
fn scenario_13_label_added_env_merged_by_name_other_containers_untouched() {
    let out = patched(json!({
        "metadata": {"labels": {"subset": "a"}},
        "spec": {"containers": [{"name": "app", "env": [{"name": "ZONE", "value": "z1"}]}]}
    }));
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "subset": "a"})
    );
    let app = container(&out, "app");
    // [X=1, ZONE=z1] as a set; Go's order puts the element only the patch has first.
    assert_eq!(
        app["env"],
        json!([{"name": "ZONE", "value": "z1"}, {"name": "X", "value": "1"}])
    );
    // The rest of the container and the other container as they were.
    let before = pod();
    let mut expected_app = container(&before, "app").clone();
    expected_app["env"] = app["env"].clone();
    assert_eq!(app, &expected_app);
    assert_eq!(container(&out, "sidecar"), container(&before, "sidecar"));
    assert_eq!(
        names(&out["spec"]["containers"], "name"),
        [json!("app"), json!("sidecar")]
    );
    // Everything else is unchanged.
    let mut expected = before.clone();
    expected["metadata"]["labels"]["subset"] = json!("a");
    expected["spec"]["containers"][0]["env"] = app["env"].clone();
    assert_eq!(out, expected);
}

#[test]
fn scenario_14_the_patch_sets_priority_class_name() {
    let out = patched(json!({"spec": {"priorityClassName": "low"}}));
    assert_eq!(out["spec"]["priorityClassName"], "low");
    // Clearing `priority` is the caller's step (§5.5 step 5), not the patch's.
    assert_eq!(out["spec"]["priority"], 10000);
}

#[test]
fn scenario_15_containers_that_are_not_a_list_are_an_error() {
    assert_eq!(
        apply(pod(), json!({"spec": {"containers": "x"}}), POD),
        Err(SmpError::Shape {
            path: "spec.containers".into(),
            expected: "a list",
            found: "string",
        })
    );
    let err = apply(pod(), json!({"spec": {"containers": {"name": "app"}}}), POD).unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec.containers: expected a list, found object"
    );
    let err = apply(pod(), json!({"spec": "x"}), POD).unwrap_err();
    assert_eq!(err.to_string(), "spec: expected an object, found string");
    // An element of a keyed list, and a list below an element.
    let err = apply(
        pod(),
        json!({"spec": {"containers": [{"name": "app", "env": {"name": "Z"}}]}}),
        POD,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec.containers[0].env: expected a list, found object"
    );
    let err = apply(
        pod(),
        json!({"spec": {"initContainers": [{"name": "i", "ports": 5}]}}),
        POD,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec.initContainers[0].ports: expected a list, found number"
    );
    let err = apply(pod(), json!({"metadata": {"labels": ["a"]}}), POD).unwrap_err();
    assert_eq!(
        err.to_string(),
        "metadata.labels: expected an object, found list"
    );
}

#[test]
fn maps_merge_recursively_and_null_deletes() {
    let out = patched(json!({
        "metadata": {"labels": {"app": null, "tier": "fe"}, "annotations": null},
        "spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "1Gi", "cpu": null}}}]}
    }));
    assert_eq!(out["metadata"]["labels"], json!({"tier": "fe"}));
    assert!(out["metadata"].get("annotations").is_none());
    assert_eq!(
        container(&out, "app")["resources"],
        json!({"limits": {"memory": "1Gi"}, "requests": {"cpu": "500m"}})
    );
    // A null for a key the original lacks is dropped, not kept.
    let out = patched(json!({"spec": {"hostname": null}}));
    assert!(out["spec"].get("hostname").is_none());
    // Values brought in lose their nulls (in objects, not in lists) and their `$patch` objects.
    let out = patched(json!({"spec": {"affinity": {
        "nodeAffinity": {"x": null, "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": []}, "gone": null},
            {"$patch": "delete"}
        ]},
        "podAffinity": {"$patch": "replace"}
    }}}));
    assert_eq!(
        out["spec"]["affinity"],
        json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": []}}
        ]}})
    );
}

#[test]
fn unknown_fields_of_the_original_are_kept_and_merged() {
    let out = patched(json!({
        "metadata": {"futureField": {"more": 1}},
        "spec": {"futureSpec": [1, 2]}
    }));
    assert_eq!(
        out["metadata"]["futureField"],
        json!({"kept": true, "more": 1})
    );
    assert_eq!(out["spec"]["futureSpec"], json!([1, 2]));
    assert_eq!(
        out["status"],
        json!({"phase": "Pending", "qosClass": "Burstable"})
    );
    assert_eq!(out["kind"], "Pod");
}

#[test]
fn lists_with_a_merge_key_merge_element_by_element() {
    let out = patched(json!({"spec": {
        "containers": [
            {"name": "sidecar", "image": "busybox:2"},
            {"name": "new", "image": "n"},
            {"name": "app", "ports": [{"containerPort": 8080}, {"containerPort": 80, "name": "http"}]}
        ],
        "volumes": [{"name": "cache", "emptyDir": {"medium": "Memory"}}, {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}]
    }}));
    // The patch's order, interleaved with the original's: "new" after "sidecar" as in the patch.
    assert_eq!(
        names(&out["spec"]["containers"], "name"),
        [json!("sidecar"), json!("new"), json!("app")]
    );
    assert_eq!(container(&out, "sidecar")["image"], "busybox:2");
    assert_eq!(
        container(&out, "sidecar")["env"],
        json!([{"name": "Y", "value": "2"}])
    );
    assert_eq!(
        container(&out, "new"),
        &json!({"name": "new", "image": "n"})
    );
    assert_eq!(
        container(&out, "app")["ports"],
        json!([{"containerPort": 8080}, {"containerPort": 80, "protocol": "TCP", "name": "http"}])
    );
    assert_eq!(
        out["spec"]["volumes"],
        json!([
            {"name": "cache", "emptyDir": {"medium": "Memory"}},
            {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "kube-api-access-abcde", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}], "defaultMode": 420}}
        ])
    );
    // Owner references by uid; a number merge key matches whatever its spelling.
    let out = patched(
        json!({"metadata": {"ownerReferences": [{"uid": "u-1", "blockOwnerDeletion": false}]}}),
    );
    assert_eq!(
        out["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
        false
    );
    assert_eq!(out["metadata"]["ownerReferences"][0]["name"], "web-5d");
    let out = patched(
        json!({"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80.0, "hostPort": 8000}]}]}}),
    );
    assert_eq!(
        container(&out, "app")["ports"],
        // The patch's scalar wins, in its spelling (Go's float64 would print 80).
        json!([{"containerPort": 80.0, "protocol": "TCP", "hostPort": 8000}])
    );
}

#[test]
fn order_of_merged_lists_follows_go() {
    // Original [a, b, c, d]; patch [d, x, b]: the patch's elements in patch order [d, x, b], the
    // original-only ones in original order [a, c]; mergeSortedSlice takes a (before d in the
    // original), c (before d), then d, x, b.
    let env = |names: &[&str]| Value::Array(names.iter().map(|n| json!({"name": n})).collect());
    let mut original = pod();
    original["spec"]["containers"][0]["env"] = env(&["a", "b", "c", "d"]);
    let out = apply(
        original,
        json!({"spec": {"containers": [{"name": "app", "env": env(&["d", "x", "b"])}]}}),
        POD,
    )
    .unwrap();
    assert_eq!(
        container(&out, "app")["env"],
        env(&["a", "c", "d", "x", "b"])
    );
    // An original-only element meeting one only the patch has goes after it; one meeting a patch
    // element it precedes in the original goes before it.
    let mut original = pod();
    original["spec"]["containers"][0]["env"] = env(&["a", "b", "c"]);
    let out = apply(
        original,
        json!({"spec": {"containers": [{"name": "app", "env": env(&["n", "c"])}]}}),
        POD,
    )
    .unwrap();
    assert_eq!(container(&out, "app")["env"], env(&["n", "a", "b", "c"]));
}

#[test]
fn lists_without_a_merge_key_are_replaced() {
    let out = patched(json!({"spec": {
        "tolerations": [{"key": "zone", "operator": "Equal", "value": "z1", "effect": "NoSchedule"}],
        "containers": [{"name": "app", "args": ["-v"], "command": ["sh", "-c"], "envFrom": [{"configMapRef": {"name": "c"}}]}]
    }}));
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "zone", "operator": "Equal", "value": "z1", "effect": "NoSchedule"}])
    );
    let app = container(&out, "app");
    assert_eq!(app["args"], json!(["-v"]));
    assert_eq!(app["command"], json!(["sh", "-c"]));
    assert_eq!(app["envFrom"], json!([{"configMapRef": {"name": "c"}}]));
    // A replaced list is taken as it stands, nulls and directives included (Go does not clean it).
    let out = patched(json!({"spec": {"tolerations": [{"key": "k", "x": null}]}}));
    assert_eq!(out["spec"]["tolerations"], json!([{"key": "k", "x": null}]));
    // A volume's inner lists are replaced with the volume's merge.
    let out = patched(
        json!({"spec": {"volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": []}}]}}),
    );
    assert_eq!(
        out["spec"]["volumes"][1]["projected"],
        json!({"sources": [], "defaultMode": 420})
    );
}

#[test]
fn primitive_lists_with_merge_strategy_append_and_delete() {
    let out = patched(json!({"metadata": {"finalizers": ["x/c", "x/a"]}}));
    // Deduplicated; the patch's [c, a] in its order, b (after a in the original) after them.
    assert_eq!(out["metadata"]["finalizers"], json!(["x/c", "x/a", "x/b"]));
    let out = patched(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/a", "x/z"]}}));
    assert_eq!(out["metadata"]["finalizers"], json!(["x/b"]));
    // Both: the deletion runs first, then the additions.
    let out = patched(json!({"metadata": {
        "$deleteFromPrimitiveList/finalizers": ["x/b"],
        "finalizers": ["x/c"]
    }}));
    assert_eq!(out["metadata"]["finalizers"], json!(["x/c", "x/a"]));
    // A deletion list for a list the original lacks does nothing; a bad directive key is an error.
    let out = patched(json!({"spec": {"$deleteFromPrimitiveList/nodeSelectorTerms": ["a"]}}));
    assert_eq!(out["spec"], pod()["spec"]);
    assert_eq!(
        apply(
            pod(),
            json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["x/a"]}}),
            POD
        ),
        Err(SmpError::Merge(
            "invalid patch format of primitive list".into()
        ))
    );
    // An empty patch list leaves a merged list as it was; a deletion list works on any list.
    let out = patched(json!({"metadata": {"finalizers": []}, "spec": {"containers": []}}));
    assert_eq!(out, pod());
    let out = patched(
        json!({"spec": {"containers": [{"name": "app", "$deleteFromPrimitiveList/args": ["-g"]}]}}),
    );
    assert_eq!(container(&out, "app")["args"], json!(["daemon off;"]));
    // Lists without strategy are replaced even when they hold scalars.
    let out = patched(json!({"spec": {"containers": [{"name": "app", "args": ["-q"]}]}}));
    assert_eq!(container(&out, "app")["args"], json!(["-q"]));
}

#[test]
fn patch_delete_removes_a_list_element_and_empties_a_map() {
    let out = patched(json!({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}));
    assert_eq!(names(&out["spec"]["containers"], "name"), [json!("app")]);
    let out = patched(
        json!({"spec": {"containers": [{"name": "app", "env": [{"name": "X", "$patch": "delete"}, {"name": "Z", "value": "3"}]}]}}),
    );
    assert_eq!(
        container(&out, "app")["env"],
        json!([{"name": "Z", "value": "3"}])
    );
    // On a map the original holds: an empty map, as Go returns; on one it lacks: nothing.
    let out = patched(
        json!({"spec": {"containers": [{"name": "app", "resources": {"$patch": "delete"}}], "affinity": {"$patch": "delete"}}}),
    );
    assert_eq!(container(&out, "app")["resources"], json!({}));
    assert!(out["spec"].get("affinity").is_none());
    // A deletion element without the merge key is an error.
    assert_eq!(
        apply(
            pod(),
            json!({"spec": {"containers": [{"$patch": "delete"}]}}),
            POD
        ),
        Err(SmpError::Merge(
            "map: map[$patch] does not contain declared merge key: name".into()
        ))
    );
}

#[test]
fn patch_replace_replaces_a_map_or_a_list() {
    let out = patched(json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}));
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
    let out = patched(
        json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "s"}]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "solo", "image": "s"}])
    );
    let out = patched(
        json!({"spec": {"containers": [{"name": "app", "env": [{"name": "N", "value": "v"}, {"$patch": "replace"}]}]}}),
    );
    assert_eq!(
        container(&out, "app")["env"],
        json!([{"name": "N", "value": "v"}])
    );
    // Unknown directives are errors.
    for patch in [
        json!({"spec": {"$patch": "merge-all"}}),
        json!({"spec": {"$patch": 1}}),
        json!({"spec": {"containers": [{"name": "app", "$patch": "bogus"}]}}),
    ] {
        let err = apply(pod(), patch.clone(), POD).unwrap_err();
        assert!(
            err.to_string().starts_with("unknown patch type: "),
            "{patch}: {err}"
        );
    }
    assert_eq!(
        apply(
            pod(),
            json!({"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}),
            POD
        ),
        Err(SmpError::Merge(
            "merging lists cannot yet be specified in the patch".into()
        ))
    );
}

#[test]
fn retain_keys_and_set_element_order() {
    let out = patched(
        json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}}),
    );
    assert_eq!(
        out["spec"]["volumes"][0],
        json!({"name": "data", "hostPath": {"path": "/x"}})
    );
    assert_eq!(
        apply(
            pod(),
            json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["name"], "hostPath": {}}]}}),
            POD
        ),
        Err(SmpError::Merge("invalid patch format of retainKeys".into()))
    );
    assert_eq!(
        apply(pod(), json!({"spec": {"$retainKeys": "x"}}), POD),
        Err(SmpError::Merge("invalid patch format of retainKeys".into()))
    );
    let err = apply(
        pod(),
        json!({"spec": {"$setElementOrder/containers": [{"name": "app"}]}}),
        POD,
    )
    .unwrap_err();
    assert_eq!(err, SmpError::Unsupported("$setElementOrder"));
    assert_eq!(
        err.to_string(),
        "$setElementOrder is not supported by this strategic-merge patch"
    );
}

#[test]
fn merge_errors_use_go_words() {
    // Objects under a Go map, or lists where the schema has a struct.
    let mut original = pod();
    original["metadata"]["labels"]["odd"] = json!({"a": 1});
    assert_eq!(
        apply(
            original,
            json!({"metadata": {"labels": {"odd": {"b": 2}}}}),
            POD
        ),
        Err(SmpError::Merge(
            "merging an object in json but data type is not struct, instead is: map".into()
        ))
    );
    let mut original = pod();
    original["spec"]["affinity"] = json!([1]);
    assert_eq!(
        apply(original, json!({"spec": {"affinity": [2]}}), POD),
        Err(SmpError::Merge(
            "expected slice or array type, but got: struct".into()
        ))
    );
    // Mixed element types, lists of lists, elements without the merge key.
    let err = apply(pod(), json!({"spec": {"containers": ["x"]}}), POD).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("list element types are not identical"),
        "{err}"
    );
    let mut original = pod();
    original["metadata"]["finalizers"] = json!([["a"]]);
    assert_eq!(
        apply(original, json!({"metadata": {"finalizers": ["b"]}}), POD),
        Err(SmpError::Merge("lists of lists are not supported".into()))
    );
    assert_eq!(
        apply(
            pod(),
            json!({"spec": {"containers": [{"image": "i"}]}}),
            POD
        ),
        Err(SmpError::Merge(
            "map: map[image] does not contain declared merge key: name".into()
        ))
    );
    let mut original = pod();
    original["spec"]["containers"][1] = json!({"image": "anonymous"});
    assert_eq!(
        apply(
            original,
            json!({"spec": {"containers": [{"name": "app", "image": "i"}]}}),
            POD
        ),
        Err(SmpError::Merge(
            "map: map[image] does not contain declared merge key: name".into()
        ))
    );
    // A merge-key value that is an object (Go panics comparing two maps).
    let mut original = pod();
    original["spec"]["containers"][0]["name"] = json!({"n": 1});
    assert!(matches!(
        apply(
            original,
            json!({"spec": {"containers": [{"name": {"n": 1}}]}}),
            POD
        ),
        Err(SmpError::Merge(_))
    ));
}

#[test]
fn the_top_level_must_be_an_object_or_null() {
    for bad in [json!([1]), json!(1), json!("s"), json!(true)] {
        assert_eq!(
            apply(bad.clone(), json!({}), POD),
            Err(SmpError::BadDocument)
        );
        assert_eq!(apply(pod(), bad, POD), Err(SmpError::BadDocument));
    }
    assert_eq!(apply(pod(), Value::Null, POD).unwrap(), pod());
    assert_eq!(
        apply(Value::Null, json!({"metadata": {"name": "n"}}), POD).unwrap(),
        json!({"metadata": {"name": "n"}})
    );
    // `$patch` at the top.
    assert_eq!(
        apply(pod(), json!({"$patch": "delete"}), POD).unwrap(),
        json!({})
    );
    assert_eq!(
        apply(pod(), json!({"$patch": "replace", "kind": "Pod"}), POD).unwrap(),
        json!({"kind": "Pod"})
    );
}

/// `{"k": inner}`, built without `json!` (which serializes an expression: a recursive copy).
fn object(inner: Value) -> Value {
    Value::Object(Map::from_iter([("k".to_owned(), inner)]))
}

/// Builds `{"k": {"k": … leaf …}}` `depth` objects deep without recursion.
fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |inner, _| object(inner))
}

/// Drops a deep value without recursing (serde_json's drop recurses).
fn dismantle(mut value: Value) {
    loop {
        value = match value {
            Value::Object(mut map) => match map.remove("k") {
                Some(inner) => inner,
                None => return,
            },
            Value::Array(mut list) => match list.pop() {
                Some(inner) => inner,
                None => return,
            },
            _ => return,
        };
    }
}

#[test]
fn deep_nesting_is_merged_up_to_the_limit_and_refused_past_it() {
    // The top object is level 1: a patch MAX_DEPTH deep merges into an original as deep.
    let original = nested(MAX_DEPTH - 1, json!({"x": 1}));
    let patch = nested(MAX_DEPTH - 1, json!({"y": 2}));
    let out = apply(original, patch, POD).unwrap();
    let mut at = &out;
    for _ in 0..MAX_DEPTH - 1 {
        at = &at["k"];
    }
    assert_eq!(at, &json!({"x": 1, "y": 2}));
    dismantle(out);
    // One level more is refused before any recursion; so are much deeper patches, and lists.
    // (A refused patch is dropped without recursion too.)
    let patch = nested(MAX_DEPTH, json!({}));
    assert_eq!(apply(json!({}), patch, POD), Err(SmpError::TooDeep));
    let patch = nested(200_000, json!(1));
    assert_eq!(apply(pod(), patch, POD), Err(SmpError::TooDeep));
    let list = (0..100_000).fold(Value::Null, |inner, _| Value::Array(vec![inner]));
    assert_eq!(apply(pod(), object(list), POD), Err(SmpError::TooDeep));
    // An original deeper than the limit, under a patch that stops early, is never walked.
    let mut original = pod();
    original["spec"]["deep"] = nested(2 * MAX_DEPTH, json!(1));
    let out = apply(original, json!({"spec": {"other": 5}}), POD).unwrap();
    assert_eq!(out["spec"]["other"], 5);
    dismantle(out);
}

#[test]
fn odd_shapes_never_panic() {
    let odd = [
        json!(null),
        json!(0),
        json!(-1.5),
        json!("x"),
        json!(true),
        json!([]),
        json!([null]),
        json!([1, "a", {}]),
        json!([[1]]),
        json!({}),
        json!({"$patch": null}),
        json!([{"$patch": "delete"}]),
        json!([{"name": "app", "$patch": "replace"}]),
        json!([{"name": null}]),
        json!([{"name": ["app"]}]),
        json!({"$retainKeys": [1, null, {}]}),
        json!({"$deleteFromPrimitiveList/": [1]}),
        json!({"$deleteFromPrimitiveList/containers": [{"name": "app"}]}),
        json!({"$deleteFromPrimitiveList/finalizers": "x"}),
    ];
    let fields = [
        "metadata",
        "spec",
        "status",
        "labels",
        "finalizers",
        "ownerReferences",
        "containers",
        "env",
        "ports",
        "volumes",
        "tolerations",
        "affinity",
        "unknown",
        "k",
    ];
    for value in &odd {
        for field in fields {
            for patch in [
                json!({ field: value }),
                json!({"spec": { field: value }}),
                json!({"metadata": { field: value }}),
                json!({"spec": {"containers": [{"name": "app", field: value}]}}),
                json!({"spec": {"containers": [{"name": "new", field: value}]}}),
            ] {
                // Whatever the answer, it is an answer.
                let _ = apply(pod(), patch.clone(), POD);
                let _ = apply(patch.clone(), pod(), POD);
                let _ = apply(patch.clone(), patch, POD);
            }
        }
        let _ = apply(value.clone(), value.clone(), POD);
        let _ = apply(value.clone(), value.clone(), Schema::Plain);
    }
}
