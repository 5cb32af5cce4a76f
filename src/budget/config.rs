//! The `anonymize.*` session settings: privacy-budget limits and the optional ledger file.
//!
//! ```sql
//! SET anonymize.epsilon_budget = 2.0;       -- per source table; default 'unlimited'
//! SET anonymize.delta_budget = 1e-6;        -- per source table; default 'unlimited'
//! SET anonymize.ledger_path = 'ledger.json'; -- keep the ledger in a file; default '' (memory)
//! ```
//!
//! The settings live in DataFusion's session configuration as a [`ConfigExtension`], so they
//! are read by every statement planned after the `SET`, appear in `SHOW ALL` (when the
//! information schema is enabled), and are validated when set: a negative, NaN or
//! non-numeric budget is rejected by the `SET` statement itself, naming the setting.

use std::any::Any;
use std::path::PathBuf;

use datafusion::common::config::{ConfigEntry, ConfigExtension, ConfigOptions, ExtensionOptions};
use datafusion::common::{config_err, Result};
use datafusion::prelude::SessionContext;

/// Prefix of every setting of this crate (`anonymize.<key>`).
pub const PREFIX: &str = "anonymize";

/// The `anonymize.*` settings of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct AnonymizeOptions {
    /// Fixed at registration ([`crate::Access::Public`]): `SET anonymize.*` is refused.
    pub locked: bool,
    /// Total ε each source table may spend; `f64::INFINITY` = unlimited (the default).
    pub epsilon_budget: f64,
    /// Total δ each source table may spend; `f64::INFINITY` = unlimited (the default).
    pub delta_budget: f64,
    /// File holding the ledger across sessions; `None` keeps it in memory (the default).
    pub ledger_path: Option<PathBuf>,
}

impl Default for AnonymizeOptions {
    fn default() -> Self {
        Self {
            locked: false,
            epsilon_budget: f64::INFINITY,
            delta_budget: f64::INFINITY,
            ledger_path: None,
        }
    }
}

const EPSILON_DOC: &str = "total epsilon each source table may spend over all releases; 'unlimited' (default) or a number >= 0";
const DELTA_DOC: &str = "total delta each source table may spend over all releases; 'unlimited' (default) or a number >= 0";
const PATH_DOC: &str =
    "file that keeps the privacy ledger across sessions; '' (default) keeps it in memory";

/// Names of the settings, for error messages.
const KEYS: &str = "epsilon_budget, delta_budget, ledger_path";

/// The error for `RESET anonymize.<key>`, for clients that run statements themselves:
/// DataFusion cannot reset an extension's settings and would answer "Could not find config
/// namespace". `None` when `sql` is not a `RESET` of an `anonymize.*` setting.
pub fn reset_error(sql: &str) -> Option<datafusion::error::DataFusionError> {
    let words: Vec<&str> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect();
    let [reset, key] = words.as_slice() else {
        return None;
    };
    let key = key.to_ascii_lowercase();
    let setting = key.strip_prefix(&format!("{PREFIX}."))?;
    if !reset.eq_ignore_ascii_case("reset") {
        return None;
    }
    let defaults = AnonymizeOptions::default();
    let default = match setting {
        "epsilon_budget" => format_limit(defaults.epsilon_budget),
        "delta_budget" => format_limit(defaults.delta_budget),
        "ledger_path" => String::new(),
        other => {
            return Some(datafusion::error::DataFusionError::Configuration(format!(
                "unknown setting '{PREFIX}.{other}'; valid settings: {KEYS}"
            )))
        }
    };
    Some(datafusion::error::DataFusionError::Configuration(format!(
        "RESET is not supported for {PREFIX}.* settings; set the value instead, e.g. SET {PREFIX}.{setting} = '{default}' (the default). In a public session these settings are fixed by the data owner"
    )))
}

