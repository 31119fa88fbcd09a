//! Facts about a document, as `info` finds them: written by the PDF adapter as JSON, formatted
//! for people by `texts::document_info`.

use serde::{Deserialize, Serialize};

/// What `info` tells about a PDF.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentInfo {
    /// Its pages; `None` when they cannot be counted without the password.
    pub pages: Option<u32>,
    /// The first page's size; `None` when it cannot be read.
    pub page_size: Option<PageSize>,
    /// The PDF version of its header: `1.7`.
    pub version: String,
    /// The program that wrote the PDF (`/Producer`).
    pub producer: Option<String>,
    /// The program the document was made with (`/Creator`).
    pub creator: Option<String>,
    /// `/Title`.
    pub title: Option<String>,
    /// `/Author`.
    pub author: Option<String>,
    /// How it is protected.
    pub encryption: Encryption,
    /// Image objects in the file; `None` when they cannot be read without the password.
    pub images: Option<u32>,
    /// Its fonts, by name, each once.
    pub fonts: Vec<FontFact>,
    /// Size of the file.
    pub file_bytes: u64,
    /// SHA-256 of the file, in lowercase hex.
    pub sha256: String,
}

/// A page's size in points (1/72 inch), as its crop box (or media box) says, turned by its
/// `/Rotate`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PageSize {
    /// Width, in points.
    pub width_pt: f64,
    /// Height, in points.
    pub height_pt: f64,
}

/// Points in a millimetre.
const POINTS_PER_MM: f64 = 72.0 / 25.4;

impl PageSize {
    /// Width in millimetres.
    pub fn width_mm(&self) -> f64 {
        self.width_pt / POINTS_PER_MM
    }

    /// Height in millimetres.
    pub fn height_mm(&self) -> f64 {
        self.height_pt / POINTS_PER_MM
    }

    /// The paper size's name when it is a common one (either way up, within 2 mm): `A4`,
    /// `Letter`.
    pub fn name(&self) -> Option<&'static str> {
        const SIZES: &[(&str, f64, f64)] = &[
            ("A3", 297.0, 420.0),
            ("A4", 210.0, 297.0),
            ("A5", 148.0, 210.0),
            ("A6", 105.0, 148.0),
            ("B5", 176.0, 250.0),
            ("Letter", 215.9, 279.4),
            ("Legal", 215.9, 355.6),
            ("Tabloid", 279.4, 431.8),
        ];
        let (short, long) = {
            let (w, h) = (self.width_mm(), self.height_mm());
            if w <= h { (w, h) } else { (h, w) }
        };
        SIZES.iter().find(|(_, w, h)| (short - w).abs() <= 2.0 && (long - h).abs() <= 2.0).map(|(name, _, _)| *name)
    }

    /// Whether it is wider than tall.
    pub fn is_landscape(&self) -> bool {
        self.width_pt > self.height_pt
    }
}

/// How a PDF is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encryption {
    /// Not encrypted.
    None,
    /// Encrypted with an owner password only: it opens without one, with restrictions.
    OwnerPasswordOnly,
    /// It needs a password to open.
    UserPassword,
}

/// A font a PDF uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FontFact {
    /// Its name (`/BaseFont`), without a subset prefix (`ABCDEF+`).
    pub name: String,
    /// Whether the PDF carries the font's program.
    pub embedded: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_paper_sizes_are_named_either_way_up() {
        assert_eq!(PageSize { width_pt: 595.0, height_pt: 842.0 }.name(), Some("A4"));
        assert_eq!(PageSize { width_pt: 842.0, height_pt: 595.0 }.name(), Some("A4"));
        assert_eq!(PageSize { width_pt: 612.0, height_pt: 792.0 }.name(), Some("Letter"));
        assert_eq!(PageSize { width_pt: 500.0, height_pt: 500.0 }.name(), None);
        let a4 = PageSize { width_pt: 595.0, height_pt: 842.0 };
        assert!((a4.width_mm() - 210.0).abs() < 0.5, "{}", a4.width_mm());
    }
}
