//! The command line: raw flags and their validation, nothing else.
//!
//! **Architecture invariant:** the only module that imports `clap`. Everything after parsing
//! works on the plain values here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Recall: ask questions of your Obsidian vault with a local Llama 3.2; nothing leaves the laptop.
#[derive(Debug, Parser)]
#[command(name = "recall", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Flags shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
}

/// The process's command line, parsed; on bad flags (or `--help`) clap prints and exits.
pub fn parse_args() -> Cli {
    Cli::parse()
}

/// Flags shared by every command.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Print one JSON object for the run instead of streamed text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Show prompts, raw model output, tool calls and llama.cpp logs on stderr.
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// Append a transcript of the run (prompts, outputs, calls) to FILE.
    #[arg(long, global = true, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
}

/// Flags that choose and run the model.
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// A .gguf path, hf:OWNER/REPO/FILE.gguf, or an alias (`recall models`).
    #[arg(long, short, env = "RECALL_MODEL", default_value = "llama3.2-1b")]
    pub model: String,
    /// Use this model instead when `--model` must be downloaded and the hub can't be reached.
    #[arg(long, value_name = "MODEL")]
    pub fallback_model: Option<String>,
    /// Layers to offload to the GPU (build with --features cuda, vulkan or metal).
    #[arg(long, default_value_t = 0)]
    pub gpu_layers: u32,
    /// CPU threads (default: all cores).
    #[arg(long, env = "RECALL_THREADS")]
    pub threads: Option<i32>,
    /// Context size in tokens (default: the model's trained context, at most 8192).
    #[arg(long)]
    pub ctx: Option<u32>,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.6)]
    pub temp: f32,
    /// Nucleus sampling threshold.
    #[arg(long, default_value_t = 0.9)]
    pub top_p: f32,
    /// Minimum probability relative to the best token.
    #[arg(long, default_value_t = 0.05)]
    pub min_p: f32,
    /// Random seed for sampling.
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u32,
    /// Run the model on a llama.cpp server instead of in this process: llama-server's address,
    /// e.g. http://gpu-box:8080 (then --model, --gpu-layers and --threads are the server's
    /// business). Its API key, if any, is read from RECALL_ENGINE_API_KEY.
    #[arg(long, env = "RECALL_ENGINE", value_name = "URL")]
    pub engine: Option<String>,
    /// Seconds the engine may send nothing (no token, no progress) before a request fails.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub engine_timeout: u64,
    /// Benches only: answer each request the model was given before (same prompt, settings
    /// and model file) from the records in DIR, and record the others there
    /// (`src/engine/replay.rs`). Never for a person's questions: a record outlives the notes.
    #[arg(long, value_name = "DIR", hide = true)]
    pub replay: Option<PathBuf>,
}

impl ModelArgs {
    /// The sampling settings these flags ask for.
    pub fn sampling(&self) -> crate::engine::Sampling {
        crate::engine::Sampling {
            temperature: self.temp,
            top_p: self.top_p,
            min_p: self.min_p,
            seed: self.seed,
        }
    }
}

/// Flags that choose the tool servers.
#[derive(Debug, Args, Clone)]
pub struct ServerArgs {
    /// The Obsidian vault for the bundled server (used when no config file names servers).
    #[arg(long, env = "RECALL_VAULT")]
    pub vault: Option<PathBuf>,
    /// MCP servers config (Claude Desktop's `mcpServers` format).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Approve calls to tools of servers not marked readOnly without asking.
    #[arg(long)]
    pub yes: bool,
    /// The bundled vault server's embedding model, for search by meaning as well as by words:
    /// a GGUF path or hf:OWNER/REPO/FILE.gguf (default, when present: models/all-MiniLM-L6-v2.gguf,
    /// or models/multilingual-e5-small.gguf for a vault written in Chinese, Japanese, Korean,
    /// German, French or Spanish).
    #[arg(long, env = "RECALL_EMBEDDING_MODEL", value_name = "MODEL")]
    pub embedding_model: Option<String>,
    /// The bundled vault server searches by words alone.
    #[arg(long, conflicts_with = "embedding_model")]
    pub no_embeddings: bool,
    /// Search is by words until every passage has a vector: a model command first embeds
    /// the rest when the server expects that to take at most this many seconds, and otherwise
    /// answers at once (0: never wait; `recall index` embeds it all).
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub embedding_wait: u64,
}

