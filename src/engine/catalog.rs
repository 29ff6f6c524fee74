//! Model names to GGUF files on disk: a path, `hf:OWNER/REPO/FILE.gguf`, or an alias from
//! `models/catalog.json`. Downloads go through `hf-hub` into the shared Hugging Face cache, with a
//! progress bar and resume; a cached file is used without touching the network.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The catalog shipped with the binary.
const CATALOG_JSON: &str = include_str!("../../models/catalog.json");

/// The alias used when `--model` is not given.
pub const DEFAULT_MODEL: &str = "llama3.2-1b";

/// What a catalog model is for.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// A chat model (`--model`).
    #[default]
    Chat,
    /// An embedding model for the vault server (`--embedding-model`).
    Embedding,
}

/// One catalog entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct CatalogEntry {
    /// One line for `recall models`.
    pub description: String,
    /// What it is for (`chat` when the entry does not say).
    #[serde(default)]
    pub kind: ModelKind,
    /// Hugging Face repository.
    pub repo: String,
    /// File in that repository (also the name looked for in the local models folder).
    pub file: String,
    /// Size in bytes, when known.
    #[serde(default)]
    pub size: Option<u64>,
    /// SHA-256 of the file, when known.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// Every alias the catalog knows, sorted by name.
pub fn catalog() -> BTreeMap<String, CatalogEntry> {
    serde_json::from_str(CATALOG_JSON).expect("models/catalog.json is valid (checked by a test)")
}

/// Where a model name points.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSource {
    /// A file given by path.
    Path(PathBuf),
    /// A file in a Hugging Face repository.
    Hub {
        /// `OWNER/REPO`.
        repo: String,
        /// File name in the repository.
        file: String,
        /// The catalog's size and checksum, when the name was an alias.
        expected: Option<CatalogEntry>,
    },
}

/// Why a model could not be found or fetched.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The name is neither a path, nor `hf:…`, nor an alias.
    #[error(
        "unknown model '{name}': give a path to a .gguf file, hf:OWNER/REPO/FILE.gguf, or one of: {known}"
    )]
    Unknown {
        /// The name as given.
        name: String,
        /// Known aliases, comma-separated.
        known: String,
    },
    /// A chat model's alias given as the embedding model.
    #[error(
        "'{name}' is a chat model; --embedding-model takes a GGUF embedding model: a path, hf:OWNER/REPO/FILE.gguf, or one of: {known}"
    )]
    NotAnEmbeddingModel {
        /// The alias as given.
        name: String,
        /// The embedding models' aliases, comma-separated.
        known: String,
    },
    /// An embedding model's alias given as the chat model.
    #[error(
        "'{name}' is an embedding model (for --embedding-model); --model takes a chat model: a path, hf:OWNER/REPO/FILE.gguf, or one of: {known}"
    )]
    NotAChatModel {
        /// The alias as given.
        name: String,
        /// The chat models' aliases, comma-separated.
        known: String,
    },
    /// `hf:` with the wrong shape.
    #[error("bad model reference '{0}': expected hf:OWNER/REPO/FILE.gguf")]
    BadHubRef(String),
    /// Offline and not cached.
    #[error(
        "{repo}/{file} is not in the Hugging Face cache and HF_HUB_OFFLINE is set: run once with network access, or pass --model PATH.gguf"
    )]
    NotCached {
        /// Repository.
        repo: String,
        /// File.
        file: String,
    },
    /// The download failed.
    #[error(
        "cannot download {repo}/{file}: {reason} (check the network or proxy, or pass --model PATH.gguf; for the test model run scripts/fetch-test-model)"
    )]
    Download {
        /// Repository.
        repo: String,
        /// File.
        file: String,
        /// What the hub client said.
        reason: String,
    },
    /// The file is not what the catalog says.
    #[error("{path} does not match the catalog ({reason}); delete it and fetch again")]
    Mismatch {
        /// The file on disk.
        path: String,
        /// Size or checksum difference.
        reason: String,
    },
}

/// Folders searched for a catalog file before the hub: the local models folders the vault
/// server's embedding model is found in too ([`obsidian_kb::models::local_dirs`]).
pub fn local_model_dirs() -> Vec<PathBuf> {
    obsidian_kb::models::local_dirs()
}

