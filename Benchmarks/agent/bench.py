#!/usr/bin/env python3
"""capture-agent vs ffmpeg: CPU and memory to encode the same 2 x 720p30 + audio.

Driven by scripts/bench-agent.sh (which builds the binaries and the content generator);
see docs/benchmarks.md, section "capture-agent". Progress goes to stderr, the result
tables to stdout (plain text, or Markdown with --markdown).

One run of each side encodes the same bytes:
  agent : capture-agent run --fast-files --record with --source front=y4m:F --source back=y4m:F
          --source mic=wav:A, streaming over TLS 1.3 (mutual TLS, throwaway CA made with
          openssl) to a release record-server on 127.0.0.1 that writes the MP4.
  ffmpeg: one process, inputs F, F, A, two libx264 streams and one libopus stream with the
          agent's default x264/Opus settings, written to one MP4.
Measured per process with wait4(): user+sys CPU seconds (all threads) and ru_maxrss; wall
time from spawn to exit. record-server's CPU is the /proc/<pid>/stat delta over each agent
run (it is one long-lived process); its peak RSS is VmHWM at the end.
"""

import argparse
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time

AGENT_ID = "bench-agent"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# The agent's defaults (Sources/CaptureAgentCore/Encoding/SampleEncoders.swift,
# Sources/MediaEncoding/H264Encoder.swift, OpusEncoder.swift, docs/agent.md) spelt for ffmpeg:
#   x264: preset veryfast, tune zerolatency, CRF 23, keyint = min-keyint = 2 s (60 frames;
#         x264 clamps min-keyint to keyint/2+1 on both sides), scenecut 0, no B-frames,
#         threads 0 (auto), no profile, b_vfr_input = 1 (force-cfr=0: zerolatency clears it,
#         the agent sets it again for its nanosecond timebase).
#   Opus: 48 kHz mono, 64 kbit/s, application audio, 20 ms frames, libopus defaults
#         otherwise: VBR on and constrained (ffmpeg's default is unconstrained), complexity 9
#         (ffmpeg's default compression_level is 10).


def x264_args(fps):
    return ["-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-crf", "23",
            "-x264-params", f"keyint={2 * fps}:min-keyint={2 * fps}:scenecut=0:bframes=0:force-cfr=0",
            "-threads", "0"]


OPUS_ARGS = ["-c:a", "libopus", "-b:a", "64k", "-vbr", "constrained", "-compression_level", "9",
             "-application", "audio", "-frame_duration", "20"]


def log(msg):
    print(f"bench-agent: {msg}", file=sys.stderr, flush=True)


def run_checked(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"bench-agent: command failed ({r.returncode}): {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is state (field 3); utime, stime are fields 14, 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return 0


def measure(cmd, stdout_path, stderr_path, timeout=900):
    """Spawns cmd, reaps it with wait4; returns (rc, wall s, cpu s, user s, sys s, maxrss KiB)."""
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return dict(rc=p.returncode, wall=wall, cpu=ru.ru_utime + ru.ru_stime, user=ru.ru_utime,
                sys=ru.ru_stime, maxrss_kib=ru.ru_maxrss)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_pki(d):
    """Throwaway CA, server certificate (SAN IP 127.0.0.1 + DNS localhost, EKU serverAuth) and
    agent certificate (CN and SAN URI urn:mcrp:agent:<id>, EKU clientAuth), ECDSA P-256 — the
    same profile as Sources/RecordingTLS/CertificateAuthority.swift issues."""
    os.makedirs(d, exist_ok=True)
    cnf = os.path.join(d, "openssl.cnf")
    with open(cnf, "w") as f:
        f.write(f"""[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
authorityKeyIdentifier = keyid
[agent]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectAltName = URI:urn:mcrp:agent:{AGENT_ID}
authorityKeyIdentifier = keyid
""")
    p = lambda n: os.path.join(d, n)
    for name in ("ca", "server", "agent"):
        run_checked(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                     "-out", p(f"{name}-key.pem")])
    run_checked(["openssl", "req", "-config", cnf, "-x509", "-new", "-key", p("ca-key.pem"), "-sha256",
                 "-days", "2", "-subj", "/CN=bench-agent throwaway CA", "-extensions", "ca", "-out", p("ca.pem")])
    for name, cn in (("server", "127.0.0.1"), ("agent", AGENT_ID)):
        run_checked(["openssl", "req", "-config", cnf, "-new", "-key", p(f"{name}-key.pem"), "-subj", f"/CN={cn}",
                     "-out", p(f"{name}.csr")])
        run_checked(["openssl", "x509", "-req", "-in", p(f"{name}.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca-key.pem"),
                     "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2", "-sha256",
                     "-extfile", cnf, "-extensions", name, "-out", p(f"{name}.pem")])
    for f in ("ca-key.pem", "server-key.pem", "agent-key.pem"):
        os.chmod(p(f), 0o600)
    return {k: p(v) for k, v in dict(ca="ca.pem", server_cert="server.pem", server_key="server-key.pem",
                                      agent_cert="agent.pem", agent_key="agent-key.pem").items()}


