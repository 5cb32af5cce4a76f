//! The catalog a public session sees: the owner's catalog, showing only the tables the
//! owner declared public and the releases the owner published, and refusing every change.
//!
//! The wrappers sit between DataFusion and the owner's catalog, so tables the owner adds
//! later (through the owner's own session) appear here as soon as they match a declared
//! name; SQL in the public session can neither name an undeclared table (it does not
//! exist there, whatever the statement: `SELECT`, a view, a subquery, `DESCRIBE`) nor
//! create, replace or drop one.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider, TableProvider};
use datafusion::common::{exec_err, DataFusionError, Result};

use super::published::PublishedNames;
use crate::public::policy::PublicPolicy;

/// Why a public session cannot change its catalog.
const READ_ONLY: &str = "this session is for public users: it cannot create, replace or drop tables, views or schemas (the data owner publishes tables when the session is set up)";

/// The owner's catalogs as a public session sees them.
#[derive(Debug)]
pub struct PublicCatalogList {
    inner: Arc<dyn CatalogProviderList>,
    visible: Visible,
}

impl PublicCatalogList {
    /// Wraps the owner's `inner` catalogs under `policy`, showing also the releases
    /// `published` names.
    pub fn new(
        inner: Arc<dyn CatalogProviderList>,
        policy: Arc<PublicPolicy>,
        published: PublishedNames,
    ) -> Self {
        Self {
            inner,
            visible: Visible { policy, published },
        }
    }
}

/// Which tables a public session sees: the declared ones and the published releases.
#[derive(Debug, Clone)]
struct Visible {
    policy: Arc<PublicPolicy>,
    published: PublishedNames,
}

impl Visible {
    fn shows(&self, table: &str) -> bool {
        self.policy.is_public_table(table) || self.published.contains(table)
    }
}

impl CatalogProviderList for PublicCatalogList {
    fn register_catalog(
        &self,
        _name: String,
        _catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        // The trait cannot report an error here; the catalog is simply not added.
        None
    }

    fn catalog_names(&self) -> Vec<String> {
        self.inner.catalog_names()
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        let inner = self.inner.catalog(name)?;
        Some(Arc::new(PublicCatalog {
            inner,
            visible: self.visible.clone(),
        }))
    }
}

#[derive(Debug)]
struct PublicCatalog {
    inner: Arc<dyn CatalogProvider>,
    visible: Visible,
}

impl CatalogProvider for PublicCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let inner = self.inner.schema(name)?;
        Some(Arc::new(PublicSchema {
            inner,
            visible: self.visible.clone(),
        }))
    }

    fn register_schema(
        &self,
        _name: &str,
        _schema: Arc<dyn SchemaProvider>,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        exec_err!("{READ_ONLY}")
    }

    fn deregister_schema(
        &self,
        _name: &str,
        _cascade: bool,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        exec_err!("{READ_ONLY}")
    }
}

#[derive(Debug)]
struct PublicSchema {
    inner: Arc<dyn SchemaProvider>,
    visible: Visible,
}

#[async_trait]
impl SchemaProvider for PublicSchema {
    fn table_names(&self) -> Vec<String> {
        self.inner
            .table_names()
            .into_iter()
            .filter(|t| self.visible.shows(t))
            .collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>, DataFusionError> {
        if !self.visible.shows(name) {
            return Ok(None);
        }
        self.inner.table(name).await
    }

    fn register_table(
        &self,
        _name: String,
        _table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        exec_err!("{READ_ONLY}")
    }

    fn deregister_table(&self, _name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        exec_err!("{READ_ONLY}")
    }

    fn table_exist(&self, name: &str) -> bool {
        self.visible.shows(name) && self.inner.table_exist(name)
    }
}
