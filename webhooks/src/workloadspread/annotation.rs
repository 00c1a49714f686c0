//! The pod annotation `apps.kruise.io/matched-workloadspread` (spec/workloadspread.md §3): which
//! WorkloadSpread and subset a pod was admitted into, and the key its `creatingPods` record was made under
//! when the pod had no name yet (§5.6).

use serde::{Deserialize, Serialize};

pub use crate::api::workloadspread::MATCHED_WORKLOADSPREAD_ANNOTATION as ANNOTATION;

/// The annotation's value: compact JSON `{"name":..,"subset":..}` plus `"uid":..` when one was generated,
/// keys in that order (OpenKruise's `InjectWorkloadSpread` struct).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchedWorkloadSpread {
    /// The WorkloadSpread's name (same namespace as the pod).
    pub name: String,
    /// The subset's name.
    pub subset: String,
    /// The generated key of the `creatingPods` record (`None`: the record is keyed by the pod's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

impl MatchedWorkloadSpread {
    /// The annotation's text.
    pub fn to_json(&self) -> String {
        // Three strings: serialisation cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads an annotation's value; `None` when it is empty or not the annotation's JSON (§5.9 step 1:
    /// such a pod is treated as unannotated, never an error). An empty `uid` reads as none, as Go's
    /// `omitempty` writes it.
    pub fn parse(text: &str) -> Option<Self> {
        if text.is_empty() {
            return None;
        }
        Self::read(text).ok()
    }

    /// Reads an annotation's value, saying why when it is not the annotation's JSON (the controller logs
    /// it). An empty `uid` reads as none, as Go's `omitempty` writes it.
    ///
    /// # Errors
    /// serde_json's message.
    pub fn read(text: &str) -> Result<Self, String> {
        let mut parsed: Self = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if parsed.uid.as_deref() == Some("") {
            parsed.uid = None;
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_exact_compact_json_with_keys_in_order() {
        let plain = MatchedWorkloadSpread {
            name: "ws".into(),
            subset: "a".into(),
            uid: None,
        };
        assert_eq!(plain.to_json(), r#"{"name":"ws","subset":"a"}"#);
        let generated = MatchedWorkloadSpread {
            uid: Some("3f1c".into()),
            ..plain
        };
        assert_eq!(
            generated.to_json(),
            r#"{"name":"ws","subset":"a","uid":"3f1c"}"#
        );
    }

    #[test]
    fn a_corrupt_or_empty_annotation_reads_as_none() {
        assert_eq!(MatchedWorkloadSpread::parse(""), None);
        assert_eq!(MatchedWorkloadSpread::parse("{not json"), None);
        assert_eq!(MatchedWorkloadSpread::parse(r#"{"name":3}"#), None);
        assert_eq!(
            MatchedWorkloadSpread::parse(r#"{"name":"ws","subset":"b","uid":""}"#),
            Some(MatchedWorkloadSpread {
                name: "ws".into(),
                subset: "b".into(),
                uid: None
            })
        );
    }
}
