//! Published releases. The data owner draws a release once and makes it a table:
//!
//! ```sql
//! SELECT * FROM anonymize_publish('nps_release', 'nps', method => 'kanon',
//!     qi => 'age, sex', sensitive => 'disease', k => 10);
//! ```
//!
//! The release is computed and charged as `anonymize(...)` with the same arguments would be
//! (once: the same request, published or not, is one draw), registered as the table
//! `nps_release` in the owner's default schema, and shown to every public session over
//! the owner's tables, whose users read it with ordinary SQL and its metadata with
//! `published_metadata('nps_release')`; they cannot change its arguments. Any method can be
//! published, the ones that are not differentially private included: this is how their
//! releases reach public users (one release, fixed by the owner, never a release with the
//! user's arguments). `anonymize_unpublish('nps_release')` takes it away.
//!
//! With a ledger file, a publication is kept beside it (`published_files`) and outlives the
//! process: a registration over that ledger reads it back, and the owner's setup that
//! publishes the same request again at start gets it without a new draw or charge.
//! Without one, it lives as long as the store of releases it is in (the process).

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::array::{BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::views::{metadata_batch, metadata_schema};
use super::{ReleaseCache, ANONYMIZE_PARAMS};
use crate::params::{ParamDefault, ParamKind};
use crate::release::ReleaseRowLimit;
use crate::releases::{same_request, CacheEntry};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{BatchProducer, BatchSource, LazyTable, Ready};

/// The arguments of `anonymize_publish`: the table's name, then those of `anonymize`.
static PUBLISH_PARAMS: LazyLock<Vec<ParamSpec>> = LazyLock::new(|| {
    let mut params = vec![ParamSpec::new(
        "name",
        ParamKind::Text,
        ParamDefault::Required,
        "the table public users read the release as: letters, digits and '_', beginning with a letter (first positional argument; the source is the second)",
    )];
    params.extend(ANONYMIZE_PARAMS.iter().cloned());
    params
});

const NAME_PARAMS: &[ParamSpec] = &[ParamSpec::new(
    "name",
    ParamKind::Text,
    ParamDefault::Required,
    "the name the release was published under",
)];

/// The longest name a publication may have.
const MAX_NAME: usize = 63;

/// `name` as a table name (lower case), or the error saying what a name may be.
fn table_name(function: &str, name: &str) -> Result<String> {
    let lower = name.to_ascii_lowercase();
    let mut chars = lower.chars();
    let fits = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && lower.len() <= MAX_NAME;
    if !fits {
        return plan_err!(
            "{function}(): name '{name}' is not a table name this function takes: letters, digits and '_', beginning with a letter, at most {MAX_NAME} characters"
        );
    }
    Ok(lower)
}

/// `anonymize_publish(name, source, ...)`.
#[derive(Debug)]
pub struct PublishFunction {
    cache: Arc<ReleaseCache>,
}

impl PublishFunction {
    /// The function over the registration's releases.
    pub fn new(cache: Arc<ReleaseCache>) -> Self {
        Self { cache }
    }
}

/// What `anonymize_publish` returns: one row describing the publication.
fn publication_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("method", DataType::Utf8, false),
        Field::new("released_rows", DataType::UInt64, false),
        Field::new("epsilon", DataType::Float64, false),
        Field::new("delta", DataType::Float64, false),
    ]))
}

impl SqlTableFunction for PublishFunction {
    fn name(&self) -> &'static str {
        "anonymize_publish"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PUBLISH_PARAMS.as_slice()
    }

    fn about(&self) -> &'static str {
        "Draws the release anonymize() with the same arguments returns (once, charged once) and publishes it as the table 'name', which public users read with SQL (and its metadata with published_metadata('name')) without choosing its arguments: the way a release of any method, those that are not differentially private included, reaches them. One row: name, method, released_rows, epsilon, delta."
    }

    fn owner_only(&self) -> bool {
        true
    }

    fn owner_only_reason(&self) -> &'static str {
        "it publishes releases for public users"
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let mut bound = bind(self.name(), &PUBLISH_PARAMS, &["name", "source"], args)?;
        let name = table_name(self.name(), &bound.required_string("name")?)?;
        bound.remove("name");
        let (entry, limit) = self.cache.entry(self.name(), &bound, context)?;
        if entry.request.seed.is_some() {
            return plan_err!(
                "anonymize_publish(): a seeded release has no privacy guarantee (every draw is known to whoever knows the seed) and cannot be published; leave 'seed' out"
            );
        }
        Ok(Arc::new(LazyTable::new(
            publication_schema(),
            Arc::new(PublishProducer {
                name,
                entry,
                cache: self.cache.clone(),
                limit,
            }),
        )))
    }
}

