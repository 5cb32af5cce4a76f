//! The NPS-shaped demo data as a leaf histogram over the IPA reference implementation's
//! hierarchies (those of `sql/nps_hierarchies.sql`, docs/METHODS.md §1.12.1).

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;

use super::fixtures::{ladder, rows, weighted_histogram};
use crate::demo::nps::generate_nps;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;

/// The demo data of `rows` records from generator seed `seed`: its five hierarchies (age,
/// sex, los, surgery, location), leaf histogram and number of distinct diseases.
pub struct NpsBase {
    /// Hierarchies in quasi-identifier order.
    pub hierarchies: Vec<Hierarchy>,
    /// Leaf-level histogram, diseases as informative values.
    pub histogram: GroupedHistogram,
    /// Number of distinct diseases.
    pub value_domain: usize,
}

impl NpsBase {
    /// References to the hierarchies, as the methods take them.
    pub fn refs(&self) -> Vec<&Hierarchy> {
        self.hierarchies.iter().collect()
    }
}

fn text_column(batch: &RecordBatch, name: &str) -> Vec<String> {
    let column = batch.column_by_name(name).expect("demo column");
    let text = cast(column, &DataType::Utf8).expect("text");
    let text = text.as_string::<i32>();
    (0..text.len()).map(|i| text.value(i).to_string()).collect()
}

/// Generates the demo data and builds its leaf histogram.
pub fn nps_base(rows_wanted: usize, seed: u64) -> NpsBase {
    let hierarchies = vec![
        ladder("age", "1..100", &["10", "0,30,60,100"]),
        Hierarchy::from_rows("sex", &rows(&[&["M", "*"], &["F", "*"]])).expect("sex"),
        ladder("los", "1..400", &["1,2,5,10,30,400", "1,2,400"]),
        Hierarchy::from_rows("surgery", &rows(&[&["Y", "*"], &["N", "*"]])).expect("surgery"),
        ladder(
            "location",
            "11,21..26,31..39",
            &["11,12,21,27,31,40", "11,12,21,40"],
        ),
    ];
    let batches = generate_nps(rows_wanted, seed, 65_536, &|| false).expect("demo data");
    let mut records: std::collections::HashMap<(Vec<u32>, String), u64> =
        std::collections::HashMap::new();
    for batch in &batches {
        let columns: Vec<Vec<String>> = ["age", "sex", "los", "surgery", "location"]
            .iter()
            .map(|c| text_column(batch, c))
            .collect();
        let diseases = text_column(batch, "disease");
        for (r, disease) in diseases.into_iter().enumerate() {
            let codes: Vec<u32> = (0..5)
                .map(|a| {
                    hierarchies[a]
                        .leaf_code(&columns[a][r])
                        .expect("value in hierarchy")
                })
                .collect();
            *records.entry((codes, disease)).or_default() += 1;
        }
    }
    let mut diseases: Vec<&String> = records.keys().map(|(_, d)| d).collect();
    diseases.sort();
    diseases.dedup();
    let code_of: std::collections::HashMap<&String, u32> = diseases
        .iter()
        .enumerate()
        .map(|(i, d)| (*d, i as u32))
        .collect();
    let value_domain = diseases.len();
    let weighted: Vec<(Vec<u32>, u32, u64)> = records
        .iter()
        .map(|((codes, d), &n)| (codes.clone(), code_of[d], n))
        .collect();
    let refs: Vec<&Hierarchy> = hierarchies.iter().collect();
    let histogram = weighted_histogram(&refs, &weighted, value_domain);
    NpsBase {
        hierarchies,
        histogram,
        value_domain,
    }
}
