"""One module per kind: defaulting, validation, status rules and field selectors."""
