//! One quiz item and how it is written: a question with its answer per generation, under a
//! grammar that admits exactly `Q: …` then `A: …` (two non-empty lines of bounded length,
//! nothing before, between or after them), read back by one small parser. The [`Asker`] writes
//! items one at a time: the notes take turns, a long note's questions spread over its pieces,
//! and a reply that is cut off, repeats an earlier question of the quiz, or tests nothing (its
//! answer is the note's title or says back the question, or the question points at its source)
//! is retried once with the form spelled out. An item whose answer adds only a word to its
//! question is kept as a spare, asked only when the slots run out. Items are plain text: the
//! model reads notes with their markup rendered, and any label or mark it writes anyway is
//! taken off.
//!
//! Both ends of a quiz take their items from here: printed in a format ([`super::quiz`] through
//! [`super::export`]) or asked and graded on the terminal ([`super::grade`]); this module
//! imports none of them.

use std::ops::ControlFlow;
use std::sync::LazyLock;

use anyhow::{Result, bail};
use regex::Regex;
use serde::Serialize;

use super::chunk::{blocks, body_chars, chunk_text, headings};
use super::target::SourceNote;
use super::writer::{Grammar, Writer, line_rule};
use crate::engine::StopReason;
use crate::language::same_question;
use crate::markup;
use crate::prompt::StudyPrompt;
use crate::support;

/// Tokens set aside in quiz prompts for the retry reminder.
const RETRY_RESERVE: usize = 64;
/// Characters of an item outside its two texts: `Q: `, `\nA: ` and the last `\n`.
const ITEM_FRAME: usize = 8;
/// Longest question and answer, in characters, however many tokens are allowed.
const MAX_QUESTION: usize = 200;
const MAX_ANSWER: usize = 400;
/// Shortest bound worth asking for: below it every question would be cut mid-sentence.
const MIN_LINE: usize = 16;

/// A question with its answer, as the model wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QaPair {
    /// The question.
    pub question: String,
    /// The answer.
    pub answer: String,
}

/// The longest question and answer (in characters) the item grammar admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemBounds {
    /// Characters of the question.
    pub question: usize,
    /// Characters of the answer.
    pub answer: usize,
}

impl ItemBounds {
    /// Bounds an item can never exceed within `max_tokens`: every token writes at least one
    /// character, so an item of at most `max_tokens` characters is never cut off (for ASCII
    /// text; a character of several bytes may take several tokens). Two fifths go to the
    /// question. `None` when `max_tokens` leaves no room for a useful item.
    pub fn for_tokens(max_tokens: usize) -> Option<ItemBounds> {
        let room = max_tokens.checked_sub(ITEM_FRAME)?;
        let question = (room * 2 / 5).min(MAX_QUESTION);
        let answer = (room - question).min(MAX_ANSWER);
        (question >= MIN_LINE && answer >= MIN_LINE).then_some(ItemBounds { question, answer })
    }
}

/// The grammar of one quiz item: `Q: question?\nA: answer`, an optional final line break,
/// and then only the end of the turn. No other line, label or text can be written; the
/// question holds one question mark, at its end.
pub fn item_grammar(bounds: ItemBounds) -> Grammar {
    let gbnf = format!(
        "root ::= \"Q: \" question \"\\nA: \" answer \"\\n\"?\n\
         question ::= [^\\x00-\\x20\\x7F?] [^\\x00-\\x1F\\x7F?]{{0,{}}} \"?\"\n{}",
        bounds.question.saturating_sub(2),
        line_rule("answer", bounds.answer),
    );
    Grammar {
        name: "quiz-item",
        gbnf,
    }
}

/// The question and answer of a reply written under [`item_grammar`], as plain text; `None`
/// when either is missing or empty, or anything else is there (a reply cut off before its
/// answer).
pub fn parse_item(reply: &str) -> Option<QaPair> {
    let rest = reply.trim_start().strip_prefix("Q:")?;
    let (question, answer) = rest.split_once("\nA:")?;
    let answer = answer.strip_suffix('\n').unwrap_or(answer);
    if question.contains('\n') || answer.contains('\n') {
        return None;
    }
    let (question, answer) = (item_text(question), item_text(answer));
    if question.is_empty() || answer.is_empty() {
        return None;
    }
    Some(QaPair { question, answer })
}

