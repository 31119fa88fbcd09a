//! How large each image is drawn, in points: the page contents (and the forms they draw) walked
//! with their transformation matrices, an image's largest drawing kept, and an image named but
//! not seen drawn taken to fill its page.

use std::collections::HashMap;

use lopdf::{Dictionary, Document, Object, ObjectId};

use crate::pdf::{PdfError, content};

/// How deep forms drawn inside forms are followed.
const MAX_FORM_DEPTH: usize = 8;

/// The size an image is drawn at, in points: (width, height).
pub(super) type Drawn = (f64, f64);

/// The largest size each image XObject is drawn at, over all pages.
pub(super) fn drawn_sizes(document: &Document, max_inflate: usize) -> Result<HashMap<ObjectId, Drawn>, PdfError> {
    let mut drawn: HashMap<ObjectId, Drawn> = HashMap::new();
    for page in document.page_iter() {
        let page_size = media_box(document, page);
        let resources = page_resources(document, page);
        let content = match content::page(document, page, max_inflate) {
            Ok(content) => content,
            Err(error @ PdfError::InflatesTooMuch { .. }) => return Err(error),
            Err(_) => Vec::new(),
        };
        let mut walk = Walk { document, max_inflate, drawn: &mut drawn, page_size };
        walk.content(&content, &resources, IDENTITY, 0)?;
    }
    Ok(drawn)
}

type Matrix = [f64; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `m` then `n`: the matrix of `cm n` applied under a current matrix `m` is `n × m`.
fn multiply(n: Matrix, m: Matrix) -> Matrix {
    [
        n[0] * m[0] + n[1] * m[2],
        n[0] * m[1] + n[1] * m[3],
        n[2] * m[0] + n[3] * m[2],
        n[2] * m[1] + n[3] * m[3],
        n[4] * m[0] + n[5] * m[2] + m[4],
        n[4] * m[1] + n[5] * m[3] + m[5],
    ]
}

struct Walk<'a, 'd> {
    document: &'d Document,
    max_inflate: usize,
    drawn: &'a mut HashMap<ObjectId, Drawn>,
    page_size: Drawn,
}

impl Walk<'_, '_> {
    fn record(&mut self, id: ObjectId, size: Drawn) {
        let entry = self.drawn.entry(id).or_insert((0.0, 0.0));
        *entry = (entry.0.max(size.0), entry.1.max(size.1));
    }

    /// Follows one content stream under `resources` with `ctm` as its starting matrix.
    fn content(
        &mut self,
        content: &[u8],
        resources: &[&Dictionary],
        ctm: Matrix,
        depth: usize,
    ) -> Result<(), PdfError> {
        let xobjects = xobjects(self.document, resources);
        let mut drawn_here = std::collections::HashSet::new();
        let operations = content::all_operations(content);
        let mut stack = Vec::new();
        let mut current = ctm;
        for operation in &operations {
            match operation.operator.as_str() {
                "q" => stack.push(current),
                "Q" => current = stack.pop().unwrap_or(ctm),
                "cm" => {
                    let numbers: Vec<f64> = operation.operands.iter().filter_map(number).collect();
                    if let Ok(n) = <[f64; 6]>::try_from(numbers) {
                        current = multiply(n, current);
                    }
                }
                "Do" => {
                    let Some(Ok(name)) = operation.operands.first().map(Object::as_name) else { continue };
                    let Some(&(id, kind)) = xobjects.get(name) else { continue };
                    match kind {
                        XObject::Image => {
                            let size = (current[0].hypot(current[1]), current[2].hypot(current[3]));
                            // A drawing smaller than a point is a trick, not a picture: it says
                            // nothing about the resolution the image needs.
                            if size.0 >= 1.0 && size.1 >= 1.0 {
                                self.record(id, size);
                                drawn_here.insert(id);
                            }
                        }
                        XObject::Form if depth < MAX_FORM_DEPTH => self.form(id, current, resources, depth)?,
                        XObject::Form => {}
                    }
                }
                _ => {}
            }
        }
        // Named but not seen drawn (unparsable content, or a trick): as if it filled the page.
        for &(id, kind) in xobjects.values() {
            if kind == XObject::Image && !drawn_here.contains(&id) && !self.drawn.contains_key(&id) {
                self.record(id, self.page_size);
            }
        }
        Ok(())
    }

    fn form(&mut self, id: ObjectId, ctm: Matrix, outer: &[&Dictionary], depth: usize) -> Result<(), PdfError> {
        let Ok(form) = self.document.get_object(id).and_then(Object::as_stream) else { return Ok(()) };
        let matrix = form
            .dict
            .get(b"Matrix")
            .and_then(Object::as_array)
            .ok()
            .and_then(|m| <[f64; 6]>::try_from(m.iter().filter_map(number).collect::<Vec<_>>()).ok())
            .unwrap_or(IDENTITY);
        let Some(content) = content::form(form, self.max_inflate)? else { return Ok(()) };
        // A form without resources of its own uses its page's (an old, still common habit).
        let resources = match dictionary(self.document, form.dict.get(b"Resources").ok()) {
            Some(own) => vec![own],
            None => outer.to_vec(),
        };
        self.content(&content, &resources, multiply(matrix, ctm), depth + 1)
    }
}

/// What an XObject is, of the kinds the walk follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum XObject {
    /// An image: its drawings are measured.
    Image,
    /// A form: its content is walked in turn.
    Form,
}

