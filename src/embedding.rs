//! Search by meaning made ready before a model answers, seen through the vault server's status
//! resource.
//!
//! The vault server searches by words until every passage has a vector (a meaning ranking over
//! part of a vault ranked worse than words alone), and embeds in the background at idle
//! priority, so it never slows the model. [`prepare`] watches that: `recall index` waits for
//! all of it; a model command waits only when the server expects to be done within
//! `--embedding-wait` (default 60 s), or when a few dozen passages are left (waited for up to
//! that bound), with the same progress bar, and otherwise answers by words at once and says
//! so ([`say`]). About a minute is worth waiting for answers as good as the steady state's (a
//! vault of a few hundred notes on 2 cores); a cold vault of thousands of notes is not.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use obsidian_kb::api::{self, EmbeddingState, EmbeddingStatus};

use crate::engine::{CancellationToken, Cancelled};
use crate::mcp::McpManager;
use crate::vault::VaultTools;

/// How long a model command waits for the embedding model to load and the passages to be
/// counted (a second or two, normally) before it answers by words.
const LOADING_BOUND: Duration = Duration::from_secs(20);
/// How long a model command waits for the server's first estimate of the time left (one
/// batch of passages).
const ESTIMATE_BOUND: Duration = Duration::from_secs(10);
/// Passages left that a model command waits for (up to its bound) before the server has an
/// estimate: a few of the server's 16-passage batches, seconds of work on 2 cores. Without
/// an estimate a large rest is not waited for, but the estimate of a small one comes only
/// when it is nearly done, and on a busy machine (the embedder runs at idle priority) the
/// first batch can take longer than [`ESTIMATE_BOUND`]: a person's first question on a small
/// vault was then answered by words.
const SMALL_REST: usize = 64;
/// How often the status is read.
const POLL: Duration = Duration::from_millis(200);

/// Where search by meaning stands once [`prepare`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// No vault server, or one without an embedding model: search is by words alone.
    WordsOnly,
    /// Every passage has a vector: search is hybrid.
    Ready {
        /// The server's status at the end.
        status: EmbeddingStatus,
        /// Notes in the vault.
        notes: usize,
        /// Passages the server embedded in this run (the rest came from its cache).
        embedded_now: usize,
        /// How long this waited.
        waited: Duration,
    },
    /// Not waited for (too long, or no estimate yet): search is by words until it is done.
    Pending(EmbeddingStatus),
    /// The embedding model did not load, or embedding stopped: search is by words.
    Failed(EmbeddingStatus),
}

/// Watches the vault server's embedding until it is done, or, with `bound`, until it is clear
/// that it will not be done within `bound`. Draws a progress bar on stderr while it waits.
pub fn prepare(
    runtime: &tokio::runtime::Runtime,
    manager: &McpManager,
    cancel: &CancellationToken,
    bound: Option<Duration>,
) -> Result<Readiness, Cancelled> {
    let Some(vault) = VaultTools::find(manager) else {
        return Ok(Readiness::WordsOnly);
    };
    let read = || -> Option<api::Status> {
        let text = runtime
            .block_on(manager.read_resource(&vault.server, api::STATUS_URI))
            .map_err(|e| tracing::info!("no embedding status: {e}"))
            .ok()?;
        serde_json::from_str(&text).ok()
    };
    let started = Instant::now();
    let mut bar: Option<EmbeddingBar> = None;
    loop {
        if cancel.is_cancelled() {
            if let Some(bar) = bar {
                bar.abandon();
            }
            return Err(Cancelled);
        }
        let Some(status) = read() else {
            return Ok(Readiness::WordsOnly);
        };
        let Some(embedding) = status.embedding else {
            return Ok(Readiness::WordsOnly);
        };
        let waited = started.elapsed();
        match embedding.state {
            EmbeddingState::Ready => {
                if let Some(bar) = bar {
                    bar.finish();
                }
                return Ok(Readiness::Ready {
                    embedded_now: embedding.total.saturating_sub(embedding.from_cache),
                    status: embedding,
                    notes: status.notes,
                    waited,
                });
            }
            EmbeddingState::Failed => {
                if let Some(bar) = bar {
                    bar.abandon();
                }
                return Ok(Readiness::Failed(embedding));
            }
            EmbeddingState::Loading => {
                if bound.is_some_and(|b| b.is_zero() || waited >= LOADING_BOUND) {
                    return Ok(Readiness::Pending(embedding));
                }
            }
            EmbeddingState::Embedding => match (&bar, bound, embedding.eta_seconds) {
                (Some(bar), _, _) => bar.update(&embedding),
                (None, None, _) => bar = Some(EmbeddingBar::start(&embedding)),
                (None, Some(bound), _) if bound.is_zero() => {
                    return Ok(Readiness::Pending(embedding));
                }
                (None, Some(bound), Some(eta)) if Duration::from_secs(eta) <= bound => {
                    bar = Some(EmbeddingBar::start(&embedding));
                }
                (None, Some(bound), None)
                    if waited < ESTIMATE_BOUND
                        || (embedding.total.saturating_sub(embedding.passages) <= SMALL_REST
                            && waited < bound) => {}
                (None, Some(_), _) => return Ok(Readiness::Pending(embedding)),
            },
        }
        std::thread::sleep(POLL);
    }
}

