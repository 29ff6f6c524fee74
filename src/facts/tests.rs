//! The fact check's cases: what stands in the sources and what does not.

use super::*;

fn known(texts: &[&str]) -> KnownFacts {
    KnownFacts::new(texts.iter().copied())
}

#[test]
fn a_number_found_nowhere_is_unsupported() {
    let given = known(&[
        "What salary range was advertised for the biologist job?",
        "Résumé › Experience\nField technician, 2019-2021. Paid $18 an hour.",
    ]);
    assert_eq!(
        given.unsupported("It was $75,000 to $100,000 per year [3].", true),
        ["75,000", "100,000"]
    );
    assert!(
        given
            .unsupported("It paid $18 an hour [2].", true)
            .is_empty()
    );
    assert!(
        given
            .unsupported("From 2019 to 2021 [1, 2].", true)
            .is_empty()
    );
    // Digits written on to letters are part of a name, checked as one; a figure after it is
    // checked as any.
    assert_eq!(
        known(&[]).unsupported("AB1908's birthday is 5 May 1999 [1].", true),
        ["5 May 1999"]
    );
}

#[test]
fn numbers_match_in_other_forms() {
    let given = known(&[
        "Sync keeps 1,000 versions for 12 months; meetings at 9:05 on 2021-05-11.",
        "The concert is on March 3rd, 2022.",
    ]);
    for answer in [
        "It keeps 1000 versions.",
        "For 12 months.",
        "At 09:05.",
        "On 2021-05-11 [1].",
        "On 11/05/2021.",
        "On 2022-03-03.",
        "On 3 March 2022.",
        "保留1,000个版本。",
    ] {
        assert!(given.unsupported(answer, true).is_empty(), "{answer}");
    }
    assert_eq!(given.unsupported("On 2021-05-12.", true), ["2021-05-12"]);
    // A date with its month's name is checked whole: its year and day stand elsewhere.
    assert_eq!(
        given.unsupported("On 3 May 2021, at 9:05.", true),
        ["3 May 2021"]
    );
    assert_eq!(
        given.unsupported("By March 12th, 2022 [2].", true),
        ["March 12th, 2022"]
    );
    assert!(
        given
            .unsupported("In 12 months, 2021 [1].", true)
            .is_empty()
    );
    assert_eq!(
        given.unsupported("It keeps 10,000 versions.", true),
        ["10,000"]
    );
    // A decimal comma is a decimal point, and dots between groups of three may separate
    // thousands: an answer may write a European source's amount either way.
    let given = known(&["Mittagessen 4,60 € pro Tag. Kaufpreis 3.950 €, Anzahlung 1.000 €."]);
    for answer in [
        "Lunch is 4.60 € a day.",
        "Das Mittagessen kostet 4,60 € [1].",
        "It cost 3,950 € [1].",
        "Es kostete 3.950 € [1].",
        "A deposit of 1000 € [1].",
    ] {
        assert!(given.unsupported(answer, true).is_empty(), "{answer}");
    }
    assert_eq!(given.unsupported("Lunch is 4.70 € a day.", true), ["4.70"]);
    assert_eq!(given.unsupported("It cost 3,590 €.", true), ["3,590"]);
}

