//! What `optimize` does to a loaded document's streams: every stream deflated with libdeflate at
//! level 7 (`RECOMPRESS_LEVEL`; streams that were not compressed, and Flate streams whose data
//! deflates smaller again, images included, except those deflated at zlib's best levels
//! already), and identical streams merged into one.
//!
//! Re-deflating inflates each Flate stream first, capped at the run's `max_inflate`: a stream
//! that inflates past it fails the run with [`PdfError::InflatesTooMuch`], as loading does. A
//! stream whose data is damaged (it does not inflate cleanly to its end) is left as it is.

use std::cell::RefCell;
use std::collections::HashMap;

use libdeflater::{CompressionLvl, Compressor, DecompressionError, Decompressor};
use lopdf::{Document, Object, ObjectId, Stream};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::PdfError;

/// libdeflate's level 9, for the deflates outside [`compress_streams`] ([`deflate_best`]):
/// 2–3 % smaller than zlib's level 9 on PDF content and faster. Its levels 10–12 gain 1–2 % more
/// on text and up to 8 % on scanned images, but at 5–10 times the time (BENCHMARKS.md).
pub(crate) const BEST_LEVEL: i32 = 9;

/// The level [`compress_streams`] deflates every stream at: libdeflate's 7, the best of its
/// lazy-matching levels. On the Flate streams of three corpus files (S01, S05, M08: 11.7 MB
/// inflated) it wrote 0.3–0.9 % more than level 9 in 40–60 % of the time, and still 0.1–0.7 %
/// less than zlib's level 9 (what qpdf's `--compression-level=9` uses); its level 6 is bigger
/// than zlib's 9 on S01. Deflating was half of `optimize`'s time at level 9 (perf, S01).
const RECOMPRESS_LEVEL: i32 = 7;

/// Streams smaller than this are not worth a second deflate: the gain is a few bytes at most.
const SMALLEST_WORTH_RECOMPRESSING: usize = 64;

/// Deflates every stream that has no filter, and deflates again every Flate stream whose data
/// comes out smaller that way (its `/DecodeParms` still apply: the inflated bytes are the same)
/// unless zlib deflated it at its best levels already.
///
/// # Errors
///
/// [`PdfError::InflatesTooMuch`] if a Flate stream inflates past `max_inflate`.
pub(crate) fn compress_streams(document: &mut Document, max_inflate: usize) -> Result<(), PdfError> {
    let recompressor = || Compressor::new(CompressionLvl::new(RECOMPRESS_LEVEL).unwrap_or_default());
    document.objects.par_iter_mut().try_for_each_init(recompressor, |compressor, (_, object)| match object {
        Object::Stream(stream) if stream.allows_compression => compress_stream(stream, compressor, max_inflate),
        _ => Ok(()),
    })
}

fn compress_stream(stream: &mut Stream, compressor: &mut Compressor, max_inflate: usize) -> Result<(), PdfError> {
    if stream.content.len() < SMALLEST_WORTH_RECOMPRESSING {
        return Ok(());
    }
    match only_filter(stream) {
        None => {
            // The filter entry costs about 19 bytes in the dictionary.
            if let Some(compressed) = deflate_within(compressor, &stream.content, stream.content.len() - 20) {
                stream.dict.set("Filter", "FlateDecode");
                stream.set_content(compressed);
            }
        }
        Some(Filter::Flate) if deflated_at_zlibs_best(stream) && !has_png_predictor(stream) => {
            // Deflated again it gains 0.1-0.2 % (pdfTeX's streams: S05, M03), at a quarter of
            // `optimize`'s time; qpdf's zlib at level 9 gains nothing there either.
        }
        Some(Filter::Flate) => {
            let Some(plain) = inflate(&stream.content, max_inflate)? else { return Ok(()) };
            if let Some(compressed) = deflate_within(compressor, &plain, stream.content.len() - 1) {
                stream.set_content(compressed);
            }
            if has_png_predictor(stream) {
                // PNG predictors suit photos; scans of paper often deflate smaller without them
                // (qpdf drops them): try the samples as they are too, and keep the smaller.
                let samples = match stream.decompressed_content_with_limit(max_inflate) {
                    Ok(samples) => samples,
                    Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
                        return Err(PdfError::InflatesTooMuch { limit });
                    }
                    Err(_) => return Ok(()),
                };
                if let Some(compressed) = deflate_within(compressor, &samples, stream.content.len() - 1) {
                    stream.dict.remove(b"DecodeParms");
                    stream.set_content(compressed);
                }
            }
        }
        Some(Filter::Other) => {}
    }
    Ok(())
}

