//! `recall quiz`'s body: up to `count` items written by the [`Asker`] ([`super::item`]),
//! printed as they come in the asked format ([`super::export`]), or asked one by one and
//! graded ([`super::grade`]).

use std::io::Write;

use anyhow::{Result, bail};

use chrono::Utc;

use super::QuizRequest;
use super::deck::{Card, CardSource, Deck};
use super::export::{QuizOutput, SourceRef};
use super::grade;
use super::item::{Asker, QuizItem};
use super::target::SourceNote;
use super::writer::Writer;
use crate::cli::QuizFormat;

/// Writes `quiz.count` questions from `notes` in the asked format, or asks them one by one.
pub(super) fn write_quiz(
    writer: &mut Writer,
    notes: &[SourceNote],
    json: bool,
    quiz: &QuizRequest,
    out: &mut dyn Write,
) -> Result<()> {
    let mut out = out;
    let format = if json { QuizFormat::Json } else { quiz.format };
    let on_step = writer.on_step;
    let mut asker = Asker::new(writer, notes, quiz.count)?;
    if quiz.interactive {
        let items = grade::interactive(&mut asker, quiz.count, &mut out)?;
        return save(quiz, &items, notes);
    }
    let mut output = QuizOutput::start(format, &quiz.scope.label(), &mut out)?;
    let mut items: Vec<QuizItem> = Vec::new();
    while items.len() < quiz.count {
        let Some(item) = asker.next(&items)? else {
            break;
        };
        // Printed as they come (Markdown): a question is useful before the last is written.
        output.item(&item, notes, items.len() + 1)?;
        items.push(item);
        on_step(&format!("question {} of {}", items.len(), quiz.count));
    }
    if items.is_empty() {
        bail!(
            "the model wrote no usable question; try a larger model (--model), a higher \
             --max-tokens, or --verbose to see its replies"
        );
    }
    if items.len() < quiz.count {
        eprintln!(
            "recall: wrote {} of {} questions (see above for what was skipped)",
            items.len(),
            quiz.count
        );
    }
    output.finish(&items, notes)?;
    save(quiz, &items, notes)
}

/// With `--save`, adds `items` to the deck as new cards, due at once, and says on stderr how
/// many were new.
fn save(quiz: &QuizRequest, items: &[QuizItem], notes: &[SourceNote]) -> Result<()> {
    let Some(path) = &quiz.save else {
        return Ok(());
    };
    let mut deck = Deck::open(path)?;
    let now = Utc::now();
    let mut added = 0;
    for item in items {
        let note = &notes[item.note];
        let source = CardSource {
            title: note.title.clone(),
            uri: note.uri.clone(),
            heading: item.heading.clone(),
            link: SourceRef::new(note, item.heading.as_deref())
                .link()
                .to_string(),
            passage: item.passage.clone(),
        };
        let card = Card::new(
            item.qa.question.clone(),
            item.qa.answer.clone(),
            source,
            now,
        );
        added += usize::from(deck.add(card));
    }
    deck.save()?;
    eprintln!(
        "recall: saved {added} new cards to {} ({} already there); `recall review` asks them",
        path.display(),
        items.len() - added
    );
    Ok(())
}