#[test]
fn a_date_without_its_year_is_a_fact() {
    let given = known(&[
        "2025-04-28 Tax appointment\n- he's filing tomorrow (deadline 1 May)",
        "Lisbon trip: flights on June 12th, 2025.",
    ]);
    for answer in [
        "The deadline is 1 May [1].",
        "By May 1st.",
        "On 28 April.",
        "They fly on 12 June.",
        "The 12th of June [2].",
    ] {
        assert_eq!(
            given.unsupported(answer, true),
            Vec::<String>::new(),
            "{answer}"
        );
    }
    assert_eq!(
        given.unsupported("The deadline is 3 May [1].", true),
        ["3 May"]
    );
    // Its year added from a source: a day written without one, in a year they hold.
    assert!(
        given
            .unsupported("The deadline is 1 May 2025 [1].", true)
            .is_empty()
    );
    assert_eq!(
        given.unsupported("The deadline is 1 May 2026 [1].", true),
        ["1 May 2026"]
    );
    // A year's day moved to another year is no such date.
    assert_eq!(
        given.unsupported("The appointment was on 28 April 2024.", true),
        ["28 April 2024"]
    );
    let given = known(&["Daily › 2024-07-26", "- [x] 7/8 拆旧\n- 7:30 开会"]);
    assert!(
        given
            .unsupported("开工日期是2024年7月8日。", true)
            .is_empty()
    );
    assert!(given.unsupported("开工日期是2024-07-08。", true).is_empty());
    assert_eq!(
        given.unsupported("开会是2024年7月30日。", true),
        ["2024年7月30日"]
    );
    assert_eq!(given.unsupported("It is due May 2.", true), ["May 2"]);
    assert_eq!(given.unsupported("It is due on 2 May.", true), ["2 May"]);
    // Other words than months, and "may" the verb, are no dates.
    let given = known(&["Nothing here."]);
    assert!(
        given
            .unsupported("Within 2 decisions, 5 may be enough; see 3 marches.", true)
            .is_empty()
    );
    // A stream holds a date led by its month from the month's name.
    assert_eq!(first_fact("The deadline is May 1.", true), Some(16));
    // Dates in Chinese, Japanese and Korean are dates too, with their year or not.
    let given = known(&["婚礼 2025-10-18，搬家 3月5日"]);
    for answer in ["婚礼是10月18日。", "2025年10月18号", "3월 5일", "3月5日"] {
        assert_eq!(
            given.unsupported(answer, true),
            Vec::<String>::new(),
            "{answer}"
        );
    }
    assert_eq!(given.unsupported("婚礼是10月5日。", true), ["10月5日"]);
    assert_eq!(given.unsupported("2024年3月5日", true), ["2024年3月5日"]);
}

#[test]
fn single_digits_and_citation_marks_are_no_facts() {
    let given = known(&["- one\n- two\n- three"]);
    assert!(
        given
            .unsupported("There are 3 ways [1][2, 4].", true)
            .is_empty()
    );
    assert_eq!(given.unsupported("There are 12 ways [1].", true), ["12"]);
    // A single digit with a unit or a currency is an amount, read somewhere or nowhere.
    assert_eq!(given.unsupported("It needs 4GB of RAM.", true), ["4"]);
    assert_eq!(
        given.unsupported("It costs $5, for 3 days.", true),
        ["5", "3"]
    );
    let given = known(&["Step 4: keep 4 GB free, for 3 days; it costs $5."]);
    assert!(
        given
            .unsupported("It needs 4GB, costs $5, for 3 days.", true)
            .is_empty()
    );
    assert_eq!(given.unsupported("It needs 4 MB.", true), ["4"]);
    // Another way to write the same amount: `1h`, `7.99$`, `99.00`.
    let given = known(&["training:: 1h 27m, paid:: 7.99$, jacket:: 99$"]);
    assert!(
        given
            .unsupported("Training for 1 hour and 27 minutes; $7.99; $99.00.", true)
            .is_empty()
    );
    // A Chinese unit too.
    let given = known(&["小火炖 2.5小时，再焖2小时，放3天"]);
    assert_eq!(given.unsupported("排骨藕汤需要炖约1小时。", true), ["1"]);
    assert!(
        given
            .unsupported("炖2.5小时，焖2小时，可以放3天。", true)
            .is_empty()
    );
    assert!(given.unsupported("有3种做法。", true).is_empty());
}

#[test]
fn key_combinations_must_stand_in_a_source() {
    let given =
        known(&["Open the command palette with `Ctrl + P` (or Cmd/Ctrl+Shift+F to search)."]);
    assert!(given.unsupported("Press Ctrl+P [1].", true).is_empty());
    assert!(given.unsupported("Use Cmd+Shift+F.", true).is_empty());
    assert_eq!(
        given.unsupported("Press Ctrl+Shift+O to export [1].", true),
        ["Ctrl+Shift+O"]
    );
    // A modifier named alone is no combination (nor a name).
    assert!(
        given
            .unsupported("Hold Shift while dragging.", true)
            .is_empty()
    );
    // Another key is another combination.
    let given = known(&["Switch tabs with `Ctrl+Tab`; close with Ctrl+W."]);
    assert_eq!(given.unsupported("Press Ctrl+T [1].", true), ["Ctrl+T"]);
    assert!(given.unsupported("Press Ctrl+W [1].", true).is_empty());
}

