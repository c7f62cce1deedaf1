//! `baton status --html`: the timeline page, loaded in headless Chromium (Debian's
//! `chromium-headless-shell`), which must draw every lane and mark with no console message;
//! and `baton status --watch`, which redraws a terminal.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{TestEnv, at};

/// The browser: `BATON_CHROMIUM`, else `chromium-headless-shell` or `chromium` on the PATH.
/// Without one the tests say so and pass, except under `CI`, which installs it.
fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var_os("BATON_CHROMIUM")
        .map(|c| vec![PathBuf::from(c)])
        .unwrap_or_else(|| vec!["chromium-headless-shell".into(), "chromium".into()]);
    let found = candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install chromium-headless-shell (.ci/run does)"
        );
        crate::common::skipped(
            "no chromium-headless-shell (apt-get install chromium-headless-shell)",
        );
    }
    found
}

/// What Chromium made of a page: the DOM after its script ran, and everything it logged.
struct Loaded {
    dom: String,
    log: String,
}

/// Loads `page` headless, as root too (`--no-sandbox`), with nothing reaching the network, and
/// `extra` as the job (`--dump-dom`, `--screenshot=…`).
fn load(browser: &Path, page: &Path, extra: &[&str]) -> Loaded {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {log}");
    Loaded {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        log,
    }
}

/// The page's script ran to its end and nothing was logged to its console: no error, no
/// warning, no message at all.
#[track_caller]
fn assert_clean(loaded: &Loaded) {
    let console: Vec<&str> = loaded
        .log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        loaded.dom.contains("data-rendered=\"ok\""),
        "the script did not finish: {}",
        &loaded.dom[..loaded.dom.len().min(2000)]
    );
    assert!(
        !loaded.dom.contains("data-errors"),
        "script errors in the page"
    );
}

/// The journal's acceptance history (session A's loop interrupted by a rate limit, resumed
/// automatically by session B's takeover, finished) and a plan ledger whose gate fails, then
/// passes.
fn scripted(env: &TestEnv) {
    crate::journal::scripted_history(env);
    std::fs::create_dir_all(env.repo.join("plans/x")).unwrap();
    env.baton("B", 32, &["ledger", "init", "plans/x"])
        .assert_code(0);
    env.baton("B", 33, &["ledger", "start", "plans/x", "--phase", "1"])
        .assert_code(0);
    for (minute, result) in [(35, "--fail"), (38, "--pass")] {
        env.baton(
            "B",
            minute,
            &[
                "ledger",
                "gate",
                "plans/x",
                "--phase",
                "1",
                "--name",
                "tests",
                result,
                "--cmd",
                "cargo test",
                "--result",
                if result == "--fail" {
                    "exit 101"
                } else {
                    "exit 0"
                },
            ],
        )
        .assert_code(0);
    }
}

