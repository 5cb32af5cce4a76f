//! Reading released (generalized) values back as numbers: interval bounds, midpoints, and
//! uniform spreading of a generalized value over fixed-width groups. These are the analyst's
//! tools for querying a release, exposed to SQL by `crate::sql::functions` (generalized.rs).

pub mod generalized;
