//! Flight SQL's metadata calls, as ADBC and BI tools make them: GetSqlInfo, GetTableTypes,
//! GetCatalogs/GetDbSchemas/GetTables, GetPrimaryKeys and GetXdbcTypeInfo
//! (`clients/flight_metadata.py`), each written to the audit trail.

use std::process::Command;

use serde_json::{json, Value};

use super::{publish_nps_kanon, python, script, Site};

#[test]
fn flight_sql_answers_the_metadata_calls_of_bi_tools() {
    let site = Site::with_settings("audit = \"audit.jsonl\"");
    let server = site.start();
    publish_nps_kanon(&server);
    let out = Command::new(python())
        .arg(script("flight_metadata.py"))
        .args(["127.0.0.1", &server.flight.to_string()])
        .args(["analyst2", "analyst2-pw", "nps_kanon"])
        .output()
        .expect("python runs");
    let answers: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(answers["info"]["vendor_name"], json!("dfanon-server"));
    assert_eq!(answers["table_types"], json!(["TABLE", "VIEW"]));
    // The public user's tables: the release and the policy's hierarchies, not the source.
    assert_eq!(
        answers["objects"],
        json!([
            "nps_hierarchy_age",
            "nps_hierarchy_disease",
            "nps_hierarchy_location",
            "nps_hierarchy_los",
            "nps_hierarchy_sex",
            "nps_hierarchy_surgery",
            "nps_kanon"
        ])
    );
    assert_eq!(
        answers["table_schema"],
        json!(["age", "sex", "los", "surgery", "location", "disease"])
    );
    assert_eq!(answers["primary_keys"]["rows"], json!(0));
    assert_eq!(
        answers["primary_keys"]["columns"],
        json!([
            "catalog_name",
            "db_schema_name",
            "table_name",
            "column_name",
            "key_name",
            "key_sequence"
        ])
    );
    assert_eq!(answers["xdbc_type_info"]["rows"], json!(10));
    assert_eq!(answers["xdbc_type_info"]["columns"][0], json!("type_name"));
    // Each call is a line of the audit trail, by the user who made it.
    let trail = std::fs::read_to_string(site.dir.path().join("audit.jsonl")).expect("the trail");
    let calls: Vec<String> = trail
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["protocol"] == "flight_sql" && line["user"] == "analyst2")
        .filter_map(|line| line["text"].as_str().map(String::from))
        .collect();
    for call in [
        "Flight SQL GetSqlInfo",
        "Flight SQL GetTableTypes",
        "Flight SQL GetTables",
        "Flight SQL GetPrimaryKeys",
        "Flight SQL GetXdbcTypeInfo",
    ] {
        assert!(
            calls.iter().any(|c| c == call),
            "{call} is not in {calls:?}"
        );
    }
}
