//! Tests of the figure and name check's pure parts: which questions it reads, which line.

use super::records::record_label;
use super::*;

/// The line an answer's figure stands in, the kind of figure read from the question's words.
fn find(question: &str, answer: &str, sources: &[Source]) -> Option<FigureLine> {
    FigureLine::find(
        question,
        Asks::in_words(question).figure_kind,
        answer,
        sources,
    )
}

fn source(number: usize, title: &str, passage: &str) -> Source {
    Source {
        number,
        uri: format!("note://{title}"),
        title: title.to_string(),
        heading_path: Vec::new(),
        link: String::new(),
        text: passage.to_string(),
        passage: passage.to_string(),
    }
}

#[test]
fn the_line_a_figure_stands_in_is_found_under_its_heading() {
    let sources = [
        source(
            1,
            "Kitchen Renovation",
            "# Kitchen\n## Costs\nQuote from Smit: €14,750 incl. VAT.\nTiles not included.",
        ),
        source(
            2,
            "Home",
            "## Landlord\n- phone: 06 4410 2287\n## Notes\n- 21 March 2025 plumber fixed the tap",
        ),
    ];
    let found = find(
        "How much did the plumber charge?",
        "The plumber charged €14,750 [1].",
        &sources,
    )
    .expect("a figure in a line");
    assert_eq!(found.figure, "€14,750");
    assert_eq!(found.place, "Kitchen Renovation › Costs");
    assert_eq!(found.shown(), "Quote from Smit: €14,750 incl. VAT.");

    let found = find(
        "What's my physio's phone number?",
        "It is 06 4410 2287.",
        &sources,
    )
    .expect("a phone number in a line");
    assert_eq!(found.figure, "06 4410 2287");
    assert_eq!(found.place, "Home › Landlord");
    assert_eq!(found.shown(), "- phone: 06 4410 2287");
    assert_eq!(found.claim, "It is 06 4410 2287.");

    // Of two lines holding the figure, the one in the source the answer cites is read: the
    // day's line and the project's own figures both hold 1046.
    let sources = [
        source(1, "2024-10-19", "- 公众号 关注 破 1000 了！现在 1046 🎉"),
        source(
            2,
            "几何小屋公众号",
            "## 数据\n- 关注数:: 312 （5月6号）\n- 关注数:: 1046 （10月19号）",
        ),
    ];
    let found = find(
        "公众号现在有多少人关注了？",
        "公众号现在有1046人关注了。[2]",
        &sources,
    )
    .expect("a figure in a line");
    assert_eq!(found.place, "几何小屋公众号 › 数据");
    assert_eq!(found.line, "- 关注数:: 1046 （10月19号）");
    let found = find(
        "公众号现在有多少人关注了？",
        "公众号现在有1046人关注了。[1]",
        &sources,
    )
    .expect("a figure in a line");
    assert_eq!(found.place, "2024-10-19");

    // The line before says what a figure of its own is about; a heading starts afresh.
    let day = source(
        3,
        "2022-01-05",
        "## Money spent\nbought:: cake\npaid:: 7.99$\n\nbought:: jacket\npaid:: 99$",
    );
    let found = find(
        "How much did I pay for the jacket?",
        "The jacket cost 99 dollars [3].",
        &[day],
    )
    .expect("a figure in a line");
    assert_eq!(found.place, "2022-01-05 › Money spent");
    assert_eq!(found.shown(), "bought:: jacket\npaid:: 99$");

    // A table's row is read under its header, not under the row before.
    let quotes = source(
        4,
        "Workshop roof",
        "## Quotes\n| Who | Price |\n|---|---|\n| Pádraig Coyne | €3,850 |\n| Cathal Flaherty | €4,250 |",
    );
    let found = find(
        "how much did the other roofer want, cathal",
        "The other roofer wanted €4,250 [4].",
        &[quotes],
    )
    .expect("a figure in a row");
    assert_eq!(
        found.shown(),
        "| Who | Price |\n| Cathal Flaherty | €4,250 |"
    );
}

