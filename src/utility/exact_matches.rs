//! Unique exact matches as SDNist 2.5 counts them: the source records whose combination of
//! released values no other source record shares, and how many of them appear, value for
//! value, among the released rows. A generalized or suppressed value never equals a source
//! value, so only released rows that keep a unique record whole count.

use super::pmse::Cell;

/// The source's unique records and how many of them the release holds exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactMatches {
    /// Source records that are unique on the released columns.
    pub unique: u64,
    /// Of those, the ones a released row equals on every released column.
    pub matched: u64,
    /// Source records in all.
    pub records: u64,
}

impl ExactMatches {
    /// `matched / unique` (0 without unique records).
    pub fn share(&self) -> f64 {
        if self.unique == 0 {
            0.0
        } else {
            self.matched as f64 / self.unique as f64
        }
    }
}

/// Counts them over the distinct combinations of both tables.
pub fn unique_exact_matches(cells: &[Cell]) -> ExactMatches {
    let mut out = ExactMatches {
        unique: 0,
        matched: 0,
        records: 0,
    };
    for cell in cells {
        out.records += cell.source as u64;
        if cell.source == 1.0 {
            out.unique += 1;
            if cell.release >= 1.0 {
                out.matched += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unique_source_records_released_whole_count() {
        let cell = |codes: &[u32], source, release| Cell {
            codes: codes.to_vec(),
            source,
            release,
        };
        let cells = vec![
            cell(&[0, 0], 1.0, 2.0), // unique, released twice: one match
            cell(&[0, 1], 1.0, 0.0), // unique, not released
            cell(&[1, 1], 2.0, 1.0), // not unique
            cell(&[2, 2], 0.0, 1.0), // released only
            cell(&[1, 0], 1.0, 1.0), // unique, released
        ];
        let m = unique_exact_matches(&cells);
        assert_eq!((m.unique, m.matched, m.records), (3, 2, 5));
        assert!((m.share() - 2.0 / 3.0).abs() < 1e-15);
    }
}
