//! Ranked full-text search: an in-memory inverted index with BM25F scoring over four fields
//! (title+aliases, headings, tags, body), stop words and Snowball stemming in the vault's
//! language (English unless it is German, French or Spanish), and CJK text indexed as
//! character unigrams and bigrams. Updated one document at a time, so the
//! file watcher can keep it live. Also picks which passage of a matching document best
//! answers the query ([`best_passage`]). Knows nothing about files or MCP.
//!
//! Why hand-written: a note vault is small (thousands of documents, tens of MB), must update
//! per file in milliseconds, and must start in well under a second; an embedded engine such
//! as tantivy brings segment merging, a commit model and a far larger build for no gain here.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

use crate::language::Language;

/// Index fields.
pub const TITLE: usize = 0;
/// Headings field.
pub const HEADINGS: usize = 1;
/// Tags field.
pub const TAGS: usize = 2;
/// Body field.
pub const BODY: usize = 3;
const FIELDS: usize = 4;
const WEIGHTS: [f32; FIELDS] = [5.0, 2.0, 2.0, 1.0];
const B: [f32; FIELDS] = [0.3, 0.5, 0.3, 0.75];
const K1: f32 = 1.2;

/// Words too common to carry meaning in an English question (and the words a question about
/// notes uses for them).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "no",
    "nor",
    "not",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "tell",
    "know",
    "does",
    "please",
    "find",
    "show",
    "note",
    "notes",
    "vault",
    "mention",
    "mentions",
    "mentioned",
    "say",
    "says",
    "said",
];

/// A set of stop words.
type StopWords = HashSet<&'static str, Fast>;

/// The stop words and stemmer for text in `language`: English for English, Chinese, Japanese
/// and Korean (their own text is read as characters, the Latin words among it are English's);
/// German, French and Spanish take NLTK's stop words (the `stop-words` crate) and their own
/// Snowball stemmer.
fn stop_words_and_stemmer(language: Option<Language>) -> (&'static StopWords, Algorithm) {
    static ENGLISH: LazyLock<StopWords> = LazyLock::new(|| STOP_WORDS.iter().copied().collect());
    static GERMAN: LazyLock<StopWords> = LazyLock::new(|| nltk("de"));
    static FRENCH: LazyLock<StopWords> = LazyLock::new(|| nltk("fr"));
    static SPANISH: LazyLock<StopWords> = LazyLock::new(|| nltk("es"));
    fn nltk(code: &str) -> StopWords {
        stop_words::get(code).iter().copied().collect()
    }
    match language {
        Some(Language::German) => (&GERMAN, Algorithm::German),
        Some(Language::French) => (&FRENCH, Algorithm::French),
        Some(Language::Spanish) => (&SPANISH, Algorithm::Spanish),
        _ => (&ENGLISH, Algorithm::English),
    }
}

/// Whether `word` is a stop word of any language Recall reads by its words (NLTK's English,
/// German, French and Spanish lists, the `stop-words` crate): a function word, not a name,
/// whatever language the text around it is written in.
pub fn is_stop_word(word: &str) -> bool {
    static ANY: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
        ["en", "de", "fr", "es"]
            .iter()
            .flat_map(|code| stop_words::get(*code).iter().copied())
            .collect()
    });
    ANY.contains(word.to_lowercase().as_str())
}

/// Hash-map state for terms of the user's own vault (fast; no need for DoS resistance here).
pub type Fast = rustc_hash::FxBuildHasher;

/// Most distinct words a tokenizer remembers the term of.
const WORD_CACHE: usize = 100_000;

/// Whether `c` is of a script written without spaces between words (Chinese, Japanese,
/// Korean syllables), which the tokenizer reads in overlapping pairs. Public so that the
/// agent splits words where these scripts meet another exactly as search does.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF
        | 0x20000..=0x2FA1F)
}

