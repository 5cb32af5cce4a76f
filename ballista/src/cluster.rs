//! Apache DataFusion Ballista: a client session on a cluster ([`connect`]), the state a
//! scheduler or executor needs to run plans over our tables ([`scheduler_config`],
//! [`executor_config`]), and an in-process cluster for tests and trials
//! ([`start_standalone`]).
//!
//! Every process of a cluster must know our codecs and scalar functions: use the
//! `dfanon-scheduler` and `dfanon-executor` binaries (built on the two configs here), not
//! Ballista's stock ones, which would refuse plans that read a release.

use std::sync::Arc;
use std::time::Duration;

use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::{
    BallistaCodec, BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec,
};
use ballista_executor::executor_process::ExecutorProcessConfig;
use ballista_scheduler::config::SchedulerConfig;
use datafusion::common::{plan_datafusion_err, plan_err, DataFusionError, Result};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::PhysicalExtensionCodec;

use crate::codec::{AnonymizeLogicalCodec, AnonymizePhysicalCodec};
use datafusion_anonymize::distributed::{ClusterPlanner, PlansOnCluster};
use datafusion_anonymize::{register_with, RegisterOptions};

/// Logical optimizer rules a cluster client leaves to the scheduler (which optimizes every
/// plan it receives again): the plans they produce name columns by synthetic aliases
/// (`__datafusion_extracted_N`) that DataFusion 55's protobuf round trip does not read back,
/// so a query taking a struct field (`s['group']`) would fail on the scheduler with
/// "No field named".
pub const SCHEDULER_ONLY_RULES: [&str; 2] =
    ["extract_leaf_expressions", "push_down_leaf_projections"];

// Why a cluster session turns Ballista's adaptive planner off: a task of a stage runs only
// its own partitions of each input, and Ballista narrows a scan to those partitions only
// for the scans it knows (files, memory, shuffles). A scan of shipped rows is not one of
// them, so in a stage of several partitions — a UNION ALL of it with anything — every
// task would read it whole and the rows would come back several times. The static
// planner gives such a scan a stage of its own (one partition, one task); the adaptive
// planner of Ballista 55 does not. `ballista_union_reads_each_shipped_table_once` checks.

/// Port a scheduler listens on unless told otherwise (Ballista's default).
pub const DEFAULT_SCHEDULER_PORT: u16 = 50050;

/// Ballista's logical codec with ours in front.
pub fn logical_codec() -> Arc<dyn LogicalExtensionCodec> {
    Arc::new(AnonymizeLogicalCodec::new(Arc::new(
        BallistaLogicalExtensionCodec::default(),
    )))
}

/// Ballista's physical codec with ours in front.
pub fn physical_codec() -> Arc<dyn PhysicalExtensionCodec> {
    Arc::new(AnonymizePhysicalCodec::new(Arc::new(
        BallistaPhysicalExtensionCodec::default(),
    )))
}

/// `config` with our codecs installed for Ballista.
pub fn with_codecs(config: SessionConfig) -> SessionConfig {
    config
        .with_ballista_logical_extension_codec(logical_codec())
        .with_ballista_physical_extension_codec(physical_codec())
}

/// The scheduler address of a cluster URL `df://host[:port]`, as `http://host:port`.
pub fn scheduler_address(url: &str) -> Result<String> {
    let Some(rest) = url.strip_prefix("df://") else {
        return plan_err!(
            "Ballista URL '{url}': expected df://host:port, e.g. df://localhost:50050"
        );
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (
            host,
            port.parse::<u16>().map_err(|_| {
                plan_datafusion_err!(
                    "Ballista URL '{url}': port '{port}' is not a number from 1 to 65535"
                )
            })?,
        ),
        None => (rest, DEFAULT_SCHEDULER_PORT),
    };
    if host.is_empty() || host.contains('/') {
        return plan_err!(
            "Ballista URL '{url}': expected df://host:port, e.g. df://localhost:50050"
        );
    }
    Ok(format!("http://{host}:{port}"))
}

