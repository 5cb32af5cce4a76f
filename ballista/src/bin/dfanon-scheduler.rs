//! `dfanon-scheduler`: a Ballista scheduler that plans queries over anonymized releases.
//!
//! Ballista's stock scheduler cannot decode a plan that reads a release; this one has the
//! codecs and scalar functions of `datafusion-anonymize`. Start it, then one or more
//! `dfanon-executor`s, then `dfanon --ballista df://HOST:PORT`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::scheduler_process::start_server;
use clap::Parser;
use dfanon_ballista::{scheduler_config, DEFAULT_SCHEDULER_PORT};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[clap(
    name = "dfanon-scheduler",
    version,
    about = "Ballista scheduler for datafusion-anonymize clusters"
)]
struct Args {
    /// Address to listen on.
    #[clap(long, default_value = "127.0.0.1")]
    bind_host: String,

    /// Port to listen on (clients connect with df://HOST:PORT).
    #[clap(short, long, default_value_t = DEFAULT_SCHEDULER_PORT)]
    port: u16,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(32 * 1024 * 1024)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let address: SocketAddr = format!("{}:{}", args.bind_host, args.port)
        .parse()
        .map_err(|e| format!("--bind-host {} --port {}: {e}", args.bind_host, args.port))?;
    let config = scheduler_config(&args.bind_host, args.port);
    let cluster = BallistaCluster::new_from_config(&config).await?;
    println!("dfanon-scheduler listening on {address}");
    start_server(cluster, address, Arc::new(config)).await?;
    Ok(())
}
