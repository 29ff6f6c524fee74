//! Holidays, by the names people write them with: a question asks "what did we eat on
//! Christmas Eve?", "easter sunday, where did we go" or "圣诞节那天做了什么", not "on 24
//! December". Those on a fixed day and those counted from Easter (with the `computus` crate)
//! are read; those of the lunar calendar (春节, 中秋, 端午) are not yet.

use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate};
use regex::Regex;

use super::{Period, ymd};

/// When a holiday falls in a year.
#[derive(Clone, Copy)]
enum Falls {
    /// On this month and day.
    On(u32, u32),
    /// This many days after Easter Sunday (before it, when negative).
    FromEaster(i64),
}

/// A holiday: its names, the day it starts and how many days it lasts.
struct Holiday {
    /// Names in Latin script (a regex alternation, lowercase), read as whole words; a
    /// longer name before a shorter one it starts with. A bare name more often a thing than
    /// a day ("Christmas" in "Christmas presents") is read only with a word that makes it
    /// the day. Empty: none.
    latin: &'static str,
    /// Names in Chinese, Japanese or Korean script, which no word boundary marks (圣诞 alone
    /// is as often 圣诞礼物 as the day). Empty: none.
    other: &'static str,
    falls: Falls,
    /// How many days it lasts.
    days: i64,
}

const fn holiday(latin: &'static str, other: &'static str, month: u32, day: u32) -> Holiday {
    Holiday {
        latin,
        other,
        falls: Falls::On(month, day),
        days: 1,
    }
}

const fn from_easter(latin: &'static str, other: &'static str, days_after: i64) -> Holiday {
    Holiday {
        latin,
        other,
        falls: Falls::FromEaster(days_after),
        days: 1,
    }
}

const HOLIDAYS: &[Holiday] = &[
    holiday(
        r"(?:(?:on|at)\s+)?christmas\s+eve",
        r"平安夜|聖誕夜|クリスマス\s*イブ|크리스마스\s*이브",
        12,
        24,
    ),
    holiday(
        r"christmas\s+day|(?:on|at)\s+christmas",
        r"圣诞节|聖誕節|圣诞(?:那天|当天)|クリスマス|크리스마스|성탄절",
        12,
        25,
    ),
    holiday(r"new\s+year['’]?s\s+eve", r"跨年夜|大晦日", 12, 31),
    holiday(r"new\s+year['’]?s\s+day", r"元旦|元日", 1, 1),
    holiday(
        r"valentine['’]?s\s+day|(?:on|for)\s+valentine['’]?s",
        r"情人节|情人節|バレンタインデー|밸런타인\s*데이",
        2,
        14,
    ),
    holiday(r"halloween", r"万圣节|萬聖節|ハロウィン|핼러윈", 10, 31),
    holiday(r"st\.?\s+patrick['’]?s\s+day", "", 3, 17),
    holiday(r"international\s+women['’]?s\s+day", r"妇女节|婦女節", 3, 8),
    Holiday {
        days: 5,
        ..holiday(r"may\s+day", r"劳动节|勞動節|五一(?:节|假期|那天)", 5, 1)
    },
    holiday(r"children['’]?s\s+day", r"儿童节|兒童節", 6, 1),
    holiday(r"teachers['’]?\s+day", r"教师节|教師節", 9, 10),
    Holiday {
        days: 7,
        ..holiday("", r"国庆节?|國慶節?", 10, 1)
    },
    from_easter(
        r"easter\s+(?:sunday|day)|(?:on|at|over)\s+easter",
        r"复活节|復活節|イースター|부활절",
        0,
    ),
    from_easter(r"easter\s+monday", "", 1),
    from_easter(r"good\s+friday", r"耶稣受难日", -2),
    from_easter(r"(?:holy|maundy)\s+thursday", "", -3),
    from_easter(r"palm\s+sunday", "", -7),
    from_easter(r"shrove\s+tuesday|pancake\s+day", "", -47),
];

