//! What help and docs show of a function, and its renderings: the rows of
//! `anonymize_help()`, the functions section of `dfanon --help` ([`cli_help`]) and
//! `docs/FUNCTIONS.md` ([`markdown`]). The list of functions itself is
//! [`super::functions::FunctionList`].
//!
//! A table function is read through [`SqlTableFunction::name`], `about` and `params` (each
//! parameter's `name`, `doc` and `default`), a scalar function through DataFusion's
//! [`ScalarUDF::documentation`].

use datafusion::logical_expr::ScalarUDF;

use super::planner::SqlTableFunction;

/// How a function is called in SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionKind {
    /// A table function: `SELECT * FROM f(...)`.
    Table,
    /// A scalar function: `SELECT f(...)`.
    Scalar,
}

impl FunctionKind {
    /// `"table"` or `"scalar"`.
    pub fn label(self) -> &'static str {
        match self {
            FunctionKind::Table => "table",
            FunctionKind::Scalar => "scalar",
        }
    }
}

/// One parameter of a table function or argument of a scalar function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamDoc {
    /// Parameter name.
    pub name: String,
    /// Default shown in help (`None` = required or method-dependent; scalar arguments
    /// have none).
    pub default: Option<String>,
    /// One-line description.
    pub doc: String,
}

/// What help and docs show of one function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionDoc {
    /// SQL name.
    pub name: String,
    /// Table or scalar.
    pub kind: FunctionKind,
    /// Call syntax, e.g. `mask_hierarchy(source, column, keep)`.
    pub syntax: String,
    /// Full description.
    pub description: String,
    /// Parameters (table function) or arguments (scalar function), in order.
    pub params: Vec<ParamDoc>,
    /// SQL example (Markdown), when the function documents one.
    pub example: Option<String>,
    /// Registered only for the data owner ([`crate::Access::Owner`]).
    pub owner_only: bool,
}

impl FunctionDoc {
    /// The first sentence of the description.
    pub fn summary(&self) -> &str {
        first_sentence(&self.description)
    }
}

/// Parameters shown in a table function's syntax before `...`.
const SYNTAX_PARAMS: usize = 3;

/// What help and docs show of a table function.
pub fn table_doc(f: &dyn SqlTableFunction) -> FunctionDoc {
    let params: Vec<ParamDoc> = f
        .params()
        .iter()
        .map(|p| ParamDoc {
            name: p.name.to_string(),
            default: p.default.describe(),
            doc: p.doc.to_string(),
        })
        .collect();
    let mut shown: Vec<&str> = params
        .iter()
        .take(SYNTAX_PARAMS)
        .map(|p| p.name.as_str())
        .collect();
    if params.len() > SYNTAX_PARAMS {
        shown.push("...");
    }
    FunctionDoc {
        name: f.name().to_string(),
        kind: FunctionKind::Table,
        syntax: format!("{}({})", f.name(), shown.join(", ")),
        description: f.about().to_string(),
        params,
        example: None,
        owner_only: f.owner_only(),
    }
}

/// What help and docs show of a scalar function (DataFusion's documentation of it).
pub fn scalar_doc(f: &ScalarUDF) -> FunctionDoc {
    let name = f.name().to_string();
    let Some(doc) = f.documentation() else {
        return FunctionDoc {
            syntax: format!("{name}(...)"),
            name,
            kind: FunctionKind::Scalar,
            description: String::new(),
            params: Vec::new(),
            example: None,
            owner_only: false,
        };
    };
    FunctionDoc {
        name,
        kind: FunctionKind::Scalar,
        syntax: doc.syntax_example.clone(),
        description: doc.description.clone(),
        params: doc
            .arguments
            .iter()
            .flatten()
            .map(|(name, doc)| ParamDoc {
                name: name.clone(),
                default: None,
                doc: doc.clone(),
            })
            .collect(),
        example: doc.sql_example.clone(),
        owner_only: false,
    }
}

/// Text up to the first `. ` that is followed by a capital letter (so `e.g. delta` does
/// not end a sentence), with its full stop.
fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices(". ") {
        if bytes.get(i + 2).is_some_and(u8::is_ascii_uppercase) {
            return &text[..=i];
        }
    }
    text
}

/// Width `dfanon --help` wraps descriptions at.
const HELP_WIDTH: usize = 100;

