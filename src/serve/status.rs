//! `GET /v1/recall/status`: what `recall serve` runs on (the model, the vault, its index and
//! how far the index's embedding has come) and how its turns go, for the page's header and
//! for any client that wants to say why search is still by words.
//!
//! The worker keeps the figures current on a shared [`Board`] (the index between turns, once a
//! second while idle, since reading it goes through the vault server); the HTTP side only
//! reads them, so the answer never waits for a turn.

use std::sync::{Arc, PoisonError, RwLock};

use obsidian_kb::api;
use serde::Serialize;

/// The figures, shared between the worker (writes) and the HTTP side (reads).
#[derive(Debug, Clone, Default)]
pub struct Board(Arc<RwLock<Status>>);

impl Board {
    pub fn new(status: Status) -> Board {
        Board(Arc::new(RwLock::new(status)))
    }

    /// A copy of the figures now.
    pub fn read(&self) -> Status {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Changes the figures.
    pub fn update(&self, change: impl FnOnce(&mut Status)) {
        change(&mut self.0.write().unwrap_or_else(PoisonError::into_inner));
    }
}

/// The body of `GET /v1/recall/status`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    pub model: ModelStatus,
    /// The bundled vault server's vault; absent when no server offers the vault tools.
    pub vault: Option<VaultStatus>,
    pub turns: TurnStatus,
}

/// The model that answers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelStatus {
    /// The model's own name (`general.name`), or its file's.
    pub name: String,
    /// The GGUF file's name (never its folder: the page may be seen from another machine).
    pub file: String,
    /// Parameter count.
    pub parameters: u64,
    /// Tokens of context each turn has.
    pub context: usize,
}

/// The vault searched.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VaultStatus {
    /// The vault folder's name (never its path), or the vault server's configured name.
    pub name: String,
    /// The vault server's own status (notes, ranking, embedding progress); absent until it has
    /// been read, or while the server does not answer.
    pub index: Option<api::Status>,
}

/// How the turns go.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnStatus {
    /// Turns answered since the server started.
    pub answered: u64,
    /// A turn is running now.
    pub busy: bool,
    /// The study work running now and how far it is ("summarizing Projects: part 2 of 5").
    pub doing: Option<String>,
    /// Requests waiting for the model.
    pub waiting: usize,
    /// How long the last turn took, in seconds.
    pub last_seconds: Option<f64>,
}
