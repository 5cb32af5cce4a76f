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
//! # Rounding
//!
//! Every sum over records or classes is accumulated exactly in integers (`u128`); `f64`
//! rounding enters only in the last few operations of [`ScoreAccumulator::finish`], so a
//! computed score is within `N · e` of its exact value for `N` input records, with `e`
//! ([`ScoreFunction::rounding_per_record`]) a constant of the function and the number of
//! quasi-identifiers: `γ_(m+2)·m` for granularity and intensity, `γ_3` for
//! discernibility, `γ_(m+3)·m` for entropy, `0` for group size and classification (exact
//! integers), where `γ_j = j·u/(1 − j·u)` and `u = 2^-53` (Higham, *Accuracy and Stability
//! of Numerical Algorithms*, §3.1). The sensitivities are rounded up, never down. The
//! exponential mechanism is exact for the scores it is given, so computed scores of
//! neighbouring inputs differ by at most `Δ + 2·N·e` and each step is
//! `ε_step·(1 + 2·N·e/Δ)`-DP: [`ScoreFunction::epsilon_excess_per_record`] gives the
//! additive excess over the whole search divided by `N` (docs/METHODS.md §2.10).

use datafusion::common::{plan_err, Result};

use crate::hierarchy::Hierarchy;

/// How a score counts a group (a class, or a (class, informative value) pair) of sampled
/// records. The release always suppresses a group of fewer than k records and keeps the
/// others; only the score's view differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScoreSuppression {
    /// A group of `s` records counts as `min(s, max(0, 2s − c))` kept records, `c = ⌈4k/3⌉`,
    /// and the rest as suppressed (the default for granularity and intensity): nothing up
    /// to `2k/3`, everything from `4k/3`, a ramp of slope 2 centred on k in between, since
    /// whether a group near k reaches k in the released sample (an independent draw) is
    /// itself uncertain. One record more or less moves the score by at most `m`, where
    /// suppression at k moves it by `(k − 1)·m` (docs/METHODS.md §2.12, Lemma 2).
    #[default]
    Graded,
    /// A group of `s < k` records counts as suppressed, as in the paper.
    AtK,
}

impl ScoreSuppression {
    /// Parses `graded` or `at_k`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "graded" => Ok(Self::Graded),
            "at_k" => Ok(Self::AtK),
            other => plan_err!(
                "unknown score_suppression '{other}' for method 'safepub'; valid: 'graded', 'at_k'"
            ),
        }
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Graded => "graded",
            Self::AtK => "at_k",
        }
    }

    /// The records a group of `size` records counts as kept, at threshold `k`.
    pub fn kept_weight(self, size: u64, k: u64) -> u64 {
        match self {
            Self::AtK if size >= k => size,
            Self::AtK => 0,
            Self::Graded => size.min((2 * size).saturating_sub(Self::ramp_end(k))),
        }
    }

    /// `c = ⌈4k/3⌉`: graded, a group of `s` records counts as `min(s, max(0, 2s − c))`
    /// kept records, a ramp of slope 2 from `c/2 = 2k/3` to `c = 4k/3`, centred on k.
    pub fn ramp_end(k: u64) -> u64 {
        (4 * k).div_ceil(3)
    }

    /// The smallest group that counts for anything (kept by the release or counted by the
    /// score): `k`, or `min(⌊c/2⌋ + 1, k)` graded.
    pub fn counts_from(self, k: u64) -> u64 {
        match self {
            Self::AtK => k,
            Self::Graded => (Self::ramp_end(k) / 2 + 1).min(k),
        }
    }

    /// Whether `function` supports this way of counting (graded: granularity and
    /// intensity, whose records each cost between 0 and m).
    pub fn supports(self, function: ScoreFunction) -> bool {
        self == Self::AtK
            || matches!(
                function,
                ScoreFunction::Granularity | ScoreFunction::Intensity
            )
    }
}

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

    /// Sensitivity of the score counting groups below k as `suppression` says: `m` for
    /// graded granularity and intensity (docs/METHODS.md §2.12, Lemma 2), else
    /// [`ScoreFunction::sensitivity`].
    pub fn sensitivity_with(self, suppression: ScoreSuppression, k: u64, attrs: usize) -> f64 {
        match (suppression, self) {
            (ScoreSuppression::Graded, Self::Granularity | Self::Intensity) => attrs as f64,
            _ => self.sensitivity(k, attrs),
        }
    }

    /// Sensitivity of the score for threshold `k` and `attrs` quasi-identifiers
    /// (Theorems 6–9), groups below k counted as suppressed.
    ///
    /// Rounded up where the exact value is not an `f64`: discernibility's
    /// `k²/(k−1) + 1 = (k² + k − 1)/(k − 1)` is one correctly rounded division of exact
    /// integers, so one step up bounds it from above (and entropy's product likewise).
    pub fn sensitivity(self, k: u64, attrs: usize) -> f64 {
        let m = attrs as f64;
        let disc = if k <= 1 {
            5.0
        } else {
            // (k² + k − 1) = (k − 1)(k + 2) + 1: an integer quotient only for k = 2.
            let numerator = (k as u128 * k as u128 + k as u128 - 1) as f64;
            let quotient = numerator / (k - 1) as f64;
            match k == 2 {
                true => quotient,
                false => quotient.next_up(),
            }
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
            Self::Entropy => {
                let product = disc * m;
                match disc.fract() == 0.0 && product < 2f64.powi(53) {
                    true => product,
                    false => product.next_up(),
                }
            }
            Self::GroupSize => 1.0,
            Self::Classification => k as f64,
        }
    }

    /// `e` such that a computed score over `N` input records is within `N·e` of the exact
    /// score, for `attrs` quasi-identifiers (module documentation, # Rounding).
    pub fn rounding_per_record(self, attrs: usize) -> f64 {
        let m = attrs as f64;
        match self {
            Self::Granularity | Self::Intensity => gamma(m + 2.0) * m,
            Self::Discernibility => gamma(3.0),
            Self::Entropy => gamma(m + 3.0) * m,
            Self::GroupSize | Self::Classification => 0.0,
        }
    }

    /// The additive ε excess, per input record, of a search spending `epsilon` in total
    /// with threshold `k` over `attrs` quasi-identifiers, groups below k counted as
    /// `suppression` says: `epsilon · 2e/Δ`, so that over `N` records the search is
    /// `epsilon · (1 + 2·N·e/Δ)`-DP. Depends on public parameters only.
    pub fn epsilon_excess_per_record(
        self,
        epsilon: f64,
        k: u64,
        attrs: usize,
        suppression: ScoreSuppression,
    ) -> f64 {
        // Rounded up by a factor 1 + 1e-6 (far above the rounding of this product).
        epsilon * 2.0 * self.rounding_per_record(attrs)
            / self.sensitivity_with(suppression, k, attrs)
            * (1.0 + 1e-6)
    }
}

