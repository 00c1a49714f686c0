//! Unit tests of the raw pod: reading, writing and the patch.

use super::*;
use serde_json::json;

use crate::json::patch::{self, Op};

/// Each operation as its name and path.
fn op_paths(ops: &[Op]) -> Vec<String> {
    ops.iter()
        .map(|op| format!("{} {}", op.name(), op.path()))
        .collect()
}

fn round_trip(pod: &Value, edit: impl FnOnce(&mut RawPod<'_>)) -> (Value, Vec<Op>) {
    let text = pod.to_string();
    let mut doc = RawPod::parse_str(&text).unwrap();
    edit(&mut doc);
    let expected = doc.to_value();
    let ops = doc.into_patch();
    assert_eq!(patch::apply(pod, &ops).unwrap(), expected, "{ops:?}");
    (expected, ops)
}

#[test]
fn untouched_lists_stay_raw_and_give_no_operations() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "x-unknown": {"k": 1}}], "nodeName": "n"}});
    let text = pod.to_string();
    let doc = RawPod::parse_str(&text).unwrap();
    assert!(
        doc.metadata.fields[0].tree.get().is_some(),
        "the name is built"
    );
    assert!(doc.spec.fields[0].tree.get().is_none(), "nodeName is not");
    assert_eq!(doc.containers.len(), 1);
    assert_eq!(doc.containers.name(0), "a");
    assert_eq!(doc.to_value(), pod);
    let (_, ops) = round_trip(&pod, |_| {});
    assert!(ops.is_empty());
}

#[test]
fn insertions_and_replacements_keep_originals_untouched() {
    let pod = json!({"spec": {"containers": [{"name": "a", "unknown": 1}, {"name": "b"}, {"name": "c"}]}});
    let (result, ops) = round_trip(&pod, |doc| {
        doc.containers.set(vec![
            Item::New(json!({"name": "s0"}).into()),
            Item::Original(0),
            Item::New(json!({"name": "b", "image": "new"}).into()),
            Item::Original(2),
            Item::New(json!({"name": "s1"}).into()),
        ]);
    });
    assert_eq!(
        result["spec"]["containers"],
        json!([{"name": "s0"}, {"name": "a", "unknown": 1}, {"name": "b", "image": "new"}, {"name": "c"}, {"name": "s1"}])
    );
    assert_eq!(
        op_paths(&ops),
        [
            "remove /spec/containers/1",
            "add /spec/containers/0",
            "add /spec/containers/2",
            "add /spec/containers/4"
        ]
    );
}

#[test]
fn absent_null_and_reordered_lists_are_written_whole() {
    for pod in [
        json!({"metadata": {}}),
        json!({"spec": null}),
        json!({"spec": {"initContainers": null}}),
        json!({"spec": {"initContainers": []}}),
    ] {
        let (result, _) = round_trip(&pod, |doc| {
            doc.init_containers
                .set(vec![Item::New(json!({"name": "i"}).into())]);
        });
        assert_eq!(
            result["spec"]["initContainers"],
            json!([{"name": "i"}]),
            "{pod}"
        );
    }
    let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let (result, ops) = round_trip(&pod, |doc| {
        doc.containers
            .set(vec![Item::Original(1), Item::Original(0)]);
    });
    assert_eq!(
        result["spec"]["containers"],
        json!([{"name": "b"}, {"name": "a"}])
    );
    assert_eq!(ops.len(), 1);
}

#[test]
fn names_are_read_in_any_layout() {
    let text = r#"{"spec": {"containers": [{"name":"plain","image":"i"}, {"image": "i", "name": "later"},
        {"name":"esc\"aped"}, {"name":"x\u0041"}, { "name" : "spaced" }, {"image": "nameless"}, {"name": null}]}}"#;
    let doc = RawPod::parse_str(text).unwrap();
    let names: Vec<&str> = (0..doc.containers.len())
        .map(|i| doc.containers.name(i))
        .collect();
    assert_eq!(
        names,
        ["plain", "later", "esc\"aped", "xA", "spaced", "", ""]
    );
    assert!(
        matches!(doc.containers.elements[0].name, Some(Cow::Borrowed(_))),
        "a plain name is borrowed"
    );
    let text = r#"{"spec": {"containers": [{"name": "first", "name": "last"}]}}"#;
    assert_eq!(RawPod::parse_str(text).unwrap().containers.name(0), "last");
}

