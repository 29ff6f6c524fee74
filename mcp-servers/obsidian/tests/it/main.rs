//! obsidian-kb's integration tests, one binary: the real server over stdio and over HTTP, the
//! path-attack suite, hostile clients and vaults, and search by meaning with a real embedding
//! model.

mod common;

mod attacks;
mod dates;
mod hostile;
mod http;
mod semantic;
mod server;
