//! The SQL surface: argument grammar, the relation planner and every function
//! ([`catalog`] lists them).

pub mod anonymize;
pub mod args;
pub mod assess;
pub mod budget_fn;
pub mod catalog;
pub mod demo_fns;
pub mod docs;
pub mod generalized_udfs;
pub mod help_fn;
pub mod hierarchy_fns;
pub mod lazy;
pub mod planner;
pub mod resolve;
pub mod script;
pub mod shipped;
pub mod upa_truthful;
