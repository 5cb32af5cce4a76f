//! The lattice sweep IPA and UPA share: every node of a full-domain lattice visited once, by
//! level sum, the nodes of one level in parallel, each node's histogram rolled up from the
//! smallest histogram kept of a predecessor (or from the base).
//!
//! A method gives the sweep two things: which nodes to skip without rolling them up (UPA's
//! h-ceiling prunes every generalization of a node over it; IPA skips none), and what to
//! compute at a node from its histogram. Results come back in lattice order and do not
//! depend on the number of threads or on which histograms were kept: a roll-up gives the
//! same histogram from any predecessor.
//!
//! Memory: a level's histograms are kept for the next level only up to
//! [`KEPT_BYTES_PER_LEVEL`] (and a quarter of a limited pool), and only while the session's memory pool grants them with room
//! left for one more histogram per thread; the others are dropped as soon as their node is
//! evaluated, and their successors roll up from another predecessor or from the base. So at
//! most two levels' kept histograms and one histogram per thread are alive at once, whatever
//! the lattice's width, and all of them are reserved in the pool: under a memory limit the
//! sweep keeps less, and fails with "Resources exhausted" only when a single node's
//! histogram per thread no longer fits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use datafusion::common::{internal_err, DataFusionError, Result};
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
};

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{roll_up_from_nearest, Lattice};
use crate::progress::Progress;

/// Bytes of one level's histograms kept to roll the next level up from.
pub const KEPT_BYTES_PER_LEVEL: usize = 256 << 20;

/// The most work one sweep may take, in node × base-entry steps: every node rolls up at most
/// the base's (class, value) entries, so `nodes × entries` bounds the sweep's work. About
/// 25 ns a step per thread here: 2·10⁹ steps is under a minute on two cores. A larger lattice
/// over as many distinct combinations is refused before the first node, not left to run
/// for many minutes (docs/BAD-INPUT.md, docs/SCALING.md).
pub const MAX_SWEEP_STEPS: u128 = 2_000_000_000;

/// What a sweep walks: the base histogram, its hierarchies and lattice, and how.
pub struct Sweep<'a> {
    /// The leaf-level (or class-size) histogram every node rolls up from.
    pub base: &'a GroupedHistogram,
    /// Hierarchies in quasi-identifier order.
    pub hierarchies: &'a [&'a Hierarchy],
    /// The lattice whose nodes are visited.
    pub lattice: &'a Lattice,
    /// Number of distinct informative values of `base` (1 for class sizes).
    pub value_domain: usize,
    /// Threads evaluating the nodes of one level (at least 1).
    pub threads: usize,
    /// Where each visited node is reported; its error stops the sweep.
    pub progress: &'a Progress,
    /// The pool the histograms alive during the sweep are reserved in.
    pub memory: &'a Arc<dyn MemoryPool>,
}

