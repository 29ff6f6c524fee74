//! The answer step checked by the sources' gain ([`AnswerCheck::Gain`]): one check for any
//! language in place of the rules of [`super::answer`].
//!
//! The answer is written whole and held; then the model scores it twice, after the sources
//! (the answer prompt, whose KV cache it reuses) and after the question alone (on the decision
//! context, so the answer context keeps its prompt), and [`Grounding`] reads how much the
//! sources raised its own words. An answer they did not raise enough is never shown: the notes
//! do not say, and the turn looks further as after any answer that says so. An answer with no
//! word of its own (the question said again) is no answer either.

use std::ops::ControlFlow;
use std::time::Instant;

use super::answer::{Answered, withdrawn};
use super::cite::unattributed;
use super::{Agent, AgentError, StepRecord};
use crate::engine::{ChatModel, GenerationStats};
use crate::grounding::Grounding;
use crate::language::{Language, answer_lines, says_notes_lack_it};
use crate::prompt::{Message, Role};
use crate::sources::{Source, without_copied_headers};
use crate::tool::ToolHost;

/// How the answer step tells an answer its sources hold from one the model made up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnswerCheck {
    /// The rules of [`super::answer`]: facts, figures and names read against the sources' words,
    /// each answer streamed as it is checked.
    Rules,
    /// The sources' gain on the answer's own words ([`crate::grounding`]), the same in any
    /// language: the answer is held whole until it is read, and one whose words gained less
    /// than `threshold` (nats a word) is the notes not saying ([`self`]).
    Gain {
        /// Least mean gain of an answer that stands.
        threshold: f32,
    },
}

/// What the gain check read of one answer.
pub(super) enum Gained {
    /// The model cannot score a given text (a remote server): the answer stands unchecked.
    Unscored,
    /// The answer has no word of its own to measure.
    Nothing(StepRecord),
    /// The sources' gain on its words, and whether it reaches the threshold.
    Measured { holds: bool, step: StepRecord },
}

impl Gained {
    /// Whether the answer may be shown.
    pub(super) fn holds(&self) -> bool {
        match self {
            Gained::Unscored => true,
            Gained::Nothing(_) => false,
            Gained::Measured { holds, .. } => *holds,
        }
    }

    /// The `ground` step recorded for the turn, when the answer was scored.
    pub(super) fn step(self) -> Option<StepRecord> {
        match self {
            Gained::Unscored => None,
            Gained::Nothing(step) | Gained::Measured { step, .. } => Some(step),
        }
    }
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// The answer step under [`AnswerCheck::Gain`]: written whole on `messages` (the answer
    /// prompt's, ending with `instruction`), shown once the gain check holds, else withdrawn
    /// as the notes not saying. An answer that cites none of its sources goes on to the
    /// attribution step, as under the rules.
    pub(super) fn answer_by_gain(
        &mut self,
        messages: Vec<Message>,
        question: &str,
        language: Option<Language>,
        instruction: Option<&str>,
        given: &[Source],
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Answered, AgentError> {
        let completion = self.write_answer(&messages, &mut |_| ControlFlow::Continue(()))?;
        let mut answer = completion.text.trim().to_string();
        let lines = answer_lines(language);
        let notes_lack_it = answer.is_empty() || says_notes_lack_it(&answer);
        let gained = match notes_lack_it {
            true => Gained::Unscored,
            false => self.gain(&messages, question, &answer)?,
        };
        if notes_lack_it || !gained.holds() {
            tracing::debug!("the sources do not hold the answer: {answer:?}");
            let mut answered = withdrawn("", lines.notes_lack_it, completion, None, on_text);
            answered.ground = gained.step();
            return Ok(answered);
        }
        let _ = on_text(&answer);
        let own = without_copied_headers(&answer, given);
        let (attribution, opening_from) =
            match unattributed(&answer, &own, given.len(), false, instruction) {
                Some(end) => {
                    self.attribute_answer(messages, &mut answer, end, given.len(), on_text)?
                }
                None => (None, None),
            };
        Ok(Answered {
            text: answer,
            quote_at: None,
            completion,
            attribution,
            opening_from,
            notes_lack_it: false,
            check: None,
            ground: gained.step(),
        })
    }

    /// The sources' gain on `answer`, written after `messages`: scored there and again after
    /// the same conversation without its sources, asked `question` plainly.
    pub(super) fn gain(
        &mut self,
        messages: &[Message],
        question: &str,
        answer: &str,
    ) -> Result<Gained, AgentError> {
        let AnswerCheck::Gain { threshold } = self.options.answer_check else {
            return Ok(Gained::Unscored);
        };
        let started = Instant::now();
        let with_sources = self.template.answer(messages)?;
        let mut request = self.request(1);
        request.stable_prefix = with_sources.stable_len;
        let Some(with) = self
            .answerer()
            .score(&with_sources.text, answer, &request)?
        else {
            return Ok(Gained::Unscored);
        };
        let alone = self.template.answer(&without_sources(messages, question))?;
        request.stable_prefix = alone.stable_len;
        // The decision context, when the answer has its own: the answer context keeps the
        // sources' prompt for the next answer of the turn.
        let Some(without) = self.model.score(&alone.text, answer, &request)? else {
            return Ok(Gained::Unscored);
        };
        if request.cancel.is_cancelled() {
            return Err(crate::engine::Cancelled.into());
        }
        let grounding = Grounding::measure(question, &with, &without);
        let step = StepRecord {
            kind: "ground",
            input: String::new(),
            output: serde_json::to_string(&grounding).unwrap_or_default(),
            calls: Vec::new(),
            stats: GenerationStats {
                prompt_tokens: with.len() + without.len(),
                prompt_time: started.elapsed(),
                ..GenerationStats::default()
            },
        };
        tracing::debug!("grounding of {answer:?}: {grounding:?}");
        Ok(match grounding {
            Some(grounding) => Gained::Measured {
                holds: grounding.holds(threshold),
                step,
            },
            None => Gained::Nothing(step),
        })
    }
}

/// `messages` without the sources (tool results) and with `question` asked plainly in place
/// of the answer instruction that ends them: what the model would say from itself alone.
fn without_sources(messages: &[Message], question: &str) -> Vec<Message> {
    let mut alone: Vec<Message> = messages
        .iter()
        .filter(|m| m.role != Role::Ipython)
        .cloned()
        .collect();
    if alone.last().is_some_and(|m| m.role == Role::User) {
        alone.pop();
    }
    if alone.last().is_none_or(|m| m.content != question) {
        alone.push(Message::user(question));
    }
    alone
}