/// Every holiday's names as one alternation, for the pattern of the dates a text names.
pub(super) fn names() -> String {
    let latin: Vec<&str> = HOLIDAYS
        .iter()
        .map(|h| h.latin)
        .filter(|n| !n.is_empty())
        .collect();
    let other: Vec<&str> = HOLIDAYS
        .iter()
        .map(|h| h.other)
        .filter(|n| !n.is_empty())
        .collect();
    format!(r"\b(?:{})\b|{}", latin.join("|"), other.join("|"))
}

/// The days of the holiday `name` names (as [`names`] matched it) in `year`, or else the
/// latest time it fell on or before `today`.
pub(super) fn period(name: &str, year: Option<i32>, today: NaiveDate) -> Option<Period> {
    static EACH: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        HOLIDAYS
            .iter()
            .map(|h| {
                let names: Vec<&str> = [h.latin, h.other]
                    .into_iter()
                    .filter(|n| !n.is_empty())
                    .collect();
                Regex::new(&format!("(?i)^(?:{})$", names.join("|"))).expect("holiday names")
            })
            .collect()
    });
    let name = name.trim();
    let (_, holiday) = EACH
        .iter()
        .zip(HOLIDAYS)
        .find(|(names, _)| names.is_match(name))?;
    let first = match year {
        Some(year) => holiday.first_day(year)?,
        None => match holiday.first_day(today.year())? {
            day if day <= today => day,
            _ => holiday.first_day(today.year() - 1)?,
        },
    };
    Some(Period {
        from: first,
        to: first + Duration::days(holiday.days - 1),
    })
}

impl Holiday {
    /// Its first day in `year`.
    fn first_day(&self, year: i32) -> Option<NaiveDate> {
        match self.falls {
            Falls::On(month, day) => ymd(year, month, day),
            Falls::FromEaster(after) => {
                let easter = computus::gregorian_naive(year).ok()?;
                Some(easter + Duration::days(after))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::super::mentioned;

    /// The days `text` names as `(first, last, yearless)`, on 28 November 2026.
    fn named(text: &str) -> Vec<(String, String, bool)> {
        let today = NaiveDate::from_ymd_opt(2026, 11, 28).unwrap();
        mentioned(text, today)
            .into_iter()
            .map(|m| {
                (
                    m.period.from.to_string(),
                    m.period.to.to_string(),
                    m.yearless,
                )
            })
            .collect()
    }

    fn day(d: &str, yearless: bool) -> Vec<(String, String, bool)> {
        vec![(d.to_string(), d.to_string(), yearless)]
    }

    #[test]
    fn holidays_are_their_days() {
        // The latest not after today, unless a year is given.
        assert_eq!(named("圣诞节那天做了什么"), day("2025-12-25", true));
        assert_eq!(
            named("What did we eat on Christmas Eve?"),
            day("2025-12-24", true)
        );
        assert_eq!(
            named("Where was I on Christmas 2023?"),
            day("2023-12-25", false)
        );
        assert_eq!(named("2023年圣诞节吃了什么"), day("2023-12-25", false));
        assert_eq!(named("情人节送了什么"), day("2026-02-14", true));
        assert_eq!(
            named("What costume did I wear for Halloween?"),
            day("2026-10-31", true)
        );
        assert_eq!(named("元旦去哪了"), day("2026-01-01", true));
        assert_eq!(
            named("easter sunday, where did we go"),
            day("2026-04-05", true)
        );
        assert_eq!(
            named("What did I do on Good Friday 2023?"),
            day("2023-04-07", false)
        );
        assert_eq!(named("复活节"), day("2026-04-05", true));
        assert_eq!(
            named("国庆去哪玩了"),
            vec![("2026-10-01".to_string(), "2026-10-07".to_string(), true)]
        );
    }

    #[test]
    fn a_holidays_name_for_a_thing_is_no_day() {
        for text in [
            "What did I buy as Christmas presents?",
            "圣诞礼物买了什么",
            "Who sent me a valentine?",
            "五一广场怎么走",
        ] {
            assert!(named(text).is_empty(), "{text}");
        }
    }
}
