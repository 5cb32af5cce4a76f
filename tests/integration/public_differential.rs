//! The neighbouring-table differential harness of the public door.
//!
//! A corpus of public statements, generated from the argument grammar and the policy
//! (every public function, method, hierarchy pairing, informative column, ε and size
//! extreme, `SET`/`RESET` and write attempt), runs in two public sessions whose source `t`
//! differs by one record (added in a new class, with a new informative value inside or
//! outside the published code list, with a NULL, removed; an empty table against one
//! record). For every statement, everything a public user sees outside the draws of a
//! proven mechanism must be the same on both: the error or refusal text, the result's
//! schema, the metadata (but the entries that are mechanism outputs, [`DRAWN`]) and the
//! ledger (accounts, releases, ε and δ spent) and the user's own quota after the statement.
//!
//! The review's attacks are cases of it: a `SET` of the catalog's default schema or of the
//! runtime (refused, so the same on both), dp_histogram's informative domain read from the
//! data (its metadata and cell count differed), the membership test of a hierarchy paired
//! with the wrong column (a refusal on one side only), the unproven SafePub options and the
//! non-DP methods (refused by name on both).

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    public_session, public_sql, register_with, run_script, Principal, RegisterOptions,
};

/// The published tables: hierarchies and a code list, some of them fitting no column of
/// the source (for the wrong pairings).
const PUBLISHED: &str = "
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('25', '[20-40)', '*'), ('30', '[20-40)', '*'), ('40', '[40-60)', '*'), ('50', '[40-60)', '*'), ('60', '[60-80)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
CREATE TABLE h_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*'), ('C', '*');
CREATE TABLE h_los(v VARCHAR, l1 VARCHAR) AS SELECT CAST(value AS VARCHAR), '*' FROM generate_series(1, 30);
CREATE TABLE secret(v VARCHAR, l1 VARCHAR) AS VALUES ('40', '*'), ('50', '*');
";

/// The records of the base table `t`: ages 40 to 60, diseases A and B (C is in the code
/// list but not in the data).
const BASE: &str = "(1, 40, 'M', 'A'), (2, 40, 'F', 'B'), (3, 50, 'M', 'A'), (4, 50, 'F', 'A'), (5, 60, 'M', 'B'), (6, 60, 'F', 'B'), (7, 40, 'M', 'B'), (8, 50, 'F', 'A'), (9, 60, 'M', 'A'), (10, 40, 'F', 'A'), (11, 50, 'M', 'B'), (12, 60, 'F', 'A')";

/// Neighbouring pairs: the SQL `VALUES` of `t` on each side.
fn pairs() -> Vec<(&'static str, String, String)> {
    let with = |extra: &str| format!("{BASE}, {extra}");
    vec![
        (
            "a record in a new class and with a code listed but absent",
            BASE.to_string(),
            with("(13, 25, 'F', 'C')"),
        ),
        (
            "a record outside the code list",
            BASE.to_string(),
            with("(13, 30, 'M', 'Z')"),
        ),
        (
            "a record with NULLs",
            BASE.to_string(),
            with("(13, NULL, 'M', NULL)"),
        ),
        (
            "a record removed",
            BASE.to_string(),
            BASE.rsplit_once(", (12")
                .map(|(kept, _)| kept.to_string())
                .unwrap_or_default(),
        ),
        (
            "an empty table and one record",
            String::new(),
            "(1, 40, 'M', 'A')".to_string(),
        ),
    ]
}

/// Metadata entries whose values are outputs of a mechanism's draws (a noisy count, figures
/// of the released rows): allowed to differ.
const DRAWN: &[&str] = &[
    "released_rows",
    "min_class_size",
    "min_persons_per_class",
    "prosecutor_risk_avg",
    "prosecutor_risk_max",
];

/// SafePub's node is chosen by its private search (the exponential mechanism): these
/// entries are draws too, for `safepub` only (dp_histogram's node is a public choice).
const DRAWN_BY_SEARCH: &[&str] = &["levels", "node", "steps_run"];

/// MST's tree (chosen by exponential mechanisms), the domains its noisy 1-way marginals
/// compress and its noisy total: draws too, for `mst` only (its node is a public choice).
const DRAWN_BY_MST: &[&str] = &["tree", "compressed_domains", "records_estimate"];

/// A small deterministic generator (splitmix64): the corpus is the same on every run.
struct Draw(u64);

impl Draw {
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        items[(z % items.len() as u64) as usize]
    }
}

