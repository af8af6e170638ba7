use fast_qr::{ECL, QRBuilder};

/// A text that cannot become a QR symbol.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QrError {
    /// The text is longer than a version 40 symbol holds at level M.
    #[error("{len} bytes do not fit in any QR symbol at error-correction level M")]
    TooLong {
        /// The text's length in bytes.
        len: usize,
    },
}

/// Light modules around the symbol, as ISO/IEC 18004 requires for reliable reading.
pub const QUIET_ZONE: usize = 4;

/// One QR symbol: a square of dark and light modules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    version: u8,
    width: usize,
    dark: Vec<bool>,
}

impl Symbol {
    /// Encodes `text` at error-correction level M in the smallest version that holds it.
    /// Text made only of the QR alphanumeric characters (GM1 codes) uses alphanumeric mode.
    pub fn encode(text: &str) -> Result<Self, QrError> {
        // fast_qr, not the older qrcode crate: ten times faster (about 0.1 ms for a GM1
        // symbol against 1 ms), which is most of the cost of printing a large batch.
        let code = QRBuilder::new(text.as_bytes())
            .ecl(ECL::M)
            .build()
            .map_err(|_| QrError::TooLong { len: text.len() })?;
        let width = code.size;
        let dark = code.data[..width * width]
            .iter()
            .map(|m| m.value())
            .collect();
        Ok(Self {
            version: ((width - 17) / 4) as u8,
            width,
            dark,
        })
    }

    /// The QR version, 1 (21×21 modules) to 40 (177×177).
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Modules on a side, without the quiet zone.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Whether the module at column `x`, row `y` (from the top left, quiet zone excluded) is
    /// dark; outside the symbol, `false`.
    pub fn is_dark(&self, x: usize, y: usize) -> bool {
        x < self.width && y < self.width && self.dark[y * self.width + x]
    }

    /// Rows of 1-bit pixels, `scale` pixels a module, quiet zone included, each row padded
    /// to whole bytes, 0 for dark: the sample layout of both a 1-bit grey PNG and a PDF
    /// DeviceGray image.
    pub(crate) fn bitmap(&self, scale: usize) -> (usize, Vec<u8>) {
        let side = (self.width + 2 * QUIET_ZONE) * scale;
        let stride = side.div_ceil(8);
        let mut rows = vec![0xffu8; stride * side];
        let mut line = vec![0xffu8; stride];
        for y in 0..self.width {
            // Draw one pixel row of this module row, then repeat it `scale` times.
            line.fill(0xff);
            for x in (0..self.width).filter(|&x| self.is_dark(x, y)) {
                for col in (QUIET_ZONE + x) * scale..(QUIET_ZONE + x + 1) * scale {
                    line[col / 8] &= !(0x80 >> (col % 8));
                }
            }
            let first = (QUIET_ZONE + y) * scale;
            for row in first..first + scale {
                rows[row * stride..(row + 1) * stride].copy_from_slice(&line);
            }
        }
        (side, rows)
    }

    /// A 1-bit greyscale PNG, `module_px` pixels a module, with the quiet zone.
    pub fn to_png(&self, module_px: u32) -> Vec<u8> {
        let (side, rows) = self.bitmap(module_px.max(1) as usize);
        let mut out = Vec::with_capacity(rows.len() / 4 + 128);
        let mut encoder = png::Encoder::new(&mut out, side as u32, side as u32);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::One);
        // Rows repeat `module_px` times, which the Up filter turns into zeros; fast
        // compression then gets within a few percent of the best at a fraction of the time.
        encoder.set_filter(png::FilterType::Up);
        encoder.set_compression(png::Compression::Fast);
        // Writing a well-formed image into a Vec cannot fail.
        if let Ok(mut writer) = encoder.write_header() {
            let _ = writer
                .write_image_data(&rows)
                .and_then(|()| writer.finish());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_marks_finder_corner_dark() {
        let s = Symbol::encode("HELLO").unwrap();
        assert_eq!(s.version(), 1);
        let (side, rows) = s.bitmap(1);
        assert_eq!(side, 21 + 8);
        let stride = side.div_ceil(8);
        let bit = |x: usize, y: usize| rows[y * stride + x / 8] & (0x80 >> (x % 8)) != 0;
        assert!(bit(0, 0), "quiet zone is light");
        assert!(!bit(4, 4), "finder pattern corner is dark");
    }

    #[test]
    fn too_long_is_an_error() {
        assert!(matches!(
            Symbol::encode(&"x".repeat(5000)),
            Err(QrError::TooLong { .. })
        ));
    }
}
