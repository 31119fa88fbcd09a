//! The bot token: the one secret docket holds, in a wrapper whose Debug and Display show only the
//! bot's numeric id, never the secret part.
//!
//! It never comes from the configuration file. `TELOXIDE_TOKEN` wins when it is set (and not
//! empty); otherwise the file `$CREDENTIALS_DIRECTORY/telegram-token`, which systemd provides for
//! `LoadCredential=telegram-token:/etc/docket/telegram-token`, so the unit needs no shell to read
//! it. Nothing here logs, and no error built here carries the token.

use std::fmt;
use std::path::PathBuf;

use crate::domain::BotId;

/// The environment variable holding the bot token.
pub const TOKEN_ENV: &str = "TELOXIDE_TOKEN";
/// The environment variable naming systemd's folder of credentials (`LoadCredential=`).
pub const CREDENTIALS_ENV: &str = "CREDENTIALS_DIRECTORY";
/// The credential's name: the file in `$CREDENTIALS_DIRECTORY` that holds the token.
pub const CREDENTIAL: &str = "telegram-token";

/// What a token looks like, for error messages.
const EXPECTED: &str = "a bot token like 123456:ABC-DEF… from @BotFather";

/// The bot token. Debug and Display never show it.
#[derive(Clone)]
pub struct BotToken(String);

/// Where a token was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `$TELOXIDE_TOKEN`.
    Env,
    /// The credential file, `$CREDENTIALS_DIRECTORY/telegram-token`, at this path.
    Credential(PathBuf),
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env => write!(f, "${TOKEN_ENV}"),
            Self::Credential(path) => write!(f, "${CREDENTIALS_ENV}/{CREDENTIAL} ({})", path.display()),
        }
    }
}

/// Why no usable token was found. The message says where docket looked, never the token.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Neither place holds a token.
    #[error(
        "no bot token: ${TOKEN_ENV} = {env}, and {credential}: expected {EXPECTED} in ${TOKEN_ENV} or in \
         the file ${CREDENTIALS_ENV}/{CREDENTIAL} (systemd: LoadCredential={CREDENTIAL}:/etc/docket/{CREDENTIAL})"
    )]
    Missing {
        /// What `$TELOXIDE_TOKEN` held: `(not set)` or `(empty)`.
        env: &'static str,
        /// Why there was no credential: `$CREDENTIALS_DIRECTORY = (not set)`, or the file that
        /// is not there.
        credential: String,
    },
    /// A token was found but is not shaped like one.
    #[error("no usable bot token: {place} = {found}: expected {EXPECTED}")]
    Unusable {
        /// Where it was found: `$TELOXIDE_TOKEN`, or the credential file.
        place: String,
        /// What it looks like, without the value: `(empty)` or `(hidden)`.
        found: &'static str,
    },
    /// The credential file is there but cannot be read.
    #[error("cannot read the bot token from {}: {error}", path.display())]
    Unreadable {
        /// The credential file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
}

impl BotToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// Reads the token from `TELOXIDE_TOKEN`, or else from `$CREDENTIALS_DIRECTORY/telegram-token`
    /// (see the module's documentation).
    pub fn from_env() -> Result<Self, TokenError> {
        Self::locate().map(|(token, _)| token)
    }

    /// Like [`BotToken::from_env`], and says where the token was found.
    pub fn locate() -> Result<(Self, TokenSource), TokenError> {
        resolve(std::env::var(TOKEN_ENV).ok(), std::env::var_os(CREDENTIALS_ENV).map(PathBuf::from))
    }

    /// The secret itself; only for building the Bot API client.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The numeric bot id, the part before the colon.
    pub fn bot_id(&self) -> BotId {
        BotId(self.0.split(':').next().and_then(|id| id.parse().ok()).unwrap_or(0))
    }
}

/// The rule, given the values of `TELOXIDE_TOKEN` and `CREDENTIALS_DIRECTORY`: the variable
/// wins when it holds something; otherwise the credential file, whose surrounding whitespace
/// (the trailing newline an editor or `echo` leaves) is not part of the token.
fn resolve(env: Option<String>, credentials: Option<PathBuf>) -> Result<(BotToken, TokenSource), TokenError> {
    let env = match env.as_deref().map(str::trim) {
        Some(token) if !token.is_empty() => return checked(token, TokenSource::Env),
        Some(_) => "(empty)",
        None => "(not set)",
    };
    let Some(folder) = credentials.filter(|folder| !folder.as_os_str().is_empty()) else {
        return Err(TokenError::Missing { env, credential: format!("${CREDENTIALS_ENV} = (not set)") });
    };
    let path = folder.join(CREDENTIAL);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let source = TokenSource::Credential(path);
            let Ok(text) = String::from_utf8(bytes) else {
                return Err(TokenError::Unusable { place: source.to_string(), found: "(hidden)" });
            };
            checked(text.trim(), source)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(TokenError::Missing { env, credential: format!("no file {}", path.display()) })
        }
        Err(error) => Err(TokenError::Unreadable { path, error }),
    }
}

