//! Lists whole: the items of a list in a cited passage that an answer left out.
//!
//! Asked for several things (ideas for a present, the people at a meeting), a small
//! model names some items of the list that holds them and stops (Qwen2.5-1.5B on a personal
//! vault: two of three gift ideas, two of three people). An answer that names at least two
//! items of one list is about that list (of several, the one it names most items of), so
//! Recall quotes the items it left out after it, as the note writes them. Pure.

use std::collections::HashSet;
use std::sync::LazyLock;

use obsidian_kb::search::Tokenizer;
use regex::Regex;

use crate::markup;

/// Most items a list may have for its rest to be quoted: a longer one is a log or an index,
/// not the answer to a question.
const MAX_ITEMS: usize = 15;

/// Least items of a list an answer must name to be taken as about that list.
const NAMED_ITEMS: usize = 2;

/// The lists of `passage`: each run of bullet, numbered or task lines (indented ones
/// included), as the items' text without their markers.
fn lists(passage: &str) -> Vec<Vec<String>> {
    static ITEM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[.\]\s+)?(.*\S)").expect("valid regex")
    });
    let mut lists: Vec<Vec<String>> = Vec::new();
    let mut in_list = false;
    for line in passage.lines() {
        match ITEM.captures(line) {
            Some(item) => {
                if !in_list {
                    lists.push(Vec::new());
                    in_list = true;
                }
                let text = markup::plain(&item[1]);
                if let Some(list) = lists.last_mut() {
                    list.push(text.trim().to_string());
                }
            }
            None => in_list = false,
        }
    }
    lists
}

/// The words an item is named by: its text up to the first bracket, parenthesis, colon,
/// question mark, comma, semicolon or dash ("strawberries (hanging planter)": "strawberries";
/// "1 can of peas [best-before:: 2025-06-30]": "1 can of peas").
fn item_name(item: &str) -> &str {
    let end = item
        .find(['(', '[', ':', '?', ',', ';', '—', '–'])
        .or_else(|| item.find(" - "))
        .unwrap_or(item.len());
    match item[..end].trim() {
        "" => item,
        name => name,
    }
}

/// Whether `answer` (its terms) names `item`: at least half the terms of its name
/// ([`item_name`]), or of all its terms. Lenient on purpose: an item taken for named is only
/// not quoted again, one taken for left out is quoted after an answer that named it.
fn named(tokenizer: &mut Tokenizer, item: &str, answer: &HashSet<String>) -> bool {
    let half_held = |terms: Vec<String>| {
        let held = terms.iter().filter(|t| answer.contains(*t)).count();
        !terms.is_empty() && held * 2 >= terms.len()
    };
    half_held(tokenizer.query_terms(item_name(item))) || half_held(tokenizer.query_terms(item))
}

/// The list of a passage that an answer names most items of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedList {
    /// How many of its items the answer names (at least two).
    pub named: usize,
    /// The items it leaves out, in the list's order (perhaps none).
    pub left_out: Vec<String>,
}

/// The list of `passage` (of at most [`MAX_ITEMS`] items, not most of them sentences) that
/// `answer` names the most items of, when it names at least two of one; the first of those
/// that tie.
pub fn named_list(answer: &str, passage: &str) -> Option<NamedList> {
    let mut tokenizer = Tokenizer::default();
    let said: HashSet<String> = tokenizer.query_terms(answer).into_iter().collect();
    let mut best: Option<NamedList> = None;
    for list in lists(passage) {
        // Items that are sentences are steps or notes, not things asked for ("1. Soften the
        // onion, 10 min."): the rest of a method is no answer to "What spices go in it?".
        let sentences = list.iter().filter(|item| item.ends_with('.')).count();
        if list.len() > MAX_ITEMS || sentences * 2 > list.len() {
            continue;
        }
        let (named_items, rest): (Vec<&String>, Vec<&String>) = list
            .iter()
            .partition(|item| named(&mut tokenizer, item, &said));
        let better = best.as_ref().is_none_or(|b| named_items.len() > b.named);
        if named_items.len() >= NAMED_ITEMS && better {
            best = Some(NamedList {
                named: named_items.len(),
                left_out: rest.into_iter().cloned().collect(),
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIFTS: &str = "Ideas for Mum's birthday:\n\n\
        - gardening gloves (size M, green)\n\
        - the new Camilla Läckberg paperback\n\
        - theatre tickets for the two of us\n\n\
        For Dad:\n- a good bread knife\n";

    fn left_out(answer: &str, passage: &str) -> Vec<String> {
        named_list(answer, passage).map_or(Vec::new(), |list| list.left_out)
    }

    #[test]
    fn the_items_an_answer_left_out_of_the_list_it_names_are_found() {
        let answer = "The new Camilla Läckberg paperback is a great gift for Mum. Theatre \
                      tickets for the two of us are also a good idea. [1]";
        assert_eq!(
            left_out(answer, GIFTS),
            ["gardening gloves (size M, green)"]
        );
        // Every item named: nothing left out.
        let whole = "Gardening gloves, the Camilla Läckberg paperback or theatre tickets [1].";
        assert!(left_out(whole, GIFTS).is_empty());
        // One item named is no sign the list was asked for.
        assert!(left_out("Gardening gloves [1].", GIFTS).is_empty());
        // An item is named by the words before its details.
        let balcony = "- Sungold tomatoes (2 plants, in the big pots)\n- basil\n\
                       - strawberries (hanging planter)\n";
        let answer = "Sungold tomatoes, basil and strawberries [1].";
        assert_eq!(
            named_list(answer, balcony),
            Some(NamedList {
                named: 3,
                left_out: Vec::new()
            })
        );
    }

    #[test]
    fn tasks_and_numbered_items_are_lists_and_links_read_as_text() {
        let passage = "## Action items\n\
            - [x] Elif: estimate for booking form API by 21 March\n\
            - [ ] Lena: decide on the booking provider\n\
            - [ ] [[Anna Berg|Anna]]: send updated quote to Wouter\n";
        let answer = "Elif estimates the booking form API and Lena decides on the provider [1].";
        assert_eq!(
            left_out(answer, passage),
            ["Anna: send updated quote to Wouter"]
        );
        let numbered = "1. flour\n2. eggs\n3. milk\n";
        assert_eq!(left_out("Flour and eggs [1].", numbered), ["milk"]);
        // Inline fields are no part of an item's name.
        let pantry = "- 1 can of peas [best-before:: 2025-06-30]\n\
                      - 2 jars of mushrooms [best-before:: 2025-10-01]\n- 1 kg rice\n";
        assert_eq!(
            left_out("1 can of peas and 2 jars of mushrooms", pantry),
            ["1 kg rice"]
        );
        // Steps written as sentences are no list of things.
        let method = "1. Soften onion and peppers, 10 min.\n2. Garlic and spices, 1 min.\n\
                      3. Tomatoes in, simmer 20 minutes.\n4. Feta on top. Serve.\n";
        assert!(left_out("Garlic, spices and tomatoes [1].", method).is_empty());
        // A long list is a log, not an answer's list.
        let long: String = (0..20).map(|i| format!("- item{i} thing{i}\n")).collect();
        assert!(left_out("item1 thing1 and item2 thing2", &long).is_empty());
    }
}
