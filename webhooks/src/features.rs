//! Feature gates with OpenKruise's names (spec/webhook-server.md §8) and our defaults (DECISIONS 1).
//!
//! Syntax: `Name=true,Other=false`; `AllAlpha=` and `AllBeta=` set every gate of that stage first. An unknown
//! name or a value that is not a boolean is an error that names it. After parsing, OpenKruise's dependency
//! adjustments are applied in its order (§8 items 1-4).

use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Alpha,
    Beta,
}

/// (name, default, stage). Defaults are OpenKruise master's except where DECISIONS 1 turns a feature in
/// our scope on: ResourcesDeletionProtection, PodUnavailableBudgetUpdateGate, SidecarTerminator.
const GATES: &[(&str, bool, Stage)] = &[
    ("PodWebhook", true, Stage::Beta),
    ("KruiseDaemon", true, Stage::Beta),
    ("DaemonWatchingPod", true, Stage::Beta),
    ("CloneSetShortHash", false, Stage::Alpha),
    ("KruisePodReadinessGate", false, Stage::Alpha),
    ("PreDownloadImageForInPlaceUpdate", false, Stage::Alpha),
    ("CloneSetPartitionRollback", false, Stage::Alpha),
    ("ResourcesDeletionProtection", true, Stage::Beta),
    ("WorkloadSpread", true, Stage::Beta),
    ("PodUnavailableBudgetDeleteGate", true, Stage::Beta),
    ("PodUnavailableBudgetUpdateGate", true, Stage::Alpha),
    ("TemplateNoDefaults", false, Stage::Alpha),
    ("InPlaceUpdateEnvFromMetadata", true, Stage::Beta),
    ("StatefulSetAutoDeletePVC", true, Stage::Beta),
    (
        "SidecarSetPatchPodMetadataDefaultsAllowed",
        false,
        Stage::Alpha,
    ),
    ("SidecarTerminator", true, Stage::Alpha),
    ("PodProbeMarkerGate", true, Stage::Beta),
    ("PreDownloadImageForDaemonSetUpdate", false, Stage::Alpha),
    ("CloneSetEventHandlerOptimization", false, Stage::Alpha),
    ("PreparingUpdateAsUpdate", false, Stage::Alpha),
    ("ImagePullJobGate", false, Stage::Alpha),
    ("ResourceDistributionGate", false, Stage::Beta),
    ("DeletionProtectionForCRDCascadingGate", false, Stage::Alpha),
    (ENHANCED_LIVENESS_PROBE, false, Stage::Alpha),
    (
        "RecreatePodWhenChangeVCTInCloneSetGate",
        false,
        Stage::Alpha,
    ),
    ("StatefulSetStartOrdinal", false, Stage::Alpha),
    ("PodIndexLabel", true, Stage::Beta),
    ("EnableExternalCerts", false, Stage::Alpha),
    ("StatefulSetAutoResizePVCGate", false, Stage::Alpha),
    ("ForceDeleteTimeoutExpectationGate", false, Stage::Alpha),
    ("InPlaceWorkloadVerticalScaling", false, Stage::Alpha),
    (POD_PROBE_MARKER_ON_SERVERLESS, false, Stage::Alpha),
    ("EnableSortSidecarContainerByName", false, Stage::Alpha),
    ("InPlacePodVerticalScaling", false, Stage::Alpha),
    (
        "DefaultHostNetworkHostPortsInPodTemplates",
        false,
        Stage::Alpha,
    ),
    ("DaemonSetPruneIneligibleNodes", false, Stage::Alpha),
    // Ours, not OpenKruise's (DECISIONS 20): Job sidecars become native sidecars at pod create. Opt-in.
    (NATIVE_SIDECAR_CONVERSION, false, Stage::Alpha),
];

/// A feature gate name (one of OpenKruise's).
pub type Gate = &'static str;

