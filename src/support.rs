//! Which numbered sources an answer's words come from: the check behind citations.
//!
//! Small models put the right fact next to the wrong number (a mnemonic found only in source 2,
//! cited as `[1]`, because `[1]` is what the instruction's example wrote). A citation should name
//! where the answer came from, so each citation mark is held against the words it vouches for
//! (`sources::claims`): the terms it uses that the question did not (stemmed, stop words out,
//! as the vault's search reads them), each weighted by how few sources hold it. A cited source
//! holding next to none of that evidence, beside one holding much, is replaced by the one that
//! holds it. With too little evidence to judge (a short or paraphrasing answer), the numbers
//! stand as written. An answer with no words of its own at all, or a bare yes or no ([`adds`]),
//! has nothing a citation could stand for: the agent quotes the best sources after it.

use std::collections::{BTreeSet, HashSet};
use std::sync::LazyLock;

use obsidian_kb::language::Language;
use obsidian_kb::search::Tokenizer;
use regex::Regex;

/// Evidence below which the check has no opinion: two terms that only one source holds.
const MIN_EVIDENCE: f32 = 2.0;

/// Words of its own ([`words_in`]) that make a text a claim a source should stand behind
/// ([`states_something`]): more than a lead-in's `follow` and `step`.
const MIN_CLAIM_WORDS: f32 = 3.0;

/// A cited source is borne out when it holds at least this share of the best source's evidence,
/// or [`MIN_EVIDENCE`] itself.
/// Low on purpose: a long answer shares many plain words with a long, general passage, so only
/// a source holding next to none of the answer's words is overruled (on the Obsidian help
/// questions at one half, 1 of 5 replacements moved a fair citation to a general note).
const BORNE_OUT_SHARE: f32 = 0.3;

/// The cited numbers after the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The numbers the citations keep: those the evidence bears out, plus the best-supported
    /// source when any was dropped.
    pub numbers: BTreeSet<usize>,
    /// The number added for the answer's words, with the written numbers it replaces.
    pub replaced: Option<(usize, BTreeSet<usize>)>,
}

/// The terms of some sources (each one's label and text, as [`crate::sources`] gives them),
/// read once and held against each claim made of them.
pub struct SourceTerms {
    tokenizer: Tokenizer,
    held: Vec<HashSet<String>>,
}

impl SourceTerms {
    /// Reads the terms of `sources`.
    pub fn new(sources: &[String]) -> SourceTerms {
        let mut tokenizer = Tokenizer::for_text(&sources.join("\n"));
        let held = sources
            .iter()
            .map(|text| tokenizer.query_terms(text).into_iter().collect())
            .collect();
        SourceTerms { tokenizer, held }
    }

    /// How much of `answer`'s own evidence each source holds, by position: each term the
    /// answer uses and the question does not, shared among the sources holding it.
    pub fn evidence(&mut self, question: &str, answer: &str) -> Vec<f32> {
        let terms = own_terms(&mut self.tokenizer, question, answer);
        evidence_of(&terms, &self.held)
    }

    /// The source holding the most of `text`'s evidence, by position; `None` when none holds
    /// any of it.
    pub fn best(&mut self, text: &str) -> Option<usize> {
        let scores = self.evidence("", text);
        let (best, score) = scores
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))?;
        (*score > 0.0).then_some(best)
    }
}

/// Each source's share of `terms`.
fn evidence_of(terms: &[String], held: &[HashSet<String>]) -> Vec<f32> {
    let mut scores = vec![0.0; held.len()];
    for term in terms {
        let holders: Vec<usize> = (0..held.len())
            .filter(|&i| held[i].contains(term))
            .collect();
        // A term with a digit (a size, a price, a key, a date) that one source alone holds is
        // a fact no paraphrase makes up: it counts double. Shared ones (`00` of two times)
        // single out nothing.
        let specific = term.bytes().any(|b| b.is_ascii_digit()) && holders.len() == 1;
        let weight = if specific { 2.0 } else { 1.0 } / holders.len().max(1) as f32;
        for i in holders {
            scores[i] += weight;
        }
    }
    scores
}

