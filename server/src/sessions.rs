//! The server's state: the owner's catalog (built by the `init` scripts), one store of
//! releases and one ledger for every session, and a session per connection by role.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_anonymize::{
    owner_session, public_session, register_with, run_script, Access, AnonymizeOptions, Principal,
    ProgressFn, RegisterOptions, SharedReleases,
};

use crate::audit::{Audit, Auditing, Protocol, ReleasesHeard, SessionAudit};
use crate::audit_table::AuditTable;
use crate::config::{Config, Role, User};
use crate::connections::{ConnectionLimits, FailedLogins};
use crate::ldap::Directory;
use crate::limits::Admission;
use crate::password::PasswordHash;

/// What every connection of the server shares.
pub struct Server {
    /// The owner's session the `init` scripts ran in; every session reads its catalog.
    owner: SessionContext,
    releases: SharedReleases,
    budget: AnonymizeOptions,
    public: datafusion_anonymize::PublicPolicy,
    users: HashMap<String, User>,
    /// The directory users log in from when they are not configured here (`[ldap]`).
    directory: Option<Directory>,
    /// The directory users who logged in, with the role of their last login.
    directory_users: Mutex<HashMap<String, User>>,
    admission: Admission,
    connections: Arc<ConnectionLimits>,
    /// What the salts of unknown users are derived from ([`PasswordHash::unmatchable`]).
    mock_secret: Vec<u8>,
    /// The audit trail, if the configuration names one.
    audit: Option<Arc<Audit>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").finish_non_exhaustive()
    }
}

/// Why a login failed: the reason for the audit trail (the client hears only that the
/// login failed), and whether it counts towards the failed-login limit (a directory that
/// cannot be reached is not the user's failure).
#[derive(Debug)]
pub struct Refusal {
    pub reason: String,
    pub counts: bool,
}

impl Refusal {
    /// Counts the refusal towards the failed-login limit of `keys`, if it counts.
    pub fn count_in(&self, failed_logins: &FailedLogins, keys: &[String]) {
        if self.counts {
            failed_logins.failed(keys);
        }
    }
}

/// A logged-in user's session.
pub struct Session {
    pub role: Role,
    pub ctx: SessionContext,
    /// The releases the session's calls were served, for the audit trail.
    pub heard: ReleasesHeard,
}

impl Server {
    /// Builds the owner's catalog: registers the functions and runs the `init` scripts in
    /// order, stopping at the first failing statement.
    pub async fn start(config: &Config) -> Result<Arc<Self>> {
        let session_config = SessionConfig::new().with_information_schema(true);
        let owner = SessionContext::new_with_config(session_config);
        let releases = SharedReleases::new();
        let budget = AnonymizeOptions {
            epsilon_budget: config.epsilon_budget,
            delta_budget: config.delta_budget,
            ledger_path: config.ledger.clone(),
            ..AnonymizeOptions::default()
        };
        register_with(
            &owner,
            RegisterOptions {
                budget: budget.clone(),
                releases: Some(releases.clone()),
                ..RegisterOptions::owner()
            },
        )?;
        for file in &config.init {
            let script = std::fs::read_to_string(file)
                .map_err(|e| DataFusionError::Execution(format!("init {}: {e}", file.display())))?;
            run_script(&owner, &script).await.map_err(|e| {
                DataFusionError::Context(format!("init {}", file.display()), Box::new(e))
            })?;
        }
        let audit = match &config.audit {
            Some(settings) => Some(Arc::new(
                Audit::open(settings.clone()).map_err(DataFusionError::Configuration)?,
            )),
            None => None,
        };
        let server = Self {
            audit,
            owner,
            releases,
            budget,
            public: config.policy.clone(),
            users: config
                .users
                .iter()
                .map(|u| (u.name.clone(), u.clone()))
                .collect(),
            directory: match &config.ldap {
                Some(settings) => {
                    Some(Directory::new(settings.clone()).map_err(DataFusionError::Configuration)?)
                }
                None => None,
            },
            directory_users: Mutex::new(HashMap::new()),
            admission: Admission::new(
                config.public_concurrent_statements,
                config.public_statement_timeout,
            ),
            mock_secret: PasswordHash::mock_secret(config.users.iter().map(|u| &u.password)),
            connections: ConnectionLimits::new(
                config.max_connections,
                config.max_connections_per_user,
                config.login_timeout,
                config.idle_session_timeout,
            ),
        };
        // A public policy that cannot be registered is the owner's mistake: said at start.
        server.public_session(None, &ReleasesHeard::default())?;
        Ok(Arc::new(server))
    }

