//! The suggested role of a column (direct identifier, quasi-identifier, sensitive, other)
//! and the rule that fired, from its name, type, uniqueness and values. The rules follow
//! HIPAA Safe Harbor's eighteen identifier kinds (45 CFR 164.514(b)(2)): the kinds that
//! name a person by themselves are direct identifiers, geographic units and dates are
//! quasi-identifiers.

use datafusion::arrow::datatypes::DataType;

use super::patterns::ValuePattern;
use crate::hierarchy::dates::is_date_type;

/// What a column is, for a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Names a person by itself: dropped or pseudonymized.
    DirectIdentifier,
    /// Identifies in combination with other columns: generalized.
    QuasiIdentifier,
    /// What analyses are about: released as it is (or protected by ℓ/t).
    Sensitive,
    /// None of these.
    Other,
}

impl Role {
    /// The role's name in `anonymize_profile`'s output.
    pub fn name(self) -> &'static str {
        match self {
            Role::DirectIdentifier => "direct_identifier",
            Role::QuasiIdentifier => "quasi_identifier",
            Role::Sensitive => "sensitive",
            Role::Other => "other",
        }
    }
}

/// A HIPAA Safe Harbor identifier kind (the letters of 164.514(b)(2)(i)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafeHarbor {
    /// (A) Names.
    Names,
    /// (B) Geographic subdivisions smaller than a state (address, city, county, ZIP).
    Geography,
    /// (C) Dates (except the year) related to a person, and ages over 89.
    Dates,
    /// (D) Telephone numbers.
    Phone,
    /// (E) Fax numbers.
    Fax,
    /// (F) E-mail addresses.
    Email,
    /// (G) Social security numbers.
    Ssn,
    /// (H) Medical record numbers.
    MedicalRecord,
    /// (I) Health plan beneficiary numbers.
    HealthPlan,
    /// (J) Account numbers.
    Account,
    /// (K) Certificate and licence numbers.
    Licence,
    /// (L) Vehicle identifiers and serial numbers, licence plates.
    Vehicle,
    /// (M) Device identifiers and serial numbers.
    Device,
    /// (N) URLs.
    Url,
    /// (O) IP addresses.
    IpAddress,
    /// (P) Biometric identifiers.
    Biometric,
    /// (Q) Full-face photographs.
    Photo,
    /// (R) Any other unique identifying number, characteristic or code.
    OtherUnique,
}

impl SafeHarbor {
    /// `(C) dates other than the year`: the letter and the kind.
    pub fn describe(self) -> &'static str {
        match self {
            SafeHarbor::Names => "(A) names",
            SafeHarbor::Geography => "(B) geographic units smaller than a state",
            SafeHarbor::Dates => "(C) dates other than the year",
            SafeHarbor::Phone => "(D) telephone numbers",
            SafeHarbor::Fax => "(E) fax numbers",
            SafeHarbor::Email => "(F) e-mail addresses",
            SafeHarbor::Ssn => "(G) social security numbers",
            SafeHarbor::MedicalRecord => "(H) medical record numbers",
            SafeHarbor::HealthPlan => "(I) health plan beneficiary numbers",
            SafeHarbor::Account => "(J) account numbers",
            SafeHarbor::Licence => "(K) certificate and licence numbers",
            SafeHarbor::Vehicle => "(L) vehicle identifiers",
            SafeHarbor::Device => "(M) device identifiers",
            SafeHarbor::Url => "(N) URLs",
            SafeHarbor::IpAddress => "(O) IP addresses",
            SafeHarbor::Biometric => "(P) biometric identifiers",
            SafeHarbor::Photo => "(Q) full-face photographs",
            SafeHarbor::OtherUnique => "(R) other unique numbers or codes",
        }
    }

    /// The role a column of this kind takes: a geographic unit or a date identifies in
    /// combination, every other kind by itself.
    pub fn role(self) -> Role {
        match self {
            SafeHarbor::Geography | SafeHarbor::Dates => Role::QuasiIdentifier,
            _ => Role::DirectIdentifier,
        }
    }
}