/// OpenKruise's gates this version accepts (a kruise-manager command line works unchanged) but does not act
/// on, each with what it switches in OpenKruise: a feature of a kind, controller or daemon kruise-webhook does
/// not have, or (`DeletionProtectionForCRDCascadingGate`) one whose setting DECISIONS 8 overrides. Setting one
/// changes nothing here; the server warns once at start-up for each one named in `--feature-gates`
/// ([`not_implemented_in`]). Every other gate of OpenKruise's is read by this version, directly or through
/// the dependency adjustments (`KruiseDaemon=false` turns `SidecarTerminator` off).
pub const NOT_IMPLEMENTED: &[(Gate, &str)] = &[
    ("DaemonWatchingPod", "kruise-daemon's pod watch"),
    ("CloneSetShortHash", "the CloneSet controller"),
    (
        "PreDownloadImageForInPlaceUpdate",
        "image pre-download for CloneSet and Advanced StatefulSet updates",
    ),
    ("CloneSetPartitionRollback", "the CloneSet controller"),
    (
        "TemplateNoDefaults",
        "the defaulting of workload pod templates (CloneSet, Advanced StatefulSet, ...)",
    ),
    (
        "InPlaceUpdateEnvFromMetadata",
        "in-place updates of workloads through kruise-daemon",
    ),
    (
        "StatefulSetAutoDeletePVC",
        "the Advanced StatefulSet controller",
    ),
    ("PodProbeMarkerGate", "PodProbeMarker"),
    (
        "PreDownloadImageForDaemonSetUpdate",
        "image pre-download for Advanced DaemonSet updates",
    ),
    (
        "CloneSetEventHandlerOptimization",
        "the CloneSet controller",
    ),
    (
        "PreparingUpdateAsUpdate",
        "the CloneSet and Advanced StatefulSet lifecycle hooks",
    ),
    ("ImagePullJobGate", "ImagePullJob and ImageListPullJob"),
    ("ResourceDistributionGate", "ResourceDistribution"),
    (
        CRD_CASCADING,
        "nothing here: a Cascading CRD is always protected while it has custom resources (DECISIONS 8)",
    ),
    (
        "RecreatePodWhenChangeVCTInCloneSetGate",
        "the CloneSet controller",
    ),
    (
        "StatefulSetStartOrdinal",
        "the Advanced StatefulSet controller",
    ),
    ("PodIndexLabel", "the Advanced StatefulSet controller"),
    (
        "StatefulSetAutoResizePVCGate",
        "the Advanced StatefulSet controller",
    ),
    (
        "ForceDeleteTimeoutExpectationGate",
        "the workload controllers' expectations",
    ),
    (
        "DefaultHostNetworkHostPortsInPodTemplates",
        "the defaulting of workload pod templates",
    ),
    (
        "DaemonSetPruneIneligibleNodes",
        "the Advanced DaemonSet controller",
    ),
];

/// The gates of [`NOT_IMPLEMENTED`] that `spec` (a `--feature-gates` value) names, each once in the order first
/// named, with what they switch in OpenKruise. `AllAlpha` and `AllBeta` name no gate; items that do not parse
/// are left to [`FeatureGates::parse`].
pub fn not_implemented_in(spec: &str) -> Vec<(Gate, &'static str)> {
    let mut named: Vec<(Gate, &'static str)> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let name = item.split_once('=').map_or(item, |(n, _)| n).trim();
        if let Some(entry) = NOT_IMPLEMENTED.iter().find(|(gate, _)| *gate == name)
            && !named.contains(entry)
        {
            named.push(*entry);
        }
    }
    named
}

/// `ResourcesDeletionProtection`.
pub const RESOURCES_DELETION_PROTECTION: Gate = "ResourcesDeletionProtection";
/// `DeletionProtectionForCRDCascadingGate` (no effect here: DECISIONS 8).
pub const CRD_CASCADING: Gate = "DeletionProtectionForCRDCascadingGate";
/// `PodWebhook`.
pub const POD_WEBHOOK: Gate = "PodWebhook";
/// `NativeSidecarConversion` (ours: [`crate::native_sidecar`]).
pub const NATIVE_SIDECAR_CONVERSION: Gate = "NativeSidecarConversion";
/// `EnableExternalCerts`.
pub const ENABLE_EXTERNAL_CERTS: Gate = "EnableExternalCerts";
/// `EnhancedLivenessProbe` (the spec's `EnhancedLivenessProbeGate`): step 7 of the pod chain. Off by default
/// as in OpenKruise: the probes it moves are run by kruise-daemon.
pub const ENHANCED_LIVENESS_PROBE: Gate = "EnhancedLivenessProbe";
/// `EnablePodProbeMarkerOnServerless`: step 8 of the pod chain. Off by default as in OpenKruise.
pub const POD_PROBE_MARKER_ON_SERVERLESS: Gate = "EnablePodProbeMarkerOnServerless";

/// Why a `--feature-gates` value was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FeatureGateError {
    /// The name is not one of OpenKruise's gates.
    #[error("unrecognized feature gate: {0}")]
    Unknown(String),
    /// The value is not a boolean.
    #[error("invalid value of {name}: {value:?}, expected true or false")]
    NotBool {
        /// The gate.
        name: String,
        /// What was given.
        value: String,
    },
    /// An item without `=`.
    #[error("missing bool value for {0}")]
    MissingValue(String),
}

/// The effective gates, after defaults, the user's settings and the dependency adjustments.
#[derive(Clone, PartialEq, Eq)]
pub struct FeatureGates {
    enabled: BTreeMap<Gate, bool>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        let mut g = Self {
            enabled: GATES.iter().map(|(n, d, _)| (*n, *d)).collect(),
        };
        g.adjust();
        g
    }
}

