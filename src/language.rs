//! The language a question is written in ([`Language`]: by its script, Chinese, Japanese,
//! Korean; by its words, German, French, Spanish) and what Recall says in it. A small model
//! reading English instructions and sources answers a Chinese question in English (11 of 16
//! answers, Qwen2.5-1.5B), so the answer step names the language; Recall's own lines come in
//! it too ([`answer_lines`]). For English questions nothing changes. Pure.

use std::sync::LazyLock;

pub use obsidian_kb::language::Language;
use regex::Regex;

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

/// Every sentence the answer step asks for when the sources lack the answer, lowercase: the
/// English one (and its contraction) and each language's own.
pub const NOTES_LACK_IT: [&str; 8] = [
    "the notes do not say",
    "the notes don't say",
    "笔记中没有说明",
    "ノートには書かれていません",
    "노트에 나와 있지 않습니다",
    "die notizen sagen nichts dazu",
    "les notes ne le disent pas",
    "las notas no lo dicen",
];

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
/// Chinese line, not an English one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// The answer lines for a question in `language` (`None`: English).
pub fn answer_lines(language: Option<Language>) -> &'static AnswerLines {
    match language {
        None => &AnswerLines {
            no_answer: "The model wrote no answer.",
            adds_nothing: "That answer adds nothing to the question.",
            bare_verdict: "That answer is a bare yes or no; here is what the notes say.",
            most_relevant: "The most relevant passages:",
            no_note: "No note matched the question.",
            notes_lack_it: "The notes do not say.",
            made_up: "The notes do not say: none of them gives {}.",
            asked_not_found: "The notes do not say: none of the passages found mentions the {} of your question.",
            not_the_answer: "The notes do not say: the {} they hold is about something else.",
            rest_of_list: "Also in that list {}:",
        },
        Some(Language::Chinese) => &AnswerLines {
            no_answer: "模型没有写出回答。",
            adds_nothing: "这个回答没有在问题之外提供任何信息。",
            bare_verdict: "这个回答只有“是”或“否”；以下是笔记中的内容。",
            most_relevant: "最相关的段落：",
            no_note: "没有与问题相符的笔记。",
            notes_lack_it: "笔记中没有说明。",
            made_up: "笔记中没有说明：没有笔记给出 {}。",
            asked_not_found: "笔记中没有说明：找到的段落都没有提到问题中的 {}。",
            not_the_answer: "笔记中没有说明：笔记中的 {} 说的是别的事。",
            rest_of_list: "该列表 {} 中还有：",
        },
        Some(Language::Japanese) => &AnswerLines {
            no_answer: "モデルは回答を書きませんでした。",
            adds_nothing: "その回答は質問に何も付け加えていません。",
            bare_verdict: "その回答は「はい」か「いいえ」だけです。ノートの内容は次のとおりです。",
            most_relevant: "最も関連する箇所：",
            no_note: "質問に合うノートはありませんでした。",
            notes_lack_it: "ノートには書かれていません。",
            made_up: "ノートには書かれていません：{} を示すノートはありません。",
            asked_not_found: "ノートには書かれていません：見つかった箇所には質問の {} が出てきません。",
            not_the_answer: "ノートには書かれていません：ノートにある {} は別のことです。",
            rest_of_list: "そのリスト {} には他に：",
        },
        Some(Language::Korean) => &AnswerLines {
            no_answer: "모델이 답변을 작성하지 않았습니다.",
            adds_nothing: "그 답변은 질문에 아무것도 더하지 않습니다.",
            bare_verdict: "그 답변은 예 또는 아니요뿐입니다. 노트의 내용은 다음과 같습니다.",
            most_relevant: "가장 관련 있는 구절:",
            no_note: "질문과 일치하는 노트가 없습니다.",
            notes_lack_it: "노트에 나와 있지 않습니다.",
            made_up: "노트에 나와 있지 않습니다: {}을(를) 알려 주는 노트가 없습니다.",
            asked_not_found: "노트에 나와 있지 않습니다: 찾은 구절 중 질문의 {}을(를) 언급하는 것이 없습니다.",
            not_the_answer: "노트에 나와 있지 않습니다: 노트의 {}은(는) 다른 내용입니다.",
            rest_of_list: "그 목록 {}에는 또:",
        },
        Some(Language::German) => &AnswerLines {
            no_answer: "Das Modell hat keine Antwort geschrieben.",
            adds_nothing: "Diese Antwort fügt der Frage nichts hinzu.",
            bare_verdict: "Diese Antwort ist nur ein Ja oder Nein; das steht in den Notizen:",
            most_relevant: "Die passendsten Stellen:",
            no_note: "Keine Notiz passt zur Frage.",
            notes_lack_it: "Die Notizen sagen nichts dazu.",
            made_up: "Die Notizen sagen nichts dazu: keine nennt {}.",
            asked_not_found: "Die Notizen sagen nichts dazu: keine gefundene Stelle erwähnt {} aus Ihrer Frage.",
            not_the_answer: "Die Notizen sagen nichts dazu: {} steht dort bei etwas anderem.",
            rest_of_list: "Außerdem in dieser Liste {}:",
        },
        Some(Language::French) => &AnswerLines {
            no_answer: "Le modèle n'a écrit aucune réponse.",
            adds_nothing: "Cette réponse n'ajoute rien à la question.",
            bare_verdict: "Cette réponse n'est qu'un oui ou un non ; voici ce que disent les notes :",
            most_relevant: "Les passages les plus proches :",
            no_note: "Aucune note ne correspond à la question.",
            notes_lack_it: "Les notes ne le disent pas.",
            made_up: "Les notes ne le disent pas : aucune ne donne {}.",
            asked_not_found: "Les notes ne le disent pas : aucun passage trouvé ne mentionne {} de votre question.",
            not_the_answer: "Les notes ne le disent pas : le {} qu'elles contiennent concerne autre chose.",
            rest_of_list: "Aussi dans cette liste {} :",
        },
        Some(Language::Spanish) => &AnswerLines {
            no_answer: "El modelo no escribió ninguna respuesta.",
            adds_nothing: "Esa respuesta no añade nada a la pregunta.",
            bare_verdict: "Esa respuesta es solo un sí o un no; esto dicen las notas:",
            most_relevant: "Los pasajes más cercanos:",
            no_note: "Ninguna nota coincide con la pregunta.",
            notes_lack_it: "Las notas no lo dicen.",
            made_up: "Las notas no lo dicen: ninguna da {}.",
            asked_not_found: "Las notas no lo dicen: ningún pasaje encontrado menciona {} de su pregunta.",
            not_the_answer: "Las notas no lo dicen: el {} que contienen trata de otra cosa.",
            rest_of_list: "También en esa lista {}:",
        },
    }
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
