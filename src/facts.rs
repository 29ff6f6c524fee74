//! The facts an answer states that a reader takes as read in the notes, and whether what the
//! model was given holds them: numbers (amounts, years, times, dates, sizes, limits), key
//! combinations (`Ctrl+Shift+O`) and names (words written with a capital past the first of
//! their sentence: "San Francisco", "Isaac Asimov").
//!
//! Asked what the notes cannot answer, a small model writes such facts from nowhere and cites
//! a source for them ("$75,000 to $100,000 per year [3]", "Ctrl+Shift+O [1]", "released in 2015
//! [1]": four of five such questions on a personal vault, five of six on the help vault). A
//! fact found neither in the question nor in any source the model was shown was made up, so
//! the agent never shows it as an answer (`agent::answer::FactGate`). Other words are not
//! checked: a paraphrase is no invention, a number or a name is ("headquartered in San
//! Francisco, California [1]", cited to a note that names no city). A name stands in what the
//! model was given when each of its words does, or, for a word of five letters or more, a
//! word beginning with the same five ("Bookmarks" for "bookmark").
//!
//! Single digits are left alone ("3 ways" may count the items of a list that writes no 3)
//! unless they are amounts (`4GB`, `$5`), which must stand somewhere as written, or the day
//! of a date: a date without its year ("1 May", "5月1日") must stand somewhere as a day and
//! month.
//! Pure.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;

use chrono::{Locale, NaiveDate, Weekday};
use obsidian_kb::search::{is_cjk, is_stop_word};
use regex::Regex;

use crate::sources::citation_marks;

/// The names of the modifier keys that lead a key combination, lowercase.
const MODIFIERS: [&str; 11] = [
    "ctrl", "control", "cmd", "command", "alt", "option", "opt", "shift", "win", "super", "meta",
];

/// A number (with thousands separators, decimals, and the separators of times and dates), or
/// a key combination led by a modifier key ([`MODIFIERS`]).
static FACT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?ix)
        \b(?:{})
            (?:\s*[+]\s*(?:[\p{{L}}\p{{N}}]+|[^\s\p{{L}}\p{{N}}+\[\]]))+
        | \d+(?:[.,:/-]\d+)*",
        MODIFIERS.join("|")
    ))
    .expect("valid regex")
});

/// A comma between digit groups of three: a thousands separator, not part of the number.
/// (An ASCII word boundary after it: `34,000元` has none in Unicode's reading.)
static THOUSANDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d),(\d{3})(?-u:\b)").expect("valid regex"));

/// A comma between digits that is no thousands separator (once [`THOUSANDS`] took those): a
/// decimal comma, as most of Europe writes `4,60 €`.
static DECIMAL_COMMA: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d),(\d)").expect("valid regex"));

/// Digit groups of three after dots: a thousands separator where most of Europe writes one
/// (`3.950 €`), a decimal point elsewhere; a source's such number is known both ways.
static DOT_THOUSANDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{1,3}(?:\.\d{3})+$").expect("valid regex"));

/// A day, month and year written with dots, as much of Europe writes a date: `14.03.2025`.
static DOTTED_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$").expect("valid regex"));

/// A day and month written with dots, before the dot that ends it (`12.07.` in "Sa 12.07. –
/// Sa 19.07.2025"): a date without its year.
static DOTTED_DAY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{1,2})\.(\d{1,2})$").expect("valid regex"));

/// The day, month and year (if any) a [`DOTTED_DATE`] or [`DOTTED_DAY`] match writes, without
/// their leading zeros, when they make a day of the calendar.
fn day_parts(date: &regex::Captures) -> Option<Vec<String>> {
    let number = |at: usize| date.get(at).and_then(|m| m.as_str().parse::<u32>().ok());
    let (day, month) = (number(1)?, number(2)?);
    // A leap year, for the 29th of February without one.
    let year = date
        .get(3)
        .map_or(Some(2000), |_| number(3).map(|y| y as i32))?;
    NaiveDate::from_ymd_opt(year, month, day)?;
    let mut parts = vec![day.to_string(), month.to_string()];
    parts.extend(date.get(3).map(|y| y.as_str().to_string()));
    Some(parts)
}

