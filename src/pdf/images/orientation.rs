//! An EXIF orientation applied by the page, not the pixels: the image stays as stored (a JPEG's
//! DCT bytes untouched), the page takes the shape it is seen in, and the content stream's `cm`
//! matrix turns and mirrors the image onto it.

use image::metadata::Orientation;

/// Whether the picture is seen on its side: the page is the stored image's height wide.
fn turned(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90 | Orientation::Rotate270 | Orientation::Rotate90FlipH | Orientation::Rotate270FlipH
    )
}

/// The page's size for an image drawn `stored` (width, height in points) as stored.
pub(super) fn page_size(orientation: Orientation, stored: (f64, f64)) -> (f64, f64) {
    if turned(orientation) { (stored.1, stored.0) } else { stored }
}

/// The `cm` matrix that draws the image (the unit square, its first row at the top) onto a page
/// of `width` × `height` points so that it is seen as `orientation` says: EXIF orientation 6
/// ("rotate 90° clockwise to view") puts the stored top row down the page's right edge, 5 and 7
/// also mirror it across a diagonal.
pub(super) fn matrix(orientation: Orientation, width: f64, height: f64) -> [f64; 6] {
    let (w, h) = (width, height);
    match orientation {
        Orientation::NoTransforms => [w, 0.0, 0.0, h, 0.0, 0.0],
        Orientation::FlipHorizontal => [-w, 0.0, 0.0, h, w, 0.0],
        Orientation::Rotate180 => [-w, 0.0, 0.0, -h, w, h],
        Orientation::FlipVertical => [w, 0.0, 0.0, -h, 0.0, h],
        // 5: transposed, the stored top-left corner stays where it is.
        Orientation::Rotate90FlipH => [0.0, -h, -w, 0.0, w, h],
        Orientation::Rotate90 => [0.0, -h, w, 0.0, 0.0, h],
        // 7: transposed across the other diagonal.
        Orientation::Rotate270FlipH => [0.0, h, w, 0.0, 0.0, 0.0],
        Orientation::Rotate270 => [0.0, h, -w, 0.0, w, 0.0],
    }
}
