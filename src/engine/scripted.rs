//! A [`ChatModel`] that replays canned replies: deterministic agent-loop tests use it *in
//! addition to* the real llama.cpp path, never instead of it.

use std::collections::VecDeque;
use std::ops::ControlFlow;

use super::{
    ChatModel, Completion, Constraint, EngineError, GenerateRequest, GenerationStats, StopReason,
    TokenScore,
};

/// Replays replies in order and records every prompt it was given.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    replies: VecDeque<String>,
    /// Every prompt seen, in order.
    pub prompts: Vec<String>,
    /// The grammar each generation was asked to follow (a scripted reply ignores it).
    pub constraints: Vec<Option<Constraint>>,
    /// The log-probability each call of [`ChatModel::score`] gives every word of its text,
    /// in call order; a model with none scores nothing (`None`), as a remote one.
    scores: VecDeque<f32>,
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
            scores: VecDeque::new(),
            context,
        }
    }

    /// This model scoring texts: the `n`th call of [`ChatModel::score`] gives each word of
    /// its text (with the space before it) the `n`th of `scores`.
    pub fn with_scores(mut self, scores: impl IntoIterator<Item = f32>) -> ScriptedModel {
        self.scores = scores.into_iter().collect();
        self
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

    fn score(
        &mut self,
        prompt: &str,
        continuation: &str,
        _: &GenerateRequest,
    ) -> Result<Option<Vec<TokenScore>>, EngineError> {
        let Some(log_prob) = self.scores.pop_front() else {
            return Ok(None);
        };
        self.prompts.push(prompt.to_string());
        let mut words = Vec::new();
        let mut rest = continuation;
        while !rest.is_empty() {
            let start = rest.len() - rest.trim_start().len();
            let end = rest[start..]
                .find(char::is_whitespace)
                .map_or(rest.len(), |e| start + e);
            words.push(TokenScore {
                text: rest[..end].to_string(),
                log_prob,
            });
            rest = &rest[end..];
        }
        Ok(Some(words))
    }

    /// About four characters per token, like real BPE vocabularies on English text.
    fn count_tokens(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }

    fn context_size(&self) -> usize {
        self.context
    }
}
