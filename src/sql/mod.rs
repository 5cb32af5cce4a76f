//! The SQL surface: argument grammar, the relation planner and every function
//! ([`functions`] lists them, one file each).

pub mod args;
pub mod call;
pub(crate) mod columns;
pub mod copy_manifest;
pub mod copy_output;
pub mod depth;
pub mod docs;
pub mod functions;
pub mod planner;
pub mod resolve;
pub mod script;