/// The token found at `source`, if it is shaped like one.
fn checked(token: &str, source: TokenSource) -> Result<(BotToken, TokenSource), TokenError> {
    if looks_like_token(token) {
        Ok((BotToken(token.to_owned()), source))
    } else {
        let found = if token.is_empty() { "(empty)" } else { "(hidden)" };
        Err(TokenError::Unusable { place: source.to_string(), found })
    }
}

impl fmt::Debug for BotToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BotToken({}:***)", self.bot_id())
    }
}

impl fmt::Display for BotToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:***", self.bot_id())
    }
}

/// Digits, a colon, then something: the shape of every token @BotFather hands out.
fn looks_like_token(t: &str) -> bool {
    matches!(t.split_once(':'), Some((id, secret)) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && !secret.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_debug_hides_the_secret() {
        let t = BotToken::new("123456:SECRET-PART");
        assert_eq!(t.bot_id(), BotId(123456));
        assert!(!format!("{t:?}").contains("SECRET"));
        assert!(looks_like_token("1:a"));
        assert!(!looks_like_token("nonsense"));
    }

    #[test]
    fn token_display_hides_the_secret_too() {
        let t = BotToken::new("123456:SECRET-PART");
        assert_eq!(t.to_string(), "123456:***");
    }

    /// A credentials folder holding `telegram-token` with `contents`.
    fn credentials(contents: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(CREDENTIAL), contents).expect("write the credential");
        dir
    }

    #[test]
    fn the_credential_file_is_read_without_its_trailing_newline() {
        let dir = credentials("123456:FROM-FILE\n");
        let (token, source) = resolve(None, Some(dir.path().to_owned())).expect("found");
        assert_eq!(token.expose(), "123456:FROM-FILE");
        assert_eq!(source, TokenSource::Credential(dir.path().join("telegram-token")));
        assert!(source.to_string().starts_with("$CREDENTIALS_DIRECTORY/telegram-token ("), "{source}");
    }

    #[test]
    fn teloxide_token_wins_over_the_credential_file() {
        let dir = credentials("123456:FROM-FILE\n");
        let (token, source) = resolve(Some("654321:FROM-ENV".into()), Some(dir.path().to_owned())).expect("found");
        assert_eq!((token.expose(), source), ("654321:FROM-ENV", TokenSource::Env));
        // Even a malformed one: a variable that is set is what the operator meant.
        let e = resolve(Some("nonsense".into()), Some(dir.path().to_owned())).expect_err("malformed");
        assert_eq!(
            e.to_string(),
            "no usable bot token: $TELOXIDE_TOKEN = (hidden): expected a bot token like 123456:ABC-DEF… from @BotFather"
        );
    }

    #[test]
    fn an_empty_teloxide_token_falls_back_to_the_credential_file() {
        let dir = credentials("123456:FROM-FILE");
        let (token, _) = resolve(Some("  ".into()), Some(dir.path().to_owned())).expect("found");
        assert_eq!(token.expose(), "123456:FROM-FILE");
    }

    #[test]
    fn without_either_the_error_names_both_places() {
        let e = resolve(None, None).expect_err("no token").to_string();
        assert!(e.contains("$TELOXIDE_TOKEN = (not set)") && e.contains("$CREDENTIALS_DIRECTORY = (not set)"), "{e}");
        assert!(e.contains("LoadCredential=telegram-token:/etc/docket/telegram-token"), "{e}");

        let empty = tempfile::tempdir().expect("temp dir");
        let e = resolve(Some(String::new()), Some(empty.path().to_owned())).expect_err("no token").to_string();
        assert!(e.contains("$TELOXIDE_TOKEN = (empty)"), "{e}");
        assert!(e.contains(&format!("no file {}", empty.path().join("telegram-token").display())), "{e}");
    }

    #[test]
    fn a_malformed_credential_is_refused_without_being_shown() {
        for (contents, found) in [("not-a-token-SECRET\n", "(hidden)"), ("\n", "(empty)")] {
            let dir = credentials(contents);
            let e = resolve(None, Some(dir.path().to_owned())).expect_err("malformed").to_string();
            assert!(e.contains("$CREDENTIALS_DIRECTORY/telegram-token ("), "{e}");
            assert!(e.contains(&format!(" = {found}: expected a bot token")), "{e}");
            assert!(!e.contains("SECRET"), "{e}");
        }
    }
}
