//! The language a question is written in ([`Language`], told by its script: Chinese, Japanese,
//! Korean) and what the answer step says in it. A small model reading English instructions and
//! sources answers a Chinese question in English (11 of 16 answers, Qwen2.5-1.5B), so the answer
//! step names the language and the sentence that says the notes lack the answer in it. For
//! other questions nothing changes: their prompts stay as they were. Pure.

pub use obsidian_kb::language::Language;

/// Every sentence the answer step asks for when the sources lack the answer, lowercase: the
/// English one (and its contraction) and each language's own.
pub const NOTES_LACK_IT: [&str; 5] = [
    "the notes do not say",
    "the notes don't say",
    "笔记中没有说明",
    "ノートには書かれていません",
    "노트에 나와 있지 않습니다",
];

/// The sentence that says the notes lack the answer, in `language`.
pub fn notes_lack_it(language: Language) -> &'static str {
    match language {
        Language::Chinese => "笔记中没有说明。",
        Language::Japanese => "ノートには書かれていません。",
        Language::Korean => "노트에 나와 있지 않습니다.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_language_says_the_notes_lack_it_in_a_sentence_the_agent_knows() {
        for language in [Language::Chinese, Language::Japanese, Language::Korean] {
            let sentence = notes_lack_it(language);
            assert!(
                NOTES_LACK_IT.iter().any(|p| sentence.starts_with(p)),
                "{sentence}"
            );
        }
    }
}
