//! Camera frames from the scan screen: 8 bytes (width, height as little-endian u32), then
//! one luma byte per pixel. Decoded here so the shell stays a pass-through.

use crate::DeskError;

/// The widest and tallest frame taken.
pub const MAX_FRAME_SIDE: u32 = 4096;

/// The QR texts found in a frame.
pub fn decode_frame(bytes: &[u8]) -> Result<Vec<String>, DeskError> {
    let (head, luma) = bytes
        .split_first_chunk::<8>()
        .ok_or_else(|| DeskError::BadInput("a frame needs its size".into()))?;
    let w = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let h = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if u64::from(w) * u64::from(h) != luma.len() as u64
        || w == 0
        || w > MAX_FRAME_SIDE
        || h > MAX_FRAME_SIDE
    {
        return Err(DeskError::BadInput(
            "the frame's size does not match its pixels".into(),
        ));
    }
    Ok(gatemesh_qr::decode_luma(luma, w, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    fn frame(w: u32, h: u32, luma: &[u8]) -> Vec<u8> {
        [&w.to_le_bytes()[..], &h.to_le_bytes(), luma].concat()
    }

    #[test]
    fn a_blank_frame_has_no_codes_and_a_bad_one_is_refused() {
        assert_eq!(
            decode_frame(&frame(4, 2, &[255; 8])).unwrap(),
            Vec::<String>::new()
        );
        for bad in [
            vec![1, 2, 3],
            frame(4, 2, &[255; 7]),
            frame(0, 0, &[]),
            frame(5000, 1, &[255; 5000]),
        ] {
            assert_eq!(decode_frame(&bad).unwrap_err().code(), ErrorCode::BadInput);
        }
    }
}
