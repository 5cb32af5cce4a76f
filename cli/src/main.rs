//! `dfanon`: the DataFusion command-line client with the anonymization functions registered.
//!
//! Everything `datafusion-cli` does (`-f`, `-c`, `--format`, `-q`, the REPL with its `\?`
//! help) works the same; `SELECT * FROM anonymize_help()` lists our functions.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::{CommandFactory, FromArgMatches, Parser};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{FairSpillPool, GreedyMemoryPool, MemoryPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParserBuilder;
use datafusion::sql::sqlparser::dialect::dialect_from_str;
use datafusion_anonymize::{register_with, Access, PublicPolicy, RegisterOptions};
use datafusion_cli::exec;
use datafusion_cli::functions::ParquetMetadataFunc;
use datafusion_cli::object_storage::instrumented::InstrumentedObjectStoreRegistry;
use datafusion_cli::pool_type::PoolType;
use datafusion_cli::print_format::PrintFormat;
use datafusion_cli::print_options::{MaxRows, PrintOptions};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::signal::unix::{signal, SignalKind};

mod script;
mod session;
use script::{Script, Stopped};
use session::{with_path_tables, Repl};

/// Help text after the options: the generated list of functions, then an example.
fn after_help() -> String {
    format!(
        "{}\n\nExample:\n  dfanon -f sql/demo.sql",
        datafusion_anonymize::cli_help_section()
    )
}

/// Command-line arguments.
#[derive(Debug, Parser)]
#[clap(
    name = "dfanon",
    version,
    about = "DataFusion SQL with privacy-preserving microdata release"
)]
struct Args {
    /// Execute the given command string(s), then exit.
    #[clap(short = 'c', long, num_args = 0..)]
    command: Vec<String>,

    /// Execute commands from file(s), then exit.
    #[clap(short, long, num_args = 0.., value_parser(parse_valid_file))]
    file: Vec<String>,

    /// Output format.
    #[clap(long, value_enum, default_value_t = PrintFormat::Automatic)]
    format: PrintFormat,

    /// Reduce printing other than the results.
    #[clap(short, long)]
    quiet: bool,

    /// Maximum rows shown for the table format (a number or 'inf'; default 40, and the
    /// row count says how many were not shown). Other formats (csv, tsv, json, nd-json)
    /// stream every row to stdout unless this is given, and then exactly this many.
    #[clap(long)]
    maxrows: Option<MaxRows>,

    /// Memory limit of query execution (e.g. '512m', '4g'; default: no limit). Operators
    /// that can spill (the aggregate behind every anonymization, sorts, joins) write to
    /// temporary files instead of growing past it; others fail with "Resources exhausted".
    #[clap(short = 'm', long, value_parser = parse_memory_limit, allow_hyphen_values = true)]
    memory_limit: Option<usize>,

    /// Memory pool when --memory-limit is given: 'greedy' (first come, first served) or
    /// 'fair' (an equal share for each spilling operator).
    #[clap(long, default_value_t = PoolType::Greedy)]
    mem_pool_type: PoolType,

    /// Batch size of each query.
    #[clap(short = 'b', long)]
    batch_size: Option<usize>,

    /// Enables console syntax highlighting.
    #[clap(long)]
    color: bool,

    /// Hide the progress bar of long anonymization searches.
    #[clap(long)]
    no_progress: bool,

    /// Run the session for public users, as an embedding service does by default: the
    /// owner's setup comes from --init files; what follows (-c, -f, the REPL) reaches only
    /// releases and the tables the --policy file declares, cannot create, change or copy
    /// anything, has no owner-only functions and no `SET anonymize.*` (the budget settings
    /// come from --epsilon-budget, --delta-budget and --ledger; without --epsilon-budget
    /// nothing is released), and may not give `seed` or `max_release_rows`.
    #[clap(long)]
    public: bool,

    /// SQL file run with the data owner's rights before anything else (repeatable): with
    /// --public, the owner's setup (sources, hierarchies, views) before the public session
    /// starts.
    #[clap(long = "init", value_name = "FILE", value_parser(parse_valid_file))]
    init: Vec<String>,