/// Two modifiers for two systems before one combination: `Cmd/Ctrl+Shift+F`.
static EITHER_MODIFIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(ctrl|cmd|command|alt|option|opt)\s*/\s*(ctrl|cmd|command|alt|option|opt)((?:\s*\+\s*[^\s+]+)+)",
    )
    .expect("valid regex")
});

/// The languages whose names of months and weekdays a date may be written with: those of
/// Recall's own lines written in Latin script (`prompts/lines.json`), as chrono's locale data
/// (`unstable-locales`) names them.
const CALENDAR_LOCALES: [Locale; 4] = [Locale::en_US, Locale::de_DE, Locale::fr_FR, Locale::es_ES];

/// A name of a month, whole or short, as one of [`CALENDAR_LOCALES`] writes it.
struct MonthName {
    /// Lowercase, without a full stop: `march`, `mär`, `févr`.
    name: String,
    /// 1 to 12.
    number: u32,
    /// Whether it is a date without a year only when written with a capital: unless some
    /// language writes it so as its month's whole name (`mars`, `mayo`), it is a word of
    /// its own as often ("10 may be", Spanish's short `may`).
    needs_capital: bool,
}

/// Every month's names in every language of [`CALENDAR_LOCALES`], whole and short.
static MONTH_NAMES: LazyLock<Vec<MonthName>> = LazyLock::new(|| {
    let mut names: Vec<MonthName> = Vec::new();
    for locale in CALENDAR_LOCALES {
        for number in 1..=12 {
            let first = NaiveDate::from_ymd_opt(2000, number, 1).expect("a first of each month");
            for format in ["%B", "%b"] {
                let written = first.format_localized(format, locale).to_string();
                let written = written.trim_end_matches('.');
                let name = written.to_lowercase();
                let needs_capital = format == "%b" || written.starts_with(char::is_uppercase);
                match names
                    .iter_mut()
                    .find(|m| m.name == name && m.number == number)
                {
                    Some(known) => known.needs_capital &= needs_capital,
                    None => names.push(MonthName {
                        name,
                        number,
                        needs_capital,
                    }),
                }
            }
        }
    }
    names
});

/// Every weekday's whole name in every language of [`CALENDAR_LOCALES`], lowercase. Not
/// their short names: French writes Saturday `sam.`, Spanish Sunday `dom`.
static WEEKDAY_NAMES: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let monday = NaiveDate::from_ymd_opt(2000, 1, 3).expect("a Monday");
    CALENDAR_LOCALES
        .iter()
        .flat_map(|locale| {
            monday.iter_days().take(7).map(move |day| {
                day.format_localized("%A", *locale)
                    .to_string()
                    .to_lowercase()
            })
        })
        .collect()
});

/// A date written with its month's name, its year or not: `May 11, 2021`, `11 May 2021`,
/// `1 May`, `the 3rd of March`, `14. März`, `3 mars 2025`.
static NAMED_DATE: LazyLock<Regex> = LazyLock::new(|| {
    // Each month whole or short, longest first: "deadline 1" is no date to pass over "1 May"
    // for.
    let mut months: Vec<String> = MONTH_NAMES.iter().map(|m| regex::escape(&m.name)).collect();
    months.sort_by_key(|name| std::cmp::Reverse(name.len()));
    months.dedup();
    let month = format!("(?:{})", months.join("|"));
    Regex::new(&format!(
        r"(?i)\b(?:(\d{{1,2}})(?:st|nd|rd|th|\.)?\s+(?:of\s+)?({month})\b\.?|({month})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b)(?:,?\s+(\d{{4}})\b)?"
    ))
    .expect("valid regex")
});

/// The day, month and (when written) year of a [`NAMED_DATE`] match as numbers, sorted (the
/// form of [`KnownFacts::dates`]); `None` without a year when its month is not written with
/// the capital its language gives it ("10 may be").
fn named_date(date: &regex::Captures) -> Option<Vec<String>> {
    let day = date.get(1).or(date.get(4)).map_or("", |m| m.as_str());
    let month = date.get(2).or(date.get(3)).map_or("", |m| m.as_str());
    let year = date.get(5).map(|m| m.as_str());
    let name = month_name(month)?;
    if year.is_none() && name.needs_capital && !month.starts_with(char::is_uppercase) {
        return None;
    }
    let number = name.number;
    let mut parts = vec![day.trim_start_matches('0').to_string(), number.to_string()];
    parts.extend(year.map(str::to_string));
    parts.sort();
    Some(parts)
}

