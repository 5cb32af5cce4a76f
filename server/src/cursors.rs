//! Declared cursors (`DECLARE c CURSOR FOR …`, `FETCH n FROM c`, `CLOSE c`) whose columns
//! can be described: psycopg's named cursors describe the cursor's portal, and drivers
//! describe each `FETCH` before reading its rows, so both must name the query's columns.
//!
//! Fetching and closing are datafusion-postgres's; declaring is done here so that the
//! cursor's portal keeps the query's plan, and the connection remembers each open cursor's
//! columns for describing a `FETCH` from it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::common::{DFSchema, DFSchemaRef, ParamValues};
use datafusion::logical_expr::{EmptyRelation, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{CloseCursor, Declare, DeclareType, Statement};
use datafusion_postgres::arrow_pg::encode_dataframe;
use datafusion_postgres::hooks::cursor::CursorStatementHook;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::QueryHook;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::results::{Response, Tag};
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::PortalStore;
use pgwire::api::ClientInfo;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};

/// The most cursors one connection may have open at once (each holds a running query).
const MAX_OPEN_CURSORS: usize = 64;

/// The columns of each cursor the connection has open, by name.
#[derive(Default)]
struct OpenCursors(Mutex<HashMap<String, DFSchemaRef>>);

impl OpenCursors {
    fn of<C: ClientInfo + ?Sized>(client: &C) -> Arc<Self> {
        client
            .session_extensions()
            .get_or_insert_with(Self::default)
    }

    fn columns(&self, name: &str) -> Option<DFSchemaRef> {
        self.0.lock().ok()?.get(name).cloned()
    }

    fn count(&self) -> usize {
        self.0.lock().map(|open| open.len()).unwrap_or(0)
    }

    fn open(&self, name: &str, columns: DFSchemaRef) {
        if let Ok(mut open) = self.0.lock() {
            open.insert(name.to_string(), columns);
        }
    }

    fn close(&self, cursor: &CloseCursor) {
        if let Ok(mut open) = self.0.lock() {
            match cursor {
                CloseCursor::All => open.clear(),
                CloseCursor::Specific { name } => {
                    open.remove(&name.value);
                }
            }
        }
    }
}

/// The hook declaring cursors with describable columns.
pub struct Cursors;

fn syntax_error(message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_string(),
        "42601".to_string(),
        message.into(),
    )))
}

fn no_rows(columns: DFSchemaRef) -> LogicalPlan {
    LogicalPlan::EmptyRelation(EmptyRelation {
        produce_one_row: false,
        schema: columns,
    })
}

/// Plans each cursor's query, keeps its plan in the cursor's portal and its columns in
/// the connection's open cursors, and starts it (rows are read by `FETCH`).
async fn declare(
    declarations: &[Declare],
    ctx: &SessionContext,
    client: &mut dyn HookClient,
) -> PgWireResult<Response> {
    let open = OpenCursors::of(client);
    for declaration in declarations {
        if declaration.declare_type != Some(DeclareType::Cursor) {
            return Err(syntax_error(
                "only DECLARE … CURSOR FOR a query is supported",
            ));
        }
        let Some(name) = declaration.names.first().map(|n| n.value.clone()) else {
            return Err(syntax_error("DECLARE CURSOR needs a cursor name"));
        };
        let Some(query) = &declaration.for_query else {
            return Err(syntax_error("DECLARE CURSOR needs a FOR query"));
        };
        if open.columns(&name).is_none() && open.count() >= MAX_OPEN_CURSORS {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "ERROR".to_string(),
                "53000".to_string(),
                format!(
                    "a connection may have at most {MAX_OPEN_CURSORS} cursors open; CLOSE one first"
                ),
            ))));
        }
        let text = query.to_string();
        let frame = ctx
            .sql(&text)
            .await
            .map_err(|e| PgWireError::ApiError(Box::new(e)))?;
        let plan = frame.logical_plan().clone();
        let columns = Arc::new(frame.schema().clone());
        let rows = encode_dataframe(frame, &Format::UnifiedText, None).await?;
        let statement = (text, Some((Statement::Query(query.clone()), plan)));
        let stored = Arc::new(StoredStatement::new(name.clone(), statement, vec![]));
        let portal = Portal::new_cursor(name.clone(), stored);
        portal.start(rows).await;
        client.portal_store().put_portal(Arc::new(portal));
        open.open(&name, columns);
    }
    Ok(Response::Execution(Tag::new("DECLARE CURSOR")))
}

async fn answer(
    statement: &Statement,
    ctx: &SessionContext,
    client: &mut dyn HookClient,
) -> Option<PgWireResult<Response>> {
    match statement {
        Statement::Declare { stmts } => Some(declare(stmts, ctx, client).await),
        Statement::Close { cursor } => {
            OpenCursors::of(client).close(cursor);
            CursorStatementHook
                .handle_simple_query(statement, ctx, client)
                .await
        }
        Statement::Fetch { .. } => {
            CursorStatementHook
                .handle_simple_query(statement, ctx, client)
                .await
        }
        _ => None,
    }
}

#[async_trait]
impl QueryHook for Cursors {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        answer(statement, session_context, client).await
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        let columns = match statement {
            // A FETCH returns its cursor's columns (none if there is no such cursor: the
            // FETCH itself then says so).
            Statement::Fetch { name, .. } => OpenCursors::of(client)
                .columns(&name.value)
                .unwrap_or_else(|| Arc::new(DFSchema::empty())),
            Statement::Declare { .. } | Statement::Close { .. } => Arc::new(DFSchema::empty()),
            _ => return None,
        };
        Some(Ok(no_rows(columns)))
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        session_context: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        answer(statement, session_context, client).await
    }
}
