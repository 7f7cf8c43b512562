#!/usr/bin/env python3
"""Runs INSIDE the bench's guest (scripts/hardware/guest.sh multihost-clock), after the
network namespaces h1..h3 exist and record-server listens on 10.0.0.1.

Starts one capture-agent per namespace with its own injected clock (--clock-offset,
--clock-drift-ppm), changes each agent's netem delays every STEP seconds (base 20-80 ms,
jitter 10 ms, the two directions differing by a fixed asymmetry per agent), and polls the
server's GET /v1/agents once a second. Writes, into OUT:
  polls.jsonl   {"t": CLOCK_MONOTONIC ns, "agents": {id: clock object or null}, "netem": {id: [fwd, back]}}
  truth.json    {id: {"offset_ns", "drift_ppm", "anchor_ns", "asymmetry_ms"}} from each agent's log
  agent-hK.log  each agent's log; agent-hK.status its exit status
Tests/HardwareBenchTests (MultihostClockBenchTests) judges them.

usage: multihost_clock.py OUT BIN PKI SECONDS [idle|recording|session]
  idle       the agents connect and wait: only the network and the clocks are measured
  recording  each agent also records test:160x120@5 and test:audio for SECONDS; under TCG the
             encoders starve the emulated CPUs, which delays every exchange (docs/benchmarks.md)
  session    scenario multihost-session: h1 has a camera "front", h2 a camera "back", h3 a
             microphone "tone"; after WARMUP s the script starts ONE session across the three
             (POST /v1/sessions with agents), cuts h2's network for CUT s in the middle, stops
             the session 10 s before the end and copies the finished file to OUT/session.mp4
             (session.json: its id and the cut's CLOCK_MONOTONIC span). MultihostSessionBenchTests
             judges it.
"""
import json, os, re, subprocess, sys, time, urllib.request

out, binary, pki, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
load = sys.argv[5] if len(sys.argv) > 5 else "idle"
assert load in ("idle", "recording", "session"), load
STEP = 20
WARMUP, CUT = 40, 20
cut_active = False
# Per agent: clock offset (s), drift (ppm), asymmetry (forward minus back, ms).
AGENTS = {1: (10800, 100, 10), 2: (3600.25, -100, 0), 3: (25200.5, 37, -20)}
BASES = [20, 50, 80, 35, 65, 25, 75, 45]
token = open(os.path.join(pki, "admin-token")).read().strip()

def mono():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)

def netem(k, phase):
    base = BASES[(phase + 2 * k) % len(BASES)]
    asym = AGENTS[k][2]
    fwd, back = base + max(asym, 0), base + max(-asym, 0)
    # The cut (session mode): h2 loses every packet both ways.
    loss = ["loss", "100%"] if cut_active and k == 2 else []
    # v<k> is the bridge's port towards namespace h<k>: its egress is server -> agent.
    subprocess.run(["tc", "qdisc", "replace", "dev", f"v{k}", "root", "netem", "delay", f"{fwd}ms", "10ms"] + loss, check=True)
    subprocess.run(["ip", "netns", "exec", f"h{k}", "tc", "qdisc", "replace", "dev", f"e{k}", "root", "netem",
                    "delay", f"{back}ms", "10ms"] + loss, check=True)
    return [fwd, back]

def admin(method, path, body=None):
    request = urllib.request.Request("http://127.0.0.1:7444" + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=30))

state = {f"clock-h{k}": netem(k, 0) for k in AGENTS}
agents = {}
for k, (offset, drift, _) in AGENTS.items():
    log = open(os.path.join(out, f"agent-h{k}.log"), "w")
    command = ["ip", "netns", "exec", f"h{k}", os.path.join(binary, "capture-agent"), "run", "--server", "10.0.0.1:7443",
               "--ca", f"{pki}/ca/ca.pem", "--cert", f"{pki}/clock-h{k}.pem", "--key", f"{pki}/clock-h{k}-key.pem",
               "--agent-id", f"clock-h{k}", "--stop-timeout", "90", "--clock-offset", str(offset), f"--clock-drift-ppm={drift}",
               "--test-sources-on-whole-seconds", "--preset", "ultrafast", "--opus-complexity", "0", "--log-level", "info"]
    if load == "session":
        command += ["--source", {1: "front=test:160x120@5", 2: "back=test:160x120@5", 3: "tone=test:audio"}[k]]
    else:
        command += ["--source", "front=test:160x120@5", "--source", "tone=test:audio"]
    if load == "recording":
        command += ["--session-id", f"clock-h{k}", "--record", "--duration", str(seconds)]
    agents[k] = subprocess.Popen(command,
        stdout=log, stderr=subprocess.STDOUT)

