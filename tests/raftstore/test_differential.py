"""Differential tests: the same etcdctl sessions against real etcd (3.4) and raftstore.

Each test is a *scenario*: a function that drives a :class:`Session` (one system) through
etcdctl commands. The scenario runs once against a 3-member etcd cluster and once against a
3-member raftstore cluster; every command's (rc, stdout, stderr) is normalised and recorded,
and the two transcripts must be equal.

Normalisation only removes what legitimately differs between two clusters:

* cluster / member ids, raft terms and indexes, db sizes, versions, timings, ports;
* revisions, made relative to the revision at the start of the scenario (the clusters are
  shared by all scenarios, each scenario uses its own key prefix);
* lease ids, replaced by ordinal placeholders (``<lease0>``) in order of grant;
* remaining TTLs, checked to be within a tolerance of the granted TTL and then erased;
* etcdctl's client-side retry log lines, reduced to the gRPC error they carry.

``RAFTSTORE_DIFF_DUMP=DIR`` writes both normalised transcripts of every scenario to DIR.
The harness is proven by running it etcd-against-etcd:
``RAFTSTORE_TEST_AGAINST=etcd pytest tests/raftstore/test_differential.py``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from raftstore.launcher import Cluster, EtcdCluster
from raftstore.testing import etcdctl
from raftstore.testing.fixtures import raftstore_class, require_etcd, require_raftstore

pytestmark = [pytest.mark.etcd, pytest.mark.timeout(180)]

TTL_TOLERANCE = 5  # seconds a remaining TTL may lag its grant while a scenario runs

_REV_FIELDS = {"revision", "create_revision", "mod_revision", "compact_revision",
               "CompactRevision"}
_ERASED_FIELDS = {"cluster_id", "member_id", "raft_term", "raftTerm", "raftIndex",
                  "raftAppliedIndex", "dbSize", "dbSizeInUse", "took"}


@dataclass
class Session:
    """One system's side of a scenario: runs etcdctl and records normalised results."""

    system: str
    cluster: Cluster
    prefix: str
    base: int = 0
    transcript: list[tuple[str, int, str, str]] = field(default_factory=list)
    leases: dict[int, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # port -> placeholder
    revs: dict[str, str] = field(default_factory=dict)  # absolute revision arg -> placeholder

    def __post_init__(self) -> None:
        self.base = self.revision()
        for m in self.cluster.members:
            self.labels[str(m.client_port)] = f"<client:{m.name}>"
            self.labels[str(m.peer_port)] = f"<peer:{m.name}>"

    # -- helpers a scenario uses -----------------------------------------------------------

    def k(self, name: str = "") -> str:
        """A key under this scenario's prefix."""
        return self.prefix + name

    def rev(self, rel: int) -> str:
        """The absolute revision ``rel`` writes after the scenario started, as an arg."""
        value = str(self.base + rel)
        self.revs[value] = f"<rev+{rel}>"
        return value

    def revision(self) -> int:
        out = self.cluster.ctl.check("get", "/diff-probe-no-such-key", "-w", "json")
        return int(json.loads(out)["header"]["revision"])

    def lease(self, n: int) -> str:
        """The hex id of the n-th lease granted in this scenario."""
        by_ordinal = {v: k for k, v in self.leases.items()}
        return f"{by_ordinal[f'<lease{n}>']:x}"

    def run(self, *args: str, input: str | None = None, record: bool = True,  # noqa: A002
            timeout: float = 20.0) -> etcdctl.Result:
        """Run etcdctl; record its normalised result in the transcript. Returns the raw
        result (so a scenario can branch on it the same way on both systems)."""
        res = self.cluster.ctl(*args, input=input, timeout=timeout)
        self._learn_leases(res.stdout)
        if record:
            self.transcript.append(
                (self._norm_args(args, input), res.rc, self.norm_out(res.stdout),
                 self.norm_err(res.stderr))
            )
        return res

    def setup(self, *args: str) -> None:
        """A step whose output is not compared but which must succeed."""
        res = self.run(*args, record=False)
        if res.rc != 0:
            pytest.fail(f"[{self.system}] setup step etcdctl {' '.join(args)} failed: "
                        f"{self.norm_err(res.stderr)}")

    def note(self, label: str, value: object) -> None:
        """Record a value the scenario computed itself (polling results and the like)."""
        self.transcript.append((label, 0, json.dumps(value, sort_keys=True), ""))

    # -- normalisation ----------------------------------------------------------------------

    def _learn_leases(self, out: str) -> None:
        for m in re.finditer(r"lease ([0-9a-f]{16}) granted", out):
            self._lease_label(int(m.group(1), 16))
        for line in out.splitlines():
            if line.startswith("{") and '"TTL"' in line and '"ID"' in line:  # lease grant
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                if "granted-ttl" not in doc:
                    self._lease_label(int(doc["ID"]))

    def _lease_label(self, lease_id: int) -> str:
        if lease_id not in self.leases:
            self.leases[lease_id] = f"<lease{len(self.leases)}>"
        return self.leases[lease_id]

    def _norm_args(self, args: tuple[str, ...], input: str | None) -> str:  # noqa: A002
        words = [self.revs.get(a, a) for a in args]
        if input:
            # only where the txn grammar takes a revision: mod()/create() compares, --rev
            stdin = re.sub(r'((?:mod|create)\("[^"]*"\) [=!<>]+ "|--rev[ =])(\d+)',
                           lambda m: m.group(1) + self.revs.get(m.group(2), m.group(2)), input)
            words.append(f"<<<{stdin!r}")
        return self.norm_text(" ".join(words))

    def norm_text(self, text: str) -> str:
        for lease_id, label in self.leases.items():
            text = re.sub(rf"\b0*{lease_id:x}\b", label, text)
            text = re.sub(rf"\b{lease_id}\b", label, text)

        def remaining(m: re.Match[str]) -> str:
            granted, left = int(m.group(1)), int(m.group(2))
            ok = granted - TTL_TOLERANCE <= left <= granted
            return f"granted with TTL({granted}s), remaining({'~' if ok else left}s)"

        text = re.sub(r"granted with TTL\((\d+)s\), remaining\((-?\d+)s\)", remaining, text)
        # etcd prints a lease's keys in map order (random): compare them as a set
        text = re.sub(r"attached keys\(\[([^\]]*)\]\)",
                      lambda m: f"attached keys([{' '.join(sorted(m.group(1).split()))}])", text)
        text = re.sub(r"took = [0-9.]+[a-zµ]*s", "took = <t>", text)
        # -w fields: "ClusterID" : 123
        text = re.sub(r'^"(ClusterID|MemberID|RaftTerm)" : \d+$', r'"\1" : <erased>', text,
                      flags=re.M)
        text = re.sub(r'^"(Revision|CreateRevision|ModRevision)" : (\d+)$',
                      lambda m: f'"{m.group(1)}" : <rev+{int(m.group(2)) - self.base}>', text,
                      flags=re.M)
        text = re.sub(r'^"Lease" : ([1-9]\d*)$',
                      lambda m: f'"Lease" : {self._lease_label(int(m.group(1)))}', text,
                      flags=re.M)
        text = re.sub(r"compacted revision (\d+)",
                      lambda m: f"compacted revision <rev+{int(m.group(1)) - self.base}>", text)
        text = re.sub(r"\b\d{4,}\b", lambda m: self.labels.get(m.group(0), m.group(0)), text)
        return text

    def norm_json(self, doc: Any, parent: str = "") -> Any:
        if isinstance(doc, list):
            return [self.norm_json(x, parent) for x in doc]
        if not isinstance(doc, dict):
            return doc
        out: dict[str, Any] = {}
        for key, val in doc.items():
            if key in _ERASED_FIELDS or (key == "version" and isinstance(val, str)):
                out[key] = "<erased>"
            elif key in _REV_FIELDS and isinstance(val, int):
                out[key] = f"<rev+{val - self.base}>" if val else 0
            elif key in ("key", "value", "range_end") and isinstance(val, str):
                out[key] = base64.b64decode(val).decode(errors="replace")
            elif key == "keys" and isinstance(val, list):
                # etcd lists a lease's keys in map order (random): compare them as a set
                out[key] = sorted(base64.b64decode(v).decode(errors="replace") for v in val)
            elif key == "lease" and isinstance(val, int):
                out[key] = self._lease_label(val)
            elif key in ("ID", "id") and isinstance(val, int):
                out[key] = "<member>" if parent == "members" else self._lease_label(val)
            elif key == "leader":
                out[key] = "<leader>"
            elif key.lower() == "ttl" and "granted-ttl" in doc and isinstance(val, int):
                # lease timetolive -w json: remaining TTL next to the granted one
                ok = doc["granted-ttl"] - TTL_TOLERANCE <= val <= doc["granted-ttl"]
                out[key] = "~" if ok else val
            elif key in ("clientURLs", "peerURLs", "endpoint", "Endpoint"):
                out[key] = json.loads(self.norm_text(json.dumps(val)))
            else:
                out[key] = self.norm_json(val, key)
        return out

    def norm_out(self, out: str) -> str:
        text = out.strip()
        if text.startswith(("{", "[")):
            try:
                return json.dumps(self.norm_json(json.loads(text)), sort_keys=True)
            except ValueError:
                pass
        return self.norm_text(out)

    def norm_err(self, err: str) -> str:
        lines: list[str] = []
        for line in err.splitlines():
            if line.startswith('{"level"'):
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                line = f"retry-log: {doc.get('error', doc.get('msg'))}"
            line = self.norm_text(line)
            if line.strip() and (not lines or lines[-1] != line):
                lines.append(line)
        return "\n".join(lines)


Scenario = Callable[[Session], None]


@pytest.fixture(scope="module")
def systems(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Cluster]]:
    """Clusters of this module's own: scenarios such as ``del --from-key`` see every key of
    the cluster, so the session's shared clusters (written to by other modules, not always
    alike on both) made the transcripts depend on which tests ran before."""
    require_etcd()
    require_raftstore()
    with EtcdCluster(tmp_path_factory.mktemp("diff-etcd"), nodes=3) as etcd, \
            raftstore_class()(tmp_path_factory.mktemp("diff-raftstore"), nodes=3) as ours:
        yield {"etcd": etcd, "raftstore": ours}


