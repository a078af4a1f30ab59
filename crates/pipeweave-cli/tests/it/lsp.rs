//! `pipeweave lsp` driven over standard input and output with scripted JSON-RPC, as an editor
//! drives it: initialize, a document opened with errors, its diagnostics, hover, completion,
//! definition, the document fixed, shutdown and exit.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

struct Client {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
}

/// Reads one framed message (`Content-Length: N`, a blank line, N bytes).
fn read_message(reader: &mut BufReader<ChildStdout>) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("pipeweave lsp starts");
        let input = child.stdin.take().expect("its input");
        let mut output = BufReader::new(child.stdout.take().expect("its output"));
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            while let Some(message) = read_message(&mut output) {
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            input,
            messages,
            next_id: 0,
        }
    }

    fn send(&mut self, message: Value) {
        let body = serde_json::to_vec(&message).expect("JSON");
        write!(self.input, "Content-Length: {}\r\n\r\n", body.len()).expect("written");
        self.input.write_all(&body).expect("written");
        self.input.flush().expect("flushed");
    }

    fn next(&mut self) -> Value {
        self.messages
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers within a minute")
    }

    /// Sends a request and waits for its response (notifications on the way are dropped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next diagnostics published.
    fn diagnostics(&mut self) -> Value {
        loop {
            let message = self.next();
            if message["method"] == "textDocument/publishDiagnostics" {
                return message["params"].clone();
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

const URI: &str = "file:///schedules/mine.weave";

const BROKEN: &str = "param lag: int in 0..=2 = 1 \"how far the backwards lag\"
stages P
place loop
program {
  let warmup = min(P - 1 - r, M)
  repeat warmup { F }
  repeat M - warmupp { F B }
  repeat warmup { B }
}
";

fn position(text: &str, needle: &str) -> Value {
    let offset = text.find(needle).expect("found");
    let line = text[..offset].matches('\n').count();
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": text[start..offset].encode_utf16().count()})
}

fn at(needle: &str) -> Value {
    json!({"textDocument": {"uri": URI}, "position": position(BROKEN, needle)})
}

#[test]
fn the_language_server_answers_an_editor_over_stdio() {
    let mut client = Client::start();
    let init = client.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    let capabilities = &init["result"]["capabilities"];
    assert_eq!(capabilities["hoverProvider"], true, "{init}");
    assert_eq!(capabilities["definitionProvider"], true);
    assert_eq!(capabilities["textDocumentSync"], 1);
    client.notify("initialized", json!({}));

    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "weave", "version": 1, "text": BROKEN}}),
    );
    let published = client.diagnostics();
    assert_eq!(published["uri"], URI);
    let diagnostics = published["diagnostics"].as_array().expect("a list");
    assert_eq!(diagnostics.len(), 1, "{published}");
    let d = &diagnostics[0];
    assert_eq!(d["severity"], 1);
    let message = d["message"].as_str().expect("a message");
    assert!(message.starts_with("unknown name `warmupp`"), "{message}");
    assert!(
        message.contains("help: did you mean `warmup`?"),
        "{message}"
    );
    assert_eq!(d["range"]["start"], position(BROKEN, "warmupp"));

    let hover = client.request("textDocument/hover", at("lag: int"));
    let words = hover["result"]["contents"]["value"]
        .as_str()
        .expect("words");
    assert!(words.contains("param lag: int in 0..=2 = 1"), "{words}");
    assert!(words.contains("how far the backwards lag"), "{words}");
    let hover = client.request("textDocument/hover", at("M)"));
    assert_eq!(
        hover["result"]["contents"]["value"],
        "`M` (built in): micro-batches"
    );
    let hover = client.request("textDocument/hover", at("min("));
    assert!(
        hover["result"]["contents"]["value"]
            .as_str()
            .expect("words")
            .starts_with("`min` (function)")
    );

    let completion = client.request("textDocument/completion", at("warmup { F }"));
    let labels: Vec<&str> = completion["result"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["label"].as_str())
        .collect();
    for expected in ["repeat", "require", "min", "max", "lag", "warmup", "P", "M"] {
        assert!(labels.contains(&expected), "{expected} in {labels:?}");
    }

    let definition = client.request("textDocument/definition", at("warmup { B }"));
    assert_eq!(definition["result"]["uri"], URI);
    assert_eq!(
        definition["result"]["range"]["start"],
        position(BROKEN, "warmup =")
    );
    let none = client.request("textDocument/definition", at("P - 1"));
    assert_eq!(none["result"], Value::Null);

    let unknown = client.request("workspace/symbol", json!({"query": ""}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2},
               "contentChanges": [{"text": BROKEN.replace("warmupp", "warmup")}]}),
    );
    let fixed = client.diagnostics();
    assert_eq!(fixed["diagnostics"], json!([]), "{fixed}");

    let shutdown = client.request("shutdown", Value::Null);
    assert_eq!(shutdown["result"], Value::Null);
    assert!(shutdown["error"].is_null());
    client.notify("exit", Value::Null);
    let status = client.child.wait().expect("it exits");
    assert!(status.success(), "{status}");
}
