//! The guarantee card of a release: the facts its guarantee text states, machine-readable
//! (`anonymize_manifest(...)`, and the JSON file written beside every `COPY … TO` of a
//! release). Method and version, the source (by a keyed fingerprint), the privacy unit and
//! the neighbour relation, ε and δ with the ledger entry they were charged to, the
//! hierarchies' fingerprints, what is proven (with the METHODS section) and what is not,
//! and whether the draw was seeded; its one-sentence headline opens the release's report.
//!
//! Everything on the card is public: the public metadata, facts of the request, and the
//! fingerprints — the source's keyed by the owner's secret key ([`super::fingerprint`]),
//! the hierarchies' in the clear (hierarchies declare public domains).

use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SessionState;
use serde::{Deserialize, Serialize};

use super::fingerprint::{fingerprint, keyed_fingerprint};
use crate::budget;
use crate::engine::{AnonymizeRequest, ReleaseOutput};
use crate::method::Guarantee;
use crate::privacy_unit::PrivacyUnit;

/// The card's `format`.
pub const CARD_FORMAT: &str = "datafusion-anonymize guarantee card";
/// The card's `version`: raised when a field changes meaning.
pub const CARD_VERSION: u32 = 1;

/// The guarantee card of one release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuaranteeCard {
    /// [`CARD_FORMAT`].
    pub format: String,
    /// [`CARD_VERSION`].
    pub version: u32,
    /// One sentence: what was released and what protects it ([`headline`]).
    pub headline: String,
    /// The software and version that drew the release.
    pub software: String,
    /// The method's name.
    pub method: String,
    /// `differential privacy`, `differential privacy of some steps only`, `syntactic` or
    /// `none (seeded)`.
    pub guarantee_kind: String,
    /// The source table.
    pub source: SourceCard,
    /// The privacy unit, as the metadata states it.
    pub privacy_unit: String,
    /// Which tables the guarantee calls neighbours.
    pub neighbours: String,
    /// ε per privacy unit; `null` for a syntactic guarantee or a seeded draw.
    pub epsilon: Option<f64>,
    /// δ per privacy unit; `null` likewise.
    pub delta: Option<f64>,
    /// What the release charged, and where.
    pub ledger: LedgerEntry,
    /// The hierarchy of each generalized quasi-identifier.
    pub hierarchies: Vec<HierarchyCard>,
    /// What is proven: the release's `guarantee` text.
    pub proven: String,
    /// Where docs/METHODS.md proves it, as `docs/METHODS.md §2.12`.
    pub methods_section: String,
    /// What is not proven.
    pub not_proven: Vec<String>,
    /// Whether the draw came from the caller's seed (a reproducible trial: no guarantee).
    pub seeded: bool,
    /// Rows released.
    pub released_rows: u64,
    /// The release's public metadata, as `anonymize_metadata` lists it.
    pub metadata: Vec<MetadataEntry>,
}

/// The source of a release on its card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceCard {
    /// The source table as the call named it.
    pub table: String,
    /// Its contents' fingerprint keyed by the owner's secret key (`hmac-sha256:<hex>`);
    /// `null` without a key.
    pub fingerprint: Option<String>,
    /// How the fingerprint is computed, or why there is none.
    pub fingerprint_note: String,
}

/// The ledger entry of a release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The ledger account charged (`privacy_budget()` lists it).
    pub account: String,
    /// ε charged to the account when the release was drawn (0 when seeded or syntactic).
    pub epsilon_charged: f64,
    /// δ charged likewise.
    pub delta_charged: f64,
    /// The ledger file, when the session keeps one (`anonymize.ledger_path`).
    pub ledger_file: Option<String>,
}

/// The hierarchy of one quasi-identifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HierarchyCard {
    /// The quasi-identifier.
    pub column: String,
    /// The hierarchy table as the call named it.
    pub table: String,
    /// SHA-256 of its contents (`sha256:<hex>`), `null` for a hierarchy the method builds.
    pub fingerprint: Option<String>,
}

