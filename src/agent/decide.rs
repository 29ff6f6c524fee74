//! Decision steps: the model, shown the tool schemas, either calls tools or is done looking.
//!
//! Each step renders the conversation *with* the schemas (vault tools first) and generates under
//! the tool grammar, whose note references can only be ones already seen in the turn. A reply
//! that starts as prose is stopped at once: the answer step writes answers. Calls are run
//! ([`super::calls`]) and their results appended as one `ipython` message; a malformed call is
//! answered with the parse error. A call made before in the turn (the opening search copied, an
//! A-B-A cycle) is not made again: the answer comes next.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use super::calls::{fit_reads, render_results};
use super::{Agent, AgentError, DECISION_TOKENS, Gathered, step};
use crate::engine::{Cancelled, ChatModel, Constraint, StopReason};
use crate::grammar::{ToolGrammar, ValueDomains};
use crate::parse::{Reply, ReplyStart, parse_reply, reply_start};
use crate::prompt::Message;
use crate::tool::{ToolCall, ToolHost, ToolSpec};
use crate::vault::VaultTools;

impl<M: ChatModel + ?Sized, H: ToolHost> Agent<'_, M, H> {
    /// Decision steps until the model stops calling tools, repeats a call, or has had
    /// `max_steps`. With `must_call`, the first reply must be a call (the grammar holds from
    /// its first token).
    pub(super) fn decide(
        &mut self,
        conversation: &mut Vec<Message>,
        tools: &[ToolSpec],
        vault: Option<&VaultTools>,
        must_call: bool,
        gathered: &mut Gathered,
    ) -> Result<(), AgentError> {
        for step_index in 0..self.options.max_steps {
            let domains = vault
                .map(|v| {
                    let sources = &gathered.sources;
                    v.argument_domains(sources.references(), sources.sections(), sources.offsets())
                })
                .unwrap_or_default();
            let prompt = self.template.decision(conversation, tools)?;
            tracing::debug!(target: "recall::prompt", "decision prompt:\n{}", prompt.text);
            let mut request = self.request(DECISION_TOKENS);
            request.stable_prefix = prompt.stable_len;
            request.constraint =
                self.call_constraint(tools, &domains, must_call && step_index == 0);
            let mut seen = String::new();
            let completion = self.model.generate(&prompt.text, &request, &mut |text| {
                seen.push_str(text);
                stop_if_prose(&seen)
            })?;
            tracing::debug!(target: "recall::model", "decision output: {:?}", completion.text);
            if completion.stop == StopReason::Cancelled {
                return Err(Cancelled.into());
            }
            let calls = match parse_reply(&completion.text, tools) {
                Reply::Answer(_) => {
                    gathered
                        .steps
                        .push(step("decision", &completion, Vec::new()));
                    break;
                }
                Reply::Malformed { error } => {
                    gathered
                        .steps
                        .push(step("decision", &completion, Vec::new()));
                    conversation.push(Message::assistant(completion.text.trim()));
                    conversation.push(Message::ipython(format!(
                        "Error: your tool call could not be read: {error}. Write it again as [tool_name(param=\"value\")], or answer in plain text."
                    )));
                    continue;
                }
                Reply::Calls(calls) => calls,
            };
            let signature = call_signature(&calls);
            // Calls made before in this turn would bring back what the model has (an A-B-A
            // cycle too).
            let repeated = gathered.signatures.contains(&signature);
            gathered.signatures.push(signature);
            if repeated {
                // The answer step comes next: the repeated call and a scolding would only be
                // more text for the model to copy, so neither enters the conversation.
                gathered
                    .steps
                    .push(step("decision", &completion, Vec::new()));
                break;
            }

            let budget = self.result_budget(conversation, tools)?;
            let calls = fit_reads(&calls, vault, budget);
            let (records, texts) = self.run_calls(&calls, vault, &mut gathered.sources)?;
            gathered.steps.push(step("decision", &completion, records));
            conversation.push(Message::assistant(completion.text.trim()));
            conversation.push(Message::ipython(render_results(&calls, &texts, budget)));
        }
        Ok(())
    }

    /// The grammar for a decision step: strict when the reply must be a call, else lazy (it
    /// only holds once the reply starts one); `None` without `--grammar` or callable tools.
    fn call_constraint(
        &self,
        tools: &[ToolSpec],
        domains: &ValueDomains,
        must_call: bool,
    ) -> Option<Constraint> {
        if !self.options.grammar {
            return None;
        }
        let grammar = ToolGrammar::with_domains(tools, domains)?;
        Some(Constraint {
            gbnf: grammar.gbnf,
            root: grammar.root.to_string(),
            lazy_patterns: if must_call {
                Vec::new()
            } else {
                grammar.trigger_patterns
            },
        })
    }
}

/// A decision reply that starts as prose is an answer, not a call: stop it there, since the
/// answer step writes the answer (without the schemas in the way).
fn stop_if_prose(reply: &str) -> ControlFlow<()> {
    match reply_start(reply) {
        ReplyStart::Text => ControlFlow::Break(()),
        ReplyStart::Call | ReplyStart::Undecided => ControlFlow::Continue(()),
    }
}

/// A call list's identity for the repetition guard: names and arguments, order-insensitive.
pub(super) fn call_signature(calls: &[ToolCall]) -> String {
    let mut parts: Vec<String> = calls
        .iter()
        .map(|c| {
            let sorted: BTreeMap<_, _> = c.arguments.iter().collect();
            format!(
                "{}{}",
                c.name,
                serde_json::to_string(&sorted).unwrap_or_default()
            )
        })
        .collect();
    parts.sort();
    parts.join("|")
}
