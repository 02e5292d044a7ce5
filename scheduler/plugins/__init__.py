"""One module per plugin; scheduler/config/registry.py maps their names to them."""
