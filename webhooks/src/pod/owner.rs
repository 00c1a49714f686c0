//! The pod's controller owner reference (Go's `metav1.GetControllerOf`: the first reference with
//! `controller: true`), read from the references' text as received: no step of the chain writes them.

use std::borrow::Cow;

use crate::json::rawpod::{RawPod, Section, elements_of};
use crate::json::{self, string_value};

/// The API group Kruise's workloads are in.
pub const KRUISE_GROUP: &str = "apps.kruise.io";

/// A controller owner reference's apiVersion, kind and name (`""` for one absent or not a string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller<'a> {
    /// `apiVersion`.
    pub api_version: Cow<'a, str>,
    /// `kind`.
    pub kind: Cow<'a, str>,
    /// `name`.
    pub name: Cow<'a, str>,
}

/// The pod's controller: its first owner reference with `controller: true`.
pub fn controller<'d>(doc: &'d RawPod<'_>) -> Option<Controller<'d>> {
    doc.received(Section::Metadata, "ownerReferences")
        .into_iter()
        .flat_map(elements_of)
        .find_map(|r| {
            let [controller, api_version, kind, name] =
                r.members(["controller", "apiVersion", "kind", "name"]);
            let text = |member: Option<&'d str>| member.and_then(string_value).unwrap_or_default();
            (controller == Some("true")).then(|| Controller {
                api_version: text(api_version),
                kind: text(kind),
                name: text(name),
            })
        })
}

/// Whether the pod's controller is a Kruise workload: a controller owner reference whose apiVersion is in
/// the group `apps.kruise.io`.
pub fn owned_by_kruise(doc: &RawPod<'_>) -> bool {
    doc.received(Section::Metadata, "ownerReferences")
        // Most pods have no Kruise owner: their references are not read further.
        .filter(|text| json::may_spell(text.as_bytes(), KRUISE_GROUP.as_bytes()))
        .into_iter()
        .flat_map(elements_of)
        .any(|r| {
            let [controller, version] = r.members(["controller", "apiVersion"]);
            let version = version.and_then(string_value);
            controller == Some("true")
                && version
                    .is_some_and(|v| v.split('/').next() == Some(KRUISE_GROUP) && v.contains('/'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_owners(owners: &str) -> String {
        format!(r#"{{"metadata":{{"name":"p","ownerReferences":{owners}}},"spec":{{}}}}"#)
    }

    #[test]
    fn the_controller_is_the_first_reference_with_controller_true() {
        let text = with_owners(
            r#"[{"apiVersion":"v1","kind":"A","name":"a"},
                {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","controller":true},
                {"apiVersion":"x/v1","kind":"B","name":"b","controller":true}]"#,
        );
        let doc = RawPod::parse_str(&text).unwrap();
        assert_eq!(
            controller(&doc),
            Some(Controller {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "web".into()
            })
        );
        let none = with_owners(r#"[{"apiVersion":"v1","kind":"A","name":"a","controller":false}]"#);
        assert_eq!(controller(&RawPod::parse_str(&none).unwrap()), None);
        let absent = r#"{"metadata":{"name":"p"}}"#;
        assert_eq!(controller(&RawPod::parse_str(absent).unwrap()), None);
    }
}
