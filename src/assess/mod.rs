//! Reading a table for `anonymize_assess(...)` and `anonymize_class_sizes(...)`: DataFusion
//! aggregates only (GROUP BY the quasi-identifiers and the sensitive columns), so Rust sees
//! one row per (class, value) combination, never the raw rows. The rows are coded into
//! dense class and value ids; the figures come from [`crate::privacy::risk`] and
//! [`crate::privacy::assessment`] (formulas: docs/METHODS.md §7.5).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray, UInt32Array,
};
use datafusion::arrow::compute::{sort_to_indices, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::row::OwnedRow;
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{cast as cast_expr, lit};
use datafusion::prelude::SessionContext;

pub(crate) mod grouped;
pub(crate) mod individual_risk;
mod persons;
pub(crate) mod suda;

use crate::privacy::assessment::{Rows, SensitiveFigures};
use crate::privacy::population::{
    estimate_from_population_size_with, population_size_from_sampling_fraction, Estimate,
    PopulationUniquenessModel, SolverConfig,
};
use crate::privacy::risk::{ClassRisk, PopulationRisk};
use crate::sensitive::has_natural_order;
use crate::session::reading_error;
pub(crate) use grouped::Entry;
use grouped::{
    column, concat_column, counts_of, grouped, null_qi, qi_text, row_ids, suppressed_flag,
};
use individual_risk::{weight_aggregates, weight_sums, weighted_entries};
use persons::{distinct_persons, persons_per_class};

/// Schema of `anonymize_assess`.
pub fn assess_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("sensitive", DataType::Utf8, true),
        Field::new("value", DataType::Float64, true),
        Field::new("note", DataType::Utf8, true),
    ]))
}

/// Schema of `anonymize_class_sizes`.
pub fn class_sizes_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("size", DataType::Int64, false),
        Field::new("classes", DataType::Int64, false),
        Field::new("records", DataType::Int64, false),
    ]))
}

/// How the population is given.
#[derive(Debug, Clone)]
pub(crate) enum Population {
    /// Not given: the table is its own population.
    None,
    /// A number of records the table was sampled from uniformly.
    Rows(u64),
    /// The share of the population the table holds: `round(rows / f)` records.
    Fraction(f64),
    /// A table (its name, its provider) holding the whole population.
    Table(String, Arc<dyn TableProvider>),
}

/// A validated call of `anonymize_assess(...)` or `anonymize_class_sizes(...)`.
#[derive(Debug, Clone)]
pub(crate) struct AssessRequest {
    pub(crate) source_name: String,
    pub(crate) source: Arc<dyn TableProvider>,
    pub(crate) qi: Vec<String>,
    pub(crate) sensitive: Vec<(String, DataType)>,
    pub(crate) population: Population,
    pub(crate) risk_threshold: f64,
    /// The sampling-weight column (sdcMicro's `weightVar`): adds the individual and global
    /// risk figures.
    pub(crate) weights: Option<String>,
    /// `max_global_risk` of the global risk threshold (sdcMicro's `measure_risk`).
    pub(crate) max_global_risk: f64,
    /// The column identifying a person: class figures count distinct persons.
    pub(crate) person: Option<String>,
}

/// What one grouped pass over a table gives: the entries of `anonymize_assess`, the
/// class-size distribution of `anonymize_class_sizes`, and the grouped rows themselves.
#[derive(Debug)]
pub(crate) struct Assessed {
    pub(crate) entries: Vec<Entry>,
    /// `(size, classes, records)`: how many classes that are not suppressed have each size
    /// in rows, and their records, by size (as `anonymize_class_sizes` gives them).
    pub(crate) sizes: Vec<(u64, u64, u64)>,
    /// One row per (suppressed flag, quasi-identifiers as text, sensitive values): those
    /// columns in that order, then the row count (then the weights' sums).
    pub(crate) batches: Vec<RecordBatch>,
}

