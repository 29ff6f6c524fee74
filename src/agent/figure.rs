//! The second look at a figure: an answer to a question that asks for a figure (a date, an
//! amount, a count, a phone number) gives one that stands in a source, but the line it
//! stands in may be about something else. The fact check ([`crate::facts`]) lets such a
//! figure through; here the model reads the line it came from (after the line before it),
//! beside the answer's sentence that gives it, and says whether the line says that
//! ([`FigureLine`], `prompts/agent/check_system.txt`, `check.j2`).
//!
//! Asked what a personal vault cannot answer, Qwen2.5-1.5B took the nearest figure (20
//! questions of the frozen personal set, five answered so): asked what a plumber charged for
//! a repair, it gave "€14,750", a builder's quote for the kitchen; asked a dentist's phone
//! number, the landlord's; asked a train fare, the palace tickets' €20; asked a friend's
//! birthday, the day of a Valentine's dinner with that friend.
//! Words shared by question and line do not tell these from right answers (a line holding
//! the figure shares a word with the question in all but one of them); reading does.
//!
//! A name asked for (who, where, what brand) is read the same way ([`FigureLine::find_name`]):
//! the answer's name and the line it stands in.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use obsidian_kb::search::{Tokenizer, is_cjk};
use regex::Regex;

use self::claim::{claim_about, find_whole, sentence_with, whole_figure};
use self::records::another_record_is_asked;
use super::asks::{Asks, FigureKind};
use super::side_step::SideStep;
use super::{Agent, AgentError, StepRecord, step};
use crate::engine::{ChatModel, Chosen, Completion};
use crate::facts::{KnownFacts, names_in, without_marks};
use crate::grammar::VERDICT_GBNF;
use crate::prompt::Message;
use crate::sources::{Source, cited_numbers};
use crate::tool::ToolHost;

/// The check's standing instruction: the same for every answer, so the prompt cache keeps it.
const CHECK_SYSTEM: &str = include_str!("../../prompts/agent/check_system.txt");

/// Tokens the verdict may take: one word.
const VERDICT_TOKENS: usize = 4;

/// The odds of "yes" the check must give for the line to say what the answer does.
const CHECK_YES_ODDS: f32 = 0.5;

/// A check that ran: what it read after its standing instruction (the lines, where they
/// stand and the answer's sentence), and its verdict.
#[derive(Debug, Clone)]
pub(super) struct Check {
    pub(super) read: String,
    pub(super) completion: Completion,
}

impl Check {
    /// The check as a step of the turn, with what it read.
    pub(super) fn step(&self) -> StepRecord {
        StepRecord {
            input: self.read.clone(),
            ..step("check", &self.completion, Vec::new())
        }
    }
}

/// The figure an answer gives and the line of a source it stands in: what the check reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FigureLine {
    /// The figure as the answer writes it, whole: `€14,750`, `+31 6 4182 7730`.
    pub(super) figure: String,
    /// The source's label, and the heading above the line within the passage, if any.
    pub(super) place: String,
    /// The line before it in its section, if any (empty: none).
    pub(super) before: String,
    /// The line, its markup as written.
    pub(super) line: String,
    /// The sentence of the answer that gives the figure, citation marks out.
    pub(super) claim: String,
    /// Why the answer is no answer whatever the line says, when that is plain without a model
    /// call.
    pub(super) no_answer: Option<NoAnswer>,
    /// Whether what is checked is a name, not a figure: never read by the model (on the frozen
    /// Chinese set it refused right answers, "10月28号我在哪", more than it caught made-up
    /// names).
    pub(super) is_name: bool,
    /// What says what the line is about beyond its place, read with it for a name
    /// ([`names_what_is_asked`]): the opening line of its passage when no list item
    /// ("我妈。" opening a person's note) and the line before it (shown to the model or
    /// not) unless that is another item of the same list or table.
    pub(super) about: String,
}

