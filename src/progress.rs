//! Long work: reporting how far it is, and stopping it when nobody waits for its result.
//!
//! A release runs on a blocking thread, which dropping the query's future does not stop.
//! The engine hands the method a [`Progress`] whose [`Cancel`] flag is raised by a
//! [`CancelOnDrop`] guard living in the query's future: when the query is dropped (Ctrl-C in
//! `dfanon`, a client hanging up, a timeout in an embedding service), the method's long
//! loops (lattice sweeps, search steps) return at their next [`Progress::report`] or
//! [`Progress::check`]. Released rows are produced as they are read, so they stop with
//! their reader.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::common::{exec_err, Result};

/// A progress callback of long work: `(phase, done, total)`.
pub type ProgressFn = Arc<dyn Fn(&str, usize, usize) + Send + Sync>;

/// What a method's long loops report to, and ask whether to go on.
#[derive(Clone, Default)]
pub struct Progress {
    phase: String,
    callback: Option<ProgressFn>,
    cancel: Cancel,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("phase", &self.phase)
            .field("cancel", &self.cancel)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// Reports to `callback` under the name `phase`, stops when `cancel` is raised.
    pub fn new(phase: impl Into<String>, callback: Option<ProgressFn>, cancel: Cancel) -> Self {
        Self {
            phase: phase.into(),
            callback,
            cancel,
        }
    }

    /// Reports nothing and is never cancelled (tests, tools).
    pub fn silent() -> Self {
        Self::default()
    }

    /// Reports `done` of `total` steps; an error once the work is cancelled.
    pub fn report(&self, done: usize, total: usize) -> Result<()> {
        self.cancel.check()?;
        if let Some(callback) = &self.callback {
            callback(&self.phase, done, total);
        }
        Ok(())
    }

    /// An error once the work is cancelled (for loops that report nothing).
    pub fn check(&self) -> Result<()> {
        self.cancel.check()
    }
}

/// A cancellation flag shared between a query and the work it started.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
}

impl Cancel {
    /// A flag that is not raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether the flag is raised.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// An error once the flag is raised: long loops call this and return with `?`.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            return exec_err!(
                "anonymize(): cancelled: the query that asked for this release was stopped"
            );
        }
        Ok(())
    }

    /// A guard that raises the flag when it is dropped.
    pub fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// Raises its [`Cancel`] flag when dropped (see [`Cancel::on_drop`]).
#[derive(Debug)]
pub struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reports_until_cancelled() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let callback: ProgressFn = Arc::new(move |phase: &str, done: usize, total: usize| {
            log.lock().unwrap().push(format!("{phase} {done}/{total}"));
        });
        let cancel = Cancel::new();
        let progress = Progress::new("kanon", Some(callback), cancel.clone());
        progress.report(1, 4).unwrap();
        cancel.cancel();
        assert!(progress.report(2, 4).is_err());
        assert!(progress.check().is_err());
        assert_eq!(*seen.lock().unwrap(), vec!["kanon 1/4".to_string()]);
        assert!(Progress::silent().report(1, 1).is_ok());
    }

    #[test]
    fn guard_raises_the_flag_when_dropped() {
        let cancel = Cancel::new();
        assert!(cancel.check().is_ok());
        let guard = cancel.on_drop();
        assert!(!cancel.is_cancelled());
        drop(guard);
        let err = cancel.check().unwrap_err().to_string();
        assert!(err.contains("cancelled"), "{err}");
    }
}
