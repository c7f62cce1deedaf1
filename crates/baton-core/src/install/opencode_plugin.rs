//! baton's plugin for OpenCode (`SettingsShape::Plugin`): a JavaScript module of baton's own in
//! `.opencode/plugins/baton.js`, which OpenCode loads at its start. It imports only Node's
//! builtins, so it loads with nothing installed and no network. What each event means to
//! baton is in `client::opencode`; the module only passes them on, waits for each call, and
//! puts what baton prints in front of the model.

use super::settings::{Edited, SettingsError};
use super::shell_words;
use crate::client::Client;

/// The module's first line, by which `--remove` and a later install know the file is baton's.
pub const HEADER: &str = "// baton's plugin for OpenCode, written by `baton init opencode` (`baton init opencode --remove` takes it out).";

/// The module, calling `program` (an executable's name or path, not shell-quoted).
pub fn module(program: &str) -> String {
    let program = serde_json::to_string(program).unwrap_or_else(|_| "\"baton\"".into());
    let variable = crate::client::opencode::SESSION_VARIABLE;
    format!(
        r#"{HEADER}
// It passes OpenCode's session events to `baton hook opencode <event>`, waiting for each call,
// and puts what baton prints (the resume packet, a note after a failure) in front of the model
// as system text. One module for both generations: OpenCode 1.18 calls `server`, 2.x calls
// `setup`. See baton's docs/hooks.md.
import {{ spawn }} from "node:child_process";

const BATON = {program};

// `baton hook opencode <event>` with the payload on stdin; resolves to what it printed
// (trimmed, "" on any failure: a hook never stops OpenCode). The hook runs in a session of its
// own (`detached`): OpenCode signals its process group as it exits, which is when a turn's
// failure arrives, and the hook must outlive that to record it.
const caller = (directory, env, log) => (event, payload) =>
  new Promise((resolve) => {{
    let out = "";
    let err = "";
    let child;
    try {{
      child = spawn(BATON, ["hook", "opencode", event], {{
        cwd: directory,
        env,
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      }});
    }} catch (e) {{
      log(`baton hook opencode ${{event}}: cannot run ${{BATON}}: ${{e}}`);
      return resolve("");
    }}
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", (e) => {{
      log(`baton hook opencode ${{event}}: cannot run ${{BATON}}: ${{e.message}}`);
      resolve("");
    }});
    child.on("close", () => {{
      if (err.trim()) log(err.trim());
      resolve(out.trim());
    }});
    child.stdin.on("error", () => {{}});
    child.stdin.end(JSON.stringify({{ ...payload, cwd: directory, at: Date.now() }}));
  }});

// The guard of shared checkouts (baton's docs/guard.md) for a shell command about to run: the
// reason baton refuses it with, or nothing. Thrown by the caller as the tool call's error,
// which is how OpenCode refuses a call; anything gone wrong lets the command run.
const refusal = async (call, sessionID, command, workdir) => {{
  if (!sessionID || typeof command !== "string") return "";
  const out = await call("tool.execute.before", {{ sessionID, command, workdir }});
  try {{
    return out ? JSON.parse(out).deny ?? "" : "";
  }} catch {{
    return "";
  }}
}};

// What the plugin keeps per session: whether this process created it, its packet (asked for
// once; a promise, so that two requests share it), the note for the turn under way, and
// whether its last news was a retry.
const sessions = (call) => {{
  const created = new Set();
  const packets = new Map();
  const notes = new Map();
  const retrying = new Set();
  return {{
    created,
    notes,
    retrying,
    start(sessionID) {{
      let packet = packets.get(sessionID);
      if (packet === undefined) {{
        const source = created.has(sessionID) ? "startup" : "resume";
        packet = call("session.start", {{ sessionID, source }});
        packets.set(sessionID, packet);
      }}
      return packet;
    }},
    keep(sessionID, note) {{
      if (note) notes.set(sessionID, note);
    }},
    // The submitted prompt opens a turn.
    async prompt(sessionID, prompt) {{
      await this.start(sessionID);
      notes.delete(sessionID);
      this.keep(sessionID, await call("chat.message", {{ sessionID, prompt }}));
    }},
    // The system text of a request: the packet, then the turn's note.
    async system(sessionID) {{
      const packet = await this.start(sessionID);
      const note = notes.get(sessionID);
      return [packet, note].filter(Boolean);
    }},
  }};
}};

