//! The OpenAI chat-completions wire format, as far as `recall serve` speaks it: the request it
//! reads, the responses and stream chunks it writes, and the error shape. Plain serde types;
//! nothing here knows about the agent.
//!
//! Fields a client sends that Recall has no use for (`tools`, `response_format`, `n`, …) are
//! ignored rather than refused: plugins send whatever their settings hold.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sources::Citation;

/// The one model id `recall serve` offers: the vault agent, whatever GGUF runs it.
pub const MODEL_ID: &str = "recall";

/// `POST /v1/chat/completions`.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    /// The conversation; its last user message is the question.
    pub messages: Vec<RequestMessage>,
    /// Stream the answer as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Bounds the answer's tokens (`max_completion_tokens` is the newer name of the same).
    pub max_tokens: Option<usize>,
    pub max_completion_tokens: Option<usize>,
    /// Sampling; absent: the server's own settings (its `--temp`, `--top-p`, `--seed`).
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u32>,
}

/// One message of a request.
#[derive(Debug, Deserialize)]
pub struct RequestMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, a list of content parts, or null (an assistant message with tool calls).
    #[serde(default)]
    pub content: Value,
}

impl RequestMessage {
    /// The message's text: a string as it is, the text parts of a list joined by newlines
    /// (images and other parts have no text to give), null as empty.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

/// `GET /v1/models`.
#[derive(Debug, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<Model>,
}

/// One entry of [`ModelList`].
#[derive(Debug, Serialize)]
pub struct Model {
    pub id: &'static str,
    pub object: &'static str,
    /// Unix seconds: when this server started.
    pub created: i64,
    pub owned_by: &'static str,
}

impl Model {
    /// The vault agent.
    pub fn recall(created: i64) -> Model {
        Model {
            id: MODEL_ID,
            object: "model",
            created,
            owned_by: "recall",
        }
    }
}

/// The reply to a request without `stream`.
#[derive(Debug, Serialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: i64,
    pub model: &'static str,
    pub choices: Vec<Choice>,
    pub usage: Usage,
    /// Recall's extension: the answer's sources as data (see [`RecallExtension`]).
    pub recall: RecallExtension,
}

/// The one choice of a [`ChatCompletion`].
#[derive(Debug, Serialize)]
pub struct Choice {
    pub index: u32,
    pub message: ResponseMessage,
    pub finish_reason: &'static str,
}

/// The assistant's message.
#[derive(Debug, Serialize)]
pub struct ResponseMessage {
    pub role: &'static str,
    pub content: String,
}

/// Token counts of a whole turn (every step the agent ran, not only the answer's).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

impl Usage {
    /// Counts that add up.
    pub fn new(prompt_tokens: usize, completion_tokens: usize) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        }
    }
}

/// What Recall adds to a completion, under the key `recall`: the sources the answer cites (or,
/// when it cites none, those it was given, with `cited: false`), and whether the best passages
/// were quoted because the model gave no real answer. Clients that do not know the key ignore
/// it; the same sources are in the content as Markdown links.
#[derive(Debug, Clone, Serialize)]
pub struct RecallExtension {
    pub citations: Vec<Citation>,
    pub fallback: bool,
}

/// One server-sent event of a streamed reply.
#[derive(Debug, Serialize)]
pub struct ChatChunk {
    pub id: String,
    pub object: &'static str,
    pub created: i64,
    pub model: &'static str,
    pub choices: Vec<ChunkChoice>,
    /// On the last chunk only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// On the last chunk only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<RecallExtension>,
}

/// The one choice of a [`ChatChunk`].
#[derive(Debug, Serialize)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub finish_reason: Option<&'static str>,
}

/// What a chunk adds to the message.
#[derive(Debug, Default, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// OpenAI's error body: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

impl ErrorBody {
    /// An error of `kind` (`invalid_request_error`, `server_error`, …) saying `message`.
    pub fn new(kind: &'static str, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                message: message.into(),
                kind,
                param: None,
                code: None,
            },
        }
    }
}

/// The inside of an [`ErrorBody`].
#[derive(Debug, Serialize)]
pub struct ErrorDetail {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(json: &str) -> RequestMessage {
        serde_json::from_str(json).expect("a message")
    }

    #[test]
    fn a_message_is_read_from_a_string_from_text_parts_or_from_null() {
        assert_eq!(message(r#"{"role":"user","content":"Hi"}"#).text(), "Hi");
        let parts = r#"{"role":"user","content":[{"type":"text","text":"What is"},
            {"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"Sync?"}]}"#;
        assert_eq!(message(parts).text(), "What is\nSync?");
        assert_eq!(message(r#"{"role":"assistant","content":null}"#).text(), "");
        assert_eq!(message(r#"{"role":"assistant"}"#).text(), "");
    }

    #[test]
    fn fields_recall_does_not_use_are_ignored() {
        let request: ChatRequest = serde_json::from_str(
            r#"{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}],
                "tools":[],"n":1,"stream_options":{"include_usage":true},"max_tokens":64}"#,
        )
        .expect("a request");
        assert_eq!(request.max_tokens, Some(64));
        assert!(!request.stream);
    }
}
