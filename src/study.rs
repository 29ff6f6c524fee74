//! `recall summarize` and `recall quiz` (being written).

use crate::cli::{AgentArgs, GlobalArgs, ModelArgs, QuizFormat, ServerArgs};

/// What `recall quiz` was asked for.
#[derive(Debug, Clone)]
pub struct QuizRequest {
    /// A note, folder or search query.
    pub target: String,
    /// How many questions.
    pub count: usize,
    /// Output format.
    pub format: QuizFormat,
    /// Ask on the terminal and grade.
    pub interactive: bool,
}

/// `recall summarize`.
pub fn summarize(
    _global: &GlobalArgs,
    _model: &ModelArgs,
    _servers: &ServerArgs,
    _agent: &AgentArgs,
    _target: &str,
) -> anyhow::Result<()> {
    anyhow::bail!("recall summarize is not built yet")
}

/// `recall quiz`.
pub fn quiz(
    _global: &GlobalArgs,
    _model: &ModelArgs,
    _servers: &ServerArgs,
    _agent: &AgentArgs,
    _request: &QuizRequest,
) -> anyhow::Result<()> {
    anyhow::bail!("recall quiz is not built yet")
}
