//! Logins from the hospital's directory (`[ldap]`): a user who is not configured locally
//! logs in with their directory password. The server connects to the directory (TLS,
//! StartTLS, or a loopback address), finds the user's entry (a DN template, or a search),
//! binds as the user with the password they gave (nothing is stored), then reads which of
//! the configured groups they belong to: an owner group makes them an owner, a public
//! group a public user. Any failure is "authentication failed" to the client; the audit
//! trail gets the reason.

pub mod protocol;
pub mod settings;

use std::sync::Arc;

use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use pgwire::tokio::tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use pgwire::tokio::tokio_rustls::TlsConnector;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::config::Role;
use protocol::{ProtocolError, Scope, INVALID_CREDENTIALS, MAX_ENTRIES, SUCCESS};
use settings::{LdapSettings, Locate, Security};

/// Longest user name sent to the directory.
const MAX_USER_BYTES: usize = 256;
/// Longest password sent to the directory.
const MAX_PASSWORD_BYTES: usize = 1024;

/// Why a directory login failed: said to the owner (audit trail, server log), never to the
/// client.
#[derive(Debug, Clone, PartialEq)]
pub struct LoginFailure {
    /// What happened.
    pub reason: String,
    /// Whether the directory could not be asked (down, TLS, a broken answer): the server's
    /// operator should look, not the user.
    pub unavailable: bool,
}

impl LoginFailure {
    fn refused(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            unavailable: false,
        }
    }
}

impl From<ProtocolError> for LoginFailure {
    fn from(e: ProtocolError) -> Self {
        Self {
            reason: e.0,
            unavailable: true,
        }
    }
}

/// A user the directory let in.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectoryUser {
    /// Their entry.
    pub dn: String,
    /// From the first configured group they belong to (owner groups first).
    pub role: Role,
}

/// The directory of `[ldap]`.
pub struct Directory {
    settings: LdapSettings,
    tls: Option<TlsConnector>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A byte stream to the directory, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// An open connection and its next message id.
struct Connection {
    io: Box<dyn Io>,
    next: i64,
}

/// `value` escaped for an attribute value of a DN (RFC 4514 §2.4).
pub fn escape_dn_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=' => {
                out.push('\\');
                out.push(c);
            }
            '\0' => out.push_str("\\00"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            '#' if i == 0 => out.push_str("\\#"),
            c => out.push(c),
        }
    }
    out
}