/// Parses a model name without touching the disk or network.
pub fn parse_model_name(name: &str) -> Result<ModelSource, CatalogError> {
    if let Some(rest) = name.strip_prefix("hf:") {
        let parts: Vec<&str> = rest.splitn(3, '/').collect();
        return match parts.as_slice() {
            [owner, repo, file] if !owner.is_empty() && !repo.is_empty() && !file.is_empty() => {
                Ok(ModelSource::Hub {
                    repo: format!("{owner}/{repo}"),
                    file: (*file).to_string(),
                    expected: None,
                })
            }
            _ => Err(CatalogError::BadHubRef(name.to_string())),
        };
    }
    if let Some(entry) = catalog().get(name) {
        return Ok(ModelSource::Hub {
            repo: entry.repo.clone(),
            file: entry.file.clone(),
            expected: Some(entry.clone()),
        });
    }
    let path = PathBuf::from(name);
    if name.ends_with(".gguf") || path.exists() {
        return Ok(ModelSource::Path(path));
    }
    Err(CatalogError::Unknown {
        name: name.to_string(),
        known: catalog().keys().cloned().collect::<Vec<_>>().join(", "),
    })
}

/// Resolves a chat model name to a file on disk, downloading it if needed (with a progress bar
/// when `progress` is set).
pub fn resolve_model(name: &str, progress: bool) -> Result<PathBuf, CatalogError> {
    resolve(name, ModelKind::Chat, progress)
}

/// Resolves an embedding model name: a path to a GGUF, `hf:OWNER/REPO/FILE.gguf`, or an
/// embedding alias of the catalog (fetched into the shared Hugging Face cache like a chat
/// model, offline once cached). A chat model's alias is refused rather than loaded as an
/// embedder.
pub fn resolve_embedding_model(name: &str, progress: bool) -> Result<PathBuf, CatalogError> {
    resolve(name, ModelKind::Embedding, progress)
}

/// The aliases of one kind, comma-separated (for error messages).
fn aliases_of(kind: ModelKind) -> String {
    catalog()
        .into_iter()
        .filter(|(_, entry)| entry.kind == kind)
        .map(|(alias, _)| alias)
        .collect::<Vec<_>>()
        .join(", ")
}

fn resolve(name: &str, kind: ModelKind, progress: bool) -> Result<PathBuf, CatalogError> {
    let (repo, file, expected) = match parse_model_name(name)? {
        ModelSource::Path(path) => return Ok(path),
        ModelSource::Hub {
            repo,
            file,
            expected,
        } => (repo, file, expected),
    };
    if let Some(entry) = &expected
        && entry.kind != kind
    {
        let name = name.to_string();
        let known = aliases_of(kind);
        return Err(match kind {
            ModelKind::Chat => CatalogError::NotAChatModel { name, known },
            ModelKind::Embedding => CatalogError::NotAnEmbeddingModel { name, known },
        });
    }
    if expected.is_some() {
        for dir in local_model_dirs() {
            let candidate = dir.join(&file);
            if candidate.is_file() {
                check_size(&candidate, expected.as_ref())?;
                return Ok(candidate);
            }
        }
    }
    let cache = hf_hub::Cache::from_env();
    if let Some(path) = cache.model(repo.clone()).get(&file) {
        check_size(&path, expected.as_ref())?;
        return Ok(path);
    }
    if hub_offline() {
        return Err(CatalogError::NotCached { repo, file });
    }
    let download_error = |reason: String| CatalogError::Download {
        repo: repo.clone(),
        file: file.clone(),
        reason,
    };
    let mut builder = hf_hub::api::sync::ApiBuilder::from_cache(cache);
    // A mirror, as the Python hub client and other tools take it.
    if let Ok(endpoint) = std::env::var("HF_ENDPOINT")
        && !endpoint.is_empty()
    {
        builder = builder.with_endpoint(endpoint.trim_end_matches('/').to_string());
    }
    let api = builder
        .with_progress(false)
        .with_retries(3)
        .build()
        .map_err(|e| download_error(e.to_string()))?;
    let bar = DownloadBar::new(progress);
    let path = api
        .model(repo.clone())
        .download_with_progress(&file, bar)
        .map_err(|e| download_error(e.to_string()))?;
    check_size(&path, expected.as_ref())?;
    if let Some(sha) = expected.as_ref().and_then(|e| e.sha256.as_deref()) {
        check_sha256(&path, sha)?;
    }
    Ok(path)
}

