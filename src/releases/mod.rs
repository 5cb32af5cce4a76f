//! The store of releases a registration draws from, and what drawing one involves.
//!
//! Every release of a request is kept in one cache entry keyed by the request's canonical
//! arguments (validated, every default filled in) and served to every later scan of any
//! of the `anonymize` functions with them: a query never triggers a new random draw behind
//! the user's back. If the tables changed since (an `INSERT INTO` the source, new files;
//! [`version`]), a new release is computed and charged instead of serving the stale one.
//!
//! A release is charged once, before anything is drawn, to its source's account in the
//! ledger and to the asking user's quota ([`charges`]), and refunded if nothing is
//! released ([`draw`]). The store also holds the releases the data owner published under
//! a table name ([`publications`]), and the draws kept beside a ledger file so that a
//! restarted process serves the same releases ([`kept_draws`]).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::OnceCell;

use crate::budget::ledger::Ledger;
use crate::engine::{AnonymizeRequest, ReleaseOutput};
use crate::public::published::PublishedNames;

pub mod card;
mod charges;
mod draw;
pub mod events;
mod fingerprint;
mod kept_draws;
pub(crate) mod publications;
mod published_files;
mod source_memo;
pub use published_files::report_path as publication_report_path;
pub use source_memo::SourceMemo;
mod version;

pub use charges::Principal;
pub(crate) use draw::Asker;
pub(crate) use publications::{same_request, Publication};
use version::TableVersion;

/// The releases and privacy ledger of one or more registrations: every registration has
/// its own unless [`crate::RegisterOptions::releases`] gives one to share (a server's
/// sessions share one, so the same request from two users is one release and one charge;
/// an owner's and a public user's requests are drawn apart, as their semantics differ).
#[derive(Clone, Default)]
pub struct SharedReleases(Arc<ReleaseStore>);

impl std::fmt::Debug for SharedReleases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedReleases").finish_non_exhaustive()
    }
}

impl SharedReleases {
    /// An empty store: no release cached, nothing spent.
    pub fn new() -> Self {
        Self::default()
    }

    /// The names of the releases published in this store, which public sessions over it
    /// show.
    pub(crate) fn published_names(&self) -> PublishedNames {
        self.0.published_names.clone()
    }

    /// The privacy ledger every release of this store is charged to.
    pub fn ledger(&self) -> Arc<Ledger> {
        self.0.ledger.clone()
    }

    /// The cache entry of `request`: the one made for an equal request before, else a new
    /// one. Nothing is read or drawn.
    pub(crate) fn entry(&self, request: AnonymizeRequest) -> Arc<CacheEntry> {
        let key = request.cache_key();
        let mut entries = lock(&self.0.entries);
        entries
            .entry(key)
            .or_insert_with(|| {
                Arc::new(CacheEntry {
                    request,
                    current: Mutex::new(None),
                })
            })
            .clone()
    }
}

/// What [`SharedReleases`] holds.
#[derive(Default)]
struct ReleaseStore {
    entries: Mutex<HashMap<String, Arc<CacheEntry>>>,
    ledger: Arc<Ledger>,
    /// What each user ([`Principal`]) has added to each table's account.
    quotas: Ledger,
    /// The published releases, by table name (`anonymize_publish`).
    published: Mutex<BTreeMap<String, Arc<Publication>>>,
    /// Their names, as public sessions' catalogs read them.
    published_names: PublishedNames,
    /// The ledger files whose kept publications this store has read back.
    restored: Mutex<Vec<PathBuf>>,
}

/// The guard of `mutex`, also after a thread panicked holding it (the data it guards stay
/// consistent: every update under it is a single insert or replace).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The release of one request, computed at most once.
type ReleaseCell = Arc<OnceCell<Arc<ReleaseOutput>>>;

/// One cached release. Holding the providers keeps their identity (address) stable.
#[derive(Debug)]
pub(crate) struct CacheEntry {
    /// The request whose release this is.
    pub(crate) request: AnonymizeRequest,
    /// The release of the tables as they were at one [`TableVersion`]; replaced when a
    /// scan finds the tables changed.
    current: Mutex<Option<(TableVersion, ReleaseCell)>>,
}

impl CacheEntry {
    /// The release cell for the tables at `version`: the cached one if they have not
    /// changed since, else a fresh one (the stale release is never served again).
    fn cell_for(&self, version: TableVersion) -> ReleaseCell {
        let mut current = lock(&self.current);
        match &*current {
            Some((seen, cell)) if *seen == version => cell.clone(),
            _ => {
                let cell = Arc::new(OnceCell::new());
                *current = Some((version, cell.clone()));
                cell
            }
        }
    }

    /// The release drawn last for this request, if one was (whatever the tables' version
    /// now): what a statement that just read it was served.
    pub(crate) fn drawn(&self) -> Option<Arc<ReleaseOutput>> {
        lock(&self.current)
            .as_ref()
            .and_then(|(_, cell)| cell.get().cloned())
    }
}
