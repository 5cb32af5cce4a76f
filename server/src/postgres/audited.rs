//! The audit trail's lines for PostgreSQL logins and statements ([`crate::audit`]): a
//! statement's line is written when it fails, at once for a response without rows, and
//! before the first row of one with rows.

use futures::StreamExt;
use pgwire::api::results::Response;
use pgwire::error::{PgWireError, PgWireResult};

use crate::audit::{AuditError, Audited, Finish, Protocol, ReleasesHeard, StatementBy};
use crate::config::Role;
use crate::sessions::Server;

use super::user_error;

/// SQLSTATE io_error: what a client is told when the trail cannot be written.
const AUDIT_FAILED: &str = "58030";

impl AuditError for PgWireError {
    fn message(&self) -> String {
        match self {
            PgWireError::UserError(info) => info.message.clone(),
            other => other.to_string(),
        }
    }

    fn from_audit(message: String) -> Self {
        user_error(AUDIT_FAILED, message)
    }
}

/// Who sends a connection's statements, and what its session's calls were served.
pub(super) struct Auditing {
    pub(super) by: StatementBy,
    pub(super) heard: ReleasesHeard,
}

impl Auditing {
    pub(super) fn new(user: String, role: Role, heard: ReleasesHeard) -> Self {
        Self {
            by: StatementBy {
                protocol: Protocol::Postgres,
                user,
                role,
            },
            heard,
        }
    }

    /// `result` of the statement `text`, its line written (or to be written before its
    /// first row); an error when the trail cannot be written.
    pub(super) fn response(
        &self,
        server: &Server,
        text: &str,
        result: PgWireResult<Response>,
    ) -> PgWireResult<Response> {
        let Some(audit) = server.audit() else {
            return result;
        };
        match result {
            Err(e) => {
                let _ = audit.statement(&self.by, text, Err(&e.message()), &self.heard.take());
                Err(e)
            }
            Ok(Response::Query(mut query)) => {
                let (audit, by, heard) = (audit.clone(), self.by.clone(), self.heard.clone());
                let text = text.to_string();
                let finish: Finish = Box::new(move |outcome: Result<(), String>| {
                    let outcome = outcome.as_ref().map(|_| ()).map_err(String::as_str);
                    audit.statement(&by, &text, outcome, &heard.take())
                });
                let rows =
                    std::mem::replace(&mut query.data_rows, futures::stream::empty().boxed());
                query.data_rows = Audited::new(rows, finish).boxed();
                Ok(Response::Query(query))
            }
            Ok(Response::Error(info)) => {
                audit
                    .statement(&self.by, text, Err(&info.message), &self.heard.take())
                    .map_err(|e| user_error(AUDIT_FAILED, e))?;
                Ok(Response::Error(info))
            }
            Ok(other) => {
                audit
                    .statement(&self.by, text, Ok(()), &self.heard.take())
                    .map_err(|e| user_error(AUDIT_FAILED, e))?;
                Ok(other)
            }
        }
    }

    /// A statement that failed before it ran (refused, or the server stopped it).
    pub(super) fn failed(&self, server: &Server, text: &str, error: &PgWireError) {
        if let Some(audit) = server.audit() {
            let _ = audit.statement(&self.by, text, Err(&error.message()), &self.heard.take());
        }
    }
}

/// Records a PostgreSQL login of `user` from `address`: `Ok(role)` when it succeeded;
/// an error to refuse the login with when the trail cannot be written.
pub(super) fn login(
    server: &Server,
    user: &str,
    address: &str,
    outcome: Result<Role, &str>,
) -> PgWireResult<()> {
    match server.audit() {
        Some(audit) => audit
            .login(Protocol::Postgres, user, address, outcome)
            .map_err(|e| user_error(AUDIT_FAILED, e)),
        None => Ok(()),
    }
}
