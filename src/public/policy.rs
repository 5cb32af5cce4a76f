//! The data owner's release policy for public users ([`PublicPolicy`]): which tables they
//! read, which sources they may release, and for each source which methods, which
//! quasi-identifiers with which published hierarchy, which informative columns with which
//! public domain, which plain columns, which ε and which arguments the owner fixes.
//!
//! One declaration for every door: the Rust struct, TOML (`[public]` in server.toml,
//! `dfanon --public --policy FILE`) and a Python dict (as JSON) deserialize into it, and
//! [`PublicPolicy::validate`] checks it once, before anything is registered.

use std::collections::BTreeMap;

use datafusion::common::ScalarValue;
use serde::{Deserialize, Serialize};

use crate::method::{find_method, whole_release_dp_methods, Guarantee};

/// The methods public users may call when the owner says nothing else: those whose whole
/// release is differentially private, by name.
pub fn default_public_methods() -> Vec<String> {
    let mut methods: Vec<String> = whole_release_dp_methods()
        .into_iter()
        .map(String::from)
        .collect();
    methods.sort();
    methods
}

/// Default [`PublicPolicy::min_epsilon`].
pub const DEFAULT_PUBLIC_MIN_EPSILON: f64 = 0.01;

/// Default [`PublicPolicy::max_release_rows`].
pub const DEFAULT_PUBLIC_MAX_RELEASE_ROWS: u64 = 10_000_000;

/// Arguments of a public call that neither the user nor the owner's `fixed` may give: the
/// source and the method are the call's, `seed` would make every draw known and
/// `max_release_rows` is [`PublicPolicy::max_release_rows`].
const NOT_FIXABLE: [&str; 4] = ["source", "method", "seed", "max_release_rows"];

/// The data owner's policy for the public users of a registration
/// ([`crate::Access::Public`]): an allow-list. A public user reads the tables in
/// [`Self::tables`] and the published releases, and releases only the sources in
/// [`Self::sources`], each as its [`SourcePolicy`] says.
///
/// In TOML (server.toml's `[public]`, `dfanon --policy FILE`):
///
/// ```toml
/// tables = ["nps_hierarchy_*"]
/// methods = ["dp_histogram", "safepub"]
///
/// [sources.nps]
/// qi = { age = "nps_hierarchy_age", sex = "nps_hierarchy_sex" }
/// informative = { disease = "nps_hierarchy_disease" }
/// max_epsilon = 1.0
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PublicPolicy {
    /// Tables public users may read and that sources bind as hierarchies or domains: exact
    /// table names, or a prefix followed by `*` (`nps_hierarchy_*`). Every other table of
    /// the session is invisible to SQL; `anonymize(...)` still reads the sources, which are
    /// the tables the session had when it was registered.
    pub tables: Vec<String>,
    /// The methods public users may call (default: the methods whose whole release is
    /// differentially private: `dp_histogram`, `mst` and `safepub`). Any other method needs
    /// [`Self::allow_non_dp`].
    pub methods: Vec<String>,
    /// The owner's consent to give public users methods whose release is not
    /// differentially private (`ipa`, `kanon`, `upa`, `microaggregation`). Even then a
    /// public call of such a method gives only the source and the method: every other
    /// argument is the owner's ([`SourcePolicy::fixed`]), so it is one release, drawn once
    /// (the owner's other way is `anonymize_publish`). Default `false`: such a method in
    /// [`Self::methods`] is refused at registration.
    pub allow_non_dp: bool,
    /// Smallest ε one release of a differentially private method may spend (default
    /// 0.01): a tiny ε makes noise and counterfeits grow without bound. A source may raise
    /// it ([`SourcePolicy::min_epsilon`]).
    pub min_epsilon: f64,
    /// Largest ε one release may spend (default: none but the budget). A source may lower
    /// it ([`SourcePolicy::max_epsilon`]).
    pub max_epsilon: Option<f64>,
    /// The column identifying a person in the sources public users release (default: none,
    /// each row is one individual). When set, every public release is per person: its
    /// guarantee and its ledger account count persons, and a public user may set
    /// `max_rows_per_person` but not another `person`. Public users cannot choose the unit:
    /// a person-level release of a table whose rows are its individuals would protect
    /// each row only at twice its epsilon.
    pub person: Option<String>,
    /// Most rows one release may have (default 10,000,000). The check reads only the
    /// released rows, after the draw, so the refusal is a function of the release; the
    /// charge stays.
    pub max_release_rows: u64,
    /// The sources public users may release, by table name as the owner registered it
    /// (`nps`, or `schema.nps`). A source not named here cannot be released: a public
    /// call names it with the same error as a table that does not exist.
    pub sources: BTreeMap<String, SourcePolicy>,
}

