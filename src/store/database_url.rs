//! Where the database is: the `[storage] database_url` setting, parsed by its scheme.
//!
//! The backend follows from the scheme (`sqlite://` or `postgres://`). A URL may hold a password,
//! so it is shown only [redacted](DatabaseUrl::redacted), in logs and errors alike.

use std::fmt;
use std::path::PathBuf;

use url::Url;

/// Which database, by the scheme of `[storage] database_url`.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A SQLite file; created with its folder when missing.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl DatabaseUrl {
    /// Parses `sqlite://relative/path.db`, `sqlite:///abs/path.db` or `postgres://…`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(rest) = s.strip_prefix("sqlite://").or_else(|| s.strip_prefix("sqlite:")) {
            let path = rest.split('?').next().unwrap_or_default();
            if path.is_empty() || path == ":memory:" {
                return Err("a SQLite file path such as sqlite://data/docket.db".into());
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(Self::Postgres(s.to_owned()));
        }
        Err("a URL starting with sqlite:// or postgres://".into())
    }

    /// The URL with every password replaced by `***`, safe for logs: the one in the userinfo
    /// (`postgres://user:secret@host/db`) and those in the query string (`?password=…`,
    /// `?sslpassword=…`, any case). A URL that cannot be parsed is not shown at all.
    pub fn redacted(&self) -> String {
        match self {
            Self::Sqlite(p) => format!("sqlite://{}", p.display()),
            Self::Postgres(s) => match Url::parse(s) {
                Ok(mut u) => {
                    if u.password().is_some() {
                        let _ = u.set_password(Some("***"));
                    }
                    if u.query().is_some() {
                        let pairs: Vec<(String, String)> = u
                            .query_pairs()
                            .map(|(key, value)| {
                                let secret = SECRET_PARAMETERS.iter().any(|s| key.eq_ignore_ascii_case(s));
                                let value = if secret { "***".to_owned() } else { value.into_owned() };
                                (key.into_owned(), value)
                            })
                            .collect();
                        u.query_pairs_mut().clear().extend_pairs(pairs);
                    }
                    u.to_string()
                }
                Err(_) => "postgres://(unparsable)".to_owned(),
            },
        }
    }
}

/// Connection parameters of a PostgreSQL URL's query string that hold a secret (libpq's names).
const SECRET_PARAMETERS: &[&str] = &["password", "sslpassword"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_by_scheme() {
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/docket/docket.db"),
            Ok(DatabaseUrl::Sqlite(PathBuf::from("/var/lib/docket/docket.db")))
        );
        assert_eq!(DatabaseUrl::parse("sqlite://data/d.db"), Ok(DatabaseUrl::Sqlite(PathBuf::from("data/d.db"))));
        assert!(matches!(DatabaseUrl::parse("postgres://u:pw@127.0.0.1/test"), Ok(DatabaseUrl::Postgres(_))));
        assert!(DatabaseUrl::parse("sqlite://:memory:").is_err());
        let redacted = DatabaseUrl::parse("postgres://u:hunter2@127.0.0.1/test").expect("valid").redacted();
        assert!(!redacted.contains("hunter2"), "{redacted}");
    }

    #[test]
    fn postgres_passwords_are_redacted_wherever_the_url_holds_them() {
        let redacted = |s: &str| DatabaseUrl::parse(s).expect("valid").redacted();
        for url in [
            "postgres://u:hunter2@127.0.0.1/test",
            "postgres://u@127.0.0.1/test?password=hunter2",
            "postgresql://127.0.0.1/test?sslmode=require&password=hunter2&application_name=docket",
            "postgres://u@127.0.0.1/test?sslpassword=hunter2",
            "postgres://u@127.0.0.1/test?PASSWORD=hunter2",
            "postgres://u:hunter1@127.0.0.1/test?password=hunter2&sslpassword=hunter3",
            "postgres://u@127.0.0.1/test?password=hunter%32",
        ] {
            let shown = redacted(url);
            assert!(!shown.contains("hunter"), "{url} shown as {shown}");
            assert!(shown.contains("127.0.0.1/test"), "{url} shown as {shown}");
        }
        // What is not secret stays readable.
        let shown = redacted("postgres://docket@db.internal:5433/docket?sslmode=require&password=x");
        assert!(shown.starts_with("postgres://docket@db.internal:5433/docket?"), "{shown}");
        assert!(shown.contains("sslmode=require"), "{shown}");
        assert!(shown.contains("password=***"), "{shown}");
        assert!(!redacted("postgres://u:pw@127.0.0.1/test").contains(":pw@"));
    }
}
