//! What several topics share: the release policy of the small test tables, and the
//! workspace's source files.

use std::path::{Path, PathBuf};

use datafusion_anonymize::{PublicPolicy, SourcePolicy};

/// The source folders of the workspace's packages: the library's, then each tool's.
pub const SOURCE_FOLDERS: [&str; 6] = [
    "src",
    "cli/src",
    "server/src",
    "ballista/src",
    "python/src",
    "one-build/src",
];

/// Every `.rs` file under `dir`, its sub-folders included, in path order.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The test tables' policy for public users: the hierarchies `h_*` are public, and each of
/// `sources` may be released with `age` and `sex` generalized along `h_age` and `h_sex`
/// and `disease` counted over the domain `h_disease`.
pub fn h_policy(sources: &[&str]) -> PublicPolicy {
    let source = SourcePolicy::default()
        .qi("age", "h_age")
        .qi("sex", "h_sex")
        .informative("disease", "h_disease");
    let policy = PublicPolicy {
        tables: vec!["h_*".into()],
        ..PublicPolicy::default()
    };
    sources.iter().fold(policy, |policy, name| {
        policy.with_source(name, source.clone())
    })
}

/// Every row of `sql` in `ctx`, each cell as text (Arrow's cast to text).
pub async fn text_rows(
    ctx: &datafusion::prelude::SessionContext,
    sql: &str,
) -> datafusion::error::Result<Vec<Vec<String>>> {
    use datafusion::arrow::array::AsArray;
    let mut out = Vec::new();
    for batch in ctx.sql(sql).await?.collect().await? {
        let columns: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| {
                datafusion::arrow::compute::cast(c, &datafusion::arrow::datatypes::DataType::Utf8)
            })
            .collect::<std::result::Result<_, _>>()?;
        for r in 0..batch.num_rows() {
            out.push(
                columns
                    .iter()
                    .map(|c| c.as_string::<i32>().value(r).to_string())
                    .collect(),
            );
        }
    }
    Ok(out)
}

/// SQL that registers the Adult data (`adult`, from `tests/data/adult`) and the ARX
/// hierarchies of `columns` (`adult_hierarchy_<column>`).
pub fn adult_setup(columns: &[&str]) -> String {
    let csv = |name: &str, file: &str, header: bool| {
        format!(
            "CREATE EXTERNAL TABLE \"{name}\" STORED AS CSV LOCATION '{}/tests/data/adult/{file}.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' '{header}');",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let mut sql = csv("adult", "adult", true);
    for column in columns {
        let name = format!("adult_hierarchy_{column}");
        sql.push_str(&csv(&name, &name, false));
    }
    sql
}

/// A data owner's session with the Adult data and the hierarchies of sex, age, race and
/// marital-status registered.
pub async fn adult_owner() -> datafusion::error::Result<datafusion::prelude::SessionContext> {
    let ctx = datafusion::prelude::SessionContext::new();
    datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())?;
    datafusion_anonymize::run_script(
        &ctx,
        &adult_setup(&["sex", "age", "race", "marital-status"]),
    )
    .await?;
    Ok(ctx)
}

/// The Python of a virtual environment `name` under the build directory with `package`
/// installed from PyPI (made once; made again when `module` does not import).
pub fn python_with(name: &str, package: &str, module: &str) -> std::path::PathBuf {
    use std::process::Command;
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let python = venv.join("bin/python");
    let ready = || {
        Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ready() {
        let run = |command: &mut Command, what: &str| {
            let status = command.status().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(status.success(), "{what} failed: {status}");
        };
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        );
        run(
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                package,
            ]),
            &format!("pip install {package}"),
        );
        assert!(
            ready(),
            "{module} does not import after pip install {package}"
        );
    }
    python
}

/// Writes the rows of `sql` to a CSV file: `header`, then the values separated by
/// `separator` (none may hold it).
pub async fn write_csv(
    ctx: &datafusion::prelude::SessionContext,
    sql: &str,
    header: &str,
    separator: char,
    path: &std::path::Path,
) -> datafusion::error::Result<()> {
    let mut text = format!("{header}\n");
    for row in text_rows(ctx, sql).await? {
        assert!(row.iter().all(|v| !v.contains(separator)), "{row:?}");
        text.push_str(&row.join(&separator.to_string()));
        text.push('\n');
    }
    std::fs::write(path, text)?;
    Ok(())
}
