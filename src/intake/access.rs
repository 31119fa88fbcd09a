//! Who may use the bot: `[access]`'s rules and its invite tokens.

use crate::domain::incoming::GroupMode;

/// Who may use the bot, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessRules {
    /// Telegram user ids allowed; empty means everyone.
    pub allowed_users: Vec<i64>,
    /// Admins: always allowed.
    pub admins: Vec<i64>,
    /// Which messages docket takes in group chats.
    pub groups: GroupMode,
}

impl AccessRules {
    /// Whether `user_id` may use the bot.
    pub fn allows(&self, user_id: i64) -> bool {
        self.allowed_users.is_empty() || self.allowed_users.contains(&user_id) || self.admins.contains(&user_id)
    }
}

/// The invite tokens of `[access] invite_tokens_env`. Secret: never shown in `Debug`, compared
/// in constant time.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct InviteTokens(Vec<String>);

impl InviteTokens {
    /// The tokens of `value` (the environment variable's), separated by commas or whitespace.
    pub fn parse(value: &str) -> Self {
        Self(
            value.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()).map(str::to_owned).collect(),
        )
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (invites are off).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `candidate` is one of the tokens. Every token is compared, each in constant time,
    /// so the answer's timing tells nothing about how close a guess was.
    pub fn accepts(&self, candidate: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        self.0
            .iter()
            .fold(subtle::Choice::from(0), |found, token| found | token.as_bytes().ct_eq(candidate.as_bytes()))
            .into()
    }
}

impl std::fmt::Debug for InviteTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InviteTokens({} tokens)", self.0.len())
    }
}
