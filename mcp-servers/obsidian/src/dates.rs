//! Days and periods: the ones a note is about and the ones a question names, so that a search
//! can keep to a period ("on 11 May 2021", "last week", "2021年5月11日").
//!
//! A note's dates come from its file name (the vault's daily, weekly and monthly note formats,
//! else an ISO date in the name), its date properties, its dated Dataview fields (`due::
//! 2022-02-17`) and its dated headings; a note with none of these is dated by its file time.
//! Pure but for [`NoteFormats::of_vault`], which reads the vault's settings.
//!
//! Written on `chrono` rather than a natural-language date crate: the one maintained
//! (`interim`) parses a whole string as one point in time, where a question holds a date among
//! other words and means a period; it refuses "the 6th of January 2022", "February 4th,
//! 2022" and "March 2021", and takes "last Friday" on a Friday for today.

use std::path::Path;
use std::sync::LazyLock;
use std::time::SystemTime;

use chrono::{Datelike, Duration, Local, Months, NaiveDate, Weekday};
use regex::{Captures, Regex};

mod holidays;

/// Days from `from` to `to`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Period {
    /// The first day.
    pub from: NaiveDate,
    /// The last day.
    pub to: NaiveDate,
}

impl Period {
    /// One day.
    pub fn day(d: NaiveDate) -> Self {
        Period { from: d, to: d }
    }

    /// A month of a year (`None` for a month that is none).
    pub fn month(year: i32, month: u32) -> Option<Self> {
        let from = NaiveDate::from_ymd_opt(year, month, 1)?;
        let to = from.checked_add_months(Months::new(1))? - Duration::days(1);
        Some(Period { from, to })
    }

    /// A year.
    pub fn year(year: i32) -> Option<Self> {
        Some(Period {
            from: NaiveDate::from_ymd_opt(year, 1, 1)?,
            to: NaiveDate::from_ymd_opt(year, 12, 31)?,
        })
    }

    /// The week (Monday to Sunday) that holds `d`.
    pub fn week_of(d: NaiveDate) -> Self {
        let from = d - Duration::days(i64::from(d.weekday().num_days_from_monday()));
        Period {
            from,
            to: from + Duration::days(6),
        }
    }

    /// ISO week `week` of ISO year `year`.
    pub fn iso_week(year: i32, week: u32) -> Option<Self> {
        NaiveDate::from_isoywd_opt(year, week, Weekday::Mon).map(Self::week_of)
    }

    /// Whether the two share a day.
    pub fn overlaps(&self, other: &Period) -> bool {
        self.from <= other.to && other.from <= self.to
    }

    /// The smallest period holding both.
    pub fn span(&self, other: &Period) -> Period {
        Period {
            from: self.from.min(other.from),
            to: self.to.max(other.to),
        }
    }

    /// The days between two bounds, either left open (`None`: from the first day, to the
    /// last); `Ok(None)` when both are. `Err` holds the bounds when `from` is after `to`,
    /// for the caller to say so in its own words (a tool's argument, a command's flag).
    pub fn between(
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
    ) -> Result<Option<Period>, (NaiveDate, NaiveDate)> {
        if from.is_none() && to.is_none() {
            return Ok(None);
        }
        let period = Period {
            from: from.unwrap_or(NaiveDate::MIN),
            to: to.unwrap_or(NaiveDate::MAX),
        };
        if period.from > period.to {
            return Err((period.from, period.to));
        }
        Ok(Some(period))
    }

    /// The same days a year earlier (29 February as the 28th): where a day named without its
    /// year is looked for next when the latest one has no note.
    pub fn a_year_before(&self) -> Option<Period> {
        let year = Months::new(12);
        Some(Period {
            from: self.from.checked_sub_months(year)?,
            to: self.to.checked_sub_months(year)?,
        })
    }

    /// A bound as a tool takes it: `2021-05-11`, `2021-05` or `2021`; a month or a year
    /// stands for its first day as a start (`end` false) and its last as an end.
    pub fn parse_bound(s: &str, end: bool) -> Option<NaiveDate> {
        let s = s.trim();
        let parts: Vec<&str> = s.split('-').collect();
        let num = |p: &str| p.parse::<u32>().ok();
        let period = match parts.as_slice() {
            [y, m, d] if y.len() == 4 => {
                Period::day(NaiveDate::from_ymd_opt(num(y)? as i32, num(m)?, num(d)?)?)
            }
            [y, m] if y.len() == 4 => Period::month(num(y)? as i32, num(m)?)?,
            [y] if y.len() == 4 => Period::year(num(y)? as i32)?,
            _ => return None,
        };
        Some(if end { period.to } else { period.from })
    }
}

impl std::fmt::Display for Period {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.from == self.to {
            write!(f, "{}", self.from)
        } else {
            write!(f, "{} to {}", self.from, self.to)
        }
    }
}

