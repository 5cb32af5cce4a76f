//! Parameter tables and typed argument values.
//!
//! Every table function and every anonymization method declares its parameters once, as a
//! table of [`ParamSpec`]s (name, kind, default, doc). The SQL layer binds the arguments of
//! a call against such a table, [`ParamValues::parse`] checks every value against its kind
//! and fills in the defaults, and help texts and the function reference are generated from
//! the same tables. A default therefore exists in exactly one place.

use std::collections::BTreeMap;
use std::fmt;

use datafusion::common::{internal_err, plan_err, Result, ScalarValue};

/// What values a parameter accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Any text.
    Text,
    /// One of the listed words (matched case-insensitively, kept in lower case).
    Choice(&'static [&'static str]),
    /// A finite real number.
    Number,
    /// A finite real number greater than zero.
    Positive,
    /// A non-negative integer.
    Integer,
    /// An integer of at least one.
    Count,
    /// `true` or `false`.
    Bool,
}

impl ParamKind {
    /// Short description for help texts.
    pub fn describe(&self) -> String {
        match self {
            Self::Text => "text".into(),
            Self::Choice(words) => words
                .iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(" | "),
            Self::Number => "number".into(),
            Self::Positive => "number > 0".into(),
            Self::Integer => "integer >= 0".into(),
            Self::Count => "integer >= 1".into(),
            Self::Bool => "true | false".into(),
        }
    }
}

/// What happens when a parameter is not given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamDefault {
    /// The parameter must be given.
    Required,
    /// The parameter may be omitted; the text says what happens then.
    Optional(&'static str),
    /// This text (or choice) is used.
    Text(&'static str),
    /// This number is used.
    Number(f64),
    /// This integer is used.
    Integer(u64),
    /// This truth value is used.
    Bool(bool),
}

impl ParamDefault {
    /// The default as shown in help texts (`None` for a required parameter).
    pub fn describe(&self) -> Option<String> {
        match self {
            Self::Required => None,
            Self::Optional(text) => Some((*text).to_string()),
            Self::Text(text) => Some(format!("'{text}'")),
            Self::Number(x) => Some(format!("{x:?}")),
            Self::Integer(n) => Some(n.to_string()),
            Self::Bool(b) => Some(b.to_string()),
        }
    }

    fn value(&self) -> Option<ParamValue> {
        match self {
            Self::Required | Self::Optional(_) => None,
            Self::Text(text) => Some(ParamValue::Text((*text).to_string())),
            Self::Number(x) => Some(ParamValue::Number(*x)),
            Self::Integer(n) => Some(ParamValue::Integer(*n)),
            Self::Bool(b) => Some(ParamValue::Bool(*b)),
        }
    }
}

/// A declared parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamSpec {
    /// Name (lower case).
    pub name: &'static str,
    /// Accepted values.
    pub kind: ParamKind,
    /// What happens when it is not given.
    pub default: ParamDefault,
    /// One-line description, shown by `anonymize_help()` and in the function reference.
    pub doc: &'static str,
}

impl ParamSpec {
    /// A parameter.
    pub const fn new(
        name: &'static str,
        kind: ParamKind,
        default: ParamDefault,
        doc: &'static str,
    ) -> Self {
        Self {
            name,
            kind,
            default,
            doc,
        }
    }
}

/// A checked argument value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// Text or a choice (choices in lower case).
    Text(String),
    /// A finite real number.
    Number(f64),
    /// A non-negative integer.
    Integer(u64),
    /// A truth value.
    Bool(bool),
}

