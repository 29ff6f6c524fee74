//! The agent loop: retrieve → answer, or (when that answer is that the notes do not say)
//! retrieve → answer, then retrieve → decide → call → decide … → answer.
//!
//! With a vault server, a question starts with a search for the question as asked: its passages
//! become numbered sources before the model writes anything, so even a small model answers
//! from the notes, and it answers from them at once. Only an answer that the notes do not say
//! is held back from the user: then the agent adds further passages of the leading notes (a
//! 1.5B model told to look further only repeats the opening search) and the model answers
//! again from them; only an answer that still says so lets the model decide whether to look
//! further still, and only when another server's tools could bring what the vault did not
//! (measured with a 1.5B model: a decision step before every answer took 47% of the time and
//! found no gold note that the opening search had not; one after the wider search changed no
//! answer). An answer that says so after all that gets a second reading of the best source
//! alone ([`settle`](Agent::settle)). Without a vault server, or with `answer_first` off,
//! decisions come first.
//! Citations are the sources the answer names by number, never notes the model merely mentions.
//!
//! This module owns the turn: its order of steps, its options and records. Each step is a
//! module of its own, in the order data flows through a turn:
//! - [`follow_up`]: what a question means given the conversation: its search, its day;
//! - [`retrieve`]: the searches the agent makes itself (the opening one, the wider one);
//! - [`pointed`]: the notes linked from the line a question describes, when it points at
//!   someone it does not name;
//! - [`decide`]: decision steps, generated under the tool grammar;
//! - [`calls`]: calls checked, approved and run, their results rendered for the model;
//! - [`answer`]: the answer step, with the hold-back of "the notes do not say", the second
//!   reading, and the quote that stands in for an answer that says nothing;
//! - [`figure`]: the check that the line an answer's figure stands in says it of what the
//!   question ([`asks`] for, of its [`subject`]) asks about;
//! - [`cite`]: the attribution step, for an answer that names none of its sources.
//!
//! The turn ends here ([`finish`]): the answer kept in the conversation, its citations read.
//!
//! **Architecture invariant:** the agent is the one module that knows every stage; it talks to
//! the model only through [`ChatModel`] and to tools only through [`ToolHost`].

mod answer;
mod asks;
mod calls;
mod cite;
mod decide;
mod figure;
mod follow_up;
mod gate;
mod grounded;
mod named;
mod own_words;
mod pointed;
mod question_kind;
mod retrieve;
mod side_step;
mod subject;

use std::ops::ControlFlow;
use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;

use crate::engine::{
    CancellationToken, Cancelled, ChatModel, Completion, EngineError, GenerateRequest,
    GenerationStats, Sampling,
};
use crate::language::{Language, answer_lines};
use crate::lists;
use crate::prompt::{ChatTemplate, Message, PromptError};
use crate::sources::{Citation, Claim, Sources, question_language};
use crate::tool::ToolHost;
use crate::vault::VaultTools;

use answer::{Answered, Asked, Reading, quote_sources};
use asks::Asks;
pub use calls::{ApproveAll, Approver, RefuseAll};
use gate::HoldBack;
pub use grounded::AnswerCheck;
pub use question_kind::{KIND_SYSTEM, KIND_WORDS, QuestionKind};

/// The agent's standing instructions (the system message).
pub const SYSTEM_PROMPT: &str = include_str!("../../prompts/agent/system.txt");

/// Tokens kept free for a decision reply.
const DECISION_TOKENS: usize = 256;
/// Tokens an answer may take unless `--max-tokens` says otherwise. Asked for at most three
/// sentences, Qwen2.5-1.5B wrote a median of 66 tokens on the 103 help questions (p90 130);
/// the 2 over 256 reprinted the list of sources.
pub const ANSWER_TOKENS: usize = 256;

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
    /// is that the notes do not say and another server than the vault's offers tools. Off: a
    /// decision step before every answer.
    pub answer_first: bool,
    /// Sampling for both steps.
    pub sampling: Sampling,
    /// Cancelled (by Ctrl-C) to stop the turn wherever it is: the prompt being read, the
    /// reply or answer being written, or the tool calls running. The turn then ends with
    /// [`AgentError::Cancelled`], also when part of the answer was already streamed.
    pub cancel: CancellationToken,
    /// The day relative dates in a question count from.
    pub today: NaiveDate,
    /// How an answer the sources hold is told from one the model made up.
    pub answer_check: AnswerCheck,
    /// How what a question asks for (a figure, a name, an address) is read.
    pub question_kind: QuestionKind,
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
            today: obsidian_kb::dates::today(),
            answer_check: AnswerCheck::Rules,
            question_kind: QuestionKind::Words,
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
    /// `retrieve`, `decision`, `answer`, `check` (the line an answer's figure stands in read
    /// against it, [`figure`]), `reread` (a second reading that found no answer,
    /// [`Agent::reread`]) or `attribute`.
    pub kind: &'static str,
    /// What a `check` read beside its standing instruction; empty for other steps.
    pub input: String,
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

