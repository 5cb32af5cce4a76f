//! The grammar of column lists inside string arguments: `qi => 'age, sex:sex_h'` and
//! `sensitive => 'disease'`.
//!
//! ```text
//! list  := item ( ',' item )*          empty items are skipped
//! item  := name [ ':' name ]           column, then its hierarchy table (qi only)
//! name  := "..." | plain               spaces around a name are ignored
//! plain := any text without , : "
//! ```
//!
//! A name in double quotes is taken exactly as written (letter case and spaces kept) and
//! may contain `,` and `:`; a double quote inside it is written twice. For example,
//! `qi => '"a:b":h_ab, "x,y"'` names the columns `a:b` (hierarchy table `h_ab`) and `x,y`
//! (its default hierarchy table).

use datafusion::common::{plan_err, Result};

/// A name as written in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListName {
    /// The name (quotes removed).
    pub text: String,
    /// Whether it was written in double quotes (then it matches exactly).
    pub quoted: bool,
}

/// One item of a list: a column and, after `:`, a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListItem {
    /// The column.
    pub column: ListName,
    /// The table after `:`, if the item has a `:`. `Some` with an empty text when nothing
    /// follows the `:`.
    pub table: Option<ListName>,
    /// The item as written (for error messages).
    pub written: String,
}

/// Parses a list argument named `param`. With `tables`, an item may name a table after
/// `:`; without, `:` is an ordinary character of a plain name.
pub fn parse_list(param: &str, text: &str, tables: bool) -> Result<Vec<ListItem>> {
    let chars: Vec<char> = text.chars().collect();
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        let start = i;
        let column = parse_name(param, text, &chars, &mut i, tables)?;
        let mut table = None;
        if tables && chars.get(i) == Some(&':') {
            i += 1;
            table = Some(parse_name(param, text, &chars, &mut i, true)?);
        }
        let written: String = chars[start..i]
            .iter()
            .collect::<String>()
            .trim()
            .to_string();
        match chars.get(i) {
            None | Some(',') => {}
            Some(c) => {
                return plan_err!(
                    "argument '{param}': unexpected '{c}' after '{written}' in '{text}'; separate names with ',' and write a name containing ',', ':' or '\"' in double quotes, e.g. '\"a:b\"'"
                )
            }
        }
        if !column.text.is_empty() || column.quoted || table.is_some() {
            items.push(ListItem {
                column,
                table,
                written,
            });
        }
        if i >= chars.len() {
            break;
        }
        i += 1; // the ','
    }
    Ok(items)
}

/// Reads one name at `chars[*i..]`, stopping before `,` (and `:` with `stop_at_colon`).
fn parse_name(
    param: &str,
    text: &str,
    chars: &[char],
    i: &mut usize,
    stop_at_colon: bool,
) -> Result<ListName> {
    while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
        *i += 1;
    }
    if chars.get(*i) == Some(&'"') {
        *i += 1;
        let mut name = String::new();
        loop {
            match chars.get(*i) {
                None => {
                    return plan_err!(
                        "argument '{param}': the double quote opened in '{text}' is not closed; write a double quote inside a quoted name twice"
                    )
                }
                Some('"') if chars.get(*i + 1) == Some(&'"') => {
                    name.push('"');
                    *i += 2;
                }
                Some('"') => {
                    *i += 1;
                    break;
                }
                Some(&c) => {
                    name.push(c);
                    *i += 1;
                }
            }
        }
        while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
            *i += 1;
        }
        return Ok(ListName {
            text: name,
            quoted: true,
        });
    }
    let mut name = String::new();
    while let Some(&c) = chars.get(*i) {
        if c == ',' || (stop_at_colon && c == ':') {
            break;
        }
        if c == '"' {
            return plan_err!(
                "argument '{param}': a double quote may only start a quoted name, got '{text}'"
            );
        }
        name.push(c);
        *i += 1;
    }
    Ok(ListName {
        text: name.trim().to_string(),
        quoted: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str, tables: bool) -> Vec<(String, Option<String>)> {
        parse_list("qi", text, tables)
            .unwrap()
            .into_iter()
            .map(|i| (i.column.text, i.table.map(|t| t.text)))
            .collect()
    }

    fn pair(c: &str, t: Option<&str>) -> (String, Option<String>) {
        (c.to_string(), t.map(str::to_string))
    }

    #[test]
    fn plain_and_quoted_names() {
        assert_eq!(
            names(" age , sex:sex_h,, ", true),
            vec![pair("age", None), pair("sex", Some("sex_h"))]
        );
        assert_eq!(
            names(r#""a:b":hier, c"#, true),
            vec![pair("a:b", Some("hier")), pair("c", None)]
        );
        assert_eq!(
            names(r#""x,y" : "my ""h""" , "Sex""#, true),
            vec![pair("x,y", Some("my \"h\"")), pair("Sex", None)]
        );
        // Without tables, ':' belongs to a plain name.
        assert_eq!(names("a:b", false), vec![pair("a:b", None)]);
        assert_eq!(names("age:", true), vec![pair("age", Some(""))]);
        assert!(names(" , ", true).is_empty());
        let quoted = parse_list("qi", r#""Age""#, true).unwrap();
        assert!(quoted[0].column.quoted);
    }

    #[test]
    fn malformed_lists_are_errors() {
        let err = |t: &str| parse_list("qi", t, true).unwrap_err().to_string();
        assert!(
            err(r#""a:b"#).contains("is not closed"),
            "{}",
            err(r#""a:b"#)
        );
        assert!(err(r#"a"b"#).contains("may only start a quoted name"));
        assert!(err(r#""a" b"#).contains("unexpected 'b' after '\"a\"'"));
        assert!(err("a:b:c").contains("unexpected ':' after 'a:b'"));
    }
}