/// Whether the stream's data says it was deflated at zlib's levels 7–9: its zlib header is
/// `78 DA` (RFC 1950, FLEVEL 3).
fn deflated_at_zlibs_best(stream: &Stream) -> bool {
    stream.content.starts_with(&[0x78, 0xDA])
}

/// Whether the stream's `/DecodeParms` is one dictionary naming a PNG predictor (10–15).
fn has_png_predictor(stream: &Stream) -> bool {
    let Ok(Object::Dictionary(parms)) = stream.dict.get(b"DecodeParms") else { return false };
    parms.get(b"Predictor").and_then(Object::as_i64).is_ok_and(|p| (10..=15).contains(&p))
}

enum Filter {
    Flate,
    Other,
}

/// The stream's filter when it has exactly one, `None` when it has none.
fn only_filter(stream: &Stream) -> Option<Filter> {
    let filter = match stream.dict.get(b"Filter") {
        Err(_) => return None,
        Ok(Object::Name(name)) => Some(name.as_slice()),
        Ok(Object::Array(names)) if names.is_empty() => return None,
        Ok(Object::Array(names)) if names.len() == 1 => names[0].as_name().ok(),
        Ok(_) => None,
    };
    Some(if filter == Some(b"FlateDecode") { Filter::Flate } else { Filter::Other })
}

/// Deflates `data` (zlib format) with `compressor` when it fits in `at_most` bytes: the output
/// buffer is no larger, so a stream that would not shrink costs no more memory than it holds.
fn deflate_within(compressor: &mut Compressor, data: &[u8], at_most: usize) -> Option<Vec<u8>> {
    let mut out = vec![0; at_most.min(compressor.zlib_compress_bound(data.len()))];
    let written = compressor.zlib_compress(data, &mut out).ok()?;
    out.truncate(written);
    Some(out)
}

/// Deflates `data` (zlib format) at `compressor`'s level.
pub(crate) fn deflate(compressor: &mut Compressor, data: &[u8]) -> Option<Vec<u8>> {
    let mut out = vec![0; compressor.zlib_compress_bound(data.len())];
    let written = compressor.zlib_compress(data, &mut out).ok()?;
    out.truncate(written);
    Some(out)
}

thread_local! {
    /// libdeflate compressors by level, kept per thread: making one allocates and clears its
    /// match finder's tables, which costs more than deflating a few kilobytes (a part's object
    /// streams, its cross-reference stream).
    static COMPRESSORS: RefCell<Vec<(i32, Compressor)>> = const { RefCell::new(Vec::new()) };
}

/// Deflates `data` (zlib format) at libdeflate's `level` with this thread's compressor for it.
pub(crate) fn deflate_at(level: i32, data: &[u8]) -> Vec<u8> {
    let deflated = COMPRESSORS.with_borrow_mut(|compressors| {
        let at = match compressors.iter().position(|(kept, _)| *kept == level) {
            Some(at) => at,
            None => {
                compressors.push((level, Compressor::new(CompressionLvl::new(level).unwrap_or_default())));
                compressors.len() - 1
            }
        };
        deflate(&mut compressors[at].1, data)
    });
    deflated.unwrap_or_else(|| {
        // libdeflate fails only when the output buffer is too small, which its bound rules out;
        // flate2 is the fallback all the same.
        use std::io::Write;
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let _ = encoder.write_all(data);
        encoder.finish().unwrap_or_default()
    })
}

/// Deflates `data` at [`BEST_LEVEL`].
pub(crate) fn deflate_best(data: &[u8]) -> Vec<u8> {
    deflate_at(BEST_LEVEL, data)
}