/// Words of a column name and the identifier kind they name. A word matches a whole word
/// of the name (`patient_id`, `PatientId` and `patient-id` have the word `id`).
const NAME_KINDS: &[(&[&str], SafeHarbor)] = &[
    (&["ssn", "sin", "nino", "socialsecurity"], SafeHarbor::Ssn),
    (
        &["mrn", "chart", "medicalrecord"],
        SafeHarbor::MedicalRecord,
    ),
    (&["email", "mail", "emailaddress"], SafeHarbor::Email),
    (&["fax"], SafeHarbor::Fax),
    (
        &[
            "phone",
            "telephone",
            "tel",
            "mobile",
            "cell",
            "cellphone",
            "phonenumber",
        ],
        SafeHarbor::Phone,
    ),
    (
        &["url", "uri", "website", "homepage", "webpage"],
        SafeHarbor::Url,
    ),
    (&["ip", "ipaddress", "ipv4", "ipv6"], SafeHarbor::IpAddress),
    (
        &["vin", "vehicle", "plate", "licenseplate"],
        SafeHarbor::Vehicle,
    ),
    (
        &["device", "serial", "imei", "udi", "mac", "macaddress"],
        SafeHarbor::Device,
    ),
    (
        &["license", "licence", "certificate", "npi", "dea"],
        SafeHarbor::Licence,
    ),
    (
        &["account", "acct", "iban", "bankaccount"],
        SafeHarbor::Account,
    ),
    (
        &[
            "beneficiary",
            "insurance",
            "insured",
            "policy",
            "medicaid",
            "medicare",
            "healthplan",
        ],
        SafeHarbor::HealthPlan,
    ),
    (
        &["fingerprint", "biometric", "retina", "iris", "voiceprint"],
        SafeHarbor::Biometric,
    ),
    (
        &["photo", "photograph", "picture", "portrait", "face"],
        SafeHarbor::Photo,
    ),
    (
        &[
            "name",
            "firstname",
            "lastname",
            "surname",
            "forename",
            "fullname",
            "givenname",
            "familyname",
            "maidenname",
        ],
        SafeHarbor::Names,
    ),
    (
        &["address", "street", "addr", "streetaddress"],
        SafeHarbor::Names,
    ),
    (
        &[
            "id",
            "identifier",
            "uuid",
            "guid",
            "ident",
            "pid",
            "mrno",
            "caseno",
        ],
        SafeHarbor::OtherUnique,
    ),
    (
        &[
            "zip",
            "zipcode",
            "postcode",
            "postal",
            "plz",
            "postalcode",
            "city",
            "town",
            "county",
            "district",
            "municipality",
            "precinct",
            "neighborhood",
            "neighbourhood",
            "village",
            "geocode",
            "latitude",
            "longitude",
            "lat",
            "lon",
            "lng",
        ],
        SafeHarbor::Geography,
    ),
    (
        &[
            "dob",
            "birthdate",
            "birthday",
            "birth",
            "born",
            "date",
            "admission",
            "admitted",
            "discharge",
            "discharged",
            "death",
            "died",
            "deceased",
            "dod",
            "dt",
        ],
        SafeHarbor::Dates,
    ),
];

/// Words that make `name` or `id` in a column name something other than a person's: a
/// drug's name, a ward's id.
const NOT_A_PERSON: &[&str] = &[
    "drug",
    "hospital",
    "ward",
    "product",
    "file",
    "department",
    "dept",
    "unit",
    "provider",
    "facility",
    "item",
    "code",
    "site",
    "study",
    "trial",
    "batch",
    "order",
    "room",
    "bed",
    "device",
    "form",
    "field",
    "table",
    "column",
    "event",
    "type",
    "category",
    "group",
];

