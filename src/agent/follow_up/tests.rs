use super::*;

/// What relative dates count from in these tests.
const TODAY: NaiveDate = NaiveDate::from_ymd_opt(2026, 11, 28).unwrap();

/// No note has a title.
fn no_titles(_: &str) -> Vec<String> {
    Vec::new()
}

#[test]
fn a_question_that_leans_on_the_one_before_is_searched_with_it() {
    let mut conversation = vec![
        Message::system("Answer from the notes."),
        Message::user("What's the largest file I can sync on Sync Standard?"),
        Message::assistant("5 MB [1]."),
        Message::user("And on Plus?"),
    ];
    assert_eq!(
        searched_for("And on Plus?", &conversation, TODAY, &mut no_titles).query,
        "What's the largest file I can sync on Sync Standard? And on Plus?"
    );
    // Words enough of its own: it may change the subject.
    let own = "How do I publish my notes as a website?";
    conversation.push(Message::user(own));
    assert_eq!(
        searched_for(own, &conversation, TODAY, &mut no_titles).query,
        own
    );
    // The first question of a conversation has nothing to lean on.
    assert_eq!(
        searched_for("Why?", &conversation[..2], TODAY, &mut no_titles).query,
        "Why?"
    );
    // A long earlier question is cut.
    let long = "word ".repeat(1000);
    let conversation = [Message::user(&long), Message::user("Why?")];
    assert!(
        searched_for("Why?", &conversation, TODAY, &mut no_titles)
            .query
            .len()
            < 400
    );
}

#[test]
fn a_question_leans_when_it_carries_on_or_points_back_with_few_words_of_its_own() {
    for leaning in [
        "And the top one?",
        "What if I go for Plus?",
        "What about on my iPad?",
        "How do I undo that later?",
        "What kind of file does it save?",
        "When's his birthday?",
        "What's her phone number?",
        "How many pages of it have I read?",
        "还有 iPad 呢？",
        "它支持哪些文件格式？",
    ] {
        assert!(leans_on_earlier(leaning), "{leaning}");
    }
    for alone in [
        "How do I publish my notes as a website?",
        "Is it possible to sync my vault with Dropbox on Android?",
        "Where does Obsidian keep the settings of a vault?",
        "Andrew's phone number?",
        "如何安装社区插件？",
    ] {
        assert!(!leans_on_earlier(alone), "{alone}");
    }
}

#[test]
fn a_follow_up_pointing_at_a_person_is_searched_with_the_names_the_answer_gave() {
    let first = "Who was out shopping at the start of February 2022?";
    let mut conversation = vec![
        Message::user(first),
        Message::assistant("[search_notes(query=\"shopping\")]"),
        Message::assistant(
            "Based on the notes, Sophie was out shopping on 1 February. [1]\n\n\
             The most relevant passages:\n[1] Daily Note › Errands",
        ),
        Message::user("What's her phone number?"),
    ];
    let searched = searched_for(
        "What's her phone number?",
        &conversation,
        TODAY,
        &mut no_titles,
    );
    assert_eq!(
        searched.query,
        format!("{first} What's her phone number? Sophie")
    );
    assert!(searched.leans);
    // "their" after a question asking who points at the one the answer named.
    let who = "Who surprised me at the gym in January 2022?";
    let gym = [
        Message::user(who),
        Message::assistant("I met AB1908 at the gym! [1]"),
        Message::user("When's their birthday?"),
    ];
    let searched = searched_for("When's their birthday?", &gym, TODAY, &mut no_titles);
    assert_eq!(
        searched.query,
        format!("{who} When's their birthday? AB1908")
    );
    let themes = [
        Message::user("How do I install a community theme?"),
        Message::assistant("Open Settings, select Appearance → Themes [1]."),
        Message::user("Do they update by themselves?"),
    ];
    let searched = searched_for(
        "Do they update by themselves?",
        &themes,
        TODAY,
        &mut no_titles,
    );
    assert!(!searched.query.contains("Settings"), "{}", searched.query);
    // A thing pointed back at is searched without the answer's names.
    conversation.push(Message::assistant("Sophie's number is 0612 [1]."));
    conversation.push(Message::user("How much does it cost?"));
    let searched = searched_for(
        "How much does it cost?",
        &conversation,
        TODAY,
        &mut no_titles,
    );
    assert!(!searched.query.contains("Sophie"), "{}", searched.query);
}