/// Inflates zlib `data`, no further than `max_inflate` bytes; `None` when the data is damaged.
///
/// With libdeflate, the decoder `optimize` deflates with, rather than flate2's stream decoder:
/// it inflates in one call into a buffer it cannot grow, so the buffer starts at four times the
/// data (text and fonts deflate 3–5 times) and grows fourfold until the data fits or the cap is
/// reached, each try starting again.
///
/// # Errors
///
/// [`PdfError::InflatesTooMuch`] if it inflates past `max_inflate`.
pub(crate) fn inflate(data: &[u8], max_inflate: usize) -> Result<Option<Vec<u8>>, PdfError> {
    let mut decompressor = Decompressor::new();
    // Not `clamp`: it panics when the cap is below the 4 KiB start.
    let mut capacity = data.len().saturating_mul(4).max(4096).min(max_inflate.max(1));
    loop {
        // One byte over the cap tells "exactly at the cap" from "past it".
        let mut plain = vec![0; capacity.min(max_inflate.saturating_add(1))];
        match decompressor.zlib_decompress(data, &mut plain) {
            Ok(written) if written > max_inflate => return Err(PdfError::InflatesTooMuch { limit: max_inflate }),
            Ok(written) => {
                plain.truncate(written);
                return Ok(Some(plain));
            }
            Err(DecompressionError::InsufficientSpace) if capacity > max_inflate => {
                return Err(PdfError::InflatesTooMuch { limit: max_inflate });
            }
            Err(DecompressionError::InsufficientSpace) => capacity = capacity.saturating_mul(4),
            Err(DecompressionError::BadData) => return Ok(None),
        }
    }
}

/// Makes every reference to a stream that is identical (dictionary and data) to an earlier one
/// point at the earlier one; the copies are pruned afterwards. Fonts, images and form XObjects
/// embedded once per page by some producers become one object.
pub(crate) fn merge_identical_streams(document: &mut Document) {
    // Hashing reads every stream's bytes: on both cores. The keys stay in object order, so the
    // first of identical streams is still the one kept.
    let keys: Vec<(ObjectId, [u8; 32])> = document
        .objects
        .par_iter()
        .filter_map(|(&id, object)| {
            let Object::Stream(stream) = object else { return None };
            let mut hasher = Sha256::new();
            hasher.update(format!("{:?}", stream.dict).as_bytes());
            hasher.update([0]);
            hasher.update(&stream.content);
            Some((id, hasher.finalize().into()))
        })
        .collect();
    let mut first_of: HashMap<[u8; 32], ObjectId> = HashMap::new();
    let mut replace: HashMap<ObjectId, ObjectId> = HashMap::new();
    for (id, key) in keys {
        let Some(object) = document.objects.get(&id) else { continue };
        match first_of.get(&key) {
            // The hash of the dictionary's debug form is lossy for names that are not UTF-8:
            // compare for real before merging.
            Some(&first) if document.objects.get(&first).is_some_and(|kept| kept == object) => {
                replace.insert(id, first);
            }
            Some(_) => {}
            None => {
                first_of.insert(key, id);
            }
        }
    }
    if replace.is_empty() {
        return;
    }
    for object in document.objects.values_mut() {
        redirect(object, &replace);
    }
    for (_, value) in document.trailer.iter_mut() {
        redirect(value, &replace);
    }
}

