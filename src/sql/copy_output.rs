//! The output of a `COPY … TO` a local path, and removing what a statement that did not
//! finish wrote there: nothing half-written is left behind. A `COPY` of a release gets its
//! guarantee card beside the output when it finishes ([`super::copy_manifest`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use datafusion::common::Result;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;

use super::copy_manifest::{manifest_path, temporary_path, write_manifest, CopyInputs};

/// Most files listed under a `COPY` target directory when looking for what it wrote.
const MAX_LISTED: usize = 100_000;

/// A local `COPY` target as it was before the statement, to remove what an interrupted or
/// failed statement left: the target itself if it did not exist, new files in a target
/// directory, and the object store's staging files (`<name>#<n>`) beside a target file.
pub struct CopyOutput {
    target: String,
    path: PathBuf,
    existed: bool,
    before: HashSet<PathBuf>,
    /// What the statement reads (releases get a guarantee card).
    inputs: CopyInputs,
}

impl CopyOutput {
    /// `None` for targets that are not local paths (`s3://…` and the like).
    pub fn before(target: &str) -> Option<Self> {
        let local = match target.strip_prefix("file://") {
            Some(path) => path,
            None if target.contains("://") => return None,
            None => target,
        };
        let path = PathBuf::from(local);
        let existed = path.exists();
        let before = match path.is_dir() {
            true => list_files(&path),
            false => HashSet::new(),
        };
        Some(Self {
            target: target.to_string(),
            path,
            existed,
            before,
            inputs: CopyInputs::default(),
        })
    }

    /// After the statement wrote its output: the guarantee card of every release it read
    /// beside the output (or a stale card there removed, when it read none). On an error
    /// the caller removes the output ([`CopyGuard::finish`] does).
    pub async fn write_manifest(&self, state: &SessionState) -> Result<()> {
        write_manifest(&self.target, &self.path, &self.inputs, state).await
    }

    /// Removes what the statement wrote; best effort (what cannot be removed stays).
    pub fn remove_partial(&self) {
        let _ = std::fs::remove_file(temporary_path(&manifest_path(&self.path)));
        if let (Some(name), Some(parent)) = (self.path.file_name(), self.path.parent()) {
            let parent = match parent.as_os_str().is_empty() {
                true => Path::new("."),
                false => parent,
            };
            let staged = format!("{}#", name.to_string_lossy());
            if let Ok(entries) = std::fs::read_dir(parent) {
                for entry in entries.flatten() {
                    if entry.file_name().to_string_lossy().starts_with(&staged) {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
            }
        }
        if !self.existed {
            let _ = match self.path.is_dir() {
                true => std::fs::remove_dir_all(&self.path),
                false => std::fs::remove_file(&self.path),
            };
        } else if self.path.is_dir() {
            for file in list_files(&self.path) {
                if !self.before.contains(&file) {
                    let _ = std::fs::remove_file(file);
                }
            }
        }
    }
}

/// The files under `dir`, at most [`MAX_LISTED`].
fn list_files(dir: &Path) -> HashSet<PathBuf> {
    let mut files = HashSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if files.len() >= MAX_LISTED {
                return files;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                Ok(_) => {
                    files.insert(entry.path());
                }
                Err(_) => {}
            }
        }
    }
    files
}

impl CopyOutput {
    /// The local output of `plan`, if it is a `COPY … TO` a local path (as it is before
    /// the plan runs).
    pub fn of_plan(plan: &LogicalPlan) -> Option<Self> {
        match plan {
            LogicalPlan::Copy(copy) => {
                let mut output = Self::before(&copy.output_url)?;
                output.inputs = CopyInputs::of_plan(&copy.input);
                Some(output)
            }
            _ => None,
        }
    }
}

/// Removes a `COPY`'s partial output when dropped before [`CopyGuard::finished`]: when the
/// statement failed, or its future was dropped (cancelled) while it wrote.
pub struct CopyGuard(Option<CopyOutput>);

impl CopyGuard {
    /// A guard over `output` (`None`: a statement that writes no local output).
    pub fn new(output: Option<CopyOutput>) -> Self {
        Self(output)
    }

    /// The statement finished: the guarantee cards of the releases it read are written
    /// beside its output ([`CopyOutput::write_manifest`]) and what it wrote stays; if the
    /// cards cannot be written, the output is removed and the error returned.
    pub async fn finish(mut self, state: &SessionState) -> Result<()> {
        if let Some(output) = &self.0 {
            output.write_manifest(state).await?;
        }
        self.0 = None;
        Ok(())
    }
}

impl Drop for CopyGuard {
    fn drop(&mut self) {
        if let Some(output) = self.0.take() {
            output.remove_partial();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_copy_to_a_new_file_leaves_nothing() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let target = dir.path().join("x.csv");
        let copy = CopyOutput::before(&target.to_string_lossy()).expect("local");
        let keep = dir.path().join("other.csv");
        std::fs::write(&keep, "kept").expect("write");
        std::fs::write(dir.path().join("x.csv#1"), "partial").expect("write");
        copy.remove_partial();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(left, vec!["other.csv".to_string()]);
    }

    #[test]
    fn an_interrupted_copy_into_a_directory_removes_only_new_files() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("year=2020")).expect("mkdir");
        std::fs::write(out.join("year=2020/old.parquet"), "old").expect("write");
        let copy = CopyOutput::before(&out.to_string_lossy()).expect("local");
        std::fs::write(out.join("year=2020/new.parquet#1"), "partial").expect("write");
        std::fs::write(out.join("new.parquet"), "partial").expect("write");
        copy.remove_partial();
        assert_eq!(
            list_files(&out),
            HashSet::from([out.join("year=2020/old.parquet")])
        );
        assert!(CopyOutput::before("s3://bucket/x.csv").is_none());
    }

    #[tokio::test]
    async fn a_guard_removes_the_output_unless_finished() {
        let state = datafusion::prelude::SessionContext::new().state();
        let dir = tempfile::tempdir().expect("temporary directory");
        let target = dir.path().join("x.csv");
        let guard = CopyGuard::new(CopyOutput::before(&target.to_string_lossy()));
        std::fs::write(&target, "partial").expect("write");
        drop(guard);
        assert!(!target.exists());
        let guard = CopyGuard::new(CopyOutput::before(&target.to_string_lossy()));
        std::fs::write(&target, "whole").expect("write");
        std::fs::write(manifest_path(&target), "stale").expect("write");
        guard.finish(&state).await.expect("finish");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "whole");
        // A COPY that read no release leaves no card beside its output.
        assert!(!manifest_path(&target).exists());
    }
}
