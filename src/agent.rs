//! The agent loop: retrieve → answer, or (when that answer is that the notes do not say)
//! retrieve → decide → call → decide … → answer.
//!
//! With a vault server, a question starts with a search for the question as asked: its passages
//! become numbered sources before the model writes anything, so even a small model answers
//! from the notes, and it answers from them at once. Only an answer that the notes do not say
//! is held back from the user: then the agent adds further passages of the leading notes (a
//! 1.5B model told to look further only repeats the opening search), and the model decides
//! whether to look further still (measured on 43 questions with a 1.5B model, a decision step
//! before every answer took 47% of the time and found no gold note that the opening search
//! had not). A call made before in the turn is not made again: the answer comes next.
//! Without a vault server, or with `answer_first` off, decisions come first. Each decision
//! step renders the conversation *with* tool schemas and generates under the tool grammar,
//! whose note references can only be ones already seen; calls are checked, approved, routed
//! (independent calls run concurrently) and their results appended as one `ipython` message.
//! When the model answers in text, the step cap is reached, or it repeats itself, the answer
//! step renders the conversation *without* schemas and streams the answer under a grammar
//! that cannot open a call.
//! Citations are the sources the answer names by number, never notes the model merely mentions.
//!
//! **Architecture invariant:** the agent is the one module that knows every stage; it talks to
//! the model only through [`ChatModel`] and to tools only through [`ToolHost`].

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::Value;

use crate::engine::{
    CancellationToken, Cancelled, ChatModel, Completion, Constraint, EngineError, GenerateRequest,
    GenerationStats, Sampling, StopReason,
};
use crate::grammar::{ANSWER_GBNF, ROOT, ToolGrammar, ValueDomains, citation_gbnf};
use crate::markup;
use crate::parse::{Reply, ReplyStart, parse_reply, reply_start};
use crate::prompt::{ChatTemplate, Message, PromptError, Role};
use crate::sources::{
    Citation, Claim, Sources, cited_numbers, unvouched_opening, without_copied_headers,
};
use crate::support::{self, Adds};
use crate::tool::{ToolCall, ToolOutput, ToolSpec};
use crate::tool::{ToolHost, ToolRoute};
use crate::validate::check_call;
use crate::vault::VaultTools;

use obsidian_kb::api;

/// The agent's standing instructions (the system message).
pub const SYSTEM_PROMPT: &str = include_str!("../prompts/agent/system.txt");

/// Tokens kept free for a decision reply.
const DECISION_TOKENS: usize = 256;
/// Tokens an answer may take unless `--max-tokens` says otherwise. Asked for at most three
/// sentences, Qwen2.5-1.5B wrote a median of 66 tokens on the 103 help questions (p90 130);
/// the 2 over 256 reprinted the list of sources.
pub const ANSWER_TOKENS: usize = 256;
/// Most tokens the attribution step may write: `[1, 2, 3, 4, 5]` and some slack.
const ATTRIBUTION_TOKENS: usize = 24;
/// Passages the opening search puts in front of the model.
const RETRIEVED_PASSAGES: usize = 5;
/// When the first answer is that the notes do not say: the leading notes whose further
/// passages the agent reads before the model decides (a note's answer is often in another
/// section than the one matching the question's words; a 1.5B model asked to look further
/// only repeats the opening search), and how many passages of each.
const WIDENED_NOTES: usize = 3;
const WIDENED_PASSAGES: usize = 3;
/// Characters of each source quoted when the model wrote no answer.
const FALLBACK_QUOTE_CHARS: usize = 300;

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Most decision steps before the answer is forced.
    pub max_steps: usize,
    /// Most tokens in the answer.
    pub answer_tokens: usize,
    /// Constrain decision steps with the tool grammar.
    pub grammar: bool,
    /// Make the first decision a tool call (the grammar then holds from the first token): the
    /// notes are the source of truth, and small models otherwise answer from their own guesses.
    pub tool_first: bool,
    /// After the opening search, answer at once, and hold a decision step only when the answer
    /// is that the notes do not say. Off: a decision step before every answer.
    pub answer_first: bool,
    /// Sampling for both steps.
    pub sampling: Sampling,
    /// Cancelled (by Ctrl-C) to stop the turn wherever it is: the prompt being read, the
    /// reply or answer being written, or the tool calls running. The turn then ends with
    /// [`AgentError::Cancelled`], also when part of the answer was already streamed.
    pub cancel: CancellationToken,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_steps: 5,
            answer_tokens: ANSWER_TOKENS,
            grammar: true,
            tool_first: true,
            answer_first: true,
            sampling: Sampling::default(),
            cancel: CancellationToken::new(),
        }
    }
}

/// One tool call as it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The tool name the model used.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
    /// The server it went to (`None` when it was never routed).
    pub server: Option<String>,
    /// False when the call failed or was refused.
    pub ok: bool,
    /// Characters of result text.
    pub result_chars: usize,
    /// `note://` URIs of the notes the result carried (read, or found by a search).
    pub notes: Vec<String>,
    /// How long the call took.
    pub elapsed: Duration,
}

