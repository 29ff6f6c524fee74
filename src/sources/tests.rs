//! Sources as the model reads them, their headers, and the citations checked against them.

use super::*;

#[test]
fn a_day_written_in_digits_is_spelled_out_as_questions_name_it() {
    assert_eq!(
        with_days_spelled("Journal › 2025-09-28 › Long run", None),
        "Journal › 2025-09-28 (Sunday 28 September 2025) › Long run"
    );
    // As a question in Chinese, Japanese or Korean writes a day.
    for (language, spelled) in [
        (Language::Chinese, "2024年4月9日 星期二"),
        (Language::Japanese, "2024年4月9日 火曜日"),
        (Language::Korean, "2024년 4월 9일 화요일"),
    ] {
        assert_eq!(
            with_days_spelled("Meetings › 2024-04-09-拔智齿", Some(language)),
            format!("Meetings › 2024-04-09 ({spelled})-拔智齿")
        );
    }
    assert_eq!(
        with_days_spelled("Meetings › 2025-07-03 Kitchen contractor visit", None),
        "Meetings › 2025-07-03 (Thursday 3 July 2025) Kitchen contractor visit"
    );
    // A day already in words, a month, or no date: as written.
    for header in [
        "Journal › 28 September 2025",
        "Reading › March 2025",
        "10 Example Data › Books",
    ] {
        assert_eq!(with_days_spelled(header, None), header);
    }
}

fn hit(uri: &str, heading: &[&str], passage: &str) -> api::SearchHit {
    api::SearchHit {
        uri: uri.into(),
        title: uri.rsplit(['/', ':']).next().unwrap_or(uri).into(),
        heading_path: heading.iter().map(|h| h.to_string()).collect(),
        passage: passage.into(),
        excerpt: None,
        score: 1.0,
        link: format!("obsidian://open?vault=v&file={}", uri.len()),
        matched: api::Matched::Words,
    }
}

#[test]
fn a_note_read_shows_its_properties_first() {
    let properties = serde_json::json!({
        "birthday": "1984-06-14",
        "aliases": ["Eli", "E."],
        "age": 41,
    });
    let read = VaultResult::Read(api::ReadOutput {
        uri: "note://People/Elias".into(),
        title: "Elias".into(),
        frontmatter: properties.as_object().cloned(),
        frontmatter_error: None,
        content: "\n# Elias\nMet at the station.".into(),
        next_offset: None,
        total_chars: 28,
        link: "obsidian://open?vault=v&file=People%2FElias".into(),
    });
    let mut sources = Sources::default();
    let text = sources.add(&read);
    assert!(
        text.ends_with(
            "birthday: 1984-06-14\naliases: Eli, E.\nage: 41\n# Elias\nMet at the station."
        ),
        "{text}"
    );
    assert!(sources.list()[0].text.starts_with("birthday: 1984-06-14\n"));

    // A later page starts where the text does: the properties were on the first.
    let next_page = VaultResult::Read(api::ReadOutput {
        uri: "note://People/Elias".into(),
        title: "Elias".into(),
        frontmatter: properties.as_object().cloned(),
        frontmatter_error: None,
        content: "the station.".into(),
        next_offset: None,
        total_chars: 28,
        link: "obsidian://open?vault=v&file=People%2FElias".into(),
    });
    let text = sources.add(&next_page);
    assert!(!text.contains("birthday"), "{text}");
    assert!(text.ends_with("the station."), "{text}");
}

fn search(hits: Vec<api::SearchHit>) -> VaultResult {
    VaultResult::Search(api::SearchOutput {
        hits,
        ranking: api::Ranking::Lexical,
        embedded: None,
    })
}