def count_packets(path):
    """Packets per stream as ffprobe counts them: list of (codec, count)."""
    out = run_checked(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                       "stream=codec_name,nb_read_packets,bit_rate", "-of", "json", path])
    return [(s["codec_name"], int(s["nb_read_packets"]), int(s.get("bit_rate") or 0))
            for s in json.loads(out)["streams"]]


def x264_options(path):
    """The options string x264 writes into its SEI (one per encoder instance; deduplicated)."""
    with open(path, "rb") as f:
        data = f.read()
    found = re.findall(rb"x264 - core (\d+)[^\n]*? - options: ([ -~]+?)\x00", data)
    return sorted({(c.decode(), o.decode().rstrip("\x80")) for c, o in found})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--gen", required=True, help="gen-content binary")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fsync", choices=["fragment", "none"], default="fragment", help="record-server's fsync policy")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--perf", metavar="FILE", help="after the runs, one more agent run under perf record -g into FILE")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    width, height = (int(x) for x in a.size.split("x"))
    wd = os.path.abspath(a.workdir)
    os.makedirs(wd, exist_ok=True)
    load_before = loadavg()

    # Content (both sides read these very files).
    y4m = os.path.join(wd, f"pattern-{width}x{height}-{a.fps}-{a.seconds}s.y4m")
    wav = os.path.join(wd, f"tone-48k-mono-{a.seconds}s.wav")
    if not (os.path.exists(y4m) and os.path.exists(wav)):
        log(f"generating {y4m} and {wav}")
        run_checked([a.gen, y4m, wav, str(a.seconds), str(width), str(height), str(a.fps)])
    frames = a.seconds * a.fps
    # + 1: the last packet carries libopus's 312-sample lookahead out (the agent and ffmpeg both emit it)
    opus_packets = a.seconds * 50 + 1

    pki = make_pki(os.path.join(wd, "pki"))
    port = free_port()
    data_dir = os.path.join(wd, "server-data")
    subprocess.run(["rm", "-rf", data_dir], check=True)
    config = {
        "ingest": {"host": "127.0.0.1", "port": port},
        "admin": {"enabled": False},
        "dataDirectory": data_dir,
        "tls": {"caCertificate": pki["ca"], "certificate": pki["server_cert"], "privateKey": pki["server_key"],
                "requireClientCertificate": True},
        "fsync": a.fsync,
        "logLevel": "warning",
    }
    cfg_path = os.path.join(wd, "record-server.json")
    with open(cfg_path, "w") as f:
        json.dump(config, f, indent=2)
    server_cmd = [a.server, "--config", cfg_path]
    server_log = open(os.path.join(wd, "record-server.log"), "wb")
    server = subprocess.Popen(server_cmd, stdin=subprocess.DEVNULL, stdout=server_log, stderr=server_log)
    for _ in range(300):
        if server.poll() is not None:
            sys.exit(f"bench-agent: record-server exited ({server.returncode}); see {wd}/record-server.log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        sys.exit("bench-agent: record-server did not start listening within 30 s")
    log(f"record-server pid {server.pid} on 127.0.0.1:{port} (TLS 1.3, mutual TLS, fsync {a.fsync})")

    def agent_cmd(session, video=y4m, audio=wav):
        return [a.agent, "run", "--server", f"127.0.0.1:{port}", "--ca", pki["ca"], "--cert", pki["agent_cert"],
                "--key", pki["agent_key"], "--agent-id", AGENT_ID,
                "--source", f"front=y4m:{video}", "--source", f"back=y4m:{video}", "--source", f"mic=wav:{audio}",
                "--record", "--session-id", session, "--fast-files"]

    ff_out = os.path.join(wd, "ffmpeg-out.mp4")
    ffmpeg_cmd = (["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", y4m, "-i", y4m, "-i", wav,
                   "-map", "0:v", "-map", "1:v", "-map", "2:a"] + x264_args(a.fps) + OPUS_ARGS + [ff_out])

    def find_recording(session):
        for root, _, files in os.walk(os.path.join(data_dir, "recordings")):
            if os.path.basename(root) == session:
                mp4s = sorted(f for f in files if f.endswith(".mp4"))
                if mp4s:
                    return os.path.join(root, mp4s[0])
        return None

    expected = [("h264", frames), ("h264", frames), ("opus", opus_packets)]
    log_offset = [0]
    results = {"agent": [], "ffmpeg": []}
    checks = {}

    def run_agent(tag, timed):
        session = f"bench-{tag}"
        before = proc_cpu_seconds(server.pid)
        r = measure(agent_cmd(session), os.path.join(wd, f"agent-{tag}.out"), os.path.join(wd, f"agent-{tag}.log"))
        # The server finalizes the file when it gets SessionClose, before SessionClosed reaches
        # the agent, so its work for this run is done by now.
        r["server_cpu"] = proc_cpu_seconds(server.pid) - before
        if r["rc"] != 0:
            sys.exit(f"bench-agent: agent run {tag} exited {r['rc']}; see {wd}/agent-{tag}.log")
        with open(os.path.join(wd, f"agent-{tag}.log"), errors="replace") as f:
            agent_log = f.read()
        total = sum(n for _, n in expected)
        if f"finalized through sequence {total}" not in agent_log:
            sys.exit(f"bench-agent: agent run {tag} did not send and finalize all {total} samples; see {wd}/agent-{tag}.log")
        server_log.flush()
        with open(server_log.name, errors="replace") as f:
            f.seek(log_offset[0])
            new_lines = f.read()
            log_offset[0] = f.tell()
        r["refused"] = new_lines.count("sample refused")
        rec = find_recording(session)
        if rec is None:
            sys.exit(f"bench-agent: no recording for session {session} under {data_dir}")
        got = count_packets(rec)
        r["packets"] = got
        # The agent sent every sample (checked above); the file may lack the first video frame(s)
        # the server refused (see docs/benchmarks.md): counted, reported, not fatal here.
        if [c for c, _, _ in got] != [c for c, _ in expected] or sum(n for _, n, _ in got) + r["refused"] != total:
            sys.exit(f"bench-agent: {rec}: packets {got} + {r['refused']} refused != expected {expected}")
        checks["agent"] = (rec, got)
        if timed:
            results["agent"].append(r)
        log(f"agent  {tag:>8}: wall {r['wall']:.2f} s, CPU {r['cpu']:.2f} s (user {r['user']:.2f}, sys {r['sys']:.2f}), "
            f"max RSS {r['maxrss_kib'] / 1024:.1f} MiB; server CPU {r['server_cpu']:.2f} s, refused {r['refused']}; load {loadavg()}")
        return rec

    def run_ffmpeg(tag, timed):
        r = measure(ffmpeg_cmd, os.path.join(wd, f"ffmpeg-{tag}.out"), os.path.join(wd, f"ffmpeg-{tag}.log"))
        if r["rc"] != 0:
            sys.exit(f"bench-agent: ffmpeg run {tag} exited {r['rc']}; see {wd}/ffmpeg-{tag}.log")
        got = count_packets(ff_out)
        if [(c, n) for c, n, _ in got] != expected:
            sys.exit(f"bench-agent: {ff_out}: packets {got}, expected {expected}")
        checks["ffmpeg"] = (ff_out, got)
        if timed:
            results["ffmpeg"].append(r)
        log(f"ffmpeg {tag:>8}: wall {r['wall']:.2f} s, CPU {r['cpu']:.2f} s (user {r['user']:.2f}, sys {r['sys']:.2f}), "
            f"max RSS {r['maxrss_kib'] / 1024:.1f} MiB; load {loadavg()}")

    try:
        log("warm-up (not timed): one run of each")
        run_agent("warmup", False)
        run_ffmpeg("warmup", False)
        for i in range(a.repeat):
            order = [run_agent, run_ffmpeg] if i % 2 == 0 else [run_ffmpeg, run_agent]
            for f in order:
                f(f"run{i + 1}", True)
        # Settings check (not timed): x264 writes its options string into an SEI of the first
        # picture only, and in --fast-files runs the server usually refuses that picture (see the
        # notes). So a 2-second paced agent run (no --fast-files) supplies the agent's string.
        check_y4m = os.path.join(wd, f"check-{width}x{height}-{a.fps}-2s.y4m")
        check_wav = os.path.join(wd, "check-2s.wav")
        if not os.path.exists(check_y4m):
            run_checked([a.gen, check_y4m, check_wav, "2", str(width), str(height), str(a.fps)])
        cmd = agent_cmd("bench-check", check_y4m, check_wav)
        cmd.remove("--fast-files")
        r = measure(cmd, os.path.join(wd, "agent-check.out"), os.path.join(wd, "agent-check.log"))
        check_rec = find_recording("bench-check") if r["rc"] == 0 else None
        opts = {"agent": x264_options(check_rec) if check_rec else [], "ffmpeg": x264_options(ff_out)}
        if a.perf:
            log(f"one more agent run under perf record -g -> {a.perf}")
            cmd = ["perf", "record", "-F", "999", "-g", "-o", a.perf, "--"] + agent_cmd("bench-perf")
            r = measure(cmd, os.path.join(wd, "agent-perf.out"), os.path.join(wd, "agent-perf.log"))
            log(f"perf run exit {r['rc']}")
        server_hwm = proc_status(server.pid, "VmHWM")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server_log.close()
        log(f"record-server stopped with SIGTERM: exit status {server.returncode}")
    load_after = loadavg()

    # ---- report -------------------------------------------------------------------------
    def med(side, key):
        return statistics.median(r[key] for r in results[side])

    def lo(side, key):
        return min(r[key] for r in results[side])

    def hi(side, key):
        return max(r[key] for r in results[side])

    ratio = med("agent", "cpu") / med("ffmpeg", "cpu")
    per_run_ratios = [x["cpu"] / y["cpu"] for x, y in zip(results["agent"], results["ffmpeg"])]
    md = a.markdown
    cpu_model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 1024 / 1024
    ffv = run_checked(["ffmpeg", "-version"]).splitlines()[0]
    libs = subprocess.run(["sh", "-c", "dpkg-query -W -f='${Package} ${Version}\\n' libx264-164 libopus0 2>/dev/null"],
                          capture_output=True, text=True).stdout.strip().replace("\n", ", ")

    def table(headers, rows, numeric=True):
        """numeric: columns after the first are right-aligned; else every column is left-aligned."""
        right = lambda i: numeric and i > 0
        if md:
            out = ["| " + " | ".join(headers) + " |",
                   "|" + "|".join("---:" if right(i) else "---" for i in range(len(headers))) + "|"]
            out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
        else:
            widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
            fmt = lambda r: "  ".join(str(c).rjust(w) if right(i) else str(c).ljust(w)
                                      for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            out = [fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]
        return "\n".join(out)

    def h(title):
        return f"#### {title}\n" if md else f"\n{title}\n"

    print(h("Machine"))
    print(table(["Item", "Value"], [
        ["CPU", f"{cpu_model}, {os.cpu_count()} online CPUs (nproc {len(os.sched_getaffinity(0))})"],
        ["Memory", f"{mem_gib:.1f} GiB"],
        ["Kernel", os.uname().release],
        ["ffmpeg", ffv],
        ["libx264 / libopus (Debian)", libs or "?"],
        ["Load average (1/5/15 min)", f"{load_before} before, {load_after} after"],
    ], numeric=False))
    print()
    print(h("Content and checks"))
    agent_got, ff_got = checks["agent"][1], checks["ffmpeg"][1]
    print(table(["Item", "Value"], [
        ["Input", f"{os.path.basename(y4m)} ({os.path.getsize(y4m) / 1e6:.0f} MB, {frames} frames {width}x{height} C420 at {a.fps}/1) "
                  f"read twice (front, back) + {os.path.basename(wav)} ({a.seconds} s s16le 48 kHz mono)"],
        ["Frames encoded per run", f"{2 * frames} video + {opus_packets} Opus packets (both sides; ffprobe -count_packets on each output)"],
        ["Agent output (recording.mp4)", ", ".join(f"{c} {n} pkts {b / 1000:.0f} kbit/s" for c, n, b in agent_got)],
        ["Agent: samples sent / finalized", f"{sum(n for _, n in expected)} every run (agent log: finalized through sequence {sum(n for _, n in expected)})"],
        ["record-server: samples refused per timed run", ", ".join(str(r["refused"]) for r in results["agent"])
         + " (sampleBeforeRecordingStart, first video frames; see the notes)"],
        ["ffmpeg output (mp4)", ", ".join(f"{c} {n} pkts {b / 1000:.0f} kbit/s" for c, n, b in ff_got)],
        ["x264 SEI options, agent (2 s paced check run)", "; ".join(f"core {c}: {o}" for c, o in opts["agent"]) or "not found"],
        ["x264 SEI options, ffmpeg", "; ".join(f"core {c}: {o}" for c, o in opts["ffmpeg"])],
        ["x264 options identical", "yes" if opts["agent"] == opts["ffmpeg"] else "NO (see above)"],
    ], numeric=False))
    print()
    print(h(f"Results ({a.repeat} timed runs each after one warm-up; median [min–max])"))
    rng = lambda s, k, f: f"{f(med(s, k))} [{f(lo(s, k))}–{f(hi(s, k))}]"
    s2 = lambda x: f"{x:.2f}"
    mib = lambda x: f"{x / 1024:.1f}"
    fps_ = lambda s: f"{2 * frames / med(s, 'wall'):.0f}"
    print(table(["Process", "CPU s (user+sys)", "user s", "sys s", "Wall s", "Video fps (2 streams)", "Max RSS MiB", "CPU vs ffmpeg"], [
        ["capture-agent (whole process)", rng("agent", "cpu", s2), s2(med("agent", "user")), s2(med("agent", "sys")),
         rng("agent", "wall", s2), fps_("agent"), rng("agent", "maxrss_kib", mib), f"{ratio:.3f}×"],
        ["ffmpeg (whole process)", rng("ffmpeg", "cpu", s2), s2(med("ffmpeg", "user")), s2(med("ffmpeg", "sys")),
         rng("ffmpeg", "wall", s2), fps_("ffmpeg"), rng("ffmpeg", "maxrss_kib", mib), "1.000×"],
        ["record-server (during agent runs)", rng("agent", "server_cpu", s2), "", "", "", "",
         f"{server_hwm / 1024:.1f} (VmHWM, whole life)", ""],
    ]))
    print()
    cpus = {side: ", ".join(f"{r['cpu']:.2f}" for r in results[side]) for side in results}
    print(f"Per-run CPU s (in run order), agent: {cpus['agent']}; ffmpeg: {cpus['ffmpeg']}")
    print()
    print(f"Per-run CPU ratio agent/ffmpeg (run i vs run i): {', '.join(f'{x:.3f}' for x in per_run_ratios)}")
    verdict = "MET" if ratio <= 1.05 else "NOT MET"
    print(f"Target agent CPU <= 1.05× ffmpeg's (medians): {ratio:.3f}× — {verdict}")
    print()
    print(h("Command lines"))
    fence = "```" if md else ""
    if md:
        print("```sh")
    print(shlex.join(server_cmd) + "   # config: " + json.dumps(config))
    print(shlex.join(agent_cmd("bench-runN")))
    print(shlex.join(ffmpeg_cmd))
    if md:
        print(fence)
    if not a.keep:
        for f in (ff_out,):
            try:
                os.remove(f)
            except OSError:
                pass
        subprocess.run(["rm", "-rf", data_dir])


if __name__ == "__main__":
    main()
