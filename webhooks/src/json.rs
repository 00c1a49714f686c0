//! The JSON layer: everything the webhooks do with JSON text besides serde's typed decoding. Policy
//! modules use it through what this root exports, never through the writer's or the scanner's insides:
//!
//! - reading a request in place: [`RawJson`] (an object as received, checked once), [`rawpod`] (the pod of
//!   a create, its parts kept as text until a step reads them), `string_value`, `may_spell`;
//! - writing: [`patch`] (RFC 6902 operations whose values may be JSON text copied as it stands, the diff,
//!   the patch text), `write_string` and `write_value` (serde_json's bytes), `write_base64`;
//! - Go's texts: [`go`] (`json.Marshal`'s escaping, `strconv.Quote`, `encoding/json`'s error texts) and
//!   [`merge_patch()`] (evanphx/json-patch's `MergePatch`, byte for byte; public for the fuzz targets and the
//!   deep-input tests);
//! - Kubernetes' strategic-merge patch of a Pod: [`strategic_merge`] (apimachinery's
//!   `StrategicMergePatch` on `v1.Pod`'s patch metadata, over `serde_json::Value`s).
//!
//! Inside, one scanner (`scan`: Go's scanner rules and messages, recording where containers close), one
//! cursor over text it accepted (`cursor`), one string writer (`write`), one base64 path (the `base64`
//! crate).
//!
//! # What stayed hand-written, and why
//! Byte compatibility, not speed, keeps these: DECISIONS 13 makes patches against the raw request, so
//! untouched elements are copied as text and our own values written with serde_json's exact bytes; the
//! hash annotations and MergePatchJson must be what Go writes (`<`, `>`, `&`, U+2028/9 escaped; evanphx's
//! lazy nodes keep untouched text, sort only what they open, prune nulls from arrays too); a corrupt hash
//! annotation is refused with Go's scanner message; and Go refuses nesting past 10,000 levels, which the
//! scanner follows and no walk here recurses through. No crate gives Go's scanner texts, or a reader that
//! keeps element text and where containers close. The scanner records those ends so that a cursor steps
//! over a container at once: reading a request's pod, or opening every level of a 10,000-deep merge
//! patch, reads the text once.
//!
//! # What was dropped
//! What only bought instructions on a path already far past its goal (SidecarSet injection p99 about
//! 12 µs against 50 µs): the SWAR (eight bytes a step) searches and the 64-byte block masks the validator
//! cached, a SIMD base64 encoder (the `base64` crate), a second byte-at-a-time scanner for Go's messages, a
//! one-pass reader of the compact group/version/kind, and `simdutf8`. One SSE2 search stays, `scan::find`,
//! for the goal its module names: without it the `/mutate-pod` load bench and the injection bench fell more
//! than 10 % behind.

mod cursor;
pub mod go;
mod merge_patch;
pub mod patch;
mod quote;
mod raw;
pub mod rawpod;
mod scan;
pub mod strategic_merge;
mod write;

pub(crate) use cursor::{Cursor, string_value};
pub use merge_patch::{BAD_DOCUMENT, BAD_PATCH, merge_patch};
pub use raw::RawJson;
#[cfg(test)]
pub(crate) use scan::MAX_NESTING;
pub(crate) use scan::{Ends, MAX_ENDS, may_spell, scan};
pub(crate) use write::{write_base64, write_string, write_value};
