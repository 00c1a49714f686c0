//! SidecarSet (spec/sidecarset.md; DECISIONS 12 and 13): the defaulting webhook and its hashes, candidate
//! selection, and pod injection over SidecarSets prepared once for it ([`prepared`]).

pub mod defaults;
pub mod explain;
pub mod hash;
pub mod inject;
pub mod missed;
pub mod prepared;
pub mod resources;
pub mod revision;
pub mod select;
pub mod status;
pub mod upgrade;
pub mod validate;