/// The entries of `anonymize_assess`.
pub(crate) async fn assess(request: &AssessRequest, state: &SessionState) -> Result<Vec<Entry>> {
    Ok(assess_table(request, state).await?.entries)
}

/// [`assess`], with the class sizes and the grouped rows of the same pass.
pub(crate) async fn assess_table(
    request: &AssessRequest,
    state: &SessionState,
) -> Result<Assessed> {
    let ctx = SessionContext::new_with_state(state.clone());
    let q = request.qi.len();
    let mut group = vec![suppressed_flag(&request.qi).alias("__assess_suppressed")];
    group.extend(qi_text(&request.qi));
    group.extend(request.sensitive.iter().map(|(s, _)| column(s)));
    let weights = match &request.weights {
        Some(w) => weight_aggregates(w),
        None => Vec::new(),
    };
    let batches = grouped(ctx.read_table(request.source.clone())?, group, weights)
        .await
        .map_err(|e| {
            reading_error(
                "anonymize_assess",
                &format!("table '{}'", request.source_name),
                e,
            )
        })?;
    let Some(first) = batches.first() else {
        return exec_err!(
            "anonymize_assess(): table '{}' is empty",
            request.source_name
        );
    };
    let schema = first.schema();
    let flags = concat_column(&batches, 0, &schema)?;
    let flags = flags.as_boolean();
    let counts = counts_of(&batches, 1 + q + request.sensitive.len())?;
    let qi_arrays: Vec<ArrayRef> = (0..q)
        .map(|a| concat_column(&batches, 1 + a, &schema))
        .collect::<Result<_>>()?;
    if let Some(a) = qi_arrays.iter().position(|array| array.null_count() > 0) {
        return null_qi("anonymize_assess", &request.qi[a], &request.source_name);
    }
    let (class_of, class_keys) = row_ids(&qi_arrays)?;

    let total: u64 = counts.iter().sum();
    let mut suppressed = 0u64;
    let mut class_size = vec![0u64; class_keys.len()];
    for (r, &n) in counts.iter().enumerate() {
        if flags.value(r) {
            suppressed += n;
        } else {
            class_size[class_of[r] as usize] += n;
        }
    }
    let mut histogram: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for &n in class_size.iter().filter(|&&n| n > 0) {
        let (classes, records) = histogram.entry(n).or_default();
        *classes += 1;
        *records += n;
    }
    let class_sizes: Vec<(u64, u64, u64)> = histogram
        .into_iter()
        .map(|(size, (classes, records))| (size, classes, records))
        .collect();
    if let Some(person) = &request.person {
        class_size = persons_per_class(&ctx, request, person, &class_keys).await?;
    }
    // Classes that only hold suppressed rows are not classes.
    let sizes: Vec<(usize, u64)> = class_size
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, n)| n > 0)
        .collect();
    let risk = ClassRisk::from_sizes(sizes.iter().map(|s| s.1), request.risk_threshold);
    let mut out: Vec<Entry> = Vec::new();
    let persons = match &request.person {
        Some(person) => Some(distinct_persons(&ctx, request, person).await?),
        None => None,
    };
    let mut put = |key: &str, sensitive: Option<&str>, value: f64| {
        out.push((
            key.to_string(),
            sensitive.map(str::to_string),
            Some(value),
            None,
        ))
    };
    put("rows", None, total as f64);
    if let Some(persons) = persons {
        put("persons", None, persons as f64);
    }
    put("suppressed", None, suppressed as f64);
    put("classes", None, risk.classes as f64);
    put("min_class_size", None, risk.min_class_size as f64);
    put("avg_class_size", None, risk.avg_class_size);
    put("sample_uniques", None, risk.sample_uniques as f64);
    put("prosecutor_risk_max", None, risk.prosecutor_risk_max);
    put("prosecutor_risk_avg", None, risk.prosecutor_risk_avg);
    put("risk_threshold", None, request.risk_threshold);
    put("records_at_risk", None, risk.records_at_risk);
    let mut population_size: Option<u64> = None;
    let population = match &request.population {
        Population::Fraction(f) => match population_size_from_sampling_fraction(total, *f) {
            Ok(rows) => Population::Rows(rows),
            Err(e) => return exec_err!("anonymize_assess(): sampling_fraction = {f}: {e}"),
        },
        other => other.clone(),
    };
    match &population {
        Population::None | Population::Fraction(_) => {
            put("marketer_risk", None, risk.prosecutor_risk_avg)
        }
        Population::Rows(rows) => {
            if *rows < total {
                return exec_err!(
                    "anonymize_assess(): population = {rows} is smaller than table '{}' ({total} rows)",
                    request.source_name
                );
            }
            // Uniform sampling: a class of f sampled records stands for f · N / n.
            let scale = *rows as f64 / total as f64;
            let pop = PopulationRisk::from_pairs(sizes.iter().map(|&(_, f)| (f, f as f64 * scale)));
            put("population", None, *rows as f64);
            put("journalist_risk_max", None, pop.journalist_risk_max);
            put("marketer_risk", None, pop.marketer_risk);
            population_size = Some(*rows);
        }
        Population::Table(name, provider) => {
            let pop_batches = grouped(
                ctx.read_table(provider.clone())?,
                qi_text(&request.qi),
                Vec::new(),
            )
            .await
            .map_err(|e| {
                reading_error("anonymize_assess", &format!("population table '{name}'"), e)
            })?;
            let mut pop_size: HashMap<OwnedRow, u64> = HashMap::new();
            let mut pop_total = 0u64;
            if let Some(pfirst) = pop_batches.first() {
                let pschema = pfirst.schema();
                let arrays: Vec<ArrayRef> = (0..q)
                    .map(|a| concat_column(&pop_batches, a, &pschema))
                    .collect::<Result<_>>()?;
                let (ids, keys) = row_ids(&arrays)?;
                let pcounts = counts_of(&pop_batches, q)?;
                let mut by_id = vec![0u64; keys.len()];
                for (r, &n) in pcounts.iter().enumerate() {
                    by_id[ids[r] as usize] += n;
                    pop_total += n;
                }
                pop_size = keys.into_iter().zip(by_id).collect();
            }
            let mut pairs = Vec::with_capacity(sizes.len());
            for &(c, f) in &sizes {
                let big = pop_size.get(&class_keys[c]).copied().unwrap_or(0);
                if big < f {
                    return exec_err!(
                        "anonymize_assess(): population table '{name}' holds {big} record(s) with quasi-identifier values that {f} record(s) of '{}' have; the population must contain the table",
                        request.source_name
                    );
                }
                pairs.push((f, big as f64));
            }
            let pop = PopulationRisk::from_pairs(pairs);
            put("population", None, pop_total as f64);
            put("journalist_risk_max", None, pop.journalist_risk_max);
            put("marketer_risk", None, pop.marketer_risk);
            population_size = Some(pop_total);
        }
    }
    let mut weighted = Vec::new();
    if let Some(w) = &request.weights {
        let first = 1 + q + request.sensitive.len() + 1;
        let sums = weight_sums(
            &batches,
            first,
            &counts,
            "anonymize_assess",
            w,
            &request.source_name,
        )?;
        let mut class_weight = vec![0.0f64; class_keys.len()];
        for (r, &sum) in sums.iter().enumerate() {
            if !flags.value(r) {
                class_weight[class_of[r] as usize] += sum;
            }
        }
        let classes: Vec<(u64, f64)> = sizes.iter().map(|&(c, f)| (f, class_weight[c])).collect();
        weighted = weighted_entries(&classes, request.risk_threshold, request.max_global_risk)?;
    }
    let uniqueness = match population_size {
        Some(population) => uniqueness_entries(sizes.iter().map(|s| s.1), population)?,
        None => Vec::new(),
    };

    for (j, (name, data_type)) in request.sensitive.iter().enumerate() {
        let values = concat_column(&batches, 1 + q + j, &schema)?;
        if values.null_count() > 0 {
            return exec_err!(
                "anonymize_assess(): sensitive column '{name}' of table '{}' contains NULL values; filter or impute them first",
                request.source_name
            );
        }
        let (value_of, value_keys) = row_ids(std::slice::from_ref(&values))?;
        let m = value_keys.len();
        // Reference: every record of the table, suppressed ones included.
        let mut reference = vec![0u64; m];
        for (r, &n) in counts.iter().enumerate() {
            reference[value_of[r] as usize] += n;
        }
        // Rank of each value id in the column's natural order, when it has one.
        let rank: Option<Vec<u32>> = if has_natural_order(data_type) {
            let mut first_row = vec![0u32; m];
            let mut seen = vec![false; m];
            for (r, &v) in value_of.iter().enumerate() {
                if !seen[v as usize] {
                    seen[v as usize] = true;
                    first_row[v as usize] = r as u32;
                }
            }
            let distinct = take(values.as_ref(), &UInt32Array::from(first_row), None)?;
            let order = sort_to_indices(distinct.as_ref(), None, None)?;
            let mut rank = vec![0u32; m];
            for (position, &v) in order.values().iter().enumerate() {
                rank[v as usize] = position as u32;
            }
            Some(rank)
        } else {
            None
        };
        let suppressed: Vec<bool> = (0..counts.len()).map(|r| flags.value(r)).collect();
        let figures = SensitiveFigures::of(
            &Rows {
                class_of: &class_of,
                suppressed: &suppressed,
                value_of: &value_of,
                counts: &counts,
            },
            class_keys.len(),
            &reference,
            rank.as_deref(),
        );
        let SensitiveFigures {
            l_distinct,
            l_entropy,
            t_equal,
            t_ordered,
        } = figures;
        put("l_distinct_min", Some(name), l_distinct as f64);
        put("l_entropy_min", Some(name), l_entropy);
        put("t_equal_max", Some(name), t_equal);
        if let Some(t_ordered) = t_ordered {
            put("t_ordered_max", Some(name), t_ordered);
        }
    }
    out.extend(weighted);
    out.extend(uniqueness);
    Ok(Assessed {
        entries: out,
        sizes: class_sizes,
        batches,
    })
}

