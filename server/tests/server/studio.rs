//! The studio over HTTP: driven by Python's own client (`clients/studio.py`) for logins
//! with server credentials, cookies and CSRF tokens and each role's pages; and by Chromium
//! (`clients/browser.py`) through a steward's whole flow on Adult, whose publications psql
//! then reads as an analyst.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{from_the_distribution, psql, python, repository, script, Rows, Site};

/// The studio's flow as `clients/studio.py` saw it.
fn flow(port: u16) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(script("studio.py"))
        .arg(format!("http://127.0.0.1:{port}"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "studio.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn studio_logins_cookies_csrf_and_the_pages_of_each_role() {
    let site = Site::with_settings("studio = \"127.0.0.1:0\"");
    let server = site.start();
    let port = server.studio.expect("the studio listens");
    psql(
        server.postgres,
        "owner",
        "owner-pw",
        "SELECT name, method FROM anonymize_publish('nps_k10', 'nps', method => 'kanon', \
         qi => 'age, sex', k => 10)",
    )
    .expect("the owner publishes a release");
    let seen = flow(port);
    let status = |key: &str| seen[key]["status"].as_u64().unwrap_or(0);
    let body = |key: &str| seen[key]["body"].as_str().unwrap_or_default().to_string();

    // A visitor is sent to the login page, which sets a strict, HTTP-only login cookie.
    assert_eq!(status("visitor"), 303);
    assert_eq!(seen["visitor"]["location"], "/login");
    let cookies = seen["login_page"]["cookies"].to_string();
    assert!(
        cookies.contains("dfanon_login=") && cookies.contains("HttpOnly; SameSite=Strict"),
        "{cookies}"
    );
    assert!(seen["login_page"]["csp"]
        .as_str()
        .is_some_and(|csp| csp.contains("default-src 'none'")));

    // A wrong password and a form without this studio's login cookie are refused, saying
    // nothing more.
    assert_eq!(status("wrong_password"), 401);
    assert!(body("wrong_password").contains("authentication failed"));
    assert_eq!(status("login_without_cookie"), 403);
    assert!(!body("login_without_cookie").contains("nps_k10"));

    // The analyst sees the published release and how to connect, never the source tables.
    assert_eq!(status("analyst_login"), 303);
    let analyst = body("analyst_home");
    assert_eq!(status("analyst_home"), 200);
    assert!(analyst.contains("<code>nps_k10</code>"), "{analyst}");
    assert!(analyst.contains("<td>kanon</td>"));
    assert!(analyst.contains(&format!("port={} user=analyst", server.postgres)));
    assert!(!analyst.contains("Source tables") && !analyst.contains("<code>nps</code>"));
    // The budget left, as privacy_budget() shows it to the analyst over psql.
    let budget = psql(
        server.postgres,
        "analyst",
        "analyst-pw",
        "SELECT table_name, epsilon_remaining FROM privacy_budget()",
    )
    .expect("privacy_budget() for the analyst");
    assert!(analyst.contains("Privacy budget left"), "{analyst}");
    assert!(
        !budget.is_empty(),
        "the owner's publication is on nps's account"
    );
    for row in &budget {
        assert!(
            analyst.contains(&format!("<tr data-table=\"{}\">", row[0])),
            "{row:?} in {analyst}"
        );
    }

    // The analyst's own quota (1.5 in the configuration), nothing of it spent yet.
    assert!(
        analyst.contains("<b data-quota=\"1.5\">ε = 1.5</b>")
            && analyst.contains("Your releases have spent nothing of it yet."),
        "{analyst}"
    );

    // The owner's project and steps are refused to an analyst.
    assert_eq!(seen["analyst_project"], 403);
    assert_eq!(seen["analyst_step"], 403);

    // Logging out needs the session's CSRF token.
    assert_eq!(status("logout_without_csrf"), 403);
    assert_eq!(seen["still_logged_in"], 200);
    assert_eq!(status("logout"), 303);
    assert_eq!(status("after_logout"), 303);

    // The owner sees the source tables too.
    let owner = body("owner_home");
    assert!(
        owner.contains("Source tables") && owner.contains("<code>nps</code>"),
        "{owner}"
    );
    assert!(owner.contains("<code>nps_k10</code>"));
    assert_eq!(status("missing"), 404);
    assert_eq!(seen["css"], 200);
}

/// Chromium, installed from the distribution when missing.
fn chromium() -> PathBuf {
    from_the_distribution(
        &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
        "chromium",
    )
}

/// A site whose studio may register the Adult files (a copy in its `files` folder).
fn adult_site() -> Site {
    let site = Site::with_settings("studio = \"127.0.0.1:0\"\nstudio_files = \"files\"");
    let files = site.dir.path().join("files");
    std::fs::create_dir(&files).expect("files folder");
    let adult = Path::new(repository()).join("tests/data/adult");
    for entry in std::fs::read_dir(&adult).expect("tests/data/adult") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "csv") {
            std::fs::copy(&path, files.join(path.file_name().expect("name"))).expect("copied");
        }
    }
    site
}

