//! The PostgreSQL wire protocol: pgwire with SCRAM-SHA-256 logins, datafusion-postgres's
//! statement handling (result encoding, `pg_catalog`, `SET`/`SHOW`, transactions,
//! cursors), and one session per connection, chosen by the logged-in user's role.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{Set, Statement};
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog;
use datafusion_postgres::hooks::cursor::CursorStatementHook;
use datafusion_postgres::hooks::set_show::SetShowHook;
use datafusion_postgres::hooks::transactions::TransactionStatementHook;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::{DfSessionService, QueryHook};
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    AuthSource, DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::tokio::process_socket;
use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use pgwire::tokio::tokio_rustls::rustls::{self, ServerConfig};
use pgwire::tokio::tokio_rustls::TlsAcceptor;
use tokio::net::TcpListener;

use crate::catalog::WithPgCatalog;
use crate::config::Role;
use crate::password::ITERATIONS;
use crate::sessions::Server;
use crate::statements::check_public;

/// A statement as datafusion-postgres keeps it between Parse and Execute.
type DfStatement = (String, Option<(Statement, LogicalPlan)>);

/// Serves PostgreSQL clients on `listener` until the process ends.
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
) -> std::io::Result<()> {
    let handlers = Arc::new(Handlers::new(server));
    loop {
        let (socket, peer) = listener.accept().await?;
        let handlers = handlers.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            if let Err(e) = process_socket(socket, tls, handlers).await {
                eprintln!("postgres: connection from {peer} ended: {e}");
            }
        });
    }
}

/// The TLS acceptor of the PEM certificate chain and private key files.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("tls_cert {}: {e}", cert.display()))?;
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("tls_key {}: {e}", key.display()))?;
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls_cert and tls_key: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The address `listener` is bound to, for the start-up message.
pub fn bound(listener: &TcpListener) -> String {
    listener
        .local_addr()
        .map(|a: SocketAddr| a.to_string())
        .unwrap_or_else(|_| "?".into())
}

struct Handlers {
    passwords: Arc<Passwords>,
    parameters: Arc<DefaultServerParameterProvider>,
    service: Arc<RoleService>,
}

impl Handlers {
    fn new(server: Arc<Server>) -> Self {
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = format!("16.6 (dfanon-server {})", env!("CARGO_PKG_VERSION"));
        Self {
            passwords: Arc::new(Passwords(server.clone())),
            parameters: Arc::new(parameters),
            service: Arc::new(RoleService::new(server)),
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.service.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.service.clone()
    }

    /// A handler per connection: it holds the state of that connection's SCRAM exchange.
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        let mut scram = ScramAuth::new(self.passwords.clone());
        scram.set_iterations(ITERATIONS);
        Arc::new(SASLAuthStartupHandler::new(self.parameters.clone()).with_scram(scram))
    }
}

/// The stored password hashes, as SCRAM asks for them. A user who does not exist gets a
/// hash no password matches, so the client cannot tell them from a wrong password.
#[derive(Debug)]
struct Passwords(Arc<Server>);

#[async_trait]
impl AuthSource for Passwords {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let hash = self.0.password(login.user().unwrap_or_default());
        Ok(Password::new(
            Some(hash.salt().to_vec()),
            hash.salted().to_vec(),
        ))
    }
}

/// The query handlers: each connection's statements go to the session of its user,
/// made at the connection's first statement.
struct RoleService {
    server: Arc<Server>,
    parser: Arc<RoleParser>,
}

/// A connection's session, kept with the connection.
struct Connection(Arc<DfSessionService>);

impl RoleService {
    fn new(server: Arc<Server>) -> Self {
        // Describing a parsed statement reads only its plan, never a session.
        let describe = Arc::new(DfSessionService::new(Arc::new(SessionContext::new())));
        Self {
            parser: Arc::new(RoleParser {
                server: server.clone(),
                describe,
            }),
            server,
        }
    }
}

