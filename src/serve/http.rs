//! The HTTP face of `recall serve`: routes, who may call (origin, API key), and how a request
//! becomes a [`Job`] for the model's one worker and its events become an OpenAI reply, whole or
//! streamed. It never touches the model: the worker (`serve/mod.rs`) does.
//!
//! Layers, outermost first: the origin check (a browser page of an origin not allowed is refused
//! outright, not merely left without CORS headers: a simple POST needs no preflight), CORS
//! (tower-http; preflights are answered there, before the key is asked for, as browsers send
//! none with them), the body bound, then the API key.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::access::{Access, is_same_origin};
use super::openai::{
    ChatChunk, ChatCompletion, ChatRequest, Choice, ChunkChoice, Delta, ErrorBody, MODEL_ID, Model,
    ModelList, ResponseMessage,
};
use super::status::{Board, Status};
use super::{Finished, Job, JobError, JobEvent, JobRequest, Work};

/// The largest request body taken: a long chat's history is tens of kilobytes; this is room
/// for far more than any context holds.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How often an idle stream sends a comment line: a client that has gone away is noticed
/// (the write fails) and its turn stopped, even while the model is still reading the prompt.
const STREAM_KEEP_ALIVE: Duration = Duration::from_secs(1);

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The worker's queue; its capacity is `--queue`.
    pub jobs: mpsc::Sender<Job>,
    pub access: Arc<Access>,
    /// Unix seconds when the server started (the model's `created`).
    pub started: i64,
    /// Numbers requests, for ids and the log.
    pub next_request: Arc<AtomicU64>,
    /// How long the last turn took, in milliseconds (0: none yet); a full queue's Retry-After
    /// is reckoned from it.
    pub last_turn_ms: Arc<AtomicU64>,
    /// The Ctrl-C token: every job's token is its child.
    pub shutdown: CancellationToken,
    /// What the server runs on and how its turns go, kept current by the worker.
    pub board: Board,
    /// The deck quiz items are saved to and reviewed from (`--deck`, as `recall review`'s).
    pub deck: Arc<std::path::PathBuf>,
}

/// The router: the page (`/`, its script and style) and the API (`/v1/models`,
/// `/v1/models/recall`, `/v1/chat/completions`, `/v1/recall/status`, and the `study` routes),
/// behind the layers the module's doc lists; the key is asked for by the API's routes only.
pub fn router(state: AppState, study: Router<AppState>) -> Router {
    let access = state.access.clone();
    let cors = tower_http::cors::CorsLayer::new()
        .allow_origin(tower_http::cors::AllowOrigin::predicate(
            move |origin: &HeaderValue, _| origin.to_str().is_ok_and(|o| access.allows_origin(o)),
        ))
        .allow_methods([Method::GET, Method::POST])
        // OpenAI's JavaScript SDK sends headers of its own (x-stainless-…): take what is asked.
        .allow_headers(tower_http::cors::AllowHeaders::mirror_request())
        .max_age(Duration::from_secs(600));
    let api = Router::new()
        .route("/v1/models", get(models).fallback(method_not_allowed))
        .route("/v1/models/{id}", get(model).fallback(method_not_allowed))
        .route(
            "/v1/chat/completions",
            post(chat_completions).fallback(method_not_allowed),
        )
        .route(
            "/v1/recall/status",
            get(status).fallback(method_not_allowed),
        )
        .merge(study)
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize));
    api.merge(super::page::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(cors)
        .layer(middleware::from_fn_with_state(state.clone(), check_origin))
        .layer(middleware::from_fn_with_state(state.clone(), check_host))
        .with_state(state)
}

async fn check_host(State(state): State<AppState>, request: Request, next: Next) -> Response {
    // HTTP/2 carries the host in the URI's authority, HTTP/1.1 in the header.
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    if let Some(host) = host
        && !state.access.allows_host(&host)
    {
        return error(
            StatusCode::FORBIDDEN,
            "invalid_request_error",
            format!(
                "requests for the host {host:?} are refused: without an API key, recall serve \
                 answers only to loopback names (localhost, 127.0.0.1, [::1])"
            ),
        );
    }
    next.run(request).await
}

