//! The `[ldap]` section of the configuration, read and checked: where the directory is,
//! how a user's entry is found, how the connection to it is secured, and which groups give
//! which role.
//!
//! ```toml
//! [ldap]
//! url = "ldaps://ldap.hospital.example:636"   # or ldap://… with starttls = true
//! tls_ca = "directory-ca.pem"                  # the authority that signed its certificate
//! # Either the user's DN from a template ({user} is the login name, escaped):
//! bind_dn = "uid={user},ou=people,dc=hospital,dc=example"
//! # or a search under search_base for the one entry whose user_attribute is the name,
//! # anonymously or as a service account (its password in a file):
//! # search_base = "ou=people,dc=hospital,dc=example"
//! # user_attribute = "uid"                     # sAMAccountName on Active Directory
//! # search_bind_dn = "cn=dfanon,ou=services,dc=hospital,dc=example"
//! # search_bind_password_file = "ldap-service.secret"
//! owner_groups = ["cn=stewards,ou=groups,dc=hospital,dc=example"]
//! public_groups = ["cn=analysts,ou=groups,dc=hospital,dc=example"]
//! public_epsilon_quota = 1.0                   # optional, per directory analyst
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// How long one directory login may take unless `timeout_seconds` says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `[ldap]` section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LdapSection {
    url: String,
    #[serde(default)]
    starttls: bool,
    tls_ca: Option<PathBuf>,
    bind_dn: Option<String>,
    search_base: Option<String>,
    user_attribute: Option<String>,
    search_bind_dn: Option<String>,
    search_bind_password_file: Option<PathBuf>,
    #[serde(default)]
    owner_groups: Vec<String>,
    #[serde(default)]
    public_groups: Vec<String>,
    group_member_attribute: Option<String>,
    public_epsilon_quota: Option<f64>,
    timeout_seconds: Option<u64>,
}

/// How the connection to the directory is secured.
#[derive(Debug, Clone, PartialEq)]
pub enum Security {
    /// `ldaps://`: TLS from the first byte.
    Tls,
    /// `ldap://` with `starttls = true`: the StartTLS operation, then TLS.
    StartTls,
    /// `ldap://` to a loopback address only: no TLS (a directory on this machine).
    Loopback,
}

/// A password from the configuration: never shown by `Debug`.
#[derive(Clone, PartialEq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// How a user's entry is found.
#[derive(Debug, Clone, PartialEq)]
pub enum Locate {
    /// The DN is the template with `{user}` replaced by the escaped name.
    Template(String),
    /// One entry under `base` whose `attribute` equals the name, searched anonymously or
    /// bound as `(dn, password)`.
    Search {
        base: String,
        attribute: String,
        service: Option<(String, Secret)>,
    },
}

/// The checked `[ldap]` section.
#[derive(Debug, Clone)]
pub struct LdapSettings {
    /// Host name or address, as the certificate names it.
    pub host: String,
    pub port: u16,
    pub security: Security,
    /// The certificate authorities (PEM) the directory's certificate must chain to.
    pub tls_ca: Option<PathBuf>,
    pub locate: Locate,
    /// Groups (DNs) whose members log in as owners.
    pub owner_groups: Vec<String>,
    /// Groups (DNs) whose members log in as public users.
    pub public_groups: Vec<String>,
    /// The attribute of a group entry that lists its members' DNs (`member`).
    pub member_attribute: String,
    /// The ε quota of each public directory user, if any.
    pub public_epsilon_quota: Option<f64>,
    /// The longest one login may take (connect, TLS, binds, searches).
    pub timeout: Duration,
}

