//! Which updates are docket's: in a group only what `[access] groups` lets in, and the words
//! of a caption that are not the bot's own @mentions.

use tracing::debug;

use super::{Intake, IntakeSettings};
use crate::domain::BotId;
use crate::domain::incoming::{Address, ChatKind, GroupMode, Incoming, Origin};

impl Intake {
    /// `incoming`, or [`Incoming::Ignored`] when it is a group message that is not docket's.
    pub(super) fn screen(&self, incoming: Incoming) -> Incoming {
        let settings = self.settings.get();
        let me = Me::of(&settings);
        let mode = settings.access.groups;
        let for_us = match &incoming {
            Incoming::Document(origin, _, address) => takes(mode, me, origin, Sort::Document, address),
            Incoming::Command(origin, _, address) => takes(mode, me, origin, Sort::Command, address),
            Incoming::Unusable(Some(origin), _) => takes(mode, me, origin, Sort::Other, &Address::default()),
            // A button sits under one of docket's own messages.
            Incoming::Button(..) => true,
            Incoming::Unusable(None, _) | Incoming::Ignored | Incoming::Malformed(_) => true,
        };
        if !for_us {
            debug!(chat.id = incoming_chat(&incoming), "a group message not addressed to docket; ignored");
            return Incoming::Ignored;
        }
        incoming
    }
}