/// An OpenAI-shaped error reply.
pub(super) fn error(
    status: StatusCode,
    kind: &'static str,
    message: impl Into<String>,
) -> Response {
    (status, Json(ErrorBody::new(kind, message))).into_response()
}

async fn check_origin(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let host = request.headers().get(header::HOST);
        let host = host.and_then(|h| h.to_str().ok());
        if !state.access.allows_origin(origin) && !is_same_origin(origin, host) {
            return error(
                StatusCode::FORBIDDEN,
                "invalid_request_error",
                format!(
                    "requests from the origin {origin:?} are not allowed; start recall serve \
                     with --allow-origin {origin} to allow them"
                ),
            );
        }
    }
    next.run(request).await
}

async fn authorize(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !state.access.authorizes(request.headers()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "missing or wrong API key: send the key recall serve was started with as \
             `Authorization: Bearer KEY`",
        );
    }
    next.run(request).await
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!(
            "no route {method} {uri}: recall serve answers GET / (its page), GET /v1/models, \
             POST /v1/chat/completions and GET /v1/recall/status"
        ),
    )
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> Response {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!("{uri} does not take {method}: GET /v1/models, POST /v1/chat/completions"),
    )
}

async fn models(State(state): State<AppState>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: vec![Model::recall(state.started)],
    })
}

async fn model(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    if id == MODEL_ID {
        Json(Model::recall(state.started)).into_response()
    } else {
        error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("no model {id:?}: recall serve offers one model, {MODEL_ID:?}"),
        )
    }
}

async fn status(State(state): State<AppState>) -> Json<Status> {
    let mut status = state.board.read();
    status.turns.waiting = state.jobs.max_capacity() - state.jobs.capacity();
    Json(status)
}

async fn chat_completions(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // Read as JSON whatever the Content-Type says: `curl -d` sends a form's type.
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            return error(
                rejection.status(),
                "invalid_request_error",
                rejection.body_text(),
            );
        }
    };
    let request: ChatRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("the body is not a chat completion request: {e}"),
            );
        }
    };
    let job_request = match JobRequest::from_openai(&request) {
        Ok(job_request) => job_request,
        Err(message) => return error(StatusCode::BAD_REQUEST, "invalid_request_error", message),
    };
    let Submitted {
        number,
        cancel,
        received,
    } = match submit(&state, Work::Chat(job_request)) {
        Ok(submitted) => submitted,
        Err(refused) => return *refused,
    };
    let reply = Reply {
        id: format!("chatcmpl-recall-{}-{number}", state.started),
        created: chrono::Utc::now().timestamp(),
        received,
        // Dropped with the handler or the stream: a client that goes away stops its turn.
        client: cancel.drop_guard(),
    };
    if request.stream {
        reply.stream().await
    } else {
        reply.whole().await
    }
}

/// A job on the worker's queue: its number, its token, and where its events come.
pub(super) struct Submitted {
    pub number: u64,
    pub cancel: CancellationToken,
    pub received: mpsc::UnboundedReceiver<JobEvent>,
}

/// Puts `work` on the worker's queue; a full queue is 429 with Retry-After, reckoned from the
/// last turn's time.
pub(super) fn submit(state: &AppState, work: Work) -> Result<Submitted, Box<Response>> {
    let number = state.next_request.fetch_add(1, Ordering::Relaxed) + 1;
    let cancel = state.shutdown.child_token();
    let (events, received) = mpsc::unbounded_channel();
    let job = Job {
        number,
        work,
        cancel: cancel.clone(),
        events,
    };
    match state.jobs.try_send(job) {
        Ok(()) => Ok(Submitted {
            number,
            cancel,
            received,
        }),
        Err(mpsc::error::TrySendError::Full(_)) => {
            let waiting = state.jobs.max_capacity() as u64 + 1;
            let last = state.last_turn_ms.load(Ordering::Relaxed).max(1000);
            let seconds = (waiting * last).div_ceil(1000);
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                format!(
                    "recall serve answers one question at a time and {} are waiting; try again \
                     in about {seconds} s",
                    waiting - 1
                ),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            Err(Box::new(response))
        }
        Err(mpsc::error::TrySendError::Closed(_)) => Err(Box::new(stopping())),
    }
}

