//! The server's configuration file (TOML), read and checked before anything listens.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use datafusion_anonymize::{parse_budget_limit, PublicPolicy};
use serde::Deserialize;

use crate::audit::AuditSettings;
use crate::ldap::settings::{LdapSection, LdapSettings};
use crate::password::PasswordHash;

/// How long a public statement may take unless `public_statement_timeout_seconds` says.
pub const DEFAULT_PUBLIC_STATEMENT_TIMEOUT: Duration = Duration::from_secs(300);

/// Connections in all unless `max_connections` says.
pub const DEFAULT_MAX_CONNECTIONS: usize = 200;

/// Logged-in connections per user unless `max_connections_per_user` says.
pub const DEFAULT_MAX_CONNECTIONS_PER_USER: usize = 20;

/// How long a connection may take to log in unless `login_timeout_seconds` says.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a logged-in connection may stay idle unless `idle_session_timeout_seconds`
/// says.
pub const DEFAULT_IDLE_SESSION_TIMEOUT: Duration = Duration::from_secs(900);

/// How large the audit trail's file grows before it is rotated, unless
/// `audit_max_megabytes` says.
pub const DEFAULT_AUDIT_MAX_MEGABYTES: u64 = 100;

/// How many rotated audit files are kept, unless `audit_keep_files` says.
pub const DEFAULT_AUDIT_KEEP_FILES: usize = 10;

/// What `server.toml` holds, as written (paths relative to the file's folder).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    postgres: Option<String>,
    flight_sql: Option<String>,
    studio: Option<String>,
    studio_files: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    #[serde(default)]
    init: Vec<PathBuf>,
    /// The release policy for public users (`[public]`, as `dfanon --policy` reads it).
    #[serde(default)]
    public: PublicPolicy,
    public_concurrent_statements: Option<usize>,
    public_statement_timeout_seconds: Option<u64>,
    max_connections: Option<usize>,
    max_connections_per_user: Option<usize>,
    login_timeout_seconds: Option<u64>,
    idle_session_timeout_seconds: Option<u64>,
    ledger: Option<PathBuf>,
    audit: Option<PathBuf>,
    audit_max_megabytes: Option<u64>,
    audit_keep_files: Option<usize>,
    audit_public_text: Option<String>,
    epsilon_budget: Option<toml::Value>,
    delta_budget: Option<toml::Value>,
    #[serde(default, rename = "user")]
    users: Vec<UserEntry>,
    /// Logins from a directory (`[ldap]`).
    ldap: Option<LdapSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    name: String,
    role: String,
    password_hash: String,
    epsilon_quota: Option<f64>,
}

/// Who a user is to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The data owner: every function, DDL, `SET anonymize.*`.
    Owner,
    /// An analyst: read-only statements over releases and published tables.
    Public,
}

/// One `[[user]]` entry, checked.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub role: Role,
    pub password: PasswordHash,
    /// Most ε this user's releases may add per source table (public users only).
    pub epsilon_quota: Option<f64>,
}

/// The checked configuration.
#[derive(Debug)]
pub struct Config {
    pub postgres: Option<SocketAddr>,
    pub flight_sql: Option<SocketAddr>,
    /// The studio's HTTP listener (HTTPS under `tls_cert`), if any.
    pub studio: Option<SocketAddr>,
    /// The folder whose CSV and Parquet files the studio may register as sources and
    /// hierarchies (nothing outside it), if any.
    pub studio_files: Option<PathBuf>,
    /// The certificate chain and key (PEM): both protocols are then served with TLS only.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub init: Vec<PathBuf>,
    pub policy: PublicPolicy,
    /// How many public statements run at once (the others wait for a slot).
    pub public_concurrent_statements: usize,
    /// How long one public statement may take, its wait for a slot included.
    pub public_statement_timeout: Duration,
    /// Connections in all, over both protocols.
    pub max_connections: usize,
    /// Logged-in connections of one user.
    pub max_connections_per_user: usize,
    /// How long a connection may take to log in.
    pub login_timeout: Duration,
    /// How long a logged-in connection may stay idle (no statement running).
    pub idle_session_timeout: Duration,
    pub ledger: Option<PathBuf>,
    /// The audit trail, if the configuration names a file for it.
    pub audit: Option<AuditSettings>,
    pub epsilon_budget: f64,
    pub delta_budget: f64,
    pub users: Vec<User>,
    /// The directory users who are not configured here log in from, if any.
    pub ldap: Option<LdapSettings>,
}

/// Reads and checks the configuration file at `path`.
pub fn load(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the configuration {}: {e}", path.display()))?;
    let folder = path.parent().unwrap_or(Path::new("."));
    parse(&text, folder).map_err(|e| format!("{}: {e}", path.display()))
}

