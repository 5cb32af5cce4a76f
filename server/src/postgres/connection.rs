//! A connection's session, made for its user's role at its first statement (with the
//! public user's own `pg_catalog` and hooks), and a statement under way on it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use datafusion::error::DataFusionError;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog;
use datafusion_postgres::hooks::set_show::SetShowHook;
use datafusion_postgres::{DfSessionService, QueryHook};
use pgwire::api::results::Response;
use pgwire::api::{ClientInfo, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};

use crate::blocks::TransactionBlocks;
use crate::config::Role;
use crate::cursors::Cursors;
use crate::limits::Admitted;
use crate::pg_catalog::{PgCatalogKeeper, WithPgCatalog};
use crate::sessions::Server;

use super::auth::{CancelHandle, LoggedIn};
use super::hooks::{PublicGate, SettingsHook};
use super::{api_error, stop_error};
use crate::audit::{Auditing, Protocol};

/// A connection's session and its user's role, kept with the connection.
pub(super) struct Connection {
    pub(super) service: Arc<DfSessionService>,
    pub(super) role: Role,
    /// A public session's own `pg_catalog`.
    pub(super) _pg_catalog: Option<PgCatalogKeeper>,
    /// Who sends its statements, for the audit trail.
    pub(super) auditing: Auditing,
}

/// The session of `client`'s connection, made for its user on first use.
pub(super) fn connection<C: ClientInfo + ?Sized>(
    server: &Server,
    client: &C,
) -> PgWireResult<Arc<Connection>> {
    if client.session_extensions().get::<LoggedIn>().is_none() {
        return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
            "FATAL".to_string(),
            "28000".to_string(),
            "not logged in".to_string(),
        ))));
    }
    if let Some(connection) = client.session_extensions().get::<Connection>() {
        return Ok(connection);
    }
    let user = client
        .metadata()
        .get(METADATA_USER)
        .cloned()
        .unwrap_or_default();
    let session = server.session(&user).map_err(api_error)?;
    let ctx = Arc::new(session.ctx);
    let mut hooks: Vec<Arc<dyn QueryHook>> = Vec::new();
    let catalog = ctx
        .state()
        .config()
        .options()
        .catalog
        .default_catalog
        .clone();
    let mut pg_catalog = None;
    if session.role == Role::Public {
        let visible = ctx.state().catalog_list().clone();
        let (catalogs, keeper) = WithPgCatalog::new(visible, &catalog);
        ctx.register_catalog_list(Arc::new(catalogs));
        pg_catalog = Some(keeper);
        hooks.push(Arc::new(PublicGate));
    }
    hooks.push(Arc::new(TransactionBlocks));
    if session.role == Role::Owner {
        hooks.push(Arc::new(SettingsHook));
    }
    setup_pg_catalog(&ctx, &catalog, EmptyContextProvider).map_err(|e| api_error(*e))?;
    crate::pg_functions::register(&ctx);
    hooks.push(Arc::new(Cursors));
    hooks.push(Arc::new(SetShowHook));
    client.session_extensions().insert(Connection {
        service: Arc::new(DfSessionService::new_with_hooks(ctx, hooks)),
        role: session.role,
        _pg_catalog: pg_catalog,
        auditing: Auditing::new(Protocol::Postgres, user, session.role, session.heard),
    });
    client
        .session_extensions()
        .get::<Connection>()
        .ok_or_else(|| api_error(DataFusionError::Internal("the session was not kept".into())))
}

/// A statement under way on a connection: the slot a public user's statement holds, and
/// what stops it (the client's cancel request; for public users, the time limit).
pub(super) struct Running(Admitted);

impl Running {
    /// Starts a statement of `connection` (a public one waits for a slot, at most until
    /// its deadline).
    pub(super) async fn begin<C: ClientInfo + ?Sized>(
        server: &Server,
        connection: &Connection,
        client: &C,
    ) -> PgWireResult<Self> {
        let cancel = match client.session_extensions().get::<CancelHandle>() {
            Some(handle) => Some(handle.0.start_query().await),
            None => None,
        };
        // The connection's own `SET statement_timeout` (milliseconds; 0 is none), which
        // datafusion-postgres records and this server honours for the whole statement.
        let own_timeout = client
            .metadata()
            .get("statement_timeout_ms")
            .and_then(|ms| ms.parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis);
        let admitted = server
            .admission()
            .begin(connection.role != Role::Owner, cancel, own_timeout)
            .await
            .map_err(stop_error)?;
        Ok(Self(admitted))
    }

    /// Runs `work` (planning, starting) unless the statement must stop first; a panic in
    /// it is an error of this statement.
    pub(super) async fn run<T>(
        &self,
        work: impl Future<Output = PgWireResult<T>>,
    ) -> PgWireResult<T> {
        self.0.run(work).await.map_err(stop_error)?
    }

    /// `response`, whose rows are read until the statement must stop, holding the slot.
    pub(super) fn bound(&self, response: Response) -> Response {
        match response {
            Response::Query(mut query) => {
                let rows =
                    std::mem::replace(&mut query.data_rows, Box::pin(futures::stream::empty()));
                query.data_rows = Box::pin(self.0.bound(rows, stop_error));
                Response::Query(query)
            }
            other => other,
        }
    }
}