/// Statements outside `anonymize`'s grammar: settings, writes, reads of the source.
const FIXED: &[&str] = &[
    "SET datafusion.catalog.default_schema = 'fresh1'",
    "SET datafusion.runtime.memory_limit = '28K'",
    "SET datafusion.execution.target_partitions = 1",
    "SET datafusion.execution.batch_size = 1",
    "SET anonymize.epsilon_budget = 1000000",
    "SET anonymize.ledger_path = '/tmp/public_differential_ledger.json'",
    "RESET datafusion.execution.batch_size",
    "RESET anonymize.epsilon_budget",
    "SELECT * FROM t",
    "SELECT COUNT(*) FROM t",
    "DESCRIBE t",
    "SHOW TABLES",
    "SELECT * FROM h_age",
    "SELECT * FROM secret",
    "SELECT * FROM information_schema.tables ORDER BY table_name",
    "COPY t TO '/tmp/public_differential_probe.csv'",
    "CREATE TABLE c AS SELECT * FROM t",
    "CREATE VIEW v AS SELECT * FROM h_age",
    "INSERT INTO h_age VALUES ('99', '*', '*')",
    "DROP TABLE h_age",
    "SELECT * FROM mask_hierarchy('t', 'disease')",
    "SELECT * FROM mask_hierarchy('h_disease', 'v')",
    "SELECT * FROM privacy_budget()",
    "SELECT * FROM privacy_quota()",
    "SELECT * FROM dp_noise_interval(1.0, 10)",
    "SELECT * FROM dp_noise_interval(0, 10)",
    "SELECT * FROM sample_count_interval(40, 1, 0.3, 8)",
    "SELECT * FROM sample_count_interval(10, 2, 0.3, 8)",
    "SELECT * FROM anonymize_help() LIMIT 1",
    "SELECT COUNT(*) FROM nps_disease_hierarchy()",
    "SELECT * FROM published_metadata('none')",
    "SELECT * FROM published_metadata('t')",
    "SELECT * FROM anonymize_publish('p', 't', method => 'kanon', qi => 'age:h_age, sex:h_sex', k => 2)",
    "SELECT * FROM anonymize_unpublish('p')",
    "SELECT * FROM anonymize_diagnostics('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex')",
    "SELECT * FROM anonymize_warnings('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex')",
    "SELECT * FROM anonymize_assess('t', qi => 'age, sex')",
];

/// Statements the grammar does not generate: pairings the release policy refuses, and
/// statements nested deeper than the depth bound (refused before they are parsed).
fn beyond_the_grammar() -> Vec<String> {
    let release = "anonymize('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease:h_disease', epsilon => 1)";
    let terms: Vec<String> = (0..2_000).map(|i| format!("age = '{i}'")).collect();
    vec![
        "SELECT * FROM anonymize('t', method => 'dp_histogram', qi => 'age:h_sex')".to_string(),
        "SELECT * FROM anonymize('t', method => 'dp_histogram', qi => 'age', informative => 'disease:h_sex')".to_string(),
        "SELECT * FROM anonymize('t', method => 'dp_histogram', qi => 'disease:h_disease')".to_string(),
        format!("SELECT {}", vec!["1"; 2_000].join("+")),
        format!("SELECT COUNT(*) FROM {release} WHERE {}", terms.join(" OR ")),
    ]
}

