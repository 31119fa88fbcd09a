//! What the operations share: the guarded work thread, loading, page lists, inherited page
//! attributes, copying only the objects some pages need, and saving.

use std::any::Any;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use lopdf::{Dictionary, Document, EncryptionState, LoadOptions, Object, ObjectId};

use super::file_writer::{self, Item, Layout};
use super::{PdfError, content};
use crate::detect;
use crate::domain::PageRanges;

/// Stack size of the thread that runs the lopdf work in [`super::optimize()`] and
/// every other operation.
pub const WORK_STACK_BYTES: usize = 64 * 1024 * 1024;

/// How many objects go into one object stream when saving; larger groups compress better.
pub(super) const OBJECTS_PER_STREAM: usize = 200;

/// Runs `work` on a thread with a [`WORK_STACK_BYTES`] stack, a panic in it becoming
/// [`PdfError::Unreadable`].
pub(super) fn on_work_thread<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PdfError> + Send + 'static,
) -> Result<T, PdfError> {
    let span = tracing::Span::current();
    let worker =
        std::thread::Builder::new().name("docket-pdf".to_owned()).stack_size(WORK_STACK_BYTES).spawn(move || {
            let _entered = span.enter();
            catch_unwind(AssertUnwindSafe(work))
                .map_err(|payload| PdfError::unreadable(panic_message(payload.as_ref())))
        })?;
    // A panic that still escapes (one in the panic handling) lands here.
    worker.join().map_err(|payload| PdfError::unreadable(panic_message(payload.as_ref())))??
}

pub(super) fn load_options(max_inflate: usize) -> LoadOptions {
    LoadOptions { max_decompressed_size: Some(max_inflate), ..LoadOptions::default() }
}

/// Loads a PDF without a password; lopdf opens one with an empty user password by itself.
pub(super) fn load(bytes: &[u8], max_inflate: usize) -> Result<Document, PdfError> {
    let document = Document::load_mem_with_options(bytes, load_options(max_inflate)).map_err(|error| match error {
        lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit }) => {
            PdfError::InflatesTooMuch { limit }
        }
        lopdf::Error::InvalidPassword | lopdf::Error::UnsupportedSecurityHandler(_) | lopdf::Error::Decryption(_) => {
            PdfError::Encrypted
        }
        other => PdfError::unreadable(format!("loading: {other}")),
    })?;
    // lopdf removes `/Encrypt` from the trailer once it has decrypted a document; if it is still
    // there, lopdf could not authenticate and loaded nothing.
    if document.trailer.has(b"Encrypt") {
        return Err(PdfError::Encrypted);
    }
    if let Some(recovery) = document.xref_recovery {
        tracing::debug!(?recovery, "repaired the cross-reference data of a damaged PDF");
    }
    Ok(document)
}

/// The number of pages, or why there is no page tree to count.
pub(super) fn count_pages(document: &Document) -> Result<u32, PdfError> {
    let has_page_tree =
        document.catalog().and_then(|catalog| catalog.get_deref(b"Pages", document)).and_then(Object::as_dict).is_ok();
    if !has_page_tree {
        return Err(PdfError::unreadable("no document catalog or page tree"));
    }
    let pages = document.page_iter().count();
    match u32::try_from(pages) {
        Ok(0) => Err(PdfError::NoPages),
        Ok(pages) => Ok(pages),
        Err(_) => Err(PdfError::unreadable(format!("{pages} pages"))),
    }
}

