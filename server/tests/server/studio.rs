//! The studio over HTTP, driven by Python's own client (`clients/studio.py`): logins with
//! server credentials, cookies and CSRF tokens, the analyst's page of published releases
//! and the owner's page.

use std::process::Command;

use super::{psql, script, Site};

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
