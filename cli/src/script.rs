//! Running `-c` commands and `-f` files statement by statement.
//!
//! - A query whose output format is an export format (csv, tsv, json, nd-json) streams to
//!   stdout batch by batch: memory stays that of one batch however large the release, the
//!   first rows appear as soon as they are computed, and `--maxrows n` writes exactly n rows
//!   and stops the query.
//! - Every other statement (the table format, DDL, `COPY`, `SET`, `EXPLAIN`) runs through
//!   `datafusion-cli`'s executor with its exact text.
//! - A `COPY` to a local path that fails or is interrupted removes what it wrote.
//! - [`Script::interrupted`] is what Ctrl-C, SIGTERM and SIGHUP do: remove a partial
//!   `COPY` output and exit with status 130, 143 or 129.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use datafusion::arrow::csv;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json::{ArrayWriter, LineDelimitedWriter};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;
use datafusion::sql::sqlparser::dialect::{dialect_from_str, Dialect};
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};
use datafusion_anonymize::CopyOutput;
use datafusion_cli::exec;
use datafusion_cli::print_format::PrintFormat;
use datafusion_cli::print_options::{MaxRows, PrintOptions};
use futures::StreamExt;

/// One statement of a script: its text as written and its parsed form.
struct Piece {
    text: String,
    statement: Statement,
}

/// The signals that stop a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Ctrl-C (SIGINT).
    Interrupt,
    /// SIGTERM: `kill`, `timeout`, systemd, `docker stop`.
    Terminate,
    /// SIGHUP: the terminal closed.
    Hangup,
}

/// Runs scripts in one session with one set of print options.
pub struct Script {
    ctx: SessionContext,
    print: PrintOptions,
    /// The local output of the `COPY` running now, removed if it is interrupted.
    copy: Mutex<Option<CopyOutput>>,
}

impl Script {
    /// A runner for `ctx`, printing as `print` says.
    pub fn new(ctx: SessionContext, print: PrintOptions) -> Arc<Self> {
        Arc::new(Self {
            ctx,
            print,
            copy: Mutex::new(None),
        })
    }

    /// Parses the whole of `sql` (a syntax error anywhere runs nothing), then runs its
    /// statements in order and stops at the first that fails.
    pub async fn run(&self, sql: &str) -> Result<()> {
        for piece in self.parse(sql)? {
            self.run_piece(piece).await?;
        }
        Ok(())
    }

    /// What Ctrl-C, `kill` (SIGTERM) and a closed terminal (SIGHUP) do: remove the partial
    /// output of a running `COPY`, say so and exit with the shell's status for the signal
    /// (130, 143, 129); the statement running stops with the process.
    pub fn interrupted(&self, by: Stopped) -> ! {
        let copy = self.copy.lock().ok().and_then(|mut slot| slot.take());
        if let Some(copy) = copy {
            copy.remove_partial();
        }
        let (what, status) = match by {
            Stopped::Interrupt => ("^C: interrupted", 130),
            Stopped::Terminate => ("terminated (SIGTERM)", 143),
            Stopped::Hangup => ("hung up (SIGHUP)", 129),
        };
        eprintln!("{what}, nothing more was run");
        std::process::exit(status)
    }

    fn parse(&self, sql: &str) -> Result<Vec<Piece>> {
        datafusion_anonymize::check_expression_depth(sql)?;
        let state = self.ctx.state();
        let options = state.config().options();
        let dialect_name = &options.sql_parser.dialect;
        let dialect = dialect_from_str(dialect_name)
            .ok_or_else(|| DataFusionError::Plan(format!("unknown SQL dialect {dialect_name}")))?;
        let recursion_limit = options.sql_parser.recursion_limit.get();
        let mut pieces = Vec::new();
        for text in split_statements(sql, dialect.as_ref())? {
            let statements = DFParserBuilder::new(text)
                .with_dialect(dialect.as_ref())
                .with_recursion_limit(recursion_limit)
                .build()?
                .parse_statements()?;
            pieces.extend(statements.into_iter().map(|statement| Piece {
                text: text.to_string(),
                statement,
            }));
        }
        Ok(pieces)
    }

