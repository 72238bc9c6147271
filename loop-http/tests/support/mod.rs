//! A tiny, independent HTTP/1.1 response parser for tests: it checks what
//! the encoder wrote the way a client would read it (RFC 9112 §6.3).

#![allow(dead_code)]

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub trailers: Vec<(String, String)>,
    /// "none", "length", "chunked" or "close".
    pub framing: &'static str,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn count(&self, name: &str) -> usize {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .count()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Field lines up to and including the empty line; returns (fields, bytes used).
fn fields(buf: &[u8]) -> Result<(Vec<(String, String)>, usize), String> {
    let end = find(buf, b"\r\n\r\n")
        .map(|i| i + 4)
        .or_else(|| buf.starts_with(b"\r\n").then_some(2));
    let end = end.ok_or("unterminated field section")?;
    let mut out = Vec::new();
    for line in buf[..end].split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").ok_or("bare LF")?;
        if line.is_empty() {
            break;
        }
        let colon = line.iter().position(|&b| b == b':').ok_or("no colon")?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err(format!("bad name {name:?}"));
        }
        if value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0) {
            return Err("CR/LF/NUL in value".into());
        }
        let value = String::from_utf8_lossy(value)
            .trim_matches([' ', '\t'])
            .to_string();
        out.push((String::from_utf8_lossy(name).into_owned(), value));
    }
    Ok((out, end))
}

/// Parse one response from the front of `buf`. A close-delimited body runs
/// to the end of `buf`. Returns the response and the bytes it used.
pub fn parse_response(buf: &[u8], request_is_head: bool) -> Result<(Response, usize), String> {
    let line_end = find(buf, b"\r\n").ok_or("no status line")?;
    let line = std::str::from_utf8(&buf[..line_end]).map_err(|e| e.to_string())?;
    let rest = line.strip_prefix("HTTP/1.1 ").ok_or("not HTTP/1.1")?;
    let (code, reason) = rest.split_at(3);
    let status: u16 = code.parse().map_err(|_| "bad status")?;
    let reason = reason
        .strip_prefix(' ')
        .ok_or("no SP after status")?
        .to_string();
    let (headers, used) = fields(&buf[line_end + 2..])?;
    let mut pos = line_end + 2 + used;
    let mut resp = Response {
        status,
        reason,
        headers,
        ..Response::default()
    };

    let te = resp.header("transfer-encoding").map(str::to_string);
    let cl = resp.header("content-length").map(str::to_string);
    if te.is_some() && cl.is_some() {
        return Err("both content-length and transfer-encoding".into());
    }
    if request_is_head || status < 200 || status == 204 || status == 304 {
        resp.framing = "none";
    } else if let Some(te) = te {
        if te != "chunked" {
            return Err(format!("transfer-encoding {te}"));
        }
        resp.framing = "chunked";
        loop {
            let size_end = find(&buf[pos..], b"\r\n").ok_or("unterminated chunk size")?;
            let size = std::str::from_utf8(&buf[pos..pos + size_end]).map_err(|e| e.to_string())?;
            let size =
                usize::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {size:?}"))?;
            pos += size_end + 2;
            if size == 0 {
                let (trailers, used) = fields(&buf[pos..])?;
                resp.trailers = trailers;
                pos += used;
                break;
            }
            let data = buf.get(pos..pos + size).ok_or("short chunk")?;
            resp.body.extend_from_slice(data);
            pos += size;
            if buf.get(pos..pos + 2) != Some(b"\r\n") {
                return Err("chunk without CRLF".into());
            }
            pos += 2;
        }
    } else if let Some(cl) = cl {
        let n: usize = cl.parse().map_err(|_| "bad content-length")?;
        resp.framing = "length";
        resp.body = buf.get(pos..pos + n).ok_or("short body")?.to_vec();
        pos += n;
    } else {
        resp.framing = "close";
        resp.body = buf[pos..].to_vec();
        pos = buf.len();
    }
    Ok((resp, pos))
}