/// A date written in Chinese, Japanese or Korean, its year or not: `2025年10月18日`, `5月1号`,
/// `5월 1일`.
static CJK_DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:(\d{4})\s*[年년]\s*)?(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日号號일]")
        .expect("valid regex")
});

/// Each date `text` writes with its month's name or in CJK characters, where it stands and
/// its parts as [`named_date`] gives them.
fn dates_in(text: &str) -> Vec<(Range<usize>, Vec<String>)> {
    let mut dates: Vec<(Range<usize>, Vec<String>)> = NAMED_DATE
        .captures_iter(text)
        .filter_map(|date| Some((date.get(0)?.range(), named_date(&date)?)))
        .collect();
    for date in CJK_DATE.captures_iter(text) {
        let mut parts: Vec<String> = [date.get(1), date.get(2), date.get(3)]
            .into_iter()
            .flatten()
            .map(|part| part.as_str().trim_start_matches('0').to_string())
            .collect();
        parts.sort();
        dates.push((date.get(0).expect("whole match").range(), parts));
    }
    dates
}

/// Whether `text` writes a date with its month's name or in CJK characters (`11 May 2021`,
/// `May 11`, `2月18日`).
pub fn writes_date(text: &str) -> bool {
    !dates_in(text).is_empty()
}

/// The month `word` names, whole or short (`Sep`, `Mär`, `févr.`), in any language of
/// [`CALENDAR_LOCALES`]; of two months of that name (none now), the first.
fn month_name(word: &str) -> Option<&'static MonthName> {
    let word = word.trim_end_matches('.').to_lowercase();
    let word = word.as_str();
    MONTH_NAMES.iter().find(|month| month.name == word)
}

/// The parts of a date without its year (a four-digit part), sorted: what a date written
/// without one (`1 May`) is checked against.
fn without_year(parts: &[String]) -> Option<Vec<String>> {
    let year = parts.iter().position(|p| p.len() == 4)?;
    let mut rest = parts.to_vec();
    rest.remove(year);
    rest.sort();
    (rest.len() == 2).then_some(rest)
}

/// What the model was given, read for the facts it holds.
pub struct KnownFacts {
    /// Every number in normal form, and each part of a time or date on its own.
    numbers: HashSet<String>,
    /// The parts of every time or date, sorted: the same date written in another order
    /// (`11/05/2021` for `2021-05-11`, or `May 11, 2021`).
    dates: HashSet<Vec<String>>,
    /// The day and month (sorted) of each date written without its year (`19 Apr`, `7月8日`,
    /// `7/8`): with a year the sources hold, the date an answer writes whole ("19 April
    /// 2024", from a 2024 daily note's "19 Apr") stands.
    yearless: HashSet<Vec<String>>,
    /// All the text, lowercase, without whitespace and backticks: where amounts are looked
    /// for (a source may write `4 GB`).
    squeezed: String,
    /// All the text, lowercase, without backticks and the spaces around a `+`: where key
    /// combinations are looked for, word edges kept (a source may write `Ctrl + Shift + O`
    /// or `Cmd/Ctrl+Shift+O`).
    combinations: String,
    /// Every word, lowercase, and the first five letters of each word of five or more: where
    /// names are looked for.
    words: HashSet<String>,
    /// The versions the question names ([`versions_in`]), squeezed: facts of the question,
    /// which an answer may state only where a source does.
    asked_versions: Vec<String>,
}

