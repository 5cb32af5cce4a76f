//! What the checks of one `anonymize` call read (its columns, arguments and method), and
//! how their errors are worded.

use datafusion::arrow::datatypes::Schema;
use datafusion::common::DataFusionError;

use crate::engine::QiSpec;
use crate::method::MethodSpec;
use crate::params::ParamValues;
use crate::sensitive::SensitiveSpec;

/// What the checks of `person` and `identifiers` read of one call: the function, the common
/// arguments, the source (name and schema), its resolved columns and the method.
pub(super) struct CallColumns<'a> {
    pub function: &'a str,
    pub common: &'a ParamValues,
    pub schema: &'a Schema,
    pub source_name: &'a str,
    pub qi: &'a [QiSpec],
    pub sensitive: &'a [SensitiveSpec],
    pub method: &'static MethodSpec,
}

/// A planning error prefixed with the function name: a planning error's message, or any
/// other error's full text.
pub(super) fn prefix_error(function: &str, e: DataFusionError) -> DataFusionError {
    let message = match e {
        DataFusionError::Plan(message) => message,
        other => other.strip_backtrace(),
    };
    DataFusionError::Plan(format!("{function}(): {message}"))
}
