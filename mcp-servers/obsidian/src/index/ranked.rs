//! Ranked search over the index: words alone, or words and meaning fused by their scores,
//! kept to a [`NoteFilter`], each hit with the passages that best match the query.

use std::collections::{HashMap, HashSet};

use super::{NoteEntry, VaultIndex, folder_filter};
use crate::api;
use crate::dates::Period;
use crate::note;
use crate::passage_order::passage_order;
use crate::resolve;
use crate::search::{self, Tokenizer};
use crate::tags;
use crate::vectors::NoteMatch;

/// How far down each ranking fusion looks.
const FUSION_DEPTH: usize = 100;
/// The share of a fused score that comes from meaning; words give the rest. Each ranking's
/// scores are scaled to 0..1 over the notes it ranks (BM25F by the best; similarity from the
/// lowest kept to the best), so each says how far ahead its best notes are, which ranks
/// alone do not: with reciprocal-rank fusion (k = 60) a person's note that only words found,
/// far ahead of the rest, tied a note that meaning liked a little. Measured on the tuning
/// sets (help 43 and 60, four personal vaults; all-MiniLM or multilingual-e5-small): hit@1
/// 220 → 233 of 346 with 0.55, over 0.3–0.7 tried (docs/benches.md, "Retrieval").
const MEANING_WEIGHT: f32 = 0.55;
/// Cosine similarity below which a note is not taken as related by meaning at all, so a query
/// about nothing in the vault does not return whatever is least unrelated. With
/// all-MiniLM-L6-v2 a short question and the long passage answering it can score as low as
/// 0.16 (the sample vault's office-hours question), while unrelated notes score near 0.
const MIN_SIMILARITY: f32 = 0.1;

/// What a note whose title or alias is the query adds to its fused score: more than any
/// fused score (at most 1), so exact names win.
const EXACT_NAME: f32 = 2.0;

/// `score` scaled to 0..1 between `low` and `high`; 1 when the two are one (a ranking of one
/// note).
fn scaled(score: f32, low: f32, high: f32) -> f32 {
    if high - low <= f32::EPSILON {
        1.0
    } else {
        ((score - low) / (high - low)).clamp(0.0, 1.0)
    }
}

/// One note's standing in the fused ranking.
#[derive(Debug, Default, Clone, Copy)]
struct Fused<'a> {
    score: f32,
    /// Its rank by words.
    lexical: Option<usize>,
    /// Its rank by meaning and its passages' similarities.
    semantic: Option<(usize, &'a NoteMatch)>,
}

/// A search hit: a note and its passages that best match the query, best first.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Note id.
    pub id: u32,
    /// The note's score (passages only choose what is shown, not the order).
    pub score: f32,
    /// At least one passage (with empty text for a note without text), at most as many as
    /// asked for.
    pub passages: Vec<HitPassage>,
    /// Which ranking found it.
    pub matched: api::Matched,
}

/// One passage of a search hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HitPassage {
    /// The headings above the passage, outermost first (empty above the first heading).
    pub heading_path: Vec<String>,
    /// The passage text (at most [`api::PASSAGE_CHARS`] characters).
    pub text: String,
}

/// Which notes a search or a listing keeps; every part left `None` keeps all.
#[derive(Debug, Clone, Default)]
pub struct NoteFilter<'a> {
    /// Only notes in this folder (vault-relative), including subfolders.
    pub folder: Option<&'a str>,
    /// Only notes with this tag or one nested under it.
    pub tag: Option<&'a str>,
    /// Only notes about a day of this period (`NoteEntry::periods`).
    pub period: Option<Period>,
}

impl NoteFilter<'_> {
    /// The filter in the form notes are compared in.
    pub(super) fn prepared(&self) -> PreparedFilter {
        PreparedFilter {
            folder: self.folder.map(folder_filter).filter(|f| !f.is_empty()),
            tag: self.tag.map(tags::normalize).filter(|t| !t.is_empty()),
            period: self.period,
        }
    }
}

pub(super) struct PreparedFilter {
    folder: Option<String>,
    tag: Option<String>,
    period: Option<Period>,
}

impl PreparedFilter {
    pub(super) fn keeps(&self, e: &NoteEntry) -> bool {
        if let Some(f) = &self.folder {
            let k = &e.folded_key;
            if !(k.starts_with(f.as_str()) && k.as_bytes().get(f.len()) == Some(&b'/')) {
                return false;
            }
        }
        if let Some(t) = &self.tag
            && !e.parsed.tags.iter().any(|x| tags::matches_filter(x, t))
        {
            return false;
        }
        if let Some(p) = &self.period
            && !e.periods.iter().any(|q| q.overlaps(p))
        {
            return false;
        }
        true
    }
}

