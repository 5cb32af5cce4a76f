//! Flight SQL statements: planned in the token's session (a public user's through the
//! public door), run in one of the server's slots until their deadline, and streamed batch
//! by batch with their line in the audit trail written before the first batch.

use std::sync::Arc;

use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use futures::{StreamExt, TryStreamExt};
use tonic::{Response, Status};

use crate::audit::{Audited, Finish};
use crate::config::Role;
use crate::flight::{DoGetStream, FlightSession, FlightSql};
use crate::limits::Stop;

impl FlightSql {
    /// Parses `sql` as `session`'s dialect reads it: the statement, if it is an SQL
    /// statement (rather than one of DataFusion's own, such as `CREATE EXTERNAL TABLE`).
    pub(crate) fn parse(
        &self,
        session: &FlightSession,
        sql: &str,
    ) -> Result<Option<Statement>, Status> {
        datafusion_anonymize::check_expression_depth(sql)
            .map_err(|e| Status::invalid_argument(e.strip_backtrace()))?;
        let state = session.ctx.state();
        let dialect = state.config().options().sql_parser.dialect;
        match state.sql_to_statement(sql, &dialect) {
            Ok(DfStatement::Statement(statement)) => Ok(Some(*statement)),
            Ok(_) => Ok(None),
            Err(e) => Err(Status::invalid_argument(e.strip_backtrace())),
        }
    }

    /// Plans `sql` in `session`: for a public user only the statements they may run.
    pub(crate) async fn plan(
        &self,
        session: &FlightSession,
        sql: &str,
    ) -> Result<LogicalPlan, Status> {
        datafusion_anonymize::check_expression_depth(sql)
            .map_err(|e| Status::invalid_argument(e.strip_backtrace()))?;
        let state = session.ctx.state();
        let dialect = state.config().options().sql_parser.dialect;
        let statement = state
            .sql_to_statement(sql, &dialect)
            .map_err(|e| Status::invalid_argument(e.strip_backtrace()))?;
        if session.role == Role::Public {
            datafusion_anonymize::check_public_statement(&statement)
                .map_err(|refusal| Status::permission_denied(refusal.message()))?;
        }
        state
            .statement_to_plan(statement)
            .await
            .map_err(|e| Status::invalid_argument(e.strip_backtrace()))
    }

    /// Runs `sql` in `session` and streams its batches (a public user's statement in one
    /// of the server's slots, until its deadline); its line in the audit trail is written
    /// when it fails, or before its first batch (or at its end, without one).
    pub(crate) async fn execute(
        &self,
        session: &FlightSession,
        sql: &str,
    ) -> Result<Response<DoGetStream>, Status> {
        let mut finish = self.server.audit().map(|a| session.auditing.finish(a, sql));
        let executed = self.execute_audited(session, sql, &mut finish).await;
        if let (Err(e), Some(finish)) = (&executed, finish) {
            let _ = finish(Err(e.message().to_string()));
        }
        executed
    }

    /// [`FlightSql::execute`]; `finish` (taken when the statement starts) writes its line.
    async fn execute_audited(
        &self,
        session: &FlightSession,
        sql: &str,
        finish: &mut Option<Finish>,
    ) -> Result<Response<DoGetStream>, Status> {
        let stopped = |stop: Stop| match stop {
            Stop::Failed => Status::internal(stop.to_string()),
            Stop::Cancelled | Stop::TimedOut(_) | Stop::SessionTimedOut(_) => {
                Status::deadline_exceeded(stop.to_string())
            }
        };
        let admitted = self
            .server
            .admission()
            .begin(session.role != Role::Owner, None, None)
            .await
            .map_err(stopped)?;
        let started = admitted
            .run(self.start(session, sql, finish))
            .await
            .map_err(stopped)??;
        let stream = admitted.bound(started.into_inner(), stopped);
        Ok(Response::new(Box::pin(stream)))
    }

    /// Plans `sql` in `session` and starts it: the stream of its batches, whose first
    /// batch (or end) calls `finish` if given.
    async fn start(
        &self,
        session: &FlightSession,
        sql: &str,
        finish: &mut Option<Finish>,
    ) -> Result<Response<DoGetStream>, Status> {
        let plan = self.plan(session, sql).await?;
        let frame = session
            .ctx
            .execute_logical_plan(plan)
            .await
            .map_err(|e| Status::invalid_argument(e.strip_backtrace()))?;
        let schema = Arc::new(frame.schema().as_arrow().clone());
        let batches = frame
            .execute_stream()
            .await
            .map_err(|e| Status::invalid_argument(e.strip_backtrace()))?
            .map_err(|e| {
                FlightError::Tonic(Box::new(Status::invalid_argument(e.strip_backtrace())))
            });
        let batches = match finish.take() {
            Some(finish) => Audited::new(batches, finish).boxed(),
            None => batches.boxed(),
        };
        let stream = FlightDataEncoderBuilder::new()
            .with_schema(schema)
            .build(batches)
            .map_err(Status::from);
        Ok(Response::new(Box::pin(stream)))
    }
}
