//! [`RawObject`]: a JSON object kept as text in the caches, for the parts of a custom resource that are
//! copied or hashed whole (a sidecar container, a volume) and seldom read field by field.
//!
//! A `serde_json::Map` spends a B-tree node of about 600 bytes on every object, however small, so a
//! SidecarSet held as trees took about 13 KiB in the cache against 2 KiB as text (benches/scale.rs). The
//! text is compact with sorted keys, as serde_json writes a `Map`, so it is byte for byte what writing the
//! tree would give, and two objects are equal exactly when their texts are.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A JSON object as compact text, keys sorted (module docs).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RawObject(Box<str>);

impl RawObject {
    /// The object written compact with sorted keys.
    pub fn from_map(map: &Map<String, Value>) -> Self {
        // Writing a tree of serde_json values into a String cannot fail.
        Self(
            serde_json::to_string(map)
                .unwrap_or_else(|_| "{}".into())
                .into(),
        )
    }

    /// The text: compact, keys sorted.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The object as a tree.
    pub fn to_map(&self) -> Map<String, Value> {
        // The text was written from a Map: it reads back as one.
        serde_json::from_str(&self.0).unwrap_or_default()
    }

    /// The object as a tree value.
    pub fn to_value(&self) -> Value {
        Value::Object(self.to_map())
    }

    /// A member that is a string (`""` when absent or not a string).
    pub fn str_member(&self, key: &str) -> String {
        match self.to_map().remove(key) {
            Some(Value::String(s)) => s,
            _ => String::new(),
        }
    }
}

impl Default for RawObject {
    fn default() -> Self {
        Self("{}".into())
    }
}

impl std::fmt::Debug for RawObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::from_map(&Map::deserialize(d)?))
    }
}

impl Serialize for RawObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_what_serde_json_writes_of_the_tree() {
        let tree: Value = serde_json::from_str(
            r#"{ "z": 1, "a": {"y": [1.50, "x"], "b": null}, "m": "\u00e9<" }"#,
        )
        .unwrap();
        let raw: RawObject = serde_json::from_value(tree.clone()).unwrap();
        assert_eq!(raw.text(), serde_json::to_string(&tree).unwrap());
        assert_eq!(
            raw.text(),
            r#"{"a":{"b":null,"y":[1.5,"x"]},"m":"é<","z":1}"#
        );
        assert_eq!(raw.to_value(), tree);
        assert_eq!(serde_json::to_value(&raw).unwrap(), tree);
        assert_eq!(raw.str_member("m"), "é<");
        assert_eq!(raw.str_member("z"), "");
    }

    #[test]
    fn only_objects_are_accepted() {
        assert!(serde_json::from_str::<RawObject>("[1]").is_err());
        assert!(serde_json::from_str::<RawObject>("\"x\"").is_err());
    }
}