/// The words of `caption` that choose the operation: all of them but the mentions of the bot
/// itself (`@docket_bot shrink` in a group is `shrink`).
pub(super) fn operation_words(caption: &str, me: Me<'_>) -> String {
    caption
        .split_whitespace()
        .filter(|word| {
            let Some(name) = word.strip_prefix('@') else { return true };
            let name = name.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            !me.is_named(&[name.to_owned()])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The bot itself, as messages may name it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Me<'a> {
    /// Its own id.
    id: BotId,
    /// Its username, when getMe told it.
    username: Option<&'a str>,
}

impl<'a> Me<'a> {
    /// The bot as `settings` know it.
    pub(super) fn of(settings: &'a IntakeSettings) -> Self {
        Me { id: settings.bot_id, username: settings.bot_username.as_deref() }
    }

    /// Whether one of `names` is this bot's username (usernames are ASCII; any case).
    fn is_named(&self, names: &[String]) -> bool {
        self.username.is_some_and(|me| names.iter().any(|n| n.eq_ignore_ascii_case(me)))
    }
}

/// What a message carries, as far as the group rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sort {
    Document,
    Command,
    /// Anything else (answered with a hint in private chats only).
    Other,
}

/// Whether docket handles a message of `sort` from `origin`, addressed as `address`. In a
/// private chat: always. In a group: never with `off`; a command when it names no bot or this
/// one; a document with `all` always, with `addressed` when its caption mentions this bot or it
/// replies to one of the bot's messages; anything else never.
pub(super) fn takes(mode: GroupMode, me: Me<'_>, origin: &Origin, sort: Sort, address: &Address) -> bool {
    if origin.chat_kind == ChatKind::Private {
        return true;
    }
    match (mode, sort) {
        (GroupMode::Off, _) | (_, Sort::Other) => false,
        (_, Sort::Command) => address.names.is_empty() || me.is_named(&address.names),
        (GroupMode::All, Sort::Document) => true,
        (GroupMode::Addressed, Sort::Document) => {
            me.is_named(&address.names) || address.replies_to == Some(me.id.as_user())
        }
    }
}

pub(super) fn incoming_origin(incoming: &Incoming) -> Option<Origin> {
    match incoming {
        Incoming::Document(o, ..) | Incoming::Command(o, ..) | Incoming::Button(o, _) => Some(*o),
        Incoming::Unusable(o, _) => *o,
        Incoming::Ignored | Incoming::Malformed(_) => None,
    }
}

pub(super) fn incoming_chat(incoming: &Incoming) -> Option<i64> {
    incoming_origin(incoming).map(|o| o.chat.0)
}

/// The `kind` label an update is counted and logged under when docket cannot use it.
pub(super) fn unusable_kind(incoming: &Incoming) -> Option<&'static str> {
    match incoming {
        Incoming::Unusable(_, kind) => Some(kind.as_str()),
        Incoming::Malformed(_) => Some("malformed"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ChatRef, MessageId, UserId};

    const BOT: BotId = BotId(555);

    fn origin(chat_kind: ChatKind) -> Origin {
        let chat = if chat_kind == ChatKind::Private { ChatRef(7) } else { ChatRef(-1007) };
        Origin { chat, chat_kind, user: Some(UserId(7)), message_id: MessageId(1), language: None }
    }

    fn named(names: &[&str]) -> Address {
        Address { names: names.iter().map(|n| (*n).to_owned()).collect(), replies_to: None }
    }

    fn replying_to(user: i64) -> Address {
        Address { names: Vec::new(), replies_to: Some(UserId(user)) }
    }

    const ME: Me<'static> = Me { id: BOT, username: Some("Docket_Bot") };

    #[test]
    fn private_chats_take_everything() {
        for mode in [GroupMode::Addressed, GroupMode::All, GroupMode::Off] {
            for sort in [Sort::Document, Sort::Command, Sort::Other] {
                assert!(takes(mode, ME, &origin(ChatKind::Private), sort, &named(&["other_bot"])), "{mode:?} {sort:?}");
                assert!(takes(mode, ME, &origin(ChatKind::Private), sort, &Address::default()), "{mode:?} {sort:?}");
            }
        }
    }

    #[test]
    fn group_commands_are_taken_unless_they_name_another_bot() {
        let group = origin(ChatKind::Group);
        for mode in [GroupMode::Addressed, GroupMode::All] {
            assert!(takes(mode, ME, &group, Sort::Command, &Address::default()), "no bot name");
            assert!(takes(mode, ME, &group, Sort::Command, &named(&["docket_bot"])), "any case");
            assert!(takes(mode, ME, &group, Sort::Command, &named(&["DOCKET_BOT"])), "any case");
            assert!(!takes(mode, ME, &group, Sort::Command, &named(&["OtherBot"])));
            assert!(!takes(mode, ME, &group, Sort::Command, &named(&["docket_bot2"])));
        }
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Command, &Address::default()));
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Command, &named(&["docket_bot"])));
    }

    #[test]
    fn group_documents_need_a_mention_or_a_reply_unless_all() {
        let group = origin(ChatKind::Group);
        let addressed = GroupMode::Addressed;
        assert!(!takes(addressed, ME, &group, Sort::Document, &Address::default()));
        assert!(takes(addressed, ME, &group, Sort::Document, &named(&["someone", "docket_BOT"])));
        assert!(!takes(addressed, ME, &group, Sort::Document, &named(&["someone", "docket_bot_fan"])));
        assert!(takes(addressed, ME, &group, Sort::Document, &replying_to(BOT.0)));
        assert!(!takes(addressed, ME, &group, Sort::Document, &replying_to(8)));
        assert!(takes(GroupMode::All, ME, &group, Sort::Document, &Address::default()));
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Document, &named(&["docket_bot"])));
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Document, &replying_to(BOT.0)));
    }

    #[test]
    fn without_a_known_username_only_replies_and_unnamed_commands_reach_the_bot() {
        let group = origin(ChatKind::Group);
        let anonymous = Me { id: BOT, username: None };
        assert!(takes(GroupMode::Addressed, anonymous, &group, Sort::Command, &Address::default()));
        assert!(!takes(GroupMode::Addressed, anonymous, &group, Sort::Command, &named(&["docket_bot"])));
        assert!(!takes(GroupMode::Addressed, anonymous, &group, Sort::Document, &named(&["docket_bot"])));
        assert!(takes(GroupMode::Addressed, anonymous, &group, Sort::Document, &replying_to(BOT.0)));
    }

    #[test]
    fn the_bots_own_mentions_are_not_operation_words() {
        assert_eq!(operation_words("@Docket_Bot shrink", ME), "shrink");
        assert_eq!(operation_words("rotate 90 @docket_bot, 2", ME), "rotate 90 2");
        assert_eq!(operation_words("@someone shrink", ME), "@someone shrink");
        assert_eq!(operation_words("  ", ME), "");
    }

    #[test]
    fn other_messages_in_groups_are_never_answered() {
        for mode in [GroupMode::Addressed, GroupMode::All, GroupMode::Off] {
            assert!(!takes(mode, ME, &origin(ChatKind::Group), Sort::Other, &named(&["docket_bot"])));
        }
    }
}