/// Parses a budget limit: `unlimited` (also `inf`, `infinity`, `none`) or a finite number
/// `>= 0` (for `delta_budget`, at most 1).
pub fn parse_limit(key: &str, value: &str) -> Result<f64> {
    let text = value.trim();
    if ["unlimited", "inf", "infinity", "none"]
        .iter()
        .any(|w| text.eq_ignore_ascii_case(w))
    {
        return Ok(f64::INFINITY);
    }
    match text.parse::<f64>() {
        // Delta is a probability: a total above 1 bounds nothing.
        Ok(x) if key == "delta_budget" && x > 1.0 && x.is_finite() => config_err!(
            "{PREFIX}.delta_budget must be at most 1 (delta is a probability) or 'unlimited', got '{value}'"
        ),
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => config_err!("{PREFIX}.{key} must be a number >= 0 or 'unlimited', got '{value}'"),
    }
}

/// Parses a ledger path: `''` keeps the ledger in memory; anything else is a file path,
/// taken exactly as written (a path that is only spaces, or that begins or ends with a
/// space, is refused as a likely typo). The file's folder must exist (nothing is created
/// for it), and the file, if it exists, must be a regular file.
pub fn parse_ledger_path(value: &str) -> Result<Option<PathBuf>> {
    if value.is_empty() {
        return Ok(None);
    }
    if value.trim() != value {
        return config_err!(
            "{PREFIX}.ledger_path must be a file path without leading or trailing spaces, or '' to keep the ledger in memory; got {value:?}"
        );
    }
    let path = PathBuf::from(value);
    let real = super::store::real_path(&path)?;
    if real.exists() && !real.is_file() {
        return config_err!(
            "privacy ledger path '{}' is not a regular file",
            path.display()
        );
    }
    Ok(Some(path))
}

/// Renders a limit the way [`parse_limit`] reads it.
pub fn format_limit(limit: f64) -> String {
    if limit.is_infinite() {
        "unlimited".to_string()
    } else {
        format!("{limit}")
    }
}

impl ConfigExtension for AnonymizeOptions {
    const PREFIX: &'static str = PREFIX;
}

impl ExtensionOptions for AnonymizeOptions {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        if self.locked {
            return config_err!(
                "{PREFIX}.{key} cannot be changed in this session: its anonymize functions were registered for public users, with the budget settings fixed at registration (the data owner sets them in RegisterOptions::budget, or uses dfanon without --public)"
            );
        }
        match key {
            "epsilon_budget" => self.epsilon_budget = parse_limit(key, value)?,
            "delta_budget" => self.delta_budget = parse_limit(key, value)?,
            "ledger_path" => self.ledger_path = parse_ledger_path(value)?,
            other => {
                return config_err!("unknown setting '{PREFIX}.{other}'; valid settings: {KEYS}")
            }
        }
        Ok(())
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        vec![
            ConfigEntry {
                key: format!("{PREFIX}.epsilon_budget"),
                value: Some(format_limit(self.epsilon_budget)),
                description: EPSILON_DOC,
            },
            ConfigEntry {
                key: format!("{PREFIX}.delta_budget"),
                value: Some(format_limit(self.delta_budget)),
                description: DELTA_DOC,
            },
            ConfigEntry {
                key: format!("{PREFIX}.ledger_path"),
                value: Some(
                    self.ledger_path
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                ),
                description: PATH_DOC,
            },
        ]
    }
}

/// Installs `settings` on `ctx`; with `locked`, SQL cannot change them afterwards.
pub fn install(ctx: &SessionContext, settings: &AnonymizeOptions, locked: bool) {
    let state = ctx.state_ref();
    let mut state = state.write();
    let options = state.config_mut().options_mut();
    options.extensions.insert(AnonymizeOptions {
        locked,
        ..settings.clone()
    });
}

