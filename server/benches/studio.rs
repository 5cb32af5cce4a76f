//! The studio's speed: a server with Adult in its studio folder and the 1.36 M-row NPS demo
//! table, driven over HTTP as a browser would (log in, then each step's form, following a
//! long step's progress page until it ends). Each case
//! prints `CASE name=studio_<step> median_s=<x> peak_rss_mb=<y>` (the server's peak so far);
//! the NPS candidate adds `release_s`, the same release run alone in this process, and
//! their ratio. A candidate shows when its step ends (`…_candidate_…`); its report, with
//! the attacks, follows (`…_candidate_…_report`: until it is in, from the same start).
//!
//! `cargo bench -p dfanon-server --bench studio [-- --runs N]` (default 3 runs per case).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use datafusion::prelude::SessionContext;

const SERVER: &str = env!("CARGO_BIN_EXE_dfanon-server");

/// The IPA candidate on NPS, as the studio runs it and as a release alone.
const NPS_QI: &str = "age, sex, los, surgery, location";

struct Response {
    status: u16,
    cookies: Vec<String>,
    body: String,
}

/// A browser's HTTP/1.1 request (one connection each) with the session's cookies.
struct Client {
    port: u16,
    cookies: Vec<String>,
}

impl Client {
    fn request(&mut self, method: &str, path: &str, form: &[(&str, &str)]) -> Response {
        let body: Vec<String> = form
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        let body = body.join("&");
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("the studio");
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: {}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            self.cookies.join("; "),
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("sent");
        let mut raw = String::new();
        stream.read_to_string(&mut raw).expect("response");
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let cookies: Vec<String> = head
            .lines()
            .filter_map(|l| l.strip_prefix("set-cookie: "))
            .filter_map(|c| c.split(';').next())
            .map(str::to_string)
            .collect();
        for cookie in &cookies {
            let name = cookie.split('=').next().unwrap_or_default();
            self.cookies.retain(|c| !c.starts_with(&format!("{name}=")));
            if !cookie.ends_with('=') {
                self.cookies.push(cookie.clone());
            }
        }
        Response {
            status,
            cookies,
            body: body.to_string(),
        }
    }

    /// The CSRF token of the page at `path`.
    fn csrf(&mut self, path: &str) -> String {
        let page = self.request("GET", path, &[]).body;
        page.split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a form with a token")
            .to_string()
    }

