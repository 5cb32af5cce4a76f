//! Direct identifiers of one `anonymize(...)` call (`identifiers`, `identifier_mode`):
//! dropped, or released as keyed pseudonyms where a guarantee allows it (METHODS.md §9.5).

use datafusion::common::{plan_err, Result};

use super::call_columns::CallColumns;
use crate::method::METHODS;
use crate::names::parse_list;
use crate::pseudonym::{Identifiers, PseudonymKey};
use crate::sql::columns::resolve_column;

/// Reads `identifiers` and `identifier_mode` against the source, the method and the key.
/// Pseudonyms are for the data owner and `kanon` only: a pseudonym links a released row
/// across releases, which a differentially private release cannot allow and a counterfeit
/// row cannot carry.
pub fn identifiers(
    call: &CallColumns<'_>,
    public: bool,
    key: Option<&PseudonymKey>,
) -> Result<Identifiers> {
    let CallColumns {
        function,
        common,
        schema,
        source_name,
        qi,
        sensitive,
        method,
    } = *call;
    let pseudonyms = common.text("identifier_mode")? == "pseudonym";
    let Some(text) = common.opt_text("identifiers") else {
        if pseudonyms {
            return plan_err!(
                "{function}(): identifier_mode 'pseudonym' needs the identifier columns: identifiers => 'patient_id, ...'"
            );
        }
        return Ok(Identifiers::default());
    };
    let mut columns: Vec<String> = Vec::new();
    for item in parse_list("identifiers", text, false)? {
        let name = resolve_column(
            function,
            schema,
            source_name,
            &item.column,
            ("identifiers", text),
        )?;
        if sensitive.iter().any(|s| s.column == name) {
            return plan_err!(
                "{function}(): column '{name}' cannot be both an identifier and a sensitive column"
            );
        }
        // A direct identifier is never released as it is: as a quasi-identifier it would
        // be (generalized at most), while the metadata said it was dropped.
        if qi.iter().any(|q| q.column == name) {
            return plan_err!(
                "{function}(): column '{name}' cannot be both a quasi-identifier and a direct identifier: an identifier is dropped{}, so leave it out of 'qi' (or out of 'identifiers' if it is not one)",
                if pseudonyms { " or released as a pseudonym" } else { "" }
            );
        }
        if !columns.contains(&name) {
            columns.push(name);
        }
    }
    if pseudonyms {
        if public {
            return plan_err!(
                "{function}(): identifier_mode 'pseudonym' is for the data owner only"
            );
        }
        if !method.pseudonyms {
            let allowed: Vec<String> = METHODS
                .iter()
                .filter(|m| m.pseudonyms)
                .map(|m| format!("'{}'", m.name))
                .collect();
            return plan_err!(
                "{function}(): identifier_mode 'pseudonym' applies to method {} only: a pseudonym links every released row across releases, which '{}' cannot allow (its rows are noisy or counterfeit, or its guarantee is differential privacy); leave the identifiers dropped",
                allowed.join(", "),
                method.name
            );
        }
        if key.is_none() {
            return plan_err!(
                "{function}(): identifier_mode 'pseudonym' needs the owner's secret key: RegisterOptions::pseudonym_key, or dfanon --pseudonym-key-file PATH"
            );
        }
    }
    Ok(Identifiers {
        columns,
        pseudonyms,
    })
}
