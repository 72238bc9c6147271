//! A test-only client side of RFC 6455: it masks what it sends, reads the
//! server's (unmasked) frames, and speaks permessage-deflate with the
//! parameters the server negotiated.

#![allow(dead_code)] // each test binary uses part of it

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use loop_ws::{Config, Connection, DeflateParams, Message, MessageKind};

pub const CONT: u8 = 0;
pub const TEXT: u8 = 1;
pub const BINARY: u8 = 2;
pub const CLOSE: u8 = 8;
pub const PING: u8 = 9;
pub const PONG: u8 = 10;

pub const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// A client frame: FIN, RSV1, opcode, masked payload (minimal length).
pub fn frame(fin: bool, rsv1: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    frame_with(fin, rsv1, opcode, payload, Some(MASK))
}

/// A client frame with any mask (or none, which servers must refuse).
pub fn frame_with(
    fin: bool,
    rsv1: bool,
    opcode: u8,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) -> Vec<u8> {
    let mut out = vec![opcode | if fin { 0x80 } else { 0 } | if rsv1 { 0x40 } else { 0 }];
    let m = if mask.is_some() { 0x80 } else { 0 };
    let len = payload.len();
    if len < 126 {
        out.push(m | len as u8);
    } else if len <= 0xffff {
        out.push(m | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(m | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    match mask {
        Some(mask) => {
            out.extend_from_slice(&mask);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

pub fn text(s: &str) -> Vec<u8> {
    frame(true, false, TEXT, s.as_bytes())
}

pub fn binary(b: &[u8]) -> Vec<u8> {
    frame(true, false, BINARY, b)
}

pub fn close_frame(code: u16, reason: &[u8]) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(reason);
    frame(true, false, CLOSE, &p)
}

/// A frame the server sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub fin: bool,
    pub rsv1: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

impl Frame {
    /// A close frame's code and reason.
    pub fn close(&self) -> Option<(u16, String)> {
        assert_eq!(self.opcode, CLOSE);
        match &self.payload[..] {
            [] => None,
            [a, b, reason @ ..] => Some((
                u16::from_be_bytes([*a, *b]),
                String::from_utf8(reason.to_vec()).unwrap(),
            )),
            _ => panic!("1-byte close payload from the server"),
        }
    }
}

/// Parse server frames; they must be unmasked, minimal and complete.
pub fn parse_frames(mut b: &[u8]) -> Vec<Frame> {
    let mut frames = Vec::new();
    while !b.is_empty() {
        assert!(b.len() >= 2, "truncated header");
        assert_eq!(b[1] & 0x80, 0, "server frames are not masked");
        assert_eq!(b[0] & 0x30, 0, "RSV2/3");
        let (len, at) = match b[1] & 0x7f {
            126 => (u16::from_be_bytes([b[2], b[3]]) as usize, 4),
            127 => (
                u64::from_be_bytes(b[2..10].try_into().unwrap()) as usize,
                10,
            ),
            n => (n as usize, 2),
        };
        match at {
            4 => assert!((126..=0xffff).contains(&len), "minimal length"),
            10 => assert!(len > 0xffff, "minimal length"),
            _ => {}
        }
        frames.push(Frame {
            fin: b[0] & 0x80 != 0,
            rsv1: b[0] & 0x40 != 0,
            opcode: b[0] & 0x0f,
            payload: b[at..at + len].to_vec(),
        });
        b = &b[at + len..];
    }
    frames
}

/// Everything the connection queued on its own.
pub fn output(c: &mut Connection) -> Vec<Frame> {
    let mut out = Vec::new();
    c.take_output(&mut out);
    parse_frames(&out)
}

/// All queued messages.
pub fn messages(c: &mut Connection) -> Vec<Message> {
    std::iter::from_fn(|| c.next_message()).collect()
}

/// How to deliver bytes: all at once, or one byte per `receive`.
#[derive(Clone, Copy, Debug)]
pub enum Feed {
    Whole,
    Bytewise,
}

pub const FEEDS: [Feed; 2] = [Feed::Whole, Feed::Bytewise];

pub fn feed(c: &mut Connection, bytes: &[u8], how: Feed) {
    match how {
        Feed::Whole => c.receive(bytes, 0.0),
        Feed::Bytewise => {
            for b in bytes.chunks(1) {
                c.receive(b, 0.0);
            }
        }
    }
}

pub fn quiet() -> Config {
    Config {
        ping_interval: None,
        ping_timeout: None,
        ..Config::default()
    }
}

pub fn conn(config: &Config) -> Connection {
    Connection::new(config, None, 0.0)
}

pub fn msg(kind: MessageKind, data: &[u8]) -> Message {
    Message {
        kind,
        data: data.to_vec(),
    }
}

/// The client's half of permessage-deflate.
pub struct ClientDeflate {
    pub params: DeflateParams,
    compress: Compress,
    decompress: Decompress,
}

impl ClientDeflate {
    pub fn new(params: DeflateParams) -> Self {
        ClientDeflate {
            params,
            compress: Compress::new_with_window_bits(
                Compression::default(),
                false,
                params.client_max_window_bits,
            ),
            decompress: Decompress::new_with_window_bits(
                false,
                params.server_max_window_bits.max(9),
            ),
        }
    }

    /// Compress one message (tail stripped).
    pub fn compress(&mut self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len() + 64);
        let mut input = data;
        loop {
            out.reserve(input.len() + 64);
            let before = self.compress.total_in();
            self.compress
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .unwrap();
            input = &input[(self.compress.total_in() - before) as usize..];
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
        }
        // An empty message after a flush compresses to nothing at all.
        if out.ends_with(&[0, 0, 0xff, 0xff]) {
            out.truncate(out.len() - 4);
        }
        if out.is_empty() {
            out.push(0x00); // an empty stored block's header, as senders must
        }
        if self.params.client_no_context_takeover {
            self.compress.reset();
        }
        out
    }

    /// Inflate one message from the server.
    pub fn decompress(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut input = payload.to_vec();
        input.extend_from_slice(&[0, 0, 0xff, 0xff]);
        let mut out = Vec::new();
        let mut rest = &input[..];
        loop {
            out.reserve(rest.len() * 4 + 256);
            let before = self.decompress.total_in();
            self.decompress
                .decompress_vec(rest, &mut out, FlushDecompress::Sync)
                .unwrap();
            rest = &rest[(self.decompress.total_in() - before) as usize..];
            if rest.is_empty() && out.len() < out.capacity() {
                break;
            }
        }
        if self.params.server_no_context_takeover {
            self.decompress =
                Decompress::new_with_window_bits(false, self.params.server_max_window_bits);
        }
        out
    }
}

/// Decode what the server sent as messages (control frames returned apart).
pub fn server_messages(frames: &[Frame], mut deflate: Option<&mut ClientDeflate>) -> Vec<Message> {
    let mut out = Vec::new();
    for f in frames {
        assert!(f.fin, "the server sends unfragmented messages");
        let kind = match f.opcode {
            TEXT => MessageKind::Text,
            BINARY => MessageKind::Binary,
            _ => continue,
        };
        let data = if f.rsv1 {
            deflate
                .as_deref_mut()
                .expect("RSV1 without deflate")
                .decompress(&f.payload)
        } else {
            f.payload.clone()
        };
        out.push(Message { kind, data });
    }
    out
}