    /// The release policy for public users (TOML, the keys of PublicPolicy: `tables`,
    /// `methods`, `allow_non_dp`, `min_epsilon`, `max_epsilon`, `person`,
    /// `max_release_rows` and one `[sources.NAME]` table per source with its `qi`,
    /// `informative`, `plain`, ε range and `fixed` arguments; server.toml's `[public]` is
    /// the same). Without it public users read published releases only. Only with
    /// --public.
    #[clap(long = "policy", value_name = "FILE", value_parser(parse_valid_file))]
    policy: Option<String>,

    /// A file holding the secret key of pseudonyms (at least 16 bytes, e.g. `head -c 32
    /// /dev/urandom > pseudonym.key`): identifier_mode => 'pseudonym' gives the same value
    /// the same pseudonym in every release under this key.
    #[clap(long = "pseudonym-key-file", value_name = "PATH")]
    pseudonym_key_file: Option<std::path::PathBuf>,

    /// Total epsilon each source table may spend (default: unlimited).
    #[clap(long, value_parser = parse_epsilon_budget, allow_hyphen_values = true)]
    epsilon_budget: Option<f64>,

    /// Total delta each source table may spend (default: unlimited).
    #[clap(long, value_parser = parse_delta_budget, allow_hyphen_values = true)]
    delta_budget: Option<f64>,

    /// File that keeps the privacy ledger across sessions (default: in memory).
    #[clap(long, value_parser = parse_ledger)]
    ledger: Option<std::path::PathBuf>,

    /// Run queries on the Apache DataFusion Ballista cluster whose scheduler is at this URL
    /// (df://HOST:PORT; start it with dfanon-scheduler and dfanon-executor; this option is
    /// there when dfanon is built with `--features ballista`). Releases are
    /// computed here, with their aggregate over the source on the cluster, and the ledger
    /// stays here. Sources must be files the executors can read (CREATE EXTERNAL TABLE).
    #[cfg(feature = "ballista")]
    #[clap(long, value_name = "URL")]
    ballista: Option<String>,
}

/// Parses a size such as `512m`, `4g`, `1024` (bytes) or `2GB` (binary units).
fn parse_memory_limit(text: &str) -> std::result::Result<usize, String> {
    let lower = text.trim().to_ascii_lowercase();
    let digits = lower.chars().take_while(|c| c.is_ascii_digit()).count();
    let (number, suffix) = lower.split_at(digits);
    let shift = match suffix {
        "" | "b" => 0,
        "k" | "kb" => 10,
        "m" | "mb" => 20,
        "g" | "gb" => 30,
        "t" | "tb" => 40,
        _ => {
            return Err(format!(
                "memory limit '{text}': expected a number with an optional unit b, k, m, g or t (e.g. '512m')"
            ))
        }
    };
    let number: usize = number
        .parse()
        .map_err(|_| format!("memory limit '{text}': expected a number such as '512m'"))?;
    match number.checked_mul(1usize << shift) {
        Some(0) => Err(format!("memory limit '{text}' must be greater than 0")),
        Some(bytes) => Ok(bytes),
        None => Err(format!("memory limit '{text}' is too large")),
    }
}

fn parse_epsilon_budget(text: &str) -> std::result::Result<f64, String> {
    budget_limit("epsilon_budget", text)
}

fn parse_delta_budget(text: &str) -> std::result::Result<f64, String> {
    budget_limit("delta_budget", text)
}

/// `--ledger`: the same rule as `SET anonymize.ledger_path` (no leading or trailing spaces).
fn parse_ledger(text: &str) -> std::result::Result<std::path::PathBuf, String> {
    match datafusion_anonymize::parse_ledger_path(text) {
        Ok(Some(path)) => Ok(path),
        Err(e) if text.trim() == text && !text.is_empty() => Err(format!("--ledger: {}", e.strip_backtrace())),
        _ => Err(format!(
            "--ledger must be a file path without leading or trailing spaces (leave the option out to keep the ledger in memory); got {text:?}"
        )),
    }
}