/// A session whose queries run on the Ballista cluster at `url` (`df://host:port`), built
/// on `state` (its configuration, runtime and registered tables), with this crate's
/// functions registered by `options`.
///
/// Fails with a clear error if no scheduler answers within 10 seconds.
pub async fn connect(
    url: &str,
    state: SessionState,
    options: RegisterOptions,
) -> Result<SessionContext> {
    let address = scheduler_address(url)?;
    let reachable = tokio::time::timeout(
        Duration::from_secs(10),
        SchedulerGrpcClient::connect(address.clone()),
    )
    .await;
    match reachable {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return plan_err!("no Ballista scheduler answers at {url} ({address}): {e}"),
        Err(_) => {
            return plan_err!("no Ballista scheduler answered at {url} ({address}) within 10 s")
        }
    }
    let config = with_codecs(state.config().clone());
    let state = SessionStateBuilder::new_from_existing(state)
        .with_config(config)
        .build()
        .upgrade_for_ballista(address)?;
    let cluster = state.query_planner().clone();
    let rules = state
        .optimizers()
        .iter()
        .filter(|rule| !SCHEDULER_ONLY_RULES.contains(&rule.name()))
        .cloned()
        .collect();
    let mut config = state
        .config()
        .clone()
        .with_extension(Arc::new(PlansOnCluster));
    config.options_mut().set(
        ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED,
        "false",
    )?;
    let state = SessionStateBuilder::new_from_existing(state)
        .with_config(config)
        .with_query_planner(Arc::new(ClusterPlanner::new(cluster)))
        .with_optimizer_rules(rules)
        .build();
    let ctx = SessionContext::new_with_state(state);
    // Ballista's upgrade replaces the scalar functions: ours are registered after it.
    register_with(&ctx, options)?;
    Ok(ctx)
}

/// The session state a scheduler or executor plans and runs with: Ballista's, plus our
/// codecs and scalar functions (the only functions of ours a shipped plan can name).
pub fn cluster_state(config: SessionConfig) -> Result<SessionState> {
    let state = ballista_core::utils::default_session_builder(with_codecs(config))?;
    let ctx = SessionContext::new_with_state(state);
    // No SQL user reaches a scheduler or executor: plans arrive from clients.
    register_with(&ctx, RegisterOptions::owner())?;
    Ok(ctx.state())
}

/// A scheduler configuration (listening on `bind_host:port`) that decodes plans reading
/// our tables.
pub fn scheduler_config(bind_host: &str, port: u16) -> SchedulerConfig {
    SchedulerConfig {
        bind_host: bind_host.to_string(),
        bind_port: port,
        override_logical_codec: Some(logical_codec()),
        override_physical_codec: Some(physical_codec()),
        override_session_builder: Some(Arc::new(cluster_state)),
        ..SchedulerConfig::default()
    }
}

/// An executor configuration (listening on `bind_host:port`, Flight on `port + 1`,
/// registering with the scheduler at `scheduler_host:scheduler_port`) that runs plans
/// reading our tables.
pub fn executor_config(
    bind_host: &str,
    port: u16,
    scheduler_host: &str,
    scheduler_port: u16,
    vcores: Option<usize>,
) -> Result<ExecutorProcessConfig> {
    let state = cluster_state(SessionConfig::new_with_ballista())?;
    let mut config = ExecutorProcessConfig {
        bind_host: bind_host.to_string(),
        port,
        grpc_port: port.checked_add(1).ok_or_else(|| {
            DataFusionError::Configuration(format!(
                "executor port {port} leaves no room for its gRPC port"
            ))
        })?,
        scheduler_host: scheduler_host.to_string(),
        scheduler_port,
        ..ExecutorProcessConfig::default()
    };
    if let Some(vcores) = vcores {
        config.vcores = vcores;
    }
    config.override_logical_codec = Some(logical_codec());
    config.override_physical_codec = Some(physical_codec());
    config.override_function_registry = Some(Arc::new(BallistaFunctionRegistry::from(&state)));
    config.override_config_producer =
        Some(Arc::new(|| with_codecs(SessionConfig::new_with_ballista())));
    Ok(config)
}

/// Starts a scheduler and `executors` executors in this process, on random loopback
/// ports, all with our codecs and functions, and returns the cluster's `df://` URL for
/// [`connect`]. They run until the process exits.
pub async fn start_standalone(executors: usize) -> Result<String> {
    let config = with_codecs(SessionConfig::new_with_ballista());
    let producer_config = config.clone();
    let address = ballista_scheduler::standalone::new_standalone_scheduler_with_builder(
        Arc::new(cluster_state),
        Arc::new(move || producer_config.clone()),
        BallistaCodec::new(logical_codec(), physical_codec()),
    )
    .await
    .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let url = format!("http://localhost:{}", address.port());
    let state = cluster_state(config)?;
    for _ in 0..executors {
        let mut attempts = 0;
        let scheduler = loop {
            match SchedulerGrpcClient::connect(url.clone()).await {
                Ok(client) => break client,
                Err(e) if attempts >= 200 => {
                    return plan_err!("the in-process scheduler at {url} does not answer: {e}")
                }
                Err(_) => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
            }
        };
        ballista_executor::new_standalone_executor_from_state(scheduler, 1, &state)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
    }
    Ok(format!("df://localhost:{}", address.port()))
}
