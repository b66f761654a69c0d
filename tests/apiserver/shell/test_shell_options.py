"""Command-line flags: upstream names and value forms; bad flags exit 2 with a message."""

from __future__ import annotations

import subprocess
import sys

import pytest

from apiserver.options import parse_bool, parse_duration, parse_options


def test_defaults_plat_apiserver():
    o = parse_options(["--etcd-servers", "http://a:2379, http://b:2379"], allinone=False)
    assert o.etcd_servers == ("http://a:2379", "http://b:2379")
    assert o.secure_port == 6443 and o.bind_address == "0.0.0.0"
    assert o.watch_cache is True and o.anonymous_auth is True
    assert o.authorization_mode == ("AlwaysAllow",)
    assert (o.max_requests_inflight, o.max_mutating_requests_inflight) == (400, 200)
    assert o.request_timeout == 60.0 and o.etcd_compaction_interval == 300.0
    assert o.event_ttl == 3600.0  # upstream's --event-ttl default, 1h
    assert o.log_flush_frequency == 5.0  # upstream's --log-flush-frequency default


def test_flag_forms():
    o = parse_options(["--data-dir", "/d", "--watch-cache=false", "--anonymous-auth", "false",
                       "--etcd-compaction-interval=0", "--request-timeout=1m30s",
                       "--authorization-mode=AlwaysDeny,AlwaysAllow",
                       "--max-requests-inflight=0", "--event-ttl=2h",
                       "--log-flush-frequency=250ms"], allinone=True)
    assert o.event_ttl == 7200.0 and o.log_flush_frequency == 0.25
    assert o.data_dir == "/d" and o.watch_cache is False and o.anonymous_auth is False
    assert o.etcd_compaction_interval == 0 and o.request_timeout == 90.0
    assert o.authorization_mode == ("AlwaysDeny", "AlwaysAllow")
    assert o.max_requests_inflight == 0
    o = parse_options(["--data-dir", "/d", "--watch-cache"], allinone=True)
    assert o.watch_cache is True


def test_durations_and_bools():
    assert parse_duration("5m") == 300 and parse_duration("300s") == 300
    assert parse_duration("1h2m3.5s") == 3723.5 and parse_duration("250ms") == 0.25
    for bad in ("", "5", "m5", "-1s", "5 m"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert parse_bool("T") and not parse_bool("0")
    with pytest.raises(ValueError):
        parse_bool("yes")


def test_feature_gates():
    from apiserver import featuregates
    o = parse_options(["--etcd-servers=x",
                       "--feature-gates=MaxUnavailableStatefulSet=true, "
                       "AllowUnsafeMalformedObjectDeletion=false"], allinone=False)
    assert dict(o.feature_gates) == {"MaxUnavailableStatefulSet": True,
                                     "AllowUnsafeMalformedObjectDeletion": False}
    assert featuregates.effective({}) == {"MaxUnavailableStatefulSet": False,
                                          "AllowUnsafeMalformedObjectDeletion": False}


@pytest.mark.parametrize("argv, message", [
    (["--etcd-servers=x", "--secure-port=http"], "--secure-port"),
    (["--etcd-servers=x", "--authorization-mode=RBAC"], "not supported by this server yet"),
    (["--etcd-servers=x", "--authorization-mode=Bogus"], 'authorization-mode "Bogus" is not a'
                                                         " valid mode"),
    (["--etcd-servers=x", "--watch-cache=maybe"], "invalid syntax"),
    (["--etcd-servers=x", "--etcd-compaction-interval=soon"], "invalid duration"),
    (["--etcd-servers=x", "--log-flush-frequency=often"], "invalid duration"),
    (["--etcd-servers=x", "--no-such-flag"], "unrecognized arguments"),
    (["--etcd-servers=x", "--tls-cert-file=a"], "must be given together"),
    ([], "--etcd-servers must be specified"),
    (["--etcd-servers=x", "--feature-gates=NoSuchGate=true"],
     "unrecognized feature gate: NoSuchGate"),
    (["--etcd-servers=x", "--feature-gates=MaxUnavailableStatefulSet=maybe"],
     'invalid value of MaxUnavailableStatefulSet=maybe, err: strconv.ParseBool: parsing '
     '"maybe": invalid syntax'),
    (["--etcd-servers=x", "--feature-gates=MaxUnavailableStatefulSet"],
     "missing bool value for MaxUnavailableStatefulSet"),
])
def test_bad_flags_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        parse_options(argv, allinone=False)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_plat_server_requires_data_dir():
    out = subprocess.run([sys.executable, "-m", "apiserver.allinone", "--secure-port", "1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--data-dir" in out.stderr


@pytest.mark.parametrize("flags, message", [
    (["--token-auth-file", "{bad}"], "must have at least 3 columns (token, user name, user "
                                     "uid), found 2"),
    (["--token-auth-file", "{tmp}/missing.csv"], "cannot read token file"),
    (["--tls-cert-file", "{tmp}/nope.crt", "--tls-private-key-file", "{tmp}/nope.key"],
     '--tls-cert-file "{tmp}/nope.crt": no such file'),
    (["--tls-cert-file", "{bad}", "--tls-private-key-file", "{bad}"],
     "cannot load the serving certificate"),
])
def test_startup_errors_exit_1(tmp_path, flags, message):
    bad = tmp_path / "bad.csv"
    bad.write_text("only,two\n")
    fmt = {"bad": str(bad), "tmp": str(tmp_path)}
    argv = [a.format(**fmt) for a in flags]
    out = subprocess.run([sys.executable, "-m", "apiserver.allinone", "--data-dir",
                          str(tmp_path / "data"), "--secure-port", "1", *argv],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.startswith("plat-server: error: ")
    assert message.format(**fmt) in out.stderr


def test_watch_cache_sizes() -> None:
    from apiserver.options import parse_watch_cache_sizes

    assert parse_watch_cache_sizes("configmaps#10, statefulsets.apps#0") == (
        ("configmaps", 10), ("statefulsets.apps", 0))
    for bad in ("configmaps", "configmaps#x", "#3", "configmaps#-1"):
        with pytest.raises(ValueError):
            parse_watch_cache_sizes(bad)
