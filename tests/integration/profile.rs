//! `anonymize_profile` on generated tables whose true roles are known: 40 tables of 300
//! rows, each with 12 columns drawn from templates of direct identifiers (by name, by value
//! pattern only, by uniqueness only), quasi-identifiers (by name, by type, by value
//! pattern), sensitive and other columns, including hard negatives (a drug's name, a
//! ward's id, unique measurements). The precision and recall of "direct identifier" must
//! be at least 0.95 and those of "quasi-identifier" at least 0.85; the test prints them.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, AsArray, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{register_with, RegisterOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ROWS: usize = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Truth {
    Direct,
    Quasi,
    Sensitive,
    Other,
}

impl Truth {
    fn name(self) -> &'static str {
        match self {
            Truth::Direct => "direct_identifier",
            Truth::Quasi => "quasi_identifier",
            Truth::Sensitive => "sensitive",
            Truth::Other => "other",
        }
    }
}

/// How a template's values are made.
#[derive(Debug, Clone, Copy)]
enum Values {
    /// A unique integer per row.
    UniqueInt,
    /// A unique code like `A12-4471` per row.
    UniqueCode,
    /// A person's name, from 40 first and 40 last names.
    PersonName,
    Email,
    Phone,
    Ssn,
    Ip,
    Url,
    Vin,
    Mac,
    /// An integer in 0..n.
    SmallInt(i64),
    /// One of the words.
    Word(&'static [&'static str]),
    /// One of 30 ZIP codes.
    Zip,
    /// A DATE within 10 years.
    Date,
    /// A date written as text.
    DateText,
    /// A measurement (unique floats).
    Float,
}

const FIRST: &[&str] = &[
    "Ann", "Bo", "Cy", "Di", "Ed", "Fa", "Gil", "Hu", "Ida", "Jo", "Kai", "Lu", "Mo", "Ned", "Ola",
    "Pia", "Quin", "Ria", "Sam", "Tea", "Uma", "Vic", "Wes", "Xia", "Yul", "Zoe", "Abe", "Bea",
    "Cal", "Dot", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jay", "Kit", "Lea", "Max", "Noa",
];
const LAST: &[&str] = &[
    "Smith", "Jones", "Brown", "Meier", "Rossi", "Dubois", "Novak", "Kim", "Lee", "Khan", "Silva",
    "Ito", "Berg", "Holm", "Roth", "Falk", "Wolf", "Fox", "Stone", "Hill", "Ward", "Reed", "Cole",
    "Lane", "Park", "Ford", "Hunt", "Moss", "Nash", "Pike", "Rose", "Shaw", "Tate", "Vance",
    "West", "York", "Zorn", "Abel", "Birk", "Cruz",
];
const DIAGNOSES: &[&str] = &[
    "I63", "I61", "J18", "E11", "C50", "F32", "K35", "N39", "S72", "A41",
];
const CITIES: &[&str] = &[
    "Bern", "Basel", "Zug", "Chur", "Sion", "Thun", "Biel", "Olten", "Aarau", "Baden",
];

