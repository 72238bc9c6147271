//! The byte-stream layer seam over a real socket pair: plain streams pass
//! bytes through in place; a layer's handshake output goes out with no
//! application data, its encoding applies both ways, its close precedes the
//! FIN, and EOF without its close is reported as truncation.

use loop_transports::{
    ByteLayer, Eof, Error, IoFd, LayerError, LayerRead, LayeredStream, StreamConfig, StreamCore,
};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

/// A toy session: the client opens with `H`, answered with `h`; data is
/// XOR-ed with 0x55; `!` is a fatal record; the close is `BYE`.
#[derive(Default)]
struct Toy {
    established: bool,
    answer_due: bool,
    closed_by_peer: bool,
    /// Report the peer's `BYE` before the FIN, as TLS reports a
    /// `close_notify` (`peer_closed`).
    reports_close: bool,
}

impl ByteLayer for Toy {
    fn decode(&mut self, wire: &[u8], app: &mut Vec<u8>) -> Result<(), LayerError> {
        let mut wire = wire;
        if !self.established {
            let Some((&b'H', rest)) = wire.split_first() else {
                return Err("expected a hello".into());
            };
            self.established = true;
            self.answer_due = true;
            wire = rest;
        }
        if wire.ends_with(b"BYE") {
            self.closed_by_peer = true;
            wire = &wire[..wire.len() - 3];
        }
        if wire.contains(&b'!') {
            return Err("bad record".into());
        }
        app.extend(wire.iter().map(|b| b ^ 0x55));
        Ok(())
    }

    fn encode(&mut self, app: &[u8], wire: &mut Vec<u8>) -> Result<(), LayerError> {
        wire.extend(app.iter().map(|b| b ^ 0x55));
        Ok(())
    }

    fn take_output(&mut self, wire: &mut Vec<u8>) {
        if std::mem::take(&mut self.answer_due) {
            wire.push(b'h');
        }
    }

    fn wants_read(&self) -> bool {
        !self.established
    }

    fn close(&mut self, wire: &mut Vec<u8>) {
        wire.extend_from_slice(b"BYE");
    }

    fn peer_closed(&self) -> bool {
        self.reports_close && self.closed_by_peer
    }

    fn eof(&mut self) -> Eof {
        if self.closed_by_peer {
            Eof::Clean
        } else {
            Eof::Truncated
        }
    }
}

fn pair(layer: Option<Box<dyn ByteLayer>>) -> (LayeredStream, UnixStream) {
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    peer.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .expect("timeout");
    let core = StreamCore::socket(IoFd::owned(OwnedFd::from(ours)), &StreamConfig::default())
        .expect("core");
    (LayeredStream::with_layer(core, layer), peer)
}

/// Read once (the peer's bytes are already queued), as owned data.
fn read_once(stream: &mut LayeredStream) -> Result<Option<Vec<u8>>, Eof> {
    let mut buf = [0u8; 256];
    match stream.read_into(&mut buf).expect("read") {
        LayerRead::Data(d) | LayerRead::Last(d) => Ok(Some(d.to_vec())),
        LayerRead::Eof(eof) => Err(eof),
        LayerRead::Done => Ok(None),
    }
}

#[test]
fn plain_streams_pass_bytes_through() {
    let (mut s, mut peer) = pair(None);
    assert!(!s.wants_read(false), "no layer: the protocol decides");
    peer.write_all(b"ping").expect("write");
    assert_eq!(read_once(&mut s), Ok(Some(b"ping".to_vec())));
    s.write(b"pong").expect("write");
    let mut got = [0u8; 4];
    peer.read_exact(&mut got).expect("read");
    assert_eq!(&got, b"pong");
    s.shutdown().expect("shutdown");
    assert_eq!(peer.read(&mut got).expect("eof"), 0);
    drop(peer);
    assert_eq!(read_once(&mut s), Err(Eof::Clean));
}

#[test]
fn a_layer_handshakes_encodes_and_closes_before_the_fin() {
    let (mut s, mut peer) = pair(Some(Box::new(Toy::default())));
    assert!(s.wants_read(false), "the handshake wants input");
    peer.write_all(b"H").expect("hello");
    assert_eq!(
        read_once(&mut s),
        Ok(Some(Vec::new())),
        "no application data"
    );
    assert!(!s.wants_read(false));
    let mut answer = [0u8; 1];
    peer.read_exact(&mut answer).expect("answer");
    assert_eq!(&answer, b"h", "the layer's own output went out");

    peer.write_all(&[b'a' ^ 0x55, b'b' ^ 0x55]).expect("data");
    assert_eq!(read_once(&mut s), Ok(Some(b"ab".to_vec())));
    s.write(b"xy").expect("write");
    let mut got = [0u8; 2];
    peer.read_exact(&mut got).expect("read");
    assert_eq!(got, [b'x' ^ 0x55, b'y' ^ 0x55]);

    s.shutdown().expect("shutdown");
    let mut rest = Vec::new();
    peer.read_to_end(&mut rest).expect("to the FIN");
    assert_eq!(rest, b"BYE");
}

#[test]
fn eof_without_the_layers_close_is_truncation() {
    let (mut s, mut peer) = pair(Some(Box::new(Toy::default())));
    peer.write_all(b"H").expect("hello");
    read_once(&mut s).expect("handshake");
    // Unread input would make the peer's close a reset.
    peer.read_exact(&mut [0u8; 1]).expect("answer");
    drop(peer);
    assert_eq!(read_once(&mut s), Err(Eof::Truncated));

    let (mut s, mut peer) = pair(Some(Box::new(Toy::default())));
    peer.write_all(b"HBYE").expect("hello and close");
    read_once(&mut s).expect("handshake");
    peer.read_exact(&mut [0u8; 1]).expect("answer");
    drop(peer);
    assert_eq!(read_once(&mut s), Err(Eof::Clean));
}

#[test]
fn a_layer_error_loses_the_connection() {
    let (mut s, mut peer) = pair(Some(Box::new(Toy::default())));
    peer.write_all(b"H!").expect("bad record");
    assert_eq!(read_once(&mut s), Ok(None));
    match s.take_closed() {
        Some(Some(Error::Layer(e))) => assert_eq!(e.to_string(), "bad record"),
        other => panic!("expected a layer error, got {other:?}"),
    }
    // What the layer had to say before failing (a TLS alert) was sent.
    let mut answer = [0u8; 1];
    peer.read_exact(&mut answer)
        .expect("the layer's last output");
    assert_eq!(&answer, b"h");
}

#[test]
fn the_layers_own_end_with_data_is_the_last_data_then_eof() {
    let toy = Toy {
        reports_close: true,
        ..Toy::default()
    };
    let (mut s, mut peer) = pair(Some(Box::new(toy)));
    peer.write_all(b"H").expect("hello");
    read_once(&mut s).expect("handshake");
    let mut wire: Vec<u8> = b"ok".iter().map(|b| b ^ 0x55).collect();
    wire.extend_from_slice(b"BYE");
    peer.write_all(&wire).expect("data and close");
    let mut buf = [0u8; 64];
    match s.read_into(&mut buf).expect("read") {
        LayerRead::Last(data) => assert_eq!(data, b"ok"),
        other => panic!("expected the last data, got {other:?}"),
    }
    // The peer may keep its socket open: the layer's end is the EOF.
    assert!(s.peer_ended());
    assert_eq!(read_once(&mut s), Err(Eof::Clean));
}
