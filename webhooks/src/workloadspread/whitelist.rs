//! The custom workloads a WorkloadSpread may target (spec/workloadspread.md §4.2): key
//! `WorkloadSpread_Watch_Custom_Workload_WhiteList` of ConfigMap `kruise-configuration` in the Kruise namespace.
//!
//! The I/O layer reads the ConfigMap and hands over what it found as a [`WhitelistSource`]; [`parse`] reads
//! the value as Go's `encoding/json` does into `WSCustomWorkloadWhiteList`: keys match exactly first, then
//! case-insensitively (`Group` or `group`, `replicasPath` or `ReplicasPath`), `null` is the zero value, unknown
//! keys are ignored. Error texts are ours (serde_json's for syntax), not Go's.

use serde_json::{Map, Value};

pub use crate::sidecarset::validate::WhitelistSource;

/// The ConfigMap `kruise-configuration` key holding the custom workload whitelist.
pub const WHITELIST_KEY: &str = "WorkloadSpread_Watch_Custom_Workload_WhiteList";

/// A `(group, kind)` the whitelist names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupKind {
    /// `Group`.
    pub group: String,
    /// `Kind`.
    pub kind: String,
}

/// One whitelisted workload: a valid `targetRef` (group and kind), with the kinds of the objects between it
/// and its pods.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomWorkload {
    /// The workload's group and kind.
    pub workload: GroupKind,
    /// `replicasPath`: where the workload keeps its replica count.
    pub replicas_path: String,
    /// `subResources`: the kinds owned by the workload that own its pods.
    pub sub_resources: Vec<GroupKind>,
}

/// The whitelist in `source`: empty when the ConfigMap or the key is missing.
///
/// # Errors
/// The read error as the I/O layer reported it, or why the value is not the whitelist's JSON.
pub fn parse(source: &WhitelistSource) -> Result<Vec<CustomWorkload>, String> {
    workloads(source, |entry| {
        Ok(CustomWorkload {
            workload: group_kind(entry)?,
            replicas_path: string(entry, "replicasPath")?,
            sub_resources: match field(entry, "subResources") {
                None => Vec::new(),
                Some(subs) => list(subs, "subResources")?
                    .iter()
                    .map(|s| group_kind(object(s, "a subResources entry")?))
                    .collect::<Result<_, String>>()?,
            },
        })
    })
}

/// The entries of a custom workload whitelist `{"workloads":[...]}` in `source` (this key's, or the
/// PersistentPodState one's), each read by `entry` from its object (`null` reads as an empty one): none
/// when the ConfigMap or the key is missing.
///
/// # Errors
/// The read error as the I/O layer reported it, why the value is not such a document, or `entry`'s error.
pub(crate) fn workloads<T>(
    source: &WhitelistSource,
    entry: impl Fn(&Map<String, Value>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let text = match source {
        WhitelistSource::Missing => return Ok(Vec::new()),
        WhitelistSource::ReadError(e) => return Err(e.clone()),
        WhitelistSource::Present(text) => text,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let root = object(&value, "the whitelist")?;
    let Some(workloads) = field(root, "workloads") else {
        return Ok(Vec::new());
    };
    list(workloads, "workloads")?
        .iter()
        .map(|e| entry(object(e, "a workloads entry")?))
        .collect()
}

/// Go's field lookup: the exact key, else the first key equal ignoring case; `null` counts as absent.
fn field<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name)
        .or_else(|| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_null())
}

fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    match value {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(&EMPTY),
        _ => Err(format!("{what} is not a JSON object")),
    }
}

fn list<'a>(value: &'a Value, what: &str) -> Result<&'a [Value], String> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("{what} is not a JSON array"))
}

fn string(obj: &Map<String, Value>, name: &str) -> Result<String, String> {
    match field(obj, name) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{name} is not a string")),
    }
}

/// A Go `schema.GroupVersionKind` entry's group and kind.
///
/// # Errors
/// A field that is not a string.
pub(crate) fn group_kind(obj: &Map<String, Value>) -> Result<GroupKind, String> {
    // `Version` is read (a wrong type is an error, as in Go) but matching ignores it.
    string(obj, "Version")?;
    Ok(GroupKind {
        group: string(obj, "Group")?,
        kind: string(obj, "Kind")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(text: &str) -> WhitelistSource {
        WhitelistSource::Present(text.to_owned())
    }

    #[test]
    fn keys_match_case_insensitively_and_absence_is_empty() {
        assert_eq!(parse(&WhitelistSource::Missing), Ok(Vec::new()));
        assert_eq!(parse(&present("{}")), Ok(Vec::new()));
        assert_eq!(parse(&present("null")), Ok(Vec::new()));
        let parsed = parse(&present(
            r#"{"workloads":[{"Group":"kubeflow.org","Version":"v1","Kind":"TFJob","ReplicasPath":"spec.replicas",
                "subResources":[{"group":"game.kruise.io","kind":"GameServer"}]}, {"group":"a.io","KIND":"B"}]}"#,
        ))
        .unwrap();
        assert_eq!(
            parsed,
            [
                CustomWorkload {
                    workload: GroupKind {
                        group: "kubeflow.org".into(),
                        kind: "TFJob".into()
                    },
                    replicas_path: "spec.replicas".into(),
                    sub_resources: vec![GroupKind {
                        group: "game.kruise.io".into(),
                        kind: "GameServer".into()
                    }],
                },
                CustomWorkload {
                    workload: GroupKind {
                        group: "a.io".into(),
                        kind: "B".into()
                    },
                    ..CustomWorkload::default()
                }
            ]
        );
    }

    #[test]
    fn bad_json_and_read_errors_are_errors() {
        assert!(parse(&present("{")).is_err());
        assert!(parse(&present(r#"{"workloads":{}}"#)).is_err());
        assert!(parse(&present(r#"{"workloads":[{"Group":1}]}"#)).is_err());
        assert!(parse(&present("[]")).is_err());
        assert_eq!(
            parse(&WhitelistSource::ReadError("forbidden".into())),
            Err("forbidden".to_owned())
        );
    }
}
