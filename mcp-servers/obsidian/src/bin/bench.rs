//! `obsidian-kb-bench VAULT`: cold index time, search latency (p50/p99 over a fixed query
//! list) and peak RSS for one vault. A measuring tool, not a test.
#![allow(clippy::print_stdout)]

use std::time::Instant;

const QUERIES: &[&str] = &[
    "project",
    "meeting notes",
    "how do I configure the template",
    "daily",
    "book review",
    "what did I read about productivity",
    "obsidian plugin",
    "recipe",
    "travel plans",
    "ideas",
    "rust",
    "python",
    "habit tracker",
    "weekly review",
    "markdown syntax",
    "links and backlinks",
    "where is the reading list",
    "movies",
    "music",
    "health",
    "journal",
    "workflow",
    "knowledge management",
    "zettelkasten",
    "writing",
    "goals for the year",
    "people",
    "tasks due",
    "clippings",
    "attachments",
    "東京",
    "emoji 🚀",
    "callout",
    "embed image",
    "frontmatter properties",
    "tags",
    "search",
    "canvas",
    "quotes",
    "history",
];

fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> anyhow::Result<()> {
    let Some(dir) = std::env::args_os().nth(1) else {
        anyhow::bail!("usage: obsidian-kb-bench VAULT_DIR");
    };
    let vault = obsidian_kb::Vault::open(std::path::Path::new(&dir))?;
    let t0 = Instant::now();
    let (index, stats) = obsidian_kb::VaultIndex::build(vault);
    let cold = t0.elapsed();
    let mut times = Vec::new();
    let mut hits = 0;
    for round in 0..20 {
        for q in QUERIES {
            let t = Instant::now();
            let h = index.search(q, 5, None, None);
            let el = t.elapsed();
            if round > 0 {
                times.push(el);
            }
            hits += h.len();
        }
    }
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "notes {} ({} MB, {} attachments, {} skipped, {} terms)",
        stats.notes,
        stats.bytes / 1_000_000,
        stats.attachments,
        stats.skipped,
        index.term_count()
    );
    println!(
        "cold index: {:.0} ms (walk {:.0} ms, read+parse {:.0} ms on {} threads / {} cores, merge {:.0} ms)",
        cold.as_secs_f64() * 1000.0,
        stats.walk_elapsed.as_secs_f64() * 1000.0,
        (stats.parse_elapsed - stats.walk_elapsed).as_secs_f64() * 1000.0,
        stats.threads,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        (stats.elapsed - stats.parse_elapsed).as_secs_f64() * 1000.0
    );
    println!(
        "search ({} queries x 19 rounds, limit 5, with snippets): p50 {:.3} ms, p99 {:.3} ms, {} hits/round",
        QUERIES.len(),
        pct(0.5).as_secs_f64() * 1000.0,
        pct(0.99).as_secs_f64() * 1000.0,
        hits / 20
    );
    match peak_rss_kb() {
        Some(kb) => println!("peak RSS: {:.1} MB", kb as f64 / 1024.0),
        None => println!("peak RSS: unavailable"),
    }
    Ok(())
}
