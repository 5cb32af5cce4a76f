//! The ledger file behind `SET anonymize.ledger_path = '...'`.
//!
//! Format: a JSON document
//!
//! ```json
//! {"format": "datafusion-anonymize privacy ledger", "version": 1,
//!  "accounts": [{"table": "datafusion.public.nps", "releases": 2,
//!                "epsilon_spent": 1.5, "delta_spent": 0.0}]}
//! ```
//!
//! * **Missing file**: an empty ledger; the file is created by the first charge.
//! * **Anything else that does not parse exactly** (empty file, other format or version,
//!   unknown fields, duplicate, empty or not lower-case table names, negative, NaN or infinite amounts):
//!   an error naming the file. A corrupt ledger is never reset or ignored, because that
//!   would silently restore spent budget; a person has to repair or remove it.
//! * **Updates** ([`update`]) hold an exclusive lock on `<file>.lock` (an advisory
//!   operating-system lock, so concurrent sessions and processes are serialized), read the
//!   file, apply the change, write `<file>.tmp` in the same directory, flush it to disk and
//!   rename it over the file. A crash leaves either the old or the new ledger, never a
//!   partial one.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use datafusion::common::{exec_err, Result};
use serde::{Deserialize, Serialize};

use super::account::{Account, Accounts};

/// Value of the `format` field.
pub const FORMAT: &str = "datafusion-anonymize privacy ledger";
/// Value of the `version` field.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerFile {
    format: String,
    version: u32,
    accounts: Vec<AccountRecord>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountRecord {
    table: String,
    releases: u64,
    epsilon_spent: f64,
    delta_spent: f64,
}

fn corrupt<T>(path: &Path, why: impl std::fmt::Display) -> Result<T> {
    exec_err!(
        "privacy ledger file '{}' is corrupt: {why}. Refusing to use it: a damaged ledger is \
         never reset automatically; repair the file or remove it deliberately",
        path.display()
    )
}

/// Parses ledger text (see the module documentation for what is rejected).
pub fn parse(path: &Path, text: &str) -> Result<Accounts> {
    let file: LedgerFile = match serde_json::from_str(text) {
        Ok(f) => f,
        Err(e) => return corrupt(path, e),
    };
    if file.format != FORMAT {
        return corrupt(
            path,
            format!("format is '{}', expected '{FORMAT}'", file.format),
        );
    }
    if file.version != VERSION {
        return corrupt(
            path,
            format!(
                "version {} is not supported (expected {VERSION})",
                file.version
            ),
        );
    }
    let mut accounts = BTreeMap::new();
    for record in file.accounts {
        if record.table.is_empty() {
            return corrupt(path, "an account has an empty table name");
        }
        for (name, value) in [
            ("epsilon_spent", record.epsilon_spent),
            ("delta_spent", record.delta_spent),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return corrupt(
                    path,
                    format!("table '{}' has {name} = {value}", record.table),
                );
            }
        }
        // Keys are written lower-cased (`ledger::table_key`): another spelling would be an
        // account no release ever charges, so the same table could spend again.
        if record.table.to_lowercase() != record.table {
            return corrupt(
                path,
                format!(
                    "table '{}' is not a key this program writes (keys are lower-case, e.g. '{}')",
                    record.table,
                    record.table.to_lowercase()
                ),
            );
        }
        let account = Account {
            releases: record.releases,
            epsilon_spent: record.epsilon_spent,
            delta_spent: record.delta_spent,
        };
        if accounts.insert(record.table.clone(), account).is_some() {
            return corrupt(path, format!("table '{}' is listed twice", record.table));
        }
    }
    Ok(accounts)
}

/// Renders accounts as ledger text.
pub fn render(accounts: &Accounts) -> Result<String> {
    let file = LedgerFile {
        format: FORMAT.to_string(),
        version: VERSION,
        accounts: accounts
            .iter()
            .map(|(table, a)| AccountRecord {
                table: table.clone(),
                releases: a.releases,
                epsilon_spent: a.epsilon_spent,
                delta_spent: a.delta_spent,
            })
            .collect(),
    };
    match serde_json::to_string_pretty(&file) {
        Ok(mut text) => {
            text.push('\n');
            Ok(text)
        }
        Err(e) => exec_err!("cannot encode the privacy ledger: {e}"),
    }
}

