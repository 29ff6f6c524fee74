//! Frontmatter (Obsidian "properties"): splitting the YAML block off a note and reading it into
//! JSON, tags, aliases and link-bearing strings. Pure: `&str` in, data plus an issue out; broken
//! YAML never fails the note.

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// The frontmatter of one note.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Frontmatter {
    /// The properties as a JSON object; `None` when there is no frontmatter or it is unreadable.
    pub properties: Option<Map<String, Value>>,
    /// Why the frontmatter could not be read, when it could not.
    pub error: Option<String>,
    /// Tags from `tags`/`tag` (without `#`, as written).
    pub tags: Vec<String>,
    /// Aliases from `aliases`/`alias`.
    pub aliases: Vec<String>,
    /// Every string value anywhere in the properties (links are searched for in these).
    pub strings: Vec<String>,
}

/// Splits a note into its frontmatter YAML text (if any) and the byte offset where the body
/// starts. The block must open on the very first line with `---` and close with a `---` line.
pub fn split(text: &str) -> (Option<&str>, usize) {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let t = &text[start..];
    let Some(first_end) = t.find('\n') else {
        return (None, 0);
    };
    if t[..first_end].trim_end() != "---" {
        return (None, 0);
    }
    let yaml_start = start + first_end + 1;
    let mut pos = yaml_start;
    while pos <= text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = text[pos..line_end].trim_end();
        if line == "---" {
            let body = (line_end + 1).min(text.len());
            return (Some(&text[yaml_start..pos]), body);
        }
        if line_end >= text.len() {
            break;
        }
        pos = line_end + 1;
    }
    (None, 0)
}

/// Parses frontmatter YAML text.
pub fn parse(yaml: &str) -> Frontmatter {
    let mut fm = Frontmatter::default();
    if yaml.trim().is_empty() {
        fm.properties = Some(Map::new());
        return fm;
    }
    let docs = match YamlLoader::load_from_str(yaml) {
        Ok(d) => d,
        Err(e) => {
            fm.error = Some(format!("frontmatter is not valid YAML: {e}"));
            return fm;
        }
    };
    let Some(doc) = docs.into_iter().next() else {
        fm.properties = Some(Map::new());
        return fm;
    };
    let Value::Object(map) = to_json(&doc) else {
        fm.error = Some("frontmatter is not a YAML mapping".into());
        return fm;
    };
    for (k, v) in &map {
        match k.to_ascii_lowercase().as_str() {
            "tags" | "tag" => fm
                .tags
                .extend(list_of_strings(v, true).into_iter().filter_map(yaml_tag)),
            "aliases" | "alias" => fm.aliases.extend(
                list_of_strings(v, false)
                    .into_iter()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty()),
            ),
            _ => {}
        }
        collect_strings(v, &mut fm.strings);
    }
    fm.properties = Some(map);
    fm
}

/// A YAML tag entry as a tag, or `None` for null/empty/numeric entries.
fn yaml_tag(s: String) -> Option<String> {
    let t = s.trim().trim_start_matches('#').trim();
    if t.is_empty()
        || t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
    {
        return None;
    }
    Some(t.to_string())
}

/// A property value as a list of strings: a list, a single string (for tags, old vaults also
/// separate several with commas or spaces), or nothing.
fn list_of_strings(v: &Value, split: bool) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().filter_map(scalar_string).collect(),
        Value::String(s) if split => s
            .split(|c: char| c == ',' || c.is_whitespace())
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

fn to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Real(s) => s
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(s.clone()), Value::Number),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Real(r) => r.clone(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => continue,
                };
                m.insert(key, to_json(v));
            }
            Value::Object(m)
        }
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_only_at_first_line() {
        let (y, b) = split("---\ntitle: x\n---\nbody");
        assert_eq!(y, Some("title: x\n"));
        assert_eq!(&"---\ntitle: x\n---\nbody"[b..], "body");
        assert_eq!(split("\n---\na: 1\n---\n").0, None);
        assert_eq!(split("---\nno end").0, None);
        let (y, b) = split("---\n---\n");
        assert_eq!((y, b), (Some(""), 8));
    }

    #[test]
    fn tags_aliases_and_nulls() {
        let fm = parse("tags:\n  - a/b\n  - \n  - 1984\n  - '#c'\nalias: Solo\n");
        assert_eq!(fm.tags, vec!["a/b", "c"]);
        assert_eq!(fm.aliases, vec!["Solo"]);
        let fm = parse("tags: one, two\naliases: [X, Y]\n");
        assert_eq!(fm.tags, vec!["one", "two"]);
        assert_eq!(fm.aliases, vec!["X", "Y"]);
        let fm = parse("tags:\n  -\n");
        assert!(fm.tags.is_empty());
    }

    #[test]
    fn broken_yaml_is_an_issue_not_a_failure() {
        let fm = parse("title: [unclosed\n  : : :\n");
        assert!(fm.error.is_some());
        assert!(fm.properties.is_none());
    }

    #[test]
    fn strings_include_links() {
        let fm = parse("related: \"[[Other note]]\"\nnested:\n  x: ['[[A]]']\n");
        assert!(fm.strings.contains(&"[[Other note]]".to_string()));
        assert!(fm.strings.contains(&"[[A]]".to_string()));
    }
}