/// What a turn has gathered so far: its numbered sources, the steps it ran, and the calls it
/// made (by signature, so that a call is not made twice).
struct Gathered {
    sources: Sources,
    steps: Vec<StepRecord>,
    signatures: Vec<String>,
    /// Who the question points at without naming them, and the source of their note, told
    /// after the question ("The person it asks about is Elias (source 6).").
    someone: Option<String>,
    /// The source of a note found through a link, and the source whose line links it
    /// ([`pointed`]): an answer citing the first cites the second too.
    found_through: Vec<(usize, usize)>,
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
        let mut gathered = Gathered {
            sources: Sources::for_question(question),
            steps: Vec::new(),
            signatures: Vec::new(),
            someone: None,
            found_through: Vec::new(),
        };

        // What the turn searches for: the question, or a follow-up with the one it leans on,
        // within the day or period it names.
        let searched = self.searched_for(question, conversation);
        let query = searched.meant.as_deref().unwrap_or(&searched.query);
        let days =
            follow_up::period_asked(question, &searched.query, conversation, self.options.today);
        let opened = match &vault {
            Some(vault) => self.open(vault, query, days, &tools, conversation, &mut gathered)?,
            None => retrieve::Opened {
                ran: false,
                period: days.map(|days| days.period),
                undated: None,
            },
        };
        let retrieved = opened.ran;
        // A follow-up naming a day by another ("And the night before?") is answered about
        // that day only when told which it is.
        let mut asked = Asked {
            question,
            instead: searched.meant.as_deref(),
            period: opened.period.filter(|_| searched.leans),
            undated: opened.undated,
            someone: gathered.someone.clone(),
            named: self.names_in_vault(question),
            language: None,
            asks: Asks::default(),
        };
        asked.language = question_language(asked.meant(), gathered.sources.list());
        asked.asks = self.asks(asked.meant())?;
        let asked = &asked;

        // Answer first: the passages usually hold the answer, and a decision step costs a
        // prompt with every schema in it. Only "the notes do not say" is held back from the
        // user, to let the model look further first.
        let mut held = None;
        if retrieved && self.options.answer_first {
            let (answered, shown) =
                self.answer_held(conversation, asked, &gathered.sources, on_text)?;
            if !(answered.notes_lack_it && shown.holding()) {
                return Ok(finish(conversation, asked, gathered, answered, on_text));
            }
            held = Some((answered, shown, gathered.steps.len()));
        }
        let mut looked_at = conversation.len();
        if let (Some(vault), Some(_)) = (&vault, &held)
            && !gathered.sources.list().is_empty()
        {
            self.retrieve(
                vault,
                &retrieve::wider(query),
                &tools,
                conversation,
                &mut gathered,
            )?;
            // The wider passages are read before any decision: what the held answer missed
            // is most often further on in the same notes, and a decision step reads every
            // schema (Qwen2.5-1.5B, 2 threads: ~12 s of its ~25, only to repeat the search).
            if conversation.len() > looked_at
                && let Some((first, _, at)) = held.take()
            {
                gathered.steps.splice(at..at, first.steps());
                let (answered, shown) =
                    self.answer_held(conversation, asked, &gathered.sources, on_text)?;
                if !(answered.notes_lack_it && shown.holding()) {
                    return Ok(finish(conversation, asked, gathered, answered, on_text));
                }
                held = Some((answered, shown, gathered.steps.len()));
                looked_at = conversation.len();
            }
        }

        // After the opening and the wider search, a decision among the vault's own tools only
        // searches it again (docs/benches.md: none of 37 personal questions answered otherwise,
        // twice the time where the notes cannot answer): it runs for another server's tools.
        let may_decide = !(retrieved && self.options.answer_first)
            || vault
                .as_ref()
                .is_some_and(|v| v.others_offered(self.host, &tools));
        if may_decide {
            // Without an opening search, the first decision must call a tool (`tool_first`).
            let must_call = self.options.tool_first && !retrieved;
            self.decide(
                conversation,
                &tools,
                vault.as_ref(),
                must_call,
                &mut gathered,
            )?;
        }