/// Turns text into search terms. Reusable: it keeps the stemmer, a cache from words to terms,
/// and numbers every term it produces ([`TermId`]), so that building and merging documents
/// costs one hash lookup per word and one per distinct term, not one per word per step.
pub struct Tokenizer {
    stemmer: Stemmer,
    stop_words: &'static StopWords,
    word: String,
    /// Lowercased word → its term (the stem; numbers as they are), or `None` for a stop word.
    words: HashMap<Box<str>, Option<TermId>, Fast>,
    vocab: Vocab,
    /// Per-term counts of the document being built ([`DocTerms::build`]), and which are set.
    counts: Vec<[u16; FIELDS]>,
    touched: Vec<TermId>,
}

/// A term's number within one [`Tokenizer`].
type TermId = u32;

/// The terms a tokenizer has produced, and their ids in the [`SearchIndex`] once merged.
#[derive(Default)]
struct Vocab {
    text: Vec<Box<str>>,
    ids: HashMap<Box<str>, TermId, Fast>,
    /// `text[i]`'s index id, or `u32::MAX` before the first merge of a document holding it.
    merged: Vec<u32>,
}

impl Vocab {
    fn intern(&mut self, term: &str) -> TermId {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.text.len() as TermId;
        self.text.push(term.into());
        self.ids.insert(term.into(), id);
        self.merged.push(u32::MAX);
        id
    }
}

impl Default for Tokenizer {
    /// An English tokenizer.
    fn default() -> Self {
        Tokenizer::for_language(None)
    }
}

