//! The prompt cache on the real SmolLM2 GGUF and real files: a later session loads the stable
//! prefix's KV state from disk and decodes the same greedy tokens as a cold one; truncated,
//! corrupt and foreign files are ignored and rewritten; the size bound evicts the oldest.

use crate::common;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use recall::engine::llama::{Engine, LoadOptions, SessionOptions};
use recall::engine::prompt_cache::PromptCache;
use recall::engine::{ChatModel, Completion, GenerateRequest};

fn ignore(_: &str) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

fn load() -> Engine {
    Engine::load(&common::smollm2(), &LoadOptions::default()).expect("test model loads")
}

/// A ChatML prompt whose system message (a few hundred tokens) is the stable prefix; returns
/// the prompt and the prefix's length in bytes.
fn prompt(topic: &str, question: &str) -> (String, usize) {
    let system = format!(
        "You answer questions about {topic} from the user's notes. {}",
        "Cite each fact with its source number in brackets, like [2]. ".repeat(20)
    );
    let head = "<|im_start|>system\n";
    let text = format!(
        "{head}{system}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    );
    (text, head.len() + system.len())
}

/// One greedy generation on a fresh session of `engine`, with `cache` when given.
fn run(engine: &Engine, cache: Option<&PromptCache>, topic: &str) -> Completion {
    let mut session = engine
        .session(&SessionOptions {
            n_ctx: Some(2048),
            threads: Some(2),
        })
        .unwrap();
    if let Some(cache) = cache {
        session.use_prompt_cache(cache.clone());
    }
    let (text, stable) = prompt(topic, "What should I cite?");
    let mut request = GenerateRequest::greedy(24);
    request.stable_prefix = stable;
    session.generate(&text, &request, &mut ignore).unwrap()
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "kv"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn a_later_session_restores_the_prefix_and_decodes_the_same_tokens() {
    let engine = load();
    let dir = tempfile::tempdir().unwrap();
    let cache = PromptCache::new(dir.path().join("prompt-cache"));

    let cold = run(&engine, Some(&cache), "biology");
    assert_eq!(cold.stats.restored_tokens, 0);
    assert_eq!(cold.stats.evaluated_tokens, cold.stats.prompt_tokens);
    let files = cache_files(cache.dir());
    assert_eq!(files.len(), 1, "{files:?}");

    let warm = run(&engine, Some(&cache), "biology");
    assert!(warm.stats.restored_tokens > 200, "{:?}", warm.stats);
    assert_eq!(warm.stats.reused_tokens, warm.stats.restored_tokens);
    assert_eq!(
        warm.stats.restored_tokens + warm.stats.evaluated_tokens,
        warm.stats.prompt_tokens
    );
    assert_eq!(warm.text, cold.text, "greedy tokens differ after a restore");
    assert!(!cold.text.is_empty());

    // Without a cache the prompt is evaluated the same way, so the text is the same too.
    let uncached = run(&engine, None, "biology");
    assert_eq!(uncached.stats.restored_tokens, 0);
    assert_eq!(uncached.text, cold.text);
    assert_eq!(cache_files(cache.dir()), files, "nothing new was written");
}

#[test]
fn truncated_and_corrupt_files_are_ignored_and_rewritten() {
    let engine = load();
    let dir = tempfile::tempdir().unwrap();
    let cache = PromptCache::new(dir.path());
    let cold = run(&engine, Some(&cache), "chemistry");
    let [file] = cache_files(dir.path()).try_into().unwrap();
    let good = std::fs::read(&file).unwrap();

    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    let damaged: [(&str, Vec<u8>); 4] = [
        ("truncated", good[..good.len() / 2].to_vec()),
        ("cut before its trailer", good[..good.len() - 10].to_vec()),
        ("one byte flipped", flipped),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&file, &bytes).unwrap();
        let again = run(&engine, Some(&cache), "chemistry");
        assert_eq!(again.stats.restored_tokens, 0, "{what} file was trusted");
        assert_eq!(again.text, cold.text, "{what}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            good,
            "{what} file was not rewritten"
        );
    }
    let warm = run(&engine, Some(&cache), "chemistry");
    assert!(warm.stats.restored_tokens > 0);
    assert_eq!(warm.text, cold.text);
}

#[test]
fn a_file_written_for_another_prefix_is_ignored_and_rewritten() {
    let engine = load();
    let dir = tempfile::tempdir().unwrap();
    let cache = PromptCache::new(dir.path());
    run(&engine, Some(&cache), "physics");
    let [physics] = cache_files(dir.path()).try_into().unwrap();
    let cold = run(&engine, Some(&cache), "history");
    let history = cache_files(dir.path())
        .into_iter()
        .find(|p| *p != physics)
        .unwrap();
    let history_bytes = std::fs::read(&history).unwrap();

    // The physics state under the history prefix's name: a valid file, for another key.
    std::fs::copy(&physics, &history).unwrap();
    let again = run(&engine, Some(&cache), "history");
    assert_eq!(again.stats.restored_tokens, 0, "a foreign file was trusted");
    assert_eq!(again.text, cold.text);
    assert_eq!(std::fs::read(&history).unwrap(), history_bytes);

    let warm = run(&engine, Some(&cache), "history");
    assert!(warm.stats.restored_tokens > 0);
    assert_eq!(warm.text, cold.text);
}

#[test]
fn the_size_bound_evicts_the_least_recently_used_file() {
    let engine = load();
    let scratch = tempfile::tempdir().unwrap();
    let unbounded = PromptCache::new(scratch.path());
    // Each prefix's file size, measured on its own.
    let mut sizes = Vec::new();
    for topic in ["art", "music", "poetry"] {
        run(&engine, Some(&unbounded), topic);
        let newest = cache_files(scratch.path())
            .into_iter()
            .map(|p| (std::fs::metadata(&p).unwrap().len(), p))
            .filter(|(_, p)| !sizes.iter().any(|(_, q): &(u64, PathBuf)| q == p))
            .collect::<Vec<_>>();
        assert_eq!(newest.len(), 1);
        sizes.push(newest[0].clone());
    }
    let names: Vec<_> = sizes.iter().map(|(_, p)| p.file_name().unwrap()).collect();

    // Room for two files: storing the third evicts the least recently used one.
    let dir = tempfile::tempdir().unwrap();
    let bound = sizes[1].0 + sizes[2].0;
    let cache = PromptCache::new(dir.path()).with_max_bytes(bound);
    run(&engine, Some(&cache), "art");
    run(&engine, Some(&cache), "music");
    let listed = |dir: &Path| -> Vec<_> {
        cache_files(dir)
            .into_iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect()
    };
    assert_eq!(listed(dir.path()).len(), 2);
    run(&engine, Some(&cache), "poetry");
    let left = listed(dir.path());
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(!left.contains(&names[0].to_owned()), "art was oldest");
    assert!(left.contains(&names[1].to_owned()) && left.contains(&names[2].to_owned()));
    let total: u64 = cache_files(dir.path())
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(total <= bound);
    assert_eq!(cache.max_bytes(), bound);
}

/// The key covers the model file: the same prefix on a model file that changed since (a new
/// modification time here) is evaluated again, never served another file's state.
#[test]
fn a_changed_model_file_does_not_get_the_old_state() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.gguf");
    std::fs::copy(common::smollm2(), &model).unwrap();
    let cache = PromptCache::new(dir.path().join("cache"));
    let before = Engine::load(&model, &LoadOptions::default()).unwrap();
    let cold = run(&before, Some(&cache), "geology");
    let warm = run(&before, Some(&cache), "geology");
    assert!(warm.stats.restored_tokens > 0, "{:?}", warm.stats);
    drop(before);

    let file = std::fs::File::options().write(true).open(&model).unwrap();
    file.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400))
        .unwrap();
    drop(file);
    let after = Engine::load(&model, &LoadOptions::default()).unwrap();
    let again = run(&after, Some(&cache), "geology");
    assert_eq!(
        again.stats.restored_tokens, 0,
        "a changed model got the old state"
    );
    assert_eq!(again.text, cold.text);
    assert_eq!(cache_files(cache.dir()).len(), 2);
}
