//! Renders a conversation into the exact prompt text the model reads, from the minijinja templates
//! in `prompts/` (embedded at compile time, so the binary needs no files at run time).
//!
//! Two renders per turn: the **decision** prompt carries the function-calling instructions and the
//! tool schemas; the **answer** prompt carries the same conversation (calls and their results
//! included) without them. Llama 3.x models use Meta's documented layout (`prompts/llama3/`); any
//! other model uses the chat template embedded in its GGUF, or ChatML when it has none.
//!
//! The study commands' instructions (`prompts/study/`) are templates of the same environment,
//! rendered by [`ChatTemplate::study`] into message text.
//!
//! **Architecture invariant:** only this file imports `minijinja`; special tokens live in the
//! templates, not in Rust strings.

use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

use minijinja::{AutoEscape, Environment, Error as JinjaError, ErrorKind, Value as JinjaValue};
use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::language::Language;
use crate::tool::ToolSpec;

/// Every built-in template, by name. All are compiled (and so syntax-checked) by [`ChatTemplate`].
pub const TEMPLATES: [(&str, &str); 13] = [
    (LLAMA3_CHAT, include_str!("../prompts/llama3/chat.j2")),
    (CHATML, include_str!("../prompts/chatml.j2")),
    (
        TOOL_INSTRUCTIONS,
        include_str!("../prompts/tools/pythonic.j2"),
    ),
    (
        TOOL_RESULT_AS_USER,
        include_str!("../prompts/tools/result_as_user.j2"),
    ),
    (
        ANSWER_INSTRUCTION,
        include_str!("../prompts/agent/answer.j2"),
    ),
    (
        ATTRIBUTION_INSTRUCTION,
        include_str!("../prompts/agent/attribute.j2"),
    ),
    (CHECK_INSTRUCTION, include_str!("../prompts/agent/check.j2")),
    (
        "study/summarize.j2",
        include_str!("../prompts/study/summarize.j2"),
    ),
    ("study/note.j2", include_str!("../prompts/study/note.j2")),
    ("study/quiz.j2", include_str!("../prompts/study/quiz.j2")),
    (
        "study/quiz_note.j2",
        include_str!("../prompts/study/quiz_note.j2"),
    ),
    ("study/grade.j2", include_str!("../prompts/study/grade.j2")),
    (
        "study/grade_user.j2",
        include_str!("../prompts/study/grade_user.j2"),
    ),
];
const LLAMA3_CHAT: &str = "llama3/chat.j2";
const CHATML: &str = "chatml.j2";
const TOOL_INSTRUCTIONS: &str = "tools/pythonic.j2";
const TOOL_RESULT_AS_USER: &str = "tools/result_as_user.j2";
const ANSWER_INSTRUCTION: &str = "agent/answer.j2";
const ATTRIBUTION_INSTRUCTION: &str = "agent/attribute.j2";
const CHECK_INSTRUCTION: &str = "agent/check.j2";
/// Name under which a GGUF's own chat template is registered.
const EMBEDDED: &str = "embedded";

/// The study commands' templates: system messages and user messages of `summarize` and `quiz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StudyPrompt {
    /// System message of a summary.
    Summarize,
    /// A note (or one part of it) to summarize: `title`, `text`, `part`/`parts` for a part,
    /// `points` (how many to write, when the grammar holds the reply to that many) and `retry`
    /// (the second try, after points that only named a heading).
    Note,
    /// System message of a quiz item.
    Quiz,
    /// A note to ask about: `title`, `text`, `avoid` (questions asked), `retry` (second try).
    QuizNote,
    /// System message of grading.
    Grade,
    /// A reply to grade: `question`, `answer`, `reply`.
    GradeUser,
}

impl StudyPrompt {
    /// The template's name in [`TEMPLATES`].
    pub fn template(self) -> &'static str {
        match self {
            StudyPrompt::Summarize => "study/summarize.j2",
            StudyPrompt::Note => "study/note.j2",
            StudyPrompt::Quiz => "study/quiz.j2",
            StudyPrompt::QuizNote => "study/quiz_note.j2",
            StudyPrompt::Grade => "study/grade.j2",
            StudyPrompt::GradeUser => "study/grade_user.j2",
        }
    }
}

