//! The PostgreSQL wire protocol: pgwire with SCRAM-SHA-256 logins, datafusion-postgres's
//! statement handling (result encoding, `pg_catalog`, `SET`/`SHOW`), transaction blocks
//! ([`crate::blocks`]) and cursors ([`crate::cursors`]), and one session per connection,
//! chosen by the logged-in user's role.

mod audited;
mod auth;
mod bind;
mod client_queries;
mod connection;
mod directory_login;
mod handlers;
mod hooks;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::Statement;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{DefaultServerParameterProvider, StartupHandler};
use pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{ConnectionManager, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::tokio::process_socket;
use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use pgwire::tokio::tokio_rustls::rustls::{self, ServerConfig};
use pgwire::tokio::tokio_rustls::TlsAcceptor;
use tokio::net::TcpListener;

use crate::connections::{self, ConnectionState};
use crate::limits::Stop;
use crate::password::ITERATIONS;
use crate::sessions::Server;

use auth::{Login, Passwords};
use handlers::RoleService;

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
            parameters: self.parameters.clone(),
            tls_required: self.tls_required,
            connections: self.connections.clone(),
            limits: self.service.server.connections().clone(),
            state,
            server: self.service.server.clone(),
        })
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
