//! How a member of the pod appeared in the request: absent, `null`, or there ([`Presence`]); a container
//! list, a section or the annotations are patched according to it. Below the pod ([`super`]) and its
//! lists ([`super::list`]), which both read it.

use crate::json::patch::{Json, Op};

/// How a container list appeared in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    /// No key (or no spec).
    Absent,
    /// `null`.
    Null,
    /// A list (an object for a section).
    Present,
}

impl Presence {
    /// The operation that writes `value` whole at `path`, where a value was as received in this way: an
    /// add where there was none, a replace of `null` or of what was there.
    pub(super) fn write_whole(self, path: String, value: Json) -> Op {
        if self == Self::Absent {
            Op::Add { path, value }
        } else {
            Op::Replace { path, value }
        }
    }
}