impl Directory {
    /// The directory of `settings`; reads the certificate authorities now.
    pub fn new(settings: LdapSettings) -> Result<Self, String> {
        let tls = match &settings.tls_ca {
            None => None,
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                let certs = CertificateDer::pem_file_iter(ca)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| format!("[ldap] tls_ca {}: {e}", ca.display()))?;
                for cert in certs {
                    roots
                        .add(cert)
                        .map_err(|e| format!("[ldap] tls_ca {}: {e}", ca.display()))?;
                }
                if roots.is_empty() {
                    return Err(format!(
                        "[ldap] tls_ca {} holds no certificate",
                        ca.display()
                    ));
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let config = ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("[ldap] TLS: {e}"))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Some(TlsConnector::from(Arc::new(config)))
            }
        };
        Ok(Self { settings, tls })
    }

    /// The ε quota of a public directory user.
    pub fn public_epsilon_quota(&self) -> Option<f64> {
        self.settings.public_epsilon_quota
    }

    /// Logs `user` in with `password`: who they are in the directory and their role, or why
    /// not. Takes at most the configured timeout.
    pub async fn login(&self, user: &str, password: &str) -> Result<DirectoryUser, LoginFailure> {
        if user.is_empty() || user.len() > MAX_USER_BYTES || user.chars().any(char::is_control) {
            return Err(LoginFailure::refused("a user name the directory is not asked about (empty, too long or with control characters)"));
        }
        // A simple bind with an empty password is an anonymous bind, which succeeds: never
        // send one for a user.
        if password.is_empty() {
            return Err(LoginFailure::refused("an empty password"));
        }
        if password.len() > MAX_PASSWORD_BYTES {
            return Err(LoginFailure::refused("a password of more than 1024 bytes"));
        }
        match tokio::time::timeout(self.settings.timeout, self.ask(user, password)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(LoginFailure {
                reason: format!(
                    "the directory did not answer within {} s",
                    self.settings.timeout.as_secs()
                ),
                unavailable: true,
            }),
        }
    }

    async fn ask(&self, user: &str, password: &str) -> Result<DirectoryUser, LoginFailure> {
        let mut connection = self.connect().await?;
        let outcome = self.ask_on(&mut connection, user, password).await;
        connection.unbind().await;
        outcome
    }

    async fn ask_on(
        &self,
        connection: &mut Connection,
        user: &str,
        password: &str,
    ) -> Result<DirectoryUser, LoginFailure> {
        let dn = match &self.settings.locate {
            Locate::Template(template) => template.replace("{user}", &escape_dn_value(user)),
            Locate::Search {
                base,
                attribute,
                service,
            } => {
                if let Some((dn, secret)) = service {
                    connection.bind_service(dn, &secret.0).await?;
                }
                let found = connection
                    .search(base, Scope::Subtree, attribute, user.as_bytes(), 2)
                    .await?;
                match found.as_slice() {
                    [one] => one.clone(),
                    [] => {
                        return Err(LoginFailure::refused(format!(
                            "no entry has {attribute} = the user name under {base}"
                        )))
                    }
                    _ => {
                        return Err(LoginFailure::refused(format!(
                            "several entries have {attribute} = the user name under {base}"
                        )))
                    }
                }
            }
        };
        match connection.bind(&dn, password).await? {
            (SUCCESS, _) => {}
            (INVALID_CREDENTIALS, _) => {
                return Err(LoginFailure::refused(format!(
                    "the directory refused the password of {dn}"
                )))
            }
            (code, message) => {
                return Err(LoginFailure::refused(format!(
                    "the directory refused the bind as {dn}: result code {code} {message}"
                )))
            }
        }
        // Groups are read as the service account when there is one (it may read what the
        // user may not), else as the user.
        if let Locate::Search {
            service: Some((service, secret)),
            ..
        } = &self.settings.locate
        {
            connection.bind_service(service, &secret.0).await?;
        }
        let member = self.settings.member_attribute.as_str();
        for (groups, role) in [
            (&self.settings.owner_groups, Role::Owner),
            (&self.settings.public_groups, Role::Public),
        ] {
            for group in groups {
                let found = connection
                    .search(group, Scope::Base, member, dn.as_bytes(), 1)
                    .await?;
                if !found.is_empty() {
                    return Ok(DirectoryUser { dn, role });
                }
            }
        }
        Err(LoginFailure::refused(format!(
            "{dn} is in none of the configured groups"
        )))
    }

    /// A connection, secured as the settings say.
    async fn connect(&self) -> Result<Connection, LoginFailure> {
        let settings = &self.settings;
        let unavailable = |what: String| LoginFailure {
            reason: what,
            unavailable: true,
        };
        let tcp = TcpStream::connect((settings.host.as_str(), settings.port))
            .await
            .map_err(|e| {
                unavailable(format!(
                    "cannot connect to the directory at {}:{}: {e}",
                    settings.host, settings.port
                ))
            })?;
        let mut connection = Connection {
            io: Box::new(tcp),
            next: 1,
        };
        match settings.security {
            Security::Loopback => Ok(connection),
            Security::Tls => self.secure(connection.io).await,
            Security::StartTls => {
                let id = connection.id();
                protocol::send(&mut connection.io, id, protocol::start_tls_request()).await?;
                let (code, message) = connection.result(id, 24).await?;
                if code != SUCCESS {
                    return Err(unavailable(format!(
                        "the directory refused StartTLS: result code {code} {message}"
                    )));
                }
                let mut secured = self.secure(connection.io).await?;
                secured.next = connection.next;
                Ok(secured)
            }
        }
    }

    /// `io` wrapped in TLS, the directory's certificate checked against `tls_ca` and the
    /// host name.
    async fn secure(&self, io: Box<dyn Io>) -> Result<Connection, LoginFailure> {
        let unavailable = |what: String| LoginFailure {
            reason: what,
            unavailable: true,
        };
        let Some(tls) = &self.tls else {
            return Err(unavailable("TLS without tls_ca".into()));
        };
        let name = ServerName::try_from(self.settings.host.clone())
            .map_err(|e| unavailable(format!("the directory's host name: {e}")))?;
        let stream = tls
            .connect(name, io)
            .await
            .map_err(|e| unavailable(format!("TLS with the directory: {e}")))?;
        Ok(Connection {
            io: Box::new(stream),
            next: 1,
        })
    }
}

