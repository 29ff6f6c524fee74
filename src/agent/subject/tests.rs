//! Tests of the subject a question asks about and the kind of fact it wants.

use super::*;

fn names(question: &str) -> Option<Vec<String>> {
    Subject::of(question, &[], &[]).map(|s| s.names)
}

#[test]
fn a_subject_is_named_with_capitals_in_a_question_that_asks_a_fact() {
    assert_eq!(names("When is Ravi's birthday?"), Some(vec!["ravi".into()]));
    assert_eq!(
        names("What's Joost van Dijk's phone number?"),
        Some(vec!["joost".into(), "dijk".into()])
    );
    assert_eq!(
        names("How much was the climbing rope for Paolo?"),
        Some(vec!["paolo".into()])
    );
    // Days and months say when, not about whom; a question word opens the question.
    assert_eq!(names("How many situps did I do on 30 January 2022?"), None);
    assert_eq!(names("When did I go to the dentist on Monday?"), None);
    // No fact of those kinds asked: no subject to keep to.
    assert_eq!(names("Where did Jesse and I have dinner?"), None);
    assert_eq!(names("Does Sync work on my Android phone?"), None);
    assert_eq!(names("who is ravi"), None);
    assert_eq!(
        names("How many chapters of the ML book have I read?"),
        Some(vec!["ml".into()])
    );
    assert_eq!(names("普里娅的生日是哪天？"), None);
    // A length of time, a year and a price are facts asked about someone too; keys are
    // asked of a command.
    assert_eq!(
        names("How long is the grace period for Obsidian Publish?"),
        Some(vec!["obsidian".into(), "publish".into()])
    );
    assert_eq!(
        names("What's the price of Sync in dollars for teams?"),
        Some(vec!["sync".into()])
    );
    assert_eq!(
        names("What year was Anjali born?"),
        Some(vec!["anjali".into()])
    );
    assert_eq!(
        names("How did I rate Succession?"),
        Some(vec!["succession".into()])
    );
    assert_eq!(
        names("What's the ticket ID of ticket_27?"),
        Some(vec!["ticket_27".into()])
    );
    assert_eq!(
        names("What's the keyboard shortcut on Linux for bookmarks?"),
        None
    );
}

#[test]
fn a_number_the_question_gives_names_what_it_asks_about() {
    assert_eq!(
        names("Who wrote the 512-page novel I haven't opened yet?"),
        Some(vec!["512".into()])
    );
    assert_eq!(
        names("When did I get back from the 10-day trip?"),
        Some(vec!["10".into()])
    );
    // Days, times, ordinals, years, versions, single digits and numbers asked about in
    // other words pick out nothing.
    for question in [
        "What did I eat on 12 March 2024?",
        "How many laps did I swim on the 9th of February 2023?",
        "Who is my 18:45 meeting on 3 Mar 2023 with?",
        "What did I order on 2023-11-04?",
        "What changed in 1.10 for sync?",
        "What did I read in 2024?",
        "How long does assignment 7 need to be?",
        "What's on my shopping list for week 12 of 2024?",
        "Old links now give a 404. How do I send visitors to the new page?",
        "How do I make it display only 100 pixels wide?",
    ] {
        assert_eq!(names(question), None, "{question}");
    }
    let pages = Subject::of(
        "Who wrote the 512-page novel I haven't opened yet?",
        &[],
        &[],
    )
    .unwrap();
    assert_eq!(
        pages.about("books_4", "author: Conrad C\ntotalPages: 235"),
        ""
    );
}

#[test]
fn only_the_text_about_the_subject_is_kept() {
    let ravi = Subject::of("When is Ravi's birthday?", &[], &[]).unwrap();
    let results = "[1] Journal › 2025-02-14 › Log\n- Elif's birthday, baklava for all\n\
                   - worked on Harbor\n\n\
                   [2] People › Ravi Raman\nbirthday: 1990-06-02\n\n\
                   [3] Journal › 2025-04-11\n- 17:00 video call with Ravi\n- ran 5 km";
    assert_eq!(
        ravi.about_results(results),
        "[2] People › Ravi Raman\nbirthday: 1990-06-02\n\n\
         [3] Journal › 2025-04-11\n- 17:00 video call with Ravi"
    );
    assert_eq!(ravi.about("Journal › 2025-02-14", "Elif's birthday"), "");
    assert_eq!(
        ravi.about("Journal › 2025-04-11", "Lunch with RAVI."),
        "Journal › 2025-04-11\nLunch with RAVI."
    );
    let rory = Subject::of("How much did Rory's birthday dinner come to?", &[], &[]).unwrap();
    let day = "Rory's birthday — 52!\n\n- dinner at the harbour\n\nspent:: €148";
    assert_eq!(
        rory.about("Journal › 2023-06-12", day),
        format!("Journal › 2023-06-12\n{day}")
    );
    // A name is a whole word: "Ravindra" is someone else.
    assert_eq!(ravi.about("Contacts", "Ravindra: 06 1234"), "");
}

