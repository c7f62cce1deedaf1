//! A fake model API on 127.0.0.1: one small HTTP/1.1 server that speaks the four wire protocols
//! the clients use (Anthropic Messages, OpenAI Responses, OpenAI chat completions for Copilot
//! CLI, Gemini `streamGenerateContent`) and
//! answers the main agent's requests from a script.
//!
//! Every connection gets one answer and is closed (`Connection: close`), so a streamed body ends
//! when the socket does and no keep-alive bookkeeping is needed.
//!
//! Main-agent requests are the ones that offer the model tools (`tools` non-empty in the JSON
//! body); only those consume the script. The clients' other requests (titles, summaries,
//! next-speaker checks, quota probes) carry no tools and get a harmless text answer, or the one
//! a test gives them (`answer_others`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

/// One scripted answer to a main-agent request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// An ordinary final answer: the turn ends.
    Text(String),
    /// A tool call that makes the client run this command with its own shell tool.
    Shell(String),
    /// A call of one of the client's own tools by its name, with these arguments (Codex's
    /// `create_goal`, `update_goal`): for the Anthropic and OpenAI Responses APIs.
    Tool(&'static str, Value),
    /// HTTP 429 with the API's own rate-limit error body.
    RateLimit,
    /// HTTP 429 whose message says when to try again: "Please try again in <n>s."
    RateLimitFor(u64),
    /// HTTP 429 for a plan's limit that resets in this many seconds, as each provider sends
    /// it: Anthropic's `anthropic-ratelimit-unified-*` headers (rejected, five-hour claim, the
    /// reset in unix seconds), OpenAI's `usage_limit_reached` body with `resets_at` and the
    /// `x-codex-primary-*` headers, Google's `RESOURCE_EXHAUSTED` with a RetryInfo delay.
    PlanLimit(u64),
    /// HTTP 429 for a spent quota, which no wait cures: OpenAI's `insufficient_quota` on its
    /// two APIs (OpenCode 2 fails the turn at once on it, where it retries a rate limit ten
    /// times); the Anthropic and Gemini APIs send their rate-limit error.
    Quota,
}

impl Reply {
    /// The rate-limit message `base`, with the retry delay when the reply names one.
    fn limit_message(&self, base: &str) -> String {
        match self {
            Reply::RateLimitFor(secs) => format!("{base} Please try again in {secs}s."),
            _ => base.to_string(),
        }
    }
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: String,
    /// Whether it was a main-agent request (it offered tools), which consumed the script.
    pub main: bool,
}

/// How a test answers the requests that are not the main agent's: from the request's JSON
/// body, a text, or `None` for the usual "ok".
type Others = Box<dyn Fn(&Value) -> Option<String> + Send>;

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Request>,
    counter: u64,
    others: Option<Others>,
}

pub struct FakeApi {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl FakeApi {
    /// Starts the server on an ephemeral port with `script` as the queue of main-agent replies.
    /// Once the script is used up, every main request is answered `Text("done")`.
    pub fn start(script: Vec<Reply>) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake API");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&shared);
                thread::spawn(move || {
                    if let Err(e) = serve(stream, &shared) {
                        eprintln!("fake API: connection error: {e}");
                    }
                });
            }
        });
        FakeApi { port, state }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn main_requests(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.main).collect()
    }

    /// Whether `text` appears in the body of any request the model received.
    pub fn saw(&self, text: &str) -> bool {
        self.requests().iter().any(|r| r.body.contains(text))
    }

    /// Answers the requests that are not the main agent's (such as Claude Code's evaluator of a
    /// `/goal`) with `answer`'s text, where it gives one, instead of "ok".
    pub fn answer_others(&self, answer: impl Fn(&Value) -> Option<String> + Send + 'static) {
        self.state.lock().unwrap().others = Some(Box::new(answer));
    }

    /// Adds `replies` to the end of the script (replies that name what the project gives only
    /// once it is set up).
    pub fn push_script(&self, replies: Vec<Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// How many scripted replies are still unused.
    pub fn remaining(&self) -> usize {
        self.state.lock().unwrap().script.len()
    }

    /// A one-line-per-request summary, for failure messages.
    pub fn summary(&self) -> String {
        self.requests()
            .iter()
            .map(|r| {
                format!(
                    "{} {} main={} body={}B\n",
                    r.method,
                    r.path,
                    r.main,
                    r.body.len()
                )
            })
            .collect()
    }
}

struct Incoming {
    method: String,
    path: String,
    body: String,
}

