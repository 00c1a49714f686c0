//! The `patchPodMetadata` whitelist (spec/sidecarset.md §8.1) and gate
//! `SidecarSetPatchPodMetadataDefaultsAllowed`.
//!
//! The I/O layer reads ConfigMap `kruise-configuration` in the Kruise namespace and hands over what it found
//! as a [`WhitelistSource`]; [`check`] decides. Patch keys are visited entry by entry, each entry's keys in
//! sorted order, so the key named in `sidecarSet patch metadata annotation(<key>) is not allowed` is
//! deterministic (Go's map order is not). JSON errors carry serde_json's text, not Go's.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Deserialize;

use super::compile_go_regex;
use crate::api::sidecarset::PatchPodMetadata;
use crate::de::nullable;
use crate::selector;
use crate::validation::meta::selector_conversion_error;

/// The ConfigMap `kruise-configuration` key holding the whitelist.
pub const WHITELIST_KEY: &str = "SidecarSet_PatchPodMetadata_WhiteList";
/// The ConfigMap holding the whitelist, in the Kruise namespace.
pub const CONFIG_MAP_NAME: &str = "kruise-configuration";
/// The gate that accepts patches when no whitelist (or no applicable rule) exists.
pub const DEFAULTS_ALLOWED_GATE: &str = "SidecarSetPatchPodMetadataDefaultsAllowed";

/// What the I/O layer found at ConfigMap `kruise-configuration`, key `SidecarSet_PatchPodMetadata_WhiteList`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhitelistSource {
    /// The ConfigMap (NotFound) or the key is absent: there is no whitelist.
    Missing,
    /// The key's value: the whitelist JSON.
    Present(String),
    /// Reading the ConfigMap failed with this error text (reported as is).
    ReadError(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Whitelist {
    #[serde(default, deserialize_with = "nullable")]
    rules: Vec<Rule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    #[serde(default)]
    selector: Option<LabelSelector>,
    #[serde(default, deserialize_with = "nullable")]
    allowed_annotation_key_exprs: Vec<String>,
}

/// `ValidateSidecarSetPatchMetadataWhitelist`: `Ok` when every patch key is allowed (or there is nothing to
/// check).
///
/// # Errors
/// The message that §8 rule 3.7 reports as `Required` at `spec.patchPodMetadata`.
pub(super) fn check(
    patches: &[PatchPodMetadata],
    set_labels: &BTreeMap<String, String>,
    source: &WhitelistSource,
    defaults_allowed: bool,
) -> Result<(), String> {
    if patches.is_empty() {
        return Ok(());
    }
    let whitelist: Whitelist = match source {
        WhitelistSource::ReadError(e) => return Err(e.clone()),
        WhitelistSource::Missing if defaults_allowed => return Ok(()),
        WhitelistSource::Missing => {
            return Err("SidecarSet patch metadata whitelist not found".into());
        }
        WhitelistSource::Present(json) => serde_json::from_str::<Option<Whitelist>>(json)
            .map_err(|e| e.to_string())?
            .unwrap_or_default(),
    };
    let mut regexes = Vec::new();
    for rule in &whitelist.rules {
        if let Some(sel) = &rule.selector {
            if let Some(e) = selector_conversion_error(sel) {
                return Err(e);
            }
            if !selector::matches(sel, set_labels) {
                continue;
            }
        }
        for expr in &rule.allowed_annotation_key_exprs {
            regexes.push(compile_go_regex(expr)?);
        }
    }
    if regexes.is_empty() {
        return if defaults_allowed {
            Ok(())
        } else {
            Err("sidecarSet patch metadata annotation is not allowed".into())
        };
    }
    for patch in patches {
        for key in patch.annotations.keys() {
            if !regexes.iter().any(|r| r.is_match(key)) {
                return Err(format!(
                    "sidecarSet patch metadata annotation({key}) is not allowed"
                ));
            }
        }
    }
    Ok(())
}
