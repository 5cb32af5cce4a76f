//! What several topics share: the release policy of the small test tables.

use datafusion_anonymize::{PublicPolicy, SourcePolicy};

/// The test tables' policy for public users: the hierarchies `h_*` are public, and each of
/// `sources` may be released with `age` and `sex` generalized along `h_age` and `h_sex`
/// and `disease` counted over the domain `h_disease`.
pub fn h_policy(sources: &[&str]) -> PublicPolicy {
    let source = SourcePolicy::default()
        .qi("age", "h_age")
        .qi("sex", "h_sex")
        .informative("disease", "h_disease");
    let policy = PublicPolicy {
        tables: vec!["h_*".into()],
        ..PublicPolicy::default()
    };
    sources.iter().fold(policy, |policy, name| {
        policy.with_source(name, source.clone())
    })
}
