//! The recursive SUDA2 search for minimal sample uniques (Manning, Haglin & Keane 2008),
//! split over threads by top-level item on large tables.

use std::sync::atomic::{AtomicUsize, Ordering};

const NONE: u32 = u32::MAX;

/// Shape of the item-key space of a search.
struct Ctx {
    /// Number of attributes.
    attrs: usize,
    /// Number of item keys, `Σ card` (key of `a = v` is `Σ_{b<a} card_b + v`).
    keys: usize,
}

/// An item (attribute = value) of a (sub-)table and its records there.
#[derive(Debug, Clone, Copy)]
struct Item {
    attr: u32,
    key: u32,
    start: u32,
    len: u32,
    /// Index of the same item in the parent table.
    parent: u32,
}

/// A (sub-)table: its records' item keys (row-major, local record numbers, so that a
/// sub-table's records lie together in memory), its candidate items (each in ≥ 2 and not
/// all records) ascending by support, and their local records (ascending) in one buffer.
struct Level {
    codes: Vec<u32>,
    items: Vec<Item>,
    rows: Vec<u32>,
}

impl Level {
    fn rows_of(&self, i: usize) -> &[u32] {
        let it = &self.items[i];
        &self.rows[it.start as usize..(it.start + it.len) as usize]
    }

    fn record(&self, attrs: usize, r: u32) -> &[u32] {
        let start = r as usize * attrs;
        &self.codes[start..start + attrs]
    }
}

/// Reusable buffers of one recursion depth.
#[derive(Default)]
struct Scratch {
    /// Item key → index in the current level's items (NONE if not an item there).
    pos: Vec<u32>,
    work: Work,
}

#[derive(Default)]
struct Work {
    cnt: Vec<u32>,
    last: Vec<u32>,
    sub_of: Vec<u32>,
    touched: Vec<u32>,
    msu: Vec<u32>,
}

/// Receives the MSUs found in a table: the record (local to that table) and the items
/// (indices into that table's items).
trait Sink {
    fn push(&mut self, row: u32, items: &[u32]);
}

/// MSUs of a sub-table, flat: `row, size, items…` per MSU.
struct Flat(Vec<u32>);

impl Sink for Flat {
    fn push(&mut self, row: u32, items: &[u32]) {
        self.0.push(row);
        self.0.push(items.len() as u32);
        self.0.extend_from_slice(items);
    }
}

/// Counts of the MSUs of the whole table per record and size.
struct Counts<'a> {
    by_size: &'a mut [u32],
    m: usize,
}

impl Sink for Counts<'_> {
    fn push(&mut self, row: u32, items: &[u32]) {
        let slot = &mut self.by_size[row as usize * self.m + items.len() - 1];
        *slot = slot.saturating_add(1);
    }
}

