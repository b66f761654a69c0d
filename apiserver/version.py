"""``/version``: upstream's ``version.Info`` for v1.33 (stock kubectl reads major, minor and
gitVersion and warns on a skew of more than one minor version)."""

from __future__ import annotations

import platform as _platform
import sys
from typing import Final

import orjson
from aiohttp import web

MAJOR: Final = "1"
MINOR: Final = "33"
GIT_VERSION: Final = "v1.33.0"


def _machine() -> str:
    m = _platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(m, m or "amd64")


def info() -> dict[str, str]:
    return {
        "major": MAJOR,
        "minor": MINOR,
        "emulationMajor": MAJOR,
        "emulationMinor": MINOR,
        "minCompatibilityMajor": MAJOR,
        "minCompatibilityMinor": str(int(MINOR) - 1),
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "compiler": "cpython",
        "platform": f"{sys.platform}/{_machine()}",
    }


_BODY: Final = orjson.dumps(info(), option=orjson.OPT_INDENT_2)


async def handle_version(request: web.Request) -> web.Response:
    return web.Response(body=_BODY, content_type="application/json")
