//! `recall ask`: one question, the answer streamed, then the sources it used (or, with
//! `--json`, one report); the one command that keeps the prompt cache across runs.

use std::io::Write;

use anyhow::Result;

use crate::cli::{AgentArgs, GlobalArgs, ModelArgs, PromptCacheArgs, ServerArgs};
use crate::engine::prompt_cache::PromptCache;
use crate::report::{TurnReport, write_transcript};
use crate::session::{Workbench, approver, print_citations, stream_to_stdout};

/// `recall ask`: one question, the answer streamed, then the notes it used.
///
/// Ctrl-C at any point (prompt, decision, tool calls, the answer streaming) stops the run: the
/// error is [`Cancelled`](crate::engine::Cancelled) (`recall: stopped`, exit 130), a streamed
/// part of the answer is ended with a newline, and `--json` prints nothing, since there is no
/// finished turn to report.
pub fn ask(
    global: &GlobalArgs,
    model_args: &ModelArgs,
    server_args: &ServerArgs,
    agent_args: &AgentArgs,
    cache_args: &PromptCacheArgs,
    question: &str,
) -> Result<()> {
    let bench = Workbench::open(global, model_args, server_args)?;
    let mut session = bench.session(model_args)?;
    let mut answer_session = bench.session(model_args)?;
    if let Some(cache) = prompt_cache(cache_args) {
        // Decision and answer prompts part at the system message: each keeps its own prefix.
        session.use_prompt_cache(cache.clone());
        answer_session.use_prompt_cache(cache);
    }
    let mut approver = approver(server_args.yes, &bench.interrupt);
    let mut agent = bench.agent(
        &mut session,
        &mut answer_session,
        approver.as_mut(),
        bench.agent_options(model_args, agent_args),
    );
    let mut conversation = Vec::new();
    let mut streamed = false;
    let mut sink = stream_to_stdout(!global.json);
    let asked = agent.ask(&mut conversation, question, &mut |text| {
        streamed = true;
        sink(text)
    });
    drop((session, answer_session));
    let turn = match asked {
        Ok(turn) => turn,
        Err(err) => {
            if streamed && !global.json {
                // The cut answer's line ends before the error is printed.
                let _ = writeln!(std::io::stdout());
            }
            bench.close();
            return Err(err.into());
        }
    };

    let report = TurnReport::new(&turn, bench.engine.info());
    if let Some(path) = &global.transcript {
        write_transcript(path, &conversation, &report)?;
    }
    let json = serde_json::to_string(&report)?;
    bench.close();
    let mut out = std::io::stdout().lock();
    if global.json {
        writeln!(out, "{json}")?;
    } else {
        writeln!(out)?;
        print_citations(&mut out, &turn.citations)?;
    }
    Ok(())
}

/// The prompt cache the flags ask for: none with `--no-prompt-cache` (or when the platform has
/// no cache folder), else `--prompt-cache-dir` or the platform's.
fn prompt_cache(args: &PromptCacheArgs) -> Option<PromptCache> {
    if args.no_prompt_cache {
        return None;
    }
    let dir = args
        .prompt_cache_dir
        .clone()
        .or_else(PromptCache::default_dir);
    if dir.is_none() {
        tracing::debug!("no platform cache folder (HOME unset?): no prompt cache");
    }
    dir.map(PromptCache::new)
}
