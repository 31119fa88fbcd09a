//! The parts of a result that is sent in parts (`split 45MB`): the entries of its stored ZIP,
//! each a PDF, found where they lie in the file so each can be uploaded as a document of its
//! own straight from the archive, without being copied out.

use std::fs::File;
use std::path::{Path, PathBuf};

/// One part: its name and where its bytes lie in the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Its file name in the archive (`page-p001-040.pdf`).
    pub name: String,
    /// Where its bytes start in the archive's file.
    pub offset: u64,
    /// Its size, in bytes.
    pub size: u64,
}

/// The parts of the stored ZIP at `path`, in order.
///
/// # Errors
///
/// The file cannot be read, is not a ZIP, or holds a compressed entry (then its bytes are not
/// the part's).
pub fn parts(path: &Path) -> std::io::Result<Vec<Part>> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let mut archive = zip::ZipArchive::new(File::open(path)?).map_err(|e| invalid(e.to_string()))?;
    (0..archive.len())
        .map(|i| {
            let entry = archive.by_index_raw(i).map_err(|e| invalid(e.to_string()))?;
            if entry.compression() != zip::CompressionMethod::Stored {
                return Err(invalid(format!("entry {i} is compressed")));
            }
            let name = entry.name().map_err(|e| invalid(e.to_string()))?.into_owned();
            let offset = entry.data_start().ok_or_else(|| invalid(format!("entry {i} has no data offset")))?;
            Ok(Part { name, offset, size: entry.compressed_size() })
        })
        .collect()
}

/// [`parts`], read on a blocking thread: what the pools call, so a large archive's directory
/// never holds up the runtime.
///
/// # Errors
///
/// As [`parts`]; a read that panicked is an error too.
pub async fn parts_of(path: PathBuf) -> std::io::Result<Vec<Part>> {
    tokio::task::spawn_blocking(move || parts(&path))
        .await
        .map_err(|e| std::io::Error::other(format!("reading the parts panicked: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    #[test]
    fn each_part_is_found_where_its_bytes_lie() {
        let dir = tempfile::tempdir().unwrap();
        let zip_path = dir.path().join("parts.zip");
        crate::pdf::split::split(
            &crate::pdf::split::tests::fixture("text-20pages.pdf"),
            &zip_path,
            None,
            crate::pdf::DEFAULT_MAX_INFLATE_BYTES,
        )
        .unwrap();
        let found = parts(&zip_path).unwrap();
        assert_eq!(found.len(), 20);
        let mut file = File::open(&zip_path).unwrap();
        for part in &found {
            let mut bytes = vec![0; part.size as usize];
            file.seek(SeekFrom::Start(part.offset)).unwrap();
            file.read_exact(&mut bytes).unwrap();
            assert!(lopdf::Document::load_mem(&bytes).is_ok(), "{} is a PDF where it is said to lie", part.name);
        }
        assert_eq!(found[0].name, "page-p001.pdf");
    }

    #[test]
    fn what_is_not_a_zip_is_refused() {
        assert!(parts(&crate::pdf::split::tests::fixture("text-1page.pdf")).is_err());
    }
}