/// The `--grounding` checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Grounding {
    /// Facts, figures and names read against the sources' words.
    Rules,
    /// The sources' gain on the answer's own words.
    Gain,
}

/// The `--question-kind` readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QuestionKindArg {
    /// By the question's words.
    Words,
    /// By the model.
    Model,
}

/// Flags of the agent loop.
#[derive(Debug, Args, Clone)]
pub struct AgentArgs {
    /// Most tool-decision steps before the answer is forced.
    #[arg(long, default_value_t = 5)]
    pub max_steps: usize,
    /// Let the model write anything on the decision step (no grammar).
    #[arg(long)]
    pub no_grammar: bool,
    /// Let the model answer without looking anything up (by default its first step must call a tool).
    #[arg(long)]
    pub tools_optional: bool,
    /// Hold a decision step (more searches, reads) before every answer; by default the
    /// answer comes straight after the opening search, and the model decides on more only
    /// when that answer is that the notes do not say and another configured server offers
    /// tools (among the vault's alone it only searched again).
    #[arg(long)]
    pub decide_first: bool,
    /// How an answer the notes hold is told from one the model made up: `rules` reads its
    /// facts, figures and names against the sources' words (streamed as checked); `gain`
    /// scores the answer after the sources and after the question alone, and takes one the
    /// sources raised too little for the notes not saying (held whole until read; any
    /// language; an in-process model only). Being measured (docs/benches.md).
    #[arg(long, value_enum, default_value_t = Grounding::Rules)]
    pub grounding: Grounding,
    /// With `--grounding gain`: the least mean gain (nats a word) of an answer that stands.
    #[arg(long, value_name = "NATS", default_value_t = crate::grounding::DEFAULT_THRESHOLD)]
    pub grounding_threshold: f32,
    /// How what a question asks for (a date, an amount, a name, an address) is read for the
    /// checks of its answer: `words` by its question words (English, Chinese, Japanese,
    /// Korean); `model` by the model, one word under a grammar, in any language (a short
    /// model step before the answer). Being measured (docs/benches.md).
    #[arg(long, value_enum, default_value_t = QuestionKindArg::Words)]
    pub question_kind: QuestionKindArg,
    /// Most tokens in an answer (default 256: `ask` and `chat` answer in a few sentences), a
    /// summary, a quiz item or a grade (default 512).
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// The day relative dates in a question ("yesterday", "last week", "in March") count
    /// from (default: today on this computer's clock).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub today: Option<chrono::NaiveDate>,
}

/// Tokens a summary, a quiz item or a grade may take unless `--max-tokens` says otherwise.
pub const STUDY_TOKENS: usize = 512;

impl AgentArgs {
    /// The bound on an answer's tokens.
    pub fn answer_tokens(&self) -> usize {
        self.max_tokens.unwrap_or(crate::agent::ANSWER_TOKENS)
    }

    /// The bound on a summary's, a quiz item's or a grade's tokens.
    pub fn study_tokens(&self) -> usize {
        self.max_tokens.unwrap_or(STUDY_TOKENS)
    }
}

/// Flags of the prompt cache: the KV state of the prompt's fixed part, kept across runs.
#[derive(Debug, Args, Clone)]
pub struct PromptCacheArgs {
    /// Neither load nor save the KV state of the prompt's fixed part (system message and tool
    /// schemas) across runs.
    #[arg(long)]
    pub no_prompt_cache: bool,
    /// Where that state is kept (default: recall/prompt-cache in the platform cache folder).
    #[arg(long, env = "RECALL_PROMPT_CACHE_DIR", value_name = "DIR")]
    pub prompt_cache_dir: Option<PathBuf>,
}

