//! Proxy headers: which peers are trusted to say who the client is, and what
//! `X-Forwarded-For`/`X-Forwarded-Proto` or RFC 7239 `Forwarded` then say.
//!
//! Only a trusted peer's headers count. The client is found by walking the
//! forwarding chain from the right (the hop nearest to us) past every
//! trusted proxy: the first untrusted address is the client, since anything
//! left of it was written by the client itself and can be forged.

use std::net::IpAddr;

/// `forwarded_allow_ips`: `*`, or a list of addresses and CIDR networks.
#[derive(Clone, Debug, PartialEq)]
pub enum Trust {
    Everyone,
    Networks(Vec<Network>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    base: IpAddr,
    prefix: u8,
}

impl Network {
    fn parse(text: &str) -> Option<Network> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let base: IpAddr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Network { base, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.base, ip) {
            (IpAddr::V4(b), IpAddr::V4(a)) => {
                prefix_eq(&b.octets(), &a.octets(), u32::from(self.prefix))
            }
            (IpAddr::V6(b), IpAddr::V6(a)) => {
                prefix_eq(&b.octets(), &a.octets(), u32::from(self.prefix))
            }
            _ => false,
        }
    }
}

/// IPv4-mapped IPv6 addresses (dual-stack listeners) compare as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u32) -> bool {
    let whole = (bits / 8) as usize;
    if a[..whole] != b[..whole] {
        return false;
    }
    let rest = bits % 8;
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    a[whole] & mask == b[whole] & mask
}

impl Trust {
    /// Parse a comma-separated list; an invalid entry is an error naming it.
    pub fn parse(spec: &str) -> Result<Trust, String> {
        let mut networks = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "*" {
                return Ok(Trust::Everyone);
            }
            networks.push(
                Network::parse(item)
                    .ok_or_else(|| format!("invalid address or network {item:?}"))?,
            );
        }
        Ok(Trust::Networks(networks))
    }

    pub fn trusts(&self, ip: IpAddr) -> bool {
        match self {
            Trust::Everyone => true,
            Trust::Networks(nets) => nets.iter().any(|n| n.contains(ip)),
        }
    }

    fn trusts_text(&self, host: &str) -> bool {
        match self {
            Trust::Everyone => true,
            Trust::Networks(_) => parse_host(host).is_some_and(|ip| self.trusts(ip)),
        }
    }
}

/// What a trusted proxy told us.
#[derive(Debug, Default, PartialEq)]
pub struct Forwarded {
    pub client: Option<String>,
    pub scheme: Option<&'static str>,
}

/// Resolve the client and scheme from the request's headers. The caller has
/// already checked that the peer itself is trusted.
pub fn resolve<'a>(
    trust: &Trust,
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> Forwarded {
    let mut forwarded: Vec<&[u8]> = Vec::new();
    let mut xff: Vec<&[u8]> = Vec::new();
    let mut xfp: Option<&[u8]> = None;
    for (name, value) in headers {
        match name {
            b"forwarded" => forwarded.push(value),
            b"x-forwarded-for" => xff.push(value),
            b"x-forwarded-proto" => xfp = Some(value),
            _ => {}
        }
    }
    // X-Forwarded-* win when present: the common proxies (nginx, HAProxy,
    // cloud load balancers) set them and pass other headers through, so a
    // client could otherwise forge `Forwarded`. RFC 7239 `Forwarded` is
    // used only from proxies that send no X-Forwarded-For/-Proto.
    if xff.is_empty() && xfp.is_none() && !forwarded.is_empty() {
        return from_forwarded(trust, &forwarded);
    }
    let mut out = Forwarded::default();
    if !xff.is_empty() {
        let hops: Vec<String> = xff
            .iter()
            .flat_map(|v| v.split(|&b| b == b','))
            .map(|h| String::from_utf8_lossy(h).trim().to_string())
            .filter(|h| !h.is_empty())
            .collect();
        out.client = pick_client(trust, &hops);
    }
    if let Some(proto) = xfp {
        // A chain of proxies appends; the nearest hop's value is the last.
        let last = proto.rsplit(|&b| b == b',').next().unwrap_or(proto);
        out.scheme = scheme(String::from_utf8_lossy(last).trim());
    }
    out
}