#[test]
fn copied_source_headers_are_taken_out_whatever_their_number() {
    let mut sources = Sources::default();
    sources.add(&search(vec![
        hit(
            "note://2-factor authentication",
            &["Recover your account"],
            "Use a recovery code.",
        ),
        hit("note://Backlinks", &["Show backlinks"], "Linked mentions."),
        hit("note://Canvas", &[], "Cards on a board."),
        hit(
            "note://Plugins/Core/Outline",
            &["Use"],
            "Headings as a tree.",
        ),
    ]));
    let cut = |answer: &str| without_copied_headers(answer, sources.list());
    // As the answer step reads it, folders first, whole or cut; or as a decision step does.
    assert_eq!(
        cut("- [4] Plugins › Core › Outline › Use\n- [4] Plugins › Core\n- [4] Outline:"),
        "- \n- \n- :"
    );
    // Whole, cut at a `›`, or the title alone, after any number.
    assert_eq!(
        cut(
            "1. [2] 2-factor authentication\n2. [3] 2-factor authentication › Recover your account"
        ),
        "1. \n2. "
    );
    // A mark after the sentence it closes stays; its header goes.
    assert_eq!(cut("Press Ctrl+P. [2] Backlinks\n"), "Press Ctrl+P. [2] \n");
    assert_eq!(
        cut("[2] Backlinks › Show backlinks (note://Backlinks)\nThe [1] Canvas (note://Canvas)"),
        "[2] \nThe [1] "
    );
    // The header form, even of a source that was not given.
    assert_eq!(cut("4. [4] Sidebar › Left (note://UI/Sidebar)"), "4. ");
    assert_eq!(
        cut("Cut short: [9] Sidebar (note://UI/Sid"),
        "Cut short: [9] "
    );
    // A header over text of the model's own keeps its mark, as the prompt's header does.
    assert_eq!(
        cut("- [1] 2-factor authentication › Recover your account\nUse a recovery code."),
        "- [1] \nUse a recovery code."
    );
    // A title the answer goes on to use in a sentence of its own, or one without a mark
    // before it, stays.
    assert_eq!(
        cut("[3] Canvas cards hold notes. Open Backlinks [2]."),
        "[3] Canvas cards hold notes. Open Backlinks [2]."
    );
    assert_eq!(cut("[1] Canvasses"), "[1] Canvasses");
}

/// A closing `[1, 3]` after an answer that lists every source vouches for its own
/// sentence: the words of the list are no reason to move it to the source with the most
/// unusual words. A wrong number in a sentence of its own still moves.
#[test]
fn citations_are_checked_sentence_by_sentence() {
    let mut sources = Sources::default();
    sources.add(&search(vec![
        hit(
            "note://Bases",
            &[],
            "Bases are database views of your notes.",
        ),
        hit(
            "note://Views",
            &[],
            "Sort and filter a view from its toolbar.",
        ),
        hit(
            "note://Core plugins",
            &[],
            "Audio recorder, Backlinks, Bookmarks, Canvas, Command palette.",
        ),
    ]));
    let question = "How do I make a table of my notes?";
    let listed = "1. Bases: database views of your notes.\n2. Views: sort and filter \
                  from the toolbar.\n3. Core plugins: audio recorder, backlinks, \
                  bookmarks, canvas and the command palette.\n\nFollow these steps. [1, 2]";
    let cited = sources.citations(question, listed, None);
    let numbers: Vec<usize> = cited.iter().map(|c| c.number).collect();
    assert_eq!(numbers, [1, 2]);
    assert!(cited.iter().all(|c| c.replaces.is_empty()));

    let wrong = "Sort and filter it from the toolbar [1]. Bases are database views [1].";
    let cited = sources.citations(question, wrong, None);
    let numbers: Vec<usize> = cited.iter().map(|c| c.number).collect();
    assert_eq!(numbers, [1, 2], "[1] stands for its own sentence");
    assert_eq!(cited[1].replaces, [1]);
}

