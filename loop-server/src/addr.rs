//! A socket address as the server reports it: TCP (v4/v6) or a Unix path.

use socket2::SockAddr;
use std::net::IpAddr;

/// A peer's or the listener's address. A Unix path is empty when the
/// socket is unnamed; an abstract name keeps its leading NUL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    Inet(IpAddr, u16),
    Unix(String),
}

impl Addr {
    pub fn of(addr: &SockAddr) -> Option<Addr> {
        if let Some(inet) = addr.as_socket() {
            return Some(Addr::Inet(inet.ip(), inet.port()));
        }
        if !addr.is_unix() {
            return None;
        }
        let text = if let Some(path) = addr.as_pathname() {
            path.to_string_lossy().into_owned()
        } else if let Some(name) = addr.as_abstract_namespace() {
            let mut text = String::from('\0');
            text.push_str(&String::from_utf8_lossy(name));
            text
        } else {
            String::new()
        };
        Some(Addr::Unix(text))
    }

    /// The IP of a TCP peer.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Addr::Inet(ip, _) => Some(*ip),
            Addr::Unix(_) => None,
        }
    }

    /// `ip:port` for a TCP peer, as the logs name it; empty otherwise.
    pub fn text(&self) -> String {
        match self {
            Addr::Inet(ip, port) => format!("{ip}:{port}"),
            Addr::Unix(_) => String::new(),
        }
    }
}