/// What one step did: a model generation, or the opening search (no generation).
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// `retrieve`, `decision`, `answer` or `attribute`.
    pub kind: &'static str,
    /// The raw model output.
    pub output: String,
    /// Calls made from it.
    pub calls: Vec<CallRecord>,
    /// Token counts and timings.
    pub stats: GenerationStats,
}

/// The outcome of one question.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The answer text as streamed.
    pub answer: String,
    /// True when the best sources are quoted after the model's answer: it wrote none, one
    /// that says nothing of its own (only the question's words), or one that the notes do not
    /// say.
    pub fallback: bool,
    /// The sources the answer cites by number; when it cites none, every source it was given,
    /// marked uncited.
    pub citations: Vec<Citation>,
    /// Every generation, in order.
    pub steps: Vec<StepRecord>,
}

/// Why a turn could not finish.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A prompt failed to render.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The user stopped the turn (Ctrl-C); nothing of it counts, not even an answer begun.
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
}

impl AgentError {
    /// True when the user stopped the turn.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, AgentError::Cancelled(_))
    }
}

/// Asks before a call to a tool whose server is not read-only; `true` lets it run.
pub trait Approver {
    /// Decides about one call.
    fn approve(&mut self, call: &ToolCall, route: &ToolRoute) -> bool;
}

/// Approves every call (`--yes`).
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn approve(&mut self, _: &ToolCall, _: &ToolRoute) -> bool {
        true
    }
}

/// Refuses every call that needs approval (non-interactive runs without `--yes`).
pub struct RefuseAll;

impl Approver for RefuseAll {
    fn approve(&mut self, _: &ToolCall, _: &ToolRoute) -> bool {
        false
    }
}

/// The parts a turn runs on; made by [`Agent::new`].
pub struct Agent<'a, M: ChatModel + ?Sized, H: ToolHost> {
    /// The model for decision steps, with its KV cache.
    model: &'a mut M,
    /// A second context on the same model for answer steps. Answer prompts carry no schemas,
    /// so they part from decision prompts at the system message: one shared cache would re-read
    /// the whole conversation at every switch. `None` answers with `model`.
    answer_model: Option<&'a mut M>,
    /// The tools.
    host: &'a H,
    /// Runs the host's async calls from this synchronous loop.
    runtime: &'a tokio::runtime::Runtime,
    /// How prompts are laid out for this model.
    template: &'a ChatTemplate,
    /// Approval of calls to servers that are not read-only.
    approver: &'a mut dyn Approver,
    /// Loop settings.
    options: AgentOptions,
}

impl<'a, M: ChatModel + ?Sized, H: ToolHost> Agent<'a, M, H> {
    /// An agent that decides and answers on `model`, calls `host`'s tools on `runtime`, and
    /// asks `approver` before calls to servers that are not read-only.
    pub fn new(
        model: &'a mut M,
        host: &'a H,
        runtime: &'a tokio::runtime::Runtime,
        template: &'a ChatTemplate,
        approver: &'a mut dyn Approver,
        options: AgentOptions,
    ) -> Self {
        Agent {
            model,
            answer_model: None,
            host,
            runtime,
            template,
            approver,
            options,
        }
    }