def compare(systems: dict[str, Cluster], name: str, scenario: Scenario) -> None:
    def play(system: str, cluster: Cluster) -> Session:
        s = Session(system, cluster, prefix=f"/diff/{name}/")
        scenario(s)
        return s

    # Both at once: each has its own cluster and its own session, and the scenarios spend
    # most of their time waiting (watches settling, leases running out).
    with ThreadPoolExecutor(len(systems)) as pool:
        played = {system: pool.submit(play, system, cluster)
                  for system, cluster in systems.items()}
        sessions = {system: f.result() for system, f in played.items()}
    want, got = sessions["etcd"].transcript, sessions["raftstore"].transcript
    if dump := os.environ.get("RAFTSTORE_DIFF_DUMP"):
        Path(dump).mkdir(parents=True, exist_ok=True)
        for system, s in sessions.items():
            Path(dump, f"{name}.{system}.txt").write_text("".join(
                f"$ etcdctl {cmd}\nrc={rc}\n{out}\n{err}\n\n"
                for cmd, rc, out, err in s.transcript))
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w != g:
            pytest.fail(
                f"step {i}: etcdctl {w[0]}\n"
                f"--- etcd:      rc={w[1]}\n{w[2]}\n{w[3]}\n"
                f"--- raftstore: rc={g[1]}\n{g[2]}\n{g[3]}\n"
                f"(raftstore command: {g[0]})"
            )
    assert len(want) == len(got), f"transcripts differ in length: {len(want)} vs {len(got)}"