#[test]
fn sources_are_numbered_once_and_rendered_with_their_heading_path() {
    let mut sources = Sources::default();
    let text = sources.add(&search(vec![
        hit(
            "note://Exams",
            &["Biology", "Midterm"],
            "Room 204, March 3.",
        ),
        hit("note://Cells", &[], "Cells are small."),
    ]));
    assert_eq!(
        text,
        "[1] Exams › Biology › Midterm (note://Exams)\nRoom 204, March 3.\n\n\
         [2] Cells (note://Cells)\nCells are small."
    );
    // The same passage again keeps its number, without its text; a new one gets the next.
    let text = sources.add(&search(vec![
        hit("note://Cells", &[], "Cells are small."),
        hit("note://Cells", &["Parts"], "Nucleus."),
    ]));
    assert_eq!(
        text,
        "[2] Cells (note://Cells): as above.\n\n[3] Cells › Parts (note://Cells)\nNucleus."
    );
    // The answer step reads the headers without URIs, the folders kept; a passage's own
    // text is kept whole.
    assert_eq!(
        headers_for_answer(&format!("{text}\nSee [9] Cells (note://Cells)."), None),
        "[2] Cells: as above.\n\n[3] Cells › Parts\nNucleus.\nSee [9] Cells (note://Cells)."
    );
    let mut nested = Sources::default();
    let text = nested.add(&search(vec![hit(
        "note://Biology/Exams",
        &["Midterm"],
        "Room 204.",
    )]));
    assert_eq!(
        headers_for_answer(&text, None),
        "[1] Biology › Exams › Midterm\nRoom 204."
    );
    assert_eq!(sources.list().len(), 3);
    assert_eq!(sources.references(), ["note://Exams", "note://Cells"]);
    assert_eq!(sources.sections(), ["Midterm", "Parts"]);
}

#[test]
fn later_hits_read_as_the_vaults_excerpt_the_best_one_whole() {
    let mut sources = Sources::for_question("when is the midterm?");
    let with_excerpt = |uri, passage: &str, excerpt: &str| api::SearchHit {
        excerpt: Some(excerpt.into()),
        ..hit(uri, &[], passage)
    };
    let text = sources.add(&search(vec![
        with_excerpt("note://Exams", "Midterm: Room 204. Bring a pen.", "…"),
        with_excerpt(
            "note://Dates",
            "Term starts in May. The **midterm** is on March 3.",
            "… The **midterm** is on March 3.",
        ),
    ]));
    assert_eq!(
        text,
        "[1] Exams (note://Exams)\nMidterm: Room 204. Bring a pen.\n\n\
         [2] Dates (note://Dates)\n… The midterm is on March 3."
    );
    // The quote a person is shown keeps the whole passage.
    assert_eq!(
        sources.list()[1].passage,
        "Term starts in May. The **midterm** is on March 3."
    );
}

/// A second reading shows a source whole, as plain text, past the cut the first reading
/// made; its citation is then checked against what was read.
#[test]
fn a_source_shown_whole_reads_as_its_whole_passage() {
    let mut sources = Sources::for_question("when is the midterm?");
    let long = format!(
        "The **midterm** is on March 3. {} Bring a pen.",
        "Filler words about nothing. ".repeat(40)
    );
    sources.add(&search(vec![hit(
        "note://Courses/Exams",
        &["Midterm"],
        &long,
    )]));
    assert!(!sources.list()[0].text.contains("Bring a pen."));
    let text = sources.show_whole(1, 2000);
    assert!(
        text.starts_with("[1] Courses › Exams › Midterm\nThe midterm is on March 3."),
        "{text}"
    );
    assert!(text.ends_with("Bring a pen."), "{text}");
    assert!(sources.list()[0].text.ends_with("Bring a pen."));
    // Bounded all the same: cut by the question's words.
    let cut = sources.show_whole(1, 200);
    assert!(cut.contains("midterm is on March 3"), "{cut}");
    assert!(cut.chars().count() < 260, "{cut}");
}

