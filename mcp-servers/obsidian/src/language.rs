//! The language a text is written in: by its script for Chinese, Japanese and Korean, by its
//! words for German, French and Spanish. The server picks the embedding model by the vault's
//! language and ranks a query by words alone when that model does not cover the query's;
//! recall answers in the question's. Pure.

use std::sync::LazyLock;

use whatlang::{Detector, Lang};

/// Tells English, German, French and Spanish apart, and nothing else: a question is never
/// taken for a language Recall does not answer in.
static DETECTOR: LazyLock<Detector> =
    LazyLock::new(|| Detector::with_allowlist(vec![Lang::Eng, Lang::Deu, Lang::Fra, Lang::Spa]));

/// A language other than English that Recall tells apart: by its script (Chinese, Japanese,
/// Korean: [`Language::of`]), or by its words (German, French, Spanish: [`Language::detect`]).
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

    /// The language of `text`: by its script ([`Language::of`]), else by its words when they
    /// say so reliably (German, French or Spanish, told from English by `whatlang`'s trigram
    /// statistics). `None`: English, or a text too short to tell. Measured on the bench
    /// questions (2026-12-06): of about 700 in English none was told another language; 21 of
    /// 36 German and 17 of 36 French ones were told theirs. A whole vault's sample is told far
    /// more surely than a question.
    pub fn detect(text: &str) -> Option<Language> {
        if let Some(language) = Language::of(text) {
            return Some(language);
        }
        let info = DETECTOR.detect(text).filter(|info| info.is_reliable())?;
        Language::of_latin(info.lang())
    }

    /// The language of a short `text` written beside `context` (a question beside the
    /// passages it is asked of): [`Language::detect`]'s when it is sure; else the language
    /// `text` most likely is, when `context` is surely written in it. Trigram statistics are
    /// seldom sure of a question of a few words ("wann kommt der installateur"), yet its
    /// likeliest language agreeing with its sources' is a fair reading: of the 36 German
    /// tuning questions 18 are told alone, 34 so. An English question about a German vault
    /// stays English, for its likeliest language is English.
    pub fn detect_beside(text: &str, context: &str) -> Option<Language> {
        if let Some(language) = Language::detect(text) {
            return Some(language);
        }
        let likeliest = Language::of_latin(DETECTOR.detect(text)?.lang())?;
        (Language::detect(context) == Some(likeliest)).then_some(likeliest)
    }

    /// The language `whatlang` names, among those told by their words (`None`: English).
    fn of_latin(lang: Lang) -> Option<Language> {
        match lang {
            Lang::Deu => Some(Language::German),
            Lang::Fra => Some(Language::French),
            Lang::Spa => Some(Language::Spanish),
            _ => None,
        }
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

    #[test]
    fn the_words_of_a_latin_script_text_name_german_french_or_spanish() {
        let german = "Am Samstag haben wir den Keller ausgeräumt, und danach gab es Kuchen bei \
                      meiner Schwester. Der Umzug ist für nächsten Monat geplant.";
        let french = "Samedi nous avons vidé la cave, puis nous avons mangé une tarte chez ma \
                      sœur. Le déménagement est prévu pour le mois prochain.";
        let spanish = "El sábado vaciamos el sótano y después comimos tarta en casa de mi \
                       hermana. La mudanza está prevista para el mes que viene.";
        let english = "On Saturday we cleared out the cellar, then had cake at my sister's. \
                       The move is planned for next month.";
        assert_eq!(Language::detect(german), Some(Language::German));
        assert_eq!(Language::detect(french), Some(Language::French));
        assert_eq!(Language::detect(spanish), Some(Language::Spanish));
        assert_eq!(Language::detect(english), None);
        assert_eq!(
            Language::detect("快照会保留多久？"),
            Some(Language::Chinese)
        );
        assert_eq!(Language::detect("42"), None);
    }

    #[test]
    fn a_short_question_takes_the_language_of_its_sources_when_it_likely_is_in_it() {
        let notes = "Am Samstag haben wir den Keller ausgeräumt, und danach gab es Kuchen bei \
                     meiner Schwester. Der Installateur kommt erst nächsten Monat.";
        let english_notes = "On Saturday we cleared out the cellar, then had cake at my \
                             sister's. The plumber is coming next month.";
        let short = "wann kommt der installateur";
        assert_eq!(
            Language::detect(short),
            None,
            "too short to be sure of alone"
        );
        assert_eq!(
            Language::detect_beside(short, notes),
            Some(Language::German)
        );
        // Asked in English of German notes, or in German of English ones: the question's own.
        assert_eq!(
            Language::detect_beside("when is the plumber coming", notes),
            None
        );
        assert_eq!(Language::detect_beside(short, english_notes), None);
        assert_eq!(
            Language::detect_beside("快照会保留多久？", notes),
            Some(Language::Chinese)
        );
    }
}
