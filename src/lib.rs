//! Recall: a fully local agent for a private Obsidian vault.
//!
//! Data flows one way: question → [`prompt`] → [`engine`] (decode) → [`parse`] → route → [`mcp`] →
//! result → prompt. See `ARCHITECTURE.md` for the map.

pub mod agent;
pub mod chat;
pub mod cli;
pub mod commands;
pub mod config;
pub mod embedding;
pub mod engine;
pub mod facts;
pub mod grammar;
pub mod grounding;
pub mod language;
pub mod lists;
pub mod markup;
pub mod mcp;
pub mod parse;
pub mod prompt;
pub mod report;
pub mod serve;
pub mod session;
pub mod sources;
pub mod study;
pub mod support;
pub mod tool;
pub mod validate;
pub mod vault;

use std::process::ExitCode;

use cli::{Cli, Command};

/// Parses the command line, runs the command, prints any error once; returns the exit code.
pub fn run() -> ExitCode {
    let cli = cli::parse_args();
    init_logging(
        cli.global.verbose,
        matches!(cli.command, Command::McpVaultServer { .. }),
    );
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("recall: {err:#}");
            if is_cancelled(&err) {
                // What shells report for a run ended by Ctrl-C.
                return ExitCode::from(130);
            }
            ExitCode::FAILURE
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let global = cli.global;
    match cli.command {
        Command::Bench {
            model,
            n_prompt,
            n_gen,
            repetitions,
        } => commands::bench(&global, &model, n_prompt, n_gen, repetitions),
        Command::Models => commands::models(),
        Command::McpVaultServer {
            vault,
            embedding_model,
        } => commands::mcp_vault_server(vault, embedding_model),
        Command::Ask { question, run } => commands::ask(&global, &run, &question),
        Command::Chat { resume, run } => chat::run(&global, &run, resume.as_deref()),
        Command::Summarize { target, run } => {
            study::summarize(&global, &run, &study_scope(target, &run)?)
        }
        Command::Quiz {
            target,
            count,
            format,
            interactive,
            save,
            deck,
            run,
        } => study::quiz(
            &global,
            &run,
            &study::QuizRequest {
                scope: study_scope(target, &run)?,
                count,
                format,
                interactive,
                save: if save {
                    Some(study::Deck::locate(deck.deck)?)
                } else {
                    None
                },
            },
        ),
        Command::Review {
            limit,
            now,
            deck,
            run,
        } => study::review(
            &global,
            &run,
            &study::ReviewRequest {
                deck: study::Deck::locate(deck.deck)?,
                now: now.unwrap_or_else(chrono::Utc::now),
                limit,
            },
        ),
        Command::Serve { serve, run } => serve::serve(&global, &run, &serve),
        Command::Index { servers } => commands::index(&global, &servers),
        Command::Tools { servers } => commands::tools(&global, &servers),
        Command::Call {
            tool,
            arguments,
            servers,
        } => commands::call(&global, &servers, &tool, &arguments),
        Command::Render { question, servers } => commands::render(&servers, &question),
    }
}

/// Logs go to stderr; stdout carries answers (and, for the vault server, the MCP protocol).
/// llama.cpp's own logs arrive through `tracing` at debug level, so they stay hidden unless
/// `--verbose` or `RUST_LOG` asks for them.
/// What a study command works on, from its flags: relative periods count from `--today`.
fn study_scope(target: cli::StudyTarget, run: &cli::RunArgs) -> anyhow::Result<study::Scope> {
    let period =
        obsidian_kb::dates::Period::between(target.from, target.to).map_err(|(from, to)| {
            anyhow::anyhow!("--from ({from}) is after --to ({to}); give the earlier day as --from")
        })?;
    Ok(study::Scope {
        target: target.target.unwrap_or_default(),
        period,
        today: run.agent.today.unwrap_or_else(obsidian_kb::dates::today),
    })
}

fn init_logging(verbose: bool, server: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if verbose {
        "debug"
    } else if server {
        "info"
    } else {
        "warn"
    };
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    if server {
        // notify's own log lines name absolute paths; the vault server never shows one.
        filter = filter.add_directive("notify=off".parse().expect("a valid directive"));
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(!server && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}

/// True when the user stopped the run (Ctrl-C), whoever reported it.
fn is_cancelled(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.is::<engine::Cancelled>()
            || e.downcast_ref::<agent::AgentError>()
                .is_some_and(agent::AgentError::is_cancelled)
    })
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
