"""Profiles from the config: each schedulerName's plugins, instantiated through the registry
with their typed args, in the order the config gives."""

from __future__ import annotations

from scheduler.config import registry
from scheduler.config.loader import ProfileConfig, SchedulerConfig
from scheduler.framework.profile import Profile


def profile_from_config(cfg: ProfileConfig) -> Profile:
    plugins = {}
    for name in [*cfg.filters, *(ref.name for ref in cfg.scores), *cfg.post_filters]:
        if name not in plugins:
            plugins[name] = registry.new_plugin(name, cfg.args.get(name))
    return Profile(
        cfg.scheduler_name,
        [plugins[name] for name in cfg.filters],
        [(plugins[ref.name], ref.weight) for ref in cfg.scores],
        [plugins[name] for name in cfg.post_filters],
    )


def build_profiles(cfg: SchedulerConfig) -> dict[str, Profile]:
    """schedulerName -> Profile, for every profile of the config."""
    return {p.scheduler_name: profile_from_config(p) for p in cfg.profiles}