#[test]
fn the_timeline_page_draws_the_scripted_history_in_chromium() {
    let env = TestEnv::new();
    scripted(&env);

    let out = env.run(
        None,
        &at(60),
        &["--json", "status", "--html", "--out", "timeline.html"],
    );
    out.assert_code(0);
    let v = out.json();
    let page = env.repo.join("timeline.html");
    assert_eq!(v["path"], page.display().to_string());
    assert_eq!(v["lanes"], 2, "{v}");
    assert_eq!(v["sessions"], json!(["A", "B"]), "{v}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(v["bytes"], html.len());

    // Text mode: stdout is the path alone, so `X=$(baton status --html --out F)` gets it.
    let text = env.run(None, &at(60), &["status", "--html", "--out", "t2.html"]);
    text.assert_code(0);
    assert_eq!(
        text.stdout.trim_end(),
        env.repo.join("t2.html").display().to_string()
    );
    assert!(text.stderr.contains("2 lane(s)"), "{}", text.stderr);
    // Without `--out`, stdout is the page itself.
    let stdout = env.run(None, &at(60), &["status", "--html"]);
    stdout.assert_code(0);
    assert!(stdout.stdout.starts_with("<!DOCTYPE html>"));

    let Some(browser) = chromium() else { return };
    let loaded = load(&browser, &page, &["--dump-dom"]);
    assert_clean(&loaded);
    let dom = &loaded.dom;
    // One lane per piece of work, the loop (interrupted earlier, now finished) and the ledger.
    assert_eq!(dom.matches("class=\"lane\"").count(), 2, "{dom}");
    assert!(
        dom.contains("data-kind=\"loop\" data-key=\"PROJ-1\""),
        "{dom}"
    );
    assert!(
        dom.contains("data-kind=\"ledger\" data-key=\"plans/x\""),
        "{dom}"
    );
    // The rate-limit interrupt, with its class.
    assert!(
        dom.contains("class=\"mark m-interrupt c-rate_limit\"")
            && dom.contains("data-class=\"rate_limit\""),
        "no rate-limit interrupt mark: {dom}"
    );
    // The automatic resume: B's takeover, both sessions and both epochs beside it.
    assert!(dom.contains("class=\"mark m-takeover\""), "{dom}");
    assert!(
        dom.contains("A (epoch 0) → B (epoch 1), automatic"),
        "the takeover's label: {dom}"
    );
    // The failed gate, then the passing one.
    let lanes = &dom[dom.find("id=\"lanes\"").expect("the lanes")..];
    let fail = lanes.find("m-gate_fail").expect("a failed gate mark");
    let pass = lanes.find("m-gate_pass").expect("a passing gate mark");
    assert!(fail < pass, "fail then pass");
    // Each session's stretch in its own colour, and the line at now.
    assert_eq!(dom.matches("class=\"seg\"").count(), 2, "{dom}");
    assert!(dom.contains("class=\"nowline\""));
    assert!(dom.contains("session A") && dom.contains("session B"));

    // The picture: a PNG of the page as a browser draws it.
    let shot = env.repo.join("timeline.png");
    load(
        &browser,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,420",
            "--hide-scrollbars",
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(png.len() > 10_000, "a blank page? {} bytes", png.len());
    if let Some(keep) = std::env::var_os("BATON_TIMELINE_SHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// A project of 200 loops with 100 events each (20,000 journal events over three days, with
/// idle nights), written the way baton writes its journal.
fn large_project(env: &TestEnv) {
    let mut journals = Vec::new();
    for i in 0..200 {
        let ticket = format!("PROJ-{i}");
        env.baton(&format!("s{}", i % 9), 0, &["loop", "init", &ticket])
            .assert_code(0);
        journals.push(env.state_dir().join(format!("journal/loop-{ticket}.jsonl")));
    }
    let t0: jiff::Timestamp = crate::common::T0.parse().unwrap();
    for (i, journal) in journals.iter().enumerate() {
        let mut lines = String::new();
        let mut epoch = 0;
        let mut session = format!("s{}", i % 9);
        for n in 1..100u64 {
            // Ten hours of work a day, a transition every ~20 minutes of it, three days.
            let minute = (n * 21 + i as u64 % 13) as i64;
            let day = minute / 600;
            let ts = t0 + jiff::SignedDuration::from_mins(day * 1440 + minute % 600);
            let ts = ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
            let event = match n % 25 {
                7 => {
                    let reason = ["rate_limit", "unknown", "pause"][n as usize % 3];
                    json!({"ts": ts, "event": "interrupt", "session": session, "epoch": epoch,
                        "reason": reason, "resume_after": null})
                }
                8 => {
                    let to = format!("s{}", (i + n as usize) % 9);
                    let e = json!({"ts": ts, "event": "takeover", "session": to, "epoch": epoch + 1,
                        "from_session": session, "from_epoch": epoch, "to_session": to,
                        "to_epoch": epoch + 1, "mode": "automatic", "resume_count": 1,
                        "work": null, "interrupt_reason": "rate_limit"});
                    epoch += 1;
                    session = to;
                    e
                }
                _ => json!({"ts": ts, "event": "set", "session": session, "epoch": epoch,
                    "from": {"phase": "qa", "action": "spawned", "iteration": n},
                    "to": {"phase": "skeptic", "action": "returned", "iteration": n + 1},
                    "open_findings": n % 3}),
            };
            lines.push_str(&event.to_string());
            lines.push('\n');
        }
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(journal)
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
    }
}

/// The acceptance's large page: 200 lanes and 20,000 events stay under 2 MB and load in
/// Chromium with every lane drawn (how fast is a benchmark's figure: `scripts/timeline.sh --bench`).
#[test]
fn the_page_of_200_lanes_and_20000_events_is_under_2_mb_and_loads() {
    crate::files_only!("20,000 journal lines are written as files here, the way baton writes them");
    let env = TestEnv::new();
    large_project(&env);
    let out = env.run(
        None,
        &at(4 * 1440),
        &["--json", "status", "--html", "--out", "large.html"],
    );
    out.assert_code(0);
    let v: Value = out.json();
    assert_eq!(v["lanes"], 200);
    assert_eq!(v["events"], 20_000);
    let bytes = v["bytes"].as_u64().unwrap();
    assert!(bytes < 2 * 1024 * 1024, "the page is {bytes} bytes");
    let page = env.repo.join("large.html");
    if let Some(keep) = std::env::var_os("BATON_TIMELINE_LARGE") {
        std::fs::copy(&page, keep).unwrap();
    }
    let Some(browser) = chromium() else { return };
    let loaded = load(&browser, &page, &["--dump-dom"]);
    assert_clean(&loaded);
    assert_eq!(loaded.dom.matches("class=\"lane\"").count(), 200);
    // The idle nights are folded.
    assert!(loaded.dom.contains("class=\"fold\""));
}

/// `--watch` draws the table on a terminal (here a pseudo-terminal from `script`), draws it
/// again when the state changes, and refuses a pipe.
#[test]
fn status_watch_redraws_on_a_terminal_and_refuses_a_pipe() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let piped = env.run(None, &at(1), &["status", "--watch"]);
    piped.assert_code(2);
    assert!(
        piped.stderr.contains("stdout is not one"),
        "{}",
        piped.stderr
    );
    assert!(piped.stdout.is_empty());

    if Command::new("script").arg("--version").output().is_err() {
        crate::common::skipped("no `script` (util-linux) to give baton a terminal");
        return;
    }
    let baton = env!("CARGO_BIN_EXE_baton");
    let mut cmd = crate::common::like(&env.command(None, &at(1)), "script");
    let child = cmd
        .args([
            "-qfec",
            &format!("{baton} status --watch --interval 0.2"),
            "/dev/null",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    env.baton(
        "A",
        1,
        &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "spawned",
        ],
    )
    .assert_code(0);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    let draws = screen.matches("\x1b[H\x1b[2J").count();
    assert_eq!(
        draws, 2,
        "one draw, one redraw after the change: {screen:?}"
    );
    assert!(
        screen.contains("skeptic") && screen.contains("qa"),
        "{screen:?}"
    );
}

/// The data block of a page: what its script draws.
fn page_data(page: &str) -> Value {
    let start = page.find("id=\"data\">").expect("a data block") + 10;
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

/// A ticket whose loop key differs from it still has its history on its lane; work that
/// stopped with no interrupt recorded (here a pause mark) is marked with the class
/// `baton status` gives it, where it was last written.
#[test]
fn a_lane_has_its_loops_history_under_any_ticket_and_the_class_of_an_unrecorded_stop() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "gh#42 fix"])
        .assert_code(0);
    env.baton(
        "A",
        5,
        &[
            "loop",
            "set",
            "gh#42 fix",
            "--phase",
            "qa",
            "--action",
            "spawned",
        ],
    )
    .assert_code(0);
    env.baton("A", 6, &["pause", "--reason", "end of day"])
        .assert_code(0);
    let out = env.run(None, &at(40), &["status", "--html"]);
    out.assert_code(0);
    assert_eq!(out.stderr, "", "no warning: the journal was found");
    let data = page_data(&out.stdout);
    let lane = &data["lanes"][0];
    assert_eq!(lane["key"], "gh#42 fix");
    assert_eq!(lane["class"], "pause", "{lane}");
    let strings = data["strings"].as_array().unwrap();
    let marks: Vec<(u64, &str)> = lane["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let label = m[4].as_u64().unwrap() as usize;
            (m[1].as_u64().unwrap(), strings[label].as_str().unwrap())
        })
        .collect();
    // init, set, then the pause nobody recorded as an interrupt of the loop.
    assert_eq!(marks.len(), 3, "{marks:?}");
    assert_eq!(marks[2], (8, "pause (nothing recorded)"), "{marks:?}");
    // A page drawn for a moment before its events says so.
    let early = env.run(None, "2026-02-01T00:00:00Z", &["status", "--html"]);
    early.assert_code(0);
    assert!(early.stderr.contains("after now"), "{}", early.stderr);
}

/// Work whose state is gone keeps its journal, and its lane: a loop archived by `resume fresh`
/// is drawn after the work that still has state, with its whole history.
#[test]
fn archived_work_keeps_its_lane() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        5,
        &["loop", "finish", "PROJ-1", "--status", "complete"],
    )
    .assert_code(0);
    env.baton("A", 6, &["resume", "fresh", "PROJ-1"])
        .assert_code(0);
    env.baton("B", 7, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    let out = env.run(None, &at(10), &["status", "--html"]);
    out.assert_code(0);
    let data = page_data(&out.stdout);
    let lanes: Vec<(&str, &str, usize)> = data["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["key"].as_str().unwrap(),
                l["status"].as_str().unwrap(),
                l["marks"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        lanes,
        [("PROJ-2", "active", 1), ("PROJ-1", "no state", 3)],
        "init, finish and fresh on the archived loop's lane"
    );
    // The table lists only work with state, as before.
    let table = env.run(None, &at(10), &["status"]);
    assert!(!table.stdout.contains("PROJ-1"), "{}", table.stdout);
}

/// A ledger as the originating protocol writes it: its vocabulary has no time on a line, so
/// the lane is drawn at the file's last change (and says so) rather than left empty.
#[test]
fn a_ledger_without_times_is_drawn_at_its_last_change() {
    let env = TestEnv::new();
    env.write(
        "plans/p/STATE.md",
        "# run-state — plan: plans/p/plan.md\n\
         phase 1: started (base abc1234)\n\
         phase 1: gate tests → FAIL (evidence: cargo test → exit 101)\n\
         phase 1: gate tests → PASS (evidence: cargo test → exit 0)\n",
    );
    env.set_age("plans/p/STATE.md", 30);
    let out = env.run(None, &at(0), &["status", "--html"]);
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("no line of plans/p carries a time: its 3 event(s) are drawn at the file's last change, 2026-03-01T11:30:00Z"),
        "{}",
        out.stderr
    );
    let data = page_data(&out.stdout);
    let lane = &data["lanes"][0];
    assert_eq!(lane["key"], "plans/p");
    let kinds: Vec<u64> = lane["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m[1].as_u64().unwrap())
        .collect();
    // started, the failed gate, the passing gate (then the stop the survey classes, if any).
    assert_eq!(kinds[..3], [1, 6, 5], "{lane}");
}

/// Run after the page's own script: marks every label that is cut off or leaves its place (a
/// lane's label wider than its column or spilling out of it, a mark's label outside its lane's
/// track, an axis label off the page, a page wider than the window), then zooms in once and
/// checks the marks' labels again. It writes what it found into `#overflow`, one line each.
const OVERFLOW_CHECK: &str = r##"<script>
(function () {
  var out = [], root = document.documentElement, page = root.clientWidth;
  document.querySelectorAll(".lane").forEach(function (l) { l.style.contentVisibility = "visible"; });
  function where(e) {
    var lane = e.closest(".lane");
    return (lane ? "lane " + lane.dataset.key : "axis") + ": ." + String(e.className).split(" ").join(".") + " \"" + e.textContent.slice(0, 60) + "\"";
  }
  function inside(e, box, what) {
    var r = e.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (r.left < b.left - 1 || r.right > b.right + 1) {
      e.classList.add("overflowing");
      out.push(where(e) + " leaves its " + what + " (" + Math.round(r.left) + "–" + Math.round(r.right) + " outside " + Math.round(b.left) + "–" + Math.round(b.right) + ")");
    }
  }
  function marks() {
    document.querySelectorAll(".lane .mark > *").forEach(function (e) { inside(e, e.closest(".track"), "track"); });
  }
  document.querySelectorAll(".lane .label, .lane .label *").forEach(function (e) {
    if (getComputedStyle(e).display !== "inline" && e.scrollWidth > e.clientWidth + 1) {
      e.classList.add("overflowing");
      out.push(where(e) + " is cut off (" + e.scrollWidth + " wide in " + e.clientWidth + ")");
    }
    if (!e.classList.contains("label")) inside(e, e.closest(".label"), "label");
  });
  marks();
  document.querySelectorAll("#axis *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width && (r.left < 0 || r.right > page)) out.push(where(e) + " leaves the page");
  });
  if (root.scrollWidth > page + 1) out.push("the page is " + root.scrollWidth + " wide in a window of " + page);
  var zoomIn = Array.prototype.find.call(document.querySelectorAll("#zoom button"), function (b) { return b.textContent === "+"; });
  if (zoomIn) {
    zoomIn.click();
    document.querySelectorAll(".lane").forEach(function (l) { l.style.contentVisibility = "visible"; });
    marks();
  } else {
    out.push("no zoom button");
  }
  var report = document.createElement("pre");
  report.id = "overflow";
  report.textContent = out.length + " overflowing\n" + out.join("\n");
  document.body.appendChild(report);
})();
</script>
"##;

