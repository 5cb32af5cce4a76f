//! Arrow Flight SQL: a Basic-auth handshake that returns a bearer token, statements and
//! prepared statements run by [`crate::flight_statements`] (their parameters bound by
//! [`crate::flight_parameters`]), and the
//! metadata calls ([`crate::flight_catalog`]). Each token has its own session, chosen by the user's
//! role.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::{
    SqlInfoData, SqlInfoDataBuilder, XdbcTypeInfoData, XdbcTypeInfoDataBuilder,
};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest,
    ActionCreatePreparedStatementResult, CommandGetCatalogs, CommandGetDbSchemas,
    CommandGetPrimaryKeys, CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables,
    CommandGetXdbcTypeInfo, CommandPreparedStatementQuery, CommandStatementQuery,
    DoPutPreparedStatementResult, ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    Action, FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse,
    IpcMessage, SchemaAsIpc, Ticket,
};
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use datafusion::prelude::SessionContext;
use futures::{Stream, TryStreamExt};
use prost::Message;
use rand::RngCore;
use tokio::net::TcpListener;
use tonic::metadata::MetadataValue;
use tonic::transport::{Identity, ServerTlsConfig};
use tonic::{Request, Response, Status, Streaming};

use crate::audit::{Auditing, Protocol};
use crate::config::Role;
use crate::flight_catalog;
use crate::flight_parameters;
use crate::sessions::Server;

/// Most sessions (tokens) kept at once; the oldest is forgotten first.
const MAX_SESSIONS: usize = 1024;

/// Serves Flight SQL clients on `listener` until the process ends (with TLS only, when
/// `tls` is given).
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    tls: Option<ServerTlsConfig>,
) -> Result<(), String> {
    let limits = server.connections().clone();
    let service = FlightServiceServer::new(FlightSql::new(server));
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        builder = builder
            .tls_config(tls)
            .map_err(|e| format!("flight_sql: TLS: {e}"))?;
    }
    builder
        .add_service(service)
        .serve_with_incoming(crate::connections::flight_incoming(listener, limits))
        .await
        .map_err(|e| format!("flight_sql: {e}"))
}

/// The TLS identity of the PEM certificate chain and private key files.
pub fn tls_config(cert: &Path, key: &Path) -> Result<ServerTlsConfig, String> {
    let read = |path: &Path, what: &str| {
        std::fs::read(path).map_err(|e| format!("{what} {}: {e}", path.display()))
    };
    let identity = Identity::from_pem(read(cert, "tls_cert")?, read(key, "tls_key")?);
    Ok(ServerTlsConfig::new().identity(identity))
}

pub(crate) struct FlightSession {
    pub(crate) role: Role,
    pub(crate) ctx: SessionContext,
    /// Who sends its statements, for the audit trail.
    pub(crate) auditing: Auditing,
}

/// The sessions of the tokens handed out, and the tokens from oldest to newest.
#[derive(Default)]
struct Tokens {
    sessions: HashMap<String, Arc<FlightSession>>,
    order: VecDeque<String>,
}

/// The Flight SQL service: the server, and the session of every token handed out.
pub struct FlightSql {
    pub(crate) server: Arc<Server>,
    tokens: Mutex<Tokens>,
    info: SqlInfoData,
    types: XdbcTypeInfoData,
}

pub(crate) type DoGetStream = <FlightSql as FlightService>::DoGetStream;

impl FlightSql {
    fn new(server: Arc<Server>) -> Self {
        let info = flight_catalog::sql_info().unwrap_or_else(|_| {
            SqlInfoDataBuilder::new()
                .build()
                .unwrap_or_else(|_| unreachable!("an empty SqlInfo builds"))
        });
        let types = flight_catalog::type_info().unwrap_or_else(|_| {
            XdbcTypeInfoDataBuilder::new()
                .build()
                .unwrap_or_else(|_| unreachable!("an empty type list builds"))
        });
        Self {
            server,
            tokens: Mutex::new(Tokens::default()),
            info,
            types,
        }
    }

