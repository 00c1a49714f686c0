//! How deep a patch may be ([`MAX_DEPTH`]): the merge recurses once per level of the patch, so a deeper one
//! is refused before it starts, measured and dropped without recursing.

use serde_json::{Map, Value};

/// The deepest patch [`super::apply`] accepts, counted in objects and lists from the top (the top object is
/// level 1). The merge recurses once per level of the patch.
pub const MAX_DEPTH: usize = 512;

/// Drops a value without recursing (serde_json's drop recurses once per level).
pub(super) fn discard(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            Value::Array(list) => stack.extend(list),
            _ => {}
        }
    }
}

/// Whether a patch is deeper than [`MAX_DEPTH`], found without recursing.
pub(super) fn too_deep(patch: &Map<String, Value>) -> bool {
    let mut stack: Vec<(&Value, usize)> = patch.values().map(|v| (v, 2)).collect();
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(list) => Box::new(list.iter()),
            _ => continue,
        };
        if depth > MAX_DEPTH {
            return true;
        }
        stack.extend(children.map(|v| (v, depth + 1)));
    }
    false
}