#[derive(Debug)]
struct PublishProducer {
    name: String,
    entry: Arc<CacheEntry>,
    cache: Arc<ReleaseCache>,
    limit: ReleaseRowLimit,
}

#[async_trait]
impl BatchProducer for PublishProducer {
    async fn batches(&self, state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        // The same request published already (in this process, or kept beside the ledger
        // and read back) is served as it is: nothing is drawn or charged again.
        let existing = self.cache.store.publication(&self.name);
        match existing {
            Some(existing) => {
                same_request(&self.name, &existing, &self.entry.request.canonical_args)?
            }
            None => {
                let output = self.cache.release(&self.entry, self.limit, state).await?;
                self.cache
                    .store
                    .publish(&self.name, &self.entry, output, state)?;
            }
        }
        let publication = self.cache.store.publication(&self.name).ok_or_else(|| {
            plan_datafusion_err!(
                "anonymize_publish(): '{}' was unpublished meanwhile",
                self.name
            )
        })?;
        let batch = RecordBatch::try_new(
            publication_schema(),
            vec![
                Arc::new(StringArray::from(vec![self.name.clone()])),
                Arc::new(StringArray::from(vec![publication.method.clone()])),
                Arc::new(UInt64Array::from(vec![publication.rows])),
                Arc::new(Float64Array::from(vec![publication.cost.epsilon])),
                Arc::new(Float64Array::from(vec![publication.cost.delta])),
            ],
        )?;
        Ok(Arc::new(vec![batch]))
    }
}

/// `anonymize_unpublish(name)`.
#[derive(Debug)]
pub struct UnpublishFunction {
    cache: Arc<ReleaseCache>,
}

impl UnpublishFunction {
    /// The function over the registration's releases.
    pub fn new(cache: Arc<ReleaseCache>) -> Self {
        Self { cache }
    }
}

fn unpublished_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("unpublished", DataType::Boolean, false),
    ]))
}

impl SqlTableFunction for UnpublishFunction {
    fn name(&self) -> &'static str {
        "anonymize_unpublish"
    }

    fn params(&self) -> &'static [ParamSpec] {
        NAME_PARAMS
    }

    fn about(&self) -> &'static str {
        "Takes the release published as 'name' away: its table disappears for public users and the owner. One row: name, unpublished (false when nothing was published under that name). What was spent stays spent."
    }

    fn owner_only(&self) -> bool {
        true
    }

    fn owner_only_reason(&self) -> &'static str {
        "it publishes releases for public users"
    }

    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(self.name(), NAME_PARAMS, &["name"], args)?;
        let name = table_name(self.name(), &bound.required_string("name")?)?;
        Ok(Arc::new(LazyTable::new(
            unpublished_schema(),
            Arc::new(UnpublishProducer {
                name,
                cache: self.cache.clone(),
            }),
        )))
    }
}

#[derive(Debug)]
struct UnpublishProducer {
    name: String,
    cache: Arc<ReleaseCache>,
}

#[async_trait]
impl BatchProducer for UnpublishProducer {
    async fn batches(&self, state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        let removed = self.cache.store.unpublish(&self.name, state)?;
        let batch = RecordBatch::try_new(
            unpublished_schema(),
            vec![
                Arc::new(StringArray::from(vec![self.name.clone()])),
                Arc::new(BooleanArray::from(vec![removed])),
            ],
        )?;
        Ok(Arc::new(vec![batch]))
    }
}

/// `published_metadata(name)`.
#[derive(Debug)]
pub struct PublishedMetadataFunction {
    cache: Arc<ReleaseCache>,
}

impl PublishedMetadataFunction {
    /// The function over the registration's releases.
    pub fn new(cache: Arc<ReleaseCache>) -> Self {
        Self { cache }
    }
}

impl SqlTableFunction for PublishedMetadataFunction {
    fn name(&self) -> &'static str {
        "published_metadata"
    }

    fn params(&self) -> &'static [ParamSpec] {
        NAME_PARAMS
    }

    fn about(&self) -> &'static str {
        "Public metadata (key, value) of the release published as 'name' (anonymize_publish): its method, arguments and guarantee, as anonymize_metadata() shows them."
    }

    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(self.name(), NAME_PARAMS, &["name"], args)?;
        let name = table_name(self.name(), &bound.required_string("name")?)?;
        let Some(publication) = self.cache.store.publication(&name) else {
            return plan_err!("published_metadata(): no release is published as '{name}'");
        };
        let batch = metadata_batch(&publication.metadata)?;
        Ok(Arc::new(LazyTable::new(
            metadata_schema(),
            Arc::new(Ready(Arc::new(vec![batch]))),
        )))
    }
}