impl KnownFacts {
    /// Reads `texts` (the question, and each source as the model was shown it).
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> KnownFacts {
        let mut numbers = HashSet::new();
        let mut dates = HashSet::new();
        let mut yearless = HashSet::new();
        let mut squeezed = String::new();
        let mut combinations = String::new();
        let mut words = HashSet::new();
        for text in texts {
            add_words(&mut words, text);
            for found in FACT.find_iter(text) {
                if DOT_THOUSANDS.is_match(found.as_str()) {
                    numbers.insert(found.as_str().replace('.', ""));
                }
                let ends_day = text[found.end()..].starts_with('.');
                if let Some(mut parts) = DOTTED_DAY
                    .captures(found.as_str())
                    .filter(|_| ends_day)
                    .and_then(|day| day_parts(&day))
                {
                    parts.sort();
                    yearless.insert(parts.clone());
                    dates.insert(parts);
                }
                if let Fact::Number { whole, mut parts } = Fact::read(found.as_str()) {
                    numbers.insert(whole);
                    numbers.extend(parts.iter().cloned());
                    if parts.len() > 1 {
                        parts.sort();
                        // `7/8`, not a time (`7:08`) or a range (`7-8`).
                        if parts.len() == 2 && found.as_str().contains('/') {
                            yearless.insert(parts.clone());
                        }
                        dates.extend(without_year(&parts));
                        dates.insert(parts);
                    }
                }
            }
            for (_, parts) in dates_in(text) {
                if parts.len() == 2 {
                    yearless.insert(parts.clone());
                }
                dates.extend(without_year(&parts));
                dates.insert(parts);
            }
            squeezed.push_str(&squeeze(text));
            squeezed.push('\n');
            let either = EITHER_MODIFIER.replace_all(text, "$1$3 $2$3");
            combinations.push_str(&squeeze_keys(&either));
            combinations.push('\n');
        }
        KnownFacts {
            numbers,
            dates,
            yearless,
            squeezed,
            combinations,
            words,
            asked_versions: Vec::new(),
        }
    }

    /// Knows what the question gives: its names ([`KnownFacts::know_names_in`]), but not the
    /// versions it names ("Windows 7", "Obsidian 2.0"). Those must stand in a source to be
    /// stated: asked whether the desktop app still supports Windows 7, Qwen2.5-1.5B answered
    /// "Yes, the desktop app still runs on Windows 7." from notes that name no Windows
    /// version, and "Obsidian 2.0 is not currently scheduled" from a note whose only 2.0 was
    /// a license's.
    pub fn know_question(&mut self, question: &str) {
        self.know_names_in(question);
        self.asked_versions = versions_in(question);
    }

    /// Knows the words of `text` as names too (not its numbers): a question's own names
    /// ("Lena" asked about) are no invention, nor the folders a source sits in.
    pub fn know_names_in(&mut self, text: &str) {
        add_words(&mut self.words, text);
    }

    /// The facts `text` states (its citation marks aside) that stand nowhere in what is known,
    /// as written. `opens_sentence`: whether `text` begins a sentence (false: it goes on with
    /// one begun before it, so its first word may be a name).
    pub fn unsupported(&self, text: &str, opens_sentence: bool) -> Vec<String> {
        let text = without_marks(text);
        // A date with its month's name, or in CJK characters, is one fact: its year alone
        // stands in many notes, and its day, alone, is a digit or any number.
        let mut named = Vec::new();
        let mut unsupported = Vec::new();
        for (found, parts) in dates_in(&text) {
            if !self.holds_date(&parts) {
                // A full stop after the month ends the sentence as often as it shortens it.
                unsupported.push(text[found.clone()].trim().trim_end_matches('.').to_string());
            }
            named.push(found);
        }
        let facts = FACT
            .find_iter(&text)
            .filter(|found| !named.iter().any(|date| date.contains(&found.start())))
            // Digits written on to Latin letters are part of a name or a code ("AB1908", a
            // person's handle), not a figure of their own.
            .filter(|found| {
                !text[..found.start()].ends_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            })
            .filter_map(|found| {
                let before = &text[..found.start()];
                // A version the question names stands where a source writes it after the
                // same name: "Windows 7", not a 7 anywhere.
                if let Some(version) = self.unasked_version(before, found.as_str()) {
                    return Some(version);
                }
                let fact = Fact::read(found.as_str());
                let unsupported = match &fact {
                    // A single digit is a fact only as an amount, and then the amount must
                    // stand somewhere as written: "4GB", not a 4 anywhere.
                    Fact::Number { whole, .. } if whole.len() == 1 => {
                        amount(before, whole, &text[found.end()..])
                            .is_some_and(|forms| !forms.iter().any(|f| self.squeezed.contains(f)))
                    }
                    _ => !self.holds(&fact),
                };
                unsupported.then(|| found.as_str().trim().to_string())
            });
        unsupported.extend(facts);
        // A modifier key's name is no name: `Ctrl+Shift+D` was checked as a combination.
        let combinations: Vec<Range<usize>> = FACT
            .find_iter(&text)
            .filter(|found| !found.as_str().starts_with(|c: char| c.is_ascii_digit()))
            .map(|found| found.range())
            .collect();
        let names = names(&text, opens_sentence)
            .into_iter()
            .filter(|name| !combinations.iter().any(|keys| keys.contains(&name.start)))
            .map(|name| &text[name])
            .filter(|name| !is_abbreviation(name) && !self.holds_name(name))
            .map(str::to_string);
        unsupported.extend(names);
        unsupported
    }

