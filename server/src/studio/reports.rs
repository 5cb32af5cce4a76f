//! The reports as pages, for owners: a candidate's (its trial's, once written) and a
//! publication's. A report carries its own stylesheet and no scripts.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::evidence::Evidence;
use super::steps::{owned, owner, report_path};
use super::{html, Studio};

/// The report of a published release, for owners.
pub async fn published_report(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    if let Err(refusal) = owner(&studio, &headers) {
        return refusal.response();
    }
    let found = report_path(&studio, &name).and_then(|path| std::fs::read_to_string(path).ok());
    match found {
        Some(report) => report_page(report),
        None => html(StatusCode::NOT_FOUND, super::pages::not_found()),
    }
}

/// A report as a page: its own stylesheet inline, no scripts.
fn report_page(report: String) -> Response {
    let mut response = html(StatusCode::OK, report);
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
        ),
    );
    response
}

/// A candidate's report (its own stylesheet inline, no scripts).
pub async fn report(
    State(studio): State<Arc<Studio>>,
    headers: HeaderMap,
    Path(number): Path<usize>,
) -> Response {
    let (_, bench) = match owned(&studio, &headers) {
        Ok(found) => found,
        Err(refusal) => return refusal.response(),
    };
    let bench = bench.lock().await;
    let Some(Ok(trial)) = number.checked_sub(1).and_then(|i| bench.trials.get(i)) else {
        return html(StatusCode::NOT_FOUND, super::pages::not_found());
    };
    match &trial.evidence {
        Evidence::Ready(report) => report_page(report.clone()),
        Evidence::Pending => html(StatusCode::OK, super::pages::report_pending(number)),
        Evidence::Failed(e) => html(StatusCode::OK, super::pages::report_failed(number, e)),
    }
}
