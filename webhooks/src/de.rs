//! Deserialization helpers shared by the wire and API types.

use serde::{Deserialize, Deserializer};

/// `null` reads as the zero value, as Go's `encoding/json` does (`#[serde(deserialize_with = "nullable")]`).
///
/// # Errors
/// The deserializer's error when the value is neither `null` nor a `T`.
pub fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