#[test]
fn a_figure_is_read_whole_in_the_sentence_that_gives_it() {
    let answer = "Anna is my sister. Her number is +31 6 4182 7730. She spent 40.00 here.";
    assert_eq!(whole_figure(answer, "31"), "+31 6 4182 7730");
    assert_eq!(
        sentence_with(answer, "31"),
        "Her number is +31 6 4182 7730."
    );
    assert_eq!(whole_figure(answer, "40.00"), "40.00");
    assert_eq!(sentence_with(answer, "40.00"), "She spent 40.00 here.");
    let marked = without_marks("It cost €20 [1] . Or €30 [2].");
    assert_eq!(sentence_with(&marked, "20"), "It cost €20.");
    assert_eq!(find_whole("In 2022 I did 20.", "20"), Some(14));
    // A sentence in Chinese ends at its full stop; where the answer comes from is left out.
    let answer = without_marks("根据[1] Daily › 2024-10-19中的信息，编辑叫浩子。他跑了5公里。");
    assert_eq!(sentence_with(&answer, "浩子"), "编辑叫浩子。");
    assert_eq!(sentence_with(&answer, "5"), "他跑了5公里。");
    assert_eq!(
        sentence_with("According to the note, Sam fixed it.", "Sam"),
        "Sam fixed it."
    );
}

#[test]
fn a_day_from_a_notes_title_is_checked_on_the_line_that_bears_on_the_question() {
    let sources = [source(
        1,
        "2025-02-14",
        "Work was long.\nValentine's dinner with Ruth at Héron.\nWalked home.",
    )];
    let found = find(
        "When is Ruth's birthday?",
        "Ruth's birthday is on February 14, 2025. [1]",
        &sources,
    )
    .expect("the day of the note");
    assert_eq!(found.figure, "February 14, 2025");
    assert_eq!(found.claim, "Ruth's birthday is on February 14, 2025.");
    // A line saying enough of its own is read alone.
    assert_eq!(found.shown(), "Valentine's dinner with Ruth at Héron.");
}

#[test]
fn a_figure_the_question_gives_or_no_line_holds_is_not_checked() {
    let sources = [source(1, "2022-03-03", "Did 5 situps and 20 pushups.")];
    // The day is the question's; the count of pushups is the answer's figure.
    let found = find(
        "How many pushups did I do on 3 March 2022?",
        "On 3 March 2022 you did 20 pushups [1].",
        &sources,
    )
    .expect("the count");
    assert_eq!(found.figure, "20");
    assert_eq!(
        find(
            "How many situps on 3 March 2022?",
            "On 3 March 2022.",
            &sources
        ),
        None
    );
    assert_eq!(
        find("How many pushups?", "You did 35 pushups [1].", &sources),
        None
    );
}

#[test]
fn the_line_a_name_stands_in_is_found_in_any_script() {
    let sources = [source(
        1,
        "厨房翻新",
        "## 预算\n| 橱柜（欧派） | ¥12,000 |\n| 水槽+龙头 | ¥1,000 |",
    )];
    let found = FigureLine::find_name("厨房水槽是什么牌子的", "厨房水槽是欧派的。[1]", &sources)
        .expect("a name in a line");
    assert_eq!(found.figure, "欧派");
    assert_eq!(found.place, "厨房翻新 › 预算");
    assert_eq!(found.line, "| 橱柜（欧派） | ¥12,000 |");
    assert_eq!(found.claim, "厨房水槽是欧派的。");

    let sources = [source(
        2,
        "2024-06-02",
        "- Coffee with Sam Lee, he starts at the bakery\n- Rain all day",
    )];
    let found = FigureLine::find_name(
        "Who is my dentist?",
        "Your dentist is Sam Lee [2].",
        &sources,
    )
    .expect("a name in a line");
    assert_eq!(found.figure, "Sam");
    assert_eq!(found.line, "- Coffee with Sam Lee, he starts at the bakery");
    // A name the question gives, or one no line holds, is not checked.
    assert_eq!(
        FigureLine::find_name("Who is Sam?", "Sam is a baker [2].", &sources),
        None
    );
    assert_eq!(
        FigureLine::find_name("Who is my dentist?", "Dr. Okafor [2].", &sources),
        None
    );
}

#[test]
fn runs_of_chinese_script_are_read_longest_first_without_particles() {
    let runs = cjk_runs("编辑的名字是浩子。", "编辑叫什么名字？");
    assert_eq!(runs[0], "编辑的名字是浩子");
    assert!(runs.contains(&"浩子".to_string()));
    assert!(!runs.contains(&"是浩子".to_string()));
    assert!(!runs.contains(&"编辑的".to_string()));
    // The question's own words are no answer.
    assert!(!runs.contains(&"编辑".to_string()));
    assert!(!runs.contains(&"名字".to_string()));
}