impl Tokenizer {
    /// A tokenizer for text in `language` (`None`: English), with its stop words and stemmer.
    /// An index and the queries asked of it must use the same.
    pub fn for_language(language: Option<Language>) -> Tokenizer {
        let (stop_words, algorithm) = stop_words_and_stemmer(language);
        Self {
            stemmer: Stemmer::create(algorithm),
            stop_words,
            word: String::new(),
            words: HashMap::default(),
            vocab: Vocab::default(),
            counts: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// A tokenizer for the language `text` is written in ([`Language::detect`]): for a
    /// client that has the vault's passages but not the index.
    pub fn for_text(text: &str) -> Tokenizer {
        Tokenizer::for_language(Language::detect(text))
    }

    /// Calls `f(term, byte_start, byte_end)` for every term in `text`. With `query` set, CJK
    /// runs longer than one character give only bigrams (the index holds both).
    pub fn each(&mut self, text: &str, query: bool, mut f: impl FnMut(&str, usize, usize)) {
        self.each_id(text, query, None, |vocab, id, start, end| {
            f(&vocab.text[id as usize], start, end);
        });
    }

    /// The core of [`Tokenizer::each`], giving term ids. With `only` set, words that cannot
    /// stem to one of those terms (different first two letters) are skipped before stemming
    /// (fast passage scans).
    fn each_id(
        &mut self,
        text: &str,
        query: bool,
        only: Option<&[String]>,
        mut f: impl FnMut(&Vocab, TermId, usize, usize),
    ) {
        let mut chars = text.char_indices().peekable();
        let mut buf = [0u8; 8];
        while let Some((i, c)) = chars.next() {
            if is_cjk(c) {
                let mut prev = (i, c);
                let mut run = 1;
                loop {
                    let next = chars.peek().copied().filter(|&(_, d)| is_cjk(d));
                    let (pi, pc) = prev;
                    let pend = pi + pc.len_utf8();
                    let single_run = run == 1 && next.is_none();
                    if !query || single_run {
                        let id = self.vocab.intern(pc.encode_utf8(&mut buf));
                        f(&self.vocab, id, pi, pend);
                    }
                    let Some((ni, nc)) = next else { break };
                    let bigram_end = ni + nc.len_utf8();
                    let id = self.vocab.intern(&text[pi..bigram_end]);
                    f(&self.vocab, id, pi, bigram_end);
                    chars.next();
                    prev = (ni, nc);
                    run += 1;
                }
                continue;
            }
            if !c.is_alphanumeric() {
                continue;
            }
            let start = i;
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if d.is_alphanumeric() && !is_cjk(d) {
                    end = j + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let raw = &text[start..end];
            if let Some(id) = self.word_term(raw, only) {
                f(&self.vocab, id, start, end);
            }
            // A word joined of others is found by its head too ("iPadOS" by "iPad", "macOS"
            // by "Mac", "JavaScript" by "Java"): a person names the device, a note the system.
            for head in camel_heads(raw) {
                if let Some(id) = self.word_term(&raw[..head], only) {
                    f(&self.vocab, id, start, start + head);
                }
            }
        }
    }

    /// The term of the word `raw` (lowercased and stemmed; numbers as they are); `None` for a
    /// stop word, a word over 64 bytes, or one that cannot stem to any of `only`.
    fn word_term(&mut self, raw: &str, only: Option<&[String]>) -> Option<TermId> {
        self.word.clear();
        if raw.is_ascii() {
            self.word.push_str(raw);
            self.word.make_ascii_lowercase();
        } else {
            self.word.extend(raw.chars().flat_map(char::to_lowercase));
        }
        if self.word.len() > 64 {
            return None;
        }
        // One lookup per word: the cache also remembers which words are stop words.
        if let Some(&id) = self.words.get(self.word.as_str()) {
            return id;
        }
        if let Some(only) = only
            && !only.iter().any(|t| same_start(t, &self.word))
        {
            return None;
        }
        let id = if self.stop_words.contains(self.word.as_str()) {
            None
        } else if self.word.bytes().any(|b| b.is_ascii_digit()) {
            Some(self.vocab.intern(&self.word))
        } else {
            Some(self.vocab.intern(&self.stemmer.stem(&self.word)))
        };
        if self.words.len() >= WORD_CACHE {
            self.words.clear();
        }
        self.words.insert(self.word.as_str().into(), id);
        id
    }

    /// The distinct terms of a query, in order.
    pub fn query_terms(&mut self, q: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        self.each(q, true, |t, _, _| {
            if !out.iter().any(|o| o == t) {
                out.push(t.to_string());
            }
        });
        out
    }
}

/// Where the heads of a word joined of others end: before each capital that follows a small
/// letter, three letters in or more ("iPadOS": 4, for "iPad"; "macOS": 3). Not "iCloud"'s
/// "i", a letter too few to find anything by.
fn camel_heads(word: &str) -> impl Iterator<Item = usize> + '_ {
    word.char_indices()
        .zip(word.chars().skip(1))
        .filter(|((_, c), next)| c.is_lowercase() && next.is_uppercase())
        .map(|((at, c), _)| at + c.len_utf8())
        .filter(|&head| word[..head].chars().count() >= 3)
}

/// Whether two strings share their first two characters (or one is a prefix of the other).
fn same_start(a: &str, b: &str) -> bool {
    a.chars().zip(b.chars()).take(2).all(|(x, y)| x == y)
}

/// A document prepared for the index (built off-lock, possibly on another thread): its terms
/// as ids of the [`Tokenizer`] that built it, which must be the one passed to
/// [`SearchIndex::insert`].
#[derive(Debug, Default, Clone)]
pub struct DocTerms {
    terms: Vec<(TermId, [u16; FIELDS])>,
    lens: [u32; FIELDS],
}

impl DocTerms {
    /// Tokenises the fields of one document.
    pub fn build(tok: &mut Tokenizer, fields: [&str; FIELDS]) -> Self {
        let mut counts = std::mem::take(&mut tok.counts);
        let mut touched = std::mem::take(&mut tok.touched);
        let mut lens = [0u32; FIELDS];
        for (fi, text) in fields.iter().enumerate() {
            tok.each_id(text, false, None, |vocab, id, _, _| {
                lens[fi] += 1;
                if counts.len() < vocab.text.len() {
                    counts.resize(vocab.text.len(), [0; FIELDS]);
                }
                let c = &mut counts[id as usize];
                if *c == [0; FIELDS] {
                    touched.push(id);
                }
                c[fi] = c[fi].saturating_add(1);
            });
        }
        let terms = touched
            .drain(..)
            .map(|id| (id, std::mem::take(&mut counts[id as usize])))
            .collect();
        tok.counts = counts;
        tok.touched = touched;
        Self { terms, lens }
    }
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u16; FIELDS],
}

/// The inverted index. Documents are numbered by the caller (dense slot numbers).
#[derive(Debug, Default)]
pub struct SearchIndex {
    dict: HashMap<Box<str>, u32, Fast>,
    postings: Vec<Vec<Posting>>,
    doc_terms: Vec<Vec<u32>>,
    doc_lens: Vec<[u32; FIELDS]>,
    live: Vec<bool>,
    total_lens: [u64; FIELDS],
    docs: u32,
}

/// One scored document.
#[derive(Debug, Clone, Copy)]
pub struct Scored {
    /// The caller's document number.
    pub doc: u32,
    /// BM25F score.
    pub score: f32,
}

impl SearchIndex {
    /// Adds (or replaces) document `doc`; `tok` is the tokenizer that built `terms`.
    pub fn insert(&mut self, doc: u32, terms: DocTerms, tok: &mut Tokenizer) {
        self.remove(doc);
        let d = doc as usize;
        if self.doc_terms.len() <= d {
            self.doc_terms.resize_with(d + 1, Vec::new);
            self.doc_lens.resize(d + 1, [0; FIELDS]);
            self.live.resize(d + 1, false);
        }
        let vocab = &mut tok.vocab;
        let mut ids = Vec::with_capacity(terms.terms.len());
        for (term, tf) in terms.terms {
            let mut id = vocab.merged[term as usize];
            if id == u32::MAX {
                let next = self.postings.len() as u32;
                id = *self
                    .dict
                    .entry(vocab.text[term as usize].clone())
                    .or_insert(next);
                if id == next {
                    self.postings.push(Vec::new());
                }
                vocab.merged[term as usize] = id;
            }
            self.postings[id as usize].push(Posting { doc, tf });
            ids.push(id);
        }
        for (f, l) in terms.lens.iter().enumerate() {
            self.total_lens[f] += u64::from(*l);
        }
        self.doc_terms[d] = ids;
        self.doc_lens[d] = terms.lens;
        self.live[d] = true;
        self.docs += 1;
    }

