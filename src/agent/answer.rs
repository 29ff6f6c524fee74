//! The answer step: the model writes the answer from the sources it was given.
//!
//! The conversation is rendered *without* schemas or calls (results stay, their source headers
//! without the URIs only a call would need) and the question is asked again, last, by
//! `prompts/agent/answer.j2`; the answer streams under a grammar that cannot open a call, and a
//! model that loops is stopped. What comes back is checked before it counts: an empty answer,
//! one that adds nothing to the question, or a bare yes or no is followed by the best sources
//! quoted, so the user always gets an answer. An answer that only says the notes do not say can
//! be held back while it streams ([`super::gate::HoldBack`]), for the turn to look further first. An answer
//! that cites none of its sources goes on to the attribution step ([`super::cite`]).

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use obsidian_kb::dates::Period;

use self::known::{known_facts, made_up_reason};
use super::asks::Asks;
use super::cite::{OpeningSources, unattributed};
use super::figure::{Check, FigureLine};
use super::gate::FactGate;
use super::own_words::{OwnWords, Restating, adds_own};
use super::retrieve::names_day;

use super::{Agent, AgentError, AnswerCheck, StepRecord, step};
use crate::engine::{Cancelled, ChatModel, Completion, StopReason};

use crate::grammar::ANSWER_GBNF;
use crate::language::{Language, answer_lines, says_notes_lack_it};
use crate::markup;
use crate::prompt::{Message, Role};
use crate::sources::{Source, Sources, cited_numbers, headers_for_answer, without_copied_headers};
use crate::support::{self, Adds};
use crate::tool::ToolHost;

/// Characters of each source quoted when the model wrote no answer.
const FALLBACK_QUOTE_CHARS: usize = 300;

/// Characters of the best source the second reading shows ([`Agent::reread`]): twice what the
/// first reading showed of it (`sources`), for the answer may lie in what that left out.
const REREAD_CHARS: usize = 1600;

/// Least share of a second reading's own words that its source must hold for it to count
/// ([`support::held_share`]).
const REREAD_HELD_SHARE: f32 = 0.5;

/// What the answer instruction says after a question naming a day that no note is dated
/// within ([`Asked::undated`]).
const UNDATED: &str = "No note is dated on the day it asks about.";

/// The question the answer step answers, with what it means beyond its own words.
#[derive(Debug, Clone)]
pub(super) struct Asked<'a> {
    /// The question as the person asked it.
    pub(super) question: &'a str,
    /// What a follow-up only naming another note or day means, the question before asked of
    /// it (`follow_up::Searched::meant`): what the answer step asks.
    pub(super) instead: Option<&'a str>,
    /// The day or period a follow-up asks about by another day ("And the night before?").
    pub(super) period: Option<Period>,
    /// The day or period the question names, when no note is dated within it: a small model
    /// otherwise answers from the notes of other days ("圣诞节那天做了什么" got a list of ten
    /// things done on five other days, told that no note is of that day). The answer must
    /// then stand on a source naming the day ([`names_day`]).
    pub(super) undated: Option<Period>,
    /// Who the question points at without naming them, found by a link from the line the
    /// question describes ("The person it asks about is Elias (source 6).").
    pub(super) someone: Option<String>,
    /// The names the question gives that the vault knows, in a script without capitals
    /// ([`super::named`]), lowercase: who or what it asks about ([`Subject`]).
    pub(super) named: Vec<String>,
    /// The language the question is answered in, told once beside the sources the turn
    /// opened with ([`crate::sources::question_language`]); `None`: English.
    pub(super) language: Option<Language>,
    /// What the question asks for: a figure, a name, a kind of fact by name
    /// ([`Agent::asks`]).
    pub(super) asks: Asks,
}

