//! `recall ask`: one question, the answer streamed, then the sources it used (or, with
//! `--json`, one report).

use std::io::Write;

use anyhow::Result;

use crate::cli::{GlobalArgs, RunArgs};
use crate::report::{TurnReport, write_transcript};
use crate::session::{Workbench, approver, print_citations, stream_to_stdout};

/// `recall ask`: one question, the answer streamed, then the notes it used.
///
/// Ctrl-C at any point (prompt, decision, tool calls, the answer streaming) stops the run: the
/// error is [`Cancelled`](crate::engine::Cancelled) (`recall: stopped`, exit 130), a streamed
/// part of the answer is ended with a newline, and `--json` prints nothing, since there is no
/// finished turn to report.
pub fn ask(global: &GlobalArgs, run: &RunArgs, question: &str) -> Result<()> {
    let bench = Workbench::open(global, run)?;
    // Decision and answer prompts part at the system message: each context keeps its own
    // prefix (and its own prompt-cache file).
    let mut session = bench.session()?;
    let mut answer_session = bench.session()?;
    let mut approver = approver(run.servers.yes, &bench.interrupt);
    let mut agent = bench.agent(
        &mut session,
        &mut answer_session,
        approver.as_mut(),
        bench.agent_options(&run.model, &run.agent),
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

    let report = TurnReport::new(&turn, bench.model.info());
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
