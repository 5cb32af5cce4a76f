//! `docs/FUNCTIONS.md` is generated from the list of functions, and every place that lists
//! functions (the file, `dfanon --help`, `anonymize_help()`) lists every registered one.
//!
//! After changing a function, regenerate the file with
//! `UPDATE_DOCS=1 cargo test --release --test integration functions_doc`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use datafusion::arrow::array::AsArray;
use datafusion::execution::FunctionRegistry;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::internals::FunctionList;
use datafusion_anonymize::{
    cli_help_section, function_docs, functions_markdown, register, register_with, RegisterOptions,
};

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/FUNCTIONS.md")
}

/// Every function: the data owner's registration has them all.
fn registered_names() -> Vec<String> {
    FunctionList::new(&RegisterOptions::owner()).names()
}

#[test]
fn functions_md_is_up_to_date() {
    let generated = functions_markdown();
    let path = doc_path();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).expect("write docs/FUNCTIONS.md");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    if on_disk != generated {
        let line = on_disk
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| on_disk.lines().count().min(generated.lines().count()))
            + 1;
        panic!(
            "docs/FUNCTIONS.md differs from functions_markdown() (first at line {line}); \
             regenerate it with `UPDATE_DOCS=1 cargo test --release --test integration functions_doc`"
        );
    }
}

#[test]
fn functions_md_lists_every_function() {
    let markdown = functions_markdown();
    for name in registered_names() {
        assert!(
            markdown.contains(&format!("\n### `{name}`\n")),
            "docs/FUNCTIONS.md has no section for {name}"
        );
        assert!(
            markdown.contains(&format!("| [`{name}`](#{name}) |")),
            "docs/FUNCTIONS.md's index does not list {name}"
        );
    }
}

#[test]
fn cli_help_lists_every_function() {
    let help = cli_help_section();
    let listed: BTreeSet<&str> = help
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split('(').next())
        .collect();
    let names = registered_names();
    let expected: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        listed, expected,
        "dfanon --help lists other functions:\n{help}"
    );
}

#[tokio::test]
async fn anonymize_help_lists_every_function_and_documented_parameter() {
    let ctx = SessionContext::new();
    register_with(&ctx, RegisterOptions::owner()).expect("register");
    let batches = ctx
        .sql("SELECT function, parameter FROM anonymize_help()")
        .await
        .expect("plan anonymize_help()")
        .collect()
        .await
        .expect("run anonymize_help()");
    let mut rows: BTreeSet<(String, String)> = BTreeSet::new();
    for batch in &batches {
        let function = batch.column(0).as_string::<i32>();
        let parameter = batch.column(1).as_string::<i32>();
        for i in 0..batch.num_rows() {
            rows.insert((
                function.value(i).to_string(),
                parameter.value(i).to_string(),
            ));
        }
    }
    let docs = function_docs();
    let names: BTreeSet<&str> = rows.iter().map(|(f, _)| f.as_str()).collect();
    let registered = registered_names();
    let expected: BTreeSet<&str> = registered.iter().map(String::as_str).collect();
    assert_eq!(names, expected);
    for f in &docs {
        assert!(
            rows.contains(&(f.name.clone(), String::new())),
            "{}",
            f.name
        );
        for p in &f.params {
            assert!(
                !p.doc.is_empty(),
                "{}({}) has no description",
                f.name,
                p.name
            );
            assert!(
                rows.contains(&(f.name.clone(), p.name.clone())),
                "anonymize_help() lacks {}({})",
                f.name,
                p.name
            );
        }
    }
}

#[tokio::test]
async fn scalar_functions_are_registered_with_their_documentation() {
    let ctx = SessionContext::new();
    register(&ctx).expect("register");
    let functions = FunctionList::new(&RegisterOptions::default());
    for udf in &functions.scalar_functions {
        let registered = ctx.udf(udf.name()).expect("registered scalar function");
        assert_eq!(registered.documentation(), udf.documentation());
    }
}

#[tokio::test]
async fn public_help_lists_only_the_public_functions() {
    let ctx = SessionContext::new();
    register(&ctx).expect("register");
    let batches = ctx
        .sql("SELECT DISTINCT function FROM anonymize_help()")
        .await
        .expect("plan anonymize_help()")
        .collect()
        .await
        .expect("run anonymize_help()");
    let listed: BTreeSet<String> = batches
        .iter()
        .flat_map(|b| {
            let column = b.column(0).as_string::<i32>().clone();
            (0..b.num_rows()).map(move |i| column.value(i).to_string())
        })
        .collect();
    let public: BTreeSet<String> = FunctionList::new(&RegisterOptions::default())
        .names()
        .into_iter()
        .collect();
    assert_eq!(listed, public);
    assert!(!listed.contains("anonymize_diagnostics"));
    let err = ctx
        .sql("SELECT * FROM anonymize_diagnostics('t', qi => 'a')")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("owner-only function"), "{err}");
}
