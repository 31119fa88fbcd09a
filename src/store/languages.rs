//! The `chat_languages` table: the language docket writes to each chat in. A `/lang` choice is
//! kept until the next one; until a chat has one, it follows the `language_code` Telegram reports
//! for whoever wrote to docket there last.

use super::{Conn, QueryContext, Store, StoreResult, Tx};
use crate::domain::{ChatRef, Timestamp};
use crate::texts::Lang;

/// Records the language a writer's Telegram app reports for a chat, unless the chat chose one:
/// $1 chat, $2 code, $3 now.
pub const NOTE_LANGUAGE: &str = "INSERT INTO chat_languages (chat_id, language_code, chosen, updated_at)
    VALUES ($1, $2, 0, $3)
    ON CONFLICT (chat_id) DO UPDATE SET language_code = excluded.language_code, updated_at = excluded.updated_at
    WHERE chat_languages.chosen = 0 AND chat_languages.language_code <> excluded.language_code";

/// Records a chat's `/lang` choice, replacing whatever it had: $1 chat, $2 code, $3 now.
pub const CHOOSE_LANGUAGE: &str = "INSERT INTO chat_languages (chat_id, language_code, chosen, updated_at)
    VALUES ($1, $2, 1, $3)
    ON CONFLICT (chat_id) DO UPDATE SET language_code = excluded.language_code, chosen = 1,
        updated_at = excluded.updated_at";

/// The language code of $1 chat.
pub const CHAT_LANGUAGE: &str = "SELECT language_code FROM chat_languages WHERE chat_id = $1";

/// Gives $2, a group's new (supergroup) chat id, the language of $1, its old id, unless the new
/// chat has one already.
pub const MOVE_CHAT_LANGUAGE: &str = "UPDATE chat_languages SET chat_id = $2
    WHERE chat_id = $1 AND NOT EXISTS (SELECT 1 FROM chat_languages WHERE chat_id = $2)";

/// Runs [`MOVE_CHAT_LANGUAGE`].
pub(super) async fn move_chat(c: &mut Conn<'_>, from: ChatRef, to: ChatRef) -> StoreResult<()> {
    c.execute(MOVE_CHAT_LANGUAGE, &[from.0.into(), to.0.into()])
        .await
        .map(drop)
        .context("moving a chat's language to its new id")
}

/// Runs [`NOTE_LANGUAGE`].
pub(super) async fn note(c: &mut Conn<'_>, chat: ChatRef, code: &str, now: Timestamp) -> StoreResult<()> {
    c.execute(NOTE_LANGUAGE, &[chat.0.into(), code.into(), now.into()])
        .await
        .map(drop)
        .context("noting a chat's language")
}

/// Runs [`CHOOSE_LANGUAGE`].
pub(super) async fn choose(c: &mut Conn<'_>, chat: ChatRef, code: &str, now: Timestamp) -> StoreResult<()> {
    c.execute(CHOOSE_LANGUAGE, &[chat.0.into(), code.into(), now.into()])
        .await
        .map(drop)
        .context("keeping a chat's chosen language")
}

/// Runs [`CHAT_LANGUAGE`]; `None` when nothing is known of the chat.
pub(super) async fn of_chat(c: &mut Conn<'_>, chat: ChatRef) -> StoreResult<Option<String>> {
    c.scalar_optional(CHAT_LANGUAGE, &[chat.0.into()]).await.context("reading a chat's language")
}

impl Store {
    /// The language `chat` is written to in (see [`Tx::note_language`]): what every message to a
    /// person is written in, looked up only here. English when nothing is known of the chat.
    pub async fn chat_lang(&self, chat: ChatRef) -> StoreResult<Lang> {
        Ok(Lang::from_stored(of_chat(&mut self.acquire().await?.conn(), chat).await?.as_deref()))
    }
}

impl Tx {
    /// Records that someone whose Telegram app reports language `code` wrote in `chat`: the
    /// chat's language becomes `code`, unless the chat chose one with `/lang`.
    pub async fn note_language(&mut self, chat: ChatRef, code: &str, now: Timestamp) -> StoreResult<()> {
        note(&mut self.conn(), chat, code, now).await
    }

    /// Keeps `code` as `chat`'s language (a `/lang` choice) until the next choice; what writers'
    /// apps report no longer changes it.
    pub async fn choose_language(&mut self, chat: ChatRef, code: &str, now: Timestamp) -> StoreResult<()> {
        choose(&mut self.conn(), chat, code, now).await
    }

    /// [`Store::chat_lang`] inside the transaction.
    pub async fn chat_lang(&mut self, chat: ChatRef) -> StoreResult<Lang> {
        Ok(Lang::from_stored(of_chat(&mut self.conn(), chat).await?.as_deref()))
    }
}