/// A budget option, checked as `SET anonymize.<key>` checks it, in the option's words.
fn budget_limit(key: &str, text: &str) -> std::result::Result<f64, String> {
    datafusion_anonymize::parse_budget_limit(key, text).map_err(|e| {
        let message = match e {
            DataFusionError::Configuration(message) => message,
            other => other.strip_backtrace(),
        };
        message.replace(
            &format!("anonymize.{key}"),
            &format!("--{}", key.replace('_', "-")),
        )
    })
}

/// The key of pseudonyms from --pseudonym-key-file (the file's bytes).
fn pseudonym_key(args: &Args) -> Result<Option<datafusion_anonymize::PseudonymKey>> {
    let Some(path) = &args.pseudonym_key_file else {
        return Ok(None);
    };
    let bytes = std::fs::read(path).map_err(|e| {
        DataFusionError::Configuration(format!(
            "--pseudonym-key-file: cannot read '{}': {e}",
            path.display()
        ))
    })?;
    datafusion_anonymize::PseudonymKey::new(&bytes)
        .map(Some)
        .map_err(|e| {
            DataFusionError::Configuration(format!(
                "--pseudonym-key-file '{}': {}",
                path.display(),
                e.strip_backtrace()
                    .trim_start_matches("Error during planning: ")
            ))
        })
}

/// The public users' policy from the --policy file (the default policy without one).
fn public_policy(args: &Args) -> Result<PublicPolicy> {
    let Some(path) = &args.policy else {
        return Ok(PublicPolicy::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        DataFusionError::Configuration(format!("--policy: cannot read '{path}': {e}"))
    })?;
    let policy: PublicPolicy = toml::from_str(&text).map_err(|e| {
        DataFusionError::Configuration(format!("--policy '{path}': {}", e.message()))
    })?;
    policy
        .validate()
        .map_err(|e| DataFusionError::Configuration(format!("--policy '{path}': {e}")))?;
    Ok(policy)
}

/// Rows shown: as given, else 40 for the table format and all rows for every other format
/// (an export through stdout never loses rows silently).
fn effective_maxrows(format: &PrintFormat, given: Option<MaxRows>) -> MaxRows {
    match (given, format) {
        (Some(given), _) => given,
        (None, PrintFormat::Table | PrintFormat::Automatic) => MaxRows::Limited(40),
        (None, _) => MaxRows::Unlimited,
    }
}

fn parse_valid_file(path: &str) -> std::result::Result<String, String> {
    if std::path::Path::new(path).is_file() {
        Ok(path.to_string())
    } else {
        Err(format!("no such file: '{path}'"))
    }
}

fn main() -> ExitCode {
    // Statements are parsed, planned and run on threads with a stack far above what the
    // deepest statement the depth check lets through needs (the shell's own parsing
    // included); the main thread only waits.
    let started = std::thread::Builder::new()
        .name("dfanon".into())
        .stack_size(datafusion_anonymize::STATEMENT_STACK_BYTES)
        .spawn(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .thread_stack_size(datafusion_anonymize::STATEMENT_STACK_BYTES)
                .enable_all()
                .build();
            match runtime {
                Ok(runtime) => runtime.block_on(run_main()),
                Err(e) => {
                    eprintln!("Error: cannot start the runtime: {e}");
                    ExitCode::FAILURE
                }
            }
        });
    match started.map(|thread| thread.join()) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("Error: cannot start: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run_main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            // Only a limited pool refuses memory: say which option set it.
            if matches!(e.find_root(), DataFusionError::ResourcesExhausted(_)) {
                eprintln!(
                    "The statement needs more memory than --memory-limit allows: raise the limit (e.g. --memory-limit 2g) or leave it out."
                );
            }
            ExitCode::FAILURE
        }
    }
}

fn progress_callback() -> datafusion_anonymize::ProgressFn {
    let bar: Arc<Mutex<Option<ProgressBar>>> = Arc::new(Mutex::new(None));
    Arc::new(move |phase: &str, done: usize, total: usize| {
        let Ok(mut slot) = bar.lock() else { return };
        let pb = slot.get_or_insert_with(|| {
            let pb = ProgressBar::new(total as u64);
            if let Ok(style) =
                ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} nodes ({elapsed})")
            {
                pb.set_style(style.progress_chars("=> "));
            }
            pb
        });
        pb.set_length(total as u64);
        pb.set_message(phase.to_string());
        pb.set_position(done as u64);
        if done >= total {
            pb.finish_and_clear();
            *slot = None;
        }
    })
}