impl Connection {
    fn id(&mut self) -> i64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// The result of request `id`, whose response is operation `kind`.
    async fn result(&mut self, id: i64, kind: u64) -> Result<(u64, String), ProtocolError> {
        let (got, op) = protocol::receive(&mut self.io).await?;
        if got != id || protocol::kind(&op) != Some(kind) || !protocol::is_constructed(&op) {
            return Err(ProtocolError(format!(
                "the directory answered request {id} with an unexpected message"
            )));
        }
        protocol::result_of(op)
    }

    /// A simple bind: its result code and message.
    async fn bind(&mut self, dn: &str, password: &str) -> Result<(u64, String), ProtocolError> {
        let id = self.id();
        protocol::send(&mut self.io, id, protocol::bind_request(dn, password)).await?;
        self.result(id, 1).await
    }

    /// The service account's bind, which must succeed.
    async fn bind_service(&mut self, dn: &str, password: &str) -> Result<(), LoginFailure> {
        match self.bind(dn, password).await? {
            (SUCCESS, _) => Ok(()),
            (code, message) => Err(LoginFailure {
                reason: format!(
                    "the directory refused the service account {dn}: result code {code} {message}"
                ),
                unavailable: true,
            }),
        }
    }

    /// The DNs of the entries under `base` (within `scope`) whose `attribute` equals
    /// `value`, at most `limit`. An absent base (noSuchObject) has none.
    async fn search(
        &mut self,
        base: &str,
        scope: Scope,
        attribute: &str,
        value: &[u8],
        limit: i64,
    ) -> Result<Vec<String>, ProtocolError> {
        const NO_SUCH_OBJECT: u64 = 32;
        const SIZE_LIMIT_EXCEEDED: u64 = 4;
        let id = self.id();
        let request = protocol::search_request(base, scope, attribute, value, limit);
        protocol::send(&mut self.io, id, request).await?;
        let mut found = Vec::new();
        loop {
            let (got, op) = protocol::receive(&mut self.io).await?;
            if got != id {
                return Err(ProtocolError(format!(
                    "the directory answered search {id} with a message for {got}"
                )));
            }
            match protocol::kind(&op) {
                Some(4) => {
                    if found.len() >= MAX_ENTRIES {
                        return Err(ProtocolError("the directory sent too many entries".into()));
                    }
                    found.push(protocol::entry_dn(op)?);
                }
                // Referrals to other servers are not followed.
                Some(19) => {}
                Some(5) => {
                    return match protocol::result_of(op)? {
                        (SUCCESS | SIZE_LIMIT_EXCEEDED, _) => Ok(found),
                        (NO_SUCH_OBJECT, _) => Ok(Vec::new()),
                        (code, message) => Err(ProtocolError(format!(
                        "the directory refused a search under {base}: result code {code} {message}"
                    ))),
                    }
                }
                _ => {
                    return Err(ProtocolError(format!(
                        "the directory answered search {id} with an unexpected message"
                    )))
                }
            }
        }
    }

    /// Says goodbye; best effort.
    async fn unbind(mut self) {
        let id = self.id();
        let _ = protocol::send(&mut self.io, id, protocol::unbind_request()).await;
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut self.io).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dn_values_are_escaped() {
        assert_eq!(escape_dn_value("ann"), "ann");
        assert_eq!(escape_dn_value("a,ou=admins+x"), "a\\,ou\\=admins\\+x");
        assert_eq!(escape_dn_value(" #x "), "\\ #x\\ ");
        assert_eq!(escape_dn_value("#x"), "\\#x");
        assert_eq!(escape_dn_value("a\\b\"<>;\0"), "a\\\\b\\\"\\<\\>\\;\\00");
    }
}