impl<'a> Asked<'a> {
    /// The question the answer step asks: what a follow-up only naming another note or day
    /// means, else the question as asked.
    pub(super) fn meant(&self) -> &'a str {
        self.instead.unwrap_or(self.question)
    }

    /// What the answer instruction says of the question after asking it: the day or period a
    /// follow-up means, and who a question points at without naming them; `None` otherwise.
    /// Not the question a follow-up follows on from: told that, Qwen2.5-1.5B answered it
    /// instead ("And video?" got the image formats asked before; 16 fresh conversations,
    /// keyword written 8 → 6).
    fn context(&self) -> Option<String> {
        let said: Vec<String> = [
            self.period.map(|period| format!("It asks about {period}.")),
            self.undated.map(|_| UNDATED.to_string()),
            self.someone.clone(),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!said.is_empty()).then(|| said.join(" "))
    }
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// The answer step: the conversation without schemas or calls plus a reminder to answer
    /// from the numbered sources, generated under a grammar that cannot open a call. When the model
    /// writes nothing, the best sources are quoted instead, so the user always gets an answer;
    /// after an answer that adds nothing to the question, or only a yes or no, they are quoted
    /// too.
    /// An answer that cites no source by number (the marks of a copied list of source headers
    /// cite nothing), or opens with a claim of its own before sources copied under their
    /// headers, is followed by the attribution step.
    pub(super) fn answer(
        &mut self,
        conversation: &[Message],
        asked: &Asked,
        sources: &Sources,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Answered, AgentError> {
        let question = asked.meant();
        let language = asked.language;
        let instruction = if sources.list().is_empty() {
            None
        } else {
            Some(self.template.answer_instruction(
                question,
                language,
                asked.context().as_deref(),
                sources.list().len(),
            )?)
        };
        let mut messages = for_answer(conversation, Language::of(question));
        messages.extend(instruction.iter().map(Message::user));
        if let AnswerCheck::Gain { .. } = self.options.answer_check {
            let instruction = instruction.as_deref();
            let given = sources.list();
            return self.answer_by_gain(messages, question, language, instruction, given, on_text);
        }
        let known = known_facts(&messages, sources, asked);
        let mut gate = FactGate::new(&known, asked.asks.figure);
        if asked.asks.name || asked.undated.is_some() {
            gate = gate.withholding_all();
        }
        // What of the answer reached the user before a made-up fact closed the gate: it stays
        // part of the answer, which is what they read.
        let mut shown = String::new();
        let mut show = |text: &str| {
            shown.push_str(text);
            on_text(text)
        };
        let own_words = instruction.as_deref().map(|instruction| {
            OwnWords::new(question, asked.asks.wanted, instruction, sources.list())
        });
        let mut restating = Restating::new(own_words.as_ref());
        let completion = self.write_answer(&messages, &mut |text| {
            gate.pass(text, &mut |checked| restating.pass(checked, &mut show))
        })?;
        let made_up = gate.finish(&mut |checked| restating.pass(checked, &mut show));
        if !made_up.is_empty() {
            // Facts from nowhere: not shown as an answer. The notes do not say; the turn may
            // look further, as after any answer that says so.
            tracing::debug!("the answer states what no source holds: {made_up:?}");
            let said = made_up_reason(question, &made_up, answer_lines(language));
            return Ok(withdrawn(&shown, &said, completion, None, on_text));
        }
        // An answer about a day no note is dated on stands only on a source naming that day;
        // read first, as it costs no model call.
        if !self.on_the_day(asked, &completion.text, sources.list()) {
            tracing::debug!("the answer stands on no source naming the day asked about");
            let said = answer_lines(language).notes_lack_it;
            return Ok(withdrawn(&shown, said, completion, None, on_text));
        }
        // A figure or a name asked for, standing in the notes: shown once the line it stands
        // in is read as the answer ([`super::figure`]).
        let mut check = None;
        if gate.withheld().is_some()
            && let Some(line) =
                FigureLine::checked(question, asked.asks, &completion.text, sources.list())
        {
            let (answers, checked) = self.figure_answers(&line, asked.someone.as_deref())?;
            check = checked;
            if !answers {
                let said = answer_lines(language)
                    .not_the_answer
                    .replace("{}", &line.figure);
                return Ok(withdrawn(&shown, &said, completion, check, on_text));
            }
        }
        gate.release(&mut |checked| restating.pass(checked, &mut show));
        let mut answer = completion.text.trim().to_string();
        // "The notes do not say" (what `answer.j2` asks for when the sources lack the answer)
        // came from no source: asking which one would only invite a false citation.
        let notes_lack_it = says_notes_lack_it(&answer);
        // The answer less the source headers it copied: their words are not its own, and
        // their marks cite nothing.
        let own = without_copied_headers(&answer, sources.list());
        // An answer saying only the question and that the sources lack it is the notes not
        // saying.
        let adds = match &own_words {
            Some(own) if !notes_lack_it => own.adds(&answer),
            _ => Adds::Something,
        };
        let lines = answer_lines(language);
        let restated = adds == Adds::Nothing && restating.held_all();
        if !restated {
            restating.release(&mut show);
        }
        if restated {
            // Never shown, and no answer: the notes do not say, and the turn may look further.
            tracing::debug!("the answer only says the question again: {answer:?}");
            return Ok(withdrawn(
                "",
                lines.notes_lack_it,
                completion,
                check,
                on_text,
            ));
        }
        let lead = match adds {
            _ if answer.is_empty() => Some(lines.no_answer),
            Adds::Nothing => Some(lines.adds_nothing),
            Adds::VerdictOnly => Some(lines.bare_verdict),
            Adds::Something => None,
        };
        if let Some(lead) = lead {
            let gap = if answer.is_empty() { "" } else { "\n\n" };
            // Chinese and Japanese sentences follow one another without a space.
            let unspaced = matches!(language, Some(Language::Chinese | Language::Japanese));
            let space = if unspaced { "" } else { " " };
            let quoted = format!("{lead}{space}{}", quote_sources(sources, language));
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
                check,
                ground: None,
            });
        }
        let given = sources.list().len();
        let (attribution, opening_from) =
            match unattributed(&answer, &own, given, notes_lack_it, instruction.as_deref()) {
                Some(end) => self.attribute_answer(messages, &mut answer, end, given, on_text)?,
                None => (None, None),
            };
        Ok(Answered {
            text: answer,
            quote_at: None,
            completion,
            attribution,
            opening_from,
            notes_lack_it,
            check,
            ground: None,
        })
    }

    /// The second reading, after an answer that the notes do not say: the best source (the
    /// opening search's first hit) shown alone and whole ([`Sources::show_whole`]), asked
    /// about under the answer step's instruction for one source.
    /// A small model often says a source lacks what it holds when it reads it among others,
    /// or cut.
    /// Alone, the same model makes up an answer from a passage that does not hold one, so the
    /// answer counts only when most of its own words come from the source
    /// ([`REREAD_HELD_SHARE`]); nothing is streamed until it does.
    pub(super) fn reread(
        &mut self,
        conversation: &[Message],
        asked: &Asked,
        sources: &mut Sources,
    ) -> Result<Reading, AgentError> {
        let (question, context) = (asked.meant(), asked.context());
        // The conversation up to this turn's question: its calls and results make way for
        // the one source.
        let upto = conversation
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(conversation.len(), |at| at + 1);
        let mut messages = for_answer(&conversation[..upto], Language::of(question));
        messages.push(Message::ipython(sources.show_whole(1, REREAD_CHARS)));
        let instruction =
            self.template
                .answer_instruction(question, asked.language, context.as_deref(), 1)?;
        messages.push(Message::user(&instruction));
        let completion = self.write_answer(&messages, &mut |_| ControlFlow::Continue(()))?;
        let answer = completion.text.trim();
        if let AnswerCheck::Gain { .. } = self.options.answer_check {
            if answer.is_empty() || says_notes_lack_it(answer) {
                return Ok(Reading::Nothing(completion));
            }
            let gained = self.gain(&messages, question, answer)?;
            if !gained.holds() {
                return Ok(Reading::Nothing(completion));
            }
            return Ok(Reading::Found(Box::new(Answered {
                text: answer.to_string(),
                quote_at: None,
                opening_from: from_first_source(answer, answer.len()),
                completion,
                attribution: None,
                notes_lack_it: false,
                check: None,
                ground: gained.step(),
            })));
        }
        let own = without_copied_headers(answer, &sources.list()[..1]);
        let share = support::held_share(&instruction, &own, &sources.list()[0].text);
        tracing::debug!("second reading: {answer:?}, {share:.2} of its words from the source");
        let made_up = known_facts(&messages, sources, asked).unsupported(&own, true);
        let counts = !answer.is_empty()
            && !says_notes_lack_it(answer)
            && adds_own(
                question,
                asked.asks.wanted,
                &instruction,
                answer,
                &sources.list()[..1],
            ) == Adds::Something
            && share >= REREAD_HELD_SHARE
            && made_up.is_empty();
        if !counts {
            return Ok(Reading::Nothing(completion));
        }
        if !self.on_the_day(asked, answer, &sources.list()[..1]) {
            return Ok(Reading::Nothing(completion));
        }
        // A figure or a name from the one source must answer the question too
        // ([`super::figure`]).
        let mut check = None;
        if let Some(line) = FigureLine::checked(question, asked.asks, answer, &sources.list()[..1])
        {
            let (answers, checked) = self.figure_answers(&line, asked.someone.as_deref())?;
            if !answers {
                return Ok(Reading::Nothing(completion));
            }
            check = checked;
        }
        let opening_from = from_first_source(&own, answer.len());
        Ok(Reading::Found(Box::new(Answered {
            text: answer.to_string(),
            quote_at: None,
            completion,
            attribution: None,
            opening_from,
            notes_lack_it: false,
            check,
            ground: None,
        })))
    }

    /// Whether `answer` may stand as one to a question about days no note is dated on
    /// ([`Asked::undated`]): when it says the notes lack it, or a source it cites (any, when
    /// it cites none) names one of those days. Always, for any other question.
    fn on_the_day(&self, asked: &Asked, answer: &str, sources: &[Source]) -> bool {
        let Some(days) = asked.undated else {
            return true;
        };
        let cited = cited_numbers(answer);
        says_notes_lack_it(answer)
            || sources
                .iter()
                .filter(|s| cited.is_empty() || cited.contains(&s.number))
                .any(|s| {
                    let text = format!("{}\n{}", s.text, s.passage);
                    names_day(&text, days, self.options.today)
                })
    }

    /// Generates the answer to `messages` (rendered by the answer template), streamed to
    /// `on_text`, under a grammar that cannot open a call; a model that loops is stopped.
    pub(super) fn write_answer(
        &mut self,
        messages: &[Message],
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion, AgentError> {
        let (prompt, request) = self.constrained(
            "answer",
            messages,
            self.options.answer_tokens,
            ANSWER_GBNF.to_string(),
        )?;
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
        Ok(completion)
    }
}

