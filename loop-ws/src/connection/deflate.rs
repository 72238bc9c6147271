//! The permessage-deflate codec (RFC 7692 §7.2): raw DEFLATE with the
//! negotiated window sizes, the `00 00 ff ff` tail stripped on send and
//! put back on receive, context kept or reset per message as negotiated.
//!
//! Nothing is allocated until the first compressed message in each
//! direction: a zlib window is tens to hundreds of KiB, and most sessions
//! of most applications are idle most of the time.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::utf8;
use crate::handshake::DeflateParams;

/// What a sync flush ends with, and what the sender leaves off.
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// zlib's best speed (nginx's default gzip level): a server's CPU per
/// message matters more than the last bytes (docs/decisions.md).
const LEVEL: u32 = 1;

/// Largest output slice one inflate call may fill.
const MAX_INFLATE_CHUNK: usize = 1 << 20;

/// Why inflating failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InflateError {
    /// The message would exceed the size limit.
    TooBig,
    /// Not a valid DEFLATE stream.
    Corrupt,
    /// A text message's inflated bytes are not UTF-8.
    BadUtf8,
}

pub(crate) struct Deflate {
    params: DeflateParams,
    // Boxed: flate2 keeps ~150 bytes of stream state inline, which an
    // idle session should not carry.
    inflater: Option<Box<Decompress>>,
    compressor: Option<Box<Compress>>,
    /// The message being received ended its DEFLATE stream (a block with
    /// BFINAL): only the tail may follow.
    ended: bool,
    /// The message being received had compressed bytes.
    fed: bool,
}

impl Deflate {
    pub fn new(params: DeflateParams) -> Self {
        Deflate {
            params,
            inflater: None,
            compressor: None,
            ended: false,
            fed: false,
        }
    }

    /// Whether the inflater / compressor have been allocated.
    pub fn allocated(&self) -> (bool, bool) {
        (self.inflater.is_some(), self.compressor.is_some())
    }

    /// Inflate `input` (part of a message) onto `out`, never letting `out`
    /// grow past `limit` bytes: output is produced in bounded slices and
    /// the check runs after each, so a bomb is refused before its size is
    /// allocated. With `text` (the valid prefix of `out`), each slice is
    /// validated as it comes, before the size or stream checks, so which
    /// error wins does not depend on how the input was cut.
    pub fn inflate(
        &mut self,
        mut input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
        mut text: Option<&mut usize>,
    ) -> Result<(), InflateError> {
        if self.ended {
            // Bytes after the final block: not DEFLATE data (strict, and
            // the same verdict however the input was cut).
            return if input.is_empty() {
                Ok(())
            } else {
                Err(InflateError::Corrupt)
            };
        }
        if input.is_empty() {
            return Ok(());
        }
        self.fed = true;
        let bits = self.params.client_max_window_bits.clamp(9, 15);
        let inflater = self
            .inflater
            .get_or_insert_with(|| Box::new(Decompress::new_with_window_bits(false, bits)));
        loop {
            let len = out.len();
            // Room in proportion to this input (not to the message so far:
            // a message of many small fragments must stay linear), and
            // never past the limit: what inflating writes is what was
            // reserved, so a bomb stops near the limit.
            let wanted = input
                .len()
                .saturating_mul(4)
                .clamp(256, MAX_INFLATE_CHUNK)
                .min(limit.saturating_sub(len).saturating_add(1));
            if out.capacity() - len < wanted {
                out.reserve(wanted);
            }
            let room = out.capacity() - len;
            let (in0, out0) = (inflater.total_in(), inflater.total_out());
            // Writes into the spare capacity only (no zero-filling).
            let status = inflater.decompress_vec(input, out, FlushDecompress::Sync);
            let consumed = (inflater.total_in() - in0) as usize;
            let produced = (inflater.total_out() - out0) as usize;
            if let Some(valid) = text.as_deref_mut() {
                // Past the limit the message fails anyway: validate only
                // what it may hold.
                let upto = out.len().min(limit);
                if !utf8::advance(&out[..upto], valid) {
                    return Err(InflateError::BadUtf8);
                }
            }
            let status = status.map_err(|_| InflateError::Corrupt)?;
            input = &input[consumed..];
            if out.len() > limit {
                return Err(InflateError::TooBig);
            }
            if status == Status::StreamEnd {
                // A final block ended the stream (RFC 7692 lets a sender
                // set BFINAL): the next message starts a new one.
                self.inflater = None;
                self.ended = true;
                return if input.is_empty() {
                    Ok(())
                } else {
                    Err(InflateError::Corrupt)
                };
            }
            if produced < room && input.is_empty() {
                return Ok(());
            }
            if produced == 0 && consumed == 0 {
                return Err(InflateError::Corrupt);
            }
        }
    }

    /// The end of a received message: inflate the tail the sender left
    /// off, and forget the context if the client resets its own.
    pub fn finish_inflate(
        &mut self,
        out: &mut Vec<u8>,
        limit: usize,
        text: Option<&mut usize>,
    ) -> Result<(), InflateError> {
        // A message with no compressed bytes at all is empty: the tail
        // alone would be read as half a stored block (some senders send
        // nothing, not the 0x00 an empty message compresses to).
        if self.fed && !self.ended {
            match self.inflate(&TAIL, out, limit, text) {
                // The final block ended just before our tail.
                Err(InflateError::Corrupt) if self.ended => {}
                r => r?,
            }
        }
        // Our tail after a final block is ignored, as inflaters do.
        self.ended = false;
        self.fed = false;
        if self.params.client_no_context_takeover {
            // Dropped rather than reset: an idle session holds no window.
            self.inflater = None;
        }
        Ok(())
    }

    /// Should messages be compressed? Every one, as Python's websockets
    /// does (a size threshold would save CPU on small messages, but
    /// Autobahn's own 12.x cases break on an uncompressed echo), except
    /// when the client limited our window to 8 bits, which zlib cannot
    /// honour.
    pub fn compresses(&self) -> bool {
        self.params.server_max_window_bits >= 9
    }

    /// Append `data` compressed, tail stripped. `false` if the compressor
    /// failed (nothing appended; it is dropped, and a fresh one's output is
    /// valid for the peer's inflater whatever its history).
    pub fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) -> bool {
        let bits = self.params.server_max_window_bits.clamp(9, 15);
        let compressor = self.compressor.get_or_insert_with(|| {
            Box::new(Compress::new_with_window_bits(
                Compression::new(LEVEL),
                false,
                bits,
            ))
        });
        let start = out.len();
        let mut input = data;
        loop {
            out.reserve(input.len() / 2 + 64);
            let in0 = compressor.total_in();
            if compressor
                .compress_vec(input, out, FlushCompress::Sync)
                .is_err()
            {
                out.truncate(start);
                self.compressor = None;
                return false;
            }
            input = &input[(compressor.total_in() - in0) as usize..];
            // The flush is complete once a call returns with output room left.
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
        }
        if out[start..].ends_with(&TAIL) {
            out.truncate(out.len() - TAIL.len());
        }
        if out.len() == start {
            // Nothing to flush (an empty message after a flush): the
            // receiver appends the tail, which is only an empty stored
            // block after its header byte (BFINAL 0, BTYPE 00), so send
            // that byte.
            out.push(0x00);
        }
        if self.params.server_no_context_takeover {
            compressor.reset();
        }
        true
    }
}
