//! What a registration hears of the releases its calls are served
//! ([`crate::RegisterOptions::on_release`]): one event per call served a release, drawn now
//! (and charged) or read from the store. A server writes them to its audit trail beside the
//! statement that asked.

use std::sync::Arc;

/// A release served to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseEvent {
    /// The source table's ledger account, as `privacy_budget()` names it.
    pub account: String,
    /// The method's name.
    pub method: String,
    /// Whether this call drew the release, and charged it; `false` when it was served
    /// from the store (drawn by an earlier call, or replayed from a kept draw).
    pub drawn: bool,
    /// ε charged to the source table's account by this call (0 when not drawn, or seeded).
    pub epsilon: f64,
    /// δ charged likewise.
    pub delta: f64,
    /// Whether the release is seeded (an owner's trial: no guarantee, nothing charged).
    pub seeded: bool,
    /// What is left of the asking user's ε quota on this source after the call, when the
    /// registration's user has one ([`crate::Principal`]).
    pub quota_left: Option<f64>,
}

/// Called with every [`ReleaseEvent`] of a registration's calls.
pub type ReleaseEventFn = Arc<dyn Fn(&ReleaseEvent) + Send + Sync>;