/// Counts the MSUs of size ≤ m of the records `kept` (ascending record numbers), per
/// position in `kept` and size.
pub(super) fn find_msus(dense: &[Vec<u32>], cards: &[u32], kept: &[u32], m: usize) -> Vec<u32> {
    let attrs = dense.len();
    let n = kept.len();
    let mut offsets = Vec::with_capacity(attrs);
    let mut keys = 0usize;
    for &card in cards {
        offsets.push(keys as u32);
        keys += card as usize;
    }
    let ctx = Ctx { attrs, keys };
    let mut codes = Vec::with_capacity(n * attrs);
    for &r in kept {
        codes.extend(
            dense
                .iter()
                .zip(&offsets)
                .map(|(col, &off)| off + col[r as usize]),
        );
    }
    let mut by_size = vec![0u32; n * m];

    // Top-level items: value counts per attribute.
    let mut counts = vec![0u32; keys];
    let mut first_row = vec![NONE; keys];
    for (r, record) in codes.chunks_exact(attrs).enumerate() {
        for &key in record {
            counts[key as usize] += 1;
            if first_row[key as usize] == NONE {
                first_row[key as usize] = r as u32;
            }
        }
    }
    let mut items: Vec<Item> = Vec::new();
    for a in 0..attrs {
        for v in 0..cards[a] {
            let key = offsets[a] as usize + v as usize;
            let c = counts[key];
            if c == 1 {
                // A value no other record has: a 1-MSU (sdcMicro counts these even when
                // the table has a single record).
                by_size[first_row[key] as usize * m] += 1;
            } else if c >= 2 && (c as usize) < n {
                items.push(Item {
                    attr: a as u32,
                    key: key as u32,
                    start: 0,
                    len: c,
                    parent: NONE,
                });
            }
        }
    }
    if m < 2 || items.is_empty() {
        return by_size;
    }
    items.sort_by_key(|it| (it.len, it.key));
    let mut start = 0u32;
    let mut fill = vec![NONE; keys];
    for it in items.iter_mut() {
        it.start = start;
        fill[it.key as usize] = start;
        start += it.len;
    }
    let mut rows = vec![0u32; start as usize];
    for (r, record) in codes.chunks_exact(attrs).enumerate() {
        for &key in record {
            let slot = &mut fill[key as usize];
            if *slot != NONE {
                rows[*slot as usize] = r as u32;
                *slot += 1;
            }
        }
    }
    let level = Level { codes, items, rows };
    let mut pos = vec![NONE; keys];
    for (j, it) in level.items.iter().enumerate() {
        pos[it.key as usize] = j as u32;
    }

    // The top-level items are independent: threads take them in turn and count into their
    // own buffers, which are then added up (integer counts, so the result does not depend
    // on the schedule).
    let threads = if n < PARALLEL_MIN_RECORDS {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(MAX_THREADS)
            .min(level.items.len())
    };
    let next = AtomicUsize::new(0);
    let run = |by_size: &mut [u32]| {
        let mut work = Work::default();
        let mut deeper: Vec<Scratch> = (1..m).map(|_| Scratch::default()).collect();
        let mut sink = Counts { by_size, m };
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= level.items.len() {
                break;
            }
            process_item(&ctx, &level, &pos, i, m, &mut work, &mut deeper, &mut sink);
        }
    };
    if threads <= 1 {
        run(&mut by_size);
        return by_size;
    }
    let partial: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut own = vec![0u32; n * m];
                    run(&mut own);
                    own
                })
            })
            .collect();
        run(&mut by_size);
        // A worker can only fail by panicking (a bug, as on one thread): pass it on.
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(own) => own,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    for own in partial {
        for (total, c) in by_size.iter_mut().zip(own) {
            *total = total.saturating_add(c);
        }
    }
    by_size
}

/// Below this many records the search runs on one thread.
const PARALLEL_MIN_RECORDS: usize = 50_000;
/// Upper bound on the threads of one search.
const MAX_THREADS: usize = 8;

/// Finds the MSUs of size 2..=k of a table whose candidate items are `level`'s.
fn find<S: Sink>(ctx: &Ctx, level: &Level, k: usize, scratch: &mut [Scratch], sink: &mut S) {
    let Some((current, deeper)) = scratch.split_first_mut() else {
        return;
    };
    if current.pos.len() < ctx.keys {
        current.pos.resize(ctx.keys, NONE);
    }
    for (j, it) in level.items.iter().enumerate() {
        current.pos[it.key as usize] = j as u32;
    }
    for i in 0..level.items.len() {
        process_item(
            ctx,
            level,
            &current.pos,
            i,
            k,
            &mut current.work,
            deeper,
            sink,
        );
    }
    for it in &level.items {
        current.pos[it.key as usize] = NONE;
    }
}

