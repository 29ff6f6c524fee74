//! How well the model reads a line against an answer's sentence: the yes/no check of
//! `agent::figure`, run alone on recorded cases, with the odds of "yes" the model gives each.
//!
//! A case is one JSON line: `input` (what the check read after its standing instruction, as
//! `recall ask --json` records it in a `check` step), `expect` (`yes` when the answer was
//! right, `no` when the notes do not answer the question), and `tag` (the set it came from).
//! `--system FILE` swaps the standing instruction, to try another before changing the agent's.
//! Prints, per tag, how many verdicts were right when "yes" needs odds of 0.5 (greedy
//! decoding's verdict) and higher, and writes each case's odds with `--out`.
//!
//! cargo run --release --example check-verdicts -- --model M.gguf --cases cases.jsonl [--threads 2]

// A bench's figures are its output.
#![allow(clippy::print_stdout)]

mod chat_model;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use recall::engine::{ChatModel, GenerateRequest};
use recall::prompt::Message;
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    model: chat_model::ModelArgs,
    /// The cases, one JSON object a line.
    #[arg(long)]
    cases: PathBuf,
    /// The standing instruction (default: prompts/agent/check_system.txt).
    #[arg(long)]
    system: Option<PathBuf>,
    /// Where to write each case with its odds of "yes" (JSON lines).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The thresholds the odds of "yes" are read at.
const THRESHOLDS: [f32; 5] = [0.5, 0.6, 0.7, 0.8, 0.9];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let system = match &args.system {
        Some(path) => std::fs::read_to_string(path)?,
        None => include_str!("../prompts/agent/check_system.txt").to_string(),
    };
    let cases: Vec<Value> = std::fs::read_to_string(&args.cases)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let (engine, template) = args.model.load()?;
    let mut session = engine.session(&args.model.session())?;
    let mut out = args.out.as_ref().map(std::fs::File::create).transpose()?;
    // Per tag and expected verdict: the odds of "yes" of each case.
    let mut odds: BTreeMap<(String, String), Vec<f32>> = BTreeMap::new();
    let started = std::time::Instant::now();
    for case in &cases {
        let input = case["input"].as_str().ok_or("a case without input")?;
        let expect = case["expect"].as_str().ok_or("a case without expect")?;
        let tag = case["tag"].as_str().unwrap_or("-").to_string();
        let prompt = template.answer(&[Message::system(system.trim()), Message::user(input)])?;
        let mut request = GenerateRequest::greedy(1);
        request.stable_prefix = prompt.stable_len;
        let yes = session.choose(&prompt.text, &request, &["yes", "no"])?.odds[0];
        odds.entry((tag, expect.to_string())).or_default().push(yes);
        if let Some(out) = out.as_mut() {
            let mut case = case.clone();
            case["yes"] = json!(yes);
            writeln!(out, "{case}")?;
        }
    }
    println!(
        "{} cases in {:.1} s; right verdicts when \"yes\" needs odds of {THRESHOLDS:?}",
        cases.len(),
        started.elapsed().as_secs_f32()
    );
    for ((tag, expect), yes) in &odds {
        let right: Vec<String> = THRESHOLDS
            .iter()
            .map(|t| {
                let right = yes
                    .iter()
                    .filter(|&&y| (y >= *t) == (expect == "yes"))
                    .count();
                format!("{right:>3}")
            })
            .collect();
        println!(
            "{tag:<24} expect {expect:<3} {:>3} cases: {}",
            yes.len(),
            right.join(" ")
        );
    }
    Ok(())
}