    /// The version `number` is, written after `before`, when the question names it and no
    /// source writes it ("Windows 7": the name it follows and it are one of
    /// [`KnownFacts::asked_versions`], squeezed, and stand nowhere).
    fn unasked_version(&self, before: &str, number: &str) -> Option<String> {
        if self.asked_versions.is_empty() {
            return None;
        }
        let name = before
            .trim_end()
            .rsplit(|c: char| !c.is_alphanumeric())
            .next()
            .filter(|word| !word.is_empty())?;
        let version = squeeze(&format!("{name}{number}"));
        (self.asked_versions.contains(&version) && !self.squeezed.contains(&version))
            .then(|| format!("{name} {}", number.trim()))
    }

    /// Whether every word of `name` is known, or a word beginning with its first five letters;
    /// a hyphenated name also when it is known written as one word ("WiFi" for "Wi-Fi").
    pub fn holds_name(&self, name: &str) -> bool {
        let joined: String = name.chars().filter(|c| c.is_alphanumeric()).collect();
        if name.contains('-') && self.holds_name(&joined) {
            return true;
        }
        name.split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .all(|word| {
                let word = word.to_lowercase();
                self.words.contains(&word) || self.words.contains(&five_letters(&word))
            })
    }

    /// Whether the sources write the squeezed combination `keys` as a whole: `Ctrl+T` is not
    /// `Ctrl+Tab`.
    fn holds_keys(&self, keys: &str) -> bool {
        let text = &self.combinations;
        text.match_indices(keys).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + keys.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    }

    /// Whether the date of `parts` (sorted) stands: as written, or as a day and month written
    /// without a year ([`KnownFacts::yearless`]) and a year the sources hold as a number.
    fn holds_date(&self, parts: &[String]) -> bool {
        if self.dates.contains(parts) {
            return true;
        }
        let year = parts.iter().find(|p| p.len() == 4);
        year.is_some_and(|year| self.numbers.contains(year))
            && without_year(parts).is_some_and(|rest| self.yearless.contains(&rest))
    }

    fn holds(&self, fact: &Fact) -> bool {
        match fact {
            Fact::Number { whole, parts } => {
                let mut sorted = parts.clone();
                sorted.sort();
                self.numbers.contains(whole) || (parts.len() > 1 && self.holds_date(&sorted))
            }
            // A combination at the end of a sentence may carry its full stop.
            Fact::Keys(keys) => {
                self.holds_keys(keys)
                    || self.holds_keys(keys.trim_end_matches(['.', ',', ';', ':', ')']))
            }
        }
    }
}

/// Where the end of `text` may be a fact still being written, if it may: a word with a digit
/// in it, marks that may open one, a key combination not yet whole (a modifier key's name or
/// the start of one, then any keys joined by `+`, and perhaps a `+` still waiting for its key:
/// `Ctrl+`, `` `Cmd + ``), a word that may go on, or a capitalised word and a space (a version
/// number may follow: [`version_name`]). A stream holds the text from there back
/// until the fact is whole: shown before it is, a combination streamed a token at a time
/// (`Ctrl`, `+`, `Shift`, `+D`) would never be checked.
pub fn unfinished_fact(text: &str) -> Option<usize> {
    static UNFINISHED_KEYS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\b(?:{})(?:\s*[+]\s*[\p{{L}}\p{{N}}]+)*\s*[+]?\s*$",
            MODIFIERS.join("|")
        ))
        .expect("valid regex")
    });
    if let Some(keys) = UNFINISHED_KEYS.find(text) {
        // From the start of the word it stands in (`` `Ctrl ``), as a whole fact is held.
        let word = text[..keys.start()]
            .char_indices()
            .rfind(|(_, c)| c.is_whitespace())
            .map_or(0, |(at, c)| at + c.len_utf8());
        return Some(word);
    }
    // A capitalised word and a space may be followed by a version of it ("Obsidian 2.0"),
    // checked with it.
    if let Some(name) = version_name(text) {
        return Some(name);
    }
    let word = text.rsplit(char::is_whitespace).next().unwrap_or("");
    let name = word
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    // Marks alone (`` ` ``, `(`, `**`) may open one too.
    let may_begin = word.chars().any(|c| c.is_ascii_digit())
        || (name.is_empty() && !word.is_empty())
        || (!name.is_empty() && MODIFIERS.iter().any(|m| m.starts_with(&name)));
    if may_begin {
        return Some(text.len() - word.len());
    }
    // A word may be cut between tokens, and its tail may open with a capital: shown as far as
    // "iOS/i", the rest ("PadOS") read as a name of its own. (Latin letters: a run of CJK
    // characters has no word to wait for.)
    let tail = text
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric())
        .len();
    (tail < text.len()).then_some(tail)
}

