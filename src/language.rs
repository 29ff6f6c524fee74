//! The language a question is written in ([`Language`]: by its script, Chinese, Japanese,
//! Korean; by its words, German, French, Spanish) and what Recall says in it. A small model
//! reading English instructions and sources answers a Chinese question in English (11 of 16
//! answers, Qwen2.5-1.5B), so the answer step names the language; Recall's own lines come in
//! it too ([`answer_lines`]). For English questions nothing changes. Pure.

use std::collections::HashMap;
use std::sync::LazyLock;

pub use obsidian_kb::language::Language;
use regex::Regex;
use serde::Deserialize;

/// Two questions are the same when their letters and digits are, whatever the case, spaces
/// or marks.
pub fn same_question(a: &str, b: &str) -> bool {
    let key = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    key(a) == key(b)
}

/// Every language's sentence for the notes lacking the answer ([`AnswerLines::notes_lack_it`]),
/// lowercase, without its full stop, and the English one's contraction, which a model writes
/// as readily: what the turn takes for the notes not saying.
pub static NOTES_LACK_IT: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut sentences: Vec<String> = LINES
        .values()
        .map(|lines| {
            lines
                .notes_lack_it
                .to_lowercase()
                .trim_end_matches(['.', '。'])
                .to_string()
        })
        .collect();
    sentences.push("the notes don't say".to_string());
    sentences
});

/// Whether `answer` is that the notes do not hold the answer, in the words
/// `prompts/agent/answer.j2` asks for (or their contraction): one sentence saying so, citation
/// marks aside. An answer that gives facts and then says the notes lack some detail is an answer.
pub fn says_notes_lack_it(answer: &str) -> bool {
    static SENTENCE_END: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[.!?](\s|$)|[。！？]").expect("valid regex"));
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

/// What Recall itself writes into an answer when the model's own words are not the answer, in
/// the question's language: a person who asked in Chinese reads the quoted passages under a
/// Chinese line, not an English one. Each language's are one table of `prompts/lines.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerLines {
    /// Before the quoted passages when the model wrote nothing.
    pub no_answer: &'static str,
    /// Before them when the answer only says back the question.
    pub adds_nothing: &'static str,
    /// Before them when the answer is a bare yes or no.
    pub bare_verdict: &'static str,
    /// Heads the quoted passages (`benches/answer-quality` tells the model's own words from
    /// the quote by it: keep the two in step).
    pub most_relevant: &'static str,
    /// Instead of them when no note matched.
    pub no_note: &'static str,
    /// Instead of an answer that only said the question again: the sentence of
    /// [`NOTES_LACK_IT`] for the language, alone.
    pub notes_lack_it: &'static str,
    /// Instead of an answer that stated facts found in no source (`{}`: those facts): it
    /// holds the sentence of [`NOTES_LACK_IT`] for the language.
    pub made_up: &'static str,
    /// Instead of an answer that stated facts no source holds but the question gives (`{}`:
    /// those facts): the sources found are not about what the question names ("the friend
    /// who ran 18 km with me"), which is a truer reason than that no note gives "18". It
    /// holds the sentence of [`NOTES_LACK_IT`] for the language.
    pub asked_not_found: &'static str,
    /// Instead of an answer whose figure stands in the notes, but in a line about something
    /// else (`{}`: the figure): it holds the sentence of [`NOTES_LACK_IT`] for the language.
    pub not_the_answer: &'static str,
    /// Before the items of a list the answer left out (`{}`: the source's mark, `[2]`).
    pub rest_of_list: &'static str,
}

/// Recall's own lines in every language it answers in, by ISO 639-1 code (`en`, `zh`, …):
/// one table a language, a translator's file rather than code.
static LINES: LazyLock<HashMap<&'static str, AnswerLines>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../prompts/lines.json"))
        .expect("prompts/lines.json holds every line of every language")
});

/// The answer lines for a question in `language` (`None`: English).
pub fn answer_lines(language: Option<Language>) -> &'static AnswerLines {
    let code = language.map_or("en", Language::code);
    LINES
        .get(code)
        .unwrap_or_else(|| panic!("prompts/lines.json has no lines for {code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every language Recall answers in besides English.
    const ALL: [Language; 6] = [
        Language::Chinese,
        Language::Japanese,
        Language::Korean,
        Language::German,
        Language::French,
        Language::Spanish,
    ];

    #[test]
    fn each_language_says_the_notes_lack_it_in_a_sentence_the_agent_knows() {
        for language in ALL {
            let sentence = answer_lines(Some(language)).notes_lack_it.to_lowercase();
            assert!(
                NOTES_LACK_IT.iter().any(|p| sentence.starts_with(p)),
                "{sentence}"
            );
        }
        // And every line that withdraws an answer, in every language.
        for language in std::iter::once(None).chain(ALL.map(Some)) {
            let lines = answer_lines(language);
            for line in [lines.made_up, lines.asked_not_found, lines.not_the_answer] {
                let said = line.replace("{}", "18");
                assert!(says_notes_lack_it(&said), "{said}");
            }
        }
    }

    #[test]
    fn a_question_in_latin_letters_is_told_by_its_words_when_they_say_so_reliably() {
        for (question, language) in [
            (
                "Wann war ich zuletzt beim Zahnarzt und was hat die Füllung gekostet?",
                Some(Language::German),
            ),
            (
                "Combien ai-je payé pour la réparation du vélo au mois de mars ?",
                Some(Language::French),
            ),
            (
                "¿Cuánto pagamos por el alquiler del piso nuevo en septiembre?",
                Some(Language::Spanish),
            ),
            (
                "How much did the new tyres for the bike cost in March?",
                None,
            ),
            ("快照会保留多久？", Some(Language::Chinese)),
            // Too short to tell: the English prompt stays.
            ("Kühn?", None),
        ] {
            assert_eq!(Language::detect(question), language, "{question}");
        }
        let german = answer_lines(Language::detect(
            "Wo habe ich den Schlüssel für den Keller hingelegt?",
        ));
        assert_eq!(german.notes_lack_it, "Die Notizen sagen nichts dazu.");
        assert!(says_notes_lack_it("Die Notizen sagen nichts dazu. [2]"));
        assert!(says_notes_lack_it("Les notes ne le disent pas."));
    }

    #[test]
    fn recall_writes_its_own_lines_in_the_question_s_language() {
        let english = answer_lines(Language::of("How long are snapshots kept?"));
        assert_eq!(english.most_relevant, "The most relevant passages:");
        let chinese = answer_lines(Language::of("快照会保留多久？"));
        for line in [
            chinese.no_answer,
            chinese.adds_nothing,
            chinese.bare_verdict,
            chinese.most_relevant,
            chinese.no_note,
        ] {
            assert_eq!(Language::of(line), Some(Language::Chinese), "{line}");
        }
        let japanese = answer_lines(Some(Language::Japanese));
        assert_eq!(Language::of(japanese.no_note), Some(Language::Japanese));
        let korean = answer_lines(Some(Language::Korean));
        assert_eq!(Language::of(korean.adds_nothing), Some(Language::Korean));
    }
}