start = mono()
phase = 0
session = {}
def elapsed():
    return (mono() - start) / 1e9

def session_step():
    """Session mode: start after WARMUP, cut h2 for CUT s in the middle, stop 10 s before the end."""
    global cut_active, state
    record_from, stop_at = WARMUP, seconds - 10
    cut_from = (record_from + stop_at - CUT) / 2
    try:
        if "id" not in session and elapsed() >= record_from:
            started = admin("POST", "/v1/sessions", {"agents": [f"clock-h{k}" for k in AGENTS], "labels": {"bench": "multihost-session"}})
            session["id"] = started["session_id"]
            print(f"multihost_clock: session {session['id']} started", file=sys.stderr)
        if "id" in session and "cut" not in session and elapsed() >= cut_from:
            cut_active = True
            state = {f"clock-h{k}": netem(k, phase) for k in AGENTS}
            session["cut"] = [mono(), None]
        if "cut" in session and session["cut"][1] is None and elapsed() >= cut_from + CUT:
            cut_active = False
            state = {f"clock-h{k}": netem(k, phase) for k in AGENTS}
            session["cut"][1] = mono()
        if "id" in session and "stopped" not in session and elapsed() >= stop_at:
            admin("POST", f"/v1/sessions/{session['id']}/stop")
            session["stopped"] = mono()
    except Exception as error:  # reported in session.json; the judge fails on a missing file
        session.setdefault("errors", []).append(str(error))
        print(f"multihost_clock: session step failed: {error}", file=sys.stderr)

with open(os.path.join(out, "polls.jsonl"), "w") as polls:
    while mono() - start < (seconds + 5) * 1_000_000_000:
        if (mono() - start) // (STEP * 1_000_000_000) > phase:
            phase += 1
            state = {f"clock-h{k}": netem(k, phase) for k in AGENTS}
        if load == "session":
            session_step()
        request = urllib.request.Request("http://127.0.0.1:7444/v1/agents", headers={"Authorization": f"Bearer {token}"})
        try:
            listing = json.load(urllib.request.urlopen(request, timeout=5))
            t = mono()
            clocks = {a["id"]: a.get("clock") for a in listing["agents"]}
            polls.write(json.dumps({"t": t, "agents": clocks, "netem": state}) + "\n")
            polls.flush()
        except Exception as error:  # a slow answer under TCG: the next poll counts
            print(f"multihost_clock: poll failed: {error}", file=sys.stderr)
        time.sleep(1)

if load == "session" and "id" in session:
    # The finished file: the catalog lists it under the first agent once it is final.
    for _ in range(120):
        try:
            rows = [r for r in admin("GET", "/v1/recordings?agent=clock-h1&limit=1000")["recordings"] if r["session_id"] == session["id"]]
            if rows and all(r["status"] != "recording" for r in rows):
                session["recordings"] = rows
                subprocess.run(["cp", rows[0]["path"], os.path.join(out, "session.mp4")], check=True)
                break
        except Exception as error:  # the server is busy finalizing under TCG: ask again
            print(f"multihost_clock: recordings: {error}", file=sys.stderr)
        time.sleep(1)
    json.dump(session, open(os.path.join(out, "session.json"), "w"), indent=1)

for k, process in agents.items():
    if load in ("idle", "session"):
        process.send_signal(2)  # SIGINT: an idle agent ends at once
    try:
        status = process.wait(timeout=150)
    except subprocess.TimeoutExpired:
        process.kill()
        status = "killed"
    open(os.path.join(out, f"agent-h{k}.status"), "w").write(f"{status}\n")

truth = {}
pattern = re.compile(r"stamping with CLOCK_MONOTONIC \+ (-?\d+) ns, (-?[\d.]+) ppm fast from CLOCK_MONOTONIC (\d+) ns")
for k in AGENTS:
    match = pattern.search(open(os.path.join(out, f"agent-h{k}.log")).read())
    if match:
        truth[f"clock-h{k}"] = {"offset_ns": int(match.group(1)), "drift_ppm": float(match.group(2)),
                                "anchor_ns": int(match.group(3)), "asymmetry_ms": AGENTS[k][2]}
json.dump(truth, open(os.path.join(out, "truth.json"), "w"), indent=1)
