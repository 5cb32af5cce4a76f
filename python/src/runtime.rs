//! The package's own tokio runtime, and waiting for work on it from any thread.
//!
//! The host (datafusion-python) has its own tokio, compiled into its own library: our code
//! sees no runtime while the host polls it, so nothing of ours may rely on an ambient one.
//! Every piece of our work is spawned here explicitly, and the host only ever polls
//! channels and futures that need no runtime. The runtime is made on first use and lives as
//! long as the process: a runtime cannot be dropped from one of its own threads, and the
//! last release a Python user holds may be dropped from anywhere.

use std::future::Future;
use std::sync::OnceLock;

use datafusion::common::{DataFusionError, Result};
use tokio::runtime::Runtime;

/// The runtime all of this package's work runs on.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("dfanon")
            .enable_all()
            .build()
            // Without a runtime nothing can run at all; there is no other way to go on.
            .unwrap_or_else(|e| panic!("dfanon: cannot start its runtime: {e}"))
    })
}

/// Runs `future` on our runtime and blocks the calling thread until it ends. Callable from
/// any thread, ours included (the wait does not enter a runtime).
pub fn wait<F>(future: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = runtime().spawn(future);
    futures::executor::block_on(handle).map_err(|e| {
        if e.is_panic() {
            DataFusionError::Internal("dfanon: a task panicked".to_string())
        } else {
            DataFusionError::Execution("dfanon: the task was cancelled".to_string())
        }
    })
}
