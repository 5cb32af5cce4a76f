//! Phase 1: the one aggregate pass over the source. Loads the hierarchies, groups the
//! source by its quasi-identifiers and sensitive columns, and codes every value: leaf codes
//! of each hierarchy, sensitive values sorted into tuple codes. The result, [`BaseData`],
//! is all that phase 2 sees of the data.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{cast, interleave, sort_to_indices, take};
use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, internal_err, Column, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{lit, Expr};
use datafusion::prelude::SessionContext;
use rand::RngCore;

use crate::hierarchy::load::hierarchy_from_batches;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::quote::quote;
use crate::sensitive::{has_natural_order, SensitiveColumn, SensitiveDomain, SensitiveHierarchy};
use crate::session::reading_error;

use super::AnonymizeRequest;
use crate::method::Persons;
use crate::privacy_unit::PrivacyUnit;
use crate::privacy_unit::{bound_rows, person_classes, person_ends, PersonClasses};

/// The name of the person column in phase 1's aggregate.
const PERSON_ALIAS: &str = "__anonymize_person";

/// The leaf-level histogram of a source plus the decoded sensitive values.
pub struct BaseData {
    /// Hierarchies in quasi-identifier order.
    pub hierarchies: Vec<Hierarchy>,
    /// Leaf-level histogram; its value codes are tuple codes of `sensitive`.
    pub histogram: GroupedHistogram,
    /// The sensitive columns' values and how tuple codes decode into them.
    pub sensitive: SensitiveDomain,
    /// Per person, for a syntactic method: the classes with their persons.
    pub persons: Option<PersonClasses>,
}

/// Reads the hierarchy table `table` (named `name`) of `column` in `local`, a session
/// on this process, and validates it.
pub(crate) async fn load_hierarchy(
    local: &SessionContext,
    table: &Arc<dyn TableProvider>,
    column: &str,
    name: &str,
) -> Result<Hierarchy> {
    let batches = local
        .read_table(table.clone())?
        .collect()
        .await
        .map_err(|e| reading_error("anonymize", &format!("hierarchy table '{name}'"), e))?;
    hierarchy_from_batches(column, name, &batches)
}

