//! The audit trail (`audit = "audit.jsonl"`): every login and statement of both protocols
//! as a JSON line, the releases each statement drew or read with their charge,
//! `server_audit()` for owners only, and whole lines after `kill -9`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{one, psql, Site, Q1};

fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the audit trail exists");
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    text.lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
        })
        .collect()
}

#[test]
fn every_login_statement_and_charge_is_in_the_trail() {
    let site = Site::with_settings("audit = \"audit.jsonl\"");
    let trail = site.dir.path().join("audit.jsonl");
    let server = site.start();
    let wrong = psql(server.postgres, "analyst", "not-the-password", "SELECT 1");
    assert!(wrong.is_err(), "{wrong:?}");
    let by_psql = psql(server.postgres, "analyst", "analyst-pw", Q1).expect("psql runs Q1");
    let by_adbc = one("adbc", server.flight, "analyst2", Q1).expect("ADBC runs Q1");
    assert_eq!(by_adbc, by_psql);
    let refused = psql(server.postgres, "analyst", "analyst-pw", "DROP TABLE nps");
    assert!(refused.is_err(), "{refused:?}");
    // Public users have no server_audit().
    let hidden = psql(
        server.postgres,
        "analyst",
        "analyst-pw",
        "SELECT * FROM server_audit()",
    );
    assert!(hidden.is_err_and(|e| !e.contains("audit.jsonl")));

    let all = lines(&trail);
    let find =
        |what: &dyn Fn(&Value) -> bool| -> Vec<&Value> { all.iter().filter(|l| what(l)).collect() };
    // The failed login: refused, by name and protocol, and nothing about the password.
    let failed = find(&|l| l["event"] == "login" && l["outcome"] == "refused");
    assert_eq!(failed.len(), 1, "{all:#?}");
    assert_eq!(failed[0]["user"], "analyst");
    assert_eq!(failed[0]["protocol"], "postgres");
    assert_eq!(failed[0]["error"], "authentication failed");
    assert!(!failed[0].to_string().contains("not-the-password"));
    // Q1 over psql drew the release: charged epsilon 1, 0.5 of analyst's 1.5 left.
    let q1 = find(&|l| l["event"] == "statement" && l["text"] == Q1);
    assert_eq!(q1.len(), 2, "{all:#?}");
    assert_eq!(
        (
            &q1[0]["user"],
            &q1[0]["role"],
            &q1[0]["protocol"],
            &q1[0]["outcome"]
        ),
        (
            &"analyst".into(),
            &"public".into(),
            &"postgres".into(),
            &"ok".into()
        )
    );
    assert_eq!(q1[0]["epsilon"], 1.0);
    assert_eq!(q1[0]["quota_left"], 0.5);
    assert_eq!(q1[0]["releases"][0]["source"], "datafusion.public.nps");
    assert_eq!(q1[0]["releases"][0]["method"], "dp_histogram");
    assert_eq!(q1[0]["releases"][0]["drawn"], true);
    // Over ADBC it was read from the store: charged nothing.
    assert_eq!(q1[1]["user"], "analyst2");
    assert_eq!(q1[1]["protocol"], "flight_sql");
    assert_eq!(q1[1]["epsilon"], 0.0);
    assert_eq!(q1[1]["releases"][0]["drawn"], false);
    // Logins that succeeded, over both protocols.
    for (user, protocol) in [("analyst", "postgres"), ("analyst2", "flight_sql")] {
        assert!(
            !find(&|l| l["event"] == "login"
                && l["outcome"] == "ok"
                && l["user"] == user
                && l["protocol"] == protocol)
            .is_empty(),
            "{user} over {protocol}: {all:#?}"
        );
    }
    // The refused statement, with its refusal.
    let drop = find(&|l| l["text"] == "DROP TABLE nps");
    assert_eq!(drop.len(), 1, "{all:#?}");
    assert_eq!(drop[0]["outcome"], "error");
    assert!(drop[0]["error"].as_str().is_some_and(|e| !e.is_empty()));
    // Every line has its time.
    assert!(all
        .iter()
        .all(|l| l["time"].as_str().is_some_and(|t| t.ends_with('Z'))));

    // The owner reads the same trail as a table.
    let rows = psql(
        server.postgres,
        "owner",
        "owner-pw",
        "SELECT \"user\", protocol, epsilon FROM server_audit() WHERE event = 'statement' AND text LIKE '%dp_histogram%' ORDER BY time",
    )
    .expect("the owner reads server_audit()");
    assert_eq!(
        rows,
        vec![
            vec![
                "analyst".to_string(),
                "postgres".to_string(),
                "1.0".to_string()
            ],
            vec![
                "analyst2".to_string(),
                "flight_sql".to_string(),
                "0".to_string()
            ],
        ]
    );
}

#[test]
fn the_trail_is_whole_lines_after_kill_9() {
    let site = Site::with_settings("audit = \"audit.jsonl\"\naudit_public_text = \"hash\"");
    let trail = site.dir.path().join("audit.jsonl");
    let mut server = site.start();
    let port = server.postgres;
    // Clients logging in and running statements while the server is killed.
    let clients: Vec<_> = (0..3)
        .map(|i| {
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(6);
                while Instant::now() < deadline {
                    let user = if i == 0 { "owner" } else { "analyst2" };
                    let _ = psql(
                        port,
                        user,
                        &format!("{user}-pw"),
                        "SELECT COUNT(*) FROM nps_hierarchy_sex",
                    );
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let _ = server.child.kill(); // SIGKILL
    let _ = server.child.wait();
    for client in clients {
        let _ = client.join();
    }
    let all = lines(&trail);
    assert!(all.len() > 10, "{} lines", all.len());
    // Public users' statements are kept as their hash only.
    let public: Vec<&Value> = all
        .iter()
        .filter(|l| l["event"] == "statement" && l["role"] == "public")
        .collect();
    assert!(!public.is_empty());
    assert!(public
        .iter()
        .all(|l| l["text"].is_null() && l["text_sha256"].as_str().is_some_and(|h| h.len() == 64)));
    assert!(all
        .iter()
        .any(|l| l["role"] == "owner" && l["text"] == "SELECT COUNT(*) FROM nps_hierarchy_sex"));
}