/// Parses the command line; `--help` shows [`after_help`].
/// Runs one --init file with the owner's rights, statement by statement, and stops at the
/// first failure (naming the file and the statement) so that no session starts from a
/// half-done setup.
async fn run_init(ctx: &SessionContext, file: &str) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| DataFusionError::Execution(format!("--init {file}: {e}")))?;
    let state = ctx.state();
    let options = state.config().options();
    let dialect = dialect_from_str(options.sql_parser.dialect).ok_or_else(|| {
        DataFusionError::Plan(format!(
            "unknown SQL dialect {}",
            options.sql_parser.dialect
        ))
    })?;
    let statements = DFParserBuilder::new(text.as_str())
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(options.sql_parser.recursion_limit.get())
        .build()?
        .parse_statements()
        .map_err(|e| DataFusionError::Plan(format!("--init {file}: {e}")))?;
    for (number, statement) in statements.into_iter().enumerate() {
        let failed = |e: DataFusionError| {
            DataFusionError::Plan(format!("--init {file}, statement {}: {e}", number + 1))
        };
        let plan = state.statement_to_plan(statement).await.map_err(failed)?;
        ctx.execute_logical_plan(plan)
            .await
            .map_err(failed)?
            .collect()
            .await
            .map_err(failed)?;
    }
    Ok(())
}

/// Runs the statements of a `-f` file in order and stops at the first that fails, naming
/// the file: a script never goes on from a failed step, and `dfanon` exits non-zero. Lines
/// starting with `#!` are skipped, as in `datafusion-cli`.
async fn run_file(script: &Script, file: &str) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| DataFusionError::Execution(format!("-f {file}: {e}")))?;
    let text: String = text
        .lines()
        .filter(|line| !line.starts_with("#!"))
        .collect::<Vec<_>>()
        .join("\n");
    script
        .run(&text)
        .await
        .map_err(|e| DataFusionError::Context(format!("-f {file}"), Box::new(e)))
}