/// `γ_j = j·u / (1 − j·u)` with `u = 2^-53`, the relative error bound of `j` rounded `f64`
/// operations in sequence (Higham, Lemma 3.1).
fn gamma(j: f64) -> f64 {
    let u = f64::EPSILON / 2.0;
    j * u / (1.0 - j * u)
}

/// Per attribute and level, what the scores need to know about generalized values.
#[derive(Debug, Clone)]
pub struct ScoreTables {
    /// `leaves_under[a][l][code]` = leaves under the code (granularity's numerator).
    leaves_under: Vec<Vec<Vec<u64>>>,
    /// `leaves[a]` = leaves of the hierarchy (granularity's denominator).
    leaves: Vec<u64>,
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
        let mut leaves_under = Vec::new();
        let mut leaves = Vec::new();
        let mut intensity = Vec::new();
        let mut root = Vec::new();
        let mut cardinality = Vec::new();
        for h in hierarchies {
            let height = h.height();
            leaves.push(h.leaf_count() as u64);
            leaves_under.push(
                (0..=height)
                    .map(|l| h.level(l).leaf_counts().iter().map(|&c| c as u64).collect())
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
            leaves_under,
            leaves,
            intensity,
            root,
            cardinality,
        }
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
    /// Records counted as kept (graded: groups below k in part).
    counted: u64,
    classes: u64,
    /// Per attribute, `Σ_counted records leaves_under` (granularity).
    weighted: Vec<u128>,
    /// `Σ_E |E|²` (discernibility).
    squares: u128,
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
        let weighted = match function {
            ScoreFunction::Granularity => vec![0; levels.len()],
            _ => Vec::new(),
        };
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
            counted: 0,
            classes: 0,
            weighted,
            squares: 0,
            majority: 0,
            counts,
            features_at_root,
        }
    }

    /// Adds a class of `kept` kept records (at least k per group) that the score counts as
    /// `counted` kept records (`kept` itself when groups below k count as suppressed; more
    /// with [`ScoreSuppression::Graded`]), whose code at attribute `a` is `code(a)`;
    /// `majority` is the largest number of its kept records sharing one informative value
    /// (needed for classification only). A class with `kept = 0` is not a released class.
    pub fn add_class(
        &mut self,
        kept: u64,
        counted: u64,
        code: impl Fn(usize) -> u32,
        majority: u64,
    ) {
        self.kept += kept;
        self.counted += counted;
        self.classes += u64::from(kept > 0);
        let size = kept;
        match self.function {
            ScoreFunction::Granularity => {
                for (a, &l) in self.levels.iter().enumerate() {
                    let under = self.tables.leaves_under[a][l][code(a) as usize];
                    self.weighted[a] += counted as u128 * under as u128;
                }
            }
            ScoreFunction::Discernibility => {
                self.squares += size as u128 * size as u128;
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

    /// The score of the scheme: exact integer sums, then the few rounded operations the
    /// bound [`ScoreFunction::rounding_per_record`] counts.
    pub fn finish(self) -> Evaluation {
        let per_record = |sum: f64, n: f64| if n == 0.0 { 0.0 } else { sum / n };
        let n = self.total as f64;
        let m = self.levels.len() as f64;
        let suppressed = self.total.saturating_sub(self.kept) as f64;
        let uncounted = self.total.saturating_sub(self.counted) as f64;
        let score = match self.function {
            ScoreFunction::Granularity => {
                let cells: f64 = self
                    .weighted
                    .iter()
                    .zip(&self.tables.leaves)
                    .map(|(&w, &leaves)| w as f64 / leaves as f64)
                    .sum();
                -(cells + uncounted * m)
            }
            ScoreFunction::Intensity => {
                let per_record: f64 = self
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(a, &l)| self.tables.intensity[a][l])
                    .sum();
                -(self.counted as f64 * per_record + uncounted * m)
            }
            // Sums over records divided by N: 0 for a table without records (whose
            // squares are 0 too), so every scheme of an empty table scores alike.
            ScoreFunction::Discernibility => -(per_record(self.squares as f64, n) + suppressed),
            ScoreFunction::Entropy => {
                let mut phi = 0.0;
                for (a, &l) in self.levels.iter().enumerate() {
                    if self.tables.root[a][l] {
                        phi += n;
                        continue;
                    }
                    let mut squares = 0u128;
                    let mut visible = 0u64;
                    for &c in &self.counts[a] {
                        squares += c as u128 * c as u128;
                        visible += c;
                    }
                    phi += per_record(squares as f64, n) + (self.total - visible) as f64;
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
