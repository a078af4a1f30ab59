//! The HTTP side: axum's router over the page's files and four JSON endpoints, every request
//! through the guard first, every build on the bounded pool.
//!
//! - `GET /`, `/playground.js`, `/playground.css`: the page (`assets.rs`).
//! - `GET /api/session`: the opened file's text, the library, the specs and formats.
//! - `POST /api/build`: the editor's text built, drawn and compared ([`crate::work::build`]).
//! - `POST /api/export`: the plan in an export format, as a download.
//! - `POST /api/save`: the text written over the opened file, and no other.

use crate::opened::Opened;
use crate::wire::{
    BuildRequest, Example, ExportRequest, SaveRequest, Saved, SessionInfo, WireError, WireFormat,
};
use crate::{MAX_BODY_BYTES, ServeError, TIME_LIMIT, WORKERS, assets, guard, work};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// What every request shares.
#[derive(Debug)]
pub(crate) struct AppState {
    /// The port listened on: the `Host` and `Origin` the guard accepts.
    port: u16,
    /// The file opened, if any.
    opened: Option<Opened>,
    /// Turns on the pool of builds.
    slots: Arc<Semaphore>,
}

impl AppState {
    pub(crate) fn new(port: u16, opened: Option<Opened>) -> AppState {
        AppState {
            port,
            opened,
            slots: Arc::new(Semaphore::new(WORKERS)),
        }
    }

    /// The name the editor's text goes by (diagnostics show it; the resolver reads it).
    fn editor_name(&self) -> String {
        self.opened
            .as_ref()
            .map_or_else(|| "playground.weave".to_owned(), |o| o.name().to_owned())
    }
}

/// Serves `listener` until Ctrl-C.
pub(crate) async fn run(
    listener: std::net::TcpListener,
    port: u16,
    opened: Option<Opened>,
) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| ServeError::Io(format!("cannot listen: {e}")))?;
    let app = router(Arc::new(AppState::new(port, opened)));
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| ServeError::Io(format!("the server stopped: {e}")))
}

/// The routes, behind the guard.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/api/session", get(session))
        .route("/api/build", post(build))
        .route("/api/export", post(export))
        .route("/api/save", post(save))
        .fallback(page)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), guarded))
        .with_state(state)
}

/// An error answered as JSON.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        axum::Json(WireError {
            error: message.into(),
        }),
    )
        .into_response()
}

fn json<T: Serialize>(value: &T) -> Response {
    axum::Json(value).into_response()
}

/// The one header `name` of a request: `Err` when it is given twice; a value that is not visible
/// ASCII is kept as a character no check accepts.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, String> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(format!("the request has two `{name}` headers"));
    }
    Ok(first.map(|v| v.to_str().unwrap_or("\u{fffd}")))
}

/// The guard (see `guard.rs`), then the answer with the headers that keep the page to itself.
async fn guarded(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let refused = (|| {
        let headers = request.headers();
        let host = single(headers, header::HOST.as_str())?;
        // An absolute request target names its host too; it must agree.
        if let Some(authority) = request.uri().authority()
            && host.is_some_and(|h| !h.eq_ignore_ascii_case(authority.as_str()))
        {
            return Err("the request's target and its `Host` differ".to_owned());
        }
        // Nothing takes a query: a file named in one is never read.
        if request.uri().query().is_some() {
            return Err("the playground takes no query string".to_owned());
        }
        let post = match *request.method() {
            Method::GET | Method::HEAD => None,
            Method::POST => Some(single(headers, header::CONTENT_TYPE.as_str())?),
            _ => return Err("the playground answers GET and POST only".to_owned()),
        };
        let origin = single(headers, header::ORIGIN.as_str())?;
        let site = single(headers, "sec-fetch-site")?;
        match guard::refusal(state.port, host, origin, site, post) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    })();
    let mut response = match refused {
        Err(why) => error(StatusCode::FORBIDDEN, why),
        Ok(()) => next.run(request).await,
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY.as_str(),
            assets::CONTENT_SECURITY_POLICY,
        ),
        (header::X_CONTENT_TYPE_OPTIONS.as_str(), "nosniff"),
        (header::REFERRER_POLICY.as_str(), "no-referrer"),
        (header::CACHE_CONTROL.as_str(), "no-store"),
        ("cross-origin-resource-policy", "same-origin"),
        ("cross-origin-opener-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The page's files; anything else is not found.
async fn page(method: Method, uri: axum::http::Uri) -> Response {
    match (method, assets::asset(uri.path())) {
        (Method::GET | Method::HEAD, Some((body, media_type))) => {
            ([(header::CONTENT_TYPE, media_type)], body).into_response()
        }
        _ => error(
            StatusCode::NOT_FOUND,
            format!(
                "nothing at `{}`: the playground is at /",
                pipeweave_diagnostics::visible(uri.path())
            ),
        ),
    }
}

/// Runs `job` on the pool of builds: at most [`WORKERS`] at once, each answered within
/// [`TIME_LIMIT`] (a job past it goes on until the language's budgets end it, holding its turn,
/// but its client is answered); a panic answers this request with an error.
pub(crate) async fn on_pool<T: Send + 'static>(
    state: &AppState,
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    let busy = || {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the playground is busy with {WORKERS} builds that have not finished in {} s; \
                 try again when they have",
                TIME_LIMIT.as_secs()
            ),
        )
    };
    let turn = tokio::time::timeout(TIME_LIMIT, state.slots.clone().acquire_owned())
        .await
        .map_err(|_| busy())?
        .map_err(|_| busy())?;
    let handle = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        job()
    });
    match tokio::time::timeout(TIME_LIMIT, handle).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => {
            let what = match e.try_into_panic() {
                Ok(payload) => payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_owned()),
                Err(_) => "the job was cancelled".to_owned(),
            };
            Err(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "pipeweave failed on this request ({}); this is a bug: please report it with \
                     the schedule. The playground goes on",
                    pipeweave_diagnostics::visible(&what)
                ),
            ))
        }
        Err(_) => Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the build took longer than {} s; give smaller P, M or v",
                TIME_LIMIT.as_secs()
            ),
        )),
    }
}