/// Checks the configuration `text`; relative paths are taken from `folder`.
pub fn parse(text: &str, folder: &Path) -> Result<Config, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    let resolve = |p: PathBuf| if p.is_absolute() { p } else { folder.join(p) };
    let address = |key: &str, value: Option<String>| -> Result<Option<SocketAddr>, String> {
        value
            .map(|v| {
                v.parse::<SocketAddr>().map_err(|e| {
                    format!("{key} = '{v}' is not a listen address such as 127.0.0.1:5433 ({e})")
                })
            })
            .transpose()
    };
    let postgres = address("postgres", file.postgres)?;
    let flight_sql = address("flight_sql", file.flight_sql)?;
    let studio = address("studio", file.studio)?;
    if postgres.is_none() && flight_sql.is_none() {
        return Err("give at least one listen address: postgres = \"127.0.0.1:5433\" and/or flight_sql = \"127.0.0.1:50061\"".into());
    }
    let listeners = [
        ("postgres", postgres),
        ("flight_sql", flight_sql),
        ("studio", studio),
    ];
    for (i, (first, a)) in listeners.iter().enumerate() {
        for (second, b) in &listeners[i + 1..] {
            if let (Some(a), Some(b)) = (a, b) {
                if a == b && a.port() != 0 {
                    return Err(format!(
                        "{first} and {second} are both {a}: each listener needs its own address"
                    ));
                }
            }
        }
    }
    let tls = match (file.tls_cert, file.tls_key) {
        (Some(cert), Some(key)) => Some((resolve(cert), resolve(key))),
        (None, None) => None,
        _ => return Err("tls_cert and tls_key go together: give both or neither".into()),
    };
    let limit = |key: &str, value: Option<toml::Value>| -> Result<f64, String> {
        match value {
            None => Ok(f64::INFINITY),
            Some(toml::Value::Float(f)) => parse_budget_limit(key, &f.to_string()),
            Some(toml::Value::Integer(i)) => parse_budget_limit(key, &i.to_string()),
            Some(toml::Value::String(s)) => parse_budget_limit(key, &s),
            Some(other) => Err(datafusion::error::DataFusionError::Configuration(format!(
                "{key} = {other} is not a number or 'unlimited'"
            ))),
        }
        .map_err(|e| e.strip_backtrace())
    };
    let epsilon_budget = limit("epsilon_budget", file.epsilon_budget)?;
    let delta_budget = limit("delta_budget", file.delta_budget)?;
    let policy = file.public;
    policy.validate().map_err(|e| format!("[public]: {e}"))?;
    let public_concurrent_statements = match file.public_concurrent_statements {
        Some(0) => return Err(
            "public_concurrent_statements = 0 would let no public statement run; give 1 or more"
                .into(),
        ),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let public_statement_timeout = match file.public_statement_timeout_seconds {
        Some(0) => {
            return Err("public_statement_timeout_seconds = 0 would stop every public statement at once; give 1 or more".into())
        }
        Some(seconds) => Duration::from_secs(seconds),
        None => DEFAULT_PUBLIC_STATEMENT_TIMEOUT,
    };
    let positive = |key: &str, value: Option<u64>, default: u64| -> Result<u64, String> {
        match value {
            Some(0) => Err(format!("{key} = 0 would refuse everything; give 1 or more")),
            Some(n) => Ok(n),
            None => Ok(default),
        }
    };
    let max_connections = positive(
        "max_connections",
        file.max_connections.map(|n| n as u64),
        DEFAULT_MAX_CONNECTIONS as u64,
    )? as usize;
    let max_connections_per_user = positive(
        "max_connections_per_user",
        file.max_connections_per_user.map(|n| n as u64),
        DEFAULT_MAX_CONNECTIONS_PER_USER as u64,
    )? as usize;
    let login_timeout = Duration::from_secs(positive(
        "login_timeout_seconds",
        file.login_timeout_seconds,
        DEFAULT_LOGIN_TIMEOUT.as_secs(),
    )?);
    let idle_session_timeout = Duration::from_secs(positive(
        "idle_session_timeout_seconds",
        file.idle_session_timeout_seconds,
        DEFAULT_IDLE_SESSION_TIMEOUT.as_secs(),
    )?);
    let mut names = BTreeSet::new();
    let mut users = Vec::new();
    for entry in file.users {
        if entry.name.is_empty() {
            return Err("a [[user]] has an empty name".into());
        }
        if !names.insert(entry.name.clone()) {
            return Err(format!("user '{}' is given twice", entry.name));
        }
        let role = match entry.role.as_str() {
            "owner" => Role::Owner,
            "public" => Role::Public,
            other => {
                return Err(format!(
                    "user '{}': role = '{other}' is not 'owner' or 'public'",
                    entry.name
                ))
            }
        };
        let password = PasswordHash::parse(&entry.password_hash).map_err(|e| {
            format!(
                "user '{}': password_hash {e}; store the hash that `dfanon-server hash-password` prints, never the password",
                entry.name
            )
        })?;
        if let Some(quota) = entry.epsilon_quota {
            if role == Role::Owner {
                return Err(format!(
                    "user '{}': epsilon_quota is for public users; the owner's releases count against the tables' budgets only",
                    entry.name
                ));
            }
            if !(quota.is_finite() && quota >= 0.0) {
                return Err(format!(
                    "user '{}': epsilon_quota = {quota} must be a number >= 0",
                    entry.name
                ));
            }
        }
        users.push(User {
            name: entry.name,
            role,
            password,
            epsilon_quota: entry.epsilon_quota,
        });
    }
    let ldap = match file.ldap {
        Some(section) => {
            if tls.is_none() {
                return Err("[ldap] needs tls_cert and tls_key: directory users send their password to this server, which only TLS keeps from the network".into());
            }
            Some(section.check(folder)?)
        }
        None => None,
    };
    if users.is_empty() && ldap.is_none() {
        return Err("no [[user]] and no [ldap] is configured, so nobody could log in".into());
    }
    let audit = match file.audit.map(resolve) {
        None => {
            if file.audit_max_megabytes.is_some()
                || file.audit_keep_files.is_some()
                || file.audit_public_text.is_some()
            {
                return Err("audit_max_megabytes, audit_keep_files and audit_public_text set how the audit trail is kept: name its file too (audit = \"audit.jsonl\")".into());
            }
            None
        }
        Some(path) => {
            if path
                .parent()
                .is_some_and(|p| !p.as_os_str().is_empty() && !p.is_dir())
            {
                return Err(format!(
                    "audit = '{}': its folder does not exist",
                    path.display()
                ));
            }
            let max_megabytes = positive(
                "audit_max_megabytes",
                file.audit_max_megabytes,
                DEFAULT_AUDIT_MAX_MEGABYTES,
            )?;
            let hash_public_text = match file.audit_public_text.as_deref() {
                None | Some("text") => false,
                Some("hash") => true,
                Some(other) => {
                    return Err(format!(
                        "audit_public_text = '{other}' is not 'text' (public users' statements kept as sent) or 'hash' (their SHA-256)"
                    ))
                }
            };
            Some(AuditSettings {
                path,
                max_bytes: max_megabytes.saturating_mul(1 << 20),
                keep: file.audit_keep_files.unwrap_or(DEFAULT_AUDIT_KEEP_FILES),
                hash_public_text,
            })
        }
    };
    Ok(Config {
        postgres,
        flight_sql,
        studio,
        studio_files: file.studio_files.map(resolve),
        tls,
        init: file.init.into_iter().map(resolve).collect(),
        policy,
        public_concurrent_statements,
        public_statement_timeout,
        max_connections,
        max_connections_per_user,
        login_timeout,
        idle_session_timeout,
        ledger: match file.ledger.map(resolve) {
            // Its folder must exist (nothing is created for it) and an existing file must
            // be a regular file, as for dfanon's --ledger.
            Some(path) => Some(
                datafusion_anonymize::parse_ledger_path(&path.to_string_lossy())
                    .map_err(|e| format!("ledger = '{}': {}", path.display(), message(e)))?
                    .unwrap_or(path),
            ),
            None => None,
        },
        audit,
        epsilon_budget,
        delta_budget,
        users,
        ldap,
    })
}

