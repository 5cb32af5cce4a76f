//! The PostgreSQL wire protocol: pgwire with SCRAM-SHA-256 logins, datafusion-postgres's
//! statement handling (result encoding, `pg_catalog`, `SET`/`SHOW`), transaction blocks
//! ([`crate::blocks`]) and cursors ([`crate::cursors`]), and one session per connection,
//! chosen by the logged-in user's role.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use datafusion::common::ParamValues;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{Set, Statement};
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog;
use datafusion_postgres::hooks::set_show::SetShowHook;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::{DfSessionService, QueryHook};
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    AuthSource, DefaultServerParameterProvider, LoginInfo, Password, ServerParameterProvider,
    StartupHandler,
};
use pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionHandle, ConnectionManager, PgWireConnectionState,
    PgWireServerHandlers, Type, METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::process_socket;
use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use pgwire::tokio::tokio_rustls::rustls::{self, ServerConfig};
use pgwire::tokio::tokio_rustls::TlsAcceptor;
use tokio::net::TcpListener;

use crate::blocks::TransactionBlocks;
use crate::catalog::{PgCatalogKeeper, WithPgCatalog};
use crate::config::Role;
use crate::connections::{self, ConnectionLimits, ConnectionState};
use crate::cursors::Cursors;
use crate::limits::{Admitted, Stop};
use crate::password::ITERATIONS;
use crate::sessions::Server;

/// A statement as datafusion-postgres keeps it between Parse and Execute.
type DfStatement = (String, Option<(Statement, LogicalPlan)>);

/// Serves PostgreSQL clients on `listener` until the process ends, within the server's
/// connection limits ([`crate::connections`]).
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
) -> std::io::Result<()> {
    let limits = server.connections().clone();
    let handlers = Arc::new(Handlers::new(server, tls.is_some()));
    loop {
        let (socket, peer) = connections::accept(&listener, "postgres").await;
        let Some(held) = limits.admit() else {
            tokio::spawn(connections::refuse_postgres(socket));
            continue;
        };
        let accepted = tokio::time::Instant::now();
        let state = ConnectionState::new(limits.clone());
        let handlers = Arc::new(ConnectionHandlers {
            shared: handlers.clone(),
            state: state.clone(),
        });
        let tls = tls.clone();
        tokio::spawn(async move {
            let _held = held;
            match connections::watch(process_socket(socket, tls, handlers), &state, accepted).await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("postgres: connection from {peer} ended: {e}"),
                Err(why) => eprintln!("postgres: connection from {peer} closed: {why}"),
            }
        });
    }
}

/// The handlers of one connection: the shared ones, and its own login, which records
/// in `state` when it logged in.
struct ConnectionHandlers {
    shared: Arc<Handlers>,
    state: Arc<ConnectionState>,
}

impl PgWireServerHandlers for ConnectionHandlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.shared.service.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.shared.service.clone()
    }

    /// Cancel requests (Ctrl-C in psql) stop the connection's statement under way.
    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.shared.cancel.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.shared.login(self.state.clone())
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
    tls_required: bool,
    /// The logged-in connections, for cancel requests.
    connections: Arc<ConnectionManager>,
    cancel: Arc<DefaultCancelHandler>,
}

impl Handlers {
    fn new(server: Arc<Server>, tls_required: bool) -> Self {
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = format!("16.6 (dfanon-server {})", env!("CARGO_PKG_VERSION"));
        let connections = Arc::new(ConnectionManager::new());
        Self {
            passwords: Arc::new(Passwords(server.clone())),
            parameters: Arc::new(parameters),
            service: Arc::new(RoleService::new(server)),
            tls_required,
            connections: connections.clone(),
            cancel: Arc::new(DefaultCancelHandler::new(connections)),
        }
    }
}

impl Handlers {
    /// A login per connection: it holds the state of that connection's SCRAM exchange,
    /// and records in `state` when it succeeded.
    fn login(&self, state: Arc<ConnectionState>) -> Arc<Login<DefaultServerParameterProvider>> {
        let mut scram = ScramAuth::new(self.passwords.clone());
        scram.set_iterations(ITERATIONS);
        Arc::new(Login {
            scram: SASLAuthStartupHandler::new(self.parameters.clone()).with_scram(scram),
            tls_required: self.tls_required,
            connections: self.connections.clone(),
            limits: self.service.server.connections().clone(),
            state,
        })
    }
}

/// A connection's user, recorded when their login succeeded. Every statement asks for it:
/// after a failed login the protocol loop may still read what the client sends next.
struct LoggedIn;

/// What a cancel request for this connection fires (registered at login). Kept under
/// its own type: pgwire's protocol loop would otherwise take the same handle for itself
/// and see our next statement's start as a cancel of its own.
struct CancelHandle(Arc<ConnectionHandle>);

/// The login of one connection: TLS first when the server has it, then SCRAM-SHA-256;
/// a logged-in connection is registered for cancel requests.
struct Login<P> {
    scram: SASLAuthStartupHandler<P>,
    tls_required: bool,
    connections: Arc<ConnectionManager>,
    /// The server's connection limits (per user, checked at login).
    limits: Arc<ConnectionLimits>,
    /// What the connection's watch reads.
    state: Arc<ConnectionState>,
}

/// A logged-in connection's statement activity, for its idle timeout.
struct Activity(Arc<ConnectionState>);