// OpenCode 1.18: hooks returned by `server`, events from its bus. The hooks name OpenCode's
// process, which runs one session.
const server = async ({{ directory, client }}) => {{
  const log = (message) => {{
    try {{
      client?.app?.log?.({{ body: {{ service: "baton", level: "warn", message }} }})?.catch?.(() => {{}});
    }} catch {{}}
  }};
  const call = caller(directory, {{ ...process.env, OPENCODE_PID: String(process.pid) }}, log);
  const s = sessions(call);
  return {{
    event: async ({{ event }}) => {{
      const properties = event?.properties ?? {{}};
      const sessionID = properties.sessionID;
      if (!sessionID) return;
      switch (event.type) {{
        case "session.created":
          s.created.add(sessionID);
          return;
        case "session.status": {{
          const type = properties.status?.type;
          if (type === "retry") {{
            s.retrying.add(sessionID);
            s.keep(sessionID, await call("session.status", properties));
          }} else if (type === "busy" && s.retrying.delete(sessionID)) {{
            s.keep(sessionID, await call("session.status", properties));
          }}
          return;
        }}
        case "session.error":
          s.retrying.delete(sessionID);
          await call("session.error", properties);
          return;
        case "session.idle":
          s.notes.delete(sessionID);
          await call("session.idle", properties);
          return;
      }}
    }},
    "chat.message": async (input, output) => {{
      const sessionID = input?.sessionID;
      if (!sessionID) return;
      const prompt = (output?.parts ?? [])
        .filter((p) => p?.type === "text" && typeof p.text === "string")
        .map((p) => p.text)
        .join("\n");
      await s.prompt(sessionID, prompt);
    }},
    "experimental.chat.system.transform": async (input, output) => {{
      const sessionID = input?.sessionID;
      if (!sessionID || !Array.isArray(output?.system)) return;
      output.system.push(...(await s.system(sessionID)));
    }},
    "tool.execute.before": async (input, output) => {{
      if (input?.tool !== "bash") return;
      const args = output?.args ?? {{}};
      const denied = await refusal(call, input?.sessionID, args.command, args.workdir);
      if (denied) throw new Error(denied);
    }},
    // OpenCode names no session to a tool call: this gives `baton` the session it runs in.
    "shell.env": async (input, output) => {{
      if (input?.sessionID && output?.env) output.env.{variable} = input.sessionID;
    }},
  }};
}};

// OpenCode 2.x: hooks registered on `ctx`, events from `ctx.event.subscribe()`. One server
// runs every session of the user, so the hooks name no process (`shared_server`); every hook
// body is guarded, since 2.x turns off a plugin whose hook throws.
const setup = async (ctx) => {{
  const directory = ctx?.location?.directory ?? process.cwd();
  const log = (message) => {{
    try {{
      console.error(`baton: ${{message}}`);
    }} catch {{}}
  }};
  const env = {{ ...process.env }};
  delete env.OPENCODE_PID;
  const send = caller(directory, env, log);
  const call = (event, payload) => send(event, {{ ...payload, shared_server: true }});
  const s = sessions(call);
  const guarded = (f) => async (e) => {{
    try {{
      await f(e);
    }} catch (err) {{
      log(`${{err?.message ?? err}}`);
    }}
  }};
  // A shell command's session, from the tool call that runs it (the shell hook names none):
  // per command text, the sessions whose tool calls are about to run it, oldest first.
  const commands = new Map();
  const hook = async (domain, name, f) => {{
    if (typeof ctx?.[domain]?.hook === "function") await ctx[domain].hook(name, guarded(f));
  }};
  await hook("session", "prompt", async (e) => {{
    if (e?.sessionID) await s.prompt(e.sessionID, e.prompt?.text ?? "");
  }});
  await hook("session", "context", async (e) => {{
    if (!e?.sessionID || !Array.isArray(e.system)) return;
    for (const text of await s.system(e.sessionID)) e.system.push({{ type: "text", text }});
  }});
  // The guard's refusal is thrown outside `guarded`: a throw is how a tool call is refused.
  if (typeof ctx?.tool?.hook === "function") {{
    await ctx.tool.hook("execute.before", async (e) => {{
      let denied = "";
      try {{
        const command = e?.input?.command;
        if (e?.tool !== "shell" || !e?.sessionID || typeof command !== "string") return;
        const waiting = commands.get(command) ?? [];
        waiting.push(e.sessionID);
        commands.set(command, waiting);
        denied = await refusal(call, e.sessionID, command, e.input.workdir);
      }} catch (err) {{
        log(`${{err?.message ?? err}}`);
      }}
      if (denied) {{
        const waiting = commands.get(e.input.command) ?? [];
        waiting.splice(waiting.lastIndexOf(e.sessionID), 1);
        if (!waiting.length) commands.delete(e.input.command);
        throw new Error(denied);
      }}
    }});
  }}
  // The same command waited for by two sessions is named to neither: a tool call without a
  // session is refused before it writes, where the wrong one would write as another session.
  await hook("shell", "create.before", async (e) => {{
    const waiting = commands.get(e?.command);
    if (!waiting?.length || !e.env) return;
    const sessionID = waiting.shift();
    if (!waiting.length) commands.delete(e.command);
    if (waiting.every((s) => s === sessionID)) e.env.{variable} = sessionID;
  }});
  const on = async (event) => {{
    const data = event?.data ?? {{}};
    const sessionID = data.sessionID;
    if (!sessionID) return;
    switch (event.type) {{
      case "session.created":
        s.created.add(sessionID);
        return;
      // 1.18's retry status, which baton reads: `next` is when OpenCode tries again.
      case "session.retry.scheduled":
        s.retrying.add(sessionID);
        s.keep(sessionID, await call("session.status", {{
          sessionID,
          status: {{ type: "retry", attempt: data.attempt, message: data.error?.message, next: data.at }},
        }}));
        return;
      case "session.step.started":
        if (s.retrying.delete(sessionID)) {{
          s.keep(sessionID, await call("session.status", {{ sessionID, status: {{ type: "busy" }} }}));
        }}
        return;
      case "session.execution.failed":
        s.retrying.delete(sessionID);
        s.notes.delete(sessionID);
        await call("session.execution.failed", data);
        return;
      case "session.execution.succeeded":
      case "session.execution.interrupted":
        s.retrying.delete(sessionID);
        s.notes.delete(sessionID);
        await call("session.idle", data);
        return;
    }}
  }};
  const stop = new AbortController();
  (async () => {{
    for await (const event of ctx.event.subscribe({{ signal: stop.signal }})) await guarded(on)(event);
  }})().catch((err) => {{
    if (!stop.signal.aborted) log(`events: ${{err?.message ?? err}}`);
  }});
  return () => stop.abort();
}};

