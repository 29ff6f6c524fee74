//! The language a question is written in, told by its script, for the languages whose script
//! says it: Chinese, Japanese and Korean. A small model reading English instructions and
//! sources answers a Chinese question in English (11 of 16 answers, Qwen2.5-1.5B), so the answer
//! step names the language and the sentence that says the notes lack the answer in it. For
//! other questions nothing changes: their prompts stay as they were. Pure.

/// A language the answer step names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Han characters without kana.
    Chinese,
    /// Kana (with or without Han characters).
    Japanese,
    /// Hangul.
    Korean,
}

/// Every sentence the answer step asks for when the sources lack the answer, lowercase: the
/// English one (and its contraction) and each language's own.
pub const NOTES_LACK_IT: [&str; 5] = [
    "the notes do not say",
    "the notes don't say",
    "笔记中没有说明",
    "ノートには書かれていません",
    "노트에 나와 있지 않습니다",
];

impl Language {
    /// The language of `text`, when at least a third of its letters are Chinese, Japanese or
    /// Korean characters; `None` otherwise.
    pub fn of(text: &str) -> Option<Language> {
        let (mut letters, mut han, mut kana, mut hangul) = (0, 0, 0, 0);
        for c in text.chars().filter(|c| c.is_alphabetic()) {
            letters += 1;
            match c {
                '\u{3040}'..='\u{30ff}' | '\u{31f0}'..='\u{31ff}' => kana += 1,
                '\u{1100}'..='\u{11ff}' | '\u{3130}'..='\u{318f}' | '\u{ac00}'..='\u{d7af}' => {
                    hangul += 1
                }
                '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' => {
                    han += 1
                }
                _ => {}
            }
        }
        if (han + kana + hangul) * 3 < letters || letters == 0 {
            return None;
        }
        Some(if hangul > 0 && hangul >= han {
            Language::Korean
        } else if kana > 0 {
            Language::Japanese
        } else {
            Language::Chinese
        })
    }

    /// Its name, as the instruction says it.
    pub fn name(self) -> &'static str {
        match self {
            Language::Chinese => "Chinese",
            Language::Japanese => "Japanese",
            Language::Korean => "Korean",
        }
    }

    /// The sentence that says the notes lack the answer, in this language.
    pub fn notes_lack_it(self) -> &'static str {
        match self {
            Language::Chinese => "笔记中没有说明。",
            Language::Japanese => "ノートには書かれていません。",
            Language::Korean => "노트에 나와 있지 않습니다.",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_of_a_question_names_its_language() {
        assert_eq!(Language::of("快照会保留多久？"), Some(Language::Chinese));
        assert_eq!(
            Language::of("Obsidian Sync 的标准版能同步多大的文件？"),
            Some(Language::Chinese)
        );
        assert_eq!(
            Language::of("スナップショットは何日保存されますか？"),
            Some(Language::Japanese)
        );
        assert_eq!(
            Language::of("동기화는 어떻게 하나요?"),
            Some(Language::Korean)
        );
        assert_eq!(Language::of("How long are snapshots kept?"), None);
        assert_eq!(
            Language::of("What does 同步 mean in the Chinese help?"),
            None
        );
        assert_eq!(Language::of("42?"), None);
    }

    #[test]
    fn each_language_says_the_notes_lack_it_in_a_sentence_the_agent_knows() {
        for language in [Language::Chinese, Language::Japanese, Language::Korean] {
            let sentence = language.notes_lack_it();
            assert!(
                NOTES_LACK_IT.iter().any(|p| sentence.starts_with(p)),
                "{sentence}"
            );
        }
    }
}
