//! SidecarSet defaulting (spec/sidecarset.md §7.1).
