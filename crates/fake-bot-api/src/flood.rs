//! Telegram's flood limits, as the fake enforces them: which calls count, which limit a call
//! breaks, and the record of every broken limit.

use std::time::{Duration, Instant};

use crate::server::FakeTelegram;

/// Telegram's flood limits (<https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this>):
/// about one message a second to a private chat, 20 a minute to a group, about 30 a second in
/// all. Sends and edits count. A call that breaks one is answered 429 (when `answer_429`) and
/// recorded in [`FakeTelegram::violations`] either way.
#[derive(Clone, Debug)]
pub struct FloodLimits {
    /// Least gap between two calls to one private chat.
    pub private_interval: Duration,
    /// Calls to one group within any 60 s.
    pub group_per_minute: usize,
    /// Calls in all within any 1 s.
    pub global_per_second: usize,
    /// Answer a violating call with 429 `retry_after` (as Telegram does) instead of performing it.
    pub answer_429: bool,
}

impl Default for FloodLimits {
    fn default() -> Self {
        Self { private_interval: Duration::from_secs(1), group_per_minute: 20, global_per_second: 30, answer_429: true }
    }
}

/// The flood part of the fake's state.
#[derive(Default)]
pub(crate) struct Flood {
    limits: FloodLimits,
    /// Arrival times of the calls that count against the limits, per chat.
    sends: Vec<(Instant, i64)>,
    /// Every broken limit, described.
    violations: Vec<String>,
}

impl FakeTelegram {
    /// Replaces the flood limits the fake enforces.
    pub fn set_flood_limits(&self, limits: FloodLimits) {
        self.state().flood.limits = limits;
    }

    /// Every flood limit the bot broke so far, described (empty when it kept them all).
    pub fn violations(&self) -> Vec<String> {
        self.state().flood.violations.clone()
    }
}

/// Whether a method counts against the flood limits: messages and edits, not chat actions.
pub(crate) fn counts_against_limits(method: &str) -> bool {
    (method.starts_with("send") && method != "sendChatAction") || method.starts_with("edit")
}

impl Flood {
    /// Records a counted call to `chat_id` arriving at `at`; a broken limit is recorded as a
    /// violation and, with `answer_429`, returns the `retry_after` to answer with.
    pub(crate) fn check(&mut self, chat_id: i64, at: Instant) -> Option<u64> {
        let limits = self.limits.clone();
        let window = |secs: u64| at.checked_sub(Duration::from_secs(secs));
        let within = |sends: &[(Instant, i64)], since: Option<Instant>, chat: Option<i64>| {
            sends.iter().filter(|(t, c)| since.is_none_or(|s| *t > s) && chat.is_none_or(|x| x == *c)).count()
        };
        let mut broken = Vec::new();
        if chat_id > 0 {
            if let Some((last, _)) = self.sends.iter().rev().find(|(_, c)| *c == chat_id)
                && at.duration_since(*last) < limits.private_interval
            {
                broken.push(format!(
                    "private chat {chat_id}: two calls {} ms apart",
                    at.duration_since(*last).as_millis()
                ));
            }
        } else if within(&self.sends, window(60), Some(chat_id)) >= limits.group_per_minute {
            broken.push(format!("group {chat_id}: more than {} calls within a minute", limits.group_per_minute));
        }
        if within(&self.sends, window(1), None) >= limits.global_per_second {
            broken.push(format!("more than {} calls within a second", limits.global_per_second));
        }
        self.sends.push((at, chat_id));
        if broken.is_empty() {
            return None;
        }
        self.violations.extend(broken);
        limits.answer_429.then_some(1)
    }
}