fn strings(value: &serde_json::Value) -> Rows {
    value
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|row| {
                    row.as_array()
                        .map(|cells| {
                            cells
                                .iter()
                                .map(|c| c.as_str().unwrap_or_default().to_string())
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_steward_publishes_adult_from_the_browser_and_an_analyst_reads_it_with_psql() {
    let site = adult_site();
    let server = site.start();
    let port = server.studio.expect("the studio listens");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("studio-screenshots");
    let out = Command::new(python())
        .arg(script("browser.py"))
        .arg(chromium())
        .arg(format!("http://127.0.0.1:{port}"))
        .arg(&shots)
        .arg(Path::new(repository()).join("tests/data/adult/adult_hierarchy_education.csv"))
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "browser.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(seen.get("failed").is_none(), "the flow stopped: {seen:#}");

    // Every step did what it said, in this order.
    let outcomes: Vec<&str> = seen["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .filter_map(|o| o.as_str())
        .collect();
    assert_eq!(
        outcomes,
        [
            "error: authentication failed",
            "",
            "",
            "profiled adult (9 columns)",
            "roles saved",
            "built the hierarchy of age",
            "built the hierarchy of sex",
            "built the hierarchy of race",
            "built the hierarchy of marital-status",
            "built the hierarchy of education",
            "assessed the risk before release",
            "ran candidate 1 as a trial",
            "ran candidate 2 as a trial",
            "ran candidate 3 as a trial",
            "ran candidate 4 as a trial",
            "undid the last step",
            "published adult_k5",
            "published adult_safepub",
            "opened the project",
        ],
        "{seen:#}"
    );
    assert_eq!(seen["first_page"], "/login");

    // The profile's suggestions: Adult's demographics are quasi-identifiers, the salary
    // class is sensitive.
    let suggested = &seen["suggested"];
    for column in [
        "sex",
        "age",
        "race",
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "occupation",
    ] {
        assert_eq!(suggested[column], "quasi", "{column}: {suggested}");
    }
    assert_eq!(suggested["salary-class"], "sensitive");

    // Education's hierarchy came from the steward's computer.
    assert_eq!(
        seen["uploaded"],
        "Built: uploaded from adult_hierarchy_education.csv (16 values, 3 levels), as table studio_adult_education."
    );

    // Ages 17..90 in intervals of 5, 10 and 20 years, then '*'.
    assert_eq!(
        seen["age_preview"],
        serde_json::json!([
            ["level_1", 16],
            ["level_2", 9],
            ["level_3", 5],
            ["level_4", 1]
        ])
    );

    // The risk before is the owner's anonymize_assess of the same source.
    let qi = "age:studio_adult_age, sex:studio_adult_sex, race:studio_adult_race, \
              marital-status:studio_adult_marital_status, education:studio_adult_education";
    let assess = psql(
        server.postgres,
        "owner",
        "owner-pw",
        &format!(
            "SELECT key, value FROM anonymize_assess('adult', qi => '{qi}') \
             WHERE key IN ('rows', 'sample_uniques')"
        ),
    )
    .expect("the owner assesses");
    assert_eq!(assess[0], ["rows", "30162.0"]);
    assert_eq!(seen["risk"]["rows"], "30162");
    assert_eq!(
        seen["risk"]["sample_uniques"].as_str(),
        Some(assess[1][1].trim_end_matches(".0"))
    );
    assert_eq!(seen["risk_chart"], 8, "eight bars of class sizes");

    // Three candidates side by side (the fourth undone), each a trial; the k-anonymous ones
    // keep classes of at least k.
    assert_eq!(seen["candidates_before_undo"], 4);
    assert_eq!(seen["candidates"], 3);
    assert_eq!(
        seen["trial_labels"],
        serde_json::json!([
            "trial: not publishable",
            "trial: not publishable",
            "trial: not publishable"
        ])
    );
    let figure = |name: &str| -> Vec<f64> {
        seen["side_by_side"]
            .as_array()
            .expect("figures")
            .iter()
            .find(|row| row[0] == name)
            .and_then(|row| row[1].as_array())
            .map(|cells| {
                cells
                    .iter()
                    .map(|c| c.as_str().and_then(|c| c.parse().ok()).unwrap_or(f64::NAN))
                    .collect()
            })
            .unwrap_or_default()
    };
    let smallest = figure("after:min_class_size");
    assert!(smallest[0] >= 5.0 && smallest[1] >= 10.0, "{smallest:?}");
    let scores = figure("k_marginal_score");
    assert!(
        scores.iter().all(|s| (0.0..=1000.0).contains(s)),
        "{scores:?}"
    );
    // The NIST CRC measures of each trial's report, side by side.
    let pmse = figure("utility:pmse");
    assert!(
        pmse.len() == 3 && pmse.iter().all(|p| (0.0..=0.25).contains(p)),
        "{pmse:?}"
    );
    // anonymeter's three attacks on each trial, side by side: a risk beyond the naive
    // attacker, at most 1.
    for attack in ["singling_out", "linkability", "inference"] {
        let risks = figure(&format!("after:attack:{attack}"));
        assert!(
            risks.len() == 3 && risks.iter().all(|r| (-1.0..=1.0).contains(r)),
            "{attack}: {risks:?}"
        );
    }
    // Each trial is checked against HIPAA Safe Harbor before anything is published.
    let safe_harbor: Vec<String> = seen["side_by_side"]
        .as_array()
        .expect("figures")
        .iter()
        .find(|row| row[0] == "safe_harbor")
        .and_then(|row| row[1].as_array())
        .map(|cells| {
            cells
                .iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(safe_harbor.len(), 3, "{safe_harbor:?}");
    for cell in &safe_harbor {
        assert!(
            cell.starts_with("nothing found")
                || cell.contains("to mend before a Safe Harbor release"),
            "{cell}"
        );
    }
    assert_eq!(seen["report_title"], "Release report: adult (kanon)");

    // The analyst reads exactly the rows the studio showed, and the SafePub release.
    let shown = strings(&seen["published_rows"]);
    assert_eq!(shown.len(), 10);
    let read = psql(
        server.postgres,
        "analyst",
        "analyst-pw",
        "SELECT * FROM adult_k5 LIMIT 10",
    )
    .expect("the analyst reads adult_k5");
    assert_eq!(read, shown);
    let safepub = psql(
        server.postgres,
        "analyst",
        "analyst-pw",
        "SELECT COUNT(*) FROM adult_safepub",
    )
    .expect("the analyst reads adult_safepub");
    assert!(
        safepub[0][0].parse::<u64>().is_ok_and(|n| n > 0),
        "{safepub:?}"
    );
    assert!(psql(
        server.postgres,
        "analyst",
        "analyst-pw",
        "SELECT * FROM adult"
    )
    .is_err());

    // Each publication's report is written beside it (the server has a ledger file) and
    // describes the published draw, which was drawn and charged once.
    assert_eq!(
        seen["published_report_title"],
        "Release report: adult (safepub)"
    );
    assert_eq!(
        seen["published_report_rows"].as_str(),
        Some(safepub[0][0].as_str())
    );
    assert!(seen["published_report_link"]
        .as_str()
        .is_some_and(|link| link.ends_with("/published/adult_k5/report")));
    for name in ["adult_k5", "adult_safepub"] {
        let kept = site
            .dir
            .path()
            .join(format!("ledger.json.published/{name}.report.html"));
        assert!(kept.is_file(), "{}", kept.display());
    }
    let spent = psql(
        server.postgres,
        "owner",
        "owner-pw",
        "SELECT table_name, epsilon_spent FROM privacy_budget() WHERE table_name LIKE '%adult'",
    )
    .expect("the owner's budget");
    // ε = 1: SafePub's publication, charged once (a second draw for the report would make
    // it 2; the trials are seeded and charge nothing).
    assert_eq!(spent.len(), 1, "{spent:?}");
    assert_eq!(spent[0][1].parse::<f64>().ok(), Some(1.0), "{spent:?}");

    // The recipe re-opened shows the same candidates; refusals.
    assert_eq!(seen["reopened_candidates"], 3);
    assert_eq!(seen["reopened_side_by_side"], seen["side_by_side"]);
    assert_eq!(seen["no_csrf"], 403);
    assert_eq!(
        seen["outside"],
        "'../server.toml' is not a file of the studio's folder"
    );
    assert_eq!(
        seen["recipe_disposition"],
        "attachment; filename=\"adult-recipe.sql\""
    );

    // The recipe replayed as another server's init script publishes the same releases with
    // the same arguments (k-anonymity is deterministic: the same rows too).
    let recipe = seen["recipe"].as_str().expect("the recipe");
    let replay = Site::with_parts(recipe, "epsilon_budget = 3", "");
    let again = replay.start();
    let arguments = |port: u16, name: &str| {
        psql(
            port,
            "analyst",
            "analyst-pw",
            &format!(
                "SELECT key, value FROM published_metadata('{name}') \
                 WHERE key NOT IN ('guarantee_detail', 'seeded', 'rng') ORDER BY key"
            ),
        )
        .expect("the publication's metadata")
    };
    for name in ["adult_k5", "adult_safepub"] {
        let (first, replayed) = (
            arguments(server.postgres, name),
            arguments(again.postgres, name),
        );
        let keys = |rows: &Rows, key: &str| rows.iter().find(|r| r[0] == key).map(|r| r[1].clone());
        assert!(keys(&first, "method").is_some(), "{first:?}");
        for key in [
            "method",
            "quasi_identifiers",
            "hierarchies",
            "informative",
            "k",
            "epsilon",
            "delta",
        ] {
            assert_eq!(keys(&first, key), keys(&replayed, key), "{name}: {key}");
        }
    }
    assert_eq!(
        psql(
            again.postgres,
            "analyst",
            "analyst-pw",
            "SELECT * FROM adult_k5 LIMIT 10"
        )
        .expect("the replayed adult_k5"),
        shown
    );
}

#[test]
fn dfanon_server_studio_starts_a_steward_on_loopback_with_a_fresh_password() {
    use std::io::{BufRead, BufReader, Read, Write};
    let files = tempfile::tempdir().expect("temp dir");
    std::fs::write(files.path().join("people.csv"), "name,age\nAnn,34\n").expect("written");
    let mut child = Command::new(super::SERVER)
        .args(["studio", "--port", "0", "--postgres-port", "0", "--files"])
        .arg(files.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dfanon-server studio runs");
    let mut said = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut said)
        .expect("a line");
    let mut listening = String::new();
    BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut listening)
        .expect("a line");
    let password = said
        .split("with the password ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the password is printed")
        .to_string();
    assert_eq!(password.len(), 30, "{said}");
    let port_after = |marker: &str| -> u16 {
        listening
            .split(marker)
            .nth(1)
            .and_then(|rest| rest.split([',', '/', ' ']).next())
            .and_then(|address| address.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{marker} in {listening}"))
    };
    let (postgres, studio) = (
        port_after("PostgreSQL on "),
        port_after("studio on http://"),
    );
    assert!(
        listening.contains("127.0.0.1:"),
        "loopback only: {listening}"
    );
    let rows = psql(postgres, "owner", &password, "SELECT 1").expect("the owner logs in");
    assert_eq!(rows, [["1"]]);
    assert!(psql(postgres, "owner", "wrong", "SELECT 1").is_err());
    let mut http = std::net::TcpStream::connect(("127.0.0.1", studio)).expect("the studio");
    http.write_all(b"GET /login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("request sent");
    let mut page = String::new();
    http.read_to_string(&mut page).expect("response");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let _ = child.kill();
    let _ = child.wait();
}