/// (column names to choose from, values, truth).
const TEMPLATES: &[(&[&str], Values, Truth)] = &[
    (
        &[
            "patient_id",
            "PatientID",
            "person_id",
            "subject_id",
            "pid",
            "record_id",
        ],
        Values::UniqueInt,
        Truth::Direct,
    ),
    (
        &["mrn", "MRN", "medical_record_number", "chart_no"],
        Values::UniqueCode,
        Truth::Direct,
    ),
    (
        &[
            "patient_name",
            "PatientName",
            "full_name",
            "first_name",
            "last_name",
            "surname",
            "name",
        ],
        Values::PersonName,
        Truth::Direct,
    ),
    (
        &["email", "e_mail", "EmailAddress", "mail"],
        Values::Email,
        Truth::Direct,
    ),
    (
        &["phone", "telephone", "mobile", "PhoneNumber", "fax"],
        Values::Phone,
        Truth::Direct,
    ),
    (
        &["ssn", "SSN", "social_security_number"],
        Values::Ssn,
        Truth::Direct,
    ),
    (
        &["ip_address", "ip", "client_ip"],
        Values::Ip,
        Truth::Direct,
    ),
    (&["homepage", "website", "url"], Values::Url, Truth::Direct),
    (&["vin", "vehicle_id"], Values::Vin, Truth::Direct),
    (
        &["device_serial", "mac_address"],
        Values::Mac,
        Truth::Direct,
    ),
    (
        &[
            "account_number",
            "iban",
            "insurance_number",
            "license_no",
            "medicaid_id",
        ],
        Values::UniqueCode,
        Truth::Direct,
    ),
    // Identifiers by their values or uniqueness alone.
    (&["contact", "reach", "info"], Values::Email, Truth::Direct),
    (
        &["contact2", "callback", "notes_ref"],
        Values::Phone,
        Truth::Direct,
    ),
    (
        &["token", "ref", "client_ref", "nhs_number"],
        Values::UniqueCode,
        Truth::Direct,
    ),
    (
        &["key1", "serial_number", "code_x"],
        Values::UniqueInt,
        Truth::Direct,
    ),
    (&["sin_like", "tax_ref"], Values::Ssn, Truth::Direct),
    // Quasi-identifiers.
    (
        &["age", "AgeYears", "patient_age", "age_at_admission"],
        Values::SmallInt(100),
        Truth::Quasi,
    ),
    (
        &["sex", "gender", "Sex"],
        Values::Word(&["F", "M"]),
        Truth::Quasi,
    ),
    (
        &["zip", "zip_code", "postcode", "ZIP5"],
        Values::Zip,
        Truth::Quasi,
    ),
    (
        &[
            "birth_date",
            "dob",
            "DateOfBirth",
            "admission_date",
            "discharge_date",
            "date_of_death",
        ],
        Values::Date,
        Truth::Quasi,
    ),
    (&["seen", "first_visit", "when"], Values::Date, Truth::Quasi),
    (&["area", "region_code"], Values::Zip, Truth::Quasi),
    (
        &["admitted_on", "event_day"],
        Values::DateText,
        Truth::Quasi,
    ),
    (
        &["city", "county", "district", "town"],
        Values::Word(CITIES),
        Truth::Quasi,
    ),
    (
        &[
            "ethnicity",
            "race",
            "marital_status",
            "education",
            "occupation",
            "country",
            "religion",
        ],
        Values::Word(&["a", "b", "c", "d", "e"]),
        Truth::Quasi,
    ),
    (
        &["ward_id", "hospital_name", "year"],
        Values::SmallInt(12),
        Truth::Quasi,
    ),
    // Sensitive.
    (
        &["diagnosis", "icd10", "disease", "dx_code"],
        Values::Word(DIAGNOSES),
        Truth::Sensitive,
    ),
    (
        &["los", "length_of_stay", "salary", "income", "cost"],
        Values::SmallInt(60),
        Truth::Sensitive,
    ),
    (
        &[
            "treatment",
            "drug_name",
            "medication",
            "lab_result",
            "outcome",
        ],
        Values::Word(&["x1", "x2", "x3", "x4"]),
        Truth::Sensitive,
    ),
    // Other.
    (
        &["colour", "flag", "bed_type", "category", "priority"],
        Values::Word(&["red", "green", "blue"]),
        Truth::Other,
    ),
    (
        &["score", "rank", "batch"],
        Values::SmallInt(10),
        Truth::Other,
    ),
    (
        &["reading", "ratio", "measurement"],
        Values::Float,
        Truth::Other,
    ),
];