#[test]
fn a_name_must_stand_in_a_source() {
    let mut given = known(&[
        "Teams › Commercial license\nA commercial license is charged per seat. Bookmark it.",
    ]);
    given.know_names_in("In which country does the team behind Obsidian work?");
    assert_eq!(
        given.unsupported(
            "It is headquartered in San Francisco, California [1].",
            true
        ),
        ["San", "Francisco", "California"]
    );
    // The question's names, a source's words in another form, a sentence's first word,
    // months and abbreviations are no invention.
    for answer in [
        "Obsidian charges per seat [1].",
        "See the Commercial license under Teams, in Bookmarks.",
        "Unfortunately the notes do not say.",
        "It is charged per seat since March, in USD.",
    ] {
        assert!(given.unsupported(answer, true).is_empty(), "{answer}");
    }
    // Text that goes on with a sentence begun before it: its first word may be a name.
    assert_eq!(
        given.unsupported("Isaac Asimov.", false),
        ["Isaac", "Asimov"]
    );
    assert_eq!(given.unsupported("Isaac Asimov.", true), ["Asimov"]);
    // A hyphenated name stands where its parts do, or where it is written as one word.
    let wifi = known(&["Turn on WiFi first.", "A Peer-to-peer link."]);
    for answer in ["Check the Wi-Fi.", "Open a Peer-to-Peer link."] {
        assert!(wifi.unsupported(answer, true).is_empty(), "{answer}");
    }
    assert_eq!(wifi.unsupported("Use the Wi-Max.", true), ["Wi-Max"]);
}

#[test]
fn a_version_the_question_names_must_stand_in_a_source() {
    let mut given = known(&[
        "Download and install Obsidian\nObsidian runs on Windows 10 and later, macOS 11.",
        "Credits\nLicensed under the Apache License 2.0.",
    ]);
    given.know_question("Does the current installer still support Windows 7?");
    assert_eq!(
        given.unsupported("Yes, it still runs on Windows 7 [1].", true),
        ["Windows 7"]
    );
    // Another version the sources give, or the number alone, is no version asked.
    for answer in [
        "It runs on Windows 10 and later [1].",
        "Step 7 is optional.",
    ] {
        assert!(given.unsupported(answer, true).is_empty(), "{answer}");
    }
    given.know_question("When does Obsidian 2.0 ship?");
    assert_eq!(
        given.unsupported("Obsidian 2.0 is not scheduled yet [2].", true),
        ["Obsidian 2.0"]
    );
    assert!(
        given
            .unsupported("It is under the Apache License 2.0.", true)
            .is_empty()
    );
    // An amount after a name is no version: "Plus 10 GB" is checked as an amount.
    assert_eq!(
        versions_in("Is it 10 GB on Sync Plus 10 GB?"),
        Vec::<String>::new()
    );
    assert_eq!(
        versions_in("Does it run on Windows 11 or Android 12.1?"),
        ["windows11", "android12.1"]
    );
}

#[test]
fn names_are_capitalised_words_past_the_first_of_their_sentence() {
    assert_eq!(
        names_in("Based on the notes, Sophie was out in February. The note says Sophie B left."),
        ["Sophie", "B"]
    );
    assert_eq!(names_in("I met AB1908 at the gym!"), ["AB1908"]);
    assert!(names_in("the notes do not say.").is_empty());
    assert_eq!(names_in("Two friends:\n- Sophie B\n- Elias"), ["B"]);
    // Chinese, Japanese or Korean script next to a name is no part of it.
    let given = known(&["- 维生素D 偏低\n- 我用Obsidian记笔记"]);
    assert!(given.unsupported("D偏低", false).is_empty());
    assert!(given.unsupported("他也用Obsidian。", true).is_empty());
    assert_eq!(given.unsupported("他也用Notion记。", true), ["Notion"]);
    // A hyphenated word is one name.
    assert_eq!(names_in("Check that Wi-Fi is on."), ["Wi-Fi"]);
    // A quote or emphasis closing a sentence leaves the next word its first.
    assert_eq!(
        names_in("Tom wrote \"Cheaper AND sooner.\" This quote came from Murt."),
        ["Cheaper", "Murt"]
    );
    assert_eq!(names_in("**Done.** Then ask Orla."), ["Orla"]);
    // A function word of any language Recall reads, or a month or a weekday, is no name,
    // whatever the language around it.
    assert_eq!(
        names_in("On Monday, I'm told, Orla asked When it was; Sie sagte La Tour in May."),
        ["Orla", "Tour"]
    );
    let text = "so Kenji's phone";
    assert_eq!(
        names(text, false)
            .iter()
            .map(|n| &text[n.clone()])
            .collect::<Vec<_>>(),
        ["Kenji"]
    );
}