impl Sweep<'_> {
    /// Visits every node: `skip(index, results so far)` (called in lattice order within a
    /// level, before the level is evaluated; `results` holds every earlier level's) returns
    /// `Some(result)` for a node that is not rolled up; every other node gets
    /// `eval(index, histogram)`. `keep(result)` says whether a node's histogram may serve
    /// its successors (a node whose successors are all skipped need not keep it).
    pub fn run<T: Send>(
        &self,
        mut skip: impl FnMut(usize, &[Option<T>]) -> Option<T>,
        eval: impl Fn(usize, &GroupedHistogram) -> Result<T> + Sync,
        keep: impl Fn(&T) -> bool + Sync,
    ) -> Result<Vec<T>> {
        let nodes = self.lattice.nodes();
        let total = nodes.len();
        let steps = total as u128 * self.base.pair_count().max(1) as u128;
        if steps > MAX_SWEEP_STEPS {
            return Err(DataFusionError::Execution(format!(
                "the lattice of {total} nodes over {} distinct combinations of the input would take up to {steps} roll-up steps, more than the {MAX_SWEEP_STEPS} one release may take (under a minute on two cores); narrow the lattice with min_levels or max_levels, or use fewer quasi-identifiers or shallower hierarchies",
                self.base.pair_count()
            )));
        }
        let mut levels: Vec<Vec<usize>> = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let sum: usize = node.iter().sum();
            if levels.len() <= sum {
                levels.resize_with(sum + 1, Vec::new);
            }
            levels[sum].push(i);
        }
        let mut results: Vec<Option<T>> = (0..total).map(|_| None).collect();
        let mut previous: HashMap<usize, GroupedHistogram> = HashMap::new();
        let done = AtomicUsize::new(0);
        let threads = self.threads.max(1);
        let reservation =
            Mutex::new(MemoryConsumer::new("anonymize: lattice sweep").register(self.memory));
        let mut previous_bytes = 0usize;

        for level in levels.iter().filter(|l| !l.is_empty()) {
            let mut evaluate: Vec<usize> = Vec::with_capacity(level.len());
            for &i in level {
                match skip(i, &results) {
                    Some(result) => {
                        results[i] = Some(result);
                        let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                        self.progress.report(finished, total)?;
                    }
                    None => evaluate.push(i),
                }
            }
            let kept_bytes = AtomicUsize::new(0);
            let next: Mutex<HashMap<usize, GroupedHistogram>> = Mutex::new(HashMap::new());
            let work = |indices: &[usize]| -> Result<Vec<(usize, T)>> {
                let mut out = Vec::with_capacity(indices.len());
                for &i in indices {
                    let hist = roll_up_from_nearest(
                        self.base,
                        &previous,
                        self.lattice,
                        self.hierarchies,
                        &nodes[i],
                        self.value_domain,
                    )?;
                    let bytes = heap_bytes(&hist);
                    lock(&reservation)?.try_grow(bytes)?;
                    let result = eval(i, &hist);
                    let result = match result {
                        Ok(result) => result,
                        Err(e) => {
                            lock(&reservation)?.shrink(bytes);
                            return Err(e);
                        }
                    };
                    if keep(&result) && self.may_keep(&kept_bytes, &reservation, bytes, threads)? {
                        lock(&next)?.insert(i, hist);
                    } else {
                        drop(hist);
                        lock(&reservation)?.shrink(bytes);
                    }
                    out.push((i, result));
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    self.progress.report(finished, total)?;
                }
                Ok(out)
            };
            let chunk = evaluate.len().div_ceil(threads).max(1);
            let batches: Vec<Result<Vec<(usize, T)>>> = if threads == 1 || evaluate.len() <= 1 {
                vec![work(&evaluate)]
            } else {
                std::thread::scope(|scope| {
                    let handles: Vec<_> = evaluate
                        .chunks(chunk)
                        .map(|part| scope.spawn(|| work(part)))
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| {
                            h.join().unwrap_or_else(|_| {
                                internal_err!("a lattice sweep worker thread panicked")
                            })
                        })
                        .collect()
                })
            };
            for batch in batches {
                for (i, result) in batch? {
                    results[i] = Some(result);
                }
            }
            let next = next
                .into_inner()
                .map_err(|_| DataFusionError::Internal("a lattice sweep worker panicked".into()))?;
            lock(&reservation)?.shrink(previous_bytes);
            previous_bytes = next.values().map(heap_bytes).sum();
            previous = next;
        }
        results.into_iter().collect::<Option<Vec<T>>>().map_or_else(
            || internal_err!("a lattice node was not visited by the sweep"),
            Ok,
        )
    }
}

impl Sweep<'_> {
    /// Bytes of one level's histograms kept for the next: [`KEPT_BYTES_PER_LEVEL`], and at
    /// most a quarter of a limited pool, so that the two levels alive at once hold at most
    /// half of it and the rest stays for in-flight histograms and the process around them.
    fn kept_bytes_per_level(&self) -> usize {
        match self.memory.memory_limit() {
            MemoryLimit::Finite(limit) => KEPT_BYTES_PER_LEVEL.min(limit / 4),
            _ => KEPT_BYTES_PER_LEVEL,
        }
    }

    /// Whether a histogram of `bytes` (already reserved as in flight) may stay for the next
    /// level: within this level's share, and with room left in the pool for one more
    /// histogram of its size per thread.
    fn may_keep(
        &self,
        kept_bytes: &AtomicUsize,
        reservation: &Mutex<MemoryReservation>,
        bytes: usize,
        threads: usize,
    ) -> Result<bool> {
        let before = kept_bytes.fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > self.kept_bytes_per_level() {
            return Ok(false);
        }
        let headroom = bytes.saturating_mul(threads);
        let reservation = lock(reservation)?;
        if reservation.try_grow(headroom).is_err() {
            return Ok(false);
        }
        reservation.shrink(headroom);
        Ok(true)
    }
}

