//! Two-dimensional Newton–Raphson as ARX solves its models with it
//! (`de.linearbits.newtonraphson.NewtonRaphson2D._solve`).

use std::time::Instant;

use super::SolverConfig;

/// Two-dimensional Newton–Raphson as in `NewtonRaphson2D._solve`: `function` returns the
/// two equation values and the Jacobian `[∂f1/∂x, ∂f1/∂y, ∂f2/∂x, ∂f2/∂y]`. Returns the
/// root, or `(NaN, NaN)` when none was found within the limits.
pub(super) fn newton_raphson<F, C>(
    mut function: F,
    constraint: C,
    start: (f64, f64),
    config: &SolverConfig,
) -> (f64, f64)
where
    F: FnMut(f64, f64) -> ([f64; 2], [f64; 4]),
    C: Fn(f64, f64) -> bool,
{
    let prepared = &config.start_values;
    let per_try = u64::from(config.iterations_per_try);
    // NewtonRaphson2D.configure: with prepared start values the total is (len + 1) · per try.
    let iterations_total = (prepared.len() as u64 + 1).saturating_mul(per_try);
    let total_start = Instant::now();
    let mut total_iterations = 0u64;
    let mut offset = 0usize;
    let mut first = true;

    'outer: while total_iterations <= iterations_total {
        let try_start = Instant::now();
        let mut iterations = 0u64;
        let (mut x, mut y) = if first {
            first = false;
            start
        } else if let Some(&value) = prepared.get(offset) {
            offset += 1;
            value
        } else {
            // ARX would draw random start values here; this port stops.
            break 'outer;
        };

        loop {
            total_iterations += 1;
            let (object, d) = function(x, y);
            if object[0].abs() <= config.accuracy && object[1].abs() <= config.accuracy {
                return (x, y);
            }
            // SquareMatrix2D.inverse(), Vector2D.times(), Vector2D.minus().
            let scalar = 1.0 / (d[0] * d[3] - d[1] * d[2]);
            let (i1, i2, i3, i4) = (d[3] * scalar, -d[1] * scalar, -d[2] * scalar, d[0] * scalar);
            let step_x = i1 * object[0] + i2 * object[1];
            let step_y = i3 * object[0] + i4 * object[1];
            x -= step_x;
            y -= step_y;

            let over_total = config
                .time_total
                .is_some_and(|limit| total_start.elapsed() > limit);
            if over_total || (!prepared.is_empty() && offset == prepared.len()) {
                break 'outer;
            }
            if !constraint(x, y) {
                break;
            }
            let exhausted = iterations >= per_try;
            iterations += 1;
            let over_try = config
                .time_per_try
                .is_some_and(|limit| try_start.elapsed() > limit);
            if x.is_nan() || y.is_nan() || exhausted || over_try {
                break;
            }
        }
    }
    (f64::NAN, f64::NAN)
}
