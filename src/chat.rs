//! `recall chat`: a line-editing REPL over one conversation (being written).

use std::path::Path;

use crate::cli::{AgentArgs, GlobalArgs, ModelArgs, ServerArgs};

/// Runs the REPL.
pub fn run(
    _global: &GlobalArgs,
    _model: &ModelArgs,
    _servers: &ServerArgs,
    _agent: &AgentArgs,
    _resume: Option<&Path>,
) -> anyhow::Result<()> {
    anyhow::bail!("recall chat is not built yet")
}