/// One line of an item as a reader should see it: without the labels a small model writes
/// again after the grammar's own ("Q: Q: What …", "A: Answer: …") and with any markup it
/// wrote rendered as plain text.
fn item_text(line: &str) -> String {
    let mut text = line.trim();
    while let Some(rest) = ["Q:", "A:", "Question:", "Answer:"]
        .iter()
        .find_map(|label| strip_prefix_ignore_case(text, label))
    {
        text = rest.trim_start();
    }
    markup::plain(text)
}

fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Why an item tests nothing, if it does not: its answer is only words of the note's title, or
/// only words of its question (or none at all). Words as the vault's search reads them
/// (stemmed, stop words out, CJK in bigrams), so "They are synced by default." says back "Is
/// syncing on by default?", and "七天" is a fact of its own. What the quiz retries on; `benches/quiz-quality`
/// judges items by a fuller rubric of its own.
fn hollow(qa: &QaPair, title: &str) -> Option<&'static str> {
    if points_at_its_source(&qa.question) {
        return Some("its question points at the text instead of naming what it asks about");
    }
    if points_elsewhere(&qa.answer) {
        return Some("its answer sends the reader elsewhere instead of stating the fact");
    }
    let of_title = support::overlap(title, &qa.answer);
    if of_title.own == 0 && of_title.asked > 0 {
        return Some("its answer is the note's title");
    }
    // An answer of stop words alone ("It is.", "`[!note]`": "note" is one in a vault) says
    // nothing either.
    if support::overlap(&qa.question, &qa.answer).own == 0 {
        return Some("its answer adds nothing to its question");
    }
    None
}

/// Fewer words of its own than this (and no number), beside a word of its question, and an
/// answer says little beyond what was asked ([`says_little`]).
const MIN_OWN_WORDS: f32 = 2.0;

/// True when an item's answer adds under [`MIN_OWN_WORDS`] words to its question (none of them
/// a number) while saying back a word of it: "What is the default title of a callout?" → "It
/// is in title case.", "What type of client is it?" → "A headless client". Such an item is
/// a spare, asked only when the quiz's other passages run out: asking the same passage again
/// (warmer, with "state the fact itself") mostly wrote another short answer.
fn says_little(qa: &QaPair) -> bool {
    let of_question = support::overlap(&qa.question, &qa.answer);
    of_question.asked > 0 && !of_question.own_number && of_question.own_words < MIN_OWN_WORDS
}

/// True for a question that needs its source to make sense: one that asks about "the text",
/// "this note" or what is "mentioned in" it. A quiz is read away from the note, so such a
/// question asks nothing ("What is the name of the feature mentioned in the text?"). "The
/// note" alone is not one: in a vault it is often the subject ("What happens to the note's
/// links?").
fn points_at_its_source(question: &str) -> bool {
    static POINTING: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)\b(?:the|this) (?:text|passage|excerpt|document|article)\b|\bthis (?:note|page|section|paragraph)\b|\b(?:mentioned|described|discussed|stated) (?:in|above)\b|\baccording to the\b|\b(?:title|name) of (?:the|this) (?:page|note)\b|\bmain (?:topic|subject|idea|point)\b|\b(?:topic|subject) of (?:the|this) (?:note|page|section)\b|文中|本文|这篇|這篇|この(?:文章|ノート|テキスト)|이 (?:글|노트)|본문",
        )
        .expect("a valid regex")
    });
    POINTING.is_match(question)
}

/// True for an answer that sends the reader to another page ("See Plans.", "…, and see the Sync
/// landing page for pricing."): what it points at is not learnt from it.
fn points_elsewhere(answer: &str) -> bool {
    static POINTING: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^\W*(?:see|refer to|check out)\b|\b(?:see|refer to|visit) the [^.,;]*\b(?:page|section|guide|documentation|docs|article)\b|请参阅|请参考|参见|を参照|참조하")
            .expect("a valid regex")
    });
    POINTING.is_match(answer)
}

/// What one quiz prompt shows: one paragraph (or list, or section start) of a note, with the
/// heading it is under; or a whole piece of the note when no paragraph has text enough.
pub(super) struct Passage {
    text: String,
    heading: Option<String>,
}