export default {{ id: "baton", server, setup }};
"#
    )
}

/// The program a module of baton's calls, or `None` when `text` is not baton's module.
fn program_of(text: &str) -> Option<String> {
    if text.lines().next() != Some(HEADER) {
        return None;
    }
    let line = text.lines().find(|l| l.starts_with("const BATON = "))?;
    let literal = line.strip_prefix("const BATON = ")?.strip_suffix(';')?;
    serde_json::from_str(literal).ok()
}

/// Whether `text` is a module baton wrote.
pub fn is_baton(text: &str) -> bool {
    program_of(text).is_some()
}

fn edited(text: Option<String>) -> Edited {
    Edited {
        text,
        before: Vec::new(),
        after: Vec::new(),
        moved: Vec::new(),
        handlers: Vec::new(),
    }
}

/// The module for `baton` (the program as a hook command names it: `baton`, or a quoted
/// path), in place of `text`, which must be baton's own module or nothing.
pub fn install(text: Option<&str>, baton: &str) -> Result<Edited, SettingsError> {
    if let Some(text) = text.filter(|t| !t.trim().is_empty())
        && !is_baton(text)
    {
        return Err(not_ours());
    }
    let program = shell_words(baton)
        .and_then(|words| words.into_iter().next())
        .unwrap_or_else(|| "baton".into());
    Ok(edited(Some(module(&program))))
}

/// Nothing where baton's module was; a file that is not baton's stays as it is.
pub fn uninstall(text: Option<&str>) -> Edited {
    edited(text.filter(|t| !is_baton(t)).map(str::to_string))
}

/// Every event the module passes on, with the command it runs for it, when `text` is baton's
/// module.
pub fn installed(text: &str, client: Client) -> Vec<(String, String)> {
    let Some(program) = program_of(text) else {
        return Vec::new();
    };
    let program = crate::text::shell_quote(&program);
    client
        .def()
        .hook_events()
        .iter()
        .map(|e| (e.to_string(), super::hook_command(&program, client, e)))
        .collect()
}

fn not_ours() -> SettingsError {
    SettingsError::NotOurs(format!(
        "a plugin of the same name that baton did not write (its first line is not baton's: `{HEADER}`)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_names_its_program_and_is_known_again() {
        let text = install(None, "'/opt/my tools/baton'")
            .unwrap()
            .text
            .unwrap();
        assert!(
            text.contains(r#"const BATON = "/opt/my tools/baton";"#),
            "{text}"
        );
        assert_eq!(program_of(&text).as_deref(), Some("/opt/my tools/baton"));
        // Every import is one of Node's builtins.
        for line in text.lines().filter(|l| l.starts_with("import ")) {
            assert!(line.contains("\"node:"), "{line}");
        }
        for event in Client::OpenCode.def().hook_events() {
            assert!(text.contains(&format!("\"{event}\"")), "{event}");
        }
        let installed = installed(&text, Client::OpenCode);
        assert_eq!(installed.len(), Client::OpenCode.def().hook_events().len());
        assert_eq!(
            installed[0].1,
            "'/opt/my tools/baton' hook opencode session.start"
        );
        // Installing again over it, for another program, replaces it.
        let again = install(Some(&text), "baton").unwrap().text.unwrap();
        assert_eq!(program_of(&again).as_deref(), Some("baton"));
        assert_eq!(uninstall(Some(&again)).text, None);
    }

    #[test]
    fn a_plugin_that_is_not_batons_is_never_replaced_or_removed() {
        let theirs = "export const Mine = async () => ({});\n";
        assert!(matches!(
            install(Some(theirs), "baton"),
            Err(SettingsError::NotOurs(_))
        ));
        assert_eq!(uninstall(Some(theirs)).text.as_deref(), Some(theirs));
        assert!(installed(theirs, Client::OpenCode).is_empty());
    }
}
