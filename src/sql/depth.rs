//! A bound on how deeply a statement's expressions nest, checked on its tokens before
//! anything builds a tree of it. A chain like `1+1+…+1` or the `v = '0' OR v = '1' OR …`
//! lists BI tools generate becomes a tree as deep as the chain is long, and the parser,
//! the planner and the code that drops the tree walk it recursively: a few thousand terms
//! exhaust a thread's stack and abort the process. The check walks the tokens in a loop
//! (no recursion, linear time) and refuses a statement whose estimated depth exceeds
//! [`MAX_EXPRESSION_DEPTH`] with a clear error.
//!
//! The estimate is an upper bound of the depth of every expression tree in the statement:
//! the parentheses around a point plus, at each parenthesis level around it, the operators
//! since the last comma of that level (a comma separates expressions; operators between
//! two commas may all be on one path of a tree). So no deep tree passes, while a long
//! list (`IN (…)`, many select items, many rows of `VALUES`) does.

use datafusion::common::{plan_err, Result};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// The deepest expression a statement may hold: far above what people and tools write
/// (a 300-term `OR` list is 300 levels) and, at about 1 KB of stack per level in the
/// planner, well within the stacks this crate's programs give the threads that plan and
/// run statements (see `docs/BAD-INPUT.md`).
pub const MAX_EXPRESSION_DEPTH: usize = 1_000;

/// The stack this crate's programs give every thread that parses, plans or runs a
/// statement (`dfanon`, `dfanon-server`, the Python package): 64 MiB of address space,
/// used only as deep as a statement goes. An embedder who runs statements on threads of
/// its own gives them as much (e.g. `tokio::runtime::Builder::thread_stack_size`).
pub const STATEMENT_STACK_BYTES: usize = 64 << 20;

/// Refuses `sql` when one of its statements nests expressions deeper than
/// [`MAX_EXPRESSION_DEPTH`] (an upper-bound estimate from its tokens). Text that does not
/// tokenize is left to the parser, which reports it.
pub fn check_expression_depth(sql: &str) -> Result<()> {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else {
        return Ok(());
    };
    let depth = deepest(&tokens);
    if depth > MAX_EXPRESSION_DEPTH {
        return plan_err!(
            "expression nested too deeply: {depth} levels, at most {MAX_EXPRESSION_DEPTH} (a long chain of AND, OR or arithmetic is one level per term; write a long list of alternatives as IN (...))"
        );
    }
    Ok(())
}

/// The estimated depth of the deepest expression in `tokens` (every statement in them).
fn deepest(tokens: &[Token]) -> usize {
    // Per open parenthesis level: the operators since that level's last comma.
    let mut levels: Vec<usize> = vec![0];
    // The sum of `levels`, kept as they change.
    let mut operators = 0usize;
    let mut deepest = 0usize;
    for token in tokens {
        match token {
            Token::LParen | Token::LBracket => levels.push(0),
            Token::RParen | Token::RBracket if levels.len() > 1 => {
                operators -= levels.pop().unwrap_or(0);
            }
            Token::Comma => {
                if let Some(level) = levels.last_mut() {
                    operators -= *level;
                    *level = 0;
                }
            }
            Token::SemiColon => {
                levels.clear();
                levels.push(0);
                operators = 0;
            }
            token if is_operator(token) => {
                if let Some(level) = levels.last_mut() {
                    *level += 1;
                    operators += 1;
                }
            }
            _ => {}
        }
        deepest = deepest.max(operators + levels.len() - 1);
    }
    deepest
}

/// Whether `token` joins or wraps expressions (a binary or unary operator, or a keyword
/// that builds a node around its operands).
fn is_operator(token: &Token) -> bool {
    match token {
        Token::Word(word) => matches!(
            word.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::NOT
                | Keyword::XOR
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::SIMILAR
                | Keyword::BETWEEN
                | Keyword::IS
                | Keyword::IN
                | Keyword::CASE
                | Keyword::WHEN
                | Keyword::UNION
                | Keyword::EXCEPT
                | Keyword::INTERSECT
        ),
        Token::Plus
        | Token::Minus
        | Token::Mul
        | Token::Div
        | Token::DuckIntDiv
        | Token::Mod
        | Token::StringConcat
        | Token::Eq
        | Token::DoubleEq
        | Token::Neq
        | Token::Lt
        | Token::Gt
        | Token::LtEq
        | Token::GtEq
        | Token::Spaceship
        | Token::Caret
        | Token::Ampersand
        | Token::Pipe
        | Token::ShiftLeft
        | Token::ShiftRight
        | Token::DoubleColon
        | Token::Arrow
        | Token::LongArrow
        | Token::Tilde
        | Token::ExclamationMark => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(terms: usize, op: &str) -> String {
        vec!["1"; terms].join(op)
    }

    #[test]
    fn a_chain_is_as_deep_as_it_is_long() {
        let depth = |sql: &str| {
            deepest(
                &Tokenizer::new(&GenericDialect {}, sql)
                    .tokenize()
                    .expect("tokens"),
            )
        };
        assert_eq!(depth("SELECT 1"), 0);
        assert_eq!(depth(&format!("SELECT {}", chain(10, "+"))), 9);
        assert_eq!(depth("SELECT ((((1))))"), 4);
        assert_eq!(depth("SELECT f(g(h(1 + 2)))"), 4);
        // Commas separate expressions: a long list is shallow.
        let list = (0..5000)
            .map(|i| format!("'{i}'"))
            .collect::<Vec<_>>()
            .join(", ");
        // (`*` counts as an operator: the estimate is an upper bound.)
        assert_eq!(depth(&format!("SELECT * FROM t WHERE v IN ({list})")), 3);
        let items = vec!["a + 1"; 3000].join(", ");
        assert_eq!(depth(&format!("SELECT {items} FROM t")), 1);
        // Statements are measured one by one.
        assert_eq!(depth("SELECT 1 + 1; SELECT 2 + 2"), 1);
    }

    #[test]
    fn deep_statements_are_refused_by_name_and_shallow_ones_pass() {
        let or_list = (0..2000)
            .map(|i| format!("v = '{i}'"))
            .collect::<Vec<_>>()
            .join(" OR ");
        for sql in [
            format!("SELECT {}", chain(2000, "+")),
            format!("SELECT * FROM t WHERE {or_list}"),
            format!("SELECT {}1{}", "(".repeat(1500), ")".repeat(1500)),
        ] {
            let err = check_expression_depth(&sql)
                .expect_err("refused")
                .strip_backtrace();
            assert!(
                err.starts_with("Error during planning: expression nested too deeply: ")
                    && err.contains("levels, at most 1000"),
                "{err}"
            );
        }
        assert!(check_expression_depth(&format!("SELECT {}", chain(900, "+"))).is_ok());
        assert!(check_expression_depth("SELECT 'unterminated").is_ok());
    }
}
