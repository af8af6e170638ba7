//! Compressed bombs for the ledger's inflation bound: automerge chunks, well formed down to
//! their checksums, whose compressed parts inflate to `inflated` bytes of zeros. Their
//! operations make no sense once inflated; a node must refuse them before it gets there.

use sha2::{Digest, Sha256};

const MAGIC: [u8; 4] = [0x85, 0x6f, 0x4a, 0x83];
const DOCUMENT: u8 = 0;
const COMPRESSED: u8 = 2;
const DEFLATE_COLUMN: u64 = 0b1000;

fn leb(mut value: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        out.push(if value == 0 { byte } else { byte | 0x80 });
        if value == 0 {
            return;
        }
    }
}

fn read_leb(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut value, mut shift) = (0u64, 0);
    loop {
        let b = bytes[*at];
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return value;
        }
    }
}

/// Raw DEFLATE of `inflated` zero bytes (about a thousandth of that).
pub fn deflated_zeros(inflated: usize) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec(&vec![0u8; inflated], 6)
}

/// A chunk of `kind` around `body`, with the checksum automerge computes.
fn chunk(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut hashed = vec![kind];
    leb(body.len() as u64, &mut hashed);
    hashed.extend(body);
    let checksum = Sha256::digest(&hashed);
    let mut out = MAGIC.to_vec();
    out.extend(&checksum[..4]);
    out.extend(hashed);
    out
}

/// A compressed change chunk (type 2) whose body inflates to `inflated` bytes.
pub fn compressed_change(inflated: usize) -> Vec<u8> {
    chunk(COMPRESSED, &deflated_zeros(inflated))
}

/// `saved` (a document as automerge saves it: one document chunk) with its largest column
/// replaced by a DEFLATE column that inflates to `inflated` bytes: a ledger file, or the
/// whole-document chunk of a sync message, that looks like any other.
pub fn document(saved: &[u8], inflated: usize) -> Vec<u8> {
    assert_eq!(saved[..4], MAGIC, "not an automerge chunk");
    assert_eq!(saved[8], DOCUMENT, "not a document chunk");
    let mut at = 9;
    let len = read_leb(saved, &mut at) as usize;
    let body = &saved[at..at + len];
    assert_eq!(at + len, saved.len(), "more than one chunk");
    // actors, heads: kept as they are
    let mut at = 0;
    for _ in 0..read_leb(body, &mut at) {
        let n = read_leb(body, &mut at) as usize;
        at += n;
    }
    let heads = read_leb(body, &mut at) as usize;
    at += heads * 32;
    let prefix = &body[..at];
    let mut groups: Vec<Vec<(u64, usize)>> = Vec::new();
    for _ in 0..2 {
        let n = read_leb(body, &mut at);
        groups.push(
            (0..n)
                .map(|_| (read_leb(body, &mut at), read_leb(body, &mut at) as usize))
                .collect(),
        );
    }
    let mut data: Vec<Vec<&[u8]>> = Vec::new();
    for group in &groups {
        data.push(
            group
                .iter()
                .map(|&(_, len)| {
                    let d = &body[at..at + len];
                    at += len;
                    d
                })
                .collect(),
        );
    }
    let suffix = &body[at..];
    // The largest column of all becomes the bomb.
    let (g, c) = (0..2)
        .flat_map(|g| (0..groups[g].len()).map(move |c| (g, c)))
        .max_by_key(|&(g, c)| groups[g][c].1)
        .expect("a document with columns");
    let bomb = deflated_zeros(inflated);
    groups[g][c] = (groups[g][c].0 | DEFLATE_COLUMN, bomb.len());
    data[g][c] = &bomb;
    let mut out = prefix.to_vec();
    for group in &groups {
        leb(group.len() as u64, &mut out);
        for &(spec, len) in group {
            leb(spec, &mut out);
            leb(len as u64, &mut out);
        }
    }
    for group in &data {
        for d in group {
            out.extend(*d);
        }
    }
    out.extend(suffix);
    chunk(DOCUMENT, &out)
}
