//! The privacy ledger: how much ε and δ each source table has spent.
//!
//! A release is charged once, when it is computed, by [`Ledger::charge`]; a release that
//! would take a table past its limits is refused before anything is drawn. Accounts are
//! keyed by [`table_key`]. The ledger lives in memory for the registration it belongs to,
//! or — when `anonymize.ledger_path` is set — in a file shared by every session that names
//! it (see the `store` module).

use std::path::Path;
use std::sync::Mutex;

use datafusion::common::{internal_err, plan_err, Result, TableReference};

use super::account::{Account, AccountKey, Accounts, Cost, Limits};
use super::config::format_limit;
use super::store;

/// Relative slack of the limit comparison, `spent + cost <= limit · (1 + SLACK)`.
///
/// Budgets and costs are decimal numbers stored as binary floating point: `0.1 + 0.2`
/// is `0.30000000000000004`, so without slack three releases of ε = 0.1 would not fit a
/// budget of 0.3. A relative slack of `1e-12` absorbs that rounding (a few units in the
/// last place per addition) and is far below any meaningful difference in ε; it is also
/// below the noise the samplers add on top of the requested scale (they round ε *down* to a
/// multiple of `2^-30` before deriving exact noise scales).
pub const SLACK: f64 = 1e-12;

/// The ledger of one registration (see the module documentation).
///
/// Besides the in-memory ledger it keeps a *floor*: for every table, the most this
/// registration has seen spent, in memory or in any ledger file it charged or read. A
/// charge is always checked against the larger of the floor and the file's account, and
/// the file receives that larger figure. So pointing `anonymize.ledger_path` at a fresh
/// file, or back to memory, never lowers the budget a session enforces: the spent amount
/// moves with it.
#[derive(Debug, Default)]
pub struct Ledger {
    memory: Mutex<Accounts>,
}

/// Account key of a source table named `name` in `anonymize(name, ...)`: the name
/// resolved against the session's default catalog and schema and lower-cased, e.g.
/// `datafusion.public.nps`.
///
/// Lower-casing merges tables whose names differ only in letter case into one account,
/// which can only charge more, never less. A view or a copy of a table is a different
/// name and so a different account.
pub fn table_key(name: &str, default_catalog: &str, default_schema: &str) -> String {
    let lower = name.trim().to_lowercase();
    let reference = if lower.contains('.') {
        TableReference::from(lower.as_str())
    } else {
        TableReference::bare(lower.as_str())
    };
    reference
        .resolve(default_catalog, default_schema)
        .to_string()
}

fn fits(spent: f64, cost: f64, limit: f64) -> bool {
    limit.is_infinite() || spent + cost <= limit * (1.0 + SLACK)
}

fn remaining(spent: f64, limit: f64) -> f64 {
    if limit.is_infinite() {
        f64::INFINITY
    } else {
        (limit - spent).max(0.0)
    }
}

/// The table of an account key and its person column (`None`: rows are the unit).
pub fn unit_of(account: &str) -> (&str, Option<&str>) {
    let key = AccountKey::parse(account);
    (key.table, key.person)
}

/// Refuses a charge of `cost` to `account` when its table has already spent budget in
/// another privacy unit: budgets in different units do not add up (a release per person is
/// per row only at up to twice its epsilon; one per row is unbounded per person). Releases
/// that cost nothing (syntactic methods, seeded releases) never conflict.
fn check_one_unit(accounts: &Accounts, account: &str, cost: Cost) -> Result<()> {
    if cost.epsilon == 0.0 && cost.delta == 0.0 {
        return Ok(());
    }
    let (table, unit) = unit_of(account);
    let describe = |unit: Option<&str>| match unit {
        None => "per row".to_string(),
        Some(person) => format!("per person '{person}'"),
    };
    for (other, spent) in accounts {
        let (other_table, other_unit) = unit_of(other);
        let spent_any = spent.epsilon_spent > 0.0 || spent.delta_spent > 0.0;
        if other_table == table && other_unit != unit && spent_any {
            return plan_err!(
                "table '{table}' has spent epsilon = {} accounted {}; this release is {}. A table's budget is kept in one privacy unit: release it {} too{}",
                spent.epsilon_spent,
                describe(other_unit),
                describe(unit),
                describe(other_unit),
                match other_unit {
                    Some(person) => format!(" (person => '{person}')"),
                    None => " (without person)".to_string(),
                }
            );
        }
    }
    Ok(())
}