/// Why an answer is no answer to the question, whatever the line it stands in says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoAnswer {
    /// The name given stands in a line that names nothing the question asks about
    /// ([`names_what_is_asked`]).
    NothingAsked,
    /// The figure or name given stands in an item of a list or table, and another item of it
    /// is the one the question asks about ([`another_record_is_asked`]).
    OtherItem,
}

impl FigureLine {
    /// The line to read an answer to `question` against, when it asks for a figure
    /// ([`FigureLine::find`]) or a name ([`FigureLine::find_name`]); `None` for any other
    /// question.
    pub(super) fn checked(
        question: &str,
        asks: Asks,
        answer: &str,
        sources: &[Source],
    ) -> Option<FigureLine> {
        if asks.figure {
            FigureLine::find(question, asks.figure_kind, answer, sources)
        } else if asks.name {
            FigureLine::find_name(question, answer, sources)
        } else {
            None
        }
    }

    /// The first figure `answer` gives that `question` does not (a date the question names is
    /// no answer to it), of the `kind` asked for where it says, and the line of `sources` it
    /// stands in. Of several such lines, the
    /// one in a source the answer cites, then the one holding the figure itself (not only
    /// through its note's title, as a daily note's day), then the one sharing most search
    /// terms with the question. `None` when the answer gives no figure, or none stands in a
    /// line (it came from the conversation, or several lines together).
    pub(super) fn find(
        question: &str,
        kind: Option<FigureKind>,
        answer: &str,
        sources: &[Source],
    ) -> Option<FigureLine> {
        let cited = cited_numbers(answer);
        let answer = without_marks(answer);
        let asked = KnownFacts::new([question]);
        let mut figures: Vec<(usize, String)> = KnownFacts::new([])
            .unsupported(&answer, true)
            .into_iter()
            .filter(|fact| fact.chars().any(|c| c.is_ascii_digit()))
            .filter(|fact| !asked.unsupported(fact, false).is_empty())
            .map(|fact| {
                let at = find_whole(&answer, &fact).or_else(|| answer.find(fact.as_str()));
                (at.unwrap_or(answer.len()), fact)
            })
            .collect();
        figures.sort_by_key(|(at, _)| *at);
        let figure = figures
            .iter()
            .find(|(at, fact)| Some(FigureKind::of(fact, &answer[*at..])) == kind)
            .or(figures.first())
            .map(|(_, fact)| fact.clone())?;
        let holds = |texts: &[&str]| {
            KnownFacts::new(texts.iter().copied())
                .unsupported(&figure, false)
                .is_empty()
        };
        let found = best_line(question, &cited, sources, |label, heading, line| {
            holds(&[label, heading, line]).then(|| holds(&[line]))
        })?;
        let claim = claim_about(question, &answer, &figure);
        let no_answer = if another_record_is_asked(question, &found.line, sources) {
            Some(NoAnswer::OtherItem)
        } else {
            None
        };
        Some(FigureLine {
            no_answer,
            ..found.with(whole_figure(&answer, &figure), claim)
        })
    }