impl fmt::Debug for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string())
    }
}

impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self
            .enabled
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&items.join(","))
    }
}

fn parse_bool(name: &str, value: &str) -> Result<bool, FeatureGateError> {
    // Go's strconv.ParseBool, which OpenKruise's gate parser uses.
    match value.trim() {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        other => Err(FeatureGateError::NotBool {
            name: name.to_owned(),
            value: other.to_owned(),
        }),
    }
}

impl FeatureGates {
    /// Parses `Name=bool,...` over the defaults.
    ///
    /// # Errors
    /// [`FeatureGateError`] naming the first bad item.
    pub fn parse(spec: &str) -> Result<Self, FeatureGateError> {
        let mut enabled: BTreeMap<Gate, bool> = GATES.iter().map(|(n, d, _)| (*n, *d)).collect();
        let mut explicit: Vec<(Gate, bool)> = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| FeatureGateError::MissingValue(item.to_owned()))?;
            let (name, value) = (name.trim(), parse_bool(name.trim(), value)?);
            let stage = match name {
                "AllAlpha" => Some(Stage::Alpha),
                "AllBeta" => Some(Stage::Beta),
                _ => None,
            };
            match stage {
                Some(stage) => {
                    for (n, _, s) in GATES {
                        if *s == stage {
                            enabled.insert(n, value);
                        }
                    }
                }
                None => {
                    let gate = GATES
                        .iter()
                        .find(|(n, _, _)| *n == name)
                        .map(|(n, _, _)| *n)
                        .ok_or_else(|| FeatureGateError::Unknown(name.to_owned()))?;
                    explicit.push((gate, value));
                }
            }
        }
        // Named gates win over AllAlpha / AllBeta, whatever the order they were given in.
        for (gate, value) in explicit {
            enabled.insert(gate, value);
        }
        let mut gates = Self { enabled };
        gates.adjust();
        Ok(gates)
    }

    /// OpenKruise's dependency adjustments, in its order (spec/webhook-server.md §8).
    fn adjust(&mut self) {
        if !self.enabled(POD_WEBHOOK) {
            for g in [
                "KruisePodReadinessGate",
                "PodUnavailableBudgetDeleteGate",
                "PodUnavailableBudgetUpdateGate",
                "WorkloadSpread",
                "SidecarSetPatchPodMetadataDefaultsAllowed",
                ENHANCED_LIVENESS_PROBE,
                POD_PROBE_MARKER_ON_SERVERLESS,
            ] {
                self.enabled.insert(g, false);
            }
        }
        if !self.enabled("KruiseDaemon") {
            for g in [
                "PreDownloadImageForInPlaceUpdate",
                "DaemonWatchingPod",
                "InPlaceUpdateEnvFromMetadata",
                "PreDownloadImageForDaemonSetUpdate",
                "PodProbeMarkerGate",
                "SidecarTerminator",
                "ImagePullJobGate",
                ENHANCED_LIVENESS_PROBE,
            ] {
                self.enabled.insert(g, false);
            }
        }
        if self.enabled("PreDownloadImageForInPlaceUpdate")
            || self.enabled("PreDownloadImageForDaemonSetUpdate")
        {
            self.enabled.insert("ImagePullJobGate", true);
        }
        if !self.enabled(RESOURCES_DELETION_PROTECTION) {
            self.enabled.insert(CRD_CASCADING, false);
        }
    }

    /// Whether a gate is on; unknown names read as off.
    pub fn enabled(&self, gate: &str) -> bool {
        self.enabled.get(gate).copied().unwrap_or(false)
    }
}

impl std::str::FromStr for FeatureGates {
    type Err = FeatureGateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_in_scope_are_on_by_default() {
        let g = FeatureGates::default();
        for gate in [
            RESOURCES_DELETION_PROTECTION,
            "PodUnavailableBudgetDeleteGate",
            "PodUnavailableBudgetUpdateGate",
            "WorkloadSpread",
            POD_WEBHOOK,
            "SidecarTerminator",
        ] {
            assert!(g.enabled(gate), "{gate} should default on (DECISIONS 1)");
        }
        assert!(!g.enabled(ENABLE_EXTERNAL_CERTS));
        // OpenKruise's defaults: both need kruise-daemon.
        assert!(!g.enabled(ENHANCED_LIVENESS_PROBE));
        assert!(!g.enabled(POD_PROBE_MARKER_ON_SERVERLESS));
    }

    #[test]
    fn unknown_gate_is_an_error_that_names_it() {
        assert_eq!(
            FeatureGates::parse("Nope=true"),
            Err(FeatureGateError::Unknown("Nope".into()))
        );
        assert!(
            FeatureGates::parse("PodWebhook=maybe")
                .unwrap_err()
                .to_string()
                .contains("PodWebhook")
        );
        assert_eq!(
            FeatureGates::parse("PodWebhook"),
            Err(FeatureGateError::MissingValue("PodWebhook".into()))
        );
    }

