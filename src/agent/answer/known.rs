//! What an answer may state: the facts of what the model was given ([`known_facts`]), and why
//! an answer stating others is withdrawn ([`made_up_reason`]).

use super::Asked;
use crate::agent::subject::Subject;
use crate::facts::KnownFacts;
use crate::language::{AnswerLines, Language, answer_lines};
use crate::prompt::{Message, Role};
use crate::sources::Sources;

/// What the model was given to answer from, read for its facts: every message of the answer
/// prompt but those asking the question, as asked or as meant (earlier turns' questions,
/// results and answers: a follow-up may take its figure from them), and every source's label,
/// the text it was shown and the whole passage (a fact in the part it was not shown is still
/// no invention of its own).
///
/// The question's own facts are not known for being asked (its names are, and so are the
/// folders a source sits in): an answer restating "3 March
/// 2022" or "project_11" about a source that holds neither answers about another day or
/// another project ("5 situps on 3 March 2022 [1]" from the note of 24 January). Nor are the
/// numbers of folder names ("10 Example Data"): "rated 10 out of 10" stood on one.
///
/// A question asking a date, an amount, an email address or a phone number about someone it
/// names ([`Subject`]) knows only what the sources say of them: a fact about somebody else
/// ("February 14, 2025", the day another person had her birthday) is no answer about them.
pub(super) fn known_facts(messages: &[Message], sources: &Sources, asked: &Asked) -> KnownFacts {
    let question = asked.meant().trim();
    let asking = |m: &Message| {
        m.role == Role::User
            && (m.content.contains(question) || m.content.contains(asked.question.trim()))
    };
    let subject = Subject::of(question, sources.list(), &asked.named);
    let given: Vec<String> = messages
        .iter()
        .filter(|m| !asking(m))
        .map(|m| {
            let text = sources.list().iter().fold(m.content.clone(), |text, s| {
                text.replace(&s.breadcrumb(Language::of(question)), &s.label())
            });
            match &subject {
                Some(subject) if m.role == Role::Ipython => subject.about_results(&text),
                _ => text,
            }
        })
        .collect();
    let texts: Vec<String> = sources
        .list()
        .iter()
        .flat_map(|s| match &subject {
            Some(subject) => vec![subject.about(&s.label(), &format!("{}\n{}", s.text, s.passage))],
            None => vec![s.label(), s.text.clone(), s.passage.clone()],
        })
        .collect();
    let mut known = KnownFacts::new(given.iter().chain(&texts).map(String::as_str));
    known.know_question(question);
    // Recall's own sentence for the notes not saying, which the instruction hands the model,
    // names nothing made up: "Die Notizen sagen nichts dazu." capitalises a noun.
    known.know_names_in(answer_lines(asked.language).notes_lack_it);
    for source in sources.list() {
        known.know_names_in(&source.uri);
    }
    known
}

/// Why an answer stating `made_up` (facts no source holds) is withdrawn: the facts it made
/// up, leaving out those `question` gives; when it gave only those, that the sources found do
/// not mention them ([`AnswerLines::asked_not_found`]).
pub(super) fn made_up_reason(question: &str, made_up: &[String], lines: &AnswerLines) -> String {
    let asked = KnownFacts::new([question]);
    let (given, invented): (Vec<&String>, Vec<&String>) = made_up
        .iter()
        .partition(|fact| asked.unsupported(fact, false).is_empty());
    let (line, facts) = match invented.is_empty() {
        true => (lines.asked_not_found, given),
        false => (lines.made_up, invented),
    };
    let facts: Vec<&str> = facts.iter().map(|fact| fact.as_str()).collect();
    line.replace("{}", &facts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::{answer_lines, says_notes_lack_it};

    #[test]
    fn a_made_up_answer_is_withdrawn_naming_what_it_made_up() {
        let english = answer_lines(None);
        // A fact the question gives, found in no source: the sources are not about it.
        let asked = made_up_reason(
            "Which friend ran 18 km with me, and what is his best half marathon?",
            &["18".to_string()],
            english,
        );
        assert_eq!(
            asked,
            "The notes do not say: none of the passages found mentions the 18 of your question."
        );
        assert!(says_notes_lack_it(&asked));
        // Facts from nowhere are named, and the question's own left out.
        let invented = made_up_reason(
            "What did I pay for the 18 km race?",
            &["18".to_string(), "€45".to_string()],
            english,
        );
        assert_eq!(invented, "The notes do not say: none of them gives €45.");
        let chinese = made_up_reason(
            "上周陪我骑18公里的那个同事，全马最好成绩是多少",
            &["18".to_string()],
            answer_lines(Some(Language::Chinese)),
        );
        assert_eq!(chinese, "笔记中没有说明：找到的段落都没有提到问题中的 18。");
    }
}
