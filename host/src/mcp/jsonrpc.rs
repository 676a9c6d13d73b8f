//! Checks every incoming JSON-RPC line before the MCP library sees it, and
//! answers the malformed ones itself, as JSON-RPC 2.0 asks: a line that is
//! not JSON (invalid UTF-8, a syntax error, nesting deeper than
//! [`MAX_NESTING`], more than [`MAX_MESSAGE_BYTES`]) gets a parse error
//! (-32700), a message that is not a valid request gets an invalid-request
//! error (-32600) with its `id` when one can be read, and `tools/call` with
//! malformed params gets invalid params (-32602). The library drops
//! unparsable lines without a word, so a client would wait for its own
//! timeout.
//!
//! Notifications (no `id`) never get an answer, malformed or not. Replies go
//! out only for lines that came in, and a reply is a response (no `method`),
//! which a peer never answers: no error storm can start here.

use serde_json::{Value, json};

/// Largest message accepted, in bytes. A message is copied several times on
/// its way in (the line read here, the MCP library's line buffer, which
/// keeps its size, the parsed text and values), so 4 MiB keeps one
/// request's memory far under 64 MiB; no request of this server comes near
/// it (the longest text argument a tool takes is 20,000 characters,
/// [`super::budget`]). The MCP library's own limit is 16 MiB.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Deepest nesting of arrays and objects in a message: `serde_json`'s
/// recursion limit, which the MCP library parses with too. No request of
/// this server nests deeper than a handful of levels.
pub const MAX_NESTING: usize = 128;

/// JSON-RPC 2.0 error codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// What to do with one incoming line.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// A well-formed message: hand it to the MCP library.
    Forward,
    /// Malformed: send this response (one line, newline included) instead.
    Reply(Vec<u8>),
    /// Nothing to do (a blank line, a malformed notification).
    Ignore,
}

/// The response to a message larger than [`MAX_MESSAGE_BYTES`] (its `id`
/// cannot be read: the message was not kept).
#[must_use]
pub fn oversized() -> Vec<u8> {
    error_line(
        &Value::Null,
        INVALID_REQUEST,
        &format!("the message is larger than {MAX_MESSAGE_BYTES} bytes, the limit of one request; send smaller arguments"),
    )
}

/// Judges one line (its `\n` removed).
#[must_use]
pub fn check_line(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    if line.len() > MAX_MESSAGE_BYTES {
        return Verdict::Reply(oversized());
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Verdict::Reply(error_line(&Value::Null, PARSE_ERROR, "parse error: the message is not valid UTF-8"));
    };
    let message: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Verdict::Reply(parse_failure(text, &e)),
    };
    check_message(&message)
}

/// The reply to a line `serde_json` could not read.
fn parse_failure(text: &str, e: &serde_json::Error) -> Vec<u8> {
    let why = e.to_string();
    if why.contains("recursion limit") {
        return error_line(
            &Value::Null,
            PARSE_ERROR,
            &format!("parse error: arrays and objects nested deeper than {MAX_NESTING} levels"),
        );
    }
    let repaired = replace_lone_surrogates(text);
    if repaired != text
        && let Ok(message) = serde_json::from_str::<Value>(&repaired)
    {
        // Valid JSON text, but a string holds half a UTF-16 pair, which is no
        // character. Read the id past it, so the client can match the answer.
        let id = message.get("id").cloned().filter(valid_id).unwrap_or(Value::Null);
        return error_line(
            &id,
            INVALID_REQUEST,
            "a string holds a lone UTF-16 surrogate escape (such as \\ud800), which is not a character: escape a character outside the Basic Multilingual Plane as a surrogate pair, or send it as UTF-8",
        );
    }
    error_line(&Value::Null, PARSE_ERROR, &format!("parse error: the message is not JSON ({why})"))
}