fn values(kind: Values, rng: &mut StdRng) -> (DataType, ArrayRef) {
    let text = |f: &mut dyn FnMut(usize, &mut StdRng) -> String, rng: &mut StdRng| -> ArrayRef {
        Arc::new(StringArray::from(
            (0..ROWS).map(|i| f(i, rng)).collect::<Vec<_>>(),
        ))
    };
    match kind {
        Values::UniqueInt => {
            let base: i64 = rng.random_range(1_000..1_000_000);
            (
                DataType::Int64,
                Arc::new(Int64Array::from(
                    (0..ROWS as i64).map(|i| base + 7 * i).collect::<Vec<_>>(),
                )),
            )
        }
        Values::UniqueCode => (
            DataType::Utf8,
            text(
                &mut |i, rng| {
                    format!(
                        "{}{:02}-{:04}",
                        (b'A' + rng.random_range(0..26u8)) as char,
                        rng.random_range(0..100),
                        i
                    )
                },
                rng,
            ),
        ),
        Values::PersonName => (
            DataType::Utf8,
            text(
                &mut |_, rng| {
                    format!(
                        "{} {}",
                        FIRST[rng.random_range(0..FIRST.len())],
                        LAST[rng.random_range(0..LAST.len())]
                    )
                },
                rng,
            ),
        ),
        Values::Email => (
            DataType::Utf8,
            text(
                &mut |i, rng| {
                    format!(
                        "{}.{}{i}@example{}.org",
                        FIRST[rng.random_range(0..FIRST.len())].to_lowercase(),
                        LAST[rng.random_range(0..LAST.len())].to_lowercase(),
                        rng.random_range(0..5)
                    )
                },
                rng,
            ),
        ),
        Values::Phone => (
            DataType::Utf8,
            text(
                &mut |_, rng| {
                    format!(
                        "+41 {} {:03} {:02} {:02}",
                        rng.random_range(21..80),
                        rng.random_range(0..1000),
                        rng.random_range(0..100),
                        rng.random_range(0..100)
                    )
                },
                rng,
            ),
        ),
        Values::Ssn => (
            DataType::Utf8,
            text(
                &mut |_, rng| {
                    format!(
                        "{:03}-{:02}-{:04}",
                        rng.random_range(1..900),
                        rng.random_range(1..100),
                        rng.random_range(1..10000)
                    )
                },
                rng,
            ),
        ),
        Values::Ip => (
            DataType::Utf8,
            text(
                &mut |_, rng| {
                    format!(
                        "10.{}.{}.{}",
                        rng.random_range(0..256),
                        rng.random_range(0..256),
                        rng.random_range(1..255)
                    )
                },
                rng,
            ),
        ),
        Values::Url => (
            DataType::Utf8,
            text(&mut |i, _| format!("https://site{i}.example.org/me"), rng),
        ),
        Values::Vin => (
            DataType::Utf8,
            text(
                &mut |i, rng| format!("1HGCM{:05}A{:06}", rng.random_range(0..100000), i),
                rng,
            ),
        ),
        Values::Mac => (
            DataType::Utf8,
            text(
                &mut |_, rng| {
                    (0..6)
                        .map(|_| format!("{:02x}", rng.random_range(0..256)))
                        .collect::<Vec<_>>()
                        .join(":")
                },
                rng,
            ),
        ),
        Values::SmallInt(n) => (
            DataType::Int64,
            Arc::new(Int64Array::from(
                (0..ROWS)
                    .map(|_| rng.random_range(0..n))
                    .collect::<Vec<_>>(),
            )),
        ),
        Values::Word(words) => (
            DataType::Utf8,
            text(
                &mut |_, rng| words[rng.random_range(0..words.len())].to_string(),
                rng,
            ),
        ),
        Values::Zip => {
            let zips: Vec<String> = (0..30)
                .map(|_| format!("{:05}", rng.random_range(1000..99999)))
                .collect();
            (
                DataType::Utf8,
                text(
                    &mut |_, rng| zips[rng.random_range(0..zips.len())].clone(),
                    rng,
                ),
            )
        }
        Values::Date => (
            DataType::Date32,
            Arc::new(Date32Array::from(
                (0..ROWS)
                    .map(|_| rng.random_range(14_000..17_650))
                    .collect::<Vec<_>>(),
            )),
        ),
        Values::DateText => (
            DataType::Utf8,
            text(
                &mut |_, rng| {
                    format!(
                        "{:02}/{:02}/20{:02}",
                        rng.random_range(1..29),
                        rng.random_range(1..13),
                        rng.random_range(10..20)
                    )
                },
                rng,
            ),
        ),
        Values::Float => (
            DataType::Float64,
            Arc::new(Float64Array::from(
                (0..ROWS)
                    .map(|_| rng.random_range(0.0..100.0))
                    .collect::<Vec<_>>(),
            )),
        ),
    }
}

#[tokio::test]
async fn suggested_roles_meet_their_precision_and_recall() -> Result<()> {
    let ctx = SessionContext::new();
    register_with(&ctx, RegisterOptions::owner())?;
    let mut rng = StdRng::seed_from_u64(2026);
    // (truth, suggested) per column.
    let mut outcomes: Vec<(Truth, String, String)> = Vec::new();
    for t in 0..40 {
        let mut fields = Vec::new();
        let mut arrays = Vec::new();
        let mut truths = BTreeMap::new();
        while fields.len() < 12 {
            let (names, kind, truth) = TEMPLATES[rng.random_range(0..TEMPLATES.len())];
            let name = names[rng.random_range(0..names.len())];
            if truths.contains_key(name) {
                continue;
            }
            let (data_type, array) = values(kind, &mut rng);
            fields.push(Field::new(name, data_type, false));
            arrays.push(array);
            truths.insert(name.to_string(), truth);
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
        let table = format!("generated_{t}");
        ctx.register_table(
            &table,
            Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]])?),
        )?;
        let profile = ctx
            .sql(&format!(
                "SELECT column_name, role, reason FROM anonymize_profile('{table}')"
            ))
            .await?
            .collect()
            .await?;
        for batch in profile {
            for r in 0..batch.num_rows() {
                let cell = |i: usize| batch.column(i).as_string::<i32>().value(r).to_string();
                outcomes.push((
                    truths[&cell(0)],
                    cell(1),
                    format!("{}: {}", cell(0), cell(2)),
                ));
            }
        }
    }
    assert_eq!(outcomes.len(), 480);
    let mut report = String::new();
    let mut figures = BTreeMap::new();
    for truth in [Truth::Direct, Truth::Quasi, Truth::Sensitive] {
        let tp = outcomes
            .iter()
            .filter(|(t, s, _)| *t == truth && s == truth.name())
            .count();
        let suggested = outcomes
            .iter()
            .filter(|(_, s, _)| s == truth.name())
            .count();
        let actual = outcomes.iter().filter(|(t, _, _)| *t == truth).count();
        let precision = tp as f64 / suggested.max(1) as f64;
        let recall = tp as f64 / actual.max(1) as f64;
        report.push_str(&format!(
            "{}: precision {precision:.3} ({tp}/{suggested}), recall {recall:.3} ({tp}/{actual})\n",
            truth.name()
        ));
        figures.insert(truth, (precision, recall));
    }
    for (truth, suggested, why) in &outcomes {
        if suggested != truth.name() {
            report.push_str(&format!(
                "  {} suggested {suggested}: {why}\n",
                truth.name()
            ));
        }
    }
    println!("{report}");
    let (p, r) = figures[&Truth::Direct];
    assert!(p >= 0.95 && r >= 0.95, "{report}");
    let (p, r) = figures[&Truth::Quasi];
    assert!(p >= 0.85 && r >= 0.85, "{report}");
    Ok(())
}