fn read_request(stream: &TcpStream) -> std::io::Result<Option<Incoming>> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    Ok(Some(Incoming {
        method,
        path,
        body: String::from_utf8_lossy(&body).into_owned(),
    }))
}

/// What to send back: status, content type, body, and any other headers.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
    headers: Vec<(String, String)>,
}

impl Answer {
    fn json(status: u16, body: Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body: body.to_string(),
            headers: Vec::new(),
        }
    }

    fn sse(body: String) -> Answer {
        Answer {
            status: 200,
            content_type: "text/event-stream",
            body,
            headers: Vec::new(),
        }
    }

    fn with_headers(mut self, headers: &[(&str, String)]) -> Answer {
        self.headers
            .extend(headers.iter().map(|(k, v)| (k.to_string(), v.clone())));
        self
    }
}

/// Unix seconds `secs` from now.
fn unix_in(secs: u64) -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs
}

fn serve(mut stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let Some(req) = read_request(&stream)? else {
        return Ok(());
    };
    let parsed: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
    let main = parsed["tools"].as_array().is_some_and(|t| !t.is_empty());
    let route = req.path.split('?').next().unwrap_or_default().to_string();
    let known = route.starts_with("/v1/messages")
        || route.ends_with("/responses")
        || route.ends_with("/chat/completions")
        || route.contains(":streamGenerateContent")
        || route.contains(":generateContent")
        || route.contains(":countTokens");
    let (reply, n) = {
        let mut st = state.lock().unwrap();
        st.counter += 1;
        let n = st.counter;
        let reply = if main && known && !route.ends_with("/count_tokens") {
            st.script
                .pop_front()
                .unwrap_or_else(|| Reply::Text("done".into()))
        } else {
            Reply::Text(
                st.others
                    .as_ref()
                    .and_then(|answer| answer(&parsed))
                    .unwrap_or_else(|| "ok".into()),
            )
        };
        if let Some(dir) = std::env::var_os("BATON_E2E_DUMP") {
            // For debugging: every request body in a file of its own.
            let name = format!(
                "{}-{n:03}.txt",
                stream.local_addr().map(|a| a.port()).unwrap_or(0)
            );
            let _ = std::fs::write(
                std::path::Path::new(&dir).join(name),
                format!("{} {}\n{}", req.method, req.path, req.body),
            );
        }
        st.requests.push(Request {
            method: req.method.clone(),
            path: req.path.clone(),
            body: req.body.clone(),
            main: main && known,
        });
        (reply, n)
    };
    let answer = if route.ends_with("/v1/messages/count_tokens") {
        Answer::json(200, json!({"input_tokens": 10}))
    } else if route.starts_with("/v1/messages") {
        anthropic(&reply, &parsed, n)
    } else if route.ends_with("/responses") {
        openai(&reply, &parsed, n)
    } else if route.ends_with("/chat/completions") {
        chat_completions(&reply, &parsed, n)
    } else if route.contains(":streamGenerateContent") {
        gemini(&reply, &parsed, n, true)
    } else if route.contains(":generateContent") {
        gemini(&reply, &parsed, n, false)
    } else if route.contains(":countTokens") {
        Answer::json(200, json!({"totalTokens": 10}))
    } else if req.method == "HEAD" {
        // Claude Code's reachability probe (`HEAD /api/hello`).
        Answer::json(200, Value::Null)
    } else {
        eprintln!("fake API: unknown request {} {}", req.method, req.path);
        Answer::json(404, json!({"error": {"message": "not found", "code": 404}}))
    };
    let reason = match answer.status {
        200 => "OK",
        404 => "Not Found",
        429 => "Too Many Requests",
        _ => "Status",
    };
    // A streamed body has no length: it ends when the connection closes.
    let length = if answer.content_type == "text/event-stream" {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", answer.body.len())
    };
    let extra: String = answer
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\n{length}{extra}Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
        answer.status, answer.content_type
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(answer.body.as_bytes())?;
    stream.flush()?;
    // The client may already have closed its end; the answer was written either way.
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// Anthropic Messages API: a streamed (or, when `stream` is not set, a plain JSON) message.
fn anthropic(reply: &Reply, req: &Value, n: u64) -> Answer {
    let model = req["model"].as_str().unwrap_or("claude-fake");
    let (block, stop_reason) = match reply {
        Reply::PlanLimit(secs) => {
            return Answer::json(
                429,
                json!({"type": "error", "error": {"type": "rate_limit_error",
                    "message": "This request would exceed your account's rate limit. Please try again later."}}),
            )
            .with_headers(&[
                ("anthropic-ratelimit-unified-status", "rejected".into()),
                ("anthropic-ratelimit-unified-reset", unix_in(*secs).to_string()),
                ("anthropic-ratelimit-unified-representative-claim", "five_hour".into()),
                ("retry-after", secs.to_string()),
            ]);
        }
        Reply::RateLimit | Reply::RateLimitFor(_) | Reply::Quota => {
            return Answer::json(
                429,
                json!({"type": "error", "error": {"type": "rate_limit_error",
                    "message": reply.limit_message("This request would exceed the rate limit for your organization.")}}),
            );
        }
        Reply::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Reply::Shell(command) => (
            json!({"type": "tool_use", "id": format!("toolu_fake{n}"), "name": "Bash",
                "input": {"command": command, "description": "Run a command"}}),
            "tool_use",
        ),
        Reply::Tool(name, input) => (
            json!({"type": "tool_use", "id": format!("toolu_fake{n}"), "name": name,
                "input": input}),
            "tool_use",
        ),
    };
    let usage = json!({"input_tokens": 10, "output_tokens": 5,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    if req["stream"] != json!(true) {
        return Answer::json(
            200,
            json!({"id": format!("msg_fake{n}"), "type": "message", "role": "assistant",
                "model": model, "content": [block], "stop_reason": stop_reason,
                "stop_sequence": null, "usage": usage}),
        );
    }
    let mut out = event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": format!("msg_fake{n}"),
            "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let (start, delta) = match reply {
        Reply::Shell(_) | Reply::Tool(..) => {
            let mut start = block.clone();
            start["input"] = json!({});
            let partial = block["input"].to_string();
            (
                start,
                json!({"type": "input_json_delta", "partial_json": partial}),
            )
        }
        _ => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": block["text"]}),
        ),
    };
    out += &event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": start}),
    );
    out += &event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    );
    out += &event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    );
    out += &event(
        "message_delta",
        &json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": 5}}),
    );
    out += &event("message_stop", &json!({"type": "message_stop"}));
    Answer::sse(out)
}

