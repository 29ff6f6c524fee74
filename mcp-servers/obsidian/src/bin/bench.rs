//! Measuring commands for `obsidian-kb`, not tests:
//!
//! - `obsidian-kb-bench VAULT`: cold index time, search latency (p50/p99 over a fixed query
//!   list) and peak RSS for one vault, in process.
//! - `obsidian-kb-bench make-hub-vault DIR [NOTES]`: writes a synthetic vault of NOTES notes
//!   (default 10,000) that all link to one `Hub` note, for the flood below.
//! - `obsidian-kb-bench flood VAULT [--server BIN] [--requests N] [--tool get_links|search_notes|mixed] [--note NOTE]`:
//!   starts the real server over stdio, sends N (default 200) concurrent `tools/call` requests
//!   (`get_links` on NOTE, default `Hub`) and meanwhile measures `ping` round trips, one at a
//!   time. `get_links` scans every note's links for backlinks: `--note "Note 5"` costs as much
//!   as `Hub` with a small reply, to see the scheduling alone.
//! - `obsidian-kb-bench startup VAULT [--server BIN] [--runs N]`: time from starting the server
//!   to its answer to `initialize` (the index is built and the watcher set up by then).
//!
//! - `obsidian-kb-bench hybrid VAULT --embedding-model GGUF [--server BIN] [--threads N] [--cache-dir DIR]`:
//!   embeds the vault in process with N threads (default: every core) into an empty cache
//!   (passages/s, model load included); then starts the real server on that cache and times its
//!   `initialize` reply (search by words is ready) and the moment its status resource says
//!   search is hybrid; then one `search_notes` at a time over stdio (p50/p99, query embedding
//!   included) and the server's peak RSS.
//! - `obsidian-kb-bench retrieval VAULT --qa FILE.jsonl [--embedding-model GGUF] [--threads N] [--cache-dir DIR] [--k K] [--passages P[,P…]] [--excerpt B[,B…][;B…]]`:
//!   embeds the vault (timing it), then for each question of a QA file (`question` and `gold`
//!   vault paths, as in `benches/qa/`) reports whether a gold note is first and whether it is
//!   in the top K (default 5), by words alone, by meaning alone, fused, and as served (fused
//!   only where the model covers the query's language), with the mean reciprocal rank of
//!   each (a 1.5B model answers mostly from the first source). With
//!   the file's `keywords`, it also reports for how many questions an answer keyword is in the
//!   text a model would be shown: the top K notes' titles, headings and P passages each
//!   (default 1; `2,1` gives the first note two and the rest one), as `search_notes` returns
//!   them. No model can write a keyword it is not shown (or already knows), so this bounds
//!   what the answer-quality benchmark can score. For each question whose keyword is not
//!   shown, it says where each gold note in the top K ranks, which passage was shown, and
//!   which of its passages (in the order `search_notes` gives them) holds a keyword. With
//!   `--excerpt`, each set of bounds (by rank, `;` between sets) gives the keyword shown when
//!   each note's first passage is cut to its bound ([`obsidian_kb::excerpt`]), by words alone
//!   and by words and meaning, and the median characters of passage text shown.
//! - `obsidian-kb-bench first-hour VAULT --qa FILE.jsonl --embedding-model GGUF [--server BIN] [--k K]`:
//!   the real server over stdio on an empty vector cache, as a person's first session finds
//!   it: at 0%, 25%, 50%, 75% and 100% of the embedding, every question of the QA file is
//!   searched once (`search_notes`, limit K, default 5), and a row gives the passages embedded,
//!   the rankings the results said they used, hit@1 and hit@K, and search p50/p95/max while
//!   embedding goes on; then the time the whole embedding took.
//!
//! `--server` defaults to the `obsidian-kb` next to this binary, so another build (the code
//! before a change) can be measured with the same client.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

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

