use miniz_oxide::deflate::compress_to_vec_zlib;
use pdf_writer::{Content, Filter, Finish, Name, Pdf, Rect, Ref, Str, TextStr};

use crate::Symbol;

/// What is printed beside a ticket's QR symbol.
#[derive(Debug, Clone, Copy)]
///
/// Printed in the standard PDF fonts: characters outside Latin-1 print as `?`, and long
/// texts are set smaller to fit the cell.
pub struct TicketLabel<'a> {
    /// The event's name or id, the cell's heading.
    pub event: &'a str,
    /// The seat label; `None` prints "General admission".
    pub seat: Option<&'a str>,
    /// The ticket id, in a monospaced font so staff can read it out.
    pub tid: &'a str,
    /// The format's name (`jwt`, `gm1`), printed in capitals.
    pub format: &'a str,
}

const A4: Rect = Rect {
    x1: 0.0,
    y1: 0.0,
    x2: 595.28,
    y2: 841.89,
};
const COLS: usize = 2;
const ROWS: usize = 4;
const PER_PAGE: usize = COLS * ROWS;
const PAD: f32 = 16.0;
const QR_SIDE: f32 = 150.0;

const FONT: Name<'static> = Name(b"F1");
const FONT_BOLD: Name<'static> = Name(b"F2");
const FONT_MONO: Name<'static> = Name(b"F3");

/// Lays tickets out on A4 pages, eight a page in a 2 × 4 grid with cut lines, and writes
/// the PDF. Symbols are embedded as 1-bit images, one pixel a module, so they print sharp
/// at any resolution and a sheet of 100,000 tickets stays in the tens of megabytes.
///
/// Tickets are added one at a time and only the finished PDF bytes are kept, so memory
/// grows with the output, not with the symbols.
pub struct SheetWriter {
    pdf: Pdf,
    next_ref: i32,
    pages: Vec<Ref>,
    page: Content,
    images: Vec<(Ref, usize)>,
}

impl std::fmt::Debug for SheetWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SheetWriter")
            .field("pages", &self.pages())
            .finish_non_exhaustive()
    }
}

impl SheetWriter {
    const CATALOG: Ref = Ref::new(1);
    const TREE: Ref = Ref::new(2);
    const INFO: Ref = Ref::new(3);
    const FONTS: [(Ref, Name<'static>, Name<'static>); 3] = [
        (Ref::new(4), FONT, Name(b"Helvetica")),
        (Ref::new(5), FONT_BOLD, Name(b"Helvetica-Bold")),
        (Ref::new(6), FONT_MONO, Name(b"Courier")),
    ];

    /// An empty sheet; `title` goes into the PDF's document information.
    pub fn new(title: &str) -> Self {
        let mut pdf = Pdf::new();
        pdf.document_info(Self::INFO)
            .title(TextStr(title))
            .creator(TextStr("gatemesh"));
        for (id, _, base) in Self::FONTS {
            pdf.type1_font(id)
                .base_font(base)
                .encoding_predefined(Name(b"WinAnsiEncoding"));
        }
        Self {
            pdf,
            next_ref: 7,
            pages: Vec::new(),
            page: Content::new(),
            images: Vec::new(),
        }
    }

    fn alloc(&mut self) -> Ref {
        let r = Ref::new(self.next_ref);
        self.next_ref += 1;
        r
    }