/// What an answer adds to the question it answers (see [`adds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adds {
    /// Nothing: every term it uses was asked, and it gives no yes or no of its own. "The
    /// answer is: [2]." and the question restated with a number after it are such answers (a
    /// 135M model writes them for four questions in ten, a 1.5B one now and then): there is
    /// nothing in them for a source to bear out, or for the reader to learn.
    Nothing,
    /// A yes or no of its own and too little else to be a claim ([`states_something`]): "Yes,
    /// you can <the question's words> [1]." A 1.5B model writes that readily, right or wrong
    /// (Qwen2.5-1.5B: for 9 of 103 help questions, 4 of them where the notes say no), so the
    /// verdict alone is not worth trusting.
    VerdictOnly,
    /// Something of its own.
    Something,
}

/// What `answer` adds to `question`: its terms are held against `asked` (the instruction the
/// question stands in), its citation marks set aside; a `doesn't` that `question` already
/// holds is no verdict. The agent takes out the source headers an answer copied before asking
/// ([`crate::sources::without_copied_headers`]).
pub fn adds(question: &str, asked: &str, answer: &str) -> Adds {
    // A Chinese, Japanese or Korean yes or no stands as a clause of its own ("是的，…",
    // "いいえ、…", "네, …"): `\b` is a Unicode word boundary, so `不` inside `不要` or `できます`
    // ending a sentence is no verdict.
    static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
        let [yes, yes_cjk] = YES;
        let [no, no_cjk] = NO;
        Regex::new(&format!(r"(?i)\b(?:{yes}|{no}|{yes_cjk}|{no_cjk})\b")).expect("valid regex")
    });
    let verdicts = |text: &str| -> HashSet<String> {
        VERDICT
            .find_iter(text)
            .map(|m| m.as_str().to_lowercase().replace('’', "'"))
            .collect()
    };
    // "A or B?" is answered by naming one of them, in the question's own words: a choice,
    // which counts as a verdict.
    let chooses = offers_choice(question) && !answer.trim().is_empty();
    let in_question = verdicts(question);
    let gives_verdict = verdicts(answer).iter().any(|v| !in_question.contains(v));
    let own = own_terms(&mut reader(&[question, answer]), asked, answer);
    match (gives_verdict || chooses, own.is_empty()) {
        (false, true) => Adds::Nothing,
        (true, _) if words_in(&own) < MIN_CLAIM_WORDS => Adds::VerdictOnly,
        _ => Adds::Something,
    }
}

/// Words saying yes: English ones (whole words), then Chinese, Japanese and Korean ones.
const YES: [&str; 2] = [r"yes", r"是的?|对|可以|能|はい|できます|네|예"];

/// Words saying no, likewise.
const NO: [&str; 2] = [
    r"no|not|never|none|nothing|cannot|\w*n['’]t",
    r"不|不是|不可以|不能|不会|没有|无法|不行|いいえ|できません|아니요|아니오|아뇨",
];

/// Whether `question` offers a choice ("A or B?").
pub fn offers_choice(question: &str) -> bool {
    static CHOICE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\bor\b|还是|或者|または|それとも|아니면|또는").expect("valid regex")
    });
    CHOICE.is_match(question)
}

/// About how many words `terms` stand for: a Chinese, Japanese or Korean run of n characters
/// is read as n - 1 bigrams, and a word of those languages is about two characters, so a
/// bigram counts half. Otherwise a Korean "아니요, 없습니다" (no, there is none) would be a
/// claim of three terms.
fn words_in(terms: &[String]) -> f32 {
    terms
        .iter()
        .map(|t| if Language::of(t).is_some() { 0.5 } else { 1.0 })
        .sum()
}

/// True when `text` states something of its own: at least [`MIN_CLAIM_WORDS`] words that
/// `asked` (the instruction the question stands in) lacks. A lead-in ("To update them, follow
/// these steps:") does not; a sentence with the answer's facts does.
pub fn states_something(asked: &str, text: &str) -> bool {
    words_in(&own_terms(&mut reader(&[asked, text]), asked, text)) >= MIN_CLAIM_WORDS
}