/// A request's body as `T`, or the error answered: too large, or not the JSON `T` is.
fn read_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    what: &str,
) -> Result<T, Response> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request is larger than {} MiB, the most the playground reads",
                    MAX_BODY_BYTES >> 20
                ),
            )
        } else {
            error(
                e.status(),
                format!("cannot read the request: {}", e.body_text()),
            )
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        let why = e.to_string();
        error(
            StatusCode::BAD_REQUEST,
            format!(
                "the request is no {what}: {}",
                pipeweave_diagnostics::visible(&why)
            ),
        )
    })
}

async fn session(State(state): State<Arc<AppState>>) -> Response {
    let text = match &state.opened {
        Some(opened) => {
            let opened = opened.clone();
            match on_pool(&state, move || opened.read()).await {
                Ok(Ok(text)) => text,
                Ok(Err(e)) => return error(StatusCode::CONFLICT, e.0),
                Err(response) => return response,
            }
        }
        None => pipeweave_dsl::library::get("1f1b")
            .map(|e| e.source.to_owned())
            .unwrap_or_default(),
    };
    let examples = pipeweave_dsl::library::all()
        .map(|e| Example {
            name: e.name.to_owned(),
            description: pipeweave_dsl::info(e.source).doc.unwrap_or_default(),
            text: e.source.to_owned(),
        })
        .collect();
    let mut specs: Vec<String> = pipeweave_spec::SHIPPED_SPECS
        .iter()
        .map(|s| s.name.to_owned())
        .collect();
    if !specs.iter().any(|s| s == "default") {
        specs.insert(0, "default".to_owned());
    }
    json(&SessionInfo {
        file: state.opened.as_ref().map(|o| o.name().to_owned()),
        text,
        examples,
        specs,
        formats: work::FORMATS
            .iter()
            .map(|&(id, label, ..)| WireFormat { id, label })
            .collect(),
        max_body: MAX_BODY_BYTES,
    })
}

async fn build(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request: BuildRequest = match read_body(body, "build request") {
        Ok(r) => r,
        Err(response) => return response,
    };
    let name = state.editor_name();
    match on_pool(&state, move || work::build(&name, &request)).await {
        Ok(built) => json(&built),
        Err(response) => response,
    }
}

async fn export(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request: ExportRequest = match read_body(body, "export request") {
        Ok(r) => r,
        Err(response) => return response,
    };
    let name = state.editor_name();
    match on_pool(&state, move || work::export(&name, &request)).await {
        Ok(Ok(file)) => {
            let disposition = format!("attachment; filename=\"{}\"", file.file_name);
            let mut response = Response::new(Body::from(file.bytes));
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(file.media_type),
            );
            if let Ok(value) = HeaderValue::from_str(&disposition) {
                headers.insert(header::CONTENT_DISPOSITION, value);
            }
            response
        }
        Ok(Err(why)) => error(StatusCode::UNPROCESSABLE_ENTITY, why),
        Err(response) => response,
    }
}

async fn save(State(state): State<Arc<AppState>>, body: Result<Bytes, BytesRejection>) -> Response {
    let request: SaveRequest = match read_body(body, "save request") {
        Ok(r) => r,
        Err(response) => return response,
    };
    let Some(opened) = state.opened.clone() else {
        return error(
            StatusCode::CONFLICT,
            "the playground was started without a file, so there is none to save: start it as \
             `pipeweave serve FILE.weave`, or download the text",
        );
    };
    if request.text.len() > crate::MAX_FILE_BYTES {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the text has {} bytes, more than the {} the playground saves",
                request.text.len(),
                crate::MAX_FILE_BYTES
            ),
        );
    }
    let bytes = request.text.len();
    match on_pool(&state, move || opened.save(&request.text).map(|()| opened)).await {
        Ok(Ok(opened)) => json(&Saved {
            file: opened.name().to_owned(),
            bytes,
        }),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.0),
        Err(response) => response,
    }
}

#[cfg(test)]
mod tests;
