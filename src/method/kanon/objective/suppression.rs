//! What suppression does to a node's classes ([`Suppression`], the input of every metric),
//! and those classes split by what their masks take away ([`SuppressedCells`]).

use crate::histogram::GroupedHistogram;

/// What suppression does to a node's classes: the input of every metric.
pub struct Suppression<'a> {
    /// The node's classes (levels, codes, sizes).
    pub classes: &'a GroupedHistogram,
    /// Per class, the attributes its records lose (bit `a` set: attribute `a` is `*`);
    /// 0 for a class released as it is.
    pub masks: &'a [u64],
    /// Released classes, each group of cell-suppressed records counted once, the fully
    /// suppressed records not counted.
    pub released_groups: u64,
    /// Sum of the squared sizes of those classes.
    pub released_square_sum: u128,
    /// Records with every attribute suppressed.
    pub suppressed_records: u64,
}

/// The classes of a [`Suppression`] split by what their masks take away, so that a
/// per-attribute total over suppressed cells reads only the smaller side.
pub(super) struct SuppressedCells<'a> {
    /// The classes' sizes.
    sizes: std::borrow::Cow<'a, [u64]>,
    /// Classes whose mask is neither empty nor every attribute.
    partial: Vec<u32>,
    /// Classes released as they are (empty mask).
    kept: Vec<u32>,
    /// Classes with every attribute suppressed.
    full: Vec<u32>,
}

impl<'a> SuppressedCells<'a> {
    pub(super) fn new(s: &Suppression<'a>) -> Self {
        let all = crate::method::kanon::cells::full_mask(s.classes.levels.len());
        let mut cells = Self {
            sizes: s.classes.sizes(),
            partial: Vec::new(),
            kept: Vec::new(),
            full: Vec::new(),
        };
        for (c, &mask) in s.masks.iter().enumerate() {
            match mask {
                0 => cells.kept.push(c as u32),
                m if m == all => cells.full.push(c as u32),
                _ => cells.partial.push(c as u32),
            }
        }
        cells
    }

    /// `generalized + Σ size · extra(code)` over the classes whose mask has bit `a`, where
    /// `generalized` is the total of the generalization alone and `everyone` the same sum
    /// over every class (`generalized + Σ_all size · extra`): read from the suppressed
    /// classes, or as `everyone` minus the classes keeping `a`, whichever list is shorter.
    /// Exact integer arithmetic: both give the same number.
    pub(super) fn total(
        &self,
        s: &Suppression<'_>,
        a: usize,
        generalized: u128,
        everyone: u128,
        extra: impl Fn(usize) -> u128,
    ) -> u128 {
        let codes = &s.classes.class_codes[a];
        let term = |c: u32| self.sizes[c as usize] as u128 * extra(codes[c as usize] as usize);
        let partial_with = |keep: bool| {
            self.partial
                .iter()
                .filter(move |&&c| (s.masks[c as usize] >> a & 1 == 0) == keep)
                .copied()
        };
        if self.full.len() <= self.kept.len() {
            generalized
                + self.full.iter().map(|&c| term(c)).sum::<u128>()
                + partial_with(false).map(term).sum::<u128>()
        } else {
            everyone
                - self.kept.iter().map(|&c| term(c)).sum::<u128>()
                - partial_with(true).map(term).sum::<u128>()
        }
    }
}
