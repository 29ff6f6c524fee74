//! The agent loop: decide → call → decide … → answer.
//!
//! Each decision step renders the conversation *with* tool schemas and generates under the tool
//! grammar; calls are checked, approved, routed (independent calls run concurrently) and their
//! results appended as one `ipython` message. When the model answers in text, the step cap is
//! reached, or it repeats itself, the answer step renders the conversation *without* schemas
//! and streams the answer. The notes cited are taken from actual tool results.
//!
//! **Architecture invariant:** the agent is the one module that knows every stage; it talks to
//! the model only through [`ChatModel`] and to tools only through [`ToolHost`].

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine::{
    ChatModel, Completion, Constraint, EngineError, GenerateRequest, GenerationStats, Sampling,
    StopReason,
};
use crate::grammar::ToolGrammar;
use crate::mcp::{ToolHost, ToolRoute};
use crate::parse::{Reply, ReplyStart, check_call, parse_reply, reply_start};
use crate::prompt::{ChatTemplate, Message, PromptError};
use crate::tool::{ToolCall, ToolOutput};

/// The agent's standing instructions (the system message).
pub const SYSTEM_PROMPT: &str = include_str!("../prompts/agent/system.txt");
const REPEATED_CALL: &str = include_str!("../prompts/agent/repeated_call.txt");

/// Tokens kept free for a decision reply.
const DECISION_TOKENS: usize = 256;

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
    /// Sampling for both steps.
    pub sampling: Sampling,
    /// Set (by Ctrl-C) to stop the turn: the generation running, or the tool calls, which
    /// then end the turn with [`AgentError::Cancelled`].
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_steps: 5,
            answer_tokens: 512,
            grammar: true,
            tool_first: true,
            sampling: Sampling::default(),
            cancel: None,
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

/// What one model generation did.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// `decision` or `answer`.
    pub kind: &'static str,
    /// The raw model output.
    pub output: String,
    /// Calls made from it.
    pub calls: Vec<CallRecord>,
    /// Token counts and timings.
    pub stats: GenerationStats,
}

/// A note the answer drew on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Citation {
    /// The note's title.
    pub title: String,
    /// Its `note://` URI.
    pub uri: String,
}

/// The outcome of one question.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The answer text as streamed (empty when the answer step wrote a call instead).
    pub answer: String,
    /// The answer step's reply when it was a tool call rather than an answer (small models do
    /// this): not shown as the answer, since no tool runs after the answer step.
    pub withheld: Option<String>,
    /// Notes read through tools (or, when none was read, the notes whose search snippets the
    /// model saw), in the order first seen.
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
    /// The user stopped the turn (Ctrl-C) before its answer began.
    #[error("stopped")]
    Cancelled,
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

