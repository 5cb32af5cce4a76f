//! The audit trail: every login and every statement over both protocols, one JSON line
//! each, appended to the file the configuration names (`audit = "audit.jsonl"`), rotated
//! by size, and read back by owners through `server_audit()` (the `audit_table` module).
//!
//! A line is written with one `write` call on a file opened for appending, before the
//! statement's first row (or its end) reaches the client: a process killed at any moment
//! leaves whole lines behind. When a line cannot be written the login or statement is
//! refused: nothing is served that the trail does not hold.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use datafusion_anonymize::ReleaseEvent;
use futures::Stream;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::config::Role;

/// Where the trail goes and how it is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSettings {
    /// The file lines are appended to.
    pub path: PathBuf,
    /// Past this size the file is renamed `<path>.1` (older ones `.2`, …) and a new one
    /// begun.
    pub max_bytes: u64,
    /// How many renamed files are kept (the oldest beyond them is deleted).
    pub keep: usize,
    /// Whether public users' statements are kept as their SHA-256 rather than their text.
    pub hash_public_text: bool,
}

/// The audit trail of a server.
#[derive(Debug)]
pub struct Audit {
    settings: AuditSettings,
    file: Mutex<File>,
}

/// The protocol a login or statement came by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Postgres,
    FlightSql,
    /// The studio's pages: its logins, and the statements its steps run as the owner.
    Studio,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Postgres => "postgres",
            Protocol::FlightSql => "flight_sql",
            Protocol::Studio => "studio",
        }
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Owner => "owner",
        Role::Public => "public",
    }
}

/// The releases a session's calls were served since they were last taken: the session's
/// [`datafusion_anonymize::RegisterOptions::on_release`] adds to it, each audited
/// statement takes what its own calls added (a connection runs one statement at a time).
#[derive(Debug, Clone, Default)]
pub struct ReleasesHeard(Arc<Mutex<Vec<ReleaseEvent>>>);

impl ReleasesHeard {
    /// The listener to register the session with.
    pub fn listener(&self) -> datafusion_anonymize::ReleaseEventFn {
        let heard = self.0.clone();
        Arc::new(move |event: &ReleaseEvent| {
            if let Ok(mut events) = heard.lock() {
                events.push(event.clone());
            }
        })
    }

    /// What was heard since the last call.
    pub fn take(&self) -> Vec<ReleaseEvent> {
        self.0
            .lock()
            .map(|mut events| std::mem::take(&mut *events))
            .unwrap_or_default()
    }
}

/// Who sent a statement, and how.
#[derive(Debug, Clone)]
pub struct StatementBy {
    pub protocol: Protocol,
    pub user: String,
    pub role: Role,
}

/// Who sends a session's statements, and the releases its calls were served.
#[derive(Debug, Clone)]
pub struct Auditing {
    pub by: StatementBy,
    pub heard: ReleasesHeard,
}

impl Auditing {
    pub fn new(protocol: Protocol, user: String, role: Role, heard: ReleasesHeard) -> Self {
        Self {
            by: StatementBy {
                protocol,
                user,
                role,
            },
            heard,
        }
    }

    /// What writes the line of statement `text` in `audit` once its outcome is known, with
    /// the releases heard by then: for [`Audited`] streams.
    pub fn finish(&self, audit: &Arc<Audit>, text: &str) -> Finish {
        let (audit, by, heard, text) = (
            audit.clone(),
            self.by.clone(),
            self.heard.clone(),
            text.to_string(),
        );
        Box::new(move |outcome: Result<(), String>| {
            let outcome = outcome.as_ref().map(|_| ()).map_err(String::as_str);
            audit.statement(&by, &text, outcome, &heard.take())
        })
    }
}

/// A session's trail and who its statements come from, kept in the session's
/// configuration (for sessions whose statements are run inside the server, the studio's).
#[derive(Debug)]
pub struct SessionAudit {
    pub audit: Arc<Audit>,
    pub auditing: Auditing,
}

impl SessionAudit {
    /// Records statement `sql` of the session with its outcome and the releases its calls
    /// were served.
    pub fn statement(&self, sql: &str, outcome: Result<(), &str>) -> Result<(), String> {
        let releases = self.auditing.heard.take();
        self.audit
            .statement(&self.auditing.by, sql, outcome, &releases)
    }
}

impl Audit {
    /// Opens (creates) the trail's file for appending.
    pub fn open(settings: AuditSettings) -> Result<Self, String> {
        let file = open_append(&settings.path)?;
        Ok(Self {
            settings,
            file: Mutex::new(file),
        })
    }

    /// The trail's file.
    pub fn path(&self) -> &Path {
        &self.settings.path
    }