/// Adds `cost` to `table`'s account if it fits `limits`; otherwise leaves `accounts`
/// unchanged and returns an error naming the table, the cost, the spent and the remaining
/// budget. A table whose releases are accounted in another privacy unit is refused.
pub fn apply_charge(
    accounts: &mut Accounts,
    table: &str,
    cost: Cost,
    limits: Limits,
) -> Result<()> {
    for (name, value) in [("epsilon", cost.epsilon), ("delta", cost.delta)] {
        if !(value.is_finite() && value >= 0.0) {
            return internal_err!("a release reported an invalid {name} cost {value}");
        }
    }
    check_one_unit(accounts, table, cost)?;
    let account = accounts.get(table).copied().unwrap_or_default();
    if !fits(account.epsilon_spent, cost.epsilon, limits.epsilon)
        || !fits(account.delta_spent, cost.delta, limits.delta)
    {
        return plan_err!(
            "privacy budget exceeded for table '{table}': this release costs epsilon = {}, delta = {}; \
             the table has spent epsilon = {}, delta = {} in {} release(s) and has remaining \
             epsilon = {}, delta = {} (budget epsilon = {}, delta = {}). Nothing was released. \
             The budget is the data owner's to set (anonymize.epsilon_budget, anonymize.delta_budget)",
            cost.epsilon,
            cost.delta,
            account.epsilon_spent,
            account.delta_spent,
            account.releases,
            format_limit(remaining(account.epsilon_spent, limits.epsilon)),
            format_limit(remaining(account.delta_spent, limits.delta)),
            format_limit(limits.epsilon),
            format_limit(limits.delta)
        );
    }
    accounts.insert(
        table.to_string(),
        Account {
            releases: account.releases + 1,
            epsilon_spent: account.epsilon_spent + cost.epsilon,
            delta_spent: account.delta_spent + cost.delta,
        },
    );
    Ok(())
}

/// Takes back a charge made by [`apply_charge`] (for a release that failed before anything
/// was published).
pub fn apply_refund(accounts: &mut Accounts, table: &str, cost: Cost) {
    if let Some(account) = accounts.get_mut(table) {
        account.releases = account.releases.saturating_sub(1);
        account.epsilon_spent = (account.epsilon_spent - cost.epsilon).max(0.0);
        account.delta_spent = (account.delta_spent - cost.delta).max(0.0);
        if account.releases == 0 {
            accounts.remove(table);
        }
    }
}

impl Ledger {
    /// Charges `cost` to `table` (see [`apply_charge`]). With `file`, the charge is made in
    /// that ledger file (its real path, symbolic links resolved) under an exclusive lock and
    /// written back atomically before this returns, starting from the larger of the file's
    /// account and this registration's floor; otherwise in this registration's memory.
    pub fn charge(
        &self,
        table: &str,
        cost: Cost,
        limits: Limits,
        file: Option<&Path>,
    ) -> Result<()> {
        match file {
            Some(path) => {
                let mut charged = None;
                check_one_unit(&self.lock(), table, cost)?;
                store::update(path, |accounts| {
                    self.raise_to_floor(accounts, table);
                    apply_charge(accounts, table, cost, limits)?;
                    charged = accounts.get(table).copied();
                    Ok(())
                })?;
                if let Some(account) = charged {
                    self.raise_floor(table, account);
                }
                Ok(())
            }
            None => apply_charge(&mut self.lock(), table, cost, limits),
        }
    }