/// The real path of a ledger file: symbolic links resolved (also a link to a file that does
/// not exist yet), so that every name of one file shares one lock and one rename target.
/// The directory must exist.
pub fn real_path(path: &Path) -> Result<PathBuf> {
    let mut current = path.to_path_buf();
    // Follow links by hand while the target does not exist (canonicalize needs it to).
    for _ in 0..40 {
        if let Ok(real) = std::fs::canonicalize(&current) {
            return Ok(real);
        }
        match std::fs::read_link(&current) {
            Ok(target) => {
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Err(_) => {
                let Some(name) = current.file_name() else {
                    return exec_err!(
                        "privacy ledger path '{}' does not name a file",
                        path.display()
                    );
                };
                let dir = match current.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                return match std::fs::canonicalize(&dir) {
                    Ok(real_dir) => Ok(real_dir.join(name)),
                    Err(e) => exec_err!(
                        "cannot use privacy ledger file '{}': its directory '{}' is not accessible ({e})",
                        path.display(),
                        dir.display()
                    ),
                };
            }
        }
    }
    exec_err!(
        "privacy ledger path '{}' has too many levels of symbolic links",
        path.display()
    )
}

/// The largest ledger file read (about half a million accounts): a larger file is not a
/// ledger of ours, and reading it would be unbounded work.
const MAX_LEDGER_BYTES: u64 = 64 << 20;

/// Reads the ledger file (symbolic links resolved); a missing file is an empty ledger.
/// Anything but a regular file of at most [`MAX_LEDGER_BYTES`] (a device, a FIFO, a
/// folder) is refused before it is opened.
pub fn load(path: &Path) -> Result<Accounts> {
    let path = &real_path(path)?;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Accounts::new()),
        Err(e) => return exec_err!("cannot read privacy ledger file '{}': {e}", path.display()),
        Ok(meta) if !meta.is_file() => {
            return exec_err!(
                "privacy ledger path '{}' is not a regular file",
                path.display()
            )
        }
        Ok(meta) if meta.len() > MAX_LEDGER_BYTES => {
            return exec_err!(
                "privacy ledger file '{}' is {} bytes, more than a ledger's {MAX_LEDGER_BYTES}: not a ledger",
                path.display(),
                meta.len()
            )
        }
        Ok(_) => {}
    }
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|file| {
        std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_LEDGER_BYTES), &mut text)
    });
    match read {
        Ok(_) => parse(path, &text),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Accounts::new()),
        Err(e) => exec_err!("cannot read privacy ledger file '{}': {e}", path.display()),
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Writes `text` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over `path`.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = sibling(path, ".tmp");
    {
        let mut file = File::create(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, path)?;
    // Persist the rename itself where the platform allows opening a directory.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Applies `change` to the ledger file under an exclusive lock and writes the result back
/// atomically. When `change` fails, the file is left untouched and its error returned.
pub fn update(path: &Path, change: impl FnOnce(&mut Accounts) -> Result<()>) -> Result<()> {
    let path = &real_path(path)?;
    // Before anything is created beside it: an existing file must be a regular file that
    // reads as a ledger (a typo like `--ledger /etc/passwd` leaves no lock file behind).
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return exec_err!(
                "privacy ledger path '{}' is not a regular file",
                path.display()
            )
        }
        Ok(_) => {
            load(path)?;
        }
        Err(_) => {}
    }
    let lock_path = sibling(path, ".lock");
    let lock = match OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
    {
        Ok(f) => f,
        Err(e) => {
            return exec_err!(
                "cannot open privacy ledger lock file '{}': {e}",
                lock_path.display()
            )
        }
    };
    if let Err(e) = lock.lock() {
        return exec_err!(
            "cannot lock privacy ledger lock file '{}': {e}",
            lock_path.display()
        );
    }
    let mut accounts = load(path)?;
    change(&mut accounts)?;
    let text = render(&accounts)?;
    if let Err(e) = write_atomically(path, &text) {
        return exec_err!("cannot write privacy ledger file '{}': {e}", path.display());
    }
    // Dropping `lock` releases the lock.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts() -> Accounts {
        let mut a = Accounts::new();
        a.insert(
            "datafusion.public.nps".into(),
            Account {
                releases: 2,
                epsilon_spent: 0.1 + 0.2,
                delta_spent: 1e-9,
            },
        );
        a.insert(
            "x.y.\"odd\" name\n".into(),
            Account {
                releases: 1,
                epsilon_spent: 1.0,
                delta_spent: 0.0,
            },
        );
        a
    }

    #[test]
    fn round_trips_exactly() {
        let a = accounts();
        let text = render(&a).unwrap();
        assert_eq!(parse(Path::new("l"), &text).unwrap(), a);
    }

    #[test]
    fn corrupt_files_are_errors() {
        let p = Path::new("ledger.json");
        let good = render(&accounts()).unwrap();
        let cases = [
            ("", "EOF"),
            ("{", "EOF"),
            (&good[..good.len() / 2], "EOF"),
            (
                r#"{"format":"other","version":1,"accounts":[]}"#,
                "format is 'other'",
            ),
            (
                &format!(r#"{{"format":"{FORMAT}","version":2,"accounts":[]}}"#),
                "version 2 is not supported",
            ),
            (
                &format!(r#"{{"format":"{FORMAT}","version":1,"accounts":[],"x":1}}"#),
                "unknown field",
            ),
            (
                &format!(
                    r#"{{"format":"{FORMAT}","version":1,"accounts":[{{"table":"t","releases":1,"epsilon_spent":-1,"delta_spent":0}}]}}"#
                ),
                "table 't' has epsilon_spent = -1",
            ),
            (
                &format!(
                    r#"{{"format":"{FORMAT}","version":1,"accounts":[{{"table":"t","releases":1,"epsilon_spent":1,"delta_spent":0}},{{"table":"t","releases":1,"epsilon_spent":1,"delta_spent":0}}]}}"#
                ),
                "listed twice",
            ),
            (
                &format!(
                    r#"{{"format":"{FORMAT}","version":1,"accounts":[{{"table":"","releases":1,"epsilon_spent":1,"delta_spent":0}}]}}"#
                ),
                "empty table name",
            ),
            (
                &format!(
                    r#"{{"format":"{FORMAT}","version":1,"accounts":[{{"table":"DATAFUSION.PUBLIC.T","releases":1,"epsilon_spent":1,"delta_spent":0}}]}}"#
                ),
                "table 'DATAFUSION.PUBLIC.T' is not a key this program writes (keys are lower-case, e.g. 'datafusion.public.t')",
            ),
            (
                &format!(
                    r#"{{"format":"{FORMAT}","version":1,"accounts":[{{"table":"t","releases":1,"epsilon_spent":1}}]}}"#
                ),
                "missing field",
            ),
        ];
        for (text, why) in cases {
            let err = parse(p, text).unwrap_err().to_string();
            assert!(
                err.contains("privacy ledger file 'ledger.json' is corrupt") && err.contains(why),
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn update_creates_writes_and_keeps_failures_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.json");
        assert!(load(&path).unwrap().is_empty());
        update(&path, |a| {
            a.extend(accounts());
            Ok(())
        })
        .unwrap();
        assert_eq!(load(&path).unwrap(), accounts());
        assert!(!sibling(&path, ".tmp").exists());
        // A failing change leaves the file as it was.
        let before = std::fs::read_to_string(&path).unwrap();
        let err = update(&path, |a| {
            a.clear();
            datafusion::common::plan_err!("refused")
        })
        .unwrap_err();
        assert!(err.to_string().contains("refused"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        // A corrupt file is an error for reads and updates, and is not overwritten.
        std::fs::write(&path, "not json").unwrap();
        assert!(load(&path).is_err());
        assert!(update(&path, |_| Ok(())).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
    }

    #[test]
    fn concurrent_updates_are_serialized() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.json");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10 {
                        update(&path, |a| {
                            a.entry("t".into()).or_default().releases += 1;
                            Ok(())
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(load(&path).unwrap()["t"].releases, 40);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_is_not_a_ledger_is_refused_and_nothing_is_created_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("passwd");
        std::fs::write(&other, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
        let err = update(&other, |_| Ok(())).unwrap_err().strip_backtrace();
        assert!(err.contains("passwd"), "{err}");
        assert!(!sibling(&other, ".lock").exists());
        let err = update(dir.path(), |_| Ok(()))
            .unwrap_err()
            .strip_backtrace();
        assert!(err.contains("is not a regular file"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&other).unwrap(),
            "root:x:0:0:root:/root:/bin/bash\n"
        );
    }

    #[test]
    fn devices_fifos_and_huge_files_are_refused_before_they_are_read() {
        // /dev/full would give bytes without end, a FIFO would block the read.
        let err = load(Path::new("/dev/full")).unwrap_err().strip_backtrace();
        assert!(err.contains("'/dev/full' is not a regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let err = load(&fifo).unwrap_err().strip_backtrace();
        assert!(err.contains("is not a regular file"), "{err}");
        let huge = dir.path().join("huge.json");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_LEDGER_BYTES + 1)
            .unwrap();
        let err = load(&huge).unwrap_err().strip_backtrace();
        assert!(
            err.contains("more than a ledger's 67108864: not a ledger"),
            "{err}"
        );
        assert!(!sibling(&huge, ".lock").exists());
    }

    #[test]
    fn a_symlinked_ledger_charges_the_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        // A link to a file that does not exist yet resolves to the file it will create.
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(real_path(&link).unwrap(), real_path(&real).unwrap());
        update(&link, |a| {
            a.extend(accounts());
            Ok(())
        })
        .unwrap();
        // The link still points at the real file, which holds the charge: the rename
        // replaced the target, not the link.
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(load(&real).unwrap(), accounts());
        assert_eq!(load(&link).unwrap(), accounts());
        // One lock file, beside the real file.
        assert!(sibling(&real_path(&real).unwrap(), ".lock").exists());
        assert!(!sibling(&link, ".lock").exists());
        // A missing directory is a clear error.
        let err = load(&dir.path().join("no/such/dir/l.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not accessible"), "{err}");
    }
}