#[test]
fn a_question_leaning_on_a_leaning_one_is_searched_with_both() {
    let conversation = [
        Message::user("Who did I meet at the station in August 2022?"),
        Message::assistant("Elias [1]."),
        Message::user("What else did I do that day?"),
        Message::assistant("Sports [1]."),
        Message::user("When's his birthday?"),
    ];
    let searched = searched_for("When's his birthday?", &conversation, TODAY, &mut no_titles);
    assert_eq!(
        searched.query,
        "Who did I meet at the station in August 2022? What else did I do that day? \
         When's his birthday?"
    );
    assert!(searched.leans);
    // A question of its own between them ends the chain.
    let conversation = [
        Message::user("Who did I meet at the station in August 2022?"),
        Message::user("How much did the new bike cost in the spring?"),
        Message::user("And the helmet?"),
    ];
    assert_eq!(
        searched_for("And the helmet?", &conversation, TODAY, &mut no_titles).query,
        "How much did the new bike cost in the spring? And the helmet?"
    );
}

#[test]
fn a_follow_up_naming_another_note_is_searched_without_the_earlier_ones_name() {
    let mut titles = |text: &str| -> Vec<String> {
        [
            "Stardew Valley",
            "Terraria",
            "command palette",
            "quick switcher",
        ]
        .iter()
        .filter(|title| text.to_lowercase().contains(&title.to_lowercase()))
        .map(|title| title.to_string())
        .collect()
    };
    let first = "How much did Stardew Valley cost?";
    let mut conversation = vec![Message::user(first), Message::assistant("14.99 [1].")];
    conversation.push(Message::user("And Terraria?"));
    let searched = searched_for("And Terraria?", &conversation, TODAY, &mut titles);
    assert_eq!(searched.query, "How much did  cost? And Terraria?");
    // Saying nothing but the note, it asks the question before about it.
    assert_eq!(
        searched.meant.as_deref(),
        Some("How much did Terraria cost?")
    );
    // A chain keeps the move: "And on sale?" is about Terraria.
    conversation.push(Message::assistant("9.99 [1]."));
    conversation.push(Message::user("And on sale?"));
    let searched = searched_for("And on sale?", &conversation, TODAY, &mut titles);
    assert_eq!(
        searched.query,
        "How much did  cost? And Terraria? And on sale?"
    );
    // A follow-up asking more than which note is asked as typed.
    assert_eq!(searched.meant, None);
    // A chain of notes named alone asks the first question of the last one named.
    let mut chain = vec![
        Message::user(first),
        Message::assistant("14.99 [1]."),
        Message::user("And Terraria?"),
        Message::assistant("9.99 [1]."),
        Message::user("And Stardew Valley?"),
    ];
    let meant = |chain: &[Message], titles: &mut dyn FnMut(&str) -> Vec<String>| {
        let question = chain.last().map_or("", |m| m.content.as_str()).to_string();
        searched_for(&question, chain, TODAY, titles).meant
    };
    assert_eq!(
        meant(&chain, &mut titles).as_deref(),
        Some("How much did Stardew Valley cost?")
    );
    // Once a follow-up asked something else, the one after it leans on that.
    chain[4] = Message::user("Is it on sale?");
    chain.push(Message::assistant("Yes [1]."));
    chain.push(Message::user("And Terraria?"));
    assert_eq!(meant(&chain, &mut titles), None);
    let palette = "What's the keyboard shortcut for the Command Palette on Windows?";
    let switcher = "What about for the quick switcher?";
    assert_eq!(
        in_place_of(palette, switcher, &mut titles).as_deref(),
        Some("What's the keyboard shortcut for the quick switcher on Windows?")
    );
    assert_eq!(
        in_place_of(palette, "Does the quick switcher have one?", &mut titles),
        None
    );
    assert_eq!(in_place_of(palette, "And on Mac?", &mut titles), None);
    // The title is put in place of the earlier one as whole words only.
    assert_eq!(
        in_place_of(
            "Did Terrarians like Terraria?",
            "And Stardew Valley?",
            &mut titles
        )
        .as_deref(),
        Some("Did Terrarians like Stardew Valley?")
    );
    // Named in any case, as whole words only.
    assert_eq!(
        moved_to(
            "What's the shortcut for the Command Palette? Command palettes?",
            "And for the quick switcher?",
            &mut titles
        ),
        "What's the shortcut for the ? Command palettes?"
    );
    // A follow-up naming no note, the same one, or pointing back at the one before, leans
    // on all of it.
    assert_eq!(
        moved_to(
            shortcut_of_palette(),
            "Does it beat the quick switcher?",
            &mut titles
        ),
        shortcut_of_palette()
    );
    let shortcut = shortcut_of_palette();
    assert_eq!(moved_to(shortcut, "And on Mac?", &mut titles), shortcut);
    assert_eq!(
        moved_to(shortcut, "And the command palette on Mac?", &mut titles),
        shortcut
    );
}

