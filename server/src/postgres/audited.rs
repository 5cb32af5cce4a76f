//! The audit trail's lines for PostgreSQL logins and statements ([`crate::audit`]): a
//! statement's line is written when it fails, at once for a response without rows, and
//! before the first row of one with rows.

use futures::StreamExt;
use pgwire::api::results::Response;
use pgwire::error::{PgWireError, PgWireResult};

use crate::audit::{AuditError, Audited, Auditing, Protocol};
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

/// The audit lines of a connection's statements.
pub(super) trait AuditedStatements {
    /// `result` of the statement `text`, its line written (or to be written before its
    /// first row); an error when the trail cannot be written.
    fn response(
        &self,
        server: &Server,
        text: &str,
        result: PgWireResult<Response>,
    ) -> PgWireResult<Response>;

    /// A statement that failed before it ran (refused, or the server stopped it).
    fn failed(&self, server: &Server, text: &str, error: &PgWireError);
}

impl AuditedStatements for Auditing {
    fn response(
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
                let finish = self.finish(audit, text);
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

    fn failed(&self, server: &Server, text: &str, error: &PgWireError) {
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
