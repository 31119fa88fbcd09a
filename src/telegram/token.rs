//! The bot token: the one secret docket holds, in a wrapper whose Debug and Display show only the
//! bot's numeric id, never the secret part.
//!
//! It is read from the environment, never from the configuration file. Nothing here logs, and
//! no error built here carries the token.

use std::fmt;

/// The environment variable holding the bot token.
pub const TOKEN_ENV: &str = "TELOXIDE_TOKEN";

/// What a token looks like, for error messages.
const EXPECTED: &str = "a bot token like 123456:ABC-DEF… from @BotFather";

/// The bot token. Debug and Display never show it.
#[derive(Clone)]
pub struct BotToken(String);

/// Why no usable token was found. The message names where docket looked, never the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// A token was missing or is not shaped like one.
    #[error("no usable bot token: {place} = {found}: expected {EXPECTED}")]
    Unusable {
        /// Where docket looked: `$TELOXIDE_TOKEN`.
        place: String,
        /// What it found there, described without the value: `(not set)`, `(empty)`, `(hidden)`.
        found: &'static str,
    },
}

impl BotToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// Reads `TELOXIDE_TOKEN`.
    pub fn from_env() -> Result<Self, TokenError> {
        let unusable = |found| TokenError::Unusable { place: format!("${TOKEN_ENV}"), found };
        match std::env::var(TOKEN_ENV) {
            Ok(t) if looks_like_token(t.trim()) => Ok(Self(t.trim().to_owned())),
            Ok(t) => Err(unusable(if t.trim().is_empty() { "(empty)" } else { "(hidden)" })),
            Err(_) => Err(unusable("(not set)")),
        }
    }

    /// The secret itself; only for building the Bot API client.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The numeric bot id, the part before the colon.
    pub fn bot_id(&self) -> i64 {
        self.0.split(':').next().and_then(|id| id.parse().ok()).unwrap_or(0)
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
        assert_eq!(t.bot_id(), 123456);
        assert!(!format!("{t:?}").contains("SECRET"));
        assert!(looks_like_token("1:a"));
        assert!(!looks_like_token("nonsense"));
    }

    #[test]
    fn token_display_hides_the_secret_too() {
        let t = BotToken::new("123456:SECRET-PART");
        assert_eq!(t.to_string(), "123456:***");
    }
}
