//! The arguments of `anonymize(...)` that every method shares (each method's own are in
//! its [`super::MethodSpec::params`]).

use crate::params::{ParamDefault, ParamKind, ParamSpec};

/// Name of the default method.
pub const DEFAULT_METHOD: &str = "ipa";

/// The arguments of `anonymize` that do not depend on the method.
pub const COMMON_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "source",
        ParamKind::Text,
        ParamDefault::Required,
        "table or view to anonymize (first positional argument)",
    ),
    ParamSpec::new(
        "method",
        ParamKind::Text,
        ParamDefault::Text(DEFAULT_METHOD),
        "anonymization method (see the method list)",
    ),
    ParamSpec::new(
        "qi",
        ParamKind::Text,
        ParamDefault::Required,
        "quasi-identifiers as 'col[:hierarchy_table], ...'; without ':table' the hierarchy <source>_hierarchy_<col> is used; a name containing ',' or ':' goes in double quotes, e.g. '\"a:b\":h_ab, sex' (a double quote inside is written twice)",
    ),
    ParamSpec::new(
        "sensitive",
        ParamKind::Text,
        ParamDefault::Optional("none: only the quasi-identifiers are released"),
        "the sensitive (analysed) columns as 'col[:hierarchy_table], ...', released unchanged ('kanon' accepts several, the other methods one); ':table' gives the column's hierarchy or order for t-closeness; 'informative' is its synonym",
    ),
    ParamSpec::new(
        "informative",
        ParamKind::Text,
        ParamDefault::Optional("none"),
        "synonym of 'sensitive' (the IPA paper's name for the released unchanged column)",
    ),
    ParamSpec::new(
        "person",
        ParamKind::Text,
        ParamDefault::Optional("none: each row is one individual"),
        "the column identifying a person who may own several rows (e.g. 'patient_id'), never released: the guarantee then protects persons, not rows; the differentially private methods keep at most max_rows_per_person rows of each person, chosen at random, 'kanon' counts distinct persons per class and 'upa' fills each class up to k persons; 'microaggregation' refuses it (its groups hold k records, not k persons)",
    ),
    ParamSpec::new(
        "max_rows_per_person",
        ParamKind::Count,
        ParamDefault::Optional("1"),
        "with person, for the differentially private methods (ipa, safepub, dp_histogram, mst): the most rows of one person the release uses (the rest are left out at random); epsilon and delta stay per person, each row gets epsilon / max_rows_per_person (group privacy)",
    ),
    ParamSpec::new(
        "identifiers",
        ParamKind::Text,
        ParamDefault::Optional("none"),
        "direct identifiers as 'col, ...' (patient id, name, phone): never released as they are; dropped, or with identifier_mode 'pseudonym' released as keyed pseudonyms",
    ),
    ParamSpec::new(
        "identifier_mode",
        ParamKind::Choice(&["drop", "pseudonym"]),
        ParamDefault::Text("drop"),
        "'drop' leaves the identifiers out; 'pseudonym' (kanon, owner only, with the owner's key: RegisterOptions::pseudonym_key or dfanon --pseudonym-key-file) releases each as HMAC-SHA-256 of its value under that key, first 128 bits as 32 hex digits: the same value, the same pseudonym in every release of the registration",
    ),
    ParamSpec::new(
        "date_shift",
        ParamKind::Text,
        ParamDefault::Optional("none"),
        "DATE or TIMESTAMP columns as 'col, ...' whose values move, with person, by one offset per person in -max_days..max_days days, drawn from the person under the owner's key (RegisterOptions::pseudonym_key or dfanon --pseudonym-key-file): intervals within a person are kept, the same person moves alike in every release under the key; masking before the method runs (a date hierarchy's domain must reach max_days beyond the data), not a privacy guarantee",
    ),
    ParamSpec::new(
        "max_days",
        ParamKind::Count,
        ParamDefault::Integer(30),
        "with date_shift: the largest shift in days, either way (at most 3650)",
    ),
    ParamSpec::new(
        "max_release_rows",
        ParamKind::Count,
        ParamDefault::Optional("10 x the input rows, at least 100000"),
        "largest number of rows the release may have: a release whose size bound, computed before anything is drawn, is larger is refused (e.g. a tiny epsilon making IPA add millions of counterfeits); in sessions for public users the data owner sets it and it cannot be given",
    ),
];