/// Phase 1: loads the hierarchies and builds the base histogram with one aggregate query.
///
/// Problems found in the data (an empty source, NULLs, a value missing from its hierarchy,
/// a malformed hierarchy table) are execution errors: the arguments were valid.
///
/// Per person (METHODS.md §9), the aggregate also groups by the person and is sorted by
/// it; a differentially private method then sees at most `max_rows_per_person` rows of
/// each person, chosen with `rng` before anything else is drawn, and a syntactic method
/// also gets the classes' persons ([`PersonClasses`]).
pub async fn load_base<R: RngCore + Send + ?Sized>(
    request: &AnonymizeRequest,
    state: &SessionState,
    rng: &mut R,
) -> Result<BaseData> {
    // The aggregate over the source runs wherever the session runs its queries (a cluster,
    // when connected to one); the small hierarchy tables are read on this process.
    let ctx = SessionContext::new_with_state(state.clone());
    let local = SessionContext::new_with_state(crate::session::local_state(state));
    let mut hierarchies = Vec::with_capacity(request.qi.len());
    for q in &request.qi {
        let Some(table) = &q.hierarchy else {
            return internal_err!("quasi-identifier '{}' has no hierarchy table", q.column);
        };
        hierarchies.push(load_hierarchy(&local, table, &q.column, &q.hierarchy_name).await?);
    }

    let mut group: Vec<Expr> = request
        .qi
        .iter()
        .map(|q| Expr::Column(Column::new_unqualified(&q.column)))
        .collect();
    for s in &request.sensitive {
        let column = Expr::Column(Column::new_unqualified(&s.column));
        group.push(match (&request.pseudonym_key, s.pseudonym) {
            (Some(key), true) => key.udf().call(vec![column]).alias(&s.column),
            _ => column,
        });
    }
    let person = request.unit.person_column();
    let mut frame = ctx.read_table(request.source.clone())?;
    if let Some(person) = person {
        let person = Expr::Column(Column::new_unqualified(person));
        if request.public {
            // A public release leaves out the rows without a person, as it leaves out
            // values outside their hierarchies.
            frame = frame.filter(person.clone().is_not_null())?;
        }
        // Sorted by person, then by every other key (the aggregate's output columns): the
        // rows of a person are adjacent and their order, hence a seeded bounding, does not
        // depend on the plan. The person is aliased, as its column may also be released
        // as a pseudonym under its own name.
        let by_name = |name: &str| Expr::Column(Column::new_unqualified(name)).sort(true, false);
        let mut order = vec![by_name(PERSON_ALIAS)];
        order.extend(request.qi.iter().map(|q| by_name(&q.column)));
        order.extend(request.sensitive.iter().map(|s| by_name(&s.column)));
        group.push(person.alias(PERSON_ALIAS));
        frame = frame
            .aggregate(group, vec![count(lit(1)).alias("__anonymize_count")])?
            .sort(order)?;
    } else {
        frame = frame.aggregate(group, vec![count(lit(1)).alias("__anonymize_count")])?;
    }
    let aggregate_schema = frame.schema().inner().clone();
    let mut batches = frame.collect().await.map_err(|e| {
        reading_error(
            "anonymize",
            &format!("source table '{}'", request.source_name),
            e,
        )
    })?;
    if request.public {
        let mut sensitive = Vec::with_capacity(request.sensitive.len());
        for s in &request.sensitive {
            sensitive.push(match &s.hierarchy {
                None => None,
                Some((name, table)) => Some(load_hierarchy(&local, table, &s.column, name).await?),
            });
        }
        let qi: Vec<&Hierarchy> = hierarchies.iter().collect();
        let sensitive: Vec<Option<&Hierarchy>> = sensitive.iter().map(Option::as_ref).collect();
        batches = crate::public::records::usable_records(batches, &qi, &sensitive)?;
    }
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows == 0 {
        // For a public user an empty table (or one whose records are all left out) is a
        // table like any other: the release's own guarantee covers it (a DP method releases
        // noise over its public cells). A refusal here would be a data-dependent outcome
        // outside every mechanism.
        if !request.public {
            return exec_err!(
                "anonymize(): source table '{}' is empty",
                request.source_name
            );
        }
        if batches.is_empty() {
            batches.push(RecordBatch::new_empty(aggregate_schema));
        }
    }
    let attrs = request.qi.len();

    // Quasi-identifiers: text → leaf code.
    let mut leaf_codes: Vec<Vec<u32>> = vec![Vec::with_capacity(rows); attrs];
    for (a, q) in request.qi.iter().enumerate() {
        let hierarchy = &hierarchies[a];
        let mut last: Option<(String, u32)> = None;
        for batch in &batches {
            let text = cast(batch.column(a), &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            if text.null_count() > 0 {
                return exec_err!(
                    "anonymize(): quasi-identifier '{}' of table '{}' contains NULL values; filter or impute them first",
                    q.column,
                    request.source_name
                );
            }
            for value in text.iter().flatten() {
                let code = match &last {
                    Some((v, c)) if v == value => *c,
                    _ => match hierarchy.leaf_code(value) {
                        Some(c) => {
                            last = Some((value.to_string(), c));
                            c
                        }
                        None => {
                            return exec_err!(
                            "anonymize(): value {} of column '{}' is not in its hierarchy '{}'{}",
                            quote(value),
                            q.column,
                            q.hierarchy_name,
                            near_miss_hint(hierarchy, value)
                        )
                        }
                    },
                };
                leaf_codes[a].push(code);
            }
        }
    }

    let person_column = attrs + request.sensitive.len();
    let count_column = person_column + usize::from(person.is_some());
    let (mut codes, sensitive) = sensitive_codes(&local, request, &batches, attrs, rows).await?;
    let ends = match person {
        Some(name) => Some(person_ends(
            &batches,
            person_column,
            name,
            &request.source_name,
        )?),
        None => None,
    };
    let mut counts = Vec::with_capacity(rows);
    for batch in &batches {
        let column = cast(batch.column(count_column), &DataType::UInt64)?;
        counts.extend(
            column
                .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    // Everything needed is in the code arrays now: free the aggregate's output before the
    // histogram is sorted (the two together were phase 1's peak).
    drop(batches);
    let refs: Vec<&Hierarchy> = hierarchies.iter().collect();
    let mut persons = None;
    if let (Some(ends), PrivacyUnit::Person { max_rows, .. }) = (&ends, &request.unit) {
        if request.method.spec().persons == Persons::BoundRows {
            bound_rows(
                ends,
                &mut leaf_codes,
                &mut codes,
                &mut counts,
                *max_rows,
                rng,
            );
        } else {
            persons = Some(person_classes(
                &refs,
                ends,
                leaf_codes.clone(),
                &codes,
                counts.clone(),
            )?);
        }
    }
    let histogram =
        GroupedHistogram::from_rows(&refs, leaf_codes, codes, counts, sensitive.tuples())?;
    Ok(BaseData {
        hierarchies,
        histogram,
        sensitive,
        persons,
    })
}

/// When a value is missing from its hierarchy only because of whitespace, letter case or
/// Unicode normalization, says which leaf it nearly matches (values are matched byte for
/// byte). Owner sessions only: a public release drops such records (`public::records`).
fn near_miss_hint(hierarchy: &Hierarchy, value: &str) -> String {
    let wanted = value.trim();
    let leaves = hierarchy.level(0).labels();
    let near = leaves
        .iter()
        .find(|leaf| leaf.trim() == wanted)
        .or_else(|| {
            leaves
                .iter()
                .find(|leaf| leaf.trim().eq_ignore_ascii_case(wanted))
        });
    if let Some(leaf) = near {
        return format!(
            "; the hierarchy has {}: values are matched byte for byte, spaces and letter case included (trim or fix the data or the hierarchy)",
            quote(leaf)
        );
    }
    // The same text in another Unicode normalization form (a precomposed 'é' against 'e'
    // and a combining accent), or in a compatibility form (full-width letters, ligatures).
    let nfkc = icu_normalizer::ComposingNormalizerBorrowed::new_nfkc();
    let wanted = nfkc.normalize(value);
    match leaves.iter().find(|leaf| nfkc.normalize(leaf) == wanted) {
        Some(leaf) => format!(
            "; the hierarchy has {}, which differs from it only in Unicode normalization (e.g. an accent written as a separate combining mark): values are matched byte for byte (normalize the data and the hierarchy alike, e.g. to NFC)",
            quote(leaf)
        ),
        None => String::new(),
    }
}

/// The sensitive columns of the phase-1 result: a tuple code per row and the domain that
/// decodes it. Each column's distinct values are sorted; tuples are numbered in
/// lexicographic order of their columns' codes, so with one column a tuple code is the
/// column's value code.
pub(super) async fn sensitive_codes(
    ctx: &SessionContext,
    request: &AnonymizeRequest,
    batches: &[RecordBatch],
    attrs: usize,
    rows: usize,
) -> Result<(Vec<u32>, SensitiveDomain)> {
    if request.sensitive.is_empty() {
        // Without a sensitive column every record carries the same (unreleased) value.
        return Ok((vec![0u32; rows], SensitiveDomain::none()));
    }
    let mut per_column: Vec<Vec<u32>> = Vec::with_capacity(request.sensitive.len());
    let mut columns: Vec<SensitiveColumn> = Vec::with_capacity(request.sensitive.len());
    for (j, spec) in request.sensitive.iter().enumerate() {
        let (codes, values) =
            informative_codes(batches, attrs + j, &spec.column, &request.source_name)?;
        let hierarchy = match &spec.hierarchy {
            None => None,
            Some((name, table)) => {
                let hierarchy_batches =
                    ctx.read_table(table.clone())?
                        .collect()
                        .await
                        .map_err(|e| {
                            reading_error("anonymize", &format!("hierarchy table '{name}'"), e)
                        })?;
                let hierarchy = hierarchy_from_batches(&spec.column, name, &hierarchy_batches)?;
                let text = cast(&values, &DataType::Utf8)?;
                let mut leaf_of_value = Vec::with_capacity(values.len());
                for value in text.as_string::<i32>().iter() {
                    let value = value.unwrap_or_default();
                    match hierarchy.leaf_code(value) {
                        Some(code) => leaf_of_value.push(code),
                        None => {
                            return exec_err!(
                                "anonymize(): value {} of sensitive column '{}' is not in its hierarchy '{name}'{}",
                                quote(value),
                                spec.column,
                                near_miss_hint(&hierarchy, value)
                            )
                        }
                    }
                }
                Some(SensitiveHierarchy {
                    name: name.clone(),
                    hierarchy,
                    leaf_of_value,
                })
            }
        };
        let rank = if has_natural_order(&spec.data_type) {
            Some((0..values.len() as u32).collect())
        } else {
            hierarchy.as_ref().map(|h| {
                let mut order: Vec<u32> = (0..values.len() as u32).collect();
                order.sort_by_key(|&v| h.leaf_of_value[v as usize]);
                let mut rank = vec![0u32; order.len()];
                for (position, &v) in order.iter().enumerate() {
                    rank[v as usize] = position as u32;
                }
                rank
            })
        };
        per_column.push(codes);
        columns.push(SensitiveColumn {
            name: spec.column.clone(),
            values,
            of_tuple: Vec::new(),
            rank,
            hierarchy,
            pseudonym: spec.pseudonym,
        });
    }
    if let [only] = per_column.as_slice() {
        columns[0].of_tuple = (0..columns[0].cardinality() as u32).collect();
        let tuples = columns[0].cardinality();
        return Ok((only.clone(), SensitiveDomain::new(columns, tuples)));
    }
    // Several columns: number the distinct tuples in lexicographic order.
    let tuple_of_row = |row: usize| -> Vec<u32> { per_column.iter().map(|c| c[row]).collect() };
    let mut distinct: Vec<Vec<u32>> = (0..rows).map(tuple_of_row).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let index: HashMap<&[u32], u32> = distinct
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_slice(), i as u32))
        .collect();
    let mut codes = Vec::with_capacity(rows);
    for row in 0..rows {
        let tuple = tuple_of_row(row);
        match index.get(tuple.as_slice()) {
            Some(&code) => codes.push(code),
            None => return internal_err!("sensitive tuple missing from its own index"),
        }
    }
    for (j, column) in columns.iter_mut().enumerate() {
        column.of_tuple = distinct.iter().map(|t| t[j]).collect();
    }
    let tuples = distinct.len();
    Ok((codes, SensitiveDomain::new(columns, tuples)))
}

/// Informative values of the phase-1 result: a code per row, and the distinct values in
/// canonical (sorted) order so that codes never depend on the order rows arrived in.
fn informative_codes(
    batches: &[RecordBatch],
    column: usize,
    name: &str,
    source_name: &str,
) -> Result<(Vec<u32>, ArrayRef)> {
    // Batch by batch (no copy of the whole column): a provisional code per distinct value
    // in order of first appearance, and where that value first appeared.
    let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(column).as_ref()).collect();
    if arrays.iter().any(|a| a.null_count() > 0) {
        return exec_err!(
            "anonymize(): sensitive column '{}' of table '{}' contains NULL values; filter or impute them first",
            name,
            source_name
        );
    }
    let mut provisional: HashMap<String, u32> = HashMap::new();
    let mut first_rows: Vec<(usize, usize)> = Vec::new();
    let mut codes: Vec<u32> = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
    for (b, array) in arrays.iter().enumerate() {
        let keys = cast(*array, &DataType::Utf8)?;
        for (row, key) in keys.as_string::<i32>().iter().enumerate() {
            let key = key.unwrap_or_default();
            let code = match provisional.get(key) {
                Some(&code) => code,
                None => {
                    let code = provisional.len() as u32;
                    provisional.insert(key.to_string(), code);
                    first_rows.push((b, row));
                    code
                }
            };
            codes.push(code);
        }
    }
    let distinct = interleave(&arrays, &first_rows)?;
    let order = sort_to_indices(distinct.as_ref(), None, None)?;
    let values = take(distinct.as_ref(), &order, None)?;
    let mut rank = vec![0u32; order.len()];
    for (new_code, &old) in order.values().iter().enumerate() {
        rank[old as usize] = new_code as u32;
    }
    for c in codes.iter_mut() {
        *c = rank[*c as usize];
    }

    Ok((codes, values))
}