    /// Takes back a charge (see [`apply_refund`]), in the file and in the floor.
    pub fn refund(&self, table: &str, cost: Cost, file: Option<&Path>) -> Result<()> {
        if let Some(path) = file {
            store::update(path, |accounts| {
                apply_refund(accounts, table, cost);
                Ok(())
            })?;
        }
        apply_refund(&mut self.lock(), table, cost);
        Ok(())
    }

    /// The accounts in effect: with `file`, the file's raised to this registration's floor
    /// (what a charge would start from); otherwise memory.
    pub fn accounts(&self, file: Option<&Path>) -> Result<Accounts> {
        match file {
            Some(path) => {
                let mut accounts = store::load(path)?;
                let mut floor = self.lock();
                for (table, account) in floor.iter() {
                    let merged = accounts
                        .get(table)
                        .copied()
                        .unwrap_or_default()
                        .max(*account);
                    accounts.insert(table.clone(), merged);
                }
                for (table, account) in &accounts {
                    let merged = floor.get(table).copied().unwrap_or_default().max(*account);
                    floor.insert(table.clone(), merged);
                }
                Ok(accounts)
            }
            None => Ok(self.lock().clone()),
        }
    }

    /// Raises `table`'s account in `accounts` to the floor.
    fn raise_to_floor(&self, accounts: &mut Accounts, table: &str) {
        if let Some(floor) = self.lock().get(table).copied() {
            let account = accounts.get(table).copied().unwrap_or_default();
            accounts.insert(table.to_string(), account.max(floor));
        }
    }

