//! How Flight SQL's errors go into the audit trail ([`crate::audit`]): their message, and
//! the error a stream ends with when the trail cannot be written.

use arrow_flight::error::FlightError;
use tonic::Status;

use crate::audit::AuditError;

impl AuditError for FlightError {
    fn message(&self) -> String {
        match self {
            FlightError::Tonic(status) => status.message().to_string(),
            other => other.to_string(),
        }
    }

    fn from_audit(message: String) -> Self {
        FlightError::Tonic(Box::new(Status::unavailable(message)))
    }
}

impl AuditError for Status {
    fn message(&self) -> String {
        Status::message(self).to_string()
    }

    fn from_audit(message: String) -> Self {
        Status::unavailable(message)
    }
}
