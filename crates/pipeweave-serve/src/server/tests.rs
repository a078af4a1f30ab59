//! The server on a real socket, sent hostile requests by hand: each gets its error, and the server
//! answers the next request as if nothing happened.

use super::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A server on a free port of 127.0.0.1, in a thread of its own: its port.
fn start(opened: Option<Opened>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    listener.set_nonblocking(true).expect("non-blocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(run(listener, port, opened))
    });
    port
}

/// An answer: status, headers (lowercase names) and body.
struct Answer {
    status: u16,
    headers: String,
    body: Vec<u8>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }
}

/// Sends `head` (the request line and headers, without the blank line) and `body`.
fn send(port: u16, head: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a timeout");
    let mut request = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    // The server may answer (and close) before reading a body it refuses.
    let _ = stream.write_all(&request);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no answer: {}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    Answer {
        status,
        headers: head,
        body: raw[split + 4..].to_vec(),
    }
}

fn post(port: u16, path: &str, body: &str) -> Answer {
    send(
        port,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
             Content-Type: application/json"
        ),
        body.as_bytes(),
    )
}

fn build_body(text: &str, p: u32, m: u32) -> String {
    serde_json::json!({
        "plan": {"text": text, "ranks": p, "microbatches": m},
        "compare": [],
    })
    .to_string()
}

/// The server still builds a schedule.
fn still_serves(port: u16) {
    let text = pipeweave_dsl::library::get("1f1b").expect("1f1b").source;
    let answer = post(port, "/api/build", &build_body(text, 4, 8));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.json()["ok"], true);
}