/// The share of `answer`'s own terms (distinct, those `asked` lacks, citation marks aside)
/// that `source` holds: how much of an answer said to come from that one source does. 0 for
/// an answer with no terms of its own.
pub fn held_share(asked: &str, answer: &str, source: &str) -> f32 {
    let mut tokenizer = reader(&[answer, source]);
    let own: HashSet<String> = own_terms(&mut tokenizer, asked, answer)
        .into_iter()
        .collect();
    if own.is_empty() {
        return 0.0;
    }
    let held: HashSet<String> = tokenizer.query_terms(source).into_iter().collect();
    own.iter().filter(|term| held.contains(*term)).count() as f32 / own.len() as f32
}

/// How a text's terms stand to what was asked (see [`overlap`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overlap {
    /// Distinct terms of the text that were not asked.
    pub own: usize,
    /// About how many words those terms stand for (a CJK bigram counts half, [`words_in`]).
    pub own_words: f32,
    /// Whether one of them holds a digit: a number, a size, a key.
    pub own_number: bool,
    /// Terms of the text that were asked.
    pub asked: usize,
}

/// The terms of `text` (stemmed, stop words out, CJK in bigrams, as the vault's search reads
/// them) held against those of `asked`: what a quiz answer adds to its question or its note's
/// title.
pub fn overlap(asked: &str, text: &str) -> Overlap {
    let mut tokenizer = reader(&[asked, text]);
    let asked: HashSet<String> = tokenizer.query_terms(asked).into_iter().collect();
    let terms = tokenizer.query_terms(text);
    let own: HashSet<&String> = terms.iter().filter(|t| !asked.contains(*t)).collect();
    let own: Vec<String> = own.into_iter().cloned().collect();
    Overlap {
        own: own.len(),
        own_words: words_in(&own),
        own_number: own.iter().any(|t| t.chars().any(|c| c.is_ascii_digit())),
        asked: terms.iter().filter(|t| asked.contains(*t)).count(),
    }
}

/// The terms of `answer` that `asked` lacks ([`own_terms`]), for a check of its own.
pub fn own_terms_of(asked: &str, answer: &str) -> Vec<String> {
    own_terms(&mut reader(&[asked, answer]), asked, answer)
}

/// A tokenizer for the language `texts` are written in, together ([`Tokenizer::for_text`]):
/// a German answer's "am" and "der" are no words of its own, and "Hochzeit" and "Hochzeiten"
/// one. All the texts of one comparison are read alike, or their terms would not meet. Where
/// the question or the source is at hand apart from the English instruction around it
/// ([`adds`], [`held_share`]), the language is told from those and the answer; elsewhere from
/// all the texts compared.
fn reader(texts: &[&str]) -> Tokenizer {
    Tokenizer::for_text(&texts.join("\n"))
}

/// The terms of `answer` (stemmed, stop words out, as the vault's search reads them) that are
/// not in `asked`, citation marks and the numbers of a numbered list set aside.
fn own_terms(tokenizer: &mut Tokenizer, asked: &str, answer: &str) -> Vec<String> {
    static CITATION: LazyLock<Regex> =
        // A last mark may be cut short when the answer ran out of tokens.
        LazyLock::new(|| Regex::new(r"\[[^\[\]]{0,24}(?:\]|$)").expect("valid regex"));
    static LIST_NUMBER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^[ \t]*\d{1,3}[.)][ \t]").expect("valid regex"));
    let asked: HashSet<String> = tokenizer.query_terms(asked).into_iter().collect();
    let answer = CITATION.replace_all(answer, " ");
    let answer = LIST_NUMBER.replace_all(&answer, " ");
    tokenizer
        .query_terms(&answer)
        .into_iter()
        .filter(|t| !asked.contains(t) && !is_initial(t))
        .collect()
}

/// A lone letter of a script that spaces its words: an initial ("Betty T", "Markus H"), not a
/// word an answer adds.
fn is_initial(term: &str) -> bool {
    let mut chars = term.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if c.is_alphabetic() && (c as u32) < 0x2E80)
}

