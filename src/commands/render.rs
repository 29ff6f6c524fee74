//! `recall render`: the decision-step prompt for a question, exactly as the model would read
//! it, without a model.

use std::io::Write;

use anyhow::Result;

use crate::agent;
use crate::cli::ServerArgs;
use crate::prompt::{ChatTemplate, Message};
use crate::session::start_servers;
use crate::tool::ToolHost;

/// `recall render`: the decision-step prompt, exactly as it would be tokenized (Llama 3 layout).
pub fn render(args: &ServerArgs, question: &str) -> Result<()> {
    let (runtime, manager) = start_servers(args)?;
    let tools = manager.tools();
    runtime.block_on(manager.shutdown());
    let conversation = [
        Message::system(agent::SYSTEM_PROMPT.trim()),
        Message::user(question),
    ];
    let prompt = ChatTemplate::llama3().decision(&conversation, &tools)?;
    write!(std::io::stdout().lock(), "{}", prompt.text)?;
    Ok(())
}
