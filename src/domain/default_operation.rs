//! Which operation a document gets when its caption names none: the one rule intake follows
//! with the declared type and the processing pool follows again with the detected one (a run
//! whose declaration lied switches to what the real content would have been given).

use super::Operation;

/// The operation for a document whose caption names none: `topdf` for what it takes (a picture,
/// an office file), else the chat's `/mode`, else the bot's `[processing] default_operation`.
/// `format` is the document's format label (`jpeg`, `docx`…), declared or detected; `None` when
/// nothing tells it.
pub fn default_operation(format: Option<&str>, chat_mode: Option<Operation>, bot_default: &Operation) -> Operation {
    if format.is_some_and(|label| Operation::ToPdf.accepts().contains(&label)) {
        return Operation::ToPdf;
    }
    chat_mode.unwrap_or_else(|| bot_default.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picture_or_office_file_becomes_a_pdf_whatever_the_mode() {
        for label in ["jpeg", "png", "heif", "docx"] {
            assert_eq!(
                default_operation(Some(label), Some(Operation::Text), &Operation::Optimize),
                Operation::ToPdf,
                "{label}"
            );
        }
    }

    #[test]
    fn anything_else_gets_the_chats_mode_then_the_bots_default() {
        assert_eq!(default_operation(Some("pdf"), Some(Operation::Text), &Operation::Optimize), Operation::Text);
        assert_eq!(default_operation(Some("pdf"), None, &Operation::Info), Operation::Info);
        assert_eq!(default_operation(None, None, &Operation::Optimize), Operation::Optimize);
    }
}