pub(super) fn panic_message(payload: &(dyn Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    format!("lopdf panicked: {message}")
}

/// The bytes at `input`, when they are a PDF by [`detect::detect_bytes`].
pub(super) fn read_pdf(input: &Path) -> Result<Vec<u8>, PdfError> {
    let bytes = std::fs::read(input)?;
    let found = detect::detect_bytes(&bytes);
    if !found.is_pdf() {
        return Err(PdfError::NotPdf { found });
    }
    Ok(bytes)
}

/// Loads the PDF at `input` as [`super::optimize()`] does (no password; an owner-password-only
/// file opens), with its page ids in order.
pub(super) fn load_pages(input: &Path, max_inflate: usize) -> Result<(Document, Vec<ObjectId>), PdfError> {
    let bytes = read_pdf(input)?;
    let document = load(&bytes, max_inflate)?;
    drop(bytes);
    let pages = page_ids(&document)?;
    Ok((document, pages))
}

/// The document's page ids in page order; an error when it has no page tree or no pages.
pub(super) fn page_ids(document: &Document) -> Result<Vec<ObjectId>, PdfError> {
    count_pages(document)?;
    Ok(document.page_iter().collect())
}

/// The resource dictionaries that more than one of the pages `page_ids` names as its own.
pub(super) fn shared_resources(document: &Document, page_ids: &[ObjectId]) -> HashSet<ObjectId> {
    let mut named = HashSet::new();
    let mut shared = HashSet::new();
    for &page in page_ids {
        if let Ok(Object::Reference(id)) = document.get_dictionary(page).and_then(|page| page.get(b"Resources"))
            && !named.insert(*id)
        {
            shared.insert(*id);
        }
    }
    shared
}

/// `ranges` against a document of `page_count` pages; a page it lacks is
/// [`PdfError::NoSuchPage`].
pub(super) fn resolve(ranges: &PageRanges, page_count: usize) -> Result<Vec<Vec<u32>>, PdfError> {
    let page_count = u32::try_from(page_count).unwrap_or(u32::MAX);
    ranges.resolve(page_count).map_err(|page| PdfError::NoSuchPage { page, page_count })
}

/// The attributes a page inherits from the page tree when it does not set them itself
/// (ISO 32000-1, 7.7.3.4).
pub(super) const INHERITED: [&[u8]; 4] = [b"Resources", b"MediaBox", b"CropBox", b"Rotate"];

/// How many ancestors a page's attribute is looked up in; lopdf's own page-tree walk stops at
/// 256 levels, and a `/Parent` loop ends here too.
const MAX_ANCESTORS: usize = 256;

/// `key` of the page `page_id`, its own or the nearest ancestor's, dereferenced.
pub(super) fn inherited<'a>(document: &'a Document, page_id: ObjectId, key: &[u8]) -> Option<&'a Object> {
    let mut node = document.get_dictionary(page_id).ok()?;
    for _ in 0..MAX_ANCESTORS {
        if let Ok(value) = node.get(key) {
            return document.dereference(value).ok().map(|(_, object)| object);
        }
        node = node.get(b"Parent").and_then(Object::as_reference).and_then(|id| document.get_dictionary(id)).ok()?;
    }
    None
}

/// Some pages of `source` as a PDF file of their own, holding only the objects those pages
/// reach, written straight from the source: only the pages themselves are copied.
///
/// Pages are copied with their inherited attributes written into them, so the new page tree is
/// one flat node. A reference to a page of the source (a link's destination, an annotation's
/// `/P`) points to that page's first copy when it is in the result and becomes `null` when it
/// is not, so one page never drags the whole document in; the page tree itself is never
/// followed.
pub(super) struct Extract<'a> {
    source: &'a Document,
    /// The result's objects, numbered from 1 in this order: the page tree, the pages, what they
    /// reach, the catalog. All but the page tree and the catalog refer to the source's objects.
    objects: Vec<Item<'a>>,
    /// Source object → its number in the result; `None` for a page left out or an object the
    /// source lacks, written as `null`.
    numbers: HashMap<ObjectId, Option<ObjectId>>,
    /// Source page → its first copy.
    page_copies: HashMap<ObjectId, ObjectId>,
    kids: Vec<Object>,
    /// The source's resource dictionaries that several pages name as their own; `None` when
    /// every page keeps its resources whole ([`Extract::keeping_resources`]).
    shared_resources: Option<&'a HashSet<ObjectId>>,
    max_inflate: usize,
}

/// The number a page copy's `/Parent` is written with in the source's numbering: the result's
/// page tree. No source object can have it (65535 is the generation of free entries only).
const PAGE_TREE: ObjectId = (u32::MAX, u16::MAX);

impl<'a> Extract<'a> {
    /// An empty result from `source`, whose [`shared_resources`] are `shared_resources`; page
    /// content is read within `max_inflate` to find the resources a page uses.
    pub(super) fn new(source: &'a Document, shared_resources: &'a HashSet<ObjectId>, max_inflate: usize) -> Self {
        Self::with(source, Some(shared_resources), max_inflate)
    }