/// Population uniqueness rows (docs/METHODS.md §7.5.1): for each of ARX's estimators and
/// for the one Dankar et al.'s decision rule picks, the estimated number of records unique
/// in a population of `population` records, and that number as a share of the population.
/// An estimator without a number has a NULL value and a note saying why.
fn uniqueness_entries(sizes: impl Iterator<Item = u64>, population: u64) -> Result<Vec<Entry>> {
    let mut histogram: HashMap<u64, u64> = HashMap::new();
    for size in sizes {
        *histogram.entry(size).or_insert(0) += 1;
    }
    let histogram: Vec<(u64, u64)> = histogram.into_iter().collect();
    // Without wall-clock limits, so that the figures do not depend on the machine.
    let config = SolverConfig::arx_default().without_time_limits();
    let estimates = match estimate_from_population_size_with(&histogram, population, &config) {
        Ok(estimates) => estimates,
        Err(e) => return exec_err!("anonymize_assess(): population uniqueness: {e}"),
    };
    let mut out: Vec<Entry> = Vec::new();
    let mut put = |key: String, estimate: Estimate| {
        let (number, share, note) = match estimate {
            Estimate::Uniques(n) => (Some(n), estimates.share(estimate), None),
            Estimate::NotConverged => (None, None, Some("did not converge")),
            Estimate::NotApplicable => (
                None,
                None,
                Some("not applicable: the table is the whole population"),
            ),
        };
        let note = note.map(str::to_string);
        out.push((key.clone(), None, number, note.clone()));
        let share_key = key.replacen("population_uniques", "population_uniques_share", 1);
        out.push((share_key, None, share, note));
    };
    put("population_uniques_zayatz".into(), estimates.zayatz);
    put("population_uniques_pitman".into(), estimates.pitman);
    put("population_uniques_snb".into(), estimates.snb);
    put("population_uniques_dankar".into(), estimates.dankar);
    put("population_uniques".into(), estimates.dankar);
    let model = match estimates.dankar_model {
        PopulationUniquenessModel::Pitman => "pitman",
        PopulationUniquenessModel::Zayatz => "zayatz",
        PopulationUniquenessModel::Snb => "snb",
        PopulationUniquenessModel::NoSampleUniques => "none: the table has no sample uniques",
    };
    out.push((
        "population_model".into(),
        None,
        None,
        Some(model.to_string()),
    ));
    out.push((
        "sampling_fraction".into(),
        None,
        Some(estimates.sampling_fraction),
        None,
    ));
    Ok(out)
}

