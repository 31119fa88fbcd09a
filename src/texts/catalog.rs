//! The catalog itself: the `locales/<language>/docket.ftl` files embedded at build time, the
//! languages they make ([`Lang`]), and [`render`], which turns one message id and its arguments
//! into text. Every other file of `texts` writes its sentences through it; none holds a catalog
//! of its own.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use fluent_bundle::FluentValue;
use fluent_templates::{LanguageIdentifier, Loader as _};
use tracing::warn;

// Every `locales/<language>/docket.ftl`, parsed into one bundle per language.
fluent_templates::static_loader! {
    static CATALOG = {
        locales: "./locales",
        fallback_language: "en",
        // Messages go out as plain text: Unicode isolation marks around arguments would show up
        // in names and sizes (and change every English sentence byte for byte).
        customise: |bundle| bundle.set_use_isolating(false),
    };
}

/// The catalog's languages: English first (the fallback), then the others by code.
static LANGUAGES: LazyLock<Vec<&'static LanguageIdentifier>> = LazyLock::new(|| {
    let english = CATALOG.fallback();
    let mut all: Vec<&'static LanguageIdentifier> = CATALOG.locales().collect();
    all.sort_by_key(|l| (*l != english, l.to_string()));
    all
});

/// A language of the catalog: one of the `locales/` folders. Unknown codes become English.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lang(u8);

impl Lang {
    /// English: the catalog's reference and fallback language.
    pub const ENGLISH: Self = Self(0);

    /// Every language of the catalog, English first.
    pub fn all() -> impl Iterator<Item = Self> {
        (0..LANGUAGES.len()).map(|i| Self(u8::try_from(i).unwrap_or(0)))
    }

    /// The catalog language for an IETF language tag as Telegram sends it (`ru`, `ru-RU`,
    /// `en-GB`, `pt-br`): the same tag if the catalog has it, else its language without region
    /// or script, else English.
    pub fn from_code(code: &str) -> Self {
        let Ok(wanted) = code.trim().replace('_', "-").parse::<LanguageIdentifier>() else {
            return Self::ENGLISH;
        };
        let index = LANGUAGES
            .iter()
            .position(|l| **l == wanted)
            .or_else(|| LANGUAGES.iter().position(|l| l.language == wanted.language && l.region.is_none()))
            .or_else(|| LANGUAGES.iter().position(|l| l.language == wanted.language));
        index.and_then(|i| u8::try_from(i).ok()).map_or(Self::ENGLISH, Self)
    }

    /// [`Lang::from_code`] for a code that may be missing: English then.
    pub fn from_stored(code: Option<&str>) -> Self {
        code.map_or(Self::ENGLISH, Self::from_code)
    }

    /// The language's tag, as the catalog folder names it (`en`, `ru`): what the store keeps and
    /// what `setMyCommands` takes as `language_code`.
    pub fn code(self) -> String {
        self.id().to_string()
    }

    fn id(self) -> &'static LanguageIdentifier {
        LANGUAGES.get(usize::from(self.0)).copied().unwrap_or_else(|| CATALOG.fallback())
    }
}

impl Default for Lang {
    fn default() -> Self {
        Self::ENGLISH
    }
}

impl std::fmt::Debug for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lang({})", self.id())
    }
}

/// One argument of a message: its Fluent variable name and value.
pub type Arg<'a> = (&'static str, FluentValue<'a>);

/// Renders message `id` in `lang` with `args`. A message missing from `lang`'s file, or one that
/// needs a variable it was not given, is a bug: unit tests panic on it; in production it is
/// logged and the English message is used (or, failing that too, the id).
pub fn render(lang: Lang, id: &str, args: &[Arg<'_>]) -> String {
    let args: HashMap<Cow<'static, str>, FluentValue<'_>> =
        args.iter().map(|(name, value)| (Cow::Borrowed(*name), value.clone())).collect();
    match CATALOG.lookup_single_language(lang.id(), id, Some(&args)) {
        Ok(text) => text,
        Err(err) => {
            if cfg!(test) {
                panic!("message {id} in {lang:?}: {err}");
            }
            warn!(message.id = id, language = %lang.id(), error = %err, "a catalog message did not render");
            CATALOG.try_lookup_complete(CATALOG.fallback(), id, Some(&args)).unwrap_or_else(|| id.to_owned())
        }
    }
}

/// A message with no arguments.
pub(super) fn plain(lang: Lang, id: &str) -> String {
    render(lang, id, &[])
}

/// A string argument.
pub(super) fn s<'a>(name: &'static str, value: impl Into<Cow<'a, str>>) -> Arg<'a> {
    (name, FluentValue::String(value.into()))
}

/// A number argument, for plural forms.
pub(super) fn n(name: &'static str, value: u64) -> Arg<'static> {
    (name, FluentValue::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texts::tests::ru;

    #[test]
    fn language_codes_pick_a_catalog_language_or_english() {
        assert_eq!(Lang::from_code("en"), Lang::ENGLISH);
        assert_eq!(Lang::from_code("en-GB"), Lang::ENGLISH);
        assert_eq!(Lang::from_code("ru").code(), "ru");
        assert_eq!(Lang::from_code("ru-RU"), ru());
        assert_eq!(Lang::from_code("RU"), ru());
        assert_eq!(Lang::from_code("de"), Lang::ENGLISH);
        assert_eq!(Lang::from_code(""), Lang::ENGLISH);
        assert_eq!(Lang::from_code("not a language!"), Lang::ENGLISH);
        assert_eq!(Lang::from_stored(None), Lang::ENGLISH);
        assert_eq!(Lang::ENGLISH.code(), "en");
        assert_eq!(Lang::all().next(), Some(Lang::ENGLISH), "English comes first");
        for lang in Lang::all() {
            assert_eq!(Lang::from_code(&lang.code()), lang, "{lang:?} round-trips through its code");
        }
    }
    /// The message ids of one catalog file.
    fn message_ids(path: &std::path::Path) -> std::collections::BTreeSet<String> {
        let text = std::fs::read_to_string(path).unwrap();
        let resource = fluent_syntax::parser::parse(text.as_str())
            .unwrap_or_else(|(_, errors)| panic!("{} does not parse: {errors:?}", path.display()));
        resource
            .body
            .iter()
            .filter_map(|entry| match entry {
                fluent_syntax::ast::Entry::Message(m) => Some(m.id.name.to_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_language_has_every_message() {
        let locales = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("locales");
        let english = message_ids(&locales.join("en/docket.ftl"));
        let mut folders = 0;
        for entry in std::fs::read_dir(&locales).unwrap() {
            let folder = entry.unwrap().path();
            let ids = message_ids(&folder.join("docket.ftl"));
            let missing: Vec<_> = english.difference(&ids).collect();
            let extra: Vec<_> = ids.difference(&english).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{}: missing {missing:?}, extra {extra:?}",
                folder.display()
            );
            let code = folder.file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(Lang::from_code(&code).code(), code, "the catalog embeds {code}");
            folders += 1;
        }
        assert_eq!(Lang::all().count(), folders, "every folder is a language, and only those");
        assert!(folders >= 2);
    }
}