/// Checks the shape of a parsed message.
fn check_message(message: &Value) -> Verdict {
    let Value::Object(fields) = message else {
        let why = if message.is_array() {
            "invalid request: batches are not supported; send one message per line"
        } else {
            "invalid request: a message is a JSON object"
        };
        return Verdict::Reply(error_line(&Value::Null, INVALID_REQUEST, why));
    };
    let id = fields.get("id");
    let is_notification = id.is_none() && fields.contains_key("method");
    let reply_id = id.filter(|i| valid_id(i)).cloned().unwrap_or(Value::Null);
    let refuse = |code: i64, why: &str| {
        if is_notification { Verdict::Ignore } else { Verdict::Reply(error_line(&reply_id, code, why)) }
    };
    // Not a Request object at all (wrong version, a method that is not a
    // string): answered even without an id, with a `null` one, as JSON-RPC
    // 2.0's own examples do. Only a valid notification goes unanswered.
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Verdict::Reply(error_line(&reply_id, INVALID_REQUEST, "invalid request: `jsonrpc` must be \"2.0\""));
    }
    if let Some(id) = id
        && !valid_id(id)
    {
        // A number the MCP library cannot hold (a fraction, past 64 bits) is
        // still the client's id: answered with it, so the client can match
        // the error to its request.
        let echo = if id.is_number() { id } else { &Value::Null };
        return Verdict::Reply(error_line(echo, INVALID_REQUEST, "invalid request: `id` must be a string or an integer of at most 64 bits"));
    }
    let Some(method) = fields.get("method") else {
        if id.is_some() && (fields.contains_key("result") || fields.contains_key("error")) {
            return Verdict::Forward; // a response to one of the server's requests
        }
        return refuse(INVALID_REQUEST, "invalid request: no `method` (and not a response: no `result` or `error`)");
    };
    let Some(method) = method.as_str() else {
        return Verdict::Reply(error_line(&reply_id, INVALID_REQUEST, "invalid request: `method` must be a string"));
    };
    let params = fields.get("params");
    if let Some(params) = params
        && !params.is_object()
        && !params.is_null()
    {
        return refuse(INVALID_PARAMS, &format!("invalid params: `params` of {method} must be an object"));
    }
    if method == "tools/call" {
        let name = params.and_then(|p| p.get("name"));
        if !name.is_some_and(Value::is_string) {
            return refuse(INVALID_PARAMS, "invalid params: tools/call needs `name`, the tool's name as a string");
        }
        if let Some(arguments) = params.and_then(|p| p.get("arguments"))
            && !arguments.is_object()
            && !arguments.is_null()
        {
            return refuse(INVALID_PARAMS, "invalid params: tools/call `arguments` must be an object of the tool's arguments");
        }
    }
    Verdict::Forward
}

/// A request id JSON-RPC allows and the MCP library can hold: a string or
/// a signed 64-bit integer (`null` is only for replies whose id could not be
/// read; fractions "SHOULD NOT" be used, and the library drops them, or
/// integers past `i64`, with an answer that has no `id` at all).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64()
}

/// One JSON-RPC error response line.
fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
        .unwrap_or_default();
    line.push(b'\n');
    line
}