/// Characters of text a paragraph needs to be asked about on its own (a heading alone, or
/// "Contrast with [[Meiosis]].", gives nothing to ask).
const MIN_FOCUS_CHARS: usize = 40;
/// Sampling of the second try: warmer, so that a model that repeated itself writes something
/// else.
const RETRY_TEMPERATURE: f32 = 0.8;

/// The passages of one note, in order: each paragraph of each piece with text enough to ask
/// about, or the piece itself when none has. A paragraph rather than the whole note: shown the
/// whole note, small models ask about its first sentence every time.
fn passages(note: &SourceNote, pieces: Vec<String>) -> Vec<Passage> {
    let paragraphs = blocks(&note.content);
    let named = headings(&paragraphs);
    let title = note.title.trim();
    let mut passages = Vec::new();
    for piece in pieces {
        let before = passages.len();
        for (paragraph, heading) in paragraphs.iter().zip(&named) {
            if body_chars(paragraph) >= MIN_FOCUS_CHARS && piece.contains(paragraph.as_str()) {
                passages.push(Passage {
                    text: paragraph.clone(),
                    heading: heading.clone().filter(|h| !h.eq_ignore_ascii_case(title)),
                });
            }
        }
        if passages.len() == before {
            passages.push(Passage {
                text: piece,
                heading: None,
            });
        }
    }
    if passages.is_empty() {
        passages.push(Passage {
            text: String::new(),
            heading: None,
        });
    }
    passages
}

/// One question of the quiz and where it comes from.
pub(super) struct QuizItem {
    pub(super) qa: QaPair,
    /// Index into the notes.
    pub(super) note: usize,
    /// The heading of the passage asked about, when the note was cut into several.
    pub(super) heading: Option<String>,
    /// The passage asked about, as the model read it.
    pub(super) passage: String,
}

/// What the quiz template is filled with.
#[derive(Serialize)]
struct QuizVars<'a> {
    title: &'a str,
    text: &'a str,
    retry: bool,
}

/// Writes quiz items one at a time: which note and piece each slot asks about, the prompt, the
/// generation and its retry, and the spares kept for when the passages run out.
pub(super) struct Asker<'w, 'a> {
    pub(super) writer: &'w mut Writer<'a>,
    pub(super) notes: &'w [SourceNote],
    pieces: Vec<Vec<Passage>>,
    grammar: Grammar,
    /// Slots a quiz may spend: twice its count, so that a slot that fails, or writes a spare,
    /// hands its turn to the next note or piece.
    slots: usize,
    /// The next slot to ask.
    slot: usize,
    /// Items that say little beyond their question ([`says_little`]), in the order written.
    spares: Vec<QuizItem>,
}

/// What one slot wrote.
enum Asked {
    Item(QuizItem),
    Spare(QuizItem),
    Nothing,
}

impl<'w, 'a> Asker<'w, 'a> {
    /// Cuts each note into pieces that fit a quiz prompt, for a quiz of `count` items.
    pub(super) fn new(
        writer: &'w mut Writer<'a>,
        notes: &'w [SourceNote],
        count: usize,
    ) -> Result<Self> {
        let max_tokens = writer.request.max_tokens;
        let Some(bounds) = ItemBounds::for_tokens(max_tokens) else {
            bail!(
                "--max-tokens {max_tokens} leaves no room for a question and its answer; \
                 use at least {}",
                ITEM_FRAME + MIN_LINE * 5 / 2
            );
        };
        let mut pieces = Vec::new();
        for note in notes {
            let vars = QuizVars {
                title: &note.title,
                text: "",
                retry: false,
            };
            let frame = writer.render(StudyPrompt::QuizNote, &vars)?;
            let budget = writer.text_budget(StudyPrompt::Quiz, &frame, RETRY_RESERVE)?;
            let chunks = chunk_text(&note.content, budget, &|text| writer.count(text));
            let passages = passages(note, chunks);
            pieces.push(passages);
        }
        Ok(Asker {
            writer,
            notes,
            pieces,
            grammar: item_grammar(bounds),
            slots: count * 2,
            slot: 0,
            spares: Vec::new(),
        })
    }

