//! `recall models`: the catalog's aliases and where each model would come from.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use crate::engine::catalog;

/// `recall models`: the catalog and where each model would come from.
pub fn models() -> Result<()> {
    let mut out = std::io::stdout().lock();
    for (alias, entry) in catalog::catalog() {
        let local = catalog::local_model_dirs()
            .into_iter()
            .map(|d| d.join(&entry.file))
            .find(|p| p.is_file());
        let cached = hf_cached(&entry.repo, &entry.file);
        let place = match (local, cached) {
            (Some(p), _) => format!("local: {}", p.display()),
            (None, Some(_)) => "in the Hugging Face cache".to_string(),
            (None, None) => format!("downloads from hf:{}/{}", entry.repo, entry.file),
        };
        let default = match entry.kind {
            _ if alias == catalog::DEFAULT_MODEL => " (default)",
            catalog::ModelKind::Embedding => " (embedding model)",
            catalog::ModelKind::Chat => "",
        };
        writeln!(
            out,
            "{alias}{default}\n    {}\n    {place}",
            entry.description
        )?;
    }
    Ok(())
}

fn hf_cached(repo: &str, file: &str) -> Option<PathBuf> {
    hf_hub::Cache::from_env().model(repo.to_string()).get(file)
}
