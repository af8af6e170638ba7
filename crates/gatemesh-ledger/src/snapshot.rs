//! The form in which a node's store keeps its compacted document.
//!
//! automerge 0.12 saves a document by building it whole, copying it, and then compressing
//! its columns into a buffer it reserves at twice the uncompressed size
//! (`storage/document/compression.rs`): saving a 20,000-redemption ledger holds ~57 MB at
//! once for a 2.7 MB result, the largest single allocation a gate makes, and it grows with
//! the ledger. A gate compacts while it scans, so that peak is the gate's peak
//! (`BENCHMARKS.md`, "Where a gate's memory goes"). Here the document is saved without
//! automerge's compression and deflated in one pass whose output grows with what it writes:
//! the peak is the document twice, uncompressed, as automerge builds it, plus the result.
//!
//! The bytes are [`MAGIC`], the uncompressed length (8 bytes, little-endian) and a raw
//! DEFLATE stream of a document automerge saved uncompressed. A snapshot stored by an
//! earlier version (a document as `AutoCommit::save` makes it) opens as it is.

use automerge::{AutoCommit, SaveOptions};

use crate::LedgerError;

/// Starts every snapshot in this form; no automerge document starts so (theirs start
/// `85 6f 4a 83`).
const MAGIC: &[u8; 8] = b"gmsnap1\0";

/// Most bytes a snapshot may inflate to: a 100,000-redemption ledger is ~55 MB uncompressed.
const MOST_INFLATED: u64 = 4 << 30;

/// DEFLATE level: the fastest (the columns are run-length encoded already, and the level
/// costs the thread that saves, not the one that scans).
const LEVEL: u8 = 1;

/// `doc` in the store's form.
pub(crate) fn save(doc: &mut AutoCommit) -> Vec<u8> {
    let plain = doc.save_with_options(SaveOptions {
        deflate: false,
        retain_orphans: true,
    });
    let deflated = miniz_oxide::deflate::compress_to_vec(&plain, LEVEL);
    let mut out = Vec::with_capacity(MAGIC.len() + 8 + deflated.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(plain.len() as u64).to_le_bytes());
    drop(plain);
    out.extend_from_slice(&deflated);
    out
}

/// The document `bytes` hold, in the store's form or as automerge saved it.
pub(crate) fn load(bytes: &[u8]) -> Result<AutoCommit, LedgerError> {
    let corrupt = |what: &str| LedgerError::Corrupt(format!("the stored snapshot {what}"));
    let Some(rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
        return AutoCommit::load(bytes).map_err(|e| LedgerError::Corrupt(e.to_string()));
    };
    let (len, data) = rest
        .split_first_chunk::<8>()
        .ok_or_else(|| corrupt("is cut short"))?;
    let len = u64::from_le_bytes(*len);
    if len > MOST_INFLATED {
        return Err(LedgerError::TooLarge {
            what: "a stored snapshot".into(),
            bound: MOST_INFLATED as usize,
        });
    }
    let plain = inflate_exactly(data, len as usize)
        .ok_or_else(|| corrupt("does not inflate to the length it states (the file is damaged)"))?;
    AutoCommit::load(&plain).map_err(|e| LedgerError::Corrupt(e.to_string()))
}

/// `data` inflated into exactly `len` bytes, or `None` when it is not DEFLATE data of that
/// length (shorter, longer, or damaged).
fn inflate_exactly(data: &[u8], len: usize) -> Option<Vec<u8>> {
    use miniz_oxide::{
        DataFormat, MZFlush, MZStatus,
        inflate::stream::{InflateState, inflate},
    };
    let mut out = vec![0u8; len];
    let mut state = InflateState::new_boxed(DataFormat::Raw);
    let (mut input, mut written) = (data, 0usize);
    loop {
        let step = inflate(&mut state, input, &mut out[written..], MZFlush::None);
        input = &input[step.bytes_consumed..];
        written += step.bytes_written;
        match step.status {
            Ok(MZStatus::StreamEnd) => {
                return (written == len && input.is_empty()).then_some(out);
            }
            Ok(_) if step.bytes_consumed > 0 || step.bytes_written > 0 => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use automerge::{ROOT, transaction::Transactable};

    fn doc(n: usize) -> AutoCommit {
        let mut doc = AutoCommit::new();
        for i in 0..n {
            doc.put(ROOT, format!("k{i}"), format!("value {i} of a ledger"))
                .unwrap();
            doc.commit();
        }
        doc
    }

    #[test]
    fn a_snapshot_opens_as_the_document_it_saved() {
        let mut original = doc(500);
        let saved = save(&mut original);
        assert!(saved.starts_with(MAGIC));
        let mut opened = load(&saved).unwrap();
        assert_eq!(opened.get_heads(), original.get_heads());
        assert_eq!(opened.save(), original.save());
        // Deflated: smaller than the document saved without compression.
        let plain = original.save_with_options(SaveOptions {
            deflate: false,
            retain_orphans: true,
        });
        assert!(
            saved.len() < plain.len(),
            "{} >= {}",
            saved.len(),
            plain.len()
        );
    }

    #[test]
    fn a_snapshot_an_earlier_version_stored_still_opens() {
        let mut original = doc(50);
        let mut opened = load(&original.save()).unwrap();
        assert_eq!(opened.get_heads(), original.get_heads());
    }

    #[test]
    fn a_damaged_snapshot_is_refused_as_damaged() {
        let saved = save(&mut doc(200));
        let header = MAGIC.len() + 8;
        // Cut short, in the header and in the stream.
        for cut in [MAGIC.len() + 3, header + 10, saved.len() - 1] {
            assert!(
                matches!(load(&saved[..cut]), Err(LedgerError::Corrupt(_))),
                "cut at {cut}"
            );
        }
        // A length that is not the stream's, either way.
        for len in [1u64, 10_000_000] {
            let mut lying = saved.clone();
            lying[MAGIC.len()..header].copy_from_slice(&len.to_le_bytes());
            assert!(
                matches!(load(&lying), Err(LedgerError::Corrupt(_))),
                "{len}"
            );
        }
        // A length past the bound, refused before anything is inflated.
        let mut huge = saved.clone();
        huge[MAGIC.len()..header].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(load(&huge), Err(LedgerError::TooLarge { .. })));
        // Bytes flipped inside the stream.
        let mut flipped = saved.clone();
        for b in &mut flipped[header + 20..header + 60] {
            *b ^= 0x5a;
        }
        assert!(load(&flipped).is_err());
        // Trailing bytes after the stream.
        let mut trailing = saved;
        trailing.extend_from_slice(b"more");
        assert!(matches!(load(&trailing), Err(LedgerError::Corrupt(_))));
    }
}