    /// Removes document `doc` if present.
    pub fn remove(&mut self, doc: u32) {
        let d = doc as usize;
        if !self.live.get(d).copied().unwrap_or(false) {
            return;
        }
        for id in std::mem::take(&mut self.doc_terms[d]) {
            self.postings[id as usize].retain(|p| p.doc != doc);
        }
        for (f, l) in self.doc_lens[d].iter().enumerate() {
            self.total_lens[f] -= u64::from(*l);
        }
        self.live[d] = false;
        self.docs -= 1;
    }

    /// Scores every document matching any of `terms`; `keep` filters documents.
    pub fn search(&self, terms: &[String], keep: impl Fn(u32) -> bool) -> Vec<Scored> {
        if self.docs == 0 {
            return Vec::new();
        }
        let n = self.docs as f32;
        let avg = self.total_lens.map(|t| (t as f32 / n).max(1.0));
        let mut scores: HashMap<u32, (f32, u32), Fast> = HashMap::default();
        for term in terms {
            let Some(&id) = self.dict.get(term.as_str()) else {
                continue;
            };
            let list = &self.postings[id as usize];
            let idf = self.idf(term);
            for p in list {
                let lens = &self.doc_lens[p.doc as usize];
                let mut tf = 0.0;
                for f in 0..FIELDS {
                    if p.tf[f] > 0 {
                        let norm = 1.0 - B[f] + B[f] * lens[f] as f32 / avg[f];
                        tf += WEIGHTS[f] * f32::from(p.tf[f]) / norm;
                    }
                }
                let e = scores.entry(p.doc).or_insert((0.0, 0));
                e.0 += idf * tf * (K1 + 1.0) / (K1 + tf);
                e.1 += 1;
            }
        }
        let q = terms.len().max(1) as f32;
        let mut out: Vec<Scored> = scores
            .into_iter()
            .filter(|(d, _)| keep(*d))
            // Reward documents that match more of the question's distinct terms.
            .map(|(doc, (s, matched))| Scored {
                doc,
                score: s * (0.5 + 0.5 * matched as f32 / q),
            })
            .collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        out
    }