fn parse_args() -> Args {
    let matches = Args::command().after_help(after_help()).get_matches();
    Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

async fn run() -> Result<()> {
    let args = parse_args();
    if !args.quiet {
        // On stderr, so that stdout holds only results (an export redirected to a file).
        eprintln!(
            "dfanon {} (DataFusion CLI {})",
            env!("CARGO_PKG_VERSION"),
            datafusion_cli::DATAFUSION_CLI_VERSION
        );
    }
    let mut config = SessionConfig::from_env()?.with_information_schema(true);
    if let Some(batch_size) = args.batch_size {
        if batch_size == 0 {
            return Err(DataFusionError::Configuration(
                "batch size must be greater than 0".into(),
            ));
        }
        config = config.with_batch_size(batch_size);
    }
    let registry = Arc::new(InstrumentedObjectStoreRegistry::new());
    let mut runtime = RuntimeEnvBuilder::new().with_object_store_registry(registry.clone());
    if let Some(limit) = args.memory_limit {
        let pool: Arc<dyn MemoryPool> = match args.mem_pool_type {
            PoolType::Greedy => Arc::new(GreedyMemoryPool::new(limit)),
            PoolType::Fair => Arc::new(FairSpillPool::new(limit)),
        };
        runtime = runtime.with_memory_pool(pool);
    }
    let runtime = runtime.build_arc()?;
    let owner = SessionContext::new_with_config_rt(config, runtime);
    let owner = if args.public {
        owner
    } else {
        owner.register_udtf("parquet_metadata", Arc::new(ParquetMetadataFunc {}));
        with_path_tables(owner)
    };
    let show_progress = !args.no_progress && !args.quiet && std::io::stderr().is_terminal();
    let mut budget = datafusion_anonymize::AnonymizeOptions::default();
    if let Some(limit) = args.epsilon_budget {
        budget.epsilon_budget = limit;
    }
    if let Some(limit) = args.delta_budget {
        budget.delta_budget = limit;
    }
    budget.ledger_path = args.ledger.clone();
    if args.policy.is_some() && !args.public {
        return Err(DataFusionError::Configuration(
            "--policy describes a session for public users: add --public".into(),
        ));
    }
    if args.public && !budget.epsilon_budget.is_finite() && !args.quiet {
        eprintln!(
            "Note: no --epsilon-budget was given, so this public session releases nothing (every anonymize call is refused until the data owner sets a budget)."
        );
    }
    if args.public && budget.ledger_path.is_none() && !args.quiet {
        eprintln!(
            "Note: no --ledger file was given, so the privacy budget lasts as long as this process: a new dfanon --public starts with the whole budget again. Give --ledger FILE to keep what was spent."
        );
    }
    let options = RegisterOptions {
        progress: show_progress.then(progress_callback),
        access: if args.public {
            Access::Public
        } else {
            Access::Owner
        },
        budget,
        max_release_rows: None,
        public: public_policy(&args)?,
        pseudonym_key: pseudonym_key(&args)?,
        ..RegisterOptions::default()
    };
    let print_options = PrintOptions {
        format: args.format,
        quiet: args.quiet,
        maxrows: effective_maxrows(&args.format, args.maxrows),
        color: args.color,
        instrumented_registry: registry.clone(),
    };
    // The session is registered for the data owner first (unless it goes to a cluster,
    // whose connection registers its own functions), so the --init files can use every
    // function; with --public, the public session is then built over the owner's tables.
    #[cfg(feature = "ballista")]
    let distributed = args.ballista.is_some();
    #[cfg(not(feature = "ballista"))]
    let distributed = false;
    let ctx = owner;
    if !distributed {
        let owner_options = match args.public {
            true => RegisterOptions {
                access: Access::Owner,
                public: PublicPolicy::default(),
                ..options.clone()
            },
            false => options.clone(),
        };
        register_with(&ctx, owner_options)?;
    }
    for file in &args.init {
        run_init(&ctx, file).await?;
    }
    let ctx = match args.public && !distributed {
        true => datafusion_anonymize::public_session(&ctx, options.clone())?,
        false => ctx,
    };
    #[cfg(feature = "ballista")]
    let ctx = match &args.ballista {
        Some(url) => {
            let ctx = dfanon_ballista::connect(url, ctx.state(), options).await?;
            if !args.quiet {
                eprintln!("Queries run on the Ballista cluster at {url}.");
            }
            ctx
        }
        None => ctx,
    };
    #[cfg(not(feature = "ballista"))]
    drop(options);

    let mut print_options = print_options;
    // Statements piped in run as a script (the first failure stops them, with a non-zero
    // exit); a terminal gets the interactive shell.
    let piped = args.command.is_empty() && args.file.is_empty();
    if piped && std::io::stdin().is_terminal() {
        return exec::exec_from_repl(&Repl(ctx), &mut print_options)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)));
    }
    // Ctrl-C, SIGTERM and SIGHUP end the process with status 130, 143 or 129 wherever it
    // is (computing a release, printing rows, writing a COPY, whose partial output they
    // remove); the statement running stops with it.
    let script = Script::new(ctx, print_options);
    let watcher = Arc::clone(&script);
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|e| DataFusionError::External(Box::new(e)))?;
    let mut hangup =
        signal(SignalKind::hangup()).map_err(|e| DataFusionError::External(Box::new(e)))?;
    tokio::spawn(async move {
        let by = tokio::select! {
            _ = tokio::signal::ctrl_c() => Stopped::Interrupt,
            _ = terminate.recv() => Stopped::Terminate,
            _ = hangup.recv() => Stopped::Hangup,
        };
        watcher.interrupted(by);
    });
    if piped {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
            DataFusionError::Execution(format!("reading statements from stdin: {e}"))
        })?;
        script
            .run(&text)
            .await
            .map_err(|e| DataFusionError::Context("stdin".into(), Box::new(e)))?;
    }
    for file in &args.file {
        run_file(&script, file).await?;
    }
    for command in &args.command {
        script.run(command).await?;
    }
    Ok(())
}