/// What public users may do with one source ([`PublicPolicy::sources`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourcePolicy {
    /// The methods of this source (default: all of [`PublicPolicy::methods`]); each one
    /// must be among them.
    pub methods: Option<Vec<String>>,
    /// The quasi-identifiers public users may generalize, each bound to its published
    /// hierarchy table (column → table). A call names a subset of them, with no table or
    /// with exactly this one: no other pairing is accepted.
    pub qi: BTreeMap<String, String>,
    /// The informative (sensitive) columns, each bound to its public domain: a published
    /// hierarchy or code list whose leaves are every value the column may hold (column →
    /// table). `dp_histogram` counts exactly these values, so its cells are public.
    pub informative: BTreeMap<String, String>,
    /// Columns a call may release unchanged as its informative column without a domain
    /// (for methods that do not count every value, e.g. `safepub`).
    pub plain: Vec<String>,
    /// Smallest ε of one release of this source (default: [`PublicPolicy::min_epsilon`];
    /// never below it).
    pub min_epsilon: Option<f64>,
    /// Largest ε of one release of this source (default: [`PublicPolicy::max_epsilon`];
    /// never above it).
    pub max_epsilon: Option<f64>,
    /// Arguments the owner fixes, per method (method → argument → value): a public call
    /// cannot give them, and gets them. A method that is not differentially private
    /// takes every argument from here (`qi` at least); its public calls give only the
    /// source and the method.
    pub fixed: BTreeMap<String, BTreeMap<String, PolicyValue>>,
}

/// A value the owner fixes for an argument ([`SourcePolicy::fixed`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PolicyValue {
    /// `true` or `false`.
    Bool(bool),
    /// A whole number.
    Integer(i64),
    /// A number with a fraction.
    Number(f64),
    /// Text, as the argument's SQL string would be written.
    Text(String),
}

impl PolicyValue {
    /// The value as the SQL literal of the argument would be.
    pub fn to_scalar(&self) -> ScalarValue {
        match self {
            Self::Bool(b) => ScalarValue::Boolean(Some(*b)),
            Self::Integer(i) => ScalarValue::Int64(Some(*i)),
            Self::Number(f) => ScalarValue::Float64(Some(*f)),
            Self::Text(t) => ScalarValue::Utf8(Some(t.clone())),
        }
    }
}

impl std::fmt::Display for PolicyValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bool(b) => write!(f, "{b}"),
            Self::Integer(i) => write!(f, "{i}"),
            Self::Number(n) => write!(f, "{n}"),
            Self::Text(t) => write!(f, "'{}'", t.replace('\'', "''")),
        }
    }
}

impl Default for PublicPolicy {
    fn default() -> Self {
        Self {
            tables: Vec::new(),
            methods: default_public_methods(),
            allow_non_dp: false,
            min_epsilon: DEFAULT_PUBLIC_MIN_EPSILON,
            max_epsilon: None,
            person: None,
            max_release_rows: DEFAULT_PUBLIC_MAX_RELEASE_ROWS,
            sources: BTreeMap::new(),
        }
    }
}

impl PublicPolicy {
    /// The policy with `source` releasable as `policy` says (a builder step).
    pub fn with_source(mut self, source: &str, policy: SourcePolicy) -> Self {
        self.sources.insert(source.to_string(), policy);
        self
    }

