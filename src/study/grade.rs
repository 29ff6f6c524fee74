//! `quiz --interactive`: asks each question on the terminal, has the model grade the reply
//! against the note's answer under a grammar (`correct|partly|wrong: why`), and keeps the score.

use std::io::Write;
use std::ops::ControlFlow;

use anyhow::Result;
use serde_json::json;

use super::item::{Asker, QuizItem};
use super::writer::{Grammar, Writer, line_rule};
use crate::prompt::StudyPrompt;

/// Longest reason, in characters.
const MAX_REASON: usize = 200;
/// Characters of a grade line outside its reason (`partly: ` and the line break).
const GRADE_FRAME: usize = 12;

/// How the model graded an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    /// Right.
    Correct,
    /// Partly right.
    Partly,
    /// Wrong.
    Wrong,
}

impl Grade {
    fn points(self) -> f32 {
        match self {
            Grade::Correct => 1.0,
            Grade::Partly => 0.5,
            Grade::Wrong => 0.0,
        }
    }

    /// The grade's word, as printed.
    pub(super) fn name(self) -> &'static str {
        match self {
            Grade::Correct => "correct",
            Grade::Partly => "partly",
            Grade::Wrong => "wrong",
        }
    }
}

/// The grammar of a grade: one of the three grade words, a colon, a one-line reason that fits
/// `max_tokens`.
pub fn grade_grammar(max_tokens: usize) -> Grammar {
    let reason = max_tokens.saturating_sub(GRADE_FRAME).clamp(1, MAX_REASON);
    Grammar {
        name: "grade",
        gbnf: format!(
            "root ::= (\"correct\" | \"partly\" | \"wrong\") \": \" reason \"\\n\"?\n{}",
            line_rule("reason", reason)
        ),
    }
}

/// The grade a reply names first (`incorrect` is wrong, not correct) and its one-line reason.
pub fn parse_grade(reply: &str) -> (Option<Grade>, String) {
    let line = reply
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let lower = line.to_lowercase();
    let words = [
        ("incorrect", Grade::Wrong),
        ("not correct", Grade::Wrong),
        ("partially", Grade::Partly),
        ("partly", Grade::Partly),
        ("wrong", Grade::Wrong),
        ("correct", Grade::Correct),
    ];
    let found = words
        .iter()
        .filter_map(|(word, grade)| lower.find(word).map(|at| (at, word.len(), *grade)))
        .min_by_key(|(at, len, _)| (*at, usize::MAX - len));
    let Some((at, len, grade)) = found else {
        return (None, line.to_string());
    };
    // The reason is what follows the grade word, without the separator.
    let why = line
        .get(at + len..)
        .unwrap_or("")
        .trim_start_matches(|c: char| c.is_whitespace() || "*:.-,".contains(c));
    let why = if why.is_empty() && at > 0 { line } else { why };
    (Some(grade), why.to_string())
}

/// The model's grade of `reply` to `question`, against the note's `answer`, and its reason.
pub(super) fn grade_reply(
    writer: &mut Writer,
    question: &str,
    answer: &str,
    reply: &str,
) -> Result<(Option<Grade>, String)> {
    let grammar = grade_grammar(writer.request.max_tokens);
    let user = writer.render(
        StudyPrompt::GradeUser,
        &json!({"question": question, "answer": answer, "reply": reply}),
    )?;
    let verdict = writer.generate(StudyPrompt::Grade, &user, &grammar, &mut |_| {
        ControlFlow::Continue(())
    })?;
    Ok(parse_grade(&verdict.text))
}

/// Asks up to `count` questions on the terminal, grades each reply, and prints the score.
/// Ctrl-D (or Ctrl-C) ends early with the score so far. Returns the items asked.
pub(super) fn interactive(
    asker: &mut Asker,
    count: usize,
    out: &mut impl Write,
) -> Result<Vec<QuizItem>> {
    let cancel = asker.writer.request.cancel.clone();
    let mut items: Vec<QuizItem> = Vec::new();
    let mut score = 0.0;
    let mut graded = 0;
    while items.len() < count {
        let Some(item) = asker.next(&items)? else {
            break;
        };
        let note = &asker.notes[item.note];
        writeln!(
            out,
            "\nQuestion {}: {}\n(from {})",
            items.len() + 1,
            item.qa.question,
            note.title
        )?;
        write!(out, "> ")?;
        out.flush()?;
        let mut reply = String::new();
        if std::io::stdin().read_line(&mut reply)? == 0 || cancel.is_cancelled() {
            writeln!(out)?;
            break;
        }
        let (grade, why) = grade_reply(
            asker.writer,
            &item.qa.question,
            &item.qa.answer,
            reply.trim(),
        )?;
        graded += 1;
        match grade {
            Some(grade) => {
                score += grade.points();
                writeln!(out, "{}: {why}", grade.name())?;
            }
            None => writeln!(out, "ungraded: {why}")?,
        }
        writeln!(out, "Answer from the note: {}", item.qa.answer)?;
        items.push(item);
    }
    writeln!(out, "\nScore: {score}/{graded}")?;
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grades_take_the_first_grade_word() {
        assert_eq!(
            parse_grade("correct: it names the project."),
            (Some(Grade::Correct), "it names the project.".into())
        );
        assert_eq!(
            parse_grade("Incorrect. The note says Tuesday."),
            (Some(Grade::Wrong), "The note says Tuesday.".into())
        );
        assert_eq!(
            parse_grade("\n**Partly** - only one of two"),
            (Some(Grade::Partly), "only one of two".into())
        );
        assert_eq!(parse_grade("I cannot say."), (None, "I cannot say.".into()));
    }

    #[test]
    fn the_grade_grammar_admits_the_three_grades_and_a_bounded_reason() {
        let grammar = grade_grammar(512);
        assert!(grammar.gbnf.starts_with(
            "root ::= (\"correct\" | \"partly\" | \"wrong\") \": \" reason \"\\n\"?\n"
        ));
        assert!(grammar.gbnf.ends_with("{0,199}\n"), "{}", grammar.gbnf);
        assert!(grade_grammar(40).gbnf.ends_with("{0,27}\n"));
    }
}