/// What every command that runs the agent on a model (`ask`, `chat`, `summarize`, `quiz`)
/// takes: the model, the tool servers and the loop.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// The model and how it samples.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The tool servers.
    #[command(flatten)]
    pub servers: ServerArgs,
    /// The agent loop.
    #[command(flatten)]
    pub agent: AgentArgs,
    /// The prompt cache.
    #[command(flatten)]
    pub cache: PromptCacheArgs,
}

/// Where and for whom `recall serve` listens.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// The address to listen on; anything but loopback needs --api-key.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (7322: R-E-C-A on a phone's keypad).
    #[arg(long, default_value_t = 7322)]
    pub port: u16,
    /// Every request must send `Authorization: Bearer KEY`. Prefer the environment variable:
    /// a command line shows in the process list.
    #[arg(
        long,
        env = "RECALL_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub api_key: Option<String>,
    /// Also allow browser requests from this origin (e.g. https://chat.example.org); Obsidian
    /// (app://obsidian.md, capacitor://localhost) and http://localhost pages always may.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Requests that may wait while one is answered; more get 429 and Retry-After.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub queue: usize,
    /// The deck the page's quiz items are saved to and reviewed from.
    #[command(flatten)]
    pub deck: DeckArgs,
}

/// The deck of saved quiz items (`quiz --save`, `review`).
#[derive(Debug, Args, Clone)]
pub struct DeckArgs {
    /// The deck file (default: recall/deck.json in the platform data folder).
    #[arg(long, env = "RECALL_DECK", value_name = "FILE")]
    pub deck: Option<PathBuf>,
}

/// What a study command (`summarize`, `quiz`) works on.
#[derive(Debug, Args, Clone)]
pub struct StudyTarget {
    /// A note URI or name, a folder, a period ("last week", "September 2025", "2025-09-28")
    /// or a search query.
    #[arg(required_unless_present_any = ["from", "to"])]
    pub target: Option<String>,
    /// Only notes about a day from this one on: 2025-09-01, a month (2025-09) or a year.
    #[arg(long, value_name = "DATE", value_parser = first_day)]
    pub from: Option<chrono::NaiveDate>,
    /// Only notes about a day up to this one, included: 2025-09-30, 2025-09 or 2025.
    #[arg(long, value_name = "DATE", value_parser = last_day)]
    pub to: Option<chrono::NaiveDate>,
}

/// `--from`: a day, or the first day of a month or a year.
fn first_day(text: &str) -> Result<chrono::NaiveDate, String> {
    day_bound(text, false)
}

/// `--to`: a day, or the last day of a month or a year.
fn last_day(text: &str) -> Result<chrono::NaiveDate, String> {
    day_bound(text, true)
}

