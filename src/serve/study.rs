//! The study endpoints of `recall serve`, for its page: a summary of a note, a folder or a
//! period, quiz items (added to the review deck when asked), the cards due and a typed answer
//! graded, as `recall summarize`, `quiz` and `review` do them. Each that needs the model is a
//! job on the worker's one queue, like a chat turn; its progress ("part 2 of 5") shows in
//! `/v1/recall/status` while it runs.
//!
//! - `POST /v1/recall/summarize` `{"target"}`: `recall summarize --json`'s report.
//! - `POST /v1/recall/quiz` `{"target", "count"?, "save"?}`: `recall quiz --json`'s report.
//! - `GET /v1/recall/review`: the due cards of the deck, numbered.
//! - `POST /v1/recall/review/grade` `{"card", "question", "answer"}`: the grade, the note's
//!   answer and the next review.

use std::path::PathBuf;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::http::{AppState, Submitted, error, failure_response, stopping, submit};
use super::status::Board;
use super::{Job, JobError, JobEvent, Work, report_cancelled};
use crate::cli::RunArgs;
use crate::engine::Session;
use crate::session::Workbench;
use crate::study::served::{DeckChanged, Study, due_cards};
use crate::study::{NothingMatches, Scope};

/// Quiz items asked for when the request does not say.
const DEFAULT_COUNT: usize = 5;
/// The most quiz items one request may ask for: each is a generation of its own.
const MAX_COUNT: usize = 20;

/// Study work for the worker.
#[derive(Debug)]
pub enum StudyWork {
    Summarize {
        target: String,
    },
    Quiz {
        target: String,
        count: usize,
        /// The deck to add the items to.
        deck: Option<PathBuf>,
    },
    Grade {
        deck: PathBuf,
        card: usize,
        question: String,
        answer: String,
    },
}

#[derive(Debug, Deserialize)]
struct SummarizeBody {
    target: String,
}

#[derive(Debug, Deserialize)]
struct QuizBody {
    target: String,
    #[serde(default)]
    count: Option<usize>,
    #[serde(default)]
    save: bool,
}

#[derive(Debug, Deserialize)]
struct GradeBody {
    card: usize,
    question: String,
    answer: String,
}

/// The study routes; the API's layers (key, origin, host) wrap them with the rest.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/recall/summarize", post(summarize))
        .route("/v1/recall/quiz", post(quiz))
        .route("/v1/recall/review", get(review))
        .route("/v1/recall/review/grade", post(grade))
}

async fn summarize(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> Response {
    let body: SummarizeBody = match read(body) {
        Ok(body) => body,
        Err(refused) => return *refused,
    };
    let Some(target) = named(&body.target) else {
        return missing_target();
    };
    done(submit(&state, Work::Study(StudyWork::Summarize { target }))).await
}

async fn quiz(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> Response {
    let body: QuizBody = match read(body) {
        Ok(body) => body,
        Err(refused) => return *refused,
    };
    let Some(target) = named(&body.target) else {
        return missing_target();
    };
    let count = body.count.unwrap_or(DEFAULT_COUNT);
    if !(1..=MAX_COUNT).contains(&count) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            format!("count must be from 1 to {MAX_COUNT}"),
        );
    }
    let deck = body.save.then(|| state.deck.to_path_buf());
    let work = StudyWork::Quiz {
        target,
        count,
        deck,
    };
    done(submit(&state, Work::Study(work))).await
}

async fn review(State(state): State<AppState>) -> Response {
    match due_cards(&state.deck, chrono::Utc::now()) {
        Ok(due) => Json(due).into_response(),
        Err(err) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            format!("{err:#}"),
        ),
    }
}

async fn grade(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> Response {
    let body: GradeBody = match read(body) {
        Ok(body) => body,
        Err(refused) => return *refused,
    };
    if body.answer.trim().is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "answer is empty: type an answer to grade",
        );
    }
    let work = StudyWork::Grade {
        deck: state.deck.to_path_buf(),
        card: body.card,
        question: body.question,
        answer: body.answer,
    };
    done(submit(&state, Work::Study(work))).await
}