/// The settings in force in a session (the defaults when they were never installed).
pub fn options(config: &ConfigOptions) -> AnonymizeOptions {
    config
        .extensions
        .get::<AnonymizeOptions>()
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_gets_an_error_naming_the_setting() {
        let err = reset_error("RESET anonymize.epsilon_budget;").map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("Invalid or Unsupported Configuration: RESET is not supported for anonymize.* settings; set the value instead, e.g. SET anonymize.epsilon_budget = 'unlimited' (the default). In a public session these settings are fixed by the data owner")
        );
        let err = reset_error("reset ANONYMIZE.budget").map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("unknown setting 'anonymize.budget'")),
            "{err:?}"
        );
        assert!(reset_error("RESET datafusion.execution.batch_size").is_none());
        assert!(reset_error("SELECT 1").is_none());
    }

    #[test]
    fn parses_limits_and_rejects_bad_ones() {
        assert_eq!(parse_limit("epsilon_budget", "2.5").unwrap(), 2.5);
        assert_eq!(parse_limit("epsilon_budget", " 0 ").unwrap(), 0.0);
        assert_eq!(parse_limit("delta_budget", "1e-6").unwrap(), 1e-6);
        for word in ["unlimited", "INF", "Infinity", "none"] {
            assert_eq!(parse_limit("epsilon_budget", word).unwrap(), f64::INFINITY);
        }
        for bad in ["-1", "NaN", "abc", "", "-inf"] {
            let err = parse_limit("delta_budget", bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "anonymize.delta_budget must be a number >= 0 or 'unlimited', got '{bad}'"
                )),
                "{err}"
            );
        }
        assert_eq!(parse_limit("delta_budget", "1").unwrap(), 1.0);
        let err = parse_limit("delta_budget", "2").unwrap_err().to_string();
        assert!(err.contains("delta_budget must be at most 1"), "{err}");
        assert_eq!(parse_limit("epsilon_budget", "2").unwrap(), 2.0);
        assert_eq!(format_limit(f64::INFINITY), "unlimited");
        assert_eq!(format_limit(0.5), "0.5");
    }

    #[test]
    fn set_and_entries() {
        let mut o = AnonymizeOptions::default();
        o.set("epsilon_budget", "3").unwrap();
        o.set("ledger_path", "/tmp/l.json").unwrap();
        assert_eq!(o.epsilon_budget, 3.0);
        assert_eq!(o.ledger_path, Some(PathBuf::from("/tmp/l.json")));
        o.set("ledger_path", "").unwrap();
        assert_eq!(o.ledger_path, None);
        for typo in [" ", "  ", " l.json", "l.json "] {
            let err = o.set("ledger_path", typo).unwrap_err().to_string();
            assert!(err.contains("without leading or trailing spaces"), "{err}");
        }
        let err = o.set("epsilon", "1").unwrap_err().to_string();
        assert!(err.contains("unknown setting 'anonymize.epsilon'"), "{err}");
        let entries = o.entries();
        assert_eq!(entries[0].key, "anonymize.epsilon_budget");
        assert_eq!(entries[0].value.as_deref(), Some("3"));
        assert_eq!(entries[1].value.as_deref(), Some("unlimited"));
        assert_eq!(entries[2].value.as_deref(), Some(""));
    }

    #[tokio::test]
    async fn locked_settings_refuse_set() {
        let ctx = SessionContext::new();
        let fixed = AnonymizeOptions {
            epsilon_budget: 1.0,
            ..AnonymizeOptions::default()
        };
        install(&ctx, &fixed, true);
        for sql in [
            "SET anonymize.epsilon_budget = 100",
            "SET anonymize.ledger_path = ''",
        ] {
            let err = ctx.sql(sql).await.unwrap_err().to_string();
            assert!(err.contains("registered for public users"), "{sql}: {err}");
        }
        assert_eq!(options(ctx.state().config_options()).epsilon_budget, 1.0);
    }

    #[tokio::test]
    async fn sql_set_reaches_the_session() {
        let ctx = SessionContext::new();
        install(&ctx, &AnonymizeOptions::default(), false);
        ctx.sql("SET anonymize.epsilon_budget = 2.0")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        ctx.sql("SET anonymize.delta_budget = '1e-6'")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let o = options(ctx.state().config_options());
        assert_eq!(o.epsilon_budget, 2.0);
        assert_eq!(o.delta_budget, 1e-6);
        let err = ctx
            .sql("SET anonymize.epsilon_budget = -1")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("anonymize.epsilon_budget must be a number >= 0"),
            "{err}"
        );
    }
}
