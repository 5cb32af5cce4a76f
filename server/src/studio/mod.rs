//! The steward's studio: a web page on the `studio` listener (HTTPS under the server's TLS
//! settings). Owners log in with their server credentials and see the owner's tables and
//! the published releases; public users see only the published releases and how to
//! connect to them. Logins, cookies and CSRF tokens are in [`login`]; the HTML in
//! [`pages`].

mod activity;
mod candidates_page;
mod evidence;
mod files;
mod login;
mod pages;
mod preview;
mod profile;
mod project;
mod project_page;
mod reports;
mod results;
mod steps;
mod upload;
mod workbench;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Extension, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use pgwire::tokio::tokio_rustls::TlsAcceptor;
use tokio::net::TcpListener;

use crate::audit::Protocol;
use crate::config::Role;
use crate::connections;
use crate::sessions::Server;
pub use files::Folder;
use login::{LoginForm, Sessions, StudioUser};
pub use pages::Connect;
use workbench::Workbench;

/// A password for `dfanon-server studio`'s owner: 30 hex digits (120 random bits from the
/// operating system).
pub fn one_time_password() -> String {
    login::token()[..30].to_string()
}

/// What a multipart form may carry beside its file (the fields and the parts' headers).
const FORM_SLACK: usize = 64 * 1024;

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What every request of the studio shares.
struct Studio {
    server: Arc<Server>,
    sessions: Sessions,
    /// Whether the studio is served over TLS (cookies are then `Secure`).
    secure: bool,
    connect: Connect,
    /// The folder of files a steward may register, if the configuration names one.
    folder: Option<Folder>,
    /// Each owner's workbench, by user name.
    benches: Mutex<HashMap<String, Bench>>,
    /// Where candidates' reports are written before they are read back.
    scratch: tempfile::TempDir,
}

/// An owner's workbench and what it is doing (readable while a step holds the workbench).
#[derive(Clone)]
struct Bench {
    work: Arc<tokio::sync::Mutex<Workbench>>,
    activity: Arc<activity::Activity>,
    /// Held while the workbench's candidates' reports are written ([`evidence::compute`]).
    evidence: Arc<tokio::sync::Mutex<()>>,
}

/// The address a request came from.
#[derive(Clone, Copy)]
struct Peer(SocketAddr);

/// Serves the studio on `listener` until the process ends, within the server's connection
/// limits.
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    connect: Connect,
    folder: Option<Folder>,
) -> Result<(), String> {
    let limits = server.connections().clone();
    let idle = limits.idle_timeout;
    let studio = Arc::new(Studio {
        server,
        sessions: Sessions::new(idle),
        secure: tls.is_some(),
        connect,
        folder,
        benches: Mutex::new(HashMap::new()),
        scratch: tempfile::Builder::new()
            .prefix("dfanon-studio-")
            .tempdir()
            .map_err(|e| format!("studio: a folder for reports: {e}"))?,
    });
    let router = Router::new()
        .route("/", get(home))
        .route("/login", get(login_page).post(log_in))
        .route("/logout", post(log_out))
        .route("/studio.css", get(stylesheet))
        .route("/project", get(steps::project))
        .route("/project/source", post(steps::source))
        .route("/project/roles", post(steps::roles))
        .route("/project/hierarchy", post(steps::hierarchy))
        .route("/project/risk", post(steps::risk))
        .route("/project/candidate", post(steps::add_candidate))
        .route("/project/publish", post(steps::publish))
        .route("/project/undo", post(steps::undo))
        .route(
            "/project/open",
            post(steps::open).layer(DefaultBodyLimit::max(upload::MAX_BYTES + FORM_SLACK)),
        )
        .route(
            "/project/hierarchy/upload",
            post(steps::upload_hierarchy)
                .layer(DefaultBodyLimit::max(upload::MAX_BYTES + FORM_SLACK)),
        )
        .route("/project/recipe", get(steps::recipe))
        .route("/project/candidates/{number}/report", get(reports::report))
        .route("/published/{name}/report", get(reports::published_report))
        .fallback(not_found)
        .with_state(studio);
    loop {
        let (socket, peer) = connections::accept(&listener, "studio").await;
        let Some(held) = limits.admit() else {
            drop(socket);
            continue;
        };
        let service = TowerToHyperService::new(router.clone().layer(Extension(Peer(peer))));
        let tls = tls.clone();
        tokio::spawn(async move {
            let _held = held;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT);
            let served = match tls {
                Some(tls) => match tokio::time::timeout(HEADER_TIMEOUT, tls.accept(socket)).await {
                    Ok(Ok(stream)) => http
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                        .map_err(|e| e.to_string()),
                    Ok(Err(e)) => Err(format!("TLS: {e}")),
                    Err(_) => Err("TLS: no handshake in time".into()),
                },
                None => http
                    .serve_connection(TokioIo::new(socket), service)
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(e) = served {
                eprintln!("studio: connection from {peer} ended: {e}");
            }
        });
    }
}

/// An HTML page with the headers every page carries: no caching, no framing, no scripts or
/// styles from elsewhere, no referrer.
fn html(status: StatusCode, body: String) -> Response {
    typed(status, "text/html; charset=utf-8", body)
}