/// The parts a turn runs on.
pub struct Agent<'a, M: ChatModel + ?Sized, H: ToolHost> {
    /// The model for decision steps, with its KV cache.
    pub model: &'a mut M,
    /// A second context on the same model for answer steps. Answer prompts carry no schemas,
    /// so they part from decision prompts at the system message: one shared cache would re-read
    /// the whole conversation at every switch. `None` answers with `model`.
    pub answer_model: Option<&'a mut M>,
    /// The tools.
    pub host: &'a H,
    /// Runs the host's async calls from this synchronous loop.
    pub runtime: &'a tokio::runtime::Runtime,
    /// How prompts are laid out for this model.
    pub template: &'a ChatTemplate,
    /// Approval of calls to servers that are not read-only.
    pub approver: &'a mut dyn Approver,
    /// Loop settings.
    pub options: AgentOptions,
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
        let tools = self.host.tools();
        let grammar = (self.options.grammar)
            .then(|| ToolGrammar::new(&tools))
            .flatten();
        let lazy = grammar.as_ref().map(|g| Constraint {
            gbnf: g.gbnf.clone(),
            root: g.root.to_string(),
            lazy_patterns: g.trigger_patterns.clone(),
        });
        let strict = lazy.clone().map(|c| Constraint {
            lazy_patterns: Vec::new(),
            ..c
        });
        let mut steps = Vec::new();
        let mut outputs: Vec<ToolOutput> = Vec::new();
        let mut signatures: Vec<String> = Vec::new();

        for step_index in 0..self.options.max_steps {
            let prompt = self.template.decision(conversation, &tools)?;
            tracing::debug!(target: "recall::prompt", "decision prompt:\n{}", prompt.text);
            let mut request = self.request(DECISION_TOKENS);
            request.constraint = if step_index == 0 && self.options.tool_first {
                strict.clone()
            } else {
                lazy.clone()
            };
            let mut seen = String::new();
            let completion = self.model.generate(&prompt.text, &request, &mut |text| {
                seen.push_str(text);
                stop_if_prose(&seen)
            })?;
            tracing::debug!(target: "recall::model", "decision output: {:?}", completion.text);
            if completion.stop == StopReason::Cancelled {
                return Err(AgentError::Cancelled);
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
            let repeated = signatures.last() == Some(&signature)
                || (signatures.len() >= 3
                    && signatures[signatures.len() - 2] == signature
                    && signatures[signatures.len() - 1] == signatures[signatures.len() - 3]);
            signatures.push(signature);
            if repeated {
                steps.push(step("decision", &completion, Vec::new()));
                conversation.push(Message::assistant(completion.text.trim()));
                conversation.push(Message::ipython(REPEATED_CALL.trim()));
                break;
            }

            let (records, results) = self.run_calls(&calls)?;
            steps.push(step("decision", &completion, records));
            let budget = self.result_budget(conversation, &tools)?;
            conversation.push(Message::assistant(completion.text.trim()));
            conversation.push(Message::ipython(render_results(&calls, &results, budget)));
            outputs.extend(results);
        }

        let prompt = self.template.answer(conversation)?;
        tracing::debug!(target: "recall::prompt", "answer prompt:\n{}", prompt.text);
        let request = self.request(self.options.answer_tokens);
        let answerer: &mut M = match self.answer_model.as_deref_mut() {
            Some(model) => model,
            None => &mut *self.model,
        };
        let mut gate = AnswerGate::default();
        let completion =
            answerer.generate(&prompt.text, &request, &mut |text| gate.feed(text, on_text))?;
        gate.finish(on_text);
        steps.push(step("answer", &completion, Vec::new()));
        let reply = completion.text.trim().to_string();
        let (answer, withheld) = if gate.call {
            (String::new(), Some(reply))
        } else {
            (reply, None)
        };
        conversation.push(Message::assistant(
            withheld.clone().unwrap_or_else(|| answer.clone()),
        ));
        Ok(Turn {
            answer,
            withheld,
            citations: citations(&outputs),
            steps,
        })
    }

    fn request(&self, max_tokens: usize) -> GenerateRequest {
        let mut request = GenerateRequest::new(max_tokens);
        request.sampling = self.options.sampling.clone();
        request.cancel = self.options.cancel.clone();
        request
    }

    /// Checks, approves and runs the calls, concurrently; results in call order. Ctrl-C
    /// abandons calls still running (their futures are dropped, which cancels the requests).
    fn run_calls(
        &mut self,
        calls: &[ToolCall],
    ) -> Result<(Vec<CallRecord>, Vec<ToolOutput>), AgentError> {
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
        let cancel = self.options.cancel.clone();
        let ran = self.runtime.block_on(async move {
            let all = std::pin::pin!(futures::future::join_all(pending));
            let stop = std::pin::pin!(cancelled(cancel));
            match futures::future::select(all, stop).await {
                futures::future::Either::Left((outputs, _)) => Some(outputs),
                futures::future::Either::Right(_) => None,
            }
        });
        let Some(ran) = ran else {
            return Err(AgentError::Cancelled);
        };
        let mut ran = ran.into_iter();
        let elapsed = started.elapsed();
        let results: Vec<ToolOutput> = ready
            .into_iter()
            .map(|done| done.unwrap_or_else(|| ran.next().expect("one result per pending call")))
            .collect();
        let records = calls
            .iter()
            .zip(&results)
            .zip(routes)
            .map(|((call, out), route)| CallRecord {
                name: call.name.clone(),
                arguments: Value::Object(call.arguments.clone()),
                server: route.map(|r| r.server),
                ok: !out.is_error,
                result_chars: out.text.chars().count(),
                notes: returned_notes(out)
                    .iter()
                    .map(|note| note.uri().to_string())
                    .collect(),
                elapsed,
            })
            .collect();
        Ok((records, results))
    }

    /// Tokens a new tool result may take: what is left of the context after the conversation,
    /// the schemas, a decision reply and the answer.
    fn result_budget(
        &self,
        conversation: &[Message],
        tools: &[crate::tool::ToolSpec],
    ) -> Result<usize, AgentError> {
        let used = self
            .model
            .count_tokens(&self.template.decision(conversation, tools)?.text);
        let reserve = DECISION_TOKENS + self.options.answer_tokens + 64;
        Ok(self.model.context_size().saturating_sub(used + reserve))
    }
}

/// Holds back the start of an answer until it is clear it is not a tool call, then passes the
/// text through; a reply that opens a call is stopped there and never reaches the user.
#[derive(Default)]
struct AnswerGate {
    held: String,
    open: bool,
    call: bool,
}