/// The profile's counts are exact, and a public user cannot call it.
#[tokio::test]
async fn the_profile_counts_exactly_and_is_owner_only() -> Result<()> {
    let ctx = SessionContext::new();
    register_with(&ctx, RegisterOptions::owner())?;
    ctx.sql("CREATE TABLE p(patient_id INT, age INT, diagnosis VARCHAR) AS VALUES (1, 30, 'I63'), (2, 30, NULL), (3, 41, 'I63'), (4, NULL, 'J18')")
        .await?
        .collect()
        .await?;
    let rows = ctx
        .sql("SELECT column_name, data_type, rows, distinct_count, null_share, uniqueness, role, safe_harbor FROM anonymize_profile('p')")
        .await?
        .collect()
        .await?;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&rows)?.to_string();
    let expected = "\
+-------------+-----------+------+----------------+------------+--------------------+-------------------+-----------------------------------+
| column_name | data_type | rows | distinct_count | null_share | uniqueness         | role              | safe_harbor                       |
+-------------+-----------+------+----------------+------------+--------------------+-------------------+-----------------------------------+
| patient_id  | Int32     | 4    | 4              | 0.0        | 1.0                | direct_identifier | (R) other unique numbers or codes |
| age         | Int32     | 4    | 2              | 0.25       | 0.6666666666666666 | quasi_identifier  |                                   |
| diagnosis   | Utf8View  | 4    | 2              | 0.25       | 0.6666666666666666 | sensitive         |                                   |
+-------------+-----------+------+----------------+------------+--------------------+-------------------+-----------------------------------+";
    assert_eq!(text, expected);
    let public = datafusion_anonymize::public_session(
        &ctx,
        RegisterOptions::public(datafusion_anonymize::PublicPolicy::default(), 1.0),
    )?;
    let error = match public.sql("SELECT * FROM anonymize_profile('p')").await {
        Ok(frame) => frame
            .collect()
            .await
            .map(|_| ())
            .expect_err("refused")
            .to_string(),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("anonymize_profile"), "{error}");
    Ok(())
}

/// On the Adult data (a real table, names not written for these rules): every column the
/// anonymization literature treats as a quasi-identifier is suggested as one, and the
/// salary class as sensitive.
#[tokio::test]
async fn adult_columns_get_the_roles_the_literature_gives_them() -> Result<()> {
    let ctx = SessionContext::new();
    register_with(&ctx, RegisterOptions::owner())?;
    ctx.sql("CREATE EXTERNAL TABLE adult STORED AS CSV LOCATION 'tests/data/adult/adult.csv' OPTIONS ('format.delimiter' ';', 'format.has_header' 'true')")
        .await?
        .collect()
        .await?;
    let mut roles = BTreeMap::new();
    for batch in ctx
        .sql("SELECT column_name, role FROM anonymize_profile('adult')")
        .await?
        .collect()
        .await?
    {
        for r in 0..batch.num_rows() {
            let cell = |i: usize| batch.column(i).as_string::<i32>().value(r).to_string();
            roles.insert(cell(0), cell(1));
        }
    }
    for column in [
        "sex",
        "age",
        "race",
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "occupation",
    ] {
        assert_eq!(roles[column], "quasi_identifier", "{column}");
    }
    assert_eq!(roles["salary-class"], "sensitive");
    Ok(())
}
