//! Headless Chromium for the report's tests: found on the PATH (`cargo xtask test` installs
//! Debian's `chromium`), started with no network and a fresh profile, either for one job
//! (`--dump-dom`, `--screenshot`) or driven over the DevTools protocol on a pipe, to measure the
//! page as laid out and to press its controls like a user.
//!
//! The page has no script, so any console message (an error, a blocked request) is a fault;
//! both ways collect them.

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long one browser may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(120);

/// Flags for a machine whose network is closed: no sandbox (containers), no GPU, nothing that
/// phones home, no shared-memory file system needed.
const FLAGS: [&str; 10] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
];

/// The Chromium binary: `PIPEWEAVE_CHROMIUM`, else `chromium` (Debian's package) or
/// `chromium-browser` on the PATH.
pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("PIPEWEAVE_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "the report's browser tests need headless Chromium and none is on the PATH: \
         `cargo xtask test` installs it (as root with apt-get), or run \
         `sudo apt-get install chromium`, or point PIPEWEAVE_CHROMIUM at a Chromium binary"
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Waits for `child` until [`LIMIT`] after `started`, killing it past that.
fn finish(child: &mut Child, started: Instant) -> std::process::ExitStatus {
    loop {
        if let Some(status) = child.try_wait().expect("chromium runs") {
            return status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {} s", LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs headless Chromium on `page` with `args` in a fresh profile: (stdout, stderr).
pub fn headless(page: &Path, profile: &Path, args: &[String]) -> (String, String) {
    let _ = std::fs::remove_dir_all(profile);
    let out_path = profile.with_extension("out");
    let err_path = profile.with_extension("err");
    let out = std::fs::File::create(&out_path).expect("stdout file");
    let err = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = Command::new(chromium())
        .args(FLAGS)
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("chromium starts");
    let status = finish(&mut child, Instant::now());
    let stderr = read(&err_path);
    assert!(status.success(), "chromium failed ({status}):\n{stderr}");
    (read(&out_path), stderr)
}

/// The console messages Chromium logged on stderr for the page (errors, CSP violations, script
/// output).
pub fn console_messages(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

/// A page open in headless Chromium, driven over the DevTools protocol on a pipe (Chromium
/// reads commands on its descriptor 3 and answers on 4, each message ended by a NUL byte).
#[derive(Debug)]
pub struct Browser {
    child: Child,
    input: Option<ChildStdin>,
    messages: Receiver<Value>,
    started: Instant,
    next_id: u64,
    session: String,
    err_path: PathBuf,
    /// The console messages, CSP reports and uncaught exceptions seen so far.
    console: Vec<String>,
}

impl Browser {
    /// Opens `page` in a viewport `width` × `height` CSS pixels and waits until it has loaded.
    pub fn open(page: &Path, profile: &Path, width: u32, height: u32) -> Browser {
        Browser::open_url(
            &format!("file://{}", page.display()),
            profile,
            width,
            height,
        )
    }

    /// Opens `url` (a page file, or a server on this machine) as [`Browser::open`] does.
    pub fn open_url(url: &str, profile: &Path, width: u32, height: u32) -> Browser {
        let _ = std::fs::remove_dir_all(profile);
        let err_path = profile.with_extension("err");
        let err = std::fs::File::create(&err_path).expect("stderr file");
        // The shell hands our pipes to Chromium as its descriptors 3 and 4.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg(chromium())
            .args(FLAGS)
            .args([
                "--enable-logging=stderr",
                "--v=0",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .expect("chromium starts");
        let input = child.stdin.take();
        let mut output = child.stdout.take().expect("chromium's pipe");
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut chunk = [0u8; 65536];
            while let Ok(n @ 1..) = output.read(&mut chunk) {
                pending.extend_from_slice(&chunk[..n]);
                while let Some(end) = pending.iter().position(|b| *b == 0) {
                    let message: Vec<u8> = pending.drain(..=end).collect();
                    let value = serde_json::from_slice(&message[..end]).expect("a JSON message");
                    if tx.send(value).is_err() {
                        return;
                    }
                }
            }
        });
        let mut browser = Browser {
            child,
            input,
            messages,
            started: Instant::now(),
            next_id: 0,
            session: String::new(),
            err_path,
            console: Vec::new(),
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].clone();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_owned();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            browser.call(domain, json!({}));
        }
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser.call("Page.navigate", json!({ "url": url }));
        while browser.next_message()["method"] != "Page.loadEventFired" {}
        browser
    }

    /// The next message from Chromium; console events are noted on the way.
    fn next_message(&mut self) -> Value {
        let left = LIMIT.saturating_sub(self.started.elapsed());
        let message = match self.messages.recv_timeout(left) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => panic!("chromium did not answer within the limit"),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("chromium closed its pipe:\n{}", read(&self.err_path))
            }
        };
        self.note(&message);
        message
    }

    /// Notes a console event.
    fn note(&mut self, message: &Value) {
        let params = &message["params"];
        match message["method"].as_str() {
            Some("Runtime.consoleAPICalled") => self
                .console
                .push(format!("console.{}: {}", params["type"], params["args"])),
            Some("Runtime.exceptionThrown") => self
                .console
                .push(format!("exception: {}", params["exceptionDetails"])),
            Some("Log.entryAdded") => self.console.push(format!(
                "{} {}: {}",
                params["entry"]["source"], params["entry"]["level"], params["entry"]["text"]
            )),
            _ => {}
        }
    }

    /// Sends a command (to the page once attached) and returns its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            command["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&command).expect("JSON");
        bytes.push(0);
        let input = self.input.as_mut().expect("chromium's pipe is open");
        input.write_all(&bytes).expect("chromium reads commands");
        input.flush().expect("chromium reads commands");
        loop {
            let message = self.next_message();
            if message["id"] == id {
                assert!(message["error"].is_null(), "{method}: {}", message["error"]);
                return message["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression evaluated in the page (the page itself runs none;
    /// this is the test measuring it).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression}: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Clicks with the mouse at (x, y) in CSS pixels of the viewport.
    pub fn click(&mut self, x: f64, y: f64) {
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Closes the browser: the console messages seen over the protocol and on stderr.
    pub fn close(mut self) -> Vec<String> {
        self.session.clear();
        self.call("Browser.close", json!({}));
        drop(self.input.take());
        // The rest of the messages, up to the end of the pipe.
        while self.started.elapsed() < LIMIT {
            match self.messages.recv_timeout(Duration::from_millis(100)) {
                Ok(message) => self.note(&message),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = finish(&mut self.child, self.started);
        let stderr = read(&self.err_path);
        assert!(status.success(), "chromium failed ({status}):\n{stderr}");
        let mut console = std::mem::take(&mut self.console);
        console.extend(console_messages(&stderr).into_iter().map(str::to_owned));
        console
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A test that failed half-way leaves no browser behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
