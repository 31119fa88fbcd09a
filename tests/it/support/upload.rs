//! [`Upload`]: a document as a person sends it (bytes, file name, declared type, and perhaps a
//! caption and the language of their Telegram app), for [`TestApp::send`](super::TestApp::send) or [`Upload::send_to`] a bare fake.
//! A builder, so that a test names only what it varies and each send stays one readable line.

use fake_bot_api::{FakeTelegram, FileRef};

use super::fixture;

/// A document to send; see [`pdf`] and [`document`].
pub struct Upload {
    bytes: Vec<u8>,
    name: String,
    mime: String,
    caption: Option<String>,
    language: Option<String>,
    /// Sent as a photo of this size (Telegram's `photo`), not as a file.
    photo: Option<(u32, u32)>,
    /// The album (`media_group_id`) the message is a part of.
    album: Option<String>,
}

/// `bytes` named `name` and declared as any type `mime`, without a caption.
pub fn document(bytes: Vec<u8>, name: &str, mime: &str) -> Upload {
    Upload {
        bytes,
        name: name.to_owned(),
        mime: mime.to_owned(),
        caption: None,
        language: None,
        photo: None,
        album: None,
    }
}

/// A JPEG of `width` × `height` sent as a photo (Telegram's compressed kind, with no name).
pub fn photo(jpeg: Vec<u8>, width: u32, height: u32) -> Upload {
    Upload { photo: Some((width, height)), ..document(jpeg, "photo.jpg", "image/jpeg") }
}

/// The fixture file `rel` sent as `name`, declared `application/pdf` (whatever it holds).
pub fn pdf(rel: &str, name: &str) -> Upload {
    document(fixture(rel), name, "application/pdf")
}

impl Upload {
    /// Puts the bytes on `fake` as a file and sends them as a document from `chat` (user =
    /// chat), with the caption and the sender's language when given; returns the update's id
    /// and the file.
    pub fn send_to(self, fake: &FakeTelegram, chat: i64) -> (i64, FileRef) {
        let file = fake.add_file(self.bytes);
        let mut update = match self.photo {
            Some((width, height)) => fake.photo_update(chat, chat, &file, width, height),
            None => fake.document_update(chat, chat, &file, Some(&self.name), Some(&self.mime)),
        };
        if let Some(album) = self.album {
            update["message"]["media_group_id"] = serde_json::json!(album);
        }
        if let Some(caption) = self.caption {
            update["message"]["caption"] = serde_json::json!(caption);
        }
        if let Some(language) = self.language {
            update["message"]["from"]["language_code"] = serde_json::json!(language);
        }
        (fake.push_update(update), file)
    }

    /// The caption the person wrote (its first word picks the operation).
    pub fn caption(mut self, caption: &str) -> Self {
        self.caption = Some(caption.to_owned());
        self
    }

    /// A part of the album `media_group_id`, as Telegram marks each message of an album.
    pub fn in_album(mut self, media_group_id: &str) -> Self {
        self.album = Some(media_group_id.to_owned());
        self
    }

    /// The language of the sender's app (`en`, `ru`), as Telegram reports it.
    pub fn language(mut self, language: &str) -> Self {
        self.language = Some(language.to_owned());
        self
    }
}
