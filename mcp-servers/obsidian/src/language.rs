//! The language a text is written in, told by its script, for the languages whose script says
//! it: Chinese, Japanese and Korean. The server ranks such a query by words alone when the
//! embedding model does not cover its language; recall answers in it (and in German, French or
//! Spanish, which recall tells by their words). Pure.

/// A language other than English that Recall tells apart: by its script (Chinese, Japanese,
/// Korean: [`Language::of`]), or, for recall's answers alone, by its words (German, French,
/// Spanish: `recall::language::asked_in`), which this crate does not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Han characters without kana.
    Chinese,
    /// Kana (with or without Han characters).
    Japanese,
    /// Hangul.
    Korean,
    /// German, told by its words.
    German,
    /// French, told by its words.
    French,
    /// Spanish, told by its words.
    Spanish,
}

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
            Language::German => "German",
            Language::French => "French",
            Language::Spanish => "Spanish",
        }
    }

    /// Its ISO 639-1 code, as a model card's `language` list (and a GGUF's
    /// `general.languages`) writes it.
    pub fn code(self) -> &'static str {
        match self {
            Language::Chinese => "zh",
            Language::Japanese => "ja",
            Language::Korean => "ko",
            Language::German => "de",
            Language::French => "fr",
            Language::Spanish => "es",
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
}