fn redirect(object: &mut Object, replace: &HashMap<ObjectId, ObjectId>) {
    match object {
        Object::Reference(id) => {
            if let Some(&kept) = replace.get(id) {
                *id = kept;
            }
        }
        Object::Array(items) => items.iter_mut().for_each(|item| redirect(item, replace)),
        Object::Dictionary(dict) => dict.iter_mut().for_each(|(_, value)| redirect(value, replace)),
        Object::Stream(stream) => stream.dict.iter_mut().for_each(|(_, value)| redirect(value, replace)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_cap_below_four_kib_is_enforced_not_a_panic() {
        let data = deflate_best(&[b'a'; 10_000]);
        assert!(matches!(inflate(&data, 100), Err(PdfError::InflatesTooMuch { limit: 100 })));
        assert_eq!(inflate(&data, 10_000).unwrap().unwrap().len(), 10_000);
    }

    use super::*;
    use lopdf::Dictionary;

    #[test]
    fn a_flate_stream_that_inflates_past_the_cap_is_refused() {
        let plain = vec![b'a'; 1 << 20];
        // Deflated at libdeflate's 6: its zlib header does not say "best", so it is inflated to
        // be deflated again.
        let mut stream = Stream::new(Dictionary::new(), deflate_at(6, &plain));
        assert_ne!(stream.content[..2], [0x78, 0xDA]);
        assert!(stream.content.len() >= SMALLEST_WORTH_RECOMPRESSING);
        stream.dict.set("Filter", "FlateDecode");
        let mut document = Document::with_version("1.7");
        document.add_object(stream);
        let result = compress_streams(&mut document, 99_999);
        assert!(matches!(result, Err(PdfError::InflatesTooMuch { limit: 99_999 })), "{result:?}");
    }

    /// 200 kB of patterned bytes, deflated by zlib at `level`, as the one stream of a document;
    /// the bytes, the deflated data, the document after [`compress_streams`] and the stream's id.
    fn recompressed(level: flate2::Compression) -> (Vec<u8>, Vec<u8>, Document, ObjectId) {
        use std::io::Write;
        let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8 ^ (i / 977) as u8).collect();
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
        encoder.write_all(&plain).unwrap();
        let deflated = encoder.finish().unwrap();
        let mut stream = Stream::new(Dictionary::new(), deflated.clone());
        stream.dict.set("Filter", "FlateDecode");
        let mut document = Document::with_version("1.7");
        let id = document.add_object(stream);
        compress_streams(&mut document, 1 << 20).unwrap();
        (plain, deflated, document, id)
    }

    #[test]
    fn a_weakly_deflated_stream_is_deflated_again_smaller_to_the_same_data() {
        let (plain, weak, document, id) = recompressed(flate2::Compression::fast());
        let stream = document.get_object(id).unwrap().as_stream().unwrap();
        assert!(stream.content.len() < weak.len(), "{} >= {}", stream.content.len(), weak.len());
        assert_eq!(inflate(&stream.content, 1 << 20).unwrap().unwrap(), plain);
    }

    #[test]
    fn a_stream_deflated_at_zlibs_best_is_left_as_it_is() {
        let (_, best, document, id) = recompressed(flate2::Compression::best());
        assert_eq!(best[..2], [0x78, 0xDA]);
        assert_eq!(document.get_object(id).unwrap().as_stream().unwrap().content, best);
    }

    #[test]
    fn damaged_flate_data_is_left_as_it_is() {
        let mut damaged = deflate_best(&vec![b'x'; 5_000]);
        damaged.truncate(damaged.len() / 2);
        damaged.extend_from_slice(&[0xff; 100]);
        let mut stream = Stream::new(Dictionary::new(), damaged.clone());
        stream.dict.set("Filter", "FlateDecode");
        let mut document = Document::with_version("1.7");
        let id = document.add_object(stream);
        compress_streams(&mut document, 1 << 20).unwrap();
        assert_eq!(document.get_object(id).unwrap().as_stream().unwrap().content, damaged);
    }

    #[test]
    fn identical_streams_become_one() {
        let mut document = Document::with_version("1.7");
        let a = document.add_object(Stream::new(Dictionary::new(), b"same bytes".to_vec()));
        let b = document.add_object(Stream::new(Dictionary::new(), b"same bytes".to_vec()));
        let c = document.add_object(Stream::new(Dictionary::new(), b"other bytes".to_vec()));
        let holder =
            document.add_object(Object::Array(vec![Object::Reference(a), Object::Reference(b), Object::Reference(c)]));
        merge_identical_streams(&mut document);
        let refs = document.get_object(holder).unwrap().as_array().unwrap();
        assert_eq!(refs, &vec![Object::Reference(a), Object::Reference(a), Object::Reference(c)]);
    }
}
