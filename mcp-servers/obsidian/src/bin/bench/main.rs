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
//! - `obsidian-kb-bench retrieval VAULT --qa FILE.jsonl [--embedding-model GGUF] [--threads N] [--cache-dir DIR] [--k K] [--passages P[,P…]] [--excerpt B[,B…][;B…]] [--dump FILE]`:
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
//!   and by words and meaning, and the median characters of passage text shown. Last, how
//!   close the runner-ups come to the first hit, as served: at each share of its score (0.5
//!   to 0.95), the hits scoring that close, the questions with one, and for how many of those
//!   whose gold note ranks below the first it is among them (or is the second hit): what a
//!   rule reading close runner-ups at length would read more, and reach. `--dump` writes each
//!   question's hits as served (path, title, score, passages) as JSON lines, for a reader of
//!   (question, passage) pairs to be measured on outside this binary.
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

mod retrieval;

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
       obsidian-kb-bench retrieval VAULT_DIR --qa FILE.jsonl [--embedding-model GGUF] [--threads N] [--cache-dir DIR] [--k K] [--passages P[,P…]] [--excerpt B[,B…][;B…]] [--dump FILE]";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => anyhow::bail!("{USAGE}"),
        Some("make-hub-vault") => make_hub_vault(&args[1..]),
        Some("flood") => flood(&args[1..]),
        Some("startup") => startup(&args[1..]),
        Some("hybrid") => hybrid(&args[1..]),
        Some("retrieval") => retrieval::retrieval(&args[1..]),
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
            let h = index.search(q, 5, 1, &Default::default(), None);
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
