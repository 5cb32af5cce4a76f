//! The decision rule of Dankar, El Emam, Neisa & Roffey (2012): which model's estimate of
//! population uniques to report, by the sampling fraction (ARX
//! `RiskModelPopulationUniqueness.getNumUniqueTuplesDankar` with `useZayatzAsFallback =
//! true`).

use super::{Estimate, PopulationUniqueness, PopulationUniquenessModel};

/// Chooses among the three estimates already in `result`: Pitman's at a sampling fraction up
/// to 10 %, else SNB's unless Zayatz's is lower; Zayatz's whenever the chosen model did not
/// converge.
pub(super) fn decide(result: &PopulationUniqueness) -> (Estimate, PopulationUniquenessModel) {
    if result.sampling_fraction <= 0.1 {
        match result.pitman {
            Estimate::Uniques(_) => (result.pitman, PopulationUniquenessModel::Pitman),
            _ => (result.zayatz, PopulationUniquenessModel::Zayatz),
        }
    } else {
        match (result.snb, result.zayatz) {
            (Estimate::Uniques(s), Estimate::Uniques(z)) if z < s => {
                (result.zayatz, PopulationUniquenessModel::Zayatz)
            }
            (Estimate::Uniques(_), _) => (result.snb, PopulationUniquenessModel::Snb),
            _ => (result.zayatz, PopulationUniquenessModel::Zayatz),
        }
    }
}