#[test]
fn a_stream_can_tell_where_a_fact_may_begin() {
    for (held, from) in [
        ("It costs $7", 9),
        ("Press Ct", 6),
        ("Press Ctrl", 6),
        ("about 1,", 6),
        // A combination streamed a token at a time, with or without spaces.
        ("Press `Ctrl+", 6),
        ("Press `Ctrl+Shift", 6),
        ("Press `Ctrl+Shift+", 6),
        ("is `Cmd +", 3),
        ("is `Cmd + T", 3),
        ("is Cmd ", 3),
        ("is `", 3),
        // A word may go on: "iOS/i" then "PadOS" is no name "PadOS".
        ("It costs a lot", 11),
        ("在 iOS/i", 8),
    ] {
        assert_eq!(unfinished_fact(held), Some(from), "{held}");
    }
    for shown in [
        "It costs a lot.",
        "在笔记里",
        "Press the ",
        "Control panel. ",
        "Shift+Tab, then ",
        "",
    ] {
        assert_eq!(unfinished_fact(shown), None, "{shown}");
    }
    assert_eq!(clause_end("$75 a year, paid"), Some(12));
    assert_eq!(clause_end("1,000 versions"), None);
    assert_eq!(first_fact("See [1]: it costs $75 a year.", true), Some(19));
    assert_eq!(first_fact("Press Ctrl+P [2].", true), Some(6));
    assert_eq!(first_fact("Nothing here [3].", true), None);
    assert_eq!(first_fact("It is in San Francisco [1].", true), Some(9));
    assert_eq!(first_fact("Francisco [1].", false), Some(0));
    assert_eq!(ends_sentence("in Paris [1]. "), Some(true));
    assert_eq!(ends_sentence("the list:\n"), Some(true));
    assert_eq!(ends_sentence("located in "), Some(false));
    assert_eq!(ends_sentence("[4] "), None);
    assert_eq!(ends_sentence("\"easy decision.\" "), Some(true));
    // A citation mark opening a line is no word of its sentence.
    assert_eq!(first_fact("[4] Check the box [1].", true), None);
    // A number after a capitalised word is held with it: it may be a version.
    assert_eq!(first_fact("Obsidian 2.0 is out.", true), Some(0));
    assert_eq!(first_fact("It runs on Windows 7.", true), Some(11));
    assert_eq!(unfinished_fact("It runs on Windows "), Some(11));
}

#[test]
fn dates_in_german_french_and_spanish_are_read_as_dates() {
    // A month named in another language, and a day and month written with dots.
    let given = known(&[
        "Tagebuch › 2025-03-15\nTheorieprüfung gestern bestanden (Fr, 14. März)",
        "Urlaub: Sa 12.07. – Sa 19.07.2025",
        "Journal › rendez-vous le 3 mars 2025",
    ]);
    for answer in [
        "Am 14.03.2025 [1].",
        "Am 14. März 2025 [1].",
        "Wir sind am 12.07.2025 gefahren [2].",
        "Le 3 mars [3].",
        "Le 03.03.2025 [3].",
    ] {
        assert!(given.unsupported(answer, true).is_empty(), "{answer}");
    }
    assert_eq!(
        given.unsupported("Am 15.04.2025 [1].", true),
        ["15.04.2025"]
    );
    assert_eq!(
        given.unsupported("Am 13. März 2025 [1].", true),
        ["13. März 2025"]
    );
    assert_eq!(given.unsupported("Le 4 mars [3].", true), ["4 mars"]);
    // Not a day of the calendar: a number as written.
    assert_eq!(
        given.unsupported("Version 31.13.2025.", true),
        ["31.13.2025"]
    );
    // A month or a weekday in any of those languages is no name.
    assert!(names_in("Bis Dienstag, sagte sie, im März.").is_empty());
    assert_eq!(names_in("Wir trafen Marc im Juni."), ["Marc"]);
}
