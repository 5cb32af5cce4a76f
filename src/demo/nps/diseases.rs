//! The disease codes of the demo data and their groups, kept as data in
//! `disease_groups.csv` and `diseases.csv` (compiled in) and parsed once.
//!
//! Both files are `;`-separated with a header line.
//!
//! * `disease_groups.csv`, one line per group: `group` (a name), `share` (relative share
//!   of hospital stays), `age_1_14` … `age_80_plus` (relative frequency per age band, in
//!   percent), `surgery_permille` (probability of surgery for codes not marked surgical),
//!   `los_profile` (base stay profile, 0 = shortest … 4 = longest), `sexes` (`both`,
//!   `male` or `female`), `stroke` (`true` for the stroke codes I60–I69: non-planted
//!   records with these codes always have surgery) and a `description`.
//! * `diseases.csv`, one line per ICD-10 code: `code` (one letter and three digits),
//!   `group` (a name from `disease_groups.csv`) and `surgical` (`true` for codes usually
//!   treated by an operation: cataract, appendicitis, gallstones, hernia, fractures, joint
//!   replacement, resectable cancers, caesarean section, ...). Within a group the codes
//!   are listed most frequent first.

use std::collections::HashSet;
use std::sync::LazyLock;

use datafusion::arrow::error::ArrowError;

const GROUPS_CSV: &str = include_str!("disease_groups.csv");
const DISEASES_CSV: &str = include_str!("diseases.csv");

const GROUPS_HEADER: &str = "group;share;age_1_14;age_15_39;age_40_64;age_65_79;age_80_plus;\
                             surgery_permille;los_profile;sexes;stroke;description";
const DISEASES_HEADER: &str = "code;group;surgical";

/// Which sexes a disease group applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sexes {
    Both,
    Male,
    Female,
}

/// A group of disease codes with shared behaviour.
#[derive(Debug)]
pub(super) struct DiseaseGroup {
    /// The group's name (`circulatory`, `injury`, ...).
    pub(super) name: &'static str,
    /// Codes, most frequent first, each with whether it is usually treated by an
    /// operation.
    pub(super) codes: Vec<(&'static str, bool)>,
    /// Relative share of hospital stays.
    pub(super) share: u64,
    /// Relative frequency per age band (1–14, 15–39, 40–64, 65–79, 80+), in percent.
    pub(super) age_mult: [u64; 5],
    /// Probability of surgery for codes not marked surgical, per mille.
    pub(super) surgery_permille: u32,
    /// Base stay profile, an index into the stay profiles (0 = shortest, 4 = longest).
    pub(super) los_profile: usize,
    /// Sexes the codes apply to.
    pub(super) sexes: Sexes,
    /// Stroke codes (I60–I69): non-planted records with these codes always have surgery.
    pub(super) stroke: bool,
}

/// The disease groups, in file order, parsed on first use.
///
/// # Errors
///
/// An [`ArrowError::ParseError`] naming the file and line if the compiled-in data is
/// malformed (the tests rule this out).
pub(super) fn disease_groups() -> Result<&'static [DiseaseGroup], ArrowError> {
    static GROUPS: LazyLock<Result<Vec<DiseaseGroup>, String>> =
        LazyLock::new(|| parse(GROUPS_CSV, DISEASES_CSV));
    GROUPS
        .as_deref()
        .map_err(|e| ArrowError::ParseError(format!("NPS disease data: {e}")))
}

/// The data lines of a `;`-separated file after checking its header, with their line
/// numbers and fields.
fn lines<'a>(
    file: &'static str,
    text: &'a str,
    header: &str,
    columns: usize,
) -> Result<Vec<(usize, Vec<&'a str>)>, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, h)) if h == header => {}
        _ => return Err(format!("{file}: the header must be `{header}`")),
    }
    lines
        .filter(|(_, line)| !line.is_empty())
        .map(|(i, line)| {
            let fields: Vec<&str> = line.split(';').collect();
            if fields.len() == columns {
                Ok((i + 1, fields))
            } else {
                Err(format!(
                    "{file} line {}: {} fields, expected {columns}",
                    i + 1,
                    fields.len()
                ))
            }
        })
        .collect()
}

fn number<T: std::str::FromStr>(file: &str, line: usize, s: &str) -> Result<T, String> {
    s.parse()
        .map_err(|_| format!("{file} line {line}: `{s}` is not a valid number"))
}

fn flag(file: &str, line: usize, s: &str) -> Result<bool, String> {
    match s {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!(
            "{file} line {line}: `{s}` is neither `true` nor `false`"
        )),
    }
}

