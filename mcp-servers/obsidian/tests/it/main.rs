//! obsidian-kb's integration tests, one binary: the real server over stdio, the path-attack
//! suite, hostile clients and vaults, and search by meaning with a real embedding model.

mod common;

mod attacks;
mod dates;
mod hostile;
mod semantic;
mod server;
