//! The client side of RFC 6455 and RFC 7692 that `ws_client.rs` needs: the
//! opening handshake, masked frames out, unmasked frames in, and
//! permessage-deflate. `loop-ws` is the server side (it refuses unmasked
//! frames and never masks), so the load generator carries this small codec
//! of its own; it is strict where a lax client could hide a server's fault
//! (an unmasked reply, a wrong `Sec-WebSocket-Accept`, RSV bits not
//! negotiated).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use sha1::{Digest, Sha1};

/// RFC 6455 §1.3: appended to the key before hashing.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// RFC 7692 §7.2.1: a message's compressed data ends with an empty stored
/// block, which the sender strips and the receiver appends back.
const DEFLATE_TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];
/// The most a response head may hold before the handshake is refused.
const MAX_HEAD: usize = 16 * 1024;

pub const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// The opening request; `key` is the base64 of 16 random bytes.
pub fn request(host: &str, path: &str, key: &str, offer_deflate: bool) -> String {
    let mut head = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
    );
    if offer_deflate {
        // The common offer (browsers, websockets): any window, context kept.
        head.push_str("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n");
    }
    head.push_str("\r\n");
    head
}

pub fn key(nonce: [u8; 16]) -> String {
    BASE64.encode(nonce)
}

pub(crate) fn accept_for(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    BASE64.encode(sha.finalize())
}

/// Where the response head ends (after its blank line) in `buf`, if it has;
/// an error once it is longer than any sane head.
pub fn head_end(buf: &[u8]) -> Result<Option<usize>, String> {
    match buf.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(at) => Ok(Some(at + 4)),
        None if buf.len() > MAX_HEAD => Err(format!("response head over {MAX_HEAD} bytes")),
        None => Ok(None),
    }
}

/// What the server agreed to in its 101.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeflateParams {
    pub server_no_context_takeover: bool,
    pub client_no_context_takeover: bool,
    pub server_max_window_bits: u8,
    pub client_max_window_bits: u8,
}

/// Check the server's answer to `request(.., key, offer_deflate)`: a 101
/// with the right accept key; `Some` deflate parameters when it accepted
/// permessage-deflate.
pub fn check_response(
    head: &[u8],
    key: &str,
    offered_deflate: bool,
) -> Result<Option<DeflateParams>, String> {
    let text = std::str::from_utf8(head).map_err(|_| "response head is not UTF-8".to_string())?;
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 101") {
        return Err(format!("handshake answered `{status}`, not 101"));
    }
    let mut accept = None;
    let mut extensions = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line `{line}`"))?;
        match name.trim().to_ascii_lowercase().as_str() {
            "sec-websocket-accept" => accept = Some(value.trim().to_string()),
            "sec-websocket-extensions" => extensions.push(value.trim().to_string()),
            _ => {}
        }
    }
    let expected = accept_for(key);
    if accept.as_deref() != Some(expected.as_str()) {
        return Err(format!(
            "Sec-WebSocket-Accept {accept:?}, expected {expected}"
        ));
    }
    let mut deflate = None;
    for offer in extensions.iter().flat_map(|v| v.split(',')) {
        let mut params = offer.split(';').map(str::trim);
        let name = params.next().unwrap_or_default();
        if name != "permessage-deflate" {
            return Err(format!("server accepted extension `{name}`, never offered"));
        }
        if !offered_deflate || deflate.is_some() {
            return Err("server accepted permessage-deflate unasked or twice".into());
        }
        deflate = Some(deflate_params(params)?);
    }
    Ok(deflate)
}

