//! Reading what a person writes to docket: commands (`/status 12`, `/status@docket_bot #12`) and
//! the @mentions that say whom a message in a group is for.

use crate::domain::Ticket;
use crate::domain::incoming::Command;

/// Parses `/status 12`, `/status@docket_bot #12`, `/jobs`…, with the bot the command is
/// addressed to: `docket_bot` for `/status@docket_bot 12`, `None` for `/status 12` (in a group:
/// whichever bot takes it). Unknown commands are `None`.
pub fn parse_addressed_command(text: &str) -> Option<(Command, Option<&str>)> {
    let mut words = text.split_whitespace();
    let head = words.next()?.strip_prefix('/')?;
    let (name, bot) = match head.split_once('@') {
        Some((name, bot)) => (name, Some(bot).filter(|b| !b.is_empty())),
        None => (head, None),
    };
    let command = match name.to_ascii_lowercase().as_str() {
        "start" => Command::Start(words.next().map(str::to_owned)),
        "help" => Command::Help,
        "jobs" => Command::Jobs,
        "status" => Command::Status(ticket_arg(words.next())),
        "get" => Command::Get(ticket_arg(words.next())),
        "cancel" => Command::Cancel(ticket_arg(words.next())),
        "privacy" => Command::Privacy,
        "forget" => Command::Forget,
        "stats" => Command::Stats,
        "mode" => Command::Mode(words.next().map(|w| w.chars().take(32).collect())),
        "lang" => Command::Lang,
        "merge" => Command::Merge,
        "done" => Command::Done,
        _ => return None,
    };
    Some((command, bot))
}

/// The `@name` mentions in `text`, without the `@`, in order: an `@` that does not follow a
/// name character (so `me@example` is not one), then the name characters after it (ASCII
/// letters, digits and `_`, all a Telegram username may hold).
pub fn mentions(text: &str) -> Vec<&str> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut previous = None;
    for (at, c) in text.char_indices() {
        if c == '@' && !previous.is_some_and(is_name) {
            // `@` is one byte, so the name starts on a character boundary; it ends at the first
            // character that is not a name character, which `find` reports as a boundary too.
            let rest = &text[at + 1..];
            let name = &rest[..rest.find(|c: char| !is_name(c)).unwrap_or(rest.len())];
            if !name.is_empty() {
                found.push(name);
            }
        }
        previous = Some(c);
    }
    found
}