#[test]
fn the_figure_checked_is_the_first_of_the_kind_asked() {
    let sources = [source(
        1,
        "Mum",
        "## Allowance\n- form posted 3 March 2025\n- attendance allowance: £72.65 a week\n- assessor came at 14:30 on 2025-04-02",
    )];
    let answer = "The form went off on 3 March 2025; she gets £72.65 a week [1].";
    let found = find(
        "How much attendance allowance does mum get a week?",
        answer,
        &sources,
    )
    .expect("the amount");
    assert_eq!(found.figure, "£72.65");
    assert_eq!(
        found.shown(),
        "- form posted 3 March 2025\n- attendance allowance: £72.65 a week"
    );
    let found = find("When did I post mum's form?", answer, &sources).expect("the day");
    assert_eq!(found.figure, "3 March 2025");
    let found = find(
        "What time did the assessor come?",
        "On 2025-04-02 at 14:30 [1].",
        &sources,
    )
    .expect("the time");
    assert_eq!(found.figure, "14:30");
    // A question that names no kind checks the answer's first figure, as written first.
    let found = find(
        "What's my physio's phone number?",
        "£72.65, posted 3 March 2025 [1].",
        &sources,
    )
    .expect("the first figure");
    assert_eq!(found.figure, "£72.65");
}

#[test]
fn a_line_that_says_enough_is_read_without_the_line_before() {
    let day = source(
        1,
        "2023-12-24",
        "## Christmas Eve\n- She brought her own pudding, steamed it herself\n\
         - collected the turkey from Mannion's butchers — €78\nbought:: jacket\npaid:: 99$\n\
         - 车险 续了，平安\n- 总共花了 30399，超预算 1899",
    );
    let found = find(
        "what did the christmas pudding cost",
        "The Christmas pudding cost €78 [1].",
        std::slice::from_ref(&day),
    )
    .expect("the line");
    assert_eq!(
        found.shown(),
        "- collected the turkey from Mannion's butchers — €78"
    );
    let found = find(
        "How much was the jacket?",
        "99$ [1].",
        std::slice::from_ref(&day),
    )
    .expect("the line");
    assert_eq!(found.shown(), "bought:: jacket\npaid:: 99$");
    let found = find("总共花了多少", "花了30399元。", &[day]).expect("the line");
    assert_eq!(
        found.shown(),
        "- 车险 续了，平安\n- 总共花了 30399，超预算 1899"
    );
    assert!(says_enough("- 公众号 关注 破 1000 了！现在 1046 🎉"));
    assert!(!says_enough("- 原价 ¥760，舅舅给算 ¥580"));
}

#[test]
fn a_claim_naming_nothing_asked_about_is_read_after_the_sentence_before() {
    let asked = "how much was dad's boiler grant in the end";
    let answer = "The grant was approved on 21 September. The total was €6,900, with tiling.";
    assert_eq!(
        claim_about(asked, answer, "6,900"),
        "The grant was approved on 21 September. The total was €6,900, with tiling."
    );
    assert_eq!(
        claim_about("how much was the total", answer, "6,900"),
        "The total was €6,900, with tiling."
    );
    assert_eq!(
        claim_about(asked, "It was €6,900.", "6,900"),
        "It was €6,900."
    );
    assert_eq!(
        claim_about("汉马半马我跑了多少", "那天下雨。用时2小时05分。", "2"),
        "那天下雨。 用时2小时05分。"
    );
}

#[test]
fn a_name_from_a_line_naming_nothing_asked_about_is_no_answer() {
    let name = |question: &str, answer: &str, title: &str, passage: &str| {
        let sources = [source(1, title, passage)];
        FigureLine::find_name(question, answer, &sources).expect("a name in a line")
    };
    let nothing_asked = Some(NoAnswer::NothingAsked);
    // "her name" names no chiropodist; "Variety" heads the carrots' column, not potatoes'.
    let girlfriend = name(
        "whats the chiropodists name",
        "The chiropodist's name is Oisín Daly. [1]",
        "2023-11-11",
        "- Oisín has a girlfriend apparently. won't tell us her name",
    );
    assert_eq!(girlfriend.no_answer, nothing_asked);
    let carrots = name(
        "which potato variety did i put in",
        "The potato variety was Nantes 2 [1].",
        "Allotment 2023",
        "| Crop | Variety | Brand |\n|---|---|---|\n| carrots | Nantes 2 | Corrib Seeds |",
    );
    assert_eq!(carrots.no_answer, nothing_asked);
    let friend = name(
        "找我做设计的那个工作室老板叫什么名字？",
        "工作室老板的名字是浩子。[1]",
        "2024-10-19",
        "- 浩子 约 11月 一起 报 一个 越野 10k",
    );
    assert_eq!(friend.no_answer, nothing_asked);
    // Where the thing asked about is named, in the line, its heading or its note's title.
    let insurer = name(
        "who's the boat insured with",
        "The boat is insured with Atlantic Direct [1].",
        "Boat",
        "- **Insurance**: Atlantic Direct, business use.",
    );
    assert_eq!(insurer.no_answer, None);
    let seeds = name(
        "which brand were the parsnip seeds?",
        "Moyne Organics [1].",
        "Allotment 2023",
        "| Crop | Variety | Brand |\n|---|---|---|\n| parsnip | Gladiator | Moyne Organics |",
    );
    assert_eq!(seeds.no_answer, None);
    let garage = name(
        "保养车的那家店在哪条路上",
        "在解放大道。[1]",
        "马建国",
        "舅舅。在汉口 解放大道 开了个汽修店。我的车基本都拉去他那保养。",
    );
    assert_eq!(garage.no_answer, None);
    assert!(garage.is_name);
}