/// The peak resident set of a process (`self`, or a pid) so far, from `/proc` (Linux).
fn peak_rss_kb(process: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{process}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

const USAGE: &str = "usage: obsidian-kb-bench VAULT_DIR
       obsidian-kb-bench make-hub-vault DIR [NOTES]
       obsidian-kb-bench flood VAULT_DIR [--server BIN] [--requests N] [--tool get_links|search_notes|mixed] [--note NOTE]
       obsidian-kb-bench startup VAULT_DIR [--server BIN] [--runs N]
       obsidian-kb-bench hybrid VAULT_DIR --embedding-model GGUF [--server BIN] [--threads N] [--cache-dir DIR]
       obsidian-kb-bench first-hour VAULT_DIR --qa FILE.jsonl --embedding-model GGUF [--server BIN] [--k K]
       obsidian-kb-bench retrieval VAULT_DIR --qa FILE.jsonl [--embedding-model GGUF] [--threads N] [--cache-dir DIR] [--k K] [--passages P[,P…]] [--excerpt B[,B…][;B…]]";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => anyhow::bail!("{USAGE}"),
        Some("make-hub-vault") => make_hub_vault(&args[1..]),
        Some("flood") => flood(&args[1..]),
        Some("startup") => startup(&args[1..]),
        Some("hybrid") => hybrid(&args[1..]),
        Some("retrieval") => retrieval(&args[1..]),
        Some("first-hour") => first_hour(&args[1..]),
        Some(dir) => index_and_search(Path::new(dir)),
    }
}

fn index_and_search(dir: &Path) -> anyhow::Result<()> {
    let vault = obsidian_kb::Vault::open(dir)?;
    let t0 = Instant::now();
    let (index, stats) = obsidian_kb::VaultIndex::build(vault);
    let cold = t0.elapsed();
    let mut times = Vec::new();
    let mut hits = 0;
    for round in 0..20 {
        for q in QUERIES {
            let t = Instant::now();
            let h = index.search(q, 5, 1, None, None, None);
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
        "search ({} queries x 19 rounds, limit 5, with passages): p50 {:.3} ms, p99 {:.3} ms, {} hits/round",
        QUERIES.len(),
        pct(0.5).as_secs_f64() * 1000.0,
        pct(0.99).as_secs_f64() * 1000.0,
        hits / 20
    );
    match peak_rss_kb("self") {
        Some(kb) => println!("peak RSS: {:.1} MB", kb as f64 / 1024.0),
        None => println!("peak RSS: unavailable"),
    }
    Ok(())
}

/// The value after `--name` in `args`, if given.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// A deterministic pseudo-random stream (xorshift), so generated vaults are the same each run.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "river", "garden", "project", "meeting", "review", "lantern", "harvest", "design", "notes",
    "journal", "recipe", "travel", "budget", "theory", "history", "music", "reading", "habit",
    "goal", "plan", "idea", "question", "answer", "summary", "draft", "outline", "chapter",
    "method", "result", "source", "quote", "people", "place", "season", "weather", "garden",
];

/// `DIR` with `NOTES` notes in 40 folders, each a few paragraphs long and linking to `Hub` and
/// five other notes; `Hub` links to the first 1,000.
fn make_hub_vault(args: &[String]) -> anyhow::Result<()> {
    let Some(dir) = args.first() else {
        anyhow::bail!("{USAGE}");
    };
    let notes: usize = args.get(1).map_or(Ok(10_000), |n| n.parse())?;
    let dir = Path::new(dir);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut bytes = 0;
    for n in 0..notes {
        let folder = dir.join(format!("F{:02}", n % 40));
        std::fs::create_dir_all(&folder)?;
        let mut text = format!("# Note {n}\n\nPart of [[Hub]].\n\n");
        for _ in 0..3 {
            for _ in 0..60 {
                text.push_str(WORDS[rng.next(WORDS.len())]);
                text.push(' ');
            }
            text.push_str(&format!("See [[Note {}]].\n\n", rng.next(notes)));
        }
        text.push_str(&format!(
            "Related: [[Note {}]], [[Note {}]].\n",
            rng.next(notes),
            rng.next(notes)
        ));
        bytes += text.len();
        std::fs::write(folder.join(format!("Note {n}.md")), text)?;
    }
    let mut hub = String::from("# Hub\n\n");
    for n in 0..notes.min(1000) {
        hub.push_str(&format!("- [[Note {n}]]\n"));
    }
    std::fs::write(dir.join("Hub.md"), hub)?;
    println!(
        "{} notes, {:.1} MB in {}",
        notes + 1,
        bytes as f64 / 1e6,
        dir.display()
    );
    Ok(())
}

