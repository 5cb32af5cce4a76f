//! The studio's HTML: plain pages, one stylesheet, no scripts (a page that waits for a step
//! reloads itself with a refresh tag). Every text from the data or
//! the user is escaped.

use std::fmt::Write;
use std::net::SocketAddr;

use datafusion_anonymize::{escape_html as escape, PublishedRelease};

use super::login::StudioUser;
use super::results::Rows;
use crate::config::Role;

/// The stylesheet, served as `/studio.css`.
pub const STYLE: &str = include_str!("studio.css");

/// Where analysts connect, for the instructions on the page.
#[derive(Debug, Clone, Default)]
pub struct Connect {
    pub postgres: Option<SocketAddr>,
    pub flight_sql: Option<SocketAddr>,
    /// Whether both protocols require TLS.
    pub tls: bool,
}

/// A whole page: `title`, the signed-in user's bar (with its log-out form) and `body`.
pub fn page(title: &str, user: Option<&StudioUser>, body: &str) -> String {
    page_with_head(title, user, "", body)
}

/// A page the browser loads again every `seconds` (no script: a refresh header in the page).
pub fn refreshing_page(title: &str, user: Option<&StudioUser>, body: &str, seconds: u32) -> String {
    let head = format!("<meta http-equiv=\"refresh\" content=\"{seconds}\">");
    page_with_head(title, user, &head, body)
}

fn page_with_head(title: &str, user: Option<&StudioUser>, head: &str, body: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">{head}\
         <title>{} · dfanon studio</title><link rel=\"stylesheet\" href=\"/studio.css\"></head><body>\
         <header><span class=\"brand\">dfanon studio</span>",
        escape(title)
    );
    if let Some(user) = user {
        let role = match user.role {
            Role::Owner => "data owner",
            Role::Public => "analyst",
        };
        let _ = write!(
            out,
            "<form method=\"post\" action=\"/logout\" class=\"who\"><span>{} ({role})</span>\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\"><button>Log out</button></form>",
            escape(&user.name),
            escape(&user.csrf)
        );
    }
    let _ = write!(
        out,
        "</header><main><h1>{}</h1>{body}</main></body></html>",
        escape(title)
    );
    out
}

/// The login page, with the login token in a hidden field and `message` above the form.
pub fn login(token: &str, message: Option<&str>) -> String {
    let mut body = String::new();
    if let Some(message) = message {
        let _ = write!(
            body,
            "<p class=\"error\" role=\"alert\">{}</p>",
            escape(message)
        );
    }
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/login\" class=\"login\">\
         <label>User <input name=\"user\" autocomplete=\"username\" required autofocus></label>\
         <label>Password <input name=\"password\" type=\"password\" autocomplete=\"current-password\" required></label>\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <button>Log in</button></form>\
         <p class=\"explain\">Log in with your dfanon-server user and password. Data owners \
         prepare and publish releases; analysts see the published releases.</p>",
        escape(token)
    );
    page("Log in", None, &body)
}

