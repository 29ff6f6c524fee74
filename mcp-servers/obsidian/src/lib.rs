//! `obsidian-kb`: a read-only MCP server over an Obsidian vault.