#[test]
fn a_name_is_read_with_what_its_line_is_about() {
    // The line before, when it leads the line rather than being another item of its list.
    let sources = [source(
        1,
        "2025-03-14",
        "- 11:00 Design review — long one\n\nmet:: Anna Berg, Lena Kowalski",
    )];
    let found = FigureLine::find_name(
        "who was in the design review",
        "Anna Berg and Lena Kowalski [1].",
        &sources,
    )
    .expect("a name in a line");
    assert_eq!(found.no_answer, None);
    let sources = [source(
        1,
        "2024-10-19",
        "- 有个 工作室 老板 私信 问 要不要 做 设计\n- 浩子 约 11月 一起 报 一个 越野 10k",
    )];
    let found = FigureLine::find_name(
        "找我做设计的那个工作室老板叫什么名字？",
        "工作室老板的名字是浩子。[1]",
        &sources,
    )
    .expect("a name in a line");
    assert_eq!(found.no_answer, Some(NoAnswer::NothingAsked));
    // The opening line of a person's note says who they are.
    let sources = [source(
        1,
        "周慧琴",
        "我妈。退休前是小学语文老师。\n\n- 高血压，每天早上吃 氨氯地平 5mg",
    )];
    let found = FigureLine::find_name("我妈吃的降压药叫什么", "我妈吃的是氨氯地平。[1]", &sources)
        .expect("a name in a line");
    assert_eq!(found.no_answer, None);
}