    /// The files that hold the trail, oldest first: the renamed ones, then the current one.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = (1..=self.settings.keep)
            .rev()
            .map(|n| rotated(&self.settings.path, n))
            .filter(|p| p.exists())
            .collect();
        files.push(self.settings.path.clone());
        files
    }

    /// Records a login: `Ok(role)` when it succeeded, else why it was refused.
    pub fn login(
        &self,
        protocol: Protocol,
        user: &str,
        address: &str,
        outcome: Result<Role, &str>,
    ) -> Result<(), String> {
        let mut record = Map::new();
        record.insert("event".into(), json!("login"));
        record.insert("protocol".into(), json!(protocol.name()));
        record.insert("user".into(), json!(user));
        record.insert("address".into(), json!(address));
        match outcome {
            Ok(role) => {
                record.insert("role".into(), json!(role_name(role)));
                record.insert("outcome".into(), json!("ok"));
            }
            Err(reason) => {
                record.insert("outcome".into(), json!("refused"));
                record.insert("error".into(), json!(reason));
            }
        }
        self.append(record)
    }

    /// Records a statement of `by` with its text, outcome (`Err` with the message sent) and
    /// the releases its calls were served.
    pub fn statement(
        &self,
        by: &StatementBy,
        text: &str,
        outcome: Result<(), &str>,
        releases: &[ReleaseEvent],
    ) -> Result<(), String> {
        let mut record = Map::new();
        record.insert("event".into(), json!("statement"));
        record.insert("protocol".into(), json!(by.protocol.name()));
        record.insert("user".into(), json!(by.user));
        record.insert("role".into(), json!(role_name(by.role)));
        if by.role == Role::Public && self.settings.hash_public_text {
            let digest = Sha256::digest(text.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            record.insert("text_sha256".into(), json!(hex));
        } else {
            record.insert("text".into(), json!(text));
        }
        match outcome {
            Ok(()) => record.insert("outcome".into(), json!("ok")),
            Err(message) => {
                record.insert("error".into(), json!(message));
                record.insert("outcome".into(), json!("error"))
            }
        };
        let epsilon: f64 = releases.iter().map(|r| r.epsilon).sum();
        let delta: f64 = releases.iter().map(|r| r.delta).sum();
        record.insert("epsilon".into(), json!(epsilon));
        record.insert("delta".into(), json!(delta));
        if let Some(left) = releases.iter().rev().find_map(|r| r.quota_left) {
            record.insert("quota_left".into(), json!(left));
        }
        let listed: Vec<Value> = releases
            .iter()
            .map(|r| {
                json!({
                    "source": r.account,
                    "method": r.method,
                    "drawn": r.drawn,
                    "seeded": r.seeded,
                    "epsilon": r.epsilon,
                    "delta": r.delta,
                })
            })
            .collect();
        record.insert("releases".into(), Value::Array(listed));
        self.append(record)
    }

    /// Appends one line (the time first), rotating the file first when the line would
    /// take it past its size.
    fn append(&self, record: Map<String, Value>) -> Result<(), String> {
        let mut line = Map::new();
        line.insert("time".into(), json!(now()));
        line.extend(record);
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        let mut file = match self.file.lock() {
            Ok(file) => file,
            Err(poisoned) => poisoned.into_inner(),
        };
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if size > 0 && size + text.len() as u64 > self.settings.max_bytes {
            *file = self.rotate()?;
        }
        file.write_all(text.as_bytes()).map_err(|e| {
            format!(
                "the audit trail {} cannot be written: {e}",
                self.settings.path.display()
            )
        })
    }

    /// Renames the current file `<path>.1` (and each older one a number up, the oldest
    /// beyond `keep` deleted) and opens a new one.
    fn rotate(&self) -> Result<File, String> {
        let path = &self.settings.path;
        let keep = self.settings.keep.max(1);
        let _ = std::fs::remove_file(rotated(path, keep));
        for n in (1..keep).rev() {
            let from = rotated(path, n);
            if from.exists() {
                let _ = std::fs::rename(&from, rotated(path, n + 1));
            }
        }
        std::fs::rename(path, rotated(path, 1))
            .map_err(|e| format!("the audit trail {} cannot be rotated: {e}", path.display()))?;
        open_append(path)
    }
}

fn open_append(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open the audit trail {}: {e}", path.display()))
}

/// `<path>.<n>`.
fn rotated(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The time now, UTC, to the millisecond: `2026-11-30T04:13:21.123Z`.
fn now() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    match datafusion::arrow::temporal_conversions::timestamp_ms_to_datetime(ms) {
        Some(time) => time.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => ms.to_string(),
    }
}

/// What an audited stream does when its first item comes, or when it ends or is dropped
/// before one: writes the statement's line (`Err` with the error when the statement
/// failed); an `Err` back stops the stream with that message.
pub type Finish = Box<dyn FnOnce(Result<(), String>) -> Result<(), String> + Send>;

/// A statement's result stream whose line is written before its first item reaches the
/// client (`finish` once, with the outcome so far).
pub struct Audited<S> {
    inner: S,
    finish: Option<Finish>,
}

impl<S> Audited<S> {
    pub fn new(inner: S, finish: Finish) -> Self {
        Self {
            inner,
            finish: Some(finish),
        }
    }
}

