//! The studio's logins: server credentials (the same password hashes as both protocols),
//! a session cookie that is `HttpOnly`, `SameSite=Strict` and `Secure` under TLS, and a
//! CSRF token per session that every state-changing request carries in its form. The
//! login form itself carries a token that must equal its own cookie's, so no other site
//! can log a browser in.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap};
use rand::RngCore;
use serde::Deserialize;

use crate::config::Role;

/// The cookie that names a logged-in session.
const SESSION_COOKIE: &str = "dfanon_studio";

/// The cookie that holds the login form's token.
const LOGIN_COOKIE: &str = "dfanon_login";

/// The most sessions kept at once; past it the least recently used one ends.
const MAX_SESSIONS: usize = 1000;

/// The login form.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    pub user: String,
    pub password: String,
    pub csrf: String,
}

/// A state-changing form: only its CSRF token is read here.
#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    pub csrf: String,
}

/// A logged-in user of the studio.
#[derive(Debug, Clone)]
pub struct StudioUser {
    pub name: String,
    pub role: Role,
    /// The token every state-changing request of this session carries.
    pub csrf: String,
}

/// The logged-in sessions, by session token.
pub struct Sessions {
    sessions: Mutex<HashMap<String, (StudioUser, Instant)>>,
    /// How long a session may stay unused.
    idle: Duration,
}

impl Sessions {
    pub fn new(idle: Duration) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            idle,
        }
    }

    /// Starts a session for `user`; its token.
    pub fn start(&self, user: StudioUser) -> String {
        let token = token();
        let now = Instant::now();
        let Ok(mut sessions) = self.sessions.lock() else {
            return token;
        };
        sessions.retain(|_, (_, seen)| now.duration_since(*seen) <= self.idle);
        if sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, (_, seen))| *seen)
                .map(|(token, _)| token.clone());
            if let Some(oldest) = oldest {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(token.clone(), (user, now));
        token
    }

    /// The user of the request's session cookie, if it names a live session (which is then
    /// marked used).
    pub fn user(&self, headers: &HeaderMap) -> Option<StudioUser> {
        let token = cookie(headers, SESSION_COOKIE)?;
        let mut sessions = self.sessions.lock().ok()?;
        let now = Instant::now();
        match sessions.get_mut(&token) {
            Some((user, seen)) if now.duration_since(*seen) <= self.idle => {
                *seen = now;
                Some(user.clone())
            }
            Some(_) => {
                sessions.remove(&token);
                None
            }
            None => None,
        }
    }

    /// Ends the request's session.
    pub fn end(&self, headers: &HeaderMap) {
        if let (Some(token), Ok(mut sessions)) =
            (cookie(headers, SESSION_COOKIE), self.sessions.lock())
        {
            sessions.remove(&token);
        }
    }
}

/// A fresh random token: 32 bytes from the operating system's generator, in hex.
pub fn token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether two tokens are equal, in time that does not depend on where they differ; an
/// empty token equals nothing.
pub fn same_token(a: &str, b: &str) -> bool {
    !a.is_empty()
        && a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Whether the login form's token is its login cookie's.
pub fn login_token_matches(headers: &HeaderMap, form_token: &str) -> bool {
    cookie(headers, LOGIN_COOKIE).is_some_and(|token| same_token(&token, form_token))
}

fn attributes(secure: bool) -> &'static str {
    if secure {
        "; Path=/; HttpOnly; SameSite=Strict; Secure"
    } else {
        "; Path=/; HttpOnly; SameSite=Strict"
    }
}

/// The `Set-Cookie` value of a session.
pub fn session_cookie(token: &str, secure: bool) -> String {
    format!("{SESSION_COOKIE}={token}{}", attributes(secure))
}

/// The `Set-Cookie` value that ends the session cookie.
pub fn clear_session_cookie(secure: bool) -> String {
    format!("{SESSION_COOKIE}={}; Max-Age=0", attributes(secure))
}

/// The `Set-Cookie` value of a login form's token.
pub fn login_cookie(token: &str, secure: bool) -> String {
    format!("{LOGIN_COOKIE}={token}{}", attributes(secure))
}

/// The `Set-Cookie` value that ends the login cookie.
pub fn clear_login_cookie(secure: bool) -> String {
    format!("{LOGIN_COOKIE}={}; Max-Age=0", attributes(secure))
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_cookie(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(value).expect("ascii"));
        headers
    }

    #[test]
    fn tokens_are_long_random_and_compared_whole() {
        let (a, b) = (token(), token());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same_token(&a, &a.clone()));
        assert!(!same_token(&a, &b));
        assert!(!same_token(&a, &a[..63]));
        assert!(!same_token("", ""), "an empty token matches nothing");
    }

    #[test]
    fn sessions_are_found_by_cookie_and_end() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let token = sessions.start(StudioUser {
            name: "owner".into(),
            role: Role::Owner,
            csrf: "c".into(),
        });
        let headers = with_cookie(&format!("other=1; {SESSION_COOKIE}={token}"));
        assert_eq!(
            sessions.user(&headers).map(|u| u.name).as_deref(),
            Some("owner")
        );
        assert!(sessions
            .user(&with_cookie(&format!("{SESSION_COOKIE}=x{token}")))
            .is_none());
        assert!(sessions.user(&HeaderMap::new()).is_none());
        sessions.end(&headers);
        assert!(sessions.user(&headers).is_none());
    }

    #[test]
    fn an_idle_session_ends() {
        let sessions = Sessions::new(Duration::ZERO);
        let token = sessions.start(StudioUser {
            name: "owner".into(),
            role: Role::Owner,
            csrf: "c".into(),
        });
        std::thread::sleep(Duration::from_millis(5));
        assert!(sessions
            .user(&with_cookie(&format!("{SESSION_COOKIE}={token}")))
            .is_none());
    }

    #[test]
    fn cookies_are_http_only_strict_and_secure_under_tls() {
        assert_eq!(
            session_cookie("t", true),
            "dfanon_studio=t; Path=/; HttpOnly; SameSite=Strict; Secure"
        );
        assert_eq!(
            session_cookie("t", false),
            "dfanon_studio=t; Path=/; HttpOnly; SameSite=Strict"
        );
        assert!(login_token_matches(&with_cookie("dfanon_login=abc"), "abc"));
        assert!(!login_token_matches(
            &with_cookie("dfanon_login=abc"),
            "abd"
        ));
        assert!(!login_token_matches(&HeaderMap::new(), ""));
    }
}