/// Loads `page` with the check above at `width` pixels, and returns what it found and the DOM.
fn overflowing(browser: &Path, page: &Path, width: u32) -> (Vec<String>, String) {
    let html = std::fs::read_to_string(page).unwrap();
    let checked = page.with_extension(format!("checked-{width}.html"));
    let at = html.rfind("</body>").expect("the page's end");
    std::fs::write(
        &checked,
        format!("{}{OVERFLOW_CHECK}{}", &html[..at], &html[at..]),
    )
    .unwrap();
    let loaded = load(
        browser,
        &checked,
        &["--dump-dom", &format!("--window-size={width},900")],
    );
    assert_clean(&loaded);
    let dom = loaded.dom;
    let start = dom
        .find("<pre id=\"overflow\">")
        .expect("the check ran and wrote its report")
        + "<pre id=\"overflow\">".len();
    let report = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let mut lines = report.lines().map(str::to_string);
    let head = lines.next().unwrap_or_default();
    let found: Vec<String> = lines.collect();
    assert_eq!(head, format!("{} overflowing", found.len()));
    (found, dom)
}

/// Every lane's label is whole (kind, key, class, status, verdict, phase and iteration, owner),
/// wrapping rather than cut; no mark's label leaves its lane, not even beside now; the axis
/// says its time zone; the page's first line is the most urgent next step.
#[test]
fn no_label_is_cut_off_or_leaves_the_page_in_chromium() {
    let env = TestEnv::new();
    let long = "PROJ-77 checkout totals are wrong when a coupon and a gift card are both applied";
    let uuid = "c4f1e2d0-9a7b-4e3c-8d21-5f6a7b8c9d0e";
    env.baton(uuid, 0, &["loop", "init", long]).assert_code(0);
    env.set_phase(uuid, 20, long, "qa", "spawned")
        .assert_code(0);
    // A long mark label right beside now: it must read leftwards, not off the page.
    env.baton(
        uuid,
        59,
        &["loop", "interrupt", long, "--reason", "session_expiry"],
    )
    .assert_code(0);
    env.baton("B", 1, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    env.baton(
        "B",
        2,
        &[
            "loop",
            "interrupt",
            "PROJ-2",
            "--reason",
            "rate_limit",
            "--resume-after",
            &at(30),
        ],
    )
    .assert_code(0);
    let out = env.run(None, &at(60), &["status", "--html", "--out", "wide.html"]);
    out.assert_code(0);
    let page = env.repo.join("wide.html");
    if let Some(keep) = std::env::var_os("BATON_TIMELINE_WIDE") {
        std::fs::copy(&page, keep).unwrap();
    }

    let Some(browser) = chromium() else { return };
    for width in [1000, 640] {
        let (found, dom) = overflowing(&browser, &page, width);
        assert!(
            found.is_empty(),
            "at {width} pixels, labels cut off or off the page:\n{}",
            found.join("\n")
        );
        // The whole label: the key, the phase, the owner by its first 8 characters with the
        // whole id on hover.
        assert!(dom.contains(long), "the key in full");
        assert!(dom.contains("qa iteration 1/5 · spawned"), "the phase");
        assert!(
            dom.contains(&format!("title=\"session {uuid}\">c4f1e2d0</span>")),
            "the owner, short with the whole id on hover"
        );
        assert!(dom.contains("time (UTC)"), "the axis names its zone");
        // The rate limit waited for its reset: a bar from the interrupt to it.
        assert_eq!(dom.matches("class=\"wait\"").count(), 1);
        // The first line: the most urgent step, with its command. A session that left outranks
        // a rate limit whose reset has passed.
        let next = &dom[dom.find("<p id=\"next\"").unwrap()..];
        let next = &next[..next.find("</p>").unwrap()];
        assert!(
            next.contains(&format!("loop {long} (left)"))
                && next.contains("<code>baton resume accept"),
            "{next}"
        );
        assert!(dom.contains("data-zoom=\"2\""), "the zoom button zoomed");
    }
}
