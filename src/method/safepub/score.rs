//! SafePub's score functions (Section 5, Theorems 6–9) and their sensitivities.
//!
//! A score is evaluated on `S(D)`, the output of the anonymization operator for one
//! generalization scheme: the kept records plus every suppressed record. A record is kept
//! when its released form (generalized quasi-identifiers with its informative value, if
//! any) occurs at least k times among the sampled records, exactly as in the release; a
//! class `E` below is a set of kept records with equal generalized quasi-identifiers.
//! Records left out by the sampling count as suppressed too (as in ARX), so the dataset a
//! score sees always has `N` = the number of input records. Higher is better. The
//! sensitivities are proven for this suppression rule in docs/METHODS.md (§2.6).
//!
//! | function | score | sensitivity |
//! |---|---|---|
//! | `granularity` (ARX: Loss) | `−Σ_records Σ_i leaves_i(r_i)/|Ω_i|`, a suppressed cell counts 1 | `(k−1)·m`, `m` if k = 1 |
//! | `intensity` (ARX: Precision) | `−Σ_records Σ_i level_i/height_i`, a suppressed cell counts 1 | as granularity |
//! | `discernibility` | `−(Σ_E |E|²/N + #suppressed)` | `k²/(k−1) + 1`, 5 if k = 1 (the proof gives k) |
//! | `entropy` (non-uniform entropy proxy) | `−Σ_i φ(p_i(S(D)))`, a cell generalized to the root counts as suppressed | discernibility's · m |
//! | `group_size` | number of kept classes | 1 |
//! | `classification` | `Σ_E max_v |{r ∈ E : value(r) = v}|` over kept classes whose features are not all at the root | k |
//!
//! Sums of rationals are accumulated in `f64`; their rounding error (relative 1e-16 per
//! addition) is many orders of magnitude below any sensitivity, and the scores only feed
//! the exponential mechanism's weights.

use datafusion::common::{plan_err, Result};

use crate::hierarchy::Hierarchy;

/// A score function of SafePub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreFunction {
    /// Data granularity (ARX's Loss model).
    Granularity,
    /// Generalization intensity (ARX's Precision model).
    Intensity,
    /// Discernibility, normalized.
    Discernibility,
    /// The non-uniform entropy proxy (per-attribute discernibility).
    Entropy,
    /// Number of equivalence classes.
    GroupSize,
    /// Iyengar's classification metric, with the informative column as the class.
    Classification,
}

impl ScoreFunction {
    /// Every function, for help texts.
    pub const ALL: [ScoreFunction; 6] = [
        Self::Granularity,
        Self::Intensity,
        Self::Discernibility,
        Self::Entropy,
        Self::GroupSize,
        Self::Classification,
    ];

    /// Parses a score name (aliases: `loss` = granularity, `precision` = intensity,
    /// `non_uniform_entropy` = entropy, `groups` = group_size, `class` = classification).
    pub fn parse(text: &str) -> Result<Self> {
        Ok(match text.trim().to_ascii_lowercase().as_str() {
            "granularity" | "loss" => Self::Granularity,
            "intensity" | "precision" => Self::Intensity,
            "discernibility" => Self::Discernibility,
            "entropy" | "non_uniform_entropy" => Self::Entropy,
            "group_size" | "groups" => Self::GroupSize,
            "classification" | "class" => Self::Classification,
            other => {
                let names: Vec<&str> = Self::ALL.iter().map(|s| s.name()).collect();
                return plan_err!(
                    "unknown score '{other}' for method 'safepub'; valid: {}",
                    names.join(", ")
                );
            }
        })
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Granularity => "granularity",
            Self::Intensity => "intensity",
            Self::Discernibility => "discernibility",
            Self::Entropy => "entropy",
            Self::GroupSize => "group_size",
            Self::Classification => "classification",
        }
    }

    /// Sensitivity of the score for threshold `k` and `attrs` quasi-identifiers
    /// (Theorems 6–9).
    pub fn sensitivity(self, k: u64, attrs: usize) -> f64 {
        let m = attrs as f64;
        let disc = if k <= 1 {
            5.0
        } else {
            let k = k as f64;
            k * k / (k - 1.0) + 1.0
        };
        match self {
            Self::Granularity | Self::Intensity => {
                if k <= 1 {
                    m
                } else {
                    (k - 1) as f64 * m
                }
            }
            Self::Discernibility => disc,
            Self::Entropy => disc * m,
            Self::GroupSize => 1.0,
            Self::Classification => k as f64,
        }
    }
}

/// Per attribute and level, what the scores need to know about generalized values.
#[derive(Debug, Clone)]
pub struct ScoreTables {
    /// `granularity[a][l][code]` = leaves under the code / leaves of the hierarchy.
    granularity: Vec<Vec<Vec<f64>>>,
    /// `intensity[a][l]` = l / height (0 for a hierarchy of height 0).
    intensity: Vec<Vec<f64>>,
    /// `root[a][l]`: the level has a single value (carries no information).
    root: Vec<Vec<bool>>,
    /// `cardinality[a][l]`.
    cardinality: Vec<Vec<usize>>,
}

