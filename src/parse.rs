//! Turns a model reply into either a plain answer or a list of tool calls (Llama 3.2's pythonic
//! `[f(a="x"), g()]` form), never failing: anything unreadable becomes a [`ParseError`] whose text
//! is written for the model to read and correct.
//!
//! A regex only *finds* where a call list starts; a small recursive-descent parser reads it,
//! because argument values nest (lists, dicts, strings holding `,` `=` `]`).

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Number, Value};

use crate::tool::{ToolCall, ToolSpec};

/// Llama 3.x marks a tool call with this special token (Meta's E2E example writes it before the
/// call list).
pub const PYTHON_TAG: &str = "<|python_tag|>";
/// End-of-generation tokens the engine may leave at the end of the text.
const END_TOKENS: [&str; 3] = ["<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"];

/// What the model meant by its reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Plain text for the user (end-of-turn tokens and surrounding whitespace removed).
    Answer(String),
    /// One or more tool calls, in the order written.
    Calls(Vec<ToolCall>),
    /// The reply tried to call tools but could not be read; the error says why, for the model.
    Malformed {
        /// What is wrong and where.
        error: ParseError,
    },
}

/// Why a call list could not be read: a byte offset into the reply plus what went wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    /// Byte offset into the reply text (after nothing was stripped) where the problem is.
    pub offset: usize,
    /// Up to ~24 characters of the reply starting at `offset`, for the message.
    pub near: String,
    /// What went wrong.
    pub problem: Problem,
}

/// The kinds of mistake a small model makes when writing calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// A specific token was expected (`what` says which, e.g. "`)` or `,`").
    Expected(&'static str),
    /// The text ended inside the call list.
    UnexpectedEnd(&'static str),
    /// A string literal starting at `offset` has no closing quote.
    UnterminatedString,
    /// A bare word where a value belongs (`metric=celsius`); strings need quotes.
    BareWord(String),
    /// `[]`: a call list with no calls.
    EmptyList,
    /// A positional argument after a keyword argument (`f(a=1, 2)`).
    PositionalAfterKeyword,
    /// Positional arguments given to a tool nobody declared, so they cannot be named.
    PositionalForUnknownTool(String),
    /// More positional arguments than the tool has parameters.
    TooManyPositional {
        /// The tool called.
        tool: String,
        /// How many parameters it declares.
        declared: usize,
    },
    /// The same argument given twice.
    DuplicateArgument(String),
    /// A number JSON cannot hold (NaN, infinity, malformed).
    BadNumber(String),
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Values nest at most this deep; deeper input is rejected instead of exhausting the stack.
pub const MAX_DEPTH: usize = 32;

const FORMAT_HINT: &str = "Write tool calls as [tool_name(param1=\"value\", param2=2)] and nothing else, or answer in plain text.";

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Your tool call could not be read: ")?;
        match &self.problem {
            Problem::Expected(what) => write!(f, "expected {what}")?,
            Problem::UnexpectedEnd(what) => write!(f, "the reply ended early; expected {what}")?,
            Problem::UnterminatedString => write!(f, "a string is missing its closing quote")?,
            Problem::BareWord(word) => write!(
                f,
                "`{word}` is not a value; put strings in quotes (\"{word}\") and write booleans as True/False"
            )?,
            Problem::EmptyList => write!(f, "the call list [] is empty")?,
            Problem::PositionalAfterKeyword => write!(
                f,
                "a positional argument follows a keyword argument; name every argument (param=value)"
            )?,
            Problem::PositionalForUnknownTool(tool) => write!(
                f,
                "`{tool}` is not a known tool, so its positional arguments cannot be matched; name every argument (param=value)"
            )?,
            Problem::TooManyPositional { tool, declared } => write!(
                f,
                "`{tool}` takes at most {declared} argument(s) but more were given"
            )?,
            Problem::DuplicateArgument(name) => write!(f, "the argument `{name}` is given twice")?,
            Problem::BadNumber(text) => write!(f, "`{text}` is not a valid number")?,
            Problem::TooDeep => write!(f, "values are nested more than {MAX_DEPTH} levels deep")?,
        }
        if self.near.is_empty() {
            write!(f, " at the end of the reply (byte {}). ", self.offset)?;
        } else {
            write!(f, " at byte {}, near `{}`. ", self.offset, self.near)?;
        }
        f.write_str(FORMAT_HINT)
    }
}

impl std::error::Error for ParseError {}

/// Where a call list may start: `[` then a name then `(`. Names allow the `.`/`-` MCP tool names
/// use, which a Python identifier would not.
static CALL_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*\(").expect("valid regex"));

/// How the start of a reply streaming in relates to a call list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyStart {
    /// It opens a call list (`<|python_tag|>`, or `[name(`).
    Call,
    /// Too short to tell yet.
    Undecided,
    /// It is not a call list.
    Text,
}

