//! The releases the data owner published under a table name (`anonymize_publish`), and
//! their return, from the files kept beside the ledger, when a process starts again.

use std::path::Path;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use super::{lock, published_files, CacheEntry, SharedReleases};
use crate::budget::Cost;
use crate::engine::ReleaseOutput;
use crate::tables::lazy::{BatchSource, LazyTable, Ready};

/// A release the data owner published under a table name.
#[derive(Debug)]
pub(crate) struct Publication {
    /// The request's arguments as the cache compares them: publishing the same request
    /// again under the same name changes nothing.
    pub(crate) arguments: String,
    /// The method's name.
    pub(crate) method: String,
    /// What the release was charged.
    pub(crate) cost: Cost,
    /// How many rows it has.
    pub(crate) rows: u64,
    /// Its public metadata.
    pub(crate) metadata: Vec<(String, String)>,
    /// Where its table is registered (catalog, schema).
    pub(crate) location: (String, String),
}

/// A published release as a host lists it (the server's studio, for one): what a public
/// user may read about it, never its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedRelease {
    /// The table name public users query.
    pub name: String,
    /// The method's name.
    pub method: String,
    /// How many rows it has.
    pub rows: u64,
    /// The ε it was charged.
    pub epsilon: f64,
    /// The δ it was charged.
    pub delta: f64,
    /// Its public metadata (key, value), as `published_metadata(name)` shows it.
    pub metadata: Vec<(String, String)>,
}

impl SharedReleases {
    /// Every published release, by name.
    pub fn published(&self) -> Vec<PublishedRelease> {
        lock(&self.0.published)
            .iter()
            .map(|(name, p)| PublishedRelease {
                name: name.clone(),
                method: p.method.clone(),
                rows: p.rows,
                epsilon: p.cost.epsilon,
                delta: p.cost.delta,
                metadata: p.metadata.clone(),
            })
            .collect()
    }

    /// Reads back the publications kept beside the ledger file `ledger`
    /// ([`published_files`]), once per store and file: each becomes again the table it
    /// was, in the catalog and schema it was in, with nothing drawn or charged.
    pub(crate) fn restore(&self, ctx: &SessionContext, ledger: &Path) -> Result<()> {
        let mut restored = lock(&self.0.restored);
        if restored.iter().any(|p| p == ledger) {
            return Ok(());
        }
        for kept in published_files::load(&published_files::folder(ledger))? {
            let about = kept.description;
            if lock(&self.0.published).contains_key(&kept.name) {
                continue;
            }
            let Some(schema) = ctx
                .catalog(&about.catalog)
                .and_then(|catalog| catalog.schema(&about.schema))
            else {
                return plan_err!(
                    "the release published as '{}' (kept beside the ledger file '{}') belongs in the schema '{}.{}', which this session does not have; create it, or remove the publication's files from '{}'",
                    kept.name,
                    ledger.display(),
                    about.catalog,
                    about.schema,
                    published_files::folder(ledger).display()
                );
            };
            let rows: u64 = kept
                .batches
                .as_slice()
                .iter()
                .map(|b| b.num_rows() as u64)
                .sum();
            let table: Arc<dyn TableProvider> = Arc::new(LazyTable::new(
                kept.schema,
                Arc::new(Ready(Arc::new(kept.batches))),
            ));
            schema.register_table(kept.name.clone(), table)?;
            lock(&self.0.published).insert(
                kept.name.clone(),
                Arc::new(Publication {
                    arguments: about.arguments,
                    method: about.method,
                    cost: Cost {
                        epsilon: about.epsilon,
                        delta: about.delta,
                    },
                    rows,
                    metadata: about.metadata,
                    location: (about.catalog, about.schema),
                }),
            );
            self.0.published_names.insert(&kept.name);
        }
        restored.push(ledger.to_path_buf());
        Ok(())
    }
}