/// Where the clause that begins `text` ends: after a sentence or clause mark followed by
/// whitespace, or at a line's end; `None` while it may go on.
pub fn clause_end(text: &str) -> Option<usize> {
    static END: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[.,;:!?。，；：！？]\s|\n").expect("valid regex"));
    END.find(text).map(|found| found.end())
}

/// Where the first fact of `text` begins, if it has one (a whole number, a modifier key
/// followed by `+`, a date led by its month's name, or a name: `opens_sentence` as for
/// [`KnownFacts::unsupported`]).
pub fn first_fact(text: &str, opens_sentence: bool) -> Option<usize> {
    let text_marks = citation_marks(text);
    let fact = FACT
        .find_iter(text)
        .find(|found| {
            !text_marks
                .iter()
                .any(|mark| mark.span.contains(&found.start()))
        })
        .map(
            |found| match found.as_str().starts_with(|c: char| c.is_ascii_digit()) {
                true => version_name(&text[..found.start()]).unwrap_or(found.start()),
                false => found.start(),
            },
        );
    let name = names(text, opens_sentence).first().map(|name| name.start);
    // A date led by its month ("May 1") is checked whole, from the month's name.
    let date = dates_in(text)
        .into_iter()
        .map(|(found, _)| found.start)
        .min();
    fact.into_iter().chain(name).chain(date).min()
}

/// Where the capitalised word that `before` ends in starts, followed by one space: the name a
/// number after it may be a version of ("Obsidian 2.0" opening a sentence), which is checked
/// with it.
fn version_name(before: &str) -> Option<usize> {
    let word = before.strip_suffix(' ')?;
    let start = word
        .char_indices()
        .rfind(|(_, c)| !c.is_alphanumeric())
        .map_or(0, |(at, c)| at + c.len_utf8());
    word[start..]
        .starts_with(char::is_uppercase)
        .then_some(start)
}

/// Whether `text` ends a sentence (a stream's next words open one): it ends, spaces and
/// citation marks aside, in a line's end or a full stop, question or exclamation mark; `None`
/// when it is nothing but those (`[4] ` opening a line leaves the sentence to come open).
pub fn ends_sentence(text: &str) -> Option<bool> {
    let plain = without_marks(text);
    let plain = plain.trim_end_matches([' ', '\t']);
    if plain.trim().is_empty() {
        return plain.ends_with('\n').then_some(true);
    }
    let plain = plain.trim_end_matches(CLOSING);
    Some(plain.ends_with(['\n', '.', '!', '?', '。', '！', '？']))
}

/// What may close a sentence after its full stop: quotes, a bracket, emphasis
/// (`"Cheaper AND sooner." This quote …` opens a sentence at "This").
const CLOSING: &[char] = &['"', '\'', '”', '’', '」', '』', ')', '*', '_'];

/// Whether `word`, written with a capital, may be a name: not a stop word of any language
/// Recall reads ([`is_stop_word`]: a question word, a pronoun, an article; "I'm" by its "I"),
/// nor a month's or a weekday's name in any of them (a date, not whom it is about; short
/// weekday names in English only, `Sat`).
pub fn may_be_a_name(word: &str) -> bool {
    let word = word.split(['\'', '’']).next().unwrap_or(word);
    !is_stop_word(word)
        && month_name(word).is_none()
        && !WEEKDAY_NAMES.contains(&word.to_lowercase())
        && word.parse::<Weekday>().is_err()
}

