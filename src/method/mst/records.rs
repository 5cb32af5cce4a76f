//! The records MST reads: distinct tuples over `d` categorical attributes (each a code
//! below its attribute's cardinality) with their counts, and their marginals.

/// Distinct tuples with counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Records {
    /// Each attribute's number of values.
    pub cards: Vec<usize>,
    /// The tuples, `d` codes each, one after another.
    pub codes: Vec<u32>,
    /// Each tuple's count.
    pub counts: Vec<u64>,
}

impl Records {
    /// No records over attributes of `cards` values.
    pub fn new(cards: Vec<usize>) -> Self {
        Self {
            cards,
            codes: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Adds `count` records of `tuple`.
    pub fn push(&mut self, tuple: &[u32], count: u64) {
        debug_assert_eq!(tuple.len(), self.cards.len());
        self.codes.extend_from_slice(tuple);
        self.counts.push(count);
    }

    /// Number of attributes.
    pub fn width(&self) -> usize {
        self.cards.len()
    }

    /// The tuple `i`.
    pub fn tuple(&self, i: usize) -> &[u32] {
        let d = self.width();
        &self.codes[i * d..(i + 1) * d]
    }

    /// Records in all.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The marginal over `attrs`: counts in row-major order (the last attribute varying
    /// fastest), `Π cards[a]` cells.
    pub fn marginal(&self, attrs: &[usize]) -> Vec<u64> {
        let size: usize = attrs.iter().map(|&a| self.cards[a]).product();
        let mut out = vec![0u64; size];
        for (i, &count) in self.counts.iter().enumerate() {
            let tuple = self.tuple(i);
            let cell = attrs
                .iter()
                .fold(0usize, |cell, &a| cell * self.cards[a] + tuple[a] as usize);
            out[cell] += count;
        }
        out
    }

    /// The same records with each attribute's codes mapped by `maps[a]` onto
    /// `cards[a]` new values (equal tuples merged).
    pub fn mapped(&self, maps: &[Vec<u32>], cards: Vec<usize>) -> Records {
        let codes: Vec<u32> = self
            .codes
            .chunks_exact(self.width().max(1))
            .flat_map(|tuple| {
                tuple
                    .iter()
                    .zip(maps)
                    .map(|(&code, map)| map[code as usize])
            })
            .collect();
        Records::merged(cards, &codes, &self.counts)
    }

    /// The distinct tuples of `codes` (`cards.len()` codes per row, one row after another),
    /// each with the sum of its rows' `counts`, in lexicographic order. Rows are sorted by
    /// one mixed-radix key when the domain's size fits 128 bits, by their codes otherwise.
    pub fn merged(cards: Vec<usize>, codes: &[u32], counts: &[u64]) -> Records {
        let d = cards.len().max(1);
        let rows = counts.len();
        let size = cards
            .iter()
            .try_fold(1u128, |size, &c| size.checked_mul(c.max(1) as u128));
        let mut order: Vec<usize> = (0..rows).collect();
        match size {
            Some(_) => {
                let key = |r: usize| {
                    codes[r * d..(r + 1) * d]
                        .iter()
                        .zip(&cards)
                        .fold(0u128, |key, (&code, &c)| {
                            key * c.max(1) as u128 + code as u128
                        })
                };
                let mut keyed: Vec<(u128, usize)> = order.iter().map(|&r| (key(r), r)).collect();
                keyed.sort_unstable();
                order = keyed.into_iter().map(|(_, r)| r).collect();
            }
            None => order.sort_unstable_by(|&a, &b| {
                codes[a * d..(a + 1) * d].cmp(&codes[b * d..(b + 1) * d])
            }),
        }
        let mut out = Records::new(cards);
        let mut previous: Option<usize> = None;
        for r in order {
            let tuple = &codes[r * d..(r + 1) * d];
            match previous {
                Some(p) if &codes[p * d..(p + 1) * d] == tuple => {
                    if let Some(last) = out.counts.last_mut() {
                        *last += counts[r];
                    }
                }
                _ => {
                    out.push(tuple, counts[r]);
                    previous = Some(r);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marginals_count_in_row_major_order() {
        let mut r = Records::new(vec![2, 3]);
        r.push(&[0, 2], 5);
        r.push(&[1, 0], 1);
        r.push(&[1, 2], 2);
        assert_eq!(r.total(), 8);
        assert_eq!(r.marginal(&[0]), vec![5, 3]);
        assert_eq!(r.marginal(&[1]), vec![1, 0, 7]);
        assert_eq!(r.marginal(&[0, 1]), vec![0, 0, 5, 1, 0, 2]);
        assert_eq!(r.marginal(&[1, 0]), vec![0, 1, 0, 0, 5, 2]);
        // Values 0 and 1 of the second attribute merged into one.
        let m = r.mapped(&[vec![0, 1], vec![0, 0, 1]], vec![2, 2]);
        assert_eq!(m.marginal(&[0, 1]), vec![0, 5, 1, 2]);
        assert_eq!(m.codes, vec![0, 1, 1, 0, 1, 1]);
        assert_eq!(m.counts, vec![5, 1, 2]);
    }

    /// Rows merge into distinct tuples in lexicographic order, by key and by codes alike.
    #[test]
    fn rows_merge_in_order() {
        let codes = [1, 2, 0, 1, 1, 2, 0, 0];
        let merged = Records::merged(vec![2, 3], &codes, &[1, 2, 3, 4]);
        assert_eq!(merged.codes, vec![0, 0, 0, 1, 1, 2]);
        assert_eq!(merged.counts, vec![4, 2, 4]);
        // A domain past 128 bits: sorted by the codes themselves, with the same result.
        let huge = vec![usize::MAX; 6];
        let wide: Vec<u32> = codes
            .chunks(2)
            .flat_map(|t| [t[0], t[1], 0, 0, 0, 0])
            .collect();
        let merged = Records::merged(huge, &wide, &[1, 2, 3, 4]);
        assert_eq!(merged.counts, vec![4, 2, 4]);
        assert_eq!(merged.tuple(2), &[1, 2, 0, 0, 0, 0]);
    }
}
