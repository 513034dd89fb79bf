//! Dotted paths into a scenario's TOML: `link.down.rate`, `queue`,
//! `flows[0].cc`. A path names one value; setting it replaces that value,
//! or adds the last key to a table that exists, so an axis can vary a
//! field the base scenario leaves at its default.

use std::fmt;
use toml::Value;

/// One step of a path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A parsed dotted path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FieldPath {
    /// Parses `a.b[2].c`; keys are letters, digits, `_` and `-`.
    pub fn parse(text: &str) -> Result<FieldPath, String> {
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (key, mut rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            let key_ok = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !key_ok {
                return Err(format!(
                    "`{text}` is not a field path (write keys joined by dots, \
                     array items as [N], e.g. link.down.rate or flows[0].cc)"
                ));
            }
            steps.push(Step::Key(key.to_string()));
            while !rest.is_empty() {
                let index = rest
                    .strip_prefix('[')
                    .and_then(|r| r.split_once(']'))
                    .and_then(|(n, tail)| n.parse::<usize>().ok().map(|n| (n, tail)));
                match index {
                    Some((n, tail)) => {
                        steps.push(Step::Index(n));
                        rest = tail;
                    }
                    None => {
                        return Err(format!(
                            "`{text}`: an array index is written [N] with N a whole number"
                        ));
                    }
                }
            }
        }
        Ok(FieldPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Sets the value at this path in `root`; every step but the last
    /// must exist, and the last key may be new.
    pub fn set(&self, root: &mut toml::Table, value: Value) -> Result<(), String> {
        let Some((last, inner)) = self.steps.split_last() else {
            return Err("empty field path".to_string());
        };
        let mut at = Slot::Table(root);
        for (i, step) in inner.iter().enumerate() {
            at = at.child(step).ok_or_else(|| self.missing(i))?;
        }
        match (at, last) {
            (Slot::Table(t), Step::Key(k)) => {
                t.insert(k.clone(), value);
                Ok(())
            }
            (Slot::Value(Value::Table(t)), Step::Key(k)) => {
                t.insert(k.clone(), value);
                Ok(())
            }
            (Slot::Value(Value::Array(a)), Step::Index(n)) => match a.get_mut(*n) {
                Some(slot) => {
                    *slot = value;
                    Ok(())
                }
                None => Err(self.missing(inner.len())),
            },
            _ => Err(self.missing(inner.len())),
        }
    }

    fn missing(&self, step: usize) -> String {
        let shown: String = self.steps[..=step]
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Step::Key(k) if i == 0 => k.clone(),
                Step::Key(k) => format!(".{k}"),
                Step::Index(n) => format!("[{n}]"),
            })
            .collect();
        format!(
            "the base scenario has no `{shown}` to reach `{}`",
            self.text
        )
    }
}

/// Where a walk down a path stands.
enum Slot<'a> {
    Table(&'a mut toml::Table),
    Value(&'a mut Value),
}

impl<'a> Slot<'a> {
    fn child(self, step: &Step) -> Option<Slot<'a>> {
        let value = match (self, step) {
            (Slot::Table(t), Step::Key(k)) => t.get_mut(k)?,
            (Slot::Value(Value::Table(t)), Step::Key(k)) => t.get_mut(k)?,
            (Slot::Value(Value::Array(a)), Step::Index(n)) => a.get_mut(*n)?,
            _ => return None,
        };
        Some(Slot::Value(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().expect("test TOML")
    }

    #[test]
    fn sets_nested_keys_and_array_items() {
        let mut t = table("[link.down]\nrate = \"10Mbit\"\n[[flows]]\nkind = \"brisk\"\n");
        FieldPath::parse("link.down.rate")
            .unwrap()
            .set(&mut t, Value::String("5Mbit".into()))
            .unwrap();
        FieldPath::parse("flows[0].cc")
            .unwrap()
            .set(&mut t, Value::String("cubic".into()))
            .unwrap();
        assert_eq!(t["link"]["down"]["rate"].as_str(), Some("5Mbit"));
        assert_eq!(t["flows"][0]["cc"].as_str(), Some("cubic"));
    }

    #[test]
    fn names_the_missing_step() {
        let mut t = table("[[flows]]\nkind = \"brisk\"\n");
        let e = FieldPath::parse("flows[3].cc")
            .unwrap()
            .set(&mut t, Value::Integer(1))
            .unwrap_err();
        assert!(e.contains("no `flows[3]`"), "{e}");
        let e = FieldPath::parse("link.down.rate")
            .unwrap()
            .set(&mut t, Value::Integer(1))
            .unwrap_err();
        assert!(e.contains("no `link`"), "{e}");
    }

    #[test]
    fn rejects_malformed_paths() {
        for bad in ["", "a..b", "flows[x].cc", "flows[0", "a b"] {
            assert!(FieldPath::parse(bad).is_err(), "{bad}");
        }
    }
}