fn deflate_params<'a>(params: impl Iterator<Item = &'a str>) -> Result<DeflateParams, String> {
    let mut p = DeflateParams {
        server_max_window_bits: 15,
        client_max_window_bits: 15,
        ..DeflateParams::default()
    };
    for param in params.filter(|s| !s.is_empty()) {
        let (name, value) = match param.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
            None => (param, None),
        };
        let bits = || -> Result<u8, String> {
            let v = value.ok_or_else(|| format!("{name} without a value"))?;
            match v.parse::<u8>() {
                Ok(b @ 8..=15) => Ok(b.max(9)), // zlib's 8 is 9 (RFC 7692 §7.1.2.1 allows larger)
                _ => Err(format!("{name}={v}: not 8-15")),
            }
        };
        match name {
            "server_no_context_takeover" => p.server_no_context_takeover = true,
            "client_no_context_takeover" => p.client_no_context_takeover = true,
            "server_max_window_bits" => p.server_max_window_bits = bits()?,
            "client_max_window_bits" => p.client_max_window_bits = bits()?,
            other => return Err(format!("unknown permessage-deflate parameter `{other}`")),
        }
    }
    Ok(p)
}

/// Append one masked frame (FIN set) carrying `payload` to `out`.
pub fn encode(out: &mut Vec<u8>, opcode: u8, rsv1: bool, payload: &[u8], mask: [u8; 4]) {
    out.push(0x80 | if rsv1 { 0x40 } else { 0 } | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xffff {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// XOR with the 4-byte key, eight bytes at a time (the 256 KiB workload
/// must not make the client the bottleneck).
fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(word) ^ wide).to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
}

/// A server frame's header.
#[derive(Debug, PartialEq)]
pub struct Header {
    pub fin: bool,
    pub rsv1: bool,
    pub opcode: u8,
    /// Bytes of header before the payload.
    pub header_len: usize,
    pub payload_len: usize,
}

/// The header at the start of `buf`, `None` while incomplete; an error for
/// what a server must never send (a mask, RSV2/RSV3, a bad length).
pub fn parse_header(buf: &[u8]) -> Result<Option<Header>, String> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (buf[0], buf[1]);
    if b0 & 0x30 != 0 {
        return Err(format!("frame with RSV2/RSV3 set (first byte {b0:#04x})"));
    }
    if b1 & 0x80 != 0 {
        return Err("the server masked a frame (RFC 6455 §5.1 forbids it)".into());
    }
    let (header_len, payload_len) = match b1 & 0x7f {
        126 if buf.len() >= 4 => (4, u16::from_be_bytes([buf[2], buf[3]]) as usize),
        127 if buf.len() >= 10 => {
            let mut len = [0u8; 8];
            len.copy_from_slice(&buf[2..10]);
            let len = u64::from_be_bytes(len);
            (
                10,
                usize::try_from(len).map_err(|_| "frame length overflows".to_string())?,
            )
        }
        126 | 127 => return Ok(None),
        n => (2, n as usize),
    };
    Ok(Some(Header {
        fin: b0 & 0x80 != 0,
        rsv1: b0 & 0x40 != 0,
        opcode: b0 & 0x0f,
        header_len,
        payload_len,
    }))
}

/// permessage-deflate for one connection, as negotiated: our messages
/// compressed with the client's window, the server's inflated with its.
pub struct Deflate {
    params: DeflateParams,
    compress: Compress,
    decompress: Decompress,
}

impl Deflate {
    pub fn new(params: DeflateParams) -> Deflate {
        Deflate {
            params,
            compress: Compress::new_with_window_bits(
                Compression::default(),
                false,
                params.client_max_window_bits,
            ),
            decompress: Decompress::new_with_window_bits(false, params.server_max_window_bits),
        }
    }

