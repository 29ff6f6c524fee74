//! A [`ChatModel`] that replays canned replies: deterministic agent-loop tests use it *in
//! addition to* the real llama.cpp path, never instead of it.

use std::collections::VecDeque;
use std::ops::ControlFlow;

use super::{
    ChatModel, Completion, Constraint, EngineError, GenerateRequest, GenerationStats, StopReason,
};

/// Replays replies in order and records every prompt it was given.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    replies: VecDeque<String>,
    /// Every prompt seen, in order.
    pub prompts: Vec<String>,
    /// The grammar each generation was asked to follow (a scripted reply ignores it).
    pub constraints: Vec<Option<Constraint>>,
    context: usize,
}

impl ScriptedModel {
    /// A model that answers with `replies`, one per call, with a context of `context` tokens.
    pub fn new<I, S>(replies: I, context: usize) -> ScriptedModel
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ScriptedModel {
            replies: replies.into_iter().map(Into::into).collect(),
            prompts: Vec::new(),
            constraints: Vec::new(),
            context,
        }
    }
}

impl ChatModel for ScriptedModel {
    fn generate(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion, EngineError> {
        self.prompts.push(prompt.to_string());
        self.constraints.push(request.constraint.clone());
        let reply = self.replies.pop_front().ok_or_else(|| {
            EngineError::Backend(format!(
                "scripted model ran out of replies at call {}",
                self.prompts.len()
            ))
        })?;
        let stop = if on_text(&reply).is_break() {
            StopReason::StoppedByCaller
        } else {
            StopReason::EndOfTurn
        };
        Ok(Completion {
            stats: GenerationStats {
                prompt_tokens: self.count_tokens(prompt),
                evaluated_tokens: self.count_tokens(prompt),
                generated_tokens: self.count_tokens(&reply).min(request.max_tokens),
                ..GenerationStats::default()
            },
            text: reply,
            stop,
        })
    }

    /// About four characters per token, like real BPE vocabularies on English text.
    fn count_tokens(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }

    fn context_size(&self) -> usize {
        self.context
    }
}
