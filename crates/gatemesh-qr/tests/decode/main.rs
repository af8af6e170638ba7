//! Reading codes back from hard images: every image under `testdata/` with a `.txt` beside it
//! must decode to exactly that text.

use std::path::Path;

use gatemesh_qr::{Symbol, decode_image, decode_luma};

#[test]
fn every_hard_image_reads_back_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut checked = 0;
    let mut failures = Vec::new();
    for set in std::fs::read_dir(&root).unwrap() {
        let set = set.unwrap().path();
        if !set.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&set).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !matches!(ext, "png" | "jpg") {
                continue;
            }
            let expected = std::fs::read_to_string(path.with_extension("txt")).unwrap();
            let found = decode_image(&std::fs::read(&path).unwrap()).unwrap();
            if !found.contains(&expected) {
                failures.push(format!("{}: found {found:?}", path.display()));
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 64,
        "only {checked} images found under {}",
        root.display()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} not read:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn our_own_png_reads_back() {
    let text = "GM1:THIS IS A TEST $%*+-./:0123456789";
    let png = Symbol::encode(text).unwrap().to_png(3);
    assert_eq!(decode_image(&png).unwrap(), vec![text.to_owned()]);
}

#[test]
fn several_codes_in_one_image_are_all_found() {
    // Four symbols side by side on one white canvas, as on a printed sheet.
    let texts = ["GM1:ONE", "GM1:TWO", "GM1:THREE", "GM1:FOUR"];
    let scale = 4;
    let cell = 200;
    let (w, h) = (cell * 2, cell * 2);
    let mut px = vec![255u8; w * h];
    for (i, text) in texts.iter().enumerate() {
        let s = Symbol::encode(text).unwrap();
        let (ox, oy) = ((i % 2) * cell + 30, (i / 2) * cell + 30);
        for y in 0..s.width() * scale {
            for x in 0..s.width() * scale {
                if s.is_dark(x / scale, y / scale) {
                    px[(oy + y) * w + ox + x] = 0;
                }
            }
        }
    }
    let mut found = decode_luma(&px, w as u32, h as u32);
    found.sort();
    let mut want: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    want.sort();
    assert_eq!(found, want);
}