    /// Writes answers on `answer_model`, a second context of the same model, so that decision
    /// and answer prompts each keep their own KV cache.
    pub fn with_answer_model(mut self, answer_model: &'a mut M) -> Self {
        self.answer_model = Some(answer_model);
        self
    }
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// Answers `question` in `conversation` (which gains the question, the calls, their results
    /// and the answer), streaming the answer's text to `on_text`.
    pub fn ask(
        &mut self,
        conversation: &mut Vec<Message>,
        question: &str,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Turn, AgentError> {
        if conversation.is_empty() {
            conversation.push(Message::system(SYSTEM_PROMPT.trim()));
        }
        conversation.push(Message::user(question));
        let vault = VaultTools::find(self.host);
        let tools = match &vault {
            Some(vault) => vault.order(self.host.tools()),
            None => self.host.tools(),
        };
        let mut sources = Sources::for_question(question);
        let mut steps = Vec::new();
        let mut signatures: Vec<String> = Vec::new();

        let retrieved = match &vault {
            Some(vault) => {
                let opening = api::SearchParams {
                    query: question.to_string(),
                    limit: Some(RETRIEVED_PASSAGES),
                    ..api::SearchParams::default()
                };
                self.retrieve(
                    vault,
                    &opening,
                    &tools,
                    conversation,
                    &mut sources,
                    &mut steps,
                )?
            }
            None => None,
        };
        // Small models copy the opening call; repeating it counts as a repeated call.
        signatures.extend(retrieved.as_deref().map(call_signature));

        // Answer first: the passages usually hold the answer, and a decision step costs a
        // prompt with every schema in it. Only "the notes do not say" is held back from the
        // user, to let the model look further first.
        let mut held = None;
        if retrieved.is_some() && self.options.answer_first {
            let mut shown = HoldBack::default();
            let answered = self.answer(conversation, question, &sources, &mut |text| {
                shown.pass(text, on_text)
            })?;
            if !(answered.notes_lack_it && shown.holding()) {
                return Ok(finish(
                    conversation,
                    question,
                    &sources,
                    steps,
                    answered,
                    on_text,
                ));
            }
            held = Some((answered, shown, steps.len()));
        }
        let looked_at = conversation.len();
        if let (Some(vault), Some(_)) = (&vault, &held)
            && !sources.list().is_empty()
        {
            let wider = api::SearchParams {
                query: question.to_string(),
                limit: Some(WIDENED_NOTES),
                passages: Some(WIDENED_PASSAGES),
                ..api::SearchParams::default()
            };
            let widened = self.retrieve(
                vault,
                &wider,
                &tools,
                conversation,
                &mut sources,
                &mut steps,
            )?;
            signatures.extend(widened.as_deref().map(call_signature));
        }

        for step_index in 0..self.options.max_steps {
            let domains = vault
                .as_ref()
                .map(|v| {
                    v.argument_domains(sources.references(), sources.sections(), sources.offsets())
                })
                .unwrap_or_default();
            let prompt = self.template.decision(conversation, &tools)?;
            tracing::debug!(target: "recall::prompt", "decision prompt:\n{}", prompt.text);
            let mut request = self.request(DECISION_TOKENS);
            request.stable_prefix = prompt.stable_len;
            let must_call = step_index == 0 && self.options.tool_first && retrieved.is_none();
            request.constraint = self.call_constraint(&tools, &domains, must_call);
            let mut seen = String::new();
            let completion = self.model.generate(&prompt.text, &request, &mut |text| {
                seen.push_str(text);
                stop_if_prose(&seen)
            })?;
            tracing::debug!(target: "recall::model", "decision output: {:?}", completion.text);
            if completion.stop == StopReason::Cancelled {
                return Err(Cancelled.into());
            }
            let calls = match parse_reply(&completion.text, &tools) {
                Reply::Answer(_) => {
                    steps.push(step("decision", &completion, Vec::new()));
                    break;
                }
                Reply::Malformed { error } => {
                    steps.push(step("decision", &completion, Vec::new()));
                    conversation.push(Message::assistant(completion.text.trim()));
                    conversation.push(Message::ipython(format!(
                        "Error: your tool call could not be read: {error}. Write it again as [tool_name(param=\"value\")], or answer in plain text."
                    )));
                    continue;
                }
                Reply::Calls(calls) => calls,
            };
            let signature = call_signature(&calls);
            // Calls made before in this turn would bring back what the model has (an A-B-A
            // cycle too).
            let repeated = signatures.contains(&signature);
            signatures.push(signature);
            if repeated {
                // The answer step comes next: the repeated call and a scolding would only be
                // more text for the model to copy, so neither enters the conversation.
                steps.push(step("decision", &completion, Vec::new()));
                break;
            }

            let budget = self.result_budget(conversation, &tools)?;
            let calls = fit_reads(&calls, vault.as_ref(), budget);
            let (records, texts) = self.run_calls(&calls, vault.as_ref(), &mut sources)?;
            steps.push(step("decision", &completion, records));
            conversation.push(Message::assistant(completion.text.trim()));
            conversation.push(Message::ipython(render_results(&calls, &texts, budget)));
        }

        let answered = match held {
            // Nothing new was read: the held answer stands (the same prompt would write it
            // again), shown now.
            Some((answered, mut shown, _)) if conversation.len() == looked_at => {
                let _ = shown.release(on_text);
                answered
            }
            held => {
                // The held answer is replaced; its step stays where it ran.
                if let Some((first, _, at)) = held {
                    steps.insert(at, step("answer", &first.completion, Vec::new()));
                }
                self.answer(conversation, question, &sources, on_text)?
            }
        };
        Ok(finish(
            conversation,
            question,
            &sources,
            steps,
            answered,
            on_text,
        ))
    }

    /// A search the agent makes itself (the question as asked), through the vault's search
    /// tool like any call, its passages numbered as sources: the opening search, and the wider
    /// one after an answer that the notes do not say. It enters the conversation only when it
    /// brought a passage not shown yet. Returns the call when it ran.
    fn retrieve(
        &mut self,
        vault: &VaultTools,
        params: &api::SearchParams,
        tools: &[ToolSpec],
        conversation: &mut Vec<Message>,
        sources: &mut Sources,
        steps: &mut Vec<StepRecord>,
    ) -> Result<Option<Vec<ToolCall>>, AgentError> {
        let Some(call) = vault.call(api::SEARCH_NOTES, params) else {
            return Ok(None);
        };
        let calls = [call];
        let known = sources.list().len();
        let (records, texts) = self.run_calls(&calls, Some(vault), sources)?;
        let written = format!("[{}]", calls[0].to_pythonic());
        steps.push(StepRecord {
            kind: "retrieve",
            output: written.clone(),
            calls: records,
            stats: GenerationStats::default(),
        });
        if sources.list().len() == known && known > 0 {
            return Ok(Some(calls.to_vec()));
        }
        // At most half of what is free: the model may still want to read a note whole.
        let budget = self.result_budget(conversation, tools)? / 2;
        conversation.push(Message::assistant(written));
        conversation.push(Message::ipython(render_results(&calls, &texts, budget)));
        Ok(Some(calls.to_vec()))
    }

    /// The grammar for a decision step: strict when the reply must be a call, else lazy (it
    /// only holds once the reply starts one); `None` without `--grammar` or callable tools.
    fn call_constraint(
        &self,
        tools: &[ToolSpec],
        domains: &ValueDomains,
        must_call: bool,
    ) -> Option<Constraint> {
        if !self.options.grammar {
            return None;
        }
        let grammar = ToolGrammar::with_domains(tools, domains)?;
        Some(Constraint {
            gbnf: grammar.gbnf,
            root: grammar.root.to_string(),
            lazy_patterns: if must_call {
                Vec::new()
            } else {
                grammar.trigger_patterns
            },
        })
    }

    /// The answer step: the conversation without schemas or calls plus a reminder to answer
    /// from the numbered sources, generated under a grammar that cannot open a call. When the model
    /// writes nothing, the best sources are quoted instead, so the user always gets an answer;
    /// after an answer that adds nothing to the question, or only a yes or no, they are quoted
    /// too.
    /// An answer that cites no source by number (the marks of a copied list of source headers
    /// cite nothing), or opens with a claim of its own before sources copied under their
    /// headers, is followed by the attribution step.
    fn answer(
        &mut self,
        conversation: &[Message],
        question: &str,
        sources: &Sources,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Answered, AgentError> {
        let instruction = if sources.list().is_empty() {
            None
        } else {
            Some(
                self.template
                    .answer_instruction(question, sources.list().len())?,
            )
        };
        let messages = answer_messages(conversation, sources, instruction.as_deref());
        let prompt = self.template.answer(&messages)?;
        tracing::debug!(target: "recall::prompt", "answer prompt:\n{}", prompt.text);
        let mut request = self.request(self.options.answer_tokens);
        request.stable_prefix = prompt.stable_len;
        request.constraint = Some(Constraint {
            gbnf: ANSWER_GBNF.to_string(),
            root: ROOT.to_string(),
            lazy_patterns: Vec::new(),
        });
        let answerer = self.answerer();
        let mut streamed = String::new();
        let completion = answerer.generate(&prompt.text, &request, &mut |text| {
            streamed.push_str(text);
            if is_looping(&streamed) {
                tracing::debug!("the answer repeats itself; stopped");
                return ControlFlow::Break(());
            }
            on_text(text)
        })?;
        // A cut answer is not the answer: the turn is stopped, whatever was streamed.
        if completion.stop == StopReason::Cancelled {
            return Err(Cancelled.into());
        }
        let mut answer = completion.text.trim().to_string();
        // "The notes do not say" (what `answer.j2` asks for when the sources lack the answer)
        // came from no source: asking which one would only invite a false citation.
        let notes_lack_it = says_notes_lack_it(&answer);
        // The answer less the source headers it copied: their words are not its own, and
        // their marks cite nothing.
        let own = without_copied_headers(&answer, sources.list());
        let adds = match instruction.as_deref() {
            Some(asked) if !notes_lack_it => support::adds(question, asked, &own),
            _ => Adds::Something,
        };
        let lead = match adds {
            _ if answer.is_empty() => Some("The model wrote no answer."),
            Adds::Nothing => Some("That answer adds nothing to the question."),
            Adds::VerdictOnly => {
                Some("That answer is a bare yes or no; here is what the notes say.")
            }
            Adds::Something => None,
        };
        if let Some(lead) = lead {
            let gap = if answer.is_empty() { "" } else { "\n\n" };
            let quoted = format!("{lead} {}", quote_sources(sources));
            let _ = on_text(&format!("{gap}{quoted}"));
            answer.push_str(gap);
            let quote_at = answer.len();
            answer.push_str(&quoted);
            return Ok(Answered {
                text: answer,
                quote_at: Some(quote_at),
                completion,
                attribution: None,
                opening_from: None,
                notes_lack_it: false,
            });
        }
        let given = sources.list().len();
        let cites = cited_numbers(&own).iter().any(|n| (1..=given).contains(n));
        // What the attribution step is asked about, up to where in the answer: all of it when
        // it cites nothing; else an opening of the model's own that only source headers
        // follow (each header's mark vouches for what is under it, not for the opening).
        let unattributed = if given == 0 || notes_lack_it {
            None
        } else if !cites {
            Some(answer.len())
        } else {
            let opening = unvouched_opening(&answer);
            instruction
                .as_deref()
                .filter(|asked| support::states_something(asked, opening))
                .map(|_| opening.len())
        };
        let attribution = match unattributed {
            Some(end) => self.attribute(messages, &answer[..end], given)?,
            None => None,
        };
        let mut opening_from = None;
        if let (Some(end), Some(named)) = (unattributed, attribution.as_ref()) {
            if end == answer.len() {
                // The numbers join the answer as if written there: shown, kept in the
                // conversation, and read back into citations like any other.
                let suffix = format!(" {}", named.text.trim());
                let _ = on_text(&suffix);
                answer.push_str(&suffix);
            } else {
                // The answer has been shown with its opening unmarked; written at its end, the
                // numbers would seem to vouch for the last source copied. They vouch for the
                // opening in the citations alone.
                opening_from = Some((end, cited_numbers(&named.text)));
            }
        }
        Ok(Answered {
            text: answer,
            quote_at: None,
            completion,
            attribution,
            opening_from,
            notes_lack_it,
        })
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
        let prompt = self.template.answer(&messages)?;
        tracing::debug!(target: "recall::prompt", "attribution prompt:\n{}", prompt.text);
        let mut request = self.request(ATTRIBUTION_TOKENS);
        request.stable_prefix = prompt.stable_len;
        request.constraint = Some(Constraint {
            gbnf: citation_gbnf(given),
            root: ROOT.to_string(),
            lazy_patterns: Vec::new(),
        });
        let model = self.answerer();
        let completion =
            match model.generate(&prompt.text, &request, &mut |_| ControlFlow::Continue(())) {
                Ok(completion) => completion,
                Err(e) => {
                    tracing::debug!("attribution step failed, the answer stays uncited: {e}");
                    return Ok(None);
                }
            };
        tracing::debug!(target: "recall::model", "attribution output: {:?}", completion.text);
        if completion.stop == StopReason::Cancelled {
            return Err(Cancelled.into());
        }
        let named = cited_numbers(&completion.text);
        Ok(
            (!named.is_empty() && named.iter().all(|n| (1..=given).contains(n)))
                .then_some(completion),
        )
    }

    /// The context answers and attributions run on: the answer model, else the decision one.
    fn answerer(&mut self) -> &mut M {
        match self.answer_model.as_deref_mut() {
            Some(model) => model,
            None => &mut *self.model,
        }
    }

    fn request(&self, max_tokens: usize) -> GenerateRequest {
        let mut request = GenerateRequest::new(max_tokens);
        request.sampling = self.options.sampling.clone();
        request.cancel = self.options.cancel.clone();
        request
    }

    /// Checks, approves and runs the calls, concurrently; returns their records and the text
    /// of each result for the model, in call order (vault results become numbered sources).
    /// Ctrl-C abandons calls still running (their futures are dropped, which cancels them).
    fn run_calls(
        &mut self,
        calls: &[ToolCall],
        vault: Option<&VaultTools>,
        sources: &mut Sources,
    ) -> Result<(Vec<CallRecord>, Vec<ResultText>), AgentError> {
        let tools = self.host.tools();
        let mut ready: Vec<Option<ToolOutput>> = Vec::new();
        let mut routes = Vec::new();
        for call in calls {
            let route = self.host.route(&call.name);
            let refusal = match (check_call(call, &tools), &route) {
                (Err(problem), _) => Some(problem),
                (Ok(()), Some(route))
                    if !route.read_only && !self.approver.approve(call, route) =>
                {
                    Some(format!(
                        "the call to {} was not approved by the user (non-interactive runs need --yes)",
                        call.name
                    ))
                }
                _ => None,
            };
            ready.push(refusal.map(|text| ToolOutput {
                text,
                structured: None,
                is_error: true,
            }));
            routes.push(route);
        }
        let started = Instant::now();
        let host = self.host;
        let pending: Vec<_> = calls
            .iter()
            .zip(&ready)
            .filter(|(_, done)| done.is_none())
            .map(|(call, _)| host.call(call))
            .collect();
        let cancel = &self.options.cancel;
        let ran = self.runtime.block_on(async move {
            tokio::select! {
                // A turn already stopped starts no call.
                biased;
                () = cancel.cancelled() => None,
                outputs = futures::future::join_all(pending) => Some(outputs),
            }
        });
        let Some(ran) = ran else {
            return Err(Cancelled.into());
        };
        let mut ran = ran.into_iter();
        let elapsed = started.elapsed();
        let results: Vec<ToolOutput> = ready
            .into_iter()
            .map(|done| done.unwrap_or_else(|| ran.next().expect("one result per pending call")))
            .collect();
        let mut records = Vec::new();
        let mut texts = Vec::new();
        for ((call, out), route) in calls.iter().zip(&results).zip(routes) {
            let (text, notes) = match vault.and_then(|v| v.result(call, out)) {
                Some(result) => (sources.add(&result), result.notes()),
                None => (out.text.clone(), Vec::new()),
            };
            records.push(CallRecord {
                name: call.name.clone(),
                arguments: Value::Object(call.arguments.clone()),
                server: route.map(|r| r.server),
                ok: !out.is_error,
                result_chars: text.chars().count(),
                notes,
                elapsed,
            });
            texts.push(ResultText {
                text,
                is_error: out.is_error,
            });
        }
        Ok((records, texts))
    }

    /// Tokens a new tool result may take: what is left of the context after the conversation,
    /// the schemas, a decision reply and the answer.
    fn result_budget(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
    ) -> Result<usize, AgentError> {
        let used = self
            .model
            .count_tokens(&self.template.decision(conversation, tools)?.text);
        let reserve = DECISION_TOKENS + self.options.answer_tokens + 64;
        Ok(self.model.context_size().saturating_sub(used + reserve))
    }
}

/// Whether `answer` is that the notes do not hold the answer, in the words
/// `prompts/agent/answer.j2` asks for (or their contraction): one sentence saying so, citation
/// marks aside. An answer that gives facts and then says the notes lack some detail is an answer.
fn says_notes_lack_it(answer: &str) -> bool {
    static SENTENCE_END: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[.!?](\s|$)").expect("valid regex"));
    let answer = answer.to_lowercase().replace('\u{2019}', "'");
    let says = NOTES_LACK_IT
        .iter()
        .any(|phrase| answer.contains(phrase.trim_start_matches("the ")));
    let sentences = SENTENCE_END
        .split(answer.trim())
        .filter(|s| s.chars().any(char::is_alphabetic))
        .count();
    says && sentences <= 1
}

/// The phrases `prompts/agent/answer.j2` asks for when the sources lack the answer, lowercase.
const NOTES_LACK_IT: [&str; 2] = ["the notes do not say", "the notes don't say"];

/// Holds an answer back from the user while it may still be only "The notes do not say.", so
/// that such an answer can be replaced by a second look before anyone reads it. Any other
/// answer is released as soon as it parts from those words.
#[derive(Default)]
struct HoldBack {
    held: String,
    released: bool,
}

impl HoldBack {
    /// Passes `text` on to `on_text`, or holds it.
    fn pass(
        &mut self,
        text: &str,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.released {
            return on_text(text);
        }
        self.held.push_str(text);
        if may_be_notes_lack_it(&self.held) {
            return ControlFlow::Continue(());
        }
        self.release(on_text)
    }

    /// True while text is held back.
    fn holding(&self) -> bool {
        !self.released && !self.held.is_empty()
    }

    /// Shows what is held and passes everything after it on.
    fn release(&mut self, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) -> ControlFlow<()> {
        self.released = true;
        if self.held.is_empty() {
            return ControlFlow::Continue(());
        }
        on_text(&std::mem::take(&mut self.held))
    }
}

/// True while `text` (an answer's start) is, or may still become, an answer that only says
/// the notes do not say.
fn may_be_notes_lack_it(text: &str) -> bool {
    let start = text.trim_start().to_lowercase().replace('\u{2019}', "'");
    NOTES_LACK_IT.iter().any(|phrase| {
        phrase.starts_with(&start) || (start.starts_with(phrase) && says_notes_lack_it(text))
    })
}

/// What the answer step produced.
struct Answered {
    /// The answer as the user saw it (with the attribution's numbers, if it ran for the
    /// whole answer).
    text: String,
    /// Where the best sources are quoted in `text`, when the model wrote no answer, or one
    /// that adds nothing of its own or only a yes or no ([`support::adds`]); its citations are
    /// the quote's.
    quote_at: Option<usize>,
    /// The answer's generation.
    completion: Completion,
    /// The attribution step's generation, when it ran and named sources.
    attribution: Option<Completion>,
    /// The sources the attribution step named for the answer's opening, up to where in
    /// `text` that opening ends (when it did not run for the whole answer).
    opening_from: Option<(usize, BTreeSet<usize>)>,
    /// True when the answer is that the notes do not say ([`says_notes_lack_it`]).
    notes_lack_it: bool,
}

/// A decision reply that starts as prose is an answer, not a call: stop it there, since the
/// answer step writes the answer (without the schemas in the way).
fn stop_if_prose(reply: &str) -> ControlFlow<()> {
    match reply_start(reply) {
        ReplyStart::Text => ControlFlow::Break(()),
        ReplyStart::Call | ReplyStart::Undecided => ControlFlow::Continue(()),
    }
}

/// The turn after its answer: the answer's steps recorded, the answer kept in the
/// conversation, citations read from it. An answer that the notes do not say is followed by
/// the passages the search found closest, quoted (the model may have missed the answer in
/// them, and the reader sees where it looked); they stay uncited, since the answer came from
/// none of them.
fn finish(
    conversation: &mut Vec<Message>,
    question: &str,
    sources: &Sources,
    mut steps: Vec<StepRecord>,
    answered: Answered,
    on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
) -> Turn {
    let Answered {
        text: mut answer,
        mut quote_at,
        completion,
        attribution,
        opening_from,
        notes_lack_it,
    } = answered;
    if notes_lack_it && quote_at.is_none() && !sources.list().is_empty() {
        let quoted = format!("\n\n{}", quote_sources(sources));
        let _ = on_text(&quoted);
        quote_at = Some(answer.len() + 2);
        answer.push_str(&quoted);
    }
    steps.push(step("answer", &completion, Vec::new()));
    if let Some(attribution) = &attribution {
        steps.push(step("attribute", attribution, Vec::new()));
    }
    conversation.push(Message::assistant(answer.clone()));
    // An answer that the notes do not say came from no source, whatever number it wrote.
    let citations = if notes_lack_it {
        sources.given()
    } else {
        let opening = opening_from.map(|(end, numbers)| Claim {
            text: &answer[..end],
            numbers,
        });
        sources.citations(question, &answer[quote_at.unwrap_or(0)..], opening)
    };
    Turn {
        citations,
        answer,
        fallback: quote_at.is_some(),
        steps,
    }
}

fn step(kind: &'static str, completion: &Completion, calls: Vec<CallRecord>) -> StepRecord {
    StepRecord {
        kind,
        output: completion.text.clone(),
        calls,
        stats: completion.stats.clone(),
    }
}

/// A call list's identity for the repetition guard: names and arguments, order-insensitive.
fn call_signature(calls: &[ToolCall]) -> String {
    let mut parts: Vec<String> = calls
        .iter()
        .map(|c| {
            let sorted: BTreeMap<_, _> = c.arguments.iter().collect();
            format!(
                "{}{}",
                c.name,
                serde_json::to_string(&sorted).unwrap_or_default()
            )
        })
        .collect();
    parts.sort();
    parts.join("|")
}

/// Characters of an answer's end that, found three times, mean the model is looping.
const LOOP_TAIL_CHARS: usize = 40;

/// True when the end of `text` already occurs twice before: greedy decoding on a small model
/// can repeat one phrase until the token limit, which helps nobody.
fn is_looping(text: &str) -> bool {
    let Some((start, _)) = text.char_indices().rev().nth(LOOP_TAIL_CHARS - 1) else {
        return false;
    };
    let tail = &text[start..];
    if tail.trim().chars().count() < LOOP_TAIL_CHARS / 2 {
        return false;
    }
    text.matches(tail).count() >= 3
}

/// The conversation as the answer step shows it: tool results stay, the calls that asked for
/// them go. Small models copy the last call into their answer; the results say it all.
fn without_calls(conversation: &[Message]) -> Vec<Message> {
    conversation
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            let next = conversation.get(i + 1).map(|n| n.role);
            !(m.role == Role::Assistant && next == Some(Role::Ipython))
        })
        .map(|(_, m)| m.clone())
        .collect()
}