@pytest.fixture
def diff(systems: dict[str, Cluster], request: pytest.FixtureRequest) -> Iterator[
        Callable[[Scenario], None]]:
    yield lambda scenario: compare(systems, request.node.name, scenario)


# -- scenarios ----------------------------------------------------------------------------------


def test_put_get(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        s.run("put", s.k("a"), "1")
        s.run("put", s.k("a"), "2", "--prev-kv")
        s.run("put", s.k("b"), "hello world")
        s.run("put", s.k("c"), "")
        s.run("get", s.k("a"))
        s.run("get", s.k("a"), "-w", "json")
        s.run("get", s.k("c"), "-w", "json")
        s.run("get", s.k("missing"))
        s.run("get", s.k("missing"), "-w", "json")
        s.run("get", s.k("a"), "--print-value-only")
        s.run("get", s.k("b"), "--hex")
        s.run("get", s.k("a"), "--consistency=s", "-w", "json")
        s.run("put", s.k("a"), "3", "-w", "json")
        s.run("put", s.k("a"), "4", "--prev-kv", "-w", "json")
        s.run("put", s.k("a"), "--ignore-value")  # no value: etcdctl's own error
        s.run("put", s.k("a"), "5", "--ignore-lease")
        s.run("get", s.k("a"), "-w", "fields")
        s.run("get", s.k("a"), "-w", "table")

    diff(scenario)


def test_prefix_range_limit_sort(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        for name, value in [("b", "2"), ("a", "3"), ("d", "1"), ("c", "5"), ("e", "4"),
                            ("a", "33"), ("c", "55"), ("c", "555")]:
            s.setup("put", s.k(name), value)
        s.run("put", s.k("") + "x/nested", "n")
        s.run("put", s.prefix.rstrip("/") + "0", "sibling, not under the prefix")
        s.run("get", s.k(), "--prefix")
        s.run("get", s.k(), "--prefix", "-w", "json")
        s.run("get", s.k("b"), s.k("d"))
        s.run("get", s.k("b"), s.k("d"), "-w", "json")
        s.run("get", s.k("c"), "--from-key", "--limit", "3")
        s.run("get", s.k(), "--prefix", "--limit", "2", "-w", "json")
        s.run("get", s.k(), "--prefix", "--limit", "100", "-w", "json")
        s.run("get", s.k(), "--prefix", "--keys-only")
        s.run("get", s.k(), "--prefix", "--keys-only", "-w", "json")
        for target in ("KEY", "VALUE", "CREATE", "MODIFY", "VERSION"):
            for order in ("ASCEND", "DESCEND"):
                s.run("get", s.k(), "--prefix", f"--sort-by={target}", f"--order={order}")
        s.run("get", s.k(), "--prefix", "--order=DESCEND", "--limit", "2", "-w", "json")
        s.run("get", s.k(), "--prefix", "--sort-by=MODIFY", "--order=DESCEND", "--limit", "2")
        s.run("get", s.k(), "--prefix", "--sort-by=VERSION", "--limit", "1", "-w", "json")

    diff(scenario)


def test_revisions(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        s.run("put", s.k("a"), "v1")  # +1
        s.run("put", s.k("b"), "v1")  # +2
        s.run("put", s.k("a"), "v2")  # +3
        s.run("del", s.k("b"))  # +4
        s.run("put", s.k("b"), "v3")  # +5
        for rel in range(0, 6):
            s.run("get", s.k(), "--prefix", "--rev", s.rev(rel), "-w", "json")
        s.run("get", s.k("a"), "--rev", s.rev(1))
        s.run("get", s.k("b"), "--rev", s.rev(4))
        s.run("get", s.k(), "--prefix", "--rev", s.rev(3), "--keys-only")
        s.run("get", s.k("a"), "--rev", s.rev(100000))
        s.run("get", s.k("a"), "--rev", s.rev(100000), "-w", "json")

    diff(scenario)


def test_delete(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        for name in ("a", "b", "c", "d", "e", "f/1", "f/2"):
            s.setup("put", s.k(name), f"val-{name}")
        s.run("del", s.k("a"))
        s.run("del", s.k("a"))
        s.run("del", s.k("b"), "--prev-kv")
        s.run("del", s.k("c"), s.k("e"), "--prev-kv")
        s.run("del", s.k("f/"), "--prefix", "--prev-kv", "-w", "json")
        s.run("del", s.k("zz"), "-w", "json")
        s.run("get", s.k(), "--prefix", "-w", "json")
        s.run("put", s.k("a"), "again")
        s.run("get", s.k("a"), "-w", "json")
        s.run("del", s.k(), "--prefix")
        s.run("get", s.k(), "--prefix", "-w", "json")
        s.run("del", s.k("x"), "--from-key")

    diff(scenario)


def test_txn(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        a, b, c, d = s.k("a"), s.k("b"), s.k("c"), s.k("d")
        s.run("put", a, "1")  # +1
        s.run("put", b, "x")  # +2
        s.run("put", a, "2")  # +3
        txns = [
            # success: value and version and mod match
            f'value("{a}") = "2"\nversion("{a}") = "2"\nmod("{a}") = "{s.rev(3)}"\n\n'
            f"put {c} from-txn\nget {a}\n\nput {d} failure\n\n",
            # failure branch
            f'value("{a}") = "nope"\n\nput {c} never\n\nget {b}\nput {d} failure\ndel {b}\n\n',
            # create revision compare, greater/less
            f'create("{a}") = "{s.rev(1)}"\nmod("{c}") > "0"\nversion("{b}") < "5"\n\n'
            f"get {s.k()} --prefix\n\n\n",
            # compare on a missing key: version 0
            f'version("{s.k("missing")}") = "0"\n\nput {s.k("missing")} created\n\n\n',
            f'create("{s.k("missing")}") = "0"\n\nput {s.k("missing")} twice\n\n'
            f"get {s.k('missing')}\n\n",
            # range compare over a prefix is not in etcdctl's grammar; a del in success
            f'value("{c}") != "x"\n\ndel {c}\nput {a} 3\n\n\n',
        ]
        for t in txns:
            s.run("txn", "-i=false", input=t)
            s.run("txn", "-i=false", "-w", "json", input=t.replace(" from-txn", " again"))
        s.run("get", s.k(), "--prefix", "-w", "json")

    diff(scenario)


def _watch(s: Session, *args: str, writes: Callable[[], None] | None = None,
           settle: float = 1.0) -> None:
    proc = s.cluster.ctl.spawn("watch", *args)
    time.sleep(0.7)  # connected and created: the live writes come after the history
    if writes is not None:
        writes()
    time.sleep(settle)
    res = etcdctl.finish(proc)
    if "-w" in args and "json" in args:
        events: list[Any] = []
        for line in res.stdout.splitlines():
            if line.startswith("{"):
                doc = json.loads(line)
                events.extend(s.norm_json(doc.get("Events") or []))
                if doc.get("CompactRevision"):
                    events.append({"compact": s.norm_json(doc)["CompactRevision"]})
                if doc.get("Canceled"):
                    events.append({"canceled": True})
        s.note(f"watch {' '.join(args)} (json events)", events)
    else:
        s.note(f"watch {' '.join(args)}", s.norm_text(res.stdout).splitlines())
    s.note(f"watch {' '.join(args)} (stderr)", s.norm_err(res.stderr))


def test_watch(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        s.run("put", s.k("a"), "1")  # +1
        s.run("put", s.k("a"), "2")  # +2
        s.run("del", s.k("a"))  # +3
        s.run("put", s.k("b"), "3")  # +4
        s.run("put", s.k("c/x"), "4")  # +5

        n = 0

        def live() -> None:
            nonlocal n
            n += 1
            s.setup("put", s.k("b"), f"live{n}")
            s.setup("del", s.k("c/x"))
            s.setup("put", s.k("c/x"), f"back{n}")

        _watch(s, "--rev", s.rev(1), s.k(), "--prefix", writes=live)
        _watch(s, "--rev", s.rev(1), s.k(), "--prefix", "--prev-kv", writes=live)
        _watch(s, "--rev", s.rev(2), s.k(), "--prefix", "-w", "json", writes=live)
        _watch(s, "--rev", s.rev(2), s.k(), "--prefix", "--prev-kv", "-w", "json")
        _watch(s, "--rev", s.rev(1), s.k("a"))
        _watch(s, "--rev", s.rev(1), s.k("b"), s.k("c/y"))
        _watch(s, s.k("b"), writes=live)  # from now: only the live writes

    diff(scenario)


def test_compaction(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        for i in range(1, 6):
            s.run("put", s.k("a"), f"v{i}")  # +1..+5
        s.run("put", s.k("b"), "x")  # +6
        s.run("compaction", s.rev(3))
        s.run("get", s.k("a"), "--rev", s.rev(2))
        s.run("get", s.k("a"), "--rev", s.rev(2), "-w", "json")
        s.run("get", s.k("a"), "--rev", s.rev(3), "-w", "json")
        s.run("get", s.k("a"), "--rev", s.rev(4))
        s.run("get", s.k(), "--prefix", "-w", "json")
        s.run("compaction", s.rev(2))  # already compacted
        s.run("compaction", s.rev(3))  # same again
        s.run("compaction", s.rev(100000))  # future
        s.run("compaction", s.rev(6), "--physical")
        s.run("get", s.k("a"), "--rev", s.rev(5))
        s.run("get", s.k(), "--prefix", "--rev", s.rev(6), "-w", "json")
        _watch(s, "--rev", s.rev(2), s.k(), "--prefix")
        _watch(s, "--rev", s.rev(2), s.k(), "--prefix", "-w", "json")
        _watch(s, "--rev", s.rev(6), s.k(), "--prefix")
        s.run("txn", "-i=false", input=f"\n\nget {s.k('a')} --rev {s.rev(1)}\n\n\n")

    diff(scenario)


def test_lease(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        s.run("lease", "grant", "60")
        s.run("lease", "grant", "120", "-w", "json")
        s.run("put", s.k("a"), "1", "--lease", s.lease(0))
        s.run("put", s.k("b"), "2", "--lease", s.lease(0))
        s.run("put", s.k("c"), "3", "--lease", s.lease(1))
        s.run("get", s.k(), "--prefix", "-w", "json")
        s.run("lease", "timetolive", s.lease(0))
        s.run("lease", "timetolive", s.lease(0), "--keys")
        s.run("lease", "timetolive", s.lease(1), "--keys", "-w", "json")
        s.run("lease", "keep-alive", "--once", s.lease(0))
        # lease list shows every lease of the cluster (other scenarios' too): only ours matter
        res = s.run("lease", "list", record=False)
        listed = set(res.stdout.split())
        s.note("lease list includes this scenario's leases",
               (res.rc, s.lease(0).zfill(16) in listed, s.lease(1).zfill(16) in listed))
        # re-put without --lease detaches the key from the lease
        s.run("put", s.k("b"), "2b")
        s.run("lease", "timetolive", s.lease(0), "--keys")
        s.run("put", s.k("c"), "3c", "--ignore-lease")
        s.run("get", s.k("c"), "-w", "json")
        s.run("lease", "revoke", s.lease(0))
        s.run("get", s.k(), "--prefix", "-w", "json")
        s.run("lease", "timetolive", s.lease(0))
        s.run("lease", "revoke", s.lease(0))
        s.run("lease", "revoke", s.lease(1))
        s.run("get", s.k(), "--prefix", "--keys-only")
        # unknown leases
        s.run("put", s.k("x"), "1", "--lease", "1234abcd")
        s.run("lease", "revoke", "1234abcd")
        s.run("lease", "timetolive", "1234abcd")
        s.run("lease", "keep-alive", "--once", "1234abcd", timeout=15)

    diff(scenario)


def test_lease_expiry(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        s.run("lease", "grant", "2")
        s.run("put", s.k("e1"), "gone soon", "--lease", s.lease(0))
        s.run("put", s.k("e2"), "gone soon", "--lease", s.lease(0))
        s.run("put", s.k("stay"), "stays")
        s.run("get", s.k(), "--prefix", "--keys-only")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            res = s.run("get", s.k("e"), "--prefix", "-w", "json", record=False)
            if json.loads(res.stdout).get("count", 0) == 0:
                break
            time.sleep(0.2)
        s.note("expired within 20s", time.monotonic() < deadline)
        s.run("get", s.k(), "--prefix", "-w", "json")
        s.run("lease", "timetolive", s.lease(0))
        s.run("put", s.k("late"), "x", "--lease", s.lease(0))

    diff(scenario)


def test_errors(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        s.run("put", "", "x")
        s.run("get", "")
        s.run("del", "")
        s.run("put", s.k("a"), "1")
        s.run("get", s.k("a"), "--rev", s.rev(1000000))
        s.run("put", s.k("a"), "1", "--lease", "ffff")
        s.run("txn", "-i=false", input=f'value("{s.k("a")}") = "1"\n\nput  x\n\n\n')
        s.run("get", s.k("a"), "--sort-by=NOPE")
        s.run("lease", "grant", "0")
        s.run("lease", "grant", "-5")
        # a range whose end sorts before its key: an empty answer, not an error
        s.run("put", s.k("b"), "2")
        s.run("get", s.k("b"), s.k("a"), "-w", "json")
        s.run("del", s.k("b"), s.k("a"))
        s.run("get", s.k("b"), "--print-value-only")
        # over etcd's 1.5 MiB request limit (but under gRPC's receive limit)
        s.run("put", s.k("big"), input="a" * 1_600_000)
        s.run("get", s.k("big"), "--keys-only")

    diff(scenario)


def test_cluster_commands(diff: Callable[[Scenario], None]) -> None:
    def scenario(s: Session) -> None:
        res = s.run("endpoint", "health", record=False)
        lines = (res.stdout + res.stderr).splitlines()  # etcdctl 3.4 prints health to stderr
        s.note("endpoint health", (res.rc, sorted(s.norm_text(x) for x in lines if "health" in x)))
        res = s.run("endpoint", "health", "-w", "json", record=False)
        health = sorted(s.norm_json(json.loads(res.stdout)), key=lambda d: d["endpoint"])
        s.note("endpoint health -w json", health)

        res = s.run("endpoint", "status", "-w", "json", record=False)
        status = json.loads(res.stdout)
        leaders = {e["Status"]["leader"] for e in status}
        ids = {e["Status"]["header"]["member_id"] for e in status}
        s.note("endpoint status: one leader among the members",
               len(leaders) == 1 and leaders <= ids and len(ids) == 3)
        s.note("endpoint status fields",
               sorted({f for e in status for f in e["Status"]}))
        s.note("endpoint status header fields",
               sorted({f for e in status for f in e["Status"]["header"]}))
        s.note("endpoint status indexes are positive",
               all(e["Status"]["raftIndex"] > 0 and e["Status"]["raftTerm"] > 0 for e in status))
        res = s.run("endpoint", "status", record=False)
        s.note("endpoint status (simple) lines", len(res.stdout.splitlines()))

        # hash values are the implementation's own; all members must agree on theirs
        res = s.run("endpoint", "hashkv", "-w", "json", record=False)
        hashes = json.loads(res.stdout) if res.rc == 0 else []
        s.note("endpoint hashkv: every member answers, all equal",
               (res.rc, len(hashes), len({h["HashKV"]["hash"] for h in hashes})))

        res = s.run("member", "list", record=False)
        rows = sorted(s.norm_text(res.stdout).splitlines(), key=lambda r: r.split(", ")[2])
        s.note("member list", [", ".join(r.split(", ")[1:]) for r in rows])
        res = s.run("member", "list", "-w", "json", record=False)
        doc = s.norm_json(json.loads(res.stdout))
        doc["members"].sort(key=lambda m: m["name"])
        s.note("member list -w json", doc)
        s.note("member ids are distinct and non-zero", len(
            {m["ID"] for m in json.loads(res.stdout)["members"] if m["ID"]}) == 3)

    diff(scenario)
