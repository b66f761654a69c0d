"""The watch cache (upstream ``k8s.io/apiserver/pkg/storage/cacher``): ``Cacher`` serves one
resource prefix from memory over a backend ``storage.interface.Interface``."""

from __future__ import annotations

from storage.cacher.cacher import Cacher

__all__ = ["Cacher"]