/// A JSON body of type `T`, whatever the Content-Type; else the 400 that says why.
fn read<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, Box<Response>> {
    let body = body.map_err(|rejection| {
        Box::new(error(
            rejection.status(),
            "invalid_request_error",
            rejection.body_text(),
        ))
    })?;
    serde_json::from_slice(&body).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            format!("the body is not a request of this endpoint: {e}"),
        ))
    })
}

fn named(target: &str) -> Option<String> {
    let target = target.trim();
    (!target.is_empty()).then(|| target.to_string())
}

fn missing_target() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        "target is empty: name a note, a folder or a period (\"last week\")",
    )
}

/// Waits for a study job's report. The job's token is dropped with the handler: a client
/// that goes away stops the work.
async fn done(submitted: Result<Submitted, Box<Response>>) -> Response {
    let Submitted {
        cancel, received, ..
    } = match submitted {
        Ok(submitted) => submitted,
        Err(refused) => return *refused,
    };
    let mut received = received;
    let client = cancel.drop_guard();
    while let Some(event) = received.recv().await {
        match event {
            JobEvent::Done(report) => {
                client.disarm();
                return Json(report).into_response();
            }
            JobEvent::Failed(failure) => return failure_response(&failure),
            JobEvent::Started | JobEvent::Text(_) | JobEvent::Finished(_) => {}
        }
    }
    stopping()
}

/// Runs study work on the worker's session; its steps go to the board as it goes.
pub(super) fn run_study<'e>(
    bench: &'e Workbench,
    run: &RunArgs,
    session: &mut Session<'e>,
    board: &Board,
    job: Job<StudyWork>,
) {
    let Job {
        number,
        work,
        cancel,
        events,
    } = job;
    let started = std::time::Instant::now();
    let what = match &work {
        StudyWork::Summarize { target } => format!("summarizing {target}"),
        StudyWork::Quiz { target, .. } => format!("writing quiz items on {target}"),
        StudyWork::Grade { .. } => "grading an answer".to_string(),
    };
    board.update(|status| status.turns.doing = Some(what.clone()));
    let on_step = |step: &str| {
        board.update(|status| status.turns.doing = Some(format!("{what}: {step}")));
    };
    let mut study = Study {
        bench,
        run,
        session,
        cancel: cancel.clone(),
        on_step: &on_step,
    };
    let scope = |target: &str| Scope {
        target: target.to_string(),
        period: None,
        today: run.agent.today.unwrap_or_else(obsidian_kb::dates::today),
    };
    let result = match &work {
        StudyWork::Summarize { target } => study.summary(&scope(target)),
        StudyWork::Quiz {
            target,
            count,
            deck,
        } => study.quiz(&scope(target), *count, deck.clone()),
        StudyWork::Grade {
            deck,
            card,
            question,
            answer,
        } => study
            .grade(deck, *card, question, answer, chrono::Utc::now())
            .and_then(|graded| Ok(serde_json::to_value(graded)?)),
    };
    board.update(|status| status.turns.doing = None);
    let seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(report) => {
            eprintln!("recall: #{number}: {what}: done in {seconds:.1} s");
            let _ = events.send(JobEvent::Done(report));
        }
        // Stopped: the client went away, or Ctrl-C.
        Err(_) if cancel.is_cancelled() => report_cancelled(bench, number, &events),
        Err(err) => {
            eprintln!("recall: #{number}: {what}: failed after {seconds:.1} s: {err:#}");
            let message = format!("{err:#}");
            let failure = if err.downcast_ref::<NothingMatches>().is_some() {
                JobError::NotFound(message)
            } else if err.downcast_ref::<DeckChanged>().is_some() {
                JobError::Conflict(message)
            } else {
                JobError::Turn(message)
            };
            let _ = events.send(JobEvent::Failed(failure));
        }
    }
}
