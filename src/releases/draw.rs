//! Drawing a release: served from its cache entry, replayed from a kept draw, or computed
//! now, charged before anything is drawn and refunded if nothing is released.

use std::sync::Arc;

use datafusion::common::{exec_err, DataFusionError, Result};
use datafusion::execution::SessionState;

use super::charges::{PendingCharges, Principal};
use super::events::{ReleaseEvent, ReleaseEventFn};
use super::kept_draws::{self, KeptDraw};
use super::{CacheEntry, SharedReleases, TableVersion};
use crate::budget::{self, charge_release, Cost};
use crate::engine::{self, ReleaseOutput};
use crate::progress::ProgressFn;
use crate::public::{PublicRules, PUBLIC_FAILURE};
use crate::release::{ReleaseRowLimit, TooManyRows};

/// Who asks for a release, and what that changes: a public registration's rules (its
/// failures all look alike and its releases have a row ceiling), the user whose quota is
/// charged, and where progress goes.
#[derive(Default, Clone)]
pub(crate) struct Asker {
    /// The rules of a public registration; `None` for the data owner.
    pub(crate) public: Option<Arc<PublicRules>>,
    /// The user whose quota is charged, if they have one.
    pub(crate) principal: Option<Principal>,
    /// Called as long searches progress.
    pub(crate) progress: Option<ProgressFn>,
    /// Told of every release a call is served.
    pub(crate) on_release: Option<ReleaseEventFn>,
}

impl SharedReleases {
    /// The release of `entry` for the tables as they are now: the cached one, or computed
    /// and charged now (once, whichever function asks first).
    pub(crate) async fn release(
        &self,
        entry: &CacheEntry,
        limit: ReleaseRowLimit,
        state: &SessionState,
        asker: &Asker,
    ) -> Result<Arc<ReleaseOutput>> {
        if let Some(rules) = &asker.public {
            rules.check_settings("anonymize", state)?;
        }
        let progress = asker.progress.clone();
        let request = &entry.request;
        let mut tables = vec![&request.source];
        tables.extend(request.qi.iter().filter_map(|q| q.hierarchy.as_ref()));
        let version = TableVersion::of(&tables, state).await?;
        let cell = entry.cell_for(version);
        // What this call charged, if it drew the release (`None` when served from the
        // store).
        let drawn: std::sync::Mutex<Option<Cost>> = std::sync::Mutex::new(None);
        let output = cell
            .get_or_try_init(|| async {
                // A release this request drew in an earlier process over the same tables
                // (kept beside the ledger file) is drawn again, not charged again. Tables
                // that cannot be read for their fingerprint are not kept: the draw below
                // meets the same failure and reports it as every failure is reported.
                let kept = KeptDraw::of(request, state).await.ok().flatten();
                if let Some(kept) = &kept {
                    if let Some(output) = kept.replay(request, state, &progress, limit).await {
                        return Ok(Arc::new(output));
                    }
                }
                // Charged once, before anything is drawn; refunded if nothing is released.
                // A seeded release (owner sessions only) has no privacy guarantee (its
                // `guarantee` says so) and is not a DP release: it is counted in the
                // ledger's releases but charges no ε or δ.
                let cost = match request.seed {
                    Some(_) => Cost::NONE,
                    None => request.cost(),
                };
                // Taken back if this future is dropped before the release exists (the
                // client went away): nothing was released.
                let mut pending = PendingCharges {
                    charge: None,
                    quota: self.charge_quota(asker.principal.as_ref(), request, cost, state)?,
                };
                let charge = charge_release(
                    &self.0.ledger,
                    &request.account(),
                    cost,
                    state.config_options(),
                )
                .map_err(|e| pending.refund(e))?;
                pending.charge = Some(charge);
                let seed = match &kept {
                    Some(_) => Some(kept_draws::fresh_seed().map_err(|e| pending.refund(e))?),
                    None => None,
                };
                let computed = engine::compute_release(request, state, progress, limit, seed);
                match (computed.await, &asker.public) {
                    (Ok(mut output), _) => {
                        pending.keep();
                        if let Ok(mut slot) = drawn.lock() {
                            *slot = Some(cost);
                        }
                        if let (Some(kept), Some(seed)) = (&kept, seed) {
                            kept.record(&seed, &mut output);
                        }
                        Ok(Arc::new(output))
                    }
                    (Err(e), None) => Err(pending.refund(e)),
                    // A public user learns nothing from why a release failed: the refusal
                    // is the same for every cause, and refunded (its causes are the
                    // arguments, the public declarations and the owner's resources:
                    // docs/METHODS.md §8.3). But a draw that passed the public row limit
                    // failed on the drawn release itself: that charge stays (as after the
                    // post-draw check below).
                    (Err(e), Some(_)) => match TooManyRows::find(&e) {
                        Some(too_many) => {
                            pending.keep();
                            Err(DataFusionError::Execution(too_many.to_string()))
                        }
                        None => {
                            Err(pending.refund(DataFusionError::Execution(PUBLIC_FAILURE.into())))
                        }
                    },
                }
            })
            .await?;
        if let Some(on_release) = &asker.on_release {
            let charged = drawn.lock().ok().and_then(|slot| *slot);
            let ledger = budget::config::options(state.config_options()).ledger_path;
            let quota_left = asker.principal.as_ref().and_then(|principal| {
                let accounts = self.quota_accounts(principal, ledger.as_deref()).ok()?;
                let spent = accounts
                    .get(&request.account())
                    .map_or(0.0, |a| a.epsilon_spent);
                Some(principal.epsilon_quota - spent)
            });
            on_release(&ReleaseEvent {
                account: request.account(),
                method: request.method.name().to_string(),
                drawn: charged.is_some(),
                epsilon: charged.map_or(0.0, |c| c.epsilon),
                delta: charged.map_or(0.0, |c| c.delta),
                seeded: request.seed.is_some(),
                quota_left,
            });
        }
        // The ceiling is checked on the released rows, a function of the release itself:
        // the refusal reveals nothing beyond it, and the charge stays (the draw happened,
        // and the same release is refused again, never drawn anew).
        if let Some(rules) = &asker.public {
            if output.rows.row_count() > rules.max_release_rows() {
                let too_many = TooManyRows {
                    limit: rules.max_release_rows(),
                };
                return exec_err!("{too_many}");
            }
        }
        Ok(output.clone())
    }
}
