//! A bench's memory of the model's words: a [`ChatModel`] that answers a request it has seen
//! before from a folder of records, and passes any other to the model it wraps, recording what
//! that says.
//!
//! Greedy decoding on one build is deterministic, so a change made after the model's words
//! (a check, a citation rule) re-scores a question set in seconds, and only prompts the change
//! touched meet the model. The key is the exact prompt, the request's settings and the model
//! file. For benches only (`--replay DIR`, hidden): recall never answers a person from it.

use std::fmt::Write as _;
use std::fs;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{
    ChatModel, Chosen, Completion, EngineError, GenerateRequest, GenerationStats, StopReason,
    TokenScore,
};

/// A model whose generations, choices and scores are kept in `dir`, one JSON file a request.
pub struct Replay<M> {
    inner: M,
    dir: PathBuf,
    /// What tells the model apart: its file and size.
    model: String,
}

impl<M: ChatModel> Replay<M> {
    /// `inner` replayed from and recorded to `dir` (created when missing), its records keyed
    /// by `model` as well as by each request.
    pub fn new(inner: M, dir: &Path, model: String) -> Result<Self, EngineError> {
        fs::create_dir_all(dir)
            .map_err(|e| EngineError::Backend(format!("replay folder {}: {e}", dir.display())))?;
        Ok(Replay {
            inner,
            dir: dir.to_path_buf(),
            model,
        })
    }

    /// The model it wraps.
    pub fn inner_mut(&mut self) -> &mut M {
        &mut self.inner
    }

    /// The record file of one request: a hash of everything its result depends on.
    fn path(&self, what: &str, prompt: &str, request: &GenerateRequest, extra: &str) -> PathBuf {
        let mut key = String::new();
        let _ = write!(
            key,
            "{what}\0{}\0{prompt}\0{extra}\0{}\0{:?}\0{:?}\0{:?}",
            self.model, request.max_tokens, request.sampling, request.stop, request.constraint
        );
        let hash = Sha256::digest(key.as_bytes());
        let name: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }
}

/// One generation as recorded: its text in the pieces it streamed in.
#[derive(Serialize, Deserialize)]
struct Generated {
    pieces: Vec<String>,
    stop: Ended,
    prompt_tokens: usize,
    evaluated_tokens: usize,
    generated_tokens: usize,
    prompt_ms: u64,
    generation_ms: u64,
}

/// How a recorded generation ended ([`StopReason`], less a cancellation).
#[derive(Serialize, Deserialize, PartialEq)]
enum Ended {
    EndOfTurn,
    EndOfMessage,
    StopString(String),
    MaxTokens,
    ContextFull,
    StoppedByCaller,
}

impl Ended {
    fn of(stop: &StopReason) -> Option<Ended> {
        Some(match stop {
            StopReason::EndOfTurn => Ended::EndOfTurn,
            StopReason::EndOfMessage => Ended::EndOfMessage,
            StopReason::StopString(s) => Ended::StopString(s.clone()),
            StopReason::MaxTokens => Ended::MaxTokens,
            StopReason::ContextFull => Ended::ContextFull,
            StopReason::StoppedByCaller => Ended::StoppedByCaller,
            // A cancelled generation is nobody's answer: never kept.
            StopReason::Cancelled => return None,
        })
    }

    fn reason(self) -> StopReason {
        match self {
            Ended::EndOfTurn => StopReason::EndOfTurn,
            Ended::EndOfMessage => StopReason::EndOfMessage,
            Ended::StopString(s) => StopReason::StopString(s),
            Ended::MaxTokens => StopReason::MaxTokens,
            Ended::ContextFull => StopReason::ContextFull,
            Ended::StoppedByCaller => StopReason::StoppedByCaller,
        }
    }
}

