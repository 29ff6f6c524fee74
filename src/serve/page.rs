//! The page `recall serve` serves at `/`: ask the vault in a browser and follow up. Plain
//! HTML, CSS and JavaScript compiled into the binary (nothing built, nothing fetched from a
//! network), served under a Content-Security-Policy that lets them reach this server alone.
//!
//! The page holds nothing of the vault, so it is served without the API key; what it asks
//! (`/v1/chat/completions`, `/v1/recall/status`) needs the key like any client, and the page
//! asks the person for it once when the API answers 401. The Host and Origin checks hold for
//! it as for the API: they run before any route.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// Scripts and styles of this server only, no inline code, requests to this server only, and
/// no framing: a page that cannot be made to run or load anything it did not ship with.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const INDEX_HTML: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/recall.js");
const STYLE: &str = include_str!("page/recall.css");

/// `GET /`, `/recall.js` and `/recall.css`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/recall.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/recall.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

/// One of the page's files, with the headers that keep it to itself.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // A new binary brings a new page: never a stale script beside a changed API.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
