//! `pg_catalog` for public users. psql's `\d`, DBeaver and other tools read it; a public
//! session's catalog refuses new schemas, so the public `pg_catalog` lives in a wrapper
//! around that catalog, built over what the public session sees (the published tables),
//! never over the owner's tables.
//!
//! The `pg_catalog` schema lists the session's catalogs, so the catalogs only point to it
//! (weakly) and the connection keeps it ([`PgCatalogKeeper`]): when the connection ends,
//! both are freed instead of keeping each other alive.

use std::sync::{Arc, OnceLock, Weak};

use datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider};
use datafusion::common::{exec_err, Result};

/// The schema the wrapper adds.
const PG_CATALOG: &str = "pg_catalog";

type PgCatalogSlot = OnceLock<Arc<dyn SchemaProvider>>;

/// A public session's catalogs with room for its own `pg_catalog` schema.
#[derive(Debug)]
pub struct WithPgCatalog {
    inner: Arc<dyn CatalogProviderList>,
    catalog: String,
    pg_catalog: Weak<PgCatalogSlot>,
}

/// Keeps a public session's `pg_catalog` for as long as its connection lasts.
#[derive(Debug)]
pub struct PgCatalogKeeper(#[allow(dead_code)] Arc<PgCatalogSlot>);

impl WithPgCatalog {
    /// Wraps `inner`; catalog `catalog` takes one `pg_catalog` schema, kept by the
    /// returned keeper.
    pub fn new(inner: Arc<dyn CatalogProviderList>, catalog: &str) -> (Self, PgCatalogKeeper) {
        let slot = Arc::new(OnceLock::new());
        let wrapper = Self {
            inner,
            catalog: catalog.to_string(),
            pg_catalog: Arc::downgrade(&slot),
        };
        (wrapper, PgCatalogKeeper(slot))
    }
}

impl CatalogProviderList for WithPgCatalog {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        self.inner.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        self.inner.catalog_names()
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        let inner = self.inner.catalog(name)?;
        if name != self.catalog {
            return Some(inner);
        }
        Some(Arc::new(CatalogWithPg {
            inner,
            pg_catalog: self.pg_catalog.clone(),
        }))
    }
}

#[derive(Debug)]
struct CatalogWithPg {
    inner: Arc<dyn CatalogProvider>,
    pg_catalog: Weak<PgCatalogSlot>,
}

impl CatalogWithPg {
    fn pg_catalog(&self) -> Option<Arc<dyn SchemaProvider>> {
        self.pg_catalog.upgrade()?.get().cloned()
    }
}

impl CatalogProvider for CatalogWithPg {
    fn schema_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .schema_names()
            .into_iter()
            .filter(|n| n != PG_CATALOG)
            .collect();
        if self.pg_catalog().is_some() {
            names.push(PG_CATALOG.to_string());
        }
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if name == PG_CATALOG {
            return self.pg_catalog();
        }
        self.inner.schema(name)
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        if name != PG_CATALOG {
            return self.inner.register_schema(name, schema);
        }
        let Some(slot) = self.pg_catalog.upgrade() else {
            return exec_err!("this session's connection has ended");
        };
        if slot.set(schema).is_err() {
            return exec_err!("pg_catalog is already set up in this session");
        }
        Ok(None)
    }
}