    /// The stored password of `user`, or one nothing matches when there is no such user
    /// (so an unknown user and a wrong password look the same to the client).
    pub fn password(&self, user: &str) -> PasswordHash {
        self.users
            .get(user)
            .map(|u| u.password.clone())
            .unwrap_or_else(|| PasswordHash::unmatchable(user, &self.mock_secret))
    }

    /// The user `name`: configured here, or logged in from the directory.
    fn user(&self, name: &str) -> Option<User> {
        match self.users.get(name) {
            Some(user) => Some(user.clone()),
            None => self
                .directory_users
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get(name)
                .cloned(),
        }
    }

    /// Whether `name` logs in from the directory: there is one, and `name` is not a user
    /// configured here.
    pub fn is_directory_user(&self, name: &str) -> bool {
        self.directory.is_some() && !self.users.contains_key(name)
    }

    /// The role of `user`, if there is such a user.
    pub fn role(&self, user: &str) -> Option<Role> {
        self.user(user).map(|u| u.role)
    }

    /// The audit trail, if the configuration names one.
    pub fn audit(&self) -> Option<&Arc<Audit>> {
        self.audit.as_ref()
    }

    /// The slots and time limit of public users' statements.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// The connection limits, shared by both protocols.
    pub fn connections(&self) -> &Arc<ConnectionLimits> {
        &self.connections
    }

    /// Every published release.
    pub fn published(&self) -> Vec<datafusion_anonymize::PublishedRelease> {
        self.releases.published()
    }

    /// The tables of the owner's default schema, by name, without the published releases.
    pub fn owner_tables(&self) -> Vec<String> {
        let state = self.owner.state();
        let defaults = &state.config_options().catalog;
        let mut names = self
            .owner
            .catalog(&defaults.default_catalog)
            .and_then(|catalog| catalog.schema(&defaults.default_schema))
            .map(|schema| schema.table_names())
            .unwrap_or_default();
        let published: Vec<String> = self.published().into_iter().map(|r| r.name).collect();
        names.retain(|name| !published.contains(name));
        names.sort();
        names
    }

    /// Where a published release's report is kept: beside the publication when the server
    /// has a ledger file (it then outlives the process), else `None`.
    pub fn publication_report(&self, name: &str) -> Option<std::path::PathBuf> {
        let ledger = self.budget.ledger_path.as_deref()?;
        Some(datafusion_anonymize::publication_report_path(ledger, name))
    }

    /// The ε quota of public user `user`, if the configuration gives them one.
    pub fn epsilon_quota(&self, user: &str) -> Option<f64> {
        self.user(user).and_then(|u| u.epsilon_quota)
    }