    /// Raises the floor of `table` to `account`.
    fn raise_floor(&self, table: &str, account: Account) {
        let mut floor = self.lock();
        let merged = floor.get(table).copied().unwrap_or_default().max(account);
        floor.insert(table.to_string(), merged);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Accounts> {
        match self.memory.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNLIMITED: Limits = Limits {
        epsilon: f64::INFINITY,
        delta: f64::INFINITY,
    };

    fn cost(epsilon: f64, delta: f64) -> Cost {
        Cost { epsilon, delta }
    }

    #[test]
    fn keys_resolve_names() {
        assert_eq!(
            table_key("nps", "datafusion", "public"),
            "datafusion.public.nps"
        );
        assert_eq!(
            table_key("NPS", "datafusion", "public"),
            "datafusion.public.nps"
        );
        assert_eq!(table_key("s.T", "datafusion", "public"), "datafusion.s.t");
        assert_eq!(table_key("c.s.t", "datafusion", "public"), "c.s.t");
        assert_eq!(
            table_key("my table", "datafusion", "public"),
            "datafusion.public.my table"
        );
    }

    #[test]
    fn charges_accumulate_per_table() {
        let mut a = Accounts::new();
        apply_charge(&mut a, "x", cost(1.0, 0.0), UNLIMITED).unwrap();
        apply_charge(&mut a, "x", cost(0.5, 1e-6), UNLIMITED).unwrap();
        apply_charge(&mut a, "y", cost(2.0, 0.0), UNLIMITED).unwrap();
        assert_eq!(
            a["x"],
            Account {
                releases: 2,
                epsilon_spent: 1.5,
                delta_spent: 1e-6
            }
        );
        assert_eq!(a["y"].releases, 1);
    }

    #[test]
    fn overspending_is_refused_and_changes_nothing() {
        let limits = Limits {
            epsilon: 2.0,
            delta: 1e-5,
        };
        let mut a = Accounts::new();
        apply_charge(&mut a, "t", cost(1.5, 0.0), limits).unwrap();
        let before = a.clone();
        let err = apply_charge(&mut a, "t", cost(1.0, 0.0), limits)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("privacy budget exceeded for table 't': this release costs epsilon = 1, delta = 0; the table has spent epsilon = 1.5, delta = 0 in 1 release(s) and has remaining epsilon = 0.5, delta = 0.00001 (budget epsilon = 2, delta = 0.00001). Nothing was released."),
            "{err}"
        );
        assert_eq!(a, before);
        // delta alone can exhaust the budget.
        let err = apply_charge(&mut a, "t", cost(0.1, 2e-5), limits)
            .unwrap_err()
            .to_string();
        assert!(err.contains("delta = 0.00002"), "{err}");
        assert_eq!(a, before);
        // Exactly the remainder fits.
        apply_charge(&mut a, "t", cost(0.5, 1e-5), limits).unwrap();
        assert_eq!(a["t"].releases, 2);
        // A zero budget admits only free releases.
        let zero = Limits {
            epsilon: 0.0,
            delta: 0.0,
        };
        assert!(apply_charge(&mut a, "u", cost(1e-9, 0.0), zero).is_err());
        apply_charge(&mut a, "u", cost(0.0, 0.0), zero).unwrap();
    }

    #[test]
    fn decimal_rounding_does_not_refuse_an_exact_fit() {
        let limits = Limits {
            epsilon: 0.3,
            delta: f64::INFINITY,
        };
        let mut a = Accounts::new();
        for _ in 0..3 {
            apply_charge(&mut a, "t", cost(0.1, 0.0), limits).unwrap();
        }
        // 0.1 + 0.1 + 0.1 = 0.30000000000000004 in f64, accepted within SLACK; the next
        // smallest meaningful charge is refused.
        assert!(apply_charge(&mut a, "t", cost(1e-6, 0.0), limits).is_err());
    }

    #[test]
    fn invalid_costs_are_internal_errors() {
        let mut a = Accounts::new();
        for bad in [f64::NAN, -1.0, f64::INFINITY] {
            assert!(apply_charge(&mut a, "t", cost(bad, 0.0), UNLIMITED).is_err());
            assert!(apply_charge(&mut a, "t", cost(0.0, bad), UNLIMITED).is_err());
        }
        assert!(a.is_empty());
    }

    #[test]
    fn refund_restores_the_account() {
        let ledger = Ledger::default();
        ledger.charge("t", cost(1.0, 0.0), UNLIMITED, None).unwrap();
        ledger
            .charge("t", cost(0.25, 0.0), UNLIMITED, None)
            .unwrap();
        ledger.refund("t", cost(0.25, 0.0), None).unwrap();
        let a = ledger.accounts(None).unwrap();
        assert_eq!(
            a["t"],
            Account {
                releases: 1,
                epsilon_spent: 1.0,
                delta_spent: 0.0
            }
        );
        ledger.refund("t", cost(1.0, 0.0), None).unwrap();
        assert!(ledger.accounts(None).unwrap().is_empty());
    }

    #[test]
    fn switching_ledger_files_never_lowers_the_spent_budget() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("first.json");
        let fresh = dir.path().join("fresh.json");
        let limits = Limits {
            epsilon: 2.0,
            delta: f64::INFINITY,
        };
        let ledger = Ledger::default();
        ledger
            .charge("t", cost(1.5, 0.0), limits, Some(&first))
            .unwrap();
        // A fresh file starts from what this registration has spent …
        let err = ledger
            .charge("t", cost(1.0, 0.0), limits, Some(&fresh))
            .unwrap_err()
            .to_string();
        assert!(err.contains("has spent epsilon = 1.5"), "{err}");
        // … and so does memory.
        assert!(ledger.charge("t", cost(1.0, 0.0), limits, None).is_err());
        // What fits is charged on top of the carried amount, which the fresh file records.
        ledger
            .charge("t", cost(0.5, 0.0), limits, Some(&fresh))
            .unwrap();
        let carried = store::load(&fresh).unwrap();
        assert_eq!(carried["t"].epsilon_spent, 2.0);
        assert_eq!(carried["t"].releases, 2);
        // Spending seen in a file read by this registration also raises its floor.
        let other = Ledger::default();
        other.accounts(Some(&first)).unwrap();
        assert!(other.charge("t", cost(1.0, 0.0), limits, None).is_err());
    }
}
