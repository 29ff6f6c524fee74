//! The deck of saved quiz items that `recall review` asks again: one JSON file (by default
//! `recall/deck.json` in the platform data folder), each card a question, its answer, its
//! source (with the paragraph it was asked from, to tell when the note has changed), and its
//! FSRS memory state. Scheduling is `rs-fsrs`'s (open-spaced-repetition's own scheduler, with
//! its default parameters); this module only keeps the cards and says which are due.
//!
//! The file is written whole to a temporary file beside it and renamed over it, after every
//! change: a review stopped at any point keeps every grade given so far.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use rs_fsrs::{FSRS, Rating};
use serde::{Deserialize, Serialize};

use super::grade::Grade;
use crate::language::same_question;

/// The version of the deck file's layout.
const DECK_VERSION: u32 = 1;

/// Where a card's question comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardSource {
    /// The note's title.
    pub title: String,
    /// The note's `note://` URI.
    pub uri: String,
    /// The heading the question was asked under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// `obsidian://open` link to the note at that heading.
    pub link: String,
    /// The paragraph the question was asked from, as the model read it: a note that no longer
    /// holds it has changed since the card was made.
    pub passage: String,
}

/// One saved question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    /// The question.
    pub question: String,
    /// The answer from the note.
    pub answer: String,
    /// Where it comes from.
    pub source: CardSource,
    /// When it was saved.
    pub added: DateTime<Utc>,
    /// Its FSRS memory state (`due` is when it is next asked).
    pub memory: rs_fsrs::Card,
}

impl Card {
    /// A new card, due at once.
    pub fn new(question: String, answer: String, source: CardSource, now: DateTime<Utc>) -> Card {
        Card {
            question,
            answer,
            source,
            added: now,
            memory: rs_fsrs::Card {
                due: now,
                last_review: now,
                ..rs_fsrs::Card::default()
            },
        }
    }

    /// When it is next asked.
    pub fn due(&self) -> DateTime<Utc> {
        self.memory.due
    }

    /// Schedules the card after a review at `now` graded `grade`: right is FSRS's Good,
    /// partly right Hard, wrong Again.
    pub fn review(&mut self, grade: Grade, now: DateTime<Utc>) {
        let rating = match grade {
            Grade::Correct => Rating::Good,
            Grade::Partly => Rating::Hard,
            Grade::Wrong => Rating::Again,
        };
        self.memory = FSRS::default().next(self.memory.clone(), now, rating).card;
    }
}

/// The deck file's contents.
#[derive(Debug, Default, Serialize, Deserialize)]
struct DeckFile {
    version: u32,
    cards: Vec<Card>,
}

/// The saved cards and the file they live in.
#[derive(Debug)]
pub struct Deck {
    path: PathBuf,
    /// The cards, in the order they were saved.
    pub cards: Vec<Card>,
}

impl Deck {
    /// `given` (`--deck`), else `recall/deck.json` in the platform data folder
    /// (`dirs::data_dir`: on Linux `$XDG_DATA_HOME`, else `~/.local/share`).
    pub fn locate(given: Option<PathBuf>) -> Result<PathBuf> {
        match given {
            Some(path) => Ok(path),
            None => dirs::data_dir()
                .map(|dir| dir.join("recall").join("deck.json"))
                .context("no platform data folder is known here; pass --deck FILE"),
        }
    }

