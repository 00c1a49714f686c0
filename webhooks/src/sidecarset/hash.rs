//! SidecarSet hashes (spec/sidecarset.md §7.2).
