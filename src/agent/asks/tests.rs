//! Tests of what a question asks for and whether an answer holds it.

use super::*;

#[test]
fn an_answer_to_a_question_asking_keys_names_a_key_or_says_there_is_none() {
    for question in [
        "Hotkey to close every open tab?",
        "Keyboard shortcut to toggle the left sidebar?",
        "Which key do I press to turn off snapping?",
        "切换主题的快捷键是什么？",
    ] {
        assert_eq!(
            Wanted::in_question(question),
            Some(Wanted::Keys),
            "{question}"
        );
    }
    assert_eq!(Wanted::in_question("How do I print a note?"), None);
    for question in [
        "舅舅电话",
        "厨房工长的电话多少？",
        "她手机是多少",
        "电话号码是什么",
    ] {
        assert_eq!(
            Wanted::in_question(question),
            Some(Wanted::Phone),
            "{question}"
        );
    }
    for question in ["我给舅舅打电话了吗？", "我的手机是什么时候买的？"] {
        assert_eq!(Wanted::in_question(question), None, "{question}");
    }
    for answer in [
        "Press `Ctrl+P` [1].",
        "Hold Space while dragging [2].",
        "Press Shift+Enter.",
        "Type `/` to open the menu.",
        "There is no default hotkey; you can assign one in Settings [1].",
        "It doesn't have a shortcut, but you can set your own hotkey [1].",
        "按 ⌘ + P 打开命令面板。",
        "按Ctrl+S保存。",
    ] {
        assert!(Wanted::Keys.held_in(answer), "{answer}");
    }
    for answer in [
        "To print the current note, use the command Templates: Insert template [1].",
        "The Light/Dark Toggle option in the Appearance settings switches the theme [1].",
    ] {
        assert!(!Wanted::Keys.held_in(answer), "{answer}");
    }
}

#[test]
fn a_time_of_day_asked_for_is_a_clock_time_or_a_time_in_words() {
    for question in ["what time was dad's eye appointment", "约的几点？"] {
        assert_eq!(
            Wanted::in_question(question),
            Some(Wanted::Time),
            "{question}"
        );
    }
    assert_eq!(Wanted::in_question("tadhg's number"), Some(Wanted::Phone));
    // Written against Chinese characters too: no word boundary in Unicode's reading.
    for answer in [
        "At 10:30 [1].",
        "Half past ten.",
        "下午3点",
        "at 9am",
        "2月18号，策划约了14:30在工作室。",
    ] {
        assert!(Wanted::Time.held_in(answer), "{answer}");
    }
    assert!(!Wanted::Time.held_in("The hearing test was on 19 April [1]."));
}

#[test]
fn questions_asking_for_a_figure_are_told_from_others() {
    for question in [
        "When is Ruth's birthday?",
        "How much did the electrician charge for rewiring the shed?",
        "What's the deadline for the garden shed permit?",
        "What's my physio's phone number?",
        "How many pages has the book?",
        "What year did I move?",
        "flight number for the trip back from lisbon",
        "what does áine get paid an hour at the bakery",
        "What's the rent on the allotment?",
        "妈的医保卡号码",
        "我什么时候去的牙医？",
        "婚礼是哪天",
        "约的几点",
        "拍了几张照片",
        "考了第几名",
        "誕生日は何日？",
        "생일이 며칠이야?",
    ] {
        assert!(asks_a_figure(question), "{question}");
    }
    for question in [
        "Who did I spend Easter with?",
        "What did I eat in Lisbon?",
        "Did I email Lena?",
        "Have I paid the gas bill?",
        "Who paid for dinner?",
        "我几乎每天都游泳吗",
    ] {
        assert!(!asks_a_figure(question), "{question}");
    }
}

