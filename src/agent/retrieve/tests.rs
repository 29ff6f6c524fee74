use super::*;

#[test]
fn a_passage_names_a_day_in_any_year_written_or_as_a_holiday() {
    let today = NaiveDate::from_ymd_opt(2026, 11, 28).unwrap();
    let christmas = Period::day(NaiveDate::from_ymd_opt(2025, 12, 25).unwrap());
    assert!(names_day("- 12月25日 在妈家吃饭", christmas, today));
    assert!(names_day("Christmas Day at Orla's, 2019", christmas, today));
    assert!(names_day("## 2023-12-25\nturkey", christmas, today));
    assert!(!names_day("- 12月21日 冬至 吃了汤圆", christmas, today));
    assert!(!names_day("Christmas presents: gloves", christmas, today));
    // A month or a year is no day of it.
    let eve = Period::day(NaiveDate::from_ymd_opt(2025, 12, 31).unwrap());
    assert!(!names_day("Orla in Ennis this year", eve, today));
    assert!(!names_day("back in December", eve, today));
    assert!(names_day("New Year's Eve at Ger's", eve, today));
    let march = Period::month(2022, 3).unwrap();
    assert!(names_day("paid on 3 March", march, today));
    assert!(!names_day("paid on 3 April", march, today));
}