    /// An empty result from `source` whose pages keep their resources as they are, unread: for
    /// a result that holds every page of the source, where pruning would find little and cost
    /// a read of every page's content (`merge`).
    pub(super) fn keeping_resources(source: &'a Document) -> Self {
        Self::with(source, None, 0)
    }

    fn with(source: &'a Document, shared_resources: Option<&'a HashSet<ObjectId>>, max_inflate: usize) -> Self {
        let page_tree = Item { id: (1, 0), object: Cow::Owned(Object::Null), renumbered: false };
        Self {
            source,
            objects: vec![page_tree],
            numbers: HashMap::from([(PAGE_TREE, Some((1, 0)))]),
            page_copies: HashMap::new(),
            kids: Vec::new(),
            shared_resources,
            max_inflate,
        }
    }

    /// Copies the page `page_id` of the source to the end of the result.
    pub(super) fn add_page(&mut self, page_id: ObjectId) {
        let mut page = self.source.get_dictionary(page_id).cloned().unwrap_or_default();
        for key in INHERITED {
            if !page.has(key)
                && let Some(value) = inherited(self.source, page_id, key)
            {
                page.set(key, value.clone());
            }
        }
        if let Some(resources) = self.used_resources(page_id, &page) {
            page.set("Resources", resources);
        }
        // Article beads chain through every page of a thread; the result has no threads.
        page.remove(b"B");
        page.set("Parent", Object::Reference(PAGE_TREE));
        page.set("Type", Object::Name(b"Page".to_vec()));
        let copy = self.push(Cow::Owned(Object::Dictionary(page)), true);
        self.page_copies.entry(page_id).or_insert(copy);
        self.kids.push(Object::Reference(copy));
    }

    /// The page's resources without the fonts and XObjects its content never names, when they
    /// are inherited or shared, the result prunes, and that can be known: many producers give every page the whole
    /// document's fonts and images (through the page tree's `/Resources`, or one dictionary all
    /// pages name), and a one-page part would carry them all. `None` keeps them as they are: they
    /// are the page's own, the content cannot be read within the inflate cap, or a form it
    /// draws takes its resources from the page.
    ///
    /// A page's own resources are taken as what it uses: producers that write resources per
    /// page (pdfTeX, Ghostscript) list what the page draws, and reading every page's content to
    /// check was a fifth of `split`'s time for a few bytes (0.00–0.35 % on the corpus).
    fn used_resources(&self, page_id: ObjectId, page: &Dictionary) -> Option<Dictionary> {
        let source = self.source;
        let shared_resources = self.shared_resources?;
        match source.get_dictionary(page_id).ok()?.get(b"Resources") {
            Ok(Object::Dictionary(_)) => return None,
            Ok(Object::Reference(id)) if !shared_resources.contains(id) => return None,
            _ => {}
        }
        fn deref<'d>(source: &'d Document, object: &'d Object) -> Option<&'d Object> {
            source.dereference(object).ok().map(|(_, object)| object)
        }
        let deref = |object| deref(source, object);
        // The page's own `/Resources` is a copy; what it refers to is the source's.
        let resources = match page.get(b"Resources").ok()? {
            Object::Reference(id) => source.get_dictionary(*id).ok()?,
            Object::Dictionary(dict) => dict,
            _ => return None,
        };
        let content = content::page(source, page_id, self.max_inflate).ok()?;
        let used = content::names_used(&content)?;
        let mut pruned = resources.clone();
        for key in [b"Font".as_slice(), b"XObject"] {
            let Some(named) = resources.get(key).ok().and_then(deref).and_then(|d| d.as_dict().ok()) else { continue };
            let mut kept = Dictionary::new();
            for (name, value) in named {
                if !used.contains(name) {
                    continue;
                }
                let form = deref(value).and_then(|v| v.as_stream().ok());
                if form.is_some_and(|f| {
                    !f.dict.has(b"Resources")
                        && f.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Form".as_slice())
                }) {
                    return None;
                }
                kept.set(name.clone(), value.clone());
            }
            pruned.set(key, kept);
        }
        Some(pruned)
    }