fn day_bound(text: &str, end: bool) -> Result<chrono::NaiveDate, String> {
    obsidian_kb::dates::Period::parse_bound(text, end).ok_or_else(|| {
        "not a date: give a day as 2025-09-28, a month as 2025-09 or a year as 2025".to_string()
    })
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Ask one question of the vault; streams the answer, then the notes it used.
    Ask {
        /// The question.
        question: String,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Talk with the vault: a line-editing REPL with history (/tools, /reset, /save, /load, /quit).
    Chat {
        /// Continue a session saved with /save.
        #[arg(long, value_name = "FILE")]
        resume: Option<PathBuf>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Summarize a note (URI or name), a folder, or the notes a search finds; Markdown out.
    Summarize {
        #[command(flatten)]
        target: StudyTarget,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Write quiz questions with answers from notes (a note, folder, or search query).
    Quiz {
        #[command(flatten)]
        target: StudyTarget,
        /// How many questions.
        #[arg(short = 'n', long = "count", default_value_t = 5)]
        count: usize,
        /// Output format.
        #[arg(long, value_enum, default_value_t = QuizFormat::Md)]
        format: QuizFormat,
        /// Ask the questions one by one on the terminal and grade the answers.
        #[arg(long)]
        interactive: bool,
        /// Also add the questions to the deck that `recall review` asks from.
        #[arg(long)]
        save: bool,
        #[command(flatten)]
        deck: DeckArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Ask the saved quiz questions that are due (spaced repetition, FSRS); grades each typed
    /// answer and schedules the card's next review. With --json, lists the due cards.
    Review {
        /// Ask at most this many cards.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Review as if it were this time (RFC 3339, e.g. 2030-01-31T09:00:00Z), for scripts
        /// and tests; default: now.
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        now: Option<chrono::DateTime<chrono::Utc>>,
        #[command(flatten)]
        deck: DeckArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Serve a page to ask and study the vault in a browser (/), and the vault agent over an
    /// OpenAI-compatible HTTP API (/v1/chat/completions, streaming; /v1/models), for
    /// Obsidian chat plugins and Open WebUI.
    Serve {
        #[command(flatten)]
        serve: ServeArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Embed the whole vault for search by meaning now, with a progress bar (resumable; the
    /// model commands otherwise wait only when little is left).
    Index {
        #[command(flatten)]
        servers: ServerArgs,
    },
    /// List the tool servers and their tools, without loading a model.
    Tools {
        #[command(flatten)]
        servers: ServerArgs,
    },
    /// Call one tool directly and print its result.
    Call {
        /// Tool name (as `recall tools` lists it).
        tool: String,
        /// Arguments as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
        #[command(flatten)]
        servers: ServerArgs,
    },
    /// Print the exact decision-step prompt for a question, without loading a model.
    Render {
        /// The question.
        question: String,
        #[command(flatten)]
        servers: ServerArgs,
    },
    /// Measure prompt processing and generation speed, like llama.cpp's llama-bench.
    Bench {
        #[command(flatten)]
        model: ModelArgs,
        /// Prompt tokens (pp test).
        #[arg(short = 'p', long = "n-prompt", default_value_t = 512)]
        n_prompt: usize,
        /// Generated tokens (tg test).
        #[arg(short = 'n', long = "n-gen", default_value_t = 128)]
        n_gen: usize,
        /// Repetitions of each test.
        #[arg(short = 'r', long = "repetitions", default_value_t = 5)]
        repetitions: usize,
    },
    /// List the model aliases and whether each is available offline.
    Models,
    /// Serve the bundled read-only vault server (obsidian-kb) over MCP on stdio.
    #[command(hide = true)]
    McpVaultServer {
        /// The vault folder.
        #[arg(long)]
        vault: PathBuf,
        /// The embedding model for search by meaning (none: by words alone).
        #[arg(long, value_name = "GGUF")]
        embedding_model: Option<PathBuf>,
    },
}

fn parse_time(text: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.to_utc())
        .map_err(|e| format!("{e}: expected RFC 3339, e.g. 2030-01-31T09:00:00Z"))
}

/// How `recall quiz` writes its questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QuizFormat {
    /// Markdown.
    Md,
    /// One JSON object.
    Json,
    /// CSV that Anki imports (front, back, source, link).
    Anki,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command};

    fn agent_args(args: &[&str]) -> super::AgentArgs {
        match Cli::try_parse_from(args).expect("valid arguments").command {
            Command::Ask { run, .. } | Command::Quiz { run, .. } => run.agent,
            other => panic!("not a model command: {other:?}"),
        }
    }

    #[test]
    fn answers_are_short_by_default_and_study_aids_are_not() {
        let ask = agent_args(&["recall", "ask", "When is the midterm?"]);
        assert_eq!(ask.answer_tokens(), crate::agent::ANSWER_TOKENS);
        assert_eq!(ask.study_tokens(), super::STUDY_TOKENS);
        let quiz = agent_args(&["recall", "quiz", "Biology", "--max-tokens", "100"]);
        assert_eq!((quiz.answer_tokens(), quiz.study_tokens()), (100, 100));
    }
}