/// An error of an item type: how an audited stream reports what it met and what the trail
/// could not write.
pub trait AuditError: Sized {
    fn message(&self) -> String;
    fn from_audit(message: String) -> Self;
}

impl<S, T, E> Stream for Audited<S>
where
    S: Stream<Item = Result<T, E>> + Unpin,
    E: AuditError,
{
    type Item = Result<T, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        let Poll::Ready(item) = polled else {
            return Poll::Pending;
        };
        let Some(finish) = self.finish.take() else {
            return Poll::Ready(item);
        };
        let outcome = match &item {
            Some(Err(e)) => Err(e.message()),
            _ => Ok(()),
        };
        match (finish(outcome), item) {
            (Err(audit), Some(Ok(_)) | None) => Poll::Ready(Some(Err(E::from_audit(audit)))),
            (_, item) => Poll::Ready(item),
        }
    }
}

impl<S> Drop for Audited<S> {
    fn drop(&mut self) {
        if let Some(finish) = self.finish.take() {
            let _ = finish(Err("the client went away before the result was read".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dir: &Path, max_bytes: u64) -> AuditSettings {
        AuditSettings {
            path: dir.join("audit.jsonl"),
            max_bytes,
            keep: 2,
            hash_public_text: true,
        }
    }

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    #[test]
    fn logins_and_statements_are_lines_and_public_text_is_hashed() {
        let dir = tempfile::tempdir().expect("a folder");
        let audit = Audit::open(settings(dir.path(), 1 << 20)).expect("opens");
        audit
            .login(Protocol::Postgres, "ann", "127.0.0.1", Ok(Role::Owner))
            .expect("written");
        audit
            .login(
                Protocol::FlightSql,
                "bob",
                "10.0.0.2",
                Err("wrong password"),
            )
            .expect("written");
        let release = ReleaseEvent {
            account: "datafusion.public.t".into(),
            method: "dp_histogram".into(),
            drawn: true,
            epsilon: 0.5,
            delta: 0.0,
            seeded: false,
            quota_left: Some(1.5),
        };
        let analyst = StatementBy {
            protocol: Protocol::Postgres,
            user: "bob".into(),
            role: Role::Public,
        };
        audit
            .statement(&analyst, "SELECT 1", Ok(()), &[release])
            .expect("written");
        let owner = StatementBy {
            role: Role::Owner,
            user: "ann".into(),
            ..analyst
        };
        audit
            .statement(&owner, "SELECT x", Err("no column x"), &[])
            .expect("written");
        let got = lines(audit.path());
        assert_eq!(got.len(), 4);
        assert_eq!(got[0]["event"], "login");
        assert_eq!(got[0]["role"], "owner");
        assert_eq!(got[1]["outcome"], "refused");
        assert_eq!(got[1]["error"], "wrong password");
        assert_eq!(got[1]["protocol"], "flight_sql");
        assert_eq!(got[2]["text"], Value::Null);
        assert_eq!(
            got[2]["text_sha256"],
            "e004ebd5b5532a4b85984a62f8ad48a81aa3460c1ca07701f386135d72cdecf5"
        );
        assert_eq!(got[2]["epsilon"], 0.5);
        assert_eq!(got[2]["quota_left"], 1.5);
        assert_eq!(got[2]["releases"][0]["source"], "datafusion.public.t");
        assert_eq!(got[2]["releases"][0]["drawn"], true);
        assert_eq!(got[3]["text"], "SELECT x");
        assert_eq!(got[3]["outcome"], "error");
        assert_eq!(got[3]["epsilon"], 0.0);
        let time = got[0]["time"].as_str().expect("a time");
        assert!(time.len() == 24 && time.ends_with('Z'), "{time}");
    }

    #[test]
    fn a_full_file_is_rotated_and_the_oldest_dropped() {
        let dir = tempfile::tempdir().expect("a folder");
        let audit = Audit::open(settings(dir.path(), 400)).expect("opens");
        for n in 0..40 {
            audit
                .login(
                    Protocol::Postgres,
                    &format!("user{n}"),
                    "::1",
                    Ok(Role::Public),
                )
                .expect("written");
        }
        let files = audit.files();
        // Two renamed files kept, then the current one; none past the size.
        assert_eq!(files.len(), 3, "{files:?}");
        let mut users = Vec::new();
        for file in &files {
            assert!(std::fs::metadata(file).expect("exists").len() <= 400);
            users.extend(lines(file).into_iter().map(|l| l["user"].clone()));
        }
        // The newest logins, in order, the last one last.
        assert_eq!(users.last(), Some(&json!("user39")));
        let numbers: Vec<u64> = users
            .iter()
            .filter_map(|u| u.as_str()?.strip_prefix("user")?.parse().ok())
            .collect();
        assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
        assert!(numbers[0] > 0, "the oldest were dropped: {numbers:?}");
    }
}