/// The answer step's messages: the conversation without calls, its results with source
/// headers but no URIs, and `instruction` last. The instruction asks the question again
/// (small models follow what is nearest the end best), so the turn's own question message
/// goes: it would be read twice.
fn answer_messages(
    conversation: &[Message],
    sources: &Sources,
    instruction: Option<&str>,
) -> Vec<Message> {
    let mut messages = without_calls(conversation);
    for message in &mut messages {
        if message.role == Role::Ipython {
            message.content = sources.without_uris(&message.content);
        }
    }
    if let Some(instruction) = instruction {
        if let Some(asked) = messages.iter().rposition(|m| m.role == Role::User) {
            messages.remove(asked);
        }
        messages.push(Message::user(instruction));
    }
    messages
}

/// One call's result as the model will read it.
struct ResultText {
    text: String,
    is_error: bool,
}

/// Renders results for the `ipython` message, cutting text that would overflow the context
/// (about `budget_tokens`) with a note saying so.
fn render_results(calls: &[ToolCall], results: &[ResultText], budget_tokens: usize) -> String {
    // About three characters per token: below the English BPE average of four, so a cut
    // result still fits when the text is dense (names, numbers, markup).
    let per_result = budget_tokens.saturating_mul(3) / results.len().max(1);
    let mut text = String::new();
    for (i, (call, out)) in calls.iter().zip(results).enumerate() {
        if results.len() > 1 {
            // Not `[n]`: vault results hold numbered sources, and a small model cites any
            // bracketed number it sees.
            text.push_str(&format!("Result {} ({}):\n", i + 1, call.name));
        }
        if out.is_error {
            text.push_str("Error: ");
        }
        let total = out.text.chars().count();
        if total <= per_result {
            text.push_str(&out.text);
        } else {
            let shown: String = out.text.chars().take(per_result).collect();
            text.push_str(&shown);
            text.push_str(&format!(
                "\n[cut: {per_result} of {total} characters shown to fit the context]"
            ));
        }
        if i + 1 < results.len() {
            text.push_str("\n\n");
        }
    }
    text
}