/// Today, as the person's clock has it: what relative dates are counted from.
pub fn today() -> NaiveDate {
    Local::now().date_naive()
}

/// A period a text names, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// Where the words naming it start, in bytes.
    pub start: usize,
    /// Where they end.
    pub end: usize,
    /// The days they name.
    pub period: Period,
    /// Whether they name a day or a month without its year ("11 May", "in March", "5月11日"),
    /// which is taken as the latest one not after today.
    pub yearless: bool,
}

const MONTHS: &str = "january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec";
const WEEKDAYS: &str = "monday|tuesday|wednesday|thursday|friday|saturday|sunday";

/// Every form a date or a period is read in, as one alternation of named groups; the first
/// that matches at a place wins, so longer forms come first.
static MENTION: LazyLock<Regex> = LazyLock::new(|| {
    let forms = [
        // 2021-05-11, 2021/05/11, 2021.05.11
        r"(?P<iso>\b(?P<iy>\d{4})[-/.](?P<im>\d{1,2})[-/.](?P<id>\d{1,2})\b)".to_string(),
        // 14/3/2024, 14.03.2024, 14-03-2024: day first, as most of the world writes it (and
        // 3/14/2024 when no month is 14); 29.10.24 with two-digit day, month and year
        r"(?P<num>\b(?P<n1>\d{1,2})[/.-](?P<n2>\d{1,2})[/.-](?P<ny>\d{4})\b)".to_string(),
        r"(?P<short>\b(?P<s1>\d{2})[/.](?P<s2>\d{2})[/.](?P<sy>\d{2})\b)".to_string(),
        // 11 May 2021, the 6th of January 2022, 11 May
        format!(
            r"(?P<dmy>\b(?:the\s+)?(?P<dd>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+(?P<dm>{MONTHS})\b\.?,?(?:\s+(?P<dy>\d{{4}})\b)?)"
        ),
        // May 11, 2021, Jan 7th 2022, May 11
        format!(
            r"(?P<mdy>\b(?P<mm>{MONTHS})\.?\s+(?:the\s+)?(?P<md>\d{{1,2}})(?:st|nd|rd|th)?\b,?(?:\s+(?P<my>\d{{4}})\b)?)"
        ),
        // May 2021, March of 2021
        format!(r"(?P<monthyear>\b(?P<ym>{MONTHS})\.?,?\s+(?:of\s+)?(?P<yy>\d{{4}})\b)"),
        // in March, last March, this May: a bare month only after a word that makes it one
        format!(
            r"(?P<bare>\b(?P<bw>in|during|since|until|of|last|this|early|late|mid)\s+(?P<bm>{MONTHS})\b\.?,?(?:\s+(?:of\s+)?(?P<by>\d{{4}})\b)?)"
        ),
        // in 2022, during 2021
        r"(?P<year>\b(?:in|during|since|of|year)\s+(?P<yv>(?:19|20)\d{2})\b)".to_string(),
        // Christmas Eve, on Christmas 2023, 2024年圣诞节, 国庆 (`holidays`)
        format!(
            r"(?P<holiday>(?:(?P<hy1>\d{{4}})\s*[年년]?\s*(?:的\s*)?)?(?P<hn>{})(?:,?\s+(?P<hy2>\d{{4}})\b)?)",
            holidays::names()
        ),
        // 2021年5月11日, 2021年5月, 5月11日 (Chinese and Japanese), 2021년 5월 11일
        r"(?P<cjk>(?:(?P<cy>\d{4})\s*[年년]\s*)?(?P<cm>\d{1,2})\s*[月월](?:\s*(?P<cd>\d{1,2})\s*[日号號일])?)".to_string(),
        // yesterday, today, the day before yesterday, 3 days ago, last week, this month, …
        r"(?P<relday>\b(?:the\s+day\s+before\s+yesterday|yesterday|today|tonight|this\s+morning|this\s+evening)\b)".to_string(),
        r"(?P<ago>\b(?P<an>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?P<au>day|week|month|year)s?\s+ago\b)".to_string(),
        r"(?P<unit>\b(?P<uw>last|this|past|previous|next)\s+(?P<uu>week|month|year)\b)".to_string(),
        format!(r"(?P<weekday>\b(?:(?P<ww>last|this|on|next)\s+)(?P<wd>{WEEKDAYS})\b)"),
        r"(?P<cjkrel>前天|昨天|昨日|今天|今日|上周|上週|上星期|先週|本周|这周|這週|今週|上个月|上個月|先月|本月|这个月|這個月|今月|去年|今年|어제|오늘|지난주|이번 주|지난달|이번 달|작년|올해)".to_string(),
    ];
    Regex::new(&format!("(?i){}", forms.join("|"))).expect("date pattern")
});

