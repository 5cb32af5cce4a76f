//! The privacy unit of one `anonymize(...)` call: `person` and `max_rows_per_person`
//! checked against the source, the method and a public session's policy, and the per-row
//! budget a differentially private method runs with (METHODS.md §9).

use datafusion::common::{plan_err, Result};

use super::call_columns::CallColumns;
use crate::method::Persons;
use crate::names::parse_list;
use crate::privacy_unit::{PrivacyUnit, DEFAULT_MAX_ROWS_PER_PERSON};
use crate::public::PublicRules;
use crate::sql::columns::resolve_column;

/// The call's privacy unit. A public session's unit is the owner's
/// ([`PublicRules::person`]): a public user may leave `person` out or name that column,
/// nothing else.
pub fn privacy_unit(call: &CallColumns<'_>, public: Option<&PublicRules>) -> Result<PrivacyUnit> {
    let CallColumns {
        function,
        common,
        schema,
        source_name,
        qi,
        sensitive,
        method,
    } = *call;
    let given = match common.opt_text("person") {
        Some(text) => {
            let items = parse_list("person", text, false)?;
            let [item] = items.as_slice() else {
                return plan_err!(
                    "{function}(): 'person' must name exactly one column (the one identifying a person), got '{text}'"
                );
            };
            Some(resolve_column(
                function,
                schema,
                source_name,
                &item.column,
                ("person", text),
            )?)
        }
        None => None,
    };
    let column = match (given, public) {
        (given, Some(rules)) => match (given, rules.person()) {
            (Some(given), Some(owner)) if given != owner => {
                return plan_err!(
                    "{function}(): releases in this session are per person '{owner}', set by the data owner: leave out 'person' or name that column"
                )
            }
            (_, Some(owner)) => Some(owner.to_string()),
            (Some(_), None) => {
                return plan_err!(
                    "{function}(): argument 'person' is set by the data owner in this session, and none is set: each row is one individual"
                )
            }
            (None, None) => None,
        },
        (given, None) => given,
    };
    let max_rows = common.opt_u64("max_rows_per_person");
    let Some(column) = column else {
        if max_rows.is_some() {
            return plan_err!(
                "{function}(): argument 'max_rows_per_person' applies only with person => '<column identifying a person>'"
            );
        }
        return Ok(PrivacyUnit::Row);
    };
    if !schema.fields().iter().any(|f| f.name() == &column) {
        return plan_err!(
            "{function}(): source table '{source_name}' has no person column '{column}'"
        );
    }
    if qi.iter().any(|q| q.column == column) || sensitive.iter().any(|s| s.column == column) {
        return plan_err!(
            "{function}(): the person column '{column}' cannot also be a quasi-identifier or a sensitive column: it is never released"
        );
    }
    if let Persons::Refused(reason) = method.persons {
        return plan_err!(
            "{function}(): argument 'person' does not apply to method '{}': {reason}",
            method.name
        );
    }
    if !method.is_differentially_private() && max_rows.is_some() {
        return plan_err!(
            "{function}(): argument 'max_rows_per_person' does not apply to method '{}': it keeps every row and counts distinct persons per class",
            method.name
        );
    }
    PrivacyUnit::person(&column, max_rows.unwrap_or(DEFAULT_MAX_ROWS_PER_PERSON))
        .map_err(|e| super::call_columns::prefix_error(function, e))
}