/// The text of a library error, without DataFusion's kind prefix.
fn message(e: datafusion::error::DataFusionError) -> String {
    match e {
        datafusion::error::DataFusionError::Execution(text)
        | datafusion::error::DataFusionError::Configuration(text) => text,
        other => other.strip_backtrace(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = "[[user]]\nname = \"owner\"\nrole = \"owner\"\npassword_hash = \"scram-sha-256$4096$bf4Y6FkSgtZjskk7kbKP+w==$z8eMlhFw7Ya8kfB0piWHWZkCoBHAxgH27A70pYMlcvs=\"\n";

    fn parsed(settings: &str) -> Result<Config, String> {
        parse(
            &format!("postgres = \"127.0.0.1:5433\"\n{settings}\n{USER}"),
            Path::new("/etc/dfanon"),
        )
    }

    #[test]
    fn the_audit_trail_has_defaults_and_its_settings_need_its_file() {
        assert_eq!(parsed("").expect("parses").audit, None);
        let config = parsed("audit = \"/tmp/audit.jsonl\"").expect("parses");
        assert_eq!(
            config.audit,
            Some(AuditSettings {
                path: PathBuf::from("/tmp/audit.jsonl"),
                max_bytes: 100 << 20,
                keep: 10,
                hash_public_text: false,
            })
        );
        let config = parsed(
            "audit = \"/tmp/audit.jsonl\"\naudit_max_megabytes = 5\naudit_keep_files = 2\naudit_public_text = \"hash\"",
        )
        .expect("parses");
        let audit = config.audit.expect("an audit trail");
        assert_eq!(
            (audit.max_bytes, audit.keep, audit.hash_public_text),
            (5 << 20, 2, true)
        );
        assert_eq!(
            parsed("audit = \"/tmp/audit.jsonl\"\naudit_public_text = \"sha\"").err().as_deref(),
            Some("audit_public_text = 'sha' is not 'text' (public users' statements kept as sent) or 'hash' (their SHA-256)")
        );
        assert_eq!(
            parsed("audit_keep_files = 3").err().as_deref(),
            Some("audit_max_megabytes, audit_keep_files and audit_public_text set how the audit trail is kept: name its file too (audit = \"audit.jsonl\")")
        );
        assert_eq!(
            parsed("audit = \"audit.jsonl\"").err().as_deref(),
            Some("audit = '/etc/dfanon/audit.jsonl': its folder does not exist")
        );
    }

    #[test]
    fn public_statement_limits_have_defaults_and_refuse_zero() {
        let config = parsed("").expect("parses");
        assert_eq!(config.public_statement_timeout, Duration::from_secs(300));
        assert_eq!(config.max_connections, 200);
        assert_eq!(config.max_connections_per_user, 20);
        assert_eq!(config.login_timeout, Duration::from_secs(30));
        assert_eq!(config.idle_session_timeout, Duration::from_secs(900));
        assert_eq!(
            parsed("max_connections = 0").err().as_deref(),
            Some("max_connections = 0 would refuse everything; give 1 or more")
        );
        assert!(config.public_concurrent_statements >= 1);
        let config =
            parsed("public_concurrent_statements = 3\npublic_statement_timeout_seconds = 60")
                .expect("parses");
        assert_eq!(config.public_concurrent_statements, 3);
        assert_eq!(config.public_statement_timeout, Duration::from_secs(60));
        assert_eq!(
            parsed("public_concurrent_statements = 0").err().as_deref(),
            Some("public_concurrent_statements = 0 would let no public statement run; give 1 or more")
        );
        assert_eq!(
            parsed("public_statement_timeout_seconds = 0").err().as_deref(),
            Some("public_statement_timeout_seconds = 0 would stop every public statement at once; give 1 or more")
        );
    }

    #[test]
    fn one_address_for_both_protocols_and_a_ledger_without_its_folder_are_refused() {
        assert_eq!(
            parsed("flight_sql = \"127.0.0.1:5433\"").err().as_deref(),
            Some("postgres and flight_sql are both 127.0.0.1:5433: each listener needs its own address")
        );
        assert_eq!(
            parsed("studio = \"127.0.0.1:5433\"").err().as_deref(),
            Some(
                "postgres and studio are both 127.0.0.1:5433: each listener needs its own address"
            )
        );
        let config = parsed("studio = \"127.0.0.1:8080\"").expect("parses");
        assert_eq!(config.studio, "127.0.0.1:8080".parse().ok());
        assert_eq!(
            parsed("studio = \"localhost\"").err().as_deref(),
            Some("studio = 'localhost' is not a listen address such as 127.0.0.1:5433 (invalid socket address syntax)")
        );
        let err = parsed("ledger = \"/nonexistent-dfanon/dir/l.json\"")
            .err()
            .unwrap_or_default();
        assert!(
            err.starts_with(
                "ledger = '/nonexistent-dfanon/dir/l.json': cannot use privacy ledger file"
            ) && err.contains("its directory '/nonexistent-dfanon/dir' is not accessible"),
            "{err}"
        );
        assert!(!Path::new("/nonexistent-dfanon").exists());
        let err = parsed("ledger = \"/dev/null\"").err().unwrap_or_default();
        assert!(err.contains("is not a regular file"), "{err}");
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = dir.path().join("l.json");
        let config = parsed(&format!("ledger = {:?}", ledger.to_string_lossy())).expect("parses");
        assert_eq!(config.ledger, Some(ledger));
    }

    #[test]
    fn tls_covers_both_protocols_and_its_files_go_together() {
        let config =
            parsed("flight_sql = \"127.0.0.1:50061\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"")
                .expect("parses");
        assert_eq!(
            config.tls,
            Some((
                PathBuf::from("/etc/dfanon/c.pem"),
                PathBuf::from("/etc/dfanon/k.pem")
            ))
        );
        assert_eq!(
            parsed("tls_cert = \"c.pem\"").err().as_deref(),
            Some("tls_cert and tls_key go together: give both or neither")
        );
    }
}
