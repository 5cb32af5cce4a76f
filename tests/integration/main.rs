//! The integration tests of the library, one binary: a module per topic. (One binary links
//! DataFusion once; each `tests/*.rs` file would link it again.)

mod budget_file;
mod common;
mod dates;
mod docs_drift;
/// The public door's attacks, shared with the tools' tests (`tests/doors/`).
#[path = "../doors/attacks.rs"]
mod doors;
mod functions_doc;
mod fuzz_grammar;
mod hostile_input;
mod layers;
mod linked;
mod manifest;
mod one_build;
mod paper_evaluator;
mod profile;
mod pseudonyms;
mod public_access;
mod public_attacks;
mod public_differential;
mod public_door;
mod published_restart;
mod release_attacks;
mod release_props;
mod release_utility;
mod report;
mod report_browser;
mod shared_releases;
mod stale_release;