    async fn run_piece(&self, piece: Piece) -> Result<()> {
        if datafusion_anonymize::is_public(&self.ctx) {
            datafusion_anonymize::check_public_statement(&piece.statement)?;
        }
        if let Statement::Reset(_) = &piece.statement {
            // DataFusion would answer "Could not find config namespace" for our settings.
            if let Some(e) = datafusion_anonymize::budget_reset_error(&piece.statement.to_string())
            {
                return Err(e);
            }
        }
        if is_query(&piece.statement) && streams(self.print.format) {
            return self.export(piece.statement).await;
        }
        // Planned here too, to know which releases it reads (planning draws nothing): their
        // guarantee cards go beside the output.
        let copy = match &piece.statement {
            Statement::CopyTo(_) => {
                let plan = self
                    .ctx
                    .state()
                    .statement_to_plan(piece.statement.clone())
                    .await?;
                CopyOutput::of_plan(&plan)
            }
            _ => None,
        };
        let watched = copy.is_some();
        if let Ok(mut slot) = self.copy.lock() {
            *slot = copy;
        }
        // In an export format, stdout holds only rows: no "N row(s) fetched. Elapsed" line
        // for the statements between the queries.
        let print = match streams(self.print.format) {
            true => PrintOptions {
                quiet: true,
                ..self.print.clone()
            },
            false => self.print.clone(),
        };
        let result = exec::exec_from_commands(&self.ctx, vec![piece.text], &print).await;
        if watched {
            let copy = self.copy.lock().ok().and_then(|mut slot| slot.take());
            if let Some(copy) = copy {
                let result = match result {
                    Ok(()) => copy.write_manifest(&self.ctx.state()).await,
                    Err(e) => Err(e),
                };
                if result.is_err() {
                    copy.remove_partial();
                }
                return result;
            }
        }
        result
    }

    /// Streams a query's rows to stdout in the export format, batch by batch, stopping the
    /// query after `--maxrows` rows. The row count goes to stderr, so that stdout holds
    /// only the export.
    async fn export(&self, statement: Statement) -> Result<()> {
        let start = Instant::now();
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        let frame = self.ctx.execute_logical_plan(plan).await?;
        let mut stream = frame.execute_stream().await?;
        let schema = stream.schema();
        let limit = match self.print.maxrows {
            MaxRows::Limited(n) => n,
            MaxRows::Unlimited => usize::MAX,
        };
        let mut out = Export::new(self.print.format);
        let mut written = 0usize;
        let mut stopped_at_limit = false;
        let mut closed = false;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let room = limit - written;
            let batch = if batch.num_rows() > room {
                stopped_at_limit = true;
                batch.slice(0, room)
            } else {
                batch
            };
            written += batch.num_rows();
            if !out.write(&batch)? {
                closed = true;
                break;
            }
            if written == limit {
                stopped_at_limit = true;
                break;
            }
        }
        drop(stream);
        if !closed && !out.finish(&RecordBatch::new_empty(schema))? {
            closed = true;
        }
        if !self.print.quiet && !closed {
            let stopped = match stopped_at_limit {
                true => format!(" (--maxrows {limit}: the query was stopped there)"),
                false => String::new(),
            };
            eprintln!(
                "{written} row(s) written.{stopped}\nElapsed {:.3} seconds.\n",
                start.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }
}

/// Whether a statement is a query whose rows are the output.
fn is_query(statement: &Statement) -> bool {
    matches!(statement, Statement::Statement(s) if matches!(s.as_ref(), SqlStatement::Query(_)))
}

/// Whether queries stream in this format: every format but the table, whose column widths
/// need all rows first (it shows 40 rows unless `--maxrows` says otherwise).
fn streams(format: PrintFormat) -> bool {
    matches!(
        format,
        PrintFormat::Csv | PrintFormat::Tsv | PrintFormat::Json | PrintFormat::NdJson
    )
}

/// The statements of `sql` as written, split at the semicolons between them (a semicolon
/// in a string, a quoted name or a comment is part of its token). Pieces with nothing but
/// whitespace and comments are dropped.
fn split_statements<'a>(sql: &'a str, dialect: &dyn Dialect) -> Result<Vec<&'a str>> {
    let tokens = Tokenizer::new(dialect, sql)
        .tokenize_with_location()
        .map_err(|e| DataFusionError::Plan(format!("SQL: {e}")))?;
    let lines = LineStarts::new(sql);
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut has_content = false;
    for token in &tokens {
        match token.token {
            Token::SemiColon => {
                let end = lines.byte_offset(sql, token.span.start);
                if has_content {
                    pieces.push(&sql[start..end]);
                }
                start = end + 1;
                has_content = false;
            }
            Token::Whitespace(_) | Token::EOF => {}
            _ => has_content = true,
        }
    }
    if has_content {
        pieces.push(&sql[start..]);
    }
    Ok(pieces)
}