    /// Posts a step's form, follows the progress page of a long step until the step ends,
    /// and checks it ended without an error.
    fn step(&mut self, path: &str, csrf: &str, form: &[(&str, &str)]) {
        let mut fields = vec![("csrf", csrf)];
        fields.extend_from_slice(form);
        let response = self.request("POST", path, &fields);
        assert_eq!(response.status, 303, "{path}: {}", response.body);
        loop {
            let page = self.request("GET", "/project", &[]).body;
            if !page.contains("<section id=\"working\">") {
                assert!(!page.contains("<p class=\"error\""), "{path}: {page}");
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Waits until no candidate's report is still being written.
    fn wait_for_reports(&mut self) {
        while self
            .request("GET", "/project", &[])
            .body
            .contains("id=\"evidence-pending\"")
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// `runs` candidates, the `i`th with the fields `form(i)` (each a new release: the
    /// session's store serves a repeated one): the median time until the candidate shows
    /// (its step ends) and until its report is in.
    fn candidates(
        &mut self,
        csrf: &str,
        runs: usize,
        form: impl Fn(usize) -> Vec<(&'static str, String)>,
    ) -> (f64, f64) {
        let mut shown = Vec::new();
        let mut reported = Vec::new();
        for i in 0..runs {
            let fields = form(i);
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let start = Instant::now();
            self.step("/project/candidate", csrf, &fields);
            shown.push(start.elapsed().as_secs_f64());
            self.wait_for_reports();
            reported.push(start.elapsed().as_secs_f64());
        }
        (median(shown), median(reported))
    }
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn hash(password: &str) -> String {
    let mut child = Command::new(SERVER)
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("dfanon-server runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{password}\n").as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("hashed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn peak_rss_mb(child: &Child) -> f64 {
    std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Times `runs` runs of `action`.
fn timed(runs: usize, mut action: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                action();
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(3usize);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().expect("temp dir");
    let files = dir.path().join("files");
    std::fs::create_dir(&files).expect("files");
    for entry in std::fs::read_dir(root.join("tests/data/adult")).expect("adult") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "csv") {
            std::fs::copy(&path, files.join(path.file_name().expect("name"))).expect("copied");
        }
    }
    let hierarchies =
        std::fs::read_to_string(root.join("sql/nps_hierarchies.sql")).expect("hierarchies");
    std::fs::write(
        dir.path().join("setup.sql"),
        format!("CREATE TABLE nps AS SELECT * FROM nps_demo();\n{hierarchies}"),
    )
    .expect("setup");
    std::fs::write(
        dir.path().join("server.toml"),
        format!(
            "postgres = \"127.0.0.1:0\"\nstudio = \"127.0.0.1:0\"\nstudio_files = \"files\"\n\
             init = [\"setup.sql\"]\n[[user]]\nname = \"owner\"\nrole = \"owner\"\npassword_hash = \"{}\"\n",
            hash("owner-pw")
        ),
    )
    .expect("config");
    let mut server = Command::new(SERVER)
        .arg("--config")
        .arg(dir.path().join("server.toml"))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("the server starts");
    let mut line = String::new();
    BufReader::new(server.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("listening");
    let port: u16 = line
        .split("studio on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|address| address.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no studio in: {line}"));
    let mut client = Client {
        port,
        cookies: Vec::new(),
    };
    let token = client.csrf("/login");
    let login = client.request(
        "POST",
        "/login",
        &[
            ("user", "owner"),
            ("password", "owner-pw"),
            ("csrf", &token),
        ],
    );
    assert!(
        login.status == 303 && !login.cookies.is_empty(),
        "login failed"
    );
    let csrf = client.csrf("/project");
    let case = |name: &str, median: f64, server: &Child, extra: &str| {
        println!(
            "CASE name={name} median_s={median:.3}{extra} peak_rss_mb={:.0}",
            peak_rss_mb(server)
        );
    };

    // Adult: the source with its profile, roles, a hierarchy, the risk, a candidate, the
    // page.
    let t = timed(runs, || {
        client.step("/project/source", &csrf, &[("file", "adult.csv")])
    });
    case("studio_adult_source_profile", t, &server, "");
    let roles = [
        ("role_0", "quasi"),
        ("role_1", "quasi"),
        ("role_2", "quasi"),
        ("role_3", "quasi"),
        ("role_4", "quasi"),
        ("role_5", "other"),
        ("role_6", "other"),
        ("role_7", "other"),
        ("role_8", "sensitive"),
    ];
    client.step("/project/roles", &csrf, &roles);
    for column in ["sex", "race", "marital-status", "education"] {
        let file = format!("adult_hierarchy_{column}.csv");
        client.step(
            "/project/hierarchy",
            &csrf,
            &[("column", column), ("kind", "file"), ("file", &file)],
        );
    }
    let t = timed(runs, || {
        client.step(
            "/project/hierarchy",
            &csrf,
            &[
                ("column", "age"),
                ("kind", "intervals"),
                ("domain", "17..90"),
                ("levels", "5|10|20"),
            ],
        )
    });
    case("studio_adult_hierarchy", t, &server, "");
    let t = timed(runs, || client.step("/project/risk", &csrf, &[]));
    case("studio_adult_risk", t, &server, "");
    let (shown, reported) = client.candidates(&csrf, runs, |i| {
        vec![
            ("method", "kanon".into()),
            ("k", (5 + i).to_string()),
            ("suppression_limit", "0.05".into()),
        ]
    });
    case("studio_adult_candidate_kanon", shown, &server, "");
    case("studio_adult_candidate_kanon_report", reported, &server, "");
    let t = timed(runs, || {
        assert_eq!(client.request("GET", "/project", &[]).status, 200)
    });
    case("studio_adult_page", t, &server, "");

    // NPS, 1.36 M rows: the profile, and an IPA candidate next to the release alone.
    let t = timed(runs, || {
        client.step("/project/source", &csrf, &[("table", "nps")])
    });
    case("studio_nps_source_profile", t, &server, "");
    let roles = [
        ("role_0", "quasi"),
        ("role_1", "quasi"),
        ("role_2", "quasi"),
        ("role_3", "quasi"),
        ("role_4", "quasi"),
        ("role_5", "sensitive"),
    ];
    client.step("/project/roles", &csrf, &roles);
    let (shown, reported) = client.candidates(&csrf, runs, |i| {
        vec![
            ("method", "ipa".into()),
            ("epsilon", format!("{}", 1.0 + i as f64 / 100.0)),
        ]
    });
    let release = release_alone(runs, &hierarchies);
    case(
        "studio_nps_candidate_ipa",
        shown,
        &server,
        &format!(" release_s={release:.3} ratio={:.2}", shown / release),
    );
    case(
        "studio_nps_candidate_ipa_report",
        reported,
        &server,
        &format!(" release_s={release:.3} ratio={:.2}", reported / release),
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// The median time of the NPS IPA release alone (seeded, as the trial), in this process.
fn release_alone(runs: usize, hierarchies: &str) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let ctx = SessionContext::new();
        datafusion_anonymize::register_with(&ctx, datafusion_anonymize::RegisterOptions::owner())
            .expect("registered");
        let setup = format!("CREATE TABLE nps AS SELECT * FROM nps_demo();\n{hierarchies}");
        datafusion_anonymize::run_script(&ctx, &setup)
            .await
            .expect("setup");
        let mut times = Vec::new();
        for seed in 0..runs {
            let sql = format!(
                "SELECT COUNT(*) FROM anonymize('nps', method => 'ipa', qi => '{NPS_QI}', \
                 sensitive => 'disease', epsilon => 1, seed => {})",
                seed + 100
            );
            let start = Instant::now();
            ctx.sql(&sql)
                .await
                .expect("planned")
                .collect()
                .await
                .expect("released");
            times.push(start.elapsed().as_secs_f64());
        }
        median(times)
    })
}
