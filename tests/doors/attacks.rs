//! The public door's attacks (`attacks.txt`, over `setup.sql` and `policy.toml`), read by
//! the test of each door: the library's `public_session`, `dfanon --public` and
//! `dfanon-server` include this file with `#[path]`; the Python package's test reads the
//! same text files.

#![allow(dead_code)]

/// The owner's tables: the published hierarchies and the two neighbouring sources.
pub const SETUP: &str = include_str!("setup.sql");

/// The release policy over both sources (TOML, as `dfanon --policy` and server.toml's
/// `[public]` table read it).
pub const POLICY: &str = include_str!("policy.toml");

/// The neighbouring sources: `visits` and `visits` with one record more.
pub const SOURCES: [&str; 2] = ["visits", "visits_plus"];

/// The budget of each source the statements assume.
pub const EPSILON_BUDGET: f64 = 1.0;

/// What a public user must see of one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// It runs.
    Runs,
    /// It is refused, the message containing this text.
    Refused(String),
}

/// One statement of `attacks.txt`.
#[derive(Debug, Clone)]
pub struct Attack {
    /// The comment above it: what it tried.
    pub label: String,
    /// What a public user must see.
    pub expect: Expect,
    /// The statement, `{t}` standing for the source.
    pub sql: String,
}

impl Attack {
    /// The statement against `source`.
    pub fn on(&self, source: &str) -> String {
        self.sql.replace("{t}", source)
    }
}

/// The statements of `attacks.txt`, in order.
pub fn attacks() -> Vec<Attack> {
    let mut label = String::new();
    let mut expect = None;
    let mut attacks = Vec::new();
    for line in include_str!("attacks.txt").lines().map(str::trim) {
        if let Some(comment) = line.strip_prefix('#') {
            if comment
                .trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase())
            {
                label = comment.trim().to_string();
            }
        } else if line.is_empty() {
        } else if line == "ok" {
            expect = Some(Expect::Runs);
        } else if let Some(text) = line.strip_prefix("! ") {
            expect = Some(Expect::Refused(text.to_string()));
        } else {
            let expect = expect
                .take()
                .unwrap_or_else(|| panic!("no expectation for {line}"));
            attacks.push(Attack {
                label: label.clone(),
                expect,
                sql: line.to_string(),
            });
        }
    }
    attacks
}

/// Checks what one door showed: for each source of [`SOURCES`], the outcome of each
/// statement in order (`Ok` with the rows as text, or `Err` with the message). Every
/// outcome must be what its line says, and the two sources' outcomes, each source's name
/// put back to `{t}`, must be the same.
pub fn check(door: &str, outcomes: &[Vec<Result<String, String>>; 2]) {
    let attacks = attacks();
    for (source, seen) in SOURCES.iter().zip(outcomes) {
        assert_eq!(seen.len(), attacks.len(), "{door}: outcomes on {source}");
        for (attack, outcome) in attacks.iter().zip(seen) {
            match (&attack.expect, outcome) {
                (Expect::Runs, Ok(_)) => {}
                (Expect::Refused(text), Err(message)) if message.contains(text.as_str()) => {}
                (expected, outcome) => panic!(
                    "{door}, {source}, {}: {}\nexpected {expected:?}, saw {outcome:?}",
                    attack.label,
                    attack.on(source)
                ),
            }
        }
    }
    let normal = |source: &str, outcome: &Result<String, String>| match outcome {
        Ok(rows) => Ok(rows.replace(source, "{t}")),
        Err(message) => Err(message.replace(source, "{t}")),
    };
    for (i, attack) in attacks.iter().enumerate() {
        let a = normal(SOURCES[0], &outcomes[0][i]);
        let b = normal(SOURCES[1], &outcomes[1][i]);
        assert_eq!(
            a, b,
            "{door}, {}: {} tells the neighbours apart",
            attack.label, attack.sql
        );
    }
}
