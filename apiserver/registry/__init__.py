"""The generic registry: one store for every kind (``generic``), per-kind strategies
(``strategies``), the catalog of built-in resources (``catalog``)."""
