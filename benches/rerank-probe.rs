//! Whether the chat model can read (question, passage) pairs well enough to reorder search
//! hits: for each question of a dump from `obsidian-kb-bench retrieval --dump`, each of its
//! first `--k` hits' first passage is scored two ways, and every score is written out for the
//! ordering rules to be weighed apart from the model's time:
//! - `upr`: the mean log-probability of the question's tokens after the passage and an
//!   instruction to write a question it answers (query likelihood);
//! - `yes`: the odds of "yes" to "Does the passage answer the question?" (`--yes`).
//!
//! Prints hit@1 as served and as each score alone orders the first `--k`, and the seconds.
//!
//! cargo run --release --example rerank-probe -- --model M.gguf --dump D.jsonl [--k 3] [--threads 2]

// A bench's figures are its output.
#![allow(clippy::print_stdout)]

mod chat_model;

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use recall::engine::{ChatModel, GenerateRequest};
use recall::prompt::Message;
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    model: chat_model::ModelArgs,
    /// Hits of each question, as `obsidian-kb-bench retrieval --dump` writes them.
    #[arg(long)]
    dump: PathBuf,
    /// How many of each question's first hits are scored.
    #[arg(long, default_value_t = 3)]
    k: usize,
    /// Characters of each hit's first passage read.
    #[arg(long, default_value_t = 400)]
    chars: usize,
    /// Also ask yes or no.
    #[arg(long)]
    yes: bool,
    /// Where to write each question's scores (JSON lines).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// A hit as the model reads it: its title, the headings above its passage, the passage cut to
/// `chars` at a word.
fn passage_text(hit: &Value, chars: usize) -> String {
    let title = hit["title"].as_str().unwrap_or_default();
    let passage = &hit["passages"][0];
    let heading: Vec<&str> = passage["heading"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let text = passage["text"].as_str().unwrap_or_default();
    let mut cut: String = text.chars().take(chars).collect();
    if cut.len() < text.len()
        && let Some(space) = cut.rfind(char::is_whitespace)
    {
        cut.truncate(space);
    }
    let mut head = title.to_string();
    for h in heading {
        if h != title {
            head.push_str(" › ");
            head.push_str(h);
        }
    }
    format!("{head}\n{cut}")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let questions: Vec<Value> = std::fs::read_to_string(&args.dump)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let (engine, template) = args.model.load()?;
    let mut session = engine.session(&args.model.session())?;
    let mut out = args.out.as_ref().map(std::fs::File::create).transpose()?;
    let (mut served, mut by_upr, mut by_yes, mut with_gold) = (0, 0, 0, 0);
    let mut seconds = Vec::new();
    let system = "You write the question a passage of a person's notes answers.";
    for q in &questions {
        let question = q["question"].as_str().unwrap_or_default();
        let gold: Vec<&str> = q["gold"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let hits: Vec<&Value> = q["hits"]
            .as_array()
            .map(|a| a.iter().take(args.k).collect())
            .unwrap_or_default();
        if hits.is_empty() {
            continue;
        }
        let started = Instant::now();
        let mut scored = Vec::new();
        for hit in &hits {
            let text = passage_text(hit, args.chars);
            let prompt = template.answer(&[
                Message::system(system),
                Message::user(format!(
                    "{text}\n\nWrite one question, as a person would ask it, that this passage answers."
                )),
            ])?;
            let mut request = GenerateRequest::greedy(1);
            request.stable_prefix = prompt.stable_len;
            let logprobs = session.continuation_logprobs(&prompt.text, question, &request)?;
            let upr =
                logprobs.iter().map(|t| t.log_prob).sum::<f32>() / logprobs.len().max(1) as f32;
            let yes = if args.yes {
                let prompt = template.answer(&[Message::user(format!(
                    "Question: {question}\n\nPassage:\n{text}\n\nDoes the passage answer the question? Reply yes or no."
                ))])?;
                let mut request = GenerateRequest::greedy(1);
                request.stable_prefix = prompt.stable_len;
                Some(session.choose(&prompt.text, &request, &["yes", "no"])?.odds[0])
            } else {
                None
            };
            let rel = hit["rel"].as_str().unwrap_or_default();
            scored.push(json!({
                "rel": rel,
                "gold": gold.contains(&rel),
                "score": hit["score"],
                "upr": upr,
                "yes": yes,
            }));
        }
        seconds.push(started.elapsed().as_secs_f32());
        let best = |key: &str| {
            scored
                .iter()
                .max_by(|a, b| {
                    let a = a[key].as_f64().unwrap_or(f64::MIN);
                    let b = b[key].as_f64().unwrap_or(f64::MIN);
                    a.total_cmp(&b)
                })
                .is_some_and(|s| s["gold"] == json!(true))
        };
        if scored.iter().any(|s| s["gold"] == json!(true)) {
            with_gold += 1;
        }
        served += usize::from(scored[0]["gold"] == json!(true));
        by_upr += usize::from(best("upr"));
        by_yes += usize::from(args.yes && best("yes"));
        if let Some(out) = out.as_mut() {
            writeln!(
                out,
                "{}",
                json!({"question": question, "gold": gold, "hits": scored})
            )?;
        }
    }
    seconds.sort_by(f32::total_cmp);
    let n = questions.len();
    println!(
        "{n} questions, a gold note in the first {} for {with_gold}; hit@1 served {served}, by upr {by_upr}, by yes {by_yes}",
        args.k
    );
    if !seconds.is_empty() {
        println!(
            "seconds a question: median {:.2}, max {:.2}",
            seconds[seconds.len() / 2],
            seconds[seconds.len() - 1]
        );
    }
    Ok(())
}
