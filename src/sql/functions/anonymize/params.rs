//! The arguments of `anonymize(...)` and its views: the ones every method shares, then each
//! method's, merged by name into the one table help and the argument binder read.

use std::sync::LazyLock;

use crate::method::{MethodSpec, COMMON_PARAMS, METHODS};
use crate::params::{ParamDefault, ParamSpec};

/// Every parameter `anonymize` accepts: the common ones, then each method's, merged by
/// name. A parameter that only some methods accept says which in its description; one
/// whose default differs between methods lists each.
pub static ANONYMIZE_PARAMS: LazyLock<Vec<ParamSpec>> = LazyLock::new(merged_params);

fn merged_params() -> Vec<ParamSpec> {
    let mut names: Vec<&'static str> = Vec::new();
    for spec in METHODS.iter().flat_map(|m| m.params) {
        if !names.contains(&spec.name) {
            names.push(spec.name);
        }
    }
    let mut out: Vec<ParamSpec> = COMMON_PARAMS.to_vec();
    out[1].doc = leak(format!(
        "anonymization method: {}",
        METHODS
            .iter()
            .map(|m| format!("'{}'", m.name))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for name in names {
        let owners: Vec<(&MethodSpec, &ParamSpec)> = METHODS
            .iter()
            .filter_map(|m| m.params.iter().find(|p| p.name == name).map(|p| (*m, p)))
            .collect();
        let first = owners[0].1;
        let mut spec = *first;
        if owners.len() < METHODS.len() {
            let which: Vec<&str> = owners.iter().map(|(m, _)| m.name).collect();
            spec.doc = leak(format!("{}: {}", which.join(", "), first.doc));
        }
        if owners.iter().any(|(_, p)| p.default != first.default) {
            let each: Vec<String> = owners
                .iter()
                .map(|(m, p)| {
                    let default = p.default.describe().unwrap_or_else(|| "required".into());
                    format!("{}: {default}", m.name)
                })
                .collect();
            spec.default = ParamDefault::Optional(leak(each.join("; ")));
        }
        out.push(spec);
    }
    out
}

/// Texts of the merged table, built once per process.
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}