/// The session service of `client`'s connection, made for its user on first use.
fn connection_service<C: ClientInfo + ?Sized>(
    server: &Server,
    client: &C,
) -> PgWireResult<Arc<DfSessionService>> {
    if let Some(connection) = client.session_extensions().get::<Connection>() {
        return Ok(connection.0.clone());
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
    match session.role {
        Role::Public => {
            let visible = ctx.state().catalog_list().clone();
            ctx.register_catalog_list(Arc::new(WithPgCatalog::new(visible, &catalog)));
            hooks.push(Arc::new(PublicGate));
        }
        Role::Owner => hooks.push(Arc::new(SettingsHook)),
    }
    setup_pg_catalog(&ctx, &catalog, EmptyContextProvider).map_err(|e| api_error(*e))?;
    hooks.push(Arc::new(CursorStatementHook));
    hooks.push(Arc::new(SetShowHook));
    hooks.push(Arc::new(TransactionStatementHook));
    let service = Arc::new(DfSessionService::new_with_hooks(ctx, hooks));
    client
        .session_extensions()
        .insert(Connection(service.clone()));
    Ok(service)
}

fn api_error(e: datafusion::error::DataFusionError) -> PgWireError {
    PgWireError::ApiError(Box::new(e))
}

/// An error with a SQLSTATE code, as clients show it.
fn user_error(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_string(),
        code.to_string(),
        message,
    )))
}

#[async_trait]
impl SimpleQueryHandler for RoleService {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo
            + ClientPortalStore
            + futures::Sink<PgWireBackendMessage>
            + Unpin
            + Send
            + Sync,
        C::PortalStore: PortalStore,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        let service = connection_service(&self.server, client)?;
        SimpleQueryHandler::do_query(service.as_ref(), client, query).await
    }
}

#[async_trait]
impl ExtendedQueryHandler for RoleService {
    type Statement = DfStatement;
    type QueryParser = RoleParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo
            + ClientPortalStore
            + futures::Sink<PgWireBackendMessage>
            + Unpin
            + Send
            + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        let service = connection_service(&self.server, client)?;
        ExtendedQueryHandler::do_query(service.as_ref(), client, portal, max_rows).await
    }
}

/// Parses a statement in the session of the connection that sent it.
struct RoleParser {
    server: Arc<Server>,
    describe: Arc<DfSessionService>,
}

#[async_trait]
impl QueryParser for RoleParser {
    type Statement = DfStatement;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let service = connection_service(&self.server, client)?;
        service.query_parser().parse_sql(client, sql, types).await
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        self.describe.query_parser().get_parameter_types(stmt)
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        self.describe
            .query_parser()
            .get_result_schema(stmt, column_format)
    }
}

/// Refuses, for public users, every statement but reads (see `statements`), before the
/// other hooks or the planner see it.
struct PublicGate;

fn gate(statement: &Statement) -> Option<PgWireError> {
    check_public(statement)
        .err()
        .map(|message| user_error("42501", message))
}

#[async_trait]
impl QueryHook for PublicGate {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        gate(statement).map(Err)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        gate(statement).map(Err)
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        _session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        gate(statement).map(Err)
    }
}

/// `SET anonymize.*` and `SET datafusion.*` for the owner: applied to the session by
/// DataFusion, and a setting that fails (a budget below what was spent, an unknown key)
/// is an error, never a silent "SET".
struct SettingsHook;

/// Whether `statement` sets one of the session's own settings.
fn session_setting(statement: &Statement) -> bool {
    let Statement::Set(Set::SingleAssignment { variable, .. }) = statement else {
        return false;
    };
    let name = variable.to_string().to_lowercase();
    name.starts_with("anonymize.") || name.starts_with("datafusion.")
}

async fn apply_setting(statement: &Statement, ctx: &SessionContext) -> PgWireResult<Response> {
    let sql = statement.to_string();
    ctx.sql(&sql)
        .await
        .map_err(|e| user_error("22023", e.strip_backtrace()))?;
    Ok(Response::Execution(Tag::new("SET")))
}

#[async_trait]
impl QueryHook for SettingsHook {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        if !session_setting(statement) {
            return None;
        }
        Some(apply_setting(statement, session_context).await)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        if !session_setting(statement) {
            return None;
        }
        let plan = session_context
            .state()
            .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                statement.clone(),
            )))
            .await
            .map_err(|e| user_error("22023", e.strip_backtrace()));
        Some(plan)
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        if !session_setting(statement) {
            return None;
        }
        Some(apply_setting(statement, session_context).await)
    }
}
