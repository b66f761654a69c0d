"""The peer proxy of the partition tests (raftstore/testing/partition.py), on plain sockets:
it forwards, names a connection's opener from its first bytes, black-holes cut links without
closing them, and closes them when the partition heals."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from raftstore.launcher import free_ports
from raftstore.testing.partition import PeerProxy


class EchoServer:
    """Echoes every byte back, on a port of its own."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


@pytest.fixture
def net() -> Iterator[tuple[PeerProxy, list[int]]]:
    """Three "members" (echo servers) behind the proxy; yields it and the advertised ports."""
    servers = [EchoServer() for _ in range(3)]
    ports = free_ports(3)
    proxy = PeerProxy()
    for i, (s, p) in enumerate(zip(servers, ports, strict=True)):
        proxy.add(i, ("127.0.0.1", p), ("127.0.0.1", s.port))
    yield proxy, ports
    proxy.close()
    for s in servers:
        s.close()


def dial(port: int, opener_port: int) -> socket.socket:
    """A connection to ``port`` whose first bytes name the member at ``opener_port``, as
    pysyncobj's first message does; answers to it are read back."""
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(f"hello from 127.0.0.1:{opener_port}".encode())
    assert s.recv(100).startswith(b"hello from")
    return s


def echoes(s: socket.socket, timeout: float = 0.3) -> bool:
    s.settimeout(timeout)
    try:
        s.sendall(b"ping")
        return s.recv(4) == b"ping"
    except TimeoutError:
        return False


def closed(s: socket.socket) -> bool:
    s.settimeout(2)
    try:
        return s.recv(4) == b""
    except (ConnectionError, TimeoutError):
        return True


def test_forwards_and_names_the_opener(net: tuple[PeerProxy, list[int]]) -> None:
    proxy, ports = net
    s = dial(ports[0], ports[2])
    assert echoes(s)
    deadline = time.monotonic() + 2
    while not proxy._links and time.monotonic() < deadline:
        time.sleep(0.01)
    (link,) = proxy._links
    assert (link.opener, link.to) == (2, 0)
    s.close()


def test_a_cut_link_is_a_black_hole_until_the_heal_closes_it(
    net: tuple[PeerProxy, list[int]],
) -> None:
    proxy, ports = net
    a = dial(ports[0], ports[1])  # member 1 -> member 0
    b = dial(ports[0], ports[2])  # member 2 -> member 0
    c = dial(ports[1], ports[2])  # member 2 -> member 1
    proxy.isolate(2)
    assert echoes(a)  # 0 and 1 are on the same side
    assert not echoes(b) and not echoes(c)  # dropped, the connection still open
    # a new connection across the cut is accepted, and carries nothing
    d = socket.create_connection(("127.0.0.1", ports[1]), timeout=2)
    d.sendall(f"hello from 127.0.0.1:{ports[2]}".encode())
    assert not echoes(d)
    proxy.heal()
    assert closed(b) and closed(c) and closed(d)  # they lost bytes mid-stream
    assert echoes(a)  # never cut: left alone
    e = dial(ports[1], ports[2])
    assert echoes(e)
    for s in (a, b, c, d, e):
        s.close()


def test_a_partition_of_groups_and_an_unnamed_opener(net: tuple[PeerProxy, list[int]]) -> None:
    proxy, ports = net
    a = dial(ports[0], ports[1])
    unnamed = socket.create_connection(("127.0.0.1", ports[0]), timeout=2)
    unnamed.sendall(b"no name here")
    assert unnamed.recv(100) == b"no name here"
    proxy.partition([0, 1], [2])
    assert echoes(a)
    assert not echoes(unnamed)  # whom it joins is unknown: cut while any partition holds
    proxy.heal()
    for s in (a, unnamed):
        s.close()


def test_a_deaf_member_still_speaks(net: tuple[PeerProxy, list[int]]) -> None:
    """``deafen(0)``: what member 0 sends arrives, what is sent to it is dropped; the link is
    closed when the cut heals."""
    proxy, ports = net
    talker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    talker.bind(("127.0.0.1", 0))
    talker.listen(4)
    proxy.add(3, ("127.0.0.1", free_ports(1)[0]), talker.getsockname())
    talk_port = next(srv.getsockname()[1] for srv in proxy._listeners
                     if srv.getsockname()[1] not in ports)
    s = socket.create_connection(("127.0.0.1", talk_port), timeout=2)
    s.sendall(f"hello from 127.0.0.1:{ports[1]}".encode())  # member 1 opens it
    conn, _ = talker.accept()
    assert conn.recv(100).startswith(b"hello from")
    proxy.deafen(3)
    s.sendall(b"to the deaf one")
    conn.settimeout(0.3)
    with pytest.raises(TimeoutError):
        conn.recv(100)  # dropped
    conn.sendall(b"from the deaf one")
    assert s.recv(100) == b"from the deaf one"  # arrives
    proxy.heal()
    assert closed(s)
    conn.close()
    talker.close()


def test_one_link_cut_leaves_the_others(net: tuple[PeerProxy, list[int]]) -> None:
    proxy, ports = net
    a = dial(ports[0], ports[1])  # member 1 -> member 0
    b = dial(ports[2], ports[0])  # member 0 -> member 2
    c = dial(ports[1], ports[2])  # member 2 -> member 1
    proxy.cut_link(0, 2)
    assert echoes(a) and echoes(c)  # through member 1 everything still goes
    assert not echoes(b)
    d = dial(ports[0], ports[1])  # new links between 0 and 1 carry on
    proxy.heal()
    assert closed(b)
    e = dial(ports[2], ports[0])
    assert echoes(a) and echoes(d) and echoes(e)
    for s in (a, b, c, d, e):
        s.close()