/// Classifies the beginning of a reply (leading whitespace ignored) as soon as it can.
pub fn reply_start(text: &str) -> ReplyStart {
    let start = text.trim_start();
    if start.starts_with(PYTHON_TAG) || CALL_START.find(start).is_some_and(|m| m.start() == 0) {
        return ReplyStart::Call;
    }
    let name_so_far = start.strip_prefix('[').map(str::trim).is_some_and(|name| {
        name.len() <= 64
            && name.chars().enumerate().all(|(i, c)| {
                c == '_'
                    || c.is_ascii_alphabetic()
                    || (i > 0 && (c.is_ascii_digit() || ".-".contains(c)))
            })
    });
    if start.is_empty() || PYTHON_TAG.starts_with(start) || name_so_far {
        ReplyStart::Undecided
    } else {
        ReplyStart::Text
    }
}

/// Reads a model reply. Never panics; whatever the model wrote, the result says what to do next.
///
/// - Trailing `<|eot_id|>` / `<|eom_id|>` and surrounding whitespace are ignored.
/// - A reply whose text (after an optional `<|python_tag|>`) starts with `[name(` is a call list;
///   anything wrong in it is [`Reply::Malformed`].
/// - A call list after some prose counts only when it names a known tool (so an answer quoting
///   `[link(text)]` stays an answer). Text after the closing `]` is ignored.
/// - A reply that is one JSON object `{"name": known_tool, "parameters"|"arguments": {..}}` (the
///   Llama 3.1 JSON style small models fall back to) is a call too.
/// - Everything else is an [`Reply::Answer`].
pub fn parse_reply(text: &str, tools: &[ToolSpec]) -> Reply {
    let body = strip_end_tokens(text);
    let lead = body.len() - body.trim_start().len();
    let trimmed = body.trim_start();

    if let Some(after_tag) = trimmed.strip_prefix(PYTHON_TAG) {
        let start = lead + PYTHON_TAG.len();
        let start = start + (after_tag.len() - after_tag.trim_start().len());
        if text[start..].starts_with('{')
            && let Some(call) = json_call(&text[start..body.len()], tools)
        {
            return Reply::Calls(vec![call]);
        }
        return read_list(text, start, body.len(), tools);
    }
    if trimmed.starts_with('{')
        && let Some(call) = json_call(trimmed, tools)
    {
        return Reply::Calls(vec![call]);
    }
    if let Some(m) = CALL_START.captures(body) {
        let whole = m.get(0).expect("group 0 always exists");
        let at_start = whole.start() == lead;
        let known = tools.iter().any(|t| t.name == m[1]);
        if at_start || known {
            return read_list(text, whole.start(), body.len(), tools);
        }
    }
    if trimmed.starts_with("[]") && trimmed[2..].trim().is_empty() {
        return Reply::Malformed {
            error: error_at(text, lead, Problem::EmptyList),
        };
    }
    Reply::Answer(body.trim().to_string())
}

/// The reply without trailing end-of-turn tokens or whitespace (a prefix of `text`, so byte
/// offsets stay valid).
fn strip_end_tokens(text: &str) -> &str {
    let mut body = text.trim_end();
    loop {
        let before = body.len();
        for token in END_TOKENS {
            body = body.strip_suffix(token).unwrap_or(body).trim_end();
        }
        if body.len() == before {
            return body;
        }
    }
}

/// Parses the call list starting at `text[start..]`; text after its closing `]` is ignored (small
/// models often add a sentence, and the calls are still what they meant).
fn read_list(text: &str, start: usize, end: usize, tools: &[ToolSpec]) -> Reply {
    let mut parser = Parser {
        src: &text[..end],
        pos: start,
        tools,
        depth: 0,
    };
    match parser.call_list() {
        Ok(calls) => Reply::Calls(calls),
        Err(error) => Reply::Malformed { error },
    }
}

/// A `{"name": .., "parameters": {..}}` reply naming a known tool, read with the same value parser.
fn json_call(text: &str, tools: &[ToolSpec]) -> Option<ToolCall> {
    let mut parser = Parser {
        src: text,
        pos: 0,
        tools,
        depth: 0,
    };
    let Ok(Value::Object(mut obj)) = parser.value() else {
        return None;
    };
    parser.skip_ws();
    if parser.pos != text.len() {
        return None;
    }
    let name = obj.get("name")?.as_str()?.to_string();
    if !tools.iter().any(|t| t.name == name) {
        return None;
    }
    let arguments = match obj.remove("parameters").or_else(|| obj.remove("arguments")) {
        Some(Value::Object(args)) => args,
        None => Map::new(),
        Some(_) => return None,
    };
    Some(ToolCall { name, arguments })
}

