//! Releases that outlive the process. With a ledger file, every release drawn is recorded
//! beside it, in `<ledger>.draws`: the request, a SHA-256 fingerprint of the contents of
//! its tables (source and hierarchies), the 256-bit seed its random draws came from and a
//! SHA-256 digest of what it released. After a restart, the same request over tables with
//! the same contents is drawn again from the recorded seed, and served without a new
//! charge only if its digest is the recorded one: it is then the very release that was
//! charged, and nothing new is learnt from it. Any difference (other contents, another
//! build that draws differently) makes a fresh draw with a fresh seed and its own charge.
//!
//! The file holds the seeds of past releases: with it and the data, anyone can compute the
//! releases' noise. It is written with the owner's permissions only (0600), and belongs
//! with the ledger and the data, never with a release.
//!
//! Records are written under a temporary name and renamed into place. Two processes
//! recording into one file at once may lose one record: that release is then drawn and
//! charged again after a restart (never served twice for one charge).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SessionState;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::fingerprint::{fingerprint, hash_batches, hex};
use crate::budget;
use crate::distributed::wire;
use crate::engine::{self, AnonymizeRequest, ReleaseOutput};
use crate::progress::ProgressFn;
use crate::release::ReleaseRowLimit;
use crate::tables::shipped::Shipped;

/// The largest draws file read back (a file larger than this is refused as not ours).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Recording is one at a time in a process (each record reads, changes and replaces the
/// whole file).
static RECORDING: Mutex<()> = Mutex::new(());

/// Where a request's draws are kept, under which key, and the fingerprint of its tables
/// as they are now.
pub(super) struct KeptDraw {
    file: PathBuf,
    key: String,
    tables: String,
}

impl KeptDraw {
    /// The kept draws of `request` in `state`'s session: `None` without a ledger file, and
    /// for requests never kept ([`key`]). Reads every table of the request once.
    pub(super) async fn of(
        request: &AnonymizeRequest,
        state: &SessionState,
    ) -> Result<Option<Self>> {
        let Some(ledger) = budget::config::options(state.config_options()).ledger_path else {
            return Ok(None);
        };
        let Some(key) = key(request) else {
            return Ok(None);
        };
        let mut tables = vec![&request.source];
        tables.extend(request.qi.iter().filter_map(|q| q.hierarchy.as_ref()));
        tables.extend(
            request
                .sensitive
                .iter()
                .filter_map(|s| s.hierarchy.as_ref().map(|(_, h)| h)),
        );
        let tables = fingerprint(&tables, state).await?;
        Ok(Some(Self {
            file: file(&ledger),
            key,
            tables,
        }))
    }

    /// The release drawn again from the seed kept for this request over these tables, if
    /// there is one and it is the release that was kept (its digest); else `None`, and the
    /// caller draws afresh.
    pub(super) async fn replay(
        &self,
        request: &AnonymizeRequest,
        state: &SessionState,
        progress: &Option<ProgressFn>,
        limit: ReleaseRowLimit,
    ) -> Option<ReleaseOutput> {
        let draws = load(&self.file).ok()?;
        let draw = draws
            .get(&self.key)?
            .iter()
            .find(|d| d.tables == self.tables)?;
        let seed = seed_of(draw)?;
        let output = engine::compute_release(request, state, progress.clone(), limit, Some(seed))
            .await
            .ok()?;
        (digest(&output).ok()? == draw.release).then_some(output)
    }

    /// Keeps the draw of `output` from `seed`; if it cannot be kept, the owner's warnings
    /// of the release say so (it stands, and is charged; a later process draws it afresh).
    pub(super) fn record(&self, seed: &[u8; 32], output: &mut ReleaseOutput) {
        let kept = digest(output).and_then(|release| {
            let _one_at_a_time = RECORDING.lock().unwrap_or_else(|p| p.into_inner());
            record(
                &self.file,
                &self.key,
                Draw {
                    tables: self.tables.clone(),
                    seed: seed_hex(seed),
                    release,
                },
            )
        });
        if let Err(e) = kept {
            output.warnings.push((
                "kept draws".to_string(),
                format!(
                    "this release is not kept beside the ledger file, so after a restart the same request is drawn and charged again: {}",
                    e.strip_backtrace()
                ),
            ));
        }
    }
}

/// One release drawn: what a later process needs to draw it again and check it is the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Draw {
    /// SHA-256 of the contents of the request's tables, hex.
    pub tables: String,
    /// The 256-bit seed of the release's random draws, hex.
    pub seed: String,
    /// SHA-256 of what the release published (rows, metadata, catalog, means), hex.
    pub release: String,
}

/// The file of draws kept beside the ledger file `ledger`: `<ledger>.draws`.
pub(super) fn file(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".draws");
    PathBuf::from(name)
}

/// The key a request's draws are kept under: who asks (owner or public), the canonical
/// arguments and the ledger account. `None` for requests never kept: seeded ones (not
/// private) and those with a pseudonym key (which a later process may hold differently).
pub(super) fn key(request: &AnonymizeRequest) -> Option<String> {
    if request.seed.is_some() || request.pseudonym_key.is_some() {
        return None;
    }
    Some(format!(
        "{}|{}|{}",
        if request.public { "public" } else { "owner" },
        request.canonical_args,
        request.account()
    ))
}

