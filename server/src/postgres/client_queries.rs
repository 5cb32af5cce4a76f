//! Catalog statements that well-known clients send and DataFusion cannot plan, each
//! answered by an equivalent statement it can: the same columns, and the rows the original
//! would give on this server's catalog.
//!
//! A statement is recognised by its tokens (whitespace and letter case aside); `$1` in a
//! pattern stands for any one token (a table name, say). Each entry says which client
//! sends it, and why DataFusion cannot run it.

use std::borrow::Cow;
use std::sync::OnceLock;

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

/// Where a pattern is looked for, and what its answer replaces.
#[derive(Clone, Copy, PartialEq)]
enum Find {
    /// The pattern is the whole statement; the answer replaces it.
    Whole,
    /// The pattern is somewhere in the statement; the answer replaces the statement (the
    /// rest, filters on a schema or table name, does not change the answer).
    Within,
    /// The pattern is somewhere in the statement; the answer replaces that part only.
    Part,
}

/// A statement (or part of one) a client sends, and what answers it here.
struct Known {
    /// The client and the call that sends it.
    #[cfg_attr(not(test), allow(dead_code))]
    sent_by: &'static str,
    find: Find,
    pattern: &'static str,
    answer: &'static str,
}

/// No rows, in the columns of pgJDBC's getPrimaryKeys.
const NO_PRIMARY_KEYS: &str = "SELECT CAST(NULL AS TEXT) AS \"TABLE_CAT\", \
    CAST(NULL AS TEXT) AS \"TABLE_SCHEM\", CAST(NULL AS TEXT) AS \"TABLE_NAME\", \
    CAST(NULL AS TEXT) AS \"COLUMN_NAME\", CAST(NULL AS SMALLINT) AS \"KEY_SEQ\", \
    CAST(NULL AS TEXT) AS \"PK_NAME\" WHERE false";

const KNOWN: &[Known] = &[
    // pgJDBC's DatabaseMetaData.getPrimaryKeys (DBeaver's and Metabase's table views), in
    // every driver version's wording. DataFusion has no
    // `information_schema._pg_expandarray` and no field access on a function's composite
    // result; this server's tables have no primary keys (pg_index and pg_constraint are
    // empty), so the answer is no rows, in pgJDBC's columns.
    Known {
        sent_by: "pgJDBC getPrimaryKeys",
        find: Find::Within,
        pattern: "(information_schema._pg_expandarray($1.$2)).n AS KEY_SEQ",
        answer: NO_PRIMARY_KEYS,
    },
    // pgJDBC's DatabaseMetaData.getTypeInfo and its type cache. DataFusion cannot plan
    // the correlated scalar subquery on pg_class; a left join on the type's relation
    // (oids are unique) gives the same rows.
    Known {
        sent_by: "pgJDBC getTypeInfo",
        find: Find::Whole,
        pattern: "SELECT t.typname,t.oid FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n \
            ON (t.typnamespace = n.oid) WHERE n.nspname != 'pg_toast' AND (t.typrelid = 0 OR \
            (SELECT c.relkind = 'c' FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid))",
        answer: "SELECT t.typname, t.oid FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n \
            ON (t.typnamespace = n.oid) LEFT JOIN pg_catalog.pg_class c ON (c.oid = t.typrelid) \
            WHERE n.nspname != 'pg_toast' AND (t.typrelid = 0 OR c.relkind = 'c')",
    },
    // pgJDBC's type cache (TypeInfoCache.getSQLType), sent for every result column of a
    // type the driver does not know (DBeaver's `c.*`, `t.*`, `a.*` listings): the
    // catalog's typinput holds the input function's name, which the `::regproc` cast
    // cannot be compared with here; the name itself can.
    Known {
        sent_by: "pgJDBC getSQLType",
        find: Find::Part,
        pattern: "typinput='pg_catalog.array_in'::regproc",
        answer: "typinput='array_in'",
    },
    // Metabase's foreign keys (describe-fks): `= ANY(c.conkey)` over the catalog's text
    // key columns does not plan; this server's tables have no foreign keys.
    Known {
        sent_by: "Metabase describe-fks",
        find: Find::Within,
        pattern: "(\"c\".\"contype\" = 'f'::char) AND (\"fk_column\".\"attnum\" = ANY(c.conkey))",
        answer: "SELECT CAST(NULL AS TEXT) AS \"fk-table-schema\", \
            CAST(NULL AS TEXT) AS \"fk-table-name\", CAST(NULL AS TEXT) AS \"fk-column-name\", \
            CAST(NULL AS TEXT) AS \"pk-table-schema\", CAST(NULL AS TEXT) AS \"pk-table-name\", \
            CAST(NULL AS TEXT) AS \"pk-column-name\" WHERE false",
    },
    // Metabase's fields (describe-fields) read `information_schema.columns` with
    // PostgreSQL's type names (`udt_schema`, `udt_name`), `is_identity`, `is_generated` and
    // 1-based positions; DataFusion's has Arrow type names and counts from 0.
    Known {
        sent_by: "Metabase describe-fields",
        find: Find::Part,
        pattern: "\"information_schema\".\"columns\" AS \"c\"",
        answer: "(SELECT table_catalog, table_schema, table_name, column_name, \
            ordinal_position + 1 AS ordinal_position, column_default, is_nullable, data_type, \
            'pg_catalog' AS udt_schema, CASE WHEN data_type = 'Boolean' THEN 'bool' \
            WHEN data_type IN ('Int8', 'Int16', 'UInt8') THEN 'int2' \
            WHEN data_type IN ('Int32', 'UInt16') THEN 'int4' \
            WHEN data_type IN ('Int64', 'UInt32', 'UInt64') THEN 'int8' \
            WHEN data_type = 'Float32' THEN 'float4' WHEN data_type = 'Float64' THEN 'float8' \
            WHEN data_type LIKE 'Decimal%' THEN 'numeric' WHEN data_type = 'Date32' THEN 'date' \
            WHEN data_type LIKE 'Timestamp%' THEN 'timestamp' ELSE 'text' END AS udt_name, \
            'NO' AS is_identity, 'NEVER' AS is_generated \
            FROM information_schema.columns) AS \"c\"",
    },
    // Metabase's column comments: the table's name cast to `regclass` (which DataFusion
    // holds as a number and cannot cast a name to); no column has a comment here.
    Known {
        sent_by: "Metabase describe-fields",
        find: Find::Part,
        pattern: "COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', CAST(\"c\".\"table_schema\" AS TEXT), \
            CAST(\"c\".\"table_name\" AS TEXT)) AS REGCLASS) AS OID), \"c\".\"ordinal_position\")",
        answer: "CAST(NULL AS TEXT)",
    },
    // Metabase's fields (describe-fields) read the primary keys from
    // information_schema.table_constraints and key_column_usage, which DataFusion does
    // not have; this server's tables have none.
    Known {
        sent_by: "Metabase describe-fields",
        find: Find::Part,
        pattern: "\"information_schema\".\"table_constraints\" AS \"tc\" INNER JOIN \
            \"information_schema\".\"key_column_usage\" AS \"kc\"",
        answer: "(SELECT CAST(NULL AS TEXT) AS table_schema, CAST(NULL AS TEXT) AS table_name, \
            CAST(NULL AS TEXT) AS constraint_name, CAST(NULL AS TEXT) AS constraint_type \
            WHERE false) AS \"tc\" INNER JOIN (SELECT CAST(NULL AS TEXT) AS table_schema, \
            CAST(NULL AS TEXT) AS table_name, CAST(NULL AS TEXT) AS constraint_name, \
            CAST(NULL AS TEXT) AS column_name WHERE false) AS \"kc\"",
    },
];

