//! `recall quiz`'s body: up to `count` items written by the [`Asker`] ([`super::item`]),
//! printed as they come in the asked format ([`super::export`]), or asked one by one and
//! graded ([`super::grade`]).

use anyhow::{Result, bail};

use super::QuizRequest;
use super::export::QuizOutput;
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
) -> Result<()> {
    let format = if json { QuizFormat::Json } else { quiz.format };
    let mut out = std::io::stdout();
    let mut asker = Asker::new(writer, notes)?;
    if quiz.interactive {
        return grade::interactive(&mut asker, quiz.count, &mut out);
    }
    let mut output = QuizOutput::start(format, &quiz.target, &mut out)?;
    let mut items: Vec<QuizItem> = Vec::new();
    // A slot that fails even on retry hands its turn to the next note (or piece): the count is
    // met unless the model keeps failing.
    for slot in 0..quiz.count * 2 {
        if items.len() == quiz.count {
            break;
        }
        if let Some(item) = asker.next(&items, slot)? {
            // Printed as they come (Markdown): a question is useful before the last is written.
            output.item(&item, notes, items.len() + 1)?;
            items.push(item);
        }
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
    output.finish(&items, notes)
}
