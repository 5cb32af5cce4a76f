//! Fuzzes hierarchy validation: arbitrary ARX-layout rows go through `Hierarchy::from_rows`;
//! every accepted hierarchy is exercised (level maps, NCP, leaf lookup) and must survive a
//! round trip through `to_rows`. Property: no input panics; accepted hierarchies are
//! internally consistent.

#![no_main]

use datafusion_anonymize::internals::Hierarchy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|rows: Vec<Vec<String>>| {
    let Ok(h) = Hierarchy::from_rows("fuzz", &rows) else {
        return;
    };
    let height = h.height();
    let leaves = h.leaf_count();
    assert!(leaves >= 1 && leaves <= rows.len());
    for row in &rows {
        assert!(
            h.leaf_code(&row[0]).is_some(),
            "a listed value has no leaf code"
        );
    }
    for level in 0..=height {
        let ncp = h.ncp_per_code(level);
        assert_eq!(ncp.len(), h.level(level).cardinality());
        assert!(ncp.iter().all(|x| (0.0..=1.0).contains(x)));
        for to in level..=height {
            let map = h.level_map(level, to);
            assert_eq!(map.len(), h.level(level).cardinality());
            let upper = h.level(to).cardinality() as u32;
            assert!(map.iter().all(|&c| c < upper));
        }
    }
    let again = Hierarchy::from_rows("fuzz", &h.to_rows()).expect("to_rows output must validate");
    assert_eq!(again.to_rows(), h.to_rows());
});
