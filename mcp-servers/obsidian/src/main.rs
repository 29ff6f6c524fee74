//! The `obsidian-kb` binary: serves one vault over MCP on stdio.
fn main() {}