impl fmt::Display for ParamValue {
    /// Canonical rendering: equal values render equally (`1` and `1.0` for a number).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(s) => write!(f, "{s:?}"),
            Self::Number(x) => write!(f, "{x:?}"),
            Self::Integer(n) => write!(f, "{n}"),
            Self::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Reads `value` as the argument `name` of `function`, as `kind` requires; `context` names
/// what the argument belongs to in errors (e.g. "method 'ipa'").
pub fn parse_value(
    function: &str,
    context: &str,
    name: &str,
    kind: ParamKind,
    value: &ScalarValue,
) -> Result<ParamValue> {
    match kind {
        ParamKind::Text => Ok(ParamValue::Text(read_text(function, name, value)?)),
        ParamKind::Choice(words) => {
            let given = read_text(function, name, value)?;
            let lower = given.trim().to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(ParamValue::Text(lower))
            } else {
                let valid: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
                plan_err!(
                    "{function}(): unknown {name} '{given}' for {context}; valid: {}",
                    valid.join(", ")
                )
            }
        }
        ParamKind::Number | ParamKind::Positive => {
            let x = read_number(function, name, value)?;
            if kind == ParamKind::Positive && !(x.is_finite() && x > 0.0) {
                return plan_err!("{function}(): {name} must be a positive finite number, got {x}");
            }
            if !x.is_finite() {
                return plan_err!("{function}(): {name} must be a finite number, got {x}");
            }
            Ok(ParamValue::Number(x))
        }
        ParamKind::Integer | ParamKind::Count => {
            let n = read_integer(function, name, value)?;
            if kind == ParamKind::Count && n == 0 {
                return plan_err!("{function}(): {name} must be at least 1");
            }
            Ok(ParamValue::Integer(n))
        }
        ParamKind::Bool => Ok(ParamValue::Bool(read_bool(function, name, value)?)),
    }
}

/// An argument value as written, for error messages: numbers keep their kind (`1.0` is not
/// shown as `1`), text is quoted.
pub fn shown(value: &ScalarValue) -> String {
    match value {
        ScalarValue::Float64(Some(x)) => format!("{x:?}"),
        ScalarValue::Float32(Some(x)) => format!("{x:?}"),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => format!("'{s}'"),
        v if v.is_null() => "NULL".to_string(),
        other => other.to_string(),
    }
}

/// Reads a text argument.
pub fn read_text(function: &str, name: &str, value: &ScalarValue) -> Result<String> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => Ok(s.clone()),
        other => plan_err!(
            "{function}(): argument '{name}' must be a string, got {}",
            shown(other)
        ),
    }
}

/// Reads a real-number argument (integers and numeric text accepted).
pub fn read_number(function: &str, name: &str, value: &ScalarValue) -> Result<f64> {
    Ok(match value {
        ScalarValue::Float64(Some(x)) => *x,
        ScalarValue::Float32(Some(x)) => *x as f64,
        ScalarValue::Int64(Some(x)) => *x as f64,
        ScalarValue::Int32(Some(x)) => *x as f64,
        ScalarValue::UInt64(Some(x)) => *x as f64,
        ScalarValue::Decimal128(Some(x), _, scale) => *x as f64 / 10f64.powi(*scale as i32),
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            match s.trim().parse::<f64>() {
                Ok(x) => x,
                Err(_) => {
                    return plan_err!("{function}(): argument '{name}' must be a number, got '{s}'")
                }
            }
        }
        other => {
            return plan_err!(
                "{function}(): argument '{name}' must be a number, got {}",
                shown(other)
            )
        }
    })
}

/// Reads a non-negative integer argument (also as text).
pub fn read_integer(function: &str, name: &str, value: &ScalarValue) -> Result<u64> {
    match value {
        ScalarValue::Int64(Some(x)) if *x >= 0 => Ok(*x as u64),
        ScalarValue::Int32(Some(x)) if *x >= 0 => Ok(*x as u64),
        ScalarValue::UInt64(Some(x)) => Ok(*x),
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))
            if s.trim().parse::<u64>().is_ok() =>
        {
            s.trim().parse::<u64>().or_else(|_| {
                plan_err!("{function}(): argument '{name}' must be a non-negative integer")
            })
        }
        other => plan_err!(
            "{function}(): argument '{name}' must be a non-negative integer, got {}",
            shown(other)
        ),
    }
}

