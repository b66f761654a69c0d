"""Network partitions between the members of a local cluster (tests only).

Every member listens for its peers on one port and advertises another
(``--listen-peer-urls`` / ``--initial-advertise-peer-urls``, as behind a NAT or a load
balancer); a :class:`PeerProxy` listens on the advertised ports and forwards each connection
to the member's real one. :meth:`PeerProxy.partition` then cuts the links between groups of
members (:meth:`PeerProxy.cut_link` one link, :meth:`PeerProxy.deafen` one direction),
:meth:`PeerProxy.heal` restores them.

A cut link is a black hole, as a failed switch is: the connections stay open and whatever
is sent on them is dropped, so a member only learns of it from its own timeouts. Healing
closes the connections that were cut (the bytes they lost left them mid-message) and lets
new ones through.

Who is talking: a connection arrives at the advertised port of the member that accepts it;
the member that opened it names itself in its first bytes, in both kinds of cluster:
raftstore's pysyncobj transport sends its own advertised ``host:port`` as its first
message, and etcd's peer requests carry ``X-PeerURLs``. The proxy looks for each member's
advertised ``host:port`` there. A connection whose opener it cannot name is cut whenever any
partition is in force.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable

_CHUNK = 65536
_NAME_WINDOW = 4096  # bytes of a connection's start searched for its opener's name


class _Link:
    """One proxied connection: ``down`` from the opener, ``up`` to the member at ``to``."""

    def __init__(self, down: socket.socket, up: socket.socket, to: int) -> None:
        self.down = down
        self.up = up
        self.to = to
        self.opener: int | None = None
        self.named = False  # the opener's first read was searched for its name
        self.cut = False  # once cut, never carries a byte again, either way
        # directions (True: from the opener) whose bytes are dropped for good (deafen)
        self.dropped: set[bool] = set()

    def close(self) -> None:
        for s in (self.down, self.up):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()


class PeerProxy:
    """Forwards member ``i``'s advertised peer port to its listening one (:meth:`add`);
    cuts and heals links between members. Threads: one per advertised port and two per
    connection, all daemons; :meth:`close` ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: dict[bytes, int] = {}  # b"host:port" advertised -> member
        self._group: dict[int, int] | None = None  # member -> its side, while partitioned
        self._deaf: int | None = None  # a member that hears nobody (it still speaks)
        self._pairs: set[frozenset[int]] = set()  # single links cut both ways (cut_link)
        self._links: set[_Link] = set()
        self._listeners: list[socket.socket] = []
        self._closed = False

    def add(self, member: int, advertised: tuple[str, int], listening: tuple[str, int]) -> None:
        """Accept on ``advertised`` (bound now) and forward to ``listening``."""
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(advertised)
        srv.listen(64)
        with self._lock:
            self._names[f"{advertised[0]}:{advertised[1]}".encode()] = member
            self._listeners.append(srv)
        threading.Thread(target=self._accept, args=(srv, member, listening),
                         name=f"peer-proxy-{member}", daemon=True).start()

    # -- partitions -------------------------------------------------------------------------

    def partition(self, *groups: Iterable[int]) -> None:
        """Cut every link between members of different ``groups``; a member in no group is
        cut off from all the others. Links within a group carry on."""
        side: dict[int, int] = {}
        for n, g in enumerate(groups):
            for m in g:
                side[m] = n
        with self._lock:
            for m in self._names.values():
                side.setdefault(m, -1 - m)  # alone
            self._group = side
            for link in self._links:
                if self._should_cut(link):
                    link.cut = True

    def cut_link(self, a: int, b: int) -> None:
        """Cut the link between members ``a`` and ``b`` only, both ways: each still reaches
        the third member, and through it hears of the other (a failed cable between two
        racks, say)."""
        with self._lock:
            self._pairs.add(frozenset((a, b)))
            for link in self._links:
                if self._should_cut(link):
                    link.cut = True

    def deafen(self, member: int) -> None:
        """A one-way cut: whatever the others send ``member`` is dropped, whatever it sends
        them arrives (a leader whose followers' answers are lost while its appends are not).
        The two directions of a connection are cut apart; one that lost bytes is closed when
        the cut heals, as after a partition."""
        with self._lock:
            self._deaf = member

    def heal(self) -> None:
        """Let every link through again; the connections that were cut are closed, so the
        members open new ones."""
        with self._lock:
            self._group = None
            self._deaf = None
            self._pairs = set()
            dead = [link for link in self._links if link.cut or link.dropped]
        for link in dead:
            link.close()

    def isolate(self, member: int) -> None:
        """Cut ``member`` off from every other member."""
        with self._lock:
            others = [m for m in self._names.values() if m != member]
        self.partition([member], others)

    def _should_cut(self, link: _Link) -> bool:
        group, pairs = self._group, self._pairs
        if group is None and not pairs:
            return False
        if link.opener is None:
            return True
        if frozenset((link.opener, link.to)) in pairs:
            return True
        return group is not None and group.get(link.opener) != group.get(link.to)

    # -- forwarding ---------------------------------------------------------------------------

    def _accept(self, srv: socket.socket, member: int, listening: tuple[str, int]) -> None:
        while True:
            try:
                down, _ = srv.accept()
            except OSError:
                return  # closed
            try:
                up = socket.create_connection(listening, timeout=5)
                up.settimeout(None)
            except OSError:
                down.close()  # the member is down: as a refused connection
                continue
            for s in (down, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(down, up, member)
            with self._lock:
                if self._closed:
                    link.close()
                    return
                self._links.add(link)
            threading.Thread(target=self._pump, args=(link, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(link, False), daemon=True).start()

    def _pump(self, link: _Link, from_opener: bool) -> None:
        src, dst = (link.down, link.up) if from_opener else (link.up, link.down)
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                with self._lock:
                    if from_opener and not link.named:
                        # The opener's first read holds its name: its first message
                        # (pysyncobj) or its request's headers (etcd). Not the member it goes
                        # to, which an HTTP request names too (Host).
                        window = data[:_NAME_WINDOW]
                        link.opener = next((m for name, m in self._names.items()
                                            if m != link.to and name in window), None)
                        link.named = True
                    if not link.cut and self._should_cut(link):
                        link.cut = True
                    if self._deaf is not None and from_opener not in link.dropped:
                        # bytes towards the deaf member: from the opener when it accepted
                        # the link, from the accepting member when the deaf one opened it
                        towards = link.to if from_opener else link.opener
                        if towards is None or towards == self._deaf:
                            link.dropped.add(from_opener)
                    cut = link.cut or from_opener in link.dropped
                if not cut:
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._links.discard(link)
            link.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            listeners, self._listeners = self._listeners, []
            links, self._links = list(self._links), set()
        for srv in listeners:
            with contextlib.suppress(OSError):
                srv.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            with contextlib.suppress(OSError):
                srv.close()
        for link in links:
            link.close()
