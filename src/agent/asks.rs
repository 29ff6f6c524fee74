//! What a question asks for: a kind of fact by name ([`Wanted`]: an email address, a phone
//! number, a time, keys), a figure of a kind ([`asks_a_figure`], [`FigureKind`]) or a name
//! ([`asks_a_name`]), and whether an answer's text holds it. Every check of an answer reads
//! the question through these. Pure.

use std::sync::LazyLock;

use regex::Regex;

use crate::facts::{without_marks, writes_date};

/// What a question asks for, as the checks of an answer read it: read from its words
/// ([`Asks::in_words`], English, Chinese, Japanese and Korean only) or by the model in any
/// language ([`Kind`], `--question-kind model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Asks {
    /// A figure: a date, a time, an amount, a phone number or any other number.
    pub(super) figure: bool,
    /// The kind of figure, where the question says.
    pub(super) figure_kind: Option<FigureKind>,
    /// A kind of fact by name, which an answer must hold to be one.
    pub(super) wanted: Option<Wanted>,
    /// A name: who, where, what something is called or its brand.
    pub(super) name: bool,
}

impl Asks {
    /// What `question` asks for by its words.
    pub(super) fn in_words(question: &str) -> Asks {
        Asks {
            figure: asks_a_figure(question),
            figure_kind: FigureKind::asked(question),
            wanted: Wanted::in_question(question),
            name: asks_a_name(question),
        }
    }
}

/// The kind of answer a question asks for, as the model names it with one word of
/// [`Kind::WORDS`] under a grammar: the same in any language, where [`Asks::in_words`] reads
/// only the question words of a few.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Date,
    Time,
    Amount,
    Phone,
    Number,
    Email,
    Name,
    Keys,
    /// Several things or people: no one fact an answer must hold.
    List,
    Other,
}

impl Kind {
    /// The word the model replies for each kind, in the order of [`Kind::ALL`]; each starts
    /// with a token of its own, for the odds of each to be read from the first. "day" and
    /// "clock", not "date" and "time": offered "time", Qwen2.5-1.5B took "when?" and "a
    /// month" for a time of day.
    pub(super) const WORDS: [&'static str; 10] = [
        "day", "clock", "amount", "phone", "number", "email", "name", "keys", "list", "other",
    ];
    const ALL: [Kind; 10] = [
        Kind::Date,
        Kind::Time,
        Kind::Amount,
        Kind::Phone,
        Kind::Number,
        Kind::Email,
        Kind::Name,
        Kind::Keys,
        Kind::List,
        Kind::Other,
    ];

    /// The kind of the `at`th word of [`Kind::WORDS`].
    pub(super) fn at(at: usize) -> Option<Kind> {
        Kind::ALL.get(at).copied()
    }

    /// The grammar of the reply: one of [`Kind::WORDS`].
    pub(super) fn gbnf() -> String {
        let words: Vec<String> = Kind::WORDS.iter().map(|w| format!("\"{w}\"")).collect();
        format!("root ::= {}\n", words.join(" | "))
    }

    /// What a question of this kind asks for, as the checks read it.
    pub(super) fn asks(self) -> Asks {
        let figure = |kind| Asks {
            figure: true,
            figure_kind: kind,
            ..Asks::default()
        };
        match self {
            Kind::Date => figure(Some(FigureKind::Day)),
            Kind::Time => Asks {
                wanted: Some(Wanted::Time),
                ..figure(Some(FigureKind::Time))
            },
            Kind::Amount => Asks {
                wanted: Some(Wanted::Amount),
                ..figure(Some(FigureKind::Amount))
            },
            Kind::Phone => Asks {
                wanted: Some(Wanted::Phone),
                ..figure(None)
            },
            Kind::Number => figure(None),
            Kind::Email => Asks {
                wanted: Some(Wanted::Email),
                ..Asks::default()
            },
            Kind::Keys => Asks {
                wanted: Some(Wanted::Keys),
                ..Asks::default()
            },
            Kind::Name => Asks {
                name: true,
                ..Asks::default()
            },
            Kind::List | Kind::Other => Asks::default(),
        }
    }
}