impl VaultIndex {
    /// Ranked search with an optional filter (folder, tag, period): the best `limit` notes, each with
    /// its `passages` (at least one) that best match the query.
    ///
    /// Lexical (BM25F over titles, aliases, headings, tags and text) alone, or, given
    /// `semantic` (every note's best passage by cosine similarity to the query, best first,
    /// from [`crate::vectors::VectorStore::rank`]), both rankings fused by their scaled scores
    /// ([`MEANING_WEIGHT`]): a note found by meaning but sharing no word with the query still
    /// comes up, and one both rankings like comes first. A note whose title or alias is the
    /// query goes first either way, so exact names still win.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        passages: usize,
        filter: &NoteFilter,
        semantic: Option<&[NoteMatch]>,
    ) -> Vec<Hit> {
        let mut tok = self.tokenizer();
        let terms = tok.query_terms(query);
        let semantic = semantic.filter(|s| !s.is_empty());
        if terms.is_empty() && semantic.is_none() && filter.period.is_none() {
            return Vec::new();
        }
        let keep = filter.prepared();
        let keep = |e: &NoteEntry| keep.keeps(e);
        let exact = resolve::fold(query.trim());
        let is_exact = |id: u32| {
            self.get(id)
                .is_some_and(|e| e.folded_names.contains(&exact))
        };
        let mut lexical = self
            .search
            .search(&terms, |d| self.get(d).is_some_and(keep));
        for s in &mut lexical {
            if is_exact(s.doc) {
                s.score *= 2.0;
            }
        }
        lexical.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        let weights: Vec<f32> = terms
            .iter()
            .map(|t| self.search.passage_weight(t))
            .collect();
        let hit = |id: u32, score: f32, matched, tok: &mut Tokenizer, similarities| {
            let e = self.get(id)?;
            let passages = best_passages(e, tok, &terms, &weights, similarities, passages);
            Some(Hit {
                id,
                score,
                passages,
                matched,
            })
        };
        let Some(semantic) = semantic else {
            let mut hits: Vec<Hit> = lexical
                .into_iter()
                .take(limit)
                .filter_map(|s| hit(s.doc, s.score, api::Matched::Words, &mut tok, None))
                .collect();
            self.fill_from_period(&mut hits, limit, filter, &keep, |id| {
                hit(id, 0.0, api::Matched::Period, &mut tok, None)
            });
            return hits;
        };

        // Score fusion over the head of each ranking, each scaled to 0..1.
        let mut fused: HashMap<u32, Fused> = HashMap::new();
        let best_words = lexical.first().map_or(0.0, |s| s.score);
        for (rank, s) in lexical.iter().take(FUSION_DEPTH).enumerate() {
            let f = fused.entry(s.doc).or_default();
            f.score += (1.0 - MEANING_WEIGHT) * scaled(s.score, 0.0, best_words);
            f.lexical = Some(rank);
        }
        let by_meaning: Vec<(u32, &NoteMatch)> = semantic
            .iter()
            .filter(|m| m.score >= MIN_SIMILARITY)
            .filter_map(|m| Some((self.id_of(&m.rel)?, m)))
            .filter(|(id, _)| self.get(*id).is_some_and(keep))
            .take(FUSION_DEPTH)
            .collect();
        let best_meaning = by_meaning.first().map_or(0.0, |(_, m)| m.score);
        let least_meaning = by_meaning.last().map_or(0.0, |(_, m)| m.score);
        for (rank, (id, m)) in by_meaning.into_iter().enumerate() {
            let f = fused.entry(id).or_default();
            f.score += MEANING_WEIGHT * scaled(m.score, least_meaning, best_meaning);
            f.semantic = Some((rank, m));
        }
        let mut ranked: Vec<(u32, Fused)> = fused.into_iter().collect();
        for (id, f) in &mut ranked {
            if is_exact(*id) {
                f.score += EXACT_NAME;
            }
        }
        ranked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
        let mut hits: Vec<Hit> = ranked
            .into_iter()
            .take(limit)
            .filter_map(|(id, f)| {
                let matched = match (f.lexical, f.semantic) {
                    (Some(_), Some(_)) => api::Matched::Both,
                    (None, Some(_)) => api::Matched::Meaning,
                    _ => api::Matched::Words,
                };
                // Only vectors of the note's current text say anything about its passages.
                let version = self.get(id)?.version;
                let similarities = f
                    .semantic
                    .map(|(_, m)| m)
                    .filter(|m| m.version == version)
                    .map(|m| m.similarities.as_slice());
                hit(id, f.score, matched, &mut tok, similarities)
            })
            .collect();
        self.fill_from_period(&mut hits, limit, filter, &keep, |id| {
            hit(id, 0.0, api::Matched::Period, &mut tok, None)
        });
        hits
    }

    /// With a period asked for, the notes about it that the query found nothing in follow
    /// the hits, up to `limit`, a note about fewer days first ("what did I do yesterday?"
    /// wants yesterday's note, whatever its words).
    fn fill_from_period(
        &self,
        hits: &mut Vec<Hit>,
        limit: usize,
        filter: &NoteFilter,
        keep: &impl Fn(&NoteEntry) -> bool,
        mut hit: impl FnMut(u32) -> Option<Hit>,
    ) {
        let Some(period) = filter.period else { return };
        if hits.len() >= limit {
            return;
        }
        let days = |e: &NoteEntry| {
            e.periods
                .iter()
                .filter(|p| p.overlaps(&period))
                .map(|p| (p.to - p.from).num_days())
                .min()
                .unwrap_or(i64::MAX)
        };
        let shown: HashSet<u32> = hits.iter().map(|h| h.id).collect();
        let mut rest: Vec<(i64, &str, u32)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(id, e)| Some((id as u32, e.as_ref()?)))
            .filter(|(id, e)| !shown.contains(id) && keep(e))
            .map(|(id, e)| (days(e), e.key.as_str(), id))
            .collect();
        rest.sort();
        let room = limit - hits.len();
        hits.extend(rest.into_iter().take(room).filter_map(|(_, _, id)| hit(id)));
    }
}

