//! The owner's session as `dfanon` shapes it for datafusion-cli: files read by path only
//! for names that look like paths, and the interactive shell's view of the session.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// Files and folders read by path in `FROM` (`SELECT * FROM 'data/visits.parquet'`), as
/// datafusion-cli allows, but only for names that look like a path (holding `/`, `\` or
/// `.`): a bare name such as `visits` is always a table, never a folder of the working
/// directory that happens to share its name (which would make `CREATE TABLE visits ...`
/// fail with "already exists", or read the folder's files).
pub(crate) fn with_path_tables(ctx: SessionContext) -> SessionContext {
    use datafusion::catalog::{DynamicFileCatalog, UrlTableFactory};
    use datafusion::datasource::dynamic_file::DynamicListTableFactory;

    #[derive(Debug)]
    struct PathsOnly(Arc<DynamicListTableFactory>);

    #[async_trait::async_trait]
    impl UrlTableFactory for PathsOnly {
        async fn try_new(
            &self,
            url: &str,
        ) -> Result<Option<Arc<dyn datafusion::catalog::TableProvider>>> {
            if !url.contains(['/', '\\', '.']) {
                return Ok(None);
            }
            self.0.try_new(url).await
        }
    }

    let files = Arc::new(DynamicListTableFactory::default());
    let catalogs = Arc::new(DynamicFileCatalog::new(
        Arc::clone(ctx.state().catalog_list()),
        Arc::new(PathsOnly(Arc::clone(&files))) as Arc<dyn UrlTableFactory>,
    ));
    let session_id = ctx.session_id();
    let ctx: SessionContext = ctx
        .into_state_builder()
        .with_session_id(session_id)
        .with_catalog_list(catalogs)
        .build()
        .into();
    files.session_store().with_state(ctx.state_weak_ref());
    ctx
}

/// The session as the interactive shell sees it: statements run as in `-c` and `-f`, a
/// public session refuses what public users may not run, and a `RESET` of an
/// `anonymize.*` setting gets the crate's answer instead of DataFusion's "Could not find
/// config namespace".
pub(crate) struct Repl(pub(crate) SessionContext);

#[async_trait::async_trait]
impl datafusion_cli::cli_context::CliSessionContext for Repl {
    fn task_ctx(&self) -> Arc<datafusion::execution::TaskContext> {
        self.0.task_ctx()
    }

    fn session_state(&self) -> datafusion::execution::SessionState {
        self.0.state()
    }

    fn register_object_store(
        &self,
        url: &url::Url,
        object_store: Arc<dyn datafusion::object_store::ObjectStore>,
    ) -> Option<Arc<dyn datafusion::object_store::ObjectStore + 'static>> {
        self.0.register_object_store(url, object_store)
    }

    fn register_table_options_extension_from_scheme(&self, scheme: &str) {
        datafusion_cli::cli_context::CliSessionContext::register_table_options_extension_from_scheme(
            &self.0, scheme,
        )
    }

    async fn execute_logical_plan(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
    ) -> Result<datafusion::dataframe::DataFrame> {
        use datafusion::logical_expr::{LogicalPlan, ResetVariable, Statement};
        // A public session runs only what public users may run (the shell hands over plans).
        if datafusion_anonymize::is_public(&self.0) {
            datafusion_anonymize::check_public_plan(&plan)?;
        }
        if let LogicalPlan::Statement(Statement::ResetVariable(ResetVariable { variable })) = &plan
        {
            if let Some(e) = datafusion_anonymize::budget_reset_error(&format!("RESET {variable}"))
            {
                return Err(e);
            }
        }
        self.0.execute_logical_plan(plan).await
    }
}