    fn tokens(&self) -> std::sync::MutexGuard<'_, Tokens> {
        match self.tokens.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The session of the request's bearer token.
    fn session<T>(&self, request: &Request<T>) -> Result<Arc<FlightSession>, Status> {
        let token = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                Status::unauthenticated("log in first: the handshake takes Basic credentials and returns a bearer token")
            })?;
        self.tokens()
            .sessions
            .get(token)
            .cloned()
            .ok_or_else(|| Status::unauthenticated("unknown or expired token: log in again"))
    }

    /// A FlightInfo for a result of `schema`, fetched with `ticket`.
    fn info(
        schema: &Schema,
        ticket: Vec<u8>,
        descriptor: FlightDescriptor,
    ) -> Result<Response<FlightInfo>, Status> {
        let info = FlightInfo::new()
            .try_with_schema(schema)
            .map_err(|e| Status::internal(format!("cannot encode the schema: {e}")))?
            .with_endpoint(FlightEndpoint::new().with_ticket(Ticket::new(ticket)))
            .with_descriptor(descriptor);
        Ok(Response::new(info))
    }

    /// The session of a metadata call (`call`, e.g. `GetTables`), whose line is written to
    /// the audit trail (as `Flight SQL GetTables`) before it is answered; a trail that
    /// cannot be written refuses the call.
    fn metadata_call<T>(
        &self,
        request: &Request<T>,
        call: &str,
    ) -> Result<Arc<FlightSession>, Status> {
        let session = self.session(request)?;
        if let Some(audit) = self.server.audit() {
            let finish = session
                .auditing
                .finish(audit, &format!("Flight SQL {call}"));
            finish(Ok(())).map_err(Status::unavailable)?;
        }
        Ok(session)
    }

    /// The FlightInfo of a metadata command (`command` is its own ticket) for a logged-in
    /// client.
    fn command_info(
        &self,
        schema: &Schema,
        command: impl ProstMessageExt,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.session(&request)?;
        Self::info(
            schema,
            command.as_any().encode_to_vec(),
            request.into_inner(),
        )
    }
}

fn one_batch(
    schema: Arc<Schema>,
    batch: Result<datafusion::arrow::record_batch::RecordBatch, FlightError>,
) -> Response<DoGetStream> {
    let stream = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(futures::stream::once(async move { batch }))
        .map_err(Status::from);
    Response::new(Box::pin(stream))
}

fn listing((schema, batch): flight_catalog::Listing) -> Response<DoGetStream> {
    one_batch(schema, batch)
}

fn handle_text(handle: &[u8]) -> Result<&str, Status> {
    std::str::from_utf8(handle)
        .map_err(|_| Status::invalid_argument("the statement handle is not text"))
}