#[test]
fn questions_asking_for_a_name_are_told_from_others() {
    for question in [
        "Who fixed the boiler?",
        "Where did I buy the kettle?",
        "What's the name of the bakery?",
        "What brand is my kettle?",
        "帮我装修的那个设计师叫什么名字？",
        "厨房水槽是什么牌子的",
        "在哪买的",
        "谁推荐的",
        "name of the hotel we stayed in",
        "which potato variety did i plant",
        "whats the chiropodists name",
    ] {
        assert!(asks_a_name(question), "{question}");
    }
    for question in [
        "When is Ruth's birthday?",
        "How do I undo that?",
        "谁的生日是几号？",
        "为什么要备份",
        "Which file formats can I embed?",
        "the plumber who came back about the leak, what's his email?",
        "Where is the shortcut to open settings?",
    ] {
        assert!(!asks_a_name(question), "{question}");
    }
}

#[test]
fn the_kind_of_figure_asked_and_given_is_told() {
    for (question, kind) in [
        ("How much did the plumber charge?", Some(FigureKind::Amount)),
        ("how long was the flight", Some(FigureKind::Amount)),
        ("蜜月总共花掉多少钱了", Some(FigureKind::Amount)),
        ("拍了几张照片", Some(FigureKind::Amount)),
        ("When is Ruth's birthday?", Some(FigureKind::Day)),
        ("What year did I move?", Some(FigureKind::Day)),
        ("婚礼是哪天", Some(FigureKind::Day)),
        ("2月18号跟策划约的几点", Some(FigureKind::Time)),
        ("What time was the hearing test?", Some(FigureKind::Time)),
        ("What's my physio's phone number?", None),
        ("flight number for the way home", None),
        ("the number of pages", Some(FigureKind::Amount)),
        (
            "what does áine get paid an hour at the bakery",
            Some(FigureKind::Amount),
        ),
        ("What did the electrician charge?", Some(FigureKind::Amount)),
        ("考了第几名", None),
    ] {
        assert_eq!(FigureKind::asked(question), kind, "{question}");
    }
    for (figure, after, kind) in [
        ("3 March 2025", "", FigureKind::Day),
        ("2月18日", "", FigureKind::Day),
        ("2025-02-18", "", FigureKind::Day),
        ("18/02/2025", "", FigureKind::Day),
        ("2024", "2024 you moved", FigureKind::Day),
        ("14:30", "", FigureKind::Time),
        ("3", "3pm", FigureKind::Time),
        ("2", "2点", FigureKind::Time),
        ("72.65", "72.65 a week", FigureKind::Amount),
        ("34000", "34000元", FigureKind::Amount),
    ] {
        assert_eq!(FigureKind::of(figure, after), kind, "{figure}");
    }
}

#[test]
fn each_kind_the_model_names_asks_what_its_question_words_ask() {
    for (kind, question) in [
        (Kind::Date, "When is Ruth's birthday?"),
        (Kind::Time, "What time was the hearing test?"),
        (Kind::Amount, "How many pages has the book?"),
        (Kind::Phone, "What's my physio's phone number?"),
        (Kind::Number, "flight number for the trip back"),
        (Kind::Email, "What's Lena's email address?"),
        (Kind::Name, "Who fixed the boiler?"),
        (Kind::Keys, "Hotkey to close every open tab?"),
        (Kind::List, "Which books did I lend out?"),
        (Kind::Other, "How do I undo that?"),
    ] {
        assert_eq!(
            kind.asks(),
            Asks::in_words(question),
            "{kind:?}: {question}"
        );
    }
}

#[test]
fn the_model_may_reply_each_kind_and_nothing_else() {
    let gbnf = Kind::gbnf();
    assert!(gbnf.starts_with("root ::= \"day\" | "), "{gbnf}");
    for (at, word) in Kind::WORDS.iter().enumerate() {
        assert!(gbnf.contains(&format!("\"{word}\"")), "{word}");
        assert!(Kind::at(at).is_some(), "{word}");
    }
    assert_eq!(gbnf.matches('|').count(), Kind::WORDS.len() - 1);
    assert_eq!(Kind::at(Kind::WORDS.len()), None);
}