/// The generated statements: `count` calls of the public table functions. Each starts as a
/// valid call of a public method (dp_histogram or SafePub) and changes none, one or two of
/// its parts to another value of the grammar, so that the corpus holds releases as well as
/// every kind of refusal.
fn corpus(count: usize) -> Vec<String> {
    let functions: &[&str] = &[
        "SELECT * FROM anonymize",
        "SELECT key, value FROM anonymize_metadata",
        "SELECT * FROM anonymize",
        "SELECT key, value FROM anonymize_metadata",
        "SELECT * FROM anonymize_catalog",
        "SELECT * FROM anonymize_interval_means",
        "SELECT COUNT(*) FROM anonymize",
    ];
    let methods: &[&str] = &[
        "'dp_histogram'",
        "'safepub'",
        "'mst'",
        "'DP_Histogram'",
        "'ipa'",
        "'kanon'",
        "'upa'",
        "'microaggregation'",
        "'nothing'",
    ];
    let sources: &[&str] = &[
        "'t'",
        "'t'",
        "'public.t'",
        "'datafusion.public.t'",
        "'T'",
        "'h_age'",
        "'secret'",
        "'none'",
    ];
    let qi: &[&str] = &[
        "age:h_age, sex:h_sex",
        "age:h_age, sex:h_sex",
        "age:h_age",
        "sex:h_sex",
        "age:h_los, sex:h_sex",
        "age:h_disease, sex:h_sex",
        "age:secret, sex:h_sex",
        "age:t, sex:h_sex",
        "age, sex",
        "id:h_age, sex:h_sex",
        "age:h_age, sex:h_sex, disease:h_disease",
        "age:h_age, age:h_age",
        "nothing:h_age",
    ];
    let informative: &[&str] = &[
        ", informative => 'disease:h_disease'",
        "",
        ", informative => 'disease'",
        ", informative => 'id'",
        ", informative => 'id:h_age'",
        ", informative => 'disease:h_sex'",
        ", informative => 'disease:secret'",
        ", sensitive => 'disease:h_disease, id:h_age'",
        ", informative => 'sex:h_sex'",
        ", informative => 'disease:h_disease'",
    ];
    let epsilon: &[&str] = &[
        ", epsilon => 1",
        ", epsilon => 1",
        "",
        ", epsilon => 0.01",
        ", epsilon => 0.001",
        ", epsilon => 1e9",
        ", epsilon => 0",
        ", epsilon => -1",
        ", epsilon => 'x'",
        ", epsilon => 3",
    ];
    let extra: &[&str] = &[
        "",
        ", delta => 1e-5",
        ", levels => 'age=2, sex=1'",
        ", levels => 'age=0, sex=0'",
        ", levels => 'age=9'",
        ", max_cells => 1",
        ", max_cells => 3",
        ", max_cells => 18",
        ", max_cells => 1000000000000",
        ", iterations => 20",
        ", iterations => 1000000",
        ", seed => 1",
        ", max_release_rows => 5",
        ", delta => 1e-5, steps => 3",
        ", delta => 1e-5, score => 'classification'",
        ", delta => 1e-5, final_selection => 'best'",
        ", delta => 1e-5, search_sample => 'shared'",
        ", delta => 0.5",
        ", k => 1",
        ", min_levels => 'age=1'",
        ", max_levels => 'age=0, sex=0'",
        ", person => 'id'",
        ", max_rows_per_person => 2",
        ", identifiers => 'id'",
        ", unknown_argument => 1",
    ];
    let parts = [functions, sources, methods, qi, informative, epsilon, extra];
    let mut draw = Draw(0x5EED);
    (0..count)
        .map(|_| {
            // Value 0 of every part makes the dp_histogram call, value 1 the SafePub call.
            let base = usize::from(draw.pick(&["0", "1"]) == "1");
            let mut chosen: Vec<&str> = parts.iter().map(|p| p[base]).collect();
            let changes = ["0", "1", "1", "2"];
            for _ in 0..draw.pick(&changes).parse::<usize>().unwrap_or(0) {
                let which = draw.pick(&["0", "1", "2", "3", "4", "5", "6"]);
                let which: usize = which.parse().unwrap_or(0);
                chosen[which] = draw.pick(parts[which]);
            }
            format!(
                "{}({}, method => {}, qi => '{}'{}{}{})",
                chosen[0], chosen[1], chosen[2], chosen[3], chosen[4], chosen[5], chosen[6]
            )
        })
        .collect()
}

/// A public session whose source `t` holds `values` (no row when empty).
async fn session(values: &str) -> Result<SessionContext> {
    let owner = SessionContext::new();
    register_with(&owner, RegisterOptions::owner())?;
    let table = match values {
        "" => "CREATE TABLE t(id INT, age INT, sex VARCHAR, disease VARCHAR);".to_string(),
        rows => format!(
            "CREATE TABLE t(id INT, age INT, sex VARCHAR, disease VARCHAR) AS VALUES {rows};"
        ),
    };
    run_script(&owner, &format!("{table}{PUBLISHED}")).await?;
    let policy = crate::common::h_policy(&["t"]);
    public_session(
        &owner,
        RegisterOptions {
            principal: Some(Principal {
                name: "analyst".into(),
                epsilon_quota: 500.0,
            }),
            ..RegisterOptions::public(policy, 1000.0)
        },
    )
}

/// Everything a public user sees of one statement outside the mechanisms' draws.
#[derive(Debug, PartialEq)]
enum Seen {
    Refused(String),
    Ran {
        schema: Vec<String>,
        /// Metadata entries other than [`DRAWN`] (only for `anonymize_metadata`).
        metadata: BTreeMap<String, String>,
    },
}

fn text_column(batch: &RecordBatch, column: usize) -> Result<Vec<Option<String>>> {
    let column = cast(batch.column(column), &DataType::Utf8)?;
    let column = column.as_string::<i32>();
    Ok((0..column.len())
        .map(|row| column.is_valid(row).then(|| column.value(row).to_string()))
        .collect())
}