/// One `(key, value)` of the public metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetadataEntry {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// The value of `key` in `metadata`.
fn get<'a>(metadata: &'a [(String, String)], key: &str) -> Option<&'a str> {
    metadata
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The unit in a sentence: `row` or `person ('pid', at most 3 rows each)`.
fn unit_words(unit: &PrivacyUnit, dp: bool) -> String {
    match unit {
        PrivacyUnit::Row => "row".into(),
        PrivacyUnit::Person { column, max_rows } if dp => {
            format!("person ('{column}', at most {max_rows} row(s) each)")
        }
        PrivacyUnit::Person { column, .. } => format!("person ('{column}')"),
    }
}

/// `(ε, δ)-differential privacy`, or `ε-differential privacy` when δ is 0.
fn dp_words(epsilon: f64, delta: f64) -> String {
    match delta == 0.0 {
        true => format!("{epsilon}-differential privacy"),
        false => format!("({epsilon}, {delta})-differential privacy"),
    }
}

/// The card's one sentence: the method, the source, the rows and what protects them.
pub fn headline(request: &AnonymizeRequest, metadata: &[(String, String)]) -> String {
    let spec = request.method.spec();
    let method = spec.name;
    let source = &request.source_name;
    let rows = get(metadata, "released_rows").unwrap_or("?");
    let section = spec.methods_section;
    if request.seed.is_some() {
        return format!(
            "A seeded trial of method {method} on '{source}' ({rows} rows) with no privacy guarantee: anyone who has the seed and the source can draw it again, so it is not for publication."
        );
    }
    let cost = request.cost();
    let dp = spec.is_differentially_private();
    let unit = unit_words(&request.unit, dp);
    match spec.guarantee {
        Guarantee::WholeReleaseDp => format!(
            "Method {method} released {rows} rows of '{source}' with {} per {unit} for everything it shows (docs/METHODS.md {section}).",
            dp_words(cost.epsilon, cost.delta)
        ),
        Guarantee::PartlyDp => format!(
            "Method {method} released {rows} rows of '{source}' that are not differentially private as a whole: epsilon = {} covers only the steps docs/METHODS.md {section} names.",
            cost.epsilon
        ),
        Guarantee::Syntactic => {
            let property = get(metadata, "privacy_models")
                .map(str::to_string)
                .or_else(|| get(metadata, "k").map(|k| format!("k-anonymity (k = {k})")))
                .unwrap_or_else(|| "a property of the released classes".into());
            format!(
                "Method {method} released {rows} rows of '{source}' with a syntactic guarantee, not differential privacy: {property}, per {unit} (docs/METHODS.md {section})."
            )
        }
    }
}

/// The neighbour relation of the guarantee.
fn neighbours(request: &AnonymizeRequest) -> String {
    if !request.method.spec().is_differentially_private() {
        return "none: the guarantee is a property of the released classes, not a bound over neighbouring tables".into();
    }
    match &request.unit {
        PrivacyUnit::Row => {
            "tables that differ by one row added or removed (docs/METHODS.md §0.3)".into()
        }
        PrivacyUnit::Person { column, max_rows } => format!(
            "tables that differ by one person (column '{column}') added or removed, with the at most {max_rows} of their rows the release keeps (docs/METHODS.md §9.1-9.2)"
        ),
    }
}

/// What the guarantee does not cover.
fn not_proven(request: &AnonymizeRequest) -> Vec<String> {
    let spec = request.method.spec();
    let mut out = Vec::new();
    if request.seed.is_some() {
        out.push("Any privacy: the draw came from the caller's seed, so anyone who has it and the source can draw the same release again.".to_string());
    }
    match spec.guarantee {
        Guarantee::WholeReleaseDp => out.push(
            "Individuals beyond the privacy unit: related people, or a person with rows in several units, are protected only by group privacy (epsilon times the number of units).".into(),
        ),
        Guarantee::PartlyDp => out.push(format!(
            "The release as a whole: it is not differentially private (docs/METHODS.md {}); epsilon covers only the steps the guarantee names.",
            spec.methods_section
        )),
        Guarantee::Syntactic => out.push(
            "Differential privacy: the guarantee bounds how many released rows share a class, not what an attacker with background knowledge learns; anonymize_attack measures that on the release.".into(),
        ),
    }
    out.push("What several releases of the same source reveal together beyond what the ledger adds up: the ledger sums their epsilon and delta; syntactic releases of one source can be combined.".into());
    if request.date_shift.is_some() {
        out.push("The shifted dates: per-person date shifting is masking before the method, not part of the guarantee.".into());
    }
    out
}