/// `sql`, or the statement that answers it here when a known client sent it: the first
/// whole-statement answer that fits, or every part answer that fits, each where it is.
pub(super) fn answer(sql: &str) -> Cow<'_, str> {
    let mut answered = Cow::Borrowed(sql);
    // Each part answer leaves nothing its own pattern matches; the bound is a guard.
    for _ in 0..KNOWN.len() {
        match answer_once(&answered) {
            None => break,
            Some((text, whole)) => {
                answered = Cow::Owned(text);
                if whole {
                    break;
                }
            }
        }
    }
    answered
}

/// The first answer that fits `sql`: the statement it gives, and whether it replaced the
/// whole statement.
fn answer_once(sql: &str) -> Option<(String, bool)> {
    let Ok(all) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else {
        return None;
    };
    // The tokens that count, and where each is in `all`.
    let counted: Vec<usize> = (0..all.len())
        .filter(|&i| {
            !matches!(
                all[i].token,
                Token::Whitespace(_) | Token::SemiColon | Token::EOF
            )
        })
        .collect();
    let tokens: Vec<&Token> = counted.iter().map(|&i| &all[i].token).collect();
    for (known, pattern) in KNOWN.iter().zip(patterns()) {
        if pattern.is_empty() || pattern.len() > tokens.len() {
            continue;
        }
        let at = match known.find {
            Find::Whole => (tokens.len() == pattern.len() && fits(&tokens, pattern)).then_some(0),
            Find::Within | Find::Part => {
                (0..=tokens.len() - pattern.len()).find(|&at| fits(&tokens[at..], pattern))
            }
        };
        let Some(at) = at else {
            continue;
        };
        if known.find != Find::Part {
            return Some((known.answer.to_string(), true));
        }
        let start = offset(sql, &all[counted[at]]);
        let end = all
            .get(counted[at + pattern.len() - 1] + 1)
            .map_or(sql.len(), |next| offset(sql, next));
        let rest = &sql[end..];
        let gap = if rest.starts_with(char::is_whitespace) || rest.is_empty() {
            ""
        } else {
            " "
        };
        return Some((
            format!("{}{}{gap}{rest}", &sql[..start], known.answer),
            false,
        ));
    }
    None
}