/// The periods `text` names, in order, relative ones counted from `today`. A month or a day
/// without a year is the latest one not after today ("in March" in November is this March,
/// in February last year's).
pub fn mentioned(text: &str, today: NaiveDate) -> Vec<Mention> {
    MENTION
        .captures_iter(text)
        .filter_map(|c| {
            let whole = c.get(0)?;
            let without = |form: &str, year: &str| c.name(form).is_some() && c.name(year).is_none();
            Some(Mention {
                start: whole.start(),
                end: whole.end(),
                period: period_of(&c, today)?,
                yearless: without("dmy", "dy")
                    || without("mdy", "my")
                    || without("bare", "by")
                    || without("cjk", "cy")
                    || (without("holiday", "hy1") && c.name("hy2").is_none()),
            })
        })
        .collect()
}

/// The one period `text` names, spanning all it names: what a search for it keeps to.
pub fn period_named(text: &str, today: NaiveDate) -> Option<Period> {
    mentioned(text, today)
        .into_iter()
        .map(|m| m.period)
        .reduce(|a, b| a.span(&b))
}

fn period_of(c: &Captures, today: NaiveDate) -> Option<Period> {
    let num = |name: &str| c.name(name).and_then(|m| m.as_str().parse::<u32>().ok());
    let text = |name: &str| c.name(name).map(|m| m.as_str().to_lowercase());
    let year = |name: &str| num(name).map(|y| y as i32);
    if c.name("iso").is_some() {
        return ymd(year("iy")?, num("im")?, num("id")?).map(Period::day);
    }
    if c.name("num").is_some() {
        return day_month_first(num("n1")?, num("n2")?, year("ny")?);
    }
    if c.name("short").is_some() {
        return day_month_first(num("s1")?, num("s2")?, 2000 + year("sy")?);
    }
    if c.name("dmy").is_some() {
        return day_in(year("dy"), month_number(&text("dm")?)?, num("dd")?, today);
    }
    if c.name("mdy").is_some() {
        return day_in(year("my"), month_number(&text("mm")?)?, num("md")?, today);
    }
    if c.name("monthyear").is_some() {
        return Period::month(year("yy")?, month_number(&text("ym")?)?);
    }
    if c.name("bare").is_some() {
        let month = month_number(&text("bm")?)?;
        if let Some(y) = year("by") {
            return Period::month(y, month);
        }
        let latest = latest_month(month, today)?;
        return match text("bw")?.as_str() {
            // "last March" in March is a year ago; in November it is this year's.
            "last" if latest.from.month() == today.month() => {
                Period::month(latest.from.year() - 1, month)
            }
            _ => Some(latest),
        };
    }
    if c.name("year").is_some() {
        return Period::year(year("yv")?);
    }
    if c.name("holiday").is_some() {
        return holidays::period(c.name("hn")?.as_str(), year("hy1").or(year("hy2")), today);
    }
    if c.name("cjk").is_some() {
        let month = num("cm")?;
        return match (year("cy"), num("cd")) {
            (y, Some(d)) => day_in(y, month, d, today),
            (Some(y), None) => Period::month(y, month),
            // A month alone in CJK ("5月") is too often a count of months to take as a date.
            (None, None) => None,
        };
    }
    if c.name("relday").is_some() {
        let days = match text("relday")?
            .split_whitespace()
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["yesterday"] => 1,
            ["the", "day", "before", "yesterday"] => 2,
            _ => 0,
        };
        return Some(Period::day(today - Duration::days(days)));
    }
    if c.name("ago").is_some() {
        let n = small_number(&text("an")?)?;
        return Some(match text("au")?.as_str() {
            "day" => Period::day(today - Duration::days(n)),
            "week" => Period::week_of(today - Duration::weeks(n)),
            "month" => {
                let d = today.checked_sub_months(Months::new(n as u32))?;
                Period::month(d.year(), d.month())?
            }
            _ => Period::year(today.year() - n as i32)?,
        });
    }
    if c.name("unit").is_some() {
        let step: i64 = match text("uw")?.as_str() {
            "this" => 0,
            "next" => 1,
            _ => -1,
        };
        return unit_period(&text("uu")?, step, today);
    }
    if c.name("weekday").is_some() {
        let wd: Weekday = text("wd")?.parse().ok()?;
        let back =
            i64::from((today.weekday().num_days_from_monday() + 7 - wd.num_days_from_monday()) % 7);
        let day = match text("ww")?.as_str() {
            // "last Friday" on a Friday is a week ago, never today.
            "last" => today - Duration::days(if back == 0 { 7 } else { back }),
            "next" => today + Duration::days(7 - back),
            "this" => {
                Period::week_of(today).from + Duration::days(wd.num_days_from_monday().into())
            }
            _ => today - Duration::days(back),
        };
        return Some(Period::day(day));
    }
    if c.name("cjkrel").is_some() {
        return cjk_relative(c.name("cjkrel")?.as_str(), today);
    }
    None
}