pub(super) fn stopping() -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_error",
        "recall serve is stopping",
    )
}

/// The reply to one request, from the worker's events.
struct Reply {
    id: String,
    created: i64,
    received: mpsc::UnboundedReceiver<JobEvent>,
    client: DropGuard,
}

impl Reply {
    /// A `chat.completion` once the turn has finished.
    async fn whole(mut self) -> Response {
        let mut content = String::new();
        while let Some(event) = self.received.recv().await {
            match event {
                JobEvent::Started | JobEvent::Done(_) => {}
                JobEvent::Text(text) => content.push_str(&text),
                JobEvent::Finished(finished) => {
                    self.client.disarm();
                    content.push_str(&finished.sources_markdown);
                    return Json(ChatCompletion {
                        id: self.id,
                        object: "chat.completion",
                        created: self.created,
                        model: MODEL_ID,
                        choices: vec![Choice {
                            index: 0,
                            message: ResponseMessage {
                                role: "assistant",
                                content,
                            },
                            finish_reason: finished.finish_reason,
                        }],
                        usage: finished.usage,
                        recall: finished.extension,
                    })
                    .into_response();
                }
                JobEvent::Failed(failure) => return failure_response(&failure),
            }
        }
        stopping()
    }

    /// Server-sent `chat.completion.chunk`s: the role, the answer as it is written, the
    /// sources, a last chunk with the finish reason, usage and Recall's extension, then
    /// `data: [DONE]`. A failure after the stream began is an `{"error": …}` event (as OpenAI
    /// sends one), then `[DONE]`.
    ///
    /// The headers wait for the turn to begin, so that a turn refused before it begins (a
    /// question too long for the context, the server stopping) gets its own status.
    async fn stream(mut self) -> Response {
        match self.received.recv().await {
            Some(JobEvent::Started) => {}
            Some(JobEvent::Failed(failure)) => return failure_response(&failure),
            Some(_) | None => return stopping(),
        }
        let first = self.chunk(
            Delta {
                role: Some("assistant"),
                content: Some(String::new()),
            },
            None,
        );
        let state = (self, VecDeque::from([first]), false);
        let events =
            futures::stream::unfold(state, |(mut reply, mut pending, mut done)| async move {
                loop {
                    if let Some(event) = pending.pop_front() {
                        return Some((
                            Ok::<_, std::convert::Infallible>(event),
                            (reply, pending, done),
                        ));
                    }
                    if done {
                        return None;
                    }
                    match reply.received.recv().await {
                        Some(JobEvent::Started | JobEvent::Done(_)) => {}
                        Some(JobEvent::Text(text)) => pending.push_back(reply.chunk(
                            Delta {
                                role: None,
                                content: Some(text),
                            },
                            None,
                        )),
                        Some(JobEvent::Finished(finished)) => {
                            pending.push_back(reply.chunk(
                                Delta {
                                    role: None,
                                    content: Some(finished.sources_markdown.clone()),
                                },
                                None,
                            ));
                            pending.push_back(reply.chunk(Delta::default(), Some(&finished)));
                            pending.push_back(SseEvent::default().data("[DONE]"));
                            done = true;
                        }
                        Some(JobEvent::Failed(failure)) => {
                            pending.push_back(error_event(failure.message()));
                            pending.push_back(SseEvent::default().data("[DONE]"));
                            done = true;
                        }
                        None => {
                            pending.push_back(error_event("recall serve is stopping".into()));
                            pending.push_back(SseEvent::default().data("[DONE]"));
                            done = true;
                        }
                    }
                }
            });
        Sse::new(events)
            .keep_alive(KeepAlive::new().interval(STREAM_KEEP_ALIVE))
            .into_response()
    }

