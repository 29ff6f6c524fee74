//! What a question asks for by name: the kind of fact ([`Wanted`]: an email address, a phone
//! number, a count, keys), and who or what it asks a fact about ([`Subject`]), with the text the model was
//! given that speaks of them: a fact asked for about someone must stand where they are named.
//!
//! A small model asked a fact the notes hold about somebody else takes theirs: "When is
//! Priya's birthday?" got "February 14, 2025", the day of a daily note where Elif had her
//! birthday; "Femke de Wit's phone number?" got the plumber's number. Every such figure stood
//! in a source, so the fact check let it through. Asked for a date, an amount, a count, a
//! length of time, an email address or a phone number about someone named, the check reads only the text about
//! them: a source whose title or headings name them, whole; else its lines that name them,
//! under its header (a daily note's day is the day of each line in it). Pure.

use std::collections::HashSet;
use std::sync::LazyLock;

use obsidian_kb::search::{Tokenizer, is_cjk};
use regex::Regex;

use super::asks::{Wanted, asks_a_figure};
use crate::facts::{may_be_a_name, names_in};
use crate::sources::Source;

/// What `sources` say of `subject` (all they say, without one), lowercase: where an email
/// address given about them must stand ([`addresses_stand_in`]).
pub(super) fn about_subject(subject: Option<&Subject>, sources: &[Source]) -> String {
    sources
        .iter()
        .map(|s| {
            let text = format!("{}\n{}", s.text, s.passage);
            match subject {
                Some(subject) => subject.about(&s.label(), &text),
                None => text,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .to_lowercase()
}

/// Whether `answer` states an email address and every one stands in `about` (what the sources
/// say of the one asked about: [`about_subject`]): the fact check reads numbers, not
/// addresses, and "Wouter Kamp's email is lena.kowalski@…" took the address of the note it
/// found, "What's her email?" got "bettyt@example.com", which no note holds.
pub(super) fn addresses_stand_in(answer: &str, about: &str) -> bool {
    static ADDRESS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+").expect("valid regex"));
    // An address still being written ("lena.kowalski@harborandco.") is none yet.
    let mut addresses = ADDRESS.find_iter(answer).peekable();
    addresses.peek().is_some()
        && addresses.all(|address| about.contains(&address.as_str().to_lowercase()))
}

/// The names a question asks a fact about, when it asks for a date, a year, an amount, a
/// count, a price, a rating, an ID, a length of time, an email address or a phone number.
/// Asked the length of a Sync trial, Qwen2.5-1.5B gave "30 days [1]", the payment terms of a
/// commercial license (a line that names neither); asked a student price of Publish in euros,
/// "1.1 times", a formula's factor from a note that never names Publish; asked how a show
/// was rated, "4/5", another show's rating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Subject {
    /// Each name, lowercase: a word written with a capital past the question's first word.
    names: Vec<String>,
}

impl Subject {
    /// The subject of `question`, when it asks for such a fact ([`asks_a_figure`], a rating,
    /// the ID of something) about someone or something it names: with a capital, or in any case a word that
    /// `sources` write only with one ([`capitalised_only`]: "how much did declan quote for the
    /// gutters" names Declan), or a name the vault knows that it writes (`named`, lowercase: the
    /// names a question in Chinese gives, which has no capitals: [`super::named`]). `None`
    /// otherwise.
    pub(super) fn of(question: &str, sources: &[Source], named: &[String]) -> Option<Subject> {
        // Of a question of several sentences, the one asking the fact names whom it is
        // asked of: "糖醋鱼是跟谁学的？她电话多少" asks the number of the one who taught the
        // recipe, not of the recipe's note.
        let question = asking_sentence(question)?;
        let asked = RATING_OR_ID.captures(question);
        let numbers = numbers_given(question);
        // The fact's own name ("ID" in "the project ID of project_11") names no subject.
        let fact = asked
            .and_then(|c| c.name("fact"))
            .map(|f| f.as_str().to_lowercase());
        // An abbreviation names a subject too: "How many chapters of the ML book are left?"
        // is answered from the book whose note names "ML", not from another book's count. So
        // does an identifier written without capitals: asked the ID of one numbered project,
        // a model gave the ID of the project before it.
        static IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"\b\p{L}[\p{L}\p{N}]*_[\p{L}\p{N}_]+\b").expect("valid regex")
        });
        let mut names: Vec<String> = names_in(question)
            .into_iter()
            .map(str::to_lowercase)
            .collect();
        names.extend(
            IDENTIFIER
                .find_iter(question)
                .map(|id| id.as_str().to_lowercase()),
        );
        let written = capitalised_only(sources);
        let mut tokenizer = Tokenizer::default();
        for word in words(question) {
            let word = word
                .strip_suffix("'s")
                .or_else(|| word.strip_suffix("’s"))
                .unwrap_or(word)
                .to_lowercase();
            // A stop word, a month or a weekday is no name, however a source writes it:
            // "How" in an episode called "As to How They Might Destroy Him" is the
            // question's own "how"; "situps on 30 january 2022" asks nothing of "January"
            // in "started on January 9" (the day is checked apart: `Agent::on_the_day`).
            let stop_word = tokenizer.query_terms(&word).is_empty();
            if written.contains(&word)
                && !names.contains(&word)
                && !stop_word
                && may_be_a_name(&word)
            {
                names.push(word);
            }
        }
        names.extend(numbers);
        for name in named {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names.retain(|name| Some(name) != fact.as_ref());
        (!names.is_empty()).then_some(Subject { names })
    }

    /// Whether `text` names the subject: one of its names as a whole word, in any case, or
    /// written anywhere in it when in Chinese, Japanese or Korean script (no space marks a
    /// word there).
    fn named_in(&self, text: &str) -> bool {
        if self
            .names
            .iter()
            .any(|name| name.chars().any(is_cjk) && text.contains(name.as_str()))
        {
            return true;
        }
        words(text).any(|word| {
            let word = word
                .strip_suffix("'s")
                .or_else(|| word.strip_suffix("’s"))
                .unwrap_or(word);
            self.names
                .iter()
                .any(|name| word.eq_ignore_ascii_case(name))
        })
    }

    /// What of one source (its `header`, the text under it) speaks of the subject: the whole
    /// when the header names it, or the text opens with a line naming it that is no item of
    /// a list (a daily note's first line says what the day was: "Rory's birthday — 52!" over
    /// the dinner's `spent:: €148`; "- call with Priya" is one thing of the day); else the
    /// header and the lines that name it, when any does; else nothing.
    pub(super) fn about(&self, header: &str, text: &str) -> String {
        static ITEM: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^\s*(?:[-*+|]|\d+[.)])").expect("valid regex"));
        let opening = text.lines().find(|line| !line.trim().is_empty());
        let titled = opening.is_some_and(|line| !ITEM.is_match(line) && self.named_in(line));
        if self.named_in(header) || titled {
            return format!("{header}\n{text}");
        }
        let lines: Vec<&str> = text.lines().filter(|line| self.named_in(line)).collect();
        if lines.is_empty() {
            return String::new();
        }
        format!("{header}\n{}", lines.join("\n"))
    }

    /// [`Subject::about`] for each source of a tool result, as rendered: a line `[n] …`
    /// heads each, the text under it runs to the next. Text before the first header keeps
    /// the lines that name the subject.
    pub(super) fn about_results(&self, results: &str) -> String {
        static HEADER: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^\[\d{1,3}\] ").expect("valid regex"));
        let mut kept: Vec<String> = Vec::new();
        let mut header = "";
        let mut body: Vec<&str> = Vec::new();
        for line in results.lines() {
            if HEADER.is_match(line) {
                kept.push(self.about(header, body.join("\n").trim()));
                header = line;
                body.clear();
            } else {
                body.push(line);
            }
        }
        kept.push(self.about(header, body.join("\n").trim()));
        kept.retain(|part| !part.trim().is_empty());
        kept.join("\n\n")
    }
}

