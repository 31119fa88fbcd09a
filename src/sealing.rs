//! Secrets at rest: what a job must keep for a while but nobody may read from the database (a
//! decrypt's password) is stored sealed, never in plain text.
//!
//! The key is derived (HKDF-SHA256) from material the database does not hold: the secret in the
//! environment variable `[storage] secret_key_env` names, or else the bot token, so every host
//! of one bot can open what another sealed. Intake seals a password before the job is written;
//! the processing stage opens it right before the run. Each value is sealed with
//! XChaCha20-Poly1305 under a fresh random nonce and bound to its job (`chat:file_unique_id`),
//! so a sealed value copied to another row does not open there. The stored text is `v1:` and
//! the nonce and ciphertext in base64: not a byte of the secret reaches a page, the WAL, a
//! backup or a dump. A value that does not open (another key, a row edited by hand) opens as
//! nothing, and the run fails as with a wrong password.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// What a sealed value starts with: the scheme, so a later one can be told apart.
const SCHEME: &str = "v1:";

/// Sets this key apart from any other use of the same material.
const CONTEXT: &[u8] = b"docket job secrets v1";

/// The key sealed values are made with. Never shown in `Debug`.
#[derive(Clone)]
pub struct SealingKey(XChaCha20Poly1305);

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(***)")
    }
}

impl SealingKey {
    /// The key derived from `material` (the configured secret, or the bot token).
    pub fn derive(material: &[u8]) -> Self {
        let mut key = chacha20poly1305::Key::default();
        hkdf::Hkdf::<sha2::Sha256>::new(None, material)
            .expand(CONTEXT, &mut key)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        Self(XChaCha20Poly1305::new(&key))
    }

    /// What a job's secret is bound to: its chat and file.
    pub fn binding(chat: crate::domain::ChatRef, file_unique_id: &str) -> String {
        format!("{}:{file_unique_id}", chat.0)
    }

    /// `secret` sealed for the row `binding` names.
    pub fn seal(&self, secret: &str, binding: &str) -> String {
        let nonce = XNonce::generate();
        let sealed = self
            .0
            .encrypt(&nonce, Payload { msg: secret.as_bytes(), aad: binding.as_bytes() })
            .expect("sealing a value in memory cannot fail");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        format!("{SCHEME}{}", STANDARD_NO_PAD.encode(bytes))
    }

    /// What `stored` holds for the row `binding` names; `None` when it does not open with this
    /// key (sealed by another, changed, or not sealed at all).
    pub fn open(&self, stored: &str, binding: &str) -> Option<String> {
        let bytes = STANDARD_NO_PAD.decode(stored.strip_prefix(SCHEME)?).ok()?;
        if bytes.len() < 24 {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(24);
        let nonce = XNonce::try_from(nonce).ok()?;
        let opened = self.0.decrypt(&nonce, Payload { msg: sealed, aad: binding.as_bytes() }).ok()?;
        String::from_utf8(opened).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_row() {
        let key = SealingKey::derive(b"123:token");
        let sealed = key.seal("hunter2 пароль", "42:U");
        assert!(sealed.starts_with("v1:"), "{sealed}");
        assert!(!sealed.contains("hunter2"));
        assert_eq!(key.open(&sealed, "42:U").as_deref(), Some("hunter2 пароль"));
        assert_eq!(SealingKey::derive(b"123:token").open(&sealed, "42:U").as_deref(), Some("hunter2 пароль"));
        assert_eq!(key.open(&sealed, "42:V"), None, "bound to its row");
        assert_eq!(SealingKey::derive(b"456:other").open(&sealed, "42:U"), None, "another key");
        assert_eq!(key.open("hunter2", "42:U"), None, "a plain value is not a sealed one");
        assert_eq!(key.open("v1:AAAA", "42:U"), None);
    }

    #[test]
    fn the_same_secret_seals_differently_each_time() {
        let key = SealingKey::derive(b"k");
        assert_ne!(key.seal("same", "r"), key.seal("same", "r"));
        assert_eq!(format!("{key:?}"), "SealingKey(***)");
    }
}