/// The heading paths and texts of `e`'s `count` passages that best match the query `terms`
/// (weighted by `weights`), best first; one passage with empty text for a note without text.
/// Passages are cut at query time, for the few notes shown only, so indexing costs nothing more.
///
/// Words choose first where they can: on the Obsidian help questions, the passage the query's
/// words favour held an answer keyword more often than the one most similar in meaning, or any
/// blend of the two (measured with all-MiniLM-L6-v2). Then comes the note's opening, then
/// the two rankings in turn (the best by meaning, the second by words, …), so further passages
/// bring what words alone would miss: on the help questions, with 3 passages of the top 3
/// notes, an answer keyword is in the passages for 31 of 43 (29 without the opening). A note
/// whose passages share no word with the query (found by meaning, or by its title or tags) is
/// ranked by meaning alone; without `similarities` (each passage's, in note order) such a note
/// gives its passages in order.
fn best_passages(
    e: &NoteEntry,
    tok: &mut Tokenizer,
    terms: &[String],
    weights: &[f32],
    similarities: Option<&[Option<f32>]>,
    count: usize,
) -> Vec<HitPassage> {
    let headings = &e.parsed.headings;
    let passages = e.passages();
    if passages.is_empty() {
        return vec![HitPassage {
            heading_path: Vec::new(),
            text: String::new(),
        }];
    }
    let mut by_words = search::passage_scores(
        tok,
        terms,
        weights,
        passages
            .iter()
            .map(|p| (p.heading_path(headings), p.text(&e.text))),
    );
    // The properties (the last passage, when the note has them) come first by words only
    // where no section of the text shares a word with the query: what a person wrote about
    // a thing says more than a property naming it ("description" of a help page).
    if e.has_properties_passage()
        && let Some((properties, text)) = by_words.split_last_mut()
        && text.iter().any(|s| *s > 0.0)
    {
        *properties = 0.0;
    }
    let similarities = similarities.filter(|s| s.len() == passages.len());
    // A passage that says nothing (tags, dots, a Dataview table) goes last, whatever its
    // headings match: the note's facts are then in its properties or another section.
    let mut order = passage_order(&by_words, similarities, passages.len());
    order.sort_by_key(|&i| note::says_nothing(passages[i].text(&e.text)));
    order.truncate(count);
    order
        .into_iter()
        .map(|i| {
            let (heading_path, text) = e.passage_parts(&passages[i]);
            HitPassage { heading_path, text }
        })
        .collect()
}