#[test]
fn the_page_and_its_files_are_served_with_a_strict_policy() {
    let port = start(None);
    for (path, media) in [
        ("/", "text/html"),
        ("/playground.js", "text/javascript"),
        ("/playground.css", "text/css"),
    ] {
        let answer = send(
            port,
            &format!("GET {path} HTTP/1.1\r\nHost: localhost:{port}"),
            b"",
        );
        assert_eq!(answer.status, 200, "{path}");
        assert!(answer.headers.contains(media), "{path}: {}", answer.headers);
        assert!(
            answer
                .headers
                .contains("content-security-policy: default-src 'none'")
        );
        assert!(answer.headers.contains("x-content-type-options: nosniff"));
    }
    let session = send(
        port,
        &format!("GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
        b"",
    );
    let info = session.json();
    assert_eq!(info["file"], serde_json::Value::Null);
    assert!(info["examples"].as_array().expect("examples").len() >= 9);
    assert!(
        info["specs"]
            .as_array()
            .expect("specs")
            .iter()
            .any(|s| s == "default")
    );
}

#[test]
fn an_oversized_body_is_refused_and_the_server_goes_on() {
    let port = start(None);
    let huge = build_body(&"#".repeat(MAX_BODY_BYTES + 1), 4, 8);
    let answer = post(port, "/api/build", &huge);
    assert_eq!(answer.status, 413, "{}", answer.text());
    assert!(
        answer.json()["error"]
            .as_str()
            .expect("a message")
            .contains("larger than 2 MiB")
    );
    still_serves(port);
}

#[test]
fn a_foreign_host_or_origin_is_refused_and_the_server_goes_on() {
    let port = start(None);
    let body = build_body("stages P", 2, 2);
    for head in [
        format!(
            "POST /api/build HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n\
             Content-Type: application/json"
        ),
        format!(
            "POST /api/build HTTP/1.1\r\nHost: evil.example:{port}\r\nContent-Type: application/json"
        ),
        format!(
            "POST /api/build HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nSec-Fetch-Site: cross-site\r\n\
             Content-Type: application/json"
        ),
        format!(
            "POST /api/build HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Content-Type: application/x-www-form-urlencoded"
        ),
        format!("GET / HTTP/1.1\r\nHost: rebound.example:{port}"),
        format!("DELETE /api/save HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
    ] {
        let answer = send(port, &head, body.as_bytes());
        assert_eq!(answer.status, 403, "{head}: {}", answer.text());
        assert!(answer.json()["error"].is_string());
        assert!(!answer.text().contains("<svg"));
    }
    still_serves(port);
}

#[test]
fn a_save_writes_the_opened_file_and_nothing_else() {
    let dir = tempfile::tempdir().expect("a folder");
    let inside = dir.path().join("work");
    std::fs::create_dir(&inside).expect("a folder");
    let path = inside.join("mine.weave");
    std::fs::write(&path, "stages P\n").expect("written");
    let port = start(Some(Opened::open(&path).expect("opens")));
    // A path in the request is no field of a save: refused, nothing written anywhere.
    for body in [
        r#"{"text": "hacked", "path": "../evil.weave"}"#.to_owned(),
        r#"{"text": "hacked", "file": "/tmp/evil.weave"}"#.to_owned(),
    ] {
        let answer = post(port, "/api/save", &body);
        assert_eq!(answer.status, 400, "{}", answer.text());
        assert!(answer.text().contains("unknown field"), "{}", answer.text());
    }
    for path in [
        "/api/save/../../evil.weave",
        "/api/save?path=../evil.weave",
        "/../evil.weave",
        "/%2e%2e/evil.weave",
    ] {
        let answer = post(port, path, r#"{"text": "hacked"}"#);
        assert!(
            [400, 403, 404].contains(&answer.status),
            "{path}: {} {}",
            answer.status,
            answer.text()
        );
    }
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "stages P\n");
    // Only the opened file is there, beside nothing new.
    let listed = |d: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .expect("listed")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(listed(dir.path()), ["work"]);
    assert_eq!(listed(&inside), ["mine.weave"]);
    let answer = post(port, "/api/save", r#"{"text": "stages 2 * P\n"}"#);
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.json()["file"], "mine.weave");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "stages 2 * P\n"
    );
    assert_eq!(listed(&inside), ["mine.weave"]);
    let session = send(
        port,
        &format!("GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{port}"),
        b"",
    );
    assert_eq!(session.json()["text"], "stages 2 * P\n");
}

#[test]
fn a_save_without_an_opened_file_is_refused() {
    let port = start(None);
    let answer = post(port, "/api/save", r#"{"text": "stages P"}"#);
    assert_eq!(answer.status, 409);
    assert!(
        answer.text().contains("without a file"),
        "{}",
        answer.text()
    );
}

#[test]
fn a_schedule_that_hits_the_operation_budget_is_an_error_and_the_server_goes_on() {
    let port = start(None);
    let runaway = "stages P\nprogram { repeat 1000000000 { repeat 1000000000 { } } }\n";
    let answer = post(port, "/api/build", &build_body(runaway, 2, 2));
    assert_eq!(answer.status, 200, "{}", answer.text());
    let built = answer.json();
    assert_eq!(built["ok"], false);
    let message = built["diagnostics"][0]["message"]
        .as_str()
        .expect("a message");
    assert!(
        message.contains("runs more than 67108864 steps"),
        "{message}"
    );
    let text = pipeweave_dsl::library::get("1f1b").expect("1f1b").source;
    let answer = post(port, "/api/build", &build_body(text, 65_536, 1 << 24));
    let built = answer.json();
    assert_eq!(built["ok"], false);
    assert!(
        built["rendered"]
            .as_str()
            .expect("rendered")
            .contains("more than the 67108864 a plan may have")
    );
    still_serves(port);
}

#[test]
fn malformed_requests_get_their_errors() {
    let port = start(None);
    for (body, says) in [
        ("{", "no build request"),
        (r#"{"plan": {"text": 1}}"#, "no build request"),
        (r#"{"plan": {"text": ""}, "shell": "rm"}"#, "unknown field"),
    ] {
        let answer = post(port, "/api/build", body);
        assert_eq!(answer.status, 400, "{body}");
        assert!(answer.text().contains(says), "{body}: {}", answer.text());
    }
    let export = serde_json::json!({
        "plan": {"text": "stages P", "ranks": 2, "microbatches": 2},
        "format": "pytorch",
    });
    let answer = post(port, "/api/export", &export.to_string());
    assert_eq!(answer.status, 422);
    assert!(answer.text().contains("no `program`"), "{}", answer.text());
    still_serves(port);
}

#[test]
fn a_panic_answers_its_request_and_the_pool_goes_on() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let state = AppState::new(0, None);
    runtime.block_on(async {
        for _ in 0..WORKERS + 1 {
            let failed = on_pool(&state, || -> u32 { panic!("a bug in a build") })
                .await
                .expect_err("answered with an error");
            assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
        }
        // Every turn the panics took is back.
        assert_eq!(on_pool(&state, || 7).await.ok(), Some(7));
        assert_eq!(state.slots.available_permits(), WORKERS);
    });
}