    /// Adds one ticket in the next free cell.
    pub fn add(&mut self, symbol: &Symbol, label: &TicketLabel<'_>) {
        let slot = self.images.len();
        let (col, row) = (slot % COLS, slot / COLS);
        let cell_w = A4.x2 / COLS as f32;
        let cell_h = A4.y2 / ROWS as f32;
        let (x0, y0) = (col as f32 * cell_w, A4.y2 - (row + 1) as f32 * cell_h);

        let image = self.alloc();
        let (side, rows) = symbol.bitmap(1);
        let samples = compress_to_vec_zlib(&rows, 6);
        let mut xo = self.pdf.image_xobject(image, &samples);
        xo.filter(Filter::FlateDecode);
        xo.width(side as i32);
        xo.height(side as i32);
        xo.color_space().device_gray();
        xo.bits_per_component(1);
        xo.interpolate(false);
        xo.finish();
        self.images.push((image, slot));

        let c = &mut self.page;
        // Cut line around the cell.
        c.save_state();
        c.set_stroke_gray(0.75);
        c.set_line_width(0.4);
        c.set_dash_pattern([3.0, 3.0], 0.0);
        c.rect(x0, y0, cell_w, cell_h);
        c.stroke();
        c.restore_state();

        let qr_y = y0 + (cell_h - QR_SIDE) / 2.0;
        c.save_state();
        c.transform([QR_SIDE, 0.0, 0.0, QR_SIDE, x0 + PAD, qr_y]);
        c.x_object(Name(format!("Im{slot}").as_bytes()));
        c.restore_state();

        let tx = x0 + PAD + QR_SIDE + 8.0;
        let text_w = cell_w - (tx - x0) - PAD / 2.0;
        let format_line = format!("{} · one entry · do not share", label.format.to_uppercase());
        // (space before, font, size, grey, text)
        let lines = [
            (0.0, FONT_BOLD, 11.0, 0.0, label.event),
            (10.0, FONT, 7.0, 0.4, "SEAT"),
            (
                0.0,
                FONT_BOLD,
                18.0,
                0.0,
                label.seat.unwrap_or("General admission"),
            ),
            (6.0, FONT, 7.0, 0.4, "TICKET"),
            (0.0, FONT_MONO, 9.0, 0.0, label.tid),
            (6.0, FONT, 6.5, 0.4, format_line.as_str()),
        ];
        let mut y = y0 + cell_h - PAD;
        for (gap, font, size, gray, text) in lines {
            let size = fit(text, size, text_w);
            y -= gap + size + 4.0;
            c.begin_text();
            c.set_fill_gray(gray);
            c.set_font(font, size);
            c.next_line(tx, y);
            c.show(Str(&win_ansi(text)));
            c.end_text();
        }

        if self.images.len() == PER_PAGE {
            self.flush_page();
        }
    }

    fn flush_page(&mut self) {
        if self.images.is_empty() {
            return;
        }
        let (page, content) = (self.alloc(), self.alloc());
        let data = std::mem::replace(&mut self.page, Content::new()).finish();
        let data = compress_to_vec_zlib(&data, 6);
        self.pdf.stream(content, &data).filter(Filter::FlateDecode);
        let mut p = self.pdf.page(page);
        p.media_box(A4);
        p.parent(Self::TREE);
        p.contents(content);
        let mut res = p.resources();
        {
            let mut xobjects = res.x_objects();
            for (image, slot) in &self.images {
                xobjects.pair(Name(format!("Im{slot}").as_bytes()), *image);
            }
        }
        {
            let mut fonts = res.fonts();
            for (id, name, _) in Self::FONTS {
                fonts.pair(name, id);
            }
        }
        res.finish();
        p.finish();
        self.pages.push(page);
        self.images.clear();
    }

    /// Pages so far, the one being filled included.
    pub fn pages(&self) -> usize {
        self.pages.len() + usize::from(!self.images.is_empty())
    }

    /// The PDF bytes; a sheet with no ticket is one blank page.
    pub fn finish(mut self) -> Vec<u8> {
        self.flush_page();
        if self.pages.is_empty() {
            // A PDF needs at least one page; an empty batch prints a blank one.
            let page = self.alloc();
            self.pdf.page(page).media_box(A4).parent(Self::TREE);
            self.pages.push(page);
        }
        self.pdf.catalog(Self::CATALOG).pages(Self::TREE);
        let count = self.pages.len() as i32;
        self.pdf
            .pages(Self::TREE)
            .kids(self.pages.iter().copied())
            .count(count);
        self.pdf.finish()
    }
}

/// Shrinks a font size until `text` fits `width` points, judged by Helvetica's average
/// glyph width; Type 1 base fonts carry no metrics we could measure exactly without
/// embedding AFM tables.
fn fit(text: &str, size: f32, width: f32) -> f32 {
    let n = text.chars().count().max(1) as f32;
    size.min(width / (0.56 * n)).max(5.0)
}

/// WinAnsi bytes for the standard fonts: Latin-1 maps through, anything else prints `?`.
fn win_ansi(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match c as u32 {
            0x20..=0x7e | 0xa0..=0xff => c as u32 as u8,
            _ => b'?',
        })
        .collect()
}