/// Tells a person on stderr, in one line, what a model command's search will be like.
pub fn say(readiness: &Readiness) {
    match readiness {
        Readiness::WordsOnly => {}
        Readiness::Ready {
            status,
            embedded_now,
            waited,
            ..
        } if *embedded_now > 0 => eprintln!(
            "recall: search by meaning is ready ({} passages, {embedded_now} embedded in {:.0} s)",
            status.total,
            waited.as_secs_f64()
        ),
        Readiness::Ready { .. } => {}
        Readiness::Pending(status) => eprintln!(
            "recall: search by meaning is still being prepared ({} of {} passages{}); \
             answering by words now. `recall index` finishes it.",
            status.passages,
            status.total,
            status
                .eta_seconds
                .map(|s| format!(", about {} left", minutes(s)))
                .unwrap_or_default()
        ),
        Readiness::Failed(status) => eprintln!(
            "recall: search by meaning is off ({}); answering by words",
            status
                .error
                .as_deref()
                .unwrap_or("the embedding model failed")
        ),
    }
}

/// Seconds as a person reads a wait: "40 s", "3 min", "1 h 5 min".
fn minutes(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min", seconds.div_ceil(60)),
        _ => format!("{} h {} min", seconds / 3600, (seconds % 3600) / 60),
    }
}

/// The embedding's progress on stderr: a bar on a terminal, else a line when it starts.
struct EmbeddingBar(Option<indicatif::ProgressBar>);

impl EmbeddingBar {
    fn start(status: &EmbeddingStatus) -> EmbeddingBar {
        if !std::io::stderr().is_terminal() {
            eprintln!(
                "recall: embedding the vault for search by meaning: {} of {} passages left{}",
                status.total.saturating_sub(status.passages),
                status.total,
                status
                    .eta_seconds
                    .map(|s| format!(", about {}", minutes(s)))
                    .unwrap_or_default()
            );
            return EmbeddingBar(None);
        }
        let bar = indicatif::ProgressBar::new(status.total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "embedding the vault {bar:30} {pos}/{len} passages {per_sec} eta {eta}",
            )
            .expect("static template is valid"),
        );
        bar.set_position(status.passages as u64);
        bar.reset_eta();
        EmbeddingBar(Some(bar))
    }

    fn update(&self, status: &EmbeddingStatus) {
        if let Some(bar) = &self.0 {
            bar.set_length(status.total as u64);
            bar.set_position(status.passages as u64);
        }
    }

    fn finish(self) {
        if let Some(bar) = self.0 {
            bar.finish_and_clear();
        }
    }

    fn abandon(self) {
        if let Some(bar) = self.0 {
            bar.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_read_as_a_person_reads_them() {
        assert_eq!(minutes(40), "40 s");
        assert_eq!(minutes(61), "2 min");
        assert_eq!(minutes(27 * 60), "27 min");
        assert_eq!(minutes(3600 + 5 * 60), "1 h 5 min");
    }
}