    /// The inverse document frequency of `term` (as [`SearchIndex::search`] weighs it); 0 for a
    /// term no document holds.
    pub fn idf(&self, term: &str) -> f32 {
        let Some(&id) = self.dict.get(term) else {
            return 0.0;
        };
        let (n, df) = (self.docs as f32, self.postings[id as usize].len() as f32);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// [`Self::idf`], or for a term no document holds, the weight of one that a single
    /// document holds: a word found only where the index does not look (a note's properties)
    /// is rare, not worthless, when passages are compared.
    pub fn passage_weight(&self, term: &str) -> f32 {
        if self.dict.contains_key(term) {
            return self.idf(term);
        }
        let n = self.docs as f32;
        (1.0 + (n - 1.0 + 0.5) / 1.5).ln().max(0.0)
    }

    /// Number of live documents.
    pub fn len(&self) -> usize {
        self.docs as usize
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// Number of distinct terms (for statistics).
    pub fn terms(&self) -> usize {
        self.dict.len()
    }
}

/// How much a query term in a passage's heading path counts against one in its text (the
/// index weighs headings against body the same way).
const PASSAGE_HEADING_WEIGHT: f32 = WEIGHTS[HEADINGS] / WEIGHTS[BODY];
/// Length normalisation among one note's passages: mild, since passages are capped in size
/// and a longer one also brings more context to answer from.
const PASSAGE_B: f32 = 0.3;
/// How much less the last passage of a document counts than the first, other things equal.
/// A note's opening usually introduces its subject, while a later section that merely repeats
/// the query's one word (a CSS example full of `callout`) is seldom the answer; a match in a
/// heading or of more of the query's words still wins by far more than this.
const PASSAGE_POSITION_DISCOUNT: f32 = 0.2;

/// How well each of one document's passages matches the query `terms`, each weighted by
/// `weights` (the index's [`SearchIndex::idf`], so rare words count more): BM25 over the
/// passage text plus its heading path, times the share of distinct terms matched, discounted
/// a little the later the passage comes. Each passage is its heading texts and its text, in
/// document order; the scores are in the same order.
pub fn passage_scores<'a, H>(
    tok: &mut Tokenizer,
    terms: &[String],
    weights: &[f32],
    passages: impl IntoIterator<Item = (H, &'a str)>,
) -> Vec<f32>
where
    H: IntoIterator<Item = &'a str>,
{
    let mut which: HashMap<TermId, usize, Fast> = HashMap::default();
    for (i, t) in terms.iter().enumerate() {
        which.entry(tok.vocab.intern(t)).or_insert(i);
    }
    // Count first (lengths are needed for the average), then score.
    let mut counted: Vec<(Vec<f32>, usize)> = Vec::new();
    for (headings, text) in passages {
        let mut tf = vec![0.0f32; terms.len()];
        for h in headings {
            tok.each_id(h, false, Some(terms), |_, id, _, _| {
                if let Some(&i) = which.get(&id) {
                    tf[i] += PASSAGE_HEADING_WEIGHT;
                }
            });
        }
        tok.each_id(text, false, Some(terms), |_, id, _, _| {
            if let Some(&i) = which.get(&id) {
                tf[i] += 1.0;
            }
        });
        counted.push((tf, text.len()));
    }
    if counted.is_empty() {
        return Vec::new();
    }
    let avg =
        (counted.iter().map(|(_, l)| *l).sum::<usize>() as f32 / counted.len() as f32).max(1.0);
    let q = terms.len().max(1) as f32;
    let n = counted.len() as f32;
    let mut scores = Vec::with_capacity(counted.len());
    for (k, (tf, len)) in counted.iter().enumerate() {
        let norm = 1.0 - PASSAGE_B + PASSAGE_B * *len as f32 / avg;
        let mut score = 0.0;
        let mut matched = 0;
        for (x, w) in tf.iter().zip(weights) {
            if *x > 0.0 {
                score += w * x * (K1 + 1.0) / (x + K1 * norm);
                matched += 1;
            }
        }
        scores.push(
            score
                * (0.5 + 0.5 * matched as f32 / q)
                * (1.0 - PASSAGE_POSITION_DISCOUNT * k as f32 / n),
        );
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let mut t = Tokenizer::default();
        let mut out = Vec::new();
        t.each(text, false, |w, _, _| out.push(w.to_string()));
        out
    }

    #[test]
    fn stems_and_drops_stop_words() {
        assert_eq!(terms("What are the running Foxes?"), vec!["run", "fox"]);
        assert_eq!(terms("version 2024"), vec!["version", "2024"]);
    }

    #[test]
    fn a_vault_in_german_french_or_spanish_drops_and_stems_its_own_words() {
        let terms_in = |language, text| Tokenizer::for_language(Some(language)).query_terms(text);
        // The same words in another form meet at one term; the language's own small words go.
        assert_eq!(
            terms_in(Language::German, "die Kisten für die Wohnungen"),
            terms_in(Language::German, "Kiste Wohnung")
        );
        assert!(terms_in(Language::German, "und der die das").is_empty());
        assert_eq!(
            terms_in(Language::French, "les déménageurs"),
            terms_in(Language::French, "déménageur")
        );
        assert!(terms_in(Language::French, "le la les et de").is_empty());
        assert_eq!(
            terms_in(Language::Spanish, "las mudanzas"),
            terms_in(Language::Spanish, "mudanza")
        );
        // Read as English, a German small word is a term and a plural stays apart.
        assert!(!terms("und der").is_empty());
        // A Chinese vault's Latin words are English's.
        assert_eq!(
            Tokenizer::for_language(Some(Language::Chinese))
                .query_terms("What are the running Foxes?"),
            terms("What are the running Foxes?")
        );
    }

    #[test]
    fn a_word_joined_of_others_is_found_by_its_head() {
        assert_eq!(terms("iPadOS"), vec!["ipado", "ipad"]);
        assert_eq!(terms("on macOS"), vec!["maco", "mac"]);
        assert_eq!(terms("JavaScript"), vec!["javascript", "java"]);
        // A head of under three letters finds nothing by itself.
        assert_eq!(terms("iCloud"), vec!["icloud"]);
        let mut t = Tokenizer::default();
        assert!(
            t.query_terms("What about on my iPad?")
                .contains(&"ipad".to_string())
        );
    }

    #[test]
    fn cjk_unigrams_and_bigrams() {
        assert_eq!(terms("東京都"), vec!["東", "東京", "京", "京都", "都"]);
        let mut t = Tokenizer::default();
        assert_eq!(t.query_terms("東京"), vec!["東京"]);
        assert_eq!(t.query_terms("東"), vec!["東"]);
    }

    #[test]
    fn ranks_title_over_body_and_removes() {
        let mut tok = Tokenizer::default();
        let mut idx = SearchIndex::default();
        let doc = DocTerms::build(&mut tok, ["Photosynthesis", "", "", "plants use light"]);
        idx.insert(0, doc, &mut tok);
        let doc = DocTerms::build(
            &mut tok,
            [
                "Cells",
                "",
                "",
                "photosynthesis happens in chloroplasts of cells and more words here",
            ],
        );
        idx.insert(1, doc, &mut tok);
        let q = tok.query_terms("how does photosynthesis work");
        let hits = idx.search(&q, |_| true);
        assert_eq!(hits[0].doc, 0);
        assert_eq!(hits.len(), 2);
        idx.remove(0);
        assert_eq!(idx.search(&q, |_| true).len(), 1);
        let doc = DocTerms::build(&mut tok, ["Cells", "", "", "nothing"]);
        idx.insert(1, doc, &mut tok);
        assert!(idx.search(&q, |_| true).is_empty());
        assert_eq!(idx.len(), 1);
    }

    #[test]
    fn documents_from_different_tokenizers_share_terms() {
        // The two tokenizers number their terms differently ("zebra" is 0 in one, 1 in the
        // other); the index must still see one term.
        let (mut a, mut b) = (Tokenizer::default(), Tokenizer::default());
        let mut idx = SearchIndex::default();
        let doc = DocTerms::build(&mut a, ["", "", "", "zebra stripes"]);
        idx.insert(0, doc, &mut a);
        let doc = DocTerms::build(&mut b, ["", "", "", "stripes of a zebra"]);
        idx.insert(1, doc, &mut b);
        let doc = DocTerms::build(&mut a, ["", "", "", "stripes at sunset"]);
        idx.insert(2, doc, &mut a);
        assert_eq!(idx.terms(), 3);
        let q = Tokenizer::default().query_terms("zebras");
        let mut docs: Vec<u32> = idx.search(&q, |_| true).iter().map(|s| s.doc).collect();
        docs.sort();
        assert_eq!(docs, [0, 1]);
        let q = Tokenizer::default().query_terms("stripe");
        assert_eq!(idx.search(&q, |_| true).len(), 3);
    }

    #[test]
    fn passage_scores_weigh_rare_terms_headings_and_favour_the_earlier_on_ties() {
        let mut tok = Tokenizer::default();
        let mut idx = SearchIndex::default();
        // "pump" is in every document, "valve" in one: valve is the rarer, weightier word.
        for (d, body) in ["pump valve", "pump", "pump", "pump"].iter().enumerate() {
            let doc = DocTerms::build(&mut tok, ["", "", "", body]);
            idx.insert(d as u32, doc, &mut tok);
        }
        let q = tok.query_terms("pump valves");
        let w: Vec<f32> = q.iter().map(|t| idx.idf(t)).collect();
        assert!(w[1] > w[0] && idx.idf("absent") == 0.0, "{w:?}");
        let p = |h: &[&'static str], t: &'static str| (h.to_vec(), t);
        let mut scores = |passages: &[(Vec<&'static str>, &'static str)]| {
            passage_scores(&mut tok, &q, &w, passages.iter().cloned())
        };
        let s = scores(&[
            p(&[], "The pump pumps; pumping all day."),
            p(&[], "A valve."),
            p(&[], "The pump and its valve."),
        ]);
        assert!(s[2] > s[1] && s[1] > s[0], "{s:?}");
        // A match in the heading path counts: both passages now hold both words.
        let s = scores(&[p(&[], "pump valve"), p(&["Valves"], "pump")]);
        assert!(s[1] > s[0], "{s:?}");
        // No match anywhere scores nothing; of equal matches the earlier scores higher.
        assert_eq!(scores(&[p(&[], "nothing"), p(&[], "here")]), [0.0, 0.0]);
        let s = scores(&[p(&[], "a pump"), p(&[], "a pump")]);
        assert!(s[0] > s[1] && s[1] > 0.0, "{s:?}");
        assert!(scores(&[]).is_empty());
    }
}