/// `cited` held against `evidence` (per source, source `n` at `n - 1`).
pub fn check(cited: &BTreeSet<usize>, evidence: &[f32]) -> Checked {
    let unchanged = Checked {
        numbers: cited.clone(),
        replaced: None,
    };
    let score = |n: usize| evidence.get(n.wrapping_sub(1)).copied().unwrap_or(0.0);
    // The lowest number among the best: the earlier source on a tie.
    let Some(best) = (1..=evidence.len()).fold(None, |best: Option<usize>, n| match best {
        Some(b) if score(b) >= score(n) => Some(b),
        _ => Some(n),
    }) else {
        return unchanged;
    };
    if cited.is_empty() || score(best) < MIN_EVIDENCE {
        return unchanged;
    }
    // Overruled only when it holds next to nothing: a source holding real evidence stays cited,
    // however much more another holds (a long answer may draw on several).
    let (kept, dropped): (BTreeSet<usize>, BTreeSet<usize>) = cited
        .iter()
        .partition(|&&n| score(n) >= MIN_EVIDENCE || score(n) >= BORNE_OUT_SHARE * score(best));
    if dropped.is_empty() {
        return unchanged;
    }
    let mut numbers = kept;
    numbers.insert(best);
    Checked {
        numbers,
        replaced: Some((best, dropped)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(question: &str, answer: &str, sources: &[String]) -> Vec<f32> {
        SourceTerms::new(sources).evidence(question, answer)
    }

    /// A source as the check reads it: its label (here the title) and text.
    fn source(title: &str, text: &str) -> String {
        format!("{title}\n{text}")
    }

    fn numbers(ns: &[usize]) -> BTreeSet<usize> {
        ns.iter().copied().collect()
    }

    #[test]
    fn a_fact_cited_to_the_wrong_source_moves_to_the_one_that_holds_it() {
        let sources = [
            source(
                "Meiosis",
                "Two divisions make four cells. Crossing over in prophase I.",
            ),
            source(
                "Mitosis",
                "Prophase, metaphase, anaphase, telophase: remember PMAT.",
            ),
            source("Index", "Study notes for the course."),
        ];
        let question = "What is the memory trick for the stages of cell division?";
        let answer = "The trick is PMAT: prophase, metaphase, anaphase, telophase. [1]";
        let evidence = evidence(question, answer, &sources);
        assert!(evidence[1] > 2.0 * evidence[0], "{evidence:?}");
        let checked = check(&numbers(&[1]), &evidence);
        assert_eq!(checked.numbers, numbers(&[2]));
        assert_eq!(checked.replaced, Some((2, numbers(&[1]))));
    }

    #[test]
    fn a_number_found_in_one_source_alone_is_evidence_enough() {
        let sources = [
            source(
                "Media files",
                "Use svg, webp and png images, optimized to reduce their file size.",
            ),
            source(
                "Publish limitations",
                "You can upload files up to 50mb in size to your Publish site.",
            ),
        ];
        let question = "What's the biggest file I can upload to my Publish site?";
        let answer = "The biggest file you can upload is up to 50mb in size. [1]";
        let checked = check(&numbers(&[1]), &evidence(question, answer, &sources));
        assert_eq!(checked.numbers, numbers(&[2]));
        // A plain word alone is not enough to overrule the number written.
        let plain = "You can upload it if it is small in size. [1]";
        let checked = check(&numbers(&[1]), &evidence(question, plain, &sources));
        assert_eq!(checked.numbers, numbers(&[1]));
    }

    #[test]
    fn a_borne_out_citation_stands_and_thin_evidence_changes_nothing() {
        let sources = [
            source(
                "Exam Schedule",
                "Lab practical: Friday 26 April, 13:00, Lab 3.",
            ),
            source("Dr Okafor", "Office hours: Tuesdays 14:00-16:00, Lab 3."),
        ];
        let question = "When's my hands-on assessment in the lab?";
        let answer = "It is on Friday 26 April at 13:00 in Lab 3. [1]";
        let checked = check(&numbers(&[1]), &evidence(question, answer, &sources));
        assert_eq!(checked.numbers, numbers(&[1]));
        assert_eq!(checked.replaced, None);
        // The same answer cited to the office hours moves to the schedule.
        let wrong = "It is on Friday 26 April at 13:00 in Lab 3. [2]";
        let checked = check(&numbers(&[2]), &evidence(question, wrong, &sources));
        assert_eq!(checked.numbers, numbers(&[1]));
        // An answer in other words than any source's: no opinion.
        let vague = "Soon, in the practical room. [2]";
        let checked = check(&numbers(&[2]), &evidence(question, vague, &sources));
        assert_eq!(checked.numbers, numbers(&[2]));
    }

    #[test]
    fn the_question_own_words_and_citation_marks_are_no_evidence() {
        let sources = [
            source("Cells", "Cells hold a nucleus."),
            source("Notes 2", "The answer is elsewhere."),
        ];
        // Every answer word is the question's, or a citation mark naming source 2.
        let evidence = evidence(
            "Do cells hold a nucleus?",
            "Cells hold a nucleus [2].",
            &sources,
        );
        assert_eq!(evidence, [0.0, 0.0]);
    }

    #[test]
    fn what_an_answer_adds_to_its_question() {
        let question = "What is the biggest file the cheaper plan will upload?";
        let asked = format!(
            "Answer this question from the numbered sources above: {question}\nAfter each \
             fact, write the number of its source in brackets, like [1]."
        );
        let adds = |answer| adds(question, &asked, answer);
        for nothing in [
            "The answer is: [2].",
            "The biggest file the cheaper plan will upload is [2].",
            "[1]",
            "1. [2]\n2. [3] The answer is:",
            "The answer is [2] [3] [4",
        ] {
            assert_eq!(adds(nothing), Adds::Nothing, "{nothing}");
        }
        // A yes or a no in the question's words is a verdict, and nothing more.
        for verdict in [
            "No, the cheaper plan will not upload it [1].",
            "Yes, the cheaper plan will upload it.",
            "The cheaper plan won’t upload it.",
        ] {
            assert_eq!(adds(verdict), Adds::VerdictOnly, "{verdict}");
        }
        for something in [
            "1. It is 5 MB [2].",
            "It is 5 MB [2].",
            "The cheaper plan uploads files up to 5 MB.",
            "No, files over 5 MB stay on your device [1].",
        ] {
            assert_eq!(adds(something), Adds::Something, "{something}");
        }
    }

    /// A Chinese, Japanese or Korean yes or no is a verdict as an English one is; the same
    /// characters inside a word are not.
    #[test]
    fn what_an_answer_adds_to_a_question_in_chinese_japanese_or_korean() {
        let cases = [
            (
                "标准版可以上传这个文件吗？",
                [
                    ("标准版可以上传这个文件 [1]。", Adds::Nothing),
                    ("是的，标准版可以上传这个文件 [1]。", Adds::VerdictOnly),
                    ("不能，标准版不可以上传这个文件。", Adds::VerdictOnly),
                    ("不能，超过五兆字节的文件不会同步 [1]。", Adds::Something),
                ],
            ),
            (
                "ノートをPDFに書き出せますか？",
                [
                    ("ノートをPDFに書き出せます [1]。", Adds::Nothing),
                    ("はい、ノートをPDFに書き出せます [1]。", Adds::VerdictOnly),
                    ("いいえ、書き出せません。", Adds::VerdictOnly),
                    (
                        "コマンドパレットで「PDFにエクスポート」を選びます [1]。",
                        Adds::Something,
                    ),
                ],
            ),
            (
                "노트를 PDF로 내보낼 수 있나요?",
                [
                    ("노트를 PDF로 내보낼 수 있나요 [1]", Adds::Nothing),
                    ("네, 노트를 PDF로 내보낼 수 있어요 [1].", Adds::VerdictOnly),
                    ("아니요, 내보낼 수 없습니다.", Adds::VerdictOnly),
                    (
                        "명령 팔레트에서 PDF로 내보내기를 선택하세요 [1].",
                        Adds::Something,
                    ),
                ],
            ),
        ];
        for (question, answers) in cases {
            let asked = format!("Answer this question from the numbered sources above: {question}");
            for (answer, want) in answers {
                assert_eq!(adds(question, &asked, answer), want, "{answer}");
            }
        }
    }

    #[test]
    fn a_lead_in_states_nothing_a_fact_does() {
        let asked = "Answer this question from the numbered sources above: \
                     How do I update all my community themes at once?";
        assert!(!states_something(
            asked,
            "To update all of them at once, follow these steps:"
        ));
        assert!(states_something(
            asked,
            "Open Settings, then Appearance, and select Check for updates, then Update all."
        ));
    }

    #[test]
    fn the_share_of_an_answer_its_source_holds() {
        let asked = "Answer this question from source 1: how hot should the water be?";
        let source = "Brew green tea at eighty degrees, never boiling. Steep two minutes.";
        assert_eq!(
            held_share(asked, "Eighty degrees, for two minutes [1].", source),
            1.0
        );
        let made_up = "Use steam at 120 degrees from a copper kettle [1].";
        assert!(held_share(asked, made_up, source) < 0.3);
        assert_eq!(
            held_share(asked, "The water should be hot [1].", source),
            0.0
        );
        // Chinese is read in bigrams, as the vault's search reads it.
        let source = "泡绿茶的水温是八十度，不要用沸水。每次冲泡两分钟。";
        assert_eq!(
            held_share("水应该多热？", "水温是八十度 [1]。", source),
            1.0
        );
        assert!(held_share("水应该多热？", "用铜壶加热的蒸汽 [1]。", source) < 0.3);
        // German is read as German: its small words ("am", "im") are no words of the answer's
        // own, which English stop words would leave in, and the held share with them.
        let asked = "Beantworte die Frage aus Quelle 1: wann hat mein Bruder geheiratet?";
        let source = "Samstag, 13. September: Hochzeit im Schloss, danach Feier bis drei Uhr \
                      früh. Die Braut kam mit der Kutsche.";
        assert_eq!(
            held_share(
                asked,
                "Dein Bruder hat am 13. September geheiratet [1].",
                source
            ),
            1.0
        );
    }

    #[test]
    fn naming_one_of_the_question_s_alternatives_is_a_verdict() {
        let question = "Is Greta K a neighbour of mine or more of a gym buddy?";
        assert_eq!(
            adds(question, question, "Greta K is a gym buddy. [1]"),
            Adds::VerdictOnly
        );
        let question = "泡绿茶用沸水还是温水？";
        assert_eq!(adds(question, question, "温水 [1]。"), Adds::VerdictOnly);
    }

    #[test]
    fn a_name_s_initial_is_no_word_of_the_answer_s_own() {
        let question = "What's Gordon's phone number?";
        assert_eq!(
            adds(question, question, "The phone number of Gordon P is [1]."),
            Adds::Nothing
        );
        assert_eq!(
            adds(question, question, "Gordon P's number is 282908824961 [1]."),
            Adds::Something
        );
    }

    /// Qwen2.5-1.5B answered one held-out question with the question itself and a copied
    /// header: the question's own `doesn't` is no verdict.
    #[test]
    fn a_question_restated_with_its_own_negation_adds_nothing() {
        let question = "Hitting Tab doesn't indent my list item when I edit the note. \
                        How do I make it nest under the item above?";
        let asked = format!("Answer this question from the numbered sources above: {question}");
        assert_eq!(adds(question, &asked, question), Adds::Nothing);
        assert_eq!(
            adds(
                question,
                &asked,
                "Hitting Tab won't indent my list item when I edit the note [1]."
            ),
            Adds::VerdictOnly
        );
    }

    #[test]
    fn yes_no_and_choice_are_read_in_each_language() {
        assert!(offers_choice(
            "Is it in Settings or in the command palette?"
        ));
        assert!(offers_choice("用快捷键还是命令面板？"));
        assert!(!offers_choice("Where is the order of plugins kept?"));
    }
}
