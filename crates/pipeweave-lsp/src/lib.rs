//! `pipeweave lsp`: the language server of `.weave` schedules over standard input and output,
//! on rust-analyzer's `lsp-server` scaffold with `lsp-types`' messages. It gives the diagnostics
//! of `pipeweave check` as the document changes, hover on names, keywords, functions and actions,
//! completion of keywords, functions, built-in names and the document's parameters, and the
//! definition of a name (`analysis.rs`, pure functions of the text).
//!
//! It reads no file: documents come from the editor (full text on every change) and the resolver
//! sees only the document. A message it cannot handle (a panic in it, a malformed request) is
//! answered with an error and the server goes on. Printing is the command line's.

#![warn(missing_docs)]

mod analysis;
mod lines;

pub use analysis::{MAX_DOCUMENT_BYTES, completion, definition, diagnostics, document_name, hover};
pub use lines::LineIndex;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{Completion, GotoDefinition, HoverRequest, Request as _};
use lsp_types::{
    CompletionOptions, CompletionResponse, GotoDefinitionResponse, HoverProviderCapability, OneOf,
    PublishDiagnosticsParams, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind,
    Uri,
};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What the server announces it does.
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions::default()),
        definition_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// Serves the editor on standard input and output until it says `exit`.
pub fn run_stdio() -> Result<(), String> {
    let (connection, io) = Connection::stdio();
    serve(&connection)?;
    drop(connection);
    io.join()
        .map_err(|e| format!("the language server's input or output failed: {e}"))
}

/// The open documents by URI.
#[derive(Debug, Default)]
struct Documents(BTreeMap<String, (Uri, String)>);

/// Serves `connection`: the handshake, then every message until `shutdown` and `exit`.
pub fn serve(connection: &Connection) -> Result<(), String> {
    let capabilities = serde_json::to_value(capabilities())
        .map_err(|e| format!("cannot write the server's capabilities: {e}"))?;
    connection
        .initialize(capabilities)
        .map_err(|e| format!("the editor did not start the language server: {e}"))?;
    let mut documents = Documents::default();
    for message in &connection.receiver {
        match message {
            Message::Request(request) => {
                if connection
                    .handle_shutdown(&request)
                    .map_err(|e| format!("the editor did not stop the language server: {e}"))?
                {
                    return Ok(());
                }
                let id = request.id.clone();
                let method = request.method.clone();
                let response = catch_unwind(AssertUnwindSafe(|| answer(&documents, request)))
                    .unwrap_or_else(|_| {
                        Response::new_err(
                            id,
                            ErrorCode::InternalError as i32,
                            format!("pipeweave failed on `{method}` (a bug); the server goes on"),
                        )
                    });
                send(connection, response.into())?;
            }
            Message::Notification(notification) => {
                let published =
                    catch_unwind(AssertUnwindSafe(|| note(&mut documents, notification)));
                if let Ok(Some(diagnostics)) = published {
                    send(connection, diagnostics.into())?;
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

fn send(connection: &Connection, message: Message) -> Result<(), String> {
    connection
        .sender
        .send(message)
        .map_err(|_| "the editor closed the language server's output".to_owned())
}

/// The answer to a request.
fn answer(documents: &Documents, request: Request) -> Response {
    let id = request.id.clone();
    let bad = |e: serde_json::Error| {
        Response::new_err(
            id.clone(),
            ErrorCode::InvalidParams as i32,
            format!("the request's parameters are malformed: {e}"),
        )
    };
    let text_of = |uri: &Uri| documents.0.get(uri.as_str()).map(|(_, t)| t.as_str());
    match request.method.as_str() {
        HoverRequest::METHOD => {
            match serde_json::from_value::<lsp_types::HoverParams>(request.params) {
                Ok(p) => {
                    let at = p.text_document_position_params;
                    let hover = text_of(&at.text_document.uri).and_then(|t| hover(t, at.position));
                    Response::new_ok(id, hover)
                }
                Err(e) => bad(e),
            }
        }
        Completion::METHOD => {
            match serde_json::from_value::<lsp_types::CompletionParams>(request.params) {
                Ok(p) => {
                    let uri = &p.text_document_position.text_document.uri;
                    let items = completion(text_of(uri).unwrap_or_default());
                    Response::new_ok(id, CompletionResponse::Array(items))
                }
                Err(e) => bad(e),
            }
        }
        GotoDefinition::METHOD => {
            match serde_json::from_value::<lsp_types::GotoDefinitionParams>(request.params) {
                Ok(p) => {
                    let at = p.text_document_position_params;
                    let uri = &at.text_document.uri;
                    let found = text_of(uri)
                        .and_then(|t| definition(uri, t, at.position))
                        .map(GotoDefinitionResponse::Scalar);
                    Response::new_ok(id, found)
                }
                Err(e) => bad(e),
            }
        }
        other => Response::new_err(
            id,
            ErrorCode::MethodNotFound as i32,
            format!("the pipeweave language server does not answer `{other}`"),
        ),
    }
}

/// Takes in a notification; the diagnostics to publish when a document changed.
fn note(documents: &mut Documents, notification: Notification) -> Option<Notification> {
    let uri = match notification.method.as_str() {
        DidOpenTextDocument::METHOD => {
            let p: lsp_types::DidOpenTextDocumentParams =
                serde_json::from_value(notification.params).ok()?;
            let uri = p.text_document.uri;
            documents
                .0
                .insert(uri.as_str().to_owned(), (uri.clone(), p.text_document.text));
            uri
        }
        DidChangeTextDocument::METHOD => {
            let p: lsp_types::DidChangeTextDocumentParams =
                serde_json::from_value(notification.params).ok()?;
            // Full sync: the last change is the whole text.
            let text = p.content_changes.into_iter().last()?.text;
            let uri = p.text_document.uri;
            documents
                .0
                .insert(uri.as_str().to_owned(), (uri.clone(), text));
            uri
        }
        DidCloseTextDocument::METHOD => {
            let p: lsp_types::DidCloseTextDocumentParams =
                serde_json::from_value(notification.params).ok()?;
            documents.0.remove(p.text_document.uri.as_str());
            return Some(publish(p.text_document.uri, Vec::new()));
        }
        _ => return None,
    };
    let (_, text) = documents.0.get(uri.as_str())?;
    let found = diagnostics(&uri, &document_name(&uri), text);
    Some(publish(uri, found))
}

fn publish(uri: Uri, diagnostics: Vec<lsp_types::Diagnostic>) -> Notification {
    Notification::new(
        PublishDiagnostics::METHOD.to_owned(),
        PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        },
    )
}
