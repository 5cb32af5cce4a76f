//! Publications kept beside the ledger file, so that they outlive the process: with
//! `anonymize.ledger_path = 'ledger.json'`, the release published as `nps_release` is the
//! Arrow IPC file `ledger.json.published/nps_release.arrow` and its description
//! `nps_release.json` (the request's arguments, method, charge, public metadata and where
//! its table lives). A registration over that ledger file reads them back: the same table,
//! the same rows, nothing drawn or charged again, and the owner's setup that publishes the
//! same request again at start gets the kept release.
//!
//! Each file is written under a temporary name and renamed into place, the description
//! last: a process killed while publishing leaves either the whole publication or none.
//! A host may keep the publication's report beside them as `<name>.report.html`
//! ([`report_path`]); unpublishing removes it with the rest.

use std::fs::File;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::FileReader;
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::common::{DataFusionError, Result};
use serde::{Deserialize, Serialize};

/// What a kept publication says of itself (`<name>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Description {
    /// The request's arguments as the cache compares them (source, columns, hierarchies,
    /// the configured method, unit, identifiers): publishing the same again is the same
    /// publication.
    pub arguments: String,
    /// The method's name.
    pub method: String,
    /// What the release was charged.
    pub epsilon: f64,
    /// What the release was charged.
    pub delta: f64,
    /// The release's public metadata.
    pub metadata: Vec<(String, String)>,
    /// The catalog and schema its table is registered in.
    pub catalog: String,
    /// The catalog and schema its table is registered in.
    pub schema: String,
}

/// The folder of the publications kept beside the ledger file `ledger`.
pub(super) fn folder(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".published");
    PathBuf::from(name)
}

/// Where a host keeps the report of the publication `name` beside the ledger file
/// `ledger`: `<ledger>.published/<name>.report.html`.
pub fn report_path(ledger: &Path, name: &str) -> PathBuf {
    folder(ledger).join(format!("{name}.report.html"))
}

fn io_error(what: &str, path: &Path, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!(
        "anonymize_publish(): cannot {what} '{}': {e}",
        path.display()
    ))
}

/// Writes the publication `name` (its rows `batches` under `schema`, and `description`)
/// into `folder`, replacing one of that name.
pub(super) fn save(
    folder: &Path,
    name: &str,
    description: &Description,
    schema: &SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<()> {
    std::fs::create_dir_all(folder).map_err(|e| io_error("create the folder", folder, e))?;
    let rows = folder.join(format!("{name}.arrow"));
    let rows_tmp = folder.join(format!("{name}.arrow.tmp"));
    let written = (|| -> Result<()> {
        let file = File::create(&rows_tmp).map_err(|e| io_error("create", &rows_tmp, e))?;
        let mut writer = FileWriter::try_new(file, schema)?;
        for batch in batches {
            writer.write(&batch?)?;
        }
        writer.finish()?;
        writer
            .into_inner()?
            .sync_all()
            .map_err(|e| io_error("write", &rows_tmp, e))?;
        std::fs::rename(&rows_tmp, &rows).map_err(|e| io_error("write", &rows, e))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&rows_tmp);
        return Err(e);
    }
    let text = serde_json::to_string_pretty(description)
        .map_err(|e| DataFusionError::Execution(format!("anonymize_publish(): {e}")))?;
    let about = folder.join(format!("{name}.json"));
    let about_tmp = folder.join(format!("{name}.json.tmp"));
    std::fs::write(&about_tmp, text)
        .and_then(|()| std::fs::rename(&about_tmp, &about))
        .map_err(|e| {
            let _ = std::fs::remove_file(&about_tmp);
            io_error("write", &about, e)
        })
}

/// Removes the publication `name` from `folder` (nothing when it is not there).
pub(super) fn remove(folder: &Path, name: &str) -> Result<()> {
    for file in [
        format!("{name}.json"),
        format!("{name}.arrow"),
        format!("{name}.report.html"),
    ] {
        let path = folder.join(file);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("remove", &path, e)),
        }
    }
    Ok(())
}

/// A publication read back: its name, description, schema and rows.
pub(super) struct Kept {
    pub name: String,
    pub description: Description,
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

/// Every whole publication in `folder` (none when it does not exist), by name.
pub(super) fn load(folder: &Path) -> Result<Vec<Kept>> {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("read", folder, e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            file.strip_suffix(".json").map(str::to_string)
        })
        .collect();
    names.sort();
    let mut kept = Vec::new();
    for name in names {
        let about = folder.join(format!("{name}.json"));
        let text = std::fs::read_to_string(&about).map_err(|e| io_error("read", &about, e))?;
        let description: Description =
            serde_json::from_str(&text).map_err(|e| io_error("read the publication", &about, e))?;
        let rows = folder.join(format!("{name}.arrow"));
        let file = File::open(&rows).map_err(|e| io_error("read", &rows, e))?;
        let reader = FileReader::try_new(file, None)?;
        let schema = reader.schema();
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        kept.push(Kept {
            name,
            description,
            schema,
            batches,
        });
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn a_kept_publication_reads_back_whole_and_goes_away() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| DataFusionError::External(Box::new(e)))?;
        let folder = folder(&dir.path().join("ledger.json"));
        assert!(folder.ends_with("ledger.json.published"));
        assert!(load(&folder)?.is_empty());
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("age", DataType::Utf8, false),
            Field::new("n", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec!["[30-40)", "*"])),
                Arc::new(Int64Array::from(vec![3, 4])),
            ],
        )?;
        let description = Description {
            arguments: "source=\"t\";qi=age".into(),
            method: "kanon".into(),
            epsilon: 0.0,
            delta: 0.0,
            metadata: vec![("method".into(), "kanon".into())],
            catalog: "datafusion".into(),
            schema: "public".into(),
        };
        save(
            &folder,
            "r",
            &description,
            &schema,
            std::iter::once(Ok(batch.clone())),
        )?;
        let kept = load(&folder)?;
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].name, "r");
        assert_eq!(kept[0].description, description);
        assert_eq!(kept[0].batches, vec![batch]);
        // No temporary file is left.
        let files: Vec<String> = std::fs::read_dir(&folder)
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        assert_eq!(files.len(), 2, "{files:?}");
        // A host's report beside it is not a publication, and goes away with it.
        let report = report_path(&dir.path().join("ledger.json"), "r");
        assert_eq!(report, folder.join("r.report.html"));
        std::fs::write(&report, "<html>").map_err(|e| DataFusionError::External(Box::new(e)))?;
        assert_eq!(load(&folder)?.len(), 1);
        remove(&folder, "r")?;
        assert!(load(&folder)?.is_empty());
        assert!(!report.exists());
        remove(&folder, "r")?;
        Ok(())
    }

    #[test]
    fn rows_without_a_description_are_not_a_publication() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| DataFusionError::External(Box::new(e)))?;
        let folder = dir.path().join("kept");
        std::fs::create_dir_all(&folder).map_err(|e| DataFusionError::External(Box::new(e)))?;
        std::fs::write(folder.join("half.arrow"), b"partial")
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        assert!(load(&folder)?.is_empty());
        Ok(())
    }
}