    /// `payload` compressed as one message (the tail stripped) into `out`.
    pub fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        out.reserve(payload.len() / 2 + 64);
        let before = self.compress.total_in();
        loop {
            let done = (self.compress.total_in() - before) as usize;
            if out.len() == out.capacity() {
                out.reserve(out.capacity().max(64));
            }
            self.compress
                .compress_vec(&payload[done..], out, FlushCompress::Sync)
                .map_err(|e| format!("deflate: {e}"))?;
            let consumed = (self.compress.total_in() - before) as usize == payload.len();
            // A sync flush is complete when it did not fill the output.
            if consumed && out.len() < out.capacity() {
                break;
            }
        }
        if !out.ends_with(&DEFLATE_TAIL) {
            return Err("deflate output does not end with a sync flush".into());
        }
        out.truncate(out.len() - DEFLATE_TAIL.len());
        if self.params.client_no_context_takeover {
            self.compress.reset();
        }
        Ok(())
    }

    /// A compressed message's payload (`input`, its frames' payloads
    /// joined) inflated into `out`; an error past `limit` bytes.
    pub fn decompress(
        &mut self,
        input: &mut Vec<u8>,
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), String> {
        input.extend_from_slice(&DEFLATE_TAIL);
        out.clear();
        out.reserve(limit.min(input.len() * 8) + 64);
        let before = self.decompress.total_in();
        loop {
            let done = (self.decompress.total_in() - before) as usize;
            if out.len() == out.capacity() {
                if out.len() > limit {
                    return Err(format!("a compressed message inflates past {limit} bytes"));
                }
                out.reserve(out.capacity());
            }
            let status = self
                .decompress
                .decompress_vec(&input[done..], out, FlushDecompress::Sync)
                .map_err(|e| format!("inflate: {e}"))?;
            let consumed = (self.decompress.total_in() - before) as usize == input.len();
            if consumed && out.len() < out.capacity() || status == Status::StreamEnd {
                break;
            }
        }
        if self.params.server_no_context_takeover {
            self.decompress.reset(false);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_key_of_rfc_6455_example() {
        assert_eq!(
            accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn masked_frame_round_trips() {
        for len in [0, 5, 125, 126, 65535, 65536, 70000] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut out = Vec::new();
            encode(&mut out, OP_BINARY, false, &payload, [1, 2, 3, 4]);
            // The server's view: clear the mask bit and unmask.
            out[1] &= 0x7f;
            let h = parse_header(&out).unwrap().unwrap();
            assert_eq!((h.fin, h.opcode, h.payload_len), (true, OP_BINARY, len));
            let (mask_at, start) = (h.header_len, h.header_len + 4);
            let mask = [
                out[mask_at],
                out[mask_at + 1],
                out[mask_at + 2],
                out[mask_at + 3],
            ];
            let mut body = out[start..].to_vec();
            apply_mask(&mut body, mask);
            assert_eq!(body, payload);
        }
    }

    #[test]
    fn a_masked_server_frame_is_refused() {
        assert!(parse_header(&[0x82, 0x81, 0, 0, 0, 0, 0]).is_err());
        assert_eq!(parse_header(&[0x82, 126, 0]).unwrap(), None);
    }

    #[test]
    fn deflate_round_trips_with_and_without_context() {
        for no_context in [false, true] {
            let params = DeflateParams {
                server_no_context_takeover: no_context,
                client_no_context_takeover: no_context,
                server_max_window_bits: 15,
                client_max_window_bits: 15,
            };
            // Our compressor feeds a decompressor standing in for the server.
            let (mut ours, mut theirs) = (Deflate::new(params), Deflate::new(params));
            let text = b"the quick brown fox jumps over the lazy dog ".repeat(100);
            for _ in 0..3 {
                let (mut wire, mut back) = (Vec::new(), Vec::new());
                ours.compress(&text, &mut wire).unwrap();
                assert!(wire.len() < text.len() / 4);
                theirs.decompress(&mut wire, &mut back, 1 << 20).unwrap();
                assert_eq!(back, text);
            }
        }
    }

    #[test]
    fn response_checks() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                  Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\
                  Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=12; \
                  client_no_context_takeover\r\n\r\n";
        let p = check_response(ok.as_bytes(), key, true).unwrap().unwrap();
        assert_eq!(p.server_max_window_bits, 12);
        assert!(p.client_no_context_takeover && !p.server_no_context_takeover);
        assert!(check_response(ok.as_bytes(), key, false).is_err());
        assert!(check_response(ok.as_bytes(), "AAAAAAAAAAAAAAAAAAAAAA==", true).is_err());
        assert!(check_response(b"HTTP/1.1 404 Not Found\r\n\r\n", key, true).is_err());
    }
}