/// An answer withdrawn after `shown` reached the user: `said` (that the notes do not say,
/// and why) follows what they read, and the turn may look further.
pub(super) fn withdrawn(
    shown: &str,
    said: &str,
    completion: Completion,
    check: Option<Check>,
    on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
) -> Answered {
    let gap = if shown.trim().is_empty() { "" } else { "\n\n" };
    let _ = on_text(&format!("{gap}{said}"));
    Answered {
        text: format!("{}{gap}{said}", shown.trim_start()),
        quote_at: None,
        completion,
        attribution: None,
        opening_from: None,
        notes_lack_it: true,
        check,
        ground: None,
    }
}

/// A second reading's attribution up to `end`: it came from source 1, whether or not it says
/// so; `None` when `own` (its words) cites a source itself.
fn from_first_source(own: &str, end: usize) -> Option<OpeningSources> {
    cited_numbers(own)
        .is_empty()
        .then(|| (end, BTreeSet::from([1])))
}

/// What the answer step produced.
pub(super) struct Answered {
    /// The answer as the user saw it (with the attribution's numbers, if it ran for the
    /// whole answer).
    pub(super) text: String,
    /// Where the best sources are quoted in `text`, when the model wrote no answer, or one
    /// that adds nothing of its own or only a yes or no ([`support::adds`]); its citations are
    /// the quote's.
    pub(super) quote_at: Option<usize>,
    /// The answer's generation.
    pub(super) completion: Completion,
    /// The attribution step's generation, when it ran and named sources.
    pub(super) attribution: Option<Completion>,
    /// The sources the attribution step named for the answer's opening, up to where in
    /// `text` that opening ends (when it did not run for the whole answer).
    pub(super) opening_from: Option<OpeningSources>,
    /// True when the answer is that the notes do not say ([`says_notes_lack_it`]).
    pub(super) notes_lack_it: bool,
    /// The check of the line the answer's figure stands in, when it ran ([`super::figure`]).
    pub(super) check: Option<Check>,
    /// The gain check's record, when it ran ([`super::grounded`]).
    pub(super) ground: Option<StepRecord>,
}