fn error_at(text: &str, offset: usize, problem: Problem) -> ParseError {
    let near: String = text.get(offset..).unwrap_or("").chars().take(24).collect();
    ParseError {
        offset,
        near,
        problem,
    }
}

/// A recursive-descent reader over `src` from byte `pos`.
struct Parser<'a> {
    src: &'a str,
    pos: usize,
    tools: &'a [ToolSpec],
    depth: usize,
}

type Parsed<T> = Result<T, ParseError>;

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn fail<T>(&self, problem: Problem) -> Parsed<T> {
        Err(error_at(self.src, self.pos, problem))
    }

    /// Fails with "expected `what`", or "ended early" at the end of input.
    fn expected<T>(&self, what: &'static str) -> Parsed<T> {
        if self.pos >= self.src.len() {
            self.fail(Problem::UnexpectedEnd(what))
        } else {
            self.fail(Problem::Expected(what))
        }
    }

    /// Consumes `c` (after whitespace) if it is next.
    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn identifier(&mut self) -> Option<&str> {
        let rest = self.rest();
        let first = rest.chars().next()?;
        if !(first.is_ascii_alphabetic() || first == '_') {
            return None;
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .unwrap_or(rest.len());
        let start = self.pos;
        self.pos += len;
        Some(&self.src[start..start + len])
    }

    fn call_list(&mut self) -> Parsed<Vec<ToolCall>> {
        if !self.eat('[') {
            return self.expected("`[` to start the call list");
        }
        let mut calls = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(']') {
                if calls.is_empty() {
                    self.pos -= 1;
                    return self.fail(Problem::EmptyList);
                }
                return Ok(calls);
            }
            calls.push(self.call()?);
            if self.eat(',') {
                continue;
            }
            if self.eat(']') {
                return Ok(calls);
            }
            return self.expected("`,` or `]` after a call");
        }
    }

    fn call(&mut self) -> Parsed<ToolCall> {
        self.skip_ws();
        let Some(name) = self.identifier().map(str::to_string) else {
            return self.expected("a tool name");
        };
        if !self.eat('(') {
            return self.expected("`(` after the tool name");
        }
        let spec = self.tools.iter().find(|t| t.name == name);
        let mut arguments = Map::new();
        let mut positional = 0;
        loop {
            self.skip_ws();
            if self.eat(')') {
                return Ok(ToolCall { name, arguments });
            }
            let arg_start = self.pos;
            let (key, value) = match self.keyword()? {
                Some(key) => (key, self.value()?),
                None => {
                    if arguments.len() > positional {
                        return self.fail(Problem::PositionalAfterKeyword);
                    }
                    let Some(spec) = spec else {
                        return self.fail(Problem::PositionalForUnknownTool(name));
                    };
                    let Some((key, _)) = spec.parameters().nth(positional) else {
                        let declared = spec.parameters().count();
                        return self.fail(Problem::TooManyPositional {
                            tool: name,
                            declared,
                        });
                    };
                    let key = key.to_string();
                    positional += 1;
                    (key, self.value()?)
                }
            };
            if arguments.contains_key(&key) {
                self.pos = arg_start;
                return self.fail(Problem::DuplicateArgument(key));
            }
            arguments.insert(key, value);
            if self.eat(',') {
                continue;
            }
            if self.eat(')') {
                return Ok(ToolCall { name, arguments });
            }
            return self.expected("`,` or `)` after an argument");
        }
    }

    /// `name =` if that is what comes next (the position is restored otherwise).
    fn keyword(&mut self) -> Parsed<Option<String>> {
        let start = self.pos;
        if let Some(name) = self.identifier().map(str::to_string) {
            self.skip_ws();
            if self.rest().starts_with('=') && !self.rest().starts_with("==") {
                self.pos += 1;
                return Ok(Some(name));
            }
            // Also accept `name: value` (dict-style), a common slip.
            if self.rest().starts_with(':') && !is_literal_word(&name) {
                self.pos += 1;
                return Ok(Some(name));
            }
        }
        self.pos = start;
        Ok(None)
    }

    fn value(&mut self) -> Parsed<Value> {
        self.skip_ws();
        if self.depth >= MAX_DEPTH {
            return self.fail(Problem::TooDeep);
        }
        let Some(c) = self.peek() else {
            return self.expected("a value");
        };
        match c {
            '"' | '\'' => self.string().map(Value::String),
            '[' => self.sequence('[', ']'),
            '(' => self.sequence('(', ')'),
            '{' => self.dict(),
            '-' | '+' | '.' | '0'..='9' => self.number(),
            c if c.is_alphabetic() || c == '_' => {
                let start = self.pos;
                let word = self.identifier().unwrap_or_default().to_string();
                match word.as_str() {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
                    _ => {
                        self.pos = start;
                        let word: String = self
                            .rest()
                            .chars()
                            .take_while(|c| !",)]}".contains(*c))
                            .take(40)
                            .collect();
                        self.fail(Problem::BareWord(word.trim().to_string()))
                    }
                }
            }
            _ => self.expected("a value (a quoted string, number, True/False, None, list or dict)"),
        }
    }

    fn sequence(&mut self, open: char, close: char) -> Parsed<Value> {
        self.pos += open.len_utf8();
        self.depth += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                break;
            }
            items.push(self.value()?);
            if self.eat(',') {
                continue;
            }
            if self.eat(close) {
                break;
            }
            return self.expected(if close == ']' {
                "`,` or `]` in a list"
            } else {
                "`,` or `)` in a tuple"
            });
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn dict(&mut self) -> Parsed<Value> {
        self.pos += 1;
        self.depth += 1;
        let mut map = Map::new();
        loop {
            if self.eat('}') {
                break;
            }
            self.skip_ws();
            let key = match self.peek() {
                Some('"' | '\'') => self.string()?,
                Some('-' | '0'..='9') => self.number()?.to_string(),
                _ => return self.expected("a quoted key in a dict"),
            };
            if !self.eat(':') {
                return self.expected("`:` after a dict key");
            }
            let value = self.value()?;
            map.insert(key, value);
            if self.eat(',') {
                continue;
            }
            if self.eat('}') {
                break;
            }
            return self.expected("`,` or `}` in a dict");
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    /// A Python/JSON string in single or double quotes, with the usual escapes.
    fn string(&mut self) -> Parsed<String> {
        let start = self.pos;
        let quote = self.peek().expect("caller saw a quote");
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let Some((_, e)) = chars.next() else { break };
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        '0' => out.push('\0'),
                        '\\' | '\'' | '"' | '/' => out.push(e),
                        '\n' => {} // line continuation
                        'u' | 'x' => {
                            let digits = if e == 'u' { 4 } else { 2 };
                            let hex: String = chars.clone().take(digits).map(|(_, h)| h).collect();
                            match u32::from_str_radix(&hex, 16)
                                .ok()
                                .filter(|_| hex.len() == digits)
                            {
                                Some(code) => {
                                    // A lone surrogate cannot be a char; keep the replacement.
                                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                                    for _ in 0..digits {
                                        chars.next();
                                    }
                                }
                                None => {
                                    out.push('\\');
                                    out.push(e);
                                }
                            }
                        }
                        // Python keeps unknown escapes as written.
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        self.pos = start;
        self.fail(Problem::UnterminatedString)
    }

    fn number(&mut self) -> Parsed<Value> {
        let start = self.pos;
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E' | '_')))
            .unwrap_or(rest.len());
        let text = rest[..len].to_string();
        let clean = text.replace('_', "");
        let clean = clean.strip_prefix('+').unwrap_or(&clean);
        let is_int = !clean.contains(['.', 'e', 'E']);
        let number = if is_int {
            clean
                .parse::<i64>()
                .map(Number::from)
                .ok()
                .or_else(|| clean.parse::<u64>().map(Number::from).ok())
        } else {
            None
        }
        .or_else(|| clean.parse::<f64>().ok().and_then(Number::from_f64));
        match number {
            Some(n) if !clean.is_empty() => {
                self.pos += len;
                Ok(Value::Number(n))
            }
            _ => {
                self.pos = start;
                self.fail(Problem::BadNumber(text.to_string()))
            }
        }
    }
}

fn is_literal_word(word: &str) -> bool {
    matches!(word, "True" | "False" | "None" | "true" | "false" | "null")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_starts_are_told_apart_as_they_stream() {
        for call in [
            "[search_notes(",
            "  [ read_note (uri",
            "<|python_tag|>",
            "[get-env()]",
        ] {
            assert_eq!(reply_start(call), ReplyStart::Call, "{call:?}");
        }
        for open in ["", "  ", "<|py", "[", "[search", "[ read_note ", "[a.b-c"] {
            assert_eq!(reply_start(open), ReplyStart::Undecided, "{open:?}");
        }
        for text in [
            "The midterm",
            "[1] see",
            "[[Wiki link]]",
            "[search notes",
            "<b>",
            "- item",
        ] {
            assert_eq!(reply_start(text), ReplyStart::Text, "{text:?}");
        }
    }

    #[test]
    fn strips_end_tokens_repeatedly() {
        assert_eq!(strip_end_tokens("hi <|eot_id|>\n<|eom_id|> "), "hi");
    }
}