/// The words `sources` write with a capital after a word in lowercase in the same sentence
/// or table cell (not opening a line, a sentence or a title in title case: "Year" heading a
/// column, "Bump Into" in a title; but each of "route, Porto → Santiago" and "Galway, Cork
/// and Dublin") and never without one, lowercase: names, as a person typing a question in
/// lowercase means them ("tadhg's number", from "got it off Tadhg").
fn capitalised_only(sources: &[Source]) -> HashSet<String> {
    let mut capitalised = HashSet::new();
    let mut lowercase = HashSet::new();
    for source in sources {
        for line in source.title.lines().chain(source.passage.lines()) {
            let mut after_lowercase = false;
            for token in line.split_whitespace() {
                // A table's cell is read apart, as a sentence.
                if token.starts_with('|') {
                    after_lowercase = false;
                }
                for word in words(token) {
                    let word = word
                        .strip_suffix("'s")
                        .or_else(|| word.strip_suffix("’s"))
                        .unwrap_or(word);
                    match word.chars().next() {
                        Some(c) if c.is_uppercase() && after_lowercase => {
                            capitalised.insert(word.to_lowercase());
                        }
                        Some(c) if c.is_lowercase() => {
                            lowercase.insert(word.to_string());
                        }
                        _ => {}
                    }
                    // A lone letter is no word of a sentence: a done task's `[x]` before
                    // an episode's title ("- [x] Ep 10 - The Cost").
                    after_lowercase |=
                        word.starts_with(char::is_lowercase) && word.chars().nth(1).is_some();
                    // A word in lowercase within an identifier is in lowercase too: the
                    // note `assignment_7` writes "assignment", whatever its tasks capitalise.
                    if word.contains('_') {
                        lowercase.extend(
                            word.split('_')
                                .filter(|part| part.starts_with(char::is_lowercase))
                                .map(str::to_string),
                        );
                    }
                }
                // A sentence ends at its mark, a cell at its bar.
                if token.ends_with(['.', '!', '?', ':', '|', '。', '！', '？']) {
                    after_lowercase = false;
                }
            }
        }
    }
    capitalised.retain(|word| word.chars().count() >= 3 && !lowercase.contains(word));
    capitalised
}