impl ScoreTables {
    /// Tables for the given hierarchies.
    pub fn new(hierarchies: &[&Hierarchy]) -> Self {
        let mut granularity = Vec::new();
        let mut intensity = Vec::new();
        let mut root = Vec::new();
        let mut cardinality = Vec::new();
        for h in hierarchies {
            let leaves = h.leaf_count() as f64;
            let height = h.height();
            granularity.push(
                (0..=height)
                    .map(|l| {
                        h.level(l)
                            .leaf_counts()
                            .iter()
                            .map(|&c| c as f64 / leaves)
                            .collect()
                    })
                    .collect(),
            );
            intensity.push(
                (0..=height)
                    .map(|l| {
                        if height == 0 {
                            0.0
                        } else {
                            l as f64 / height as f64
                        }
                    })
                    .collect(),
            );
            root.push(
                (0..=height)
                    .map(|l| h.level(l).cardinality() == 1)
                    .collect(),
            );
            cardinality.push((0..=height).map(|l| h.level(l).cardinality()).collect());
        }
        Self {
            granularity,
            intensity,
            root,
            cardinality,
        }
    }

    /// Whether level `l` of attribute `a` is a single root value.
    pub fn is_root(&self, a: usize, l: usize) -> bool {
        self.root[a][l]
    }
}

/// Score and counts of one scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    /// The score (higher is better).
    pub score: f64,
    /// Sampled records kept (in classes of at least k).
    pub kept: u64,
    /// Kept classes.
    pub classes: u64,
}

/// Accumulates the kept classes of one scheme into its score.
#[derive(Debug)]
pub struct ScoreAccumulator<'t> {
    function: ScoreFunction,
    tables: &'t ScoreTables,
    levels: &'t [usize],
    total: u64,
    kept: u64,
    classes: u64,
    weighted: f64,
    squares: f64,
    majority: u64,
    counts: Vec<Vec<u64>>,
    features_at_root: bool,
}

impl<'t> ScoreAccumulator<'t> {
    /// An empty accumulator for the scheme `levels`, over `total` input records.
    pub fn new(
        function: ScoreFunction,
        tables: &'t ScoreTables,
        levels: &'t [usize],
        total: u64,
    ) -> Self {
        let counts = if function == ScoreFunction::Entropy {
            levels
                .iter()
                .enumerate()
                .map(|(a, &l)| vec![0u64; tables.cardinality[a][l]])
                .collect()
        } else {
            Vec::new()
        };
        let features_at_root = levels.iter().enumerate().all(|(a, &l)| tables.root[a][l]);
        Self {
            function,
            tables,
            levels,
            total,
            kept: 0,
            classes: 0,
            weighted: 0.0,
            squares: 0.0,
            majority: 0,
            counts,
            features_at_root,
        }
    }

    /// Adds a kept class of `size` records whose code at attribute `a` is `code(a)`;
    /// `majority` is the largest number of its records sharing one informative value
    /// (needed for classification only).
    pub fn add_class(&mut self, size: u64, code: impl Fn(usize) -> u32, majority: u64) {
        self.kept += size;
        self.classes += 1;
        match self.function {
            ScoreFunction::Granularity => {
                let per_record: f64 = self
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(a, &l)| self.tables.granularity[a][l][code(a) as usize])
                    .sum();
                self.weighted += size as f64 * per_record;
            }
            ScoreFunction::Discernibility => {
                self.squares += (size as f64) * (size as f64);
            }
            ScoreFunction::Entropy => {
                for (a, &l) in self.levels.iter().enumerate() {
                    if !self.tables.root[a][l] {
                        self.counts[a][code(a) as usize] += size;
                    }
                }
            }
            ScoreFunction::Classification => {
                if !self.features_at_root {
                    self.majority += majority;
                }
            }
            ScoreFunction::Intensity | ScoreFunction::GroupSize => {}
        }
    }

    /// The score of the scheme.
    pub fn finish(self) -> Evaluation {
        let n = self.total as f64;
        let m = self.levels.len() as f64;
        let suppressed = self.total.saturating_sub(self.kept) as f64;
        let score = match self.function {
            ScoreFunction::Granularity => -(self.weighted + suppressed * m),
            ScoreFunction::Intensity => {
                let per_record: f64 = self
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(a, &l)| self.tables.intensity[a][l])
                    .sum();
                -(self.kept as f64 * per_record + suppressed * m)
            }
            ScoreFunction::Discernibility => -(self.squares / n + suppressed),
            ScoreFunction::Entropy => {
                let mut phi = 0.0;
                for (a, &l) in self.levels.iter().enumerate() {
                    if self.tables.root[a][l] {
                        phi += n;
                        continue;
                    }
                    let mut squares = 0.0;
                    let mut visible = 0u64;
                    for &c in &self.counts[a] {
                        squares += (c as f64) * (c as f64);
                        visible += c;
                    }
                    phi += squares / n + (self.total - visible) as f64;
                }
                -phi
            }
            ScoreFunction::GroupSize => self.classes as f64,
            ScoreFunction::Classification => self.majority as f64,
        };
        Evaluation {
            score,
            kept: self.kept,
            classes: self.classes,
        }
    }
}