impl Generated {
    fn completion(self, text: String) -> Completion {
        Completion {
            text,
            stop: self.stop.reason(),
            stats: GenerationStats {
                prompt_tokens: self.prompt_tokens,
                reused_tokens: self.prompt_tokens.saturating_sub(self.evaluated_tokens),
                evaluated_tokens: self.evaluated_tokens,
                generated_tokens: self.generated_tokens,
                prompt_time: Duration::from_millis(self.prompt_ms),
                generation_time: Duration::from_millis(self.generation_ms),
                ..GenerationStats::default()
            },
        }
    }
}

/// One choice as recorded.
#[derive(Serialize, Deserialize)]
struct Chose {
    generated: Generated,
    text: String,
    odds: Vec<f32>,
}

/// One scored text as recorded (`None`: the model scores nothing).
#[derive(Serialize, Deserialize)]
struct Scored(Option<Vec<(String, f32)>>);

impl<M: ChatModel> ChatModel for Replay<M> {
    fn generate(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion, EngineError> {
        let path = self.path("generate", prompt, request, "");
        if let Some(generated) = read::<Generated>(&path) {
            // Replayed piece by piece, as streamed. A record the caller stopped that this
            // caller reads to its end is not the whole reply: generated again below.
            let mut text = String::new();
            let mut stopped = false;
            for piece in &generated.pieces {
                text.push_str(piece);
                if on_text(piece).is_break() {
                    stopped = true;
                    break;
                }
            }
            if stopped || generated.stop != Ended::StoppedByCaller {
                let mut completion = generated.completion(text);
                if stopped {
                    completion.stop = StopReason::StoppedByCaller;
                }
                return Ok(completion);
            }
            return self.generate_again(prompt, request, &text, &path, on_text);
        }
        let mut pieces = Vec::new();
        let completion = self.inner.generate(prompt, request, &mut |piece| {
            pieces.push(piece.to_string());
            on_text(piece)
        })?;
        keep(&path, pieces, &completion);
        Ok(completion)
    }

    fn choose(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        choices: &[&str],
    ) -> Result<Chosen, EngineError> {
        let path = self.path("choose", prompt, request, &choices.join("\0"));
        if let Some(chose) = read::<Chose>(&path) {
            return Ok(Chosen {
                completion: chose.generated.completion(chose.text),
                odds: chose.odds,
            });
        }
        let chosen = self.inner.choose(prompt, request, choices)?;
        if let Some(generated) = recorded(vec![chosen.completion.text.clone()], &chosen.completion)
        {
            write(
                &path,
                &Chose {
                    generated,
                    text: chosen.completion.text.clone(),
                    odds: chosen.odds.clone(),
                },
            );
        }
        Ok(chosen)
    }

    fn score(
        &mut self,
        prompt: &str,
        continuation: &str,
        request: &GenerateRequest,
    ) -> Result<Option<Vec<TokenScore>>, EngineError> {
        let path = self.path("score", prompt, request, continuation);
        if let Some(Scored(scores)) = read::<Scored>(&path) {
            return Ok(scores.map(|scores| {
                scores
                    .into_iter()
                    .map(|(text, log_prob)| TokenScore { text, log_prob })
                    .collect()
            }));
        }
        let scores = self.inner.score(prompt, continuation, request)?;
        // A cancelled reading scores nothing; it is not kept.
        if !request.cancel.is_cancelled() {
            let kept = scores
                .as_ref()
                .map(|s| s.iter().map(|t| (t.text.clone(), t.log_prob)).collect());
            write(&path, &Scored(kept));
        }
        Ok(scores)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.inner.count_tokens(text)
    }

    fn context_size(&self) -> usize {
        self.inner.context_size()
    }
}

impl<M: ChatModel> Replay<M> {
    /// A recorded reply that stopped where an earlier caller broke off, read further by this
    /// one: generated again for real (the pieces already passed on are not passed again).
    fn generate_again(
        &mut self,
        prompt: &str,
        request: &GenerateRequest,
        shown: &str,
        path: &Path,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Completion, EngineError> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let completion = self.inner.generate(prompt, request, &mut |piece| {
            pieces.push(piece.to_string());
            let before = text.len();
            text.push_str(piece);
            // Only what goes past the replayed text is new to the caller.
            match text.len() <= shown.len() {
                true => ControlFlow::Continue(()),
                false => on_text(text.get(before.max(shown.len())..).unwrap_or(piece)),
            }
        })?;
        keep(path, pieces, &completion);
        Ok(completion)
    }
}

/// Keeps a generation streamed in `pieces` at `path`, unless it was cancelled.
fn keep(path: &Path, pieces: Vec<String>, completion: &Completion) {
    if let Some(generated) = recorded(pieces, completion) {
        write(path, &generated);
    }
}

fn recorded(pieces: Vec<String>, completion: &Completion) -> Option<Generated> {
    let stats = &completion.stats;
    Some(Generated {
        pieces,
        stop: Ended::of(&completion.stop)?,
        prompt_tokens: stats.prompt_tokens,
        evaluated_tokens: stats.evaluated_tokens,
        generated_tokens: stats.generated_tokens,
        prompt_ms: stats.prompt_time.as_millis() as u64,
        generation_ms: stats.generation_time.as_millis() as u64,
    })
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// Keeps `record` at `path`; a record that cannot be written is only not kept.
fn write<T: Serialize>(path: &Path, record: &T) {
    let written = serde_json::to_vec(record)
        .map_err(|e| e.to_string())
        .and_then(|bytes| fs::write(path, bytes).map_err(|e| e.to_string()));
    if let Err(err) = written {
        tracing::warn!("replay record {} not kept: {err}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scripted::ScriptedModel;

    fn replay(model: ScriptedModel, dir: &Path) -> Replay<ScriptedModel> {
        Replay::new(model, dir, "model.gguf:1".to_string()).unwrap()
    }

    fn collect(model: &mut impl ChatModel, prompt: &str, request: &GenerateRequest) -> String {
        let mut streamed = String::new();
        let completion = model
            .generate(prompt, request, &mut |piece| {
                streamed.push_str(piece);
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(streamed, completion.text);
        streamed
    }

    #[test]
    fn a_request_seen_before_is_answered_from_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let request = GenerateRequest::greedy(16);
        let scripted =
            ScriptedModel::new(["Monday [1].", "Tuesday [2]."], 4096).with_scores([-0.5]);
        let mut first = replay(scripted, dir.path());
        assert_eq!(collect(&mut first, "When?", &request), "Monday [1].");
        let scores = first.score("When?", "Monday", &request).unwrap().unwrap();

        // A model with no replies left: only the records can answer.
        let mut again = replay(ScriptedModel::new(Vec::<String>::new(), 4096), dir.path());
        assert_eq!(collect(&mut again, "When?", &request), "Monday [1].");
        assert_eq!(
            again.score("When?", "Monday", &request).unwrap().unwrap(),
            scores
        );
        // Another prompt, other settings or another model file is another request.
        assert!(
            again
                .generate("When, then?", &request, &mut |_| ControlFlow::Continue(()))
                .is_err()
        );
        let longer = GenerateRequest::greedy(32);
        assert!(
            again
                .generate("When?", &longer, &mut |_| ControlFlow::Continue(()))
                .is_err()
        );
        let mut other = Replay::new(
            ScriptedModel::new(Vec::<String>::new(), 4096),
            dir.path(),
            "other.gguf:1".to_string(),
        )
        .unwrap();
        assert!(
            other
                .generate("When?", &request, &mut |_| ControlFlow::Continue(()))
                .is_err()
        );
    }

    #[test]
    fn a_replayed_reply_stops_where_its_reader_does() {
        let dir = tempfile::tempdir().unwrap();
        let request = GenerateRequest::greedy(16);
        let mut first = replay(ScriptedModel::new(["Monday [1]."], 4096), dir.path());
        collect(&mut first, "When?", &request);
        let mut again = replay(ScriptedModel::new(Vec::<String>::new(), 4096), dir.path());
        let completion = again
            .generate("When?", &request, &mut |_| ControlFlow::Break(()))
            .unwrap();
        assert_eq!(completion.stop, StopReason::StoppedByCaller);
        assert_eq!(completion.text, "Monday [1].");
    }
}
