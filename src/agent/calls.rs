//! Tool calls run for the turn: checked against their schemas, approved where their server is
//! not read-only, routed and run concurrently, and their results rendered for the model within
//! what is left of the context (vault results become numbered sources on the way).

use std::time::Instant;

use serde_json::Value;

use super::{Agent, AgentError, CallRecord, DECISION_TOKENS};
use crate::engine::{Cancelled, ChatModel};
use crate::prompt::Message;
use crate::sources::Sources;
use crate::tool::{ToolCall, ToolHost, ToolOutput, ToolRoute, ToolSpec};
use crate::validate::check_call;
use crate::vault::VaultTools;

/// Asks before a call to a tool whose server is not read-only; `true` lets it run.
pub trait Approver {
    /// Decides about one call.
    fn approve(&mut self, call: &ToolCall, route: &ToolRoute) -> bool;
}

/// Approves every call (`--yes`).
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn approve(&mut self, _: &ToolCall, _: &ToolRoute) -> bool {
        true
    }
}

/// Refuses every call that needs approval (non-interactive runs without `--yes`).
pub struct RefuseAll;

impl Approver for RefuseAll {
    fn approve(&mut self, _: &ToolCall, _: &ToolRoute) -> bool {
        false
    }
}

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// Checks, approves and runs the calls, concurrently; returns their records and the text
    /// of each result for the model, in call order (vault results become numbered sources).
    /// Ctrl-C abandons calls still running (their futures are dropped, which cancels them).
    pub(super) fn run_calls(
        &mut self,
        calls: &[ToolCall],
        vault: Option<&VaultTools>,
        sources: &mut Sources,
    ) -> Result<(Vec<CallRecord>, Vec<ResultText>), AgentError> {
        let tools = self.host.tools();
        let mut ready: Vec<Option<ToolOutput>> = Vec::new();
        let mut routes = Vec::new();
        for call in calls {
            let route = self.host.route(&call.name);
            let refusal = match (check_call(call, &tools), &route) {
                (Err(problem), _) => Some(problem),
                (Ok(()), Some(route))
                    if !route.read_only && !self.approver.approve(call, route) =>
                {
                    Some(format!(
                        "the call to {} was not approved by the user (non-interactive runs need --yes)",
                        call.name
                    ))
                }
                _ => None,
            };
            ready.push(refusal.map(|text| ToolOutput {
                text,
                structured: None,
                is_error: true,
            }));
            routes.push(route);
        }
        let started = Instant::now();
        let host = self.host;
        let pending: Vec<_> = calls
            .iter()
            .zip(&ready)
            .filter(|(_, done)| done.is_none())
            .map(|(call, _)| host.call(call))
            .collect();
        let cancel = &self.options.cancel;
        let ran = self.runtime.block_on(async move {
            tokio::select! {
                // A turn already stopped starts no call.
                biased;
                () = cancel.cancelled() => None,
                outputs = futures::future::join_all(pending) => Some(outputs),
            }
        });
        let Some(ran) = ran else {
            return Err(Cancelled.into());
        };
        let mut ran = ran.into_iter();
        let elapsed = started.elapsed();
        let results: Vec<ToolOutput> = ready
            .into_iter()
            .map(|done| done.unwrap_or_else(|| ran.next().expect("one result per pending call")))
            .collect();
        let mut records = Vec::new();
        let mut texts = Vec::new();
        for ((call, out), route) in calls.iter().zip(&results).zip(routes) {
            let (text, notes) = match vault.and_then(|v| v.result(call, out)) {
                Some(result) => (sources.add(&result), result.notes()),
                None => (out.text.clone(), Vec::new()),
            };
            records.push(CallRecord {
                name: call.name.clone(),
                arguments: Value::Object(call.arguments.clone()),
                server: route.map(|r| r.server),
                ok: !out.is_error,
                result_chars: text.chars().count(),
                notes,
                elapsed,
            });
            texts.push(ResultText {
                text,
                is_error: out.is_error,
            });
        }
        Ok((records, texts))
    }

    /// Tokens a new tool result may take: what is left of the context after the conversation,
    /// the schemas, a decision reply and the answer.
    pub(super) fn result_budget(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
    ) -> Result<usize, AgentError> {
        let used = self
            .model
            .count_tokens(&self.template.decision(conversation, tools)?.text);
        let reserve = DECISION_TOKENS + self.options.answer_tokens + 64;
        Ok(self.model.context_size().saturating_sub(used + reserve))
    }
}

/// One call's result as the model will read it.
pub(super) struct ResultText {
    text: String,
    is_error: bool,
}

/// Renders results for the `ipython` message, cutting text that would overflow the context
/// (about `budget_tokens`) with a note saying so.
pub(super) fn render_results(
    calls: &[ToolCall],
    results: &[ResultText],
    budget_tokens: usize,
) -> String {
    // About three characters per token: below the English BPE average of four, so a cut
    // result still fits when the text is dense (names, numbers, markup).
    let per_result = budget_tokens.saturating_mul(3) / results.len().max(1);
    let mut text = String::new();
    for (i, (call, out)) in calls.iter().zip(results).enumerate() {
        if results.len() > 1 {
            // Not `[n]`: vault results hold numbered sources, and a small model cites any
            // bracketed number it sees.
            text.push_str(&format!("Result {} ({}):\n", i + 1, call.name));
        }
        if out.is_error {
            text.push_str("Error: ");
        }
        let total = out.text.chars().count();
        if total <= per_result {
            text.push_str(&out.text);
        } else {
            let shown: String = out.text.chars().take(per_result).collect();
            text.push_str(&shown);
            text.push_str(&format!(
                "\n[cut: {per_result} of {total} characters shown to fit the context]"
            ));
        }
        if i + 1 < results.len() {
            text.push_str("\n\n");
        }
    }
    text
}

/// The calls with each note read limited to its share of `budget_tokens`, so the server pages
/// a long note instead of the result being cut.
pub(super) fn fit_reads(
    calls: &[ToolCall],
    vault: Option<&VaultTools>,
    budget_tokens: usize,
) -> Vec<ToolCall> {
    let Some(vault) = vault else {
        return calls.to_vec();
    };
    // Three characters per token, as in `render_results`, less room for the source's header.
    let share = (budget_tokens.saturating_mul(3) / calls.len().max(1)).saturating_sub(200);
    calls.iter().map(|c| vault.limit_read(c, share)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_results_are_labelled_without_bracketed_numbers() {
        let call = |uri: &str| {
            let mut arguments = serde_json::Map::new();
            arguments.insert("uri".into(), uri.into());
            ToolCall {
                name: "read_note".into(),
                arguments,
            }
        };
        let result = |text: &str| ResultText {
            text: text.into(),
            is_error: false,
        };
        let text = render_results(
            &[call("note://A"), call("note://B")],
            &[
                result("[6] A (note://A)\nAlpha."),
                result("[7] B (note://B)\nBeta."),
            ],
            1000,
        );
        // `[1]` and `[2]` would read as sources 1 and 2, which these results are not.
        assert_eq!(
            text,
            "Result 1 (read_note):\n[6] A (note://A)\nAlpha.\n\n\
             Result 2 (read_note):\n[7] B (note://B)\nBeta."
        );
    }
}
