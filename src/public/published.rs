//! The names of the releases the data owner published (`anonymize_publish`): tables public
//! users may read besides the declared ones ([`crate::PublicPolicy::tables`]). One set is
//! shared by the owner's registration, which adds and removes names, and every public
//! session over it, whose catalog shows them.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

/// A shared set of published table names.
#[derive(Debug, Clone, Default)]
pub struct PublishedNames(Arc<RwLock<BTreeSet<String>>>);

impl PublishedNames {
    /// Whether `name` (a table's name as registered) is a published release.
    pub fn contains(&self, name: &str) -> bool {
        match self.0.read() {
            Ok(names) => names.contains(name),
            Err(poisoned) => poisoned.into_inner().contains(name),
        }
    }

    /// Adds `name`.
    pub fn insert(&self, name: &str) {
        match self.0.write() {
            Ok(mut names) => names.insert(name.to_string()),
            Err(poisoned) => poisoned.into_inner().insert(name.to_string()),
        };
    }

    /// Removes `name`; whether it was there.
    pub fn remove(&self, name: &str) -> bool {
        match self.0.write() {
            Ok(mut names) => names.remove(name),
            Err(poisoned) => poisoned.into_inner().remove(name),
        }
    }
}
