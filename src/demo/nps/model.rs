//! The background distributions of the demo data: ages, sexes, diseases, surgery,
//! stays and regions.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::diseases::{DiseaseGroup, Sexes};
use super::{Row, NPS_LOCATION_CODES};

/// Longest stay in days.
pub(super) const MAX_LOS: i32 = 400;

/// Integer-weighted discrete distribution sampled by binary search on cumulative weights.
pub(super) struct Sampler {
    pub(super) cumulative: Vec<u64>,
}

impl Sampler {
    /// A sampler over indices `0..weights.len()`; the total weight must be positive.
    pub(super) fn new(weights: impl IntoIterator<Item = u64>) -> Self {
        let mut acc = 0u64;
        let cumulative = weights
            .into_iter()
            .map(|w| {
                acc += w;
                acc
            })
            .collect();
        Self { cumulative }
    }

    pub(super) fn sample(&self, rng: &mut ChaCha8Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0);
        debug_assert!(total > 0, "sampler with zero total weight");
        let x = rng.random_range(0..total.max(1));
        self.cumulative.partition_point(|&c| c <= x)
    }
}

/// Probability of surgery for codes marked surgical in `diseases.csv`, per mille.
const SURGICAL_PERMILLE: u32 = 480;

/// Share of male patients per age band, per mille, for codes that apply to both sexes.
const MALE_PERMILLE: [u32; 5] = [550, 540, 540, 500, 400];

/// Relative frequency of hospital stays per year of age, by 5-year band
/// (ages 0–4, 5–9, ..., 95–99, 100).
const AGE_BAND_WEIGHTS: [u64; 21] = [
    60, 35, 25, 30, 40, 50, 55, 55, 60, 65, 75, 75, 70, 70, 75, 70, 50, 25, 10, 3, 1,
];

/// Relative frequency of the region codes in [`NPS_LOCATION_CODES`] (roughly population).
const LOCATION_WEIGHTS: [u64; 16] = [
    260, 75, 55, 45, 35, 35, 15, 215, 20, 20, 25, 30, 25, 35, 50, 10,
];

/// Stay profiles: geometric head over 1..=30 days with ratio `num / den`, and a tail over
/// 31..=400 days with weight ∝ 1 / day² holding the given share (per mille).
const LOS_PROFILES: [(u64, u64, u64); 5] = [
    (25, 100, 1),
    (40, 100, 3),
    (55, 100, 8),
    (70, 100, 20),
    (85, 100, 60),
];

/// Age band used for the disease mix and sex ratio.
fn age_band(age: i32) -> usize {
    match age {
        ..=14 => 0,
        15..=39 => 1,
        40..=64 => 2,
        65..=79 => 3,
        _ => 4,
    }
}