/// Parses the two files into groups, with every code in its group in file order.
fn parse(
    groups_csv: &'static str,
    diseases_csv: &'static str,
) -> Result<Vec<DiseaseGroup>, String> {
    const GROUPS_FILE: &str = "disease_groups.csv";
    const DISEASES_FILE: &str = "diseases.csv";
    let mut names = Vec::new();
    let mut groups = Vec::new();
    for (line, f) in lines(GROUPS_FILE, groups_csv, GROUPS_HEADER, 12)? {
        if names.contains(&f[0]) {
            return Err(format!(
                "{GROUPS_FILE} line {line}: group {} listed twice",
                f[0]
            ));
        }
        let mut age_mult = [0u64; 5];
        for (slot, s) in age_mult.iter_mut().zip(&f[2..7]) {
            *slot = number(GROUPS_FILE, line, s)?;
        }
        let los_profile = number(GROUPS_FILE, line, f[8])?;
        if los_profile > 4 {
            return Err(format!(
                "{GROUPS_FILE} line {line}: los_profile {los_profile} is not between 0 and 4"
            ));
        }
        let sexes = match f[9] {
            "both" => Sexes::Both,
            "male" => Sexes::Male,
            "female" => Sexes::Female,
            other => {
                return Err(format!(
                    "{GROUPS_FILE} line {line}: sexes `{other}` is not both, male or female"
                ))
            }
        };
        names.push(f[0]);
        groups.push(DiseaseGroup {
            name: f[0],
            codes: Vec::new(),
            share: number(GROUPS_FILE, line, f[1])?,
            age_mult,
            surgery_permille: number(GROUPS_FILE, line, f[7])?,
            los_profile,
            sexes,
            stroke: flag(GROUPS_FILE, line, f[10])?,
        });
    }
    let mut seen = HashSet::new();
    for (line, f) in lines(DISEASES_FILE, diseases_csv, DISEASES_HEADER, 3)? {
        let code = f[0];
        let b = code.as_bytes();
        if !(b.len() == 4 && b[0].is_ascii_uppercase() && b[1..].iter().all(u8::is_ascii_digit)) {
            return Err(format!(
                "{DISEASES_FILE} line {line}: `{code}` is not one letter and three digits"
            ));
        }
        if !seen.insert(code) {
            return Err(format!(
                "{DISEASES_FILE} line {line}: code {code} listed twice"
            ));
        }
        let Some(g) = names.iter().position(|n| *n == f[1]) else {
            return Err(format!(
                "{DISEASES_FILE} line {line}: unknown group {}",
                f[1]
            ));
        };
        if code.starts_with("I6") != groups[g].stroke {
            return Err(format!(
                "{DISEASES_FILE} line {line}: code {code} must be in a stroke group exactly \
                 when it starts with I6"
            ));
        }
        groups[g]
            .codes
            .push((code, flag(DISEASES_FILE, line, f[2])?));
    }
    if let Some(n) = groups.iter().position(|g| g.codes.is_empty()) {
        return Err(format!("{GROUPS_FILE}: group {} has no codes", names[n]));
    }
    if !groups.iter().any(|g| g.stroke) {
        return Err(format!("{GROUPS_FILE}: no stroke group"));
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_malformed_data() {
        let groups = format!(
            "{GROUPS_HEADER}\na;1;1;1;1;1;1;0;0;both;false;A\ns;1;1;1;1;1;1;0;0;both;true;S\n"
        );
        let groups: &'static str = Box::leak(groups.into_boxed_str());
        let diseases = |body: &str| -> &'static str {
            Box::leak(format!("{DISEASES_HEADER}\n{body}").into_boxed_str())
        };
        let ok = parse(groups, diseases("A001;a;false\nI639;s;false\n")).expect("valid");
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].codes, [("A001", false)]);
        for (body, message) in [
            ("A001;a;false\n", "group s has no codes"),
            ("A001;a;false\nI639;s;no\n", "neither `true` nor `false`"),
            ("A001;b;false\nI639;s;false\n", "unknown group b"),
            (
                "A001;a;false\nA001;a;false\nI639;s;false\n",
                "code A001 listed twice",
            ),
            (
                "A01;a;false\nI639;s;false\n",
                "not one letter and three digits",
            ),
            ("I631;a;false\nI639;s;false\n", "stroke group exactly"),
            ("A001;a\nI639;s;false\n", "2 fields, expected 3"),
        ] {
            let err = parse(groups, diseases(body)).expect_err(body);
            assert!(err.contains(message), "{body}: {err}");
        }
        let err = parse("group;share\n", diseases("")).expect_err("bad header");
        assert!(err.contains("the header must be"), "{err}");
    }
}