/// Whether the word `trigger` (`name`, `id`) of a column name stands for a person: no other
/// word of the name is a quasi-identifier, sensitive or non-person word.
fn about_a_person(words: &[String], trigger: &str) -> bool {
    !words.iter().any(|w| {
        !w.contains(trigger)
            && (NOT_A_PERSON.contains(&w.as_str())
                || QUASI_WORDS.contains(&w.as_str())
                || SENSITIVE_WORDS.contains(&w.as_str()))
    })
}

/// Words of quasi-identifiers outside Safe Harbor's kinds: known from other sources, they
/// identify in combination.
const QUASI_WORDS: &[&str] = &[
    "age",
    "sex",
    "gender",
    "race",
    "ethnicity",
    "ethnic",
    "marital",
    "education",
    "country",
    "nationality",
    "location",
    "region",
    "state",
    "province",
    "workclass",
    "occupation",
    "job",
    "profession",
    "year",
    "religion",
    "language",
    "height",
    "weight",
    "ward",
    "hospital",
];

/// Words of columns that analyses are about.
const SENSITIVE_WORDS: &[&str] = &[
    "diagnosis",
    "diag",
    "dx",
    "disease",
    "icd",
    "icd10",
    "icd9",
    "salary",
    "income",
    "condition",
    "treatment",
    "drug",
    "medication",
    "procedure",
    "outcome",
    "result",
    "los",
    "stay",
    "hiv",
    "cancer",
    "lab",
    "test",
    "symptom",
    "therapy",
    "prescription",
    "cost",
    "charge",
    "charges",
    "severity",
    "mortality",
];

/// The words of a column name: split at every non-alphanumeric character and at each
/// lower-to-upper case change (`PatientID` → `patient`, `id`) and letter-to-digit change
/// (`zip5` → `zip`, `5`), lower-cased; with each
/// pair of neighbours joined (`first_name` also gives `firstname`).
pub fn name_words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous = None;
            continue;
        }
        let boundary = previous.is_some_and(|p| {
            (p.is_lowercase() && c.is_uppercase()) || (p.is_alphabetic() && c.is_numeric())
        });
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
        previous = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    let pairs: Vec<String> = words
        .windows(2)
        .map(|w| format!("{}{}", w[0], w[1]))
        .collect();
    words.extend(pairs);
    words
}

/// What is known of a column for its role.
#[derive(Debug, Clone)]
pub struct ColumnFacts<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its type.
    pub data_type: &'a DataType,
    /// Rows with a value (not NULL).
    pub present: u64,
    /// Distinct values.
    pub distinct: u64,
    /// A sample of its distinct values, as text.
    pub sample: &'a [String],
}

/// A suggested role, the Safe Harbor kind behind it (if any) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The role.
    pub role: Role,
    /// The Safe Harbor kind, when one fired.
    pub safe_harbor: Option<SafeHarbor>,
    /// The rule that fired, in a sentence.
    pub reason: String,
}

/// The share of distinct values above which a column singles out rows.
pub const UNIQUE_SHARE: f64 = 0.9;

/// The fewest present values for the uniqueness rule.
const UNIQUE_MIN_ROWS: u64 = 20;

fn is_float(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}