pub(crate) fn entries_batch(entries: &[Entry]) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(
        assess_schema(),
        vec![
            Arc::new(StringArray::from_iter_values(
                entries.iter().map(|e| e.0.as_str()),
            )),
            Arc::new(StringArray::from_iter(
                entries.iter().map(|e| e.1.as_deref()),
            )),
            Arc::new(Float64Array::from_iter(entries.iter().map(|e| e.2))),
            Arc::new(StringArray::from_iter(
                entries.iter().map(|e| e.3.as_deref()),
            )),
        ],
    )?)
}

/// The class-size distribution as one DataFusion plan: sizes of the non-suppressed
/// classes, then how many classes and records have each size. A class with a NULL
/// quasi-identifier is an error, as in `anonymize_assess` and `anonymize` (the plan carries
/// a NULL flag per quasi-identifier to tell, without a second pass).
pub(crate) async fn class_sizes(
    request: &AssessRequest,
    state: &SessionState,
) -> Result<Vec<RecordBatch>> {
    let ctx = SessionContext::new_with_state(state.clone());
    let flags: Vec<String> = (0..request.qi.len())
        .map(|a| format!("__null_{a}"))
        .collect();
    let mut per_class = vec![column("size")];
    per_class.extend(
        request
            .qi
            .iter()
            .zip(&flags)
            .map(|(q, flag)| column(q).is_null().alias(flag)),
    );
    let mut by_size = vec![column("size")];
    by_size.extend(flags.iter().map(|f| column(f)));
    let mut out = vec![
        cast_expr(column("size"), DataType::Int64).alias("size"),
        cast_expr(column("classes"), DataType::Int64).alias("classes"),
        cast_expr(column("records"), DataType::Int64).alias("records"),
    ];
    out.extend(flags.iter().map(|f| column(f)));
    let df = ctx
        .read_table(request.source.clone())?
        .filter(suppressed_flag(&request.qi).is_not_true())?
        .aggregate(qi_text(&request.qi), vec![count(lit(1)).alias("size")])?
        .select(per_class)?
        .aggregate(
            by_size,
            vec![
                count(lit(1)).alias("classes"),
                sum(column("size")).alias("records"),
            ],
        )?
        .select(out)?
        .sort(vec![column("size").sort(true, false)])?;
    let batches = df.collect().await.map_err(|e| {
        reading_error(
            "anonymize_class_sizes",
            &format!("table '{}'", request.source_name),
            e,
        )
    })?;
    // Refuse NULLs, then re-stamp with the declared (non-nullable) schema.
    batches
        .into_iter()
        .map(|b| {
            for (a, q) in request.qi.iter().enumerate() {
                if b.column(3 + a).as_boolean().true_count() > 0 {
                    return null_qi("anonymize_class_sizes", q, &request.source_name);
                }
            }
            Ok(RecordBatch::try_new(
                class_sizes_schema(),
                b.columns()[..3].to_vec(),
            )?)
        })
        .collect()
}
