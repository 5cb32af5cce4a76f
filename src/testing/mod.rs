//! Test support shared by the unit tests: fixtures (hierarchies, the IPA paper's example,
//! leaf histograms), statistical checks of samplers, and differential-privacy audits.
//! Compiled for tests only.

pub mod audit;
pub mod fixtures;
pub mod nps;
pub mod stats;

pub use fixtures::{
    columnless_row_counts, histogram, ladder, paper_example_hierarchies, paper_example_records,
    person_fixture, rows, test_numbers, weighted_histogram, PersonRecord, Record,
    PAPER_EXAMPLE_DISEASES,
};
pub use nps::{nps_base, NpsBase};
