//! A candidate's evidence: its trial's report (risk and utility before and after, the
//! CRC's measures, anonymeter's three attacks), computed after the candidate's step has
//! ended and without holding the workbench. The candidate shows with its release's own
//! figures in the time of the release; the evidence follows, and the page says so until
//! it is in.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::prelude::SessionContext;

use super::results::run;
use super::workbench::Workbench;

/// A trial's report still to write: the statement that writes it to `path`.
#[derive(Debug, Clone)]
pub struct EvidenceJob {
    /// The trial it belongs to ([`super::workbench::Trial::id`]).
    pub trial: u64,
    pub sql: String,
    pub path: PathBuf,
}

/// Where a trial's evidence is.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Evidence {
    /// Being computed (or waiting for the trials before it).
    #[default]
    Pending,
    /// The report, as a page.
    Ready(String),
    /// Why the report could not be written.
    Failed(String),
}

impl Evidence {
    pub fn is_pending(&self) -> bool {
        matches!(self, Evidence::Pending)
    }
}

/// Runs `jobs` one after the other in `ctx` (the owner's session), each storing its
/// report in the workbench when it ends; `one_at_a_time` keeps a workbench's evidence
/// from running twice at once (two candidates added quickly share the machine's cores
/// one after the other rather than both at half speed).
pub async fn compute(
    ctx: SessionContext,
    jobs: Vec<EvidenceJob>,
    work: Arc<tokio::sync::Mutex<Workbench>>,
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
) {
    if jobs.is_empty() {
        return;
    }
    let _turn = one_at_a_time.lock().await;
    for job in jobs {
        // A trial undone or replaced meanwhile needs no report.
        if !work.lock().await.awaits_evidence(job.trial) {
            continue;
        }
        let written = run(&ctx, &job.sql).await;
        let report = written.and_then(|_| {
            std::fs::read_to_string(&job.path).map_err(|e| format!("the report: {e}"))
        });
        let _ = std::fs::remove_file(&job.path);
        work.lock().await.store_evidence(job.trial, report);
    }
}

/// The figures a report marks (`data-figure="name" data-value="number"`).
pub fn figures(report: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for part in report.split("data-figure=\"").skip(1) {
        let Some((name, rest)) = part.split_once('"') else {
            continue;
        };
        let Some(value) = rest
            .trim_start()
            .strip_prefix("data-value=\"")
            .and_then(|v| v.split_once('"'))
            .and_then(|(v, _)| v.parse::<f64>().ok())
        else {
            continue;
        };
        out.insert(name.replace("&amp;", "&"), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reports_figures_are_read_by_name() {
        let found = figures(
            "<span data-figure=\"after:rows\" data-value=\"30140\">30140</span>\
             <span data-figure=\"k_marginal_score\" data-value=\"999.5\">x</span>\
             <span data-figure=\"broken\" data-value=\"n/a\">",
        );
        assert_eq!(found.get("after:rows"), Some(&30140.0));
        assert_eq!(found.get("k_marginal_score"), Some(&999.5));
        assert_eq!(found.len(), 2);
    }
}
