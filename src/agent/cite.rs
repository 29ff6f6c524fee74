//! Which sources an answer used, when it does not say: the attribution step.
//!
//! Citations are the numbers the answer writes, each checked by [`crate::sources`] against the
//! text it vouches for. An answer that cites no source by number (the marks of a copied list of
//! source headers cite nothing), or opens with a claim of its own before sources copied under
//! their headers, is asked which sources it came from, on the answer's own context.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use super::side_step::SideStep;
use super::{Agent, AgentError};
use crate::engine::{ChatModel, Completion};
use crate::grammar::citation_gbnf;
use crate::prompt::Message;
use crate::sources::{cited_numbers, unvouched_opening};
use crate::support;
use crate::tool::ToolHost;

/// Most tokens the attribution step may write: `[1, 2, 3, 4, 5]` and some slack.
const ATTRIBUTION_TOKENS: usize = 24;

/// The sources the attribution step named for an answer's opening, and where in the answer
/// that opening ends.
pub(super) type OpeningSources = (usize, BTreeSet<usize>);

/// What the attribution step is asked about, up to where in `answer`: all of it when `own`
/// (the answer less the source headers it copied) cites none of the `given` sources; else an
/// opening of the model's own that only source headers follow (each header's mark vouches for
/// what is under it, not for the opening). `None` when no source was given, the notes do not
/// say, or every claim is vouched for.
pub(super) fn unattributed(
    answer: &str,
    own: &str,
    given: usize,
    notes_lack_it: bool,
    instruction: Option<&str>,
) -> Option<usize> {
    let cites = cited_numbers(own).iter().any(|n| (1..=given).contains(n));
    if given == 0 || notes_lack_it {
        None
    } else if !cites {
        Some(answer.len())
    } else {
        let opening = unvouched_opening(answer);
        instruction
            .filter(|asked| support::states_something(asked, opening))
            .map(|_| opening.len())
    }
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// Runs the attribution step for `answer` up to `end`. When it was about the whole answer,
    /// its numbers join the answer (streamed to `on_text`); else they are returned as the
    /// sources of the opening that ends at `end`.
    pub(super) fn attribute_answer(
        &mut self,
        messages: Vec<Message>,
        answer: &mut String,
        end: usize,
        given: usize,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<(Option<Completion>, Option<OpeningSources>), AgentError> {
        let Some(named) = self.attribute(messages, &answer[..end], given)? else {
            return Ok((None, None));
        };
        if end == answer.len() {
            // The numbers join the answer as if written there: shown, kept in the
            // conversation, and read back into citations like any other.
            let suffix = format!(" {}", named.text.trim());
            let _ = on_text(&suffix);
            answer.push_str(&suffix);
            Ok((Some(named), None))
        } else {
            // The answer has been shown with its opening unmarked; written at its end, the
            // numbers would seem to vouch for the last source copied. They vouch for the
            // opening in the citations alone.
            let numbers = cited_numbers(&named.text);
            Ok((Some(named), Some((end, numbers))))
        }
    }

    /// The attribution step, for an answer (or the opening of one) that cites none of the
    /// `given` sources: the model is asked which of them `answer` came from, and can reply
    /// only with source numbers (a grammar). Small models often answer from a source without
    /// writing its number; this asks them, instead of guessing for them or listing every
    /// source. It reuses the answer's KV cache, so it costs the question and a few tokens.
    /// `None` when it writes no number, or fails for any reason but Ctrl-C: the answer stands,
    /// its sources marked uncited.
    fn attribute(
        &mut self,
        mut messages: Vec<Message>,
        answer: &str,
        given: usize,
    ) -> Result<Option<Completion>, AgentError> {
        messages.push(Message::assistant(answer));
        messages.push(Message::user(self.template.attribution_instruction(given)?));
        // Failing, the answer stays uncited.
        let step = SideStep {
            what: "attribution",
            max_tokens: ATTRIBUTION_TOKENS,
            gbnf: citation_gbnf(given),
        };
        let Some(completion) = self.side_step(step, &messages)? else {
            return Ok(None);
        };
        let named = cited_numbers(&completion.text);
        Ok(
            (!named.is_empty() && named.iter().all(|n| (1..=given).contains(n)))
                .then_some(completion),
        )
    }
}