fn hub_offline() -> bool {
    std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

fn check_size(path: &Path, expected: Option<&CatalogEntry>) -> Result<(), CatalogError> {
    let Some(size) = expected.and_then(|e| e.size) else {
        return Ok(());
    };
    let actual = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if actual != size {
        return Err(CatalogError::Mismatch {
            path: path.display().to_string(),
            reason: format!("{actual} bytes, expected {size}"),
        });
    }
    Ok(())
}

/// Checks a file's SHA-256 (lowercase hex).
pub fn check_sha256(path: &Path, expected: &str) -> Result<(), CatalogError> {
    let mismatch = |reason: String| CatalogError::Mismatch {
        path: path.display().to_string(),
        reason,
    };
    let mut file = std::fs::File::open(path).map_err(|e| mismatch(e.to_string()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| mismatch(e.to_string()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let actual: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if actual != expected {
        return Err(mismatch(format!("sha256 {actual}, expected {expected}")));
    }
    Ok(())
}

/// A download progress bar on stderr, or nothing when output is not a terminal.
struct DownloadBar(Option<indicatif::ProgressBar>);

impl DownloadBar {
    fn new(show: bool) -> DownloadBar {
        DownloadBar(show.then(|| indicatif::ProgressBar::new(0)))
    }
}

impl hf_hub::api::Progress for DownloadBar {
    fn init(&mut self, size: usize, filename: &str) {
        if let Some(bar) = &self.0 {
            bar.set_length(size as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .expect("static template is valid"),
            );
            bar.set_message(filename.to_string());
        }
    }

    fn update(&mut self, size: usize) {
        if let Some(bar) = &self.0 {
            bar.inc(size as u64);
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parses_and_has_the_required_aliases() {
        let catalog = catalog();
        for alias in ["llama3.2-1b", "llama3.2-3b", "smollm2-135m"] {
            assert!(catalog.contains_key(alias), "{alias} missing");
        }
        assert!(catalog.contains_key(DEFAULT_MODEL));
    }

    #[test]
    fn aliases_are_for_their_own_kind_of_model() {
        let catalog = catalog();
        for alias in ["bge-small-en-v1.5", "granite-embedding-multilingual"] {
            assert_eq!(catalog[alias].kind, ModelKind::Embedding, "{alias}");
        }
        assert_eq!(catalog[DEFAULT_MODEL].kind, ModelKind::Chat);
        // Refused before any lookup on disk or on the hub.
        let err = resolve_embedding_model("llama3.2-1b", false).unwrap_err();
        assert!(
            matches!(err, CatalogError::NotAnEmbeddingModel { .. })
                && err.to_string().contains("bge-small-en-v1.5"),
            "{err}"
        );
        let err = resolve_model("bge-small-en-v1.5", false).unwrap_err();
        assert!(
            matches!(err, CatalogError::NotAChatModel { .. })
                && err.to_string().contains("llama3.2-1b"),
            "{err}"
        );
    }

    #[test]
    fn embedding_aliases_are_the_vault_server_own() {
        // `obsidian-kb --embedding-model ALIAS` looks in the cache where `recall` downloads it.
        let ours: Vec<(String, String, String)> = catalog()
            .into_iter()
            .filter(|(_, entry)| entry.kind == ModelKind::Embedding)
            .map(|(alias, entry)| (alias, entry.repo, entry.file))
            .collect();
        let mut server: Vec<(String, String, String)> = obsidian_kb::models::KNOWN_MODELS
            .iter()
            .map(|m| (m.alias.into(), m.repo.into(), m.file.into()))
            .collect();
        server.sort();
        assert_eq!(ours, server);
    }

    #[test]
    fn parses_hub_references() {
        assert_eq!(
            parse_model_name("hf:bartowski/Llama-3.2-1B-Instruct-GGUF/x/y.gguf").unwrap(),
            ModelSource::Hub {
                repo: "bartowski/Llama-3.2-1B-Instruct-GGUF".into(),
                file: "x/y.gguf".into(),
                expected: None
            }
        );
        assert!(matches!(
            parse_model_name("hf:owner/repo"),
            Err(CatalogError::BadHubRef(_))
        ));
    }

    #[test]
    fn unknown_names_list_the_aliases() {
        let err = parse_model_name("llama9").unwrap_err().to_string();
        assert!(err.contains("llama3.2-1b"), "{err}");
    }

    #[test]
    fn paths_are_paths() {
        assert_eq!(
            parse_model_name("/nowhere/m.gguf").unwrap(),
            ModelSource::Path("/nowhere/m.gguf".into())
        );
    }
}