#[test]
fn fields_no_step_reads_stay_text_and_written_ones_diff_against_the_request() {
    let pod = json!({
        "metadata": {"name": "p", "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}], "uid": "u"},
        "spec": {"tolerations": [{"key": "k"}], "readinessGates": [], "nodeName": "n", "volumes": [{"name": "v"}]},
    });
    let text = pod.to_string();
    let doc = RawPod::parse_str(&text).unwrap();
    let built = |part: &Part<'_>| -> Vec<String> {
        let built = part.fields.iter().filter(|f| f.tree.get().is_some());
        built.map(|f| f.key.to_string()).collect()
    };
    assert_eq!(built(&doc.metadata), ["name"]);
    assert_eq!(built(&doc.spec), ["readinessGates"]);
    assert_eq!(doc.volumes.name(0), "v");
    assert_eq!(doc.to_value(), pod);
    let (result, ops) = round_trip(&pod, |doc| {
        *doc.edit(Section::Spec, "nodeName") = Some(json!("m"));
        *doc.edit(Section::Metadata, "uid") = Some(json!("w"));
    });
    assert_eq!(result["spec"]["nodeName"], "m");
    assert_eq!(result["spec"]["tolerations"], json!([{"key": "k"}]));
    assert_eq!(
        result["metadata"]["managedFields"],
        pod["metadata"]["managedFields"]
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&patch::to_json(&ops)).unwrap(),
        json!([
            {"op": "replace", "path": "/metadata/uid", "value": "w"},
            {"op": "replace", "path": "/spec/nodeName", "value": "m"}
        ])
    );
}

#[test]
fn a_section_written_twice_reads_as_its_last_value() {
    let text = r#"{"metadata": {"uid": "a", "name": "a"}, "spec": {"nodeName": "a", "volumes": [{"name": "a"}]},
        "metadata": {"generateName": "b-"}, "spec": {"hostname": "b"}}"#;
    let doc = RawPod::parse_str(text).unwrap();
    assert_eq!(
        doc.to_value(),
        json!({"metadata": {"generateName": "b-"}, "spec": {"hostname": "b"}})
    );
    assert!(doc.volumes.is_empty());
}

#[test]
fn lists_are_parsed_only_when_read() {
    let pod =
        json!({"spec": {"containers": [{"name": "a", "env": [{"name": "E", "value": "1"}]}]}});
    let text = pod.to_string();
    let doc = RawPod::parse_str(&text).unwrap();
    assert!(
        doc.containers
            .members
            .iter()
            .all(|m| m.value.get().is_none())
    );
    let container = doc.containers.iter().next().unwrap();
    assert_eq!(container.list("env").next().unwrap()["value"], "1");
    let name = doc
        .containers
        .members
        .iter()
        .find(|m| m.key == "name")
        .unwrap();
    assert!(name.value.get().is_none(), "the name is not parsed");
    assert_eq!(doc.containers.value(0), pod["spec"]["containers"][0]);
}

#[test]
fn may_contain_never_misses_a_word_spelled_with_escapes() {
    let text = r#"{"spec": {"containers": [{"name": "a", "env": [{"name": "IS_INJECTED"}]},
        {"name": "b", "env": [{"name": "IS\u005fINJECTED"}]}, {"name": "c", "env": [{"name": "OTHER"}]}]}}"#;
    let doc = RawPod::parse_str(text).unwrap();
    let found: Vec<bool> = doc
        .containers
        .iter()
        .map(|c| c.may_contain("env", "IS_INJECTED"))
        .collect();
    assert_eq!(found, [true, true, false]);
    let second = doc.containers.iter().nth(1).unwrap();
    assert_eq!(second.list("env").next().unwrap()["name"], "IS_INJECTED");
    assert!(!second.may_contain("missing", "IS_INJECTED"));
}

#[test]
fn a_member_written_twice_reads_as_its_last_value() {
    let text = r#"{"spec": {"containers": [{"name": "a", "env": [1], "x": {"env": 2}, "env": [{"name": "E"}]}]}}"#;
    let doc = RawPod::parse_str(text).unwrap();
    let container = doc.containers.iter().next().unwrap();
    assert_eq!(container.get("env"), Some(&json!([{"name": "E"}])));
    assert_eq!(container.str("name"), "a");
    assert_eq!(container.get("missing"), None);
    assert_eq!(container.str("x"), "", "not a string");
    assert_eq!(container.list("name").count(), 0, "not a list");
}