/// Who speaks a message. `Ipython` is Llama 3's role for tool results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person asking.
    User,
    /// The model (plain answers and call lists alike, as generated).
    Assistant,
    /// A tool's result, fed back to the model.
    Ipython,
}

impl Role {
    /// The role name as Llama 3 writes it in a header.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Ipython => "ipython",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The text. For an assistant call, exactly what the model generated (e.g.
    /// `<|python_tag|>[f(a=1)]`, without the end-of-turn token), so the KV cache prefix matches.
    pub content: String,
}

impl Message {
    /// A message with `role` and `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
        }
    }
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
    /// A tool result message.
    pub fn ipython(content: impl Into<String>) -> Self {
        Self::new(Role::Ipython, content)
    }
}

/// Which prompt layout a model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatFamily {
    /// Llama 3.x: Meta's headers and pythonic tool calls, from `prompts/llama3/`.
    Llama3,
    /// Any other model: the Jinja chat template stored in its GGUF.
    Embedded,
    /// A model with no chat template at all: ChatML (what llama.cpp assumes too).
    ChatMl,
}

impl ChatFamily {
    /// Llama 3 when the GGUF's template uses `<|start_header_id|>`; the embedded template for any
    /// other template; ChatML when there is none. llama-server started with `--chat-template
    /// NAME` reports the bare name of a llama.cpp built-in instead of a template: `llama3` and
    /// `chatml` are these layouts; any other name is rendered as no template (see
    /// [`ChatTemplate::new`], which refuses it).
    pub fn detect(embedded_template: Option<&str>) -> ChatFamily {
        match embedded_template.map(str::trim) {
            Some("llama3") => ChatFamily::Llama3,
            Some("chatml") => ChatFamily::ChatMl,
            Some(t) if t.contains("<|start_header_id|>") => ChatFamily::Llama3,
            Some(t) if !t.is_empty() => ChatFamily::Embedded,
            _ => ChatFamily::ChatMl,
        }
    }

    /// A short name for `--verbose`.
    pub fn name(self) -> &'static str {
        match self {
            ChatFamily::Llama3 => "llama3 (prompts/llama3)",
            ChatFamily::Embedded => "embedded GGUF chat template",
            ChatFamily::ChatMl => "chatml (built-in fallback)",
        }
    }
}

/// A rendered prompt.
///
/// Tokenize `text` with `parse_special = true` (the special tokens are written as text) and
/// `add_special = !contains_bos`: Llama 3 prompts already start with `<|begin_of_text|>` and Llama 3
/// GGUFs set `add_bos_token`, so adding specials again would double the BOS.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The text the model reads, ending with the header that asks the assistant to speak.
    pub text: String,
    /// The layout used.
    pub family: ChatFamily,
    /// True when `text` starts with the model's BOS token (always for Llama 3).
    pub contains_bos: bool,
    /// Bytes at the start of `text` that only the system message decides (on a decision step:
    /// the calling instructions, the tool schemas and the system prompt): the same on every run
    /// with the same tools, so their KV state can be kept across runs. 0 without a system message.
    /// It ends where the system message's text ends, before the template's end-of-message
    /// special token, so its tokens are a prefix of the whole prompt's.
    pub stable_len: usize,
}

/// What went wrong rendering a prompt (a template bug, or a GGUF template that refuses the
/// conversation, e.g. via `raise_exception`).
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// A template failed to compile or render.
    #[error("prompt template `{template}` failed: {message}")]
    Template {
        /// Template name (`embedded` for the GGUF's own).
        template: String,
        /// minijinja's description, with the line where it happened.
        message: String,
    },
}

