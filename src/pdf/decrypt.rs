//! `decrypt PASSWORD`: a PDF that needs a password, opened with the one given, saved without
//! encryption.
//!
//! The password arrives in memory (the child reads it from its stdin, never from its command
//! line) and goes to lopdf only; it is in no error and no log. A password that does not open
//! the file is [`PdfError::WrongPassword`]. A file encrypted with an owner password only opens
//! without any, but its restrictions are the author's: `decrypt` lifts them only with the
//! owner password itself. A file that is not encrypted is saved as it is, rewritten.

use std::path::Path;

use lopdf::{Document, LoadOptions};

use super::work;
use super::{PdfError, Produced};
use crate::domain::Password;

/// `decrypt`: `input` opened with `password`, saved unencrypted into `output`.
///
/// # Errors
///
/// [`PdfError::WrongPassword`] when the password does not open it (or, for an
/// owner-password-only file, is not its owner password); those of loading otherwise (see
/// [`super::optimize()`]); [`PdfError::Io`].
pub fn decrypt(input: &Path, output: &Path, password: &Password, max_inflate: usize) -> Result<Produced, PdfError> {
    let (input, output, password) = (input.to_path_buf(), output.to_path_buf(), password.clone());
    work::on_work_thread(move || {
        let bytes = work::read_pdf(&input)?;
        let mut document = open(&bytes, &password, max_inflate)?;
        drop(bytes);
        let pages = work::page_ids(&document)?.len() as u32;
        document.encryption_state = None;
        let output_bytes = work::save(&document, &output, None)?;
        Ok(Produced { output_bytes, pages: Some(pages) })
    })
}

/// Loads `bytes` with `password`, decrypted.
fn open(bytes: &[u8], password: &Password, max_inflate: usize) -> Result<Document, PdfError> {
    // An owner-password-only file opens without a password; lifting its restrictions takes the
    // owner password, checked against its encryption dictionary.
    if let Ok(opened) = work::load(bytes, max_inflate)
        && opened.encryption_state.is_some()
        && !is_owner_password(opened, password)
    {
        return Err(PdfError::WrongPassword);
    }
    let options = LoadOptions { password: Some(password.expose().to_owned()), ..work::load_options(max_inflate) };
    let document = Document::load_mem_with_options(bytes, options).map_err(|error| match error {
        lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit }) => {
            PdfError::InflatesTooMuch { limit }
        }
        lopdf::Error::InvalidPassword => PdfError::WrongPassword,
        lopdf::Error::UnsupportedSecurityHandler(_) | lopdf::Error::Decryption(_) => PdfError::Encrypted,
        other => PdfError::unreadable(format!("loading: {other}")),
    })?;
    if document.trailer.has(b"Encrypt") {
        return Err(PdfError::WrongPassword);
    }
    Ok(document)
}

/// Whether `password` is the owner password of `document`, which lopdf opened (and so
/// decrypted) with the empty user password. lopdf drops the encryption dictionary once it has
/// decrypted a document, and keeps what it held: write it back to check the password.
fn is_owner_password(mut document: Document, password: &Password) -> bool {
    let Some(dict) = document.encryption_state.as_ref().and_then(|state| state.encode().ok()) else { return false };
    let encrypt = document.add_object(dict);
    document.trailer.set("Encrypt", lopdf::Object::Reference(encrypt));
    document.authenticate_owner_password(password.expose()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::split::tests::fixture;
    use crate::pdf::text::page_texts;

    fn decrypt_fixture(name: &str, password: &str) -> (tempfile::TempDir, Result<Produced, PdfError>) {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        let result = decrypt(&fixture(name), &output, &Password::new(password.into()), DEFAULT_MAX_INFLATE_BYTES);
        (dir, result)
    }

    #[test]
    fn the_right_password_gives_an_unencrypted_pdf_with_the_same_text() {
        let (dir, result) = decrypt_fixture("aes256-userpw.pdf", "secret");
        assert_eq!(result.unwrap().pages, Some(1));
        let bytes = std::fs::read(dir.path().join("out.pdf")).unwrap();
        let document = Document::load_mem(&bytes).unwrap();
        assert!(!document.trailer.has(b"Encrypt") && document.encryption_state.is_none());
        let original = Document::load(fixture("text-1page.pdf")).unwrap();
        assert_eq!(
            page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap(),
            page_texts(&original, DEFAULT_MAX_INFLATE_BYTES).unwrap()
        );
    }

    #[test]
    fn the_owner_password_opens_it_too() {
        let (_dir, result) = decrypt_fixture("aes256-userpw.pdf", "owner");
        assert!(result.is_ok(), "{result:?}");
    }

    #[test]
    fn a_wrong_password_is_a_clear_failure() {
        let (_dir, result) = decrypt_fixture("aes256-userpw.pdf", "guess");
        assert!(matches!(result, Err(PdfError::WrongPassword)), "{result:?}");
        let (_dir, result) = decrypt_fixture("aes256-userpw.pdf", "");
        assert!(matches!(result, Err(PdfError::WrongPassword)), "{result:?}");
    }

    #[test]
    fn owner_restrictions_are_lifted_only_with_the_owner_password() {
        let (_dir, result) = decrypt_fixture("aes256-ownerpw-only.pdf", "guess");
        assert!(matches!(result, Err(PdfError::WrongPassword)), "{result:?}");
        let (dir, result) = decrypt_fixture("aes256-ownerpw-only.pdf", "owner");
        assert!(result.is_ok(), "{result:?}");
        let document = Document::load(dir.path().join("out.pdf")).unwrap();
        assert!(document.encryption_state.is_none());
    }
}