/// The day `a` and `b` name in `year`, day first unless `a` is no day of a month that `b`
/// is and `b` is a day of month `a` (`3/14/2024`).
fn day_month_first(a: u32, b: u32, year: i32) -> Option<Period> {
    ymd(year, b, a).or_else(|| ymd(year, a, b)).map(Period::day)
}

fn ymd(y: i32, m: u32, d: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, d)
}

/// A day of a month, in `year` or else the latest such day not after today.
fn day_in(year: Option<i32>, month: u32, day: u32, today: NaiveDate) -> Option<Period> {
    let year = match year {
        Some(y) => y,
        None => {
            let this = ymd(today.year(), month, day);
            match this {
                Some(d) if d <= today => today.year(),
                _ => today.year() - 1,
            }
        }
    };
    ymd(year, month, day).map(Period::day)
}

fn latest_month(month: u32, today: NaiveDate) -> Option<Period> {
    let year = if month <= today.month() {
        today.year()
    } else {
        today.year() - 1
    };
    Period::month(year, month)
}

/// The week, month or year `step` of them from the current one.
fn unit_period(unit: &str, step: i64, today: NaiveDate) -> Option<Period> {
    match unit {
        "week" => Some(Period::week_of(today + Duration::weeks(step))),
        "month" => {
            let first = ymd(today.year(), today.month(), 1)?;
            let d = if step < 0 {
                first.checked_sub_months(Months::new(step.unsigned_abs() as u32))?
            } else {
                first.checked_add_months(Months::new(step as u32))?
            };
            Period::month(d.year(), d.month())
        }
        _ => Period::year(today.year() + step as i32),
    }
}

fn cjk_relative(word: &str, today: NaiveDate) -> Option<Period> {
    Some(match word {
        "前天" => Period::day(today - Duration::days(2)),
        "昨天" | "昨日" | "어제" => Period::day(today - Duration::days(1)),
        "今天" | "今日" | "오늘" => Period::day(today),
        "上周" | "上週" | "上星期" | "先週" | "지난주" => {
            unit_period("week", -1, today)?
        }
        "本周" | "这周" | "這週" | "今週" | "이번 주" => unit_period("week", 0, today)?,
        "上个月" | "上個月" | "先月" | "지난달" => unit_period("month", -1, today)?,
        "本月" | "这个月" | "這個月" | "今月" | "이번 달" => {
            unit_period("month", 0, today)?
        }
        "去年" | "작년" => unit_period("year", -1, today)?,
        "今年" | "올해" => unit_period("year", 0, today)?,
        _ => return None,
    })
}

/// Days named counting from a day said before: "the next day", "the day after", "two days
/// later", "the night before", "that day", "第二天". Such words name nothing alone.
static AFTER_ANCHOR: LazyLock<Regex> = LazyLock::new(|| {
    let part = "day|morning|afternoon|evening|night";
    let forms = [
        format!(r"(?P<next>\b(?:the\s+)?(?:next|following)\s+(?:{part})\b|\bthe\s+(?:{part})\s+after\b)"),
        format!(r"(?P<prev>\bthe\s+(?:{part})\s+before\b|\b(?:the\s+)?previous\s+(?:{part})\b)"),
        r"(?P<shift>\b(?P<sn>\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?P<su>day|week)s?\s+(?P<sw>later|after|afterwards|before|earlier)\b)".to_string(),
        format!(r"(?P<same>\b(?:that|the\s+same)\s+(?:{part})\b)"),
        "(?P<cjknext>第二天|次日|翌日|다음\\s*날)".to_string(),
        "(?P<cjkprev>前一天|前日|전날)".to_string(),
        "(?P<cjksame>那天|当天|當天|その日|그날)".to_string(),
    ];
    Regex::new(&format!("(?i){}", forms.join("|"))).expect("anchored date pattern")
});

/// Where `text` names a day by one said before it ("the night before", "第二天"), whichever
/// day that is: the words [`after_anchor`] reads.
pub fn anchor_words(text: &str) -> Option<std::ops::Range<usize>> {
    AFTER_ANCHOR.find(text).map(|found| found.range())
}

/// The day `text` names counting from `anchor` (a day said earlier, in the conversation):
/// "And the next day?" after a question about 30 January is 31 January. `None` when it names
/// no such day, or `anchor` is more than a day.
pub fn after_anchor(text: &str, anchor: Period) -> Option<Period> {
    if anchor.from != anchor.to {
        return None;
    }
    let c = AFTER_ANCHOR.captures(text)?;
    let days = if c.name("next").is_some() || c.name("cjknext").is_some() {
        1
    } else if c.name("prev").is_some() || c.name("cjkprev").is_some() {
        -1
    } else if c.name("same").is_some() || c.name("cjksame").is_some() {
        0
    } else {
        let n = small_number(&c.name("sn")?.as_str().to_lowercase())?;
        let unit = if c.name("su")?.as_str().eq_ignore_ascii_case("week") {
            7
        } else {
            1
        };
        let sign = match c.name("sw")?.as_str().to_lowercase().as_str() {
            "before" | "earlier" => -1,
            _ => 1,
        };
        sign * n * unit
    };
    anchor
        .from
        .checked_add_signed(Duration::days(days))
        .map(Period::day)
}

