//! The architecture's invariants (`ARCHITECTURE.md`), checked against the sources, the way
//! rust-analyzer's `tidy` test does: a crate named outside its one module, a library that
//! returns `anyhow`, the agent reaching past its seams, or a module importing one that imports it
//! back fails here, not in review.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
        krate: "rs_fsrs",
        scope: "src",
        allowed: &["src/study/deck.rs"],
        why: "the scheduler is reached through the deck's cards",
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
        allowed: &[
            "mcp-servers/obsidian/src/server.rs",
            "mcp-servers/obsidian/src/server/pre_init.rs",
            "mcp-servers/obsidian/src/server/sessions.rs",
        ],
        why: "the vault's logic knows nothing of MCP",
    },
    Confined {
        krate: "anyhow",
        scope: "mcp-servers/obsidian/src",
        allowed: &[
            "mcp-servers/obsidian/src/main.rs",
            "mcp-servers/obsidian/src/bin/bench/main.rs",
            "mcp-servers/obsidian/src/bin/bench/retrieval.rs",
        ],
        why: "a library returns typed errors (thiserror); only its binaries use anyhow",
    },
];

/// Paths a module (a file, or every file under a folder) must not name, and why.
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    (
        "src/agent",
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
    for (module, paths, why) in FORBIDDEN {
        let module = root.join(module);
        let files = if module.is_dir() {
            rust_files(&module)
        } else {
            vec![module]
        };
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let file = relative(root, &file);
            for (number, line) in code_lines(&text) {
                for path in *paths {
                    if line.contains(path) {
                        broken.push(format!("{file}:{number} names `{path}`: {why}"));
                    }
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

/// The crates whose modules must not import in a circle: their source folders.
const CRATES: &[&str] = &["src", "mcp-servers/obsidian/src"];

/// No module imports one that imports it back, directly or through others. Siblings (a crate's
/// top-level modules, or the children of one directory module) are read as a graph, where a
/// module imports what any file under it names (`crate::a::…`, `super::x::…`, grouped `use`s);
/// a parent's own items named by its children (`super::QuizRequest`) and test modules do not
/// count. What two modules both need moves into one below them.
#[test]
fn modules_import_no_circles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for krate in CRATES {
        let dir = root.join(krate);
        let modules: Vec<Module> = rust_files(&dir)
            .into_iter()
            .filter_map(|file| {
                let path = module_path(&relative(&dir, &file))?;
                let text = std::fs::read_to_string(&file).unwrap();
                let file = relative(root, &file);
                Some(Module { path, file, text })
            })
            .collect();
        assert!(modules.len() > 1, "no modules under {krate}");
        let graph = module_graph(&modules);
        let found = circles(&graph);
        for circle in &found {
            broken.push(format!(
                "{krate}: {}: move what they share into a module below them",
                describe(&graph, circle)
            ));
        }
    }
    assert!(broken.is_empty(), "\n{}\n", broken.join("\n"));
}

/// Lines a source file may have, tests included: one a reader can hold in mind. The agent's
/// step modules are held closer, since a turn is read through all of them.
const MOST_LINES: &[(&str, usize)] = &[
    ("src/agent", 600),
    ("src", 1_000),
    ("mcp-servers/obsidian/src", 1_000),
];

/// No source file outgrows [`MOST_LINES`] (the first rule whose folder holds it).
#[test]
fn modules_stay_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for krate in CRATES {
        for file in rust_files(&root.join(krate)) {
            let name = relative(root, &file);
            let (scope, most) = MOST_LINES
                .iter()
                .find(|(scope, _)| name.starts_with(&format!("{scope}/")))
                .expect("every crate folder has a rule");
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > *most {
                broken.push(format!(
                    "{name} has {lines} lines, over the {most} of {scope}/: split it by what it does"
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

/// The circle finder reads imports the way the compiler does (groups, `super`, `self`), skips
/// comments and test modules, and finds a circle among siblings at any depth.
#[test]
fn the_circle_finder_finds_circles_and_skips_comments() {
    let paths = |text: &str| -> Vec<(usize, String)> {
        imported_paths(text)
            .into_iter()
            .map(|(line, path)| (line, path.join("::")))
            .collect()
    };
    let expect = |pairs: &[(usize, &str)]| -> Vec<(usize, String)> {
        pairs.iter().map(|(l, p)| (*l, p.to_string())).collect()
    };
    assert_eq!(
        paths("use crate::{a, b::{self, C as D}, e::*};\n"),
        expect(&[
            (1, "crate::a"),
            (1, "crate::b"),
            (1, "crate::b::C"),
            (1, "crate::e")
        ])
    );
    assert_eq!(
        paths("use super::{\n    chunk::X,\n    writer,\n};\nfn f() { super::super::g() }\n"),
        expect(&[
            (1, "super::chunk::X"),
            (1, "super::writer"),
            (5, "super::super::g")
        ])
    );
    assert_eq!(
        paths(
            "// use crate::a;\n//! [`crate::b`]\nfn f() { crate::c::g() } // crate::d\n\
             pub(super) fn h(&self) -> Self { Self::new() }\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::e;\n}\n"
        ),
        expect(&[(3, "crate::c::g")])
    );

    let module = |file: &str, text: &str| Module {
        path: module_path(file).unwrap(),
        file: file.to_string(),
        text: text.to_string(),
    };
    let found = |modules: &[Module]| -> Vec<Vec<String>> {
        circles(&module_graph(modules))
            .into_iter()
            .map(|c| c.through)
            .collect()
    };
    let a = module("a.rs", "use crate::b::B;\n");
    let b_commented = module("b.rs", "//! Not `crate::a`.\nfn f() {} // crate::a::f()\n");
    assert!(found(&[a, b_commented]).is_empty());
    let modules = [
        module("a.rs", "use crate::b::B;\n"),
        module("b.rs", "fn f() { crate::c::x::f() }\n"),
        module(
            "c/mod.rs",
            "mod x;\nmod y;\npub use self::x::f;\nuse y::Y;\n",
        ),
        module(
            "c/x.rs",
            "use super::{Shared, y::Y};\nuse crate::{a, lib_item};\n",
        ),
        module("c/y.rs", "use super::x;\n"),
        module("d.rs", "use crate::c::Shared;\n"),
    ];
    assert_eq!(
        found(&modules),
        [vec!["a", "b", "c", "a"], vec!["c::x", "c::y", "c::x"]]
    );
    assert_eq!(module_path("lib.rs"), None);
    assert_eq!(module_path("bin/bench.rs"), None);
    assert_eq!(module_path("study/mod.rs"), Some(vec!["study".to_string()]));
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

/// One module's file: its path from the crate root (`["study", "quiz"]`), the file (for
/// messages) and its text.
struct Module {
    path: Vec<String>,
    file: String,
    text: String,
}

/// Which siblings each module imports: module -> imported sibling -> where it is first named
/// (`file:line`). Modules are named by their paths (`study::quiz`).
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// A circle: the modules that all import each other, directly or through others (sorted), and
/// one way round them, from the first back to it.
struct Circle {
    modules: Vec<String>,
    through: Vec<String>,
}

/// The module a file under a crate's source folder holds (`study/mod.rs` and `study.rs`:
/// `["study"]`); `None` for the crate roots and binaries, which declare modules but are none.
fn module_path(file: &str) -> Option<Vec<String>> {
    if matches!(file, "lib.rs" | "main.rs") || file.starts_with("bin/") {
        return None;
    }
    let mut path: Vec<String> = file
        .strip_suffix(".rs")?
        .split('/')
        .map(str::to_string)
        .collect();
    if path.len() > 1 && path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    Some(path)
}

/// The import graph among siblings. A path a module names counts as an import of the innermost
/// module it reaches, and at the level where the two part: `study::quiz` naming
/// `crate::cli::QuizFormat` makes `study` import `cli`; naming `super::export::QuizOutput`
/// makes `study::quiz` import `study::export`. A module naming its own parent, child or itself
/// imports nothing.
fn module_graph(modules: &[Module]) -> Graph {
    let known: BTreeSet<&[String]> = modules.iter().map(|m| m.path.as_slice()).collect();
    let mut graph = Graph::new();
    for module in modules {
        for (line, path) in imported_paths(&module.text) {
            let Some(path) = absolute(&module.path, &path) else {
                continue;
            };
            let Some(reached) = (1..=path.len())
                .rev()
                .map(|n| &path[..n])
                .find(|prefix| known.contains(prefix))
            else {
                continue;
            };
            let shared = module
                .path
                .iter()
                .zip(reached)
                .take_while(|(a, b)| a == b)
                .count();
            if shared < module.path.len() && shared < reached.len() {
                graph
                    .entry(module.path[..=shared].join("::"))
                    .or_default()
                    .entry(reached[..=shared].join("::"))
                    .or_insert_with(|| format!("{}:{line}", module.file));
            }
        }
    }
    graph
}

/// `path` as named in the module at `from`, made absolute (without `crate`); `None` for a path
/// that does not start at `crate`, `self` or `super`, or climbs above the crate.
fn absolute(from: &[String], path: &[String]) -> Option<Vec<String>> {
    let (first, mut rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" => from.to_vec(),
        "super" => {
            rest = path;
            from.to_vec()
        }
        _ => return None,
    };
    while let Some((first, after)) = rest.split_first() {
        if first != "super" {
            break;
        }
        base.pop()?;
        rest = after;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Every path in `text`'s code that starts at `crate`, `super` or `self`, with the line it
/// starts on; a grouped `use` gives one path per leaf (`use crate::{a, b::C}`: `crate::a`,
/// `crate::b::C`). Comments and the bodies of `#[cfg(test)]` modules are left out. A path in a
/// string literal would count; the sources have none.
fn imported_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut code = String::new();
    let mut lines = Vec::new();
    for (number, line) in code_outside_tests(text) {
        lines.push((code.len(), number));
        code.push_str(line);
        code.push('\n');
    }
    let line_at = |at: usize| lines[lines.partition_point(|(start, _)| *start <= at) - 1].1;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = code[at..].find(is_ident) {
        let start = at + offset;
        let word_end = code[start..]
            .find(|c| !is_ident(c))
            .map_or(code.len(), |n| start + n);
        at = word_end;
        let word = &code[start..word_end];
        if matches!(word, "crate" | "super" | "self")
            && code[word_end..].trim_start().starts_with("::")
        {
            let mut paths = Vec::new();
            let rest = read_tree(&code[start..], Vec::new(), &mut paths);
            at = code.len() - rest.len();
            found.extend(paths.into_iter().map(|path| (line_at(start), path)));
        }
    }
    found
}

/// Reads the path or `use` tree at the start of `code` (`a::b`, `a::{b, c::{self, D as E}}`),
/// appending each path it names, after `prefix`, to `paths`; returns the code after it.
fn read_tree<'a>(code: &'a str, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) -> &'a str {
    let mut path = prefix;
    let mut named = false;
    let mut rest = code;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            rest = group;
            loop {
                rest = rest.trim_start();
                if let Some(after) = rest.strip_prefix('}') {
                    return after;
                }
                if let Some(after) = rest.strip_prefix(',') {
                    rest = after;
                    continue;
                }
                let Some(first) = rest.chars().next() else {
                    return rest;
                };
                let before = rest.len();
                rest = read_tree(rest, path.clone(), paths);
                if rest.len() == before {
                    rest = &rest[first.len_utf8()..];
                }
            }
        }
        let ident = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if ident == 0 {
            break;
        }
        // `{self, …}` names the module the group is in.
        if &rest[..ident] != "self" || path.is_empty() {
            path.push(rest[..ident].to_string());
        }
        named = true;
        rest = &rest[ident..];
        match rest.trim_start().strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    // `… as Alias`: the alias names nothing new.
    if let Some(alias) = rest.trim_start().strip_prefix("as ") {
        let alias = alias.trim_start();
        rest = &alias[alias
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(alias.len())..];
    }
    if named {
        paths.push(path);
    }
    rest
}

/// [`code_lines`] without the bodies of `#[cfg(test)]` modules (which may `use super::*` and
/// reach anywhere): from `mod name {` after the attribute to the `}` indented as it is.
fn code_outside_tests(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut after_test_cfg = false;
    let mut test_module_end: Option<String> = None;
    for (number, code) in code_lines(text) {
        if let Some(end) = &test_module_end {
            if code.trim_end() == end {
                test_module_end = None;
            }
            continue;
        }
        let trimmed = code.trim();
        if after_test_cfg && trimmed.starts_with("mod ") && trimmed.ends_with('{') {
            let indent = &code[..code.len() - code.trim_start().len()];
            test_module_end = Some(format!("{indent}}}"));
            after_test_cfg = false;
            continue;
        }
        let test_cfg = trimmed == "#[cfg(test)]" || trimmed.starts_with("#[cfg(all(test,");
        after_test_cfg = test_cfg || (after_test_cfg && trimmed.starts_with("#["));
        kept.push((number, code));
    }
    kept
}

/// The circles of `graph`, each named from its first module (in name order) by a shortest way
/// round.
fn circles(graph: &Graph) -> Vec<Circle> {
    let reach = |from: &str| -> BTreeSet<&str> {
        let mut seen = BTreeSet::new();
        let mut pending = vec![from];
        while let Some(module) = pending.pop() {
            for next in graph.get(module).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next.as_str()) {
                    pending.push(next);
                }
            }
        }
        seen
    };
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for start in graph.keys() {
        if placed.contains(start.as_str()) {
            continue;
        }
        let modules: BTreeSet<&str> = reach(start)
            .into_iter()
            .filter(|m| reach(m).contains(start.as_str()))
            .collect();
        if modules.is_empty() {
            continue;
        }
        placed.extend(modules.iter().copied());
        // Breadth first from `start` back to it, within the circle's modules.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start.as_str()]);
        'search: while let Some(module) = queue.pop_front() {
            for next in graph[module].keys() {
                let next = next.as_str();
                if !modules.contains(next) || came_from.contains_key(next) {
                    continue;
                }
                came_from.insert(next, module);
                if next == start {
                    break 'search;
                }
                queue.push_back(next);
            }
        }
        let mut through = vec![start.clone()];
        let mut module = came_from[start.as_str()];
        while module != start {
            through.push(module.to_string());
            module = came_from[module];
        }
        through.push(start.clone());
        through.reverse();
        found.push(Circle {
            modules: modules.into_iter().map(str::to_string).collect(),
            through,
        });
    }
    found
}

/// `a -> b -> a (a names b at src/a.rs:3; b names a at src/b.rs:7)`: the way round, where each
/// step is named, and the other modules in the same circle, if any.
fn describe(graph: &Graph, circle: &Circle) -> String {
    let steps: Vec<String> = circle
        .through
        .windows(2)
        .map(|step| {
            format!(
                "{} names {} at {}",
                step[0], step[1], graph[&step[0]][&step[1]]
            )
        })
        .collect();
    let others: Vec<&str> = circle
        .modules
        .iter()
        .filter(|m| !circle.through.contains(m))
        .map(String::as_str)
        .collect();
    let mut text = format!("{} ({})", circle.through.join(" -> "), steps.join("; "));
    if !others.is_empty() {
        text.push_str(&format!(", and through it {}", others.join(", ")));
    }
    text
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