        let (answered, shown) = match held {
            // Nothing new was read: the held answer stands (the same prompt would write it
            // again).
            Some((answered, shown, _)) if conversation.len() == looked_at => (answered, shown),
            held => {
                // The held answer is replaced; its step stays where it ran.
                if let Some((first, _, at)) = held {
                    gathered.steps.splice(at..at, first.steps());
                }
                self.answer_held(conversation, asked, &gathered.sources, on_text)?
            }
        };
        let answered = self.settle(conversation, asked, &mut gathered, answered, shown, on_text)?;
        Ok(finish(conversation, asked, gathered, answered, on_text))
    }

    /// The answer step streamed through a [`HoldBack`]: an answer that may still be only "the
    /// notes do not say" reaches nobody yet.
    fn answer_held(
        &mut self,
        conversation: &[Message],
        asked: &Asked,
        sources: &Sources,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<(Answered, HoldBack), AgentError> {
        let mut shown = HoldBack::default();
        let answered = self.answer(conversation, asked, sources, &mut |text| {
            shown.pass(text, on_text)
        })?;
        Ok((answered, shown))
    }

    /// The last answer of a turn, shown: one that the notes do not say, still held back, is
    /// replaced by a second reading of the best source when that finds the answer
    /// ([`Agent::reread`]). The reading's step is recorded either way: a replaced answer's
    /// step before the new answer's, a second reading that found nothing before the answer it
    /// kept (the person waited for both).
    fn settle(
        &mut self,
        conversation: &[Message],
        asked: &Asked,
        gathered: &mut Gathered,
        answered: Answered,
        mut shown: HoldBack,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Answered, AgentError> {
        if !(answered.notes_lack_it && shown.holding()) || gathered.sources.list().is_empty() {
            let _ = shown.release(on_text);
            return Ok(answered);
        }
        match self.reread(conversation, asked, &mut gathered.sources)? {
            Reading::Found(found) => {
                gathered.steps.extend(answered.steps());
                let _ = on_text(&found.text);
                Ok(*found)
            }
            Reading::Nothing(reading) => {
                gathered.steps.push(step("reread", &reading, Vec::new()));
                let _ = shown.release(on_text);
                Ok(answered)
            }
        }
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
}

fn step(kind: &'static str, completion: &Completion, calls: Vec<CallRecord>) -> StepRecord {
    StepRecord {
        kind,
        input: String::new(),
        output: completion.text.clone(),
        calls,
        stats: completion.stats.clone(),
    }
}

/// After an answer that names some items of a list in a source it cites, the items it left
/// out of the list it names most of, as the note writes them ([`crate::lists`]); empty when
/// there are none.
fn rest_of_list(
    answer: &str,
    sources: &Sources,
    citations: &[Citation],
    language: Option<Language>,
) -> String {
    // The list the answer names most items of, among the sources it cites (the first of a
    // tie): an answer drawing on several lists is about the one it names most of.
    let mut best: Option<(usize, lists::NamedList)> = None;
    for citation in citations.iter().filter(|c| c.cited) {
        let Some(source) = sources.list().iter().find(|s| s.number == citation.number) else {
            continue;
        };
        if let Some(list) = lists::named_list(answer, &source.passage)
            && best.as_ref().is_none_or(|(_, b)| list.named > b.named)
        {
            best = Some((citation.number, list));
        }
    }
    let Some((number, list)) = best.filter(|(_, list)| !list.left_out.is_empty()) else {
        return String::new();
    };
    let rest = list.left_out;
    let lead = answer_lines(language)
        .rest_of_list
        .replace("{}", &format!("[{number}]"));
    let items: Vec<String> = rest.iter().map(|item| format!("- {item}")).collect();
    format!("\n\n{lead}\n{}", items.join("\n"))
}

/// The turn after its answer: the answer's steps recorded, the answer kept in the
/// conversation, citations read from it. An answer that the notes do not say is followed by
/// the passages the search found closest, quoted (the model may have missed the answer in
/// them, and the reader sees where it looked); they stay uncited, since the answer came from
/// none of them.
fn finish(
    conversation: &mut Vec<Message>,
    asked: &Asked,
    gathered: Gathered,
    answered: Answered,
    on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
) -> Turn {
    let (question, language) = (asked.question, asked.language);
    let Answered {
        text: mut answer,
        mut quote_at,
        completion,
        attribution,
        opening_from,
        notes_lack_it,
        check,
        ground,
    } = answered;
    let Gathered {
        sources,
        mut steps,
        found_through,
        ..
    } = gathered;
    if notes_lack_it && quote_at.is_none() && !sources.list().is_empty() {
        let quoted = format!("\n\n{}", quote_sources(&sources, language));
        let _ = on_text(&quoted);
        quote_at = Some(answer.len() + 2);
        answer.push_str(&quoted);
    }
    steps.push(step("answer", &completion, Vec::new()));
    steps.extend(check.iter().map(figure::Check::step));
    steps.extend(ground);
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
        let mut citations = sources.citations(question, &answer[quote_at.unwrap_or(0)..], opening);
        sources.cite_through(&mut citations, &found_through);
        citations
    };
    let rest = match notes_lack_it || quote_at.is_some() {
        true => String::new(),
        false => rest_of_list(&answer, &sources, &citations, language),
    };
    if !rest.is_empty() {
        let _ = on_text(&rest);
        answer.push_str(&rest);
        if let Some(said) = conversation.last_mut() {
            said.content.clone_from(&answer);
        }
    }
    Turn {
        citations,
        answer,
        fallback: quote_at.is_some(),
        steps,
    }
}
