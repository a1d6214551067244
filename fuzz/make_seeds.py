#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (fuzz/corpus/<target>/) from the shared real traces.

Each snapshot seed is the LAST entries of a real trace with that trace's final `segments` (as a
ring buffer would have kept them, so the importer's state rebuild has real work), pickled with
the protocol PyTorch's _dump_snapshot uses. The trace and chunk seeds are those snapshots run
through `memreplay import`; compressed_import_fuzz gets every snapshot seed plain and
compressed four ways, and each RMM log gzip'd. Usage: fuzz/make_seeds.py SHARED_TRACES_DIR MEMREPLAY_BINARY
"""
import gzip
import lzma
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import zlib

traces_dir, memreplay = sys.argv[1], sys.argv[2]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(root, target), exist_ok=True)
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data)


def small_snapshot(snapshot, entries, keep_frames):
    out = dict(snapshot)
    segments = []
    for seg in snapshot["segments"][:6]:
        seg = dict(seg)
        seg["frames"] = []
        seg["blocks"] = [dict(b, frames=[]) for b in seg["blocks"][:8]]
        segments.append(seg)
    out["segments"] = segments
    traces = []
    for trace in snapshot["device_traces"]:
        tail = [dict(e) for e in trace[-entries:]]
        for e in tail:
            e["frames"] = e.get("frames", [])[:3] if keep_frames else []
        traces.append(tail)
    out["device_traces"] = traces
    out["external_annotations"] = snapshot.get("external_annotations", [])[:4]
    return out


def rmm_log(snapshot, entries):
    lines = ["Thread,Time,Action,Pointer,Size,Stream"]
    for i, e in enumerate(snapshot["device_traces"][0][:entries]):
        action = {"alloc": "allocate", "free_completed": "free"}.get(e["action"])
        if action is None:
            continue
        t = e.get("time_us", i) % (24 * 3600 * 10**6)
        stamp = "%02d:%02d:%02d.%06d" % (t // 3600e6, t // 60e6 % 60, t // 1e6 % 60, t % 10**6)
        lines.append("1,%s,%s,0x%x,%d,0x%x" % (stamp, action, e["addr"], e["size"], e.get("stream", 0)))
    return ("\n".join(lines) + "\n").encode()


# Baselines by hand: the oldest version, tolerances and a capacity, extreme numbers, escapes.
BASELINE_SEEDS = [
    '{"capacity":null,"entries":[{"metrics":{"device_calls":15.0,"oom":0.0,"overhead":1.45,'
    '"reserved_peak":683671552.0},"policy":"pytorch","trace":"run"}],"schema":"memreplay-check-baseline",'
    '"schema_version":1,"tolerances":{}}',
    '{"schema":"memreplay-check-baseline","schema_version":2,"capacity":42949672960,'
    '"tolerances":{"reserved_peak":0.02,"unallocated_at_peak":0.05},"entries":[]}',
    '{"schema":"memreplay-check-baseline","schema_version":2,"capacity":18446744073709551615,"entries":'
    '[{"trace":"t\\u00fc\\\\\\"x","policy":"p:a:1,b:2","metrics":{"reserved_peak":1.7976931348623157e308,'
    '"requested_peak":4.9e-324,"oom":1,"events":0}}]}',
]


def baseline_seed(stem, mrt, tmp):
    """The baseline check writes for a trace under two policies, when its update passes."""
    baseline = os.path.join(tmp, "baseline.json")
    subprocess.run([memreplay, "check", stem + "=" + mrt, "--policy", "pytorch", "--policy",
                    "pytorch:expandable_segments:True", "--update-baseline", "--baseline", baseline],
                   capture_output=True)
    if os.path.exists(baseline):
        with open(baseline, "rb") as f:
            put("baseline_reader_fuzz", stem + ".json", f.read())


def compressed(data):
    """`data` compressed the four ways the importers read, as (file suffix, bytes)."""
    zst = subprocess.run(["zstd", "-c"], input=data, capture_output=True, check=True).stdout
    return [(".xz", lzma.compress(data)), (".gz", gzip.compress(data)), (".zlib", zlib.compress(data)),
            (".zst", zst)]


def chunks(mrt):
    """The decompressed Chunk payloads of a .mrt (records after the 8-byte magic)."""
    at, out = 8, []
    while at + 12 <= len(mrt):
        kind, length, _crc = struct.unpack_from("<III", mrt, at)
        payload = mrt[at + 12 : at + 12 + length]
        if kind == 2:
            out.append(subprocess.run(["zstd", "-dc"], input=payload, capture_output=True, check=True).stdout)
        if kind == 3:
            break
        at += 12 + length
    return out


for name in sorted(os.listdir(traces_dir)):
    if not name.endswith(".pickle.xz"):
        continue
    stem = name.split(".pickle")[0]
    with lzma.open(os.path.join(traces_dir, name)) as f:
        snapshot = pickle.load(f)
    for entries, frames in ((24, True), (120, False)):
        data = pickle.dumps(small_snapshot(snapshot, entries, frames), protocol=4)
        tag = "%s_%d" % (stem, entries)
        put("unpickle_fuzz", tag + ".pickle", data)
        put("one_pass_dict_fuzz", tag + ".pickle", data)
        put("snapshot_import_fuzz", tag + ".pickle", data)
        put("import_ahead_fuzz", tag + ".pickle", data)
        put("compressed_import_fuzz", tag + ".pickle", data)
        for suffix, packed in compressed(data):
            if entries == 24:
                put("decompress_fuzz", tag + suffix, packed)
            put("compressed_import_fuzz", tag + suffix, packed)
        with tempfile.TemporaryDirectory() as tmp:
            src, mrt = os.path.join(tmp, "s.pickle"), os.path.join(tmp, "s.mrt")
            with open(src, "wb") as f:
                f.write(data)
            subprocess.run([memreplay, "import", src, "-o", mrt], check=True, capture_output=True)
            with open(mrt, "rb") as f:
                trace = f.read()
            if entries == 120:
                baseline_seed(stem, mrt, tmp)
        put("trace_reader_fuzz", tag + ".mrt", trace)
        for i, chunk in enumerate(chunks(trace)):
            put("chunk_decoder_fuzz", "%s_%d.chunk" % (tag, i), chunk)
    put("rmm_import_fuzz", stem + ".csv", rmm_log(snapshot, 80))
    put("compressed_import_fuzz", stem + ".csv.gz", gzip.compress(rmm_log(snapshot, 80)))
    for protocol in (2, 3, 5):
        for target in ("unpickle_fuzz", "one_pass_dict_fuzz"):
            put(target, "%s_p%d.pickle" % (stem, protocol),
                pickle.dumps(small_snapshot(snapshot, 12, True), protocol=protocol))

for i, spec in enumerate(BASELINE_SEEDS):
    put("baseline_reader_fuzz", "edge_%d.json" % i, spec.encode())

for i, spec in enumerate([
    "", "expandable_segments:True", "max_split_size_mb:64,garbage_collection_threshold:0.7",
    "roundup_power2_divisions:4", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
    "max_non_split_rounding_mb:512", "release_threshold:1GiB,reuse_allow_opportunistic:false",
    "reuse_follow_event_dependencies:True,reuse_allow_internal_dependencies:False",
    "release_threshold:0", "max_split_size_mb:20,expandable_segments:False"]):
    put("policy_options_fuzz", "spec_%d" % i, spec.encode())