/// The home page: the published releases and how to read them; for an owner, the owner's
/// tables too.
pub fn home(
    user: &StudioUser,
    published: &[PublishedRelease],
    tables: Option<&[String]>,
    budget: Option<&Rows>,
    quota: Option<(f64, &Rows)>,
    connect: &Connect,
) -> String {
    let mut body = String::new();
    if let Some(tables) = tables {
        body.push_str(
            "<section id=\"source\"><h2>Source tables</h2>\
             <p class=\"explain\">The tables the server's init scripts set up, which releases \
             are drawn from. Analysts never see them.</p>",
        );
        if tables.is_empty() {
            body.push_str("<p>No tables yet: add them to an init script.</p>");
        } else {
            body.push_str("<ul class=\"tables\">");
            for table in tables {
                let _ = write!(body, "<li><code>{}</code></li>", escape(table));
            }
            body.push_str("</ul>");
        }
        body.push_str(
            "<p class=\"sql\">SQL: <code>SHOW TABLES</code></p>\
             <p><a class=\"start\" id=\"open-project\" href=\"/project\">Prepare a release in the studio →</a></p></section>",
        );
    }
    body.push_str(
        "<section id=\"published\"><h2>Published releases</h2>\
         <p class=\"explain\">Releases the data owner published under a table name. Analysts \
         query them with ordinary SQL; nothing else of the source is reachable.</p>",
    );
    if published.is_empty() {
        body.push_str("<p>Nothing is published yet.</p>");
    } else {
        body.push_str(
            "<table><thead><tr><th>Name</th><th>Method</th><th>Rows</th><th>ε charged</th>\
             <th>Guarantee</th></tr></thead><tbody>",
        );
        for release in published {
            let guarantee = release
                .metadata
                .iter()
                .find(|(key, _)| key == "guarantee")
                .map_or("", |(_, value)| value.as_str());
            let _ = write!(
                body,
                "<tr data-release=\"{name}\"><td><code>{name}</code></td><td>{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                escape(&release.method),
                release.rows,
                release.epsilon,
                escape(guarantee),
                name = escape(&release.name),
            );
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("</section>");
    if let Some(budget) = budget {
        body.push_str(&budget_left(budget));
    }
    if let Some((quota, spent)) = quota {
        body.push_str(&quota_left(quota, spent));
    }
    body.push_str(&how_to_connect(user, published, connect));
    let title = match user.role {
        Role::Owner => "Releases and sources",
        Role::Public => "Published releases",
    };
    page(title, Some(user), &body)
}

/// The statement whose result the budget section shows (in the user's own session, so an
/// analyst sees what `privacy_budget()` shows them over psql).
pub const BUDGET_SQL: &str = "SELECT table_name, releases, epsilon_spent, epsilon_remaining, \
     delta_remaining FROM privacy_budget() ORDER BY table_name";

/// The privacy budget left per source table.
fn budget_left(budget: &Rows) -> String {
    let mut out = String::from(
        "<section id=\"budget\"><h2>Privacy budget left</h2><p class=\"explain\">Each source \
         table's budget for differentially private releases, shared by every user: a release \
         spends ε (and δ) from it, once; when it is spent, no new release of the table can \
         be drawn. Releases already drawn stay readable.</p>",
    );
    if budget.cells.is_empty() {
        out.push_str("<p>No table has spent any budget yet.</p>");
    } else {
        out.push_str(
            "<table><thead><tr><th>Table</th><th>Releases</th><th>ε spent</th><th>ε left</th>\
             <th>δ left</th></tr></thead><tbody>",
        );
        let shown = |v: &str| match v {
            "inf" => "unlimited".to_string(),
            v => escape(v),
        };
        for row in &budget.cells {
            let cell = |i: usize| row.get(i).map_or(String::new(), |v| shown(v));
            let _ = write!(
                out,
                "<tr data-table=\"{t}\"><td><code>{t}</code></td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                cell(1),
                cell(2),
                cell(3),
                cell(4),
                t = cell(0),
            );
        }
        out.push_str("</tbody></table>");
    }
    let _ = write!(
        out,
        "<p class=\"sql\">SQL: <code>{}</code></p></section>",
        escape(BUDGET_SQL)
    );
    out
}

/// The statement whose result the quota section shows, in the user's own session.
pub const QUOTA_SQL: &str = "SELECT table_name, releases, epsilon_spent, epsilon_remaining \
     FROM privacy_quota() ORDER BY table_name";

/// An analyst's own quota: what their releases spent of it per source table.
fn quota_left(quota: f64, spent: &Rows) -> String {
    let mut out = format!(
        "<section id=\"quota\"><h2>Your own quota</h2><p class=\"explain\">Beside each \
         table's budget, the server gives you a quota of <b data-quota=\"{quota}\">ε = {quota}</b> \
         per source table: the most your own new releases may spend of that table's budget. \
         A release someone already drew is served again without a charge.</p>"
    );
    if spent.cells.is_empty() {
        out.push_str("<p>Your releases have spent nothing of it yet.</p>");
    } else {
        out.push_str(
            "<table><thead><tr><th>Table</th><th>Your releases</th><th>ε spent</th>\
             <th>ε left</th></tr></thead><tbody>",
        );
        for row in &spent.cells {
            let cell = |i: usize| row.get(i).map_or(String::new(), |v| escape(v));
            let _ = write!(
                out,
                "<tr data-quota-table=\"{t}\"><td><code>{t}</code></td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                cell(1),
                cell(2),
                cell(3),
                t = cell(0),
            );
        }
        out.push_str("</tbody></table>");
    }
    let _ = write!(
        out,
        "<p class=\"sql\">SQL: <code>{}</code></p></section>",
        escape(QUOTA_SQL)
    );
    out
}

/// The psql and ADBC lines that read the first published release (or a placeholder name).
fn how_to_connect(user: &StudioUser, published: &[PublishedRelease], connect: &Connect) -> String {
    let name = published.first().map_or("<release>", |r| r.name.as_str());
    let mut out = String::from(
        "<section id=\"connect\"><h2>How to connect</h2>\
         <p class=\"explain\">With your own user and password, from any PostgreSQL or Arrow \
         Flight SQL client.</p>",
    );
    if let Some(address) = connect.postgres {
        let ssl = if connect.tls { " sslmode=require" } else { "" };
        let _ = write!(
            out,
            "<p>psql:</p><pre>psql \"host={} port={} user={} dbname=datafusion{ssl}\" \\\n  -c \"SELECT * FROM {} LIMIT 10\"</pre>",
            address.ip(),
            address.port(),
            escape(&user.name),
            escape(name)
        );
    }
    if let Some(address) = connect.flight_sql {
        let scheme = if connect.tls { "grpc+tls" } else { "grpc" };
        let _ = write!(
            out,
            "<p>Python, ADBC (<code>pip install adbc-driver-flightsql pyarrow</code>):</p>\
             <pre>import adbc_driver_flightsql.dbapi as flight\n\n\
             with flight.connect(\"{scheme}://{address}\",\n    \
             db_kwargs={{\"username\": \"{}\", \"password\": \"...\"}}) as conn:\n    \
             with conn.cursor() as cur:\n        \
             cur.execute(\"SELECT * FROM {} LIMIT 10\")\n        \
             print(cur.fetch_arrow_table())</pre>",
            escape(&user.name),
            escape(name)
        );
    }
    out.push_str("</section>");
    out
}

/// The page of a refused request (a missing or wrong CSRF token, no session).
pub fn refused() -> String {
    page(
        "Refused",
        None,
        "<p class=\"error\">This request was refused: it did not come from a page of this \
         studio with a live session. <a href=\"/\">Start again</a>.</p>",
    )
}

pub fn not_found() -> String {
    page(
        "Not found",
        None,
        "<p>There is no such page. <a href=\"/\">Back to the studio</a>.</p>",
    )
}

/// A candidate's report while it is being written: the page loads again every 2 seconds
/// until the report is in.
pub fn report_pending(candidate: usize) -> String {
    refreshing_page(
        "Report being written",
        None,
        &format!(
            "<p id=\"evidence-pending\">The report of candidate {candidate} (risk and utility before and after, \
             the attacks) is being written; this page shows it when it is done. \
             <a href=\"/project#candidates\">Back to the candidates</a>.</p>"
        ),
        2,
    )
}

/// A candidate's report that could not be written, and why (the owner's own error).
pub fn report_failed(candidate: usize, error: &str) -> String {
    page(
        "No report",
        None,
        &format!(
            "<p class=\"error\" role=\"alert\">The report of candidate {candidate} could not be written: {}</p>\
             <p><a href=\"/project#candidates\">Back to the candidates</a>.</p>",
            escape(error)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(name: &str) -> PublishedRelease {
        PublishedRelease {
            name: name.into(),
            method: "kanon".into(),
            rows: 42,
            epsilon: 0.0,
            delta: 0.0,
            metadata: vec![("guarantee".into(), "k-anonymity <k=5>".into())],
        }
    }

    fn user(role: Role) -> StudioUser {
        StudioUser {
            name: "ann".into(),
            role,
            csrf: "tok\"en".into(),
        }
    }

    #[test]
    fn the_public_page_lists_releases_escaped_and_no_tables() {
        let connect = Connect {
            postgres: "127.0.0.1:5433".parse().ok(),
            flight_sql: "127.0.0.1:50061".parse().ok(),
            tls: false,
        };
        let budget = Rows {
            columns: Vec::new(),
            cells: vec![vec![
                "datafusion.public.nps".into(),
                "2".into(),
                "1".into(),
                "2".into(),
                "inf".into(),
            ]],
        };
        let spent = Rows {
            columns: Vec::new(),
            cells: vec![vec![
                "datafusion.public.nps".into(),
                "1".into(),
                "0.5".into(),
                "1".into(),
            ]],
        };
        let html = home(
            &user(Role::Public),
            &[release("adult_<k5>")],
            None,
            Some(&budget),
            Some((1.5, &spent)),
            &connect,
        );
        assert!(html.contains("<b data-quota=\"1.5\">ε = 1.5</b>"), "{html}");
        assert!(html.contains("<tr data-quota-table=\"datafusion.public.nps\"><td><code>datafusion.public.nps</code></td><td class=\"num\">1</td><td class=\"num\">0.5</td><td class=\"num\">1</td></tr>"), "{html}");
        assert!(html.contains("<tr data-table=\"datafusion.public.nps\"><td><code>datafusion.public.nps</code></td><td class=\"num\">2</td><td class=\"num\">1</td><td class=\"num\">2</td><td class=\"num\">unlimited</td></tr>"), "{html}");
        assert!(html.contains("<code>adult_&lt;k5&gt;</code>"), "{html}");
        assert!(html.contains("k-anonymity &lt;k=5&gt;"));
        assert!(!html.contains("adult_<k5>"));
        assert!(!html.contains("Source tables"));
        assert!(
            html.contains("value=\"tok&quot;en\""),
            "the CSRF token in the log-out form"
        );
        assert!(html.contains("host=127.0.0.1 port=5433 user=ann dbname=datafusion"));
        assert!(html.contains("grpc://127.0.0.1:50061"));
        let owner = home(
            &user(Role::Owner),
            &[],
            Some(&["adult".to_string()]),
            None,
            None,
            &connect,
        );
        assert!(!owner.contains("Your own quota"));
        assert!(owner.contains("Source tables") && owner.contains("<code>adult</code>"));
        assert!(owner.contains("Nothing is published yet."));
    }

    #[test]
    fn the_login_page_carries_its_token_and_message() {
        let html = login("abc", Some("authentication failed"));
        assert!(html.contains("name=\"csrf\" value=\"abc\""));
        assert!(html.contains("role=\"alert\">authentication failed<"));
        assert!(!html.contains("/logout"));
    }
}
