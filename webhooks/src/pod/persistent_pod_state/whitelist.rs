//! The custom StatefulSet-like workloads a PersistentPodState may follow (spec/pod-mutating-misc.md §7.1):
//! key `PPS_Watch_Custom_Workload_WhiteList` of ConfigMap `kruise-configuration` in the Kruise namespace,
//! `{"workloads":[{"Group":"…","Version":"…","Kind":"…"}]}`. The PUB workload finder reads it too
//! (spec/podunavailablebudget.md §4.3 step 7).
//!
//! The I/O layer reads the ConfigMap and hands over what it found as a [`WhitelistSource`]; [`parse`] reads
//! the value as Go's `encoding/json` does into `CustomWorkloadWhiteList` (`[]schema.GroupVersionKind`, whose
//! fields have no JSON tags): keys match exactly first, then case-insensitively, `null` is the zero value,
//! unknown keys are ignored. Only the group and kind are compared; the version is read (a wrong type is an
//! error, as in Go) and ignored.

pub use crate::sidecarset::validate::WhitelistSource;
pub use crate::workloadspread::whitelist::GroupKind;
use crate::workloadspread::whitelist::{group_kind, workloads};

/// The ConfigMap `kruise-configuration` key holding the whitelist.
pub const WHITELIST_KEY: &str = "PPS_Watch_Custom_Workload_WhiteList";

/// The whitelist in `source`: empty when the ConfigMap or the key is missing.
///
/// # Errors
/// The read error as the I/O layer reported it, or why the value is not the whitelist's JSON.
pub fn parse(source: &WhitelistSource) -> Result<Vec<GroupKind>, String> {
    workloads(source, group_kind)
}

/// Whether a controller of API group `group` and kind `kind` may have a PersistentPodState: a StatefulSet
/// of `apps` or `apps.kruise.io` always, another kind when the whitelist names its group and kind
/// (`CustomWorkloadWhiteList.ValidateAPIVersionAndKind`).
pub fn allows(whitelist: &[GroupKind], group: &str, kind: &str) -> bool {
    default_support(group, kind) || whitelist.iter().any(|w| w.group == group && w.kind == kind)
}

/// Whether a kind is followed whatever the whitelist says: a StatefulSet of `apps` or `apps.kruise.io`.
pub fn default_support(group: &str, kind: &str) -> bool {
    kind == "StatefulSet" && matches!(group, "apps" | "apps.kruise.io")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(text: &str) -> WhitelistSource {
        WhitelistSource::Present(text.to_owned())
    }

    fn gk(group: &str, kind: &str) -> GroupKind {
        GroupKind {
            group: group.into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn field_names_match_without_case_and_absence_is_empty() {
        assert_eq!(parse(&WhitelistSource::Missing), Ok(vec![]));
        assert_eq!(parse(&present("{}")), Ok(vec![]));
        assert_eq!(parse(&present(r#"{"workloads":null}"#)), Ok(vec![]));
        assert_eq!(
            parse(&present(
                r#"{"workloads":[{"Group":"example.io","Version":"v1","Kind":"GameServerSet"},
                    {"group":"a.io","kind":"X","replicasPath":7,"subResources":"ignored"}, null]}"#
            )),
            Ok(vec![
                gk("example.io", "GameServerSet"),
                gk("a.io", "X"),
                gk("", "")
            ])
        );
    }

    #[test]
    fn invalid_json_and_read_errors_are_errors() {
        for bad in [
            "[",
            "[]",
            r#"{"workloads":{}}"#,
            r#"{"workloads":[1]}"#,
            r#"{"workloads":[{"Kind":3}]}"#,
            r#"{"workloads":[{"Version":true}]}"#,
        ] {
            assert!(parse(&present(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            parse(&WhitelistSource::ReadError("forbidden".into())),
            Err("forbidden".into())
        );
    }

    #[test]
    fn statefulsets_are_always_allowed_and_others_by_group_and_kind() {
        let list = [gk("example.io", "GameServerSet")];
        assert!(allows(&[], "apps", "StatefulSet"));
        assert!(allows(&[], "apps.kruise.io", "StatefulSet"));
        assert!(!allows(&[], "example.io", "StatefulSet"));
        assert!(!allows(&[], "apps", "ReplicaSet"));
        assert!(allows(&list, "example.io", "GameServerSet"));
        assert!(!allows(&list, "other.io", "GameServerSet"));
        assert!(!allows(&list, "example.io", "GameServer"));
    }
}
