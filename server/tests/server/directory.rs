//! Directory logins (`[ldap]`) against a real OpenLDAP `slapd` (Debian's package, installed
//! when missing) that the test starts with a test directory: a steward of the stewards
//! group logs in as an owner, a reader of the analysts group as a public user, over psql
//! and ADBC with their directory passwords; a wrong password, a user in no group and an
//! unknown user are refused alike; local users still log in; the audit trail has every
//! attempt with its reason and the release with its charge, in whole lines after the server
//! is killed (SIGKILL) during a release. Both ways of finding a user
//! (a DN template over LDAPS, a search with a service account over StartTLS) are used.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{
    client_with, from_the_distribution, psql_command, psql_with, python, script, Site, Q1,
};

const BASE: &str = "dc=example,dc=org";

/// A running `slapd`, stopped when dropped.
struct Slapd {
    child: Child,
    ldap: u16,
    ldaps: u16,
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn directory_entries() -> String {
    // An entry's RDN value (escaped as in a DN), its uid and its password.
    let person = |rdn: &str, uid: &str| {
        format!(
            "dn: uid={rdn},ou=people,{BASE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid}\nuserPassword: {uid}-dir-pw\n\n"
        )
    };
    let group = |cn: &str, member: &str| {
        format!(
            "dn: cn={cn},ou=groups,{BASE}\nobjectClass: groupOfNames\ncn: {cn}\nmember: uid={member},ou=people,{BASE}\n\n"
        )
    };
    format!(
        "dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example Hospital\n\n\
         dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n\n\
         dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups\n\n{}{}{}{}{}{}",
        person("steward", "steward"),
        person("reader", "reader"),
        person("outsider", "outsider"),
        // A name that needs escaping in a DN: the login of "a,b" binds as uid=a\,b.
        person("a\\,b", "a,b"),
        group("stewards", "steward"),
        group("analysts", "reader"),
    )
}

/// Starts slapd over `dir` (which holds ca.pem, cert.pem, key.pem) with the test directory.
fn start_slapd(dir: &Path) -> Slapd {
    let slapd = from_the_distribution(&["/usr/sbin/slapd"], "slapd");
    let slapadd = slapd.with_file_name("slapadd");
    let db = dir.join("slapd-db");
    std::fs::create_dir_all(&db).expect("the directory's folder");
    let d = dir.display();
    let conf = dir.join("slapd.conf");
    std::fs::write(
        &conf,
        format!(
            "include /etc/ldap/schema/core.schema\n\
             include /etc/ldap/schema/cosine.schema\n\
             include /etc/ldap/schema/inetorgperson.schema\n\
             pidfile {d}/slapd.pid\n\
             modulepath /usr/lib/ldap\n\
             moduleload back_mdb\n\
             TLSCACertificateFile {d}/ca.pem\n\
             TLSCertificateFile {d}/cert.pem\n\
             TLSCertificateKeyFile {d}/key.pem\n\
             database mdb\n\
             maxsize 10485760\n\
             suffix \"{BASE}\"\n\
             rootdn \"cn=admin,{BASE}\"\n\
             rootpw admin-secret\n\
             directory {}\n\
             access to attrs=userPassword by self write by anonymous auth by * none\n\
             access to * by * read\n",
            db.display()
        ),
    )
    .expect("slapd.conf");
    let ldif = dir.join("entries.ldif");
    std::fs::write(&ldif, directory_entries()).expect("entries");
    let added = Command::new(&slapadd)
        .arg("-f")
        .arg(&conf)
        .arg("-l")
        .arg(&ldif)
        .output()
        .expect("slapadd runs");
    assert!(
        added.status.success(),
        "slapadd: {}",
        String::from_utf8_lossy(&added.stderr)
    );
    let (ldap, ldaps) = (free_port(), free_port());
    let child = Command::new(&slapd)
        .arg("-f")
        .arg(&conf)
        .arg("-h")
        .arg(format!(
            "ldap://127.0.0.1:{ldap}/ ldaps://127.0.0.1:{ldaps}/"
        ))
        .args(["-d", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("slapd starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", ldaps)).is_err() {
        assert!(Instant::now() < deadline, "slapd does not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    Slapd { child, ldap, ldaps }
}

fn make_certificates(dir: &Path) -> PathBuf {
    let made = Command::new(python())
        .arg(script("make_cert.py"))
        .arg(dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(made, "make_cert.py failed");
    dir.join("ca.pem")
}

/// The steward (of the stewards group) reads the source: an owner.
fn steward_is_an_owner(ca: &Path, port: u16) {
    let count = verified_psql(
        ca,
        port,
        "steward",
        "steward-dir-pw",
        "SELECT COUNT(*) FROM nps",
    );
    assert_eq!(count, Ok(vec![vec!["20000".to_string()]]));
}

fn audit_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the audit trail");
    assert!(text.ends_with('\n'), "a torn last line");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn verified_psql(
    ca: &Path,
    port: u16,
    user: &str,
    password: &str,
    sql: &str,
) -> Result<Vec<Vec<String>>, String> {
    let mut psql = psql_command("localhost");
    psql.env("PGSSLMODE", "verify-full")
        .env("PGSSLROOTCERT", ca);
    psql_with(psql, port, user, password, sql)
}

/// A site whose server takes TLS and `[ldap]` (the section's lines); slapd and the
/// certificates live in the site's folder.
fn directory_site(ldap: impl Fn(&Slapd, &Path) -> String) -> (Site, Slapd, PathBuf) {
    // The folder first (its certificates serve slapd and the server), then the settings.
    let probe = Site::with_settings("");
    let ca = make_certificates(probe.dir.path());
    let slapd = start_slapd(probe.dir.path());
    let section = ldap(&slapd, probe.dir.path());
    let config = probe.config();
    let text = std::fs::read_to_string(&config).expect("config");
    let text = text.replacen(
        "epsilon_budget = 3\n",
        "epsilon_budget = 3\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\naudit = \"audit.jsonl\"\n",
        1,
    );
    std::fs::write(&config, format!("{text}\n[ldap]\n{section}")).expect("config");
    (probe, slapd, ca)
}

#[test]
fn directory_users_log_in_with_their_directory_password() {
    let (site, slapd, ca) = directory_site(|slapd, _| {
        format!(
            "url = \"ldaps://127.0.0.1:{}\"\ntls_ca = \"ca.pem\"\n\
             bind_dn = \"uid={{user}},ou=people,{BASE}\"\n\
             owner_groups = [\"cn=stewards,ou=groups,{BASE}\"]\n\
             public_groups = [\"cn=analysts,ou=groups,{BASE}\"]\n\
             public_epsilon_quota = 1.5\n",
            slapd.ldaps
        )
    });
    let server = site.start();
    let port = server.postgres;
    // The reader (analysts) runs the release over psql and over ADBC: one draw, one charge.
    let by_psql = verified_psql(&ca, port, "reader", "reader-dir-pw", Q1).expect("psql runs Q1");
    assert!(!by_psql.is_empty());
    let by_adbc = client_with(
        "adbc",
        Some(&ca),
        server.flight,
        "reader",
        "reader-dir-pw",
        &[Q1],
    )
    .remove(0)
    .expect("ADBC runs Q1");
    assert_eq!(by_adbc, by_psql);
    // A public user: the source itself is not reachable.
    let hidden = verified_psql(
        &ca,
        port,
        "reader",
        "reader-dir-pw",
        "SELECT COUNT(*) FROM nps",
    );
    assert!(hidden.is_err(), "{hidden:?}");
    // The steward (stewards) is an owner.
    steward_is_an_owner(&ca, port);
    // Refused alike: a wrong password, a user in no group, an unknown user, and a name
    // with a comma (escaped in the DN: it binds as itself, and is in no group).
    for (user, password) in [
        ("reader", "wrong"),
        ("outsider", "outsider-dir-pw"),
        ("nobody", "nobody-dir-pw"),
        ("a,b", "a,b-dir-pw"),
    ] {
        let refused = verified_psql(&ca, port, user, password, "SELECT 1");
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("assword authentication failed")),
            "{user}: {refused:?}"
        );
    }
    // Over ADBC too; an empty password (which LDAP would take as an anonymous bind) is
    // never sent.
    for password in ["wrong", ""] {
        let refused = client_with(
            "adbc",
            Some(&ca),
            server.flight,
            "reader",
            password,
            &["SELECT 1"],
        )
        .remove(0);
        assert!(refused.is_err_and(|e| e.contains("authentication failed")));
    }
    // Local users still log in with their own passwords (SCRAM).
    let local = verified_psql(&ca, port, "owner", "owner-pw", "SELECT 1");
    assert_eq!(local, Ok(vec![vec!["1".to_string()]]));

    // The server is killed (SIGKILL) while the steward's release runs: the trail keeps
    // whole lines, and everything above.
    let release = {
        let ca = ca.clone();
        std::thread::spawn(move || {
            verified_psql(
                &ca,
                port,
                "steward",
                "steward-dir-pw",
                "SELECT COUNT(*) FROM anonymize('nps', method => 'kanon', \
                 qi => 'age, sex, los, surgery, location', sensitive => 'disease', k => 3)",
            )
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let mut server = server;
    let _ = server.child.kill();
    let _ = server.child.wait();
    let _ = release.join();

    let all = audit_lines(&site.dir.path().join("audit.jsonl"));
    let logins: Vec<&Value> = all.iter().filter(|l| l["event"] == "login").collect();
    let ok = |user: &str, role: &str, protocol: &str| {
        logins.iter().any(|l| {
            l["user"] == user
                && l["outcome"] == "ok"
                && l["role"] == role
                && l["protocol"] == protocol
        })
    };
    assert!(ok("reader", "public", "postgres"), "{logins:#?}");
    assert!(ok("reader", "public", "flight_sql"), "{logins:#?}");
    assert!(ok("steward", "owner", "postgres"), "{logins:#?}");
    let reason = |user: &str| -> Vec<String> {
        logins
            .iter()
            .filter(|l| l["user"] == user && l["outcome"] == "refused")
            .map(|l| l["error"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert!(
        reason("reader")
            .iter()
            .any(|r| r.contains("refused the password")),
        "{logins:#?}"
    );
    assert!(
        reason("reader")
            .iter()
            .any(|r| r.contains("empty password")),
        "{logins:#?}"
    );
    assert!(reason("outsider")[0].contains("none of the configured groups"));
    assert!(reason("nobody")[0].contains("refused the password of uid=nobody"));
    assert!(
        reason("a,b")[0].contains("uid=a\\,b,ou=people"),
        "{:?}",
        reason("a,b")
    );
    assert!(!all.iter().any(|l| l.to_string().contains("reader-dir-pw")));
    // The release the reader drew, with its charge and the directory quota left.
    let q1: Vec<&Value> = all
        .iter()
        .filter(|l| l["event"] == "statement" && l["text"] == Q1)
        .collect();
    assert_eq!(q1[0]["user"], "reader");
    assert_eq!(q1[0]["epsilon"], 1.0);
    assert_eq!(q1[0]["quota_left"], 0.5);
    drop(slapd);
}

#[test]
fn a_search_with_a_service_account_over_starttls_finds_the_user() {
    let (site, slapd, ca) = directory_site(|slapd, dir| {
        std::fs::write(dir.join("service.secret"), "admin-secret\n").expect("secret");
        format!(
            "url = \"ldap://localhost:{}\"\nstarttls = true\ntls_ca = \"ca.pem\"\n\
             search_base = \"ou=people,{BASE}\"\nuser_attribute = \"uid\"\n\
             search_bind_dn = \"cn=admin,{BASE}\"\nsearch_bind_password_file = \"service.secret\"\n\
             owner_groups = [\"cn=stewards,ou=groups,{BASE}\"]\n\
             public_groups = [\"cn=analysts,ou=groups,{BASE}\"]\n",
            slapd.ldap
        )
    });
    let server = site.start();
    let port = server.postgres;
    steward_is_an_owner(&ca, port);
    let wrong = verified_psql(&ca, port, "steward", "reader-dir-pw", "SELECT 1");
    assert!(wrong.is_err_and(|e| e.contains("assword authentication failed")));
    // A name with filter syntax finds nobody: the filter is built in BER, not text.
    let star = verified_psql(&ca, port, "*", "steward-dir-pw", "SELECT 1");
    assert!(star.is_err_and(|e| e.contains("assword authentication failed")));
    let all = audit_lines(&site.dir.path().join("audit.jsonl"));
    let refused: Vec<String> = all
        .iter()
        .filter(|l| l["event"] == "login" && l["user"] == "*")
        .map(|l| l["error"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(refused[0].contains("no entry has uid"), "{refused:?}");
    drop(slapd);
}