#[async_trait]
impl<P: ServerParameterProvider> StartupHandler for Login<P> {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        if self.tls_required && !client.is_secure() {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".to_string(),
                "28000".to_string(),
                "this server accepts only connections with TLS: connect with sslmode=require (or verify-full)".to_string(),
            ))));
        }
        // Failed logins are counted per user name and per address; past the limit the
        // login is refused before the password is checked.
        let keys = |client: &C| {
            let user = client
                .metadata()
                .get(METADATA_USER)
                .cloned()
                .unwrap_or_default();
            vec![
                format!("user {user}"),
                format!("address {}", client.socket_addr().ip()),
            ]
        };
        if let Some(wait) = self.limits.failed_logins.locked(&keys(client)) {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".to_string(),
                "28P01".to_string(),
                format!(
                    "too many failed logins for this user name or address: try again in {} s",
                    wait.as_secs() + 1
                ),
            ))));
        }
        let started = self.scram.on_startup(client, message).await;
        if let Err(PgWireError::InvalidPassword(_)) = &started {
            self.limits.failed_logins.failed(&keys(client));
        }
        started?;
        if matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            let user = client
                .metadata()
                .get(METADATA_USER)
                .cloned()
                .unwrap_or_default();
            let Some(slot) = self.limits.admit_user(&user) else {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "FATAL".to_string(),
                    "53300".to_string(),
                    format!(
                        "too many connections for user \"{user}\": at most {} (max_connections_per_user)",
                        self.limits.per_user()
                    ),
                ))));
            };
            self.state.logged_in();
            let (pid, secret_key) = client.pid_and_secret_key();
            let (handle, registered) = self.connections.register(pid, secret_key);
            let extensions = client.session_extensions();
            extensions.insert(CancelHandle(handle));
            // Unregistered when the connection ends.
            extensions.insert(registered);
            extensions.insert(slot);
            extensions.insert(Activity(self.state.clone()));
            extensions.insert(LoggedIn);
        }
        Ok(())
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

/// A connection's session and its user's role, kept with the connection.
struct Connection {
    service: Arc<DfSessionService>,
    role: Role,
    /// A public session's own `pg_catalog`.
    _pg_catalog: Option<PgCatalogKeeper>,
}

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

/// The session of `client`'s connection, made for its user on first use.
fn connection<C: ClientInfo + ?Sized>(
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
    hooks.push(Arc::new(Cursors));
    hooks.push(Arc::new(SetShowHook));
    client.session_extensions().insert(Connection {
        service: Arc::new(DfSessionService::new_with_hooks(ctx, hooks)),
        role: session.role,
        _pg_catalog: pg_catalog,
    });
    client
        .session_extensions()
        .get::<Connection>()
        .ok_or_else(|| api_error(DataFusionError::Internal("the session was not kept".into())))
}

/// A statement under way on a connection: the slot a public user's statement holds, and
/// what stops it (the client's cancel request; for public users, the time limit).
struct Running(Admitted);

impl Running {
    /// Starts a statement of `connection` (a public one waits for a slot, at most until
    /// its deadline).
    async fn begin<C: ClientInfo + ?Sized>(
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
    async fn run<T>(&self, work: impl Future<Output = PgWireResult<T>>) -> PgWireResult<T> {
        self.0.run(work).await.map_err(stop_error)?
    }

    /// `response`, whose rows are read until the statement must stop, holding the slot.
    fn bound(&self, response: Response) -> Response {
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

/// The error of a stopped statement (PostgreSQL's query_canceled, or internal_error).
fn stop_error(stop: Stop) -> PgWireError {
    let code = match stop {
        Stop::Failed => "XX000",
        Stop::Cancelled | Stop::TimedOut(_) | Stop::SessionTimedOut(_) => "57014",
    };
    user_error(code, stop.to_string())
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
        // A statement nested too deeply for the stack is refused before it is parsed
        // (54001: PostgreSQL's "statement too complex").
        let _busy = client
            .session_extensions()
            .get::<Activity>()
            .map(|activity| activity.0.busy());
        datafusion_anonymize::check_expression_depth(query)
            .map_err(|e| user_error("54001", e.strip_backtrace()))?;
        let connection = connection(&self.server, client)?;
        let running = Running::begin(&self.server, &connection, client).await?;
        let service = connection.service.as_ref();
        let responses = running
            .run(SimpleQueryHandler::do_query(service, client, query))
            .await?;
        Ok(responses.into_iter().map(|r| running.bound(r)).collect())
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
        let _busy = client
            .session_extensions()
            .get::<Activity>()
            .map(|activity| activity.0.busy());
        let connection = connection(&self.server, client)?;
        let running = Running::begin(&self.server, &connection, client).await?;
        let service = connection.service.as_ref();
        let response = running
            .run(ExtendedQueryHandler::do_query(
                service, client, portal, max_rows,
            ))
            .await?;
        Ok(running.bound(response))
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
        datafusion_anonymize::check_expression_depth(sql)
            .map_err(|e| user_error("54001", e.strip_backtrace()))?;
        let connection = connection(&self.server, client)?;
        connection
            .service
            .query_parser()
            .parse_sql(client, sql, types)
            .await
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
    datafusion_anonymize::check_public_sql_statement(statement)
        .err()
        .map(|refusal| user_error("42501", refusal.message().to_string()))
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