/// Elements read as text give what the tree of the same list gives: every element, and each string
/// member as `get` then `as_str` reads it, whatever the layout, escapes or repeats.
#[test]
fn elements_read_as_text_agree_with_the_tree() {
    let text = r#"{"spec": {"containers": [{"name": "a", "env": [ {"name" : "A", "value": "x\"y\u00e9"} ,
        {"n\u0061me": "B", "name": "C", "value": 7, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        "not an object", null, [1, {"name": "D"}], {"name": null}, {} ],
        "volumeMounts": [], "volumeDevices": {"name": "x"}, "ports": "none"}]}}"#;
    let doc = RawPod::parse_str(text).unwrap();
    let c = doc.containers.iter().next().unwrap();
    for key in [
        "env",
        "volumeMounts",
        "volumeDevices",
        "ports",
        "name",
        "missing",
    ] {
        let texts: Vec<Value> = c
            .elements(key)
            .map(|e| serde_json::from_str(e.text()).unwrap())
            .collect();
        let tree: Vec<Value> = c.list(key).cloned().collect();
        assert_eq!(texts, tree, "{key}");
        for (element, tree) in c.elements(key).zip(c.list(key)) {
            let members = ["name", "value", "valueFrom", "missing"];
            assert_eq!(element.strs(members), members.map(|m| element.str(m)));
            for member in members {
                assert_eq!(
                    element.str(member),
                    tree.get(member).and_then(Value::as_str).unwrap_or(""),
                    "{key} {member} of {}",
                    element.text()
                );
            }
        }
    }
    let env: Vec<RawElement<'_>> = c.elements("env").collect();
    assert_eq!(env.len(), 7);
    assert_eq!(
        env[0].text(),
        r#"{"name" : "A", "value": "x\"y\u00e9"}"#,
        "as received"
    );
    assert_eq!(env[0].str("value"), "x\"y\u{e9}");
    assert_eq!(
        env[1].str("name"),
        "C",
        "the last of a repeated key, escaped or not"
    );
}