/// A kind of fact a question asks for by name, which an answer must hold to be one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wanted {
    /// "What's Lena's email?", "Wouter Kamp's email address", "邮箱".
    Email,
    /// "Tomasz's mobile number?", "电话号码", "舅舅电话", "工长的电话多少？" (电话 asked
    /// for, not "打电话了吗", a call made).
    Phone,
    /// "How many …?", "How much …?": a count or an amount. An answer without one is no
    /// answer, however it reads: asked what the notes cannot answer, Qwen2.5-1.5B described
    /// what the source was about instead ("How many supporter licenses have been sold?" got
    /// "The Catalyst license is a one-time purchase that …"; three of 28 such help questions).
    Amount,
    /// "What time was the hearing test?", "约的几点": a time of day. Asked what the notes
    /// cannot answer, Qwen2.5-1.5B gave the day instead (asked the time of a hearing test,
    /// it said "19 April").
    Time,
    /// "Hotkey to close every open tab?", "Keyboard shortcut to …?": a key or a key
    /// combination, or a plain word that there is none. Asked what the notes cannot answer,
    /// Qwen2.5-1.5B named a command or a setting instead ("use the command `Templates: Insert
    /// template`", "the Light/Dark Toggle option"; two of 28 such help questions).
    Keys,
}

impl Wanted {
    /// The kind of fact `question` asks for by name, if any. Only the names of a thing a
    /// person keeps ("Lena's email", "her email", "email address"): "Did I email Lena?" asks
    /// for no address.
    pub(super) fn in_question(question: &str) -> Option<Wanted> {
        static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?i)(?:['’]s|\b(?:my|your|his|her|their))\s+e-?mail\b|\be-?mail\s+(?:address|of|for)\b|邮箱|電子メール|メールアドレス|이메일\s*주소",
            )
            .expect("valid regex")
        });
        static PHONE: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?i)\b(?:phone|telephone|mobile|cell)\s+number\b|(?:['’]s|\b(?:my|your|his|her|their))\s+(?:phone|mobile|number)\b|电话号码|手机号|電話番号|전화\s*번호|(?:电话|手机)(?:是?多少|(?:是什么)?\s*[？?]?\s*$)",
            )
            .expect("valid regex")
        });
        static AMOUNT: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"(?i)\bhow\s+(?:much|many)\b").expect("valid regex"));
        static TIME: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"(?i)\bwhat\s+time\b|几点|幾點|몇\s*시").expect("valid regex")
        });
        static KEYS: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?i)\b(?:hot-?keys?|(?:keyboard\s+)?shortcuts?|key\s+combinations?|which\s+keys?|what\s+keys?)\b|快捷键|ショートカット|단축키",
            )
            .expect("valid regex")
        });
        if EMAIL.is_match(question) {
            Some(Wanted::Email)
        } else if PHONE.is_match(question) {
            Some(Wanted::Phone)
        } else if TIME.is_match(question) {
            Some(Wanted::Time)
        } else if AMOUNT.is_match(question) {
            Some(Wanted::Amount)
        } else if KEYS.is_match(question) {
            Some(Wanted::Keys)
        } else {
            None
        }
    }

    /// Whether `text` holds a fact of this kind: an address with an `@` and a domain; a run
    /// of at least seven digits and the separators phone numbers are written with; a digit
    /// (citation marks aside), a number written out, or no amount at all said plainly ("free",
    /// "unlimited"). "One" is left out: "a one-time purchase" counts nothing.
    pub(super) fn held_in(self, text: &str) -> bool {
        static EMAIL: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"[\w.+-]+@[\w-]+\.").expect("valid regex"));
        static DIGITS: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"[+(\d][\d \-().]{5,}").expect("valid regex"));
        static AMOUNT: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?i)\d|\b(?:zero|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen|half|once|twice|free|unlimited|no\s+limit)\b",
            )
            .expect("valid regex")
        });
        // Word boundaries around digits and keys are ASCII ones: "约了14:30在", "按Ctrl+S"
        // have none in Unicode's reading, CJK characters being word characters.
        // A modifier and a key, a key by its name (written as keys are: "Space", "Esc"), a
        // short key in backticks (`/`), or no key said plainly.
        static KEY: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?x)
                (?i:(?-u:\b)(?:ctrl|control|cmd|command|alt|option|opt|shift|win|super|meta)\s*\+)
              | (?-i:(?-u:\b)(?:Ctrl|Cmd|Alt|Shift|Space|Spacebar|Enter|Return|Tab|Esc|Escape|Backspace|Delete|Del|Home|End|PageUp|PageDown|PgUp|PgDn|F\d{1,2})(?-u:\b))
              | [⌘⌥⇧⌃↵⏎]
              | `[^`\s]{1,12}`
              | (?i:\bkey\b)
              | (?i:\bno\s+(?:default\s+)?(?:hot-?key|shortcut)
                  | \b(?:not|n['’]t)\s+(?:have\s+)?(?:a\s+|any\s+)?(?:default\s+)?(?:hot-?key|shortcut)
                  | \b(?:assign|set|add|bind|create)\w*\s+(?:\w+\s+){0,3}?(?:hot-?key|shortcut))
                ",
            )
            .expect("valid regex")
        });
        // A clock time, or a time of day said in words.
        static TIME: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?i)(?-u:\b)\d{1,2}[:.]\d{2}(?-u:\b)|(?-u:\b)\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.|h)(?-u:\b)|o['’]clock|\b(?:noon|midday|midnight|morning|afternoon|evening|lunchtime)\b|\bhalf\s+(?:past\s+)?\w+|\bquarter\s+(?:past|to)\b|[点點時시]|上午|下午|晚上|中午|早上",
            )
            .expect("valid regex")
        });
        match self {
            Wanted::Time => TIME.is_match(&without_marks(text)),
            Wanted::Keys => KEY.is_match(&without_marks(text)),
            Wanted::Email => EMAIL.is_match(text),
            Wanted::Phone => DIGITS
                .find_iter(text)
                .any(|run| run.as_str().bytes().filter(u8::is_ascii_digit).count() >= 7),
            Wanted::Amount => AMOUNT.is_match(&without_marks(text)),
        }
    }
}

/// Whether `question` asks for a figure: a date or a time ("When …?", "What's the
/// deadline …?"), an amount or a count ("How much …?", "How many …?"), a length of time, a
/// year, a price, a phone number or any other number ("flight number for the way home",
/// 号码, 编号: asked what no note gives, Qwen2.5-1.5B gave the outbound flight's).
pub(super) fn asks_a_figure(question: &str) -> bool {
    figure_asked(question).is_some()
        || matches!(
            Wanted::in_question(question),
            Some(Wanted::Phone | Wanted::Amount | Wanted::Time)
        )
}

/// The words that ask for a figure, by the kind of figure they ask for (`None`: of no one
/// kind), the kinds in the order they are told: "How long until my birthday?" asks an amount.
/// One table serves both whether a question asks a figure ([`asks_a_figure`]) and which kind
/// ([`FigureKind::asked`]); a time of day is asked by name ([`Wanted::Time`]).
const FIGURE_WORDS: [(Option<FigureKind>, &str); 3] = [
    // What someone is paid, earns or charges, or pays for a thing: "what does oisín get paid
    // an hour" (asked what no note gives, Qwen2.5-1.5B gave a monthly payment of another).
    (
        Some(FigureKind::Amount),
        r"(?i)\bhow\s+(?:much|many|long|old)\b|\b(?:price|cost)\b|\bnumber\s+of\b|^\W*what\b.*\b(?:paid|pay|earns?|wages?|salary|rent|fees?|charged?)\b|多少|多久|多长时间|几[岁次个张片本位天年月周件只条遍趟场块台]|何歳|いくら|いくつ|얼마|몇",
    ),
    (
        Some(FigureKind::Day),
        r"(?i)^\W*when\b|\bwhen['’]s\b|\b(?:what|which)\s+(?:year|date|day)\b|\b(?:deadline|due\s+date|birthday)\b|几月几[日号]|几号|什么时候|哪一?天|哪一?年|何日|何年|いつ|언제|며칠",
    ),
    // Any other number ("flight number for the way home", 号码, 编号: asked what no note
    // gives, Qwen2.5-1.5B gave the outbound flight's), a place in a ranking (第几名).
    (None, r"(?i)\bnumber\b|号码|编号|第几|何時"),
];

/// Whether `question` asks for a figure by the words of [`FIGURE_WORDS`], and of which kind
/// (the first row's that matches).
fn figure_asked(question: &str) -> Option<Option<FigureKind>> {
    static WORDS: LazyLock<Vec<(Option<FigureKind>, Regex)>> = LazyLock::new(|| {
        FIGURE_WORDS
            .iter()
            .map(|(kind, pattern)| (*kind, Regex::new(pattern).expect("valid regex")))
            .collect()
    });
    WORDS
        .iter()
        .find(|(_, words)| words.is_match(question))
        .map(|(kind, _)| *kind)
}

/// Whether `question` asks for a name: who, whose or where, what something is called or its
/// brand ("谁", "叫什么", "什么牌子", "哪家", "在哪"). Asked what a personal vault cannot answer,
/// Qwen2.5-1.5B named the nearest one: "出版社编辑叫什么名字？" got a running friend's name,
/// "厨房水槽是什么牌子的" the brand of the cabinets. A figure asked for is checked as one,
/// and a question asking for another kind of fact ([`Wanted`]) asks for no name: "the
/// plumber who came back: what's his email?" asks for an address.
pub(super) fn asks_a_name(question: &str) -> bool {
    static NAME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)\bwho(?:m|se)?\b|\bwhere\b|\bwhat(?:\s+is|\s+was|['’]s)?\s+(?:(?:the|my|his|her|their)\s+)?(?:name|brand|make)\b|\b(?:called|named|name)\s*\??\s*$|\bname\s+of\b|\bwhich\s+(?:\w+\s+)?(?:brand|make|model|shop|store|restaurant|café|cafe|pub|hotel|company|firm|variety|doctor|dentist|school|garage)\b|谁|叫什么|什么名字|名字是什么|什么牌子|哪个?牌子|哪家|哪位|哪里|哪儿|在哪|哪个地方|哪场|哪趟|哪所|誰|どこ|何という|누구|어디",
        )
        .expect("valid regex")
    });
    !asks_a_figure(question) && Wanted::in_question(question).is_none() && NAME.is_match(question)
}

/// The kind of figure a question asks for, where it says: the first figure of that kind in
/// the answer is the one checked. "How much attendance allowance does mum get a week?" got
/// the day the form was posted before £72.65, and the day was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FigureKind {
    /// A date or a year: "When …?", "What year …?", "哪天", "几号".
    Day,
    /// A time of day: "What time …?", "几点".
    Time,
    /// A count, a sum or a length of time: "How much …?", "How long …?", "多少", "几天".
    Amount,
}

impl FigureKind {
    /// The kind `question` asks for; `None` when it does not say (a phone number, "第几名").
    pub(super) fn asked(question: &str) -> Option<FigureKind> {
        if Wanted::in_question(question) == Some(Wanted::Time) {
            return Some(FigureKind::Time);
        }
        figure_asked(question).flatten()
    }

    /// The kind of `figure`, as a fact the fact check read, written before `after`.
    pub(super) fn of(figure: &str, after: &str) -> FigureKind {
        static NUMERIC_DATE: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|(?:19|20)\d{2})$")
                .expect("valid regex")
        });
        static CLOCK: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^\d{1,2}:\d{2}(?::\d{2})?$").expect("valid regex"));
        static TIME_AFTER: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"(?i)^\s?(?:am(?-u:\b)|pm(?-u:\b)|a\.m\.|p\.m\.|o['’]clock|点|點|時|시)")
                .expect("valid regex")
        });
        let after = after.get(figure.len()..).unwrap_or("");
        if writes_date(figure) || NUMERIC_DATE.is_match(figure) {
            FigureKind::Day
        } else if CLOCK.is_match(figure) || TIME_AFTER.is_match(after) {
            FigureKind::Time
        } else {
            FigureKind::Amount
        }
    }
}

#[cfg(test)]
mod tests;