/// The calls with each note read limited to its share of `budget_tokens`, so the server pages
/// a long note instead of the result being cut.
fn fit_reads(
    calls: &[ToolCall],
    vault: Option<&VaultTools>,
    budget_tokens: usize,
) -> Vec<ToolCall> {
    let Some(vault) = vault else {
        return calls.to_vec();
    };
    // Three characters per token, as in `render_results`, less room for the source's header.
    let share = (budget_tokens.saturating_mul(3) / calls.len().max(1)).saturating_sub(200);
    calls.iter().map(|c| vault.limit_read(c, share)).collect()
}

/// What the user gets when the model wrote no answer of its own: the best sources, quoted and
/// numbered.
fn quote_sources(sources: &Sources) -> String {
    if sources.list().is_empty() {
        return "No note matched the question.".to_string();
    }
    let mut text = String::from("The most relevant passages:");
    for source in sources.list().iter().take(3) {
        // The whole passage, not what the model was shown of it: the person reads the quote.
        let passage = markup::plain(&source.passage);
        let mut quote: String = passage.chars().take(FALLBACK_QUOTE_CHARS).collect();
        if quote.len() < passage.len() {
            quote.push('…');
        }
        text.push_str(&format!(
            "\n[{}] {}: {}",
            source.number,
            source.label(),
            quote
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_results_are_labelled_without_bracketed_numbers() {
        let call = |uri: &str| {
            let mut arguments = serde_json::Map::new();
            arguments.insert("uri".into(), uri.into());
            ToolCall {
                name: "read_note".into(),
                arguments,
            }
        };
        let result = |text: &str| ResultText {
            text: text.into(),
            is_error: false,
        };
        let text = render_results(
            &[call("note://A"), call("note://B")],
            &[
                result("[6] A (note://A)\nAlpha."),
                result("[7] B (note://B)\nBeta."),
            ],
            1000,
        );
        // `[1]` and `[2]` would read as sources 1 and 2, which these results are not.
        assert_eq!(
            text,
            "Result 1 (read_note):\n[6] A (note://A)\nAlpha.\n\n\
             Result 2 (read_note):\n[7] B (note://B)\nBeta."
        );
    }

    #[test]
    fn a_phrase_said_three_times_is_a_loop() {
        let phrase = "the enzyme that grabs carbon dioxide from ";
        assert!(!is_looping(&phrase.repeat(2)));
        assert!(is_looping(&format!("Answer: {}", phrase.repeat(3))));
        assert!(!is_looping("short"));
        assert!(!is_looping(&" ".repeat(200)), "whitespace is not a phrase");
        let prose = "Mitosis has four stages. Meiosis has two divisions and yields four cells.";
        assert!(!is_looping(prose));
    }

    /// Streams `tokens` through a [`HoldBack`]; returns what was shown before the end, and
    /// whether it still held text at the end.
    fn hold(tokens: &[&str]) -> (String, bool) {
        let mut shown = String::new();
        let mut hold = HoldBack::default();
        for token in tokens {
            let _ = hold.pass(token, &mut |t| {
                shown.push_str(t);
                ControlFlow::Continue(())
            });
        }
        (shown, hold.holding())
    }

    #[test]
    fn only_the_notes_not_saying_is_held_back_from_the_user() {
        assert_eq!(
            hold(&["The", " notes", " don\u{2019}t", " say", "."]),
            (String::new(), true)
        );
        assert_eq!(
            hold(&["\n", "The notes do not say who"]),
            (String::new(), true)
        );
        // Any other answer shows as soon as it parts from those words.
        assert_eq!(
            hold(&["The", " notes", " say", " B204"]),
            ("The notes say B204".to_string(), false)
        );
        assert_eq!(
            hold(&["The notes do not say.", " But [1]", " names B204."]),
            (
                "The notes do not say. But [1] names B204.".to_string(),
                false
            )
        );
        assert_eq!(hold(&["Room", " B204"]), ("Room B204".to_string(), false));
    }

    #[test]
    fn only_an_answer_that_is_the_notes_not_saying_counts_as_that() {
        assert!(says_notes_lack_it("The notes do not say."));
        assert!(says_notes_lack_it("The notes don\u{2019}t say. [1]"));
        assert!(says_notes_lack_it("The notes do not say who proposed it"));
        // Facts first, a missing detail after: an answer like any other.
        assert!(!says_notes_lack_it(
            "Cholesterol keeps the membrane fluid when cold. The notes do not say how."
        ));
        assert!(!says_notes_lack_it("Room B204 [1]."));
    }
}