/// The MSUs of size 2..=k of the table that have item `i` as their lowest-ranked item.
#[allow(clippy::too_many_arguments)]
fn process_item<S: Sink>(
    ctx: &Ctx,
    level: &Level,
    pos: &[u32],
    i: usize,
    k: usize,
    work: &mut Work,
    deeper: &mut [Scratch],
    sink: &mut S,
) {
    let attrs = ctx.attrs;
    let item = level.items[i];
    let rows_i = level.rows_of(i);
    let len_i = item.len;
    let items_len = level.items.len();
    if work.cnt.len() < items_len {
        work.cnt.resize(items_len, 0);
        work.last.resize(items_len, 0);
        work.sub_of.resize(items_len, NONE);
    }
    work.touched.clear();

    // Support of every later-ranked item within the sub-table of item i (the item's own
    // attribute has a single value there and is never a later-ranked item).
    for &r in rows_i {
        for &key in level.record(attrs, r) {
            let j = pos[key as usize];
            if j != NONE && j as usize > i {
                let j = j as usize;
                if work.cnt[j] == 0 {
                    work.touched.push(j as u32);
                }
                work.cnt[j] += 1;
                work.last[j] = r;
            }
        }
    }

    // Items once in the sub-table give 2-MSUs {i, j}; items in 2.. records of it (but not
    // all) are the sub-table's candidate items.
    let mut subs: Vec<u32> = Vec::new();
    for &j in &work.touched {
        let c = work.cnt[j as usize];
        if c == 1 {
            sink.push(work.last[j as usize], &[i as u32, j]);
        } else if c < len_i && k >= 3 {
            subs.push(j);
        }
    }
    if subs.is_empty() || deeper.is_empty() {
        for &j in &work.touched {
            work.cnt[j as usize] = 0;
        }
        return;
    }

    // Build the sub-table: its records (local numbers 0..len_i in the order of rows_i)
    // copied together, and its candidate items.
    subs.sort_by_key(|&j| (work.cnt[j as usize], j));
    let mut sub_items = Vec::with_capacity(subs.len());
    let mut start = 0u32;
    for (s, &j) in subs.iter().enumerate() {
        let parent = level.items[j as usize];
        let c = work.cnt[j as usize];
        work.sub_of[j as usize] = s as u32;
        sub_items.push(Item {
            attr: parent.attr,
            key: parent.key,
            start,
            len: c,
            parent: j,
        });
        // Reuse cnt as the fill pointer.
        work.cnt[j as usize] = start;
        start += c;
    }
    let mut sub_rows = vec![0u32; start as usize];
    let mut sub_codes = Vec::with_capacity(rows_i.len() * attrs);
    for (local, &r) in rows_i.iter().enumerate() {
        for &key in level.record(attrs, r) {
            sub_codes.push(key);
            let j = pos[key as usize];
            if j != NONE && j as usize > i && work.sub_of[j as usize] != NONE {
                let slot = &mut work.cnt[j as usize];
                sub_rows[*slot as usize] = local as u32;
                *slot += 1;
            }
        }
    }
    for &j in &work.touched {
        work.cnt[j as usize] = 0;
        work.sub_of[j as usize] = NONE;
    }
    let sub = Level {
        codes: sub_codes,
        items: sub_items,
        rows: sub_rows,
    };

    // MSUs of the sub-table, then the special-row test in this table.
    let mut found = Flat(Vec::new());
    find(ctx, &sub, k - 1, deeper, &mut found);
    drop(sub.codes);
    let iattr = item.attr as usize;
    let flat = &found.0;
    let mut x = 0usize;
    while x + 1 < flat.len() {
        let local = flat[x] as usize;
        let size = flat[x + 1] as usize;
        let members = &flat[x + 2..x + 2 + size];
        x += 2 + size;
        work.msu.clear();
        work.msu.push(i as u32);
        let mut best = NONE;
        for &s in members {
            let j = sub.items[s as usize].parent;
            work.msu.push(j);
            if best == NONE || level.items[j as usize].len < level.items[best as usize].len {
                best = j;
            }
        }
        // Is there a record of this table without item i that contains the sub-MSU?
        let others = &work.msu[1..];
        let special = level.rows_of(best as usize).iter().any(|&r| {
            let record = level.record(attrs, r);
            record[iattr] != item.key
                && others.iter().all(|&j| {
                    let it = &level.items[j as usize];
                    j == best || record[it.attr as usize] == it.key
                })
        });
        if special {
            sink.push(rows_i[local], &work.msu);
        }
    }
}
