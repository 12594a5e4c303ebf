//! Headless Chromium driven over the DevTools protocol through `--remote-debugging-pipe`: the
//! browser reads commands from its descriptor 3 and writes answers and events to 4, each a
//! JSON message ended by a NUL byte. The two descriptors are named pipes (`mkfifo`) a shell
//! opens before it runs Chromium, so no unsafe code sets descriptors up.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A browser with one page open.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next: u64,
    session: String,
}

impl Browser {
    /// Start `chrome` headless (its profile and pipes in `dir`) and open `url` in a page.
    pub fn open(chrome: &Path, dir: &Path, url: &str) -> Browser {
        let (cmd, out) = (dir.join("cdp-in"), dir.join("cdp-out"));
        for p in [&cmd, &out] {
            let _ = std::fs::remove_file(p);
            let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
            assert!(ok, "mkfifo {}", p.display());
        }
        let script = format!(
            "exec '{}' --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
             --window-size=1280,900 --user-data-dir='{}' --remote-debugging-pipe \
             3<'{}' 4>'{}'",
            chrome.display(),
            dir.join("cdp-profile").display(),
            cmd.display(),
            out.display()
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The shell opens the command pipe first, then the answer pipe: the same order here.
        let to = std::fs::OpenOptions::new().write(true).open(&cmd).unwrap();
        let from_file = File::open(&out).unwrap();
        let (tx, from) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from_file);
            loop {
                let mut msg = Vec::new();
                match r.read_until(0, &mut msg) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        msg.pop();
                        if let Ok(v) = serde_json::from_slice::<Value>(&msg)
                            && tx.send(v).is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        let mut b = Browser {
            child,
            to,
            from,
            next: 0,
            session: String::new(),
        };
        let target = b.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let id = target["targetId"].as_str().unwrap().to_owned();
        let attached = b.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": id, "flatten": true }),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_owned();
        // Key events reach the focused element only in a page that has focus.
        b.page(
            "Emulation.setFocusEmulationEnabled",
            json!({ "enabled": true }),
        );
        b.page("Page.enable", json!({}));
        // The page's uncaught errors and rejections, kept for `errors`.
        b.page(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": "window.__errors = []; \
                addEventListener('error', (e) => __errors.push(String(e.message))); \
                addEventListener('unhandledrejection', (e) => __errors.push(String(e.reason)));" }),
        );
        b.page("Page.navigate", json!({ "url": url }));
        b
    }

    /// Send a command (to the page's session, or the browser's) and wait for its answer.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        self.to.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v["id"].as_u64() == Some(id) => {
                    assert!(v.get("error").is_none(), "{method}: {v}");
                    return v["result"].clone();
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => panic!("{method}: no answer in 60 s"),
                Err(RecvTimeoutError::Disconnected) => panic!("{method}: chromium went away"),
            }
        }
    }

    /// A command to the page.
    pub fn page(&mut self, method: &str, params: Value) -> Value {
        let s = self.session.clone();
        self.call(Some(&s), method, params)
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.page(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        r["result"]["value"].clone()
    }

    /// Wait until `expression` is true in the page (at most `secs` seconds); how long it took.
    pub fn wait_for(&mut self, expression: &str, secs: u64) -> Duration {
        let start = Instant::now();
        while self.eval(expression) != json!(true) {
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "not true after {secs} s: {expression}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        start.elapsed()
    }

    /// The page's uncaught errors and unhandled rejections so far.
    pub fn errors(&mut self) -> Value {
        self.eval("window.__errors")
    }

    /// Press a key (`ArrowDown`, `ArrowRight`, `End`, ...) in the page.
    pub fn key(&mut self, key: &str) {
        let code = match key {
            "ArrowLeft" => 37,
            "ArrowUp" => 38,
            "ArrowRight" => 39,
            "ArrowDown" => 40,
            "Home" => 36,
            "End" => 35,
            "Enter" => 13,
            _ => 0,
        };
        for kind in ["rawKeyDown", "keyUp"] {
            self.page(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code }),
            );
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self
            .to
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