/// A rating or the ID, price, cost or number of something asked for: a fact asked of a
/// subject, as a figure is.
static RATING_OR_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\brat(?:e|ed|ing)\b|\b(?P<fact>price|cost|id|number)\s+(?:of|for)\b")
        .expect("valid regex")
});

/// Whether `sentence` asks a fact of someone or something: a figure ([`asks_a_figure`]), a
/// rating or an ID, a kind of fact by name (keys aside: asked of a command, whose line may
/// name no system), or anything at all about what a number it gives picks out (asked who
/// wrote a book of a given page count, a model named the author of another book, where the
/// one of that length names none).
fn asks_a_fact(sentence: &str) -> bool {
    asks_a_figure(sentence)
        || RATING_OR_ID.is_match(sentence)
        || Wanted::in_question(sentence).is_some_and(|wanted| wanted != Wanted::Keys)
        || !numbers_given(sentence).is_empty()
}

/// The last sentence of `question` that asks a fact ([`asks_a_fact`]), if any: the question
/// whole when it is one sentence. Sentences end at a question or exclamation mark or a
/// Chinese full stop ("29.10.24" is no end).
pub(super) fn asking_sentence(question: &str) -> Option<&str> {
    question
        .split_inclusive(['?', '？', '!', '！', '。'])
        .filter(|sentence| !sentence.trim().is_empty())
        .rfind(|sentence| asks_a_fact(sentence))
}

/// The numbers `question` gives as what a thing is, joined to its noun ("347" in "the
/// 347-page book", "a 10-day trip"). Only so: a number asked about in other words ("week 39",
/// "a 404", "100 pixels wide", "more than 50 aliases") is often one the answer's lines never
/// write, and dates, times and versions are no such numbers.
fn numbers_given(question: &str) -> Vec<String> {
    static COMPOUND: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?:^|[^\w.,:/-])(\d{2,})-\p{L}").expect("valid regex"));
    COMPOUND
        .captures_iter(question)
        .filter_map(|c| c.get(1))
        .map(|number| number.as_str().to_string())
        .collect()
}

/// The words of `text`: runs of letters, digits, underscores and apostrophes ("it's" and
/// "project_11" are one word each).
pub(super) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\'' || c == '’'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests;
