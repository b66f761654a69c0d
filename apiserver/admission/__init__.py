"""Admission control: mutating then validating plug-ins run by the registry's writes."""