fn from_forwarded(trust: &Trust, values: &[&[u8]]) -> Forwarded {
    let mut hops: Vec<String> = Vec::new();
    let mut protos: Vec<Option<&'static str>> = Vec::new();
    for element in values.iter().flat_map(|v| v.split(|&b| b == b',')) {
        let text = String::from_utf8_lossy(element);
        let mut host = None;
        let mut proto = None;
        for pair in text.split(';') {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                "for" => host = Some(strip_port(value).to_string()),
                "proto" => proto = scheme(value),
                _ => {}
            }
        }
        if let Some(host) = host {
            hops.push(host);
            protos.push(proto);
        } else if proto.is_some() {
            hops.push(String::new());
            protos.push(proto);
        }
    }
    let client = pick_client(trust, &hops);
    // The scheme the client used is the one recorded by the first proxy it
    // reached: the element of the chosen client, or the nearest with one.
    let chosen = client
        .as_ref()
        .and_then(|c| hops.iter().rposition(|h| h == c));
    let scheme = chosen
        .and_then(|i| protos[i])
        .or_else(|| protos.iter().rev().flatten().next().copied());
    Forwarded { client, scheme }
}

/// Right to left past trusted proxies; if all are trusted, the leftmost.
fn pick_client(trust: &Trust, hops: &[String]) -> Option<String> {
    let hops: Vec<&String> = hops.iter().filter(|h| !h.is_empty()).collect();
    for hop in hops.iter().rev() {
        if !trust.trusts_text(hop) {
            return Some((*hop).clone());
        }
    }
    hops.first().map(|h| (*h).clone())
}

fn scheme(value: &str) -> Option<&'static str> {
    match value.to_ascii_lowercase().as_str() {
        "http" => Some("http"),
        "https" => Some("https"),
        "ws" => Some("ws"),
        "wss" => Some("wss"),
        _ => None,
    }
}

/// `1.2.3.4:80` → `1.2.3.4`, `[::1]:80` → `::1`; obfuscated ids unchanged.
fn strip_port(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match value.split_once(':') {
        Some((host, port)) if !port.contains(':') => host,
        _ => value,
    }
}

fn parse_host(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&'static str, &'static str)]) -> Vec<(&'static [u8], &'static [u8])> {
        list.iter()
            .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
            .collect()
    }

    fn trust(spec: &str) -> Trust {
        Trust::parse(spec).expect("valid trust list")
    }

    #[test]
    fn networks_and_addresses() {
        let t = trust("127.0.0.1, 10.0.0.0/8, ::1, fd00::/8");
        assert!(t.trusts("127.0.0.1".parse().unwrap()));
        assert!(t.trusts("10.200.3.4".parse().unwrap()));
        assert!(!t.trusts("11.0.0.1".parse().unwrap()));
        assert!(t.trusts("::1".parse().unwrap()));
        assert!(t.trusts("fd12::5".parse().unwrap()));
        assert!(t.trusts("::ffff:127.0.0.1".parse().unwrap()));
        assert!(trust("*").trusts("8.8.8.8".parse().unwrap()));
        assert!(Trust::parse("10.0.0.0/33").is_err());
        assert!(Trust::parse("nonsense").is_err());
    }

    #[test]
    fn x_forwarded_for_skips_trusted_hops() {
        let t = trust("127.0.0.1, 10.0.0.0/8");
        let h = headers(&[
            ("x-forwarded-for", "6.6.6.6, 1.2.3.4, 10.0.0.2"),
            ("x-forwarded-proto", "https"),
        ]);
        let f = resolve(&t, h.iter().copied());
        assert_eq!(f.client.as_deref(), Some("1.2.3.4"));
        assert_eq!(f.scheme, Some("https"));
    }

    #[test]
    fn all_trusted_takes_leftmost() {
        let t = trust("*");
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 2.2.2.2")]);
        assert_eq!(
            resolve(&t, h.iter().copied()).client.as_deref(),
            Some("1.1.1.1")
        );
    }

    #[test]
    fn forwarded_header() {
        let t = trust("127.0.0.1");
        let h = headers(&[(
            "forwarded",
            "for=6.6.6.6;proto=http, for=\"[2001:db8::1]:4711\";proto=https",
        )]);
        let f = resolve(&t, h.iter().copied());
        assert_eq!(f.client.as_deref(), Some("2001:db8::1"));
        assert_eq!(f.scheme, Some("https"));
    }

    #[test]
    fn x_forwarded_beats_a_forged_forwarded() {
        let t = trust("127.0.0.1");
        let h = headers(&[
            ("forwarded", "for=8.8.8.8;proto=https"),
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-proto", "http"),
        ]);
        let f = resolve(&t, h.iter().copied());
        assert_eq!(f.client.as_deref(), Some("1.2.3.4"));
        assert_eq!(f.scheme, Some("http"));
    }

    #[test]
    fn unknown_proto_ignored() {
        let t = trust("*");
        let h = headers(&[("x-forwarded-proto", "gopher")]);
        assert_eq!(resolve(&t, h.iter().copied()).scheme, None);
    }
}
