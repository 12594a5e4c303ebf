//! Just enough HTTP/1.1 for one page on the loopback interface: `GET` requests read with a
//! size and time limit, responses with a length and `Connection: close`.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Bytes of a request line and headers at most.
const MAX_HEAD: usize = 16 << 10;

/// A request: its path (percent-decoded), query parameters and `Host` header.
#[derive(Debug)]
pub struct Request {
    pub path: String,
    pub query: HashMap<String, String>,
    pub host: Option<String>,
}

/// A response: status, type and body.
#[derive(Debug)]
pub struct Response {
    code: u16,
    reason: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Response {
    pub fn ok(content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            code: 200,
            reason: "OK",
            content_type,
            body,
        }
    }

    pub fn status(code: u16, reason: &'static str) -> Response {
        Response {
            code,
            reason,
            content_type: "text/plain; charset=utf-8",
            body: reason.as_bytes().to_vec(),
        }
    }

    /// A failed API request: 400 with `{"error": ...}`.
    pub fn json_error(message: &str) -> Response {
        Response {
            code: 400,
            reason: "Bad Request",
            content_type: "application/json",
            body: serde_json::json!({ "error": message })
                .to_string()
                .into_bytes(),
        }
    }
}

/// The next request on `stream`, or `None` when it is not a `GET` that arrived whole in time
/// (answered with an error status where that can be said).
pub fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(buf.get(..n)?);
        if head.len() > MAX_HEAD {
            let _ = respond(
                stream,
                &Response::status(431, "Request Header Fields Too Large"),
            );
            return None;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next()?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    if method != "GET" {
        let _ = respond(stream, &Response::status(405, "Method Not Allowed"));
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    let host = text.lines().skip(1).find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("host")
            .then(|| value.trim().to_ascii_lowercase())
    });
    Some(Request {
        path: decode(path),
        query,
        host,
    })
}

/// Percent-decoding (`+` as a space, as forms send it).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0usize;
    while let Some(&c) = b.get(i) {
        let hex = |j: usize| {
            b.get(j)
                .and_then(|&h| char::from(h).to_digit(16))
                .and_then(|d| u8::try_from(d).ok())
        };
        match c {
            b'%' => match (hex(i.saturating_add(1)), hex(i.saturating_add(2))) {
                (Some(h), Some(l)) => {
                    out.push(h.saturating_mul(16).saturating_add(l));
                    i = i.saturating_add(3);
                    continue;
                }
                _ => out.push(c),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i = i.saturating_add(1);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Write `r` and close.
pub fn respond(stream: &mut TcpStream, r: &Response) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        r.code,
        r.reason,
        r.content_type,
        r.body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&r.body)?;
    stream.flush()
}