/// The functions section of `dfanon --help`: every function's syntax and the first
/// sentence of its description, table functions first.
pub fn cli_help(docs: &[FunctionDoc]) -> String {
    let mut out =
        String::from("Functions (in full: docs/FUNCTIONS.md, or SELECT * FROM anonymize_help()):");
    for kind in [FunctionKind::Table, FunctionKind::Scalar] {
        out.push_str(&format!("\n  {} functions:", capitalized(kind.label())));
        for f in docs.iter().filter(|f| f.kind == kind) {
            out.push_str(&format!("\n    {}", f.syntax));
            let summary = match f.owner_only {
                true => format!("(Owner only.) {}", f.summary()),
                false => f.summary().to_string(),
            };
            for line in wrap(&summary, HELP_WIDTH - 8) {
                out.push_str(&format!("\n        {line}"));
            }
        }
    }
    out
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// Greedy word wrap; a word longer than `width` gets a line of its own.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Text safe inside a Markdown table cell or paragraph: `|` and `<` escaped.
fn md(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;")
}

/// `docs/FUNCTIONS.md`: an index of every function, then one section per function with
/// its syntax, description and parameters (with defaults). Functions whose parameters are
/// the same as an earlier one's refer to it instead of repeating the table.
pub fn markdown(docs: &[FunctionDoc]) -> String {
    let mut out = String::from(
        "# Functions\n\n\
         <!-- Generated by functions_markdown() (src/sql/docs.rs); do not edit by hand. -->\n\n\
         Every SQL function that `datafusion_anonymize::register` adds. This file is generated from \
         the list of functions in `src/sql/functions/mod.rs`; regenerate it with \
         `UPDATE_DOCS=1 cargo test --release --test integration functions_doc`. In SQL, \
         `SELECT * FROM anonymize_help()` lists the functions of the session it runs in.\n\n\
         Functions marked *owner* show exact figures of the raw data. They exist only when the \
         functions are registered for the data owner (`dfanon`, or \
         `register_with(ctx, RegisterOptions::owner())`); `register(ctx)` registers for public \
         users, without them, and with the budget settings fixed.\n\n\
         | function | kind | access | description |\n|---|---|---|---|\n",
    );
    for f in docs {
        out.push_str(&format!(
            "| [`{}`](#{}) | {} | {} | {} |\n",
            f.name,
            f.name,
            f.kind.label(),
            if f.owner_only { "owner" } else { "public" },
            md(f.summary())
        ));
    }
    for kind in [FunctionKind::Table, FunctionKind::Scalar] {
        out.push_str(&format!("\n## {} functions\n", capitalized(kind.label())));
        for (i, f) in docs.iter().enumerate().filter(|(_, f)| f.kind == kind) {
            let access = match f.owner_only {
                true => "**Owner only** (not registered for public users). ",
                false => "",
            };
            out.push_str(&format!(
                "\n### `{}`\n\n```sql\n{}\n```\n\n{access}{}\n\n",
                f.name,
                f.syntax,
                md(&f.description)
            ));
            let same_as = docs[..i]
                .iter()
                .find(|g| g.kind == kind && !f.params.is_empty() && g.params == f.params);
            let noun = match kind {
                FunctionKind::Table => "Parameters",
                FunctionKind::Scalar => "Arguments",
            };
            if let Some(g) = same_as {
                out.push_str(&format!(
                    "{noun}: the same as [`{}`](#{}).\n",
                    g.name, g.name
                ));
            } else if f.params.is_empty() {
                out.push_str(&format!("No {}.\n", noun.to_lowercase()));
            } else {
                out.push_str(&params_table(f));
            }
            if let Some(example) = &f.example {
                out.push_str(&format!("\nExample:\n\n{}\n", example.trim()));
            }
        }
    }
    out
}

/// A function's parameters as a Markdown table (scalar arguments have no defaults).
fn params_table(f: &FunctionDoc) -> String {
    let mut out = match f.kind {
        FunctionKind::Table => "| parameter | default | description |\n|---|---|---|\n",
        FunctionKind::Scalar => "| argument | description |\n|---|---|\n",
    }
    .to_string();
    for p in &f.params {
        let default = match (f.kind, &p.default) {
            (FunctionKind::Scalar, _) => String::new(),
            (FunctionKind::Table, Some(d)) => format!(" {} |", md(d)),
            (FunctionKind::Table, None) => " — |".to_string(),
        };
        out.push_str(&format!("| `{}` |{default} {} |\n", p.name, md(&p.doc)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_skips_abbreviations() {
        assert_eq!(first_sentence("A b. C d."), "A b.");
        assert_eq!(first_sentence("A, e.g. delta. Never"), "A, e.g. delta.");
        assert_eq!(first_sentence("No stop"), "No stop");
    }

    #[test]
    fn wrap_keeps_words_within_width() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("toolongword x", 4), vec!["toolongword", "x"]);
        assert!(wrap("", 4).is_empty());
    }
}
