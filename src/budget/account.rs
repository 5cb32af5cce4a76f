//! The accounting types of the privacy budget: what a release costs, what a table has
//! spent, and the limits. They depend on nothing else in the crate, so the ledger, its file
//! store and the methods (which state their cost) can all use them.

use std::collections::BTreeMap;

/// What one source table has spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Account {
    /// Number of releases charged.
    pub releases: u64,
    /// Sum of the ε of those releases.
    pub epsilon_spent: f64,
    /// Sum of the δ of those releases.
    pub delta_spent: f64,
}

impl Account {
    /// The larger of two accounts, figure by figure: what a session enforces when it knows
    /// both (see the ledger's floor).
    pub fn max(self, other: Account) -> Account {
        Account {
            releases: self.releases.max(other.releases),
            epsilon_spent: self.epsilon_spent.max(other.epsilon_spent),
            delta_spent: self.delta_spent.max(other.delta_spent),
        }
    }
}

/// The privacy parameters of one release (basic sequential composition adds them up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// ε of the release.
    pub epsilon: f64,
    /// δ of the release.
    pub delta: f64,
}

impl Cost {
    /// What a release without a differential-privacy budget costs: a syntactic method's,
    /// or a seeded one (which has no guarantee).
    pub const NONE: Cost = Cost {
        epsilon: 0.0,
        delta: 0.0,
    };
}

/// Per-table limits (`f64::INFINITY` = unlimited).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Total ε a table may spend.
    pub epsilon: f64,
    /// Total δ a table may spend.
    pub delta: f64,
}

/// The key of a ledger account: a source table's key ([`super::ledger::table_key`]) when
/// rows are the privacy unit, or the table's key and the person column when persons are.
/// [`AccountKey::text`] writes the key the ledger stores and [`AccountKey::parse`] reads it
/// back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountKey<'a> {
    /// The source table's key.
    pub table: &'a str,
    /// The person column, when a person is the privacy unit.
    pub person: Option<&'a str>,
}

/// What separates a table's key from the person column in a per-person account's key.
const PERSON_ACCOUNT: &str = " per person ";

impl<'a> AccountKey<'a> {
    /// The key as the ledger stores it: `datafusion.public.nps`, or
    /// `datafusion.public.nps per person patient_id`.
    pub fn text(&self) -> String {
        match self.person {
            None => self.table.to_string(),
            Some(person) => format!("{}{PERSON_ACCOUNT}{person}", self.table),
        }
    }

    /// The table and the person column of a stored key.
    pub fn parse(key: &'a str) -> Self {
        match key.split_once(PERSON_ACCOUNT) {
            Some((table, person)) => Self {
                table,
                person: Some(person),
            },
            None => Self {
                table: key,
                person: None,
            },
        }
    }
}

/// All accounts, by table key.
pub type Accounts = BTreeMap<String, Account>;
