//! How the parsed TOML becomes [`Config`](super::Config) with *every* problem named, not just
//! the first.
//!
//! The section structs derive `Deserialize`, and serde's derive stops at the first error. So
//! [`read`] runs it over [`Node`], a deserializer of the parsed table that knows which key each
//! value stands for: a refusal comes back naming its key, the key is recorded as a
//! [`Problem`], taken out of the table (so its default applies), and the table is read again —
//! once per bad key at most. Unknown keys are found from the list of fields serde's derive hands
//! to `deserialize_struct`: each struct is the one list of its section's keys, which
//! `deny_unknown_fields` also enforces wherever a struct is read without this module.

use std::fmt;

use serde::de::Error as _;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use toml::{Table, Value};

use super::Problem;

/// Reads `table` into `T`, adding every problem to `problems`. A key with a problem is read as
/// if it were absent, so the result is complete either way; whether it may be used is for the
/// caller to decide from `problems`.
pub(super) fn read<T: DeserializeOwned + Default>(mut table: Table, problems: &mut Vec<Problem>) -> T {
    loop {
        match T::deserialize(Node { key: None, value: Value::Table(table.clone()) }) {
            Ok(read) => return read,
            Err(refusal) => {
                let removed = remove(&mut table, &refusal.path);
                problems.push(refusal.into_problem());
                if !removed {
                    // Not tied to a key that can be taken out: nothing more to learn.
                    return T::default();
                }
            }
        }
    }
}

/// The keys of the struct `T`, in declaration order, as its `Deserialize` derive lists them.
pub(super) fn keys_of<T: DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(FieldList) {
        Err(Fields(fields)) => fields,
        Ok(_) => &[],
    }
}

/// A value as written in TOML, shortened for messages.
pub(super) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 { format!("{}…", s.chars().take(60).collect::<String>()) } else { s }
}

/// A string as written in a message: in quotes, escaped.
pub(super) fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// What was found at a key, for a [`Problem`]: a string whose text was refused in quotes, in
/// full; any other value (a string where a number was expected, say) as TOML, shortened.
fn found(v: &Value, wrong_type: bool) -> String {
    match v {
        Value::String(s) if !wrong_type => quote(s),
        other => short(other),
    }
}

/// Takes the value at `path` out of `table`; whether there was one.
fn remove(table: &mut Table, path: &[String]) -> bool {
    match path {
        [] => false,
        [key] => table.remove(key).is_some(),
        [key, rest @ ..] => table.get_mut(key).and_then(Value::as_table_mut).is_some_and(|t| remove(t, rest)),
    }
}

/// Why a value was refused, and where.
#[derive(Debug)]
pub(super) struct Refusal {
    /// The keys from the top of the file down to the refused value; filled in on the way up.
    path: Vec<String>,
    /// The refused value as written; filled in by the key that holds it.
    found: Option<String>,
    /// What is expected instead.
    expected: String,
    /// Whether the value's type was refused, not its content.
    wrong_type: bool,
}

impl Refusal {
    /// The refusal as seen from the key `key` holding `value`.
    fn under(mut self, key: String, value: &Value) -> Self {
        if self.found.is_none() {
            self.found = Some(found(value, self.wrong_type));
        }
        self.path.insert(0, key);
        self
    }

    fn into_problem(self) -> Problem {
        let key = match self.path.as_slice() {
            [] => "(the file)".to_owned(),
            [section] => section.clone(),
            [section, keys @ ..] => format!("[{section}] {}", keys.join(".")),
        };
        Problem { key, found: self.found.unwrap_or_default(), expected: self.expected }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expected)
    }
}

impl std::error::Error for Refusal {}

impl de::Error for Refusal {
    fn custom<M: fmt::Display>(expected: M) -> Self {
        Self { path: Vec::new(), found: None, expected: expected.to_string(), wrong_type: false }
    }

    fn invalid_type(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Self { path: Vec::new(), found: None, expected: expected.to_string(), wrong_type: true }
    }
}

/// A value of the parsed file, with the key it stands for (`None` for the whole file).
struct Node {
    key: Option<String>,
    value: Value,
}

impl<'de> de::Deserializer<'de> for Node {
    type Error = Refusal;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        if let Value::Datetime(_) = self.value {
            // toml hands a date over as its text, which would pass for a string: no key of
            // docket's holds a date, so refuse it, and let the key say what it expects.
            return Err(Refusal::custom("a value that is not a date"));
        }
        self.value.deserialize_any(visitor).map_err(|e| Refusal::custom(e.message()))
    }

    /// A section (or the whole file): refuses unknown keys, then hands over the known ones in
    /// declaration order, each as a [`Node`] of its own.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        let Value::Table(mut table) = self.value else {
            let expected = match &self.key {
                Some(key) => format!("a [{key}] section"),
                None => "a table".to_owned(),
            };
            return Err(Refusal { path: Vec::new(), found: Some(short(&self.value)), expected, wrong_type: true });
        };
        if let Some((key, value)) = table.iter().find(|(key, _)| !fields.contains(&key.as_str())) {
            let expected = match self.key {
                None => format!("one of the sections [{}]", fields.join("], [")),
                Some(_) => format!("one of the keys {}", fields.join(", ")),
            };
            return Err(Refusal { path: vec![key.clone()], found: Some(short(value)), expected, wrong_type: false });
        }
        let entries: Vec<(String, Value)> =
            fields.iter().filter_map(|&field| table.remove(field).map(|value| (field.to_owned(), value))).collect();
        visitor.visit_map(Entries { entries: entries.into_iter(), pending: None })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        // A key that is there holds a value: TOML has no null.
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Refusal> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        self.value.deserialize_enum(name, variants, visitor).map_err(|e| Refusal::custom(e.message()))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// The known keys of one table, handed to a derived visitor one by one.
struct Entries {
    entries: std::vec::IntoIter<(String, Value)>,
    pending: Option<(String, Value)>,
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Refusal;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Refusal> {
        let Some((key, value)) = self.entries.next() else { return Ok(None) };
        let field = seed.deserialize(key.as_str().into_deserializer())?;
        self.pending = Some((key, value));
        Ok(Some(field))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Refusal> {
        let Some((key, value)) = self.pending.take() else {
            return Err(Refusal::custom("a value asked for before its key"));
        };
        let node = Node { key: Some(key.clone()), value: value.clone() };
        seed.deserialize(node).map_err(|refusal| refusal.under(key, &value))
    }
}

/// The error of [`FieldList`]: the fields of the struct it was asked for.
#[derive(Debug)]
struct Fields(&'static [&'static str]);

impl fmt::Display for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fields {:?}", self.0)
    }
}

impl std::error::Error for Fields {}

impl de::Error for Fields {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Self(&[])
    }
}

/// A deserializer that only asks a struct for its list of fields.
struct FieldList;

impl<'de> de::Deserializer<'de> for FieldList {
    type Error = Fields;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
        Err(Fields(&[]))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Fields> {
        Err(Fields(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}