/// `host` and `port` of `ldap://host:port` or `ldaps://host:port` (IPv6 in brackets).
fn host_and_port(url: &str) -> Result<(bool, String, u16), String> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("ldaps://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("ldap://") {
        (false, rest)
    } else {
        return Err(format!(
            "[ldap] url = '{url}' must start with ldaps:// or ldap://"
        ));
    };
    let rest = rest.trim_end_matches('/');
    let default_port = if tls { 636 } else { 389 };
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or_else(|| format!("[ldap] url = '{url}': an IPv6 address needs its closing ]"))?;
        (host.to_string(), after.strip_prefix(':'))
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (rest.to_string(), None),
        }
    };
    if host.is_empty() || host.contains(['/', '?', '@']) {
        return Err(format!(
            "[ldap] url = '{url}' names no host (give ldaps://host:port, nothing after it)"
        ));
    }
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse()
            .map_err(|_| format!("[ldap] url = '{url}': port '{p}' is not a number 1-65535"))?,
    };
    Ok((tls, host, port))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl LdapSection {
    /// Checks the section; relative paths are taken from `folder`.
    pub fn check(self, folder: &Path) -> Result<LdapSettings, String> {
        let resolve = |p: PathBuf| if p.is_absolute() { p } else { folder.join(p) };
        let (tls, host, port) = host_and_port(&self.url)?;
        let security = match (tls, self.starttls) {
            (true, true) => {
                return Err("[ldap] starttls = true is for ldap:// urls; ldaps:// is TLS already".into())
            }
            (true, false) => Security::Tls,
            (false, true) => Security::StartTls,
            (false, false) if is_loopback(&host) => Security::Loopback,
            (false, false) => {
                return Err(format!(
                    "[ldap] url = '{}' without TLS: users' passwords would cross the network in clear text; use ldaps:// or starttls = true",
                    self.url
                ))
            }
        };
        let tls_ca = self.tls_ca.map(resolve);
        if security != Security::Loopback && tls_ca.is_none() {
            return Err("[ldap] tls_ca is missing: name the PEM file of the certificate authority that signed the directory's certificate".into());
        }
        if let Some(ca) = &tls_ca {
            if !ca.is_file() {
                return Err(format!("[ldap] tls_ca = '{}' is not a file", ca.display()));
            }
        }
        let locate = match (self.bind_dn, self.search_base) {
            (Some(_), Some(_)) => {
                return Err("[ldap] give bind_dn (a template) or search_base (a search), not both".into())
            }
            (None, None) => {
                return Err("[ldap] says how to find a user's entry: bind_dn = \"uid={user},ou=people,...\" or search_base = \"ou=people,...\"".into())
            }
            (Some(template), None) => {
                if template.matches("{user}").count() != 1 {
                    return Err(format!(
                        "[ldap] bind_dn = '{template}' must hold {{user}} exactly once"
                    ));
                }
                if self.user_attribute.is_some()
                    || self.search_bind_dn.is_some()
                    || self.search_bind_password_file.is_some()
                {
                    return Err("[ldap] user_attribute, search_bind_dn and search_bind_password_file go with search_base, not bind_dn".into());
                }
                Locate::Template(template)
            }
            (None, Some(base)) => {
                let service = match (self.search_bind_dn, self.search_bind_password_file) {
                    (None, None) => None,
                    (Some(dn), Some(file)) => {
                        let file = resolve(file);
                        let password = std::fs::read_to_string(&file).map_err(|e| {
                            format!(
                                "[ldap] search_bind_password_file = '{}': {e}",
                                file.display()
                            )
                        })?;
                        let password = password.trim_end_matches(['\r', '\n']).to_string();
                        if password.is_empty() {
                            return Err(format!(
                                "[ldap] search_bind_password_file = '{}' is empty",
                                file.display()
                            ));
                        }
                        Some((dn, Secret(password)))
                    }
                    _ => {
                        return Err("[ldap] search_bind_dn and search_bind_password_file go together".into())
                    }
                };
                Locate::Search {
                    base,
                    attribute: self.user_attribute.unwrap_or_else(|| "uid".into()),
                    service,
                }
            }
        };
        if self.owner_groups.is_empty() && self.public_groups.is_empty() {
            return Err("[ldap] names no group: list the groups whose members log in, as owner_groups = [\"cn=...\"] and public_groups = [\"cn=...\"]".into());
        }
        if let Some(quota) = self.public_epsilon_quota {
            if !(quota.is_finite() && quota >= 0.0) {
                return Err(format!(
                    "[ldap] public_epsilon_quota = {quota} must be a number >= 0"
                ));
            }
        }
        let timeout = match self.timeout_seconds {
            None => DEFAULT_TIMEOUT,
            Some(0) => return Err("[ldap] timeout_seconds must be at least 1".into()),
            Some(s) => Duration::from_secs(s),
        };
        Ok(LdapSettings {
            host,
            port,
            security,
            tls_ca,
            locate,
            owner_groups: self.owner_groups,
            public_groups: self.public_groups,
            member_attribute: self
                .group_member_attribute
                .unwrap_or_else(|| "member".into()),
            public_epsilon_quota: self.public_epsilon_quota,
            timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<LdapSettings, String> {
        let section: LdapSection = toml::from_str(text).map_err(|e| e.to_string())?;
        section.check(Path::new("/nonexistent"))
    }

    #[test]
    fn urls_give_host_port_and_security() {
        assert_eq!(
            host_and_port("ldaps://dir.example:1636"),
            Ok((true, "dir.example".into(), 1636))
        );
        assert_eq!(
            host_and_port("ldap://[::1]"),
            Ok((false, "::1".into(), 389))
        );
        assert_eq!(host_and_port("ldaps://dir/"), Ok((true, "dir".into(), 636)));
        assert!(host_and_port("http://dir").is_err());
        assert!(host_and_port("ldap://u@dir").is_err());
        assert!(host_and_port("ldap://dir:x").is_err());
    }

    #[test]
    fn mistakes_are_named() {
        let groups = "owner_groups = [\"cn=o\"]";
        let e = |text: &str| check(text).err().unwrap_or_default();
        assert!(e(&format!(
            "url = \"ldap://dir.example\"\nbind_dn = \"uid={{user}}\"\n{groups}"
        ))
        .contains("clear text"));
        assert!(e(&format!(
            "url = \"ldaps://dir.example\"\nbind_dn = \"uid={{user}}\"\n{groups}"
        ))
        .contains("tls_ca is missing"));
        assert!(e(&format!(
            "url = \"ldap://127.0.0.1\"\nbind_dn = \"uid=x\"\n{groups}"
        ))
        .contains("{user} exactly once"));
        assert!(e(&format!("url = \"ldap://127.0.0.1\"\n{groups}")).contains("bind_dn"));
        assert!(
            e("url = \"ldap://127.0.0.1\"\nbind_dn = \"uid={user}\"").contains("names no group")
        );
        assert!(e(&format!(
            "url = \"ldap://127.0.0.1\"\nsearch_base = \"dc=x\"\nsearch_bind_dn = \"cn=s\"\n{groups}"
        ))
        .contains("go together"));
        let ok = check(&format!(
            "url = \"ldap://localhost:3890\"\nsearch_base = \"dc=x\"\n{groups}"
        ))
        .expect("loopback without TLS");
        assert_eq!(ok.security, Security::Loopback);
        assert_eq!(
            ok.locate,
            Locate::Search {
                base: "dc=x".into(),
                attribute: "uid".into(),
                service: None
            }
        );
        assert_eq!(ok.timeout, DEFAULT_TIMEOUT);
    }
}
