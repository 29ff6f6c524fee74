//! What the examples under `benches/` that run the chat model share: its flags, and the
//! model loaded with the chat template it carries, as `recall` loads them.

use std::path::PathBuf;

use recall::engine::llama::{Engine, LoadOptions, SessionOptions};
use recall::prompt::ChatTemplate;

/// The model and how many threads it runs on.
#[derive(clap::Args)]
pub struct ModelArgs {
    /// The GGUF model.
    #[arg(long)]
    pub model: PathBuf,
    #[arg(long, default_value_t = 2)]
    pub threads: i32,
}

impl ModelArgs {
    /// The model and its chat template.
    pub fn load(&self) -> Result<(Engine, ChatTemplate), Box<dyn std::error::Error>> {
        let engine = Engine::load(&self.model, &LoadOptions::default())?;
        let info = engine.info();
        let template = ChatTemplate::new(
            info.chat_template.as_deref(),
            &info.bos_text,
            &info.eos_text,
        )?;
        Ok((engine, template))
    }

    /// A session of 4,096 tokens on the threads asked for.
    pub fn session(&self) -> SessionOptions {
        SessionOptions {
            n_ctx: Some(4096),
            threads: Some(self.threads),
        }
    }
}
