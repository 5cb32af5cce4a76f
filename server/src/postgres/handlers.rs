//! The simple and extended query protocols: each statement runs in its connection's
//! session, admitted, bound and stoppable.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::prelude::SessionContext;
use datafusion_postgres::DfSessionService;
use futures::SinkExt;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::DEFAULT_NAME;
use pgwire::api::{ClientInfo, ClientPortalStore, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::extendedquery::{Bind, BindComplete};
use pgwire::messages::PgWireBackendMessage;

use crate::sessions::Server;

use super::audited::AuditedStatements;
use super::auth::Activity;
use super::connection::{connection, Running};
use super::{bind, client_queries, user_error, DfStatement};

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
        let query = client_queries::answer(query);
        let query = query.as_ref();
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

    /// Binds as pgwire does, but a statement kept for binding first ([`bind`]) is
    /// planned here with its values as literals: its portal holds that statement, with
    /// no parameters left.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
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
        let name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let stored = match client.portal_store().get_statement(name) {
            Some(Entry::Value(stored)) => stored,
            _ => return self.bind_as_pgwire(client, message).await,
        };
        let Some(node) = bind::bind_first(&stored.statement) else {
            return self.bind_as_pgwire(client, message).await;
        };
        let connection = connection(&self.server, client)?;
        let text = stored.statement.0.as_str();
        let failed = |e: PgWireError| {
            connection.auditing.failed(&self.server, text, &e);
            e
        };
        let (_, Some((statement, _))) = &stored.statement else {
            return self.bind_as_pgwire(client, message).await;
        };
        let format = Portal::try_new(&message, stored.clone())?.parameter_format;
        let bound = bind::with_literals(statement, node, &format, &message.parameters)
            .map_err(failed)?
            .to_string();
        datafusion_anonymize::check_expression_depth(&bound)
            .map_err(|e| failed(user_error("54001", e.strip_backtrace())))?;
        let planned = connection
            .service
            .query_parser()
            .parse_sql(client, &bound, &[])
            .await
            .map_err(failed)?;
        let Some(planned) = planned else {
            return self.bind_as_pgwire(client, message).await;
        };
        let statement = Arc::new(StoredStatement::new(stored.id.clone(), planned, Vec::new()));
        let mut without_values = message;
        without_values.parameter_format_codes.clear();
        without_values.parameters.clear();
        let portal = Portal::try_new(&without_values, statement)?;
        client.portal_store().put_portal(Arc::new(portal));
        client
            .send(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
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

impl RoleService {
    /// Bind as pgwire's default does it: the portal holds the statement and its values
    /// (none for an empty statement).
    async fn bind_as_pgwire<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo
            + ClientPortalStore
            + futures::Sink<PgWireBackendMessage>
            + Unpin
            + Send
            + Sync,
        C::PortalStore: PortalStore<Statement = DfStatement>,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(name) {
            Some(Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(user_error(
                        "08P01",
                        format!(
                            "bind message supplies {} parameters, but prepared statement {name:?} requires 0",
                            message.parameters.len()
                        ),
                    ));
                }
                let portal = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
                client.portal_store().put_empty_portal(portal);
            }
            None => return Err(PgWireError::StatementNotFound(name.to_owned())),
        }
        client
            .send(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
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
        let sql = client_queries::answer(sql);
        let sql = sql.as_ref();
        datafusion_anonymize::check_expression_depth(sql)
            .map_err(|e| user_error("54001", e.strip_backtrace()))?;
        let connection = connection(&self.server, client)?;
        let planned = connection
            .service
            .query_parser()
            .parse_sql(client, sql, types)
            .await;
        // A statement with parameters that cannot be planned with them as placeholders
        // is planned at Bind, with their values (`bind`); its errors are told then.
        match planned {
            Err(e) => bind::deferred(sql, types).map(Some).ok_or(e),
            planned => planned,
        }
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        if let Some(node) = bind::bind_first(stmt) {
            return Ok(node.types());
        }
        self.describe.query_parser().get_parameter_types(stmt)
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        if bind::bind_first(stmt).is_some() {
            return Ok(Vec::new());
        }
        self.describe
            .query_parser()
            .get_result_schema(stmt, column_format)
    }
}