    /// Whether `table` (a table's name as registered) is declared public.
    pub fn is_public_table(&self, table: &str) -> bool {
        self.tables
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => table.starts_with(prefix),
                None => table == pattern,
            })
    }

    /// Reads a policy from JSON (what the Python package sends for its dict), checked
    /// with [`Self::validate`].
    pub fn from_json(text: &str) -> Result<Self, String> {
        let policy: Self = serde_json::from_str(text).map_err(|e| format!("public policy: {e}"))?;
        policy.validate()?;
        Ok(policy)
    }

    /// Checks the policy on its own (the tables it names are checked against the session
    /// when it is registered): known methods, non-DP ones only with
    /// [`Self::allow_non_dp`] and with their arguments fixed, each column bound once,
    /// hierarchies and domains among [`Self::tables`], fixed arguments that the method
    /// takes, and ε ranges that are not empty. The error names the source, column, method
    /// or argument.
    pub fn validate(&self) -> Result<(), String> {
        for method in &self.methods {
            let Some(spec) = find_method(method) else {
                return Err(format!("public policy: unknown method '{method}'"));
            };
            if spec.guarantee != Guarantee::WholeReleaseDp && !self.allow_non_dp {
                return Err(format!(
                    "public method '{method}' does not release differentially private data: public users could read what its guarantee leaves open. Enable it only knowingly, with allow_non_dp = true in the policy (the file of dfanon --policy, server.toml's [public], PublicPolicy::allow_non_dp); its public calls then take every argument from the source's fixed arguments. The other way is anonymize_publish"
                ));
            }
        }
        check_epsilon_range("public policy", Some(self.min_epsilon), self.max_epsilon)?;
        if self.max_release_rows == 0 {
            return Err("public policy: max_release_rows must be at least 1".into());
        }
        if self.tables.iter().any(|pattern| pattern.trim() == "*") {
            return Err("public policy: tables = [\"*\"] would let public users read every table row by row, the sources included; name the published tables (hierarchies, code lists) or a prefix only they have, e.g. \"nps_hierarchy_*\"".into());
        }
        for (source, policy) in &self.sources {
            let table = source.rsplit('.').next().unwrap_or(source);
            if self.is_public_table(table) {
                return Err(format!(
                    "public policy: the source '{source}' is among tables (what public users read row by row); a source reaches public users only through its releases: change the tables patterns so that they do not match it"
                ));
            }
            policy.validate(self, source)?;
        }
        Ok(())
    }

    /// The source policy of the table `key` (resolved as `catalog.schema.table`), where
    /// `resolve` resolves a name as the owner wrote it in [`Self::sources`].
    pub fn source(
        &self,
        key: &str,
        resolve: impl Fn(&str) -> String,
    ) -> Option<(&str, &SourcePolicy)> {
        self.sources
            .iter()
            .find(|(name, _)| resolve(name) == key)
            .map(|(name, policy)| (name.as_str(), policy))
    }
}

impl SourcePolicy {
    /// Binds the quasi-identifier `column` to the published hierarchy `table` (a builder
    /// step).
    pub fn qi(mut self, column: &str, table: &str) -> Self {
        self.qi.insert(column.to_string(), table.to_string());
        self
    }

    /// Binds the informative column `column` to the public domain `table` (a builder
    /// step).
    pub fn informative(mut self, column: &str, table: &str) -> Self {
        self.informative
            .insert(column.to_string(), table.to_string());
        self
    }

    /// Lets calls release `column` unchanged as their informative column (a builder step).
    pub fn plain(mut self, column: &str) -> Self {
        self.plain.push(column.to_string());
        self
    }

    /// Fixes the argument `name` of `method` to `value` (a builder step).
    pub fn fixed(mut self, method: &str, name: &str, value: PolicyValue) -> Self {
        self.fixed
            .entry(method.to_string())
            .or_default()
            .insert(name.to_string(), value);
        self
    }

    /// The methods public users may call on this source.
    pub fn methods<'a>(&'a self, policy: &'a PublicPolicy) -> &'a [String] {
        self.methods.as_deref().unwrap_or(&policy.methods)
    }

