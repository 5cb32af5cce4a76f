//! Argument binding for our table functions: positional and `name => value` arguments,
//! checked against a declared parameter table ([`ParamSpec`]).

use std::collections::BTreeMap;

use datafusion::common::{plan_err, Result, ScalarValue};

pub use crate::params::ParamSpec;
use crate::params::{read_bool, read_integer, read_number, read_text};

/// Arguments as written in SQL, already reduced to literal values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallArgs {
    /// Unnamed arguments in order.
    pub positional: Vec<ScalarValue>,
    /// `name => value` arguments in order (names lower-cased).
    pub named: Vec<(String, ScalarValue)>,
}

/// Arguments bound to parameter names.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundArgs {
    function: String,
    values: BTreeMap<String, ScalarValue>,
}

/// Binds `args` to `params`: positional arguments fill `positional_names` in order; named
/// arguments must be declared; nothing may be given twice.
pub fn bind(
    function: &str,
    params: &[ParamSpec],
    positional_names: &[&str],
    args: CallArgs,
) -> Result<BoundArgs> {
    let mut values = BTreeMap::new();
    if args.positional.len() > positional_names.len() {
        return plan_err!(
            "{function}() takes at most {} positional argument(s) ({}); pass the others as name => value",
            positional_names.len(),
            positional_names.join(", ")
        );
    }
    for (name, value) in positional_names.iter().zip(args.positional) {
        refuse_null(function, params, name, &value)?;
        values.insert(name.to_string(), value);
    }
    for (name, value) in args.named {
        let name = name.to_ascii_lowercase();
        if !params.iter().any(|p| p.name == name) {
            let valid: Vec<&str> = params.iter().map(|p| p.name).collect();
            let hint = closest(&name, &valid)
                .map(|c| format!(" (did you mean '{c}'?)"))
                .unwrap_or_default();
            return plan_err!(
                "{function}(): unknown argument '{name}'{hint}; valid arguments: {}",
                valid.join(", ")
            );
        }
        if values.contains_key(&name) {
            return plan_err!("{function}(): argument '{name}' is given twice");
        }
        refuse_null(function, params, &name, &value)?;
        values.insert(name, value);
    }
    Ok(BoundArgs {
        function: function.to_string(),
        values,
    })
}

/// The one rule for NULL arguments, of every function: no parameter takes NULL (it would
/// otherwise be read as the text 'NULL', a table name, or a number's absence); leaving the
/// argument out gives its default.
fn refuse_null(
    function: &str,
    params: &[ParamSpec],
    name: &str,
    value: &ScalarValue,
) -> Result<()> {
    if !value.is_null() {
        return Ok(());
    }
    match params
        .iter()
        .find(|p| p.name == name)
        .and_then(|p| p.default.describe())
    {
        Some(default) => plan_err!(
            "{function}(): argument '{name}' must not be NULL; leave it out for its default ({default})"
        ),
        None => plan_err!("{function}(): argument '{name}' must not be NULL"),
    }
}

