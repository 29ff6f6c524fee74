//! The commands that `lib.rs` dispatches to, one module each: each takes the parsed flags, does
//! its job, and writes the result to stdout (the answer) or stderr (progress, logs). `chat` and
//! the study commands have modules of their own (`chat.rs`, `study/`); what a model command
//! runs on is `session.rs`.

mod ask;
mod bench;
mod call;
mod index;
mod models;
mod render;
mod tools;
mod vault_server;

pub use ask::ask;
pub use bench::bench;
pub use call::call;
pub use index::index;
pub use models::models;
pub use render::render;
pub use tools::tools;
pub use vault_server::mcp_vault_server;
