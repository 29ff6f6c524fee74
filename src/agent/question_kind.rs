//! What a question asks for, read by the model (`--question-kind model`): one word of
//! [`Kind::WORDS`] under a grammar, after a standing instruction
//! (`prompts/agent/kind_system.txt`), the same for a question in any language. The checks of
//! the answer then read [`Kind::asks`] in place of the question's words
//! ([`super::asks::Asks::in_words`]).

use super::asks::{Asks, Kind};
use super::side_step::SideStep;
use super::{Agent, AgentError};
use crate::engine::{ChatModel, Chosen};
use crate::prompt::Message;
use crate::tool::ToolHost;

/// The standing instruction: the same for every question, so the prompt cache keeps it.
pub const KIND_SYSTEM: &str = include_str!("../../prompts/agent/kind_system.txt");

/// The words the model may reply, one a kind ([`Kind::WORDS`]): for benches that read the
/// step alone.
pub const KIND_WORDS: [&str; 10] = Kind::WORDS;

/// Tokens the reply may take: one word.
const KIND_TOKENS: usize = 4;

/// How what a question asks for is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuestionKind {
    /// By its question words, in English, Chinese, Japanese and Korean.
    #[default]
    Words,
    /// By the model, in any language.
    Model,
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// What `question` asks for, read as [`AgentOptions::question_kind`] says. Read by the
    /// model, a failed step falls back on the question's words.
    ///
    /// [`AgentOptions::question_kind`]: super::AgentOptions::question_kind
    pub(super) fn asks(&mut self, question: &str) -> Result<Asks, AgentError> {
        if self.options.question_kind == QuestionKind::Words {
            return Ok(Asks::in_words(question));
        }
        let messages = [
            Message::system(KIND_SYSTEM.trim()),
            Message::user(question.trim()),
        ];
        let step = SideStep {
            what: "question kind",
            max_tokens: KIND_TOKENS,
            gbnf: Kind::gbnf(),
        };
        let Some(Chosen { odds, .. }) = self.side_choice(step, &messages, &Kind::WORDS)? else {
            return Ok(Asks::in_words(question));
        };
        let likeliest = odds
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .and_then(|(at, _)| Kind::at(at));
        tracing::debug!("{question:?} asks for {likeliest:?} (odds {odds:?})");
        Ok(likeliest.map_or_else(|| Asks::in_words(question), Kind::asks))
    }
}
