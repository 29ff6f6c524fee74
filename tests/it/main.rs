//! recall's integration tests, one binary (llama.cpp is linked once, not once per file):
//! each module tests one part against the real things (real llama.cpp, real MCP over stdio).

mod common;

mod agent;
mod chat;
mod cli;
mod config;
mod embedding;
mod engine;
mod grammar;
mod hub;
mod llama3_engine;
mod llama3_tokenizer;
mod mcp;
mod page;
mod parse;
mod prompt;
mod prompt_cache;
mod remote_engine;
mod review;
mod serve;
mod study;
mod tidy;
