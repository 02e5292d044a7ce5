"""From the config file to profiles: the loader, the plugin registry, profile building."""