/// Byte offsets of line starts, to turn the tokenizer's (line, column) into an offset.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(sql: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
        Self(starts)
    }

    /// The byte offset of a location (line and column count from 1; columns in characters).
    fn byte_offset(&self, sql: &str, at: Location) -> usize {
        let line_start = self
            .0
            .get((at.line as usize).saturating_sub(1))
            .copied()
            .unwrap_or(sql.len());
        let column = (at.column as usize).saturating_sub(1);
        sql[line_start..]
            .char_indices()
            .nth(column)
            .map(|(i, _)| line_start + i)
            .unwrap_or(sql.len())
    }
}

/// A streaming writer of one export format on stdout.
struct Export {
    format: Format,
    /// Set when stdout's reader has gone (a closed pipe, as with `| head`).
    closed: Arc<AtomicBool>,
}

enum Format {
    Delimited(Box<csv::Writer<Out>>),
    Json(ArrayWriter<Out>),
    NdJson(LineDelimitedWriter<Out>),
}

impl Export {
    fn new(format: PrintFormat) -> Self {
        let closed = Arc::new(AtomicBool::new(false));
        let out = Out(Arc::clone(&closed));
        let format = match format {
            PrintFormat::Json => Format::Json(ArrayWriter::new(out)),
            PrintFormat::NdJson => Format::NdJson(LineDelimitedWriter::new(out)),
            PrintFormat::Tsv => Format::Delimited(Box::new(
                csv::WriterBuilder::new().with_delimiter(b'\t').build(out),
            )),
            _ => Format::Delimited(Box::new(csv::WriterBuilder::new().build(out))),
        };
        Self { format, closed }
    }

    /// Writes one batch and flushes it; `false` when the reader has gone, which ends the
    /// export quietly.
    fn write(&mut self, batch: &RecordBatch) -> Result<bool> {
        let written = match &mut self.format {
            Format::Delimited(w) => w.write(batch),
            Format::Json(w) => w.write(batch),
            Format::NdJson(w) => w.write(batch),
        };
        self.still_open(written.and_then(|()| flush()))
    }

    /// Ends the export: the header of an empty CSV (from `empty`, a batch of no rows), the
    /// closing bracket of a JSON array.
    fn finish(&mut self, empty: &RecordBatch) -> Result<bool> {
        let finished = match &mut self.format {
            Format::Delimited(w) => w.write(empty),
            Format::Json(w) => w.finish().and_then(|()| {
                writeln!(std::io::stdout()).map_err(|e| ArrowError::IoError(e.to_string(), e))
            }),
            Format::NdJson(w) => w.finish(),
        };
        self.still_open(finished.and_then(|()| flush()))
    }

    /// `Ok(false)` once the pipe is closed, the error otherwise.
    fn still_open(&self, result: std::result::Result<(), ArrowError>) -> Result<bool> {
        match result {
            Ok(()) => Ok(true),
            Err(_) if self.closed.load(Ordering::Relaxed) => Ok(false),
            Err(ArrowError::IoError(_, e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Stdout, noting a closed pipe (the writers turn I/O errors into text).
struct Out(Arc<AtomicBool>);

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = std::io::stdout().write(buf);
        if let Err(e) = &written {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        written
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// Flushes stdout, so that each batch reaches the reader when it is written.
fn flush() -> std::result::Result<(), ArrowError> {
    std::io::stdout()
        .flush()
        .map_err(|e| ArrowError::IoError(e.to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;

    #[test]
    fn statements_split_at_semicolons_outside_strings_and_comments() {
        let sql = "SELECT 'a;b' AS x; -- one; two\nSELECT \"c;d\"\n FROM t;\n\n-- only a comment;\n  ;SELECT 'é;' ";
        let pieces = split_statements(sql, &GenericDialect {}).expect("split");
        assert_eq!(
            pieces,
            vec![
                "SELECT 'a;b' AS x",
                " -- one; two\nSELECT \"c;d\"\n FROM t",
                "SELECT 'é;' "
            ]
        );
    }
}
