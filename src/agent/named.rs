//! The names a question gives as the vault knows them: a run of words that is a note's title
//! or alias. In Chinese, Japanese or Korean script no capital marks a name, so a run of the
//! question's characters that is a note's title or alias is one ("婷婷", the alias of 杨小婷),
//! with the note's title beside it. They name the question's [`subject`](super::subject):
//! asked "婷婷生日是几号？", Qwen2.5-1.5B gave the day of her aunt's birthday from a gift
//! list, and the figure check said yes. A follow-up naming another note than the question
//! it leans on moves the search to it ([`Agent::searched_for`]).

use std::collections::HashMap;

use obsidian_kb::api;
use obsidian_kb::search::{Tokenizer, is_cjk};

use super::Agent;
use super::follow_up::{self, Searched};
use super::subject::{asking_sentence, words};
use crate::engine::ChatModel;
use crate::prompt::Message;
use crate::tool::ToolHost;
use crate::vault::VaultClient;

/// The lengths, in characters, of a run read as a name: a given name or a nickname of two, a
/// full name of three or four.
const NAME_CHARS: std::ops::RangeInclusive<usize> = 2..=4;

/// The lengths, in words, of a run of a spaced script read as a note's title.
const TITLE_WORDS: std::ops::RangeInclusive<usize> = 1..=3;

/// The most runs of a question looked up (each one call of `read_note`, a millisecond or
/// so): a long question's runs past these are left unread.
const MOST_LOOKUPS: usize = 60;

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// The names `question` gives in the sentence asking a fact of someone
    /// ([`asking_sentence`]) that the vault resolves as a note's title or alias, each
    /// with the title of its note, lowercase; none without a vault server or in a question
    /// without these scripts. A lookup that fails finds no name.
    pub(super) fn names_in_vault(&self, question: &str) -> Vec<String> {
        // Those of the sentence asking the fact: of "糖醋鱼是跟谁学的？她电话多少", none.
        let runs = asking_sentence(question).map_or_else(Vec::new, name_runs);
        if runs.is_empty() {
            return Vec::new();
        }
        let mut names: Vec<String> = Vec::new();
        for (run, title) in self.titles_of(runs) {
            for name in [run, title.to_lowercase()] {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// What the turn searches for ([`follow_up::searched_for`]), with the runs of words the
    /// vault knows as notes' titles or aliases ([`title_runs`]), each text's looked up once
    /// (a follow-up and the question before it are asked of more than once).
    pub(super) fn searched_for(&self, question: &str, conversation: &[Message]) -> Searched {
        let mut looked_up: HashMap<String, Vec<String>> = HashMap::new();
        follow_up::searched_for(question, conversation, self.options.today, &mut |text| {
            looked_up
                .entry(text.to_string())
                .or_insert_with(|| {
                    self.titles_of(title_runs(text))
                        .into_iter()
                        .map(|(run, _)| run)
                        .collect()
                })
                .clone()
        })
    }

    /// Each of `runs` that the vault resolves as a note's title or alias, with that title, at
    /// most [`MOST_LOOKUPS`]; none without a vault server. A lookup that fails finds none.
    fn titles_of(&self, runs: Vec<String>) -> Vec<(String, String)> {
        if runs.is_empty() {
            return Vec::new();
        }
        let Some(client) = VaultClient::new(self.runtime, self.host) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for run in runs.into_iter().take(MOST_LOOKUPS) {
            let read = api::ReadParams {
                uri: run.clone(),
                max_chars: Some(1),
                ..api::ReadParams::default()
            };
            if let Ok(note) = client.call::<api::ReadOutput>(api::READ_NOTE, &read) {
                found.push((run, note.title));
            }
        }
        found
    }
}

/// The runs of `text` that may be a note's title: of Chinese, Japanese or Korean script
/// ([`name_runs`]), and of [`TITLE_WORDS`] words of other scripts that open and end with a
/// search term (no stop word: "the quick switcher" is looked up as "quick switcher"), longest
/// first, each once.
fn title_runs(text: &str) -> Vec<String> {
    let mut tokenizer = Tokenizer::default();
    let spaced: Vec<&str> = words(text)
        .filter(|word| !word.chars().any(is_cjk))
        .collect();
    let mut runs: Vec<String> = Vec::new();
    for length in TITLE_WORDS.rev() {
        for run in spaced.windows(length) {
            let ends = [run[0], run[length - 1]];
            if ends.iter().any(|end| tokenizer.query_terms(end).is_empty()) {
                continue;
            }
            let run = run.join(" ");
            if !runs.contains(&run) {
                runs.push(run);
            }
        }
    }
    runs.extend(name_runs(text));
    runs
}

/// The runs of Chinese, Japanese or Korean characters in `question` that may be a name
/// ([`NAME_CHARS`] long), each once, in the order written.
fn name_runs(question: &str) -> Vec<String> {
    let chars: Vec<char> = question.chars().collect();
    let mut runs: Vec<String> = Vec::new();
    for start in 0..chars.len() {
        for length in NAME_CHARS {
            let Some(piece) = chars.get(start..start + length) else {
                break;
            };
            if !piece.iter().all(|&c| is_cjk(c)) {
                break;
            }
            let run: String = piece.iter().collect();
            if !runs.contains(&run) {
                runs.push(run);
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_looked_for_among_runs_of_words_opening_and_ending_with_a_term() {
        let runs = title_runs("And for the quick switcher?");
        assert_eq!(runs, ["quick switcher", "quick", "switcher"]);
        assert!(title_runs("And on Plus?").contains(&"Plus".to_string()));
        assert!(title_runs("还有婷婷呢").contains(&"婷婷".to_string()));
    }

    #[test]
    fn a_name_is_looked_for_among_the_runs_of_chinese_script() {
        assert_eq!(
            name_runs("婷婷生日？"),
            ["婷婷", "婷婷生", "婷婷生日", "婷生", "婷生日", "生日"]
        );
        assert!(name_runs("When is Tomasz's birthday?").is_empty());
        // Only the sentence asking the fact is read.
        let asking = asking_sentence("糖醋鱼是跟谁学的？她电话多少").unwrap();
        assert!(!name_runs(asking).contains(&"糖醋鱼".to_string()));
        // A run of one character is no name.
        assert!(name_runs("Lena的 生").is_empty());
    }
}
