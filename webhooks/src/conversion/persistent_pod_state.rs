//! PersistentPodState v1alpha1 ⇄ v1beta1: `nodeTopologyKeys` ⇄ `keys` in the topology terms
//! (shared/crds schemas; `openkruise/kruise: apis/apps/v1alpha1/persistent_pod_state_conversion.go`).

use serde_json::{Map, Value};

use super::Direction;
use super::object;

const ALPHA_KEYS: &str = "nodeTopologyKeys";
const BETA_KEYS: &str = "keys";

pub(super) fn convert(obj: &mut Map<String, Value>, direction: Direction) -> Result<(), String> {
    let (from, to) = match direction {
        Direction::ToBeta => (ALPHA_KEYS, BETA_KEYS),
        Direction::ToAlpha => (BETA_KEYS, ALPHA_KEYS),
    };
    let Some(spec) = object::child_mut(obj, "spec") else {
        return Ok(());
    };
    if let Some(required) = object::child_mut(spec, "requiredPersistentTopology") {
        object::rename(required, from, to);
    }
    for term in object::objects_in_array(spec, "preferredPersistentTopology") {
        if let Some(preference) = object::child_mut(term, "preference") {
            object::rename(preference, from, to);
        }
    }
    Ok(())
}