    /// The quiz's next item, new beside `items`: from the next slots while they last, then
    /// from the spares. `None` when both are spent.
    pub(super) fn next(&mut self, items: &[QuizItem]) -> Result<Option<QuizItem>> {
        while self.slot < self.slots {
            let slot = self.slot;
            self.slot += 1;
            match self.ask(items, slot)? {
                Asked::Item(item) => return Ok(Some(item)),
                Asked::Spare(item) => self.spares.push(item),
                Asked::Nothing => {}
            }
        }
        while !self.spares.is_empty() {
            let spare = self.spares.remove(0);
            if !items
                .iter()
                .any(|item| same_question(&item.qa.question, &spare.qa.question))
            {
                return Ok(Some(spare));
            }
        }
        Ok(None)
    }

    /// The question for `slot`: notes take turns, and a note's k-th question comes from its
    /// k-th piece. Nothing (with a line on stderr) when the model wrote nothing usable, even on
    /// retry.
    fn ask(&mut self, items: &[QuizItem], slot: usize) -> Result<Asked> {
        let index = slot % self.notes.len();
        let round = slot / self.notes.len();
        let note = &self.notes[index];
        let passage = &self.pieces[index][round % self.pieces[index].len()];
        // Notes of one folder say the same things; a quiz asks each question once. A spare
        // counts as asked: the same passage met again would write it again, and the retry
        // (warmer) may give the fact the spare lacks.
        let asked: Vec<&str> = items
            .iter()
            .chain(&self.spares)
            .map(|i| i.qa.question.as_str())
            .collect();
        for retry in [false, true] {
            let vars = QuizVars {
                title: &note.title,
                text: &passage.text,
                retry,
            };
            let user = self.writer.render(StudyPrompt::QuizNote, &vars)?;
            let usual = self.writer.request.sampling.clone();
            if retry {
                let sampling = &mut self.writer.request.sampling;
                sampling.temperature = sampling.temperature.max(RETRY_TEMPERATURE);
                sampling.seed = sampling.seed.wrapping_add(slot as u32 + 1);
            }
            let completion =
                self.writer
                    .generate(StudyPrompt::Quiz, &user, &self.grammar, &mut |_| {
                        ControlFlow::Continue(())
                    });
            self.writer.request.sampling = usual;
            let completion = completion?;
            // Only a reply the grammar saw to its end is whole; at --max-tokens the answer may
            // be cut mid-word.
            let whole = matches!(
                completion.stop,
                StopReason::EndOfTurn | StopReason::EndOfMessage
            );
            let Some(qa) = parse_item(&completion.text).filter(|_| whole) else {
                tracing::info!(
                    "no whole Q/A item from {} (stop: {:?})",
                    note.uri,
                    completion.stop
                );
                continue;
            };
            let flaw = if asked.iter().any(|q| same_question(q, &qa.question)) {
                Some("it repeats an earlier question")
            } else {
                hollow(&qa, &note.title)
            };
            if let Some(flaw) = flaw {
                tracing::info!("an item from {} is dropped, {flaw}: {qa:?}", note.uri);
                continue;
            }
            let spare = says_little(&qa);
            let item = QuizItem {
                qa,
                note: index,
                heading: passage.heading.clone(),
                passage: passage.text.clone(),
            };
            if spare {
                tracing::info!(
                    "an item from {} says little beyond its question; kept as a spare: {:?}",
                    note.uri,
                    item.qa
                );
                return Ok(Asked::Spare(item));
            }
            return Ok(Asked::Item(item));
        }
        eprintln!(
            "recall: the model wrote no new, whole question about {} ({}) in two tries; \
             skipping this one",
            note.title, note.uri
        );
        Ok(Asked::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::GenerateRequest;
    use crate::engine::scripted::ScriptedModel;
    use crate::prompt::ChatTemplate;

    fn qa(question: &str, answer: &str) -> Option<QaPair> {
        Some(QaPair {
            question: question.into(),
            answer: answer.into(),
        })
    }

    #[test]
    fn parses_the_two_lines_the_grammar_admits() {
        assert_eq!(
            parse_item("Q: What is Alpha?\nA: A project."),
            qa("What is Alpha?", "A project.")
        );
        assert_eq!(
            parse_item("Q: Who wrote it?\nA: Ann.\n"),
            qa("Who wrote it?", "Ann.")
        );
    }

    #[test]
    fn a_cut_or_empty_item_is_not_an_item() {
        assert_eq!(parse_item("Q: Only a question?"), None);
        assert_eq!(parse_item("Q: Only a question?\n"), None);
        assert_eq!(parse_item("Q: Empty answer?\nA: "), None);
        assert_eq!(parse_item("Q: \nA: An answer."), None);
        assert_eq!(parse_item("Q: One?\nA: Two.\nQ: Three?"), None);
        assert_eq!(parse_item("no labels at all"), None);
    }

    #[test]
    fn bounds_fit_the_token_budget_and_are_capped() {
        let small = ItemBounds::for_tokens(96).unwrap();
        assert!(
            small.question + small.answer + ITEM_FRAME <= 96,
            "{small:?}"
        );
        assert_eq!(
            ItemBounds::for_tokens(4096),
            Some(ItemBounds {
                question: MAX_QUESTION,
                answer: MAX_ANSWER
            })
        );
        assert!(ItemBounds::for_tokens(48).is_some());
        assert_eq!(ItemBounds::for_tokens(47), None);
        assert_eq!(ItemBounds::for_tokens(4), None);
    }

    #[test]
    fn the_item_grammar_names_its_bounds() {
        let grammar = item_grammar(ItemBounds {
            question: 10,
            answer: 20,
        });
        assert_eq!(
            grammar.gbnf,
            "root ::= \"Q: \" question \"\\nA: \" answer \"\\n\"?\n\
             question ::= [^\\x00-\\x20\\x7F?] [^\\x00-\\x1F\\x7F?]{0,8} \"?\"\n\
             answer ::= [^\\x00-\\x20\\x7F] [^\\x00-\\x1F\\x7F]{0,19}\n"
        );
    }

    #[test]
    fn items_read_as_plain_text_without_repeated_labels() {
        assert_eq!(
            parse_item("Q: Q: What opens the [[Command palette|palette]]?\nA: Answer: **Ctrl+P**"),
            qa("What opens the palette?", "Ctrl+P")
        );
        assert_eq!(
            parse_item("Q: question: Why ==sync==?\nA: a: To keep notes alike."),
            qa("Why sync?", "To keep notes alike.")
        );
        assert_eq!(parse_item("Q: Q:\nA: A:"), None);
    }

    #[test]
    fn an_item_whose_answer_is_the_title_or_the_question_tests_nothing() {
        let item = |q: &str, a: &str| QaPair {
            question: q.into(),
            answer: a.into(),
        };
        let title = "Obsidian Sync";
        let hollow_item = |q, a| hollow(&item(q, a), title).is_some();
        assert!(hollow_item(
            "What service syncs notes across devices?",
            "Obsidian Sync."
        ));
        assert!(hollow_item(
            "Are notes and images synced by default?",
            "Notes and images are synced by default."
        ));
        assert!(!hollow_item(
            "Which platforms does Sync support?",
            "Windows, macOS, Linux, Android and iOS."
        ));
        assert!(hollow_item(
            "What subscription plan is needed to sync notes?",
            "You need a subscription plan."
        ));
        assert!(!hollow_item(
            "How much storage does the Plus plan give?",
            "10 GB"
        ));
        assert!(!hollow_item("快照保留多久？", "快照保留七天。"));
        assert!(hollow_item(
            "What is the name of the feature mentioned in the text?",
            "Change the link display text"
        ));
        assert!(hollow_item(
            "According to the passage, how long are versions kept?",
            "One year"
        ));
        assert!(hollow_item("文中提到的功能叫什么？", "快照"));
        assert!(hollow_item(
            "What is the name of the page that covers version history?",
            "Version history"
        ));
        assert!(!hollow_item(
            "What happens to links when the note is renamed?",
            "They are updated automatically."
        ));
        assert!(hollow_item("快照默认保留吗？", "快照默认保留。"));
        assert!(hollow_item(
            "What is the default name of a `[!note]` callout?",
            "`[!note]`"
        ));
        assert!(hollow_item(
            "What is the main topic of the note?",
            "Moving from other sync services to Obsidian Sync."
        ));
        assert!(hollow_item(
            "What is the subject of this section?",
            "Publishing notes."
        ));
        // An answer that sends the reader elsewhere teaches what it points at no more.
        assert!(hollow_item(
            "How do you buy a Sync plan?",
            "Log in to your account, and see the Sync landing page for pricing."
        ));
        assert!(hollow_item(
            "Where are the plan prices?",
            "See Plans and pricing."
        ));
        assert!(hollow_item("同步的价格是多少？", "请参阅定价页面。"));
        assert!(!hollow_item(
            "What can you see in the graph view?",
            "Every note as a node, with its links as lines."
        ));
        assert!(!hollow_item(
            "Where is a file's history shown?",
            "You can see the file's versions in the sidebar."
        ));
    }

    #[test]
    fn an_answer_of_a_word_or_so_beside_its_question_says_little() {
        let says_little_of = |q: &str, a: &str| {
            says_little(&QaPair {
                question: q.into(),
                answer: a.into(),
            })
        };
        assert!(says_little_of(
            "What is the default title of a callout?",
            "It is in title case."
        ));
        assert!(says_little_of(
            "What type of client is Obsidian Sync designed for?",
            "A headless client"
        ));
        // A number is a fact however short; so are two words the question lacks.
        assert!(!says_little_of(
            "Which port does the server use?",
            "Port 8080."
        ));
        assert!(!says_little_of(
            "What type of client is Obsidian Sync designed for?",
            "A headless command-line client"
        ));
        // Nothing of the question said back: a short answer is the fact.
        assert!(!says_little_of("Who wrote the plugin?", "Ada"));
    }

    /// Two notes of one paragraph each, a quiz of two on a scripted model (the real model's
    /// path is tested in tests/it/study.rs): what each slot is asked and what the quiz keeps.
    fn quiz_of_two(replies: &[&str]) -> (Vec<String>, usize) {
        let notes: Vec<SourceNote> = [("Headless", "Headless Sync"), ("Plans", "Sync plans")]
            .into_iter()
            .map(|(name, title)| SourceNote {
                uri: format!("note://{name}"),
                title: title.to_string(),
                link: format!("obsidian://open?vault=v&file={name}"),
                content: format!(
                    "{title} is described here at length, with enough words to ask about."
                ),
            })
            .collect();
        let mut model = ScriptedModel::new(replies.iter().copied(), 8192);
        let template = ChatTemplate::llama3();
        let mut writer = Writer {
            model: &mut model,
            template: &template,
            request: GenerateRequest::new(256),
            verbose: false,
            log: Vec::new(),
            on_step: &|_| {},
        };
        let mut asker = Asker::new(&mut writer, &notes, 2).unwrap();
        let mut items: Vec<QuizItem> = Vec::new();
        while items.len() < 2 {
            let Some(item) = asker.next(&items).unwrap() else {
                break;
            };
            items.push(item);
        }
        let asked = writer.log.len();
        let answers = items
            .into_iter()
            .map(|i| format!("{}: {}", notes[i.note].title, i.qa.answer))
            .collect();
        (answers, asked)
    }

    #[test]
    fn an_item_that_says_little_waits_for_the_other_passages() {
        let thin = "Q: What type of client is Obsidian Sync made for?\nA: A headless client";
        let platforms = "Q: Which platforms does Sync support?\nA: Windows, macOS and Linux.";
        let uses = "Q: What is Headless Sync for?\nA: CI pipelines and automated workflows.";
        // The thin item gives way to the next slot's (the first note again, its next piece).
        let (answers, asked) = quiz_of_two(&[thin, platforms, uses]);
        assert_eq!(
            answers,
            [
                "Sync plans: Windows, macOS and Linux.",
                "Headless Sync: CI pipelines and automated workflows."
            ]
        );
        assert_eq!(asked, 3);
        // When every other slot fails (two unreadable tries each), the spare fills the quiz.
        let (answers, asked) =
            quiz_of_two(&[thin, platforms, "no item", "no item", "Q: ?", "Q: ?"]);
        assert_eq!(
            answers,
            [
                "Sync plans: Windows, macOS and Linux.",
                "Headless Sync: A headless client"
            ]
        );
        assert_eq!(asked, 6);
        // A spare written again (its passage met a second time) is a repeat, retried warmer:
        // the passage gives its fact before the next slot is asked.
        let (answers, asked) = quiz_of_two(&[thin, platforms, thin, uses]);
        assert_eq!(
            answers,
            [
                "Sync plans: Windows, macOS and Linux.",
                "Headless Sync: CI pipelines and automated workflows."
            ]
        );
        assert_eq!(asked, 4);
    }

    #[test]
    fn questions_compare_without_case_or_punctuation() {
        assert!(same_question("What is Alpha?", "what is alpha"));
        assert!(!same_question("What is Alpha?", "What is Beta?"));
    }
}