#[test]
fn a_name_typed_in_lowercase_is_one_the_sources_write_only_with_a_capital() {
    let source = Source {
        number: 1,
        uri: "note://Journal/2023-01-28".into(),
        title: "2023-01-28".into(),
        heading_path: Vec::new(),
        link: String::new(),
        text: String::new(),
        passage:
            "- rang Declan (gutters) 085 118 4476, got it off Tadhg\n- quote for the gutters\n\
                  | Year | Bump Into |\n| 2023 | read | Year Zero |\n\
                  Coastal route, Porto → Santiago. Ferry"
                .into(),
    };
    assert_eq!(
        Subject::of(
            "how much did declan quote for the gutters",
            std::slice::from_ref(&source),
            &[]
        )
        .map(|s| s.names),
        Some(vec!["declan".into()])
    );
    // A word opening a line or in a title in title case is no name.
    assert_eq!(
        Subject::of(
            "what year did I bump into him",
            std::slice::from_ref(&source),
            &[]
        ),
        None
    );
    // A name after another, in the same sentence, is one too.
    assert_eq!(
        Subject::of(
            "flight number for the journey home from santiago",
            std::slice::from_ref(&source),
            &[]
        )
        .map(|s| s.names),
        Some(vec!["santiago".into()])
    );
    assert_eq!(
        Subject::of(
            "how much was the ferry fare",
            std::slice::from_ref(&source),
            &[]
        ),
        None
    );
    // A month the sources write with a capital says when, not of whom: the daily note
    // `2022-01-30` never writes "January".
    let show = Source {
        passage: "I started watching on January 9, the second season in March.".into(),
        ..source.clone()
    };
    assert_eq!(
        Subject::of(
            "how many situps did I do on 30 january 2022",
            std::slice::from_ref(&show),
            &[]
        ),
        None
    );
    // A title in title case after a done task's mark is no name either: "What does it
    // cost?" asks nothing of an episode called "The Cost".
    let episodes = Source {
        passage: "- [x] Ep 10 - The Cost [Release date:: 2002-08-11]".into(),
        ..source.clone()
    };
    assert_eq!(
        Subject::of("What does it cost?", std::slice::from_ref(&episodes), &[]),
        None
    );
    // Nor is a stop word a title writes with a capital.
    let titled = Source {
        passage: "- [ ] Ep 4 - As to How They Might Destroy Him [Release date:: 2022-01-23]".into(),
        ..source.clone()
    };
    assert_eq!(
        Subject::of(
            "How many situps did I do on 30 January 2022?",
            std::slice::from_ref(&titled),
            &[]
        ),
        None
    );
    // A word the sources write in lowercase too is no name, within an identifier too.
    assert_eq!(
        Subject::of("how much was the quote", std::slice::from_ref(&source), &[]),
        None
    );
    let assignment = Source {
        title: "assignment_7".into(),
        passage: "Needs to have at least 48 pages.\n- [ ] Assignment task 7".into(),
        ..source
    };
    assert_eq!(
        Subject::of(
            "How long does assignment seven need to be?",
            &[assignment],
            &[]
        ),
        None
    );
}

#[test]
fn a_name_the_vault_knows_names_the_subject_of_a_question_in_chinese() {
    let named = ["婷婷".to_string(), "杨小婷".to_string()];
    let tingting = Subject::of("婷婷生日是几号？", &[], &named).expect("a subject");
    let gifts = "- 妈 生日（4月23日）：颈椎按摩仪 ✅ 送了\n- 婷婷 考研加油礼物？—— 还没想好";
    assert_eq!(
        tingting.about("礼物清单", gifts),
        "礼物清单\n- 婷婷 考研加油礼物？—— 还没想好"
    );
    let her = "birthday: 2003-11-02\n表妹，小姨的女儿。";
    assert_eq!(
        tingting.about("People › 杨小婷", her),
        format!("People › 杨小婷\n{her}")
    );
    // Asking no figure, or naming nothing the vault knows, asks about no one.
    assert_eq!(Subject::of("婷婷在哪上学？", &[], &named), None);
    assert_eq!(Subject::of("生日是几号？", &[], &[]), None);
}

#[test]
fn the_sentence_asking_the_fact_names_whom_it_is_asked_of() {
    assert_eq!(
        asking_sentence("糖醋鱼是跟谁学的？她电话多少"),
        Some("她电话多少")
    );
    assert_eq!(
        asking_sentence("When is Ravi's birthday? I forgot."),
        Some("When is Ravi's birthday?")
    );
    assert_eq!(
        asking_sentence("how much did I spend on 29.10.24?"),
        Some("how much did I spend on 29.10.24?")
    );
    assert_eq!(asking_sentence("Who taught me the recipe?"), None);
    // Nor is the recipe's note (`super::named` looks up that sentence's runs alone).
    assert_eq!(Subject::of("糖醋鱼是跟谁学的？她电话多少", &[], &[]), None);
}