    /// The name `answer` gives to a question asking for one ([`Asks::name`]) that the
    /// question does not, and the line of `sources` it stands in, ranked as for a figure:
    /// "厨房水槽是欧派的" took the brand of the cabinets' line. The name is the first that
    /// a line holds, of the words written with a capital (`crate::facts::names_in`) and,
    /// longest first, the runs of Chinese, Japanese or Korean script, which no capital marks;
    /// of those, the first not from another record than the one asked about, if any.
    /// `None` when the answer names nothing a line holds.
    pub(super) fn find_name(
        question: &str,
        answer: &str,
        sources: &[Source],
    ) -> Option<FigureLine> {
        let cited = cited_numbers(answer);
        let answer = without_marks(answer);
        let question_lower = question.to_lowercase();
        let mut names: Vec<String> = names_in(&answer)
            .into_iter()
            .map(str::to_lowercase)
            .filter(|name| !question_lower.contains(name.as_str()))
            .collect();
        names.extend(cjk_runs(&answer, question));
        let lines: Vec<String> = sources
            .iter()
            .flat_map(|s| s.passage.lines())
            .map(str::to_lowercase)
            .collect();
        // Each name a line holds, with that line. A name from another record than the one
        // asked about ([`NoAnswer::OtherItem`]) gives way to the next: an answer giving one
        // record for each of several ("For macOS, it's `/Users/…`, … for Linux,
        // `~/.config/obsidian/`") is read on the record asked for. Any other name is checked
        // as the answer's; when every one is another record's, the first.
        let mut checked: Option<FigureLine> = None;
        for name in names {
            if !lines.iter().any(|line| line.contains(name.as_str())) {
                continue;
            }
            // A name no line of a section holds (only a heading does) ends the search, as
            // when it was the only name read.
            let Some(found) = best_line(question, &cited, sources, |_, _, line| {
                line.to_lowercase().contains(&name).then_some(true)
            }) else {
                return checked;
            };
            let Some(at) = answer.to_lowercase().find(&name) else {
                return checked;
            };
            let written = answer.get(at..at + name.len()).unwrap_or(&name).to_string();
            let claim = sentence_with(&answer, &written);
            let no_answer = if !names_what_is_asked(question, &found) {
                Some(NoAnswer::NothingAsked)
            } else if another_record_is_asked(question, &found.line, sources) {
                Some(NoAnswer::OtherItem)
            } else {
                None
            };
            let line = FigureLine {
                no_answer,
                is_name: true,
                ..found.with(written, claim)
            };
            if line.no_answer != Some(NoAnswer::OtherItem) {
                return Some(line);
            }
            checked.get_or_insert(line);
        }
        checked
    }

    /// This line, checked for `figure` as the answer's `claim` gives it.
    fn with(self, figure: String, claim: String) -> FigureLine {
        FigureLine {
            figure,
            claim,
            ..self
        }
    }

    /// What the check shows of the note: the line, after the line before it.
    fn shown(&self) -> String {
        match self.before.as_str() {
            "" => self.line.clone(),
            before => format!("{before}\n{}", self.line),
        }
    }
}

/// The line of `sources` that `holds` the checked fact, best first: in a source the answer
/// cites (`cited`: its citation marks, read before they are taken out of its text), then
/// holding it in the line itself (`holds` says `Some(true)`; `Some(false)`: through its
/// note's title or heading), then sharing most search terms with `question`; the first of a
/// tie. Its figure and claim are left to the caller.
fn best_line(
    question: &str,
    cited: &BTreeSet<usize>,
    sources: &[Source],
    holds: impl Fn(&str, &str, &str) -> Option<bool>,
) -> Option<FigureLine> {
    let mut tokenizer = Tokenizer::default();
    let terms: BTreeSet<String> = tokenizer.query_terms(question).into_iter().collect();
    let mut best: Option<((bool, bool, usize), FigureLine)> = None;
    for source in sources {
        let label = source.label();
        // A passage opening with a line of its own says what it is about; one opening with
        // a list's first item does not.
        let opening = source
            .passage
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))
            .filter(|line| item_indent(line).is_none())
            .unwrap_or("");
        let mut heading = "";
        // The line before, within the section: what a `paid:: 99$` line is paid for
        // (`bought:: jacket`). A table's row is read under the table's header, which says
        // what its cells are, not under the row before, another thing of the same kind.
        let mut before = "";
        let mut header = "";
        let mut before_written = "";
        for line in source.passage.lines() {
            let trimmed = line.trim();
            if let Some(title) = trimmed.strip_prefix('#') {
                heading = title.trim_start_matches('#').trim();
                before = "";
                before_written = "";
                continue;
            }
            if trimmed.is_empty() {
                continue;
            }
            let row = trimmed.starts_with('|');
            if row && !before.starts_with('|') {
                header = trimmed;
            }
            let lead = match std::mem::replace(&mut before_written, line) {
                written if items_of_one_list(written, line) => "",
                written => written.trim(),
            };
            let above = match std::mem::replace(&mut before, trimmed) {
                _ if row && header != trimmed => header,
                _ if !row && says_enough(trimmed) => "",
                above => above,
            };
            let Some(itself) = holds(&label, heading, trimmed) else {
                continue;
            };
            let shared = tokenizer
                .query_terms(&format!("{heading} {above} {trimmed}"))
                .iter()
                .filter(|term| terms.contains(*term))
                .count();
            let rank = (cited.contains(&source.number), itself, shared);
            if best.as_ref().is_none_or(|(b, _)| rank > *b) {
                let place = match heading {
                    "" => label.clone(),
                    _ => format!("{label} › {heading}"),
                };
                let line = FigureLine {
                    figure: String::new(),
                    place,
                    before: above.to_string(),
                    line: trimmed.to_string(),
                    claim: String::new(),
                    no_answer: None,
                    is_name: false,
                    about: format!("{opening}\n{lead}"),
                };
                best = Some((rank, line));
            }
        }
    }
    best.map(|(_, line)| line)
}

