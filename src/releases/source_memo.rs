//! Figures of a source kept across calls while its tables are unchanged. The report's
//! attacks on the source as if it were released are the same for every release of that
//! source with the same columns: a steward comparing candidates pays for them once.
//!
//! A figure is kept under the [`TableVersion`] of the tables it read and a key naming
//! everything else it depends on; a changed table (an `INSERT`, a rewritten file) gives
//! another version, so the figure is computed again. At most [`KEPT`] figures are kept,
//! the oldest dropped first.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};

use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::execution::SessionState;

use super::version::TableVersion;

/// How many figures a memo keeps (each holds its tables' arrays alive while kept).
const KEPT: usize = 4;

/// Figures of type `T`, by the tables they read and a key.
pub struct SourceMemo<T> {
    kept: Mutex<VecDeque<(TableVersion, String, Arc<T>)>>,
}

impl<T> Default for SourceMemo<T> {
    fn default() -> Self {
        Self {
            kept: Mutex::new(VecDeque::new()),
        }
    }
}

impl<T> std::fmt::Debug for SourceMemo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceMemo").finish_non_exhaustive()
    }
}

impl<T> SourceMemo<T> {
    /// The figure of `tables` (as they are now) under `key`: the kept one, or `compute`d
    /// now and kept. A failed computation is not kept.
    pub async fn get_or_compute<F, Fut>(
        &self,
        tables: &[&Arc<dyn TableProvider>],
        key: &str,
        state: &SessionState,
        compute: F,
    ) -> Result<Arc<T>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let version = TableVersion::of(tables, state).await?;
        if let Some(found) = self.find(&version, key) {
            return Ok(found);
        }
        let value = Arc::new(compute().await?);
        if let Ok(mut kept) = self.kept.lock() {
            kept.retain(|(v, k, _)| !(v == &version && k == key));
            kept.push_back((version, key.to_string(), value.clone()));
            while kept.len() > KEPT {
                kept.pop_front();
            }
        }
        Ok(value)
    }

    fn find(&self, version: &TableVersion, key: &str) -> Option<Arc<T>> {
        let kept = self.kept.lock().ok()?;
        kept.iter()
            .find(|(v, k, _)| v == version && k == key)
            .map(|(_, _, value)| value.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn a_figure_is_computed_once_per_table_version_and_key() {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t AS VALUES (1), (2)")
            .await
            .expect("made")
            .collect()
            .await
            .expect("made");
        let memo: SourceMemo<usize> = SourceMemo::default();
        let computed = AtomicUsize::new(0);
        let figure = |ctx: SessionContext, key: &'static str| {
            let memo = &memo;
            let computed = &computed;
            async move {
                let table = ctx.table_provider("t").await.expect("t");
                let state = ctx.state();
                memo.get_or_compute(&[&table], key, &state, || async {
                    Ok(computed.fetch_add(1, Ordering::SeqCst))
                })
                .await
                .expect("a figure")
            }
        };
        assert_eq!(*figure(ctx.clone(), "a").await, 0);
        assert_eq!(*figure(ctx.clone(), "a").await, 0, "kept");
        assert_eq!(*figure(ctx.clone(), "b").await, 1, "another key");
        ctx.sql("INSERT INTO t VALUES (3)")
            .await
            .expect("planned")
            .collect()
            .await
            .expect("inserted");
        assert_eq!(*figure(ctx.clone(), "a").await, 2, "the table changed");
        for key in ["c", "d", "e", "f"] {
            figure(ctx.clone(), key).await;
        }
        assert_eq!(
            *figure(ctx.clone(), "a").await,
            7,
            "dropped: the oldest of five"
        );
        assert_eq!(computed.load(Ordering::SeqCst), 8);
    }
}
