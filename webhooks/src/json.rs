//! The JSON layer: reading request JSON in place, writing patches and Go's texts. Gathered here from the
//! crate root; the modules below are as they were moved.

mod cursor;
pub mod go;
pub mod merge_patch;
pub mod patch;
mod raw;
pub mod rawpod;
pub(crate) mod scan;
mod write;

pub(crate) use cursor::*;
pub use raw::RawJson;
pub(crate) use scan::{Ends, MAX_ENDS, scan};
pub(crate) use write::{write_base64, write_string, write_value};