    /// The result as a PDF file, encrypted with `encryption` when given.
    ///
    /// # Errors
    ///
    /// Those of [`file_writer::write_pdf`].
    pub(super) fn write(mut self, encryption: Option<&EncryptionState>) -> Result<Vec<u8>, PdfError> {
        self.reach_everything();
        let count = i64::try_from(self.kids.len()).unwrap_or(i64::MAX);
        let mut pages = Dictionary::new();
        pages.set("Type", Object::Name(b"Pages".to_vec()));
        pages.set("Count", count);
        pages.set("Kids", Object::Array(std::mem::take(&mut self.kids)));
        self.objects[0].object = Cow::Owned(Object::Dictionary(pages));
        let mut catalog = Dictionary::new();
        catalog.set("Type", Object::Name(b"Catalog".to_vec()));
        catalog.set("Pages", Object::Reference((1, 0)));
        let catalog_id = self.push(Cow::Owned(Object::Dictionary(catalog)), false);
        let mut trailer = Dictionary::new();
        trailer.set("Root", Object::Reference(catalog_id));
        // The file identifier keys RC4 and AES-128 encryption; keep it for encrypting again.
        if let Ok((_, id)) = self.source.trailer.get(b"ID").and_then(|id| self.source.dereference(id)) {
            trailer.set("ID", id.clone());
        }
        let layout = Layout {
            version: &self.source.version,
            objects_per_stream: OBJECTS_PER_STREAM,
            level: PART_DEFLATE_LEVEL,
            encryption,
        };
        let numbers = &self.numbers;
        file_writer::write_pdf(&layout, self.objects, trailer, &|id| numbers.get(&id).copied().flatten())
    }

    /// Numbers every source object the result's objects refer to, directly or not, and adds it
    /// to them.
    fn reach_everything(&mut self) {
        let mut found = Vec::new();
        let mut next = 0;
        while let Some(item) = self.objects.get(next) {
            next += 1;
            if item.renumbered {
                references(&item.object, &mut found);
            }
            for id in found.drain(..) {
                if self.numbers.contains_key(&id) {
                    continue;
                }
                let number = match self.source.get_object(id) {
                    Err(_) => None,
                    Ok(Object::Dictionary(dict)) if matches!(dict.get_type(), Ok(b"Page" | b"Pages")) => {
                        self.page_copies.get(&id).copied()
                    }
                    Ok(object) => Some(self.push(Cow::Borrowed(object), true)),
                };
                self.numbers.insert(id, number);
            }
        }
    }

    /// Adds `object` to the result; its number.
    fn push(&mut self, object: Cow<'a, Object>, renumbered: bool) -> ObjectId {
        let id = (u32::try_from(self.objects.len() + 1).unwrap_or(u32::MAX), 0);
        self.objects.push(Item { id, object, renumbered });
        id
    }
}

/// libdeflate's level for a part's object streams: its fastest. On S05 (113 pages) it wrote
/// 0.07 % more than level 6 in a tenth less time; deflating was a fifth of `split`'s time.
const PART_DEFLATE_LEVEL: i32 = 1;

/// Appends the references in `object` to `found`, except a stream's `/Length`, which the
/// writer replaces.
fn references(object: &Object, found: &mut Vec<ObjectId>) {
    match object {
        Object::Reference(id) => found.push(*id),
        Object::Array(items) => items.iter().for_each(|item| references(item, found)),
        Object::Dictionary(dict) => dict.iter().for_each(|(_, value)| references(value, found)),
        Object::Stream(stream) => {
            stream.dict.iter().filter(|(key, _)| *key != b"Length").for_each(|(_, value)| references(value, found));
        }
        _ => {}
    }
}

/// Writes `document` to the file `output` ([`file_writer::save`]), encrypted with `encryption`
/// when given; returns its size.
pub(super) fn save(document: &Document, output: &Path, encryption: Option<&EncryptionState>) -> Result<u64, PdfError> {
    let bytes = file_writer::save(document, encryption, OBJECTS_PER_STREAM, DOCUMENT_DEFLATE_LEVEL)?;
    write_file(output, &bytes)?;
    Ok(bytes.len() as u64)
}

/// libdeflate's level for the object streams of a whole document that `rotate` or `decrypt`
/// writes (`optimize` uses its best).
const DOCUMENT_DEFLATE_LEVEL: i32 = 6;

pub(super) fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    File::create(path)?.write_all(bytes)
}