    /// Checks `password` for `user`: against the stored hash of a user configured here,
    /// else by a bind to the directory (`[ldap]`); the user when it matches.
    pub async fn login(&self, user: &str, password: &str) -> Result<User, Refusal> {
        let failed = |reason: String| Refusal {
            reason,
            counts: true,
        };
        let directory = match (&self.directory, self.users.get(user)) {
            (Some(directory), None) => directory,
            (_, found) => {
                let matches = self.password(user).matches(password);
                return match found {
                    Some(found) if matches => Ok(found.clone()),
                    _ => Err(failed("authentication failed".into())),
                };
            }
        };
        match directory.login(user, password).await {
            Ok(entry) => {
                let found = User {
                    name: user.to_string(),
                    role: entry.role,
                    password: PasswordHash::unmatchable(user, &self.mock_secret),
                    epsilon_quota: match entry.role {
                        Role::Public => directory.public_epsilon_quota(),
                        Role::Owner => None,
                    },
                };
                self.directory_users
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(user.to_string(), found.clone());
                Ok(found)
            }
            Err(failure) => {
                if failure.unavailable {
                    eprintln!(
                        "dfanon-server: directory login of '{user}': {}",
                        failure.reason
                    );
                }
                Err(Refusal {
                    reason: format!("authentication failed (directory: {})", failure.reason),
                    counts: !failure.unavailable,
                })
            }
        }
    }

    /// A new session for the authenticated `user`: an owner session over the owner's
    /// catalog, or a public session; both share the server's releases and ledger.
    pub fn session(&self, user: &str) -> Result<Session> {
        let found = self
            .user(user)
            .ok_or_else(|| DataFusionError::Plan(format!("no user '{user}'")))?;
        let heard = ReleasesHeard::default();
        let ctx = match found.role {
            Role::Owner => self.owner_session(&heard)?,
            Role::Public => self.public_session(Some(&found), &heard)?,
        };
        Ok(Session {
            role: found.role,
            ctx,
            heard,
        })
    }

    /// An owner's session: its own settings (`SET` changes only it), the owner's catalog,
    /// every function, the shared releases and ledger.
    fn owner_session(&self, heard: &ReleasesHeard) -> Result<SessionContext> {
        self.owner_session_with(None, heard)
    }

    /// The studio's session for owner `user`: an owner's session whose long searches report
    /// to `progress`, and whose statements go into the audit trail (as the studio's) when
    /// the server keeps one.
    pub fn studio_session(
        &self,
        user: &str,
        progress: Option<ProgressFn>,
    ) -> Result<SessionContext> {
        let heard = ReleasesHeard::default();
        let ctx = self.owner_session_with(progress, &heard)?;
        if let Some(audit) = &self.audit {
            let auditing = Auditing::new(Protocol::Studio, user.to_string(), Role::Owner, heard);
            let session = SessionAudit {
                audit: audit.clone(),
                auditing,
            };
            ctx.state_ref()
                .write()
                .config_mut()
                .set_extension(Arc::new(session));
        }
        Ok(ctx)
    }

    /// An owner's session whose long searches report to `progress` and whose releases are
    /// told to `heard`; with `server_audit()` when the server keeps an audit trail.
    fn owner_session_with(
        &self,
        progress: Option<ProgressFn>,
        heard: &ReleasesHeard,
    ) -> Result<SessionContext> {
        let ctx = owner_session(
            &self.owner,
            RegisterOptions {
                budget: self.budget.clone(),
                releases: Some(self.releases.clone()),
                progress,
                on_release: Some(heard.listener()),
                ..RegisterOptions::owner()
            },
        )?;
        if let Some(audit) = &self.audit {
            ctx.register_udtf("server_audit", Arc::new(AuditTable(audit.clone())));
        }
        Ok(ctx)
    }

    fn public_session(&self, user: Option<&User>, heard: &ReleasesHeard) -> Result<SessionContext> {
        public_session(
            &self.owner,
            RegisterOptions {
                access: Access::Public,
                budget: self.budget.clone(),
                public: self.public.clone(),
                releases: Some(self.releases.clone()),
                principal: user.and_then(|u| {
                    u.epsilon_quota.map(|quota| Principal {
                        name: u.name.clone(),
                        epsilon_quota: quota,
                    })
                }),
                on_release: Some(heard.listener()),
                ..RegisterOptions::default()
            },
        )
    }
}
