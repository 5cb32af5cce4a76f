//! Classes on all quasi-identifiers: dense value codes, the records of each full-key class,
//! and sdcMicro's hash-bucket count of uniques.

/// sdcMicro's count of records alone in their bucket of its 16-bit hash (`CEntry::InitValue`
/// and the bucket scan of `Suda2` in `src/Suda2.h`); fewer than three columns are padded
/// with constant 1s as `suda2WORK` does.
pub(super) fn hash_bucket_uniques(columns: &[Vec<u32>], n: usize) -> u64 {
    let mut buckets = vec![0u32; 1 << 16];
    let padding = 3usize.saturating_sub(columns.len());
    for r in 0..n {
        let mut hash: u16 = 0;
        let values = columns
            .iter()
            .map(|c| c[r] as i32)
            .chain(std::iter::repeat_n(1, padding));
        for value in values {
            let carry = hash & 0x8000 != 0;
            hash <<= 1;
            hash = hash.wrapping_add(value as u16);
            if carry {
                hash = hash.wrapping_add(1);
            }
        }
        buckets[hash as usize] = buckets[hash as usize].saturating_add(1);
    }
    buckets.iter().filter(|&&b| b == 1).count() as u64
}

/// Codes renumbered densely (0..card) in order of first appearance.
pub(super) fn dense_codes(column: &[u32]) -> (Vec<u32>, u32) {
    let max = column.iter().copied().max().unwrap_or(0) as usize;
    let mut codes = Vec::with_capacity(column.len());
    let mut next = 0u32;
    if max <= column.len().saturating_mul(4).saturating_add(1024) {
        let mut map = vec![u32::MAX; max + 1];
        for &v in column {
            let slot = &mut map[v as usize];
            if *slot == u32::MAX {
                *slot = next;
                next += 1;
            }
            codes.push(*slot);
        }
    } else {
        let mut map = std::collections::HashMap::new();
        for &v in column {
            let code = *map.entry(v).or_insert_with(|| {
                next += 1;
                next - 1
            });
            codes.push(code);
        }
    }
    (codes, next)
}

/// Groups the records by their full key; each group lists its records ascending.
pub(super) fn full_key_classes(dense: &[Vec<u32>], cards: &[u32], n: usize) -> Vec<Vec<u32>> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    // A mixed-radix key when the key space fits in 64 bits, else column-wise comparison.
    let fits = cards
        .iter()
        .try_fold(1u64, |acc, &c| acc.checked_mul(u64::from(c.max(1))))
        .is_some();
    if fits {
        let mut keyed: Vec<(u64, u32)> = (0..n)
            .map(|r| {
                let key = dense.iter().zip(cards).fold(0u64, |acc, (col, &card)| {
                    acc * u64::from(card.max(1)) + u64::from(col[r])
                });
                (key, r as u32)
            })
            .collect();
        keyed.sort_unstable();
        let mut classes = Vec::new();
        let mut start = 0;
        for i in 1..=keyed.len() {
            if i == keyed.len() || keyed[i].0 != keyed[start].0 {
                classes.push(keyed[start..i].iter().map(|&(_, r)| r).collect());
                start = i;
            }
        }
        return classes;
    }
    let cmp = |a: &u32, b: &u32| {
        for col in dense {
            let o = col[*a as usize].cmp(&col[*b as usize]);
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        }
        a.cmp(b)
    };
    order.sort_unstable_by(cmp);
    let same = |a: u32, b: u32| dense.iter().all(|col| col[a as usize] == col[b as usize]);
    let mut classes = Vec::new();
    let mut start = 0;
    for i in 1..=order.len() {
        if i == order.len() || !same(order[i], order[start]) {
            classes.push(order[start..i].to_vec());
            start = i;
        }
    }
    classes
}