#[test]
fn a_figure_or_name_from_another_item_than_the_one_naming_what_is_asked_is_no_answer() {
    let other_item = Some(NoAnswer::OtherItem);
    // Mam's row names the kettle and gives no brand: the brand is the boots'.
    let presents = [source(
        1,
        "Christmas presents 2023",
        "| Who | What | Cost | Got? |\n|---|---|---|---|\n| Rory | Meindl walking boots | €189 | ✔ |\n| [[Bríd Kinsella\\|Mam]] | electric kettle, cordless | €69 | ✔ |",
    )];
    let kettle = FigureLine::find_name(
        "what brand is the electric kettle I got mam",
        "The electric kettle I got Mam is from Meindl. [1]",
        &presents,
    )
    .expect("a name in a line");
    assert_eq!(kettle.no_answer, other_item);
    // Asked of the row that gives it, it stands.
    let boots = FigureLine::find_name(
        "what brand were rory's walking boots",
        "Rory's walking boots were Meindl. [1]",
        &presents,
    )
    .expect("a name in a line");
    assert_eq!(boots.no_answer, None);
    // An answer giving each record in turn is read on the one asked about.
    let folders = [source(
        1,
        "How Obsidian stores data",
        "## Global settings\nObsidian stores global settings in a system folder.\n\n- **macOS**: `/Users/yourusername/Library/Application Support/obsidian`\n- **Windows**: `%APPDATA%\\Obsidian\\`\n- **Linux**: `$XDG_CONFIG_HOME/obsidian/` or `~/.config/obsidian/`",
    )];
    let question = "Where does the app keep its app-wide settings on a Linux machine?";
    let linux = FigureLine::find_name(
        question,
        "For macOS, it's `/Users/yourusername/Library/Application Support/obsidian`, for Windows, it's `%APPDATA%\\Obsidian\\`, and for Linux, it's `$XDG_CONFIG_HOME/obsidian/` [1].",
        &folders,
    )
    .expect("a name in a line");
    assert_eq!(linux.no_answer, None, "{linux:?}");
    assert!(linux.line.contains("Linux"), "{linux:?}");
    // Only another record's name given, it is no answer.
    let mac = FigureLine::find_name(
        question,
        "It's `/Users/yourusername/Library/Application Support/obsidian` [1].",
        &folders,
    )
    .expect("a name in a line");
    assert_eq!(mac.no_answer, other_item);
    // The item after the flight out is the flight home, and gives no number.
    let flights = [source(
        1,
        "Camino Portugués 2023",
        "## Flights\n- OUT: Sun 10 Sept, Dublin → Porto, Ryanair FR 7262, dep 06:40.\n- BACK: flight home from Lisbon, Wed 20 Sept — Orla booked it",
    )];
    let home = find(
        "flight number for the journey home from lisbon",
        "The flight home from Lisbon is FR 7262. [1]",
        &flights,
    )
    .expect("a figure in a line");
    assert_eq!(home.no_answer, other_item);
    let out = find(
        "flight number for the flight out to porto",
        "FR 7262 [1]",
        &flights,
    )
    .expect("a figure in a line");
    assert_eq!(out.no_answer, None);
    // Unlabelled items are notes on one subject: the total is the braces'.
    let braces = [source(
        1,
        "2023-08-15 Cian orthodontist",
        "- braces fitted, upper + lower, metal\n- total treatment €4,200, approx 18–24 months",
    )];
    let total = find(
        "how much are cian's braces costing altogether",
        "€4,200 [1]",
        &braces,
    )
    .expect("a figure in a line");
    assert_eq!(total.no_answer, None);
    // So is a labelled item beside an unlabelled line.
    let nuala = [source(
        1,
        "Nuala Ward",
        "- fee this year €650 (was €600)\n- meeting: [[2023-05-10 Nuala tax return]]",
    )];
    let fee = find(
        "What does Nuala charge me for doing the tax return?",
        "Nuala charges €650 [1].",
        &nuala,
    )
    .expect("a figure in a line");
    assert_eq!(fee.no_answer, None);
    // One term more is not enough: a name may hold it by chance ("Hallam Bathrooms").
    let quotes = [source(
        1,
        "Bathroom renovation",
        "| Who | What | Quote |\n|---|---|---|\n| Dave Pritchard | strip out, plumbing, fit suite | £4,850 |\n| Hallam Bathrooms | full job inc tiling | £6,200 |",
    )];
    let plumber = find(
        "How much was I quoted by the plumber for the bathroom?",
        "The plumber quoted £4,850 [1].",
        &quotes,
    )
    .expect("a figure in a line");
    assert_eq!(plumber.no_answer, None);
    // Labelled items in Chinese are records too.
    let dali = [source(
        1,
        "大理旅行",
        "## 交通\n- 去：8月5日 武汉天河 → 大理，东航 MU5811，07:55起飞\n- 回：8月11日 大理 → 武汉，中午的航班",
    )];
    // The question writes the other record's label (回), not this one's (去).
    let back = FigureLine::find_name("从大理回武汉坐的哪趟航班？", "坐的是MU5811。[1]", &dali)
        .expect("a name in a line");
    assert_eq!(back.no_answer, other_item);
    let there = FigureLine::find_name("去大理坐的哪个航班？", "坐的是MU5811。[1]", &dali)
        .expect("a name in a line");
    assert_eq!(there.no_answer, None);
    // A row's first cell is its label: the brand in the cabinets' row is not the sink's.
    let kitchen = [source(
        1,
        "厨房翻新",
        "## 预算 vs 实际\n| 项目 | 预算 | 实际 | 备注 |\n|---|---|---|---|\n| 橱柜（欧派） | ¥12,000 | ¥12,800 | 加了一个转角拉篮 |\n| 水槽+龙头 | ¥1,000 | ¥860 | |",
    )];
    let sink = FigureLine::find_name("厨房水槽是什么牌子的", "厨房水槽是欧派的。[1]", &kitchen)
        .expect("a name in a line");
    assert_eq!(sink.no_answer, other_item);
    let cabinets = FigureLine::find_name("橱柜是什么牌子的", "橱柜是欧派的。[1]", &kitchen)
        .expect("a name in a line");
    assert_eq!(cabinets.no_answer, None);
    // A label naming what the note's title names is no more asked than any other row: the
    // plumber's quote stands beside `| Hallam Bathrooms |` (above).
    assert_eq!(
        record_label("| Hallam Bathrooms | full job | £6,200 |"),
        Some("Hallam Bathrooms")
    );
    assert_eq!(record_label("- **回**：中午的航班"), Some("回"));
    assert_eq!(record_label("|  | £6,200 |"), None);
    // A line of its own, no list: nothing to compare.
    let alone = [source(1, "Budget", "The sink cost ¥860 in the end.")];
    let sink =
        find("how much was the kitchen sink", "¥860 [1]", &alone).expect("a figure in a line");
    assert_eq!(sink.no_answer, None);
}
