//! What a release charges: its source's account in the ledger, and the asking user's quota
//! ([`Principal`]) in a second ledger beside it; both taken back on one path
//! ([`PendingCharges`]) when nothing is released.

use std::path::{Path, PathBuf};

use datafusion::common::{plan_err, DataFusionError, Result};
use datafusion::execution::SessionState;

use super::SharedReleases;
use crate::budget::account::{Accounts, Limits};
use crate::budget::ledger::SLACK;
use crate::budget::{self, Charge, Cost};
use crate::engine::AnonymizeRequest;

/// A user of a shared store of releases ([`crate::RegisterOptions::releases`]) with a
/// quota: the most ε their requests may add to each source table's account, on top of the
/// table's budget for all users together. A request another user already made is served
/// without a new charge, to anyone's quota.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// The user's name, as the quota accounts show it.
    pub name: String,
    /// Most ε this user's releases may add per source table; `f64::INFINITY` for none.
    pub epsilon_quota: f64,
}

impl SharedReleases {
    /// Charges `cost` to the user's quota on the request's source, if the
    /// user has one; the charge to take back if the release is not made.
    pub(super) fn charge_quota(
        &self,
        principal: Option<&Principal>,
        request: &AnonymizeRequest,
        cost: Cost,
        state: &SessionState,
    ) -> Result<Option<Charge<'_>>> {
        let Some(principal) = principal else {
            return Ok(None);
        };
        let config = state.config_options();
        let table = request.account();
        let account = quota_account(&table, &principal.name);
        let file = budget::config::options(config)
            .ledger_path
            .map(|path| quota_file(&path));
        let limits = Limits {
            epsilon: principal.epsilon_quota,
            delta: f64::INFINITY,
        };
        let ledger = &self.0.quotas;
        match Charge::take(ledger, &account, cost, limits, file.clone()) {
            Ok(charge) => Ok(Some(charge)),
            Err(e) => {
                let spent = ledger
                    .accounts(file.as_deref())
                    .ok()
                    .and_then(|a| a.get(&account).copied())
                    .unwrap_or_default()
                    .epsilon_spent;
                if spent + cost.epsilon <= principal.epsilon_quota * (1.0 + SLACK) {
                    return Err(e);
                }
                plan_err!(
                "privacy quota exceeded for user '{}' on table '{table}': this release costs epsilon = {}; the user's releases of it have spent epsilon = {spent} of their quota of {}. Nothing was released",
                principal.name,
                cost.epsilon,
                principal.epsilon_quota
            )
            }
        }
    }

    /// The quota accounts of `principal`, keyed by the source's account (as
    /// `privacy_budget()` keys it), from the quota ledger beside the ledger file `ledger`
    /// (else memory).
    pub(crate) fn quota_accounts(
        &self,
        principal: &Principal,
        ledger: Option<&Path>,
    ) -> Result<Accounts> {
        let suffix = quota_account("", &principal.name);
        let file = ledger.map(quota_file);
        Ok(self
            .0
            .quotas
            .accounts(file.as_deref())?
            .into_iter()
            .filter_map(|(key, account)| {
                let table = key.strip_suffix(&suffix)?;
                // Another user's account whose name ends like this one's is not theirs.
                (!table.contains(" [user ")).then(|| (table.to_string(), account))
            })
            .collect())
    }
}

/// The quota account of user `name` on the source account `table`.
fn quota_account(table: &str, name: &str) -> String {
    format!("{table} [user {name}]")
}

/// The ledger file of users' quotas beside the ledger file `path`: `<path>.quotas`.
fn quota_file(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".quotas");
    PathBuf::from(name)
}

/// The charges of a release being computed: kept when it is made, taken back when it
/// fails or when its computation is dropped unfinished (nothing was released). A refund
/// on drop that cannot be written leaves the charge (the safe side).
pub(super) struct PendingCharges<'a> {
    /// The charge to the source's account.
    pub(super) charge: Option<Charge<'a>>,
    /// The charge to the user's quota.
    pub(super) quota: Option<Charge<'a>>,
}

impl PendingCharges<'_> {
    /// The release was made: the charges stay.
    pub(super) fn keep(&mut self) {
        self.charge = None;
        self.quota = None;
    }

    /// The release failed with `error`: takes the charges back; returns the error.
    pub(super) fn refund(&mut self, error: DataFusionError) -> DataFusionError {
        let error = match self.charge.take() {
            Some(charge) => charge.refund(error),
            None => error,
        };
        match self.quota.take() {
            Some(quota) => quota.refund(error),
            None => error,
        }
    }
}

impl Drop for PendingCharges<'_> {
    fn drop(&mut self) {
        if self.charge.is_some() || self.quota.is_some() {
            let _ = self.refund(DataFusionError::Execution(String::new()));
        }
    }
}