/// The arguments for Codex's shell tool, in the form of whichever shell tool the request offers.
fn codex_shell_call(req: &Value, command: &str) -> (String, Value) {
    let names: Vec<&str> = req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    if names.contains(&"shell_command") {
        ("shell_command".into(), json!({"command": command}))
    } else if names.contains(&"exec_command") {
        ("exec_command".into(), json!({"cmd": command}))
    } else {
        ("shell".into(), json!({"command": ["bash", "-lc", command]}))
    }
}

/// OpenAI Responses API: a streamed response with one output item.
fn openai(reply: &Reply, req: &Value, n: u64) -> Answer {
    let item = match reply {
        Reply::PlanLimit(secs) => {
            return Answer::json(
                429,
                json!({"error": {"type": "usage_limit_reached",
                    "message": "The usage limit has been reached", "plan_type": "plus",
                    "resets_at": unix_in(*secs), "resets_in_seconds": secs}}),
            )
            .with_headers(&[
                ("x-codex-primary-used-percent", "100.0".into()),
                ("x-codex-primary-window-minutes", "300".into()),
                ("x-codex-primary-reset-at", unix_in(*secs).to_string()),
                ("x-codex-primary-reset-after-seconds", secs.to_string()),
            ]);
        }
        Reply::Quota => return quota(),
        Reply::RateLimit | Reply::RateLimitFor(_) => {
            return Answer::json(
                429,
                json!({"error": {"message": reply.limit_message("Rate limit reached for requests."),
                    "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
            );
        }
        Reply::Text(text) => json!({"type": "message", "id": format!("msg_fake{n}"),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        Reply::Shell(command) => {
            let (name, args) = codex_shell_call(req, command);
            json!({"type": "function_call", "id": format!("fc_fake{n}"),
                "call_id": format!("call_fake{n}"), "name": name,
                "arguments": args.to_string(), "status": "completed"})
        }
        Reply::Tool(name, args) => json!({"type": "function_call", "id": format!("fc_fake{n}"),
            "call_id": format!("call_fake{n}"), "name": name,
            "arguments": args.to_string(), "status": "completed"}),
    };
    let id = format!("resp_fake{n}");
    let mut out = event(
        "response.created",
        &json!({"type": "response.created", "response": {"id": id, "object": "response",
            "status": "in_progress", "output": []}}),
    );
    out += &event(
        "response.output_item.added",
        &json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
    );
    if let Reply::Text(text) = reply {
        out += &event(
            "response.output_text.delta",
            &json!({"type": "response.output_text.delta", "item_id": item["id"],
                "output_index": 0, "content_index": 0, "delta": text}),
        );
    }
    out += &event(
        "response.output_item.done",
        &json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    );
    out += &event(
        "response.completed",
        &json!({"type": "response.completed", "response": {"id": id, "object": "response",
            "status": "completed", "output": [item],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 15}}}),
    );
    Answer::sse(out)
}

/// OpenAI's answer to a request over a spent quota (429, `insufficient_quota`, no
/// `retry-after`).
fn quota() -> Answer {
    Answer::json(
        429,
        json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}),
    )
}

/// OpenAI chat completions (Copilot CLI's BYOK provider, OpenCode's OpenAI-compatible one):
/// streamed chunks with one text or one shell tool call: `bash`, or `shell` when the request
/// offers that and no `bash` (OpenCode 2 renamed its tool). A 429 carries `retry-after: 1`,
/// which both clients honour between their five retries; a plan's limit, the seconds to its
/// reset.
fn chat_completions(reply: &Reply, req: &Value, n: u64) -> Answer {
    let model = req["model"].as_str().unwrap_or("gpt-4.1");
    let offered = |name: &str| {
        req["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["function"]["name"] == name)
    };
    let shell = if !offered("bash") && offered("shell") {
        "shell"
    } else {
        "bash"
    };
    let (delta, finish) = match reply {
        Reply::Quota => return quota(),
        Reply::RateLimit | Reply::RateLimitFor(_) | Reply::PlanLimit(_) => {
            let retry_after = match reply {
                Reply::PlanLimit(secs) => secs.to_string(),
                _ => "1".into(),
            };
            return Answer::json(
                429,
                json!({"error": {"message": reply.limit_message("Rate limit reached for requests"),
                    "type": "requests", "code": "rate_limit_exceeded"}}),
            )
            .with_headers(&[("retry-after", retry_after)]);
        }
        Reply::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Reply::Shell(command) => (
            json!({"role": "assistant", "tool_calls": [{"index": 0,
                "id": format!("call_fake{n}"), "type": "function",
                "function": {"name": shell, "arguments": json!({"command": command,
                    "description": "Run a command", "mode": "sync", "initial_wait": 30})
                    .to_string()}}]}),
            "tool_calls",
        ),
        Reply::Tool(name, _) => panic!("the fake chat completions API calls no tool {name}"),
    };
    let base = json!({"id": format!("chatcmpl-fake{n}"), "object": "chat.completion.chunk",
        "created": 0, "model": model});
    let chunk = |choice: Value, usage: Option<Value>| {
        let mut c = base.clone();
        c["choices"] = json!([choice]);
        if let Some(u) = usage {
            c["usage"] = u;
        }
        format!("data: {c}\n\n")
    };
    let mut out = chunk(
        json!({"index": 0, "delta": delta, "finish_reason": null}),
        None,
    );
    out += &chunk(
        json!({"index": 0, "delta": {}, "finish_reason": finish}),
        Some(json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})),
    );
    out += "data: [DONE]\n\n";
    Answer::sse(out)
}

/// Gemini `generateContent` / `streamGenerateContent?alt=sse`: one candidate.
fn gemini(reply: &Reply, _req: &Value, _n: u64, stream: bool) -> Answer {
    let part = match reply {
        Reply::PlanLimit(secs) => {
            return Answer::json(
                429,
                json!({"error": {"code": 429,
                "message": format!("You exceeded your current quota, please check your plan and billing details. Please retry in {secs}.5s."),
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                     "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                     "retryDelay": format!("{secs}s")},
                ]}}),
            );
        }
        Reply::RateLimit | Reply::RateLimitFor(_) | Reply::Quota => {
            return Answer::json(
                429,
                json!({"error": {"code": 429,
                    "message": reply.limit_message("Resource has been exhausted (e.g. check quota)."),
                    "status": "RESOURCE_EXHAUSTED"}}),
            );
        }
        Reply::Text(text) => json!({"text": text}),
        Reply::Shell(command) => json!({"functionCall": {"name": "run_shell_command",
            "args": {"command": command, "description": "Run a command"}}}),
        Reply::Tool(name, _) => panic!("the fake Gemini API calls no tool {name}"),
    };
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [part]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
            "totalTokenCount": 15},
        "modelVersion": "gemini-fake"});
    if stream {
        Answer::sse(format!("data: {chunk}\r\n\r\n"))
    } else {
        Answer::json(200, chunk)
    }
}
