"""The registry: one generic store for every kind (``generic``, ``generic_update``,
``generic_delete``), per-kind strategies (``strategy``, ``strategies/``), metadata validation
(``validation``), server tables (``tables``), the scale and converting stores (``scale``,
``converting``), the catalog of built-in resources (``catalog``), the namespace controller
(``namespace_controller``) and the storage object counter (``object_count``)."""