fn small_number(word: &str) -> Option<i64> {
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    match word {
        "a" | "an" => Some(1),
        _ => word
            .parse()
            .ok()
            .or_else(|| words.iter().position(|w| *w == word).map(|i| i as i64)),
    }
}

/// A month's number from its English name or abbreviation.
fn month_number(name: &str) -> Option<u32> {
    let name = name.to_lowercase();
    let prefix = name.get(..3)?;
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    months
        .iter()
        .position(|m| *m == prefix)
        .map(|i| i as u32 + 1)
}

/// How the vault names its periodic notes, from Obsidian's settings: the core Daily notes
/// plugin (`.obsidian/daily-notes.json`) and the Periodic Notes plugin's daily, weekly,
/// monthly, quarterly and yearly formats, as moment.js formats.
#[derive(Debug, Clone)]
pub struct NoteFormats {
    names: Vec<Regex>,
}

impl Default for NoteFormats {
    /// Obsidian's defaults: `YYYY-MM-DD` daily notes, and the Periodic Notes plugin's
    /// `gggg-[W]ww` weeks and `YYYY-MM` months.
    fn default() -> Self {
        NoteFormats::from_formats(["YYYY-MM-DD", "gggg-[W]ww", "YYYY-MM"])
    }
}

impl NoteFormats {
    /// The formats a vault's settings give, after Obsidian's defaults. Unreadable or absent
    /// settings leave the defaults.
    pub fn of_vault(root: &Path) -> Self {
        let mut formats = Vec::new();
        let config = root.join(".obsidian");
        let read = |name: &str| -> Option<serde_json::Value> {
            serde_json::from_str(&std::fs::read_to_string(config.join(name)).ok()?).ok()
        };
        if let Some(v) = read("daily-notes.json")
            && let Some(f) = v.get("format").and_then(|f| f.as_str())
        {
            formats.push(f.to_string());
        }
        if let Some(v) = read("plugins/periodic-notes/data.json") {
            for kind in ["daily", "weekly", "monthly", "quarterly", "yearly"] {
                if let Some(f) = v
                    .pointer(&format!("/{kind}/format"))
                    .and_then(|f| f.as_str())
                {
                    formats.push(f.to_string());
                }
            }
        }
        formats.extend(["YYYY-MM-DD", "gggg-[W]ww", "YYYY-MM"].map(String::from));
        NoteFormats::from_formats(formats.iter().map(String::as_str).filter(|f| !f.is_empty()))
    }

    fn from_formats<'a>(formats: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names = Vec::new();
        for f in formats {
            if let Some(re) = moment_pattern(f)
                && !names.iter().any(|n: &Regex| n.as_str() == re.as_str())
            {
                names.push(re);
            }
        }
        NoteFormats { names }
    }

    /// The period a note's name stands for: the first format its path ends with, else an
    /// ISO date anywhere in its file name ("2021-05-11 Meeting with Ana").
    pub fn period_of_name(&self, key: &str) -> Option<Period> {
        for re in &self.names {
            if let Some(c) = re.captures(key)
                && let Some(p) = period_of_format(&c)
            {
                return Some(p);
            }
        }
        static ISO: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"(\d{4})-(\d{2})-(\d{2})").expect("iso date"));
        let name = key.rsplit('/').next().unwrap_or(key);
        let c = ISO.captures(name)?;
        let n = |i: usize| c.get(i)?.as_str().parse::<u32>().ok();
        ymd(n(1)? as i32, n(2)?, n(3)?).map(Period::day)
    }
}

