//! What kind of answer the model reads each question to ask for: the `--question-kind model`
//! step of `agent::question_kind` run alone on question sets, printed beside each question's
//! kind in its set (`fact`, `date`, `none`: the set's own labels, not the step's) so that a
//! change of the standing instruction can be read before an answer bench.
//! `--system FILE` swaps the standing instruction.
//!
//! cargo run --release --example question-kinds -- --model M.gguf --qa benches/qa/SET.jsonl [--qa …]

// A bench's figures are its output.
#![allow(clippy::print_stdout)]

mod chat_model;

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Parser;
use recall::agent::{KIND_SYSTEM, KIND_WORDS};
use recall::engine::{ChatModel, GenerateRequest};
use recall::prompt::Message;
use serde_json::Value;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    model: chat_model::ModelArgs,
    /// A question set (JSON lines with `question` and `kind`); repeatable.
    #[arg(long, required = true)]
    qa: Vec<PathBuf>,
    /// The standing instruction (default: prompts/agent/kind_system.txt).
    #[arg(long)]
    system: Option<PathBuf>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let system = match &args.system {
        Some(path) => std::fs::read_to_string(path)?,
        None => KIND_SYSTEM.to_string(),
    };
    let (engine, template) = args.model.load()?;
    let mut session = engine.session(&args.model.session())?;
    let started = std::time::Instant::now();
    let mut asked = 0;
    for path in &args.qa {
        // Per label of the set: how many of its questions the model read as each kind.
        let mut counts: BTreeMap<String, BTreeMap<&str, usize>> = BTreeMap::new();
        for line in std::fs::read_to_string(path)?.lines() {
            if line.trim().is_empty() {
                continue;
            }
            let item: Value = serde_json::from_str(line)?;
            let question = item["question"]
                .as_str()
                .ok_or("an item without a question")?;
            let label = item["kind"].as_str().unwrap_or("-").to_string();
            let messages = [
                Message::system(system.trim()),
                Message::user(question.trim()),
            ];
            let prompt = template.answer(&messages)?;
            let mut request = GenerateRequest::greedy(1);
            request.stable_prefix = prompt.stable_len;
            let odds = session.choose(&prompt.text, &request, &KIND_WORDS)?.odds;
            let (at, odd) = odds
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .ok_or("no odds")?;
            println!("{label:<6} {:<7} {odd:.2}  {question}", KIND_WORDS[at]);
            *counts
                .entry(label)
                .or_default()
                .entry(KIND_WORDS[at])
                .or_default() += 1;
            asked += 1;
        }
        println!("== {}", path.display());
        for (label, kinds) in &counts {
            let read: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
            println!("{label:<6} {}", read.join(", "));
        }
    }
    println!(
        "{asked} questions in {:.1} s",
        started.elapsed().as_secs_f32()
    );
    Ok(())
}
