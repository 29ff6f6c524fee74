//! Short generations a turn can do without: citing an answer that cites nothing
//! ([`super::cite`]) and checking a figure ([`super::figure`]). Each renders its messages
//! with the answer template (no tool schemas), generates a few tokens on the answer context
//! under a grammar of its own, and, when generation fails, leaves the turn as it would be
//! without it. The answer itself is prompted the same way ([`Agent::constrained`]) but
//! streamed.

use std::ops::ControlFlow;

use super::{Agent, AgentError};
use crate::engine::{
    Cancelled, ChatModel, Chosen, Completion, Constraint, GenerateRequest, StopReason,
};
use crate::grammar::ROOT;
use crate::prompt::{Message, Prompt};
use crate::tool::ToolHost;

/// One short step: what it is (for the log), how long it may be and the grammar it is
/// written under. It runs on the answer context, whose cache holds the answer's prompt.
pub(super) struct SideStep<'a> {
    pub(super) what: &'a str,
    pub(super) max_tokens: usize,
    pub(super) gbnf: String,
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// `messages` rendered by the answer template, and a request for at most `max_tokens`
    /// under `gbnf` that keeps the prompt's stable prefix in the cache. `what` names the
    /// prompt in the prompt log.
    pub(super) fn constrained(
        &self,
        what: &str,
        messages: &[Message],
        max_tokens: usize,
        gbnf: String,
    ) -> Result<(Prompt, GenerateRequest), AgentError> {
        let prompt = self.template.answer(messages)?;
        tracing::debug!(target: "recall::prompt", "{what} prompt:\n{}", prompt.text);
        let mut request = self.request(max_tokens);
        request.stable_prefix = prompt.stable_len;
        request.constraint = Some(Constraint {
            gbnf,
            root: ROOT.to_string(),
            lazy_patterns: Vec::new(),
        });
        Ok((prompt, request))
    }

    /// Generates `step` on `messages`. `None` when generation fails (logged): the turn goes
    /// on without it. Ctrl-C still stops the turn.
    pub(super) fn side_step(
        &mut self,
        step: SideStep,
        messages: &[Message],
    ) -> Result<Option<Completion>, AgentError> {
        Ok(self
            .run_side(step, messages, None)?
            .map(|chosen| chosen.completion))
    }

    /// [`Agent::side_step`] as a choice between `choices`, each a reply its grammar allows
    /// ([`ChatModel::choose`]): the likeliest, with the odds of each.
    pub(super) fn side_choice(
        &mut self,
        step: SideStep,
        messages: &[Message],
        choices: &[&str],
    ) -> Result<Option<Chosen>, AgentError> {
        self.run_side(step, messages, Some(choices))
    }

    fn run_side(
        &mut self,
        step: SideStep,
        messages: &[Message],
        choices: Option<&[&str]>,
    ) -> Result<Option<Chosen>, AgentError> {
        let (prompt, request) =
            self.constrained(step.what, messages, step.max_tokens, step.gbnf)?;
        let model = self.answerer();
        let ran = match choices {
            Some(choices) => model.choose(&prompt.text, &request, choices),
            None => model
                .generate(&prompt.text, &request, &mut |_| ControlFlow::Continue(()))
                .map(|completion| Chosen {
                    completion,
                    odds: Vec::new(),
                }),
        };
        let chosen = match ran {
            Ok(chosen) => chosen,
            Err(e) => {
                tracing::debug!("{} failed; the turn goes on without it: {e}", step.what);
                return Ok(None);
            }
        };
        tracing::debug!(
            target: "recall::model",
            "{} output: {:?} (odds {:?})",
            step.what,
            chosen.completion.text,
            chosen.odds
        );
        if chosen.completion.stop == StopReason::Cancelled {
            return Err(Cancelled.into());
        }
        Ok(Some(chosen))
    }
}
