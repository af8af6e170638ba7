//! The runner against a stand-in API on loopback that answers every request alike: it
//! passes an API that follows the rule and fails one that breaks any part of it.

use std::cell::Cell;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// An HTTP server that reads each request whole and answers `status` with `body`.
fn answering(runtime: &tokio::runtime::Runtime, status: u16, body: &'static str) -> String {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    runtime.spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if whole(&request) {
                        break;
                    }
                }
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    base
}

/// The request holds its head and as many body bytes as its `content-length` says.
fn whole(request: &[u8]) -> bool {
    let text = String::from_utf8_lossy(request);
    let Some(end) = text.find("\r\n\r\n") else {
        return false;
    };
    let length = text[..end]
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    request.len() >= end + 4 + length
}

fn fuzz(status: u16, body: &'static str, stored: impl Fn() -> u32) {
    let runtime = runtime();
    let base = answering(&runtime, status, body);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let api = Api {
        client: &client,
        base: &base,
        token: Some("t"),
        paths: super::json_paths(["/a".to_owned(), "/b".to_owned()]),
    };
    post_bodies(&runtime, api, bodies(vec!["k"], vec![json!(1)]), stored);
}

const ERROR: &str = r#"{"error":{"code":"bad","message":"no"}}"#;

#[test]
fn an_api_that_refuses_by_the_rule_passes() {
    fuzz(400, ERROR, || 7);
}

#[test]
fn a_valid_request_may_change_what_is_stored() {
    let n = Cell::new(0);
    fuzz(200, "{}", || {
        n.set(n.get() + 1);
        n.get()
    });
}

#[test]
#[should_panic(expected = "500 Internal Server Error")]
fn a_server_error_fails() {
    fuzz(500, ERROR, || 7);
}

#[test]
#[should_panic(expected = "400 Bad Request")]
fn a_refusal_without_a_json_error_fails() {
    fuzz(400, r#"{"message":"no"}"#, || 7);
}

#[test]
#[should_panic(expected = "changed what is stored")]
fn a_refusal_that_changes_what_is_stored_fails() {
    let n = Cell::new(0);
    fuzz(400, ERROR, || {
        n.set(n.get() + 1);
        n.get()
    });
}
