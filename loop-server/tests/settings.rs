//! Settings are defined once: the settings table's native rows are what
//! the server reads (typed, `ServerSettings::read`), and each protocol
//! crate's own defaults agree with the table's.

use loop_cli::table::{Lookup, SETTINGS};
use loop_cli::{Value, Values};
use loop_server::ServerSettings;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// The table's defaults, noting every name asked for.
#[derive(Default)]
struct Recording(RefCell<BTreeSet<&'static str>>);

impl Lookup for Recording {
    fn lookup(&self, name: &str) -> Value {
        let row = SETTINGS.iter().find(|s| s.name == name);
        let row = row.unwrap_or_else(|| panic!("{name} is not a row of the table"));
        self.0.borrow_mut().insert(row.name);
        Values::default().get(name)
    }
}

#[test]
fn the_server_reads_exactly_the_native_rows() {
    let recording = Recording::default();
    ServerSettings::read(&recording).unwrap();
    let read = recording.0.into_inner();
    let native: BTreeSet<&str> = SETTINGS
        .iter()
        .filter(|s| s.native)
        .map(|s| s.name)
        .collect();
    assert_eq!(read, native);
}

#[test]
fn the_protocol_crates_defaults_are_the_tables() {
    let table = ServerSettings::default();
    // loop-http: the connection's deadlines and limits.
    let http = loop_http::ConnectionConfig::default();
    assert_eq!(*table.http, http);
    assert_eq!(table.http.limits, loop_http::Limits::default());
    // loop-ws: every limit and timeout.
    assert_eq!(table.ws, Some(loop_ws::Config::default()));
    // loop-tls: no client certificate asked for, TLS 1.2 and up.
    assert!(table.tls.is_none(), "TLS is off by default");
    let values = Values::default();
    let inputs = loop_cli::tls::TlsInputs::from_values(&values);
    assert_eq!(inputs.cert_reqs, 0);
    assert_eq!(loop_tls::ClientAuth::default(), loop_tls::ClientAuth::None);
    assert_eq!(inputs.min_version, "1.2");
    assert_eq!(loop_tls::MinVersion::default(), loop_tls::MinVersion::Tls12);
}

#[test]
fn the_server_offers_what_its_kinds_speak() {
    assert_eq!(loop_server::protocol::ALPN, [&b"http/1.1"[..]]);
}
