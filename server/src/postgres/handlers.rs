//! The simple and extended query protocols: each statement runs in its connection's
//! session, admitted, bound and stoppable.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::prelude::SessionContext;
use datafusion_postgres::DfSessionService;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;

use crate::sessions::Server;

use super::audited::AuditedStatements;
use super::auth::Activity;
use super::connection::{connection, Running};
use super::{user_error, DfStatement};

/// The query handlers: each connection's statements go to the session of its user,
/// made at the connection's first statement.
pub(super) struct RoleService {
    pub(super) server: Arc<Server>,
    pub(super) parser: Arc<RoleParser>,
}

impl RoleService {
    pub(super) fn new(server: Arc<Server>) -> Self {
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
        let connection = connection(&self.server, client)?;
        let auditing = &connection.auditing;
        let failed = |e: PgWireError| {
            auditing.failed(&self.server, query, &e);
            e
        };
        datafusion_anonymize::check_expression_depth(query)
            .map_err(|e| failed(user_error("54001", e.strip_backtrace())))?;
        let running = Running::begin(&self.server, &connection, client)
            .await
            .map_err(failed)?;
        let service = connection.service.as_ref();
        let responses = running
            .run(SimpleQueryHandler::do_query(service, client, query))
            .await
            .map_err(failed)?;
        responses
            .into_iter()
            .map(|r| auditing.response(&self.server, query, Ok(running.bound(r))))
            .collect()
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
        let auditing = &connection.auditing;
        let text = portal.statement.statement.0.as_str();
        let running = match Running::begin(&self.server, &connection, client).await {
            Ok(running) => running,
            Err(e) => {
                auditing.failed(&self.server, text, &e);
                return Err(e);
            }
        };
        let service = connection.service.as_ref();
        let response = running
            .run(ExtendedQueryHandler::do_query(
                service, client, portal, max_rows,
            ))
            .await
            .map(|response| running.bound(response));
        auditing.response(&self.server, text, response)
    }
}

/// Parses a statement in the session of the connection that sent it.
pub(super) struct RoleParser {
    pub(super) server: Arc<Server>,
    pub(super) describe: Arc<DfSessionService>,
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