/// Reads a truth value (`true`/`false`, also as text).
pub fn read_bool(function: &str, name: &str, value: &ScalarValue) -> Result<bool> {
    match value {
        ScalarValue::Boolean(Some(b)) => Ok(*b),
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            match s.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Ok(true),
                "false" | "no" | "0" => Ok(false),
                _ => plan_err!("{function}(): argument '{name}' must be true or false, got '{s}'"),
            }
        }
        other => plan_err!(
            "{function}(): argument '{name}' must be true or false, got {}",
            shown(other)
        ),
    }
}

/// Checked values of one call, with every default filled in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamValues {
    function: String,
    values: BTreeMap<&'static str, ParamValue>,
    given: Vec<&'static str>,
}

impl ParamValues {
    /// Checks the arguments `given` (by name) against `specs` for `function`, and fills in
    /// the defaults. `context` names what requires a missing required argument (e.g.
    /// "method 'safepub'").
    pub fn parse<'a>(
        function: &str,
        context: &str,
        specs: impl IntoIterator<Item = &'a ParamSpec>,
        given: &BTreeMap<String, ScalarValue>,
    ) -> Result<Self> {
        let mut out = Self {
            function: function.to_string(),
            ..Self::default()
        };
        for spec in specs {
            let value = match given.get(spec.name) {
                Some(raw) => {
                    out.given.push(spec.name);
                    Some(parse_value(function, context, spec.name, spec.kind, raw)?)
                }
                None if spec.default == ParamDefault::Required => {
                    return plan_err!(
                        "{function}(): argument '{}' is required for {context}: {}",
                        spec.name,
                        spec.doc
                    )
                }
                None => spec.default.value(),
            };
            if let Some(value) = value {
                out.values.insert(spec.name, value);
            }
        }
        Ok(out)
    }

    /// The function these values were given to (for error messages).
    pub fn function(&self) -> &str {
        &self.function
    }

    /// Whether the caller gave the argument (rather than its default applying).
    pub fn given(&self, name: &str) -> bool {
        self.given.contains(&name)
    }

    fn missing<T>(&self, name: &str) -> Result<T> {
        internal_err!(
            "{}(): parameter '{name}' is not declared or has no value",
            self.function
        )
    }

    /// A text or choice value, if given or defaulted.
    pub fn opt_text(&self, name: &str) -> Option<&str> {
        match self.values.get(name) {
            Some(ParamValue::Text(s)) => Some(s),
            _ => None,
        }
    }

    /// A text or choice value that has a default (or is required).
    pub fn text(&self, name: &str) -> Result<&str> {
        match self.opt_text(name) {
            Some(s) => Ok(s),
            None => self.missing(name),
        }
    }

    /// A number, if given or defaulted.
    pub fn opt_f64(&self, name: &str) -> Option<f64> {
        match self.values.get(name) {
            Some(ParamValue::Number(x)) => Some(*x),
            _ => None,
        }
    }

    /// A number that has a default (or is required).
    pub fn f64(&self, name: &str) -> Result<f64> {
        match self.opt_f64(name) {
            Some(x) => Ok(x),
            None => self.missing(name),
        }
    }

    /// An integer, if given or defaulted.
    pub fn opt_u64(&self, name: &str) -> Option<u64> {
        match self.values.get(name) {
            Some(ParamValue::Integer(n)) => Some(*n),
            _ => None,
        }
    }

    /// An integer that has a default (or is required).
    pub fn u64(&self, name: &str) -> Result<u64> {
        match self.opt_u64(name) {
            Some(n) => Ok(n),
            None => self.missing(name),
        }
    }

    /// A truth value that has a default (or is required).
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.values.get(name) {
            Some(ParamValue::Bool(b)) => Ok(*b),
            _ => self.missing(name),
        }
    }

    /// Replaces the value of `name` (a parameter the table declares), e.g. a budget
    /// rescaled for the privacy unit.
    pub fn set(&mut self, name: &'static str, value: ParamValue) {
        self.values.insert(name, value);
    }

    /// Canonical text of every value, defaults included, sorted by name: two calls that
    /// mean the same thing render the same.
    pub fn canonical(&self) -> String {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[ParamSpec] = &[
        ParamSpec::new(
            "epsilon",
            ParamKind::Positive,
            ParamDefault::Number(1.0),
            "",
        ),
        ParamSpec::new(
            "seed",
            ParamKind::Integer,
            ParamDefault::Optional("none"),
            "",
        ),
        ParamSpec::new(
            "variant",
            ParamKind::Choice(&["paper", "reference"]),
            ParamDefault::Text("paper"),
            "",
        ),
        ParamSpec::new(
            "delta",
            ParamKind::Number,
            ParamDefault::Required,
            "e.g. 1e-6",
        ),
    ];

    fn given(pairs: &[(&str, ScalarValue)]) -> BTreeMap<String, ScalarValue> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn s(x: &str) -> ScalarValue {
        ScalarValue::Utf8(Some(x.into()))
    }

    #[test]
    fn defaults_fill_in_and_canonical_forms_agree() {
        let a = ParamValues::parse(
            "f",
            "method 'x'",
            TABLE,
            &given(&[("delta", ScalarValue::Float64(Some(1e-6)))]),
        )
        .unwrap();
        assert_eq!(a.f64("epsilon").unwrap(), 1.0);
        assert_eq!(a.text("variant").unwrap(), "paper");
        assert_eq!(a.opt_u64("seed"), None);
        assert!(!a.given("epsilon"));
        // Written-out defaults, integer for real and upper case for a choice mean the same.
        let b = ParamValues::parse(
            "f",
            "method 'x'",
            TABLE,
            &given(&[
                ("delta", s("1e-6")),
                ("epsilon", ScalarValue::Int64(Some(1))),
                ("variant", s("PAPER")),
            ]),
        )
        .unwrap();
        assert_eq!(a.canonical(), b.canonical());
        assert!(b.given("epsilon"));
        assert_eq!(a.canonical(), "delta=1e-6;epsilon=1.0;variant=\"paper\"");
    }

    #[test]
    fn errors_name_the_parameter() {
        let err = |pairs: &[(&str, ScalarValue)]| {
            ParamValues::parse("f", "method 'x'", TABLE, &given(pairs))
                .unwrap_err()
                .to_string()
        };
        let e = err(&[]);
        assert!(
            e.contains("f(): argument 'delta' is required for method 'x': e.g. 1e-6"),
            "{e}"
        );
        let e = err(&[
            ("delta", s("1")),
            ("epsilon", ScalarValue::Float64(Some(0.0))),
        ]);
        assert!(
            e.contains("f(): epsilon must be a positive finite number, got 0"),
            "{e}"
        );
        let e = err(&[("delta", s("x"))]);
        assert!(
            e.contains("argument 'delta' must be a number, got 'x'"),
            "{e}"
        );
        let e = err(&[("delta", s("1")), ("variant", s("best"))]);
        assert!(
            e.contains("unknown variant 'best' for method 'x'; valid: 'paper', 'reference'"),
            "{e}"
        );
        let e = err(&[("delta", s("1")), ("seed", ScalarValue::Int64(Some(-1)))]);
        assert!(
            e.contains("argument 'seed' must be a non-negative integer, got -1"),
            "{e}"
        );
        // A real number is shown as written, not rounded to an integer.
        let e = err(&[("delta", s("1")), ("seed", ScalarValue::Float64(Some(1.0)))]);
        assert!(
            e.contains("argument 'seed' must be a non-negative integer, got 1.0"),
            "{e}"
        );
    }
}