/// Where `text` names someone or something: each word written with a capital past the first
/// of its sentence (a possessive `'s` left out) that [`may_be_a_name`]. `opens_sentence`: whether
/// `text` begins a sentence; false when it goes on with one begun before it.
pub fn names(text: &str, opens_sentence: bool) -> Vec<Range<usize>> {
    // A hyphenated word is one ("Wi-Fi" is no two names). A run of Chinese, Japanese or
    // Korean script is a word of its own: "维生素D偏低" holds no name "D偏低".
    static WORD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]+|[\p{L}\p{N}&&[^\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]]+(?:['’-][\p{L}\p{N}&&[^\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]]+)*",
        )
        .expect("valid regex")
    });
    static SENTENCE_END: LazyLock<Regex> = LazyLock::new(|| {
        let closing: String = CLOSING
            .iter()
            .map(|c| regex::escape(&c.to_string()))
            .collect();
        Regex::new(&format!(r"[.!?。！？][{closing}]*(?:\s|$)|\n")).expect("valid regex")
    });
    let text = &without_marks(text);
    let mut ends = SENTENCE_END.find_iter(text).map(|end| end.end()).peekable();
    let mut first_of_sentence = opens_sentence;
    let mut names = Vec::new();
    for word in WORD.find_iter(text) {
        while ends.next_if(|&end| end <= word.start()).is_some() {
            first_of_sentence = true;
        }
        if std::mem::take(&mut first_of_sentence) {
            continue;
        }
        let name = word.as_str();
        let name = name
            .strip_suffix("'s")
            .or_else(|| name.strip_suffix("’s"))
            .unwrap_or(name);
        if name.starts_with(char::is_uppercase) && may_be_a_name(name) {
            names.push(word.start()..word.start() + name.len());
        }
    }
    names
}

/// Whether `word` is four capitals or fewer: a format or a unit (`PDF`, `RAM`, `GB`) more
/// often than a name, written from what a model knows of the world, not of the notes.
fn is_abbreviation(word: &str) -> bool {
    word.chars().count() <= 4 && word.chars().all(|c| c.is_uppercase())
}

/// The names `text` gives ([`names`], `text` opening a sentence), as written, each once in
/// any case ("Sophie was out shopping. The note says Sophie B …" names "Sophie" and "B").
pub fn names_in(text: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    for name in names(text, true) {
        let name = &text[name];
        if !found
            .iter()
            .any(|f| f.to_lowercase() == name.to_lowercase())
        {
            found.push(name);
        }
    }
    found
}

/// The versions `text` names: a name ([`names`]) and the number right after it, not an
/// amount ("Windows 7", "Obsidian 2.0", "Android 12.1"; not "Plus 10 GB"), squeezed
/// ("windows7").
fn versions_in(text: &str) -> Vec<String> {
    static NUMBER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\s+(\d+(?:\.\d+)*)\b").expect("valid regex"));
    let text = &without_marks(text);
    let mut versions = Vec::new();
    for name in names(text, true) {
        let Some(number) = NUMBER.captures(&text[name.end..]).and_then(|c| c.get(1)) else {
            continue;
        };
        let (start, end) = (name.end + number.start(), name.end + number.end());
        if amount(&text[..start], number.as_str(), &text[end..]).is_none() {
            versions.push(squeeze(&format!("{}{}", &text[name], number.as_str())));
        }
    }
    versions
}

/// Adds the words of `text` to `words`, lowercase, each of five letters or more also as its
/// first five ([`KnownFacts::words`]).
fn add_words(words: &mut HashSet<String>, text: &str) {
    // Split where Chinese, Japanese or Korean script meets another, as [`names`] reads words:
    // "用Obsidian记" holds the word "obsidian".
    let mut pieces = Vec::new();
    for piece in text.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let mut chars = piece.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if chars
                .peek()
                .is_some_and(|&(_, next)| is_cjk(next) != is_cjk(c))
            {
                let end = at + c.len_utf8();
                pieces.push(&piece[start..end]);
                start = end;
            }
        }
        pieces.push(&piece[start..]);
    }
    for word in pieces {
        if word.is_empty() {
            continue;
        }
        let word = word.to_lowercase();
        if word.chars().count() >= 5 {
            words.insert(five_letters(&word));
        }
        words.insert(word);
    }
}

/// The first five letters of `word`.
fn five_letters(word: &str) -> String {
    word.chars().take(5).collect()
}

