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
        let mut merged: std::collections::BTreeMap<Vec<u32>, u64> = Default::default();
        for (i, &count) in self.counts.iter().enumerate() {
            let tuple: Vec<u32> = self
                .tuple(i)
                .iter()
                .zip(maps)
                .map(|(&code, map)| map[code as usize])
                .collect();
            *merged.entry(tuple).or_default() += count;
        }
        let mut out = Records::new(cards);
        for (tuple, count) in merged {
            out.push(&tuple, count);
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
    }
}
