//! Logins over the PostgreSQL protocol: TLS when the server requires it, the failed-login
//! limit, SCRAM-SHA-256 against the stored hashes, the per-user connection limit, and the
//! registration for cancel requests.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use futures::SinkExt;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{AuthSource, LoginInfo, Password, ServerParameterProvider, StartupHandler};
use pgwire::api::{
    ClientInfo, ConnectionHandle, ConnectionManager, PgWireConnectionState, SessionExtensions,
    METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::ProtocolVersion;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer;

use super::{audited, directory_login};

use crate::config::Role;
use crate::connections::{ConnectionLimits, ConnectionState};
use crate::sessions::{Refusal, Server};

/// A connection's user, recorded when their login succeeded. Every statement asks for it:
/// after a failed login the protocol loop may still read what the client sends next.
pub(super) struct LoggedIn;

/// What a cancel request for this connection fires (registered at login). Kept under
/// its own type: pgwire's protocol loop would otherwise take the same handle for itself
/// and see our next statement's start as a cancel of its own.
pub(super) struct CancelHandle(pub(super) Arc<ConnectionHandle>);

/// The login of one connection: TLS first when the server has it, then SCRAM-SHA-256;
/// a logged-in connection is registered for cancel requests.
pub(super) struct Login<P> {
    pub(super) scram: SASLAuthStartupHandler<P>,
    /// What a login tells the client of the server (directory logins finish it here).
    pub(super) parameters: Arc<P>,
    pub(super) tls_required: bool,
    pub(super) connections: Arc<ConnectionManager>,
    /// The server's connection limits (per user, checked at login).
    pub(super) limits: Arc<ConnectionLimits>,
    /// What the connection's watch reads.
    pub(super) state: Arc<ConnectionState>,
    /// The server, whose audit trail hears of every login.
    pub(super) server: Arc<Server>,
}

/// A logged-in connection's statement activity, for its idle timeout.
pub(super) struct Activity(pub(super) Arc<ConnectionState>);

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
        let user_of = |client: &C| {
            client
                .metadata()
                .get(METADATA_USER)
                .cloned()
                .unwrap_or_default()
        };
        let address = client.socket_addr().ip().to_string();
        let refused = |client: &C, reason: &str| {
            let _ = audited::login(&self.server, &user_of(client), &address, Err(reason));
        };
        if self.tls_required && !client.is_secure() {
            refused(client, "a connection without TLS");
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
            refused(client, "too many failed logins");
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".to_string(),
                "28P01".to_string(),
                format!(
                    "too many failed logins for this user name or address: try again in {} s",
                    wait.as_secs() + 1
                ),
            ))));
        }
        // SCRAM's last step tells the client it is logged in (ReadyForQuery); that message
        // is held back until the per-user limit below has admitted the connection, so a
        // refused client is never told it logged in (PostgreSQL's order: AuthenticationOk,
        // then the refusal).
        // A user not configured here logs in from the directory, if there is one.
        let user = match &message {
            PgWireFrontendMessage::Startup(startup) => {
                startup.parameters.get("user").cloned().unwrap_or_default()
            }
            _ => user_of(client),
        };
        let mut held = HeldBack {
            client: &mut *client,
            ready: None,
        };
        let mut refusal = None;
        let started = match self.server.is_directory_user(&user) {
            true => {
                let parameters = &*self.parameters;
                directory_login::step(&mut held, message, &self.server, parameters, &mut refusal)
                    .await
            }
            false => self.scram.on_startup(&mut held, message).await,
        };
        let ready = held.ready.take();
        if let Err(PgWireError::InvalidPassword(_)) = &started {
            let refusal = refusal.unwrap_or(Refusal {
                reason: "authentication failed".into(),
                counts: true,
            });
            refusal.count_in(&self.limits.failed_logins, &keys(client));
            refused(client, &refusal.reason);
        }
        started?;
        if matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            let user = client
                .metadata()
                .get(METADATA_USER)
                .cloned()
                .unwrap_or_default();
            let Some(slot) = self.limits.admit_user(&user) else {
                refused(client, "too many connections for the user");
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "FATAL".to_string(),
                    "53300".to_string(),
                    format!(
                        "too many connections for user \"{user}\": at most {} (max_connections_per_user)",
                        self.limits.per_user()
                    ),
                ))));
            };
            let role = self.server.role(&user).unwrap_or(Role::Public);
            audited::login(&self.server, &user, &address, Ok(role))?;
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
            if let Some(ready) = ready {
                client.send(ready).await?;
            }
        }
        Ok(())
    }
}

/// A client whose ReadyForQuery message is held back (kept in `ready`, not sent); every
/// other message goes through.
struct HeldBack<'a, C> {
    client: &'a mut C,
    ready: Option<PgWireBackendMessage>,
}

impl<C: futures::Sink<PgWireBackendMessage> + Unpin> futures::Sink<PgWireBackendMessage>
    for HeldBack<'_, C>
{
    type Error = C::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Pin::new(&mut *self.client).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> Result<(), C::Error> {
        if matches!(item, PgWireBackendMessage::ReadyForQuery(_)) {
            self.ready = Some(item);
            return Ok(());
        }
        Pin::new(&mut *self.client).start_send(item)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Pin::new(&mut *self.client).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Pin::new(&mut *self.client).poll_close(cx)
    }
}

impl<C: ClientInfo> ClientInfo for HeldBack<'_, C> {
    fn socket_addr(&self) -> SocketAddr {
        self.client.socket_addr()
    }

    fn is_secure(&self) -> bool {
        self.client.is_secure()
    }

    fn protocol_version(&self) -> ProtocolVersion {
        self.client.protocol_version()
    }

    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.client.set_protocol_version(version)
    }

    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.client.pid_and_secret_key()
    }

    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.client.set_pid_and_secret_key(pid, secret_key)
    }

    fn state(&self) -> PgWireConnectionState {
        self.client.state()
    }

    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.client.set_state(new_state)
    }

    fn transaction_status(&self) -> TransactionStatus {
        self.client.transaction_status()
    }

    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.client.set_transaction_status(new_status)
    }

    fn metadata(&self) -> &HashMap<String, String> {
        self.client.metadata()
    }

    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.client.metadata_mut()
    }

    fn session_extensions(&self) -> &SessionExtensions {
        self.client.session_extensions()
    }

    fn sni_server_name(&self) -> Option<&str> {
        self.client.sni_server_name()
    }

    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        self.client.client_certificates()
    }
}

/// The stored password hashes, as SCRAM asks for them. A user who does not exist gets a
/// hash no password matches, so the client cannot tell them from a wrong password.
#[derive(Debug)]
pub(super) struct Passwords(pub(super) Arc<Server>);

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
