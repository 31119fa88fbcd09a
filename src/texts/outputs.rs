//! The words inside a result rather than around it: the facts `info` sends as a message, and
//! the lines `text` writes for a page without text and for a text cut short. The catalog's
//! sections "info" and "text".

use super::catalog::{Lang, n, plain, render, s};
use super::values::{clip_message, display_name, size};

/// The message of an `info` result: the document's name, then its facts, clipped to what one
/// Telegram message holds.
pub fn info_message(lang: Lang, name: &str, facts: &str) -> String {
    clip_message(render(lang, "info-message", &[s("name", display_name(lang, name)), s("facts", facts)]))
}

/// The most fonts `info` names; the rest are counted.
const INFO_FONTS_LISTED: usize = 30;

/// The longest metadata value (title, author…) `info` shows, in characters.
const INFO_VALUE_CHARS: usize = 200;

/// `value` shortened to [`INFO_VALUE_CHARS`] characters, with "…" when it was longer.
fn clip_value(value: &str) -> String {
    match value.char_indices().nth(INFO_VALUE_CHARS) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_owned(),
    }
}

/// The line `text` writes for a page that shows no text at all.
pub fn page_without_text(lang: Lang, page: u32) -> String {
    render(lang, "page-without-text", &[n("page", u64::from(page))])
}

/// The line that ends a text cut short at page `page`, over `limit` bytes.
pub fn text_cut_short(lang: Lang, page: u32, limit: u64) -> String {
    render(lang, "text-cut-short", &[n("page", u64::from(page)), s("limit", size(lang, limit))])
}

/// `info`'s message: the facts about a document, one per line.
///
/// One line per fact, in the order the message shows them: kept whole, so the code reads as the
/// message does.
pub fn document_info(lang: Lang, info: &crate::domain::DocumentInfo) -> String {
    use crate::domain::Encryption;
    let mut lines = Vec::new();
    lines.push(match info.pages {
        Some(pages) => render(lang, "info-pages", &[n("pages", u64::from(pages))]),
        None => plain(lang, "info-pages-unknown"),
    });
    if let Some(page) = &info.page_size {
        let name = page.name().map(|name| {
            if page.is_landscape() {
                render(lang, "info-paper-landscape", &[s("paper", name)])
            } else {
                name.to_owned()
            }
        });
        let args = [
            s("paper", name.map(|n| format!("{n}, ")).unwrap_or_default()),
            s("width_mm", format!("{:.0}", page.width_mm())),
            s("height_mm", format!("{:.0}", page.height_mm())),
            s("width_pt", format!("{:.0}", page.width_pt)),
            s("height_pt", format!("{:.0}", page.height_pt)),
        ];
        lines.push(render(lang, "info-page-size", &args));
    }
    if !info.version.is_empty() {
        lines.push(render(lang, "info-version", &[s("version", info.version.as_str())]));
    }
    for (id, value) in [
        ("info-title", &info.title),
        ("info-author", &info.author),
        ("info-creator", &info.creator),
        ("info-producer", &info.producer),
    ] {
        if let Some(value) = value {
            lines.push(render(lang, id, &[s("value", clip_value(value))]));
        }
    }
    lines.push(plain(
        lang,
        match info.encryption {
            Encryption::None => "info-encryption-none",
            Encryption::OwnerPasswordOnly => "info-encryption-owner",
            Encryption::UserPassword => "info-encryption-user",
        },
    ));
    if let Some(images) = info.images {
        lines.push(render(lang, "info-images", &[n("images", u64::from(images))]));
    }
    if info.fonts.is_empty() {
        lines.push(plain(lang, "info-fonts-none"));
    } else {
        let fonts: Vec<String> = info
            .fonts
            .iter()
            .take(INFO_FONTS_LISTED)
            .map(|f| {
                if f.embedded {
                    f.name.clone()
                } else {
                    render(lang, "info-font-not-embedded", &[s("font", f.name.as_str())])
                }
            })
            .collect();
        let listed = fonts.join(", ");
        let more = info.fonts.len().saturating_sub(INFO_FONTS_LISTED) as u64;
        let fonts =
            if more > 0 { render(lang, "info-fonts-and-more", &[s("fonts", listed), n("more", more)]) } else { listed };
        lines.push(render(lang, "info-fonts", &[s("fonts", fonts)]));
    }
    lines.push(render(lang, "info-size", &[s("size", size(lang, info.file_bytes))]));
    lines.push(render(lang, "info-sha256", &[s("sha256", info.sha256.as_str())]));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texts::tests::E;
    use crate::texts::values::MAX_MESSAGE_UNITS;

    #[test]
    fn an_info_reply_fits_one_message_however_many_fonts_and_however_long_its_metadata() {
        use crate::domain::{DocumentInfo, Encryption, FontFact};
        let long = Some("Ж".repeat(10_000));
        let info = DocumentInfo {
            pages: Some(3),
            page_size: None,
            version: "1.7".into(),
            producer: long.clone(),
            creator: long.clone(),
            title: long.clone(),
            author: long,
            encryption: Encryption::None,
            images: Some(2),
            fonts: (0..5_000)
                .map(|i| FontFact { name: format!("Font-With-A-Long-Name-{i}"), embedded: i % 2 == 0 })
                .collect(),
            file_bytes: 1_000,
            sha256: "ab".repeat(32),
        };
        for lang in [E, Lang::from_code("ru")] {
            let message = info_message(lang, "report.pdf", &document_info(lang, &info));
            assert!(message.encode_utf16().count() <= MAX_MESSAGE_UNITS, "{}", message.len());
            assert!(message.contains("Font-With-A-Long-Name-29") && !message.contains("Font-With-A-Long-Name-30,"));
            assert!(message.contains("4970"), "the fonts not listed are counted: {message}");
        }
        let emoji = "🙂".repeat(3_000);
        let clipped = clip_message(emoji);
        assert_eq!(clipped.encode_utf16().count(), MAX_MESSAGE_UNITS - 1);
        assert!(clipped.ends_with("🙂…"));
    }
}