    /// The ε range of one release: `(min, max)`.
    pub fn epsilon_range(&self, policy: &PublicPolicy) -> (f64, Option<f64>) {
        let min = self
            .min_epsilon
            .map_or(policy.min_epsilon, |m| m.max(policy.min_epsilon));
        let max = match (self.max_epsilon, policy.max_epsilon) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (min, max)
    }

    fn validate(&self, policy: &PublicPolicy, source: &str) -> Result<(), String> {
        let at = format!("public policy, source '{source}'");
        for method in self.methods(policy) {
            if !policy.methods.contains(method) {
                return Err(format!(
                    "{at}: method '{method}' is not among the policy's methods ({})",
                    policy.methods.join(", ")
                ));
            }
            let spec =
                find_method(method).ok_or_else(|| format!("{at}: unknown method '{method}'"))?;
            if spec.guarantee != Guarantee::WholeReleaseDp
                && !self.fixed.get(method).is_some_and(|f| f.contains_key("qi"))
            {
                return Err(format!(
                    "{at}: method '{method}' is not differentially private, so its public calls take every argument from the owner: give them in fixed.{method} (qi at least)"
                ));
            }
        }
        for (column, table) in self.qi.iter().chain(&self.informative) {
            if !policy.is_public_table(table) {
                return Err(format!(
                    "{at}: column '{column}' is bound to table '{table}', which is not among the public tables ({}): public users must be able to read the hierarchies and domains their releases use",
                    policy.tables.join(", ")
                ));
            }
        }
        let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
        let named = self
            .qi
            .keys()
            .map(|c| (c, "qi"))
            .chain(self.informative.keys().map(|c| (c, "informative")))
            .chain(self.plain.iter().map(|c| (c, "plain")));
        for (column, role) in named {
            if let Some(first) = seen.insert(column, role) {
                return Err(format!(
                    "{at}: column '{column}' is both {first} and {role}; give it one role"
                ));
            }
        }
        if self.qi.is_empty() && self.fixed.values().all(|f| !f.contains_key("qi")) {
            return Err(format!(
                "{at}: no quasi-identifier is bound (qi = {{ column = \"hierarchy table\" }}), so no call could release it"
            ));
        }
        check_epsilon_range(&at, self.min_epsilon, self.max_epsilon)?;
        let (min, max) = self.epsilon_range(policy);
        if max.is_some_and(|max| max < min) {
            return Err(format!(
                "{at}: the ε range is empty (at least {min}, at most {})",
                max.unwrap_or(f64::INFINITY)
            ));
        }
        for (method, arguments) in &self.fixed {
            if !self.methods(policy).contains(method) {
                return Err(format!(
                    "{at}: fixed arguments for method '{method}', which the source does not allow"
                ));
            }
            let params = find_method(method)
                .map(|m| m.argument_names())
                .unwrap_or_default();
            for (name, value) in arguments {
                if let ("k" | "l", PolicyValue::Integer(v)) = (name.as_str(), value) {
                    if *v < 2 {
                        return Err(format!(
                            "{at}: {name} = {v} for method '{method}' would release classes of a single record (or fewer values); give 2 or more"
                        ));
                    }
                }
                if NOT_FIXABLE.contains(&name.as_str()) {
                    return Err(format!(
                        "{at}: argument '{name}' cannot be fixed (the source and method are the call's; seed and max_release_rows are never public)"
                    ));
                }
                if !params.contains(&name.as_str()) {
                    return Err(format!(
                        "{at}: method '{method}' has no argument '{name}'; its arguments are: {}",
                        params.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }
}

fn check_epsilon_range(at: &str, min: Option<f64>, max: Option<f64>) -> Result<(), String> {
    for (name, value) in [("min_epsilon", min), ("max_epsilon", max)] {
        if let Some(v) = value {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{at}: {name} = {v} must be a positive number"));
            }
        }
    }
    if let (Some(min), Some(max)) = (min, max) {
        if max < min {
            return Err(format!(
                "{at}: max_epsilon = {max} is below min_epsilon = {min}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nps() -> PublicPolicy {
        serde_json::from_str(
            r#"{"tables": ["h_*"], "sources": {"nps": {"qi": {"age": "h_age"}, "informative": {"disease": "h_disease"}}}}"#,
        )
        .expect("policy parses")
    }

    #[test]
    fn a_policy_from_json_has_the_defaults_it_does_not_name() {
        let policy = nps();
        assert_eq!(policy.methods, ["dp_histogram", "mst", "safepub"]);
        assert_eq!(policy.min_epsilon, DEFAULT_PUBLIC_MIN_EPSILON);
        assert_eq!(policy.validate(), Ok(()));
        let source = &policy.sources["nps"];
        assert_eq!(source.qi["age"], "h_age");
        assert_eq!(source.epsilon_range(&policy), (0.01, None));
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = PublicPolicy::from_json(r#"{"tabels": []}"#).expect_err("typo refused");
        assert!(err.contains("unknown field `tabels`"), "{err}");
    }

    /// The demo source's policy in `policy`.
    fn source(policy: &mut PublicPolicy) -> &mut SourcePolicy {
        policy.sources.entry("nps".into()).or_default()
    }

    /// A change to a valid policy that makes it wrong.
    type Change = fn(&mut PublicPolicy);

    #[test]
    fn each_wrong_declaration_is_named() {
        let cases: [(&str, Change, &str); 12] = [
            ("every table public", |p| p.tables.push("*".into()), "tables = [\"*\"] would let public users read every table row by row"),
            ("a source public", |p| p.tables.push("n*".into()), "the source 'nps' is among tables"),
            ("k of one", |p| { p.allow_non_dp = true; p.methods.push("kanon".into()); source(p).fixed.insert("kanon".into(), BTreeMap::from([("qi".to_string(), PolicyValue::Text("age".into())), ("k".to_string(), PolicyValue::Integer(1))])); }, "k = 1 for method 'kanon' would release classes of a single record"),
            ("non-DP method", |p| p.methods.push("kanon".into()), "public method 'kanon' does not release differentially private data"),
            ("hierarchy not public", |p| { source(p).qi.insert("sex".into(), "secret".into()); }, "column 'sex' is bound to table 'secret', which is not among the public tables"),
            ("two roles", |p| source(p).plain.push("age".into()), "column 'age' is both qi and plain"),
            ("empty ε range", |p| { source(p).min_epsilon = Some(2.0); source(p).max_epsilon = Some(1.0) }, "max_epsilon = 1 is below min_epsilon = 2"),
            ("source max below global min", |p| { p.min_epsilon = 0.5; source(p).max_epsilon = Some(0.1) }, "the ε range is empty (at least 0.5, at most 0.1)"),
            ("unknown fixed argument", |p| { source(p).fixed.insert("dp_histogram".into(), BTreeMap::from([("k".to_string(), PolicyValue::Integer(5))])); }, "method 'dp_histogram' has no argument 'k'"),
            ("seed fixed", |p| { source(p).fixed.insert("safepub".into(), BTreeMap::from([("seed".to_string(), PolicyValue::Integer(5))])); }, "argument 'seed' cannot be fixed"),
            ("method outside the policy", |p| source(p).methods = Some(vec!["ipa".into()]), "method 'ipa' is not among the policy's methods"),
            ("non-DP without fixed qi", |p| { p.allow_non_dp = true; p.methods.push("kanon".into()); }, "method 'kanon' is not differentially private, so its public calls take every argument from the owner"),
        ];
        for (what, change, wanted) in cases {
            let mut policy = nps();
            change(&mut policy);
            let err = policy.validate().expect_err(what);
            assert!(err.contains(wanted), "{what}: {err}");
        }
    }

    #[test]
    fn a_non_dp_method_with_its_arguments_fixed_is_accepted() {
        let mut policy = nps();
        policy.allow_non_dp = true;
        policy.methods.push("kanon".into());
        let fixed = BTreeMap::from([
            ("qi".to_string(), PolicyValue::Text("age".into())),
            ("k".to_string(), PolicyValue::Integer(5)),
        ]);
        source(&mut policy).fixed.insert("kanon".into(), fixed);
        assert_eq!(policy.validate(), Ok(()));
    }
}