fn ticket_arg(word: Option<&str>) -> Option<Ticket> {
    word.and_then(|w| w.parse::<Ticket>().ok()).filter(|t| t.0 > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_command(text: &str) -> Option<Command> {
        parse_addressed_command(text).map(|(command, _)| command)
    }

    #[test]
    fn commands_parse_with_bot_names_and_hashes() {
        assert_eq!(parse_command("/status 4812"), Some(Command::Status(Some(Ticket(4812)))));
        assert_eq!(parse_command("/status@docket_bot #4812"), Some(Command::Status(Some(Ticket(4812)))));
        assert_eq!(parse_command("/status"), Some(Command::Status(None)));
        assert_eq!(parse_command("/status -3"), Some(Command::Status(None)));
        assert_eq!(parse_command("/JOBS"), Some(Command::Jobs));
        assert_eq!(parse_command("/get #12"), Some(Command::Get(Some(Ticket(12)))));
        assert_eq!(parse_command("/cancel 4812"), Some(Command::Cancel(Some(Ticket(4812)))));
        assert_eq!(parse_command("/cancel"), Some(Command::Cancel(None)));
        assert_eq!(parse_command("/start abc123"), Some(Command::Start(Some("abc123".into()))));
        assert_eq!(parse_command("/start"), Some(Command::Start(None)));
        assert_eq!(parse_command("/privacy"), Some(Command::Privacy));
        assert_eq!(parse_command("/mode"), Some(Command::Mode(None)));
        assert_eq!(parse_command("/mode shrink"), Some(Command::Mode(Some("shrink".into()))));
        assert_eq!(parse_command("/forget"), Some(Command::Forget));
        assert_eq!(parse_command("/stats"), Some(Command::Stats));
        assert_eq!(parse_command("/frobnicate"), None);
        assert_eq!(parse_command("hello"), None);
    }

    #[test]
    fn commands_say_which_bot_they_are_for() {
        let status = Command::Status(Some(Ticket(12)));
        assert_eq!(parse_addressed_command("/status@ThisBot 12"), Some((status.clone(), Some("ThisBot"))));
        assert_eq!(parse_addressed_command("/status 12"), Some((status.clone(), None)));
        assert_eq!(parse_addressed_command("/status@ 12"), Some((status, None)));
        assert_eq!(parse_addressed_command("/HELP@other_bot"), Some((Command::Help, Some("other_bot"))));
        assert_eq!(parse_addressed_command("/frobnicate@ThisBot"), None);
    }

    #[test]
    fn mentions_are_at_names_not_addresses() {
        assert_eq!(mentions("for @ThisBot, please"), ["ThisBot"]);
        assert_eq!(mentions("@a_b1 and (@c) @d!"), ["a_b1", "c", "d"]);
        assert_eq!(mentions("mail me@ThisBot.org"), Vec::<&str>::new());
        assert_eq!(mentions("@ @@x é@y 中@z"), ["x", "y", "z"]);
        assert_eq!(mentions("@ThisBot_fan"), ["ThisBot_fan"]);
        assert_eq!(mentions(""), Vec::<&str>::new());
    }
}

/// Text that stresses byte/char confusion, for the properties here and in `updates`.
#[cfg(test)]
pub(crate) mod strategies {
    use proptest::prelude::*;

    /// Characters that stress byte/char confusion: multi-byte scripts and emoji, combining
    /// marks, joiners, controls, and the characters the parsers look for.
    pub(crate) fn tricky_char() -> impl Strategy<Value = char> {
        prop_oneof![
            4 => proptest::char::range('a', 'z'),
            1 => proptest::char::range('A', 'Z'),
            1 => proptest::char::range('0', '9'),
            2 => Just('@'),
            2 => Just('/'),
            1 => Just('#'),
            1 => Just('_'),
            2 => Just(' '),
            1 => Just('\n'),
            1 => Just('\t'),
            1 => Just('\u{0}'),
            2 => Just('é'),
            2 => Just('中'),
            2 => Just('🦀'),
            1 => Just('\u{301}'),
            1 => Just('\u{200d}'),
            1 => Just('\u{202e}'),
            1 => Just('\u{3000}'),
            1 => Just('\u{feff}'),
            2 => any::<char>(),
        ]
    }

    pub(crate) fn tricky_text(max: usize) -> impl Strategy<Value = String> {
        prop_oneof![
            3 => proptest::collection::vec(tricky_char(), 0..max).prop_map(String::from_iter),
            1 => any::<String>(),
        ]
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::strategies::tricky_text;
    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn command_parsing_never_panics(text in tricky_text(300)) {
            if let Some((_, bot)) = parse_addressed_command(&text) {
                prop_assert!(text.trim_start().starts_with('/'));
                let named = bot.is_none_or(|b| !b.is_empty() && text.contains(&format!("@{b}")));
                prop_assert!(named, "{:?} from {:?}", bot, text);
            }
        }

        #[test]
        fn mentions_never_panic_and_are_names(text in tricky_text(300)) {
            for name in mentions(&text) {
                prop_assert!(!name.is_empty());
                prop_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{name:?}");
                let mentioned = format!("@{name}");
                prop_assert!(text.contains(&mentioned), "{:?} in {:?}", name, text);
            }
        }

        #[test]
        fn a_mention_is_found_whatever_surrounds_it(
            before in tricky_text(50),
            name in "[A-Za-z0-9_]{1,32}",
            after in tricky_text(50),
        ) {
            // A separator on each side, as a person writes a mention in a sentence.
            let text = format!("{before} @{name} {after}");
            prop_assert!(mentions(&text).contains(&name.as_str()), "{name} in {text:?}");
        }
    }
}