/// A member kept as text reads as received until a step writes it; then it reads as written.
#[test]
fn a_member_reads_as_received_until_a_step_writes_it() {
    let text =
        r#"{"metadata": {"labels": {"a": "1"}, "ownerReferences": [], "labels": {"b": "\u0032"}}}"#;
    let mut doc = RawPod::parse_str(text).unwrap();
    assert_eq!(
        doc.received(Section::Metadata, "labels"),
        Some(r#"{"b": "\u0032"}"#)
    );
    assert_eq!(
        doc.get(Section::Metadata, "labels"),
        Some(&json!({"b": "2"}))
    );
    assert_eq!(doc.get(Section::Metadata, "missing"), None);
    assert_eq!(doc.get(Section::Spec, "labels"), None);
    doc.object_mut(Section::Metadata, "labels")
        .insert("c".into(), json!("3"));
    assert_eq!(
        doc.get(Section::Metadata, "labels"),
        Some(&json!({"b": "2", "c": "3"}))
    );
    assert_eq!(
        doc.received(Section::Metadata, "labels"),
        Some(r#"{"b": "\u0032"}"#),
        "as received still"
    );
    *doc.edit(Section::Metadata, "ownerReferences") = None;
    assert_eq!(doc.get(Section::Metadata, "ownerReferences"), None);
    assert_eq!(
        doc.to_value(),
        json!({"metadata": {"labels": {"b": "2", "c": "3"}}}),
        "the step's values stand"
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&patch::to_json(&doc.into_patch())).unwrap(),
        json!([
            {"op": "add", "path": "/metadata/labels/c", "value": "3"},
            {"op": "remove", "path": "/metadata/ownerReferences"}
        ])
    );
}

/// Members written into a section absent or null as received add it whole; lists set in a spec that is
/// not there add the spec first; edits come in the pod's key order, each once.
#[test]
fn sections_not_received_are_added_whole_in_key_order() {
    for (pod, op) in [
        (json!({"kind": "Pod"}), "add"),
        (json!({"metadata": null, "spec": null}), "replace"),
    ] {
        let (result, ops) = round_trip(&pod, |doc| {
            doc.set_annotation("a", "1".into());
            *doc.edit(Section::Top, "status") = Some(json!({"phase": "Pending"}));
            *doc.edit(Section::Top, "apiVersion") = Some(json!("v1"));
            *doc.edit(Section::Metadata, "uid") = None;
            doc.containers
                .set(vec![Item::New(json!({"name": "c"}).into())]);
        });
        assert_eq!(result["metadata"], json!({"annotations": {"a": "1"}}));
        assert_eq!(result["spec"], json!({"containers": [{"name": "c"}]}));
        assert_eq!(
            op_paths(&ops),
            [
                "add /apiVersion".to_owned(),
                format!("{op} /metadata"),
                format!("{op} /spec"),
                "add /status".to_owned(),
                "add /spec/containers".to_owned(),
            ],
            "{pod}"
        );
    }
    // Nothing written, nothing set: no operation, even for an absent section a step read.
    let (_, ops) = round_trip(&json!({"spec": {}}), |doc| {
        assert_eq!(doc.get(Section::Metadata, "labels"), None);
        *doc.edit(Section::Metadata, "labels") = None;
    });
    assert!(ops.is_empty(), "{ops:?}");
}

/// Annotations read as received until set; the patch sets each changed one (replace, or add with its
/// key escaped), or adds (replaces) the map whole when absent (null); an unchanged value, or one set
/// back, gives nothing; a written literal is copied as it stands.
#[test]
fn annotations_are_set_one_by_one_or_whole() {
    let pod = json!({"metadata": {"annotations": {"a": "1", "b/c": "2"}}});
    let (result, ops) = round_trip(&pod, |doc| {
        assert_eq!(doc.annotation("b/c"), Some("2"));
        doc.set_annotation("a", "x".into());
        doc.set_annotation("a", "1".into());
        doc.set_annotation("b/c", "3".into());
        doc.set_annotation_literal("d~e", "q\"".into(), r#""q\"""#.into());
        doc.set_annotation("f", "4".into());
        assert_eq!(doc.annotation("a"), Some("1"));
        assert_eq!(doc.annotation("b/c"), Some("3"));
        assert_eq!(doc.received_annotation("b/c"), Some("2"));
    });
    assert_eq!(
        result["metadata"]["annotations"],
        json!({"a": "1", "b/c": "3", "d~e": "q\"", "f": "4"})
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&patch::to_json(&ops)).unwrap(),
        json!([
            {"op": "replace", "path": "/metadata/annotations/b~1c", "value": "3"},
            {"op": "add", "path": "/metadata/annotations/d~0e", "value": "q\""},
            {"op": "add", "path": "/metadata/annotations/f", "value": "4"}
        ])
    );
    for (pod, op) in [
        (json!({"metadata": {"name": "p"}}), "add"),
        (json!({"metadata": {"annotations": null}}), "replace"),
    ] {
        let (result, ops) = round_trip(&pod, |doc| {
            doc.set_annotation_literal("k", "v".into(), r#""v""#.into());
            doc.set_annotation("j", "w".into());
        });
        assert_eq!(
            result["metadata"]["annotations"],
            json!({"j": "w", "k": "v"})
        );
        assert_eq!(
            String::from_utf8(patch::to_json(&ops)).unwrap(),
            format!(
                r#"[{{"op":"{op}","path":"/metadata/annotations","value":{{"j":"w","k":"v"}}}}]"#
            )
        );
    }
    // A key written twice reads as its last value.
    let doc =
        RawPod::parse_str(r#"{"metadata": {"annotations": {"a": "1", "a": "\u0032"}}}"#).unwrap();
    assert_eq!(doc.annotation("a"), Some("2"));
    for bad in [r#"{"a": 1}"#, "[]", r#"{"a": "\ud800"}"#, r#""x""#] {
        let text = format!(r#"{{"metadata": {{"annotations": {bad}}}}}"#);
        assert_eq!(
            RawPod::parse_str(&text).unwrap_err(),
            "metadata.annotations: expected a map of strings",
            "{bad}"
        );
    }
}

/// The namespace filled in reads as received: it is in the pod, never in the patch, and a pod without
/// metadata gets its written members as a new metadata, which applies to the pod as received.
#[test]
fn a_filled_namespace_reads_as_received_and_stays_out_of_the_patch() {
    for pod in [json!({"metadata": {"name": "p"}}), json!({"spec": {}})] {
        let text = pod.to_string();
        let mut doc = RawPod::parse_str(&text).unwrap();
        doc.fill_namespace("team-\"a\"");
        assert_eq!(
            doc.get(Section::Metadata, "namespace"),
            Some(&json!("team-\"a\""))
        );
        assert_eq!(
            doc.received(Section::Metadata, "namespace"),
            Some(r#""team-\"a\"""#)
        );
        doc.set_annotation("a", "1".into());
        let ops = doc.into_patch();
        let patched = patch::apply(&pod, &ops).unwrap();
        assert_eq!(
            patched["metadata"]["annotations"],
            json!({"a": "1"}),
            "{pod}"
        );
        assert_eq!(patched["metadata"].get("namespace"), None, "{pod}");
    }
}

#[test]
fn malformed_pods_are_refused_with_the_place() {
    for (text, wanted) in [
        ("[]", "expected a pod object"),
        (r#"{"spec": 1}"#, "spec: expected an object"),
        (
            r#"{"spec": {"containers": {}}}"#,
            "spec.containers: expected a list of objects",
        ),
        (
            r#"{"spec": {"containers": [{"name": "a"}], "x": }}"#,
            "expected value",
        ),
        (
            r#"{"spec": {"containers": [1]}}"#,
            "spec.containers[0]: expected an object",
        ),
        (
            r#"{"spec": {"initContainers": [{"name": 3}]}}"#,
            "spec.initContainers[0].name: expected a string",
        ),
        (
            r#"{"spec": {"volumes": [{"name": "a"}, []]}}"#,
            "spec.volumes[1]: expected an object",
        ),
        (r#"{"metadata": []}"#, "metadata: expected an object"),
        (r#"{"spec": {"containers": [{"name": "a"}]"#, "EOF"),
    ] {
        let err = RawPod::parse_str(text).unwrap_err();
        assert!(err.contains(wanted), "{text}: {err}");
    }
}

#[test]
fn appending_to_a_member_splices_text_and_patches_with_one_replace() {
    // Containers as the apiserver writes them (compact) and as a person might (spaces, newlines).
    let text = r#"{"spec":{"containers":[
        {"name":"a","env":[{"name":"X","value":"1"}],"x-unknown":{"k":1}},
        {"name":"b","env":[]},
        {"name":"c","env":null},
        {"name":"d"},
        { "name" : "e" , "env" : [ {"name":"Y"} ] },
        {"name":"f","env":"not a list"}]}}"#;
    let pod: Value = serde_json::from_str(text).unwrap();
    let mut doc = RawPod::parse_str(text).unwrap();
    let entry = r#"{"name":"B","value":"2"}"#;
    let items: Vec<Item> = (0..5)
        .map(|i| Item::Edited(i, doc.containers.append_to_member(i, "env", entry).unwrap()))
        .chain([Item::Original(5)])
        .collect();
    assert!(
        doc.containers.append_to_member(5, "env", entry).is_none(),
        "not a list"
    );
    assert!(
        doc.containers.append_to_member(9, "env", entry).is_none(),
        "past the end"
    );
    doc.containers.set(items);
    let expected = doc.to_value();
    let ops = doc.into_patch();
    assert_eq!(
        op_paths(&ops),
        [
            "replace /spec/containers/0",
            "replace /spec/containers/1",
            "replace /spec/containers/2",
            "replace /spec/containers/3",
            "replace /spec/containers/4"
        ]
    );
    let patched = patch::apply(&pod, &ops).unwrap();
    assert_eq!(patched, expected);
    let b = json!({"name": "B", "value": "2"});
    assert_eq!(
        patched["spec"]["containers"],
        json!([
            {"name": "a", "env": [{"name": "X", "value": "1"}, b], "x-unknown": {"k": 1}},
            {"name": "b", "env": [b]},
            {"name": "c", "env": [b]},
            {"name": "d", "env": [b]},
            {"name": "e", "env": [{"name": "Y"}, b]},
            {"name": "f", "env": "not a list"}
        ])
    );
}

#[test]
fn edited_elements_land_at_their_final_index_among_insertions() {
    let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let (result, ops) = round_trip(&pod, |doc| {
        let b = doc
            .containers
            .append_to_member(1, "env", r#"{"name":"E"}"#)
            .unwrap();
        doc.containers.set(vec![
            Item::New(json!({"name": "s"}).into()),
            Item::Original(0),
            Item::Edited(1, b),
        ]);
    });
    assert_eq!(
        op_paths(&ops),
        ["add /spec/containers/0", "replace /spec/containers/2"]
    );
    assert_eq!(
        result["spec"]["containers"],
        json!([{"name": "s"}, {"name": "a"}, {"name": "b", "env": [{"name": "E"}]}])
    );
}
