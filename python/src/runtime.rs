//! The package's own tokio runtime, and waiting for work on it from Python.
//!
//! The host (datafusion-python) has its own tokio, compiled into its own library: our code
//! sees no runtime while the host polls it, so nothing of ours may rely on an ambient one.
//! Every piece of our work is spawned here explicitly, and the host only ever polls
//! channels and futures that need no runtime. The runtime is made on first use and lives as
//! long as the process: a runtime cannot be dropped from one of its own threads, and the
//! last release a Python user holds may be dropped from anywhere.

use std::future::Future;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

/// The runtime all of this package's work runs on.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("dfanon")
            .thread_stack_size(datafusion_anonymize::STATEMENT_STACK_BYTES)
            .enable_all()
            .build()
            // Without a runtime nothing can run at all; there is no other way to go on.
            .unwrap_or_else(|e| panic!("dfanon: cannot start its runtime: {e}"))
    })
}

/// How often a wait looks for a Python signal (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Runs `future` on our runtime and waits for it on the calling Python thread without
/// holding the GIL. Every [`SIGNAL_CHECK`] it runs Python's signal handlers: when one
/// raises (Ctrl-C raises `KeyboardInterrupt`), the future is dropped, so its work stops at
/// its next await and nothing it had not finished takes effect, and the exception is
/// returned.
pub fn wait<T: Send + 'static>(
    py: Python<'_>,
    future: impl Future<Output = T> + Send + 'static,
) -> PyResult<T> {
    let (done, result) = mpsc::sync_channel(1);
    // Waited on from the thread that runs without the GIL, hence shared: Mutex makes it Sync.
    let result = Mutex::new(result);
    let task = runtime().spawn(async move {
        let _ = done.send(future.await);
    });
    loop {
        let next = py.detach(|| match result.lock() {
            Ok(result) => result.recv_timeout(SIGNAL_CHECK),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        });
        match next {
            Ok(value) => return Ok(value),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(signal) = py.check_signals() {
                    task.abort();
                    return Err(signal);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err("dfanon: a task panicked"))
            }
        }
    }
}
