//! `dfanon-server`: released views for analysts over the PostgreSQL wire protocol and Arrow
//! Flight SQL. The data owner's `init` scripts set up sources and hierarchies; owners log
//! in to a full session, public users to a read-only public session; every session shares
//! the releases and the privacy ledger. `docs/SERVER.md` describes it.

mod audit;
mod audit_table;
mod blocks;
mod config;
mod connections;
mod cursors;
mod flight;
mod flight_audited;
mod flight_catalog;
mod flight_parameters;
mod flight_statements;
mod ldap;
mod limits;
mod password;
mod pg_catalog;
mod pg_functions;
mod placeholders;
mod postgres;
mod sessions;
mod studio;

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokio::net::TcpListener;

use password::PasswordHash;
use sessions::Server;

/// Serves released views to analysts over PostgreSQL and Arrow Flight SQL.
#[derive(Debug, Parser)]
#[command(name = "dfanon-server", version, about, long_about = None)]
struct Args {
    /// The configuration file (TOML): listen addresses, init scripts, budget, users.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Reads a password from standard input (its first line) and prints the
    /// `password_hash` the configuration stores for it.
    HashPassword,
    /// Starts the studio for one data steward on this machine, without a configuration
    /// file: the studio and PostgreSQL on loopback, one owner whose password is made up
    /// and printed (valid for this run only).
    Studio {
        /// The folder whose CSV and Parquet files the studio may register.
        #[arg(long, value_name = "DIR")]
        files: PathBuf,
        /// SQL files run at start (sources, hierarchies), in order.
        #[arg(long, value_name = "FILE")]
        init: Vec<PathBuf>,
        /// The studio's port (on 127.0.0.1).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// The PostgreSQL protocol's port (on 127.0.0.1), to read publications with psql.
        #[arg(long, default_value_t = 5433)]
        postgres_port: u16,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let outcome = match (&args.command, &args.config) {
        (Some(Command::HashPassword), _) => hash_password(),
        (
            Some(Command::Studio {
                files,
                init,
                port,
                postgres_port,
            }),
            _,
        ) => studio_alone(files, init, *port, *postgres_port),
        (None, Some(config)) => config::load(config).and_then(serve),
        (None, None) => Err(
            "give --config server.toml (or the studio or hash-password command); --help says more"
                .into(),
        ),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("dfanon-server: {message}");
            ExitCode::FAILURE
        }
    }
}

fn hash_password() -> Result<(), String> {
    if std::io::stdin().is_terminal() {
        eprintln!("Type the password and press Enter:");
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the password: {e}"))?;
    let password = line.trim_end_matches(['\r', '\n']);
    if password.is_empty() {
        return Err("the password is empty".into());
    }
    println!("{}", PasswordHash::new(password));
    Ok(())
}

/// The configuration of `dfanon-server studio`: loopback listeners, the studio's folder,
/// the init scripts and one owner with a fresh password, which is printed.
fn studio_alone(
    files: &std::path::Path,
    init: &[PathBuf],
    port: u16,
    postgres_port: u16,
) -> Result<(), String> {
    let absolute = |p: &std::path::Path| {
        p.canonicalize()
            .map_err(|e| format!("{}: {e}", p.display()))
            .map(|p| toml::Value::String(p.to_string_lossy().into_owned()).to_string())
    };
    let init = init
        .iter()
        .map(|p| absolute(p))
        .collect::<Result<Vec<_>, _>>()?;
    let password = studio::one_time_password();
    let text = format!(
        "postgres = \"127.0.0.1:{postgres_port}\"\nstudio = \"127.0.0.1:{port}\"\n\
         studio_files = {}\ninit = [{}]\n\n[[user]]\nname = \"owner\"\nrole = \"owner\"\n\
         password_hash = \"{}\"\n",
        absolute(files)?,
        init.join(", "),
        PasswordHash::new(&password)
    );
    let config = config::parse(&text, std::path::Path::new("."))?;
    let open = match port {
        0 => "open the studio's address (below)".to_string(),
        port => format!("open http://127.0.0.1:{port}/"),
    };
    println!(
        "dfanon studio: {open} and log in as 'owner' with the password {password} (made for \
         this run; psql -h 127.0.0.1 -p {postgres_port} -U owner -d datafusion reads the publications)"
    );
    serve(config)
}

fn serve(config: config::Config) -> Result<(), String> {
    // Statements are planned and run on these threads: a stack far above what the deepest
    // statement the depth check lets through needs (reserved, not used, until needed).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(datafusion_anonymize::STATEMENT_STACK_BYTES)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        // Read the TLS files first: a bad certificate stops the server instead of serving
        // in the clear.
        let (pg_tls, flight_tls) = match &config.tls {
            Some((cert, key)) => (
                Some(postgres::tls_acceptor(cert, key)?),
                Some(flight::tls_config(cert, key)?),
            ),
            None => (None, None),
        };
        // The studio serves HTTPS with the same certificate.
        let studio_tls = pg_tls.clone();
        let server = Server::start(&config)
            .await
            .map_err(|e| e.strip_backtrace())?;
        let bind = |address| async move {
            TcpListener::bind(address)
                .await
                .map_err(|e| format!("cannot listen on {address}: {e}"))
        };
        let pg = match config.postgres {
            Some(address) => Some(bind(address).await?),
            None => None,
        };
        let flight = match config.flight_sql {
            Some(address) => Some(bind(address).await?),
            None => None,
        };
        let studio = match config.studio {
            Some(address) => Some(bind(address).await?),
            None => None,
        };
        let studio_files = config
            .studio_files
            .as_deref()
            .map(studio::Folder::new)
            .transpose()?;
        let mut listening = Vec::new();
        if let Some(listener) = &pg {
            listening.push(format!("PostgreSQL on {}", postgres::bound(listener)));
        }
        if let Some(listener) = &flight {
            listening.push(format!("Flight SQL on {}", postgres::bound(listener)));
        }
        if let Some(listener) = &studio {
            let scheme = if config.tls.is_some() {
                "https"
            } else {
                "http"
            };
            listening.push(format!(
                "studio on {scheme}://{}/",
                postgres::bound(listener)
            ));
        }
        let connect = studio::Connect {
            postgres: pg.as_ref().and_then(|l| l.local_addr().ok()),
            flight_sql: flight.as_ref().and_then(|l| l.local_addr().ok()),
            tls: config.tls.is_some(),
        };
        let tls = if config.tls.is_some() {
            " (TLS only)"
        } else {
            ""
        };
        eprintln!("dfanon-server: listening: {}{tls}", listening.join(", "));
        if let Some(audit) = server.audit() {
            eprintln!("dfanon-server: audit trail: {}", audit.path().display());
        }
        let pg_task = async {
            match pg {
                Some(listener) => postgres::serve(server.clone(), listener, pg_tls)
                    .await
                    .map_err(|e| format!("postgres: {e}")),
                None => std::future::pending().await,
            }
        };
        let flight_task = async {
            match flight {
                Some(listener) => flight::serve(server.clone(), listener, flight_tls).await,
                None => std::future::pending().await,
            }
        };
        let studio_task = async {
            match studio {
                Some(listener) => {
                    studio::serve(server.clone(), listener, studio_tls, connect, studio_files).await
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = pg_task => result,
            result = flight_task => result,
            result = studio_task => result,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("dfanon-server: stopped");
                Ok(())
            }
        }
    })
}