#[tonic::async_trait]
impl FlightSqlService for FlightSql {
    type FlightService = FlightSql;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<
        Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>,
        Status,
    > {
        let basic = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .ok_or_else(|| {
                Status::unauthenticated("log in with Basic credentials (user name and password)")
            })?;
        let malformed =
            || Status::unauthenticated("the Basic credentials are not base64 of user:password");
        // With or without padding: ADBC's driver sends it without.
        let lenient = GeneralPurpose::new(
            &alphabet::STANDARD,
            GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
        );
        let decoded = lenient.decode(basic.trim()).map_err(|_| malformed())?;
        let text = String::from_utf8(decoded).map_err(|_| malformed())?;
        let (user, password) = text.split_once(':').ok_or_else(malformed)?;
        // The same words as the PostgreSQL protocol's, for a wrong password and an unknown
        // user alike.
        let refused = || {
            Status::unauthenticated(format!(
                "Password authentication failed for user \"{user}\""
            ))
        };
        // Failed logins are counted per user name and address, as over PostgreSQL.
        let address = request
            .remote_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default();
        let keys = [format!("user {user}"), format!("address {address}")];
        let failed_logins = &self.server.connections().failed_logins;
        let audit_login = |outcome: Result<Role, &str>| match self.server.audit() {
            Some(audit) => audit
                .login(Protocol::FlightSql, user, &address, outcome)
                .map_err(Status::unavailable),
            None => Ok(()),
        };
        if let Some(wait) = failed_logins.locked(&keys) {
            let _ = audit_login(Err("too many failed logins"));
            return Err(Status::unauthenticated(format!(
                "too many failed logins for this user name or address: try again in {} s",
                wait.as_secs() + 1
            )));
        }
        let found = match self.server.login(user, password).await {
            Ok(found) => found,
            Err(refusal) => {
                refusal.count_in(failed_logins, &keys);
                let _ = audit_login(Err(refusal.reason.as_str()));
                return Err(refused());
            }
        };
        audit_login(Ok(found.role))?;
        let user = found.name.clone();
        let session = self
            .server
            .session(&user)
            .map_err(|e| Status::internal(e.strip_backtrace()))?;
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        {
            let mut tokens = self.tokens();
            while tokens.sessions.len() >= MAX_SESSIONS {
                match tokens.order.pop_front() {
                    Some(old) => {
                        tokens.sessions.remove(&old);
                    }
                    None => break,
                }
            }
            tokens.sessions.insert(
                token.clone(),
                Arc::new(FlightSession {
                    role: session.role,
                    ctx: session.ctx,
                    auditing: Auditing::new(
                        Protocol::FlightSql,
                        user.clone(),
                        session.role,
                        session.heard,
                    ),
                }),
            );
            tokens.order.push_back(token.clone());
        }
        let reply = HandshakeResponse {
            protocol_version: 0,
            payload: token.clone().into(),
        };
        let mut response: Response<Pin<Box<dyn Stream<Item = _> + Send>>> =
            Response::new(Box::pin(futures::stream::iter([Ok(reply)])));
        let header = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| Status::internal("cannot write the token header"))?;
        response.metadata_mut().insert("authorization", header);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let session = self.session(&request)?;
        let plan = self.plan(&session, &query.query).await?;
        let ticket = TicketStatementQuery {
            statement_handle: query.query.into_bytes().into(),
        };
        Self::info(
            plan.schema().as_arrow(),
            ticket.as_any().encode_to_vec(),
            request.into_inner(),
        )
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let session = self.session(&request)?;
        self.execute(&session, handle_text(&ticket.statement_handle)?)
            .await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let session = self.session(&request)?;
        // With parameters the statement is planned once they are bound (DoPut): its rows'
        // shape is known then.
        let parameters = match self.parse(&session, &query.query)? {
            Some(statement) => flight_parameters::parameter_count(&statement)?,
            None => 0,
        };
        let schema: Schema = if parameters > 0 {
            Schema::empty()
        } else {
            self.plan(&session, &query.query)
                .await?
                .schema()
                .as_arrow()
                .clone()
        };
        let IpcMessage(dataset_schema) = SchemaAsIpc::new(&schema, &IpcWriteOptions::default())
            .try_into()
            .map_err(|e| Status::internal(format!("cannot encode the schema: {e}")))?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: query.query.into_bytes().into(),
            dataset_schema,
            parameter_schema: Default::default(),
        })
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let session = self.session(&request)?;
        let sql = handle_text(&query.prepared_statement_handle)?;
        let Some(statement) = self.parse(&session, sql)? else {
            return Err(Status::invalid_argument(
                "this statement takes no parameters",
            ));
        };
        // One row of values is all a statement takes: keep that row only, and stop reading
        // past a second row or too many (empty) batches.
        let mut values = FlightRecordBatchStream::new_from_flight_data(
            request
                .into_inner()
                .map_err(|e| FlightError::Tonic(Box::new(e))),
        );
        let mut row = None;
        let mut batches = 0;
        while let Some(batch) = values.try_next().await.map_err(Status::from)? {
            batches += 1;
            if batches > flight_parameters::MAX_PARAMETER_BATCHES {
                return Err(Status::invalid_argument(format!(
                    "parameters come as one row of values, in at most {} batches",
                    flight_parameters::MAX_PARAMETER_BATCHES
                )));
            }
            match (batch.num_rows(), &row) {
                (0, _) => {}
                (1, None) => row = Some(batch),
                _ => {
                    return Err(Status::invalid_argument(
                        "parameters come as one row of values, and more were sent",
                    ))
                }
            }
        }
        let Some(row) = row else {
            return Err(Status::invalid_argument("no parameter values were sent"));
        };
        let bound = flight_parameters::with_literals(&statement, &row)?;
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(bound.to_string().into_bytes().into()),
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        _query: ActionClosePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<(), Status> {
        self.session(&request)?;
        Ok(())
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let session = self.session(&request)?;
        let plan = self
            .plan(&session, handle_text(&query.prepared_statement_handle)?)
            .await?;
        Self::info(
            plan.schema().as_arrow(),
            query.as_any().encode_to_vec(),
            request.into_inner(),
        )
    }

    async fn do_get_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let session = self.session(&request)?;
        self.execute(&session, handle_text(&query.prepared_statement_handle)?)
            .await
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.command_info(&query.into_builder().schema(), query, request)
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let session = self.metadata_call(&request, "GetCatalogs")?;
        Ok(listing(flight_catalog::catalogs(&session.ctx, query)))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.command_info(&query.clone().into_builder().schema(), query, request)
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let session = self.metadata_call(&request, "GetDbSchemas")?;
        Ok(listing(flight_catalog::schemas(&session.ctx, query)))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.command_info(&query.clone().into_builder().schema(), query, request)
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let session = self.metadata_call(&request, "GetTables")?;
        Ok(listing(flight_catalog::tables(&session.ctx, query).await))
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.command_info(&query.into_builder().schema(), query, request)
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.metadata_call(&request, "GetTableTypes")?;
        Ok(listing(flight_catalog::table_types(query)))
    }

    async fn get_flight_info_primary_keys(
        &self,
        query: CommandGetPrimaryKeys,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.command_info(&flight_catalog::primary_keys().0, query, request)
    }

    async fn do_get_primary_keys(
        &self,
        _query: CommandGetPrimaryKeys,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.metadata_call(&request, "GetPrimaryKeys")?;
        Ok(listing(flight_catalog::primary_keys()))
    }

    async fn get_flight_info_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.command_info(&self.types.schema(), query, request)
    }

    async fn do_get_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.metadata_call(&request, "GetXdbcTypeInfo")?;
        let builder = query.into_builder(&self.types);
        Ok(one_batch(builder.schema(), builder.build()))
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.command_info(
            &query.clone().into_builder(&self.info).schema(),
            query,
            request,
        )
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.metadata_call(&request, "GetSqlInfo")?;
        let builder = query.into_builder(&self.info);
        Ok(one_batch(builder.schema(), builder.build()))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}