/// A one-word "template" (`llama3`, `mistral-v7`…): a name, since every Jinja chat template
/// has markup.
fn is_bare_name(template: &str) -> bool {
    let name = template.trim();
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn template_error(template: &str, err: &JinjaError) -> PromptError {
    let mut message = err.to_string();
    if let Some(line) = err.line() {
        message.push_str(&format!(" (line {line})"));
    }
    PromptError::Template {
        template: template.to_string(),
        message,
    }
}

/// Renders conversations for one model. Build once per model; rendering is cheap.
#[derive(Debug)]
pub struct ChatTemplate {
    family: ChatFamily,
    /// The source of the layout's chat template (built-in or the model's own).
    layout_source: String,
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    /// The role a tool result gets in the embedded template (`tool`, or `user` with a prefix).
    tool_role: ToolRole,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolRole {
    Ipython,
    Tool,
    UserWithPrefix,
}

impl ChatTemplate {
    /// The Llama 3.x layout.
    pub fn llama3() -> Self {
        Self::build(ChatFamily::Llama3, None, "<|begin_of_text|>", "<|eot_id|>")
            .expect("built-in templates compile")
    }

    /// Picks the family from a GGUF's `tokenizer.chat_template` (see [`ChatFamily::detect`]) and
    /// compiles that template when it is the one to use. `bos_token`/`eos_token` are the model's
    /// token strings, which HF templates print themselves.
    pub fn new(
        embedded_template: Option<&str>,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<Self, PromptError> {
        let family = ChatFamily::detect(embedded_template);
        if let Some(name) = embedded_template.filter(|t| is_bare_name(t))
            && family == ChatFamily::Embedded
        {
            return Err(PromptError::Template {
                template: EMBEDDED.to_string(),
                message: format!(
                    "`{}` names one of llama.cpp's built-in templates (llama-server \
                     --chat-template), not a template Recall can render: start the server \
                     without --chat-template (the model's own), or with llama3 or chatml",
                    name.trim()
                ),
            });
        }
        Self::build(family, embedded_template, bos_token, eos_token)
    }

    fn build(
        family: ChatFamily,
        embedded: Option<&str>,
        bos: &str,
        eos: &str,
    ) -> Result<Self, PromptError> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_keep_trailing_newline(false);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        // The Python string/dict methods HF chat templates call (`.strip()`, `.items()`, …).
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .map_err(|e| template_error(name, &e))?;
        }
        let mut tool_role = ToolRole::Ipython;
        let mut layout_source = TEMPLATES[0].1;
        if family != ChatFamily::Llama3 {
            let source = match (family, embedded) {
                (ChatFamily::Embedded, Some(source)) => source,
                _ => TEMPLATES[1].1,
            };
            layout_source = source;
            env.add_template_owned(EMBEDDED, source.to_string())
                .map_err(|e| template_error(EMBEDDED, &e))?;
            tool_role = if source.contains("'tool'") || source.contains("\"tool\"") {
                ToolRole::Tool
            } else {
                ToolRole::UserWithPrefix
            };
        }
        Ok(ChatTemplate {
            family,
            layout_source: layout_source.to_string(),
            env,
            bos_token: bos.to_string(),
            eos_token: eos.to_string(),
            tool_role,
        })
    }

    /// The layout this model gets.
    pub fn family(&self) -> ChatFamily {
        self.family
    }

    /// The special tokens the layout writes as text (every `<|name|>` in its chat template):
    /// each must be one token of the model's vocabulary, or the model is not the one this
    /// layout is for (a server started with another model or `--chat-template`).
    pub fn special_tokens(&self) -> Vec<&str> {
        let marker = regex::Regex::new(r"<\|[A-Za-z0-9_]+\|>").expect("valid regex");
        let mut found: Vec<&str> = Vec::new();
        for m in marker.find_iter(&self.layout_source) {
            if !found.contains(&m.as_str()) {
                found.push(m.as_str());
            }
        }
        found
    }

    /// The tool-decision prompt: the conversation with a system message that carries the calling
    /// instructions and `tools` as JSON (a system message already in `conversation` is appended
    /// after them). With no tools this is the [`answer`](Self::answer) prompt.
    pub fn decision(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Prompt, PromptError> {
        if tools.is_empty() {
            return self.answer(conversation);
        }
        let (system, rest) = match conversation.split_first() {
            Some((first, rest)) if first.role == Role::System => {
                (Some(first.content.as_str()), rest)
            }
            _ => (None, conversation),
        };
        let instructions = self.render(
            TOOL_INSTRUCTIONS,
            json!({"tools_json": tools_json(tools), "system": system.map(neutralize_specials)}),
        )?;
        let mut messages = vec![Message::system(instructions)];
        messages.extend(rest.iter().map(|m| Message::new(m.role, neutralize(m))));
        self.chat(&messages)
    }

    /// The answer step's closing instruction: answer `question` from the `count` numbered
    /// sources and cite them by number; in `language`, the question's
    /// (`sources::question_language`), else as written (the English prompt is unchanged).
    /// "The notes do not say" is asked for in English words whatever the language: a small
    /// model handed that sentence in the question's language copies it as the answer where
    /// its sources hold one (Qwen2.5-1.5B, the gold passage alone, 11 Chinese questions: 10
    /// of 11 wrote "笔记中没有说明。", 0 of 11 with the English wording; 8 of 28 German
    /// tuning questions refused with the German sentence, 2 with the English).
    pub fn answer_instruction(
        &self,
        question: &str,
        language: Option<Language>,
        context: Option<&str>,
        count: usize,
    ) -> Result<String, PromptError> {
        self.render(
            ANSWER_INSTRUCTION,
            json!({
                "question": question,
                "context": context,
                "count": count,
                "language": language.map(Language::name),
            }),
        )
    }

    /// Asked after an answer that cites no source: which of the `count` numbered sources it
    /// came from.
    pub fn attribution_instruction(&self, count: usize) -> Result<String, PromptError> {
        self.render(ATTRIBUTION_INSTRUCTION, json!({"count": count}))
    }

    /// The figure check's message (`agent::figure`): the `lines` an answer's figure stands in
    /// and their `place` (the note's label and the heading above them), and the answer's
    /// `claim` (its sentence giving the figure), to be judged yes or no; `context`: who the
    /// question points at, when the agent found them through a link ("The accountant it
    /// asks about is Oscar Visser.").
    pub fn check_instruction(
        &self,
        place: &str,
        lines: &str,
        claim: &str,
        context: Option<&str>,
    ) -> Result<String, PromptError> {
        self.render(
            CHECK_INSTRUCTION,
            json!({"place": place, "lines": lines, "claim": claim, "context": context}),
        )
    }

    /// A study prompt's text (a message's content, not a whole prompt) with `vars` filled in.
    /// Values are inserted as written, never read as template syntax.
    pub fn study(&self, prompt: StudyPrompt, vars: &impl Serialize) -> Result<String, PromptError> {
        self.render(prompt.template(), vars)
    }

    /// The answer prompt: the conversation as is (calls and results included), no tool schemas.
    pub fn answer(&self, conversation: &[Message]) -> Result<Prompt, PromptError> {
        let messages: Vec<Message> = conversation
            .iter()
            .map(|m| Message::new(m.role, neutralize(m)))
            .collect();
        self.chat(&messages)
    }

    fn chat(&self, messages: &[Message]) -> Result<Prompt, PromptError> {
        let first = messages.first();
        let (name, messages) = match self.family {
            ChatFamily::Llama3 => (
                LLAMA3_CHAT,
                messages
                    .iter()
                    .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
                    .collect(),
            ),
            _ => (EMBEDDED, self.embedded_messages(messages)?),
        };
        let text = self.render(
            name,
            json!({
                "messages": messages,
                "add_generation_prompt": true,
                "bos_token": self.bos_token,
                "eos_token": self.eos_token,
            }),
        )?;
        let contains_bos = !self.bos_token.is_empty() && text.starts_with(&self.bos_token);
        let stable_len = stable_len(&text, first);
        Ok(Prompt {
            text,
            family: self.family,
            contains_bos,
            stable_len,
        })
    }

    /// Messages as a foreign template expects them: tool results under a role it knows.
    fn embedded_messages(&self, messages: &[Message]) -> Result<Vec<Value>, PromptError> {
        messages
            .iter()
            .map(|m| {
                let (role, content) = match (m.role, self.tool_role) {
                    (Role::Ipython, ToolRole::Tool) => ("tool", m.content.clone()),
                    (Role::Ipython, ToolRole::UserWithPrefix) => (
                        "user",
                        self.render(TOOL_RESULT_AS_USER, json!({"content": m.content}))?,
                    ),
                    (role, _) => (role.as_str(), m.content.clone()),
                };
                Ok(json!({"role": role, "content": content}))
            })
            .collect()
    }

    fn render(&self, name: &str, ctx: impl Serialize) -> Result<String, PromptError> {
        let template = self
            .env
            .get_template(name)
            .map_err(|e| template_error(name, &e))?;
        template
            .render(JinjaValue::from_serialize(&ctx))
            .map_err(|e| template_error(name, &e))
    }
}

/// Where the system message's text ends in `text` (templates may trim it); 0 when the
/// conversation has none or the template did not write it verbatim.
fn stable_len(text: &str, first: Option<&Message>) -> usize {
    match first {
        Some(first) if first.role == Role::System => {
            let content = first.content.trim();
            match text.find(content) {
                Some(start) if !content.is_empty() => start + content.len(),
                _ => 0,
            }
        }
        _ => 0,
    }
}

/// Special-token look-alikes (`<|eot_id|>`, `<|im_end|>`) in text the model did not write would be
/// parsed as real special tokens (prompts are tokenized with `parse_special`), letting a note end
/// the turn or forge a header. A word joiner after `<` keeps them plain text.
static SPECIAL_LOOKALIKE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<(\|[A-Za-z0-9_]+\|>)").expect("valid regex"));

fn neutralize_specials(text: &str) -> String {
    SPECIAL_LOOKALIKE
        .replace_all(text, "<\u{2060}$1")
        .into_owned()
}

/// Assistant text is the model's own output (`<|python_tag|>` included) and stays as generated.
fn neutralize(message: &Message) -> String {
    match message.role {
        Role::Assistant => message.content.clone(),
        _ => neutralize_specials(&message.content),
    }
}

/// The tool list in Meta's layout (`name`, `description`, `parameters: {type: "dict", required,
/// properties}`; each property keeps type/description/enum/items/default), one tool per line.
///
/// Only what tells the model something is kept: Meta's 4-space indentation cost a fifth of the
/// decision prompt, so each tool is one line of JSON with the `", "` and `": "` separators of
/// Python's `json.dumps` (what HF's `tojson` writes, so models have seen it in training); `null`
/// in a type (`["string", "null"]`, an optional parameter: optional already means "may be
/// left out") and `null` defaults are dropped.
pub fn tools_json(tools: &[ToolSpec]) -> String {
    let lines: Vec<String> = tools
        .iter()
        .map(|tool| {
            let mut properties = Map::new();
            for (name, schema) in tool.parameters() {
                let mut property = Map::new();
                for key in ["type", "description", "enum", "items", "default"] {
                    let value = match (key, schema.get(key)) {
                        (_, None | Some(Value::Null)) => continue,
                        ("type", Some(ty)) => without_null_type(ty),
                        (_, Some(value)) => value.clone(),
                    };
                    property.insert(key.to_string(), value);
                }
                properties.insert(name.to_string(), Value::Object(property));
            }
            spaced_json(&json!({
                "name": tool.name,
                "description": tool.description,
                "parameters": {"type": "dict", "required": tool.required(), "properties": properties},
            }))
        })
        .collect();
    format!("[\n{}\n]", lines.join(",\n"))
}

/// `["string", "null"]` → `"string"`; any other type as it is.
fn without_null_type(ty: &Value) -> Value {
    let Value::Array(types) = ty else {
        return ty.clone();
    };
    let mut kept: Vec<Value> = types
        .iter()
        .filter(|t| !t.is_null() && *t != "null")
        .cloned()
        .collect();
    match kept.len() {
        0 => ty.clone(),
        1 => kept.remove(0),
        _ => Value::Array(kept),
    }
}

/// One line of JSON with Python's default separators (`", "`, `": "`).
fn spaced_json(value: &Value) -> String {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                writer.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
        ) -> std::io::Result<()> {
            writer.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut out, Spaced,
        ))
        .expect("a JSON value always serializes");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn pretty_json(value: &Value, indent: &[u8]) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(indent),
    );
    value
        .serialize(&mut ser)
        .expect("a JSON value always serializes");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// HF templates call `raise_exception("...")` to refuse a conversation.