/// `text` with every `\uXXXX` escape of half a surrogate pair that has no
/// other half replaced by `\uFFFD` (the same length).
fn replace_lone_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let escape_at = |i: usize| -> Option<u16> {
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u'))
            .then(|| text.get(i + 2..i + 6).and_then(|h| u16::from_str_radix(h, 16).ok()))
            .flatten()
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(i) {
            Some(high @ 0xD800..=0xDBFF) if escape_at(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) => {
                let _ = high;
                i += 12;
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str(&text[copied..i]);
                out.push_str("\\uFFFD");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            None => i += 2, // `\"`, `\\` and the other short escapes
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &[u8]) -> Value {
        match check_line(line) {
            Verdict::Reply(bytes) => {
                assert_eq!(bytes.last(), Some(&b'\n'));
                serde_json::from_slice(&bytes).unwrap()
            }
            other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn unreadable_lines_get_a_parse_error() {
        for line in [&b"this is not json"[..], b"\xff\xfe\x00garbage", b"{\"jsonrpc\": \"2.0\", \"id\": 1,", b"{\"a\": 01}"] {
            let r = reply(line);
            assert_eq!((r["error"]["code"].as_i64(), &r["id"]), (Some(PARSE_ERROR), &Value::Null), "{r}");
        }
        let deep = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"a\":{}{}}}}}", "[".repeat(200), "]".repeat(200));
        let r = reply(deep.as_bytes());
        assert_eq!(r["error"]["code"], PARSE_ERROR);
        assert!(r["error"]["message"].as_str().unwrap().contains("128"), "{r}");
        assert_eq!(check_line(format!("{}{}", "[".repeat(100), "]".repeat(100)).as_bytes()), check_line(b"[]"));
    }

    #[test]
    fn a_lone_surrogate_is_answered_with_the_id() {
        let r = reply(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search_text","arguments":{"pattern":"\ud800"}}}"#);
        assert_eq!((r["id"].as_i64(), r["error"]["code"].as_i64()), (Some(42), Some(INVALID_REQUEST)), "{r}");
        let r = reply(br#"{"jsonrpc":"2.0","method":"x\udfff","id":"a\\ud800"}"#);
        assert_eq!(r["id"], "a\\ud800");
        // A proper pair is a character: forwarded.
        assert_eq!(check_line(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud83d\ude00"}}"#), Verdict::Forward);
        assert_eq!(replace_lone_surrogates(r#""\ud83d\ude00 \\ud800 \ud800\u0041 \udc00""#), r#""\ud83d\ude00 \\ud800 \uFFFD\u0041 \uFFFD""#);
    }

    #[test]
    fn invalid_requests_carry_their_id() {
        let r = reply(br#"{"jsonrpc": "2.0", "id": 7, "method": 12}"#);
        assert_eq!((r["id"].as_i64(), r["error"]["code"].as_i64()), (Some(7), Some(INVALID_REQUEST)));
        let r = reply(br#"{"jsonrpc": "2.0", "id": 8}"#);
        assert_eq!((r["id"].as_i64(), r["error"]["code"].as_i64()), (Some(8), Some(INVALID_REQUEST)));
        let r = reply(br#"{"jsonrpc": "1.0", "id": "x", "method": "ping"}"#);
        assert_eq!(r["id"], "x");
        let r = reply(br#"{"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"}"#);
        assert_eq!(r["id"], Value::Null);
        assert_eq!(reply(b"[]")["error"]["code"], INVALID_REQUEST);
        assert_eq!(reply(b"3")["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn malformed_tool_calls_get_invalid_params() {
        for line in [
            &br#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "search_text", "arguments": "not an object"}}"#[..],
            br#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"arguments": {}}}"#,
            br#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": [1]}"#,
            br#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call"}"#,
        ] {
            let r = reply(line);
            assert_eq!((r["id"].as_i64(), r["error"]["code"].as_i64()), (Some(9), Some(INVALID_PARAMS)), "{r}");
        }
    }

    #[test]
    fn good_messages_pass_and_notifications_get_no_answer() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_text","arguments":{"pattern":"x"}}}"#[..],
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\"}\r",
            br#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}"#,
        ] {
            assert_eq!(check_line(line), Verdict::Forward, "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(check_line(br#"{"jsonrpc":"2.0","method":"notifications/x","params":3}"#), Verdict::Ignore);
    }

    /// Ids the MCP library cannot hold (found by the fuzzer: `"id": 1.5`
    /// was answered without any `id`) are refused here, echoing the number.
    #[test]
    fn fractional_and_huge_ids_are_refused_with_the_id() {
        for id in ["1.5", "18446744073709551615", "1e3"] {
            let r = reply(format!(r#"{{"jsonrpc": "2.0", "id": {id}, "method": "ping"}}"#).as_bytes());
            assert_eq!(r["error"]["code"], -32600, "{r}");
            assert_eq!(r["id"], serde_json::from_str::<Value>(id).unwrap(), "{r}");
        }
        assert_eq!(check_line(br#"{"jsonrpc": "2.0", "id": -9223372036854775808, "method": "ping"}"#), Verdict::Forward);
    }

    /// A message without an id that is not a valid notification (JSON-RPC
    /// 2.0's example: `{"jsonrpc": "2.0", "method": 1, "params": "bar"}`) is
    /// an invalid request, answered with a `null` id (found by the fuzzer:
    /// a mangled `jsonrpc` on a notification went unanswered).
    #[test]
    fn malformed_notifications_are_answered_with_a_null_id() {
        for line in [
            &br#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#[..],
            br#"{"jsonrpc": "2[[.0", "method": "notifications/cancelled"}"#,
            b"\xEF\xBB\xBF{\"method\": \"notifications/cancelled\", \"params\": {}}",
        ] {
            let r = reply(line);
            assert_eq!(r["error"]["code"], -32600, "{r}");
            assert_eq!(r["id"], Value::Null, "{r}");
        }
        assert_eq!(check_line(b"   "), Verdict::Ignore);
    }
}
