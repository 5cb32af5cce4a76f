//! The guarantee cards written beside a `COPY … TO` of a release: `COPY (SELECT * FROM
//! anonymize('nps', …)) TO 'out/r.parquet'` writes `out/r.parquet.manifest.json`, the
//! card of every release the statement read ([`crate::releases::card`]) and the names of
//! any other tables it read (their rows are covered by no card). It is written after the
//! data, under a temporary name renamed into place; if it cannot be written the statement
//! fails and its output is removed with the rest ([`super::copy_output`]). A `COPY` that
//! reads no release removes a manifest left beside its target by an earlier one, which
//! would describe rows that are no longer there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::source_as_provider;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;
use serde::{Deserialize, Serialize};

use crate::releases::card::{guarantee_card, GuaranteeCard};
use crate::releases::CacheEntry;
use crate::tables::lazy::LazyTable;

/// What the manifest's file name adds to the target's.
pub const MANIFEST_SUFFIX: &str = ".manifest.json";
/// The manifest's `format`.
pub const MANIFEST_FORMAT: &str = "datafusion-anonymize copy manifest";

/// Deepest nesting of views followed when looking for releases.
const MAX_VIEW_DEPTH: usize = 32;

/// The file written beside a `COPY`'s output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyManifest {
    /// [`MANIFEST_FORMAT`].
    pub format: String,
    /// 1.
    pub version: u32,
    /// The `COPY`'s target as the statement named it.
    pub output: String,
    /// The card of every release the statement read.
    pub releases: Vec<GuaranteeCard>,
    /// The other tables it read, whose rows no card covers.
    pub other_tables: Vec<String>,
}

/// The tables a `COPY` reads: releases, and others by name.
#[derive(Debug, Default)]
pub(crate) struct CopyInputs {
    releases: Vec<Arc<CacheEntry>>,
    other_tables: BTreeSet<String>,
}

impl CopyInputs {
    /// What `plan` (its subqueries and the views it names included) reads.
    pub(crate) fn of_plan(plan: &LogicalPlan) -> Self {
        let mut inputs = Self::default();
        inputs.add(plan, 0);
        inputs
    }

    fn add(&mut self, plan: &LogicalPlan, depth: usize) {
        let _ = plan.apply_with_subqueries(|node| {
            if let LogicalPlan::TableScan(scan) = node {
                match source_as_provider(&scan.source) {
                    Ok(provider) => self.add_table(&provider, &scan.table_name.to_string(), depth),
                    Err(_) => {
                        self.other_tables.insert(scan.table_name.to_string());
                    }
                }
            }
            Ok(TreeNodeRecursion::Continue)
        });
    }

    fn add_table(&mut self, provider: &Arc<dyn TableProvider>, name: &str, depth: usize) {
        let any: &dyn std::any::Any = provider.as_ref();
        let entry = any
            .downcast_ref::<LazyTable>()
            .and_then(|table| table.producer().release_entry())
            .and_then(|entry| entry.downcast::<CacheEntry>().ok());
        if let Some(entry) = entry {
            if !self.releases.iter().any(|e| Arc::ptr_eq(e, &entry)) {
                self.releases.push(entry);
            }
            return;
        }
        match provider.get_logical_plan() {
            Some(view) if depth < MAX_VIEW_DEPTH => self.add(&view, depth + 1),
            _ => {
                self.other_tables.insert(name.to_string());
            }
        }
    }
}

/// Where the manifest of a `COPY` to the local path `target` goes: beside it, its name
/// with [`MANIFEST_SUFFIX`] added (a directory target's name without its trailing `/`).
pub fn manifest_path(target: &Path) -> PathBuf {
    let text = target.to_string_lossy();
    let mut name = text.trim_end_matches('/').to_string();
    name.push_str(MANIFEST_SUFFIX);
    PathBuf::from(name)
}

/// The temporary name the manifest is written under before it is renamed into place.
pub(crate) fn temporary_path(manifest: &Path) -> PathBuf {
    let mut name = manifest.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

fn io_error(what: &str, path: &Path, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!(
        "COPY: cannot {what} the guarantee card '{}': {e}; the output was removed",
        path.display()
    ))
}

/// After a `COPY` to `target` that read `inputs` has written its output: writes the
/// manifest beside it, or removes a stale one if the statement read no release.
pub(crate) async fn write_manifest(
    target: &str,
    path: &Path,
    inputs: &CopyInputs,
    state: &SessionState,
) -> Result<()> {
    let manifest = manifest_path(path);
    if inputs.releases.is_empty() {
        return match std::fs::remove_file(&manifest) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error("remove the stale", &manifest, e))
            }
            _ => Ok(()),
        };
    }
    let mut releases = Vec::new();
    for entry in &inputs.releases {
        let Some(output) = entry.drawn() else {
            return Err(DataFusionError::Execution(
                "COPY: the release it read is no longer cached, so its guarantee card cannot be written; the output was removed".into(),
            ));
        };
        releases.push(guarantee_card(&entry.request, &output, state).await?);
    }
    let manifest_text = serde_json::to_string_pretty(&CopyManifest {
        format: MANIFEST_FORMAT.into(),
        version: 1,
        output: target.to_string(),
        releases,
        other_tables: inputs.other_tables.iter().cloned().collect(),
    })
    .map_err(|e| io_error("write", &manifest, e))?;
    let tmp = temporary_path(&manifest);
    std::fs::write(&tmp, manifest_text).map_err(|e| io_error("write", &tmp, e))?;
    std::fs::rename(&tmp, &manifest).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error("write", &manifest, e)
    })
}
