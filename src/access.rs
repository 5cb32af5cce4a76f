//! Who the SQL users of a registration are ([`Access`]), the options of
//! [`crate::register_with`] ([`RegisterOptions`]) and the data owner's policy for public
//! users ([`PublicPolicy`]).

use crate::budget::config::AnonymizeOptions;
use crate::progress::ProgressFn;
use crate::pseudonym::PseudonymKey;
use crate::public::policy::PublicPolicy;
use crate::releases::events::ReleaseEventFn;
pub use crate::releases::Principal;
use crate::releases::SharedReleases;

/// Who the SQL users of a registration are: it decides which functions exist, which tables
/// SQL can reach and whether SQL can change the privacy-budget settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Access {
    /// Analysts or the public (the default of [`crate::register`]); the threat model of
    /// `docs/METHODS.md` ("Who the adversary is") applies. The session reaches only what
    /// the owner published ([`PublicPolicy`]): releases and their public metadata, and the
    /// tables declared public. Sources are reached only through `anonymize(...)`; no
    /// statement creates, changes, copies or drops anything; owner-only functions (exact
    /// counts of the raw data) do not exist; `seed` and `max_release_rows` are refused;
    /// errors say nothing about the data; the `anonymize.*` budget settings are the ones
    /// given in [`RegisterOptions::budget`], and a release needs a finite ε budget.
    #[default]
    Public,
    /// The data owner (what `dfanon` registers unless started with `--public`): every
    /// function, every table, detailed errors, and `SET anonymize.*` changes the budget
    /// settings of the session (never lowering what was spent; see the `budget` module).
    Owner,
}

/// Options for [`crate::register_with`].
#[derive(Default, Clone)]
pub struct RegisterOptions {
    /// Called as long searches progress: `(phase, done, total)`.
    pub progress: Option<ProgressFn>,
    /// Who the SQL users are (default: [`Access::Public`]).
    pub access: Access,
    /// The budget settings (`anonymize.epsilon_budget`, `anonymize.delta_budget`,
    /// `anonymize.ledger_path`): fixed for [`Access::Public`], initial values for
    /// [`Access::Owner`]. Default: unlimited budgets, ledger in memory; a public
    /// registration refuses to release until an ε budget is set.
    pub budget: AnonymizeOptions,
    /// Largest `max_release_rows` any owner call may use (default: no ceiling beyond each
    /// call's own limit). Public registrations use [`PublicPolicy::max_release_rows`].
    pub max_release_rows: Option<u64>,
    /// What public users may reach and call ([`Access::Public`] only).
    pub public: PublicPolicy,
    /// The secret key of pseudonyms (`identifier_mode => 'pseudonym'`): the same value gets
    /// the same pseudonym in every release of this registration (default: none, and
    /// pseudonyms are refused). Never shown to SQL users.
    pub pseudonym_key: Option<PseudonymKey>,
    /// The releases and ledger this registration shares with others (default: its own).
    /// Registrations over the same data that share them serve the same request as one
    /// release, charged once, whoever asks: what a server gives all its sessions, because
    /// users who pool their releases add up their budgets.
    pub releases: Option<SharedReleases>,
    /// The user whose requests this registration makes, with their quota (default: none,
    /// only the table's budget applies).
    pub principal: Option<Principal>,
    /// Told of every release a call of this registration is served: drawn and charged
    /// now, or read from the store (default: nobody). A server's audit trail listens here.
    pub on_release: Option<ReleaseEventFn>,
}

impl std::fmt::Debug for RegisterOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisterOptions")
            .field("access", &self.access)
            .field("budget", &self.budget)
            .field("max_release_rows", &self.max_release_rows)
            .field("public", &self.public)
            .field("pseudonym_key", &self.pseudonym_key)
            .field("releases", &self.releases)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl RegisterOptions {
    /// Options for the data owner: every function, budget settings changeable by SQL.
    pub fn owner() -> Self {
        Self {
            access: Access::Owner,
            ..Self::default()
        }
    }

    /// Options for public users under `policy`, with an ε budget per source table.
    pub fn public(policy: PublicPolicy, epsilon_budget: f64) -> Self {
        let mut options = Self {
            access: Access::Public,
            public: policy,
            ..Self::default()
        };
        options.budget.epsilon_budget = epsilon_budget;
        options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_tables_match_exactly_or_by_prefix() {
        let policy = PublicPolicy {
            tables: vec!["nps_hierarchy_*".into(), "codes".into()],
            ..PublicPolicy::default()
        };
        assert!(policy.is_public_table("nps_hierarchy_age"));
        assert!(policy.is_public_table("codes"));
        assert!(!policy.is_public_table("codes2"));
        assert!(!policy.is_public_table("nps"));
        assert!(!policy.is_public_table("NPS_HIERARCHY_AGE"));
        assert!(!PublicPolicy::default().is_public_table("nps"));
    }
}
