//! The frame layer (RFC 6455 §5.2): header decoding with every check that
//! needs no session context, header encoding for server frames, masking.

use super::Fail;
use crate::close::CloseCode;

pub(crate) const OP_CONTINUATION: u8 = 0x0;
pub(crate) const OP_TEXT: u8 = 0x1;
pub(crate) const OP_BINARY: u8 = 0x2;
pub(crate) const OP_CLOSE: u8 = 0x8;
pub(crate) const OP_PING: u8 = 0x9;
pub(crate) const OP_PONG: u8 = 0xA;

/// Control frames carry at most 125 payload bytes (§5.5).
pub(crate) const MAX_CONTROL_PAYLOAD: usize = 125;
/// A server frame's header: 2 bytes plus an 8-byte length, no mask.
pub(crate) const MAX_SERVER_HEADER: usize = 10;

const FIN: u8 = 0x80;
const RSV1: u8 = 0x40;
const RSV23: u8 = 0x30;
const MASK: u8 = 0x80;

/// A decoded client frame header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    pub fin: bool,
    pub rsv1: bool,
    pub opcode: u8,
    pub mask: [u8; 4],
    pub len: u64,
    /// Bytes the header took on the wire.
    pub size: usize,
}

impl Header {
    pub fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }
}

fn protocol(reason: &'static str) -> Fail {
    Fail {
        code: CloseCode::PROTOCOL_ERROR,
        reason,
    }
}

/// Decode a header from the start of `buf`: `Ok(None)` until all of it is
/// there. Each rule is checked as soon as the byte it is about has arrived.
/// A payload length in a longer encoding than it needs is refused (RFC 6455
/// §5.2: "the minimal number of bytes MUST be used to encode the length").
pub(crate) fn parse_header(buf: &[u8]) -> Result<Option<Header>, Fail> {
    let Some(&b0) = buf.first() else {
        return Ok(None);
    };
    if b0 & RSV23 != 0 {
        return Err(protocol("reserved bits RSV2/RSV3 set"));
    }
    let opcode = b0 & 0x0F;
    let fin = b0 & FIN != 0;
    match opcode {
        OP_CONTINUATION | OP_TEXT | OP_BINARY => {}
        OP_CLOSE | OP_PING | OP_PONG => {
            if !fin {
                return Err(protocol("fragmented control frame"));
            }
        }
        _ => return Err(protocol("unknown opcode")),
    }
    let Some(&b1) = buf.get(1) else {
        return Ok(None);
    };
    if b1 & MASK == 0 {
        return Err(protocol("client frame not masked"));
    }
    let short = b1 & 0x7F;
    if opcode & 0x8 != 0 && usize::from(short) > MAX_CONTROL_PAYLOAD {
        return Err(protocol("control frame payload over 125 bytes"));
    }
    let (len, at) = match short {
        126 => match buf.get(2..4) {
            Some(b) => match u16::from_be_bytes([b[0], b[1]]) {
                n if n < 126 => return Err(protocol("payload length not minimally encoded")),
                n => (u64::from(n), 4),
            },
            None => return Ok(None),
        },
        127 => {
            if buf.len() > 2 && buf[2] & 0x80 != 0 {
                return Err(protocol("64-bit payload length with the top bit set"));
            }
            match buf.get(2..10) {
                Some(b) => {
                    match u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) {
                        n if n <= u64::from(u16::MAX) => {
                            return Err(protocol("payload length not minimally encoded"))
                        }
                        n => (n, 10),
                    }
                }
                None => return Ok(None),
            }
        }
        n => (u64::from(n), 2),
    };
    let Some(m) = buf.get(at..at + 4) else {
        return Ok(None);
    };
    Ok(Some(Header {
        fin,
        rsv1: b0 & RSV1 != 0,
        opcode,
        mask: [m[0], m[1], m[2], m[3]],
        len,
        size: at + 4,
    }))
}

/// Append an unmasked server frame header.
pub(crate) fn put_header(out: &mut Vec<u8>, fin: bool, rsv1: bool, opcode: u8, len: usize) {
    let mut b = [0u8; MAX_SERVER_HEADER];
    let n = encode_header(&mut b, fin, rsv1, opcode, len);
    out.extend_from_slice(&b[..n]);
}

/// Encode a server frame header into `b`; returns its length.
pub(crate) fn encode_header(
    b: &mut [u8; MAX_SERVER_HEADER],
    fin: bool,
    rsv1: bool,
    opcode: u8,
    len: usize,
) -> usize {
    b[0] = opcode | if fin { FIN } else { 0 } | if rsv1 { RSV1 } else { 0 };
    if len < 126 {
        b[1] = len as u8;
        2
    } else if let Ok(n) = u16::try_from(len) {
        b[1] = 126;
        b[2..4].copy_from_slice(&n.to_be_bytes());
        4
    } else {
        b[1] = 127;
        b[2..10].copy_from_slice(&(len as u64).to_be_bytes());
        10
    }
}

/// Append a whole server frame.
pub(crate) fn put_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    put_header(out, true, false, opcode, payload.len());
    out.extend_from_slice(payload);
}

/// XOR `data` with `mask`, `data[0]` being payload byte `offset` of its
/// frame. Eight bytes at a time.
pub(crate) fn apply_mask(data: &mut [u8], mask: [u8; 4], offset: usize) {
    let m = [
        mask[offset & 3],
        mask[(offset + 1) & 3],
        mask[(offset + 2) & 3],
        mask[(offset + 3) & 3],
    ];
    let wide = u64::from_ne_bytes([m[0], m[1], m[2], m[3], m[0], m[1], m[2], m[3]]);
    let mut chunks = data.chunks_exact_mut(8);
    for c in &mut chunks {
        let v = u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ wide;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    // Whole chunks are a multiple of 4 bytes: the mask phase is unchanged.
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= m[i & 3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_matches_bytewise() {
        let mask = [1, 2, 3, 250];
        for offset in 0..8 {
            for len in 0..40 {
                let data: Vec<u8> = (0..len as u8).collect();
                let mut fast = data.clone();
                apply_mask(&mut fast, mask, offset);
                let slow: Vec<u8> = data
                    .iter()
                    .enumerate()
                    .map(|(i, b)| b ^ mask[(offset + i) & 3])
                    .collect();
                assert_eq!(fast, slow, "offset {offset} len {len}");
            }
        }
    }

    #[test]
    fn header_lengths() {
        for len in [0usize, 125, 126, 65535, 65536, 1 << 40] {
            let mut b = [0u8; MAX_SERVER_HEADER];
            let n = encode_header(&mut b, true, false, OP_BINARY, len);
            // Re-read it as if masked (set the mask bit, append a mask).
            let mut wire = b[..n].to_vec();
            wire[1] |= MASK;
            wire.extend_from_slice(&[0; 4]);
            let h = parse_header(&wire).unwrap().unwrap();
            assert_eq!((h.len, h.size), (len as u64, n + 4));
            assert_eq!(
                parse_header(&wire[..wire.len() - 1])
                    .unwrap()
                    .map(|h| h.len),
                None
            );
        }
    }
}