/// A response of `content_type` with the headers every response carries.
fn typed(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    secure_headers(headers);
    response
}

fn secure_headers(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
        ),
    );
}

/// A redirect to `to` (303: the browser follows with GET).
fn redirect(to: &'static str, cookies: &[String]) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static(to));
    for cookie in cookies {
        if let Ok(value) = HeaderValue::from_str(cookie) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    secure_headers(headers);
    response
}

/// The home page: the login page for a visitor, the published releases for a public user,
/// and the owner's tables as well for an owner.
async fn home(State(studio): State<Arc<Studio>>, headers: HeaderMap) -> Response {
    let Some(user) = studio.sessions.user(&headers) else {
        return redirect("/login", &[]);
    };
    let published = studio.server.published();
    let tables = match user.role {
        Role::Owner => Some(studio.server.owner_tables()),
        Role::Public => None,
    };
    // The budget and the user's own quota as their own session shows them (what psql
    // would show them).
    let session = studio.server.session(&user.name).ok();
    let (budget, spent) = match &session {
        Some(session) => (
            results::run(&session.ctx, pages::BUDGET_SQL).await.ok(),
            results::run(&session.ctx, pages::QUOTA_SQL).await.ok(),
        ),
        None => (None, None),
    };
    let quota = studio.server.epsilon_quota(&user.name).zip(spent.as_ref());
    html(
        StatusCode::OK,
        pages::home(
            &user,
            &published,
            tables.as_deref(),
            budget.as_ref(),
            quota,
            &studio.connect,
        ),
    )
}

/// The login form, with a fresh login token in its cookie and in the form.
async fn login_page(State(studio): State<Arc<Studio>>, headers: HeaderMap) -> Response {
    if studio.sessions.user(&headers).is_some() {
        return redirect("/", &[]);
    }
    login_form(&studio, StatusCode::OK, None)
}

fn login_form(studio: &Studio, status: StatusCode, message: Option<&str>) -> Response {
    let token = login::token();
    let mut response = html(status, pages::login(&token, message));
    if let Ok(value) = HeaderValue::from_str(&login::login_cookie(&token, studio.secure)) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// Checks a login: the form's token must be the login cookie's, the user name and address
/// must not be locked by failed logins, and the password must match. Every failure says
/// only "authentication failed" (or, when locked, when to try again).
async fn log_in(
    State(studio): State<Arc<Studio>>,
    Extension(Peer(peer)): Extension<Peer>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    if !login::login_token_matches(&headers, &form.csrf) {
        return login_form(
            &studio,
            StatusCode::FORBIDDEN,
            Some("the login form expired: log in again"),
        );
    }
    let limits = studio.server.connections();
    let keys = [
        format!("user {}", form.user),
        format!("address {}", peer.ip()),
    ];
    if let Some(wait) = limits.failed_logins.locked(&keys) {
        let message = format!(
            "too many failed logins for this user name or address: try again in {} s",
            wait.as_secs() + 1
        );
        if let Some(audit) = studio.server.audit() {
            let refused = Err("too many failed logins");
            let _ = audit.login(
                Protocol::Studio,
                &form.user,
                &peer.ip().to_string(),
                refused,
            );
        }
        return login_form(&studio, StatusCode::TOO_MANY_REQUESTS, Some(&message));
    }
    let address = peer.ip().to_string();
    let audit_login = |outcome| match studio.server.audit() {
        Some(audit) => audit.login(Protocol::Studio, &form.user, &address, outcome),
        None => Ok(()),
    };
    let user = match studio.server.login(&form.user, &form.password).await {
        Ok(user) => user,
        Err(refusal) => {
            refusal.count_in(&limits.failed_logins, &keys);
            let _ = audit_login(Err(refusal.reason.as_str()));
            return login_form(
                &studio,
                StatusCode::UNAUTHORIZED,
                Some("authentication failed"),
            );
        }
    };
    if let Err(e) = audit_login(Ok(user.role)) {
        return login_form(&studio, StatusCode::SERVICE_UNAVAILABLE, Some(&e));
    }
    let session = studio.sessions.start(StudioUser {
        name: user.name.clone(),
        role: user.role,
        csrf: login::token(),
    });
    redirect(
        "/",
        &[
            login::session_cookie(&session, studio.secure),
            login::clear_login_cookie(studio.secure),
        ],
    )
}

/// Ends the session (its CSRF token must come with the request).
async fn log_out(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Form(form): Form<login::CsrfForm>,
) -> Response {
    match studio.sessions.user(&headers) {
        Some(user) if login::same_token(&user.csrf, &form.csrf) => {
            studio.sessions.end(&headers);
            redirect("/login", &[login::clear_session_cookie(studio.secure)])
        }
        _ => html(StatusCode::FORBIDDEN, pages::refused()),
    }
}

async fn stylesheet() -> Response {
    typed(
        StatusCode::OK,
        "text/css; charset=utf-8",
        pages::STYLE.to_string(),
    )
}

async fn not_found() -> Response {
    html(StatusCode::NOT_FOUND, pages::not_found())
}
