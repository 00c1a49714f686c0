//! Test support: which fields of a shipped CRD's schema an example object leaves out, so a type's
//! round-trip test can show that it exercises every field of the version it types.

use serde_json::Value;

/// The schema paths (`.spec.subsets[].name`, `.status.disruptedPods{}`) of `version` in the CRD `crd`
/// (YAML text) that no value of `example` fills. An `x-kubernetes-preserve-unknown-fields` field counts as
/// filled when present, whatever it holds.
pub fn unexercised(crd: &str, version: &str, example: &Value) -> Vec<String> {
    let crd: Value =
        serde_saphyr::from_str_with_options(crd, crate::fixture::yaml_options()).expect("CRD YAML");
    let schema = crd["spec"]["versions"]
        .as_array()
        .expect("spec.versions")
        .iter()
        .find(|v| v["name"] == version)
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .expect("the version is in the CRD");
    let mut missing = Vec::new();
    walk(schema, &[example], String::new(), &mut missing);
    missing
}

fn walk(schema: &Value, values: &[&Value], path: String, missing: &mut Vec<String>) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let path = format!("{path}.{name}");
            let children: Vec<&Value> = values.iter().filter_map(|v| v.get(name)).collect();
            if children.is_empty() {
                missing.push(path);
            } else {
                walk(property, &children, path, missing);
            }
        }
    }
    for (key, suffix) in [("items", "[]"), ("additionalProperties", "{}")] {
        let Some(inner) = schema.get(key).filter(|s| s.is_object()) else {
            continue;
        };
        let children: Vec<&Value> = values
            .iter()
            .flat_map(|v| match (key, v) {
                ("items", Value::Array(items)) => items.iter().collect::<Vec<_>>(),
                ("additionalProperties", Value::Object(members)) => members.values().collect(),
                _ => Vec::new(),
            })
            .collect();
        let path = format!("{path}{suffix}");
        if children.is_empty() {
            missing.push(path);
        } else {
            walk(inner, &children, path, missing);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CRD: &str = r#"
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              list: {type: array, items: {properties: {a: {type: string}, b: {type: string}}, type: object}}
              map: {type: object, additionalProperties: {type: string}}
              raw: {x-kubernetes-preserve-unknown-fields: true}
            type: object
"#;

    #[test]
    fn names_the_fields_no_value_fills() {
        let some = json!({"spec": {"list": [{"a": "x"}, {}], "raw": {"anything": 1}}});
        assert_eq!(
            unexercised(CRD, "v1", &some),
            [".spec.list[].b", ".spec.map"]
        );
        let all = json!({"spec": {"list": [{"a": "x"}, {"b": "y"}], "map": {"k": "v"}, "raw": 1}});
        assert!(unexercised(CRD, "v1", &all).is_empty());
        let empty_map = json!({"spec": {"list": [{"a": "x", "b": "y"}], "map": {}, "raw": 1}});
        assert_eq!(unexercised(CRD, "v1", &empty_map), [".spec.map{}"]);
    }
}