fn shortcut_of_palette() -> &'static str {
    "What's the shortcut for the command palette?"
}

#[test]
fn a_title_is_taken_out_only_where_the_lowercase_text_keeps_its_places() {
    assert_eq!(
        without_words("Cost of Stardew Valley? stardew valley!", "stardew valley"),
        "Cost of ? !"
    );
    // "İ" lowercases to two characters: the text stays as it is rather than be cut wrong.
    let turkish = "İstanbul trip: Stardew Valley cost?";
    assert_eq!(without_words(turkish, "stardew valley"), turkish);
}

#[test]
fn a_follow_up_naming_only_another_day_asks_the_question_before_of_that_day() {
    let asked = |first: &str, follow_up: &str| {
        let conversation = [
            Message::user(first),
            Message::assistant("At 23:16 [1]."),
            Message::user(follow_up),
        ];
        searched_for(follow_up, &conversation, TODAY, &mut no_titles).meant
    };
    let bed = "What time did I go to bed on 20 January 2022?";
    assert_eq!(
        asked(bed, "And the night before?").as_deref(),
        Some("What time did I go to bed on 19 January 2022?")
    );
    assert_eq!(
        asked("What did I do on 2021-05-11?", "What about the day after?").as_deref(),
        Some("What did I do on 2021-05-12?")
    );
    assert_eq!(
        asked("2022年1月20日几点睡的？", "那前一天呢？").as_deref(),
        Some("2022年1月19日几点睡的？")
    );
    assert_eq!(
        asked("What did I eat on 3 March?", "And the next day?").as_deref(),
        Some("What did I eat on 4 March?")
    );
    // A chain is asked of the day after the day after, as the first question asked it.
    let conversation = [
        Message::user(bed),
        Message::assistant("At 23:16 [1]."),
        Message::user("And the next day?"),
        Message::assistant("At 22:42 [1]."),
        Message::user("And the next day?"),
    ];
    assert_eq!(
        searched_for("And the next day?", &conversation, TODAY, &mut no_titles)
            .meant
            .as_deref(),
        Some("What time did I go to bed on 22 January 2022?")
    );
    // Asking more than which day, or after a day not written as a date: asked as typed.
    assert_eq!(asked(bed, "And what did I eat the night before?"), None);
    assert_eq!(
        asked("What did I do yesterday?", "And the day before?"),
        None
    );
    assert_eq!(
        asked("Where was I 3 days ago?", "And the day before?"),
        None
    );
}