/// The guarantee card of `output`, the release of `request`, in `state`'s session. Reads
/// the source (when the owner has a secret key) and every hierarchy table once.
pub async fn guarantee_card(
    request: &AnonymizeRequest,
    output: &ReleaseOutput,
    state: &SessionState,
) -> Result<GuaranteeCard> {
    let spec = request.method.spec();
    let metadata = &output.metadata;
    let seeded = request.seed.is_some();
    let charged = match seeded {
        true => budget::Cost::NONE,
        false => request.cost(),
    };
    let (epsilon, delta) = match (spec.is_differentially_private(), seeded) {
        (true, false) => (Some(charged.epsilon), Some(charged.delta)),
        _ => (None, None),
    };
    let source = match &request.pseudonym_key {
        Some(key) => SourceCard {
            table: request.source_name.clone(),
            fingerprint: Some(keyed_fingerprint(key, &request.source, state).await?),
            fingerprint_note: "HMAC-SHA-256 under the owner's secret key of the SHA-256 of the source's contents as Arrow IPC, partition by partition: the same contents give the same fingerprint under the same key; without the key it reveals nothing".into(),
        },
        None => SourceCard {
            table: request.source_name.clone(),
            fingerprint: None,
            fingerprint_note: "not computed: the fingerprint is keyed by the owner's secret key (RegisterOptions::pseudonym_key, or dfanon --pseudonym-key-file), since a plain hash of the source would tell neighbouring tables apart".into(),
        },
    };
    let mut hierarchies = Vec::new();
    if spec.takes_hierarchies() {
        for qi in &request.qi {
            let fingerprint = match &qi.hierarchy {
                Some(table) => Some(format!("sha256:{}", fingerprint(&[table], state).await?)),
                None => None,
            };
            hierarchies.push(HierarchyCard {
                column: qi.column.clone(),
                table: qi.hierarchy_name.clone(),
                fingerprint,
            });
        }
    }
    let released_rows = get(metadata, "released_rows")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| output.rows.row_count());
    let guarantee_kind = match (seeded, spec.guarantee) {
        (true, _) => "none (seeded)",
        (false, Guarantee::WholeReleaseDp) => "differential privacy",
        (false, Guarantee::PartlyDp) => "differential privacy of some steps only",
        (false, Guarantee::Syntactic) => "syntactic",
    };
    let ledger_file = budget::config::options(state.config_options())
        .ledger_path
        .map(|path| path.display().to_string());
    Ok(GuaranteeCard {
        format: CARD_FORMAT.into(),
        version: CARD_VERSION,
        headline: headline(request, metadata),
        software: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        method: spec.name.into(),
        guarantee_kind: guarantee_kind.into(),
        source,
        privacy_unit: request.unit.describe(spec.is_differentially_private()),
        neighbours: neighbours(request),
        epsilon,
        delta,
        ledger: LedgerEntry {
            account: request.account(),
            epsilon_charged: charged.epsilon,
            delta_charged: charged.delta,
            ledger_file,
        },
        hierarchies,
        proven: get(metadata, "guarantee").unwrap_or_default().to_string(),
        methods_section: format!("docs/METHODS.md {}", spec.methods_section),
        not_proven: not_proven(request),
        seeded,
        released_rows,
        metadata: metadata
            .iter()
            .map(|(key, value)| MetadataEntry {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
    })
}

impl GuaranteeCard {
    /// The card as pretty-printed JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self)
            .map_err(|e| DataFusionError::Execution(format!("the guarantee card: {e}")))
    }
}
