//! Which operation a document gets when its caption names none: the one rule intake follows
//! with the declared type and the processing pool follows again with the detected one (a run
//! whose declaration lied switches to what the real content would have been given).

use super::Operation;

/// The operation for a document whose caption names none: `topdf` for what it takes (a picture,
/// an office file), else the chat's `/mode`, else the bot's `[processing] default_operation`.
/// `format` is the document's format label (`jpeg`, `docx`…), declared or detected; `None` when
/// nothing tells it. `chat_mode` is the caller's read of the chat's `/mode`, awaited only when
/// the format does not decide, so a picture costs intake's transaction no read.
pub async fn default_operation<E>(
    format: Option<&str>,
    chat_mode: impl Future<Output = Result<Option<Operation>, E>>,
    bot_default: &Operation,
) -> Result<Operation, E> {
    if format.is_some_and(|label| Operation::ToPdf.accepts().contains(&label)) {
        return Ok(Operation::ToPdf);
    }
    Ok(chat_mode.await?.unwrap_or_else(|| bot_default.clone()))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;

    /// `default_operation` with a chat mode already known.
    async fn chosen(format: Option<&str>, mode: Option<Operation>, bot_default: &Operation) -> Operation {
        let read = async { Ok::<_, Infallible>(mode) };
        default_operation(format, read, bot_default).await.unwrap_or_else(|e| match e {})
    }

    #[tokio::test]
    async fn a_picture_or_office_file_becomes_a_pdf_whatever_the_mode() {
        for label in ["jpeg", "png", "heif", "docx"] {
            assert_eq!(
                chosen(Some(label), Some(Operation::Text), &Operation::Optimize).await,
                Operation::ToPdf,
                "{label}"
            );
        }
    }

    #[tokio::test]
    async fn anything_else_gets_the_chats_mode_then_the_bots_default() {
        assert_eq!(chosen(Some("pdf"), Some(Operation::Text), &Operation::Optimize).await, Operation::Text);
        assert_eq!(chosen(Some("pdf"), None, &Operation::Info).await, Operation::Info);
        assert_eq!(chosen(None, None, &Operation::Optimize).await, Operation::Optimize);
    }

    #[tokio::test]
    async fn the_chats_mode_is_not_read_when_the_format_decides() {
        let read = async { Err::<Option<Operation>, &str>("read the chat's mode") };
        let picked = default_operation(Some("png"), read, &Operation::Optimize).await;
        assert_eq!(picked, Ok(Operation::ToPdf));
    }
}
