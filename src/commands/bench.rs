//! `recall bench`: the model's prompt-processing and generation speed, like `llama-bench`.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::{GlobalArgs, ModelArgs};
use crate::engine::llama::BenchOptions;
use crate::engine::{Model, Throughput};
use crate::session::load_model;

/// `recall bench`: pp/tg tokens per second, mean ± sd, like `llama-bench`; with `--engine`,
/// as the server delivers them (its own timings, read over HTTP).
pub fn bench(
    global: &GlobalArgs,
    args: &ModelArgs,
    n_prompt: usize,
    n_gen: usize,
    repetitions: usize,
) -> Result<()> {
    let engine = load_model(args, None)?;
    let report = match &engine {
        Model::Local(local) => local.bench(&BenchOptions {
            n_prompt,
            n_gen,
            repetitions: repetitions.max(1),
            threads: args.threads,
        })?,
        Model::Remote(server) => server.bench(n_prompt, n_gen, repetitions)?,
    };
    let mut out = std::io::stdout().lock();
    if global.json {
        let json = BenchJson {
            model: &engine.info().name,
            threads: report.threads,
            pp: TestJson::new(&report.pp),
            tg: TestJson::new(&report.tg),
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
        return Ok(());
    }
    let info = engine.info();
    writeln!(
        out,
        "| model | size | params | threads | test | t/s |\n| --- | ---: | ---: | ---: | ---: | ---: |"
    )?;
    for (name, t) in [("pp", &report.pp), ("tg", &report.tg)] {
        if t.tokens == 0 {
            continue;
        }
        writeln!(
            out,
            "| {} | {:.2} MiB | {:.2} M | {} | {}{} | {:.2} ± {:.2} |",
            info.name,
            info.size_bytes as f64 / (1024.0 * 1024.0),
            info.n_params as f64 / 1e6,
            report.threads,
            name,
            t.tokens,
            t.mean,
            t.sd
        )?;
    }
    Ok(())
}

/// `recall bench --json`.
#[derive(Serialize)]
struct BenchJson<'a> {
    model: &'a str,
    threads: i32,
    pp: TestJson,
    tg: TestJson,
}

/// One test (pp or tg) of [`BenchJson`].
#[derive(Serialize)]
struct TestJson {
    tokens: usize,
    tok_s: f64,
    sd: f64,
}

impl TestJson {
    fn new(test: &Throughput) -> Self {
        TestJson {
            tokens: test.tokens,
            tok_s: test.mean,
            sd: test.sd,
        }
    }
}