/// Whether `before` and `line` are items of one list (markers at the same indent) or rows of
/// one table: each a thing of its own, neither saying what the other is about.
fn items_of_one_list(before: &str, line: &str) -> bool {
    item_indent(before).is_some_and(|indent| item_indent(line) == Some(indent))
}

/// The indent of `line` when it is an item of a list or a table's row.
fn item_indent(line: &str) -> Option<&str> {
    static ITEM: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(\s*)(?:[-*+]|\d+[.)]|\|)\s").expect("valid regex"));
    ITEM.captures(line)
        .and_then(|item| item.get(1))
        .map(|indent| indent.as_str())
}

/// Words a line must hold of its own to be read without the line before it: a word of two
/// letters or more, or two characters of Chinese, Japanese or Korean script.
const LINE_OWN_WORDS: usize = 4;

/// Whether `line` says what it is about in words of its own ([`LINE_OWN_WORDS`]): then the
/// line before it, as often another item of its list as what it is about, is not shown.
/// "- collected the turkey from Mannion's butchers — €78" under "She brought her own ham"
/// was read as the ham's price; `paid:: 99$` still needs its `bought:: jacket`.
fn says_enough(line: &str) -> bool {
    let (mut words, mut cjk, mut letters) = (0, 0, 0);
    for c in line.chars().chain([' ']) {
        if c.is_alphabetic() && !is_cjk(c) {
            letters += 1;
            continue;
        }
        if letters >= 2 {
            words += 1;
        }
        letters = 0;
        if is_cjk(c) {
            cjk += 1;
        }
    }
    2 * words + cjk >= 2 * LINE_OWN_WORDS
}

/// Words that ask for a name or say its kind ("which brand", "the name of the shop", 什么牌子),
/// not what a question asks it of.
const NAME_ASKING_WORDS: &str = "who whom whose where which what name names named called \
    brand make model variety 谁 叫 什么 名字 牌子 哪家 哪位 哪里 哪儿 在哪 哪个 地方";

/// Whether the line a name stands in (under its note's label and heading, after the line
/// before it and its passage's opening line: [`FigureLine::about`]) shares a search term
/// with `question` other than the words asking for a name ([`NAME_ASKING_WORDS`]), or the
/// question has none. Asked what no note gives, Qwen2.5-1.5B
/// named what the nearest line held: asked the name of a specialist, it gave a name from a
/// line about a girlfriend; asked which variety of a crop was sown, another crop's row; asked
/// an editor's name (出版社编辑叫什么名字), a running friend. A right name stands where the
/// thing asked about is named ("who insures the van?": the note `Van`, "- **Insurance**:
/// Atlantic Direct").
fn names_what_is_asked(question: &str, line: &FigureLine) -> bool {
    let mut tokenizer = Tokenizer::default();
    let asked = terms_asked_about(&mut tokenizer, question);
    let read = format!("{}\n{}\n{}", line.place, line.about, line.shown());
    asked.is_empty()
        || tokenizer
            .query_terms(&read)
            .iter()
            .any(|term| asked.contains(term))
}