impl SharedReleases {
    /// Publishes `output`, the release of `entry`, as the table `name` of the session's
    /// default schema, kept beside the session's ledger file when it has one. Publishing
    /// the same request under the same name again changes nothing; another request under
    /// a published name, or a name a table already has, is refused.
    pub(crate) fn publish(
        &self,
        name: &str,
        entry: &CacheEntry,
        output: Arc<ReleaseOutput>,
        state: &SessionState,
    ) -> Result<()> {
        let arguments = entry.request.canonical_args.clone();
        let mut published = lock(&self.0.published);
        if let Some(existing) = published.get(name) {
            return same_request(name, existing, &arguments);
        }
        let defaults = &state.config_options().catalog;
        let location = (
            defaults.default_catalog.clone(),
            defaults.default_schema.clone(),
        );
        let schema = state
            .catalog_list()
            .catalog(&location.0)
            .and_then(|catalog| catalog.schema(&location.1))
            .ok_or_else(|| {
                plan_datafusion_err!(
                    "anonymize_publish(): the session's default schema '{}.{}' does not exist",
                    location.0,
                    location.1
                )
            })?;
        if schema.table_exist(name) {
            return plan_err!(
                "anonymize_publish(): a table named '{name}' already exists; publish the release under another name"
            );
        }
        let release_schema = entry.request.release_schema();
        let publication = Publication {
            arguments,
            method: entry.request.method.name().to_string(),
            cost: entry.request.cost(),
            rows: output.rows.row_count(),
            metadata: output.metadata.clone(),
            location,
        };
        // Kept first: a publication that cannot be written is not made.
        if let Some(ledger) = crate::budget::config::options(state.config_options()).ledger_path {
            let description = published_files::Description {
                arguments: publication.arguments.clone(),
                method: publication.method.clone(),
                epsilon: publication.cost.epsilon,
                delta: publication.cost.delta,
                metadata: publication.metadata.clone(),
                catalog: publication.location.0.clone(),
                schema: publication.location.1.clone(),
            };
            published_files::save(
                &published_files::folder(&ledger),
                name,
                &description,
                &release_schema,
                output.rows.iter(None)?,
            )?;
        }
        let table: Arc<dyn TableProvider> = Arc::new(LazyTable::new(
            release_schema,
            Arc::new(Ready(Arc::new(output.rows.clone()))),
        ));
        schema.register_table(name.to_string(), table)?;
        published.insert(name.to_string(), Arc::new(publication));
        self.0.published_names.insert(name);
        Ok(())
    }

    /// Takes the publication `name` away (its table too); whether there was one.
    pub(crate) fn unpublish(&self, name: &str, state: &SessionState) -> Result<bool> {
        let mut published = lock(&self.0.published);
        if !published.contains_key(name) {
            return Ok(false);
        }
        if let Some(ledger) = crate::budget::config::options(state.config_options()).ledger_path {
            published_files::remove(&published_files::folder(&ledger), name)?;
        }
        let Some(publication) = published.remove(name) else {
            return Ok(false);
        };
        drop(published);
        self.0.published_names.remove(name);
        let (catalog, schema) = &publication.location;
        if let Some(schema) = state
            .catalog_list()
            .catalog(catalog)
            .and_then(|c| c.schema(schema))
        {
            schema.deregister_table(name)?;
        }
        Ok(true)
    }

    /// The publication `name`, if there is one.
    pub(crate) fn publication(&self, name: &str) -> Option<Arc<Publication>> {
        lock(&self.0.published).get(name).cloned()
    }
}

/// `Ok` when `existing`, the publication `name`, is of the request with `arguments`;
/// otherwise the refusal to publish another release under its name.
pub(crate) fn same_request(name: &str, existing: &Publication, arguments: &str) -> Result<()> {
    if existing.arguments == arguments {
        return Ok(());
    }
    plan_err!(
        "anonymize_publish(): a release with other arguments is published as '{name}'; take it away first with anonymize_unpublish('{name}')"
    )
}
