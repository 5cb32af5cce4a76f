//! `anonymize_report(...)`: one self-contained HTML page that describes a release for its
//! data owner — risk and utility before and after, as tables and SVG charts
//! (docs/METHODS.md §11).
//!
//! The page is built from the release already computed for the same arguments (no new
//! draw, no new charge) and from the same code the SQL functions run: the risk figures
//! are [`crate::assess`] on the source and on the release, information loss and
//! diagnostics are the release's own. Every number is therefore the one
//! `anonymize_assess`, `anonymize_information_loss` and `anonymize_diagnostics` give.

mod charts;
mod error_bars;
pub(crate) mod gather;
pub(crate) mod html;
mod node;
mod page;

pub mod bins;
pub mod svg;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, plan_err, DataFusionError, Result};
use datafusion::execution::SessionState;

use crate::attack::Outcome;
use crate::budget::account::{Account, Limits};
use crate::engine::{AnonymizeRequest, ReleaseOutput};
use crate::releases::SourceMemo;

/// One argument of the release as the summary lists it.
#[derive(Debug, Clone)]
pub struct Parameter {
    /// The argument's name.
    pub name: String,
    /// Its value as given, or its default.
    pub value: String,
    /// Whether the value is the default (not given).
    pub default: bool,
}

/// The release a report describes.
#[derive(Debug)]
pub struct Subject<'a> {
    /// The validated request.
    pub request: &'a AnonymizeRequest,
    /// The release computed for it (from the cache).
    pub output: &'a ReleaseOutput,
    /// The released rows as a table.
    pub release: Arc<dyn TableProvider>,
    /// Every argument of the method, given or default.
    pub parameters: Vec<Parameter>,
    /// The source's account in the ledger and the limits in effect.
    pub budget: (Account, Limits),
    /// Where the attacks on the source as itself are kept across reports.
    pub source_attacks: &'a SourceMemo<Vec<Outcome>>,
}

/// The report's own arguments.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Where the page is written.
    pub path: PathBuf,
    /// `records_at_risk` counts the records whose prosecutor risk exceeds this.
    pub risk_threshold: f64,
    /// The population the source was drawn from, for the journalist risk.
    pub population_size: Option<u64>,
    /// Attacks per attack type in the Attacks section; 0 leaves them out.
    pub attacks: usize,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct Written {
    /// The page's path.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The titles of its sections, in order.
    pub sections: Vec<&'static str>,
}

/// Checks the path of a report before anything is computed: an existing folder to write
/// into, a file name ending in `.html` or `.htm`.
pub fn check_path(function: &str, path: &str) -> Result<PathBuf> {
    let path = PathBuf::from(path.trim());
    let is_html = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    if !is_html || path.file_name().is_none() {
        return plan_err!(
            "{function}(): path '{}' must name an .html file, e.g. path => 'report.html'",
            path.display()
        );
    }
    let folder = folder_of(&path);
    if !folder.is_dir() {
        return plan_err!(
            "{function}(): path '{}': folder '{}' does not exist",
            path.display(),
            folder.display()
        );
    }
    Ok(path)
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Computes every figure, renders the page and writes it to `options.path` (into a
/// temporary file first, renamed over the path once complete: a failed report leaves no
/// partial file behind).
pub async fn write(
    subject: &Subject<'_>,
    options: &ReportOptions,
    state: &SessionState,
) -> Result<Written> {
    let figures = gather::gather(subject, options, state).await?;
    let (html, sections) = page::render(subject, options, &figures)?;
    let folder = folder_of(&options.path);
    let mut file = tempfile_in(&folder, &options.path)?;
    let written = file
        .1
        .write_all(html.as_bytes())
        .and_then(|()| file.1.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&file.0);
        return exec_err!(
            "anonymize_report(): cannot write '{}': {e}",
            options.path.display()
        );
    }
    drop(file.1);
    if let Err(e) = std::fs::rename(&file.0, &options.path) {
        let _ = std::fs::remove_file(&file.0);
        return exec_err!(
            "anonymize_report(): cannot write '{}': {e}",
            options.path.display()
        );
    }
    Ok(Written {
        path: options.path.display().to_string(),
        bytes: html.len() as u64,
        sections,
    })
}

/// A new file beside `path` (`.<name>.<n>.tmp`), created exclusively.
fn tempfile_in(folder: &Path, path: &Path) -> Result<(PathBuf, std::fs::File)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    for n in 0..1000u32 {
        let candidate = folder.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(file) => return Ok((candidate, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(DataFusionError::Execution(format!(
                    "anonymize_report(): cannot write into folder '{}': {e}",
                    folder.display()
                )))
            }
        }
    }
    exec_err!(
        "anonymize_report(): cannot create a temporary file in folder '{}'",
        folder.display()
    )
}