async fn observe(ctx: &SessionContext, sql: &str) -> Seen {
    let frame = match public_sql(ctx, sql).await {
        Ok(frame) => frame,
        Err(e) => return Seen::Refused(e.strip_backtrace()),
    };
    let schema = frame
        .schema()
        .fields()
        .iter()
        .map(|f| format!("{}:{}", f.name(), f.data_type()))
        .collect();
    let batches = match frame.collect().await {
        Ok(batches) => batches,
        Err(e) => return Seen::Refused(e.strip_backtrace()),
    };
    let mut metadata = BTreeMap::new();
    if sql.contains("anonymize_metadata") {
        for batch in &batches {
            let keys = text_column(batch, 0).unwrap_or_default();
            let values = text_column(batch, 1).unwrap_or_default();
            for (key, value) in keys.into_iter().zip(values) {
                metadata.insert(key.unwrap_or_default(), value.unwrap_or_default());
            }
        }
        let method = metadata.get("method").cloned().unwrap_or_default();
        let drawn = |key: &str| {
            DRAWN.contains(&key)
                || (method == "safepub" && DRAWN_BY_SEARCH.contains(&key))
                || (method == "mst" && DRAWN_BY_MST.contains(&key))
        };
        metadata.retain(|key, _| !drawn(key));
    }
    Seen::Ran { schema, metadata }
}

/// The ledger as a public user reads it: every table's budget, then the user's own quota.
async fn ledger(ctx: &SessionContext) -> Result<Vec<Vec<Option<String>>>> {
    let mut batches = ctx
        .sql("SELECT * FROM privacy_budget() ORDER BY table_name")
        .await?
        .collect()
        .await?;
    batches.extend(
        ctx.sql("SELECT * FROM privacy_quota() ORDER BY table_name")
            .await?
            .collect()
            .await?,
    );
    let mut rows = Vec::new();
    for batch in &batches {
        let columns = (0..batch.num_columns())
            .map(|c| text_column(batch, c))
            .collect::<Result<Vec<_>>>()?;
        for row in 0..batch.num_rows() {
            rows.push(columns.iter().map(|c| c[row].clone()).collect());
        }
    }
    Ok(rows)
}

/// How many generated statements run on each pair.
const STATEMENTS: usize = 2_000;

/// Runs the corpus on pair `index` of [`pairs`]; panics on the first statement whose
/// public view differs.
async fn neighbours_look_alike(index: usize) -> Result<()> {
    let (name, left, right) = &pairs()[index];
    let a = session(left).await?;
    let b = session(right).await?;
    let statements: Vec<String> = FIXED
        .iter()
        .map(|s| s.to_string())
        .chain(beyond_the_grammar())
        .chain(corpus(STATEMENTS))
        .collect();
    let mut ran = 0;
    for sql in &statements {
        let seen_a = observe(&a, sql).await;
        let seen_b = observe(&b, sql).await;
        assert_eq!(seen_a, seen_b, "{name}: {sql}");
        let accounts = ledger(&a).await?;
        assert_eq!(accounts, ledger(&b).await?, "{name}: ledger after {sql}");
        // Every charge goes to the account of a table of the owner's catalog, as the
        // registration resolves it (a public user's settings cannot open a fresh one).
        for account in &accounts {
            let table = account.first().cloned().flatten().unwrap_or_default();
            assert!(
                [
                    "datafusion.public.t",
                    "datafusion.public.h_age",
                    "datafusion.public.secret"
                ]
                .contains(&table.as_str()),
                "{name}: account {table} after {sql}"
            );
        }
        ran += usize::from(matches!(seen_a, Seen::Ran { .. }));
    }
    eprintln!(
        "{name}: {} statements, {ran} ran, the others were refused",
        statements.len()
    );
    // The corpus must reach releases, not only refusals.
    assert!(
        ran >= 500,
        "{name}: only {ran} of {} statements ran",
        statements.len()
    );
    Ok(())
}

#[tokio::test]
async fn neighbours_in_a_new_class_look_alike() -> Result<()> {
    neighbours_look_alike(0).await
}

#[tokio::test]
async fn neighbours_outside_the_code_list_look_alike() -> Result<()> {
    neighbours_look_alike(1).await
}

#[tokio::test]
async fn neighbours_with_nulls_look_alike() -> Result<()> {
    neighbours_look_alike(2).await
}

#[tokio::test]
async fn neighbours_with_a_record_removed_look_alike() -> Result<()> {
    neighbours_look_alike(3).await
}

#[tokio::test]
async fn an_empty_table_and_one_record_look_alike() -> Result<()> {
    neighbours_look_alike(4).await
}
