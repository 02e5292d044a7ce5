"""One module per plugin; scheduler/registry.py maps their names to them."""
