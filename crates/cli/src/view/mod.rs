//! `h5chunk view FILE`: a page in the browser that shows a file and follows a SWMR writer.
//!
//! The CLI reads, the page renders: this process serves the page (`assets/`, embedded in the
//! binary: no CDN, no npm) and a JSON API over the file (`api`) on `127.0.0.1` only, one
//! request at a time, with `std`'s `TcpListener` (`http`): the page asks for a few kinds of
//! thing, and a request is a line and a few headers, so a server crate would add more than it
//! saves. Requests are bounded (16 KiB of headers, 5 s to send them, 4 Mi values a data
//! request; only requests naming `127.0.0.1:PORT` or `localhost:PORT` as their host, so that
//! no other site reaches the file through DNS rebinding); the server stops on Ctrl-C, or after `--exit-after` seconds (what tests use).

mod api;
mod http;

use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use h5chunk::{File, OpenOptions};

use crate::{CliResult, Outcome};

/// The page and its script and style, served as they are.
const INDEX_HTML: &str = include_str!("assets/index.html");
const VIEW_JS: &str = include_str!("assets/view.js");
const VIEW_CSS: &str = include_str!("assets/view.css");

/// Open `file` as a SWMR reader (so that a file a SWMR writer is extending can be followed;
/// a file nobody writes opens so too), else as plain reading does (older superblocks, URLs).
fn open_for_view(file: &Path) -> CliResult<File> {
    let url = file.to_str().is_some_and(|f| f.contains("://"));
    if !url && let Ok(f) = OpenOptions::swmr_read().open(file) {
        return Ok(f);
    }
    crate::open(file)
}

/// `h5chunk view FILE [--port N] [--exit-after S]`.
pub fn view(file: &Path, port: u16, exit_after: Option<u64>) -> CliResult<Outcome> {
    let f = open_for_view(file)?;
    let listener =
        TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("127.0.0.1:{port}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("127.0.0.1:{port}: {e}"))?;
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    {
        let mut out = std::io::stdout().lock();
        // The first line is the address (tests read it); the second says how to stop.
        let _ = writeln!(out, "http://{addr}/");
        let _ = writeln!(
            out,
            "h5chunk view: serving {name} on 127.0.0.1 only; Ctrl-C stops"
        );
        let _ = out.flush();
    }
    if let Some(secs) = exit_after {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            std::process::exit(0);
        });
    }
    let mut state = api::State::new(f, name);
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let Some(req) = http::read_request(&mut stream) else {
            continue;
        };
        // A page of another site whose name was made to point at 127.0.0.1 (DNS rebinding)
        // names its own host: only this address's names are served.
        let port = addr.port();
        let ours = req
            .host
            .as_deref()
            .is_some_and(|h| h == format!("127.0.0.1:{port}") || h == format!("localhost:{port}"));
        let resp = if ours {
            route(&mut state, &req)
        } else {
            http::Response::status(403, "Forbidden")
        };
        // A browser that went away is not this server's failure.
        let _ = http::respond(&mut stream, &resp);
    }
    Ok(Outcome::Ok)
}

/// The response to one request.
fn route(state: &mut api::State, req: &http::Request) -> http::Response {
    match req.path.as_str() {
        "/" | "/index.html" => http::Response::ok("text/html; charset=utf-8", INDEX_HTML.into()),
        "/view.js" => http::Response::ok("text/javascript; charset=utf-8", VIEW_JS.into()),
        "/view.css" => http::Response::ok("text/css; charset=utf-8", VIEW_CSS.into()),
        "/favicon.ico" => http::Response::status(204, "No Content"),
        p if p.starts_with("/api/") => match state.answer(p, &req.query) {
            Ok(json) => http::Response::ok("application/json", json.to_string().into_bytes()),
            Err(e) => http::Response::json_error(&e),
        },
        _ => http::Response::status(404, "Not Found"),
    }
}