/// The suggested role of a column. The rules, first match wins: a value pattern of an
/// identifier kind; a name word of an identifier kind; a date type; uniqueness (at least
/// [`UNIQUE_SHARE`] of its values distinct, not a measurement); a value pattern of a
/// quasi-identifier kind; a name word of a quasi-identifier; a sensitive name word.
pub fn suggest(facts: &ColumnFacts<'_>) -> Suggestion {
    let words = name_words(facts.name);
    let has = |list: &[&str]| words.iter().find(|w| list.contains(&w.as_str())).cloned();
    let kind = |kind: SafeHarbor, reason: String| Suggestion {
        role: kind.role(),
        safe_harbor: Some(kind),
        reason,
    };
    let pattern = ValuePattern::of_values(facts.sample);
    let pattern_kind = pattern.map(|p| match p {
        ValuePattern::Email => SafeHarbor::Email,
        ValuePattern::Ssn => SafeHarbor::Ssn,
        ValuePattern::Url => SafeHarbor::Url,
        ValuePattern::IpAddress => SafeHarbor::IpAddress,
        ValuePattern::MacAddress => SafeHarbor::Device,
        ValuePattern::Vin => SafeHarbor::Vehicle,
        ValuePattern::Phone => SafeHarbor::Phone,
        ValuePattern::Date => SafeHarbor::Dates,
        ValuePattern::Zip => SafeHarbor::Geography,
    });
    if let (Some(p), Some(k)) = (pattern, pattern_kind) {
        if k.role() == Role::DirectIdentifier {
            let k = if k == SafeHarbor::Phone && has(&["fax"]).is_some() {
                SafeHarbor::Fax
            } else {
                k
            };
            return kind(
                k,
                format!("its values are {} ({p:?} pattern)", kind_noun(k)),
            );
        }
    }
    let name_kind = NAME_KINDS
        .iter()
        .find_map(|(list, k)| has(list).map(|w| (w, *k)))
        .filter(|(word, k)| {
            !matches!(k, SafeHarbor::Names | SafeHarbor::OtherUnique)
                || about_a_person(&words, word)
        });
    if let Some((word, k)) = &name_kind {
        let k = *k;
        if k.role() == Role::DirectIdentifier {
            return kind(k, format!("its name says '{word}': {}", kind_noun(k)));
        }
    }
    if is_date_type(facts.data_type) {
        return kind(
            SafeHarbor::Dates,
            "it holds dates, which identify in combination (Safe Harbor keeps only the year)"
                .into(),
        );
    }
    let unique = facts.present >= UNIQUE_MIN_ROWS
        && !is_float(facts.data_type)
        && facts.distinct as f64 >= UNIQUE_SHARE * facts.present as f64;
    if unique && pattern.is_none_or(|p| p != ValuePattern::Date) {
        return kind(
            SafeHarbor::OtherUnique,
            format!(
                "{:.0}% of its values are distinct: it singles out rows like a record number",
                100.0 * facts.distinct as f64 / facts.present as f64
            ),
        );
    }
    if let (Some(p), Some(k)) = (pattern, pattern_kind) {
        return kind(
            k,
            format!("its values are {} ({p:?} pattern)", kind_noun(k)),
        );
    }
    if let Some((word, k)) = name_kind {
        return kind(k, format!("its name says '{word}': {}", kind_noun(k)));
    }
    if let Some(word) = has(QUASI_WORDS) {
        return Suggestion {
            role: Role::QuasiIdentifier,
            safe_harbor: None,
            reason: format!(
                "its name says '{word}': known from other sources, it identifies in combination"
            ),
        };
    }
    if let Some(word) = has(SENSITIVE_WORDS) {
        return Suggestion {
            role: Role::Sensitive,
            safe_harbor: None,
            reason: format!("its name says '{word}': what analyses are about"),
        };
    }
    Suggestion {
        role: Role::Other,
        safe_harbor: None,
        reason: "nothing in its name or values suggests a role: decide".into(),
    }
}

