//! The grammar of names inside string arguments, for every argument that names columns:
//! column lists (`qi => 'age, sex:sex_h'`, `sensitive => 'disease'`) and `column=value`
//! lists (`levels`, `min_levels`, `max_levels => 'age=1'`, `qi_weights => 'age=2'`).
//!
//! ```text
//! list  := item ( ',' item )*          empty items are skipped
//! item  := name [ ':' name ]           column, then its hierarchy table (qi, sensitive)
//! pairs := pair ( ',' pair )*          empty items are skipped
//! pair  := name '=' value              column, then its level or weight
//! value := any text without ,          spaces around it are ignored
//! name  := "..." | plain               spaces around a name are ignored
//! plain := any text without , " and the character that ends the name (':' in a list
//!          item with a table, '=' in a pair)
//! ```
//!
//! A name in double quotes is taken exactly as written (letter case and spaces kept) and
//! may contain `,`, `:` and `=`; a double quote inside it is written twice. For example,
//! `qi => '"a:b":h_ab, "x,y"'` names the columns `a:b` (hierarchy table `h_ab`) and `x,y`
//! (its default hierarchy table), and `max_levels => '"x,y"=1'` bounds the level of `x,y`.

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
    let stop = if tables { Some(':') } else { None };
    let syntax = |message: String| plan_err!("{message}");
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        let start = i;
        let column = match parse_name(param, text, &chars, &mut i, stop) {
            Ok(name) => name,
            Err(message) => return syntax(message),
        };
        let mut table = None;
        if tables && chars.get(i) == Some(&':') {
            i += 1;
            table = match parse_name(param, text, &chars, &mut i, stop) {
                Ok(name) => Some(name),
                Err(message) => return syntax(message),
            };
        }
        let written = written(&chars[start..i]);
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

/// One item of a `column=value` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The column.
    pub name: ListName,
    /// The text after `=`, trimmed.
    pub value: String,
}

/// Why a `column=value` list could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairsError {
    /// A quoting error or a stray character; the whole message, naming the argument.
    Syntax(String),
    /// An item without `=` (as written, trimmed); the caller says what it expected.
    NoEquals(String),
}

/// Parses a `column=value` list given as argument `param` (`levels`, `min_levels`,
/// `max_levels`, `qi_weights`): names as in [`parse_list`], each followed by `=` and a
/// value. Empty items are skipped; checking the values and that there is at least one pair
/// is the caller's.
pub fn parse_pairs(param: &str, text: &str) -> Result<Vec<Pair>, PairsError> {
    let chars: Vec<char> = text.chars().collect();
    let mut pairs = Vec::new();
    let mut i = 0;
    loop {
        let start = i;
        let name =
            parse_name(param, text, &chars, &mut i, Some('=')).map_err(PairsError::Syntax)?;
        match chars.get(i) {
            Some('=') => {
                i += 1;
                let from = i;
                while chars.get(i).is_some_and(|&c| c != ',') {
                    i += 1;
                }
                pairs.push(Pair {
                    name,
                    value: written(&chars[from..i]),
                });
            }
            None | Some(',') => {
                if !name.text.is_empty() || name.quoted {
                    return Err(PairsError::NoEquals(written(&chars[start..i])));
                }
            }
            Some(c) => {
                return Err(PairsError::Syntax(format!(
                    "argument '{param}': unexpected '{c}' after '{}' in '{text}'; write 'column=value' pairs separated by ',', and a name containing ',', '=' or '\"' in double quotes, e.g. '\"a,b\"=1'",
                    written(&chars[start..i])
                )))
            }
        }
        if i >= chars.len() {
            break;
        }
        i += 1; // the ','
    }
    Ok(pairs)
}

/// `name` as a list or pair takes it: as it is when it reads back unchanged as a plain
/// name, else in double quotes (a double quote inside written twice).
pub fn written_name(name: &str) -> String {
    let plain = !name.is_empty() && name.trim() == name && !name.contains([',', ':', '=', '"']);
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// `chars` as text, trimmed (an item as written, for messages).
fn written(chars: &[char]) -> String {
    chars.iter().collect::<String>().trim().to_string()
}

/// Reads one name at `chars[*i..]`, stopping before `,` (and before `stop`). The error is
/// the whole message.
fn parse_name(
    param: &str,
    text: &str,
    chars: &[char],
    i: &mut usize,
    stop: Option<char>,
) -> std::result::Result<ListName, String> {
    while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
        *i += 1;
    }
    if chars.get(*i) == Some(&'"') {
        *i += 1;
        let mut name = String::new();
        loop {
            match chars.get(*i) {
                None => {
                    return Err(format!(
                        "argument '{param}': the double quote opened in '{text}' is not closed; write a double quote inside a quoted name twice"
                    ))
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
        if c == ',' || Some(c) == stop {
            break;
        }
        if c == '"' {
            return Err(format!(
                "argument '{param}': a double quote may only start a quoted name, got '{text}'"
            ));
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
    fn pairs_take_names_as_lists_do() {
        let pairs = |t: &str| {
            parse_pairs("max_levels", t)
                .unwrap()
                .into_iter()
                .map(|p| (p.name.text, p.name.quoted, p.value))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            pairs(" age = 1 ,, sex=0 "),
            vec![
                ("age".to_string(), false, "1".to_string()),
                ("sex".to_string(), false, "0".to_string())
            ]
        );
        assert_eq!(
            pairs(r#""c,d"=0, "a=b" = 2, "Say ""hi"""=1"#),
            vec![
                ("c,d".to_string(), true, "0".to_string()),
                ("a=b".to_string(), true, "2".to_string()),
                ("Say \"hi\"".to_string(), true, "1".to_string())
            ]
        );
        assert_eq!(pairs("a:b=1")[0].0, "a:b");
        assert!(pairs(" , ").is_empty());
        let err = |t: &str| parse_pairs("max_levels", t).unwrap_err();
        assert_eq!(err("age"), PairsError::NoEquals("age".into()));
        assert_eq!(err(r#""c,d""#), PairsError::NoEquals(r#""c,d""#.into()));
        let PairsError::Syntax(message) = err(r#""c,d=0"#) else {
            panic!("an unclosed quote is a syntax error")
        };
        assert!(
            message.contains("argument 'max_levels': the double quote opened"),
            "{message}"
        );
        let PairsError::Syntax(message) = err(r#""c" d=0"#) else {
            panic!("a stray name is a syntax error")
        };
        assert!(
            message.contains("unexpected 'd' after '\"c\"'"),
            "{message}"
        );
    }

    #[test]
    fn written_names_read_back() {
        for name in ["age", "c,d", "a:b", "a=b", " x", "say \"hi\"", ""] {
            let text = format!("{}=1", written_name(name));
            let back = parse_pairs("levels", &text).unwrap();
            assert_eq!(back[0].name.text, name, "{text}");
        }
        assert_eq!(written_name("age"), "age");
        assert_eq!(written_name("c,d"), "\"c,d\"");
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