/// The search terms of `question` less the words asking for a name ([`NAME_ASKING_WORDS`]):
/// what it asks about.
fn terms_asked_about(tokenizer: &mut Tokenizer, question: &str) -> BTreeSet<String> {
    let asking: BTreeSet<String> = tokenizer
        .query_terms(NAME_ASKING_WORDS)
        .into_iter()
        .collect();
    tokenizer
        .query_terms(question)
        .into_iter()
        .filter(|term| !asking.contains(term))
        .collect()
}

/// The runs of Chinese, Japanese or Korean script in `answer`, two characters or more, that
/// `question` does not hold, longest first (of a length, first written first): where an
/// answer in these scripts writes a name, as no capital marks one.
fn cjk_runs(answer: &str, question: &str) -> Vec<String> {
    let chars: Vec<char> = answer.chars().collect();
    let mut runs: Vec<String> = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        if !is_cjk(chars[start]) {
            start += 1;
            continue;
        }
        let end = (start..chars.len())
            .find(|&i| !is_cjk(chars[i]))
            .unwrap_or(chars.len());
        // Every piece of the run: a line holds the name, not the sentence around it.
        for from in start..end {
            for to in from + 2..=end.min(from + MAX_CJK_NAME) {
                let piece: String = chars[from..to].iter().collect();
                let bare = !piece.starts_with(PARTICLES) && !piece.ends_with(PARTICLES);
                if bare && !question.contains(&piece) && !runs.contains(&piece) {
                    runs.push(piece);
                }
            }
        }
        start = end;
    }
    // Longest first; a stable sort keeps the order written within a length.
    runs.sort_by_key(|run| std::cmp::Reverse(run.chars().count()));
    runs
}

/// Words around a name, never part of one ("是浩子", "欧派的"): a longer piece a line holds
/// by chance would be taken for the name.
const PARTICLES: &[char] = &[
    '的', '是', '了', '在', '和', '与', '叫', '有', '为', 'は', 'が', 'の', 'を', 'に', 'で',
];

/// Characters a name in Chinese, Japanese or Korean script is read to at most.
const MAX_CJK_NAME: usize = 8;

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// Whether the model, shown `line` (with the line before it) beside the answer's claim,
    /// says the line says it; and the check's generation. `someone`: who the question points
    /// at, found through a link (`super::pointed`): the line about them names them, not the
    /// question's words for them ("the accountant I saw on 28 April"). A check that fails to
    /// run lets the answer stand (the fact check already found its figure in the notes);
    /// Ctrl-C still stops the turn.
    pub(super) fn figure_answers(
        &mut self,
        line: &FigureLine,
        someone: Option<&str>,
    ) -> Result<(bool, Option<Check>), AgentError> {
        // The check sees no numbered sources.
        static SOURCE: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r" \(source \d+\)").expect("valid regex"));
        if let Some(why) = line.no_answer {
            tracing::debug!("{:?} is no answer: {why:?}", line.claim);
            return Ok((false, None));
        }
        if line.is_name {
            return Ok((true, None));
        }
        let someone = someone.map(|s| SOURCE.replace_all(s, "").into_owned());
        let instruction = self.template.check_instruction(
            &line.place,
            &line.shown(),
            &line.claim,
            someone.as_deref(),
        )?;
        let messages = [
            Message::system(CHECK_SYSTEM.trim()),
            Message::user(&instruction),
        ];
        // Failing, the answer stands.
        let step = SideStep {
            what: "figure check",
            max_tokens: VERDICT_TOKENS,
            gbnf: VERDICT_GBNF.to_string(),
        };
        let Some(Chosen { completion, odds }) =
            self.side_choice(step, &messages, &["yes", "no"])?
        else {
            return Ok((true, None));
        };
        let yes = odds.first().copied().unwrap_or(1.0);
        let answers = yes >= CHECK_YES_ODDS;
        tracing::debug!(
            "figure check of {:?} in {:?}: {:?}, odds of yes {yes:.2}",
            line.figure,
            line.line,
            completion.text
        );
        let read = instruction;
        Ok((answers, Some(Check { read, completion })))
    }
}

mod claim;
mod records;
#[cfg(test)]
mod tests;