/// One fact in normal form.
#[derive(Debug, PartialEq, Eq)]
enum Fact {
    /// A number: thousands separators taken out, and each part of a time or date (`09:00`,
    /// `2021-05-11`) without its leading zeros.
    Number { whole: String, parts: Vec<String> },
    /// A key combination, squeezed ([`squeeze_keys`]).
    Keys(String),
}

impl Fact {
    fn read(found: &str) -> Fact {
        if !found.starts_with(|c: char| c.is_ascii_digit()) {
            return Fact::Keys(squeeze_keys(found));
        }
        if let Some(parts) = DOTTED_DATE
            .captures(found)
            .and_then(|date| day_parts(&date))
        {
            return Fact::Number {
                whole: parts.join("."),
                parts,
            };
        }
        let plain = THOUSANDS.replace_all(found, "$1$2");
        let plain = THOUSANDS.replace_all(&plain, "$1$2");
        let plain = DECIMAL_COMMA.replace_all(&plain, "$1.$2");
        // `99.00` is `99`, `8.50` is `8.5`.
        let plain = match plain.split_once('.') {
            Some((whole, decimals)) if decimals.bytes().all(|b| b.is_ascii_digit()) => {
                match decimals.trim_end_matches('0') {
                    "" => whole.to_string(),
                    kept => format!("{whole}.{kept}"),
                }
            }
            _ => plain.into_owned(),
        };
        let parts: Vec<String> = plain
            .split([':', '/', '-'])
            .map(|p| match p.trim_start_matches('0') {
                "" => "0".to_string(),
                rest => rest.to_string(),
            })
            .collect();
        let seps = plain.chars().filter(|c| matches!(c, ':' | '/' | '-'));
        let mut whole = parts[0].clone();
        for (sep, part) in seps.zip(&parts[1..]) {
            whole.push(sep);
            whole.push_str(part);
        }
        Fact::Number { whole, parts }
    }
}

/// The forms in which a source may write the amount `number` is between `before` and
/// `after`, squeezed ([`squeeze`]), when it is one: a currency sign before it (`$5`, or `5$`
/// after it), or a unit after it (`4GB`, `5 %`, `1小时`; `1 hour` also as `1h`). A single
/// digit counts as a fact only so: "3 ways" may count a list's items, "4GB" of RAM is read
/// somewhere or nowhere.
fn amount(before: &str, number: &str, after: &str) -> Option<Vec<String>> {
    static UNIT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)^\s?(?:%|[kmgt]i?b\b|px\b|pt\b|ms\b|sec|seconds?\b|min|minutes?\b|hours?\b|days?\b|weeks?\b|months?\b|years?\b|am\b|pm\b|x\b|km\b|kg\b|个?(?:小时|钟头|星期|月)|分钟|秒|天|周|年|岁|公里|千米|公斤|斤|元|块|次|遍|倍)",
        )
        .expect("valid regex")
    });
    if let Some(sign) = before.chars().last().filter(|c| "$€£¥".contains(*c)) {
        return Some(vec![format!("{sign}{number}"), format!("{number}{sign}")]);
    }
    let unit = squeeze(UNIT.find(after)?.as_str());
    let mut forms = vec![format!("{number}{unit}")];
    if unit.len() > 2 && unit.starts_with(|c: char| c.is_ascii_alphabetic()) {
        forms.push(format!("{number}{}", &unit[..1]));
    }
    Some(forms)
}

/// Lowercase, without whitespace and backticks.
fn squeeze(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '`')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Lowercase, without backticks and the whitespace around each `+` (other whitespace kept:
/// a combination's edges are word edges).
fn squeeze_keys(text: &str) -> String {
    static AROUND_PLUS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\s*\+\s*").expect("valid regex"));
    AROUND_PLUS
        .replace_all(&text.replace('`', ""), "+")
        .to_lowercase()
}

/// `text` with its citation marks blanked out (their numbers are no facts, nor their words
/// the first of a sentence: "[4] Check the box"), each by as many spaces, so that what is
/// found in it stands where it stands in `text`.
pub fn without_marks(text: &str) -> String {
    let mut out = text.to_string();
    for mark in citation_marks(text).iter().rev() {
        out.replace_range(mark.span.clone(), &" ".repeat(mark.span.len()));
    }
    out
}

#[cfg(test)]
mod tests;
