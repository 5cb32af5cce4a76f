//! Files sent from the steward's browser: an ARX hierarchy file (one row per value,
//! `value;level 1;…;*`, no header) and a saved recipe. A hierarchy's rows are kept in the
//! project and written into the recipe as SQL, so the recipe replays without the file.

use axum::extract::Multipart;

use super::files::sniff_line;
use super::project::{ident, literal};
use super::steps::Fields;

/// The largest file the studio takes (a recipe holds its uploaded hierarchies twice).
pub const MAX_BYTES: usize = 4 << 20;

/// The most rows (values) an uploaded hierarchy may have.
pub const MAX_ROWS: usize = 20_000;

/// The most columns (the value and its levels) an uploaded hierarchy may have.
pub const MAX_COLUMNS: usize = 33;

/// A file of a form: its name on the steward's machine and its bytes.
#[derive(Debug, Clone, Default)]
pub struct Upload {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A multipart form's text fields and its file (the first non-empty one), each bounded by
/// [`MAX_BYTES`].
pub async fn read_form(mut multipart: Multipart) -> Result<(Fields, Option<Upload>), String> {
    let mut fields = Fields::new();
    let mut upload = None;
    let too_large = || format!("the file is larger than {} MiB", MAX_BYTES >> 20);
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(too_large())
            }
            Err(e) => return Err(format!("the form could not be read: {}", e.body_text())),
        };
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        let bytes = match field.bytes().await {
            Ok(bytes) => bytes,
            Err(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(too_large())
            }
            Err(e) => return Err(format!("the form could not be read: {}", e.body_text())),
        };
        if bytes.len() > MAX_BYTES {
            return Err(too_large());
        }
        match file_name {
            Some(file) if !bytes.is_empty() && upload.is_none() => {
                upload = Some(Upload {
                    name: file,
                    bytes: bytes.to_vec(),
                })
            }
            Some(_) => {}
            None => {
                fields.insert(name, String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    Ok((fields, upload))
}

/// The rows of an ARX hierarchy file: every row the same number of columns (at least two),
/// a value once, no empty value; the delimiter is the most frequent of `;`, `,`, tab and `|`
/// on the first line.
pub fn hierarchy_rows(upload: &Upload) -> Result<Vec<Vec<String>>, String> {
    let text = std::str::from_utf8(&upload.bytes)
        .map_err(|_| format!("{}: not UTF-8 text", upload.name))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (delimiter, _) = sniff_line(text.lines().next().unwrap_or_default());
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter as u8)
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (line, record) in reader.records().enumerate() {
        let line = line + 1;
        let record = record.map_err(|e| format!("{}, line {line}: {e}", upload.name))?;
        let row: Vec<String> = record.iter().map(str::to_string).collect();
        if row.iter().all(String::is_empty) {
            continue;
        }
        if rows.len() == MAX_ROWS {
            return Err(format!(
                "{}: more than {MAX_ROWS} values; build a hierarchy this large with SQL",
                upload.name
            ));
        }
        let width = rows.first().map_or(row.len(), Vec::len);
        if row.len() < 2 || row.len() > MAX_COLUMNS {
            return Err(format!(
                "{}, line {line}: {} columns; a hierarchy has a value and 1 to {} levels",
                upload.name,
                row.len(),
                MAX_COLUMNS - 1
            ));
        }
        if row.len() != width {
            return Err(format!(
                "{}, line {line}: {} columns where the first line has {width}",
                upload.name,
                row.len()
            ));
        }
        if row[0].is_empty() {
            return Err(format!("{}, line {line}: the value is empty", upload.name));
        }
        if !seen.insert(row[0].clone()) {
            return Err(format!(
                "{}, line {line}: the value '{}' appears twice",
                upload.name, row[0]
            ));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(format!("{}: no rows", upload.name));
    }
    Ok(rows)
}

/// The statement that makes table `table` of an uploaded hierarchy's rows: columns `value`,
/// `level_1`, … as text.
pub fn create_table(table: &str, rows: &[Vec<String>]) -> String {
    let width = rows.first().map_or(0, Vec::len);
    let columns: Vec<String> = (0..width)
        .map(|i| {
            let name = if i == 0 {
                "value".to_string()
            } else {
                format!("level_{i}")
            };
            format!("column{} AS {}", i + 1, ident(&name))
        })
        .collect();
    let values: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().map(|cell| literal(cell)).collect();
            format!("({})", cells.join(", "))
        })
        .collect();
    format!(
        "CREATE TABLE {} AS SELECT {} FROM (VALUES {})",
        ident(table),
        columns.join(", "),
        values.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(text: &str) -> Upload {
        Upload {
            name: "h.csv".into(),
            bytes: text.as_bytes().to_vec(),
        }
    }

    #[test]
    fn an_arx_file_is_read_with_its_delimiter_and_checked() {
        let rows = hierarchy_rows(&upload("\u{feff}Male;*\nFemale;*\n\n\"a;b\";*\n"))
            .expect("three values");
        assert_eq!(
            rows,
            [["Male", "*"], ["Female", "*"], ["a;b", "*"]].map(|r| r.map(String::from).to_vec())
        );
        let rows = hierarchy_rows(&upload("17,15-19,*\n18,15-19,*\n")).expect("commas");
        assert_eq!(rows[1], ["18", "15-19", "*"]);
        for (text, error) in [
            (
                "Male\n",
                "h.csv, line 1: 1 columns; a hierarchy has a value and 1 to 32 levels",
            ),
            (
                "a;b;*\nc;*\n",
                "h.csv, line 2: 2 columns where the first line has 3",
            ),
            ("a;*\na;*\n", "h.csv, line 2: the value 'a' appears twice"),
            (";*\n", "h.csv, line 1: the value is empty"),
            ("", "h.csv: no rows"),
        ] {
            assert_eq!(hierarchy_rows(&upload(text)).err().as_deref(), Some(error));
        }
        let many: String = (0..=MAX_ROWS).map(|i| format!("{i};*\n")).collect();
        assert!(hierarchy_rows(&upload(&many))
            .err()
            .is_some_and(|e| e.contains("more than 20000 values")));
        let binary = Upload {
            name: "h.csv".into(),
            bytes: vec![0xff, 0xfe, 0x00],
        };
        assert_eq!(
            hierarchy_rows(&binary).err().as_deref(),
            Some("h.csv: not UTF-8 text")
        );
    }

    #[test]
    fn the_table_statement_quotes_every_cell() {
        let rows = vec![
            vec!["it's".to_string(), "*".to_string()],
            vec!["b".to_string(), "*".to_string()],
        ];
        assert_eq!(
            create_table("h", &rows),
            "CREATE TABLE \"h\" AS SELECT column1 AS \"value\", column2 AS \"level_1\" FROM (VALUES ('it''s', '*'), ('b', '*'))"
        );
    }
}