fn raise_exception(message: String) -> Result<JinjaValue, JinjaError> {
    Err(JinjaError::new(ErrorKind::InvalidOperation, message))
}

/// HF's `tojson`: plain JSON (no HTML escaping), keys in order, optional `indent`.
fn tojson(value: JinjaValue, kwargs: minijinja::value::Kwargs) -> Result<JinjaValue, JinjaError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(&value)
        .map_err(|e| JinjaError::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let text = match indent {
        Some(n) => pretty_json(&json, " ".repeat(n).as_bytes()),
        None => serde_json::to_string(&json).unwrap_or_default(),
    };
    Ok(JinjaValue::from_safe_string(text))
}

/// HF's `strftime_now(format)` (UTC), for the directives chat templates use.
fn strftime_now(format: String) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    strftime(secs, &format)
}

/// Formats Unix time `secs` (UTC) with C's `strftime` directives; a format chrono cannot read
/// is returned as written rather than failing the prompt.
fn strftime(secs: u64, format: &str) -> String {
    let time = i64::try_from(secs)
        .ok()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .unwrap_or_default();
    match chrono::format::StrftimeItems::new(format).parse() {
        Ok(items) => time.format_with_items(items.into_iter()).to_string(),
        Err(_) => format.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_formats_known_dates() {
        // 2024-09-24 12:34:56 UTC, a Tuesday.
        assert_eq!(strftime(1_727_181_296, "%d %B %Y"), "24 September 2024");
        assert_eq!(
            strftime(1_727_181_296, "%a %d %b %y %H:%M:%S %%"),
            "Tue 24 Sep 24 12:34:56 %"
        );
        assert_eq!(strftime(951_782_400, "%Y-%m-%d %A"), "2000-02-29 Tuesday");
        assert_eq!(
            strftime(951_782_400, "%Q %Y"),
            "%Q %Y",
            "unknown: kept as written"
        );
    }

    #[test]
    fn special_lookalikes_are_neutralized() {
        let text = neutralize_specials("a <|eot_id|> b <|im_end|> c <| not |>");
        assert!(!text.contains("<|eot_id|>") && !text.contains("<|im_end|>"));
        assert!(text.contains("<| not |>"));
    }

    #[test]
    fn special_tokens_are_the_layouts_markers() {
        assert_eq!(
            ChatTemplate::llama3().special_tokens(),
            [
                "<|begin_of_text|>",
                "<|start_header_id|>",
                "<|end_header_id|>",
                "<|eot_id|>"
            ]
        );
        let chatml = ChatTemplate::new(None, "", "<|im_end|>").unwrap();
        assert_eq!(chatml.special_tokens(), ["<|im_start|>", "<|im_end|>"]);
        let own = "{% for m in messages %}<|user|>{{ m.content }}<|end|>{% endfor %}<|assistant|>";
        let embedded = ChatTemplate::new(Some(own), "", "<|end|>").unwrap();
        assert_eq!(
            embedded.special_tokens(),
            ["<|user|>", "<|end|>", "<|assistant|>"]
        );
    }

    #[test]
    fn llama_server_template_names_pick_a_layout_or_are_refused() {
        assert_eq!(ChatFamily::detect(Some("llama3")), ChatFamily::Llama3);
        assert_eq!(ChatFamily::detect(Some("chatml\n")), ChatFamily::ChatMl);
        assert_eq!(
            ChatTemplate::new(Some("llama3"), "<|begin_of_text|>", "<|eot_id|>")
                .unwrap()
                .family(),
            ChatFamily::Llama3
        );
        let err = ChatTemplate::new(Some("mistral-v7"), "<s>", "</s>").unwrap_err();
        assert!(err.to_string().contains("--chat-template"), "{err}");
    }
}
