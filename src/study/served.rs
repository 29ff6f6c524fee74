//! The study aids as `recall serve` runs them for its page: on the model session the server
//! already holds, between its turns, each giving data (the `--json` forms of `summarize` and
//! `quiz`; the due cards and a graded card of `review`) instead of printing. The deck is the
//! one `recall review` asks from.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::deck::{CardSource, Deck};
use super::grade::grade_reply;
use super::review::SourceState;
use super::target::{Scope, gather_notes, read_notes};
use super::writer::Writer;
use super::{QuizRequest, quiz, study_request, summarize};
use crate::cli::{QuizFormat, RunArgs};
use crate::engine::{CancellationToken, Session};
use crate::session::Workbench;

/// One piece of study work on the server's model.
pub struct Study<'s, 'e> {
    pub bench: &'e Workbench,
    pub run: &'s RunArgs,
    pub session: &'s mut Session<'e>,
    /// The request's token: a client that goes away stops the work.
    pub cancel: CancellationToken,
    /// Told where long work is ("part 2 of 5: Methods", "question 3 of 5").
    pub on_step: &'s dyn Fn(&str),
}

impl Study<'_, '_> {
    fn writer(&mut self) -> Writer<'_> {
        Writer {
            request: study_request(self.run, self.cancel.clone()),
            model: &mut *self.session,
            template: &self.bench.template,
            verbose: false,
            log: Vec::new(),
            on_step: self.on_step,
        }
    }

    /// `recall summarize --json` of `scope`.
    pub fn summary(&mut self, scope: &Scope) -> Result<Value> {
        let notes = gather_notes(&self.bench.runtime, &self.bench.manager, scope)?;
        let mut out = Vec::new();
        summarize::write_summary(&mut self.writer(), &notes, true, &scope.label(), &mut out)?;
        serde_json::from_slice(&out).context("the summary's report")
    }

    /// `recall quiz --json` of `scope`, its items added to `deck` when given.
    pub fn quiz(&mut self, scope: &Scope, count: usize, deck: Option<PathBuf>) -> Result<Value> {
        if count == 0 {
            bail!("count must be at least 1");
        }
        let notes = gather_notes(&self.bench.runtime, &self.bench.manager, scope)?;
        let request = QuizRequest {
            scope: scope.clone(),
            count,
            format: QuizFormat::Json,
            interactive: false,
            save: deck,
        };
        let mut out = Vec::new();
        quiz::write_quiz(&mut self.writer(), &notes, true, &request, &mut out)?;
        serde_json::from_slice(&out).context("the quiz's report")
    }

    /// Grades `reply` to the card numbered `card` of `deck` (which must still ask `question`:
    /// the deck may have changed since the card was shown), schedules the card by FSRS from
    /// the grade and saves the deck, as `recall review` does.
    pub fn grade(
        &mut self,
        deck: &Path,
        card: usize,
        question: &str,
        reply: &str,
        now: DateTime<Utc>,
    ) -> Result<GradedCard> {
        let mut cards = Deck::open(deck)?;
        let Some(asked) = cards.cards.get(card).filter(|c| c.question == question) else {
            return Err(DeckChanged { card }.into());
        };
        let (uri, answer) = (asked.source.uri.clone(), asked.answer.clone());
        let notes = read_notes(&self.bench.runtime, &self.bench.manager, &[uri])?;
        let source = SourceState::of(asked, notes.first().and_then(Option::as_ref));
        let (grade, why) = grade_reply(&mut self.writer(), question, &answer, reply.trim())?;
        let asked = &mut cards.cards[card];
        if let Some(grade) = grade {
            asked.review(grade, now);
        }
        let graded = GradedCard {
            grade: grade.map(|g| g.name()),
            why,
            answer,
            source: asked.source.clone(),
            source_state: source,
            next_due: grade.map(|_| asked.due()),
        };
        if grade.is_some() {
            cards.save()?;
        }
        Ok(graded)
    }
}

/// The card a grade is for is not in the deck as it was shown: another review or quiz
/// changed the deck in between.
#[derive(Debug, thiserror::Error)]
#[error("the deck has changed: card {card} no longer asks that question; list the due cards again")]
pub struct DeckChanged {
    pub card: usize,
}

/// A reply graded: what the model said of it and when the card comes back.
#[derive(Debug, Serialize)]
pub struct GradedCard {
    /// `again`, `hard`, `good` or `easy`; none when the model's verdict could not be read
    /// (the card stays due).
    pub grade: Option<&'static str>,
    /// Why, in the model's words.
    pub why: String,
    /// The answer the note gives.
    pub answer: String,
    pub source: CardSource,
    /// Whether the note still says what the card was made from.
    pub source_state: SourceState,
    pub next_due: Option<DateTime<Utc>>,
}

/// The cards of `deck` due at `now`, numbered as [`Study::grade`] takes them.
#[derive(Debug, Serialize)]
pub struct DueCards {
    /// Cards in the deck.
    pub cards: usize,
    pub due: Vec<DueCard>,
    /// When the next card after these is due.
    pub next_due: Option<DateTime<Utc>>,
}

/// One due card.
#[derive(Debug, Serialize)]
pub struct DueCard {
    /// Its number in the deck.
    pub card: usize,
    pub question: String,
    pub source: CardSource,
    pub due: DateTime<Utc>,
    pub reviews: i32,
}

/// The due cards of `deck` (no model needed); a deck not made yet holds none.
pub fn due_cards(deck: &Path, now: DateTime<Utc>) -> Result<DueCards> {
    let deck = Deck::open(deck)?;
    Ok(DueCards {
        cards: deck.cards.len(),
        due: deck
            .due(now)
            .into_iter()
            .map(|i| {
                let card = &deck.cards[i];
                DueCard {
                    card: i,
                    question: card.question.clone(),
                    source: card.source.clone(),
                    due: card.due(),
                    reviews: card.memory.reps,
                }
            })
            .collect(),
        next_due: deck.next_due(now),
    })
}