/// Locks a mutex of the sweep; poisoned only when a worker panicked.
fn lock<T>(mutex: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    mutex
        .lock()
        .map_err(|_| DataFusionError::Internal("a lattice sweep worker panicked".into()))
}

/// Heap bytes of a histogram's vectors.
fn heap_bytes(hist: &GroupedHistogram) -> usize {
    use std::mem::size_of;
    hist.class_codes
        .iter()
        .map(|c| c.capacity() * size_of::<u32>())
        .sum::<usize>()
        + hist.class_offsets.capacity() * size_of::<usize>()
        + hist.pair_values.capacity() * size_of::<u32>()
        + hist.pair_counts.capacity() * size_of::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fixtures::{histogram, ladder, test_numbers, Record};

    /// 300 records over two ladders (heights 3 and 2), three informative values.
    fn fixture() -> (
        crate::hierarchy::Hierarchy,
        crate::hierarchy::Hierarchy,
        Vec<Record>,
    ) {
        let a = ladder("a", "0..15", &["2", "4", "0,8,16"]);
        let b = ladder("b", "0..7", &["2"]);
        let mut next = test_numbers(7);
        let records = (0..300)
            .map(|_| {
                let x = next(16).min(next(16)) as u32;
                (vec![x, next(8) as u32], next(3) as u32)
            })
            .collect();
        (a, b, records)
    }

    /// Every node is visited once with the histogram a direct roll-up from the base gives,
    /// whatever the number of threads; skipped nodes are not rolled up.
    #[test]
    fn visits_every_node_with_its_roll_up() {
        let (a, b, records) = fixture();
        let hs = [&a, &b];
        let base = histogram(&hs, &records, 3);
        let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 100).unwrap();
        let nodes = lattice.nodes();
        let skipped = lattice.top();
        let unbounded: Arc<dyn MemoryPool> =
            Arc::new(datafusion::execution::memory_pool::UnboundedMemoryPool::default());
        for threads in [1, 2, 5] {
            let sweep = Sweep {
                base: &base,
                hierarchies: &hs,
                lattice: &lattice,
                value_domain: 3,
                threads,
                progress: &Progress::silent(),
                memory: &unbounded,
            };
            let visited = sweep
                .run(
                    |i, _| (nodes[i] == skipped).then_some(None),
                    |i, hist| {
                        let direct = base.roll_up(&hs, &nodes[i], 3)?;
                        assert_eq!(hist, &direct, "node {:?}", nodes[i]);
                        Ok(Some(i))
                    },
                    |_| true,
                )
                .unwrap();
            let expected: Vec<Option<usize>> = (0..nodes.len())
                .map(|i| (nodes[i] != skipped).then_some(i))
                .collect();
            assert_eq!(visited, expected, "threads = {threads}");
        }
    }

    /// A lattice of 531,441 nodes (twelve ladders of height 2) over about 4,000 distinct
    /// combinations would take over 2·10⁹ steps: refused before any node is rolled up.
    #[test]
    fn a_sweep_beyond_its_step_bound_is_refused_before_it_starts() {
        let ladders: Vec<_> = (0..12)
            .map(|q| ladder(&format!("q{q}"), "0..9", &["5"]))
            .collect();
        let hs: Vec<&crate::hierarchy::Hierarchy> = ladders.iter().collect();
        let mut next = test_numbers(11);
        let records: Vec<Record> = (0..4_000)
            .map(|_| ((0..12).map(|_| next(10) as u32).collect(), 0))
            .collect();
        let base = histogram(&hs, &records, 1);
        assert!(base.pair_count() as u128 * 531_441 > MAX_SWEEP_STEPS);
        let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 600_000).unwrap();
        assert_eq!(lattice.nodes().len(), 531_441);
        let unbounded: Arc<dyn MemoryPool> =
            Arc::new(datafusion::execution::memory_pool::UnboundedMemoryPool::default());
        let sweep = Sweep {
            base: &base,
            hierarchies: &hs,
            lattice: &lattice,
            value_domain: 1,
            threads: 2,
            progress: &Progress::silent(),
            memory: &unbounded,
        };
        let visited = AtomicUsize::new(0);
        let err = sweep
            .run(
                |_, _| None,
                |_, _| {
                    visited.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                },
                |_| true,
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the lattice of 531441 nodes over")
                && err.contains("narrow the lattice with min_levels or max_levels"),
            "{err}"
        );
        assert_eq!(visited.load(Ordering::Relaxed), 0);
    }

    /// A cancelled sweep stops with the cancellation error.
    #[test]
    fn a_cancelled_sweep_stops() {
        let (a, b, records) = fixture();
        let hs = [&a, &b];
        let base = histogram(&hs, &records, 3);
        let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 100).unwrap();
        let cancel = crate::progress::Cancel::new();
        cancel.cancel();
        let progress = Progress::new("sweep", None, cancel);
        let unbounded: Arc<dyn MemoryPool> =
            Arc::new(datafusion::execution::memory_pool::UnboundedMemoryPool::default());
        let sweep = Sweep {
            base: &base,
            hierarchies: &hs,
            lattice: &lattice,
            value_domain: 3,
            threads: 2,
            progress: &progress,
            memory: &unbounded,
        };
        let err = sweep.run(|_, _| None, |_, _| Ok(()), |_| true).unwrap_err();
        assert!(err.to_string().contains("cancelled"), "{err}");
    }

    /// Under a memory limit the sweep keeps fewer histograms and gives the same results; the
    /// pool is empty again afterwards. A limit below one histogram fails with "Resources
    /// exhausted".
    #[test]
    fn a_memory_limit_keeps_less_and_changes_nothing() {
        use datafusion::execution::memory_pool::GreedyMemoryPool;
        let (a, b, records) = fixture();
        let hs = [&a, &b];
        let base = histogram(&hs, &records, 3);
        let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 100).unwrap();
        let sizes = |memory: &Arc<dyn MemoryPool>| {
            let sweep = Sweep {
                base: &base,
                hierarchies: &hs,
                lattice: &lattice,
                value_domain: 3,
                threads: 2,
                progress: &Progress::silent(),
                memory,
            };
            sweep.run(
                |_, _| None,
                |_, hist| Ok((hist.class_count(), hist.pair_count(), hist.sizes().to_vec())),
                |_| true,
            )
        };
        let unbounded: Arc<dyn MemoryPool> =
            Arc::new(datafusion::execution::memory_pool::UnboundedMemoryPool::default());
        let expected = sizes(&unbounded).unwrap();
        let largest = heap_bytes(&base);
        let tight: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(4 * largest));
        assert_eq!(sizes(&tight).unwrap(), expected);
        assert_eq!(tight.reserved(), 0, "every reservation is returned");
        let tiny: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(16));
        let err = sizes(&tiny).unwrap_err().to_string();
        assert!(err.contains("Resources exhausted"), "{err}");
        assert_eq!(tiny.reserved(), 0);

        // Under a limit, the kept histograms of the two levels alive hold at most half of
        // it: the peak reservation is that plus, per thread, one histogram in flight and
        // the room checked for another.
        let limit = 40 * largest;
        let peak = Arc::new(PeakPool {
            inner: GreedyMemoryPool::new(limit),
            peak: AtomicUsize::new(0),
        });
        let pool: Arc<dyn MemoryPool> = peak.clone();
        assert_eq!(sizes(&pool).unwrap(), expected);
        let peak = peak.peak.load(Ordering::Relaxed);
        assert!(peak > 0);
        assert!(
            peak <= limit / 2 + 4 * largest,
            "{peak} > {limit} / 2 + 4 × {largest}"
        );
    }

    /// A pool that remembers its largest reservation.
    #[derive(Debug)]
    struct PeakPool {
        inner: datafusion::execution::memory_pool::GreedyMemoryPool,
        peak: AtomicUsize,
    }

    impl std::fmt::Display for PeakPool {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "peak-tracking {}", self.inner)
        }
    }

    impl MemoryPool for PeakPool {
        fn name(&self) -> &str {
            "peak"
        }

        fn grow(&self, reservation: &MemoryReservation, additional: usize) {
            self.inner.grow(reservation, additional);
            self.peak
                .fetch_max(self.inner.reserved(), Ordering::Relaxed);
        }

        fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
            self.inner.shrink(reservation, shrink);
        }

        fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
            self.inner.try_grow(reservation, additional)?;
            self.peak
                .fetch_max(self.inner.reserved(), Ordering::Relaxed);
            Ok(())
        }

        fn reserved(&self) -> usize {
            self.inner.reserved()
        }

        fn memory_limit(&self) -> MemoryLimit {
            self.inner.memory_limit()
        }
    }
}