    /// The deck at `path`; empty when there is no file yet.
    pub fn open(path: &Path) -> Result<Deck> {
        let cards = match std::fs::read_to_string(path) {
            Ok(text) => {
                let file: DeckFile = serde_json::from_str(&text).with_context(|| {
                    format!(
                        "the deck {} is not a deck file (left as it is)",
                        path.display()
                    )
                })?;
                if file.version != DECK_VERSION {
                    bail!(
                        "the deck {} has layout version {}; this recall reads version \
                         {DECK_VERSION}",
                        path.display(),
                        file.version
                    );
                }
                file.cards
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        Ok(Deck {
            path: path.to_path_buf(),
            cards,
        })
    }

    /// The file the deck lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds `card` unless the deck holds the same question about the same note; returns
    /// whether it was added.
    pub fn add(&mut self, card: Card) -> bool {
        let same = |c: &Card| {
            c.source.uri == card.source.uri && same_question(&c.question, &card.question)
        };
        if self.cards.iter().any(same) {
            return false;
        }
        self.cards.push(card);
        true
    }

    /// The indices of the cards due at `now`, the longest overdue first.
    pub fn due(&self, now: DateTime<Utc>) -> Vec<usize> {
        let mut due: Vec<usize> = (0..self.cards.len())
            .filter(|&i| self.cards[i].due() <= now)
            .collect();
        due.sort_by_key(|&i| self.cards[i].due());
        due
    }

    /// When the next card not due at `now` is due.
    pub fn next_due(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cards.iter().map(Card::due).filter(|&d| d > now).min()
    }

    /// Writes the deck: whole, to a file beside it that is then renamed over it.
    pub fn save(&self) -> Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let file = DeckFile {
            version: DECK_VERSION,
            cards: self.cards.clone(),
        };
        let text = serde_json::to_string_pretty(&file)?;
        let temporary = self.path.with_extension("json.tmp");
        std::fs::write(&temporary, text)
            .with_context(|| format!("cannot write {}", temporary.display()))?;
        std::fs::rename(&temporary, &self.path)
            .with_context(|| format!("cannot replace {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    fn card(question: &str, now: DateTime<Utc>) -> Card {
        let source = CardSource {
            title: "Sync".into(),
            uri: "note://Sync".into(),
            heading: Some("Plans".into()),
            link: "obsidian://open?vault=v&file=Sync%23Plans".into(),
            passage: "The Plus plan stores 10 GB.".into(),
        };
        Card::new(question.into(), "10 GB".into(), source, now)
    }

    #[test]
    fn a_new_card_is_due_at_once_and_a_review_schedules_it_later() {
        let now = at("2030-01-01T09:00:00Z");
        let mut deck = Deck {
            path: PathBuf::from("deck.json"),
            cards: vec![card("How much does Plus store?", now)],
        };
        assert_eq!(deck.due(now), vec![0]);
        deck.cards[0].review(Grade::Correct, now);
        assert!(deck.due(now).is_empty());
        let next = deck.next_due(now).expect("scheduled");
        assert!(next > now, "{next}");
        assert_eq!(deck.cards[0].memory.reps, 1);

        // Wrong comes back sooner than right.
        let mut wrong = card("How much does Plus store?", now);
        wrong.review(Grade::Wrong, now);
        assert!(wrong.due() < next, "{} vs {next}", wrong.due());
        assert_eq!(deck.due(next), vec![0]);
    }

    #[test]
    fn the_same_question_about_the_same_note_is_saved_once() {
        let now = at("2030-01-01T09:00:00Z");
        let mut deck = Deck {
            path: PathBuf::from("deck.json"),
            cards: Vec::new(),
        };
        assert!(deck.add(card("How much does Plus store?", now)));
        assert!(!deck.add(card("how much does plus store", now)));
        assert!(deck.add(card("What does Standard store?", now)));
        assert_eq!(deck.cards.len(), 2);
    }

    #[test]
    fn a_deck_survives_a_round_trip_and_a_bad_file_is_an_error_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("deck.json");
        let now = at("2030-01-01T09:00:00Z");
        let mut deck = Deck::open(&path).unwrap();
        assert!(deck.cards.is_empty());
        deck.add(card("How much does Plus store?", now));
        deck.cards[0].review(Grade::Partly, now);
        deck.save().unwrap();
        let again = Deck::open(&path).unwrap();
        assert_eq!(again.cards, deck.cards);

        std::fs::write(&path, "not json").unwrap();
        let err = Deck::open(&path).unwrap_err().to_string();
        assert!(err.contains("not a deck file"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
    }
}
