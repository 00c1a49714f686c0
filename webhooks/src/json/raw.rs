//! [`RawJson`]: the text of one JSON value known to be valid, kept as received (DECISIONS 13), with where
//! its containers close when the scanner recorded them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::cursor::{Cursor, ends_within};
use super::scan::Ends;

/// The text of one JSON value, known to be valid JSON: checked when it was made, so readers can walk it
/// without checking again. `Deserialize` takes the value's text as serde_json's `RawValue` does; `Serialize`
/// writes it unchanged. Equal when the texts are.
#[derive(Clone)]
pub struct RawJson {
    text: Box<str>,
    /// Where its containers close, when the check that made it recorded them.
    ends: Ends,
}

impl RawJson {
    /// The JSON text.
    pub fn get(&self) -> &str {
        &self.text
    }

    /// The text of `value`.
    pub fn from_value(value: &Value) -> Self {
        Self::unmapped(value.to_string().into_boxed_str())
    }

    fn unmapped(text: Box<str>) -> Self {
        Self {
            text,
            ends: Ends::new(),
        }
    }

    /// The value at `span` of `whole`, a text [`scan`](fn@super::scan) accepted with these `ends`.
    pub(crate) fn checked(
        whole: &str,
        ends: &[(usize, usize)],
        span: std::ops::Range<usize>,
    ) -> Self {
        Self {
            text: whole[span.clone()].into(),
            ends: ends_within(ends, span),
        }
    }

    /// A cursor at its start.
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        Cursor::new(&self.text, &self.ends)
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for RawJson {}

impl std::fmt::Debug for RawJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RawJson")
            .field(&format_args!("{}", self.text))
            .finish()
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(|raw| Self::unmapped(raw.into()))
    }
}

impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Through serde_json's `RawValue`, whose text every JSON serializer writes as is (serialising is for
        // tests and the `review` command: the check this repeats costs nothing on the admission path).
        serde_json::from_str::<&RawValue>(&self.text)
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}
