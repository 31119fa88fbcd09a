//! The kinds of values a key can hold: how each is read and checked (for `deserialize_with`),
//! and how it is written back in the form a person would type (for `serialize_with`).
//!
//! A reader refuses with the words of what is expected ("a whole number from 1 to 256"); the
//! key and the value found are added by [`super::read`], which knows them. Sizes keep their
//! units ("20 MiB", read by bytesize) and durations theirs ("30s", read by humantime), both ways.

use std::fmt::Display;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Deserializer, Serializer};
use toml::Value;
use url::Url;

/// What a non-string value is refused with where a string is expected.
pub(crate) const STRING: &str = "a string in quotes";

/// The value as TOML, or `None` when it cannot be one of docket's (a date and time).
fn raw<'de, D: Deserializer<'de>>(d: D) -> Option<Value> {
    Value::deserialize(d).ok()
}

/// A refusal of the value's type rather than of its content: a message shows such a value as
/// TOML, not as the text of a string.
fn wrong_type<E: serde::de::Error>(expected: &str) -> E {
    E::invalid_type(Unexpected::Other("value"), &expected)
}

/// A bounded number or duration: `Between::<1, 256>::count` reads a whole number from 1 to 256,
/// `Between::<2, 3600>::duration` a duration from 2 s to 1 h (duration bounds are in seconds).
#[derive(Debug)]
pub(crate) struct Between<const MIN: u64, const MAX: u64>;

impl<const MIN: u64, const MAX: u64> Between<MIN, MAX> {
    /// A whole number from `MIN` to `MAX`.
    pub(crate) fn count<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: TryFrom<u64>,
    {
        let expected = format!("a whole number from {MIN} to {MAX}");
        let Some(Value::Integer(n)) = raw(d) else { return Err(wrong_type(&expected)) };
        u64::try_from(n)
            .ok()
            .filter(|n| (MIN..=MAX).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| D::Error::custom(expected))
    }

    /// A duration from `MIN` to `MAX` seconds, such as `"30s"`.
    pub(crate) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let range = Duration::from_secs(MIN)..=Duration::from_secs(MAX);
        match raw(d) {
            Some(Value::String(s)) => humantime::parse_duration(s.trim()).ok().filter(|d| range.contains(d)),
            _ => None,
        }
        .ok_or_else(|| {
            D::Error::custom(format_args!(
                "a duration such as \"30s\", \"30m\" or \"7d\", from {} to {}",
                humantime::format_duration(*range.start()),
                humantime::format_duration(*range.end())
            ))
        })
    }

    /// A number from `MIN` to `MAX`, whole or not.
    pub(crate) fn ratio<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        let (min, max) = (MIN as f64, MAX as f64);
        let expected = format!("a number from {min} to {max}, such as 2.0");
        let n = match raw(d) {
            Some(Value::Float(f)) => f,
            Some(Value::Integer(i)) => i as f64,
            _ => return Err(wrong_type(&expected)),
        };
        if (min..=max).contains(&n) { Ok(n) } else { Err(D::Error::custom(expected)) }
    }
}

/// A size greater than zero: `"20 MiB"`, `"2 GB"`, or a number of bytes.
pub(crate) fn size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match raw(d) {
        Some(Value::String(s)) => s.trim().parse::<bytesize::ByteSize>().ok().map(|b| b.as_u64()).filter(|&b| b > 0),
        Some(Value::Integer(n)) => u64::try_from(n).ok().filter(|&n| n > 0),
        _ => None,
    }
    .ok_or_else(|| D::Error::custom("a size such as \"20 MiB\" or \"2 GB\", greater than zero"))
}

/// An optional [`size`].
pub(crate) fn optional_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    size(d).map(Some)
}

/// An optional `listen` address with its port (`"127.0.0.1:9464"`), for
/// `#[serde(with = "value::optional_listen", skip_serializing_if = "Option::is_none")]`.
pub(crate) mod optional_listen {
    use std::net::SocketAddr;

    use serde::Deserializer;
    use serde::de::Error as _;

    pub(crate) use super::write_optional_display as serialize;

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
        match super::string(d)?.parse() {
            Ok(addr) => Ok(Some(addr)),
            Err(_) => Err(D::Error::custom("an address and port such as \"127.0.0.1:9464\"")),
        }
    }
}

/// An optional [`size`], written back as [`write_optional_size`] writes it, for
/// `#[serde(with = "value::optional_size_key", skip_serializing_if = "Option::is_none")]`.
pub(crate) mod optional_size_key {
    pub(crate) use super::optional_size as deserialize;
    pub(crate) use super::write_optional_size as serialize;
}

/// `true` or `false`.
pub(crate) fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match raw(d) {
        Some(Value::Boolean(b)) => Ok(b),
        _ => Err(wrong_type("true or false")),
    }
}