fn closest<'a>(name: &str, valid: &[&'a str]) -> Option<&'a str> {
    valid
        .iter()
        .map(|v| (edit_distance(name, v), *v))
        .filter(|(d, v)| *d <= 2.max(v.len() / 4))
        .min()
        .map(|(_, v)| v)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != b[j]))
                .min(row[j] + 1)
                .min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl BoundArgs {
    /// Whether an argument was given.
    pub fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// Gives the argument `name` the value `value` (an argument the data owner fixes).
    pub fn insert(&mut self, name: &str, value: ScalarValue) {
        self.values.insert(name.to_string(), value);
    }

    /// Takes the argument `name` out (a function that passes the others on).
    pub fn remove(&mut self, name: &str) {
        self.values.remove(name);
    }

    /// A text argument.
    pub fn string(&self, name: &str) -> Result<Option<String>> {
        self.values
            .get(name)
            .map(|v| read_text(&self.function, name, v))
            .transpose()
    }

    /// A required text argument.
    pub fn required_string(&self, name: &str) -> Result<String> {
        match self.string(name)? {
            Some(s) => Ok(s),
            None => plan_err!("{}(): argument '{name}' is required", self.function),
        }
    }

    /// A real-number argument (integers accepted).
    pub fn f64(&self, name: &str) -> Result<Option<f64>> {
        self.values
            .get(name)
            .map(|v| read_number(&self.function, name, v))
            .transpose()
    }

    /// A non-negative integer argument.
    pub fn u64(&self, name: &str) -> Result<Option<u64>> {
        self.values
            .get(name)
            .map(|v| read_integer(&self.function, name, v))
            .transpose()
    }

    /// A boolean argument (`true`/`false`, also as text).
    pub fn bool(&self, name: &str) -> Result<Option<bool>> {
        self.values
            .get(name)
            .map(|v| read_bool(&self.function, name, v))
            .transpose()
    }

    /// Names of the arguments given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// The arguments given, by name.
    pub fn values(&self) -> &BTreeMap<String, ScalarValue> {
        &self.values
    }

    /// Takes the arguments named in `names` out, into their own [`BoundArgs`]: a function
    /// that adds parameters to another's passes on the rest.
    pub fn take(&mut self, names: &[&str]) -> BoundArgs {
        let values = names
            .iter()
            .filter_map(|n| self.values.remove_entry(*n))
            .collect();
        BoundArgs {
            function: self.function.clone(),
            values,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::params::{ParamDefault, ParamKind};

    const PARAMS: &[ParamSpec] = &[
        ParamSpec::new("source", ParamKind::Text, ParamDefault::Required, ""),
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
    ];

    fn s(x: &str) -> ScalarValue {
        ScalarValue::Utf8(Some(x.into()))
    }

    #[test]
    fn binds_positional_and_named() {
        let args = CallArgs {
            positional: vec![s("nps")],
            named: vec![("EPSILON".into(), ScalarValue::Int64(Some(1)))],
        };
        let b = bind("anonymize", PARAMS, &["source"], args).unwrap();
        assert_eq!(b.required_string("source").unwrap(), "nps");
        assert_eq!(b.f64("epsilon").unwrap(), Some(1.0));
        assert_eq!(b.u64("seed").unwrap(), None);
        // 1 and 1.0 are the same argument for caching.
        let b2 = bind(
            "anonymize",
            PARAMS,
            &["source"],
            CallArgs {
                positional: vec![s("nps")],
                named: vec![("epsilon".into(), ScalarValue::Float64(Some(1.0)))],
            },
        )
        .unwrap();
        let canonical = |b: &BoundArgs| {
            crate::params::ParamValues::parse("anonymize", "test", PARAMS, b.values())
                .unwrap()
                .canonical()
        };
        assert_eq!(canonical(&b), canonical(&b2));
    }

    #[test]
    fn rejects_unknown_duplicate_and_extra() {
        let err = bind(
            "anonymize",
            PARAMS,
            &["source"],
            CallArgs {
                positional: vec![],
                named: vec![("epsilno".into(), s("1"))],
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("unknown argument 'epsilno' (did you mean 'epsilon'?)"),
            "{err}"
        );
        assert!(
            err.contains("valid arguments: source, epsilon, seed"),
            "{err}"
        );
        let err = bind(
            "anonymize",
            PARAMS,
            &["source"],
            CallArgs {
                positional: vec![s("a")],
                named: vec![("source".into(), s("b"))],
            },
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("given twice"), "{err}");
        let err = bind(
            "anonymize",
            PARAMS,
            &["source"],
            CallArgs {
                positional: vec![s("a"), s("b")],
                named: vec![],
            },
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("at most 1 positional"), "{err}");
        let b = bind(
            "anonymize",
            PARAMS,
            &["source"],
            CallArgs {
                positional: vec![],
                named: vec![("seed".into(), ScalarValue::Int64(Some(-1)))],
            },
        )
        .unwrap();
        assert!(b.u64("seed").is_err());
    }

    /// NULL is refused for every parameter, named or positional, naming it and its default.
    #[test]
    fn null_arguments_are_refused() {
        let err = |positional: Vec<ScalarValue>, named: Vec<(String, ScalarValue)>| {
            bind("f", PARAMS, &["source"], CallArgs { positional, named })
                .unwrap_err()
                .strip_backtrace()
        };
        assert_eq!(
            err(vec![], vec![("seed".into(), ScalarValue::Utf8(None))]),
            "Error during planning: f(): argument 'seed' must not be NULL; leave it out for its default (none)"
        );
        assert_eq!(
            err(vec![], vec![("epsilon".into(), ScalarValue::Null)]),
            "Error during planning: f(): argument 'epsilon' must not be NULL; leave it out for its default (1.0)"
        );
        assert_eq!(
            err(vec![ScalarValue::Null], vec![]),
            "Error during planning: f(): argument 'source' must not be NULL"
        );
    }
}