    #[test]
    fn pod_webhook_off_turns_pod_features_off() {
        let g = FeatureGates::parse("PodWebhook=false").unwrap();
        assert!(!g.enabled("WorkloadSpread"));
        assert!(!g.enabled("PodUnavailableBudgetDeleteGate"));
        assert!(
            g.enabled(RESOURCES_DELETION_PROTECTION),
            "since v1.6.1 PodWebhook leaves deletion protection alone"
        );
    }

    #[test]
    fn deletion_protection_off_turns_crd_cascading_off() {
        let g = FeatureGates::parse(
            "DeletionProtectionForCRDCascadingGate=true,ResourcesDeletionProtection=false",
        )
        .unwrap();
        assert!(!g.enabled(CRD_CASCADING));
    }

    #[test]
    fn every_gate_is_either_implemented_or_listed_as_not() {
        let listed: Vec<Gate> = NOT_IMPLEMENTED.iter().map(|(g, _)| *g).collect();
        for gate in &listed {
            assert!(
                GATES.iter().any(|(n, _, _)| n == gate),
                "{gate} is not a gate"
            );
            assert_eq!(
                listed.iter().filter(|g| *g == gate).count(),
                1,
                "{gate} listed twice"
            );
        }
        // What this version reads (each gate's own constant where it has one): none of it may be listed.
        let implemented = [
            POD_WEBHOOK,
            "KruiseDaemon",
            "KruisePodReadinessGate",
            RESOURCES_DELETION_PROTECTION,
            crate::workloadspread::GATE,
            crate::podunavailablebudget::DELETE_GATE,
            crate::podunavailablebudget::UPDATE_GATE,
            crate::podunavailablebudget::IN_PLACE_POD_VERTICAL_SCALING,
            crate::podunavailablebudget::pod::IN_PLACE_WORKLOAD_VERTICAL_SCALING,
            crate::sidecarset::validate::DEFAULTS_ALLOWED_GATE,
            crate::sidecar_terminator::GATE,
            ENABLE_EXTERNAL_CERTS,
            "EnableSortSidecarContainerByName",
            NATIVE_SIDECAR_CONVERSION,
            ENHANCED_LIVENESS_PROBE,
            POD_PROBE_MARKER_ON_SERVERLESS,
        ];
        for gate in implemented {
            assert!(!listed.contains(&gate), "{gate} is implemented");
        }
        // Every gate is classified: a new gate of OpenKruise's goes into one list or the other.
        let mut all: Vec<Gate> = listed.iter().copied().chain(implemented).collect();
        all.sort_unstable();
        let mut gates: Vec<Gate> = GATES.iter().map(|(n, _, _)| *n).collect();
        gates.sort_unstable();
        assert_eq!(all, gates);
    }

    /// A gate a step reads is implemented: the day one of the listed gates is read outside this file (by name,
    /// or a constant of its own), it leaves [`NOT_IMPLEMENTED`] (and the start-up warning with it).
    #[test]
    fn no_listed_gate_is_read_by_name_elsewhere() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        let mut dirs = vec![root.join("src"), root.join("../src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("src/features.rs")
                {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 20, "the sources were found: {files:?}");
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            for (gate, _) in NOT_IMPLEMENTED {
                // Read in place (`gates.enabled("Name")`) or through a constant of its own.
                for read in [format!("enabled(\"{gate}\")"), format!("= \"{gate}\";")] {
                    assert!(
                        !text.contains(&read),
                        "{} reads {gate}: take it out of NOT_IMPLEMENTED",
                        path.display()
                    );
                }
            }
        }
    }

    #[test]
    fn not_implemented_gates_named_are_each_reported_once() {
        assert_eq!(
            not_implemented_in(
                "CloneSetShortHash=true, PodWebhook=false,ImagePullJobGate=true,CloneSetShortHash=false"
            ),
            [
                ("CloneSetShortHash", "the CloneSet controller"),
                ("ImagePullJobGate", "ImagePullJob and ImageListPullJob"),
            ]
        );
        assert!(not_implemented_in("AllAlpha=true,AllBeta=true").is_empty());
        assert!(not_implemented_in("").is_empty());
        assert_eq!(
            not_implemented_in(CRD_CASCADING).len(),
            1,
            "even without a value"
        );
    }

    #[test]
    fn all_alpha_sets_alpha_gates_and_named_gates_win() {
        let g = FeatureGates::parse("EnableExternalCerts=false, AllAlpha=true").unwrap();
        assert!(g.enabled("CloneSetShortHash"));
        assert!(!g.enabled(ENABLE_EXTERNAL_CERTS));
        assert!(FeatureGates::parse("").unwrap() == FeatureGates::default());
    }
}