fn number(object: &Object) -> Option<f64> {
    match object {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

fn dictionary<'d>(document: &'d Document, object: Option<&'d Object>) -> Option<&'d Dictionary> {
    match object? {
        Object::Dictionary(dict) => Some(dict),
        Object::Reference(id) => document.get_dictionary(*id).ok(),
        _ => None,
    }
}

/// The page's resource dictionaries, nearest first.
pub(super) fn page_resources(document: &Document, page: ObjectId) -> Vec<&Dictionary> {
    let Ok((direct, ids)) = document.get_page_resources(page) else { return Vec::new() };
    direct.into_iter().chain(ids.into_iter().filter_map(|id| document.get_dictionary(id).ok())).collect()
}

/// The image and form XObjects `resources` name, each by its first name.
pub(super) fn xobjects<'d>(
    document: &'d Document,
    resources: &[&'d Dictionary],
) -> HashMap<&'d [u8], (ObjectId, XObject)> {
    let mut found = HashMap::new();
    for resources in resources {
        let Some(xobjects) = dictionary(document, resources.get(b"XObject").ok()) else { continue };
        for (name, value) in xobjects.iter() {
            let Ok(id) = value.as_reference() else { continue };
            let Ok(stream) = document.get_object(id).and_then(Object::as_stream) else { continue };
            let kind = match stream.dict.get(b"Subtype").and_then(Object::as_name) {
                Ok(b"Image") => XObject::Image,
                Ok(b"Form") => XObject::Form,
                _ => continue,
            };
            found.entry(name.as_slice()).or_insert((id, kind));
        }
    }
    found
}

/// The page's MediaBox size in points (inherited from the page tree), or US Letter.
fn media_box(document: &Document, page: ObjectId) -> Drawn {
    let mut node = document.get_dictionary(page).ok();
    for _ in 0..32 {
        let Some(dict) = node else { break };
        if let Ok(Object::Array(corners)) = dict.get(b"MediaBox").and_then(|b| document.dereference(b)).map(|(_, b)| b)
        {
            let n: Vec<f64> = corners.iter().filter_map(number).collect();
            if let [x0, y0, x1, y1] = n[..] {
                return ((x1 - x0).abs().max(1.0), (y1 - y0).abs().max(1.0));
            }
        }
        node = dict.get(b"Parent").and_then(Object::as_reference).and_then(|id| document.get_dictionary(id)).ok();
    }
    (612.0, 792.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drawn_size_follows_the_matrices() {
        // Drawn at half the page inside a form scaled by 2: the full page after all.
        let m = multiply([2.0, 0.0, 0.0, 2.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.5, 10.0, 10.0]);
        assert_eq!(m, [1.0, 0.0, 0.0, 1.0, 10.0, 10.0]);
        // A rotated drawing keeps its axes' lengths.
        let rotated: Matrix = [0.0, 300.0, -200.0, 0.0, 0.0, 0.0];
        assert_eq!((rotated[0_usize].hypot(rotated[1]), rotated[2_usize].hypot(rotated[3])), (300.0, 200.0));
    }
}
