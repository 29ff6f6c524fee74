//! `obsidian-kb-bench retrieval`: ranking and what a model would be shown, over a QA file
//! (the usage is in the binary's doc).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::{USAGE, embed_vault, flag, threads};

/// Text in the form `benches/answer-quality` compares keywords in: case, runs of whitespace,
/// dash variants, Markdown `code` and *emphasis* marks, and spaces around `+` do not matter.
fn normalise(text: &str) -> String {
    let text: String = text
        .chars()
        .filter(|c| !matches!(c, '`' | '*'))
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            c => c,
        })
        .collect();
    let text = text.to_lowercase();
    let spaced = text.split_whitespace().collect::<Vec<_>>().join(" ");
    spaced
        .replace(" + ", "+")
        .replace(" +", "+")
        .replace("+ ", "+")
}

/// Passages per hit that stand for all of a note's (a note has fewer).
const EVERY_PASSAGE: usize = 1_000;

/// Rank (0-based) of the first gold note in `rels`, if any.
fn gold_rank(rels: &[String], gold: &[String]) -> Option<usize> {
    rels.iter().position(|r| gold.contains(r))
}

pub(super) fn retrieval(args: &[String]) -> anyhow::Result<()> {
    use std::sync::{Arc, RwLock};
    let dir = Path::new(args.first().ok_or_else(|| anyhow::anyhow!("{USAGE}"))?);
    let qa = flag(args, "--qa").ok_or_else(|| anyhow::anyhow!("{USAGE}"))?;
    let k: usize = flag(args, "--k").map_or(Ok(5), str::parse)?;
    // Passages per note, by rank: `2,1` shows two of the first note's and one of each other's.
    let per_rank: Vec<usize> = flag(args, "--passages")
        .unwrap_or("1")
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let passages = per_rank.iter().copied().max().unwrap_or(1);
    let passages_at = |rank: usize| per_rank.get(rank).or(per_rank.last()).map_or(1, |&p| p);
    // Excerpt bounds to weigh, `;` between sets, each set by rank: `800,400;400,200`.
    let excerpt_bounds: Vec<Vec<usize>> = match flag(args, "--excerpt") {
        Some(sets) => sets
            .split(';')
            .map(|set| set.split(',').map(str::parse).collect())
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    // Per set: keyword shown by words alone and with meaning, and the characters shown.
    let mut excerpt_rows: Vec<ExcerptRow> = excerpt_bounds
        .iter()
        .map(|b| ExcerptRow::new(b.clone()))
        .collect();
    let model = flag(args, "--embedding-model").map(PathBuf::from);
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let questions: Vec<(String, Vec<String>, Vec<String>)> = std::fs::read_to_string(qa)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l)?;
            let q = v["question"].as_str().unwrap_or_default().to_string();
            Ok((q, strings(&v["gold"]), strings(&v["keywords"])))
        })
        .collect::<anyhow::Result<_>>()?;
    let (index, stats) = obsidian_kb::VaultIndex::build(obsidian_kb::Vault::open(dir)?);
    let index = Arc::new(RwLock::new(index));
    println!(
        "vault: {} notes; {} questions; hit@{k} = a gold note in the top {k}",
        stats.notes,
        questions.len()
    );
    let temp = tempfile::tempdir()?;
    let semantic = match &model {
        Some(model) => {
            let cache = flag(args, "--cache-dir").map_or(temp.path(), Path::new);
            Some(embed_vault(index.clone(), model, cache, threads(args)?)?)
        }
        None => None,
    };
    let idx = index.read().unwrap();
    let rels = |hits: &[obsidian_kb::index::Hit]| -> Vec<String> {
        hits.iter()
            .filter_map(|h| idx.get(h.id).map(|e| e.rel.clone()))
            .collect()
    };
    let mut table: Vec<(&str, Vec<Option<usize>>)> = vec![
        ("words", vec![]),
        ("meaning", vec![]),
        ("fused", vec![]),
        // As `search_notes` ranks: fused where the model covers the query's language.
        ("served", vec![]),
    ];
    // What a model is shown of the hits: each note's title, and its passages under their
    // headings.
    let shown = |hits: &[obsidian_kb::index::Hit]| -> String {
        let mut text = String::new();
        for (rank, h) in hits.iter().enumerate() {
            text.push_str(idx.get(h.id).map_or("", |e| e.title.as_str()));
            for p in h.passages.iter().take(passages_at(rank)) {
                text.push('\n');
                text.push_str(&p.heading_path.join(" › "));
                text.push('\n');
                text.push_str(&p.text);
            }
            text.push('\n');
        }
        normalise(&text)
    };
    let mut dump = flag(args, "--dump")
        .map(|path| std::fs::File::create(path).map(std::io::BufWriter::new))
        .transpose()?;
    let mut shown_keyword = 0;
    let mut runner_ups = RunnerUps::default();
    let mut query_times = Vec::new();
    for (q, gold, keywords) in &questions {
        let lexical = idx.search(q, k, passages, &Default::default(), None);
        table[0].1.push(gold_rank(&rels(&lexical), gold));
        let mut by_meaning_ranked = None;
        let final_hits = match &semantic {
            None => lexical,
            Some(s) => {
                let t = Instant::now();
                let ranked = s.rank(q)?.unwrap_or_default();
                query_times.push(t.elapsed());
                let by_meaning: Vec<String> =
                    ranked.iter().take(k).map(|m| m.rel.clone()).collect();
                table[1].1.push(gold_rank(&by_meaning, gold));
                let hits = idx.search(q, k, passages, &Default::default(), Some(&ranked));
                let fused = rels(&hits);
                table[2].1.push(gold_rank(&fused, gold));
                if gold_rank(&fused, gold).is_none() {
                    let top: Vec<String> = ranked
                        .iter()
                        .take(3)
                        .map(|m| format!("{} {:.2}", m.rel, m.score))
                        .collect();
                    println!("  fused miss: {q} (by meaning: {})", top.join(", "));
                }
                by_meaning_ranked = Some(ranked);
                let served = if s.covers(q) { hits } else { lexical };
                table[3].1.push(gold_rank(&rels(&served), gold));
                served
            }
        };
        runner_ups.add(&final_hits, gold_rank(&rels(&final_hits), gold));
        if let Some(out) = &mut dump {
            use std::io::Write;
            let hits: Vec<Value> = final_hits
                .iter()
                .map(|h| {
                    let entry = idx.get(h.id);
                    serde_json::json!({
                        "rel": entry.map_or("", |e| e.rel.as_str()),
                        "title": entry.map_or("", |e| e.title.as_str()),
                        "score": h.score,
                        "passages": h.passages.iter().map(|p| serde_json::json!({
                            "heading": p.heading_path,
                            "text": p.text,
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let line = serde_json::json!({
                "question": q, "gold": gold, "keywords": keywords, "hits": hits,
            });
            writeln!(out, "{line}")?;
        }
        if !excerpt_rows.is_empty() {
            let heads: Vec<String> = final_hits
                .iter()
                .map(|h| {
                    let title = idx.get(h.id).map_or("", |e| e.title.as_str());
                    format!("{title}\n{}", h.passages[0].heading_path.join(" › "))
                })
                .collect();
            let texts: Vec<&str> = final_hits
                .iter()
                .map(|h| h.passages[0].text.as_str())
                .collect();
            let meaning = match &semantic {
                Some(s) => texts
                    .iter()
                    .map(|t| s.similarities(q, &obsidian_kb::excerpt::units(t)))
                    .collect::<Result<Option<Vec<_>>, _>>()?,
                None => None,
            };
            for row in &mut excerpt_rows {
                row.add(q, &heads, &texts, meaning.as_deref(), keywords, &idx);
            }
        }
        let text = shown(&final_hits);
        if keywords.iter().any(|w| text.contains(&normalise(w))) {
            shown_keyword += 1;
        } else if !keywords.is_empty() {
            println!("  no keyword shown: {q}");
            // Where the answer is in each gold note found: its passages in the order
            // `search_notes` shows them, so a miss reads as a ranking or a passage choice.
            let every = idx.search(
                q,
                k,
                EVERY_PASSAGE,
                &Default::default(),
                by_meaning_ranked.as_deref(),
            );
            for (rank, hit) in every.iter().enumerate() {
                let Some(rel) = idx.get(hit.id).map(|e| &e.rel).filter(|r| gold.contains(r)) else {
                    continue;
                };
                let heading = |p: &obsidian_kb::index::HitPassage| p.heading_path.join(" › ");
                let holds = hit.passages.iter().position(|p| {
                    let text = normalise(&format!("{}\n{}", heading(p), p.text));
                    keywords.iter().any(|w| text.contains(&normalise(w)))
                });
                let found = match holds {
                    Some(i) => format!(
                        "keyword in passage {} ‹{}›",
                        i + 1,
                        heading(&hit.passages[i])
                    ),
                    None => "keyword in none".to_string(),
                };
                println!(
                    "    gold {rel} at rank {}: shown ‹{}›; {found} of {}",
                    rank + 1,
                    heading(&hit.passages[0]),
                    hit.passages.len()
                );
            }
        }
    }
    if let Some(mut out) = dump {
        std::io::Write::flush(&mut out)?;
    }
    for (name, ranks) in &table {
        if ranks.is_empty() {
            continue;
        }
        let hits = ranks.iter().filter(|r| r.is_some()).count();
        let first = ranks.iter().filter(|r| **r == Some(0)).count();
        let mrr: f64 = ranks
            .iter()
            .flatten()
            .map(|r| 1.0 / (*r as f64 + 1.0))
            .sum::<f64>()
            / ranks.len() as f64;
        let n = ranks.len();
        println!(
            "{name:>8}: hit@1 {first}/{n}, hit@{k} {hits}/{n} ({:.0}%), MRR@{k} {mrr:.3}",
            100.0 * hits as f64 / n as f64
        );
    }
    let with_keywords = questions.iter().filter(|q| !q.2.is_empty()).count();
    if with_keywords > 0 {
        println!(
            "keyword shown ({k} notes, passages by rank {per_rank:?}): {shown_keyword}/{with_keywords} ({:.0}%)",
            100.0 * shown_keyword as f64 / with_keywords as f64
        );
    }
    for row in &excerpt_rows {
        row.print();
    }
    runner_ups.print();
    if !query_times.is_empty() {
        query_times.sort();
        println!(
            "query embedding + ranking: p50 {:.1} ms, max {:.1} ms",
            query_times[query_times.len() / 2].as_secs_f64() * 1000.0,
            query_times[query_times.len() - 1].as_secs_f64() * 1000.0
        );
    }
    Ok(())
}

/// Keyword shown and characters read with the hits' first passages cut to `bounds` (by
/// rank), by words alone and by words and meaning.
struct ExcerptRow {
    bounds: Vec<usize>,
    /// Questions with keywords; then, by words and by words and meaning: keyword shown, and
    /// characters of excerpts per question.
    questions: usize,
    shown: [usize; 2],
    chars: [Vec<usize>; 2],
}

impl ExcerptRow {
    fn new(bounds: Vec<usize>) -> Self {
        ExcerptRow {
            bounds,
            questions: 0,
            shown: [0; 2],
            chars: [Vec::new(), Vec::new()],
        }
    }

    fn add(
        &mut self,
        question: &str,
        heads: &[String],
        texts: &[&str],
        meaning: Option<&[Vec<f32>]>,
        keywords: &[String],
        index: &obsidian_kb::VaultIndex,
    ) {
        if keywords.is_empty() {
            return;
        }
        self.questions += 1;
        for (mode, meaning) in [None, meaning].into_iter().enumerate() {
            let cut = obsidian_kb::excerpt::excerpts(
                question,
                texts,
                &self.bounds,
                meaning,
                index.tokenizer(),
            );
            let text: String = heads
                .iter()
                .zip(&cut)
                .map(|(head, cut)| format!("{head}\n{cut}\n"))
                .collect();
            let text = normalise(&text);
            if keywords.iter().any(|w| text.contains(&normalise(w))) {
                self.shown[mode] += 1;
            }
            self.chars[mode].push(cut.iter().map(|c| c.chars().count()).sum());
        }
    }

    fn print(&self) {
        let median = |v: &[usize]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        println!(
            "excerpts {:?}: keyword shown by words {}/{n}, by words and meaning {}/{n}; median characters {} and {}",
            self.bounds,
            self.shown[0],
            self.shown[1],
            median(&self.chars[0]),
            median(&self.chars[1]),
            n = self.questions,
        );
    }
}

/// How close the hits after the first come to it, as served: what a rule showing a close
/// runner-up as fully as the first would read more, and how often the gold note it would
/// reach is one the first hit is not.
#[derive(Default)]
struct RunnerUps {
    /// Per question: each later hit's score as a share of the first's, and the gold note's
    /// rank (0-based) when found.
    questions: Vec<(Vec<f32>, Option<usize>)>,
}

impl RunnerUps {
    /// Shares of the first hit's score a runner-up is weighed at.
    const SHARES: [f32; 6] = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95];

    fn add(&mut self, hits: &[obsidian_kb::index::Hit], gold: Option<usize>) {
        let Some(first) = hits.first().map(|h| h.score).filter(|s| *s > 0.0) else {
            return;
        };
        let shares = hits[1..].iter().map(|h| h.score / first).collect();
        self.questions.push((shares, gold));
    }

    fn print(&self) {
        if self.questions.is_empty() {
            return;
        }
        let below = self
            .questions
            .iter()
            .filter(|(_, gold)| matches!(gold, Some(r) if *r > 0))
            .count();
        println!(
            "runner-ups (score as a share of the first's), {} questions, gold below the first for {below}:",
            self.questions.len(),
        );
        for share in Self::SHARES {
            let close = |shares: &[f32]| shares.iter().filter(|s| **s >= share).count();
            let hits: usize = self.questions.iter().map(|(s, _)| close(s)).sum();
            let asked = self.questions.iter().filter(|(s, _)| close(s) > 0).count();
            let reached = |within: usize| {
                self.questions
                    .iter()
                    .filter(|(s, gold)| {
                        matches!(gold, Some(r) if *r > 0 && *r <= within && s[r - 1] >= share)
                    })
                    .count()
            };
            println!(
                "  at {share:.2}: {hits} runner-ups in {asked} questions, gold below the first among them {}/{below}; as the second hit {}",
                reached(usize::MAX),
                reached(1)
            );
        }
    }
}
