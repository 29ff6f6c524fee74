//! One study generation: renders a study prompt (`prompts/study/`, through `crate::prompt`),
//! budgets note text against the context, runs the model under a grammar, and keeps every
//! generation for `--transcript`.

use std::ops::ControlFlow;

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::json;

use crate::engine::{Cancelled, ChatModel, Completion, Constraint, GenerateRequest, StopReason};
use crate::grammar::ROOT;
use crate::prompt::{ChatTemplate, Message, Prompt, StudyPrompt};
use crate::report::Timings;

/// Tokens kept free beyond the prompt and the output, for tokenization differences at joins.
const SLACK_TOKENS: usize = 16;
/// Below this many tokens of note text per prompt, chunking would only produce noise.
const MIN_TEXT_TOKENS: usize = 64;

/// A grammar a study reply is generated under, named for the transcript.
pub struct Grammar {
    /// `quiz-item`, `summary` or `grade`.
    pub name: &'static str,
    /// The GBNF text; its start rule is `root`.
    pub gbnf: String,
}

impl Grammar {
    /// The engine's constraint: strict from the first token.
    pub fn constraint(&self) -> Constraint {
        Constraint {
            gbnf: self.gbnf.clone(),
            root: ROOT.to_string(),
            lazy_patterns: Vec::new(),
        }
    }
}

/// A rule for one line of text of `1..=max_chars` characters that starts with a visible
/// character and holds no control character (so no line break).
pub fn line_rule(name: &str, max_chars: usize) -> String {
    format!(
        "{name} ::= [^\\x00-\\x20\\x7F] [^\\x00-\\x1F\\x7F]{{0,{}}}\n",
        max_chars.saturating_sub(1)
    )
}

/// Renders study prompts and runs the model on them.
pub(super) struct Writer<'a> {
    pub(super) model: &'a mut dyn ChatModel,
    pub(super) template: &'a ChatTemplate,
    pub(super) request: GenerateRequest,
    pub(super) verbose: bool,
    /// Every generation so far, for `--transcript`.
    pub(super) log: Vec<Generation>,
    /// Told where long work is ("part 2 of 5: Methods"), for a server to show; the terminal
    /// has its own progress line.
    pub(super) on_step: &'a dyn Fn(&str),
}

/// One generation as `--transcript` records it.
#[derive(Debug, Serialize)]
pub(super) struct Generation {
    system: String,
    user: String,
    grammar: &'static str,
    reply: String,
    stop: &'static str,
    timings: Timings,
}

/// Why a generation ended, as the transcript writes it.
fn stop_name(stop: &StopReason) -> &'static str {
    match stop {
        StopReason::EndOfTurn => "end_of_turn",
        StopReason::EndOfMessage => "end_of_message",
        StopReason::StopString(_) => "stop_string",
        StopReason::MaxTokens => "max_tokens",
        StopReason::ContextFull => "context_full",
        StopReason::Cancelled => "cancelled",
        StopReason::StoppedByCaller => "stopped_by_caller",
    }
}

impl Writer<'_> {
    /// A study template's text with `vars` filled in.
    pub(super) fn render(&self, prompt: StudyPrompt, vars: &impl Serialize) -> Result<String> {
        Ok(self.template.study(prompt, vars)?.trim().to_string())
    }

    fn prompt(&self, system: StudyPrompt, user: &str) -> Result<Prompt> {
        let system = self.render(system, &json!({}))?;
        let conversation = [Message::system(system), Message::user(user)];
        Ok(self.template.answer(&conversation)?)
    }

    /// Tokens `text` takes.
    pub(super) fn count(&self, text: &str) -> usize {
        self.model.count_tokens(text)
    }

    /// Tokens of note text that fit beside `system` and `user` (the user message without the
    /// text) while leaving room for the reply and `reserve` more.
    pub(super) fn text_budget(
        &self,
        system: StudyPrompt,
        user: &str,
        reserve: usize,
    ) -> Result<usize> {
        let overhead = self.count(&self.prompt(system, user)?.text);
        let context = self.model.context_size();
        let budget =
            context.saturating_sub(overhead + self.request.max_tokens + SLACK_TOKENS + reserve);
        if budget < MIN_TEXT_TOKENS {
            bail!(
                "the context of {context} tokens leaves no room for note text beside the prompt \
                 ({overhead} tokens) and the reply (--max-tokens {}); raise --ctx or lower --max-tokens",
                self.request.max_tokens
            );
        }
        Ok(budget)
    }

    /// True when the prompt leaves room for the reply.
    pub(super) fn fits(&self, system: StudyPrompt, user: &str) -> Result<bool> {
        let tokens = self.count(&self.prompt(system, user)?.text);
        Ok(tokens + self.request.max_tokens + SLACK_TOKENS <= self.model.context_size())
    }

    /// One generation under `grammar`, its text handed to `on_text` as it comes.
    pub(super) fn generate(
        &mut self,
        system: StudyPrompt,
        user: &str,
        grammar: &Grammar,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion> {
        let prompt = self.prompt(system, user)?;
        if self.verbose {
            eprintln!("recall: prompt\n{}", prompt.text);
        }
        // The system message is the same for every note of a kind (summary, quiz, grade):
        // the prompt cache keeps its KV state across runs, as it does for `ask`.
        let request = GenerateRequest {
            constraint: Some(grammar.constraint()),
            stable_prefix: prompt.stable_len,
            ..self.request.clone()
        };
        let completion = self.model.generate(&prompt.text, &request, on_text)?;
        if self.verbose {
            eprintln!(
                "recall: output ({})\n{}",
                stop_name(&completion.stop),
                completion.text
            );
        }
        self.log.push(Generation {
            system: self.render(system, &json!({}))?,
            user: user.to_string(),
            grammar: grammar.name,
            reply: completion.text.clone(),
            stop: stop_name(&completion.stop),
            timings: Timings::new(&completion.stats),
        });
        if completion.stop == StopReason::Cancelled {
            return Err(Cancelled.into());
        }
        Ok(completion)
    }
}