/// The `obsidian-kb` to measure: `--server`, else the one built next to this binary.
fn server_bin(args: &[String]) -> anyhow::Result<PathBuf> {
    if let Some(b) = flag(args, "--server") {
        return Ok(PathBuf::from(b));
    }
    let me = std::env::current_exe()?;
    Ok(me.with_file_name("obsidian-kb"))
}

/// A server started over stdio, its replies read by a thread as (message, arrival time).
struct Server {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<(Value, Instant)>,
}

impl Server {
    fn start(bin: &Path, vault: &str) -> anyhow::Result<Self> {
        Self::start_with(bin, vault, &[])
    }

    /// Starts the server embedding with `model` into the vector cache at `cache`.
    fn start_embedding(bin: &Path, vault: &str, model: &str, cache: &Path) -> anyhow::Result<Self> {
        let cache = cache
            .to_str()
            .ok_or_else(|| anyhow::anyhow!("a non-UTF-8 cache path"))?;
        Self::start_with(
            bin,
            vault,
            &["--embedding-model", model, "--cache-dir", cache],
        )
    }

    /// Starts the server with `extra` arguments after `--vault VAULT`.
    fn start_with(bin: &Path, vault: &str, extra: &[&str]) -> anyhow::Result<Self> {
        let mut child = Command::new(bin)
            .arg("--vault")
            .arg(vault)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, replies) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let at = Instant::now();
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send((v, at)).is_err() {
                    return;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            replies,
        })
    }

    fn send(&mut self, msg: &Value) -> anyhow::Result<()> {
        writeln!(self.stdin, "{msg}")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Waits for the reply to `id`; calls `other` for every other reply's id meanwhile.
    fn wait_for(&self, id: &Value, other: impl FnMut(&Value)) -> anyhow::Result<Instant> {
        self.reply_to(id, other).map(|(_, at)| at)
    }

    /// Waits for the reply to `id` and returns it whole.
    fn reply_to(
        &self,
        id: &Value,
        mut other: impl FnMut(&Value),
    ) -> anyhow::Result<(Value, Instant)> {
        loop {
            match self.replies.recv_timeout(Duration::from_secs(600)) {
                Ok((got, at)) if &got["id"] == id => return Ok((got, at)),
                Ok((got, _)) => other(&got["id"]),
                Err(RecvTimeoutError::Timeout) => anyhow::bail!("no reply to {id} in 10 minutes"),
                Err(RecvTimeoutError::Disconnected) => anyhow::bail!("the server exited"),
            }
        }
    }

    /// `initialize` then `notifications/initialized`; returns when the answer arrived.
    fn initialize(&mut self) -> anyhow::Result<Instant> {
        self.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "obsidian-kb-bench", "version": "0"}}}),
        )?;
        let at = self.wait_for(&json!("init"), |_| {})?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(at)
    }

    /// Sends a request and waits for its reply: (result, round trip).
    fn request(
        &mut self,
        id: &str,
        method: &str,
        params: Value,
    ) -> anyhow::Result<(Value, Duration)> {
        let id = json!(id);
        let sent = Instant::now();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let (reply, at) = self.reply_to(&id, |_| {})?;
        if let Some(error) = reply.get("error") {
            anyhow::bail!("{method} failed: {error}");
        }
        Ok((reply["result"].clone(), at - sent))
    }

    /// The server's `obsidian-kb://status` resource.
    fn status(&mut self) -> anyhow::Result<obsidian_kb::api::Status> {
        let (result, _) = self.request(
            "status",
            "resources/read",
            json!({"uri": "obsidian-kb://status"}),
        )?;
        let text = result["contents"][0]["text"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("the status resource has no text: {result}"))?;
        Ok(serde_json::from_str(text)?)
    }

    /// The server's peak resident set so far.
    fn peak_rss_kb(&self) -> Option<u64> {
        peak_rss_kb(&self.child.id().to_string())
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p-th percentile (nearest rank) of sorted durations.
fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn flood(args: &[String]) -> anyhow::Result<()> {
    let Some(vault) = args.first() else {
        anyhow::bail!("{USAGE}");
    };
    let bin = server_bin(args)?;
    let requests: usize = flag(args, "--requests").map_or(Ok(200), str::parse)?;
    let tool = flag(args, "--tool").unwrap_or("get_links");
    let note = flag(args, "--note").unwrap_or("Hub");
    let queries = [
        "garden river",
        "project meeting review",
        "what is the plan for the harvest",
        "notes",
    ];
    let mut server = Server::start(&bin, vault)?;
    server.initialize()?;
    let mut batch = String::new();
    for i in 0..requests {
        let (name, arguments) = match (tool, i % 2) {
            ("search_notes", _) | ("mixed", 1) => (
                "search_notes",
                json!({"query": queries[i % queries.len()], "limit": 10}),
            ),
            _ => ("get_links", json!({"uri": note})),
        };
        let msg = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        batch.push_str(&msg.to_string());
        batch.push('\n');
    }
    let t0 = Instant::now();
    server.stdin.write_all(batch.as_bytes())?;
    server.stdin.flush()?;
    let mut done = 0usize;
    let mut last_reply = t0;
    let mut pings = Vec::new();
    let mut n = 0;
    while done < requests {
        let id = json!(format!("ping-{n}"));
        n += 1;
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))?;
        let sent = Instant::now();
        let at = server.wait_for(&id, |_| {
            done += 1;
            last_reply = Instant::now();
        })?;
        pings.push(at - sent);
        // Tool replies that arrived while the ping was answered.
        while let Ok((_, at)) = server.replies.try_recv() {
            done += 1;
            last_reply = at;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let first = pings[0];
    let mut sorted = pings.clone();
    sorted.sort();
    println!(
        "server: {}\nflood: {requests} x {tool} answered in {:.0} ms; {} pings meanwhile: first {:.1} ms, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        bin.display(),
        ms(last_reply - t0),
        pings.len(),
        ms(first),
        ms(pct(&sorted, 0.5)),
        ms(pct(&sorted, 0.99)),
        ms(*sorted.last().expect("one ping at least"))
    );
    server.stop();
    Ok(())
}

fn startup(args: &[String]) -> anyhow::Result<()> {
    let Some(vault) = args.first() else {
        anyhow::bail!("{USAGE}");
    };
    let bin = server_bin(args)?;
    let runs: usize = flag(args, "--runs").map_or(Ok(3), str::parse)?;
    let mut times = Vec::new();
    for _ in 0..runs {
        let t0 = Instant::now();
        let mut server = Server::start(&bin, vault)?;
        let at = server.initialize()?;
        times.push(at - t0);
        server.stop();
    }
    let mut sorted = times.clone();
    sorted.sort();
    println!(
        "server: {}\nstartup to initialize reply over {runs} runs: median {:.0} ms ({})",
        bin.display(),
        ms(pct(&sorted, 0.5)),
        times
            .iter()
            .map(|t| format!("{:.0}", ms(*t)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

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

fn retrieval(args: &[String]) -> anyhow::Result<()> {
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
    let mut shown_keyword = 0;
    let mut query_times = Vec::new();
    for (q, gold, keywords) in &questions {
        let lexical = idx.search(q, k, passages, None, None, None);
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
                let hits = idx.search(q, k, passages, None, None, Some(&ranked));
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
                row.add(q, &heads, &texts, meaning.as_deref(), keywords);
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
                None,
                None,
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
    ) {
        if keywords.is_empty() {
            return;
        }
        self.questions += 1;
        for (mode, meaning) in [None, meaning].into_iter().enumerate() {
            let cut = obsidian_kb::excerpt::excerpts(question, texts, &self.bounds, meaning);
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

/// `--threads`, else every core.
fn threads(args: &[String]) -> anyhow::Result<usize> {
    Ok(match flag(args, "--threads") {
        Some(t) => t.parse()?,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

/// Embeds every passage of `index` with `model` into the cache at `cache`, printing how long
/// it took (model load included), and returns the ready semantic search.
fn embed_vault(
    index: obsidian_kb::SharedIndex,
    model: &Path,
    cache: &Path,
    threads: usize,
) -> anyhow::Result<std::sync::Arc<obsidian_kb::Semantic>> {
    let t0 = Instant::now();
    let semantic = obsidian_kb::Semantic::start(
        index,
        obsidian_kb::SemanticOptions {
            model: model.to_path_buf(),
            cache_dir: Some(cache.to_path_buf()),
            threads,
        },
    );
    loop {
        let p = semantic.progress();
        if let Some(why) = p.failed {
            anyhow::bail!("embedding failed: {why}");
        }
        // The first pass ends once its vectors are saved too.
        if p.total > 0 && p.embedded == p.total && semantic.wait_for_first_pass(Duration::ZERO) {
            let secs = t0.elapsed().as_secs_f64();
            println!(
                "{} passages ready in {secs:.1} s on {threads} threads ({:.1} passages/s, {:.0} tokens/s; model load and cache write included)",
                p.total,
                p.total as f64 / secs,
                p.tokens as f64 / secs
            );
            return Ok(semantic);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn hybrid(args: &[String]) -> anyhow::Result<()> {
    use std::sync::{Arc, RwLock};
    let vault = args.first().ok_or_else(|| anyhow::anyhow!("{USAGE}"))?;
    let model = flag(args, "--embedding-model").ok_or_else(|| anyhow::anyhow!("{USAGE}"))?;
    let bin = server_bin(args)?;
    let temp = tempfile::tempdir()?;
    let cache = flag(args, "--cache-dir").map_or(temp.path(), Path::new);

    // Cold: every passage embedded, in process, into the (empty) cache the server then uses.
    let (index, stats) =
        obsidian_kb::VaultIndex::build(obsidian_kb::Vault::open(Path::new(vault))?);
    println!(
        "vault: {} notes, {} MB",
        stats.notes,
        stats.bytes / 1_000_000
    );
    let semantic = embed_vault(
        Arc::new(RwLock::new(index)),
        Path::new(model),
        cache,
        threads(args)?,
    )?;
    drop(semantic);

    // Warm: the real server on the full cache.
    let t0 = Instant::now();
    let mut server = Server::start_embedding(&bin, vault, model, cache)?;
    let serving = server.initialize()? - t0;
    let hybrid_at = loop {
        let status = server.status()?;
        if let Some(e) = status
            .embedding
            .as_ref()
            .filter(|e| e.state == obsidian_kb::api::EmbeddingState::Failed)
        {
            anyhow::bail!("the server's embedding failed: {:?}", e.error);
        }
        if status.ranking == obsidian_kb::api::Ranking::Hybrid
            && status
                .embedding
                .as_ref()
                .is_some_and(|e| e.passages == e.total)
        {
            break t0.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    println!(
        "server: {}\nwarm start: search by words after {:.0} ms (initialize reply), hybrid with every passage after {:.0} ms",
        bin.display(),
        ms(serving),
        ms(hybrid_at)
    );

    let mut times = Vec::new();
    for round in 0..5 {
        for (i, q) in QUERIES.iter().enumerate() {
            let (result, took) = server.request(
                &format!("q{round}-{i}"),
                "tools/call",
                json!({"name": "search_notes", "arguments": {"query": q, "limit": 5}}),
            )?;
            if result["isError"] == json!(true) {
                anyhow::bail!("search_notes failed for {q:?}: {result}");
            }
            if round > 0 {
                times.push(took);
            }
        }
    }
    times.sort();
    println!(
        "hybrid search_notes over stdio ({} queries x 4 rounds, limit 5, query embedded each time): p50 {:.1} ms, p99 {:.1} ms",
        QUERIES.len(),
        ms(pct(&times, 0.5)),
        ms(pct(&times, 0.99))
    );
    match server.peak_rss_kb() {
        Some(kb) => println!("server peak RSS: {:.1} MB", kb as f64 / 1024.0),
        None => println!("server peak RSS: unavailable"),
    }
    server.stop();
    Ok(())
}

/// Questions and their gold notes (as `note://` URIs) from a QA file.
fn qa_gold_uris(path: &str) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    std::fs::read_to_string(path)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l)?;
            let gold = v["gold"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(|g| format!("note://{}", g.trim_end_matches(".md")))
                        .collect()
                })
                .unwrap_or_default();
            Ok((v["question"].as_str().unwrap_or_default().to_string(), gold))
        })
        .collect()
}

fn first_hour(args: &[String]) -> anyhow::Result<()> {
    use obsidian_kb::api::EmbeddingState;
    let vault = args.first().ok_or_else(|| anyhow::anyhow!("{USAGE}"))?;
    let qa = flag(args, "--qa").ok_or_else(|| anyhow::anyhow!("{USAGE}"))?;
    let model = flag(args, "--embedding-model").ok_or_else(|| anyhow::anyhow!("{USAGE}"))?;
    let k: usize = flag(args, "--k").map_or(Ok(5), str::parse)?;
    let questions = qa_gold_uris(qa)?;
    let bin = server_bin(args)?;
    let cache = tempfile::tempdir()?;
    let t0 = Instant::now();
    let mut server = Server::start_embedding(&bin, vault, model, cache.path())?;
    server.initialize()?;
    println!(
        "server: {}; {} questions; hit@{k} = a gold note in the top {k}; an empty cache",
        bin.display(),
        questions.len()
    );
    println!(
        "stage | embedded at start..end | rankings | hit@1 | hit@{k} | search p50 / p95 / max ms"
    );
    let mut next_stage = 0;
    let mut round = 0;
    loop {
        let status = server.status()?;
        let Some(embedding) = status.embedding else {
            anyhow::bail!("the server has no embedding model");
        };
        if embedding.state == EmbeddingState::Failed {
            anyhow::bail!("embedding failed: {:?}", embedding.error);
        }
        let ready = embedding.state == EmbeddingState::Ready;
        let embedded_after = t0.elapsed();
        let percent = (embedding.passages * 100)
            .checked_div(embedding.total)
            .unwrap_or(0);
        if ready || (embedding.total > 0 && percent >= next_stage && next_stage < 100) {
            let stage = if ready { 100 } else { next_stage };
            let (mut hit1, mut hitk, mut times, mut rankings) =
                (0, 0, Vec::new(), std::collections::BTreeMap::new());
            for (i, (question, gold)) in questions.iter().enumerate() {
                let (result, took) = server.request(
                    &format!("r{round}-{i}"),
                    "tools/call",
                    json!({"name": "search_notes", "arguments": {"query": question, "limit": k}}),
                )?;
                times.push(took);
                let out = &result["structuredContent"];
                *rankings
                    .entry(out["ranking"].as_str().unwrap_or("?").to_string())
                    .or_insert(0) += 1;
                let uris: Vec<&str> = out["hits"]
                    .as_array()
                    .map(|h| h.iter().filter_map(|h| h["uri"].as_str()).collect())
                    .unwrap_or_default();
                match uris.iter().position(|u| gold.iter().any(|g| g == u)) {
                    Some(0) => (hit1, hitk) = (hit1 + 1, hitk + 1),
                    Some(_) => hitk += 1,
                    None => {}
                }
            }
            round += 1;
            let after = server.status()?.embedding.map_or(0, |e| e.passages);
            times.sort();
            let n = questions.len().max(1);
            println!(
                "{stage:>4}% | {}..{} of {} | {} | {hit1}/{n} | {hitk}/{n} | {:.1} / {:.1} / {:.1}",
                embedding.passages,
                after,
                embedding.total,
                rankings
                    .iter()
                    .map(|(r, c)| format!("{r} {c}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                ms(pct(&times, 0.5)),
                ms(pct(&times, 0.95)),
                ms(*times.last().unwrap_or(&Duration::ZERO))
            );
            if ready {
                println!(
                    "every passage embedded {:.1} s after the server started",
                    embedded_after.as_secs_f64()
                );
                break;
            }
            next_stage = stage + 25;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();
    Ok(())
}
