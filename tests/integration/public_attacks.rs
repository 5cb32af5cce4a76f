//! The public door's attacks (`tests/doors/`) through the library's door: a
//! `public_session` over the owner's context, the policy read from the same TOML the tools
//! read.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::error::{DataFusionError, Result};
use datafusion_anonymize::{
    public_session, public_sql, register_with, run_script, PublicPolicy, RegisterOptions,
};

use crate::doors;

/// The rows, a line each, the values separated by `|` (no padding: the widths would
/// depend on the source's name).
fn text(batches: &[RecordBatch]) -> std::result::Result<String, ArrowError> {
    let mut lines = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let values = batch
                .columns()
                .iter()
                .map(|column| array_value_to_string(column, row))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            lines.push(values.join("|"));
        }
    }
    Ok(lines.join("\n"))
}

/// The outcome of each statement, in a fresh public session over the owner's tables.
async fn outcomes(source: &str) -> Result<Vec<Result<String, String>>> {
    let owner = datafusion::prelude::SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    run_script(&owner, doors::SETUP).await?;
    let policy: PublicPolicy =
        toml::from_str(doors::POLICY).map_err(|e| DataFusionError::External(Box::new(e)))?;
    let public = public_session(
        &owner,
        RegisterOptions::public(policy, doors::EPSILON_BUDGET),
    )?;
    let mut seen = Vec::new();
    for attack in doors::attacks() {
        let outcome = match public_sql(&public, &attack.on(source)).await {
            Ok(frame) => match frame.collect().await {
                Ok(batches) => text(&batches).map_err(|e| e.to_string()),
                Err(e) => Err(e.strip_backtrace()),
            },
            Err(e) => Err(e.strip_backtrace()),
        };
        seen.push(outcome);
    }
    Ok(seen)
}

#[tokio::test]
async fn the_reviewed_attacks_fail_through_a_public_session() -> Result<()> {
    let [a, b] = doors::SOURCES;
    doors::check("public_session", &[outcomes(a).await?, outcomes(b).await?]);
    Ok(())
}