/// The byte offset in `sql` where `token` starts.
fn offset(sql: &str, token: &TokenWithSpan) -> usize {
    let Location { line, column } = token.span.start;
    let line_start = sql
        .split_inclusive('\n')
        .take(line.saturating_sub(1) as usize)
        .map(str::len)
        .sum::<usize>();
    sql[line_start..]
        .char_indices()
        .nth(column.saturating_sub(1) as usize)
        .map_or(sql.len(), |(i, _)| line_start + i)
}

/// Which client's statement `sql` is, if it is a known one.
#[cfg(test)]
fn sent_by(sql: &str) -> Option<&'static str> {
    let answered = answer(sql);
    KNOWN
        .iter()
        .find(|k| answered.contains(k.answer))
        .map(|k| k.sent_by)
}

fn patterns() -> &'static [Vec<Token>] {
    static PATTERNS: OnceLock<Vec<Vec<Token>>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        KNOWN
            .iter()
            .map(|k| {
                Tokenizer::new(&PostgreSqlDialect {}, k.pattern)
                    .tokenize()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
                    .collect()
            })
            .collect()
    })
}

fn fits(tokens: &[&Token], pattern: &[Token]) -> bool {
    tokens.len() >= pattern.len() && tokens.iter().zip(pattern).all(|(t, p)| same(t, p))
}

fn same(token: &Token, pattern: &Token) -> bool {
    match (token, pattern) {
        (_, Token::Placeholder(_)) => true,
        (Token::Word(a), Token::Word(b)) if a.quote_style.is_none() && b.quote_style.is_none() => {
            a.value.eq_ignore_ascii_case(&b.value)
        }
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIMARY_KEYS: &str = "SELECT        result.TABLE_CAT,        result.TABLE_SCHEM,        result.TABLE_NAME,        result.COLUMN_NAME,        result.KEY_SEQ,        result.PK_NAME FROM      (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid) WHERE true  AND ct.relname = 't' AND i.indisprimary  ) result where  result.A_ATTNUM = (result.KEYS).x  ORDER BY result.table_name, result.pk_name, result.key_seq";

    #[test]
    fn the_clients_statements_are_known_whatever_their_spacing_and_case() {
        assert_eq!(sent_by(PRIMARY_KEYS), Some("pgJDBC getPrimaryKeys"));
        let other_table = PRIMARY_KEYS.replace(
            "ct.relname = 't'",
            "n.nspname = 'public' AND ct.relname = 'nps_kanon'",
        );
        assert_eq!(sent_by(&other_table), Some("pgJDBC getPrimaryKeys"));
        let newer =
            PRIMARY_KEYS.replace("result.PK_NAME FROM", "result.PK_NAME AS \"PK_NAME\" FROM");
        assert_eq!(sent_by(&newer), Some("pgJDBC getPrimaryKeys"));
        let type_info = "select t.typname,t.oid from pg_catalog.pg_type t join pg_catalog.pg_namespace n on (t.typnamespace = n.oid)\n where n.nspname  != 'pg_toast' AND  (t.typrelid = 0 OR (SELECT c.relkind = 'c' FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid));";
        assert_eq!(sent_by(type_info), Some("pgJDBC getTypeInfo"));
    }

    #[test]
    fn a_part_is_replaced_where_it_is_and_the_rest_kept() {
        let sql = "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype\n  FROM pg_catalog.pg_type WHERE oid = $1 AND typname <> 'é'";
        assert_eq!(
            answer(sql),
            "SELECT typinput='array_in' as is_array, typtype\n  FROM pg_catalog.pg_type WHERE oid = $1 AND typname <> 'é'"
        );
        let on_a_later_line = "SELECT 'é', 1\n, typinput = 'pg_catalog.array_in'::regproc";
        assert_eq!(
            answer(on_a_later_line),
            "SELECT 'é', 1\n, typinput='array_in'"
        );
    }

    #[test]
    fn other_statements_are_left_alone() {
        for sql in [
            "SELECT 1",
            "SELECT t.typname,t.oid FROM pg_catalog.pg_type t",
            // A whole-statement pattern does not answer a longer statement.
            "SELECT t.typname,t.oid FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON (t.typnamespace = n.oid) WHERE n.nspname != 'pg_toast' AND (t.typrelid = 0 OR (SELECT c.relkind = 'c' FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid)) AND t.typname = 'x'",
            "SELECT 'unterminated",
        ] {
            assert_eq!(answer(sql), sql);
        }
    }
}