/// Precomputed samplers.
pub(super) struct Model {
    /// The disease groups.
    groups: &'static [DiseaseGroup],
    /// Every disease code, with the index of its group and its surgery rate (per mille).
    pub(super) codes: Vec<(&'static str, usize, u32)>,
    /// Disease mix per age band.
    pub(super) disease_by_band: Vec<Sampler>,
    /// The stroke codes, and their mix for the planted records.
    pub(super) stroke_codes: Vec<&'static str>,
    pub(super) stroke_mix: Sampler,
    /// Age distribution; index 0 is age 1.
    ages: Sampler,
    /// Region mix, indexing [`NPS_LOCATION_CODES`].
    locations: Sampler,
    /// Stay distributions; index 0 is one day.
    pub(super) los_profiles: Vec<Sampler>,
}

/// Weight of the k-th code of a group (from 0), before the group share:
/// `10^9 / (k + 1)^2.5`, rounded down.
fn zipf_weight(k: usize) -> u64 {
    let r = k as u64 + 1;
    // (r * 10^6).isqrt() = 1000 √r, exactly rounded down.
    1_000_000_000_000 / (r * r * (r * 1_000_000).isqrt())
}

impl Model {
    /// The samplers for `groups`.
    pub(super) fn new(groups: &'static [DiseaseGroup]) -> Self {
        let mut codes = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            codes.extend(group.codes.iter().map(|&(code, surgical)| {
                let rate = if group.stroke {
                    1000
                } else if surgical {
                    SURGICAL_PERMILLE
                } else {
                    group.surgery_permille
                };
                (code, g, rate)
            }));
        }
        let group_norm: Vec<u64> = groups
            .iter()
            .map(|group| (0..group.codes.len()).map(zipf_weight).sum::<u64>())
            .collect();
        let disease_by_band = (0..5)
            .map(|band| {
                Sampler::new(groups.iter().enumerate().flat_map(|(g, group)| {
                    let norm = group_norm[g].max(1);
                    let group_weight = group.share * group.age_mult[band];
                    (0..group.codes.len()).map(move |k| {
                        let w = u128::from(group_weight) * u128::from(zipf_weight(k)) * 1_000_000
                            / u128::from(norm);
                        u64::try_from(w).unwrap_or(u64::MAX)
                    })
                }))
            })
            .collect();
        let stroke_codes: Vec<&'static str> = groups
            .iter()
            .filter(|group| group.stroke)
            .flat_map(|group| group.codes.iter().map(|&(code, _)| code))
            .collect();
        let stroke_mix = Sampler::new((0..stroke_codes.len()).map(zipf_weight));
        let ages = Sampler::new((1..=100usize).map(|age| AGE_BAND_WEIGHTS[age / 5]));
        let locations = Sampler::new(LOCATION_WEIGHTS);
        let los_profiles = LOS_PROFILES
            .iter()
            .map(|&(num, den, tail)| Sampler::new(los_weights(num, den, tail)))
            .collect();
        Self {
            groups,
            codes,
            disease_by_band,
            stroke_codes,
            stroke_mix,
            ages,
            locations,
            los_profiles,
        }
    }

    pub(super) fn location(&self, rng: &mut ChaCha8Rng) -> i32 {
        NPS_LOCATION_CODES[self.locations.sample(rng)]
    }

    pub(super) fn stroke_code(&self, rng: &mut ChaCha8Rng) -> &'static str {
        self.stroke_codes[self.stroke_mix.sample(rng)]
    }

    /// A record that is not a planted stroke, no-surgery record.
    pub(super) fn background_row(&self, rng: &mut ChaCha8Rng) -> Row {
        let age = 1 + self.ages.sample(rng) as i32;
        let band = age_band(age);
        let (disease, g, surgery_permille) = self.codes[self.disease_by_band[band].sample(rng)];
        let group = &self.groups[g];
        let male = match group.sexes {
            Sexes::Male => true,
            Sexes::Female => false,
            Sexes::Both => rng.random_range(0..1000) < MALE_PERMILLE[band],
        };
        let surgery = rng.random_range(0..1000) < surgery_permille;
        let profile = (group.los_profile + usize::from(surgery) + usize::from(age >= 65)).min(4);
        let los = 1 + self.los_profiles[profile].sample(rng) as i32;
        Row {
            age,
            male,
            los,
            surgery,
            location: self.location(rng),
            disease,
        }
    }
}

/// Weights of stays of 1..=400 days (index 0 = one day) for one stay profile.
fn los_weights(num: u64, den: u64, tail_permille: u64) -> Vec<u64> {
    let mut weights = vec![0u64; MAX_LOS as usize];
    let mut w = 1_000_000_000u64;
    for slot in weights.iter_mut().take(30) {
        *slot = w;
        w = w * num / den;
    }
    let head: u64 = weights.iter().sum();
    // Sum of 1/d² over 31..=400 is about 0.030290.
    let tail_total = head * tail_permille / (1000 - tail_permille);
    let k = tail_total * 1_000_000 / 30_290;
    for (d, slot) in weights.iter_mut().enumerate().skip(30) {
        let day = d as u64 + 1;
        *slot = k / (day * day);
    }
    weights
}