fn io_error(what: &str, path: &Path, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!(
        "the draws kept beside the ledger: cannot {what} '{}': {e}",
        path.display()
    ))
}

/// The draws in `file` by request key (none when the file does not exist).
pub(super) fn load(file: &Path) -> Result<BTreeMap<String, Vec<Draw>>> {
    match std::fs::metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(io_error("read", file, e)),
        Ok(meta) if !meta.is_file() || meta.len() > MAX_FILE_BYTES => {
            return Err(io_error(
                "read",
                file,
                format!("not a file of draws (a regular file of at most {MAX_FILE_BYTES} bytes)"),
            ))
        }
        Ok(_) => {}
    }
    let text = std::fs::read_to_string(file).map_err(|e| io_error("read", file, e))?;
    serde_json::from_str(&text).map_err(|e| io_error("read", file, e))
}

/// Adds `draw` under `key` to `file` (replacing a draw of that key over the same tables).
pub(super) fn record(file: &Path, key: &str, draw: Draw) -> Result<()> {
    let mut draws = load(file)?;
    let kept = draws.entry(key.to_string()).or_default();
    kept.retain(|d| d.tables != draw.tables);
    kept.push(draw);
    let text = serde_json::to_string_pretty(&draws).map_err(|e| io_error("write", file, e))?;
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = (|| -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut out = options.open(&tmp)?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        std::fs::rename(&tmp, file)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error("write", file, e)
    })
}

/// The digest of what `output` publishes: its rows (as the compact parts they expand
/// from), metadata, counterfeit catalog and interval means.
pub(super) fn digest(output: &ReleaseOutput) -> Result<String> {
    let mut hasher = Sha256::new();
    let mut rows = Vec::new();
    wire::encode(&Shipped::Release(output.rows.clone()), &mut rows)?;
    hasher.update((rows.len() as u64).to_le_bytes());
    hasher.update(&rows);
    for (key, value) in &output.metadata {
        for text in [key, value] {
            hasher.update((text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        }
    }
    match &output.catalog {
        Some(catalog) => {
            let batches: Vec<RecordBatch> = catalog.batches().collect::<Result<_>>()?;
            hash_batches(&mut hasher, &batches)?;
        }
        None => hasher.update(b"no catalog"),
    }
    hasher.update(format!("{:?}", output.interval_means).as_bytes());
    Ok(hex(&hasher.finalize()))
}

/// A fresh 256-bit seed from the operating system.
pub(super) fn fresh_seed() -> Result<[u8; 32]> {
    crate::mechanism::rng::try_seed_from_os().map_err(|e| {
        DataFusionError::External(
            format!("no secure random generator: the operating system gave no entropy ({e})")
                .into(),
        )
    })
}

/// `seed` as hex, and back.
pub(super) fn seed_hex(seed: &[u8; 32]) -> String {
    hex(seed)
}

/// The seed a [`Draw`] recorded (`None` if it is not 64 hex digits).
pub(super) fn seed_of(draw: &Draw) -> Option<[u8; 32]> {
    let text = draw.seed.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut seed = [0u8; 32];
    for (i, pair) in text.chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).ok()?;
        seed[i] = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_go_to_hex_and_back() {
        let mut seed = [0u8; 32];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = (i * 37 % 256) as u8;
        }
        let draw = Draw {
            tables: String::new(),
            seed: seed_hex(&seed),
            release: String::new(),
        };
        assert_eq!(seed_of(&draw), Some(seed));
        for bad in ["", "zz", &"0".repeat(63), &"g".repeat(64)] {
            let draw = Draw {
                seed: bad.to_string(),
                ..draw.clone()
            };
            assert_eq!(seed_of(&draw), None, "{bad}");
        }
    }

    #[test]
    fn a_record_replaces_the_draw_over_the_same_tables_and_keeps_others() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = file(&dir.path().join("ledger.json"));
        assert!(load(&file).expect("no file is no draws").is_empty());
        let draw = |tables: &str, seed: &str| Draw {
            tables: tables.into(),
            seed: seed.into(),
            release: "r".into(),
        };
        record(&file, "k", draw("t1", "s1")).expect("recorded");
        record(&file, "k", draw("t2", "s2")).expect("recorded");
        record(&file, "k", draw("t1", "s3")).expect("recorded");
        record(&file, "other", draw("t1", "s4")).expect("recorded");
        let draws = load(&file).expect("read back");
        assert_eq!(draws["k"], vec![draw("t2", "s2"), draw("t1", "s3")]);
        assert_eq!(draws["other"], vec![draw("t1", "s4")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file)
                .expect("written")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_file_that_is_not_ours_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = file(&dir.path().join("ledger.json"));
        std::fs::write(&file, "not json").expect("written");
        let err = load(&file).expect_err("refused").to_string();
        assert!(err.contains("cannot read"), "{err}");
        std::fs::create_dir(dir.path().join("d.draws")).expect("made");
        let err = load(&dir.path().join("d.draws"))
            .expect_err("refused")
            .to_string();
        assert!(err.contains("not a file of draws"), "{err}");
    }
}