impl AnswerGate {
    fn feed(
        &mut self,
        text: &str,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.open {
            return on_text(text);
        }
        self.held.push_str(text);
        match reply_start(&self.held) {
            ReplyStart::Call => {
                self.call = true;
                ControlFlow::Break(())
            }
            ReplyStart::Undecided => ControlFlow::Continue(()),
            ReplyStart::Text => {
                self.open = true;
                on_text(&std::mem::take(&mut self.held))
            }
        }
    }

    /// Passes on what is still held when generation ends undecided (a reply like `[`).
    fn finish(&mut self, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) {
        if !self.open && !self.call && !self.held.is_empty() {
            let _ = on_text(&std::mem::take(&mut self.held));
        }
    }
}

/// A decision reply that starts as prose is an answer, not a call: stop it there, since the
/// answer step writes the answer (without the schemas in the way).
fn stop_if_prose(reply: &str) -> ControlFlow<()> {
    match reply_start(reply) {
        ReplyStart::Text => ControlFlow::Break(()),
        ReplyStart::Call | ReplyStart::Undecided => ControlFlow::Continue(()),
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

/// Resolves once `flag` is set (never, without one). Polled: the flag is a plain atomic that
/// the Ctrl-C handler sets, shared with the engine's token loop.
async fn cancelled(flag: Option<Arc<AtomicBool>>) {
    let Some(flag) = flag else {
        return std::future::pending().await;
    };
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
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

/// Renders results for the `ipython` message, cutting text that would overflow the context
/// (about `budget_tokens`) with a note on how to read on.
fn render_results(calls: &[ToolCall], results: &[ToolOutput], budget_tokens: usize) -> String {
    // Four characters per token is the usual BPE average for English prose; a cut leaves room.
    let per_result = budget_tokens.saturating_mul(3) / results.len().max(1);
    let mut text = String::new();
    for (i, (call, out)) in calls.iter().zip(results).enumerate() {
        if results.len() > 1 {
            text.push_str(&format!("[{}] {}:\n", i + 1, call.name));
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
            text.push_str(&continuation_note(call, out, per_result, total));
        }
        if i + 1 < results.len() {
            text.push_str("\n\n");
        }
    }
    text
}

fn continuation_note(call: &ToolCall, out: &ToolOutput, shown: usize, total: usize) -> String {
    let mut note = format!("\n[cut: {shown} of {total} characters shown to fit the context.");
    if call.name.ends_with("read_note") {
        let uri = out
            .structured
            .as_ref()
            .and_then(|s| s.get("uri"))
            .and_then(Value::as_str)
            .or_else(|| call.arguments.get("uri").and_then(Value::as_str))
            .unwrap_or("…");
        let offset = call
            .arguments
            .get("offset")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        note.push_str(&format!(
            " Read on with read_note(uri=\"{uri}\", offset={}).",
            offset as usize + shown
        ));
    }
    note.push(']');
    note
}

/// A note one result carried: one it read, or one a search found.
enum Returned {
    Read(Citation),
    Found(Citation),
}

impl Returned {
    fn uri(&self) -> &str {
        match self {
            Returned::Read(c) | Returned::Found(c) => &c.uri,
        }
    }
}

fn returned_notes(out: &ToolOutput) -> Vec<Returned> {
    let Some(structured) = out.structured.as_ref().filter(|_| !out.is_error) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    if let Some(c) = note_ref(structured).filter(|_| structured.get("content").is_some()) {
        notes.push(Returned::Read(c));
    }
    let hits = structured.get("hits").and_then(Value::as_array);
    for hit in hits.into_iter().flatten() {
        notes.extend(note_ref(hit).map(Returned::Found));
    }
    notes
}

/// Notes the tools actually returned: read notes first; search hits only when nothing was read.
fn citations(outputs: &[ToolOutput]) -> Vec<Citation> {
    let mut read = Vec::new();
    let mut found = Vec::new();
    for note in outputs.iter().flat_map(returned_notes) {
        match note {
            Returned::Read(c) => read.push(c),
            Returned::Found(c) => found.push(c),
        }
    }
    let mut chosen = if read.is_empty() { found } else { read };
    let mut seen = std::collections::HashSet::new();
    chosen.retain(|c| seen.insert(c.uri.clone()));
    chosen
}

fn note_ref(value: &Value) -> Option<Citation> {
    let uri = value.get("uri")?.as_str()?;
    let title = value.get("title")?.as_str()?;
    uri.starts_with("note://").then(|| Citation {
        title: title.to_string(),
        uri: uri.to_string(),
    })
}
