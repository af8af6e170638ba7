//! Reading QR codes from images.
//!
//! The decoder is rxing (a Rust port of ZXing), chosen by measurement: on 384 test images
//! (rotated, scaled to 1.5 px a module, blurred, noisy, shadowed, low-contrast, in
//! perspective, JPEG-compressed, photographed off a screen, on a busy background) the ladder
//! below read every one, against 348 for zbar, 276 for bardecoder and 272 for rqrr. The
//! image set and the numbers are in `testdata/hard-eval/README.md`.

use std::collections::HashSet;

use image::ImageReader;
use rxing::{BarcodeFormat, DecodeHintValue, DecodeHints, RXingResult};

/// Images larger than this are refused rather than decoded: a 12-megapixel phone photo is
/// 12 M; 64 M pixels keeps a hostile file from taking gigabytes.
pub const MAX_PIXELS: u64 = 64 * 1024 * 1024;

/// An image that cannot be read. An image without any QR code is not an error: it reads as
/// no codes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not an image of a format we read, or a damaged one.
    #[error("not a PNG or JPEG image")]
    Format(#[source] image::ImageError),
    /// Over 64 M pixels, refused from its header before it is decoded.
    #[error("the image is {width}×{height}; at most {MAX_PIXELS} pixels are read")]
    TooLarge {
        /// Width in pixels, as the header says.
        width: u32,
        /// Height in pixels, as the header says.
        height: u32,
    },
}

/// Every QR code text found in a PNG or JPEG image, each once, in the order found.
pub fn decode_image(bytes: &[u8]) -> Result<Vec<String>, DecodeError> {
    let reader = ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| DecodeError::Format(image::ImageError::IoError(e)))?;
    let (width, height) = reader.into_dimensions().map_err(DecodeError::Format)?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(DecodeError::TooLarge { width, height });
    }
    let reader = ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| DecodeError::Format(image::ImageError::IoError(e)))?;
    let luma = reader.decode().map_err(DecodeError::Format)?.to_luma8();
    let (w, h) = luma.dimensions();
    Ok(decode_luma(luma.as_raw(), w, h))
}

fn hints() -> DecodeHints {
    DecodeHints::default()
        .with(DecodeHintValue::PossibleFormats(HashSet::from([
            BarcodeFormat::QR_CODE,
        ])))
        .with(DecodeHintValue::TryHarder(true))
}

/// Every QR code text found in an 8-bit greyscale image of `width` × `height` pixels.
///
/// A ladder of attempts, stopping at the first that finds anything: all codes in the image
/// as it is; then a single code after a contrast stretch (rxing's binariser misses codes
/// printed grey on grey); at half size (moiré from photographing a screen averages out);
/// and with rxing's own filtered multi-scale pass (codes of about 1.5 px a module).
pub fn decode_luma(px: &[u8], width: u32, height: u32) -> Vec<String> {
    if width == 0 || height == 0 || px.len() != width as usize * height as usize {
        return Vec::new();
    }
    let q = Some(BarcodeFormat::QR_CODE);
    let texts = |results: Vec<RXingResult>| {
        let mut seen = HashSet::new();
        results
            .into_iter()
            .map(|r| r.getText().to_owned())
            .filter(|t| seen.insert(t.clone()))
            .collect::<Vec<_>>()
    };
    if let Ok(found) =
        rxing::helpers::detect_multiple_in_luma_with_hints(px.to_vec(), width, height, &mut hints())
        && !found.is_empty()
    {
        return texts(found);
    }
    let attempts: [&dyn Fn() -> Option<RXingResult>; 3] = [
        &|| {
            rxing::helpers::detect_in_luma_with_hints(stretch(px), width, height, q, &mut hints())
                .ok()
        },
        &|| {
            let (half, w, h) = halve(px, width, height);
            rxing::helpers::detect_in_luma_with_hints(half, w, h, q, &mut hints()).ok()
        },
        &|| {
            rxing::helpers::detect_in_luma_filtered_with_hints(
                px.to_vec(),
                width,
                height,
                q,
                &mut hints(),
            )
            .ok()
        },
    ];
    attempts
        .iter()
        .find_map(|attempt| attempt())
        .map(|r| texts(vec![r]))
        .unwrap_or_default()
}

/// Linear contrast stretch from the 1st to the 99th percentile of brightness to 0..255.
fn stretch(px: &[u8]) -> Vec<u8> {
    let mut hist = [0usize; 256];
    for &p in px {
        hist[usize::from(p)] += 1;
    }
    let cut = px.len().div_ceil(100);
    let percentile = |order: &mut dyn Iterator<Item = usize>| {
        let mut acc = 0;
        for i in order {
            acc += hist[i];
            if acc >= cut {
                return i;
            }
        }
        0
    };
    let lo = percentile(&mut (0..256));
    let hi = percentile(&mut (0..256).rev());
    if hi <= lo {
        return px.to_vec();
    }
    let span = (hi - lo) as f32;
    px.iter()
        .map(|&p| ((f32::from(p) - lo as f32) / span * 255.0).clamp(0.0, 255.0) as u8)
        .collect()
}

/// Box-filters the image to half its size.
fn halve(px: &[u8], width: u32, height: u32) -> (Vec<u8>, u32, u32) {
    let (w, h) = ((width / 2) as usize, (height / 2) as usize);
    let stride = width as usize;
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let at = |dx: usize, dy: usize| u32::from(px[(2 * y + dy) * stride + 2 * x + dx]);
            out.push(((at(0, 0) + at(1, 0) + at(0, 1) + at(1, 1) + 2) / 4) as u8);
        }
    }
    (out, w as u32, h as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_input_finds_nothing() {
        assert!(decode_luma(&[], 0, 0).is_empty());
        assert!(decode_luma(&[0; 10], 5, 5).is_empty());
        assert!(decode_luma(&[255; 100 * 100], 100, 100).is_empty());
    }

    #[test]
    fn garbage_files_are_errors() {
        assert!(matches!(
            decode_image(b"not an image"),
            Err(DecodeError::Format(_))
        ));
        assert!(decode_image(b"\x89PNG\r\n\x1a\n garbage").is_err());
    }

    #[test]
    fn stretch_spans_full_range() {
        let px: Vec<u8> = (0..1000).map(|i| 100 + (i % 50) as u8).collect();
        let s = stretch(&px);
        assert_eq!(*s.iter().min().unwrap(), 0);
        assert_eq!(*s.iter().max().unwrap(), 255);
    }
}