/// A moment.js format as a pattern for the end of a note's path (without `.md`).
fn moment_pattern(format: &str) -> Option<Regex> {
    const TOKENS: [(&str, &str); 20] = [
        ("YYYY", r"(?P<y>\d{4})"),
        ("gggg", r"(?P<wy>\d{4})"),
        ("GGGG", r"(?P<wy>\d{4})"),
        ("MMMM", r"(?P<mn>[A-Za-z]+)"),
        ("MMM", r"(?P<mn>[A-Za-z]+)"),
        ("dddd", r"[A-Za-z]+"),
        ("ddd", r"[A-Za-z]+"),
        ("YY", r"(?P<y2>\d{2})"),
        ("MM", r"(?P<m>\d{2})"),
        ("DD", r"(?P<d>\d{2})"),
        ("Do", r"(?P<d>\d{1,2})(?:st|nd|rd|th)"),
        ("ww", r"(?P<w>\d{2})"),
        ("WW", r"(?P<w>\d{2})"),
        ("w", r"(?P<w>\d{1,2})"),
        ("W", r"(?P<w>\d{1,2})"),
        ("M", r"(?P<m>\d{1,2})"),
        ("D", r"(?P<d>\d{1,2})"),
        ("Q", r"(?P<q>[1-4])"),
        ("dd", r"[A-Za-z]+"),
        ("d", r"\d"),
    ];
    let mut pattern = String::from(r"(?:^|/)");
    let mut rest = format;
    while !rest.is_empty() {
        if let Some(literal) = rest.strip_prefix('[') {
            let end = literal.find(']')?;
            pattern.push_str(&regex::escape(&literal[..end]));
            rest = &literal[end + 1..];
            continue;
        }
        if let Some((token, re)) = TOKENS.iter().find(|(t, _)| rest.starts_with(t)) {
            // A group named twice (a format holding `YYYY` twice, as `YYYY/YYYY-MM-DD` does)
            // is refused by the regex crate: later ones only need to match.
            let name = re.split('<').nth(1).and_then(|n| n.split('>').next());
            match name {
                Some(n) if pattern.contains(&format!("<{n}>")) => {
                    pattern.push_str(&re.replace(&format!("?P<{n}>"), "?:"));
                }
                _ => pattern.push_str(re),
            }
            rest = &rest[token.len()..];
            continue;
        }
        let ch = rest.chars().next()?;
        pattern.push_str(&regex::escape(&ch.to_string()));
        rest = &rest[ch.len_utf8()..];
    }
    pattern.push('$');
    Regex::new(&pattern).ok()
}

fn period_of_format(c: &Captures) -> Option<Period> {
    let num = |name: &str| c.name(name).and_then(|m| m.as_str().parse::<u32>().ok());
    let year = num("y")
        .map(|y| y as i32)
        .or_else(|| num("y2").map(|y| 2000 + y as i32));
    let month = num("m").or_else(|| month_number(c.name("mn")?.as_str()));
    if let (Some(y), Some(w)) = (num("wy"), num("w")) {
        return Period::iso_week(y as i32, w);
    }
    match (year, month, num("d"), num("q")) {
        (Some(y), Some(m), Some(d), _) => ymd(y, m, d).map(Period::day),
        (Some(y), Some(m), None, _) => Period::month(y, m),
        (Some(y), None, None, Some(q)) => {
            let from = ymd(y, (q - 1) * 3 + 1, 1)?;
            let to = from.checked_add_months(Months::new(3))? - Duration::days(1);
            Some(Period { from, to })
        }
        (Some(y), None, None, None) => Period::year(y),
        _ => None,
    }
}

/// Dated Dataview fields: `due:: 2022-02-17` on a line of its own, `[due:: 2022-02-17]` or
/// `(due:: 2022-02-17)` inside one.
static DATED_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?:^|[\[(])\s*[\p{L}\p{N}_ *-]+::\s*(\d{4})-(\d{2})-(\d{2})")
        .expect("dated field")
});

/// A date property's value: `2021-05-11`, maybe with a time after it.
static DATE_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{4})-(\d{2})-(\d{2})(?:$|[T ])").expect("date value"));

/// What a note is dated by.
pub struct NoteDateSources<'a> {
    /// The note's path without `.md`.
    pub key: &'a str,
    /// Its frontmatter as JSON, when it has one.
    pub properties: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// Its body.
    pub body: &'a str,
    /// Its headings' text.
    pub headings: &'a [&'a str],
    /// Its file time.
    pub modified: Option<SystemTime>,
}

