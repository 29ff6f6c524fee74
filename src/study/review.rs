//! `recall review`: the saved cards that are due ([`super::deck`]), asked one by one; each typed
//! answer is graded by the model as `quiz --interactive` grades it ([`super::grade`]), the
//! card is scheduled by FSRS from the grade, and the deck is saved before the next card. A
//! card whose note has changed since it was saved, or is gone, says so before it is asked.

use std::io::{BufRead, Write};

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::deck::{Card, Deck};
use super::export::source_label;
use super::grade::grade_reply;
use super::target::SourceNote;
use super::writer::Writer;

/// What a card's note says of it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceState {
    /// The note still holds the paragraph the question was asked from.
    Unchanged,
    /// The note is there, but that paragraph is not (edited or moved away).
    Changed,
    /// The vault holds no such note any more.
    Gone,
}

impl SourceState {
    /// How `note` (as read now, `None` when gone) stands to `card`.
    pub(super) fn of(card: &Card, note: Option<&SourceNote>) -> SourceState {
        match note {
            None => SourceState::Gone,
            Some(note) if note.content.contains(card.source.passage.trim()) => {
                SourceState::Unchanged
            }
            Some(_) => SourceState::Changed,
        }
    }
}

/// `review --json`: the cards due, and when the next one after them is.
#[derive(Debug, Serialize)]
pub(super) struct DueReport<'d> {
    now: DateTime<Utc>,
    deck: String,
    cards: usize,
    due: Vec<DueCard<'d>>,
    next_due: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize)]
struct DueCard<'d> {
    question: &'d str,
    source: &'d super::deck::CardSource,
    due: DateTime<Utc>,
    reviews: i32,
}

impl<'d> DueReport<'d> {
    pub(super) fn new(deck: &'d Deck, now: DateTime<Utc>) -> Self {
        DueReport {
            now,
            deck: deck.path().display().to_string(),
            cards: deck.cards.len(),
            due: deck
                .due(now)
                .into_iter()
                .map(|i| {
                    let card = &deck.cards[i];
                    DueCard {
                        question: &card.question,
                        source: &card.source,
                        due: card.due(),
                        reviews: card.memory.reps,
                    }
                })
                .collect(),
            next_due: deck.next_due(now),
        }
    }
}

/// Asks the `due` cards (indices into `deck`) in order; `notes` are their notes as read now
/// (by the card's URI, `None` when gone). Ends at the last card or at end of input, saving the
/// deck after every grade.
pub(super) fn ask_due(
    writer: &mut Writer,
    deck: &mut Deck,
    due: &[usize],
    notes: &[(String, Option<SourceNote>)],
    now: DateTime<Utc>,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<()> {
    let cancel = writer.request.cancel.clone();
    let mut reviewed = 0;
    for (position, &index) in due.iter().enumerate() {
        let card = &deck.cards[index];
        let note = notes
            .iter()
            .find(|(uri, _)| *uri == card.source.uri)
            .and_then(|(_, note)| note.as_ref());
        let source = source_label(&card.source.title, card.source.heading.as_deref());
        writeln!(
            out,
            "\nCard {} of {}: {}\n(from {source})",
            position + 1,
            due.len(),
            card.question
        )?;
        match SourceState::of(card, note) {
            SourceState::Unchanged => {}
            SourceState::Changed => writeln!(
                out,
                "(its note has changed since this card was saved: the answer below may be out \
                 of date)"
            )?,
            SourceState::Gone => writeln!(
                out,
                "(its note, {}, is no longer in the vault)",
                card.source.uri
            )?,
        }
        write!(out, "> ")?;
        out.flush()?;
        let mut reply = String::new();
        if input.read_line(&mut reply)? == 0 || cancel.is_cancelled() {
            writeln!(out)?;
            break;
        }
        let (grade, why) = grade_reply(writer, &card.question, &card.answer, reply.trim())?;
        let card = &mut deck.cards[index];
        match grade {
            Some(grade) => {
                card.review(grade, now);
                deck.save()?;
                reviewed += 1;
                writeln!(out, "{}: {why}", grade.name())?;
            }
            // Nothing to schedule by: the card stays due.
            None => writeln!(out, "ungraded: {why}")?,
        }
        let card = &deck.cards[index];
        writeln!(out, "Answer from the note: {}", card.answer)?;
        writeln!(out, "Source: {}", card.source.link)?;
        if grade.is_some() {
            writeln!(
                out,
                "Next review: {}",
                card.due().format("%Y-%m-%d %H:%M UTC")
            )?;
        }
    }
    writeln!(out, "\nReviewed {reviewed} of {} due.", due.len())?;
    if let Some(next) = deck.next_due(now) {
        writeln!(out, "Next card due: {}", next.format("%Y-%m-%d %H:%M UTC"))?;
    }
    Ok(())
}
