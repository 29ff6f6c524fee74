//! The architecture's invariants (`ARCHITECTURE.md`), checked against the sources, the way
//! rust-analyzer's `tidy` test does: a crate named outside its one module, a library that
//! returns `anyhow`, or the agent reaching past its seams fails here, not in review.

use std::path::{Path, PathBuf};

/// `krate` may be named only in `allowed`, among the `.rs` files under `scope`.
struct Confined {
    krate: &'static str,
    scope: &'static str,
    allowed: &'static [&'static str],
    why: &'static str,
}

const CONFINED: &[Confined] = &[
    Confined {
        krate: "clap",
        scope: "src",
        allowed: &["src/cli.rs"],
        why: "the flags are parsed in one place; everything after works on plain values",
    },
    Confined {
        krate: "llama_cpp_2",
        scope: "src",
        allowed: &["src/engine/llama.rs"],
        why: "the model is reached through `ChatModel`",
    },
    Confined {
        krate: "minijinja",
        scope: "src",
        allowed: &["src/prompt.rs"],
        why: "one module renders prompts",
    },
    Confined {
        krate: "rmcp",
        scope: "src",
        allowed: &["src/mcp.rs"],
        why: "MCP types never leave the manager",
    },
    Confined {
        krate: "rustyline",
        scope: "src",
        allowed: &["src/chat.rs"],
        why: "the line editor belongs to the chat",
    },
    Confined {
        krate: "llama_cpp_2",
        scope: "mcp-servers/obsidian/src",
        allowed: &["mcp-servers/obsidian/src/embed.rs"],
        why: "the embedding model is reached through `Embedder`",
    },
    Confined {
        krate: "thread_priority",
        scope: "mcp-servers/obsidian/src",
        allowed: &["mcp-servers/obsidian/src/embed.rs"],
        why: "only the embedding thread runs at idle priority",
    },
    Confined {
        krate: "rmcp",
        scope: "mcp-servers/obsidian/src",
        allowed: &["mcp-servers/obsidian/src/server.rs"],
        why: "the vault's logic knows nothing of MCP",
    },
    Confined {
        krate: "anyhow",
        scope: "mcp-servers/obsidian/src",
        allowed: &[
            "mcp-servers/obsidian/src/main.rs",
            "mcp-servers/obsidian/src/bin/bench.rs",
        ],
        why: "a library returns typed errors (thiserror); only its binaries use anyhow",
    },
];

/// Paths a module must not name, and why.
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    (
        "src/agent.rs",
        &[
            "crate::mcp",
            "engine::llama",
            "crate::commands",
            "crate::session",
        ],
        "the agent reaches the model only through `ChatModel` and the tools only through \
         `ToolHost`",
    ),
    (
        "src/tool.rs",
        &["std::fs", "std::io", "std::process", "tokio", "crate::"],
        "the tool vocabulary is IO-free and depends on no other stage",
    ),
    (
        "src/parse.rs",
        &["crate::mcp", "crate::engine", "crate::prompt"],
        "parsing reads text into calls and knows no other stage",
    ),
];

#[test]
fn crates_are_named_only_in_their_one_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for rule in CONFINED {
        let files = rust_files(&root.join(rule.scope));
        assert!(!files.is_empty(), "no sources under {}", rule.scope);
        for file in files {
            let name = relative(root, &file);
            if rule.allowed.contains(&name.as_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            if let Some(line) = names_crate(&text, rule.krate) {
                broken.push(format!(
                    "{name}:{line} names `{}`, allowed only in {:?}: {}",
                    rule.krate, rule.allowed, rule.why
                ));
            }
        }
        for allowed in rule.allowed {
            assert!(
                root.join(allowed).is_file(),
                "{allowed} is gone: update this rule and ARCHITECTURE.md"
            );
        }
    }
    assert!(broken.is_empty(), "\n{}\n", broken.join("\n"));
}

#[test]
fn modules_keep_to_their_seams() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for (file, paths, why) in FORBIDDEN {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for (number, line) in code_lines(&text) {
            for path in *paths {
                if line.contains(path) {
                    broken.push(format!("{file}:{number} names `{path}`: {why}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "\n{}\n", broken.join("\n"));
}

/// Chat and the study commands are commands of their own: they share the command layer through
/// `session` and `report`, never by reaching into another command's module.
#[test]
fn commands_do_not_reach_into_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = rust_files(&root.join("src/study"));
    files.push(root.join("src/chat.rs"));
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in code_lines(&text) {
            if line.contains("crate::commands") {
                broken.push(format!(
                    "{}:{number} names `crate::commands`",
                    relative(root, &file)
                ));
            }
        }
    }
    assert!(broken.is_empty(), "\n{}\n", broken.join("\n"));
}

/// The checks see what a reader sees: code, not comments.
#[test]
fn the_checks_find_real_uses_and_skip_comments() {
    assert_eq!(names_crate("use clap::Parser;\n", "clap"), Some(1));
    assert_eq!(
        names_crate("// only cli.rs imports clap\nfn f() {}\n", "clap"),
        None
    );
    assert_eq!(
        names_crate(
            "//! `clap` lives elsewhere\nfn f() { x::y() } // clap\n",
            "clap"
        ),
        None
    );
    assert_eq!(
        names_crate("fn f() {}\n#[derive(clap::ValueEnum)]\n", "clap"),
        Some(2)
    );
    assert_eq!(names_crate("use anyhow_ext::X;\n", "anyhow"), None);
    assert_eq!(
        names_crate("fn f() -> anyhow::Result<()> {}\n", "anyhow"),
        Some(1)
    );
}

/// The first line (1-based) whose code names `krate` as a path (`krate::…` or `use krate`).
fn names_crate(text: &str, krate: &str) -> Option<usize> {
    code_lines(text)
        .find(|(_, code)| {
            code.match_indices(krate).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = &code[at + krate.len()..];
                let starts_word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                starts_word
                    && (after.starts_with("::")
                        || (after.starts_with(';') || after.starts_with(" as "))
                            && code.trim_start().starts_with("use "))
            })
        })
        .map(|(number, _)| number)
}

/// Each line's code (1-based numbers), with `//` comments cut off. A `//` inside a string
/// literal would cut too early; the sources have none that hide a crate path.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, line)| {
        let code = line.find("//").map_or(line, |at| &line[..at]);
        (i + 1, code)
    })
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}
