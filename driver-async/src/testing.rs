//! Driver tests written once, for every runtime crate.
