"""The storage conformance suite (``storage.testing.conformance``), shared by every
implementation of ``storage.interface.Interface``."""