    /// One chunk; `finished` makes it the last one.
    fn chunk(&self, delta: Delta, finished: Option<&Finished>) -> SseEvent {
        let chunk = ChatChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk",
            created: self.created,
            model: MODEL_ID,
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: finished.map(|f| f.finish_reason),
            }],
            usage: finished.map(|f| f.usage),
            recall: finished.map(|f| f.extension.clone()),
        };
        SseEvent::default()
            .json_data(chunk)
            .expect("chunks always serialize")
    }
}

fn error_event(message: String) -> SseEvent {
    SseEvent::default()
        .json_data(ErrorBody::new("server_error", message))
        .expect("errors always serialize")
}

pub(super) fn failure_response(failure: &JobError) -> Response {
    match failure {
        JobError::Stopping => stopping(),
        JobError::Turn(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            failure.message(),
        ),
        JobError::NotFound(_) => error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            failure.message(),
        ),
        JobError::Conflict(_) => error(
            StatusCode::CONFLICT,
            "invalid_request_error",
            failure.message(),
        ),
        // OpenAI's own answer to a prompt over the context: 400, `context_length_exceeded`.
        JobError::TooLong { .. } => {
            let mut body = ErrorBody::new("invalid_request_error", failure.message());
            body.error.code = Some("context_length_exceeded");
            (StatusCode::BAD_REQUEST, Json(body)).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    //! The router in-process (tower's `oneshot`), with the test in the worker's place: what
    //! reaches the queue, and what a client sees of the worker's events.

    use axum::body::{Body, to_bytes};
    use serde_json::Value;
    use tower::ServiceExt;

    use super::*;
    use crate::serve::openai::{RecallExtension, Usage};
    use crate::sources::Citation;

    fn state(queue: usize, api_key: Option<&str>) -> (AppState, mpsc::Receiver<Job>) {
        let (jobs, received) = mpsc::channel(queue);
        let state = AppState {
            jobs,
            access: Arc::new(Access {
                api_key: api_key.map(String::from),
                extra_origins: vec!["https://chat.example.org".into()],
            }),
            started: 1_700_000_000,
            next_request: Arc::new(AtomicU64::new(0)),
            last_turn_ms: Arc::new(AtomicU64::new(4_000)),
            shutdown: CancellationToken::new(),
            board: Board::default(),
            deck: Arc::new(std::env::temp_dir().join("recall-test-no-deck.json")),
        };
        (state, received)
    }

    fn question(stream: bool) -> Request {
        let body = serde_json::json!({
            "model": "recall",
            "stream": stream,
            "messages": [{"role": "user", "content": "What is Sync?"}],
        });
        Request::post("/v1/chat/completions")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    }

    async fn send(state: &AppState, request: Request) -> Response {
        router(state.clone(), Router::new())
            .oneshot(request)
            .await
            .unwrap()
    }

    async fn body_text(response: Response) -> String {
        let bytes = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    async fn error_message(response: Response) -> String {
        let body: Value = serde_json::from_str(&body_text(response).await).expect("JSON");
        body["error"]["message"]
            .as_str()
            .expect("an OpenAI error")
            .to_string()
    }

    /// The worker's part for one job: two pieces of text, then the end with one source.
    fn answer_job(job: Job) {
        let citation = Citation {
            number: 1,
            title: "Sync".into(),
            heading_path: vec!["Sync".into(), "Pricing".into()],
            uri: "note://Sync.md#Pricing".into(),
            link: "obsidian://open?vault=v&file=Sync%23Pricing".into(),
            cited: true,
            replaces: Vec::new(),
            passage: "Sync costs $4 a month.".into(),
        };
        job.events.send(JobEvent::Started).unwrap();
        for text in ["Sync is ", "a paid service [1]."] {
            job.events.send(JobEvent::Text(text.into())).unwrap();
        }
        let finished = Finished {
            sources_markdown: crate::session::citations_markdown(std::slice::from_ref(&citation)),
            extension: RecallExtension {
                citations: vec![citation],
                fallback: false,
            },
            usage: Usage::new(500, 12),
            finish_reason: "stop",
        };
        job.events.send(JobEvent::Finished(finished)).unwrap();
    }

    #[tokio::test]
    async fn a_preflight_from_obsidian_is_answered_without_the_key() {
        let (state, _queue) = state(1, Some("secret"));
        let preflight = Request::builder()
            .method(Method::OPTIONS)
            .uri("/v1/chat/completions")
            .header(header::ORIGIN, "app://obsidian.md")
            .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
            .header(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                "authorization,content-type,x-stainless-os",
            )
            .body(Body::empty())
            .unwrap();
        let response = send(&state, preflight).await;
        assert!(response.status().is_success(), "{}", response.status());
        let headers = response.headers();
        assert_eq!(
            headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "app://obsidian.md"
        );
        assert!(
            headers[header::ACCESS_CONTROL_ALLOW_METHODS]
                .to_str()
                .unwrap()
                .contains("POST")
        );
        assert_eq!(
            headers[header::ACCESS_CONTROL_ALLOW_HEADERS],
            "authorization,content-type,x-stainless-os"
        );
    }

    #[tokio::test]
    async fn a_page_of_another_origin_is_refused_even_without_a_preflight() {
        let (state, mut queue) = state(1, None);
        let mut request = question(false);
        request.headers_mut().insert(
            header::ORIGIN,
            HeaderValue::from_static("https://evil.example"),
        );
        let response = send(&state, request).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert!(error_message(response).await.contains("--allow-origin"));
        assert!(
            queue.try_recv().is_err(),
            "a refused request reached the model"
        );
    }

    #[tokio::test]
    async fn the_api_key_is_required_when_one_is_set() {
        let (state, _queue) = state(1, Some("secret"));
        let models = || Request::get("/v1/models");
        let response = send(&state, models().body(Body::empty()).unwrap()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(error_message(response).await.contains("API key"));
        let wrong = models()
            .header(header::AUTHORIZATION, "Bearer secreT")
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&state, wrong).await.status(), StatusCode::UNAUTHORIZED);
        let right = models()
            .header(header::AUTHORIZATION, "Bearer secret")
            .body(Body::empty())
            .unwrap();
        let response = send(&state, right).await;
        assert_eq!(response.status(), StatusCode::OK);
        let list: Value = serde_json::from_str(&body_text(response).await).unwrap();
        assert_eq!(list["data"][0]["id"], MODEL_ID);
    }

    #[tokio::test]
    async fn malformed_requests_and_wrong_methods_get_the_error_shape() {
        let (state, mut queue) = state(1, None);
        let not_json = Request::post("/v1/chat/completions")
            .body(Body::from("{\"messages\": ["))
            .unwrap();
        let response = send(&state, not_json).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert!(
            error_message(response)
                .await
                .contains("not a chat completion request")
        );
        let get = Request::get("/v1/chat/completions")
            .body(Body::empty())
            .unwrap();
        let response = send(&state, get).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert!(
            error_message(response)
                .await
                .contains("POST /v1/chat/completions")
        );
        assert!(queue.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_question_without_a_content_type_is_still_read() {
        let (state, mut queue) = state(1, None);
        let body = r#"{"messages":[{"role":"user","content":"What is Sync?"}]}"#;
        let request = Request::post("/v1/chat/completions")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        let replied = tokio::spawn(send_owned(state.clone(), request));
        answer_job(queue.recv().await.unwrap());
        assert_eq!(replied.await.unwrap().status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_body_over_the_bound_is_refused_in_the_error_shape() {
        let (state, mut queue) = state(1, None);
        let huge = format!(
            r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
            "a".repeat(MAX_BODY_BYTES)
        );
        let request = Request::post("/v1/chat/completions")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(huge))
            .unwrap();
        let response = send(&state, request).await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(!error_message(response).await.is_empty());
        assert!(queue.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_full_queue_answers_429_with_retry_after() {
        let (state, mut queue) = state(1, None);
        // The worker is busy elsewhere: the first request waits in the queue's one place.
        let waiting = tokio::spawn(send_owned(state.clone(), question(false)));
        while queue.is_empty() {
            tokio::task::yield_now().await;
        }
        let response = send(&state, question(false)).await;
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        // Two turns (the one waiting and this one) of the last one's 4 s.
        assert_eq!(response.headers()[header::RETRY_AFTER], "8");
        assert!(
            error_message(response)
                .await
                .contains("one question at a time")
        );
        // The waiting one is still answered once the worker comes to it.
        answer_job(queue.recv().await.unwrap());
        let answered = waiting.await.unwrap();
        assert_eq!(answered.status(), StatusCode::OK);
    }

    async fn send_owned(state: AppState, request: Request) -> Response {
        send(&state, request).await
    }

    #[tokio::test]
    async fn a_whole_reply_carries_the_answer_its_linked_sources_and_the_citations() {
        let (state, mut queue) = state(1, None);
        let replied = tokio::spawn(send_owned(state.clone(), question(false)));
        let job = queue.recv().await.unwrap();
        let Work::Chat(asked) = &job.work else {
            panic!("a chat request became other work");
        };
        assert_eq!(asked.question, "What is Sync?");
        answer_job(job);
        let response = replied.await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let completion: Value = serde_json::from_str(&body_text(response).await).unwrap();
        assert_eq!(completion["object"], "chat.completion");
        assert_eq!(completion["model"], MODEL_ID);
        assert_eq!(completion["choices"][0]["finish_reason"], "stop");
        assert_eq!(
            completion["choices"][0]["message"]["content"],
            "Sync is a paid service [1].\n\nSources:\n- [1] [Sync › Pricing]\
             (<obsidian://open?vault=v&file=Sync%23Pricing>)\n"
        );
        assert_eq!(completion["usage"]["total_tokens"], 512);
        assert_eq!(
            completion["recall"]["citations"][0]["uri"],
            "note://Sync.md#Pricing"
        );
    }

    #[tokio::test]
    async fn a_streamed_reply_is_chunks_then_sources_then_done() {
        let (state, mut queue) = state(1, None);
        let replied = tokio::spawn(send_owned(state.clone(), question(true)));
        answer_job(queue.recv().await.unwrap());
        let response = replied.await.unwrap();
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        let body = body_text(response).await;
        let data: Vec<&str> = body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .collect();
        assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
        let chunks: Vec<Value> = data[..data.len() - 1]
            .iter()
            .map(|d| serde_json::from_str(d).expect("a JSON chunk"))
            .collect();
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let content: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert!(
            content.starts_with("Sync is a paid service [1].\n\nSources:\n- [1] [Sync › Pricing]"),
            "{content}"
        );
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!(last["recall"]["citations"][0]["number"], 1);
        assert!(
            chunks[..chunks.len() - 1]
                .iter()
                .all(|c| c["choices"][0]["finish_reason"].is_null())
        );
    }

    #[test]
    fn only_loopback_hosts_are_answered_without_an_api_key() {
        let open = Access::default();
        for host in [
            "localhost",
            "LOCALHOST:7322",
            "127.0.0.1:7322",
            "[::1]:7322",
            "127.0.0.2",
        ] {
            assert!(open.allows_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:7322",
            "localhost.evil.example",
            "10.0.0.5",
        ] {
            assert!(!open.allows_host(host), "{host}");
        }
        let keyed = Access {
            api_key: Some("k".into()),
            ..Access::default()
        };
        assert!(keyed.allows_host("gpu-box.lan:7322"));
    }

    #[tokio::test]
    async fn a_rebound_host_name_is_refused_before_the_queue() {
        let (state, mut queue) = state(1, None);
        let mut request = question(false);
        request
            .headers_mut()
            .insert(header::HOST, HeaderValue::from_static("evil.example:7322"));
        let response = send(&state, request).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert!(error_message(response).await.contains("evil.example"));
        assert!(queue.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_question_too_long_for_the_context_is_a_400_streamed_or_not() {
        for stream in [true, false] {
            let (state, mut queue) = state(1, None);
            let replied = tokio::spawn(send_owned(state.clone(), question(stream)));
            let job = queue.recv().await.unwrap();
            let too_long = JobError::TooLong { context: 8192 };
            job.events.send(JobEvent::Failed(too_long)).unwrap();
            let response = replied.await.unwrap();
            assert_eq!(
                response.status(),
                StatusCode::BAD_REQUEST,
                "stream: {stream}"
            );
            let body: Value = serde_json::from_str(&body_text(response).await).unwrap();
            assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
            assert_eq!(body["error"]["code"], "context_length_exceeded", "{body}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains("context of 8192 tokens"), "{message}");
        }
    }

    #[tokio::test]
    async fn a_client_that_goes_away_cancels_its_turn() {
        let (state, mut queue) = state(1, None);
        let replied = tokio::spawn(send_owned(state.clone(), question(true)));
        let job = queue.recv().await.unwrap();
        job.events.send(JobEvent::Started).unwrap();
        let response = replied.await.unwrap();
        assert!(!job.cancel.is_cancelled());
        drop(response);
        assert!(job.cancel.is_cancelled());
        // Ctrl-C, by contrast, cancels every job through the parent token.
        let other = tokio::spawn(send_owned(state.clone(), question(false)));
        let job = queue.recv().await.unwrap();
        state.shutdown.cancel();
        assert!(job.cancel.is_cancelled());
        job.events
            .send(JobEvent::Failed(JobError::Stopping))
            .unwrap();
        let response = other.await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn the_page_is_served_without_the_key_under_a_strict_policy() {
        let (state, _queue) = state(1, Some("secret"));
        for (path, kind) in [
            ("/", "text/html"),
            ("/recall.js", "text/javascript"),
            ("/recall.css", "text/css"),
        ] {
            let response = send(&state, Request::get(path).body(Body::empty()).unwrap()).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let headers = response.headers();
            assert!(
                headers[header::CONTENT_TYPE]
                    .to_str()
                    .unwrap()
                    .starts_with(kind)
            );
            let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
            assert!(policy.contains("default-src 'none'"), "{policy}");
            assert!(policy.contains("connect-src 'self'"), "{policy}");
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        }
        // What the page asks for needs the key, as any client's request does.
        let status = Request::get("/v1/recall/status")
            .body(Body::empty())
            .unwrap();
        let response = send(&state, status).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn the_status_says_what_the_server_runs_on_and_who_waits() {
        let (state, _queue) = state(2, None);
        state.board.update(|status| {
            status.model.name = "Llama 3.2 1B Instruct".into();
            status.turns.answered = 3;
        });
        // A question waiting for the worker counts.
        let _waiting = tokio::spawn(send_owned(state.clone(), question(false)));
        while state.jobs.capacity() == 2 {
            tokio::task::yield_now().await;
        }
        let response = send(
            &state,
            Request::get("/v1/recall/status")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        let status: Value = serde_json::from_str(&body_text(response).await).unwrap();
        assert_eq!(status["model"]["name"], "Llama 3.2 1B Instruct");
        assert_eq!(status["turns"]["answered"], 3);
        assert_eq!(status["turns"]["waiting"], 1);
    }

    #[tokio::test]
    async fn the_page_may_call_from_the_address_it_was_served_at() {
        let (state, mut queue) = state(1, Some("secret"));
        let from = |origin: &'static str, host: &'static str| {
            let mut request = question(false);
            let headers = request.headers_mut();
            headers.insert(header::ORIGIN, HeaderValue::from_static(origin));
            headers.insert(header::HOST, HeaderValue::from_static(host));
            headers.insert(
                header::AUTHORIZATION,
                HeaderValue::from_static("Bearer secret"),
            );
            request
        };
        // Served from a LAN address (allowed with a key): its own origin may call.
        let reply = tokio::spawn(send_owned(
            state.clone(),
            from("http://192.168.1.5:7322", "192.168.1.5:7322"),
        ));
        let job = queue
            .recv()
            .await
            .expect("the page's question reached the worker");
        answer_job(job);
        assert_eq!(reply.await.unwrap().status(), StatusCode::OK);
        // Another origin at the same address may not.
        let response = send(&state, from("http://192.168.1.6:7322", "192.168.1.5:7322")).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert!(queue.try_recv().is_err());
    }
}
