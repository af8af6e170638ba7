//! QR symbols for gatemesh tickets: render a code to a symbol, a PNG and a printable PDF
//! sheet, and read codes back from images (photos of printed or on-screen tickets).
//!
//! Every symbol uses error-correction level M (15% of the symbol may be damaged), the usual
//! trade-off for printed tickets and phone screens. Rendering is pure: bytes in, bytes out.
//!
//! ```
//! use gatemesh_qr::{SheetWriter, Symbol, TicketLabel};
//!
//! let symbol = Symbol::encode("GM1:EXAMPLE").unwrap();
//! assert!(symbol.version() <= 2);
//! let png: Vec<u8> = symbol.to_png(8);
//! assert!(png.starts_with(b"\x89PNG"));
//!
//! let mut sheet = SheetWriter::new("Example event");
//! sheet.add(&symbol, &TicketLabel { event: "ROCK-2026", seat: Some("A-12"), tid: "0ABC", format: "gm1" });
//! let pdf: Vec<u8> = sheet.finish();
//! assert!(pdf.starts_with(b"%PDF"));
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs)]

mod decode;
mod sheet;
mod symbol;

pub use decode::{DecodeError, decode_image, decode_luma};
pub use sheet::{SheetWriter, TicketLabel};
pub use symbol::{QrError, Symbol};