impl Answered {
    /// The steps that wrote this answer: the answer, and the figure check when it ran.
    pub(super) fn steps(&self) -> Vec<StepRecord> {
        let mut steps = vec![step("answer", &self.completion, Vec::new())];
        steps.extend(self.check.iter().map(Check::step));
        steps.extend(self.ground.iter().cloned());
        steps
    }
}

/// What a second reading ([`Agent::reread`]) came to.
pub(super) enum Reading {
    /// An answer from the source, to show instead of "the notes do not say".
    Found(Box<Answered>),
    /// No answer that counts; the reading's generation, for the turn's record.
    Nothing(Completion),
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
/// them go, and the source headers lose their URIs ([`headers_for_answer`]).
/// Small models copy the last call into their answer; the results say it all, and the answer
/// calls no tool.
/// Days in them are spelled out in `language`, the question's.
fn for_answer(conversation: &[Message], language: Option<Language>) -> Vec<Message> {
    conversation
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            let next = conversation.get(i + 1).map(|n| n.role);
            !(m.role == Role::Assistant && next == Some(Role::Ipython))
        })
        .map(|(_, m)| match m.role {
            Role::Ipython => Message::ipython(headers_for_answer(&m.content, language)),
            _ => m.clone(),
        })
        .collect()
}

/// What the user gets when the model wrote no answer of its own: the best sources, quoted and
/// numbered.
pub(super) fn quote_sources(sources: &Sources, language: Option<Language>) -> String {
    let lines = answer_lines(language);
    if sources.list().is_empty() {
        return lines.no_note.to_string();
    }
    let mut text = String::from(lines.most_relevant);
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

mod known;

#[cfg(test)]
mod tests {
    use super::*;

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
        // The sentence each language's instruction asks for, and a fact before it.
        assert!(says_notes_lack_it("笔记中没有说明。"));
        assert!(says_notes_lack_it("ノートには書かれていません。"));
        assert!(!says_notes_lack_it(
            "快照保留七天 [1]。笔记中没有说明如何修改。"
        ));
    }
}