/// A string; what it must be beyond that is checked by the caller.
pub(crate) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match raw(d) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(wrong_type(STRING)),
    }
}

/// The name of an environment variable (letters, digits and `_`, not starting with a digit),
/// for keys that say where a secret is rather than holding it.
pub(crate) fn env_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = string(d)?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(Some(name))
    } else {
        Err(D::Error::custom("the name of an environment variable, such as \"DOCKET_SECRET\""))
    }
}

/// A folder path, not empty.
pub(crate) fn folder<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    let s = string(d)?;
    if s.trim().is_empty() { Err(D::Error::custom("a folder path")) } else { Ok(PathBuf::from(s)) }
}

/// An `http://` or `https://` URL with a host; see [`http_url_from`].
pub(crate) fn http_url<'de, D: Deserializer<'de>>(d: D) -> Result<Url, D::Error> {
    http_url_from(&string(d)?).map_err(D::Error::custom)
}

/// An optional [`http_url`].
pub(crate) fn optional_http_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Url>, D::Error> {
    http_url(d).map(Some)
}

/// Checks an `http://` or `https://` URL with a host, and gives it a trailing slash: teloxide
/// joins method paths onto the base, and without the slash the last path segment of a
/// self-hosted server's URL would be dropped. The error is what is expected instead.
pub(crate) fn http_url_from(s: &str) -> Result<Url, &'static str> {
    match Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
            if u.path().ends_with('/') {
                Ok(u)
            } else {
                Url::parse(&format!("{u}/")).map_err(|_| EXPECTED_URL)
            }
        }
        _ => Err(EXPECTED_URL),
    }
}

const EXPECTED_URL: &str = "an http:// or https:// URL such as https://api.telegram.org";

/// A list of numeric Telegram user ids.
pub(crate) fn user_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    let ids: Option<Vec<i64>> =
        raw(d).as_ref().and_then(Value::as_array).and_then(|a| a.iter().map(Value::as_integer).collect());
    ids.ok_or_else(|| wrong_type("a list of numeric Telegram user ids, such as [12345, 67890]"))
}

/// Writes a size in the largest unit that holds it exactly ("20 MiB", "2 GB", "1536 MiB"), so
/// that reading it back gives the same number of bytes.
pub(crate) fn write_size<S: Serializer>(bytes: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&human_size(*bytes))
}

/// Writes an optional [`write_size`]; `None` is left out.
pub(crate) fn write_optional_size<S: Serializer>(bytes: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match bytes {
        Some(b) => write_size(b, s),
        None => s.serialize_none(),
    }
}

pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 8] = [
        ("TiB", 1 << 40),
        ("TB", 1_000_000_000_000),
        ("GiB", 1 << 30),
        ("GB", 1_000_000_000),
        ("MiB", 1 << 20),
        ("MB", 1_000_000),
        ("KiB", 1 << 10),
        ("kB", 1_000),
    ];
    match UNITS.iter().find(|(_, factor)| bytes >= *factor && bytes.is_multiple_of(*factor)) {
        Some((unit, factor)) => format!("{} {unit}", bytes / factor),
        None => format!("{bytes} B"),
    }
}

/// Writes a duration as humantime does ("30s", "10m", "7days").
pub(crate) fn write_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_duration(*d))
}

/// Writes a value by its Display (URLs, addresses, paths).
pub(crate) fn write_display<T: Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// Writes an optional [`write_display`]; `None` is left out.
pub(crate) fn write_optional_display<T: Display, S: Serializer>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// Writes a path as text.
pub(crate) fn write_path<S: Serializer>(path: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_in_the_largest_exact_unit_and_read_back_the_same() {
        for (bytes, written) in [
            (20 * 1024 * 1024, "20 MiB"),
            (2_000_000_000, "2 GB"),
            (50_000_000, "50 MB"),
            (16 << 30, "16 GiB"),
            (1_610_612_736, "1536 MiB"),
            (1_000, "1 kB"),
            (1_024, "1 KiB"),
            (1_001, "1001 B"),
            (3 << 40, "3 TiB"),
        ] {
            assert_eq!(human_size(bytes), written);
            let back: u64 = written.parse::<bytesize::ByteSize>().expect("bytesize reads it").as_u64();
            assert_eq!(back, bytes, "{written}");
        }
    }

    #[test]
    fn urls_get_a_trailing_slash_and_need_http_and_a_host() {
        assert_eq!(
            http_url_from("http://127.0.0.1:8081/custom").map(String::from),
            Ok("http://127.0.0.1:8081/custom/".into())
        );
        assert_eq!(http_url_from("https://api.telegram.org").map(String::from), Ok("https://api.telegram.org/".into()));
        assert_eq!(http_url_from("ftp://x"), Err(EXPECTED_URL));
        assert_eq!(http_url_from("nonsense"), Err(EXPECTED_URL));
    }
}