/// How a reason names a kind.
fn kind_noun(kind: SafeHarbor) -> String {
    let role = match kind.role() {
        Role::DirectIdentifier => "it names a person by itself",
        _ => "it identifies in combination",
    };
    format!("{}, {role}", kind.describe())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, data_type: DataType, distinct: u64, sample: &[&str]) -> Role {
        let sample: Vec<String> = sample.iter().map(|v| v.to_string()).collect();
        suggest(&ColumnFacts {
            name,
            data_type: &data_type,
            present: 1000,
            distinct,
            sample: &sample,
        })
        .role
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(name_words("PatientID"), ["patient", "id", "patientid"]);
        assert_eq!(name_words("first_name"), ["first", "name", "firstname"]);
        assert_eq!(name_words("birthDate"), ["birth", "date", "birthdate"]);
        assert_eq!(name_words("zip5"), ["zip", "5", "zip5"]);
    }

    #[test]
    fn roles_follow_names_values_and_uniqueness() {
        use Role::*;
        assert_eq!(
            role("patient_id", DataType::Int64, 10, &[]),
            DirectIdentifier
        );
        assert_eq!(role("Last Name", DataType::Utf8, 10, &[]), DirectIdentifier);
        let emails = ["a@b.org", "c@d.org", "e@f.org"];
        assert_eq!(
            role("contact", DataType::Utf8, 10, &emails),
            DirectIdentifier
        );
        let phones = ["+41 44 123 45 67", "(617) 555-0100", "030/1234567"];
        assert_eq!(
            role("contact", DataType::Utf8, 10, &phones),
            DirectIdentifier
        );
        assert_eq!(role("code", DataType::Int64, 995, &["1"]), DirectIdentifier);
        assert_eq!(
            role("weight", DataType::Float64, 995, &["1.5"]),
            QuasiIdentifier
        );
        assert_eq!(role("reading", DataType::Float64, 995, &["1.5"]), Other);
        assert_eq!(role("seen", DataType::Date32, 50, &[]), QuasiIdentifier);
        // Unique dates are still dates.
        assert_eq!(role("seen", DataType::Date32, 990, &[]), QuasiIdentifier);
        let zips = ["02139", "10001-1234", "94105"];
        assert_eq!(role("area", DataType::Utf8, 50, &zips), QuasiIdentifier);
        for name in [
            "age",
            "sex",
            "marital-status",
            "native-country",
            "workclass",
            "zip",
        ] {
            assert_eq!(
                role(name, DataType::Utf8, 20, &["x"]),
                QuasiIdentifier,
                "{name}"
            );
        }
        assert_eq!(
            role("salary-class", DataType::Utf8, 2, &["<=50K"]),
            Sensitive
        );
        assert_eq!(role("disease", DataType::Utf8, 40, &["I63"]), Sensitive);
        assert_eq!(role("colour", DataType::Utf8, 4, &["red"]), Other);
        // "patient" alone names no identifier: a patient's age is a quasi-identifier.
        assert_eq!(
            role("patient_age", DataType::Int32, 80, &[]),
            QuasiIdentifier
        );
        // A drug's name or a ward's id is not a person's.
        assert_eq!(role("drug_name", DataType::Utf8, 80, &[]), Sensitive);
        assert_eq!(role("ward_id", DataType::Int32, 12, &[]), QuasiIdentifier);
    }

    #[test]
    fn each_safe_harbor_kind_is_named() {
        let kind = |name: &str, sample: &[&str]| {
            let sample: Vec<String> = sample.iter().map(|v| v.to_string()).collect();
            suggest(&ColumnFacts {
                name,
                data_type: &DataType::Utf8,
                present: 100,
                distinct: 10,
                sample: &sample,
            })
            .safe_harbor
        };
        use SafeHarbor::*;
        let cases: [(&str, &[&str], SafeHarbor); 18] = [
            ("full_name", &[], Names),
            ("zip", &[], Geography),
            ("admission_date", &[], Dates),
            ("phone", &[], Phone),
            (
                "fax_number",
                &["+1 617 555 0100", "+1 617 555 0101", "+1 617 555 0102"],
                Fax,
            ),
            ("email", &[], Email),
            ("ssn", &[], Ssn),
            ("mrn", &[], MedicalRecord),
            ("medicaid_number", &[], HealthPlan),
            ("account_no", &[], Account),
            ("license_number", &[], Licence),
            ("vin", &[], Vehicle),
            ("device_serial", &[], Device),
            ("homepage", &[], Url),
            ("ip_address", &[], IpAddress),
            ("fingerprint", &[], Biometric),
            ("photo", &[], Photo),
            ("record_uuid", &[], OtherUnique),
        ];
        for (name, sample, expected) in cases {
            assert_eq!(kind(name, sample), Some(expected), "{name}");
        }
    }
}
