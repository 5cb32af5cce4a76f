//! `dfanon-executor`: a Ballista executor that runs queries over anonymized releases.
//!
//! It expands the releases a client computed (shipped in compact form inside the plan)
//! into rows as its tasks read them; it never draws anything. Ballista's stock executor
//! cannot decode such plans.

use std::process::ExitCode;
use std::sync::Arc;

use ballista_executor::executor_process::start_executor_process;
use clap::Parser;
use dfanon_ballista::{executor_config, DEFAULT_SCHEDULER_PORT};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[clap(
    name = "dfanon-executor",
    version,
    about = "Ballista executor for datafusion-anonymize clusters"
)]
struct Args {
    /// Address to listen on.
    #[clap(long, default_value = "127.0.0.1")]
    bind_host: String,

    /// Port of the executor's Flight service (its gRPC service takes the next one).
    #[clap(short, long, default_value_t = 50051)]
    port: u16,

    /// Host of the scheduler to register with.
    #[clap(long, default_value = "localhost")]
    scheduler_host: String,

    /// Port of the scheduler.
    #[clap(long, default_value_t = DEFAULT_SCHEDULER_PORT)]
    scheduler_port: u16,

    /// Tasks run at once (default: the machine's cores).
    #[clap(short = 'c', long)]
    concurrent_tasks: Option<usize>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.concurrent_tasks == Some(0) {
        eprintln!("Error: --concurrent-tasks must be at least 1");
        return ExitCode::FAILURE;
    }
    let config = match executor_config(
        &args.bind_host,
        args.port,
        &args.scheduler_host,
        args.scheduler_port,
        args.concurrent_tasks,
    ) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "dfanon-executor on {}:{}, scheduler {}:{}",
        args.bind_host, args.port, args.scheduler_host, args.scheduler_port
    );
    match start_executor_process(Arc::new(config)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}