#[test]
fn citations_are_the_cited_sources_else_all_given_marked_uncited() {
    let mut sources = Sources::default();
    sources.add(&search(vec![
        hit("note://A", &["H"], "a"),
        hit("note://B", &[], "b"),
        hit("note://C", &[], "c"),
    ]));
    let cited = sources.citations("What?", "It is a [1] and c [3]. Not [9].", None);
    let numbers: Vec<usize> = cited.iter().map(|c| c.number).collect();
    assert_eq!(numbers, [1, 3]);
    assert!(cited.iter().all(|c| c.cited));
    assert_eq!(cited[0].heading_path, ["H"]);

    let given = sources.citations("What?", "No numbers here [9].", None);
    assert_eq!(given.len(), 3);
    assert!(given.iter().all(|c| !c.cited));
}

/// Every source listed is not every source used: a copied list of headers cites nothing,
/// while a mark after the sentence it closes still cites.
#[test]
fn the_marks_of_copied_source_headers_cite_nothing() {
    let mut sources = Sources::default();
    sources.add(&search(vec![
        hit(
            "note://Shortcuts",
            &["Mac"],
            "Cmd+Shift+K deletes the line.",
        ),
        hit("note://Cursors", &[], "Hold Alt and click."),
    ]));
    let question = "Which keys delete a line on a Mac?";
    let listed = "Press Cmd+Shift+K.\n\n- [1] Shortcuts › Mac (note://Shortcuts)\n\
                  - [2] Cursors (note://Cursors)";
    let cited = sources.citations(question, listed, None);
    assert_eq!(cited.len(), 2);
    assert!(cited.iter().all(|c| !c.cited), "{cited:?}");
    // A header over what the model took from that source vouches for it.
    let headed = "[1] Shortcuts › Mac (note://Shortcuts)\nPress Cmd+Shift+K.\n\n\
                  [2] Cursors (note://Cursors)";
    let cited = sources.citations(question, headed, None);
    let numbers: Vec<(usize, bool)> = cited.iter().map(|c| (c.number, c.cited)).collect();
    assert_eq!(numbers, [(1, true)]);
    let listed = "Press Cmd+Shift+K [1].\n\nSources:\n1. [1] Shortcuts › Mac\n2. [2] Cursors";
    let cited = sources.citations(question, listed, None);
    let numbers: Vec<(usize, bool)> = cited.iter().map(|c| (c.number, c.cited)).collect();
    assert_eq!(numbers, [(1, true)]);
}

/// The opening before the first source header is the model's own answer, vouched for by
/// no mark; a mark that closes text leaves no such opening.
#[test]
fn an_opening_before_copied_sources_is_unvouched() {
    let copied = "Press Cmd+Shift+K to delete the line.\n\n- [2] Cursors (note://Cursors)\n\
                  Hold Alt and click.";
    assert_eq!(
        unvouched_opening(copied),
        "Press Cmd+Shift+K to delete the line."
    );
    assert_eq!(
        unvouched_opening("[1] Shortcuts › Mac\nPress Cmd+Shift+K."),
        ""
    );
    assert_eq!(
        unvouched_opening("Press Cmd+Shift+K [1].\n\n[2] Cursors"),
        ""
    );
    assert_eq!(unvouched_opening("Press Cmd+Shift+K."), "");
}

#[test]
fn links_and_listings_add_references_not_sources() {
    let mut sources = Sources::default();
    let text = sources.add(&VaultResult::Links(api::LinksOutput {
        uri: "note://A".into(),
        outgoing: vec![
            api::OutgoingLink {
                target: "B".into(),
                uri: Some("note://B".into()),
            },
            api::OutgoingLink {
                target: "gone".into(),
                uri: None,
            },
        ],
        backlinks: vec![api::Backlink {
            uri: "note://C".into(),
            title: "C".into(),
        }],
        outgoing_total: 2,
        backlinks_total: 1,
    }));
    assert!(text.contains("links to note://B") && text.contains("linked from C"));
    assert!(sources.list().is_empty());
    assert_eq!(sources.references(), ["note://B", "note://C"]);
}
