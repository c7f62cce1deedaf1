#!/usr/bin/env python3
"""The jobs of `baton loop set` and `baton ledger block`, done the way the seed protocols have
an agent do them today: a short python3 script with json and fcntl. scripts/bench.sh times it
beside baton, on files of the same shape in the same temp directory.

  seed_baseline.py loop-set FILE PHASE ACTION ITERATION [--durable]
      a phase transition of .agentic/loop-state-<KEY>.json: the session ownership gate
      (another session's file written within 10 minutes is refused, exit 3), then phase,
      action, iteration and last_updated changed.
  seed_baseline.py ledger-append FILE LINE [--durable]
      one event line appended to plans/<plan>/STATE.md, stamped " @ <time>".

Without --durable, the seeds' way: the lock is an flock on the state file itself, taken by
this one-shot process and so released when it exits; the file is rewritten in place
(open(path, 'w') + json.dump); the ledger line is a plain append, as `>>` is.
With --durable, the same I/O as baton: an flock on a sidecar lock file, a temp file written,
fsync'd and renamed over the state, the directory fsync'd; the ledger locked, a torn tail
sealed, the line written in one write and fdatasync'd.

The clock is $BATON_NOW when set (as for baton), the session $BATON_SESSION.
Standard library only.
"""

import fcntl
import json
import os
import sys
import time


def now():
    return os.environ.get("BATON_NOW") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def epoch(stamp):
    """Seconds since 1970 of a UTC stamp (calendar.timegm, without importing calendar)."""
    t = time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    y = t.tm_year - 1
    days = 365 * (y - 1969) + y // 4 - y // 100 + y // 400 - 477 + t.tm_yday - 1
    return ((days * 24 + t.tm_hour) * 60 + t.tm_min) * 60 + t.tm_sec


def gate(state, me, stamp):
    """The seed's per-write ownership gate of a keyed loop-state file."""
    owner = state.get("session_id")
    if owner is None:
        return  # legacy state: force-takeover eligible
    if owner != me and epoch(stamp) - epoch(state["last_updated"]) <= 600:
        print(f"seed_baseline: {state['loop_key']} is live in session {owner}; refused", file=sys.stderr)
        sys.exit(3)


def change(state, me, phase, action, iteration, stamp):
    state["session_id"] = me
    state["last_phase"] = phase
    state["last_phase_action"] = action
    state["loop_state"]["phase"] = phase
    state["loop_state"]["iteration"] = iteration
    state["last_updated"] = stamp


def loop_set(path, phase, action, iteration, durable):
    me, stamp = os.environ.get("BATON_SESSION"), now()
    if not durable:
        with open(path) as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # released when this process exits
            state = json.load(f)
            gate(state, me, stamp)
            change(state, me, phase, action, iteration, stamp)
            # Truncate and rewrite in place, as the prose does. A kill between the truncation
            # and the last write leaves a 0-byte or half-written file: the crash harness
            # (docs/reliability.md) catches exactly this writer.
            with open(path, "w") as out:
                json.dump(state, out, indent=2)
                out.write("\n")
        return
    folder, name = os.path.split(os.path.abspath(path))
    lock = os.open(os.path.join(folder, "locks", name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    with open(path) as f:
        state = json.load(f)
    gate(state, me, stamp)
    change(state, me, phase, action, iteration, stamp)
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(state, out, indent=2)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.rename(tmp, path)
    dirfd = os.open(folder, os.O_RDONLY)
    os.fsync(dirfd)
    os.close(dirfd)


def ledger_append(path, line, durable):
    data = f"{line} @ {now()}\n".encode()
    if not durable:
        with open(path, "ab") as f:
            f.write(data)
        return
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    fcntl.flock(fd, fcntl.LOCK_EX)
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        data = b"\n" + data  # seal a torn tail
    os.write(fd, data)
    os.fdatasync(fd)
    os.close(fd)


def main(argv):
    durable = "--durable" in argv
    args = [a for a in argv if a != "--durable"]
    if args[:1] == ["loop-set"] and len(args) == 5:
        loop_set(args[1], args[2], args[3], int(args[4]), durable)
    elif args[:1] == ["ledger-append"] and len(args) == 3:
        ledger_append(args[1], args[2], durable)
    elif args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
    else:
        sys.exit("usage: seed_baseline.py loop-set FILE PHASE ACTION ITERATION [--durable]\n"
                 "       seed_baseline.py ledger-append FILE LINE [--durable]   (--help)")


if __name__ == "__main__":
    main(sys.argv[1:])