/// The periods a note is about, sorted, each once: its name's, its date properties', its
/// dated fields' and its dated headings'; the file time's day only when it has none of those.
pub fn note_periods(formats: &NoteFormats, note: &NoteDateSources) -> Vec<Period> {
    let mut out: Vec<Period> = formats.period_of_name(note.key).into_iter().collect();
    let mut add_day = |c: Captures| {
        let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
        if let Some(d) = n(1)
            .zip(n(2))
            .zip(n(3))
            .and_then(|((y, m), d)| ymd(y as i32, m, d))
        {
            out.push(Period::day(d));
        }
    };
    let mut values: Vec<&serde_json::Value> = note
        .properties
        .map(|p| p.values().collect())
        .unwrap_or_default();
    while let Some(v) = values.pop() {
        match v {
            serde_json::Value::String(s) => {
                if let Some(c) = DATE_VALUE.captures(s.trim()) {
                    add_day(c);
                }
            }
            serde_json::Value::Array(items) => values.extend(items),
            _ => {}
        }
    }
    for c in DATED_FIELD.captures_iter(note.body) {
        add_day(c);
    }
    let far_past = ymd(1, 1, 1).unwrap_or_default();
    for h in note.headings {
        // A heading names a date only as written out in full; "Week 3" is no date.
        out.extend(
            mentioned(h, far_past)
                .into_iter()
                .filter(|m| m.period.from.year() > 1)
                .map(|m| m.period),
        );
    }
    if out.is_empty()
        && let Some(t) = note.modified
    {
        let local: chrono::DateTime<Local> = t.into();
        out.push(Period::day(local.date_naive()));
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_day_counted_from_one_said_before() {
        let day = |y, m, d| Period::day(NaiveDate::from_ymd_opt(y, m, d).unwrap());
        let anchor = day(2022, 1, 30);
        for (text, want) in [
            ("And the next day?", Some(day(2022, 1, 31))),
            ("How did it go the day after?", Some(day(2022, 1, 31))),
            ("And the night before?", Some(day(2022, 1, 29))),
            ("And two days later, what did I buy?", Some(day(2022, 2, 1))),
            ("3 days earlier?", Some(day(2022, 1, 27))),
            ("a week later?", Some(day(2022, 2, 6))),
            ("What else did I get done that day?", Some(day(2022, 1, 30))),
            ("第二天呢？", Some(day(2022, 1, 31))),
            ("When's his birthday?", None),
            ("What's the next step?", None),
        ] {
            assert_eq!(after_anchor(text, anchor), want, "{text}");
        }
        let month = Period::month(2022, 1).unwrap();
        assert_eq!(after_anchor("And the next day?", month), None);
    }

    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn named(text: &str) -> Vec<String> {
        // A Friday.
        mentioned(text, d("2026-11-27"))
            .into_iter()
            .map(|m| m.period.to_string())
            .collect()
    }

    #[test]
    fn days_in_every_written_form() {
        for q in [
            "How much did I pay for the scarf on 5 Jan 2022?",
            "How many steps did I walk on the 5th of January 2022?",
            "What time did I get up on Jan 5th, 2022?",
            "Who was around on January 5, 2022?",
            "What did I buy on 2022-01-05?",
            "2022年1月5日我买了什么？",
            "2022년 1월 5일",
            "what happened 5/1/2022",
            "05.01.2022 what did I get up to",
            "what was I up to on 05.01.22?",
            "on 1/15/2022, no: 15-01-2022",
        ] {
            assert!(
                named(q)
                    .iter()
                    .all(|d| d == "2022-01-05" || d == "2022-01-15"),
                "{q}"
            );
            assert!(!named(q).is_empty(), "{q}");
        }
        assert_eq!(named("on 1/15/2022"), ["2022-01-15"]);
        // A version is no date, nor a phone number.
        assert!(named("What changed in 1.4.16? Call 06-44-2287.").is_empty());
    }

    #[test]
    fn a_mention_says_whether_it_names_its_year() {
        let today = d("2026-11-28");
        let yearless =
            |q: &str| -> Vec<bool> { mentioned(q, today).iter().map(|m| m.yearless).collect() };
        assert_eq!(yearless("what did i eat on Jan 9th"), [true]);
        assert_eq!(yearless("anything happen on 12th feb?"), [true]);
        assert_eq!(yearless("in March"), [true]);
        assert_eq!(yearless("5月11日"), [true]);
        assert_eq!(
            yearless("on 9 January 2024, 14/3/2024 and yesterday"),
            [false, false, false]
        );
        let jan9 = period_named("Jan 9th", today).expect("a day");
        assert_eq!(jan9.to_string(), "2026-01-09");
        assert_eq!(
            jan9.a_year_before().map(|p| p.to_string()).as_deref(),
            Some("2025-01-09")
        );
        let leap = Period::day(d("2024-02-29")).a_year_before().expect("a day");
        assert_eq!(leap.to_string(), "2023-02-28");
    }

    #[test]
    fn periods_and_days_without_a_year() {
        assert_eq!(
            named("What did I read in March 2021?"),
            ["2021-03-01 to 2021-03-31"]
        );
        assert_eq!(named("in 2021"), ["2021-01-01 to 2021-12-31"]);
        // The latest March not after today, the latest 30 December too.
        assert_eq!(
            named("What did I do in March?"),
            ["2026-03-01 to 2026-03-31"]
        );
        assert_eq!(named("on 30 December"), ["2025-12-30"]);
        assert_eq!(named("2021年5月"), ["2021-05-01 to 2021-05-31"]);
        // "May" and "march" as words are no dates.
        assert!(named("May I march on?").is_empty());
        assert!(named("a list of 5 months").is_empty());
    }

    #[test]
    fn relative_dates_count_from_today() {
        assert_eq!(named("what did I do yesterday"), ["2026-11-26"]);
        assert_eq!(named("today"), ["2026-11-27"]);
        assert_eq!(named("3 days ago"), ["2026-11-24"]);
        assert_eq!(named("last week"), ["2026-11-16 to 2026-11-22"]);
        assert_eq!(named("this month"), ["2026-11-01 to 2026-11-30"]);
        assert_eq!(named("last month"), ["2026-10-01 to 2026-10-31"]);
        assert_eq!(named("last year"), ["2025-01-01 to 2025-12-31"]);
        // On a Friday, last Friday is a week ago.
        assert_eq!(named("last Friday"), ["2026-11-20"]);
        assert_eq!(named("on Monday"), ["2026-11-23"]);
        assert_eq!(named("昨天"), ["2026-11-26"]);
        assert_eq!(named("上周"), ["2026-11-16 to 2026-11-22"]);
    }

    #[test]
    fn one_period_spans_all_a_question_names() {
        let p = period_named("between 3 May 2021 and 9 May 2021", d("2026-11-27")).unwrap();
        assert_eq!(p.to_string(), "2021-05-03 to 2021-05-09");
        assert_eq!(period_named("how do I sync?", d("2026-11-27")), None);
    }

    #[test]
    fn bounds_as_tools_take_them() {
        assert_eq!(Period::parse_bound("2021-05", false), Some(d("2021-05-01")));
        assert_eq!(Period::parse_bound("2021-02", true), Some(d("2021-02-28")));
        assert_eq!(Period::parse_bound("2021", true), Some(d("2021-12-31")));
        assert_eq!(
            Period::parse_bound("2021-05-11", true),
            Some(d("2021-05-11"))
        );
        assert_eq!(Period::parse_bound("May 2021", true), None);
        assert_eq!(Period::parse_bound("2021-13-01", true), None);
    }

    #[test]
    fn bounds_make_a_period_open_at_either_end() {
        assert_eq!(Period::between(None, None), Ok(None));
        let open_start = Period::between(None, Some(d("2021-05-31")))
            .unwrap()
            .unwrap();
        assert_eq!(
            (open_start.from, open_start.to),
            (NaiveDate::MIN, d("2021-05-31"))
        );
        assert_eq!(
            Period::between(Some(d("2021-05-01")), Some(d("2021-05-31"))),
            Ok(Some(Period {
                from: d("2021-05-01"),
                to: d("2021-05-31")
            }))
        );
        assert_eq!(
            Period::between(Some(d("2021-06-01")), Some(d("2021-05-31"))),
            Err((d("2021-06-01"), d("2021-05-31")))
        );
    }

    #[test]
    fn note_names_in_the_vaults_formats() {
        let f = NoteFormats::from_formats(["DD.MM.YYYY", "YYYY/MM/YYYY-MM-DD dddd", "gggg-[W]ww"]);
        let p = |k: &str| f.period_of_name(k).map(|p| p.to_string());
        assert_eq!(p("Journal/11.05.2021"), Some("2021-05-11".into()));
        assert_eq!(
            p("Daily/2021/05/2021-05-11 Tuesday"),
            Some("2021-05-11".into())
        );
        assert_eq!(
            p("Weekly/2021-W19"),
            Some("2021-05-10 to 2021-05-16".into())
        );
        // An ISO date anywhere in a name, whatever the formats.
        assert_eq!(p("Meetings/2021-05-11 with Ana"), Some("2021-05-11".into()));
        assert_eq!(p("Ideas/Garden"), None);
        let defaults = NoteFormats::default();
        assert_eq!(
            defaults
                .period_of_name("Monthly/2022-02")
                .map(|p| p.to_string()),
            Some("2022-02-01 to 2022-02-28".into())
        );
    }

    #[test]
    fn a_notes_dates_from_properties_fields_and_headings() {
        let props: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            r#"{"due": "2022-04-08", "received": "2022-02-06T10:00", "mood": "2022 was ok"}"#,
        )
        .unwrap();
        let headings = ["Daily Note", "Meeting on 3 March 2022"];
        let note = NoteDateSources {
            key: "assignments/assignment_12",
            properties: Some(&props),
            body: "- a concert on [due:: 2022-02-17] with streaming\nstarted:: 2022-07-22\nnot a date 2022-13-40",
            headings: &headings,
            modified: Some(SystemTime::now()),
        };
        let days: Vec<String> = note_periods(&NoteFormats::default(), &note)
            .iter()
            .map(Period::to_string)
            .collect();
        assert_eq!(
            days,
            [
                "2022-02-06",
                "2022-02-17",
                "2022-03-03",
                "2022-04-08",
                "2022-07-22"
            ]
        );
    }

    #[test]
    fn the_file_time_dates_only_an_undated_note() {
        let note = NoteDateSources {
            key: "Ideas/Garden",
            properties: None,
            body: "plant beans",
            headings: &[],
            modified: Some(SystemTime::now()),
        };
        assert_eq!(
            note_periods(&NoteFormats::default(), &note),
            [Period::day(today())]
        );
    }
}
