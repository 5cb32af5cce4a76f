//! The owner's settings of a public session: a public release is computed only with the
//! DataFusion settings and runtime (memory limit, spill directory) the session had when it
//! was registered.
//!
//! Every door refuses `SET` and `RESET` of them ([`super::statements`]); this check holds
//! the same line for a door that runs a public user's statements without that check (an
//! embedder's own SQL loop, Python's `SessionContext.sql`). A threshold the user chooses
//! (a memory limit, one partition) would otherwise turn a failure that depends on the data
//! into a question the user asks.

use std::sync::Arc;

use datafusion::common::{plan_err, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::SessionState;

/// Settings that only change how results are displayed: they may differ.
const DISPLAY_PREFIX: &str = "datafusion.format.";

/// The settings a public session was registered with.
#[derive(Debug)]
pub struct OwnerSettings {
    /// Every `datafusion.*` setting but the display ones, with its value.
    entries: Vec<(String, Option<String>)>,
    runtime: Arc<RuntimeEnv>,
}

impl OwnerSettings {
    /// The settings of `state` now.
    pub fn of(state: &SessionState) -> Self {
        Self {
            entries: entries(state),
            runtime: state.runtime_env().clone(),
        }
    }

    /// `Ok` when `state` has the owner's settings; otherwise an error naming the first one
    /// changed (the user's own statement changed it: the refusal says nothing about data).
    pub fn check(&self, function: &str, state: &SessionState) -> Result<()> {
        if !Arc::ptr_eq(&self.runtime, state.runtime_env()) {
            return plan_err!(
                "{function}(): the session's runtime settings (datafusion.runtime.*) were changed after the data owner set it up; releases for public users run only with the owner's settings"
            );
        }
        let now = entries(state);
        let changed = self
            .entries
            .iter()
            .zip(&now)
            .find(|(before, after)| before != after)
            .map(|(before, _)| before.0.clone())
            .or_else(|| (self.entries.len() != now.len()).then(|| "datafusion.*".to_string()));
        match changed {
            Some(key) => plan_err!(
                "{function}(): the session's setting {key} was changed after the data owner set it up; releases for public users run only with the owner's settings"
            ),
            None => Ok(()),
        }
    }
}

fn entries(state: &SessionState) -> Vec<(String, Option<String>)> {
    let mut entries: Vec<(String, Option<String>)> = state
        .config_options()
        .entries()
        .into_iter()
        .filter(|e| e.key.starts_with("datafusion.") && !e.key.starts_with(DISPLAY_PREFIX))
        .map(|e| (e.key, e.value))
        .collect();
    entries.sort();
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn a_changed_setting_or_runtime_is_named() -> Result<()> {
        let ctx = SessionContext::new();
        let owner = OwnerSettings::of(&ctx.state());
        owner.check("anonymize", &ctx.state())?;
        ctx.sql("SET datafusion.format.null = 'NULL'").await?;
        owner.check("anonymize", &ctx.state())?;
        ctx.sql("SET datafusion.catalog.default_schema = 'fresh1'")
            .await?;
        let error = owner.check("anonymize", &ctx.state()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("setting datafusion.catalog.default_schema was changed"),
            "{error}"
        );

        let ctx = SessionContext::new();
        let owner = OwnerSettings::of(&ctx.state());
        ctx.sql("SET datafusion.runtime.memory_limit = '28K'")
            .await?;
        let error = owner.check("anonymize", &ctx.state()).unwrap_err();
        assert!(error.to_string().contains("runtime settings"), "{error}");
        Ok(())
    }
}
